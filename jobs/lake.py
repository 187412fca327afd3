"""The Delta lake: ``<lake>/<layer>/<table>``, one partition per ``date``, replaced per run.

Only what both engines share is used: ``format("delta")`` reads and writes, SQL ``DELETE`` and
``CREATE TABLE … USING DELTA LOCATION``.

Why a day is replaced with ``DELETE … WHERE date = D`` + append, not ``replaceWhere``: Sail 0.7.2
fails ``replaceWhere`` on any table whose files hold an array column produced by an aggregate
(``collect_set``…): "UnionExec/InterleaveExec requires all inputs to have the same data type"
(tests/test_lake.py pins it). The two commits are not atomic: a reader between them sees the day
missing, and a run killed between them leaves it missing until the rerun, which restores it.

Concurrent runs (docs/operations.md, Failure modes): Sail 0.7.2 refuses any Delta commit made on a table
version another writer has moved past ("Failed to commit transaction", even for a DELETE of
another day; "Missing commit file" while the log is being listed), and classic Delta raises
``Concurrent*Exception``. ``write_day`` retries the whole replace (DELETE + append) on such a
conflict, a bounded number of times with backoff: the DELETE makes a retry idempotent. The DELETE's
predicate names only the ``date`` partition so Delta's conflict checker can tell days apart, and a
missing table is created by an *append* (two runs creating it at once both land), never an
overwrite (which would drop the other run's day).

Staging (``<lake>/_staging/<run_id>``): each run holds an OS file lock on its folder for its
lifetime; the kernel drops it when the process dies, even on SIGKILL. A run removes the folders
of dead runs when it starts (``staging_area``). A leftover is harmless meanwhile: only its own run
ever reads it and ``list_tables`` never looks there.

The storage seam: every table read, write and existence check goes through the current
:class:`LakeStore`, :class:`DeltaStore` unless :func:`use_store` installed another. Only the
tests and benchmarks do (``tests/lake_hooks.py``): a Parquet store, for the whole pipeline on
classic Spark, whose Delta jars come from Maven Central; a Delta store that kills the run between
a table's DELETE and its append, the one crash point no outside observer can hit reliably.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import logging
import os
import random
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

log = logging.getLogger(__name__)

LAYERS = ("bronze", "silver", "gold")

COMMIT_ATTEMPTS = 10
# Messages of a lost optimistic-concurrency race: Sail 0.7.2's, then delta-spark's exceptions.
_CONFLICT_MARKERS = ("Failed to commit transaction", "Missing commit file", "Concurrent",
                     "MetadataChangedException", "ProtocolChangedException",
                     "already exists")


class LakeStore(Protocol):
    """How the lake's tables are stored: the seam :func:`use_store` swaps."""

    needs_delta: bool  # the session must load Delta (its catalog and SQL extension)
    table_marker: str  # the entry inside a folder that makes it a table

    def exists(self, spark: SparkSession, path: str) -> bool: ...

    def replace_day(self, spark: SparkSession, df: DataFrame, path: str,
                    run_date: dt.date) -> None: ...

    def read(self, spark: SparkSession, path: str) -> DataFrame: ...


class DeltaStore:
    """Delta tables partitioned by ``date``; a day is replaced by DELETE + append (module
    docstring: why not ``replaceWhere``, and what a crash between the two leaves)."""

    needs_delta = True
    table_marker = "_delta_log"

    def exists(self, spark: SparkSession, path: str) -> bool:
        if not (Path(path) / self.table_marker).exists():
            return False
        try:
            spark.read.format("delta").load(path).schema  # noqa: B018 - forces the log read
            return True
        except Exception:
            return False

    def replace_day(self, spark: SparkSession, df: DataFrame, path: str,
                    run_date: dt.date) -> None:
        if self.exists(spark, path):
            self.delete_day(spark, path, run_date)
            df.write.format("delta").mode("append").save(path)
        else:
            df.write.format("delta").mode("append").partitionBy("date").save(path)

    def delete_day(self, spark: SparkSession, path: str, run_date: dt.date) -> None:
        spark.sql(f"DELETE FROM delta.`{path}` WHERE date = DATE'{run_date.isoformat()}'").collect()

    def read(self, spark: SparkSession, path: str) -> DataFrame:
        return spark.read.format("delta").load(path)


_store: LakeStore = DeltaStore()


def store() -> LakeStore:
    """The store every lake function uses (:class:`DeltaStore` unless replaced)."""
    return _store


def use_store(new: LakeStore) -> LakeStore:
    """Make ``new`` the store of this process; returns the previous one (tests restore it)."""
    global _store
    previous, _store = _store, new
    return previous


