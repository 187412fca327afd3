"""Bring a lake written by an older release to this release's table schemas (docs/contract.md §1,
``rocketlens migrate``; docs/operations.md, "Upgrading an existing lake").

Input: a lake root. Output: every table whose columns lack some of today's (``schemas/lake_tables.json``,
the columns each table has when this release writes it) holds the same rows with the new columns
added as nulls, in today's column order, so the next ``rocketlens run`` appends into it
(``jobs.lake.check_columns`` passes). The rule: only *added* columns are migrated; a table with a
column today's release no longer writes, or with another type for a column, is refused (one
line: move it aside and rerun its days), since changing those would lose or reinterpret data.

One path for both engines: the table is read, widened with typed null columns and written as a
new Delta table beside the lake (``<lake>/_migrating/<layer>/<name>``); once its row count
equals the old one's, the old folder moves to ``<lake>/_pre_migrate/<stamp>/<layer>/<name>`` (kept:
delete it when satisfied) and the new one takes its place (two renames on one file system).
Why not Delta schema evolution: Sail 0.7.2 has neither ``ALTER TABLE … ADD COLUMNS`` nor a working
``mergeSchema`` (docs/operations.md); on classic Delta both work, and the docs give them for users
who prefer to keep the table's history. A rebuilt table starts a new Delta history.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from jobs import lake

SCHEMAS_FILE = Path(__file__).resolve().parents[1] / "schemas" / "lake_tables.json"
MIGRATING_DIR = "_migrating"
BACKUP_DIR = "_pre_migrate"


class MigrationRefused(Exception):
    """A table differs from today's schema in a way a migration would lose data by changing."""


@cache
def today_schemas() -> dict[str, StructType]:
    """``layer.name`` → the schema this release writes (``schemas/lake_tables.json``)."""
    raw = json.loads(SCHEMAS_FILE.read_text())
    return {table: StructType.fromJson(schema) for table, schema in raw.items()}


@dataclass(frozen=True)
class TableMigration:
    table: str  # layer.name
    added: tuple[str, ...]  # the columns added, in today's order ("" tuple: already current)
    rows: int  # rows before = rows after


def missing_columns(existing: StructType, today: StructType, table: str) -> tuple[str, ...]:
    """Today's columns the table lacks; raises :class:`MigrationRefused` when it has a column
    today's release no longer writes or a column of another type (names and simple types are
    compared, as ``jobs.lake.check_columns`` does)."""
    have = {f.name: f.dataType.simpleString() for f in existing.fields}
    want = {f.name: f.dataType.simpleString() for f in today.fields}
    extra = [c for c in have if c not in want]
    changed = [c for c in want if c in have and have[c] != want[c]]
    if extra or changed:
        why = "; ".join(([f"has {', '.join(extra)} no longer written"] if extra else [])
                        + ([f"has another type for {', '.join(changed)}"] if changed else []))
        raise MigrationRefused(f"lake table {table} cannot be migrated ({why}): move it aside and "
                               "rerun the days you keep (docs/operations.md, Upgrading an "
                               "existing lake)")
    return tuple(c for c in want if c not in have)


def migrate_lake(spark: SparkSession, lake_dir: str | Path,
                 stamp: str | None = None) -> list[TableMigration]:
    """Migrate every table of ``lake_dir`` that lacks columns (module docstring); returns one
    entry per lake table, in ``list_tables`` order. Tables this release does not know are left
    alone. Every table is checked before any is changed, so a refused one changes nothing."""
    lake_dir = Path(lake_dir).resolve()
    stamp = stamp or f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}"
    known = today_schemas()
    plans = []
    for layer, name, path in lake.list_tables(lake_dir):
        table = f"{layer}.{name}"
        if table not in known:
            continue
        existing = lake.read_table(spark, lake_dir, layer, name).schema
        plans.append((layer, name, path, missing_columns(existing, known[table], table)))
    done = []
    for layer, name, path, added in plans:
        table = f"{layer}.{name}"
        rows = lake.read_table(spark, lake_dir, layer, name).count()
        if added:
            _rebuild(spark, lake_dir, layer, name, path, known[table], rows, stamp)
        done.append(TableMigration(table, added, rows))
    return done


def _rebuild(spark: SparkSession, lake_dir: Path, layer: str, name: str, path: str,
             today: StructType, rows: int, stamp: str) -> None:
    old = lake.read_table(spark, lake_dir, layer, name)
    widened = old.select(*[
        F.col(f"`{f.name}`") if f.name in old.columns else F.lit(None).cast(f.dataType).alias(f.name)
        for f in today.fields])
    target = lake_dir / MIGRATING_DIR / layer / name
    shutil.rmtree(target, ignore_errors=True)  # a migration cut short left it
    partitions = lake.partition_columns(path)
    writer = widened.write.format("delta").mode("append")
    (writer.partitionBy(*partitions) if partitions else writer).save(str(target))
    written = spark.read.format("delta").load(str(target)).count()
    if written != rows:
        raise RuntimeError(f"migrating {layer}.{name} wrote {written} rows of {rows}; the table "
                           f"is unchanged, {target} can be removed")
    backup = lake_dir / BACKUP_DIR / stamp / layer / name
    backup.parent.mkdir(parents=True, exist_ok=True)
    Path(path).rename(backup)
    target.rename(path)
    for folder in (target.parent, target.parent.parent):
        try:
            folder.rmdir()
        except OSError:
            pass


def lake_schemas(spark: SparkSession, lake_dir: str | Path) -> dict[str, dict]:
    """``layer.name`` → the schema (JSON form) of every table of ``lake_dir``: what
    ``schemas/lake_tables.json`` holds, taken from a lake a fresh run of this release wrote."""
    return {f"{layer}.{name}": lake.read_table(spark, lake_dir, layer, name).schema.jsonValue()
            for layer, name, _path in lake.list_tables(lake_dir)}


if __name__ == "__main__":  # python -m jobs.migrate LAKE: rewrite schemas/lake_tables.json
    import sys

    from jobs.engine import open_session

    with open_session("sail") as session:
        schemas = lake_schemas(session, sys.argv[1])
    SCHEMAS_FILE.write_text(json.dumps(schemas, indent=1, sort_keys=True) + "\n")
    print(f"{len(schemas)} tables written to {SCHEMAS_FILE}")
