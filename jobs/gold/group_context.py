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
    process count as the broker lists them, the ids held by ≥ 2 processes that run at once
    (``running_processes``: a restart that keeps its id is not a duplicate) and the set of
    strategies."""
    member = F.struct("client_id", "processes", "topics", "strategy")
    return (member_context_df.groupBy("cluster", "group", "ts").agg(
        F.array_sort(F.collect_list(member)).alias("members"),
        F.sum("processes").cast("int").alias("live_processes"),
        sorted_set(F.when(F.col("running_processes") > 1, F.col("client_id")))
        .alias("duplicate_ids"),
        sorted_set("strategy").alias("strategies"),
        F.array_sort(F.collect_list(F.col("client_id"))).alias("live_ids")))


def membership_changes(group_context_df: DataFrame) -> DataFrame:
    """``cluster, group, ts`` of every snapshot whose live ids, or the channels listed behind
    one, differ from the previous one: a restart that keeps its id (a fixed ``instanceName``)
    adds a channel while the dead one is listed, and its expiry removes it."""
    from pyspark.sql import Window

    prev = Window.partitionBy("cluster", "group").orderBy("ts")
    listed = F.array_join(F.transform(
        "members", lambda m: F.concat_ws("#", m["client_id"], m["processes"].cast("string"))),
        ",")
    return (group_context_df.select("cluster", "group", "ts", listed.alias("_listed"),
                                    F.lag(listed).over(prev).alias("_prev"))
            .where(F.col("_prev").isNotNull() & (F.col("_listed") != F.col("_prev")))
            .select("cluster", "group", F.col("ts").alias("changed_at")))
