"""De-duplication shared by every silver table."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

RUNNING_INFO_KEY = ["cluster", "group", "client_id", "ts"]


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


def first_running_info(running_info_df: DataFrame, *columns: str | Column,
                       next_ts: str | None = None) -> DataFrame:
    """The first copy of each running-info snapshot (``filter_first_per_key`` on the client and
    ``ts``) with the key and ``columns`` only.

    Number, then join: a window carries its rows whole through its sort, and a running-info row
    is ~9 KB (properties, status and process-queue tables). So the window runs over the key and
    the copy's place (file, line) alone, and the winning copies' ``columns`` are joined to it.
    At M, numbering whole rows took 12.7 s, the four mq_table fields ownership reads 2.5 s
    (benchmarks/RESULTS.md); silver.process_queues' whole mq_table 5.1–6.4 s through the window
    and 3.9–4.2 s joined. Bronze requires the key (and a copy's place is never null), so the
    inner join keeps every winner. ``next_ts`` names a column for the ts of the client's next
    snapshot (null after its last), taken on the narrow rows too."""
    place = [*RUNNING_INFO_KEY, "_source_file", "_line_no"]
    winners = filter_first_per_snapshot(running_info_df.select(*place), RUNNING_INFO_KEY[:-1])
    if next_ts is not None:
        # on the narrow winners, in the order the numbering sorted them in already
        winners = winners.withColumn(next_ts, F.lead("ts").over(
            Window.partitionBy(*RUNNING_INFO_KEY[:-1]).orderBy("ts")))
    return (winners.join(running_info_df.select(*place, *columns), on=place, how="inner")
            .drop("_source_file", "_line_no"))


def mq_table_fields(*fields: str) -> Column:
    """``mq_table`` with only ``fields`` of each entry, for ``first_running_info``."""
    return F.transform("mq_table", lambda q: F.struct(*[q[f].alias(f) for f in fields])
                       ).alias("mq_table")
