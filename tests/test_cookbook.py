"""Every query of docs/cookbook.sql through ``rocketlens sql --format json`` on a simulated day."""

import json
import re
from pathlib import Path

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.delta

COOKBOOK = Path(__file__).resolve().parents[1] / "docs" / "cookbook.sql"


def cookbook() -> dict[str, tuple[str, str]]:
    """``name → (question, sql)`` from ``-- name:`` / ``-- question:`` blocks."""
    out = {}
    for block in re.split(r"(?m)^-- name: ", COOKBOOK.read_text())[1:]:
        name, body = block.split("\n", 1)
        question = re.search(r"(?m)^-- question: (.+)$", body).group(1)
        sql = "\n".join(line for line in body.splitlines() if not line.startswith("--"))
        out[name.strip()] = (question, sql.strip().rstrip(";"))
    return out


QUERIES = cookbook()


def test_cookbook_has_at_least_ten_named_questions():
    assert len(QUERIES) >= 10
    assert all(q.endswith("?") and sql.upper().startswith("SELECT")
               for q, sql in QUERIES.values())


def _ok(rows):
    assert rows, "no rows"


def _orphans(rows):
    topicb = [r for r in rows if r["topic"] == "billing-TopicB"]
    assert sorted(r["queue_id"] for r in topicb) == list(range(8, 16))
    assert {r["root_cause"] for r in topicb} == {"SUBSCRIPTION_INCONSISTENT"}
    assert all(r["would_be_owner"] for r in topicb)
    assert {"DUPLICATE_CLIENT_ID", "STRATEGY_INCONSISTENT"} <= {r["root_cause"] for r in rows}


def _stuck(rows):
    assert len(rows) <= 10
    top = rows[0]
    assert (top["group"], top["root_cause"]) == ("GID_slow_payments", "SLOW_MESSAGE")
    assert top["redelivery_risk"] > 0 and top["blocking_offset"] == top["committed_offset"]
    risks = [r["redelivery_risk"] for r in rows]
    assert risks == sorted(risks, reverse=True)


def _flapped(rows):
    assert [(r["group"], r["topic"]) for r in rows] == [("GID_topicb_billing", "billing-TopicB")]
    assert rows[0]["max_flaps_per_hour"] > 0


def _whatif(rows):
    by = {(r["group"], r["topic"]): r for r in rows}
    assert by[("GID_dup_inventory", "inventory-dup")]["orphaned_minutes_saved"] > 0
    assert any(r["queues_moved_saved"] > 0 for r in rows)


def _unhealthy(rows):
    assert {r["status"] for r in rows} <= {"WARN", "CRITICAL"}
    assert {"GID_topicb_billing", "GID_dup_inventory", "GID_mismatch_shipping",
            "GID_slow_payments"} <= {r["group"] for r in rows}
    assert rows[0]["status"] == "CRITICAL"


def _dup_ids(rows):
    assert [(r["group"], r["processes"]) for r in rows] == [("GID_dup_inventory", 2)]


def _double(rows):
    assert {r["group"] for r in rows} == {"GID_dup_inventory", "GID_mismatch_shipping"}
    assert all(len(r["owners"]) >= 2 for r in rows)


def _oldest(rows):
    lags = [r["max_time_lag_seconds"] for r in rows]
    assert lags == sorted(lags, reverse=True) and lags[0] > 3600


def _slow(rows):
    assert [(r["group"], r["topic"]) for r in rows] == [("GID_slow_payments", "payments-slow")]
    assert rows[0]["released_at"] is not None


def _churn(rows):
    assert {("cg-orders", "CLIENT_LEFT"), ("GID_crash_audit", "CLIENT_EXPIRED"),
            ("GID_crash_audit", "CLIENT_JOINED")} <= {(r["group"], r["trigger"]) for r in rows}


def _subs(rows):
    assert [r["group"] for r in rows] == ["GID_topicb_billing"]
    assert rows[0]["distinct_topic_sets"] == 2


def _unowned_now(rows):
    assert {r["group"] for r in rows} >= {"GID_dup_inventory", "GID_topicb_billing"}
    assert all(r["lag"] > 0 for r in rows)


def _reconciled(rows):
    assert {r["source"] for r in rows} >= {"offsets", "connections", "running_info"}
    assert all(r["balanced"] for r in rows)


CHECKS = {
    "orphaned_last_night": _orphans,
    "top_stuck_by_redelivery_risk": _stuck,
    "groups_that_flapped_this_week": _flapped,
    "consistent_hash_savings": _whatif,
    "unhealthy_groups": _unhealthy,
    "duplicate_client_ids": _dup_ids,
    "double_consumed_queues": _double,
    "oldest_waiting_message": _oldest,
    "slow_message_blockers": _slow,
    "rebalance_churn": _churn,
    "inconsistent_subscriptions": _subs,
    "queues_without_owner_now": _unowned_now,
    "landing_reconciliation": _reconciled,
}


def test_every_cookbook_query_has_a_check():
    assert set(CHECKS) == set(QUERIES)


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_cookbook_query(sample_lake, name):
    proc = run_cli("sql", QUERIES[name][1], "--lake", str(sample_lake), "--format", "json")
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    _ok(rows)
    CHECKS.get(name, _ok)(rows)


def test_registered_tables_carry_column_comments(sample_lake):
    proc = run_cli("sql", "DESCRIBE TABLE silver.queue_offsets", "--lake", str(sample_lake),
                   "--format", "json")
    comments = {r["col_name"]: r["comment"] for r in map(json.loads, proc.stdout.splitlines())}
    assert "oldest unconsumed" in comments["time_lag_seconds"]
    assert comments["date"].startswith("UTC day")
