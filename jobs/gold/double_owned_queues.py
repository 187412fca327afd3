"""gold.double_owned_queues: queues two or more live processes consume at once.

DESIGN.md §5: ≥ 2 live processes own the queue for ≥ orphan_min_duration. A client_id held by k
processes counts k times, so a duplicated id appears once per channel in ``owners``. Causes:
DUPLICATE_CLIENT_ID (an id repeats among the owners: both processes compute the same slice,
facts §3) · STRATEGY_INCONSISTENT (members run different strategies, so their slices overlap)
· STALE_OWNER (an owner keeps a queue it no longer holds in its newest claim) · UNKNOWN.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from jobs.rules.episodes import minutes_between, number_episodes, with_previous_snapshot
from jobs.rules.severity import severity
from jobs.gold.orphaned_queues import QUEUE_KEY, OrphanRules, excluded_groups

COLUMNS = ["cluster", "group", "topic", "broker_name", "queue_id", "owners", "first_seen",
           "last_seen", "minutes", "root_cause", "evidence", "severity", "date"]


def _has_repeat(owners: Column) -> Column:
    return F.size(owners) > F.size(F.array_distinct(owners))


def build_double_owned_queues(queue_state_df: DataFrame, group_context_df: DataFrame,
                              members_df: DataFrame, rules: OrphanRules) -> DataFrame:
    # only the multi-owner rows (14 k of 9 M at bench scale M) meet the group's context: joining
    # it to every row and numbering episodes over all of them took most of 7 s on Sail
    candidates = (with_previous_snapshot(queue_state_df, QUEUE_KEY,
                                         (F.col("owner_count") >= 2) & (F.col("queue_id") >= 0))
                  .join(excluded_groups(members_df).withColumn("_excluded", F.lit(True)),
                        on=["cluster", "group"], how="left"))
    included = F.col("_excluded").isNull()
    flagged = (number_episodes(candidates, QUEUE_KEY, included,
                               F.col("_prev_candidate") & included,
                               rules.max_snapshot_gap_seconds)
               .join(group_context_df.select("cluster", "group", "ts", "strategies"),
                     on=["cluster", "group", "ts"], how="left"))
    episodes = flagged.groupBy(*QUEUE_KEY, "_episode").agg(
        F.min_by("owners", "ts").alias("owners"),
        F.min("ts").alias("first_seen"),
        F.max("ts").alias("last_seen"),
        F.max_by("lag", "ts").alias("lag_end"),
        F.max(_has_repeat(F.col("owners")).cast("int")).alias("_dup"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list(
            F.coalesce("strategies", F.array().cast("array<string>")))))).alias("strategies"),
        F.max("date").alias("date"),
    ).withColumn("minutes", minutes_between(F.col("first_seen"), F.col("last_seen")))
    cause = (F.when(F.col("_dup") == 1, F.lit("DUPLICATE_CLIENT_ID"))
             .when(F.size("strategies") > 1, F.lit("STRATEGY_INCONSISTENT"))
             .otherwise(F.lit("UNKNOWN")))
    window = F.concat(F.lit(" from "), F.date_format("first_seen", "yyyy-MM-dd HH:mm:ss"),
                      F.lit(" to "), F.date_format("last_seen", "yyyy-MM-dd HH:mm:ss"),
                      F.lit(" UTC"))
    owners_text = F.array_join("owners", ", ")
    text = (F.when(F.col("root_cause") == "DUPLICATE_CLIENT_ID", F.concat(
                F.lit("processes "), owners_text,
                F.lit(" share a client id, compute the same slice and both pull this queue "
                      "(messages consumed twice; orderly locks shared)")))
            .when(F.col("root_cause") == "STRATEGY_INCONSISTENT", F.concat(
                F.lit("owners "), owners_text, F.lit(" run different strategies ("),
                F.array_join("strategies", ", "), F.lit(") and their slices overlap here")))
            .otherwise(F.concat(F.lit("owners "), owners_text,
                                F.lit(" claim the queue at the same time"))))
    return (episodes.where(F.col("minutes") * 60 >= rules.orphan_min_duration_seconds)
            .withColumn("root_cause", cause)
            .withColumn("evidence", F.concat(text, window))
            .withColumn("severity", severity(F.col("root_cause"), F.col("lag_end"),
                                             F.col("minutes"), rules.critical_lag,
                                             rules.critical_minutes))
            .select(*COLUMNS))
