"""Column helpers shared across layers."""

from __future__ import annotations

from pyspark.sql import functions as F

from jobs.columns import sorted_set


def by_group(df):
    """``g -> vs`` from the rows: Sail cannot sort rows on an array column for chispa."""
    return {row["g"]: list(row["vs"]) for row in df.collect()}


def test_sorted_set_is_the_sorted_distinct_non_null_values(spark):
    df = spark.createDataFrame(
        [("g1", "b"), ("g1", "a"), ("g1", "b"), ("g1", None), ("g2", None), ("g3", "c")],
        "g string, v string")
    actual = by_group(df.groupBy("g").agg(sorted_set("v").alias("vs")))
    assert actual == {"g1": ["a", "b"], "g2": [], "g3": ["c"]}


def test_sorted_set_equals_the_sorted_collect_set(spark):
    df = spark.createDataFrame([(i % 3, f"v{i % 5}") for i in range(30)] + [(1, None)],
                               "g int, v string")
    actual = by_group(df.groupBy("g").agg(sorted_set("v").alias("vs")))
    expected = by_group(df.groupBy("g").agg(F.array_sort(F.collect_set("v")).alias("vs")))
    assert actual == expected
    assert actual[0] == ["v0", "v1", "v2", "v3", "v4"]
