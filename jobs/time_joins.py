"""Joins on time ranges that stay linear in the data.

A plain equi-join on the group or queue followed by a range filter compares every snapshot of
a key with every record of that key: quadratic in the length of the day (a queue has thousands
of snapshots and thousands of claims a day). Both helpers here keep the equi-join selective:

- ``join_recent``: adds a time bucket as wide as the window to the join key, so a left row
  meets only the right rows of its own and the previous bucket;
- ``merge_intervals``: melts overlapping or touching ``[start, end)`` intervals of a key into
  one, so a range join meets a handful of intervals instead of every claim.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

_BUCKET = "_time_bucket"
_FOREVER_MILLIS = 253402300799000  # 9999-12-31 23:59:59: an open end while merging


def _bucket(ts: Column, width_millis: int) -> Column:
    return F.floor(F.unix_millis(ts) / F.lit(width_millis)).cast("long")


def join_recent(left: DataFrame, right: DataFrame, on: list[str], ts: str, at: str,
                window_seconds: float) -> DataFrame:
    """Inner join of ``left`` and ``right`` on ``on`` where ``left[ts] − window < right[at] ≤
    left[ts]``. ``at`` in (ts − w, ts] lies in ts's bucket of width w or the one before, so each
    right row is offered to its own bucket and the next."""
    width = max(int(window_seconds * 1000), 1)
    left_b = left.withColumn(_BUCKET, _bucket(F.col(ts), width))
    right_b = right.withColumn(_BUCKET, F.explode(F.array(_bucket(F.col(at), width),
                                                          _bucket(F.col(at), width) + 1)))
    window_start = F.timestamp_millis(F.unix_millis(F.col(ts)) - F.lit(width))
    return (left_b.join(right_b, on=[*on, _BUCKET], how="inner")
            .where((F.col(at) > window_start) & (F.col(at) <= F.col(ts)))
            .drop(_BUCKET))


def merge_intervals(df: DataFrame, key: list[str], start: str, end: str) -> DataFrame:
    """One row per maximal union of ``[start, end)`` intervals of each ``key`` (``end`` null =
    open). Rows of ``key, start, end`` only; a point is covered by the result exactly when it
    was covered by some input interval."""
    order = Window.partitionBy(*key).orderBy(start, end)
    end_millis = F.coalesce(F.unix_millis(F.col(end)), F.lit(_FOREVER_MILLIS))
    reach_before = F.max(end_millis).over(order.rowsBetween(Window.unboundedPreceding, -1))
    starts_island = (reach_before.isNull()
                     | (F.unix_millis(F.col(start)) > reach_before)).cast("int")
    # distinct first: equal intervals would tie in the order, and the two windows could
    # break that tie differently
    islands = (df.select(*key, start, end).distinct()
               .withColumn("_new", starts_island)
               .withColumn("_island", F.sum("_new").over(
                   order.rowsBetween(Window.unboundedPreceding, Window.currentRow))))
    return (islands.groupBy(*key, "_island")
            .agg(F.min(start).alias(start), F.max(end_millis).alias("_end"))
            .select(*key, start,
                    F.when(F.col("_end") < _FOREVER_MILLIS, F.timestamp_millis("_end"))
                    .alias(end)))
