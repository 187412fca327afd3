"""Stuck causes read only from running info taken while the pin holds (DESIGN.md §5, issue 56),
both engines. Every queue is pinned at the offsets snapshots of minutes 0–7 and has moved at
minute 8; the running-info collector runs on its own cycle, so an answer can fall between the
last pinned offsets snapshot (7:00) and the first moved one (8:00) and already show the
recovery: the commit past the pin in its own mq_table, an OK rate counting the backlog that
finished after the release, a refilled cache. That answer describes the release, not the
episode; so does an answer taken before 7:00 whose mq_table already shows the commit moved (the
broker learns the client's commit at its next 5 s persist)."""

from chispa import assert_df_equality

from jobs.gold.stuck_queues import build_stuck_queues
from jobs.rules.models import MODELS_SCHEMA
from tests.gold.test_stuck_causes import RULES, STATE
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

PQ = ("cluster string, group string, client_id string, ts timestamp, topic string, "
      "broker_name string, queue_id int, commit_offset long, cached_msg_min_offset long, "
      "cached_msg_max_offset long, cached_msg_count long, dropped boolean, date date")
STATUS = ("cluster string, group string, client_id string, ts timestamp, topic string, "
          "consume_ok_tps double, consume_failed_tps double, date date")
PINNED = range(8)  # offsets snapshots at minutes 0..7 show the pinned offset; minute 8 has moved

# queue -> (owner, the second of the minute its running info is answered at, the minute of its
# first answer after the release)
QUEUES = {30: ("h1", 30, 7), 31: ("s1", 30, 7), 32: ("h2", 58, 6), 34: ("n1", 30, 7)}
OFFSET = {q: 1000 * q for q in QUEUES}
RELEASED = 250  # how far the commit has moved at the first snapshot after the release


def state_rows():
    rows = []
    for q, (client, _, _) in QUEUES.items():
        rows += [("c", "g", "t", "b", q, at(m), 10 * (m + 1), OFFSET[q] + 10 * (m + 1), OFFSET[q],
                  None if m == 0 else 0, [client], 1, [client], DAY) for m in PINNED]
        rows.append(("c", "g", "t", "b", q, at(8), 5, OFFSET[q] + RELEASED + 5, OFFSET[q] + RELEASED,
                     RELEASED, [client], 1, [client], DAY))
    return rows


def hung(q, m, pinned):
    """Every consume thread blocked: nothing leaves the cache, pulls add 30 a minute. After the
    release the backlog finishes, the commit jumps and pulls refill the cache up to 2500
    (past pullThresholdForQueue 1000 and consumeConcurrentlyMaxSpan 2000)."""
    o = OFFSET[q]
    if pinned:
        return (o, o, o + 40 + 30 * m, 41 + 30 * m), (0.0, 0.0)
    return (o + RELEASED, o + RELEASED, o + RELEASED + 2500, 2501), (RELEASED / 60, 0.0)


def slow(q, m, pinned):
    """One slow message pins the commit while later ones finish (one cached, the max moves)."""
    o = OFFSET[q]
    if pinned:
        return (o, o, o + 10 * m, 1), (2.0, 0.0)
    return (o + RELEASED, 0, 0, 0), (RELEASED / 60, 0.0)


def running_info(spark, pq_commit=lambda q, commit: commit):
    pq, status = [], []
    for q, (client, second, recovered) in QUEUES.items():
        kind = slow if q == 31 else hung
        for m in range(recovered + 1):
            (commit, lo, hi, count), (ok, failed) = kind(q, m, pinned=m < recovered)
            ts = at(m, second)
            if q != 34:  # n1 answers with no mq_table entry for the queue
                pq.append(("c", "g", client, ts, "t", "b", q, pq_commit(q, commit), lo, hi, count,
                           False, DAY))
            status.append(("c", "g", client, ts, "t", ok, failed, DAY))
    return (widen(spark, spark.createDataFrame(pq, PQ), PROCESS_QUEUES_SCHEMA),
            widen(spark, spark.createDataFrame(status, STATUS), CONSUME_STATUS_SCHEMA))


def run(spark, pq_commit=lambda q, commit: commit):
    pq, status = running_info(spark, pq_commit)
    return build_stuck_queues(
        with_prev_ts(spark.createDataFrame(state_rows(), STATE)), pq,
        widen(spark, spark.createDataFrame([], "client_id string"), CLIENT_CONFIG_SCHEMA),
        status, spark.createDataFrame([], LOG_EVENTS_SCHEMA), RULES,
        models_df=spark.createDataFrame([], MODELS_SCHEMA))


COLUMNS = ["queue_id", "root_cause", "blocking_offset", "in_flight_span", "flow_controlled",
           "redelivery_risk"]
SCHEMA = ("queue_id int, root_cause string, blocking_offset long, in_flight_span long, "
          "flow_controlled boolean, redelivery_risk long")


def test_a_recovery_snapshot_is_no_evidence_of_the_cause(spark):
    got = spark.createDataFrame(run(spark).select(*COLUMNS).collect(), SCHEMA)
    expected = spark.createDataFrame([
        # all threads hung; the 7:30 answer (commit moved, OK rate 4.2/s, 2500 cached) is the
        # release: span 220 and 221 cached at 6:30, no flow control
        (30, "CONSUMER_HUNG", None, 220, False, 0),
        # a true slow message stays one: later messages finish at the pinned answers (2.0/s
        # from 1:30, a full TPS window into the episode); span and redelivery from the 6:30 answer
        (31, "SLOW_MESSAGE", 31000, 60, False, 60),
        # answered at second 58: the 6:58 answer comes before the last pinned offsets snapshot
        # (7:00) but its own mq_table already shows the commit moved
        (32, "CONSUMER_HUNG", None, 190, False, 0),
        # rates without an mq_table entry for the queue cannot show the pin: no evidence
        (34, "UNKNOWN", None, None, False, 0),
    ], SCHEMA)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_the_hung_evidence_counts_the_pinned_answers_only(spark):
    rows = {r.queue_id: r.evidence for r in run(spark).collect()}
    # 1:30 .. 6:30 are a full TPS window (70 s) into the episode and pinned
    assert "consume_ok_tps and consume_failed_tps are 0 at all 6 of its running-info" in rows[30]
    assert "at least 71 messages wait behind offset 30000" in rows[30]
    assert "consume_ok_tps for the topic up to 2.0 a full minute into the episode" in rows[31]


def test_an_answer_without_a_commit_offset_cannot_show_the_pin(spark):
    """A collector that leaves ``commit_offset`` out of the mq_table: no answer shows the pin,
    so no running info is evidence — UNKNOWN, never SLOW_MESSAGE from a recovery's OK rate."""
    got = {r.queue_id: (r.root_cause, r.flow_controlled)
           for r in run(spark, lambda q, commit: None if q == 30 else commit).collect()}
    assert (got[30], got[31]) == (("UNKNOWN", False), ("SLOW_MESSAGE", False))
