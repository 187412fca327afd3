"""The real ``spark-submit`` of the pyspark distribution runs the job in ``local[2]``.

The hand-written day goes through every transform (bronze → silver → gold) under spark-submit with
``--engine spark``, i.e. the session spark-submit configures. The Delta writes cannot run here: the
Delta jars come from Maven Central, which these machines cannot reach, so the lake is written with
the test-side Parquet store (``tests/lake_hooks.py``, whose script installs it, then runs
``jobs/entrypoint.py``). Runs in the classic-Spark pass only (it needs Java; the Sail pass
deselects it).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobs import lake
from jobs.engine import delta_package
from tests.lake_hooks import LAKE_FORMAT_ENV, ParquetStore
from tests.pipeline import hand_day_expected as E
from tests.pipeline.assertions import assert_bronze, assert_silver

pytestmark = pytest.mark.spark_only

REPO = Path(__file__).resolve().parents[2]


def spark_submit(*args: str, env_extra: dict | None = None,
                 script: Path = REPO / "jobs" / "entrypoint.py") -> subprocess.CompletedProcess:
    from pyspark.find_spark_home import _find_spark_home

    submit = Path(_find_spark_home()) / "bin" / "spark-submit"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ROCKETLENS", "PYSPARK", "SPARK_"))}
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               **(env_extra or {}))
    # PythonRunner merges the script's stderr into stdout: everything is in proc.stdout
    return subprocess.run(
        [str(submit), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.sql.shuffle.partitions=2", "--conf", "spark.log.level=WARN",
         str(script), *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def submitted(tmp_path_factory):
    lake_dir = tmp_path_factory.mktemp("submit") / "lake"
    proc = spark_submit("run", "--date", E.RUN_DATE.isoformat(), "--landing", str(E.HAND_DAY),
                        "--lake", str(lake_dir), "--engine", "spark", "--fail-on", "CRITICAL",
                        "--log-format", "json",
                        env_extra={LAKE_FORMAT_ENV: "parquet"},
                        script=REPO / "tests" / "lake_hooks.py")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, lake_dir


@pytest.fixture
def parquet_lake():
    previous = lake.use_store(ParquetStore())
    yield
    lake.use_store(previous)


def events(proc) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"ts"')]


def test_spark_submit_writes_the_hand_day_through_every_layer(spark, submitted, parquet_lake):
    _proc, lake_dir = submitted
    tables = {(layer, name): lake.read_day(spark, lake_dir, layer, name, E.RUN_DATE)
              for layer, name, _path in lake.list_tables(lake_dir)}
    assert_bronze(spark, {n: df for (layer, n), df in tables.items() if layer == "bronze"})
    assert_silver(spark, {n: df for (layer, n), df in tables.items() if layer == "silver"})
    gold = {n: df.count() for (layer, n), df in tables.items() if layer == "gold"}
    assert {n: gold[n] for n in E.GOLD_ROWS} == E.GOLD_ROWS


def test_spark_submit_prints_the_row_counts_and_no_findings(submitted):
    proc, _lake_dir = submitted
    finished = [e for e in events(proc) if e["event"] == "finished"]
    assert len(finished) == 1
    rows = finished[0]["rows"]
    assert {k: rows[f"bronze.{k}"] for k in E.BRONZE_ROWS} == E.BRONZE_ROWS
    assert rows["silver.queue_offsets"] == len(E.QUEUE_OFFSETS)
    assert rows["silver.group_members"] == len(E.GROUP_MEMBERS)
    assert rows["bronze.quarantine"] == len(E.QUARANTINE)
    assert finished[0]["findings_at_or_above"] == {f"gold.{k}": 0 for k in E.GOLD_ROWS}


def test_spark_submit_logs_one_json_line_per_table_with_the_run_id(submitted):
    proc, _lake_dir = submitted
    logged = events(proc)
    run_ids = {e["run_id"] for e in logged}
    assert len(run_ids) == 1
    wrote = {e["table"]: e for e in logged if e["event"] == "wrote"}
    assert {"bronze.offsets", "silver.queue_state", "gold.orphaned_queues"} <= wrote.keys()
    assert wrote["bronze.offsets"]["rows"] == E.BRONZE_ROWS["offsets"]
    assert all(e["seconds"] >= 0 and e["stage"] in ("bronze", "silver", "gold")
               for e in wrote.values())


def test_spark_submit_passes_the_cli_exit_code_through(tmp_path):
    proc = spark_submit("run", "--date", "2025-11-31", "--landing", str(E.HAND_DAY),
                        "--lake", str(tmp_path), "--engine", "spark")
    assert proc.returncode == 2
    assert "YYYY-MM-DD" in proc.stdout + proc.stderr


def test_a_spark_without_the_delta_package_fails_in_one_line_naming_it(tmp_path):
    """spark-submit without ``--packages io.delta:…`` and a Delta lake: exit 2 (a setting, not a
    transient failure) and a last line that names the package to add."""
    proc = spark_submit("run", "--date", E.RUN_DATE.isoformat(), "--landing", str(E.HAND_DAY),
                        "--lake", str(tmp_path / "lake"), "--engine", "spark")
    assert proc.returncode == 2, proc.stdout[-3000:]
    last = proc.stdout.strip().splitlines()[-1]  # the job's own output (the JVM logs to stderr)
    assert last.startswith("rocketlens: the Delta package is missing from this Spark")
    assert f"--packages {delta_package()}" in last