def _is_table(path: Path) -> bool:
    return (path / _store.table_marker).exists()


def table_path(lake: str | Path, layer: str, name: str) -> str:
    return str(Path(lake) / layer / name)


def table_exists(spark: SparkSession, path: str) -> bool:
    return _store.exists(spark, path)


def write_day(spark: SparkSession, df: DataFrame, lake: str | Path, layer: str, name: str,
              run_date: dt.date, *, attempts: int = COMMIT_ATTEMPTS,
              sleep: Callable[[float], None] = time.sleep) -> None:
    """Replace the ``date = run_date`` partition of ``layer.name`` with ``df`` (all of that day).

    A commit lost to a concurrent writer is retried (DELETE + append again), at most
    ``attempts`` times with exponential backoff and jitter; any other error is raised at once.
    """
    path = table_path(lake, layer, name)
    if _store.exists(spark, path):
        check_columns(_store.read(spark, path).schema, df.schema, layer, name, path)
    for attempt in range(1, attempts + 1):
        try:
            _store.replace_day(spark, df, path, run_date)
            return
        except Exception as exc:
            if attempt == attempts or not is_commit_conflict(exc):
                raise
            delay = min(5.0, 0.2 * 2 ** (attempt - 1)) * random.uniform(0.5, 1.5)
            log.warning("commit conflict on %s.%s (attempt %d of %d), retrying in %.1fs: %s",
                        layer, name, attempt, attempts, delay, str(exc).strip()[:200])
            sleep(delay)


class TableOutdated(Exception):
    """A lake table's columns differ from what this release writes into it: a release added (or
    dropped) columns. A day is appended into the table's existing schema (no schema evolution:
    docs/operations.md, "Upgrading an existing lake"), so the write is refused before the table
    is touched, rather than left to the engine (Sail 0.7.2 appended without the new column).
    Added columns only: ``rocketlens migrate`` (jobs/migrate.py) brings the table up to date."""


def _columns(schema: StructType) -> dict[str, str]:
    return {f.name: f.dataType.simpleString() for f in schema.fields}


def check_columns(existing: StructType, written: StructType, layer: str, name: str,
                  path: str) -> None:
    """Raise :class:`TableOutdated` when ``written`` (the day's frame) and ``existing`` (the
    table) differ in column names or types (nullability and comments aside)."""
    have, want = _columns(existing), _columns(written)
    if have == want:
        return
    missing = [c for c in want if c not in have]
    extra = [c for c in have if c not in want]
    changed = [c for c in want if c in have and have[c] != want[c]]
    parts = ([f"lacks {', '.join(missing)}"] if missing else []) \
        + ([f"has {', '.join(extra)} no longer written"] if extra else []) \
        + ([f"has another type for {', '.join(changed)}"] if changed else [])
    todo = (f"run 'rocketlens migrate --lake {Path(path).parents[1]}' first" if not (extra or changed)
            else f"move {path} aside and rerun the days you keep")
    raise TableOutdated(
        f"lake table {layer}.{name} was written by another release ({'; '.join(parts)}): {todo} "
        "(docs/operations.md, Upgrading an existing lake)")


def is_commit_conflict(exc: BaseException) -> bool:
    """Did ``exc`` come from losing a Delta commit race (worth retrying)?"""
    text = f"{type(exc).__name__}: {exc}"
    return any(marker in text for marker in _CONFLICT_MARKERS)


def read_table(spark: SparkSession, lake: str | Path, layer: str, name: str) -> DataFrame:
    return _store.read(spark, table_path(lake, layer, name))


def read_day(spark: SparkSession, lake: str | Path, layer: str, name: str,
             run_date: dt.date) -> DataFrame:
    return read_table(spark, lake, layer, name).where(f"date = '{run_date.isoformat()}'")


STAGING_DIR = "_staging"
STAGING_LOCK = ".owner.lock"
STALE_UNLOCKED_SECONDS = 3600  # a folder without a lock file: a claim cut short, or an old version


# ``stage`` bound to a run's lake and id: ``(df, name)`` in, ``df`` written once and read back
# out; ``no_staging`` is the identity, where no lake is at hand (tests, in memory).
Stage = Callable[[DataFrame, str], DataFrame]


# Staged files are read once or twice and deleted at the end of the run: Sail's default codec
# (zstd) spent CPU to make them small; snappy (Spark's and Delta's default) writes about as fast as
# no compression at half its bytes (benchmarks/RESULTS.md, "Figures behind code choices").
STAGING_COMPRESSION = "snappy"


