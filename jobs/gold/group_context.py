"""Per group and offsets snapshot: the live members and what each says about itself.

Root causes (DESIGN.md §5) are judged against this view: who was live, with how many
processes, subscribing which topics, running which allocation strategy.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.rules.liveness import live_processes
from jobs.time_joins import join_recent


def build_member_context(queue_offsets_df: DataFrame, members_df: DataFrame,
                         subscriptions_df: DataFrame, config_df: DataFrame,
                         liveness_window_seconds: int, max_snapshot_gap_seconds: int) -> DataFrame:
    """One row per (group, snapshot ts, live client_id): ``processes``, ``topics`` (what its own
    heartbeat/running info subscribed within the liveness window; null when unknown) and
    ``strategy`` (its latest running-info strategy within the snapshot gap; null when unknown)."""
    snaps = queue_offsets_df.select("cluster", "group", "ts").distinct()
    live = live_processes(snaps, members_df, liveness_window_seconds)
    subs = subscriptions_df.select("cluster", "group", "client_id", F.col("ts").alias("_at"),
                                   "topic")
    topics = (join_recent(live.select("cluster", "group", "ts", "client_id"), subs,
                          ["cluster", "group", "client_id"], "ts", "_at", liveness_window_seconds)
              .groupBy("cluster", "group", "ts", "client_id")
              .agg(F.array_sort(F.collect_set("topic")).alias("topics")))
    cfg = config_df.select("cluster", "group", "client_id", F.col("ts").alias("_at"), "strategy")
    strategy = (join_recent(live.select("cluster", "group", "ts", "client_id"), cfg,
                            ["cluster", "group", "client_id"], "ts", "_at",
                            max_snapshot_gap_seconds)
                .groupBy("cluster", "group", "ts", "client_id")
                .agg(F.max_by("strategy", "_at").alias("strategy")))
    keys = ["cluster", "group", "ts", "client_id"]
    return (live.join(topics, on=keys, how="left").join(strategy, on=keys, how="left")
            .select(*keys, "processes", "topics", "strategy", F.to_date("ts").alias("date")))


def build_group_context(member_context_df: DataFrame) -> DataFrame:
    """One row per (group, snapshot ts): the live members as an array of structs, their
    process count, the ids held by ≥ 2 processes and the set of strategies."""
    member = F.struct("client_id", "processes", "topics", "strategy")
    return (member_context_df.groupBy("cluster", "group", "ts").agg(
        F.array_sort(F.collect_list(member)).alias("members"),
        F.sum("processes").cast("int").alias("live_processes"),
        F.array_sort(F.collect_set(F.when(F.col("processes") > 1, F.col("client_id"))))
        .alias("duplicate_ids"),
        F.array_sort(F.collect_set("strategy")).alias("strategies"),
        F.array_sort(F.collect_list(F.col("client_id"))).alias("live_ids")))


def membership_changes(group_context_df: DataFrame) -> DataFrame:
    """``cluster, group, ts`` of every snapshot whose live id set differs from the previous one."""
    from pyspark.sql import Window

    prev = Window.partitionBy("cluster", "group").orderBy("ts")
    return (group_context_df.select("cluster", "group", "ts", "live_ids",
                                    F.lag("live_ids").over(prev).alias("_prev"))
            .where(F.col("_prev").isNotNull() & (F.to_json("live_ids") != F.to_json("_prev")))
            .select("cluster", "group", F.col("ts").alias("changed_at")))
