"""Each operational failure: its own exit code and one ``rocketlens: …`` line on stderr saying
what to do, no traceback (docs/operations.md, Failure modes). All fail before any table is written, so they
run on both engines (``--engine`` of the pass)."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.reliability.lakes import HAND_DAY, cli_env, rocketlens, run_args

DAY = "2025-11-21"


def only_line(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rocketlens: "), proc.stderr[-3000:]
    return lines[0]


def test_missing_landing_directory_exits_4(tmp_path, engine_name):
    proc = rocketlens(*run_args(DAY, tmp_path / "nope", tmp_path / "lake", "--engine",
                                engine_name), check=False)
    assert proc.returncode == 4
    assert "landing directory" in only_line(proc) and "check --landing" in proc.stderr


@pytest.mark.parametrize("layout", ["empty root", "other days only", "no data file names"])
def test_no_landing_data_for_the_day_exits_5(tmp_path, engine_name, layout):
    landing = tmp_path / "landing"
    landing.mkdir()
    if layout == "other days only":
        (landing / "offsets" / "date=2025-11-19").mkdir(parents=True)
        (landing / "offsets" / "date=2025-11-19" / "part-0.jsonl").write_text("{}\n")
    elif layout == "no data file names":
        day = landing / "offsets" / f"date={DAY}"
        day.mkdir(parents=True)
        (day / "_SUCCESS").write_text("")
        (day / "notes.txt").write_text("not landing data\n")
    proc = rocketlens(*run_args(DAY, landing, tmp_path / "lake", "--engine", engine_name),
                      check=False)
    assert proc.returncode == 5
    assert f"no landing files for {DAY}" in only_line(proc)
    assert not (tmp_path / "lake").exists()  # failed before anything was written


def test_unreachable_spark_connect_server_exits_6(tmp_path):
    """Nothing listens on port 1; the Connect client alone would retry for ~10 minutes."""
    env = cli_env(ROCKETLENS__ENGINE__CONNECT_TIMEOUT_SECONDS="1")
    proc = rocketlens(*run_args(DAY, HAND_DAY, tmp_path / "lake", "--engine", "connect",
                                "--remote", "sc://127.0.0.1:1"), check=False, env=env)
    assert proc.returncode == 6
    assert only_line(proc) == ("rocketlens: no Spark Connect server answered at "
                               "sc://127.0.0.1:1 within 1s: start it or fix --remote")


def fake_java_home(tmp_path, script: str | None):
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    if script is not None:
        java = home / "bin" / "java"
        java.write_text(script)
        java.chmod(0o755)
    return home


def path_without_java() -> str:
    dirs = os.environ["PATH"].split(os.pathsep)
    return os.pathsep.join(d for d in dirs if not os.path.exists(os.path.join(d, "java")))


def test_a_jvm_that_does_not_start_exits_6(tmp_path):
    """A real classic-Spark start failure: the launcher runs a java that dies at once."""
    home = fake_java_home(tmp_path, "#!/bin/sh\necho 'Error: broken JVM' >&2\nexit 1\n")
    proc = rocketlens(*run_args(DAY, HAND_DAY, tmp_path / "lake", "--engine", "spark"),
                      check=False, env=cli_env(JAVA_HOME=str(home)))
    assert proc.returncode == 6, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "rocketlens: classic Spark did not start: ")
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("java_home", ["empty JAVA_HOME", "no JAVA_HOME"])
def test_java_missing_for_the_classic_engine_exits_7(tmp_path, java_home):
    env = cli_env(PATH=path_without_java())
    env.pop("JAVA_HOME", None)
    if java_home == "empty JAVA_HOME":
        env["JAVA_HOME"] = str(fake_java_home(tmp_path, None))
    proc = rocketlens(*run_args(DAY, HAND_DAY, tmp_path / "lake", "--engine", "spark"),
                      check=False, env=env)
    assert proc.returncode == 7
    line = only_line(proc)
    assert "needs Java 17" in line and "--engine sail" in line


@pytest.mark.parametrize("args, expected", [
    (("--engine", "connect"), "needs --remote"),
    (("--engine", "connect", "--remote", "http://example:15002"), "not a Spark Connect URL"),
    (("--fail-on", "ERROR"), "--fail-on"),
])
def test_bad_engine_or_option_is_a_usage_error_exit_2(tmp_path, args, expected):
    proc = rocketlens(*run_args(DAY, HAND_DAY, tmp_path / "lake", *args), check=False)
    assert proc.returncode == 2
    assert expected in only_line(proc)


@pytest.mark.delta
def test_any_other_failure_exits_1_with_one_line_naming_the_day(tmp_path):
    """A lake table whose Delta log is garbage: the run stops, says which day to rerun."""
    log_dir = tmp_path / "lake" / "bronze" / "offsets" / "_delta_log"
    log_dir.mkdir(parents=True)
    (log_dir / "00000000000000000000.json").write_text("not a delta log\n")
    proc = rocketlens(*run_args(DAY, HAND_DAY, tmp_path / "lake"), check=False)
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"rocketlens: run of {DAY} failed (") and "rerun" in last
    assert "Traceback" not in proc.stderr


@pytest.mark.delta  # classic: migrate in process, tests/test_migrate.py (a classic CLI day costs minutes)
def test_a_table_from_a_release_with_fewer_columns_exits_2_until_migrated(tmp_path, spark):
    """The upgrade case (docs/operations.md): bronze.connections as an older release wrote it,
    without ``broker_addr``. The run refuses that table's write with one line saying what to do,
    and leaves the table as it was (Sail once appended the day without the column); ``rocketlens
    migrate`` adds the column keeping every row, and the rerun writes the day into it."""
    lake_dir = tmp_path / "lake"
    rocketlens(*run_args(DAY, HAND_DAY, lake_dir))
    table = lake_dir / "bronze" / "connections"
    older = tmp_path / "older-connections"
    (spark.read.format("delta").load(str(table)).drop("broker_addr")
     .write.format("delta").partitionBy("date").save(str(older)))
    shutil.rmtree(table)
    shutil.move(older, table)
    rows = spark.read.format("delta").load(str(table)).count()
    proc = rocketlens(*run_args(DAY, HAND_DAY, lake_dir), check=False)
    assert proc.returncode == 2, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("rocketlens: lake table bronze.connections was written by another "
                           f"release (lacks broker_addr): run 'rocketlens migrate --lake {lake_dir}' "
                           "first"), last
    assert "Upgrading an existing lake" in last and "Traceback" not in proc.stderr
    after = spark.read.format("delta").load(str(table))
    assert "broker_addr" not in after.columns and after.count() == rows
    # the upgrade: migrate (on the pass's engine), then the day runs again
    rocketlens("migrate", "--lake", str(lake_dir))
    migrated = spark.read.format("delta").load(str(table))
    assert "broker_addr" in migrated.columns and migrated.count() == rows
    old_runs = {r._run_id for r in migrated.select("_run_id").distinct().collect()}
    rocketlens(*run_args(DAY, HAND_DAY, lake_dir))
    rerun = spark.read.format("delta").load(str(table))
    assert rerun.count() == rows  # the day replaced by the rerun's rows, into the migrated table
    assert {r._run_id for r in rerun.select("_run_id").distinct().collect()}.isdisjoint(old_runs)


@pytest.mark.sail_only
def test_a_sail_memory_pool_too_small_for_the_day_exits_1_naming_the_setting(tmp_path):
    """The pool setting reaches the embedded engine: 1 MiB cannot hold one sort's batch."""
    env = cli_env(ROCKETLENS__ENGINE__SAIL_MEMORY_POOL_MIB="1")
    proc = rocketlens(*run_args(DAY, HAND_DAY, tmp_path / "lake"), check=False, env=env)
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"rocketlens: run of {DAY} ran out of engine memory (")
    assert "raise engine.sail_memory_pool_mib (now 1) and rerun" in last
    assert "Traceback" not in proc.stderr


@pytest.mark.sail_only
def test_demo_opens_its_engine_from_the_settings(tmp_path):
    """``engine.name`` reaches ``demo`` (it once hard-coded the embedded engine): ``connect``
    without a remote is bad usage, after the sample day is simulated and before any table."""
    env = cli_env(ROCKETLENS__ENGINE__NAME="connect")
    proc = rocketlens("demo", "--out", str(tmp_path / "demo"), check=False, env=env)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1] == (
        "rocketlens: engine 'connect' needs --remote sc://host:port")
    assert (tmp_path / "demo" / "landing" / "_truth.json").is_file()
    assert not (tmp_path / "demo" / "lake").exists()