def no_staging(df: DataFrame, _name: str) -> DataFrame:
    return df


def staging_path(lake: str | Path, run_id: str, name: str) -> str:
    return str(Path(lake) / STAGING_DIR / run_id / name)


def stage(spark: SparkSession, df: DataFrame, lake: str | Path, run_id: str,
          name: str) -> DataFrame:
    """Write ``df`` once as Parquet under the run's staging folder and read it back.

    Parsed landing lines feed three outputs (records, quarantine, counts); staging them parses
    each line once, and keeps the plans small: Sail otherwise plans the parse expressions again
    inside every expression that uses their results, which makes every query slow to plan.
    """
    path = staging_path(lake, run_id, name)
    df.write.mode("overwrite").option("compression", STAGING_COMPRESSION).parquet(path)
    # the schema is given: an empty frame leaves no Parquet file to infer it from on Sail
    return _read_parquet_dirs(spark, df.schema, [path])


BATCH_COLUMN = "_batch"
# Row groups of a day split by batch (``stage_batches``): a partitioned write keeps one open file
# per batch, each holding its row group until full (Sail: 1 M rows by default), so the whole day
# was in memory at once — 8.3 GiB splitting the L day's running info into 59 batches, 2.5 GiB
# with 2,048-row groups. ``maxRowGroupSize`` is Sail's option; Spark's writer ignores it (its
# partitioned write sorts by batch and keeps one file open).
SPLIT_ROW_GROUP_ROWS = 2048
# Narrow rows (offsets, connections, client-log events: ~0.1–0.3 KB, against running info's
# ~9 KB) can fill larger groups: 59 open files of 16,384 such rows hold ~0.3 GB. Small groups cost
# time: splitting the M day's offsets took 6.0 s in 2,048-row groups and 4.5 s in 16,384-row ones,
# its client-log events 7.3 and 5.9 s (benchmarks/RESULTS.md, session 19).
NARROW_SPLIT_ROW_GROUP_ROWS = 16384


def stage_batches(spark: SparkSession, df: DataFrame, lake: str | Path, run_id: str, name: str,
                  batches: int, row_group_rows: int = SPLIT_ROW_GROUP_ROWS,
                  shared: int | None = None) -> list[DataFrame]:
    """Write ``df`` once as Parquet partitioned by its ``_batch`` column (0 … ``batches`` - 1)
    and read each batch back by itself, without that column. Why: each batch of groups then
    scans its own files; filtering the whole day again per batch made the L day's ~56 batches
    re-read all of its bronze each time (benchmarks/RESULTS.md, issue #19). ``row_group_rows``:
    ``SPLIT_ROW_GROUP_ROWS``, or ``NARROW_SPLIT_ROW_GROUP_ROWS`` for narrow rows. ``shared``: a
    ``_batch`` whose rows every batch reads beside its own."""
    path = staging_path(lake, run_id, name)
    (df.write.mode("overwrite").option("compression", STAGING_COMPRESSION)
     .option("maxRowGroupSize", row_group_rows)
     .partitionBy(BATCH_COLUMN).parquet(path))
    schema = StructType([f for f in df.schema.fields if f.name != BATCH_COLUMN])
    also = [] if shared is None else [f"{path}/{BATCH_COLUMN}={shared}"]
    return [_read_parquet_dirs(spark, schema, [f"{path}/{BATCH_COLUMN}={b}", *also])
            for b in range(batches)]


def stage_batch(spark: SparkSession, df: DataFrame, lake: str | Path, run_id: str, name: str,
                batch: int) -> DataFrame:
    """Stage one batch's rows of ``name`` (``stage``) beside its other batches, as
    ``stage_batches`` lays them out; ``read_staged_batches`` reads them all."""
    return stage(spark, df, lake, run_id, f"{name}/{BATCH_COLUMN}={batch}")


def read_staged_batch(spark: SparkSession, schema: StructType | str, lake: str | Path,
                      run_id: str, name: str, batch: int) -> DataFrame:
    """One staged batch of ``name`` (``stage_batch``); empty when it had no rows."""
    if isinstance(schema, str):
        schema = spark.createDataFrame([], schema).schema
    return _read_parquet_dirs(spark, schema,
                              [staging_path(lake, run_id, f"{name}/{BATCH_COLUMN}={batch}")])


def read_staged_batches(spark: SparkSession, schema: StructType, lake: str | Path, run_id: str,
                        name: str) -> DataFrame:
    """Every staged batch of ``name`` (``stage_batch``) as one frame."""
    root = Path(staging_path(lake, run_id, name))
    dirs = sorted(root.glob(f"{BATCH_COLUMN}=*"), key=lambda d: int(d.name.partition("=")[2]))
    return _read_parquet_dirs(spark, schema, [str(d) for d in dirs])


