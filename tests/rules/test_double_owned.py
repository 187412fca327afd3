"""gold.double_owned_queues on hand-built queue states (both engines): STALE_OWNER (issue #17
case 4), client_ip-only owners, and a restart's stale id (case 6)."""

from chispa import assert_df_equality

from jobs.gold.double_owned_queues import build_double_owned_queues
from jobs.gold.orphaned_queues import OrphanRules
from jobs.rules.models import consumer_models
from tests.rules.frames import DAY, at, with_prev_ts

RULES = OrphanRules(liveness_window_seconds=90, max_snapshot_gap_seconds=300,
                    orphan_min_duration_seconds=120, orphan_transient_max_seconds=300,
                    critical_lag=10000, critical_minutes=30)
STATE = ("cluster string, group string, topic string, broker_name string, queue_id int, "
         "ts timestamp, lag long, owners array<string>, owner_count int, "
         "owned_by_ip_only boolean, claimed_by array<string>, owner_ip string, date date")
CONTEXT = "cluster string, group string, ts timestamp, strategies array<string>"
MEMBERS = ("cluster string, group string, ts timestamp, client_id string, processes int, "
           "message_model string, consume_type string")
OLD, NEW = "10.0.0.5@100", "10.0.0.5@200"


def states(queue_id, owners_by_minute, ip_only=False):
    return [("c", "g", "t", "b", queue_id, at(m), 5, owners, len(owners), ip_only,
             [] if ip_only else owners, None, DAY) for m, owners in owners_by_minute]


def test_stale_owner_ip_only_and_restart(spark):
    rows = (
        # 0: a held it; b took it at a rebalance; a's running info listed it until minute 4
        states(0, [(0, ["a@1"])] + [(m, ["a@1", "b@1"]) for m in (1, 2, 3)] + [(4, ["b@1"])])
        # 1: two owners to the end of the data: nothing says which one is stale
        + states(1, [(m, ["a@1", "b@1"]) for m in range(5)])
        # 2: consumerProgress -s names a host with two live processes: not two owners
        + states(2, [(m, ["10.0.0.1@7", "10.0.0.1@8"]) for m in range(5)], ip_only=True)
        # 3: a crashed client's stale id and its restarted process
        + states(3, [(0, [OLD])] + [(m, [NEW, OLD]) for m in (1, 2, 3)] + [(4, [NEW])]))
    members = ([("c", "g", at(m, 5), cid, 1, "CLUSTERING", "CONSUME_PASSIVELY")
                for m in range(-3, 6) for cid in ("a@1", "b@1")]
               + [("c", "g", at(m, 5), OLD, 1, None, None) for m in range(-3, 3)]
               + [("c", "g", at(m, 5), NEW, 1, None, None) for m in range(1, 6)])
    context = [("c", "g", at(m), ["AVG"]) for m in range(5)]
    actual = build_double_owned_queues(with_prev_ts(spark.createDataFrame(rows, STATE)),
                                       spark.createDataFrame(context, CONTEXT),
                                       spark.createDataFrame(members, MEMBERS), RULES,
                                       models_df=consumer_models(
                                           spark.createDataFrame(members, MEMBERS)))
    rows = actual.collect()
    got = spark.createDataFrame([(r.queue_id, r.owners, r.first_seen, r.last_seen, r.minutes,
                                  r.root_cause, r.severity) for r in rows],
                                "queue_id int, owners array<string>, first_seen timestamp, "
                                "last_seen timestamp, minutes double, root_cause string, "
                                "severity string")
    expected = spark.createDataFrame([
        (0, ["a@1", "b@1"], at(1), at(3), 2.0, "STALE_OWNER", "INFO"),
        (1, ["a@1", "b@1"], at(0), at(4), 4.0, "UNKNOWN", "WARN"),
    ], "queue_id int, owners array<string>, first_seen timestamp, last_seen timestamp, "
       "minutes double, root_cause string, severity string")
    assert_df_equality(got.orderBy("queue_id"), expected, ignore_nullable=True)
    (stale,) = [r for r in rows if r.queue_id == 0]
    assert "a@1 still listed the queue after b@1 took it" in stale.evidence
