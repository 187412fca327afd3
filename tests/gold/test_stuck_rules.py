"""gold.stuck_queues and silver.queue_offsets.time_lag_seconds on small hand-built days (both
engines): Burrow's rules (an idle or moving queue is never stuck), a pinned offset with a live
owner versus an owner that went away, and each root cause's evidence."""

import datetime as dt

from chispa import assert_df_equality

from jobs.gold.stuck_queues import StuckRules, build_stuck_queues
from jobs.rules.models import MODELS_SCHEMA
from jobs.silver.queue_offsets import with_time_lag
from tests.rules.frames import (
    CLIENT_CONFIG_SCHEMA,
    CONSUME_STATUS_SCHEMA,
    PROCESS_QUEUES_SCHEMA,
    widen,
    with_prev_ts,
)

T0 = dt.datetime(2025, 11, 21, 10, 0, 0)
DAY = T0.date()
RULES = StuckRules(max_snapshot_gap_seconds=300, stuck_min_duration_seconds=300,
                   consume_concurrently_max_span=2000, critical_lag=10000, critical_minutes=30)

STATE_SCHEMA = ("cluster string, group string, topic string, broker_name string, queue_id int, "
                "ts timestamp, lag long, broker_offset long, consumer_offset long, "
                "consumer_offset_delta long, owners array<string>, owner_count int, "
                "claimed_by array<string>, date date")
PQ_SCHEMA = ("cluster string, group string, client_id string, ts timestamp, topic string, "
             "broker_name string, queue_id int, commit_offset long, cached_msg_min_offset long, "
             "cached_msg_max_offset long, cached_msg_count long, dropped boolean, "
             "last_consume_at timestamp, date date")
CONFIG_SCHEMA = ("cluster string, group string, client_id string, ts timestamp, "
                 "consume_concurrently_max_span long, is_orderly boolean, date date")
STATUS_SCHEMA = ("cluster string, group string, client_id string, ts timestamp, topic string, "
                 "consume_failed_tps double, date date")
EVENTS_SCHEMA = ("group string, ts timestamp, event string, "
                 "queues array<struct<topic:string,broker_name:string,queue_id:int>>, "
                 "offset long, min_offset long")
RESULT_COLUMNS = ["queue_id", "owner", "stuck_since", "last_seen", "stuck_minutes",
                  "committed_offset", "lag_end", "blocking_offset", "in_flight_span",
                  "flow_controlled", "redelivery_risk", "released_at", "root_cause", "severity"]
RESULT_SCHEMA = ("queue_id int, owner string, stuck_since timestamp, last_seen timestamp, "
                 "stuck_minutes double, committed_offset long, lag_end long, "
                 "blocking_offset long, in_flight_span long, flow_controlled boolean, "
                 "redelivery_risk long, released_at timestamp, root_cause string, "
                 "severity string")


def at(minute, second=0.0):
    return T0 + dt.timedelta(minutes=minute, seconds=second)


def state(queue_id, rows):
    """``rows``: (minute, broker_offset, consumer_offset, live owners, claimants), in order."""
    out, prev = [], None
    for m, bo, co, owners, claims in rows:
        delta = None if prev is None or co is None else co - prev
        out.append(("c", "g", "t", "b", queue_id, at(m), max(bo - co, 0), bo, co, delta, owners,
                    len(owners), claims, DAY))
        prev = co
    return out


def pinned_rows(queue_id, offset, owners_at, claims=("c1",), minutes=range(8)):
    return state(queue_id, [(m, offset + 10 * (m + 1), offset, owners_at(m), list(claims))
                            for m in minutes])


def live(*ids):
    return lambda m: list(ids)


def hand_day():
    rows = []
    # 0: idle — offset constant, lag 0, owner live
    rows += state(0, [(m, 100, 100, ["c1"], ["c1"]) for m in range(8)])
    # 1: moving — lag > 0, the offset advances every snapshot
    rows += state(1, [(m, 200 + 20 * m + 15, 200 + 20 * m, ["c1"], ["c1"]) for m in range(8)])
    # 2: pinned at 500 by a hung message of live c1, released (offset jump) at minute 8
    rows += pinned_rows(2, 500, live("c1"))
    rows += state(2, [(8, 600, 590, ["c1"], ["c1"])])
    # 3: pinned at 300; owner c2 live until minute 3, then gone (claims outlive it)
    rows += pinned_rows(3, 300, lambda m: ["c2"] if m <= 3 else [], claims=("c2",))
    # 4: never owned while lagging
    rows += pinned_rows(4, 400, live(), claims=())
    # 5: pinned at 700 with live c1 and nothing else known
    rows += pinned_rows(5, 700, live("c1"))
    # 6: pinned at 800, live c3 failing every message
    rows += pinned_rows(6, 800, live("c3"), claims=("c3",))
    # 7: pinned only 4 minutes, then moves
    rows += pinned_rows(7, 900, live("c1"), minutes=range(5))
    rows += state(7, [(5, 1000, 990, ["c1"], ["c1"])])
    # 8: a lag-0 snapshot in the middle of a pin splits it into two short ones
    rows += state(8, [(m, 1100 + (0 if m == 4 else 10 * (m + 1)), 1100, ["c1"], ["c1"])
                      for m in range(8)])
    # 9: nulls (no lag known, no owners known)
    rows += [("c", "g", "t", "b", 9, at(m), None, None, None, None, [], 0, [], DAY)
             for m in range(8)]
    return rows


