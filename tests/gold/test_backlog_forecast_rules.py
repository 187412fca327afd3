"""gold.backlog_forecast's rules on hand-written snapshots (DESIGN.md §5.4), both engines.

The numbers are chosen so the expected values are hand arithmetic: a queue written at 10/s and
drained at 30/s over one hour, one minute per snapshot.
"""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import functions as F

from jobs.gold.backlog_forecast import (
    ForecastRules,
    Retention,
    build_backlog_forecast,
    hours_minutes,
    loss_at,
)

DAY = dt.date(2025, 11, 21)
T0 = dt.datetime(2025, 11, 21, 1, 0)
SCHEMA = ("cluster string, group string, topic string, broker_name string, queue_id int, "
          "ts timestamp, broker_offset long, consumer_offset long, lag long, "
          "last_consumed_at timestamp, min_offset long, date date")
EPISODES = ("cluster string, group string, topic string, broker_name string, queue_id int, "
            "start timestamp, last_seen timestamp")


def snapshots(queue_id, end_lag, arrival, drain, minutes=61, group="g", min_offset=None):
    """One snapshot a minute from 01:00 to 02:00 of a queue ``end_lag`` behind at 02:00."""
    rows = []
    for m in range(minutes):
        broker = 1_000_000 + int(arrival * 60 * m)
        consumer = broker - end_lag - int((drain - arrival) * 60 * (minutes - 1 - m))
        rows.append(("c", group, "t", "b", queue_id, T0 + dt.timedelta(minutes=m), broker,
                     consumer, max(broker - consumer, 0), T0 - dt.timedelta(hours=1),
                     min_offset, DAY))
    return rows


def episodes(spark, rows, start, released=None):
    df = spark.createDataFrame([row[:7] for row in rows], EPISODES).withColumnRenamed("start", start)
    if released:
        df = df.join(spark.createDataFrame([(row[4], row[7]) for row in rows],
                                           f"queue_id int, {released} timestamp"), "queue_id")
    return df


@pytest.mark.heavy_day  # classic: tens of seconds under load; acceptance tier
def test_rates_trend_and_clear_time_of_each_queue_and_the_group(spark):
    rows = (snapshots(0, 72_100, 10.0, 30.0)        # 20/s net: 72000 / 20 = 1 h after 02:00
            + snapshots(1, 36_100, 10.0, 30.0)      # half an hour after 02:00
            + snapshots(2, 50, 10.0, 30.0)          # caught up: no row
            + snapshots(3, 5_000, 10.0, 10.2))      # FLAT: 0.2 < 5 % of 10.2
    offsets = spark.createDataFrame(rows, SCHEMA)
    out = {r.queue_id: r for r in build_backlog_forecast(offsets, ForecastRules()).collect()}
    assert sorted(out, key=lambda q: -1 if q is None else q) == [None, 0, 1, 3]
    end = T0 + dt.timedelta(hours=1)
    assert (out[0].arrival_rate, out[0].drain_rate, out[0].trend) == (10.0, 30.0, "DRAINING")
    assert out[0].as_of == end and out[0].backlog == 72_100
    assert out[0].clears_at == end + dt.timedelta(hours=1)
    assert out[1].clears_at == end + dt.timedelta(minutes=30)
    assert (out[3].trend, out[3].clears_at, out[3].no_clear_reason) == ("FLAT", None, "FLAT")
    group = out[None]
    assert group.backlog == 72_100 + 36_100 + out[3].backlog
    # a queue that will not clear decides the group: no clear time
    assert (group.clears_at, group.deciding_queue, group.no_clear_reason) == (None, "b/3", "FLAT")
    assert group.lost_messages is None  # min_offset not reported: unknown


@pytest.mark.heavy_day  # classic: tens of seconds under load; acceptance tier
def test_a_stuck_or_orphaned_queue_gets_its_reason_not_a_rate(spark):
    rows = snapshots(0, 72_100, 10.0, 30.0) + snapshots(1, 36_100, 10.0, 30.0) \
        + snapshots(2, 36_100, 10.0, 30.0) + snapshots(3, 36_100, 10.0, 30.0)
    offsets = spark.createDataFrame(rows, SCHEMA)
    end = T0 + dt.timedelta(hours=1)
    stuck = episodes(spark, [("c", "g", "t", "b", 0, T0, end, None),
                             # over before the forecast (released, or its last pinned snapshot
                             # earlier): no longer stuck
                             ("c", "g", "t", "b", 2, T0, end, T0 + dt.timedelta(minutes=5)),
                             ("c", "g", "t", "b", 3, T0, T0 + dt.timedelta(minutes=5), None)],
                     "stuck_since", "released_at")
    orphaned = episodes(spark, [("c", "g", "t", "b", 1, T0, end)], "first_seen")
    out = {r.queue_id: r for r in
           build_backlog_forecast(offsets, ForecastRules(), stuck, orphaned).collect()}
    assert (out[0].no_clear_reason, out[0].clears_at) == ("STUCK", None)
    assert (out[1].no_clear_reason, out[1].clears_at) == ("NO_OWNER", None)
    assert out[2].no_clear_reason is None and out[2].clears_at is not None
    assert out[3].no_clear_reason is None and out[3].clears_at is not None
    assert out[None].clears_at is None and out[None].no_clear_reason in ("STUCK", "NO_OWNER")


