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
the snapshot before the run and its last snapshot, a member silent at either of them owning
nothing (its process is gone or paused); runs that move nothing are not events.

``trigger``, the first that holds (facts §2.1, §4):
- ``CLIENT_EXPIRED``: an id left whose last connection record was already stale (no heartbeat
  for over 2 × the heartbeat interval) — the broker dropped it by its 120 s channel scan; or
  an id kept fewer channels after one of them went silent (a restart that kept its id: the dead
  process's channel expired);
- ``CLIENT_LEFT``: an id, or a channel behind an id that stays, left while still heartbeating — a
  clean shutdown unregistered it — or without heartbeat times in its records (mqadmin's
  consumerConnection prints none), when an expiry and a clean shutdown look alike;
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
# why a departure without heartbeat times is neither called an expiry nor a clean shutdown
UNHEARD = ("the connection records carry no heartbeat times: an expiry after a crash or a clean "
           "unregister, unknown")
RUN_KEY = [*TOPIC_KEY, "_episode"]  # a run of consecutive changed rounds (ownership_changes)


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
    broker's expiry scan, facts §4), ``stale_channel_ids`` (ids with such a channel: a restart
    that kept its id leaves the dead process's channel listed beside the new one),
    ``unheard_ids`` (ids whose records carry no heartbeat time: mqadmin's consumerConnection
    prints none, so whether such an id is stale is unknown) and ``subs``
    (``struct<client_id, topics>`` from each member's own heartbeat)."""
    # a writer of 0 (or less) gives no heartbeat time, as in jobs.rules.liveness
    heard = F.col("last_update_timestamp")
    per_member = (connections_df
                  .select(*GROUP_KEY, "ts", "client_id",
                          F.when(heard > 0, heard).alias("last_update_timestamp"),
                          heartbeat_topics(F.col("subscriptions")).alias("_topics"))
                  .groupBy(*GROUP_KEY, "ts", "client_id")
                  .agg(F.max("last_update_timestamp").alias("_lu"),
                       F.min("last_update_timestamp").alias("_lu_min"),
                       # null (unknown) when no record of the round carries subscriptions
                       F.when(F.count("_topics") > 0, F.array_sort(F.array_distinct(
                           F.flatten(F.collect_list("_topics"))))).alias("topics")))
    silent = F.lit(2 * heartbeat_interval_seconds * 1000)
    stale = (_ms(F.col("ts")) - F.col("_lu")) > silent
    stale_channel = (_ms(F.col("ts")) - F.col("_lu_min")) > silent
    return (members_df.select(*GROUP_KEY, "ts", "client_id", "processes")
            .join(per_member, on=[*GROUP_KEY, "ts", "client_id"], how="left")
            .groupBy(*GROUP_KEY, "ts").agg(
                F.array_sort(F.flatten(F.collect_list(F.array_repeat("client_id", "processes"))))
                .alias("cid_all"),
                F.array_sort(F.collect_list("client_id")).alias("ids"),
                F.array_sort(F.collect_list(F.when(F.coalesce(stale, F.lit(False)),
                                                   F.col("client_id")))).alias("stale_ids"),
                F.array_sort(F.collect_list(F.when(F.coalesce(stale_channel, F.lit(False)),
                                                   F.col("client_id"))))
                .alias("stale_channel_ids"),
                F.array_sort(F.collect_list(F.when(F.col("_lu").isNull(), F.col("client_id"))))
                .alias("unheard_ids"),
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


def newest_observations(evaluations_df: DataFrame, observations_df: DataFrame) -> DataFrame:
    """``evaluations_df`` (``cluster, group, topic, client_id, ts`` and any other columns) with
    ``_seen_ts``: the time of the client's newest observation of the topic at or before ``ts``
    (null when it has none yet).

    The window carries only the observation's time (unique per client and topic,
    ``assignment_observations``); its queues are joined after: a window over every
    observation's queue array cost twice as much on Sail."""
    carried = [f for f in evaluations_df.schema.fields if f.name not in (*CLIENT_TOPIC_KEY, "ts")]
    observed = observations_df.select(
        *CLIENT_TOPIC_KEY, "ts", *[F.lit(None).cast(f.dataType).alias(f.name) for f in carried],
        F.lit(0).alias("_kind"), F.col("ts").alias("_seen_ts"))
    evaluations = evaluations_df.select(
        *CLIENT_TOPIC_KEY, "ts", *[f.name for f in carried],
        F.lit(1).alias("_kind"), F.lit(None).cast("timestamp").alias("_seen_ts"))
    upto = (Window.partitionBy(*CLIENT_TOPIC_KEY).orderBy("ts", "_kind")
            .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    return (observed.unionByName(evaluations)
            .withColumn("_seen_ts", F.last("_seen_ts", ignorenulls=True).over(upto))
            .where(F.col("_kind") == 1)
            .drop("_kind"))


def assignment_fingerprints(rounds_df: DataFrame, observations_df: DataFrame) -> DataFrame:
    """Per (group, topic, round): ``_complete`` (every member present in the round has been
    observed) and ``_fingerprint``, which differs between two rounds whose assignments differ —
    the assignment being each member's set from its newest observation at or before the round.
    Why not the assignment itself: the day's rounds are compared with the round before, nearly
    all repeat it, and building and comparing every round's array of sets was the largest step
    of gold on an M day (benchmarks/RESULTS.md, issue #19).

    The fingerprint XORs one 64-bit hash per member, of its id and its set (an unobserved
    member: the empty set), so the order of members does not matter and a member's new set, a
    new member or a member gone changes it. Two different assignments of one fingerprint go
    unnoticed with a chance of 2^-64 per pair of rounds."""
    topics = observations_df.select(*TOPIC_KEY).distinct()
    members = (rounds_df.select(*GROUP_KEY, "ts", F.explode("ids").alias("client_id"))
               .join(topics, on=GROUP_KEY, how="inner"))
    no_queues = F.array().cast(observations_df.schema["queues"].dataType)
    hashed = observations_df.select(*CLIENT_TOPIC_KEY, F.col("ts").alias("_seen_ts"),
                                    F.xxhash64("client_id", F.coalesce("queues", no_queues))
                                    .alias("_hash"))
    return (newest_observations(members, observations_df)
            .join(hashed, on=[*CLIENT_TOPIC_KEY, "_seen_ts"], how="left")
            .groupBy(*TOPIC_KEY, "ts").agg(
                F.bit_xor(F.coalesce("_hash", F.xxhash64("client_id", no_queues)))
                .alias("_fingerprint"),
                F.min(F.col("_seen_ts").isNotNull().cast("int")).alias("_complete")))


def queues_moved(runs_df: DataFrame, observations_df: DataFrame) -> DataFrame:
    """``RUN_KEY`` + ``queues_moved``: the queues whose set of owning ids differs between a run's
    end rounds — ``before_ids`` at ``before_ts`` and ``after_ids`` at ``after_ts``, each member
    owning its newest observation's set (none when it has no observation yet). Runs that move
    nothing have no row.

    A member stale at either end round (``before_stale_ids``, ``after_stale_ids``: no heartbeat
    for over 2 intervals, so its process is gone or paused and only the broker's expiry scan
    still lists it) owns nothing at either end: its newest set is from before it went silent, and
    what happened to those queues then is no move of this rebalance. Counted, a crashed process
    that a supervisor restarted under a new id kept the queues of its last allocation next to
    their new owners, and its expiry moved 6 queues where 4 changed hands (the ``crash-restart``
    day). Left out at both ends, not only where it is silent: the restart's join found it silent
    at its last round only, and leaving it out there alone moved its old queues at the join (6
    where 4 did). An id without heartbeat times is never stale (unknown): it keeps its set."""
    # both ends from one reference to the runs, picked by a side number: an array of the two
    # ends as structs crashes Sail 0.7.2 (test_sail_gap_an_array_of_an_aggregates_structs_...)
    stale = F.array_union(F.coalesce("before_stale_ids", _empty_ids()),
                          F.coalesce("after_stale_ids", _empty_ids()))
    ends = runs_df.select(*RUN_KEY, "before_ts", "after_ts",
                          F.array_except("before_ids", stale).alias("_before"),
                          F.array_except("after_ids", stale).alias("_after"),
                          F.explode(F.array(F.lit(0), F.lit(1))).alias("side"))
    before = F.col("side") == 0
    members = ends.select(*RUN_KEY, "side",
                          F.when(before, F.col("before_ts")).otherwise(F.col("after_ts"))
                          .alias("ts"),
                          F.explode(F.when(before, F.col("_before"))
                                    .otherwise(F.col("_after"))).alias("client_id"))
    # only the observations of the runs' topics: a quiet day has none to look through
    observed = observations_df.join(F.broadcast(runs_df.select(*TOPIC_KEY).distinct()),
                                    on=TOPIC_KEY, how="left_semi")
    queues = observed.select(*CLIENT_TOPIC_KEY, F.col("ts").alias("_seen_ts"), "queues")
    side_owners = lambda side: F.array_join(F.array_sort(F.collect_list(  # noqa: E731
        F.when(F.col("side") == side, F.col("client_id")))), ",")
    return (newest_observations(members, observed)
            .join(queues, on=[*CLIENT_TOPIC_KEY, "_seen_ts"], how="inner")
            .select(*RUN_KEY, "side", "client_id", F.explode("queues").alias("_q"))
            .groupBy(*RUN_KEY, F.col("_q.broker_name"), F.col("_q.queue_id"))
            .agg(side_owners(0).alias("_before"), side_owners(1).alias("_after"))
            .where(F.col("_before") != F.col("_after"))
            .groupBy(*RUN_KEY).agg(F.count(F.lit(1)).alias("queues_moved")))


# --- ownership-changing rebalances --------------------------------------------------------------

def ownership_changes(rounds_df: DataFrame, observations_df: DataFrame, rules: RebalanceRules,
                      stage: Stage = no_staging) -> DataFrame:
    """One row per (group, topic, run of changed rounds) that moved ≥ 1 queue.

    A round changed when its ``assignment_fingerprints`` or its ``cid_all`` differs from the
    topic's complete round before. Only the changed rounds (a few of the day's) get the member
    arrays of their round and the one before, and are numbered into runs among themselves; only
    each run's two end rounds get their members' sets (``queues_moved``). ``stage`` stores the
    runs, which three parts read."""
    order = Window.partitionBy(*TOPIC_KEY).orderBy("ts")
    cid_hash = rounds_df.select(*GROUP_KEY, "ts", F.xxhash64("cid_all").alias("_cid_hash"))
    state = (assignment_fingerprints(rounds_df, observations_df)
             .where(F.col("_complete") == 1)
             .join(cid_hash, on=[*GROUP_KEY, "ts"], how="inner")
             .withColumn("prev_ts", F.lag("ts").over(order))
             .withColumn("_changed", F.lag("_fingerprint").over(order) != F.col("_fingerprint"))
             .withColumn("_cid_changed", F.lag("_cid_hash").over(order) != F.col("_cid_hash")))
    arrays = ("cid_all", "ids", "stale_ids", "stale_channel_ids", "unheard_ids", "subs")
    round_arrays = rounds_df.select(*GROUP_KEY, "ts", *arrays)
    previous = round_arrays.select(*GROUP_KEY, F.col("ts").alias("prev_ts"),
                                   *[F.col(c).alias(f"prev_{c}") for c in arrays])
    changed = (state.where(F.col("prev_ts").isNotNull()
                           & (F.col("_changed") | F.col("_cid_changed")))
               .select(*TOPIC_KEY, "ts", "prev_ts")
               .join(round_arrays, on=[*GROUP_KEY, "ts"], how="inner")
               .join(previous, on=[*GROUP_KEY, "prev_ts"], how="inner"))
    left = F.array_except(F.col("prev_ids"), F.col("ids"))
    joined = ((F.size(F.array_except(F.col("ids"), F.col("prev_ids"))) > 0)
              | (F.size("cid_all") > F.size("prev_cid_all")))
    sub_changed = changed_topics(F.col("subs"), F.col("prev_subs"))
    # ids still here with fewer channels listed: one of which had gone silent, the broker
    # expired a dead process's channel behind an id a restarted process kept; else it left
    # (unregistered, or unknown where the records carry no heartbeat times)
    entries = lambda arr, cid: F.size(F.filter(arr, lambda x: x == cid))  # noqa: E731
    dropped = F.filter(F.array_intersect("ids", "prev_ids"),
                       lambda cid: entries(F.col("prev_cid_all"), cid) > entries(F.col("cid_all"), cid))
    expired_channels = F.array_intersect(dropped, F.coalesce("prev_stale_channel_ids", _empty_ids()))
    left_channels = F.array_except(dropped, expired_channels)
    unheard = F.coalesce("prev_unheard_ids", _empty_ids())
    flagged = (number_flagged_rows(changed, TOPIC_KEY, rules.max_snapshot_gap_seconds)
               .withColumn("_left", left)
               .withColumn("_expired_channels", expired_channels)
               .withColumn("_left_channels", left_channels)
               .withColumn("_left_unheard", F.array_intersect(F.array_union(left, left_channels),
                                                              unheard))
               .withColumn("_expired", (F.size(F.array_intersect(
                   left, F.coalesce("prev_stale_ids", _empty_ids()))) > 0)
                   | (F.size("_expired_channels") > 0))
               .withColumn("_joined", F.coalesce(joined, F.lit(False)))
               .withColumn("_sub_changed", F.coalesce(sub_changed, F.lit(False))))
    runs = stage(flagged.groupBy(*RUN_KEY).agg(
        F.min("ts").alias("first_changed"),
        F.max("ts").alias("after_ts"),
        F.min_by("prev_ts", "ts").alias("before_ts"),
        F.min_by("prev_ids", "ts").alias("before_ids"),
        F.max_by("ids", "ts").alias("after_ids"),
        F.min_by("prev_stale_ids", "ts").alias("before_stale_ids"),
        F.max_by("stale_ids", "ts").alias("after_stale_ids"),
        F.size(F.min_by("prev_cid_all", "ts")).alias("clients_before"),
        F.size(F.max_by("cid_all", "ts")).alias("clients_after"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("_left")))).alias("left_ids"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("_expired_channels"))))
        .alias("expired_channel_ids"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("_left_channels"))))
        .alias("left_channel_ids"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("_left_unheard"))))
        .alias("left_unheard_ids"),
        F.max(F.col("_expired").cast("int")).alias("_expired"),
        F.max(F.col("_joined").cast("int")).alias("_joined"),
        F.max(F.col("_sub_changed").cast("int")).alias("_sub_changed")),
        "gold.rebalance_events.runs")
    moved = queues_moved(runs, observations_df)
    by_client = Window.partitionBy(*TOPIC_KEY, "client_id").orderBy("ts")
    logged = (observations_df.where(F.col("mq_all_size").isNotNull())
              .withColumn("_route", F.lag("mq_all_size").over(by_client) != F.col("mq_all_size"))
              .select(*TOPIC_KEY, F.col("ts").alias("_log_ts"), "_route"))
    timing = (runs.select(*RUN_KEY, "before_ts", "after_ts")
              .join(logged, on=TOPIC_KEY, how="inner")
              .where((F.col("_log_ts") > F.col("before_ts")) & (F.col("_log_ts") <= F.col("after_ts")))
              .groupBy(*RUN_KEY).agg(F.min("_log_ts").alias("_first_log"),
                                     F.max(F.coalesce(F.col("_route"), F.lit(False)).cast("int"))
                                     .alias("_route")))
    trigger = (F.when(F.col("_expired") == 1, F.lit("CLIENT_EXPIRED"))
               .when((F.size("left_ids") > 0) | (F.size("left_channel_ids") > 0),
                     F.lit("CLIENT_LEFT"))
               .when(F.col("_joined") == 1, F.lit("CLIENT_JOINED"))
               .when(F.col("_sub_changed") == 1, F.lit("SUBSCRIPTION_CHANGED"))
               .when(F.coalesce(F.col("_route"), F.lit(0)) == 1, F.lit("ROUTE_CHANGED"))
               .otherwise(F.lit("FLAPPING")))
    return (runs.join(moved, on=RUN_KEY, how="inner")
            .join(timing, on=RUN_KEY, how="left")
            .withColumn("trigger", trigger)
            .withColumn("ts", F.coalesce("_first_log", "first_changed"))
            .withColumn("evidence", F.concat(
                F.when(F.size("left_ids") > 0, F.concat(
                    F.array_join("left_ids", ", "),
                    F.when(F.col("_expired") == 1,
                           F.lit(" stopped heartbeating and was expired by the broker; "))
                    .when(F.size(F.array_except("left_ids", "left_unheard_ids")) == 0,
                          F.lit(f" left ({UNHEARD}); "))
                    .otherwise(F.lit(" unregistered (clean shutdown); "))))
                .otherwise(F.lit("")),
                F.when(F.size("left_channel_ids") > 0, F.concat(
                    F.lit("a channel behind "), F.array_join("left_channel_ids", ", "),
                    F.when(F.size(F.array_except("left_channel_ids", "left_unheard_ids")) == 0,
                           F.lit(f" left (a restart or reconnect that kept its id; {UNHEARD}); "))
                    .otherwise(F.lit(" unregistered while the id stayed; "))))
                .otherwise(F.lit("")),
                F.when(F.size("expired_channel_ids") > 0, F.concat(
                    F.lit("a dead channel behind "),
                    F.array_join("expired_channel_ids", ", "),
                    F.lit(" (a restart or reconnect that kept its id) stopped heartbeating and was "
                          "expired by the broker; ")))
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
    changes = ownership_changes(rounds, observations, rules, stage)
    days = members_df.select("date").distinct()
    events = (changes.unionByName(subscription_flapping(connections_df, rules))
              .join(days, on="date", how="inner"))
    return without_groups(events, excluded_groups(models_df)).select(*COLUMNS)
