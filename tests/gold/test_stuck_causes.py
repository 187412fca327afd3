"""The stuck causes after OWNER_DOWN (DESIGN.md §5, issue #18) on one hand-built day, both
engines: an orderly consumer's poison message (CONSUME_FAILING), a concurrent consumer whose
threads all hang (CONSUMER_HUNG), each signal that shows later messages finishing
(SLOW_MESSAGE), and the look-alikes that are no such signal — a moving cached max, a moving
last_consume_timestamp, offset gaps in the cache, a send-back line, an OK rate from before the
episode — plus flow control per consumption mode. Every queue is pinned at minutes 0–7 with a
live owner of its own, so only the running info differs. Each answer comes 3 s after an offsets
snapshot, so the one after minute 7 — the last pinned offsets snapshot — is no evidence (DESIGN.md §5)."""

from chispa import assert_df_equality

from jobs.gold.stuck_queues import StuckRules, build_stuck_queues
from jobs.rules.models import MODELS_SCHEMA
from tests.rules.frames import (
    CLIENT_CONFIG_SCHEMA,
    CONSUME_STATUS_SCHEMA,
    DAY,
    LOG_EVENTS_SCHEMA,
    PROCESS_QUEUES_SCHEMA,
    at,
    widen,
    with_prev_ts,
)

RULES = StuckRules(max_snapshot_gap_seconds=300, stuck_min_duration_seconds=300,
                   consume_concurrently_max_span=2000, critical_lag=10000, critical_minutes=30)
STATE = ("cluster string, group string, topic string, broker_name string, queue_id int, "
         "ts timestamp, lag long, broker_offset long, consumer_offset long, "
         "consumer_offset_delta long, owners array<string>, owner_count int, "
         "claimed_by array<string>, date date")
PQ = ("cluster string, group string, client_id string, ts timestamp, topic string, "
      "broker_name string, queue_id int, commit_offset long, cached_msg_min_offset long, "
      "cached_msg_max_offset long, "
      "cached_msg_count long, cached_msg_size_mib long, transaction_msg_min_offset long, "
      "transaction_msg_count long, dropped boolean, last_consume_at timestamp, date date")
CONFIG = ("cluster string, group string, client_id string, ts timestamp, is_orderly boolean, "
          "pull_threshold_for_queue long, date date")
STATUS = ("cluster string, group string, client_id string, ts timestamp, topic string, "
          "consume_ok_tps double, consume_failed_tps double, date date")
MINUTES = range(8)

# queue id → its owner; each owner's other queue (if any) is listed under MOVING
OWNER = {10: "o1", 12: "o2", 14: "h1", 15: "h1", 16: "n1", 17: "d1", 18: "k1", 19: "s1",
         20: "f1", 21: "f2", 22: "c5", 23: "z1"}
OFFSET = {q: 1000 * q for q in OWNER}
MOVING = {11: "o1", 13: "o2"}


def state_rows():
    rows = []
    for q, client in OWNER.items():  # pinned, lag growing
        rows += [("c", "g", "t", "b", q, at(m), 10 * (m + 1), OFFSET[q] + 10 * (m + 1), OFFSET[q],
                  None if m == 0 else 0, [client], 1, [client], DAY) for m in MINUTES]
    for q, client in MOVING.items():  # the same owner's other queue advances every minute
        rows += [("c", "g", "t", "b", q, at(m), 5, 500 + 20 * m + 5, 500 + 20 * m,
                  None if m == 0 else 20, [client], 1, [client], DAY) for m in MINUTES]
    return rows


def pq_row(q, m, lo, hi, count, *, second=3, size=0, tx_lo=None, tx_count=None, consumed=None):
    """The owner's mq_table entry of queue ``q``: its commit offset is the pinned one throughout."""
    return ("c", "g", OWNER[q], at(m, second), "t", "b", q, OFFSET[q], lo, hi, count, size, tx_lo,
            tx_count, False, consumed, DAY)