def process_queue_rows():
    rows = []
    for m in range(8):
        # c1 holds 500 while later ones finish: max grows by 10 a minute, one message cached
        rows.append(("c", "g", "c1", at(m, 3), "t", "b", 2, 500, 500, 500 + 10 * m, 1, False,
                     at(m, 1), DAY))
        # c3 caches nothing (every message fails and is retried in place)
        rows.append(("c", "g", "c3", at(m, 3), "t", "b", 6, 800, 0, 0, 0, False, None, DAY))
    rows.append(("c", "g", "c9", at(0, 3), "t", "b", 9, None, None, None, None, None, None, DAY))
    return rows


def no_models(spark):
    return spark.createDataFrame([], MODELS_SCHEMA)


def run(spark):
    cfg = [("c", "g", "c1", at(m, 3), 40, False, DAY) for m in range(8)]
    cfg.append(("c", "g", "c3", at(0, 3), None, None, DAY))
    status = [("c", "g", "c3", at(m, 3), "t", 2.5, DAY) for m in range(8)]
    status.append(("c", "g", "c1", at(0, 3), "t", None, DAY))
    mq = [("t", "b", 2)]
    events = [("g", at(7, 30), "SEND_EXPIRE_MSG_BACK", [("t", None, 2)], 500, None),
              ("g", at(5, 10), "FLOW_CONTROL_SPAN", [("t", "b", 6)], None, 799),
              ("g", at(6, 10), "FLOW_CONTROL_COUNT", mq, None, 500),
              (None, None, None, None, None, None)]
    return build_stuck_queues(
        with_prev_ts(spark.createDataFrame(hand_day(), STATE_SCHEMA)),
        silver(spark, process_queue_rows(), PQ_SCHEMA, PROCESS_QUEUES_SCHEMA),
        silver(spark, cfg, CONFIG_SCHEMA, CLIENT_CONFIG_SCHEMA),
        silver(spark, status, STATUS_SCHEMA, CONSUME_STATUS_SCHEMA),
        spark.createDataFrame(events, EVENTS_SCHEMA), RULES, models_df=no_models(spark))


def silver(spark, rows, schema, full):
    return widen(spark, spark.createDataFrame(rows, schema), full)


def test_stuck_queues_of_the_hand_day(spark):
    actual = run(spark)
    expected = spark.createDataFrame([
        # hung message: pinned min = commit while later messages finished — 60 of them at 6:03,
        # its last answer no later than the last pinned offsets snapshot (7:00; the answer at
        # 7:03 comes after it, DESIGN.md §5); span 60 ≥ c1's 40
        (2, "c1", at(0), at(7), 7.0, 500, 80, 500, 60, True, 60, at(7, 30), "SLOW_MESSAGE",
         "WARN"),
        # owner went away holding the commit (Burrow's STOP), not a pin
        (3, "c2", at(0), at(7), 7.0, 300, 80, None, None, False, 0, None, "OWNER_DOWN", "WARN"),
        (4, None, at(0), at(7), 7.0, 400, 80, None, None, False, 0, None, "NO_OWNER", "WARN"),
        (5, "c1", at(0), at(7), 7.0, 700, 80, None, None, False, 0, None, "UNKNOWN", "WARN"),
        (6, "c3", at(0), at(7), 7.0, 800, 80, None, 0, False, 0, None, "CONSUME_FAILING",
         "WARN"),
    ], RESULT_SCHEMA)
    # collected first: chispa sorts, and Sail's sort planning is fragile over wide plans
    actual = spark.createDataFrame(actual.select(*RESULT_COLUMNS).collect(), RESULT_SCHEMA)
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def test_an_idle_or_moving_queue_is_never_stuck(spark):
    queues = {r.queue_id for r in run(spark).collect()}
    assert not queues & {0, 1, 7, 8, 9}


def test_evidence_names_the_owner_offsets_and_release(spark):
    rows = {r.queue_id: r.evidence for r in run(spark).collect()}
    assert rows[2].startswith("message 500 hangs in c1: ")
    assert "released at 2025-11-21 10:07:30 UTC by the expired-message cleaner" in rows[2]
    assert rows[3].startswith("owner c2 was last live at 2025-11-21 10:03:00 UTC")
    assert "still stuck at the last snapshot" in rows[4]


