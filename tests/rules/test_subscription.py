"""A missing ``subscriptions`` field is unknown, not the empty set (issue #17 case 9), both
engines: the subscription-storm detector and the membership rounds read it as the orphan
detector does (jobs.rules.subscription)."""

from jobs.gold.rebalance_events import RebalanceRules, member_rounds, subscription_flapping
from tests.rules.frames import DAY, at, epoch_ms

CONNECTIONS = ("cluster string, group string, broker_name string, ts timestamp, client_id string, "
               "last_update_timestamp long, "
               "subscriptions array<struct<topic:string,sub_string:string>>")
MEMBERS = "cluster string, group string, ts timestamp, client_id string, processes int, date date"
RULES = RebalanceRules(max_snapshot_gap_seconds=300, heartbeat_interval_seconds=30)


def subs(*topics):
    return [(t, "*") for t in topics]


def connections(b_topics):
    """a subscribes t1+t2 in every record; b's records carry ``b_topics`` on even rounds and no
    subscriptions field on odd ones (a partial collector)."""
    rows = []
    for m in range(10):
        rows.append(("c", "g", "broker-a", at(m), "a@1", epoch_ms(at(m, -10)), subs("t1", "t2")))
        rows.append(("c", "g", "broker-a", at(m), "b@1", epoch_ms(at(m, -25)),
                     subs(*b_topics) if m % 2 == 0 else None))
    return rows


def test_partial_subscription_records_are_not_a_storm(spark):
    df = spark.createDataFrame(connections(("t1", "t2")), CONNECTIONS)
    assert subscription_flapping(df, RULES).collect() == []


def test_members_with_different_topic_sets_still_flap(spark):
    df = spark.createDataFrame(connections(("t1",)), CONNECTIONS)
    rows = subscription_flapping(df, RULES).collect()
    assert [(r.topic, r.trigger) for r in rows] == [("t2", "SUBSCRIPTION_CHANGED")]


def test_a_round_without_subscriptions_has_unknown_topics(spark):
    conns = spark.createDataFrame(connections(("t1", "t2")), CONNECTIONS)
    members = spark.createDataFrame(
        [("c", "g", at(m), cid, 1, DAY) for m in (0, 1) for cid in ("a@1", "b@1")], MEMBERS)
    rounds = {r.ts: {s.client_id: s.topics for s in r.subs}
              for r in member_rounds(members, conns, 30).collect()}
    assert rounds[at(0)] == {"a@1": ["t1", "t2"], "b@1": ["t1", "t2"]}
    assert rounds[at(1)] == {"a@1": ["t1", "t2"], "b@1": None}


def test_a_round_member_without_a_heartbeat_time_is_unheard_not_stale(spark):
    """Evidence, not absence: no ``last_update_timestamp`` (mqadmin text) or a 0 (a collector's
    default) says nothing about a member's heartbeats; an old one says it went silent."""
    conns = spark.createDataFrame([
        ("c", "g", "broker-a", at(5), "none@1", None, subs("t1")),
        ("c", "g", "broker-a", at(5), "zero@1", 0, subs("t1")),
        ("c", "g", "broker-a", at(5), "fresh@1", epoch_ms(at(5, -10)), subs("t1")),
        ("c", "g", "broker-a", at(5), "silent@1", epoch_ms(at(3)), subs("t1")),
    ], CONNECTIONS)
    members = spark.createDataFrame(
        [("c", "g", at(5), cid, 1, DAY) for cid in ("none@1", "zero@1", "fresh@1", "silent@1")],
        MEMBERS)
    (r,) = member_rounds(members, conns, 30).collect()
    assert (r.unheard_ids, r.stale_ids, r.stale_channel_ids) == (
        ["none@1", "zero@1"], ["silent@1"], ["silent@1"])