def pq_rows():
    rows = []
    for m in MINUTES:
        o = OFFSET
        # o1/o2 orderly: the suspended message is first in the cache again between tries, pulls
        # keep adding (no span check), the cache is dense, last_consume_timestamp is fresh
        # (takeMessages sets it)
        for q in (10, 12):
            rows.append(pq_row(q, m, o[q], o[q] + 20 * m + 5, 20 * m + 6, consumed=at(m, 2)))
        # h1: every thread hangs: nothing leaves the cache, messages pile up behind the first;
        # queue 15 passes pullThresholdSizeForQueue (100 MiB) at minute 6
        for q in (14, 15):
            rows.append(pq_row(q, m, o[q], o[q] + 40 + 30 * m, 41 + 30 * m,
                               size=120 if (q, m) == (15, 6) else 5, consumed=at(-1)))
        # n1: the max moves, last_consume moves, offsets in the cache have gaps (tag filter):
        # none of it says that a later message finished
        rows.append(pq_row(16, m, o[16], o[16] + 10 * m + 1, 1, consumed=at(m, 1)))
        # d1: the cache drains from 6 to 4 messages with the pinned offset still first
        rows.append(pq_row(17, m, o[17], o[17] + 10, 6 if m < 2 else 4))
        for q in (18, 19, 21, 22):
            rows.append(pq_row(q, m, o[q], o[q] + 2, 3 if q != 18 else 1))
        rows.append(pq_row(20, m, o[20], o[20] + 2, 3))
        # z1 orderly, hanging in its listener: the message is in consumingMsgOrderlyTreeMap
        rows.append(pq_row(23, m, o[23] + 1, o[23] + 30, 30, tx_lo=o[23], tx_count=1))
    # k1's and s1's answers with their rates below (status and mq_table are one answer)
    rows += [pq_row(18, 1, o[18], o[18] + 2, 1, second=9), pq_row(19, 1, o[19], o[19] + 2, 3, second=10)]
    # a stale claimant's view of queue 14 is not the owner's
    rows.append(("c", "g", "x9", at(3, 3), "t", "b", 14, 14000, 14000, 14000, 1, 0, None, None,
                 False, at(3, 1), DAY))
    return rows


def config_rows():
    rows = []
    for m in MINUTES:
        for client in sorted(set(OWNER.values())):
            orderly = client in ("o1", "o2", "z1")
            rows.append(("c", "g", client, at(m, 3), orderly, 50 if client == "o1" else None, DAY))
    return rows


def status_rows():
    rows = []
    for m in MINUTES:
        rows += [
            ("c", "g", "o1", at(m, 3), "t", 4.0, 1.0, DAY),  # the poison fails ~1/s
            ("c", "g", "o2", at(m, 3), "t", 4.0, 0.0, DAY),
            # h1's first snapshot still counts what finished before the hang
            ("c", "g", "h1", at(m, 3), "t", 5.0 if m == 0 else 0.0, 0.0, DAY),
            ("c", "g", "n1", at(m, 3), "t", 0.0, 0.0, DAY),
            ("c", "g", "f2", at(m, 3), "t", 1.5, 0.0 if m == 4 else 2.0, DAY),
            ("c", "g", "c5", at(m, 3), "t", 3.0, 0.5, DAY),
            ("c", "g", "z1", at(m, 3), "t", 0.0, 0.0, DAY),
        ]
        # f1 fails at every snapshot that reports a rate; minute 7 reports none (unknown)
        rows.append(("c", "g", "f1", at(m, 3), "t", 0.0, None if m == 7 else 3.0, DAY))
    # k1: an OK rate 69 s into the episode still covers messages from before it; s1: one exactly
    # 70 s in (a full TPS window) does not
    rows += [("c", "g", "k1", at(1, 9), "t", 2.0, 0.0, DAY),
             ("c", "g", "k1", at(3, 3), "t", 0.0, 0.0, DAY),
             ("c", "g", "s1", at(1, 10), "t", 2.0, 0.0, DAY),
             ("c", "g", "s1", at(3, 3), "t", 0.0, 0.0, DAY)]
    return rows


def run(spark):
    events = [("g", at(7, 30), "SEND_EXPIRE_MSG_BACK", [("t", None, 16)], OFFSET[16], None)]
    return build_stuck_queues(
        with_prev_ts(spark.createDataFrame(state_rows(), STATE)),
        widen(spark, spark.createDataFrame(pq_rows(), PQ), PROCESS_QUEUES_SCHEMA),
        widen(spark, spark.createDataFrame(config_rows(), CONFIG), CLIENT_CONFIG_SCHEMA),
        widen(spark, spark.createDataFrame(status_rows(), STATUS), CONSUME_STATUS_SCHEMA),
        spark.createDataFrame(events, LOG_EVENTS_SCHEMA), RULES,
        models_df=spark.createDataFrame([], MODELS_SCHEMA))


