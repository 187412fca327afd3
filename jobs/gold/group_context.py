"""Per group and offsets snapshot: the live members (silver.member_context) as one row.

Root causes (DESIGN.md §5) are judged against this view: who was live, with how many
processes, subscribing which topics, running which allocation strategy.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.columns import sorted_set


def build_group_context(member_context_df: DataFrame) -> DataFrame:
    """One row per (group, snapshot ts): the live members as an array of structs, their
    process count, the ids held by ≥ 2 processes and the set of strategies."""
    member = F.struct("client_id", "processes", "topics", "strategy")
    return (member_context_df.groupBy("cluster", "group", "ts").agg(
        F.array_sort(F.collect_list(member)).alias("members"),
        F.sum("processes").cast("int").alias("live_processes"),
        sorted_set(F.when(F.col("processes") > 1, F.col("client_id")))
        .alias("duplicate_ids"),
        sorted_set("strategy").alias("strategies"),
        F.array_sort(F.collect_list(F.col("client_id"))).alias("live_ids")))


def membership_changes(group_context_df: DataFrame) -> DataFrame:
    """``cluster, group, ts`` of every snapshot whose live id set differs from the previous one."""
    from pyspark.sql import Window

    prev = Window.partitionBy("cluster", "group").orderBy("ts")
    return (group_context_df.select("cluster", "group", "ts", "live_ids",
                                    F.lag("live_ids").over(prev).alias("_prev"))
            .where(F.col("_prev").isNotNull() & (F.col("live_ids") != F.col("_prev")))
            .select("cluster", "group", F.col("ts").alias("changed_at")))
