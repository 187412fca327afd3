"""De-duplication shared by every silver table."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F


def filter_first_per_key(df: DataFrame, keys: list[str]) -> DataFrame:
    """Keep one row per ``keys``: the first by (``_source_file``, ``_line_no``).

    Collectors retry and files overlap (a late flush repeats lines), so the same snapshot fact
    can arrive twice; which copy wins must not depend on the engine's row order.
    """
    window = Window.partitionBy(*keys).orderBy("_source_file", "_line_no")
    return (df.withColumn("_rank", F.row_number().over(window))
            .where(F.col("_rank") == 1).drop("_rank"))


def filter_first_per_snapshot(df: DataFrame, keys: list[str]) -> DataFrame:
    """The rows of ``filter_first_per_key(df, keys + ["ts"])``, from a window over ``keys`` alone
    ordered by (``ts``, ``_source_file``, ``_line_no``): a row is its snapshot's first when the
    row before it has another ``ts``.

    Partitioned by ``keys``, the window shares its shuffle and sort with the per-``keys`` windows
    ordered by ``ts`` that follow it (lag, deltas), where a window over ``keys + ["ts"]`` made
    Sail shuffle and sort the rows twice.
    """
    window = Window.partitionBy(*keys).orderBy("ts", "_source_file", "_line_no")
    first = ((F.row_number().over(window) == 1)
             | ~F.lag("ts").over(window).eqNullSafe(F.col("ts")))
    return df.withColumn("_first", first).where(F.col("_first")).drop("_first")
