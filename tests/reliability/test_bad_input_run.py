"""``rocketlens run`` on a simulated day with real findings plus the whole bad-input corpus,
against a clean run of the same day: the run exits 0, every bad line is accounted for, and the
good groups' silver and gold rows are unchanged (Delta: Sail pass only)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from jobs import lake
from tests.reliability.bad_corpus import (
    BAD_GROUP,
    CASE_IDS,
    CASES,
    DAY,
    build_landing,
    corpus_files,
    real_line_count,
)

pytestmark = pytest.mark.delta

REPO = Path(__file__).resolve().parents[2]
RUN_METADATA = ("_run_id", "_ingested_at")
# An orphaned topic (SUBSCRIPTION_INCONSISTENT), stuck queues (NO_OWNER, SLOW_MESSAGE) and a
# subscription storm, in a 40-minute window.
GOOD_DAY_SCENARIO = """name = "bad-input-good-day"
description = "slow message and topicB subscription, for the bad-input run"
cluster = "rmq-prod"
include = ["slow-message", "topicb-subscription"]
"""
WINDOW = "09:50-10:30"


def rocketlens(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCKETLENS")}
    return subprocess.run([sys.executable, "-m", "jobs", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def run_day(landing: Path, lake_dir: Path) -> subprocess.CompletedProcess:
    return rocketlens("run", "--date", DAY.isoformat(), "--landing", str(landing),
                      "--lake", str(lake_dir))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad-run")
    (root / "good-day.toml").write_text(GOOD_DAY_SCENARIO)
    good = root / "good"
    sim = rocketlens("simulate", "--scenario", str(root / "good-day.toml"), "--date",
                     DAY.isoformat(), "--landing", str(good), "--window", WINDOW)
    assert sim.returncode == 0, sim.stderr
    combined = root / "combined"
    shutil.copytree(good, combined)
    build_landing(combined)
    return {"clean": run_day(good, root / "clean-lake"),
            "combined": run_day(combined, root / "combined-lake"),
            "clean_lake": root / "clean-lake", "combined_lake": root / "combined-lake",
            "combined_landing": combined}


def test_both_runs_exit_0(runs):
    assert runs["clean"].returncode == 0, runs["clean"].stderr[-2000:]
    assert runs["combined"].returncode == 0, runs["combined"].stderr[-2000:]


def test_the_run_prints_every_corpus_file_in_its_counts(runs):
    assert all(f in runs["combined"].stdout for f in corpus_files())


def test_the_staging_is_removed_after_a_run_with_damaged_files(runs):
    assert not (runs["combined_lake"] / "_staging").exists()


def read(spark, lake_dir, layer, name):
    return lake.read_day(spark, lake_dir, layer, name, DAY)


@pytest.fixture(scope="module")
def counts(spark, runs):
    return {r.source_file: r for r in read(spark, runs["combined_lake"], "bronze",
                                            "ingest_counts").collect()}


@pytest.fixture(scope="module")
def quarantine(spark, runs):
    return read(spark, runs["combined_lake"], "bronze", "quarantine").orderBy(
        "source_file", "line_no").collect()


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_every_line_of_the_class_is_accounted_for(case, counts, runs):
    row = counts[case.source_file]
    real = real_line_count(runs["combined_landing"] / case.source_file)
    assert row.lines == case.expected_lines(real)
    assert row.lines == row.accepted + row.quarantined + row.other_day + row.unmatched
    assert (row.accepted, row.quarantined, row.other_day, row.unmatched) == (
        case.accepted, case.quarantined, case.other_day, case.unmatched)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_bad_rows_sit_in_quarantine_with_a_reason_naming_the_class(case, quarantine):
    assert tuple(r.reason for r in quarantine if r.source_file == case.source_file) == (
        case.reasons)


def test_only_corpus_files_have_quarantined_lines(quarantine):
    assert {r.source_file for r in quarantine} <= set(corpus_files())


def test_good_files_are_counted_as_in_the_clean_run(spark, runs, counts):
    clean = {r.source_file: r for r in read(spark, runs["clean_lake"], "bronze",
                                             "ingest_counts").collect()}
    assert clean and all(
        tuple(counts[f])[3:8] == tuple(row)[3:8] for f, row in clean.items())


def _rows(spark, lake_dir, layer, name):
    df = read(spark, lake_dir, layer, name)
    if "group" in df.columns:
        df = df.where(F.col("group") != BAD_GROUP)
    cols = [c for c in df.columns if c not in RUN_METADATA]
    return sorted(json.dumps(r.asDict(recursive=True), default=str, sort_keys=True)
                  for r in df.select(*cols).collect())


GOOD_DATA_TABLES = [
    ("bronze", "offsets"), ("bronze", "connections"), ("bronze", "running_info"),
    ("silver", "queue_offsets"), ("silver", "group_members"), ("silver", "queue_ownership"),
    ("silver", "queue_state"), ("silver", "member_context"),
    ("gold", "orphaned_queues"), ("gold", "double_owned_queues"), ("gold", "stuck_queues"),
    ("gold", "rebalance_events"), ("gold", "strategy_whatif"), ("gold", "group_health"),
]


@pytest.mark.parametrize("layer, name", GOOD_DATA_TABLES, ids=[f"{a}.{b}" for a, b in
                                                              GOOD_DATA_TABLES])
def test_the_good_groups_rows_are_unchanged(spark, runs, layer, name):
    clean = _rows(spark, runs["clean_lake"], layer, name)
    assert clean == _rows(spark, runs["combined_lake"], layer, name)


def test_the_good_day_has_real_findings(spark, runs):
    health = {r.group: r.status for r in read(spark, runs["clean_lake"], "gold",
                                               "group_health").collect()}
    assert health == {"GID_topicb_billing": "CRITICAL", "GID_slow_payments": "WARN"}
    assert read(spark, runs["clean_lake"], "gold", "orphaned_queues").count() == 8
