"""Abandoned backlog (DESIGN.md §5.1): a group with no live member all day and a broker offset
that does not move is a leftover (a retired consumer group, a test group), not an outage. It
gets no per-queue finding; ``gold.group_health.findings`` notes it once, as INFO, with the
backlog."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def abandoned_groups(queue_state_df: DataFrame, members_df: DataFrame) -> DataFrame:
    """``cluster, group, date, backlog, lagging_queues``: the day's groups without a single
    connection record whose queues received nothing (no positive ``broker_offset_delta``).
    ``backlog``: the sum of the queues' lag at their last snapshot."""
    per_queue = (queue_state_df.groupBy("cluster", "group", "date", "topic", "broker_name",
                                        "queue_id")
                 .agg(F.max_by("lag", "ts").alias("_lag"),
                      F.max(F.coalesce("broker_offset_delta", F.lit(0))).alias("_grew")))
    seen = members_df.select("cluster", "group").distinct()
    return (per_queue.groupBy("cluster", "group", "date")
            .agg(F.max("_grew").alias("_grew"),
                 F.sum(F.coalesce("_lag", F.lit(0))).cast("long").alias("backlog"),
                 F.count(F.when(F.col("_lag") > 0, F.lit(1))).cast("int")
                 .alias("lagging_queues"))
            .where(F.col("_grew") <= 0)
            .join(seen, on=["cluster", "group"], how="left_anti")
            .select("cluster", "group", "date", "backlog", "lagging_queues"))


def without_abandoned(df: DataFrame, abandoned_df: DataFrame) -> DataFrame:
    """The rows of ``df`` (with ``cluster, group``) not of an abandoned group."""
    return df.join(abandoned_df.select("cluster", "group"), on=["cluster", "group"],
                   how="left_anti")
