"""Consumer models (DESIGN.md §5.1 "Consumer models"): which groups have exclusive queue
ownership at all. Broadcasting groups (every client takes every queue, offsets on the clients)
and pop consumers (no queue ownership, facts §1.7, §2.4) get no orphaned, double-owned, stuck,
what-if or rebalance findings. The place for a per-group consumer-model column."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def excluded_groups(members_df: DataFrame) -> DataFrame:
    """``cluster, group`` of the broadcasting and pop groups (any connection record says so)."""
    return (members_df.where((F.col("message_model") == "BROADCASTING")
                             | (F.col("consume_type") == "CONSUME_POP"))
            .select("cluster", "group").distinct())
