"""One engine per pytest process (a Sail session and a classic one cannot share a process).

``ROCKETLENS_TEST_ENGINE=sail`` (default) runs everything; ``=spark`` runs on classic Spark
local[2] with Delta tests deselected (``-m "not delta"``), since the Delta jars come from Maven
Central, which these machines cannot reach.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("SPARK_TESTING", "1")
os.environ.setdefault("TZ", "UTC")

TEST_ENGINE = os.environ.get("ROCKETLENS_TEST_ENGINE", "sail")


@pytest.fixture(scope="session")
def engine_name() -> str:
    return TEST_ENGINE


@pytest.fixture(scope="session")
def spark():
    from jobs.engine import open_session

    with open_session(TEST_ENGINE, delta=False, master="local[2]", shuffle_partitions=2,
                      app_name="rocketlens-tests") as session:
        yield session


def pytest_collection_modifyitems(config, items):
    if TEST_ENGINE == "sail":
        for item in items:
            if item.get_closest_marker("spark_only"):
                item.add_marker(pytest.mark.skip(reason="needs classic Spark; runs in its pass"))
        return
    for item in items:
        if item.get_closest_marker("delta") or item.get_closest_marker("sail_only"):
            item.add_marker(pytest.mark.skip(reason="Delta/Sail-only test; runs in the Sail pass"))


SAMPLE_DAY = "2025-11-21"
SAMPLE_WINDOW = "09:50-14:20"  # slow message, client leaving, crash; all-day faults run throughout


def run_cli(*args: str, check: bool = True):
    """``python -m jobs ARGS`` in a subprocess from the repo root, without ROCKETLENS_* settings."""
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCKETLENS")}
    proc = subprocess.run([sys.executable, "-m", "jobs", *args], cwd=Path(__file__).parents[1],
                          env=env, capture_output=True, text=True, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"rocketlens {args[0]}: exit {proc.returncode}: {proc.stderr[-2000:]}")
    return proc


@pytest.fixture(scope="session")
def sample_lake(tmp_path_factory):
    """A Delta lake of the simulated ``sample`` day (window ``SAMPLE_WINDOW``), built by the CLI."""
    root = tmp_path_factory.mktemp("sample")
    run_cli("simulate", "--scenario", "sample", "--date", SAMPLE_DAY, "--landing",
            str(root / "landing"), "--window", SAMPLE_WINDOW)
    run_cli("run", "--date", SAMPLE_DAY, "--landing", str(root / "landing"), "--lake",
            str(root / "lake"))
    return root / "lake"
