"""Gaps-and-islands: consecutive flagged snapshots of a queue become one episode."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F


def with_episode_id(df: DataFrame, keys: list[str], flag: Column,
                    max_gap_seconds: int) -> DataFrame:
    """Add ``_flag`` and ``_episode``: rows of one key with the flag set at consecutive snapshots
    (each gap ≤ ``max_gap_seconds``, DESIGN.md §5 max_snapshot_gap) share an ``_episode``."""
    order = Window.partitionBy(*keys).orderBy("ts")
    running = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    prev_flag = F.lag("_flag").over(order)
    gap = F.unix_millis(F.col("ts")) - F.unix_millis(F.lag("ts").over(order))
    starts = (F.col("_flag") & (prev_flag.isNull() | ~prev_flag
                                | (gap > F.lit(max_gap_seconds * 1000))))
    return (df.withColumn("_flag", flag)
            .withColumn("_start", F.when(starts, 1).otherwise(0))
            .withColumn("_episode", F.sum("_start").over(running))
            .drop("_start"))


def minutes_between(start: Column, end: Column) -> Column:
    return ((F.unix_millis(end) - F.unix_millis(start)) / F.lit(60000.0)).cast("double")


def severity(root_cause: Column, lag_end: Column, minutes: Column, critical_lag: int,
             critical_minutes: int) -> Column:
    """DESIGN.md §4: INFO for REBALANCE_GAP; CRITICAL at lag_end ≥ critical_lag or minutes ≥
    critical_minutes; WARN otherwise."""
    return (F.when(root_cause == "REBALANCE_GAP", F.lit("INFO"))
            .when((F.coalesce(lag_end, F.lit(0)) >= critical_lag)
                  | (minutes >= critical_minutes), F.lit("CRITICAL"))
            .otherwise(F.lit("WARN")))