def test_messages_below_min_offset_are_counted_and_unknown_stays_null(spark):
    rows = (snapshots(0, 72_100, 10.0, 10.0, min_offset=1_000_000 + 36_000 - 50_000)
            + snapshots(1, 72_100, 10.0, 10.0, min_offset=0))
    offsets = spark.createDataFrame(rows, SCHEMA)
    out = {r.queue_id: r for r in build_backlog_forecast(offsets, ForecastRules()).collect()}
    # consumer offset at 02:00 = 1036000 - 72100; min offset 986000: 22100 deleted
    assert out[0].lost_messages == 22_100
    assert out[1].lost_messages == 0
    assert out[None].lost_messages == 22_100


def test_loss_at_is_the_first_delete_hour_at_or_after_the_retention_in_the_brokers_zone(spark):
    df = spark.createDataFrame([("a", dt.datetime(2025, 11, 21, 1, 0)),
                                ("a", dt.datetime(2025, 11, 21, 5, 0)),
                                ("b", dt.datetime(2025, 11, 21, 1, 0))],
                               "cluster string, stored timestamp")
    # cluster b: brokers in GMT+8 (04:00 there is 20:00 UTC), 48 h
    rules = ForecastRules(clusters={"b": Retention(48, 4, "Asia/Shanghai")})
    got = [r.at for r in df.select(loss_at(F.col("stored"), F.col("cluster"), rules).alias("at"))
           .collect()]
    assert got == [dt.datetime(2025, 11, 24, 4, 0),   # 01:00 + 72 h = 24th 01:00 -> 04:00
                   dt.datetime(2025, 11, 25, 4, 0),   # 24th 05:00 -> the next day's 04:00
                   dt.datetime(2025, 11, 23, 20, 0)]  # 23rd 09:00 local -> 24th 04:00 local


def test_durations_read_as_hours_and_minutes(spark):
    df = spark.createDataFrame([(59.0,), (7_245.0,), (90_000.0,)], "s double")
    assert [r.t for r in df.select(hours_minutes(F.col("s")).alias("t")).collect()] == [
        "1 min", "2 h 01 min", "25 h 00 min"]


@pytest.mark.heavy_day  # classic: tens of seconds under load; acceptance tier
def test_findings_become_backlog_incidents_with_the_count_and_what_to_do(spark):
    """BACKLOG_GROWING (FLAT with a backlog ≥ min_backlog), MESSAGES_LOST with its count, and a
    LOSS_RISK under a 4 h retention, as gold.incidents rows of kind BACKLOG."""
    from jobs.gold.backlog_forecast import backlog_findings
    from jobs.gold.incidents import REMEDIATION, build_incidents
    from jobs.gold.incidents import SCHEMA as INCIDENTS
    from tests.gold.test_rebalance import DOUBLE_OWNED, EVENTS, ORPHANED, STUCK

    rows = (snapshots(0, 72_100, 10.0, 10.0, min_offset=1_000_000 + 36_000 - 50_000)
            + snapshots(1, 72_100, 10.0, 10.0, min_offset=0))
    rules = ForecastRules(retention=Retention(4, 4, "UTC"))  # stored 00:00 -> 04:00, 2 h away
    forecast = build_backlog_forecast(spark.createDataFrame(rows, SCHEMA), rules)
    findings = backlog_findings(forecast, rules)
    empty = [spark.createDataFrame([], schema) for schema in (ORPHANED, DOUBLE_OWNED, STUCK, EVENTS)]
    incidents = {r.cause: r for r in build_incidents(
        *empty, spark.createDataFrame([], INCIDENTS), 10, backlog_df=findings).collect()}
    assert {c: r.severity for c, r in incidents.items()} == {
        "BACKLOG_GROWING": "WARN", "MESSAGES_LOST": "CRITICAL", "LOSS_RISK": "CRITICAL"}
    assert {r.kind for r in incidents.values()} == {"BACKLOG"}
    lost = incidents["MESSAGES_LOST"]
    assert "22100 messages" in lost.evidence and lost.queues == ["t/b/0"]
    assert lost.remediation == REMEDIATION[("BACKLOG", "MESSAGES_LOST")]
    assert "in 2 h 00 min" in incidents["LOSS_RISK"].evidence
