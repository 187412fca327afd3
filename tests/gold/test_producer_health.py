"""Producer findings in gold.group_health and gold.incidents (DESIGN.md §5.2, §4): hand-built
gold.producer_findings rows through the pure transforms, on both engines."""

from __future__ import annotations

import datetime as dt

from jobs.gold.group_health import build_group_health
from jobs.gold.incidents import REMEDIATION, SCHEMA, build_incidents
from tests.gold.test_rebalance import DOUBLE_OWNED, EVENTS, HEALTH, HEALTH_OFFSETS, ORPHANED, STUCK, assert_frames

DAY = dt.date(2025, 11, 21)
T0 = dt.datetime(2025, 11, 21, 10, 0, 0)
FINDINGS = ("date date, cluster string, topic string, broker_name string, queue_id int, finding string, "
            "first_seen timestamp, last_seen timestamp, minutes double, share double, even_share double, "
            "groups array<string>, evidence string, severity string")


def t(minutes):
    return T0 + dt.timedelta(minutes=minutes)


def _findings(spark):
    return spark.createDataFrame([
        # a hot queue whose owner in g-slow falls behind: WARN, and it names both consuming groups
        (DAY, "c1", "orders", "broker-a", 3, "HOT_QUEUE", t(0), t(90), 90.0, 0.6, 0.125,
         ["g-ok", "g-slow"], "hot", "WARN"),
        (DAY, "c1", "orders", "broker-b", None, "BROKER_STARVED", t(10), t(14), 4.0, 0.0, 0.5,
         ["g-ok", "g-slow"], "starved", "INFO"),
        (DAY, "c1", "audit", None, None, "QUEUE_COUNT_SKEW", t(0), t(120), 120.0, 0.75, 0.5,
         ["g-audit"], "skew", "INFO"),
    ], FINDINGS)


def _offsets(spark):
    return spark.createDataFrame([("c1", g, "t", "b", 0, T0, 5, 7.5, DAY)
                                  for g in ("g-ok", "g-slow", "g-audit", "g-none")], HEALTH_OFFSETS)


def _empty(spark):
    return (spark.createDataFrame([], ORPHANED), spark.createDataFrame([], DOUBLE_OWNED),
            spark.createDataFrame([], STUCK), spark.createDataFrame([], EVENTS))


def test_group_health_lists_producer_findings_per_consuming_group_and_only_warn_raises_the_status(spark):
    orphaned, double, stuck, events = _empty(spark)
    actual = build_group_health(orphaned, double, stuck, events, _offsets(spark), 10,
                                producer_df=_findings(spark))
    hot = "WARN producer HOT_QUEUE orders broker-a/3 (90.0 min)"
    starved = "INFO producer BROKER_STARVED orders broker-b (4.0 min)"
    expected = spark.createDataFrame([
        ("WARN", 0, 0, 0, 5, 7.5, 0, [hot, starved], ["offsets"], "c1", "g-ok", DAY),
        ("WARN", 0, 0, 0, 5, 7.5, 0, [hot, starved], ["offsets"], "c1", "g-slow", DAY),
        ("OK", 0, 0, 0, 5, 7.5, 0, ["INFO producer QUEUE_COUNT_SKEW audit (120.0 min)"], ["offsets"],
         "c1", "g-audit", DAY),
        ("OK", 0, 0, 0, 5, 7.5, 0, [], ["offsets"], "c1", "g-none", DAY),
    ], HEALTH)
    assert_frames(actual, expected)


def test_without_producer_findings_the_status_is_what_the_other_tables_give(spark):
    orphaned, double, stuck, events = _empty(spark)
    with_none = build_group_health(orphaned, double, stuck, events, _offsets(spark), 10,
                                   producer_df=spark.createDataFrame([], FINDINGS))
    assert_frames(with_none, build_group_health(orphaned, double, stuck, events, _offsets(spark), 10))


def test_producer_findings_become_incidents_per_consuming_group_with_their_remediation(spark):
    orphaned, double, stuck, events = _empty(spark)
    rows = build_incidents(orphaned, double, stuck, events, spark.createDataFrame([], SCHEMA), 10,
                           producer_df=_findings(spark)).collect()
    assert sorted((r.group, r.kind, r.cause, r.severity, tuple(r.queues), r.evidence) for r in rows) == [
        ("g-audit", "PRODUCER", "QUEUE_COUNT_SKEW", "INFO", ("audit",), "skew"),
        ("g-ok", "PRODUCER", "BROKER_STARVED", "INFO", ("orders/broker-b",), "starved"),
        ("g-ok", "PRODUCER", "HOT_QUEUE", "WARN", ("orders/broker-a/3",), "hot"),
        ("g-slow", "PRODUCER", "BROKER_STARVED", "INFO", ("orders/broker-b",), "starved"),
        ("g-slow", "PRODUCER", "HOT_QUEUE", "WARN", ("orders/broker-a/3",), "hot"),
    ]
    remediation = {r.cause: r.remediation for r in rows}
    assert remediation == {cause: REMEDIATION[("PRODUCER", cause)]
                           for cause in ("HOT_QUEUE", "BROKER_STARVED", "QUEUE_COUNT_SKEW")}
    assert "not the consumer" in remediation["HOT_QUEUE"]
    assert "sendLatencyFaultEnable" in remediation["BROKER_STARVED"]
    assert "writeQueueNums" in remediation["QUEUE_COUNT_SKEW"]
