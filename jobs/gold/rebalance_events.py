"""gold.rebalance_events: every change of a group/topic's queue ownership, with its trigger.

Ownership is read per connections snapshot (the broker's channel list, exact membership, no
liveness blur): each member present in the round owns the set of its newest observation at or
before the round — its latest ``rebalanced result changed`` line (facts §2.2 step 6) or its
latest running-info ``mq_table`` (facts §6.1), whichever is newer. A snapshot is compared only
when every member has been observed, so the start of the data is never an event.

A run of consecutive snapshots whose assignment or membership differs from the snapshot before
is one rebalance (clients rebalance within milliseconds of the broker's notification, but
periodic runs and late running-info answers can spread one rebalance over two rounds). Per
(group, topic) and rebalance: ``queues_moved`` = queues whose set of owning ids differs between
the snapshot before the run and its last snapshot; runs that move nothing are not events.

``trigger``, the first that holds (facts §2.1, §4):
- ``CLIENT_EXPIRED``: an id left whose last connection record was already stale (no heartbeat
  for over 2 × the heartbeat interval) — the broker dropped it by its 120 s channel scan;
- ``CLIENT_LEFT``: an id left while still heartbeating — a clean shutdown unregistered it;
- ``CLIENT_JOINED``: a new id, or another process behind an id;
- ``SUBSCRIPTION_CHANGED``: a member present before and after changed its subscribed topics;
- ``ROUTE_CHANGED``: a client's ``mqAllSize`` for the topic changed (route / readQueueNums);
- ``FLAPPING``: nothing of the above — members computed different answers from inconsistent
  views (cidAll taken from a random broker, facts §2.2), so the assignment flips.

The broker's subscription-table storm (facts §4, the topicB case) moves no queue but makes the
whole group rebalance at every flip: when live members heartbeat different topic sets, each
heartbeat from a member whose set differs from the previous heartbeat's overwrites the table.
It is one row per (group, flipping topic, day episode) with trigger ``SUBSCRIPTION_CHANGED``,
``queues_moved`` 0, ``ts`` its first flip of the day and ``flaps_per_hour``: heartbeats of all
members within one interval, in time order (cyclic), counted where the topic set changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.lake import Stage, no_staging
from jobs.rules.episodes import number_flagged_rows, with_episode_id
from jobs.rules.models import excluded_groups, without_groups
from jobs.rules.subscription import changed_topics, heartbeat_topics
from jobs.silver.dedup import filter_first_per_key, first_running_info, mq_table_fields

COLUMNS = ["topic", "ts", "trigger", "clients_before", "clients_after", "queues_moved",
           "flaps_per_hour", "evidence", "cluster", "group", "date"]
TRIGGERS = ("CLIENT_EXPIRED", "CLIENT_LEFT", "CLIENT_JOINED", "SUBSCRIPTION_CHANGED",
            "ROUTE_CHANGED", "FLAPPING")
GROUP_KEY = ["cluster", "group"]
TOPIC_KEY = ["cluster", "group", "topic"]
CLIENT_TOPIC_KEY = [*TOPIC_KEY, "client_id"]
OBSERVATION_KEY = [*CLIENT_TOPIC_KEY, "ts"]


def _empty_ids() -> Column:
    return F.array().cast("array<string>")


@dataclass(frozen=True)
class RebalanceRules:
    max_snapshot_gap_seconds: int
    heartbeat_interval_seconds: int


def _hms(ts: Column) -> Column:
    return F.date_format(ts, "HH:mm:ss")


def _ms(ts: Column) -> Column:
    return F.unix_millis(ts)


# --- membership per connections round ---------------------------------------------------------

def member_rounds(members_df: DataFrame, connections_df: DataFrame,
                  heartbeat_interval_seconds: int) -> DataFrame:
    """One row per (group, connections round ``ts``): ``cid_all`` (one entry per process, sorted),
    ``ids``, ``stale_ids`` (no heartbeat for > 2 intervals: the channel is only waiting for the
    broker's expiry scan, facts §4) and ``subs`` (``struct<client_id, topics>`` from each
    member's own heartbeat)."""
    per_member = (connections_df
                  .select(*GROUP_KEY, "ts", "client_id", "last_update_timestamp",
                          heartbeat_topics(F.col("subscriptions")).alias("_topics"))
                  .groupBy(*GROUP_KEY, "ts", "client_id")
                  .agg(F.max("last_update_timestamp").alias("_lu"),
                       # null (unknown) when no record of the round carries subscriptions
                       F.when(F.count("_topics") > 0, F.array_sort(F.array_distinct(
                           F.flatten(F.collect_list("_topics"))))).alias("topics")))
    stale = (_ms(F.col("ts")) - F.col("_lu")) > F.lit(2 * heartbeat_interval_seconds * 1000)
    return (members_df.select(*GROUP_KEY, "ts", "client_id", "processes")
            .join(per_member, on=[*GROUP_KEY, "ts", "client_id"], how="left")
            .groupBy(*GROUP_KEY, "ts").agg(
                F.array_sort(F.flatten(F.collect_list(F.array_repeat("client_id", "processes"))))
                .alias("cid_all"),
                F.array_sort(F.collect_list("client_id")).alias("ids"),
                F.array_sort(F.collect_list(F.when(F.coalesce(stale, F.lit(False)),
                                                   F.col("client_id")))).alias("stale_ids"),
                F.array_sort(F.collect_list(F.struct("client_id", "topics"))).alias("subs")))


# --- what each client says it owns --------------------------------------------------------------

def assignment_observations(log_events_df: DataFrame, running_info_df: DataFrame,
                            connections_df: DataFrame) -> DataFrame:
    """``cluster, group, client_id, topic, ts, queues, mq_all_size``: a client's whole set for a
    topic at ``ts`` — each ``rebalanced result changed`` line, and each running-info snapshot per
    topic of its mq_table or subscriptions (an empty set when it holds none). Log lines do not
    name the cluster; it comes from the group's connection records. One row per (client, topic,
    ``ts``): a log line wins over a running-info snapshot of the same millisecond, and of equal
    log lines (a collector's overlap) the first by file and line."""
    mq = lambda q: F.struct(q["topic"], q["broker_name"], q["queue_id"])  # noqa: E731
    clusters = connections_df.select(*GROUP_KEY, "client_id").distinct()
    logged = filter_first_per_key(
        log_events_df.where(F.col("event") == "REBALANCE_RESULT")
        .join(clusters, on=["group", "client_id"], how="inner")
        .select(*GROUP_KEY, "client_id", "topic", "ts",
                F.array_sort(F.transform(F.coalesce("queues", F.array()), mq)).alias("queues"),
                "mq_all_size", "_source_file", "_line_no"),
        OBSERVATION_KEY).drop("_source_file", "_line_no")
    snapshots = first_running_info(
        running_info_df, mq_table_fields("topic", "broker_name", "queue_id", "dropped"),
        F.transform("subscriptions", lambda s: F.struct(s["topic"].alias("topic")))
        .alias("subscriptions"))
    held = F.filter("mq_table", lambda q: ~F.coalesce(q["dropped"], F.lit(False)))
    topics = F.array_distinct(F.concat(
        F.transform(held, lambda q: q["topic"]),
        F.transform(F.coalesce("subscriptions", F.array()), lambda s: s["topic"])))
    reported = (snapshots.select(*GROUP_KEY, "client_id", "ts", held.alias("_held"),
                                 F.explode(topics).alias("topic"))
                .select(*GROUP_KEY, "client_id", "topic", "ts",
                        F.array_sort(F.transform(
                            F.filter("_held", lambda q: q["topic"] == F.col("topic")), mq))
                        .alias("queues"),
                        F.lit(None).cast("int").alias("mq_all_size"))
                .join(logged.select(*OBSERVATION_KEY), on=OBSERVATION_KEY, how="left_anti"))
    return logged.unionByName(reported)


def assignment_rounds(rounds_df: DataFrame, observations_df: DataFrame) -> DataFrame:
    """Per (group, topic, round): ``assignment`` (sorted ``struct<client_id, queues>`` of every
    member present in the round, from its newest observation at or before it) and ``complete``
    (every member has been observed).

    The window that finds each member's newest observation carries only its time (unique per
    client and topic, ``assignment_observations``); the queues are joined back after: a window
    over every observation's queue array cost twice as much on Sail."""
    obs_key = CLIENT_TOPIC_KEY
    topics = observations_df.select(*TOPIC_KEY).distinct()
    evaluations = (rounds_df.select(*GROUP_KEY, "ts", F.explode("ids").alias("client_id"))
                   .join(topics, on=GROUP_KEY, how="inner")
                   .select(*obs_key, "ts", F.lit(1).alias("_kind"),
                           F.lit(None).cast("timestamp").alias("_seen_ts")))
    observed = observations_df.select(*obs_key, "ts", F.lit(0).alias("_kind"),
                                      F.col("ts").alias("_seen_ts"))
    upto = (Window.partitionBy(*obs_key).orderBy("ts", "_kind")
            .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    latest = (observed.unionByName(evaluations)
              .withColumn("_seen_ts", F.last("_seen_ts", ignorenulls=True).over(upto))
              .where(F.col("_kind") == 1))
    queues_type = observations_df.schema["queues"].dataType
    queues = observations_df.select(*obs_key, F.col("ts").alias("_seen_ts"),
                                    F.col("queues").alias("_latest"))
    return (latest.join(queues, on=[*obs_key, "_seen_ts"], how="left")
            .groupBy(*TOPIC_KEY, "ts").agg(
                F.array_sort(F.collect_list(F.struct(
                    "client_id", F.coalesce("_latest", F.array().cast(queues_type))
                    .alias("queues")))).alias("assignment"),
                F.min(F.col("_seen_ts").isNotNull().cast("int")).alias("_complete")))


def _owners_by_queue(df: DataFrame, keys: list[str], assignment: str) -> DataFrame:
    """``keys`` + ``broker_name, queue_id, owners`` (owning ids joined, sorted) of an assignment."""
    return (df.select(*keys, F.explode(assignment).alias("_a"))
            .select(*keys, F.col("_a.client_id").alias("client_id"),
                    F.explode("_a.queues").alias("_q"))
            .groupBy(*keys, F.col("_q.broker_name").alias("broker_name"),
                     F.col("_q.queue_id").alias("queue_id"))
            .agg(F.array_join(F.array_sort(F.collect_list("client_id")), ",").alias("owners")))


# --- ownership-changing rebalances --------------------------------------------------------------

def ownership_changes(rounds_df: DataFrame, assignments_df: DataFrame,
                      observations_df: DataFrame, rules: RebalanceRules,
                      stage: Stage = no_staging) -> DataFrame:
    """One row per (group, topic, run of changed rounds) that moved ≥ 1 queue.

    ``stage`` stores the runs, which four parts read: each read recomputed the lag windows
    over every round's assignment. Who left or joined is worked out on the changed rounds
    only (a few of the day's rounds), which are numbered into runs among themselves."""
    order = Window.partitionBy(*TOPIC_KEY).orderBy("ts")
    state = (assignments_df.where(F.col("_complete") == 1)
             .join(rounds_df, on=[*GROUP_KEY, "ts"], how="inner")
             .withColumn("prev_ts", F.lag("ts").over(order))
             .withColumn("prev_assignment", F.lag("assignment").over(order))
             .withColumn("prev_cid_all", F.lag("cid_all").over(order))
             .withColumn("prev_ids", F.lag("ids").over(order))
             .withColumn("prev_stale", F.lag("stale_ids").over(order))
             .withColumn("prev_subs", F.lag("subs").over(order)))
    left = F.array_except(F.coalesce("prev_ids", _empty_ids()), F.col("ids"))
    joined = (F.size(F.array_except(F.col("ids"), F.coalesce("prev_ids", _empty_ids()))) > 0) | (
        F.size("cid_all") > F.size(F.coalesce("prev_cid_all", F.col("cid_all"))))
    sub_changed = changed_topics(F.col("subs"), F.coalesce("prev_subs", F.col("subs")))
    # arrays compared as they are (both engines: element by element, nested nulls equal), not
    # as JSON texts of every round's assignment (tests/gold/test_array_equality.py)
    changed = F.col("prev_assignment").isNotNull() & (
        (F.col("assignment") != F.col("prev_assignment"))
        | (F.col("cid_all") != F.col("prev_cid_all")))
    flagged = (number_flagged_rows(state.where(F.coalesce(changed, F.lit(False))), TOPIC_KEY,
                                   rules.max_snapshot_gap_seconds)
               .withColumn("_left", left)
               .withColumn("_expired", F.size(F.array_intersect(
                   left, F.coalesce("prev_stale", _empty_ids()))) > 0)
               .withColumn("_joined", F.coalesce(joined, F.lit(False)))
               .withColumn("_sub_changed", F.coalesce(sub_changed, F.lit(False))))
    runs = stage(flagged.groupBy(*TOPIC_KEY, "_episode").agg(
        F.min("ts").alias("first_changed"),
        F.max("ts").alias("after_ts"),
        F.min_by("prev_ts", "ts").alias("before_ts"),
        F.min_by("prev_assignment", "ts").alias("before"),
        F.max_by("assignment", "ts").alias("after"),
        F.size(F.min_by("prev_cid_all", "ts")).alias("clients_before"),
        F.size(F.max_by("cid_all", "ts")).alias("clients_after"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("_left")))).alias("left_ids"),
        F.max(F.col("_expired").cast("int")).alias("_expired"),
        F.max(F.col("_joined").cast("int")).alias("_joined"),
        F.max(F.col("_sub_changed").cast("int")).alias("_sub_changed")),
        "gold.rebalance_events.runs")
    run_key = [*TOPIC_KEY, "_episode"]
    before = _owners_by_queue(runs, run_key, "before").withColumnRenamed("owners", "_b")
    after = _owners_by_queue(runs, run_key, "after").withColumnRenamed("owners", "_a")
    moved = (before.join(after, on=[*run_key, "broker_name", "queue_id"], how="full")
             .where(~F.coalesce("_b", F.lit("")).eqNullSafe(F.coalesce("_a", F.lit(""))))
             .groupBy(*run_key).agg(F.count(F.lit(1)).alias("queues_moved")))
    by_client = Window.partitionBy(*TOPIC_KEY, "client_id").orderBy("ts")
    logged = (observations_df.where(F.col("mq_all_size").isNotNull())
              .withColumn("_route", F.lag("mq_all_size").over(by_client) != F.col("mq_all_size"))
              .select(*TOPIC_KEY, F.col("ts").alias("_log_ts"), "_route"))
    timing = (runs.select(*run_key, "before_ts", "after_ts")
              .join(logged, on=TOPIC_KEY, how="inner")
              .where((F.col("_log_ts") > F.col("before_ts")) & (F.col("_log_ts") <= F.col("after_ts")))
              .groupBy(*run_key).agg(F.min("_log_ts").alias("_first_log"),
                                     F.max(F.coalesce(F.col("_route"), F.lit(False)).cast("int"))
                                     .alias("_route")))
    trigger = (F.when(F.col("_expired") == 1, F.lit("CLIENT_EXPIRED"))
               .when(F.size("left_ids") > 0, F.lit("CLIENT_LEFT"))
               .when(F.col("_joined") == 1, F.lit("CLIENT_JOINED"))
               .when(F.col("_sub_changed") == 1, F.lit("SUBSCRIPTION_CHANGED"))
               .when(F.coalesce(F.col("_route"), F.lit(0)) == 1, F.lit("ROUTE_CHANGED"))
               .otherwise(F.lit("FLAPPING")))
    return (runs.join(moved, on=run_key, how="inner")
            .join(timing, on=run_key, how="left")
            .withColumn("trigger", trigger)
            .withColumn("ts", F.coalesce("_first_log", "first_changed"))
            .withColumn("evidence", F.concat(
                F.when(F.size("left_ids") > 0, F.concat(
                    F.array_join("left_ids", ", "),
                    F.when(F.col("_expired") == 1,
                           F.lit(" stopped heartbeating and was expired by the broker; "))
                    .otherwise(F.lit(" unregistered (clean shutdown); "))))
                .otherwise(F.lit("")),
                F.col("clients_before").cast("string"), F.lit(" → "),
                F.col("clients_after").cast("string"), F.lit(" clients; "),
                F.col("queues_moved").cast("string"),
                F.lit(" queues changed owner between the connection rounds at "),
                _hms(F.col("before_ts")), F.lit(" and "), _hms(F.col("after_ts")), F.lit(" UTC")))
            .select("topic", "ts", "trigger", "clients_before", "clients_after", "queues_moved",
                    F.lit(None).cast("double").alias("flaps_per_hour"), "evidence",
                    *GROUP_KEY, F.to_date("ts").alias("date")))


