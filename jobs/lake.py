"""The Delta lake: ``<lake>/<layer>/<table>``, one partition per ``date``, replaced per run.

Only what both engines share is used: ``format("delta")`` reads and writes, SQL ``DELETE`` and
``CREATE TABLE … USING DELTA LOCATION``.

Why a day is replaced with ``DELETE … WHERE date = D`` + append, not ``replaceWhere``: Sail 0.7.2
fails ``replaceWhere`` on any table whose files hold an array column produced by an aggregate
(``collect_set``…): "UnionExec/InterleaveExec requires all inputs to have the same data type"
(tests/test_lake.py pins it). The two commits are not atomic: a reader between them sees the day
missing, and a run killed between them leaves it missing until the rerun, which restores it.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

LAYERS = ("bronze", "silver", "gold")


def table_path(lake: str | Path, layer: str, name: str) -> str:
    return str(Path(lake) / layer / name)


def table_exists(spark: SparkSession, path: str) -> bool:
    if not (Path(path) / "_delta_log").is_dir():
        return False
    try:
        spark.read.format("delta").load(path).schema  # noqa: B018 - forces the log read
        return True
    except Exception:
        return False


def write_day(spark: SparkSession, df: DataFrame, lake: str | Path, layer: str, name: str,
              run_date: dt.date) -> None:
    """Replace the ``date = run_date`` partition of ``layer.name`` with ``df`` (all of that day)."""
    path = table_path(lake, layer, name)
    if table_exists(spark, path):
        spark.sql(f"DELETE FROM delta.`{path}` WHERE date = '{run_date.isoformat()}'").collect()
        df.write.format("delta").mode("append").save(path)
    else:
        df.write.format("delta").mode("overwrite").partitionBy("date").save(path)


def read_table(spark: SparkSession, lake: str | Path, layer: str, name: str) -> DataFrame:
    return spark.read.format("delta").load(table_path(lake, layer, name))


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
    import shutil

    shutil.rmtree(Path(lake) / "_staging" / run_id, ignore_errors=True)
    try:
        (Path(lake) / "_staging").rmdir()
    except OSError:
        pass


def list_tables(lake: str | Path) -> list[tuple[str, str, str]]:
    """``(layer, name, path)`` of every Delta table under the lake, in layer order."""
    found = []
    for layer in LAYERS:
        layer_dir = Path(lake) / layer
        if not layer_dir.is_dir():
            continue
        for table_dir in sorted(p for p in layer_dir.iterdir() if (p / "_delta_log").is_dir()):
            found.append((layer, table_dir.name, str(table_dir)))
    return found


def register_tables(spark: SparkSession, lake: str | Path) -> list[str]:
    """Make every lake table queryable as ``layer.name``; idempotent. Returns the names."""
    names = []
    for layer, name, path in list_tables(lake):
        spark.sql(f"CREATE SCHEMA IF NOT EXISTS {layer}")
        spark.sql(f"CREATE TABLE IF NOT EXISTS {layer}.{name} USING DELTA LOCATION '{path}'")
        names.append(f"{layer}.{name}")
    return names