def _read_parquet_dirs(spark: SparkSession, schema: StructType, dirs: list[str]) -> DataFrame:
    """The Parquet folders given, each read as its own root (no partition column is inferred);
    one with no rows may have no folder (a partitioned write makes none for an empty batch; Sail
    writes none for an empty frame), hence the empty frame."""
    present = [d for d in dirs if Path(d).is_dir()]
    if not present:
        return spark.createDataFrame([], schema)
    return spark.read.schema(schema).parquet(*present)


@contextmanager
def staging_area(lake: str | Path, run_id: str) -> Iterator[Path]:
    """Claim ``<lake>/_staging/<run_id>`` for this process, sweep dead runs' folders, and remove
    the claim at the end (module docstring: why a lock and not a timestamp)."""
    fd = _claim_staging(Path(lake), run_id)
    try:
        sweep_staging(lake, run_id)
        yield Path(lake) / STAGING_DIR / run_id
    finally:
        drop_staging(lake, run_id)
        os.close(fd)
        try:
            (Path(lake) / STAGING_DIR).rmdir()
        except OSError:
            pass  # another run's folder is there, or it is gone already


def _claim_staging(lake: Path, run_id: str) -> int:
    """Create the run's folder with its lock already held: made under a hidden name, locked,
    then renamed, so no other run ever sees the folder unlocked."""
    root = lake / STAGING_DIR
    claim = root / f".claim-{run_id}"
    for _ in range(10):
        root.mkdir(parents=True, exist_ok=True)
        try:
            claim.mkdir()
        except FileNotFoundError:
            continue  # another run removed the empty root in between
        fd = os.open(claim / STAGING_LOCK, os.O_CREAT | os.O_RDWR, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(claim, root / run_id)
        return fd
    raise OSError(f"could not create {root / run_id}")


def sweep_staging(lake: str | Path, run_id: str) -> list[str]:
    """Remove the staging folders of runs that are no longer alive; returns their names.

    A folder whose lock this process can take belongs to a dead run (a live one holds it).
    """
    root = Path(lake) / STAGING_DIR
    removed = []
    entries = sorted(root.iterdir()) if root.is_dir() else []
    for entry in entries:
        if entry.name in (run_id, f".claim-{run_id}") or not entry.is_dir():
            continue
        try:
            fd = os.open(entry / STAGING_LOCK, os.O_RDWR)
        except FileNotFoundError:
            try:
                stale = time.time() - entry.stat().st_mtime > STALE_UNLOCKED_SECONDS
            except FileNotFoundError:
                continue
            if stale:
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry.name)
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a live run
        else:
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry.name)
        finally:
            os.close(fd)
    return removed


def clear_staging(lake: str | Path, run_id: str, keep: tuple[str, ...] = ()) -> None:
    """Remove what the run staged so far, keeping its claim and the staged names ``keep``
    (frees disk between layers)."""
    folder = Path(lake) / STAGING_DIR / run_id
    for child in (folder.iterdir() if folder.is_dir() else []):
        if child.name == STAGING_LOCK or child.name in keep:
            continue
        if child.is_dir():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def drop_staging(lake: str | Path, run_id: str) -> None:
    shutil.rmtree(Path(lake) / STAGING_DIR / run_id, ignore_errors=True)


def list_tables(lake: str | Path) -> list[tuple[str, str, str]]:
    """``(layer, name, path)`` of every lake table (of the current store)."""
    found = []
    for layer in LAYERS:
        layer_dir = Path(lake) / layer
        if not layer_dir.is_dir():
            continue
        for table_dir in sorted(p for p in layer_dir.iterdir() if _is_table(p)):
            found.append((layer, table_dir.name, str(table_dir)))
    return found


def partition_columns(path: str) -> list[str]:
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
        parts = partition_columns(path)
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
    list: its comments are shown by ``rocketlens tables`` only (docs/engines.md).
    """
    names = []
    # LOCATION must be absolute; a relative --lake means one under the working directory
    for layer, name, path in list_tables(Path(lake).resolve()):
        spark.sql(f"CREATE SCHEMA IF NOT EXISTS {layer}")
        try:
            schema = spark.read.format("delta").load(path).schema
            spark.sql(table_ddl(layer, name, path, schema)).collect()
        except Exception:  # Sail: array/map columns (see above) → no column list
            spark.sql(table_ddl(layer, name, path, None)).collect()
        names.append(f"{layer}.{name}")
    return names
