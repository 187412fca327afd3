"""Test-side lake stores, installed through ``jobs.lake.use_store``, and the entry point that
installs them in a ``rocketlens`` process (a subprocess, or the driver spark-submit starts).

``python tests/lake_hooks.py ARGS`` (or ``-m tests.lake_hooks``) is ``rocketlens ARGS``: it runs
``jobs/entrypoint.py``, the spark-submit entry script, after installing

- ``ROCKETLENS_TEST_LAKE_FORMAT=parquet``: :class:`ParquetStore`, every table plain Parquet, for
  the whole pipeline on classic Spark, whose Delta jars come from Maven Central (out of reach
  here); the tests and the benchmarks' engine comparison use it. No transactions, no ``sql`` or
  ``tables`` registration.
- ``ROCKETLENS_TEST_KILL_AFTER_DELETE=<layer.table>``: :class:`KillAfterDelete`, Delta that
  SIGKILLs the process right after that table's DELETE commit, before the append — the one crash
  point no outside observer can hit reliably (tests/reliability/test_crash_safety.py).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import runpy
import shutil
import signal
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAKE_FORMAT_ENV = "ROCKETLENS_TEST_LAKE_FORMAT"
KILL_AFTER_DELETE_ENV = "ROCKETLENS_TEST_KILL_AFTER_DELETE"
PARQUET_SCHEMA_FILE = "_rocketlens_schema.json"


class ParquetStore:
    """``<table>/date=D/`` replaced per run; the schema kept in ``<table>/_rocketlens_schema.json``
    so an empty day still reads back (an empty frame leaves no Parquet file on Sail)."""

    needs_delta = False
    table_marker = PARQUET_SCHEMA_FILE

    def exists(self, spark, path: str) -> bool:
        return (Path(path) / self.table_marker).exists()

    def replace_day(self, spark, df, path: str, run_date: dt.date) -> None:
        # by hand: Sail ignores dynamic partition overwrite
        shutil.rmtree(Path(path) / f"date={run_date.isoformat()}", ignore_errors=True)
        df.write.mode("append").partitionBy("date").parquet(path)
        Path(path).mkdir(parents=True, exist_ok=True)
        (Path(path) / self.table_marker).write_text(df.schema.json())

    def read(self, spark, path: str):
        from pyspark.sql.types import StructType

        schema = StructType.fromJson(json.loads((Path(path) / self.table_marker).read_text()))
        return spark.read.schema(schema).parquet(path)


def kill_after_delete_store(table: str):
    """A Delta store that SIGKILLs this process right after ``table``'s (``layer.name``) DELETE."""
    from jobs.lake import DeltaStore

    class KillAfterDelete(DeltaStore):
        def delete_day(self, spark, path: str, run_date: dt.date) -> None:
            super().delete_day(spark, path, run_date)
            if f"{Path(path).parent.name}.{Path(path).name}" == table:
                os.kill(os.getpid(), signal.SIGKILL)

    return KillAfterDelete()


def install_from_env() -> None:
    from jobs import lake

    fmt = os.environ.get(LAKE_FORMAT_ENV, "delta")
    kill = os.environ.get(KILL_AFTER_DELETE_ENV)
    if fmt not in ("delta", "parquet") or (kill and fmt != "delta"):
        raise SystemExit(f"{LAKE_FORMAT_ENV}={fmt!r}, {KILL_AFTER_DELETE_ENV}={kill!r}: "
                         "parquet or delta; the kill needs delta")
    if fmt == "parquet":
        lake.use_store(ParquetStore())
    elif kill:
        lake.use_store(kill_after_delete_store(kill))


if __name__ == "__main__":
    # run as a script (spark-submit): the repo root, not tests/, goes first on sys.path
    if sys.path and Path(sys.path[0] or ".").resolve() == REPO / "tests":
        sys.path[0] = str(REPO)
    install_from_env()
    runpy.run_path(str(REPO / "jobs" / "entrypoint.py"), run_name="__main__")
