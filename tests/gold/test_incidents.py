"""gold.incidents (issue 22): hand-built finding frames through the pure transform on both
engines, and a simulated duplicate-client-id day end to end in memory."""

import datetime as dt

import pytest

from jobs.gold.group_health import build_group_health
from jobs.gold.incidents import REMEDIATION, SCHEMA, build_incidents
from tests.gold.test_rebalance import DOUBLE_OWNED, EVENTS, HEALTH_OFFSETS, ORPHANED, STUCK, assert_frames

DAY = dt.date(2025, 11, 21)
T0 = dt.datetime(2025, 11, 21, 10, 0, 0)


def t(minutes):
    return T0 + dt.timedelta(minutes=minutes)


def _frames(spark):
    orphaned = spark.createDataFrame([
        # two queues of one cause: one incident; the CRITICAL, longer row's evidence wins
        ("c1", "g-dup", "ta", "b", 3, t(0), t(40), 40.0, 10, 20000, "DUPLICATE_CLIENT_ID",
         "10.0.0.1@1", "long one", "CRITICAL", DAY),
        ("c1", "g-dup", "ta", "a", 1, t(5), t(10), 5.0, 10, 20, "DUPLICATE_CLIENT_ID",
         "10.0.0.1@1", "short one", "WARN", DAY),
        # a transient gap of a healthy group: INFO only
        ("c1", "g-ok", "t", "b", 1, t(1), t(3), 2.0, 5, 7, "REBALANCE_GAP", None, "gap", "INFO",
         DAY),
    ], ORPHANED)
    double = spark.createDataFrame([
        ("c1", "g-dup", "ta", "b", 0, ["10.0.0.1@1", "10.0.0.1@1"], t(2), t(4), 2.0,
         "DUPLICATE_CLIENT_ID", "two processes", "WARN", DAY)], DOUBLE_OWNED)
    stuck = spark.createDataFrame([
        ("c1", "g-slow", "tp", "b", 2, "10.0.0.9@9", t(0), t(12), 12.0, 5, 300, 5, 40, False,
         39, t(15), "SLOW_MESSAGE", "pinned at 5", "WARN", DAY)], STUCK)
    events = spark.createDataFrame(
        [("tb", t(k), "SUBSCRIPTION_CHANGED", 2, 2, 0, 240.0, f"flip {k}", "c1", "g-flap", DAY)
         for k in range(2)]
        + [("t", t(k), "CLIENT_LEFT", 3, 2, 4, None, "left", "c1", "g-ok", DAY)
           for k in range(2)], EVENTS)
    return orphaned, double, stuck, events


INCIDENT_COLUMNS = ["cluster", "group", "kind", "cause", "severity", "first_seen", "last_seen",
                    "queues", "evidence", "open_since_day", "date"]
SHOWN = ("cluster string, group string, kind string, cause string, severity string, "
         "first_seen timestamp, last_seen timestamp, queues array<string>, evidence string, "
         "open_since_day date, date date")


def test_one_incident_per_group_kind_and_cause_with_the_worst_severity(spark):
    orphaned, double, stuck, events = _frames(spark)
    actual = build_incidents(orphaned, double, stuck, events, spark.createDataFrame([], SCHEMA),
                             rebalance_warn_count=10)
    expected = spark.createDataFrame([
        ("c1", "g-dup", "ORPHANED", "DUPLICATE_CLIENT_ID", "CRITICAL", t(0), t(40),
         ["ta/a/1", "ta/b/3"], "long one (the same on 1 more queue)", DAY, DAY),
        ("c1", "g-dup", "DOUBLE_OWNED", "DUPLICATE_CLIENT_ID", "WARN", t(2), t(4), ["ta/b/0"],
         "two processes", DAY, DAY),
        ("c1", "g-ok", "ORPHANED", "REBALANCE_GAP", "INFO", t(1), t(3), ["t/b/1"], "gap", DAY,
         DAY),
        ("c1", "g-slow", "STUCK", "SLOW_MESSAGE", "WARN", t(0), t(12), ["tp/b/2"], "pinned at 5",
         DAY, DAY),
        ("c1", "g-flap", "REBALANCE", "SUBSCRIPTION_FLAPPING", "WARN", t(0), t(1), [], "flip 0",
         DAY, DAY),
    ], SHOWN)
    assert_frames(actual.select(*INCIDENT_COLUMNS), expected)


def test_remediation_is_the_cause_s_sentence_kind_specific_first(spark):
    orphaned, double, stuck, events = _frames(spark)
    rows = {(r.kind, r.cause): r.remediation for r in build_incidents(
        orphaned, double, stuck, events, spark.createDataFrame([], SCHEMA), 10).collect()}
    dup = rows[("ORPHANED", "DUPLICATE_CLIENT_ID")]
    assert dup == rows[("DOUBLE_OWNED", "DUPLICATE_CLIENT_ID")]
    assert "instanceName" in dup and "4.9.0" in dup
    assert rows[("STUCK", "SLOW_MESSAGE")] == REMEDIATION[("STUCK", "SLOW_MESSAGE")]
    assert "consumeTimeout" in rows[("STUCK", "SLOW_MESSAGE")]


