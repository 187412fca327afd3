"""rebalance_events compares each round's assignment and cidAll with the round before as arrays
(``!=``), where it compared their JSON texts. Both engines must read that comparison the same
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
