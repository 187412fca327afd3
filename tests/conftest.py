"""One engine per pytest process (a Sail session and a classic one cannot share a process).

``ROCKETLENS_TEST_ENGINE=sail`` (default) runs every test but ``spark_only``. ``=spark`` runs on
classic Spark local[2] + Delta (delta-spark's jars from Maven Central, cached in ~/.ivy2.5.2)
only the tests that exercise the engine (``exercises_engine``): the others (pure Python, and the
CLI, which runs Sail unless told ``--engine``) are deselected there, having run in the Sail pass.
``delta`` tests read a lake a Sail ``rocketlens run`` wrote and stay on Sail; their classic
counterparts are the ``classic_cli`` tests, whose CLI runs take ``--engine spark`` in the classic
pass (``cli_engine_args``). Tests that write Delta in this process run in both passes.
Tiers (Makefile, README "Tests"): ``make test`` runs the Sail pass and the classic parity tier
(``-m "not heavy_day and not spark_only and not classic_cli"``); ``make test-acceptance`` the
classic ``heavy_day``, ``spark_only`` and ``classic_cli`` tests; ``.ci/run`` runs both.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

os.environ.setdefault("TZ", "UTC")

TEST_ENGINE = os.environ.get("ROCKETLENS_TEST_ENGINE", "sail")

# The classic test session's own settings, measured A/B on the same files (benchmarks/RESULTS.md,
# "Test-suite engine settings"): the frames are tiny and the plans large, so planning and the
# JVM's heap decide. Adaptive execution off (it plans each stage again), broadcast joins on (at
# Spark's default threshold: the local production session turns them off for its heap's sake),
# 2 GB of driver heap (the default is 1 GB). Spark's internal
# test mode (SPARK_TESTING=1) is not set: no measurable cost or gain here; what the tests need of
# it is kept explicitly — a generated method past the JVM's 64 KB fails the test instead of
# falling back silently to interpreted code (what production would then run, slower).
CLASSIC_TEST_CONF = {
    "spark.sql.codegen.fallback": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.autoBroadcastJoinThreshold": "10485760",
    "spark.driver.memory": "2g",
    # Delta rebuilds a table's snapshot (its log's state) in this many shuffle partitions, 50 by
    # default: for a test's table of a few files that is 50 tasks per read; Delta's own test
    # suites set it low in the same way
    "spark.databricks.delta.snapshotPartitions": "2",
    # VACUUM lists a table's folders in a job of this many tasks, Spark's default 10,000 (~90 s
    # for a test's table of ten files on local[2])
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
}

# A test exercises the engine of its pass when it asks for one of these fixtures (also through
# another fixture) or carries the ``engine`` marker (a fixture asked for at run time).
ENGINE_FIXTURES = frozenset({"spark", "engine_name"})


def exercises_engine(item: pytest.Item) -> bool:
    return bool(ENGINE_FIXTURES & set(getattr(item, "fixturenames", ()))) \
        or item.get_closest_marker("engine") is not None


@pytest.fixture(scope="session")
def engine_name() -> str:
    return TEST_ENGINE


@pytest.fixture(scope="session")
def spark():
    from jobs.engine import open_session

    with open_session(TEST_ENGINE, master="local[2]", shuffle_partitions=2,
                      app_name="rocketlens-tests", local_conf=CLASSIC_TEST_CONF) as session:
        yield session


def pytest_collection_modifyitems(config, items):
    if TEST_ENGINE == "sail":
        for item in items:
            if item.get_closest_marker("spark_only"):
                item.add_marker(pytest.mark.skip(reason="needs classic Spark; runs in its pass"))
        return
    keep, dropped = [], []
    for item in items:
        if item.get_closest_marker("spark_only") or (
                item.get_closest_marker("classic_cli") and exercises_engine(item)):
            keep.append(item)
        elif (item.get_closest_marker("delta") or item.get_closest_marker("sail_only")
              or not exercises_engine(item)):
            dropped.append(item)
        else:
            keep.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def shared_dir(tmp_path_factory, key: str, build: Callable[[Path], None]) -> Path:
    """``<run>/shared/<key>``, built by ``build(path)`` once per pytest run: the first worker
    (pytest-xdist) to ask builds it under a file lock, the others wait and reuse it. For what
    tests only read (a simulated landing, a lake they copy before writing)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's folder, above each worker's own
    target = base / "shared" / key
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = target / ".built"
        if not done.exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            build(target)
            done.touch()
    return target


SAMPLE_DAY = "2025-11-21"
SAMPLE_WINDOW = "09:50-14:20"  # slow message, client leaving, crash; all-day faults run throughout


# A CLI subprocess is given this long before the test fails: a classic Spark + Delta run of a
# small day takes about 2 minutes alone and measured 10 with three JVMs on two cores (the
# acceptance tier's workers beside the concurrent-days test); a hung run still fails the test.
CLI_TIMEOUT_SECONDS = 1500


def cli_engine_args() -> list[str]:
    """``--engine spark`` in the classic pass (the ``classic_cli`` tests' runs: classic Spark +
    Delta), nothing in the Sail pass (the CLI's default engine)."""
    return ["--engine", "spark"] if TEST_ENGINE == "spark" else []


def run_cli(*args: str, check: bool = True):
    """``python -m jobs ARGS`` in a subprocess from the repo root, without ROCKETLENS_* settings."""
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCKETLENS")}
    proc = subprocess.run([sys.executable, "-m", "jobs", *args], cwd=Path(__file__).parents[1],
                          env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT_SECONDS)
    if check and proc.returncode != 0:
        raise AssertionError(f"rocketlens {args[0]}: exit {proc.returncode}: {proc.stderr[-2000:]}")
    return proc


@pytest.fixture(scope="session")
def sample_lake(tmp_path_factory):
    """A Delta lake of the simulated ``sample`` day (window ``SAMPLE_WINDOW``), built by the CLI
    once per run; tests only read it."""
    def build(root: Path) -> None:
        run_cli("simulate", "--scenario", "sample", "--date", SAMPLE_DAY, "--landing",
                str(root / "landing"), "--window", SAMPLE_WINDOW)
        run_cli("run", "--date", SAMPLE_DAY, "--landing", str(root / "landing"), "--lake",
                str(root / "lake"))

    return shared_dir(tmp_path_factory, "sample", build) / "lake"
