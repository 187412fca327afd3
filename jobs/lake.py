"""The Delta lake: ``<lake>/<layer>/<table>``, one partition per ``date``, replaced per run.

Only what both engines share is used: ``format("delta")`` reads and writes, SQL ``DELETE`` and
``CREATE TABLE … USING DELTA LOCATION``.

Why a day is replaced with ``DELETE … WHERE date = D`` + append, not ``replaceWhere``: Sail 0.7.2
fails ``replaceWhere`` on any table whose files hold an array column produced by an aggregate
(``collect_set``…): "UnionExec/InterleaveExec requires all inputs to have the same data type"
(tests/test_lake.py pins it). The two commits are not atomic: a reader between them sees the day
missing, and a run killed between them leaves it missing until the rerun, which restores it.

Test-only Parquet lake: ``ROCKETLENS_LAKE_FORMAT=parquet`` writes every table as plain Parquet
(``<table>/date=D/`` replaced per run, schema kept in ``<table>/_rocketlens_schema.json`` so an
empty day still reads back). It exists for tests and air-gapped checks of the whole pipeline on
classic Spark, whose Delta jars come from Maven Central; it has no transactions, no ``sql`` or
``tables`` registration, and is never for production.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

LAYERS = ("bronze", "silver", "gold")
LAKE_FORMATS = ("delta", "parquet")
FORMAT_ENV = "ROCKETLENS_LAKE_FORMAT"
PARQUET_SCHEMA_FILE = "_rocketlens_schema.json"


def lake_format() -> str:
    """``delta`` unless ``ROCKETLENS_LAKE_FORMAT=parquet`` (tests and air-gapped checks only)."""
    value = os.environ.get(FORMAT_ENV, "delta").strip().lower() or "delta"
    if value not in LAKE_FORMATS:
        raise ValueError(f"{FORMAT_ENV}={value!r}: choose one of {', '.join(LAKE_FORMATS)}")
    return value


def _is_table(path: Path) -> bool:
    marker = "_delta_log" if lake_format() == "delta" else PARQUET_SCHEMA_FILE
    return (path / marker).exists()


def table_path(lake: str | Path, layer: str, name: str) -> str:
    return str(Path(lake) / layer / name)


def table_exists(spark: SparkSession, path: str) -> bool:
    if not _is_table(Path(path)):
        return False
    if lake_format() == "parquet":
        return True
    try:
        spark.read.format("delta").load(path).schema  # noqa: B018 - forces the log read
        return True
    except Exception:
        return False


def write_day(spark: SparkSession, df: DataFrame, lake: str | Path, layer: str, name: str,
              run_date: dt.date) -> None:
    """Replace the ``date = run_date`` partition of ``layer.name`` with ``df`` (all of that day)."""
    path = table_path(lake, layer, name)
    if lake_format() == "parquet":
        _write_parquet_day(df, path, run_date)
    elif table_exists(spark, path):
        spark.sql(f"DELETE FROM delta.`{path}` WHERE date = '{run_date.isoformat()}'").collect()
        df.write.format("delta").mode("append").save(path)
    else:
        df.write.format("delta").mode("overwrite").partitionBy("date").save(path)


def _write_parquet_day(df: DataFrame, path: str, run_date: dt.date) -> None:
    """Replace ``<path>/date=D`` by hand: Sail ignores dynamic partition overwrite."""
    shutil.rmtree(Path(path) / f"date={run_date.isoformat()}", ignore_errors=True)
    df.write.mode("append").partitionBy("date").parquet(path)
    Path(path).mkdir(parents=True, exist_ok=True)  # an empty frame may leave no folder (Sail)
    (Path(path) / PARQUET_SCHEMA_FILE).write_text(df.schema.json())


def read_table(spark: SparkSession, lake: str | Path, layer: str, name: str) -> DataFrame:
    path = table_path(lake, layer, name)
    if lake_format() == "parquet":
        schema = StructType.fromJson(
            json.loads((Path(path) / PARQUET_SCHEMA_FILE).read_text()))
        return spark.read.schema(schema).parquet(path)
    return spark.read.format("delta").load(path)


def read_day(spark: SparkSession, lake: str | Path, layer: str, name: str,
             run_date: dt.date) -> DataFrame:
    return read_table(spark, lake, layer, name).where(f"date = '{run_date.isoformat()}'")


def staging_path(lake: str | Path, run_id: str, name: str) -> str:
    return str(Path(lake) / "_staging" / run_id / name)


def stage(spark: SparkSession, df: DataFrame, lake: str | Path, run_id: str,
          name: str) -> DataFrame:
    """Write ``df`` once as Parquet under the run's staging folder and read it back.

    Parsed landing lines feed three outputs (records, quarantine, counts); staging them parses
    each line once, and keeps the plans small: Sail otherwise plans the parse expressions again
    inside every expression that uses their results, which costs seconds per query.
    """
    path = staging_path(lake, run_id, name)
    df.write.mode("overwrite").parquet(path)
    # the schema is given: an empty frame leaves no Parquet file to infer it from on Sail
    return spark.read.schema(df.schema).parquet(path)


def drop_staging(lake: str | Path, run_id: str) -> None:
    shutil.rmtree(Path(lake) / "_staging" / run_id, ignore_errors=True)
    try:
        (Path(lake) / "_staging").rmdir()
    except OSError:
        pass


def list_tables(lake: str | Path) -> list[tuple[str, str, str]]:
    """``(layer, name, path)`` of every lake table (Delta, or the test-only Parquet format)."""
    found = []
    for layer in LAYERS:
        layer_dir = Path(lake) / layer
        if not layer_dir.is_dir():
            continue
        for table_dir in sorted(p for p in layer_dir.iterdir() if _is_table(p)):
            found.append((layer, table_dir.name, str(table_dir)))
    return found


def _partition_columns(path: str) -> list[str]:
    """Partition columns from the Delta log's first commit (``[]`` when unreadable)."""
    for log in sorted((Path(path) / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            meta = json.loads(line).get("metaData") if line.strip() else None
            if meta is not None:
                return list(meta.get("partitionColumns", []))
    return []


def _sql_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def table_ddl(layer: str, name: str, path: str, schema: StructType | None) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for one lake table, with column comments when a schema is given.

    Column types and nullability must repeat the Delta log's exactly (Sail checks them), and so
    must ``PARTITIONED BY``.
    """
    from schemas.lake_comments import column_comment, table_comment

    table = f"{layer}.{name}"
    columns = ""
    partitions = ""
    if schema is not None:
        cols = []
        for f in schema.fields:
            col = f"`{f.name}` {f.dataType.simpleString()}" + ("" if f.nullable else " NOT NULL")
            comment = column_comment(table, f.name)
            cols.append(col + (f" COMMENT '{_sql_text(comment)}'" if comment else ""))
        columns = f" ({', '.join(cols)})"
        parts = _partition_columns(path)
        partitions = f" PARTITIONED BY ({', '.join(parts)})" if parts else ""
    comment = table_comment(table)
    comment_sql = f" COMMENT '{_sql_text(comment)}'" if comment else ""
    return (f"CREATE TABLE IF NOT EXISTS {table}{columns} USING DELTA{partitions}{comment_sql} "
            f"LOCATION '{_sql_text(path)}'")


def register_tables(spark: SparkSession, lake: str | Path) -> list[str]:
    """Make every lake table queryable as ``layer.name``; idempotent. Returns the names.

    Each table is declared with its columns and their comments (``schemas/lake_comments.py``;
    ``DESCRIBE TABLE`` shows them). Sail 0.7.2 refuses a declared column list for an existing
    location whose schema holds an array or map column (it compares the element field names,
    "element" vs none, and finds them different), so such a table is registered without a column
    list: its comments are shown by ``rocketlens tables`` only (README, Engine notes).
    """
    names = []
    for layer, name, path in list_tables(lake):
        spark.sql(f"CREATE SCHEMA IF NOT EXISTS {layer}")
        try:
            schema = spark.read.format("delta").load(path).schema
            spark.sql(table_ddl(layer, name, path, schema)).collect()
        except Exception:  # Sail: array/map columns (see above) → no column list
            spark.sql(table_ddl(layer, name, path, None)).collect()
        names.append(f"{layer}.{name}")
    return names
