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


def with_previous_snapshot(df: DataFrame, keys: list[str], candidate: Column) -> DataFrame:
    """The rows of ``df`` where ``candidate`` holds, each with ``_prev_ts`` and
    ``_prev_candidate``: its key's previous snapshot (flagged or not; null for the first) and
    whether ``candidate`` held there. ``(keys, ts)`` must be unique.

    The window that finds the previous snapshot carries only ``keys``, ``ts`` and the flag; the
    few candidates' other columns are joined back after filtering: a window over every
    queue_state row with its array columns cost far more on Sail than the few rows it finds."""
    order = Window.partitionBy(*keys).orderBy("ts")
    flag = F.coalesce(candidate, F.lit(False))
    previous = (df.select(*keys, "ts", flag.alias("_candidate"))
                .select(*keys, "ts", "_candidate",
                        F.lag("ts").over(order).alias("_prev_ts"),
                        F.lag("_candidate").over(order).alias("_prev_candidate"))
                .where("_candidate")
                .drop("_candidate"))
    return df.where(flag).join(previous, on=[*keys, "ts"], how="inner")


def number_episodes(df: DataFrame, keys: list[str], flag: Column, prev_flag: Column,
                    max_gap_seconds: int) -> DataFrame:
    """The rows of ``with_previous_snapshot``'s output where ``flag`` holds, with ``_episode``
    numbered as ``with_episode_id`` numbers it over every row (episodes start only at flagged
    rows, so counting starts among them gives the same number). ``prev_flag``: whether ``flag``
    held at the previous snapshot ``_prev_ts``."""
    order = Window.partitionBy(*keys).orderBy("ts")
    running = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    gap = F.unix_millis(F.col("ts")) - F.unix_millis(F.col("_prev_ts"))
    continues = (F.col("_prev_ts").isNotNull() & F.coalesce(prev_flag, F.lit(False))
                 & (gap <= F.lit(max_gap_seconds * 1000)))
    return (df.where(F.coalesce(flag, F.lit(False)))
            .withColumn("_start", F.when(continues, 0).otherwise(1))
            .withColumn("_episode", F.sum("_start").over(running))
            .drop("_start", "_prev_ts", "_prev_candidate"))
