"""DESIGN.md §5.1 "Evidence, not absence" through silver.queue_state into gold.stuck_queues, both
engines: a queue pinned behind a slow message by a live owner that answers every running-info
round stays owned while ``consumerProgress -s`` prints N/A for it (mqadmin gave up at another
client), so it is a stuck SLOW_MESSAGE — not an orphan, not NO_OWNER."""

from jobs.gold.stuck_queues import StuckRules, build_stuck_queues
from jobs.rules.models import MODELS_SCHEMA
from tests.rules.frames import (
    CLIENT_CONFIG_SCHEMA,
    CONSUME_STATUS_SCHEMA,
    DAY,
    PROCESS_QUEUES_SCHEMA,
    at,
    claim,
    connected,
    queue_state_of,
    snapshots,
    widen,
)

RULES = StuckRules(max_snapshot_gap_seconds=300, stuck_min_duration_seconds=300,
                   consume_concurrently_max_span=2000, critical_lag=10000, critical_minutes=30)
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
MINUTES = range(8)


def pinned_day(spark):
    """Queue 1 pinned at 1000 (lag 50, N/A at every snapshot) while a@1, live, answers running
    info every minute listing it with cached_msg_min_offset 1000 and later messages finishing
    (the cached max grows); queue 0 moves."""
    offsets = (snapshots(0, MINUTES, client_ip="N/A")
               + snapshots(1, MINUTES, client_ip="N/A", advance=0))
    claims = [claim("a@1", q, "running_info", at(m, 3), at(m + 1, 3))
              for q in (0, 1) for m in range(-1, 8)]
    state = queue_state_of(spark, offsets, claims, connected("a@1", range(-1, 9)), 90, 300, 30)
    pq = [("c", "g", "a@1", at(m, 3), "t", "b", 1, 1000, 1000, 1000 + 10 * m, 1, False, at(m, 1),
           DAY) for m in MINUTES]
    # materialised: the detector reads the state several times, and classic Spark plans every
    # copy of build_queue_state's windows (the pipeline stages the state and the episodes)
    state = spark.createDataFrame(state.collect(), state.schema)
    return state, build_stuck_queues(
        state, widen(spark, spark.createDataFrame(pq, PQ_SCHEMA), PROCESS_QUEUES_SCHEMA),
        widen(spark, spark.createDataFrame(
            [("c", "g", "a@1", at(m, 3), 2000, False, DAY) for m in MINUTES], CONFIG_SCHEMA),
            CLIENT_CONFIG_SCHEMA),
        widen(spark, spark.createDataFrame(
            [("c", "g", "a@1", at(m, 3), "t", 0.0, DAY) for m in MINUTES], STATUS_SCHEMA),
            CONSUME_STATUS_SCHEMA),
        spark.createDataFrame([], EVENTS_SCHEMA), RULES,
        models_df=spark.createDataFrame([], MODELS_SCHEMA))


def test_a_slow_message_under_a_progress_loop_abort_is_owned_and_stuck(spark):
    state, stuck = pinned_day(spark)
    pinned = state.where("queue_id = 1").collect()
    assert len(pinned) == len(MINUTES)
    # owned at every snapshot: no orphaned snapshot, so no orphan episode can form
    assert all(r.owners == ["a@1"] for r in pinned)
    got = [(r.queue_id, r.owner, r.stuck_since, r.committed_offset, r.blocking_offset,
            r.root_cause) for r in stuck.collect()]
    assert got == [(1, "a@1", at(0), 1000, 1000, "SLOW_MESSAGE")]
