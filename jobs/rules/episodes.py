"""Episodes (gaps-and-islands): consecutive flagged snapshots of a queue become one episode;
a snapshot missing for up to ``max_snapshot_gap`` does not break a run (DESIGN.md §5)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F


def with_episode_id(df: DataFrame, keys: list[str], flag: Column,
                    max_gap_seconds: int, breaks_on: tuple[str, ...] = ()) -> DataFrame:
    """Add ``_flag`` and ``_episode``: rows of one key with the flag set at consecutive snapshots
    (each gap ≤ ``max_gap_seconds``, DESIGN.md §5 max_snapshot_gap) share an ``_episode``. A row
    whose value of a ``breaks_on`` column differs from the previous row's starts a new one (a
    stuck episode ends where the committed offset moves)."""
    order = Window.partitionBy(*keys).orderBy("ts")
    running = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    prev_flag = F.lag("_flag").over(order)
    gap = F.unix_millis(F.col("ts")) - F.unix_millis(F.lag("ts").over(order))
    changed = F.lit(False)
    for name in breaks_on:
        changed = changed | ~F.col(name).eqNullSafe(F.lag(name).over(order))
    starts = (F.col("_flag") & (prev_flag.isNull() | ~prev_flag
                                | (gap > F.lit(max_gap_seconds * 1000)) | changed))
    return (df.withColumn("_flag", flag)
            .withColumn("_start", F.when(starts, 1).otherwise(0))
            .withColumn("_episode", F.sum("_start").over(running))
            .drop("_start"))


def minutes_between(start: Column, end: Column) -> Column:
    return ((F.unix_millis(end) - F.unix_millis(start)) / F.lit(60000.0)).cast("double")


def with_previous_snapshot(df: DataFrame, keys: list[str], candidate: Column,
                           carry: tuple[str, ...] = ()) -> DataFrame:
    """The rows of ``df`` where ``candidate`` holds, each with ``_prev_ts`` and
    ``_prev_candidate``: its key's previous snapshot in ``df`` (flagged or not; null for the
    first) and whether ``candidate`` held there; ``_prev_<c>`` for each column ``c`` of ``carry``.
    ``(keys, ts)`` must be unique, and ``df`` must have ``prev_ts``, the key's snapshot before
    ``ts`` (silver.queue_state takes it from silver.queue_offsets).

    The previous rows are found by joining the few candidates' ``prev_ts`` to ``df``; a window
    over every queue_state row (even narrowed to keys, ``ts`` and the flag) cost far more on Sail
    than the few rows it finds (benchmarks/RESULTS.md, issue #19). A ``prev_ts`` that names no row
    of ``df`` (the previous day's last snapshot, when ``df`` holds one day) gives nulls, as a
    window over ``df`` would."""
    flag = F.coalesce(candidate, F.lit(False))
    flagged = df.where(flag)
    wanted = flagged.select(*keys, F.col("prev_ts").alias("ts")).where(F.col("ts").isNotNull())
    # the few wanted keys first: the engine builds its hash table from the left input
    previous = (wanted.join(df.select(*keys, "ts", flag.alias("_prev_candidate"), *carry),
                            on=[*keys, "ts"], how="inner")
                .select(*keys, F.col("ts").alias("prev_ts"), F.col("ts").alias("_prev_ts"),
                        "_prev_candidate", *[F.col(c).alias(f"_prev_{c}") for c in carry]))
    return flagged.join(previous, on=[*keys, "prev_ts"], how="left")


def next_snapshots(df: DataFrame, keys: list[str], at: str, columns: dict[str, str]) -> DataFrame:
    """``keys``, ``at`` and ``columns`` (name → alias) of every row of ``df``, keyed by the
    snapshot before it (``prev_ts``, named ``at``): joined on ``at`` (left), a row of the same key
    finds the snapshot that follows it in ``df`` — none after the last, as ``lead`` over ``df``
    gives it, without a window over every row."""
    return df.select(*keys, F.col("prev_ts").alias(at),
                     *[F.col(c).alias(alias) for c, alias in columns.items()])


def number_episodes(df: DataFrame, keys: list[str], flag: Column, prev_flag: Column,
                    max_gap_seconds: int) -> DataFrame:
    """The rows of ``with_previous_snapshot``'s output where ``flag`` holds, with ``_episode``
    numbered as ``with_episode_id`` numbers it over every row (episodes start only at flagged
    rows, so counting starts among them gives the same number). ``prev_flag``: whether ``flag``
    held at the previous snapshot ``_prev_ts``. ``_episode_start`` is true on each episode's
    first row; the ``_prev_*`` columns stay (``episode_start_ts`` reads them)."""
    order = Window.partitionBy(*keys).orderBy("ts")
    running = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    gap = F.unix_millis(F.col("ts")) - F.unix_millis(F.col("_prev_ts"))
    continues = (F.col("_prev_ts").isNotNull() & F.coalesce(prev_flag, F.lit(False))
                 & (gap <= F.lit(max_gap_seconds * 1000)))
    return (df.where(F.coalesce(flag, F.lit(False)))
            .withColumn("_start", F.when(continues, 0).otherwise(1))
            .withColumn("_episode", F.sum("_start").over(running))
            .withColumn("_episode_start", F.col("_start") == 1)
            .drop("_start", "_prev_candidate"))


def number_flagged_rows(flagged_df: DataFrame, keys: list[str], max_gap_seconds: int) -> DataFrame:
    """``number_episodes`` of rows that are the flagged ones already, each with ``prev_ts``, its
    key's previous snapshot (flagged or not): a row continues an episode when the flagged row
    before it is the one at its ``prev_ts`` (no unflagged snapshot in between) and the gap is at
    most ``max_gap_seconds``.

    Why not ``with_episode_id``: it orders every row of the day, and a window on Sail costs far
    more than the same rows' join or aggregation (benchmarks/RESULTS.md); here only the few
    flagged rows are ordered."""
    previous_flagged = (F.lag("ts").over(Window.partitionBy(*keys).orderBy("ts"))
                        == F.col("prev_ts"))
    return number_episodes(flagged_df.withColumn("_prev_ts", F.col("prev_ts")), keys, F.lit(True),
                           previous_flagged, max_gap_seconds)


def interval_start(value: str, max_gap_seconds: int) -> Column:
    """On an episode's first row: ``value`` at the previous snapshot when that one is within
    ``max_gap_seconds`` — the episode covers the snapshot interval that ends at its first
    flagged snapshot (nobody committed in it) — else ``value`` itself. Null on other rows.
    Needs ``number_episodes``'s output with ``_prev_<value>`` carried (``_prev_ts`` for ts)."""
    prev = F.col(f"_prev_{value}")
    near = (F.col("_prev_ts").isNotNull()
            & (F.unix_millis("ts") - F.unix_millis("_prev_ts") <= F.lit(max_gap_seconds * 1000)))
    return F.when(F.col("_episode_start"), F.when(near, prev).otherwise(F.col(value)))
