"""Joins on time ranges that stay linear in the data.

A plain equi-join on the group or queue followed by a range filter compares every snapshot of
a key with every record of that key: quadratic in the length of the day (a queue has thousands
of snapshots and thousands of claims a day). Both helpers here keep the equi-join selective:

- ``join_recent``: adds a time bucket as wide as the window to the join key, so a left row
  meets only the right rows of its own and the previous bucket;
- ``join_between``: offers each left row to every bucket its ``[start, end]`` spans and each
  right row to its own, so a left row meets only the right rows of its range's buckets;
- ``merge_intervals``: melts overlapping or touching ``[start, end)`` intervals of a key into
  one, so a range join meets a handful of intervals instead of every claim.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.columns import same_columns
from jobs.key_numbers import key_numbers

_BUCKET = "_time_bucket"
_FOREVER_MILLIS = 253402300799000  # 9999-12-31 23:59:59: an open end while merging


def time_bucket(ts: Column, width_millis: int) -> Column:
    """The number of the ``width_millis`` wide slice of time ``ts`` lies in (epoch-aligned)."""
    return F.floor(F.unix_millis(ts) / F.lit(width_millis)).cast("long")


def join_recent(left: DataFrame, right: DataFrame, on: list[str], ts: str, at: str,
                window_seconds: float) -> DataFrame:
    """Inner join of ``left`` and ``right`` on ``on`` where ``left[ts] − window < right[at] ≤
    left[ts]``. ``at`` in (ts − w, ts] lies in ts's bucket of width w or the one before, so each
    right row is offered to its own bucket and the next."""
    width = max(int(window_seconds * 1000), 1)
    left_b = left.withColumn(_BUCKET, time_bucket(F.col(ts), width))
    right_b = right.withColumn(_BUCKET, F.explode(F.array(time_bucket(F.col(at), width),
                                                          time_bucket(F.col(at), width) + 1)))
    window_start = F.timestamp_millis(F.unix_millis(F.col(ts)) - F.lit(width))
    return (left_b.join(right_b, on=[*on, _BUCKET], how="inner")
            .where((F.col(at) > window_start) & (F.col(at) <= F.col(ts)))
            .drop(_BUCKET))


def join_between(left: DataFrame, right: DataFrame, on: list[str], start: str, end: str,
                 at: str, bucket_seconds: int) -> DataFrame:
    """Inner join of ``left`` and ``right`` on ``on`` where ``left[start] ≤ right[at] ≤
    left[end]`` (non-null bounds). A right row lies in one bucket of ``bucket_seconds``, which the
    left row's range spans, so it meets that left row once; for ranges a few buckets long."""
    width = bucket_seconds * 1000
    left_b = left.withColumn(_BUCKET, F.explode(F.sequence(time_bucket(F.col(start), width),
                                                           time_bucket(F.col(end), width))))
    right_b = right.withColumn(_BUCKET, time_bucket(F.col(at), width))
    return (left_b.join(right_b, on=[*on, _BUCKET], how="inner")
            .where(F.col(at).between(F.col(start), F.col(end)))
            .drop(_BUCKET))


def merge_intervals(df: DataFrame, key: list[str], start: str, end: str) -> DataFrame:
    """One row per maximal union of ``[start, end)`` intervals of each ``key`` (``end`` null =
    open; ``end`` ≥ ``start``). Rows of ``key, start, end`` only; a point is covered by the
    result exactly when it was covered by some input interval.

    One window sorts every interval, on a key number and the bounds only: carrying the six string
    key columns of the ownership claims through it (with a second window for the island number,
    then an aggregate per island) was several times slower on Sail."""
    keys = key_numbers(df, key, "_key")
    # null-safe: the window this replaces grouped null keys like any other
    same_key = same_columns("_i", "_k", key, null_safe=True)
    end_millis = F.coalesce(F.unix_millis(F.col(end)), F.lit(_FOREVER_MILLIS))
    # the few keys on the build (left) side of the hash join, the intervals streaming past
    numbered = (keys.alias("_k").join(df.alias("_i"), on=same_key, how="inner")
                .select("_k._key", F.col(f"_i.{start}").alias("_start"),
                        end_millis.alias("_end")))
    order = Window.partitionBy("_key").orderBy("_start", "_end")
    reach_before = F.max("_end").over(order.rowsBetween(Window.unboundedPreceding, -1))
    # an island starts where no earlier interval reaches; it ends where the next one starts
    # reaching from before, the key's last island at the key's farthest end (a window over the
    # same rows: a second pass over them for it ran the key join again)
    starts = (numbered.select("_key", "_start", reach_before.alias("_reach_before"),
                              F.max("_end").over(Window.partitionBy("_key")).alias("_last_end"))
              .where(F.col("_reach_before").isNull()
                     | (F.unix_millis("_start") > F.col("_reach_before"))))
    following = Window.partitionBy("_key").orderBy("_start")
    islands = starts.select("_key", "_start", F.coalesce(
        F.lead("_reach_before").over(following), "_last_end").alias("_end"))
    return (islands.join(keys, on="_key", how="inner")
            .select(*key, F.col("_start").alias(start),
                    F.when(F.col("_end") < _FOREVER_MILLIS, F.timestamp_millis("_end"))
                    .alias(end)))