def test_a_queue_orphaned_during_the_episode_is_no_owner_not_owner_down(spark):
    """Issue #17 case 8: every consumer stopped — queue 3's owner c2 went away at minute 3 and
    gold.orphaned_queues lists the queue from minute 3: the contract's cause order puts NO_OWNER
    first. An orphan row of another queue, or one that ended before the episode, changes
    nothing (queue 5 stays UNKNOWN)."""
    orphaned = spark.createDataFrame([
        ("c", "g", "t", "b", 3, at(3), at(7)),
        ("c", "g", "t", "b", 5, at(-20), at(-1)),
        ("c", "g", "t", "other", 5, at(0), at(7)),
    ], "cluster string, group string, topic string, broker_name string, queue_id int, "
       "first_seen timestamp, last_seen timestamp")
    base = run(spark)
    with_orphans = build_stuck_queues(
        with_prev_ts(spark.createDataFrame(hand_day(), STATE_SCHEMA)),
        silver(spark, process_queue_rows(), PQ_SCHEMA, PROCESS_QUEUES_SCHEMA),
        silver(spark, [("c", "g", "c1", at(0, 3), 40, False, DAY)], CONFIG_SCHEMA,
               CLIENT_CONFIG_SCHEMA),
        silver(spark, [], STATUS_SCHEMA, CONSUME_STATUS_SCHEMA),
        spark.createDataFrame([], EVENTS_SCHEMA), RULES, orphaned, models_df=no_models(spark))
    got = {r.queue_id: (r.root_cause, r.owner) for r in with_orphans.collect()}
    assert {r.queue_id: r.root_cause for r in base.collect()}[3] == "OWNER_DOWN"
    assert got[3] == ("NO_OWNER", None)
    assert got[5] == ("UNKNOWN", "c1")


def test_time_lag_is_the_age_of_the_oldest_unconsumed_message(spark):
    schema = ("cluster string, group string, topic string, broker_name string, queue_id int, "
              "ts timestamp, broker_offset long, consumer_offset long, lag long, "
              "last_consumed_at timestamp, date date")
    rows = [
        # caught up, then 10 messages arrive after 10:00 and nobody consumes them until 10:03
        ("c", "g", "t", "b", 0, at(0), 100, 100, 0, at(-1), DAY),
        ("c", "g", "t", "b", 0, at(1), 110, 100, 10, at(-1), DAY),
        ("c", "g", "t", "b", 0, at(2), 120, 100, 20, at(-1), DAY),
        # busy: message 114 was stored at 10:01:30, so 115 can be no older than that
        ("c", "g", "t", "b", 0, at(3), 130, 115, 15, at(1, 30), DAY),
        # no history before the backlog: only lastTimestamp bounds it
        ("c", "g", "t", "b", 1, at(0), 50, 40, 10, at(-2), DAY),
        # no history and nothing ever consumed: unknown
        ("c", "g", "t", "b", 2, at(0), 50, 0, 50, None, DAY),
        # a topic deleted and re-created at 10:02: its offsets start again. Message 10 was
        # stored after 10:02:30 (lastTimestamp) and by 10:03, not when offset 10 was first
        # exceeded before the reset (10:00)
        ("c", "g", "t", "b", 3, at(0), 100, 100, 0, at(-1), DAY),
        ("c", "g", "t", "b", 3, at(1), 110, 100, 10, at(-1), DAY),
        ("c", "g", "t", "b", 3, at(2), 5, 0, 5, None, DAY),
        ("c", "g", "t", "b", 3, at(3), 20, 10, 10, at(2, 30), DAY),
        # every snapshot is above the consumer offset: the message existed at the first one, so
        # it waited since then at least, whatever a lastTimestamp from a clock ahead says
        ("c", "g", "t", "b", 4, at(0), 50, 40, 10, at(0, 30), DAY),
        ("c", "g", "t", "b", 4, at(2), 60, 40, 20, at(0, 30), DAY),
    ]
    actual = with_time_lag(spark.createDataFrame(rows, schema)).select(
        "queue_id", "ts", "time_lag_seconds")
    expected = spark.createDataFrame([
        (0, at(0), 0.0), (0, at(1), 60.0), (0, at(2), 120.0), (0, at(3), 90.0),
        (1, at(0), 120.0), (2, at(0), None),
        # 10:01: the latest snapshot at or below offset 100 is the re-created queue's, after it: 0
        (3, at(0), 0.0), (3, at(1), 0.0), (3, at(2), None), (3, at(3), 30.0),
        (4, at(0), 0.0), (4, at(2), 120.0),
    ], "queue_id int, ts timestamp, time_lag_seconds double")
    actual = spark.createDataFrame(actual.collect(), actual.schema)
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)
