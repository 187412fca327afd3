"""``rocketlens run --fail-on SEVERITY``: exit 3 with one line naming the counts (DESIGN.md §1)."""

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from chispa import assert_df_equality

from jobs.alerts import filter_at_or_above
from tests.pipeline import hand_day_expected as E

REPO = Path(__file__).resolve().parents[2]


def test_filter_at_or_above_keeps_the_severity_and_higher(spark):
    df = spark.createDataFrame([("a", "INFO"), ("b", "WARN"), ("c", "CRITICAL"), ("d", None)],
                               "id string, severity string")
    expected = spark.createDataFrame([("b", "WARN"), ("c", "CRITICAL")],
                                     "id string, severity string")
    assert_df_equality(df.transform(filter_at_or_above("WARN")), expected,
                       ignore_row_order=True, ignore_nullable=True)


def test_filter_at_or_above_refuses_an_unknown_severity():
    with pytest.raises(ValueError, match="ERROR"):
        filter_at_or_above("ERROR")


def rocketlens(*args: str, **env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ROCKETLENS")}
    return subprocess.run([sys.executable, "-m", "jobs", *args], cwd=REPO, env={**clean, **env},
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def orphan_day(tmp_path_factory):
    """topicb-subscription for 40 minutes: B's queues 8–15 orphaned ≥ 30 min, so CRITICAL."""
    from jobs.simulate.run import simulate

    root = tmp_path_factory.mktemp("orphans")
    simulate("topicb-subscription", E.RUN_DATE, root / "landing", seed=0,
             window=("00:00", "00:40"))
    return root


@pytest.mark.delta
def test_findings_at_or_above_fail_on_exit_3_with_one_line_naming_the_counts(orphan_day):
    proc = rocketlens("run", "--date", E.RUN_DATE.isoformat(), "--landing",
                      str(orphan_day / "landing"), "--lake", str(orphan_day / "lake"),
                      "--fail-on", "CRITICAL")
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1] == (
        "rocketlens: 16 findings at or above CRITICAL on 2025-11-21: "
        "gold.orphaned_queues=8, gold.double_owned_queues=0, gold.stuck_queues=8")
    assert "gold.orphaned_queues" in proc.stdout  # the run's tables are printed first


@pytest.mark.delta
def test_no_findings_at_or_above_fail_on_exit_0_and_json_logs_carry_the_run_id(tmp_path):
    proc = rocketlens("run", "--date", E.RUN_DATE.isoformat(), "--landing", str(E.HAND_DAY),
                      "--lake", str(tmp_path / "lake"), ROCKETLENS_FAIL_ON="INFO",
                      ROCKETLENS_LOG_FORMAT="json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    logged = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    assert [e["event"] for e in logged][0] == "started"
    assert logged[-1]["event"] == "finished"
    assert logged[-1]["findings_at_or_above"] == {"gold.orphaned_queues": 0,
                                                   "gold.double_owned_queues": 0,
                                                   "gold.stuck_queues": 0}
    assert len({e["run_id"] for e in logged}) == 1
    assert dt.date.fromisoformat(logged[0]["date"]) == E.RUN_DATE


def test_bad_fail_on_severity_is_a_usage_error(tmp_path):
    proc = rocketlens("run", "--date", "2025-11-21", "--landing", str(E.HAND_DAY), "--lake",
                      str(tmp_path), "--fail-on", "ERROR")
    assert proc.returncode == 2