# --- the broker subscription-table storm --------------------------------------------------------

def filter_mixed_rounds(connections_df: DataFrame) -> DataFrame:
    """Heartbeat records (``last_update_timestamp`` set) of the broker rounds whose members
    report more than one topic set: only those can flip the subscription table. Nearly every
    round agrees, and building every round's heartbeat list is costly on a large day."""
    # a heartbeat without subscriptions says nothing about them (jobs.rules.subscription)
    beats = connections_df.where(F.col("last_update_timestamp").isNotNull()
                                 & F.col("subscriptions").isNotNull())
    broker = F.coalesce("broker_name", F.lit(""))
    topic_set = F.to_json(heartbeat_topics(F.col("subscriptions")))
    mixed = (beats.groupBy(*GROUP_KEY, broker.alias("_broker"), "ts")
             .agg(F.min(topic_set).alias("_lo"), F.max(topic_set).alias("_hi"))
             .where(F.col("_lo") != F.col("_hi"))
             .select(*GROUP_KEY, "_broker", "ts"))
    return (beats.withColumn("_broker", broker)
            .join(mixed, on=[*GROUP_KEY, "_broker", "ts"], how="left_semi")
            .drop("_broker"))


def subscription_flapping(connections_df: DataFrame, rules: RebalanceRules) -> DataFrame:
    """Rows for the topicB storm (module docstring), from each member's own heartbeat
    (``last_update_timestamp`` and ``subscriptions`` in the connection records, DESIGN.md §3.2)."""
    p = rules.heartbeat_interval_seconds * 1000
    beats = (filter_mixed_rounds(connections_df)
             .select(*GROUP_KEY, F.coalesce("broker_name", F.lit("")).alias("_broker"), "ts",
                     "client_id", F.col("last_update_timestamp").alias("lu"),
                     heartbeat_topics(F.col("subscriptions")).alias("topics"))
             .groupBy(*GROUP_KEY, "_broker", "ts", "client_id")
             .agg(F.max("lu").alias("lu"), F.max_by("topics", "lu").alias("topics")))
    # Within one interval every member heartbeats once, so its latest heartbeats in time order
    # are consecutive heartbeats; the first one's predecessor is the last one, one interval back.
    rounds = beats.groupBy(*GROUP_KEY, "_broker", "ts").agg(
        F.array_sort(F.collect_list(F.struct("lu", "client_id", "topics"))).alias("_hb"),
        F.count(F.lit(1)).alias("_members"))
    flips = F.filter(
        F.transform("_hb", lambda h, i: F.struct(
            h["lu"].alias("lu"), h["topics"].alias("topics"),
            F.when(i == 0, F.element_at("_hb", -1)["topics"])
            .otherwise(F.element_at("_hb", i)["topics"]).alias("prev"))),
        lambda f: f["topics"] != f["prev"])
    per_round = (rounds.where(F.col("_members") >= 2)
                 .withColumn("_flips", flips)
                 .where(F.size("_flips") > 0)
                 .withColumn("_rate", F.size("_flips") * F.lit(3_600_000.0 / p))
                 .withColumn("_first_flip", F.array_min(F.filter(
                     F.transform("_flips", lambda f: f["lu"]),
                     lambda lu: lu >= _ms(F.to_date("ts").cast("timestamp")))))
                 .withColumn("_toggling", F.array_distinct(F.flatten(F.transform(
                     "_flips", lambda f: F.concat(F.array_except(f["topics"], f["prev"]),
                                                  F.array_except(f["prev"], f["topics"]))))))
                 .select(*GROUP_KEY, "_broker", "ts", "_members", "_rate", "_first_flip",
                         F.explode("_toggling").alias("topic")))
    key = [*GROUP_KEY, "topic"]
    episodes = (per_round
                .groupBy(*key, "ts").agg(F.max("_rate").alias("_rate"),
                                         F.min("_first_flip").alias("_first_flip"),
                                         F.max("_members").alias("_members"))
                .transform(lambda df: with_episode_id(df, key, F.lit(True),
                                                      rules.max_snapshot_gap_seconds)))
    storms = episodes.groupBy(*key, "_episode").agg(
        F.min("_first_flip").alias("_first_flip"),
        F.min("ts").alias("_first_round"),
        F.max("ts").alias("_last_round"),
        F.round(F.avg("_rate"), 1).alias("flaps_per_hour"),
        F.min_by("_members", "ts").alias("clients_before"),
        F.max_by("_members", "ts").alias("clients_after"))
    ts = F.coalesce(F.timestamp_millis("_first_flip"), F.col("_first_round"))
    return (storms.withColumn("ts", ts).select(
        "topic", "ts", F.lit("SUBSCRIPTION_CHANGED").alias("trigger"),
        F.col("clients_before").cast("int").alias("clients_before"),
        F.col("clients_after").cast("int").alias("clients_after"),
        F.lit(0).cast("long").alias("queues_moved"), "flaps_per_hour",
        F.concat(F.lit("members heartbeat different topic sets, so each heartbeat rewrites the "
                       "broker's subscription table with or without "), F.col("topic"),
                 F.lit(": it flips "), F.col("flaps_per_hour").cast("string"),
                 F.lit(" times an hour and every flip makes the whole group rebalance (seen "),
                 _hms(F.col("_first_round")), F.lit(" to "), _hms(F.col("_last_round")),
                 F.lit(" UTC)")).alias("evidence"),
        *GROUP_KEY, F.to_date("ts").alias("date")))


