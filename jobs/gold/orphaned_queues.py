"""gold.orphaned_queues: queues no live consumer pulls, with root cause and evidence.

DESIGN.md §5: a queue of a topic the group subscribes (CLUSTERING, not pop), seen in offsets,
owned by no live process at consecutive snapshots for ≥ orphan_min_duration, with lag > 0 or a
growing broker offset. Root cause, first that holds: DUPLICATE_CLIENT_ID · SUBSCRIPTION_INCONSISTENT
· STRATEGY_INCONSISTENT · CLIENT_NOT_IN_CID_ALL · NO_LIVE_CONSUMER · REBALANCE_GAP · UNKNOWN.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from jobs.columns import sorted_set
from jobs.lake import Stage, no_staging
from jobs.rules.claims import QUEUE_KEY, groups_with_ownership_source
from jobs.rules.episodes import interval_start, minutes_between, number_episodes, with_previous_snapshot
from jobs.rules.evidence import offset_advanced
from jobs.rules.models import ownership_unknown_groups
from jobs.rules.severity import at_most_info, severity
from jobs.rules.subscription import non_subscribers as non_subscribers_of
from jobs.rules.subscription import subscribes
from jobs.rules.thresholds import OwnershipRules

COLUMNS = ["cluster", "group", "topic", "broker_name", "queue_id", "first_seen", "last_seen",
           "orphaned_minutes", "lag_start", "lag_end", "root_cause", "would_be_owner",
           "evidence", "severity", "date"]


OrphanRules = OwnershipRules  # the name the detectors' callers know


def orphan_snapshots(queue_state_df: DataFrame, group_context_df: DataFrame,
                     excluded_df: DataFrame, rules: OrphanRules) -> DataFrame:
    """The orphaned queue_state rows with the group's context and ``_episode``: consecutive
    orphaned snapshots (gaps ≤ max_snapshot_gap) share one.

    Only unowned rows (a tiny share of the day) meet the group's context; whether the queue's
    previous snapshot was orphaned is judged the same way from that snapshot's context. Joining
    the context to every row and numbering episodes over all of them dominated the step on Sail."""
    unowned = ((F.col("owner_count") == 0) & (F.col("queue_id") >= 0)
               & ~offset_advanced(F.col("consumer_offset_delta")))
    previous_members = group_context_df.select("cluster", "group", F.col("ts").alias("_prev_ts"),
                                               F.col("members").alias("_prev_members"))
    candidates = (with_previous_snapshot(queue_state_df, QUEUE_KEY, unowned,
                                         carry=("lag", "broker_offset"))
                  .join(excluded_df.withColumn("_excluded", F.lit(True)),
                        on=["cluster", "group"], how="left")
                  .join(group_context_df, on=["cluster", "group", "ts"], how="left")
                  .join(previous_members, on=["cluster", "group", "_prev_ts"], how="left"))
    included = F.col("_excluded").isNull()
    orphaned = included & subscribes(F.col("topic"), F.col("members"))
    was_orphaned = (F.col("_prev_candidate") & included
                    & subscribes(F.col("topic"), F.col("_prev_members")))
    gap = rules.max_snapshot_gap_seconds
    return (number_episodes(candidates, QUEUE_KEY, orphaned, was_orphaned, gap)
            .withColumn("_start_ts", interval_start("ts", gap))
            .withColumn("_start_lag", interval_start("lag", gap))
            .withColumn("_start_broker_offset", interval_start("broker_offset", gap))
            .drop("_excluded", "_prev_members", "_prev_ts", "_prev_lag", "_prev_broker_offset"))


def orphan_episodes(flagged_df: DataFrame, rules: OrphanRules) -> DataFrame:
    """Orphaned snapshots (``orphan_snapshots``) → one row per episode with its evidence
    columns. An episode covers the snapshot intervals in which nobody committed, so it starts
    at the snapshot before its first orphaned one (``interval_start``)."""
    non_subscribers = non_subscribers_of(F.col("topic"), F.col("members"))
    episodes = flagged_df.groupBy(*QUEUE_KEY, "_episode").agg(
        F.max("_start_ts").alias("first_seen"),
        F.max("ts").alias("last_seen"),
        F.max("_start_lag").alias("lag_start"),
        F.max_by("lag", "ts").alias("lag_end"),
        F.greatest(F.max("lag"), F.max("_start_lag")).alias("max_lag"),
        (F.max_by("broker_offset", "ts") - F.max("_start_broker_offset")).alias("growth"),
        F.max("date").alias("date"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list(
            F.coalesce("duplicate_ids", F.array().cast("array<string>")))))).alias("dup_ids"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list(non_subscribers))))
        .alias("non_subscribers"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list(
            F.coalesce("strategies", F.array().cast("array<string>")))))).alias("strategies"),
        F.max_by(F.coalesce("live_processes", F.lit(0)), "ts").alias("live_at_end"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("claimed_by"))))
        .alias("stale_claims"),
        F.max(F.col("broker_reports_no_owner").cast("int")).alias("broker_na"),
        F.min(F.when(F.size(non_subscribers) > 0, F.col("ts"))).alias("_non_subscriber_at"),
    )
    minutes = minutes_between(F.col("first_seen"), F.col("last_seen"))
    return (episodes.withColumn("orphaned_minutes", minutes)
            .where((F.col("orphaned_minutes") * 60 >= rules.orphan_min_duration_seconds)
                   & ((F.col("max_lag") > 0) | (F.col("growth") > 0))))


def _iso(ts: Column) -> Column:
    return F.date_format(ts, "yyyy-MM-dd HH:mm:ss")


def with_root_cause(episodes_df: DataFrame, not_in_cid_all_df: DataFrame,
                    changes_df: DataFrame, rules: OrphanRules) -> DataFrame:
    """Attach ``root_cause`` (first that holds) and the facts its evidence sentence needs.

    ``not_in_cid_all_df``: ``group, ts, client_id`` of ``[BUG] … not in cidAll`` log lines.
    ``changes_df``: ``cluster, group, changed_at`` membership changes.
    """
    w = rules.liveness_window_seconds * 1000
    t = rules.orphan_transient_max_seconds * 1000
    bug = (episodes_df.select(*QUEUE_KEY, "_episode", "first_seen", "last_seen")
           .join(not_in_cid_all_df.select("group", F.col("ts").alias("_bug_at"),
                                          F.col("client_id").alias("_bug_cid")),
                 on="group", how="inner")
           .where((F.unix_millis("_bug_at") >= F.unix_millis("first_seen") - w)
                  & (F.col("_bug_at") <= F.col("last_seen")))
           .groupBy(*QUEUE_KEY, "_episode")
           .agg(sorted_set("_bug_cid").alias("not_in_cid_all")))
    changed = (episodes_df.select(*QUEUE_KEY, "_episode", "first_seen", "last_seen")
               .join(changes_df, on=["cluster", "group"], how="inner")
               .where((F.unix_millis("changed_at") >= F.unix_millis("first_seen") - t)
                      & (F.unix_millis("changed_at") <= F.unix_millis("last_seen") + t))
               .groupBy(*QUEUE_KEY, "_episode")
               .agg(F.min("changed_at").alias("membership_changed_at")))
    df = (episodes_df.join(bug, on=[*QUEUE_KEY, "_episode"], how="left")
          .join(changed, on=[*QUEUE_KEY, "_episode"], how="left"))
    cause = (F.when(F.size("dup_ids") > 0, F.lit("DUPLICATE_CLIENT_ID"))
             .when(F.size("non_subscribers") > 0, F.lit("SUBSCRIPTION_INCONSISTENT"))
             .when(F.size("strategies") > 1, F.lit("STRATEGY_INCONSISTENT"))
             .when(F.coalesce(F.size("not_in_cid_all"), F.lit(0)) > 0,
                   F.lit("CLIENT_NOT_IN_CID_ALL"))
             .when(F.col("live_at_end") == 0, F.lit("NO_LIVE_CONSUMER"))
             .when((F.col("orphaned_minutes") * 60 < rules.orphan_transient_max_seconds)
                   & F.col("membership_changed_at").isNotNull(), F.lit("REBALANCE_GAP"))
             .otherwise(F.lit("UNKNOWN")))
    return df.withColumn("root_cause", cause)


def evidence(would_be_owner: Column) -> Column:
    """A sentence naming the clients, times and numbers that show the cause."""
    window = F.concat(F.lit(" from "), _iso(F.col("first_seen")), F.lit(" to "),
                      _iso(F.col("last_seen")), F.lit(" UTC"))
    lag = F.concat(F.lit("; lag "), F.col("lag_start").cast("string"), F.lit(" → "),
                   F.col("lag_end").cast("string"))
    rc = F.col("root_cause")
    text = (
        F.when(rc == "DUPLICATE_CLIENT_ID", F.concat(
            F.lit("client id "), F.array_join("dup_ids", ", "),
            F.lit(" is held by more than one process; equal ids take the same slice of cidAll, "
                  "so the slot of "), F.coalesce(would_be_owner, F.lit("the duplicate")),
            F.lit("'s second process is shadowed and nobody owns this queue (RocketMQ's own "
                  "tools key by client id and show it once)")))
        .when(rc == "SUBSCRIPTION_INCONSISTENT", F.concat(
            F.lit("live member(s) "), F.array_join("non_subscribers", ", "),
            F.lit(" do not subscribe "), F.col("topic"),
            F.lit(" but count in the group's cidAll; the strategy hands this queue to "),
            F.coalesce(would_be_owner, F.lit("one of them")),
            F.lit(", which never pulls it")))
        .when(rc == "STRATEGY_INCONSISTENT", F.concat(
            F.lit("members run different allocation strategies ("),
            F.array_join("strategies", ", "),
            F.lit("); their allocations do not tile the queues and this one falls between")))
        .when(rc == "CLIENT_NOT_IN_CID_ALL", F.concat(
            F.lit("[BUG] not in cidAll logged by "), F.array_join("not_in_cid_all", ", "),
            F.lit(": that client dropped all queues of the topic for the run")))
        .when(rc == "NO_LIVE_CONSUMER", F.concat(
            F.lit("no member of the group has a live connection at the end; last claimed by "),
            F.coalesce(F.array_join("stale_claims", ", "), F.lit("nobody"))))
        .when(rc == "REBALANCE_GAP", F.concat(
            F.lit("transient gap around a membership change at "),
            _iso(F.col("membership_changed_at")),
            F.lit(" UTC; last claimed by "),
            F.coalesce(F.array_join("stale_claims", ", "), F.lit("nobody"))))
        .otherwise(F.concat(F.lit("no live process claimed the queue; last claimed by "),
                            F.coalesce(F.array_join("stale_claims", ", "), F.lit("nobody")))))
    return F.concat(text, window, lag)


def finalize_orphans(df: DataFrame, sources_df: DataFrame, rules: OrphanRules) -> DataFrame:
    """Contract columns of gold.orphaned_queues. ``sources_df``:
    ``jobs.rules.claims.groups_with_ownership_source``."""
    wbo = F.col("would_be_owner")
    level = severity(F.col("root_cause"), F.col("lag_end"), F.col("orphaned_minutes"),
                     rules.critical_lag, rules.critical_minutes)
    return df.join(sources_df, on=["cluster", "group"], how="left").select(
        *QUEUE_KEY, "first_seen", "last_seen", "orphaned_minutes", "lag_start", "lag_end",
        "root_cause", wbo, evidence(wbo).alias("evidence"),
        at_most_info(level, F.col("has_ownership_source")).alias("severity"),
        "date").select(*COLUMNS)


def with_would_be_owner(episodes_df: DataFrame, queue_state_df: DataFrame,
                        member_context_df: DataFrame) -> DataFrame:
    """``would_be_owner`` (DESIGN.md §5): for SUBSCRIPTION_INCONSISTENT, the member that the
    subscribing members' strategy hands the queue to but that does not subscribe the topic —
    found by replaying that strategy over the topic's observed queues and the group-wide cidAll
    (duplicates kept, facts §2.2) at the episode's first snapshot that shows the non-subscribing
    member live; for DUPLICATE_CLIENT_ID the
    duplicated id whose second slot is shadowed; else null."""
    from jobs.replay.spark_replay import replay_snapshots

    inconsistent = episodes_df.where(F.col("root_cause") == "SUBSCRIPTION_INCONSISTENT").select(
        *QUEUE_KEY, "_episode", F.col("_non_subscriber_at").alias("ts"), "non_subscribers")
    mq = F.struct("topic", "broker_name", "queue_id")
    # only the snapshots replayed: collecting every snapshot's queues is costly on a large day
    at = inconsistent.select("cluster", "group", "topic", "ts").distinct()
    mq_all = (queue_state_df.join(at, on=["cluster", "group", "topic", "ts"], how="left_semi")
              .groupBy("cluster", "group", "topic", "ts")
              .agg(F.collect_list(mq).alias("mq_all")))
    members = (member_context_df
               .join(at.select("cluster", "group", "ts").distinct(),
                     on=["cluster", "group", "ts"], how="left_semi")
               .groupBy("cluster", "group", "ts")).agg(
        F.flatten(F.collect_list(F.array_repeat("client_id", F.col("processes"))))
        .alias("cid_all"),
        F.collect_list(F.struct("client_id", "topics", "strategy")).alias("_members"))
    subscribing_strategy = F.array_min(F.transform(
        F.filter("_members", lambda m: F.array_contains(m["topics"], F.col("topic"))
                 & m["strategy"].isNotNull()), lambda m: m["strategy"]))
    calls = (inconsistent.join(mq_all, on=["cluster", "group", "topic", "ts"], how="inner")
             .join(members, on=["cluster", "group", "ts"], how="inner")
             .withColumn("strategy", F.coalesce(subscribing_strategy, F.lit("AVG")))
             .select(*QUEUE_KEY, "_episode", "non_subscribers", "strategy", "mq_all", "cid_all",
                     F.explode(F.array_distinct("cid_all")).alias("current_cid")))
    handed = (replay_snapshots(calls)
              .where(F.exists("allocated", lambda q: (q["topic"] == F.col("topic"))
                              & (q["broker_name"] == F.col("broker_name"))
                              & (q["queue_id"] == F.col("queue_id"))))
              .where(F.array_contains("non_subscribers", F.col("current_cid")))
              .groupBy(*QUEUE_KEY, "_episode")
              .agg(F.min("current_cid").alias("_replayed_owner")))
    return (episodes_df.join(handed, on=[*QUEUE_KEY, "_episode"], how="left")
            .withColumn("would_be_owner", F.when(
                F.col("root_cause") == "DUPLICATE_CLIENT_ID", F.element_at("dup_ids", 1))
                .when(F.col("root_cause") == "SUBSCRIPTION_INCONSISTENT",
                      F.col("_replayed_owner")))
            .drop("_replayed_owner"))


def orphaned_snapshots_of_day(queue_state_df: DataFrame, group_context_df: DataFrame,
                              models_df: DataFrame, rules: OrphanRules) -> DataFrame:
    """The day's orphaned snapshots with ``_episode`` and their evidence columns. Small, and
    read several times by ``explain_orphan_episodes`` (root-cause joins, would-be owner): the
    pipeline stages it so the window over every snapshot runs once (unstaged it ran once per
    reader and could outgrow Sail's memory pool). ``models_df``: ``jobs.rules.models.
    consumer_models``; broadcasting, pop and mq_table-less pull groups are no candidates."""
    return orphan_snapshots(queue_state_df, group_context_df,
                            ownership_unknown_groups(models_df), rules)


def explain_orphan_episodes(snapshots_df: DataFrame, queue_state_df: DataFrame,
                            member_context_df: DataFrame, group_context_df: DataFrame,
                            log_events_df: DataFrame, rules: OrphanRules,
                            stage: Stage = no_staging) -> DataFrame:
    """Orphaned snapshots (``orphaned_snapshots_of_day``) → episodes with root cause, would-be
    owner and evidence → gold.orphaned_queues.

    ``stage(df, name)`` stores the episodes with their root cause: the would-be owner reads
    them about ten times over (the replay joins its calls back to themselves), and Spark
    Connect sends a plan with every copy spelled out. Unstaged, planning alone took 0.4 s per
    group batch on Sail, however few the episodes."""
    from jobs.gold.group_context import membership_changes

    episodes = orphan_episodes(snapshots_df, rules)
    not_in_cid_all = log_events_df.where(F.col("event") == "NOT_IN_CID_ALL").select(
        "group", "ts", "client_id")
    caused = stage(with_root_cause(episodes, not_in_cid_all,
                                   membership_changes(group_context_df), rules),
                   "gold.orphaned_queues.episodes")
    return finalize_orphans(with_would_be_owner(caused, queue_state_df, member_context_df),
                            groups_with_ownership_source(queue_state_df), rules)


def build_orphaned_queues(queue_state_df: DataFrame, member_context_df: DataFrame,
                          group_context_df: DataFrame, models_df: DataFrame,
                          log_events_df: DataFrame, rules: OrphanRules) -> DataFrame:
    """The whole detector: silver frames in, gold.orphaned_queues out."""
    return explain_orphan_episodes(
        orphaned_snapshots_of_day(queue_state_df, group_context_df, models_df, rules),
        queue_state_df, member_context_df, group_context_df, log_events_df, rules)
