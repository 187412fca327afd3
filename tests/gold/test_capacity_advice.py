"""Capacity advice of gold.backlog_forecast (DESIGN.md §5.4) against a hand calculation.

Topic ``t``: 4 queues on broker ``b``, 10 msgs/s into each. Two live consumers, ``10.0.0.1@1``
and ``10.0.0.2@1``, each finishing 40 msgs/s (running info), AVG: 2 queues each, 20/s per
queue. The forecast is at 02:00; clear by 08:00 UTC: 21600 s. A queue behind by ``B`` clears when
``B - 100 <= (share - 10) * 21600``.
- g_add: 300100 behind: needs 13.9/s net, a share of 23.9/s. +1 consumer (AVG over 3: the
  first keeps 2 queues at 20/s) is not enough; +2 (one queue each, 40/s) is: 2.
- g_queues: 800100 behind: needs 37.04/s net; one consumer per queue gives 30: no consumer count.
  With W more write queues an old queue meets 40 / (4 + W) arrivals: 40 - 40 / (4 + W) >= 37.04
  from 4 + W = 14 (13 gives 36.92): 10 queues; "a 5th consumer gets no queue under AVG".
- g_slow: 900100 behind: 41.67/s is more than a consumer finishes: no queue count helps.
- g_ok: 100100 behind: 4.6/s net needed, 10 is there: 0.
- g_orphan: as g_add, but queue 2 has no live owner at 02:00: adding consumers does not drain it,
  so no count is advised; the advice points at the ORPHANED incident.
"""

from __future__ import annotations

import datetime as dt

import pytest

from jobs import lake
from jobs.gold.backlog_forecast import ForecastRules, build_backlog_forecast
from tests.gold.test_backlog_forecast_rules import SCHEMA, T0, snapshots

END = T0 + dt.timedelta(hours=1)
CLIENTS = ("10.0.0.1@1", "10.0.0.2@1")
BEHIND = {"g_add": 300_100, "g_queues": 800_100, "g_slow": 900_100, "g_ok": 100_100,
          "g_orphan": 300_100}


@pytest.mark.heavy_day  # classic: tens of seconds under load; acceptance tier
def test_consumers_or_queues_to_add_match_the_hand_calculation(spark, tmp_path):
    def stage(df, name):  # as the run stages the intermediates (Sail re-plans a shared one)
        return lake.stage(spark, df, tmp_path, "test", name)

    rows = [row for group, lag in BEHIND.items() for q in range(4)
            for row in snapshots(q, lag, 10.0, 20.0, group=group)]
    offsets = spark.createDataFrame(rows, SCHEMA)
    members = spark.createDataFrame(
        [("c", group, END, client, ["t"], "AVG") for group in BEHIND for client in CLIENTS],
        "cluster string, group string, ts timestamp, client_id string, topics array<string>, "
        "strategy string")
    status = spark.createDataFrame(
        [("c", group, client, END - dt.timedelta(minutes=m), "t", 40.0)
         for group in BEHIND for client in CLIENTS for m in (0, 20, 40)],
        "cluster string, group string, client_id string, ts timestamp, topic string, "
        "consume_ok_tps double")
    orphaned = spark.createDataFrame([("c", "g_orphan", "t", "b", 2, T0, END)],
                                     "cluster string, group string, topic string, "
                                     "broker_name string, queue_id int, first_seen timestamp, "
                                     "last_seen timestamp")
    out = {r.group: r for r in build_backlog_forecast(
        offsets, ForecastRules(), orphaned_df=orphaned, member_context_df=members,
        consume_status_df=status, stage=stage)
        .where("queue_id is null").collect()}
    assert (out["g_ok"].consumers_to_add, out["g_ok"].queues_to_add) == (0, None)
    assert (out["g_add"].consumers_to_add, out["g_add"].queues_to_add) == (2, None)
    assert out["g_add"].advice == "add 2 consumers: every queue clears by 08:00 UTC"
    assert (out["g_queues"].consumers_to_add, out["g_queues"].queues_to_add) == (None, 10)
    assert out["g_queues"].advice.startswith("a 5th consumer gets no queue under AVG: add 10 "
                                             "write queues")
    assert (out["g_slow"].consumers_to_add, out["g_slow"].queues_to_add) == (None, None)
    assert "raise the consumers' throughput" in out["g_slow"].advice
    assert (out["g_orphan"].consumers_to_add, out["g_orphan"].queues_to_add) == (None, None)
    assert out["g_orphan"].advice == ("b/2 has no live owner: more consumers do not drain it; "
                                      "fix its ORPHANED incident first")
