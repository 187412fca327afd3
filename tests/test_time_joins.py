"""The linear time joins give exactly what the plain range joins give (both engines)."""

import datetime as dt
import random

from pyspark.sql import functions as F

from jobs.time_joins import join_recent, merge_intervals

T0 = dt.datetime(2025, 11, 21, 0, 0, 0)


def _at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def test_join_recent_matches_the_range_join_including_window_edges(spark):
    rng = random.Random(7)
    left = [("g1", _at(s)) for s in (0, 15, 90, 90.001, 180, 3600)] + \
           [("g2", _at(rng.randint(0, 4000))) for _ in range(40)]
    # records exactly at ts, exactly at ts - window (excluded) and 1 ms inside it (included)
    right = [("g1", _at(s), i) for i, s in enumerate((0, 0.001, 89.999, 90, 180, 3510, 3510.001))] + \
            [("g2", _at(rng.randint(0, 4000) + rng.random()), 100 + i) for i in range(60)]
    left_df = spark.createDataFrame(left, "g string, ts timestamp")
    right_df = spark.createDataFrame(right, "g string, at timestamp, n int")

    got = sorted(tuple(r) for r in join_recent(left_df, right_df, ["g"], "ts", "at", 90)
                 .select("g", "ts", "n").collect())
    want = sorted((g, ts, n) for g, ts in left for g2, at, n in right
                  if g == g2 and ts - dt.timedelta(seconds=90) < at <= ts)
    assert got == want
    assert ("g1", _at(90), 2) in got and ("g1", _at(90), 0) not in got  # (ts - 90 s, ts]


def _covered(intervals, point):
    return any(s <= point and (e is None or point < e) for s, e in intervals)


def test_merge_intervals_keeps_exactly_the_covered_points(spark):
    rng = random.Random(3)
    rows = [("q1", _at(0), _at(10)), ("q1", _at(5), _at(15)), ("q1", _at(15), _at(20)),  # touch
            ("q1", _at(30), _at(40)), ("q1", _at(30), _at(40)),  # equal twice
            ("q1", _at(100), None), ("q1", _at(120), _at(130)),  # open end swallows later ones
            ("q2", _at(50), _at(60))]
    for _ in range(80):
        start = rng.randint(0, 2000)
        rows.append(("q3", _at(start), _at(start + rng.randint(1, 60))))
    df = spark.createDataFrame(rows, "q string, s timestamp, e timestamp")
    merged = merge_intervals(df, ["q"], "s", "e").collect()

    by_key = {}
    for r in merged:
        by_key.setdefault(r["q"], []).append((r["s"], r["e"]))
    assert sorted(by_key["q1"]) == [(_at(0), _at(20)), (_at(30), _at(40)), (_at(100), None)]
    assert by_key["q2"] == [(_at(50), _at(60))]
    q3 = [(s, e) for q, s, e in rows if q == "q3"]
    for second in range(0, 2100):
        point = _at(second)
        assert _covered(by_key["q3"], point) == _covered(q3, point), point
    # merged stretches neither overlap nor touch
    spans = sorted(by_key["q3"])
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:]))
    assert merge_intervals(df.where(F.lit(False)), ["q"], "s", "e").count() == 0


def test_merge_intervals_merges_a_null_key_as_its_own_key(spark):
    rows = [(None, _at(0), _at(10)), (None, _at(10), _at(20)), ("q1", _at(5), _at(30))]
    df = spark.createDataFrame(rows, "q string, s timestamp, e timestamp")
    got = sorted((r["q"] or "", r["s"], r["e"]) for r in merge_intervals(df, ["q"], "s", "e")
                 .collect())
    assert got == [("", _at(0), _at(20)), ("q1", _at(5), _at(30))]


def test_merging_a_part_first_changes_no_merged_stretch(spark):
    """silver.queue_state merges the [persistAll] claims once and merges the result again with
    the other claims: merge(A ∪ B) must equal merge(A ∪ merge(B)), touching and open ends
    included."""
    rng = random.Random(11)
    a, b = [], []
    for _ in range(150):
        start = rng.randint(0, 1500)
        end = None if rng.random() < 0.02 else _at(start + rng.choice((0, 1, 5, 10, 30)))
        (a if rng.random() < 0.5 else b).append((f"q{rng.randint(1, 4)}", _at(start), end))
    b += [("q5", _at(2000), _at(2010)), ("q5", _at(2010), _at(2020))]  # touch inside B
    a += [("q5", _at(2020), _at(2030))]  # touches B's merged stretch from A
    schema = "q string, s timestamp, e timestamp"
    a_df, b_df = spark.createDataFrame(a, schema), spark.createDataFrame(b, schema)

    def merged(df):
        return sorted(tuple(r) for r in merge_intervals(df, ["q"], "s", "e").collect())

    whole = merged(a_df.unionByName(b_df))
    assert merged(a_df.unionByName(merge_intervals(b_df, ["q"], "s", "e"))) == whole
    assert ("q5", _at(2000), _at(2030)) in whole
