"""rebalance_events compares each round's assignment and cidAll with the round before as arrays
(``!=``), where it compared their JSON texts; so do the topic sets of a member's heartbeats
(``jobs.rules.subscription.changed_topics``, the subscription flips). Both engines must read
that comparison the same
way, and the way the JSON texts did: element by element and in order, a null field inside equal
to a null field, a null array giving null."""

from __future__ import annotations

from pyspark.sql import functions as F

ASSIGNMENT = ("array<struct<client_id:string,"
              "queues:array<struct<topic:string,broker_name:string,queue_id:int>>>>")


def q(queue_id: int, broker: str | None = "broker-a") -> tuple:
    return ("orders", broker, queue_id)


CASES = [
    # (id, before, after, cid_before, cid_after)
    (1, [("c1", [q(0), q(1)])], [("c1", [q(0), q(1)])], ["c1"], ["c1"]),
    (2, [("c1", [q(0), q(1)])], [("c1", [q(1), q(0)])], ["c1"], ["c1"]),  # order counts
    (3, [("c1", [q(0)])], [("c2", [q(0)])], ["c1", "c2"], ["c2", "c1"]),
    (4, [("c1", [q(0, None)])], [("c1", [q(0, None)])], ["c1", "c1"], ["c1", "c1"]),
    (5, [("c1", [])], [("c1", [q(0)])], [], ["c1"]),
    (6, [], [], [], []),
    (7, [("c1", [q(0)])], None, ["c1"], None),
    (8, [("c1", [q(0)]), ("c2", [])], [("c1", [q(0)])], ["c1", "c2"], ["c1"]),
]


def test_array_inequality_equals_json_text_inequality(spark):
    df = spark.createDataFrame(
        CASES, f"k int, a {ASSIGNMENT}, b {ASSIGNMENT}, ca array<string>, cb array<string>")
    rows = df.select(
        "k",
        (F.col("a") != F.col("b")).alias("assignment"),
        (F.to_json("a") != F.to_json("b")).alias("assignment_json"),
        (F.col("ca") != F.col("cb")).alias("cid_all"),
        (F.to_json("ca") != F.to_json("cb")).alias("cid_all_json"),
    ).orderBy("k").collect()
    assert [(r.assignment, r.cid_all) for r in rows] == [
        (r.assignment_json, r.cid_all_json) for r in rows]
    assert [r.assignment for r in rows] == [False, True, True, False, True, False, None, True]
    assert [r.cid_all for r in rows] == [False, False, True, False, True, False, None, True]


TOPIC_SETS = [
    # (id, before, after)
    (1, ["a", "b"], ["a", "b"]),
    (2, ["a", "b"], ["b", "a"]),  # order counts (the sets are sorted before)
    (3, ["a"], ["a", "b"]),
    (4, ["a", None], ["a", None]),  # a null element equals a null element
    (5, ["a", None], ["a", "b"]),
    (6, [], []),
    (7, [], None),
    (8, None, None),
    (9, [""], []),
]


def test_string_array_inequality_equals_json_text_inequality(spark):
    df = spark.createDataFrame(TOPIC_SETS, "k int, a array<string>, b array<string>")
    rows = df.select("k", (F.col("a") != F.col("b")).alias("arrays"),
                     (F.to_json("a") != F.to_json("b")).alias("json")).orderBy("k").collect()
    assert [r.arrays for r in rows] == [r.json for r in rows]
    assert [r.arrays for r in rows] == [False, True, True, False, True, False, None, None, True]
