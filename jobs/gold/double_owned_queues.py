"""gold.double_owned_queues: queues two or more live processes consume at once.

DESIGN.md §5: ≥ 2 live processes own the queue for ≥ orphan_min_duration. A client_id held by k
processes counts k times, so a duplicated id appears once per channel in ``owners``. Causes:
DUPLICATE_CLIENT_ID (an id repeats among the owners: both processes compute the same slice,
facts §3) · STRATEGY_INCONSISTENT (members run different strategies, so their slices overlap)
· STALE_OWNER (one owner still lists a queue another owner took at a later rebalance, until its
next snapshot drops it: the owners before the episode lose it, a newcomer keeps it; DESIGN.md
§5.1 "Claims") · UNKNOWN. Not double-owned (jobs.rules): snapshots owned only through a
``client_ip`` claim (every live member at that IP claims, it cannot tell them apart), and the
overlap of a restarted client's stale id with the others (a REBALANCE_GAP, §5.1 "Restarts").
A group with no ownership source gets at most INFO.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from jobs.rules.claims import QUEUE_KEY, groups_with_ownership_source
from jobs.rules.episodes import minutes_between, next_snapshots, number_episodes, with_previous_snapshot
from jobs.rules.models import ownership_unknown_groups
from jobs.rules.restarts import superseded_ids
from jobs.rules.severity import at_most_info, severity
from jobs.rules.thresholds import OwnershipRules

COLUMNS = ["cluster", "group", "topic", "broker_name", "queue_id", "owners", "first_seen",
           "last_seen", "minutes", "root_cause", "evidence", "severity", "date"]


def _has_repeat(owners: Column) -> Column:
    return F.size(owners) > F.size(F.array_distinct(owners))


def stale_owner(all_owners: Column, before: Column, after: Column) -> Column:
    """STALE_OWNER: an owner of the episode held the queue before it and not after it, while
    another one did not hold it before and keeps it after (``before``/``after``: the owners at
    the snapshots around the episode; unknown after the end of the data: false)."""
    old_leaves = F.exists(all_owners, lambda o: F.array_contains(before, o)
                          & ~F.array_contains(after, o))
    new_stays = F.exists(all_owners, lambda o: ~F.array_contains(before, o)
                         & F.array_contains(after, o))
    return F.coalesce(old_leaves & new_stays, F.lit(False))


def restart_overlaps(episodes_df: DataFrame, superseded_df: DataFrame) -> DataFrame:
    """The episodes (``QUEUE_KEY, _episode``) in which an owner is an id superseded by a restart
    (``jobs.rules.restarts.superseded_ids``) while it was stale."""
    return (episodes_df.select(*QUEUE_KEY, "_episode", "first_seen", "last_seen",
                               F.explode(F.array_distinct("_all_owners")).alias("client_id"))
            .join(superseded_df, on=["cluster", "group", "client_id"], how="inner")
            .where((F.col("first_seen") <= F.col("stale_until"))
                   & (F.col("last_seen") >= F.col("replaced_at")))
            .select(*QUEUE_KEY, "_episode").distinct())


def build_double_owned_queues(queue_state_df: DataFrame, group_context_df: DataFrame,
                              members_df: DataFrame, rules: OwnershipRules, *,
                              models_df: DataFrame) -> DataFrame:
    """``models_df``: ``jobs.rules.models.consumer_models``. Broadcasting groups (every client
    takes every queue, two JVMs on a host share ``IP@DEFAULT``), pop groups and pull groups
    whose members report no mq_table are no candidates (DESIGN.md §5.1)."""
    # only the multi-owner rows (a tiny share of the day) meet the group's context: joining it
    # to every row and numbering episodes over all of them was most of the step's time on Sail
    doubled = ((F.col("owner_count") >= 2) & (F.col("queue_id") >= 0)
               & ~F.coalesce(F.col("owned_by_ip_only"), F.lit(False)))
    candidates = (with_previous_snapshot(queue_state_df, QUEUE_KEY, doubled, carry=("owners",))
                  .join(ownership_unknown_groups(models_df).withColumn("_excluded", F.lit(True)),
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
        F.min_by("_prev_owners", "ts").alias("_before"),
        F.array_distinct(F.flatten(F.collect_list("owners"))).alias("_all_owners"),
    ).withColumn("minutes", minutes_between(F.col("first_seen"), F.col("last_seen")))
    following = next_snapshots(queue_state_df, QUEUE_KEY, "last_seen", {"owners": "_after"})
    episodes = (episodes.join(following, on=[*QUEUE_KEY, "last_seen"], how="left")
                .join(restart_overlaps(episodes, superseded_ids(
                    members_df, rules.liveness_window_seconds)),
                      on=[*QUEUE_KEY, "_episode"], how="left_anti"))
    empty = F.array().cast("array<string>")
    cause = (F.when(F.col("_dup") == 1, F.lit("DUPLICATE_CLIENT_ID"))
             .when(F.size("strategies") > 1, F.lit("STRATEGY_INCONSISTENT"))
             .when(stale_owner(F.col("_all_owners"), F.coalesce("_before", empty),
                               F.col("_after")), F.lit("STALE_OWNER"))
             .otherwise(F.lit("UNKNOWN")))
    window = F.concat(F.lit(" from "), F.date_format("first_seen", "yyyy-MM-dd HH:mm:ss"),
                      F.lit(" to "), F.date_format("last_seen", "yyyy-MM-dd HH:mm:ss"),
                      F.lit(" UTC"))
    owners_text = F.array_join("owners", ", ")
    text = (F.when(F.col("root_cause") == "DUPLICATE_CLIENT_ID", F.concat(
                F.lit("processes "), owners_text,
                F.lit(" share a client id, compute the same slice and both pull this queue "
                      "(messages consumed twice; orderly locks shared)")))
            .when(F.col("root_cause") == "STALE_OWNER", F.concat(
                F.lit("owners "), owners_text,
                F.lit(": "), F.array_join(F.array_intersect("_all_owners", F.coalesce(
                    "_before", empty)), ", "),
                F.lit(" still listed the queue after "),
                F.array_join(F.array_intersect("_all_owners", F.coalesce("_after", empty)), ", "),
                F.lit(" took it at a later rebalance, until its next snapshot dropped it")))
            .when(F.col("root_cause") == "STRATEGY_INCONSISTENT", F.concat(
                F.lit("owners "), owners_text, F.lit(" run different strategies ("),
                F.array_join("strategies", ", "), F.lit(") and their slices overlap here")))
            .otherwise(F.concat(F.lit("owners "), owners_text,
                                F.lit(" claim the queue at the same time"))))
    return (episodes.where(F.col("minutes") * 60 >= rules.orphan_min_duration_seconds)
            .withColumn("root_cause", cause)
            .withColumn("evidence", F.concat(text, window))
            .join(groups_with_ownership_source(queue_state_df), on=["cluster", "group"],
                  how="left")
            .withColumn("severity", at_most_info(
                severity(F.col("root_cause"), F.col("lag_end"), F.col("minutes"),
                         rules.critical_lag, rules.critical_minutes),
                F.col("has_ownership_source")))
            .select(*COLUMNS))