def test_every_warn_or_critical_group_status_is_explained_by_an_incident(spark):
    """group_health counts flapping and churn as WARN: incidents must carry them too, so a
    notification at WARN names every group whose status is WARN or CRITICAL — and no OK group."""
    orphaned, double, stuck, events = _frames(spark)
    offsets = spark.createDataFrame(
        [("c1", g, "t", "b", 0, T0, 1, 1.0, DAY)
         for g in ("g-dup", "g-ok", "g-slow", "g-flap", "g-quiet")], HEALTH_OFFSETS)
    for warn_count in (2, 10):  # with 2, g-ok's two INFO rebalances are churn (WARN)
        health = {r.group: r.status for r in build_group_health(
            orphaned, double, stuck, events, offsets, warn_count).collect()}
        incidents = build_incidents(orphaned, double, stuck, events,
                                    spark.createDataFrame([], SCHEMA), warn_count).collect()
        ranks = {"INFO": 1, "WARN": 2, "CRITICAL": 3}
        worst: dict[str, str] = {}
        for r in incidents:
            if ranks[r.severity] > ranks.get(worst.get(r.group, "INFO"), 0):
                worst[r.group] = r.severity
        alerting = {g: s for g, s in health.items() if s != "OK"}
        assert alerting == {g: s for g, s in worst.items() if s != "INFO"}, warn_count
    assert health["g-ok"] == "OK" and health["g-quiet"] == "OK"


def test_open_since_day_carries_yesterday_s_open_incident_only(spark):
    orphaned, double, stuck, events = _frames(spark)
    earlier = dt.date(2025, 11, 15)
    yesterday = DAY - dt.timedelta(days=1)
    previous = spark.createDataFrame([
        # open yesterday since 11-15: continuing
        ("c1", "g-dup", "ORPHANED", "DUPLICATE_CLIENT_ID", "WARN", t(0), t(1), [], "e", "r",
         earlier, yesterday),
        # the same group and kind with another cause: not the same incident
        ("c1", "g-slow", "STUCK", "CONSUMER_HUNG", "WARN", t(0), t(1), [], "e", "r", yesterday,
         yesterday),
        # two days ago, not yesterday: a gap, so today's is new
        ("c1", "g-flap", "REBALANCE", "SUBSCRIPTION_FLAPPING", "WARN", t(0), t(1), [], "e", "r",
         DAY - dt.timedelta(days=2), DAY - dt.timedelta(days=2)),
        # another cluster's group of the same name
        ("c2", "g-ok", "ORPHANED", "REBALANCE_GAP", "INFO", t(0), t(1), [], "e", "r", earlier,
         yesterday),
    ], SCHEMA)
    rows = {(r.group, r.kind, r.cause): r.open_since_day for r in build_incidents(
        orphaned, double, stuck, events, previous, 10).collect()}
    assert rows == {
        ("g-dup", "ORPHANED", "DUPLICATE_CLIENT_ID"): earlier,
        ("g-dup", "DOUBLE_OWNED", "DUPLICATE_CLIENT_ID"): DAY,
        ("g-ok", "ORPHANED", "REBALANCE_GAP"): DAY,
        ("g-slow", "STUCK", "SLOW_MESSAGE"): DAY,
        ("g-flap", "REBALANCE", "SUBSCRIPTION_FLAPPING"): DAY,
    }


def test_a_quiet_day_has_no_incidents(spark):
    empty = [spark.createDataFrame([], s) for s in (ORPHANED, DOUBLE_OWNED, STUCK, EVENTS)]
    assert build_incidents(*empty, spark.createDataFrame([], SCHEMA), 10).count() == 0


@pytest.mark.heavy_day
def test_the_duplicate_client_id_day_gives_duplicate_client_id_incidents(scenario_day, spark):
    """The simulated fault through every layer: its incidents name the cause and its queues, and
    the healthy day has none above INFO."""
    _truth, layers = scenario_day("duplicate-client-id")
    g = layers["gold"]
    found = build_incidents(g["orphaned_queues"], g["double_owned_queues"], g["stuck_queues"],
                            g["rebalance_events"], spark.createDataFrame([], SCHEMA),
                            10).collect()
    dup = [r for r in found if r.cause == "DUPLICATE_CLIENT_ID"]
    assert dup and all(r.severity in ("WARN", "CRITICAL") for r in dup)
    orphaned_queues = {f"{r.topic}/{r.broker_name}/{r.queue_id}"
                       for r in g["orphaned_queues"].collect()
                       if r.root_cause == "DUPLICATE_CLIENT_ID"}
    assert {q for r in dup if r.kind == "ORPHANED" for q in r.queues} == orphaned_queues
    _truth, healthy = scenario_day("healthy")
    h = healthy["gold"]
    assert [r for r in build_incidents(h["orphaned_queues"], h["double_owned_queues"],
                                       h["stuck_queues"], h["rebalance_events"],
                                       spark.createDataFrame([], SCHEMA), 10).collect()
            if r.severity != "INFO"] == []
