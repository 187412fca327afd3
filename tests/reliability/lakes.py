"""Helpers shared by the reliability tests: run the CLI, read a lake's contents for comparison."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from jobs import lake
from tests.conftest import CLI_TIMEOUT_SECONDS, TEST_ENGINE, cli_engine_args

REPO = Path(__file__).resolve().parents[2]
HAND_DAY = REPO / "tests" / "data" / "hand_day"
RUN_METADATA = ("_run_id", "_ingested_at")  # differ between runs by design (docs/lake.md, Reruns)


# The reliability runs compare lakes these helpers wrote with each other only, never with another
# engine's: on classic Spark they take the test session's shuffle width (tests/conftest.py), 2, for
# their small days (the production local default, 8, is for a day's data)
CLASSIC_RUN_ENV = {"ROCKETLENS__ENGINE__SHUFFLE_PARTITIONS": "2"}


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCKETLENS")}
    if TEST_ENGINE == "spark":
        env.update(CLASSIC_RUN_ENV)
    env.update(extra)
    return env


def rocketlens(*args: str, check: bool = True, env: dict | None = None,
               timeout: int = CLI_TIMEOUT_SECONDS) -> subprocess.CompletedProcess:
    """``python -m jobs ARGS`` from the worktree root, without the caller's ROCKETLENS_* settings."""
    proc = subprocess.run([sys.executable, "-m", "jobs", *args], cwd=REPO,
                          env=env or cli_env(), capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"rocketlens {args[0]}: exit {proc.returncode}: {proc.stderr[-3000:]}")
    return proc


def run_args(day: str, landing: Path, lake_dir: Path, *extra: str) -> list[str]:
    """``run`` of ``day``, on the pass's engine (``cli_engine_args``: classic Spark + Delta in
    the classic pass)."""
    return ["run", "--date", day, "--landing", str(landing), "--lake", str(lake_dir),
            *cli_engine_args(), *extra]


def contents(spark, lake_dir: Path, day: str | None = None,
             keep_metadata: bool = False) -> dict[str, list[str]]:
    """Every lake table as sorted JSON rows (``day`` only, when given), run metadata left out."""
    out = {}
    for layer, name, path in lake.list_tables(lake_dir):
        df = spark.read.format("delta").load(path)
        if day is not None:
            df = df.where(f"date = '{day}'")
        cols = [c for c in df.columns if keep_metadata or c not in RUN_METADATA]
        out[f"{layer}.{name}"] = sorted(
            json.dumps(r.asDict(recursive=True), default=str, sort_keys=True)
            for r in df.select(*cols).collect())
    return out


def days_in(spark, lake_dir: Path) -> dict[str, list[str]]:
    """The distinct ``date`` values of every table."""
    return {f"{layer}.{name}": sorted({str(r.date) for r in
                                       spark.read.format("delta").load(path).select("date")
                                       .distinct().collect()})
            for layer, name, path in lake.list_tables(lake_dir)}
