"""gold.strategy_whatif: the day's real membership and route changes replayed under each strategy.

Per (group, topic) the day is cut into states: consecutive offsets snapshots with the same
``mq_all`` (the queues the broker reported for the topic), ``cid_all`` (live members, one entry
per process: the group-wide list RebalanceImpl allocates over, duplicates kept, facts §2.2) and
subscribers (members whose own subscriptions name the topic; unknown counts as subscribing).
Each distinct state is replayed once per strategy with the Spark replay transform
(:func:`jobs.replay.spark_replay.replay_snapshots`): AVG, AVG_BY_CIRCLE, CONSISTENT_HASH with 10
virtual nodes and, when every broker name carries a room (``room@broker``) and every client id
one (``room-…``, the vectors' resolver), MACHINE_ROOM_NEARBY-AVG. A member that does not
subscribe the topic never runs its allocation, so the queues handed to it stay unowned
(facts §4, the topicB case), whatever the strategy.

- ``rebalances``: state changes after which at least one queue has another owner set;
- ``queues_moved``: the sum over those changes of queues whose owner set differs;
- ``max_queues_per_client`` / ``min_queues_per_client``: over all states, the most and fewest
  queues a subscribing client is given;
- ``orphaned_queue_minutes``: Σ over states of queues nobody consumes × the state's minutes
  (from its first snapshot to the next state's, the last state to its last snapshot);
- ``max_client_load_share`` (DESIGN.md §5.2): the busiest client's share of the topic's messages
  of the day (gold.queue_load) under that strategy. A client's messages are, per state, those of
  the queues it is given, each queue's day total weighted by the state's part of the day's state
  minutes: exact when a queue's traffic is steady over the day, and a hot queue (a producer's
  key skew) weighs on whoever owns it whatever the strategy. Null when the topic got no message.
Snapshots without a live member are left out: no strategy changes anything there.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from jobs.lake import Stage, no_staging
from jobs.replay.spark_replay import broker_deploy_in, consumer_deploy_in, replay_snapshots, sort_cid_all, sort_mq_all
from jobs.rules.models import excluded_groups

COLUMNS = ["topic", "strategy", "rebalances", "queues_moved", "max_queues_per_client",
           "min_queues_per_client", "orphaned_queue_minutes", "max_client_load_share", "cluster",
           "group", "date"]
STRATEGIES = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH")
NEARBY = "MACHINE_ROOM_NEARBY-AVG"
VIRTUAL_NODES = 10
TOPIC_KEY = ["cluster", "group", "topic"]
RUN_KEY = [*TOPIC_KEY, "run"]
SNAPSHOT_KEY = [*TOPIC_KEY, "ts"]


def topic_snapshots(queue_offsets_df: DataFrame, member_context_df: DataFrame) -> DataFrame:
    """One row per (group, topic, offsets snapshot ``ts``): ``mq_all``, ``cid_all`` (sorted, one
    entry per process) and ``subscribers``, as the members saw it at that snapshot."""
    mq = F.struct("topic", "broker_name", "queue_id")
    queues = (queue_offsets_df.where(F.col("queue_id") >= 0)
              .groupBy(*TOPIC_KEY, "ts").agg(sort_mq_all(F.collect_list(mq)).alias("mq_all")))
    members = member_context_df.select("cluster", "group", "ts", "client_id", "processes",
                                       "topics")
    snapshots = (queues.join(members, on=["cluster", "group", "ts"], how="inner")
                 .groupBy(*TOPIC_KEY, "ts").agg(
                     F.first("mq_all").alias("mq_all"),
                     sort_cid_all(F.flatten(F.collect_list(
                         F.array_repeat("client_id", "processes")))).alias("cid_all"),
                     F.array_sort(F.collect_list(F.when(
                         F.col("topics").isNull() | F.array_contains("topics", F.col("topic")),
                         F.col("client_id")))).alias("subscribers")))
    return snapshots.where(F.size("cid_all") > 0)


def topic_states(queue_offsets_df: DataFrame, member_context_df: DataFrame,
                 stage: Stage = no_staging) -> DataFrame:
    """One row per (group, topic, run of equal snapshots): ``mq_all``, ``cid_all``,
    ``subscribers``, ``start``, ``minutes``, ``rooms_known``.

    Equal to ``states_of_snapshots(topic_snapshots(...))``, but the arrays are built only at
    snapshots where something may have changed (``change_candidates``): building them for every
    snapshot and comparing them as JSON cost most of the step's time and memory on Sail
    (benchmarks/RESULTS.md).
    ``stage(df, name)`` stores the candidates and their snapshots, each read twice.
    """
    candidates = stage(change_candidates(queue_offsets_df, member_context_df),
                       "gold.strategy_whatif.candidates")
    snapshots = topic_snapshots(
        queue_offsets_df.join(candidates.select(*SNAPSHOT_KEY), on=SNAPSHOT_KEY, how="left_semi"),
        member_context_df)
    return states_of_snapshots(stage(snapshots.join(candidates, on=SNAPSHOT_KEY, how="inner"),
                                     "gold.strategy_whatif.candidate_snapshots"), until="_until")


def change_candidates(queue_offsets_df: DataFrame, member_context_df: DataFrame) -> DataFrame:
    """``cluster, group, topic, ts, _until``: the snapshots whose ``mq_all``, ``cid_all`` or
    ``subscribers`` may differ from the topic's previous snapshot (the first one included), and
    the last snapshot ts before the next candidate: the snapshots in between equal it.

    A snapshot here is a (group, topic, ts) with queues and live members, before the
    ``cid_all`` filter of ``topic_snapshots``: an empty ``cid_all`` depends on the members only,
    so an unchanged snapshot shares its candidate's verdict. Only counts and windows, no arrays
    (``_change_counts``): the queue rows are compared per topic, the member rows (``processes``,
    ``topics``) per group, each along its own sequence of snapshots, and a snapshot is a
    candidate when either count of changes moved since the topic's previous snapshot. A member
    change marks every topic of its group and a change undone in between still counts: that
    costs only a few more arrays, as candidates are compared exactly (states_of_snapshots).
    """
    # each queue row's previous snapshot is silver's prev_ts (a window over every queue row cost
    # most of this step on Sail, issue #19); on the frame's first snapshot of a queue it may be
    # the previous day's, which no snapshot of the frame has: that snapshot is a candidate then,
    # as it is with a null (``_change_counts``: its smallest _prev is not the snapshot before)
    queues = (queue_offsets_df.where(F.col("queue_id") >= 0)
              .select(*SNAPSHOT_KEY, F.col("prev_ts").alias("_prev"))
              .transform(_change_counts(SNAPSHOT_KEY, "_queue_changes")))
    member = Window.partitionBy("cluster", "group", "client_id").orderBy("ts")
    same_member = (F.lag("processes").over(member).eqNullSafe(F.col("processes"))
                   & F.lag("topics").over(member).eqNullSafe(F.col("topics")))
    members = (member_context_df
               .select("cluster", "group", "ts",
                       F.when(same_member, F.lag("ts").over(member)).alias("_prev"))
               .transform(_change_counts(["cluster", "group", "ts"], "_member_changes")))
    topic = Window.partitionBy(*TOPIC_KEY).orderBy("ts")
    changed = (~F.lag("_queue_changes").over(topic).eqNullSafe(F.col("_queue_changes"))
               | ~F.lag("_member_changes").over(topic).eqNullSafe(F.col("_member_changes")))
    flagged = (queues.join(members, on=["cluster", "group", "ts"], how="inner")
               .withColumn("_changed", changed)
               .withColumn("_candidate_ts", F.max(F.when(F.col("_changed"), F.col("ts"))).over(
                   topic.rowsBetween(Window.unboundedPreceding, Window.currentRow))))
    return (flagged.groupBy(*TOPIC_KEY, F.col("_candidate_ts").alias("ts"))
            .agg(F.max("ts").alias("_until")))


def _change_counts(key: list[str], name: str):
    """Transform factory: rows (``key`` with ``ts``, and ``_prev``: when the same row was seen
    last, null if not the same) to one row per snapshot with ``name``, the running count of
    snapshots whose rows may differ from the previous snapshot's (``key`` minus ``ts``).

    Unchanged: every row was in the previous snapshot (the smallest and the largest ``_prev``
    are its ts) and that one had as many rows. The largest matters only for a row repeated
    within a snapshot (its twin's ``_prev`` is the snapshot itself): silver has none, but then
    the snapshot is marked rather than wrongly kept.
    """
    def transform(rows_df: DataFrame) -> DataFrame:
        order = Window.partitionBy(*[c for c in key if c != "ts"]).orderBy("ts")
        before = F.lag("ts").over(order)
        unchanged = ((F.col("_seen") == F.col("_n")) & (F.lag("_n").over(order) == F.col("_n"))
                     & (F.col("_first_prev") == before) & (F.col("_last_prev") == before))
        return (rows_df.groupBy(*key).agg(
                    F.count(F.lit(1)).alias("_n"), F.count("_prev").alias("_seen"),
                    F.min("_prev").alias("_first_prev"), F.max("_prev").alias("_last_prev"))
                .withColumn("_changed", F.when(unchanged, 0).otherwise(1))
                .select(*key, F.sum("_changed").over(
                    order.rowsBetween(Window.unboundedPreceding, Window.currentRow)).alias(name)))
    return transform


def states_of_snapshots(snapshots: DataFrame, until: str = "ts") -> DataFrame:
    """``topic_snapshots`` rows collapsed into runs of consecutive equal snapshots (states).

    ``until``: the column holding the last ts each row stands for (``ts`` itself when every
    snapshot is a row; ``_until`` for change candidates). Snapshots are compared by a SHA-256 of
    their JSON, as replay_snapshots keys its states, so the windows sort narrow rows, and each
    run's arrays are joined back from its first snapshot: sorting the arrays and their JSON, or
    aggregating the arrays (Sail charges each kept array with the whole batch it came from), ran
    out of Sail's memory pool on a large day."""
    order = Window.partitionBy(*TOPIC_KEY).orderBy("ts")
    key = F.sha2(F.to_json(F.struct("mq_all", "cid_all", "subscribers")), 256)
    starts = (snapshots.select(*SNAPSHOT_KEY, F.col(until).alias("_until"), key.alias("_key"))
              .withColumn("_new", F.when(F.lag("_key").over(order).eqNullSafe(F.col("_key")), 0)
                          .otherwise(1))
              .withColumn("run", F.sum("_new").over(
                  order.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
              .withColumn("last", F.max("_until").over(Window.partitionBy(*RUN_KEY)))
              .where(F.col("_new") == 1)
              .select(*SNAPSHOT_KEY, "run", "last"))
    runs = (starts.join(snapshots.select(*SNAPSHOT_KEY, "mq_all", "cid_all", "subscribers"),
                        on=SNAPSHOT_KEY, how="inner")
            .select(*RUN_KEY, F.col("ts").alias("start"), "last", "mq_all", "cid_all",
                    "subscribers"))
    by_run = Window.partitionBy(*TOPIC_KEY).orderBy("run")
    end = F.coalesce(F.lead("start").over(by_run), F.col("last"))
    rooms = (F.forall("mq_all", lambda q: broker_deploy_in(q) != "")
             & F.forall("cid_all", lambda c: consumer_deploy_in(c) != ""))
    whole_topic = Window.partitionBy(*TOPIC_KEY)
    return (runs.withColumn("minutes",
                            (F.unix_millis(end) - F.unix_millis("start")) / F.lit(60000.0))
            .withColumn("rooms_known", F.min(rooms.cast("int")).over(whole_topic) == 1))


def replay_states(states_df: DataFrame) -> DataFrame:
    """Per (state, strategy, subscribing client): ``allocated`` (RocketMQ's answer, [] on error).
    Each distinct (strategy, mq_all, cid_all) is replayed once (replay_snapshots)."""
    strategies = F.when(F.col("rooms_known"), F.array(*[F.lit(s) for s in (*STRATEGIES, NEARBY)])) \
        .otherwise(F.array(*[F.lit(s) for s in STRATEGIES]))
    calls = (states_df
             .select(*RUN_KEY, "mq_all", "cid_all", "subscribers",
                     F.explode(strategies).alias("strategy"))
             .withColumn("virtual_nodes", F.when(F.col("strategy") == "CONSISTENT_HASH",
                                                 F.lit(VIRTUAL_NODES)).cast("int"))
             .withColumn("current_cid", F.explode("subscribers")))
    return (replay_snapshots(calls, sort_inputs=False)
            .select(*RUN_KEY, "strategy", "current_cid",
                    F.coalesce("allocated", F.array().cast(calls.schema["mq_all"].dataType))
                    .alias("allocated")))


def max_client_load_shares(allocations_df: DataFrame, states_df: DataFrame,
                           queue_load_df: DataFrame) -> DataFrame:
    """``cluster, group, topic, strategy, max_client_load_share`` (module docstring)."""
    queue = ["cluster", "topic", "broker_name", "queue_id"]
    day_messages = queue_load_df.groupBy(*queue).agg(F.sum("messages_in").alias("_messages"))
    topic_messages = day_messages.groupBy("cluster", "topic").agg(F.sum("_messages").alias("_topic"))
    total = F.sum("minutes").over(Window.partitionBy(*TOPIC_KEY))
    weights = states_df.select(*RUN_KEY, F.when(total > 0, F.col("minutes") / total)
                               .otherwise(F.lit(1.0) / F.count(F.lit(1)).over(Window.partitionBy(*TOPIC_KEY)))
                               .alias("_weight"))
    run_strategy = [*RUN_KEY, "strategy"]
    per_run = (allocations_df
               .select(*run_strategy, "current_cid", F.explode("allocated").alias("_q"))
               .select(*run_strategy, "current_cid", F.col("_q.broker_name").alias("broker_name"),
                       F.col("_q.queue_id").alias("queue_id"))
               .join(day_messages, on=queue, how="inner")
               .groupBy(*run_strategy, "current_cid").agg(F.sum("_messages").alias("_messages")))
    per_client = (per_run.join(weights, on=RUN_KEY, how="inner")
                  .groupBy(*TOPIC_KEY, "strategy", "current_cid")
                  .agg(F.sum(F.col("_messages") * F.col("_weight")).alias("_messages")))
    return (per_client.join(topic_messages, on=["cluster", "topic"], how="inner")
            .groupBy(*TOPIC_KEY, "strategy")
            .agg(F.max(F.when(F.col("_topic") > 0, F.col("_messages") / F.col("_topic")))
                 .cast("double").alias("max_client_load_share")))


def build_strategy_whatif(queue_offsets_df: DataFrame, member_context_df: DataFrame,
                          models_df: DataFrame | None = None,
                          stage: Stage = no_staging,
                          queue_load_df: DataFrame | None = None) -> DataFrame:
    """silver.queue_offsets + silver.member_context (+ ``jobs.rules.models.consumer_models`` to
    leave out broadcasting and pop groups, which own no queue exclusively; + gold.queue_load for
    ``max_client_load_share``, null without it) in, gold.strategy_whatif out.

    ``stage(df, name)`` stores the intermediates read several times (states, allocations):
    Sail recomputes a frame for every reference."""
    offsets = queue_offsets_df
    if models_df is not None:
        offsets = offsets.join(excluded_groups(models_df), on=["cluster", "group"],
                               how="left_anti")
    states = stage(topic_states(offsets, member_context_df, stage), "gold.strategy_whatif.states")
    allocations = stage(replay_states(states), "gold.strategy_whatif.allocations")
    run_strategy = [*RUN_KEY, "strategy"]
    owners = (allocations.select(*run_strategy, "current_cid",
                                 F.explode("allocated").alias("_q"))
              .groupBy(*run_strategy, F.col("_q.broker_name").alias("broker_name"),
                       F.col("_q.queue_id").alias("queue_id"))
              .agg(F.array_join(F.array_sort(F.collect_list("current_cid")), ",")
                   .alias("owners")))
    per_run = (allocations.groupBy(*run_strategy).agg(
        F.max(F.size("allocated")).alias("_max"), F.min(F.size("allocated")).alias("_min"))
        .join(owners.groupBy(*run_strategy).agg(F.count(F.lit(1)).alias("_owned")),
              on=run_strategy, how="left")
        .join(states.select(*RUN_KEY, "minutes", F.size("mq_all").alias("_queues")),
              on=RUN_KEY, how="inner")
        .withColumn("_orphan_minutes",
                    (F.col("_queues") - F.coalesce("_owned", F.lit(0))) * F.col("minutes")))
    # Transition k compares run k ("after") with run k - 1 ("before").
    sides = (owners.select(*run_strategy, "broker_name", "queue_id", F.col("owners").alias("_a"),
                           F.lit(None).cast("string").alias("_b"))
             .unionByName(owners.select(*TOPIC_KEY, (F.col("run") + 1).alias("run"), "strategy",
                                        "broker_name", "queue_id",
                                        F.lit(None).cast("string").alias("_a"),
                                        F.col("owners").alias("_b"))))
    transitions = (sides.groupBy(*run_strategy, "broker_name", "queue_id")
                   .agg(F.max("_a").alias("_a"), F.max("_b").alias("_b"))
                   .where(F.col("run") > 1)
                   .where(~F.coalesce("_a", F.lit("")).eqNullSafe(F.coalesce("_b", F.lit(""))))
                   .groupBy(*run_strategy).agg(F.count(F.lit(1)).alias("_moved"))
                   .join(per_run.select(*run_strategy), on=run_strategy, how="inner"))
    day = F.to_date(F.min("start"))
    dates = states.groupBy(*TOPIC_KEY).agg(day.alias("date"))
    moved = transitions.groupBy(*TOPIC_KEY, "strategy").agg(
        F.count(F.lit(1)).alias("rebalances"), F.sum("_moved").alias("queues_moved"))
    if queue_load_df is not None:
        load = max_client_load_shares(allocations, states, queue_load_df)
    else:
        load = allocations.select(*TOPIC_KEY, "strategy",
                                  F.lit(None).cast("double").alias("max_client_load_share")).limit(0)
    return (per_run.groupBy(*TOPIC_KEY, "strategy").agg(
                F.max("_max").cast("int").alias("max_queues_per_client"),
                F.min("_min").cast("int").alias("min_queues_per_client"),
                F.round(F.sum("_orphan_minutes"), 3).alias("orphaned_queue_minutes"))
            .join(moved, on=[*TOPIC_KEY, "strategy"], how="left")
            .join(load, on=[*TOPIC_KEY, "strategy"], how="left")
            .join(dates, on=TOPIC_KEY, how="inner")
            .select("topic", "strategy",
                    F.coalesce("rebalances", F.lit(0)).cast("int").alias("rebalances"),
                    F.coalesce("queues_moved", F.lit(0)).cast("long").alias("queues_moved"),
                    "max_queues_per_client", "min_queues_per_client", "orphaned_queue_minutes",
                    "max_client_load_share", "cluster", "group", "date"))
