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