def build_rebalance_events(members_df: DataFrame, connections_df: DataFrame,
                           log_events_df: DataFrame, running_info_df: DataFrame,
                           rules: RebalanceRules, stage: Stage = no_staging, *,
                           models_df: DataFrame) -> DataFrame:
    """silver.group_members + bronze connections, client log events and running info in,
    gold.rebalance_events out (contract columns, then ``flaps_per_hour`` and ``evidence``).

    ``stage(df, name)`` stores the rounds and observations, each read twice (building the
    observations is costly), and the runs (see :func:`ownership_changes`). Broadcasting and pop
    groups (``models_df``, ``jobs.rules.models``) have no rebalance findings: every broadcast
    client takes every queue, pop owns none (DESIGN.md §5.1)."""
    rounds = stage(member_rounds(members_df, connections_df, rules.heartbeat_interval_seconds),
                   "gold.rebalance_events.rounds")
    observations = stage(assignment_observations(log_events_df, running_info_df, connections_df),
                         "gold.rebalance_events.observations")
    assignments = assignment_rounds(rounds, observations)
    changes = ownership_changes(rounds, assignments, observations, rules, stage)
    days = members_df.select("date").distinct()
    events = (changes.unionByName(subscription_flapping(connections_df, rules))
              .join(days, on="date", how="inner"))
    return without_groups(events, excluded_groups(models_df)).select(*COLUMNS)
