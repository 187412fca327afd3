"""The master-down day (DESIGN.md §5.3, §6) through every layer on the test engine: the injected
MASTER_DOWN finding exactly as the truth says, and the three controls of the same day — a healthy
group on the same broker (no stuck finding; its offset goes back once after the return and that is
accepted), a failing consumer on a broker whose master stays up (never MASTER_DOWN) — one
simulated day for all of them (CI time)."""

from __future__ import annotations

import datetime as dt

import pytest

from jobs.gold.incidents import REMEDIATION
from jobs.gold.incidents import SCHEMA as INCIDENTS_SCHEMA
from jobs.pipeline import incident_frames
from jobs.settings import Settings
from tests.gold.conftest import expected
from tests.gold.test_stuck_queues import assert_equal_to_truth, parse_iso

# a single-scenario day: on classic Spark in the acceptance tier (`make test-acceptance`)
pytestmark = pytest.mark.heavy_day

SCENARIO = "master-down"
PAYMENTS, LEDGER, AUDIT = "GID_md_payments", "GID_md_ledger", "GID_md_audit"


def master_down(truth):
    return next(f["expected_master_down"] for f in truth["faults"] if f["kind"] == "master_down")


def test_master_down_day_gives_exactly_the_injected_stuck_queue(scenario_day):
    truth, layers = scenario_day(SCENARIO)
    stuck = layers["gold"]["stuck_queues"]

    assert_equal_to_truth(stuck, truth)
    assert [r.root_cause for r in stuck.collect()] == ["MASTER_DOWN"]
    row = stuck.first()
    want = expected(truth, "expected_stuck_queues")[0]
    assert row.blocking_offset == want["blocking_offset"]
    # the looping message named with its local retry count: one try every 10 s for 40 min
    assert f"at offset {want['blocking_offset']} failed and cannot go back to the broker" in row.evidence
    retries = int(row.evidence.split("retried locally ")[1].split(" ")[0])
    assert 230 <= retries <= 241, row.evidence
    assert row.evidence.startswith("broker-b's master was gone from 01:12:1")


def test_window_is_cluster_wide_from_the_first_evidence_to_the_first_return(scenario_day):
    truth, layers = scenario_day(SCENARIO)
    want = master_down(truth)
    windows = layers["silver"]["master_down_windows"].collect()

    assert [w.broker_name for w in windows] == ["broker-b"]
    # the first evidence is a route poll or a snapshot within 30 s of the stop
    down_from, down_until = parse_iso(want["down_from"]), parse_iso(want["down_until"])
    assert down_from <= windows[0].down_from <= down_from + dt.timedelta(seconds=30)
    assert down_until <= windows[0].down_until <= down_until + dt.timedelta(seconds=30)


def test_group_health_names_the_outage_for_each_group_on_the_broker(scenario_day):
    truth, layers = scenario_day(SCENARIO)
    health = {r.group: r for r in layers["gold"]["group_health"].collect()}

    on_broker = master_down(truth)["groups"]
    assert sorted(on_broker) == [LEDGER, PAYMENTS]
    assert "CRITICAL BROKER_MASTER_DOWN broker-b 01:12–01:52" in health[PAYMENTS].findings
    assert health[PAYMENTS].status == "CRITICAL"
    # controls: the healthy group on broker-b gets the note, nothing above INFO
    assert health[LEDGER].findings == ["INFO BROKER_MASTER_DOWN broker-b 01:12–01:52"]
    assert health[LEDGER].status == "OK"
    assert health[AUDIT].status == "OK" and health[AUDIT].findings == []


def test_offset_going_back_after_the_return_is_accepted(scenario_day):
    _, layers = scenario_day(SCENARIO)
    offsets = layers["silver"]["queue_offsets"]
    back = offsets.where(f"`group` = '{LEDGER}' and consumer_offset_delta < 0").collect()

    # the returned master reports its pre-outage offsets at the snapshot right after 01:52:13
    assert back and {r.ts.strftime("%H:%M") for r in back} == {"01:52"}
    assert all(r.broker_name == "broker-b" and r.broker_id == 0 for r in back)
    assert layers["gold"]["stuck_queues"].where(f"`group` = '{LEDGER}'").count() == 0


def test_failing_consumer_with_its_master_up_hands_messages_back(scenario_day):
    _, layers = scenario_day(SCENARIO)
    status = layers["silver"]["consume_status"].where(
        f"`group` = '{AUDIT}' and topic = 'audit-a' and consume_failed_tps > 0")
    retry = layers["silver"]["queue_offsets"].where(f"topic = '%RETRY%{AUDIT}'")

    assert status.count() > 0  # it does fail
    # the hand-back reaches %RETRY% on broker-a; the offsets keep moving: no stuck finding
    assert retry.agg({"broker_offset": "max"}).first()[0] > retry.agg({"broker_offset": "min"}).first()[0]
    assert layers["gold"]["stuck_queues"].where(f"`group` = '{AUDIT}'").count() == 0


def test_incidents_say_what_to_do_for_the_stuck_queue_and_each_group_on_the_broker(scenario_day,
                                                                                     spark):
    _, layers = scenario_day(SCENARIO)
    none_before = spark.createDataFrame([], INCIDENTS_SCHEMA)

    incidents = incident_frames(layers["gold"], none_before, Settings(), layers["silver"])
    rows = {(r.group, r.kind, r.cause): r for r in incidents["incidents"].collect()}

    assert sorted(rows) == [(LEDGER, "BROKER", "BROKER_MASTER_DOWN"),
                            (PAYMENTS, "BROKER", "BROKER_MASTER_DOWN"),
                            (PAYMENTS, "STUCK", "MASTER_DOWN")]
    assert rows[(PAYMENTS, "STUCK", "MASTER_DOWN")].remediation == REMEDIATION[("STUCK", "MASTER_DOWN")]
    assert rows[(PAYMENTS, "BROKER", "BROKER_MASTER_DOWN")].severity == "CRITICAL"
    ledger = rows[(LEDGER, "BROKER", "BROKER_MASTER_DOWN")]
    assert ledger.severity == "INFO" and ledger.queues == ["broker-b"]
    assert ledger.remediation == REMEDIATION[("BROKER", "BROKER_MASTER_DOWN")]
