"""``rocketlens run`` end to end into real Delta tables, then ``sql`` and ``tables`` over the lake
(Sail; the writes also on classic Spark + Delta, ``--engine spark``, in the acceptance tier; a
rerun on classic: tests/reliability/test_reruns.py)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from jobs import lake
from tests.conftest import CLI_TIMEOUT_SECONDS, cli_engine_args
from tests.pipeline import hand_day_expected as E
from tests.pipeline.assertions import assert_bronze, assert_silver

pytestmark = pytest.mark.delta

REPO = Path(__file__).resolve().parents[2]
RUN_METADATA = ("_run_id", "_ingested_at")


def rocketlens(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCKETLENS")}
    proc = subprocess.run([sys.executable, "-m", "jobs", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=CLI_TIMEOUT_SECONDS)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}: {proc.stderr[-2000:]}")
    return proc


def run_hand_day(lake_dir: Path) -> subprocess.CompletedProcess:
    return rocketlens("run", "--date", "2025-11-21", "--landing", str(E.HAND_DAY),
                      "--lake", str(lake_dir), *cli_engine_args())


@pytest.fixture(scope="module")
def lake_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("lake")
    proc = run_hand_day(path)
    assert "bronze.quarantine" in proc.stdout
    return path


def read_all(spark, lake_dir, layer):
    return {name: spark.read.format("delta").load(path)
            for lyr, name, path in lake.list_tables(lake_dir) if lyr == layer}


@pytest.mark.classic_cli
def test_run_writes_the_expected_bronze_and_silver_delta_tables(spark, lake_dir):
    assert_bronze(spark, read_all(spark, lake_dir, "bronze"))
    assert_silver(spark, read_all(spark, lake_dir, "silver"))


def test_run_leaves_no_staging_files(lake_dir):
    assert not (lake_dir / "_staging").exists()


def _snapshot(spark, lake_dir):
    out = {}
    for layer, name, path in lake.list_tables(lake_dir):
        df = spark.read.format("delta").load(path)
        cols = [c for c in df.columns if c not in RUN_METADATA]
        out[f"{layer}.{name}"] = sorted(json.dumps(r.asDict(recursive=True), default=str,
                                                   sort_keys=True)
                                        for r in df.select(*cols).collect())
    return out


def test_rerunning_the_same_day_leaves_identical_tables(spark, tmp_path):
    run_hand_day(tmp_path)
    first = _snapshot(spark, tmp_path)
    run_hand_day(tmp_path)
    second = _snapshot(spark, tmp_path)
    assert first.keys() == second.keys()
    assert {"bronze.quarantine", "silver.queue_state", "gold.orphaned_queues"} <= first.keys()
    assert first == second


def test_sql_json_prints_one_object_per_row(lake_dir):
    proc = rocketlens("sql", "SELECT count(*) AS n FROM silver.queue_offsets", "--lake",
                      str(lake_dir), "--format", "json")
    assert proc.stdout.splitlines() == ['{"n": 19}']


def test_sql_accepts_a_lake_path_relative_to_the_working_directory(lake_dir):
    relative = os.path.relpath(lake_dir, REPO)
    assert not Path(relative).is_absolute()

    proc = rocketlens("sql", "SELECT count(*) AS n FROM silver.queue_offsets", "--lake", relative,
                      "--format", "json")

    assert proc.stdout.splitlines() == ['{"n": 19}']


def test_sql_json_renders_timestamps_as_iso_utc(lake_dir):
    proc = rocketlens("sql", "SELECT ts, lag FROM silver.queue_offsets WHERE topic = 'billing' "
                      "AND queue_id = 0 ORDER BY ts", "--lake", str(lake_dir), "--format", "json")
    assert [json.loads(line) for line in proc.stdout.splitlines()] == [
        {"ts": "2025-11-21T00:00:00Z", "lag": 0}, {"ts": "2025-11-21T00:01:00Z", "lag": 5},
        {"ts": "2025-11-21T23:59:30Z", "lag": 1}]


def test_sql_csv_has_a_header_row(lake_dir):
    proc = rocketlens("sql", "SELECT source, count(*) AS n FROM bronze.quarantine GROUP BY "
                      "source ORDER BY source", "--lake", str(lake_dir), "--format", "csv")
    assert proc.stdout.splitlines() == ["source,n", "client_logs,1", "connections,1",
                                        "offsets,4", "running_info,1"]


def test_sql_error_is_one_line_and_exit_1(lake_dir):
    proc = rocketlens("sql", "SELECT * FROM silver.nope", "--lake", str(lake_dir), check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0 and proc.stderr.startswith("rocketlens: ")


def test_tables_lists_every_table_with_rows_and_schema(lake_dir):
    proc = rocketlens("tables", "--lake", str(lake_dir))
    assert "silver.queue_offsets  rows=19" in proc.stdout
    assert "bronze.quarantine  rows=7" in proc.stdout
    assert "    reason: string" in proc.stdout


def test_missing_landing_directory_fails_with_one_line(tmp_path):
    proc = rocketlens("run", "--date", "2025-11-21", "--landing", str(tmp_path / "nope"),
                      "--lake", str(tmp_path / "lake"), check=False)
    assert proc.returncode == 4  # tests/reliability/test_failures.py has every exit code
    assert proc.stderr.strip().splitlines()[-1].startswith("rocketlens: landing directory")


def test_bad_date_is_a_usage_error(tmp_path):
    proc = rocketlens("run", "--date", "2025-11-31", "--landing", str(E.HAND_DAY),
                      "--lake", str(tmp_path), check=False)
    assert proc.returncode == 2 and "YYYY-MM-DD" in proc.stderr


@pytest.mark.sail_only
def test_run_with_engine_connect_against_a_spark_connect_server(tmp_path):
    """The third engine: any Spark Connect URL. A Sail server on loopback stands in for a remote
    cluster; the job code is the same."""
    from pysail.spark import SparkConnectServer

    server = SparkConnectServer("127.0.0.1", 0)
    server.start(background=True)
    try:
        host, port = server.listening_address
        proc = rocketlens("run", "--date", "2025-11-21", "--landing", str(E.HAND_DAY),
                          "--lake", str(tmp_path), "--engine", "connect",
                          "--remote", f"sc://{host}:{port}")
        assert re.search(r"^silver\.queue_offsets\s+19$", proc.stdout, re.MULTILINE)
    finally:
        server.stop()


def test_connect_engine_without_remote_fails_with_one_line(tmp_path):
    proc = rocketlens("run", "--date", "2025-11-21", "--landing", str(E.HAND_DAY),
                      "--lake", str(tmp_path), "--engine", "connect", check=False)
    assert proc.returncode == 2  # bad usage
    assert proc.stderr.strip().splitlines()[-1] == (
        "rocketlens: engine 'connect' needs --remote sc://host:port")