def test_each_cause_and_each_non_signal(spark):
    columns = ["queue_id", "owner", "root_cause", "blocking_offset", "flow_controlled",
               "redelivery_risk", "released_at"]
    schema = ("queue_id int, owner string, root_cause string, blocking_offset long, "
              "flow_controlled boolean, redelivery_risk long, released_at timestamp")
    got = spark.createDataFrame(run(spark).select(*columns).collect(), schema)
    expected = spark.createDataFrame([
        # orderly poison: failures at every snapshot decide, before the OK rate of its other
        # queue; the count passes its pullThresholdForQueue 50; nothing after it was consumed
        (10, "o1", "CONSUME_FAILING", 10000, True, 0, None),
        # orderly, no failures: a moving max and last_consume_timestamp with an OK rate of
        # another queue are no slow message (SLOW_MESSAGE is concurrent only)
        (12, "o2", "UNKNOWN", None, False, 0, None),
        # every thread blocked; queue 15's cache passes 100 MiB
        (14, "h1", "CONSUMER_HUNG", None, False, 0, None),
        (15, "h1", "CONSUMER_HUNG", None, True, 0, None),
        # moving max, moving last_consume_timestamp, gaps, a send-back line: no signal; one
        # cached message is no queue of waiting messages either
        (16, "n1", "UNKNOWN", None, False, 0, at(7, 30)),
        (17, "d1", "SLOW_MESSAGE", 17000, False, 7, None),
        (18, "k1", "UNKNOWN", None, False, 0, None),
        (19, "s1", "SLOW_MESSAGE", 19000, False, 0, None),
        (20, "f1", "CONSUME_FAILING", 20000, False, 0, None),
        (21, "f2", "SLOW_MESSAGE", 21000, False, 0, None),
        (22, "c5", "CONSUME_FAILING", 22000, False, 0, None),
        # orderly listener hanging on its message: nothing finishes and 30 messages wait
        (23, "z1", "CONSUMER_HUNG", None, False, 0, None),
    ], schema)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_evidence_says_which_signal_decided(spark):
    rows = {r.queue_id: r.evidence for r in run(spark).collect()}
    assert "reports consume_failed_tps > 0 for the topic at all 7 of its running-info" in rows[10]
    assert "orderly consumer: message 10000 is first in its process queue" in rows[10]
    assert "SUSPEND_CURRENT_QUEUE_A_MOMENT" in rows[10]
    assert "all 7 of its running-info snapshots" in rows[20]
    assert rows[14].startswith("owner h1 is live but nothing of the topic finishes")
    assert "at all 5 of its running-info snapshots a full minute into the episode" in rows[14]
    assert "at least 101 messages wait behind offset 14000" in rows[14]
    assert "last consumed at 2025-11-21 09:59:00 UTC" in rows[14]
    assert "the cached message count fell from 6 to 4 at 2025-11-21 10:02:03 UTC" in rows[17]
    assert "consume_ok_tps for the topic up to 2.0 a full minute into the episode" in rows[19]
    assert rows[16].startswith("owner n1 is live but the commit stays at 16000")


def test_another_queue_of_the_owner_advancing_is_a_finish_signal(spark):
    """o2's orderly queue 12 made concurrent: the OK rate and its queue 13 advancing show
    later messages finishing; without the rate, queue 13 alone decides."""
    pq = widen(spark, spark.createDataFrame(
        [pq_row(12, m, 12000, 12000 + 20 * m + 5, 3) for m in MINUTES], PQ),
        PROCESS_QUEUES_SCHEMA)
    cfg = widen(spark, spark.createDataFrame(
        [("c", "g", "o2", at(m, 3), False, None, DAY) for m in MINUTES], CONFIG),
        CLIENT_CONFIG_SCHEMA)
    rows = [r for r in state_rows() if r[4] in (12, 13)]
    (got,) = build_stuck_queues(
        with_prev_ts(spark.createDataFrame(rows, STATE)), pq, cfg,
        widen(spark, spark.createDataFrame([], STATUS), CONSUME_STATUS_SCHEMA),
        spark.createDataFrame([], LOG_EVENTS_SCHEMA), RULES,
        models_df=spark.createDataFrame([], MODELS_SCHEMA)).collect()
    assert (got.queue_id, got.root_cause, got.blocking_offset) == (12, "SLOW_MESSAGE", 12000)
    assert "its queue b/13 of the topic committed past its offset at 2025-11-21 10:01:00" \
        in got.evidence
