"""Stuck with cause SUBSCRIPTION_INCONSISTENT (DESIGN.md §5): an owned queue that receives nothing
because the broker refuses its owner's pulls while the group's subscription table lacks the topic
(a member that does not subscribe it heartbeated last) — seen on a real 4.9.7 cluster
(tests/data/real-cluster/README.md, difference 2). Hand-built, both engines; beside it the inputs
that must not read so: every member subscribing both topics, a member whose subscriptions are
unknown, the topic every member subscribes, and a slow message in the same inconsistent group
(its own evidence comes first)."""

from jobs.gold.stuck_queues import build_stuck_queues
from jobs.rules.models import MODELS_SCHEMA
from tests.gold.test_stuck_causes import CONFIG, PQ, RULES, STATE, STATUS
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

CONTEXT = ("cluster string, group string, ts timestamp, "
           "members array<struct<client_id string, processes int, topics array<string>, strategy string>>")
MINUTES = range(8)
# (group, topic, queue id) → the owner; every queue pinned at 1000 × id with lag growing
QUEUES = {("g", "tB", 1): "x", ("g", "tA", 2): "x", ("g", "tB", 3): "x",
          ("both", "tB", 4): "p", ("unknown", "tB", 5): "u"}
MEMBERS = {
    "g": [("x", 1, ["tA", "tB"], "AVG"), ("y", 1, ["tA"], "AVG")],  # y does not subscribe tB
    "both": [("p", 1, ["tA", "tB"], "AVG"), ("q", 1, ["tA", "tB"], "AVG")],
    "unknown": [("u", 1, ["tA", "tB"], "AVG"), ("v", 1, None, "AVG")],  # v's subscriptions unknown
}


def run(spark):
    state, pq, config, status = [], [], [], []
    for (g, t, q), owner in QUEUES.items():
        off = 1000 * q
        state += [("c", g, t, "b", q, at(m), 10 * (m + 1), off + 10 * (m + 1), off, None if m == 0 else 0,
                   [owner], 1, [owner], DAY) for m in MINUTES]
        for m in MINUTES:
            # refused pulls bring nothing: the owner's process queue is empty; queue 3 holds a slow message
            lo, hi, count = (off, off + 5, 4) if q == 3 else (0, 0, 0)
            pq.append(("c", g, owner, at(m, 3), t, "b", q, off, lo, hi, count, 0, None, None, False, None, DAY))
    for g, members in MEMBERS.items():
        for client, *_ in members:
            for m in MINUTES:
                config.append(("c", g, client, at(m, 3), False, None, DAY))
                # x finishes other messages of tB (its slow queue's later ones)
                status.append(("c", g, client, at(m, 3), "tB", 2.0 if client == "x" else 0.0, 0.0, DAY))
    context = [("c", g, at(m), members) for g, members in MEMBERS.items() for m in MINUTES]
    return build_stuck_queues(
        with_prev_ts(spark.createDataFrame(state, STATE)),
        widen(spark, spark.createDataFrame(pq, PQ), PROCESS_QUEUES_SCHEMA),
        widen(spark, spark.createDataFrame(config, CONFIG), CLIENT_CONFIG_SCHEMA),
        widen(spark, spark.createDataFrame(status, STATUS), CONSUME_STATUS_SCHEMA),
        spark.createDataFrame([], LOG_EVENTS_SCHEMA), RULES,
        models_df=spark.createDataFrame([], MODELS_SCHEMA),
        group_context_df=spark.createDataFrame(context, CONTEXT))


def test_a_member_not_subscribing_the_topic_starves_the_owned_queue(spark):
    got = {r.queue_id: r for r in run(spark).collect()}
    assert {q: (r.root_cause, r.blocking_offset) for q, r in got.items()} == {
        1: ("SUBSCRIPTION_INCONSISTENT", 1000),  # owned by x, y does not subscribe tB
        2: ("UNKNOWN", None),                    # tA: every member subscribes it
        3: ("SLOW_MESSAGE", 3000),               # same group and topic, but a message hangs in x
        4: ("UNKNOWN", None),                    # every member subscribes both topics
        5: ("UNKNOWN", None),                    # v's subscriptions unknown: proves nothing
    }
    assert got[1].owner == "x"
    assert got[1].evidence.startswith("live member(s) y do not subscribe tB: a broker replaces the group's "
                                      "subscription table")
    assert "so owner x receives nothing past offset 1000 although it holds the queue" in got[1].evidence

