"""gold.producer_findings: where producers' queue choice breaks the even spread (DESIGN.md §5.2).

Default sends go round robin over the publish list, so every queue of a topic gets the same
share (rocketmq-facts.md §7). Found here, from the broker offsets in silver.queue_offsets only:
- ``HOT_QUEUE``: over ≥ ``hot_min_minutes`` consecutive minutes one queue of a topic with ≥ 4
  queues takes ≥ ``hot_queue_factor`` × the even share (1 / queues) of ≥ ``min_messages``
  messages — typical of ``SelectMessageQueueByHash`` with skewed keys. ``WARN`` when a consuming
  group's lag on that queue grows over the window (its peak above its lag at the window's start)
  while no other queue of the topic grows by more than ``lag_growth_noise`` × that growth (the
  owner cannot keep up with the hot queue), else ``INFO`` (:func:`lag_growth_groups`).
- ``BROKER_STARVED``: every queue of one broker of a topic gets nothing for ≥
  ``starved_min_minutes`` while each other broker of the topic keeps receiving (≥ half its median
  per-minute rate of the day, a median of ≥ 1 message a minute), and the starved broker received
  messages earlier that day: producers avoid it (latency fault tolerance after failed or slow
  sends, rocketmq-facts.md §7) or its write permission is off. ``INFO``; ``WARN`` from
  ``starved_warn_minutes``. Windows of the broker's master being down (§5.3) are not starvation:
  they are left out when the caller passes them.
- ``ORDER_AT_RISK``: a topic consumed by an orderly group (running_info ``PROP_CONSUMEORDERLY=true``)
  loses a broker from the publish list — its master down (DESIGN.md §5.3) or its write permission
  off (a route line whose perm lacks the write bit, :mod:`jobs.rules.route_lines`). The hash
  selector's keys of that broker's queues go to other queues meanwhile (the list is shorter), so
  per-key order is not guaranteed in that window; a route with ``orderTopicConf`` fails those sends
  instead, so it is left out. Latency-fault avoidance never causes it (a send with a selector
  bypasses it), so a starved broker alone is no evidence. ``WARN``; ``groups`` are the orderly ones.
- ``QUEUE_COUNT_SKEW``: the brokers of a topic that received messages expose different queue
  counts: round robin gives each queue the same share, so the brokers get uneven load. ``INFO``,
  once per topic and day.
``%RETRY%`` and ``%DLQ%`` topics get no producer finding. ``groups`` are the groups with offsets on
the topic that day (the broker reports consume stats only for topics a group consumes, DESIGN.md §5).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, StringType

from jobs.columns import sorted_set
from jobs.gold.queue_load import TOPIC_QUEUE, queue_intervals
from jobs.lake import Stage, no_staging
from jobs.rules.episodes import minutes_between, number_flagged_rows, with_episode_id
from jobs.settings import DetectionSettings, ProducerSettings
from jobs.time_joins import join_between, time_bucket

FINDING_COLUMNS = ["date", "cluster", "topic", "broker_name", "queue_id", "finding", "first_seen", "last_seen",
                   "minutes", "share", "even_share", "groups", "evidence", "severity"]
MIN_HOT_QUEUE_TOPIC_QUEUES = 4
_DEFAULTS = ProducerSettings()
_DETECTION_DEFAULTS = DetectionSettings()


@dataclass(frozen=True)
class ProducerRules:
    """DESIGN.md §5.2 thresholds (conf ``[producer]``) and the snapshot gap that ends a window."""

    min_messages: int = _DEFAULTS.min_messages
    hot_queue_factor: float = _DEFAULTS.hot_queue_factor
    hot_min_minutes: int = _DEFAULTS.hot_min_minutes
    starved_min_minutes: int = _DEFAULTS.starved_min_minutes
    starved_warn_minutes: int = _DEFAULTS.starved_warn_minutes
    max_snapshot_gap_seconds: int = _DETECTION_DEFAULTS.max_snapshot_gap_seconds
    lag_growth_noise: float = _DEFAULTS.lag_growth_noise


def producer_rules(settings) -> ProducerRules:
    """The rules from ``settings.producer`` (conf ``[producer]``) and ``detection.max_snapshot_gap_seconds``."""
    p = settings.producer
    return ProducerRules(p.min_messages, p.hot_queue_factor, p.hot_min_minutes, p.starved_min_minutes,
                         p.starved_warn_minutes, settings.detection.max_snapshot_gap_seconds,
                         p.lag_growth_noise)


def is_producer_topic(topic: Column) -> Column:
    """Retry and dead-letter topics are written by the broker on consumers' behalf, not by producers."""
    return ~(topic.startswith("%RETRY%") | topic.startswith("%DLQ%"))


def consuming_groups(queue_offsets_df: DataFrame) -> DataFrame:
    """``cluster, topic, groups``: the sorted groups with offsets rows for the topic."""
    return (queue_offsets_df.groupBy("cluster", "topic")
            .agg(sorted_set("group").alias("groups")))


def with_consuming_groups(findings_df: DataFrame, queue_offsets_df: DataFrame) -> DataFrame:
    """``findings_df`` (``FINDING_COLUMNS`` but ``groups``) with ``groups``: ``consuming_groups``,
    empty for a topic without offsets rows. Joined once to the union of the finding kinds: once
    per kind, each join aggregated the batch's offsets again."""
    found = findings_df.join(consuming_groups(queue_offsets_df), ["cluster", "topic"], "left")
    return found.withColumn(
        "groups", F.coalesce(F.col("groups"), F.array().cast(ArrayType(StringType())))
    ).select(*FINDING_COLUMNS)


def _percent(value: Column) -> Column:
    return F.format_string("%.1f%%", value * 100)


def _hhmm(ts: Column) -> Column:
    return F.date_format(ts, "HH:mm")


# --- HOT_QUEUE ------------------------------------------------------------------------------------

def with_trailing_share(intervals_df: DataFrame, window_minutes: int,
                        queues_df: DataFrame | None = None) -> DataFrame:
    """Add, per interval, the queue's and the topic's messages over the intervals ending in the
    trailing ``window_minutes`` (``_q_sum``, ``_t_sum``), the start of the earliest of them
    (``_span_start``), running totals (``_q_cum``, ``_t_cum``) and, at the snapshot minute, the
    queues of its brokers that received anything in the trailing window (``_active_queues``, each
    queue once however often the minute snapshots it): a broker that gets nothing (shunned,
    write permission off, master down) is out of the publish list, so the others' even share is
    larger.
    Assumes a topic's queues are snapshotted within the same minute, as one collector pass does,
    and non-null keys and ``ts`` (bronze requires them): the joins back would drop a row without.

    The topic's and the brokers' sums run over one row per broker and snapshot time, joined back:
    a window over every queue row sorted the topic's rows once per window (a third of the
    producer findings at M, benchmarks/RESULTS.md). ``queues_df`` (``TOPIC_QUEUE`` keys): only
    these queues' rows are returned, their topic sums still taken over every row."""
    width = window_minutes * 60_000

    def trailing(window):
        return window.rangeBetween(-(width - 1), 0)

    def so_far(window):
        return window.rangeBetween(Window.unboundedPreceding, 0)

    rows = intervals_df.withColumn("_ts_ms", F.unix_millis(F.col("ts")))
    queue = Window.partitionBy(*TOPIC_QUEUE).orderBy("_ts_ms")
    topic = Window.partitionBy("cluster", "topic").orderBy("_ts_ms")
    broker = Window.partitionBy("cluster", "topic", "broker_name").orderBy("_ts_ms")
    per_broker = (rows.groupBy("cluster", "topic", "broker_name", "_ts_ms")
                  .agg(F.sum("messages_in").alias("_in"), F.count("*").alias("_n"),
                       F.date_trunc("minute", F.max("ts")).alias("_minute"))
                  .withColumn("_b_sum", F.sum("_in").over(trailing(broker))))
    # a broker's queues in a minute: the most one of its snapshots in that minute holds, so a
    # collector that polls twice a minute does not count every queue twice
    active_per_minute = (per_broker
                         .groupBy("cluster", "topic", "broker_name", "_minute")
                         .agg(F.max(F.when(F.col("_b_sum") > 0, F.col("_n")).otherwise(0)).alias("_queues"))
                         .groupBy("cluster", "topic", "_minute")
                         .agg(F.sum("_queues").alias("_active_queues")))
    active = (per_broker.select("cluster", "topic", "broker_name", "_ts_ms", "_minute")
              .join(active_per_minute, ["cluster", "topic", "_minute"])
              .drop("_minute"))
    per_topic = (per_broker.groupBy("cluster", "topic", "_ts_ms").agg(F.sum("_in").alias("_in"))
                 .select("cluster", "topic", "_ts_ms",
                         F.sum("_in").over(trailing(topic)).alias("_t_sum"),
                         F.sum("_in").over(so_far(topic)).alias("_t_cum")))
    if queues_df is not None:
        rows = rows.join(queues_df.select(*TOPIC_QUEUE), on=TOPIC_QUEUE, how="left_semi")
    return (rows
            .withColumn("_q_sum", F.sum("messages_in").over(trailing(queue)))
            .withColumn("_span_start", F.min("prev_ts").over(trailing(queue)))
            .withColumn("_q_cum", F.sum("messages_in").over(so_far(queue)))
            .join(per_topic, ["cluster", "topic", "_ts_ms"])
            .join(active, ["cluster", "topic", "broker_name", "_ts_ms"]))


def possibly_hot_queues(intervals_df: DataFrame, window_minutes: int, factor: float) -> DataFrame:
    """``TOPIC_QUEUE`` of the queues that can be hot at some snapshot (``hot_queue_windows``):
    a necessary test on quarter-window buckets, by aggregates only, so that the trailing windows
    run over these queues' rows alone (a handful of a large day's; those windows were half of
    the producer findings at M, benchmarks/RESULTS.md).

    With buckets of a quarter window ``B``, the trailing window ``(t − 4B, t]`` of a snapshot in
    bucket ``b`` lies within buckets ``b−4 … b`` and holds buckets ``b−3 … b−1`` whole. So the
    queue's trailing sum is at most ``Q5`` (its messages in ``b−4 … b``), the topic's at least
    ``T3`` (the topic's in ``b−3 … b−1``), and the active queues at most ``N``, the most interval
    rows the topic has in one minute (``with_trailing_share`` counts no more). A hot
    snapshot has ``Q ≥ factor / active × T`` with ``Q > 0``, hence ``Q5 > 0`` and
    ``Q5 × N ≥ factor × T3``; a queue where that fails in every bucket it has rows in is never
    hot. A hot snapshot's trailing intervals also reach back a whole window (from a ``prev_ts``
    at or before ``t − 4B``), so its bucket is at least 4 after the bucket of the queue's first
    ``prev_ts``: the start of the data, where ``T3`` is short, is no candidate. Messages in are
    never negative (``queue_intervals``)."""
    bucket_ms = window_minutes * 15_000
    topic = ["cluster", "topic"]
    per_queue = (intervals_df.groupBy(*TOPIC_QUEUE, time_bucket(F.col("ts"), bucket_ms).alias("_b"))
                 .agg(F.sum("messages_in").alias("_q")))
    first = intervals_df.groupBy(*TOPIC_QUEUE).agg(
        time_bucket(F.min("prev_ts"), bucket_ms).alias("_first"))
    # each bucket's sum offered to the buckets whose windows count it
    q5 = (per_queue.select(*TOPIC_QUEUE, "_q", F.explode(F.sequence(
        F.col("_b"), F.col("_b") + 4)).alias("_at"))
        .groupBy(*TOPIC_QUEUE, "_at").agg(F.sum("_q").alias("_q5")))
    t3 = (per_queue.groupBy(*topic, "_b").agg(F.sum("_q").alias("_t"))
          .select(*topic, "_t", F.explode(F.sequence(F.col("_b") + 1, F.col("_b") + 3)).alias("_at"))
          .groupBy(*topic, "_at").agg(F.sum("_t").alias("_t3")))
    most_per_minute = (intervals_df.groupBy(*topic, F.date_trunc("minute", "ts").alias("_m"))
                       .agg(F.count(F.lit(1)).alias("_rows"))
                       .groupBy(*topic).agg(F.max("_rows").alias("_n")))
    # slack for rounding: the hot test divides in double precision
    bound = F.lit(factor * (1 - 1e-9)) * F.coalesce("_t3", F.lit(0))
    possible = ((F.col("_at") >= F.col("_first") + 4) & (F.col("_q5") > 0)
                & (F.col("_q5") * F.col("_n") >= bound))
    return (per_queue.select(*TOPIC_QUEUE, F.col("_b").alias("_at"))
            .join(q5, on=[*TOPIC_QUEUE, "_at"], how="inner")
            .join(t3, on=[*topic, "_at"], how="left")
            .join(most_per_minute, on=topic, how="inner")
            .join(first, on=TOPIC_QUEUE, how="inner")
            .where(possible)
            .select(*TOPIC_QUEUE).distinct())


def hot_episodes(hot_df: DataFrame, max_gap_seconds: int) -> DataFrame:
    """The hot snapshots ``hot_df`` (interval rows, each with its queue's previous snapshot
    ``prev_ts``, as ``queue_intervals`` gives) numbered into ``_episode`` among themselves
    (``number_flagged_rows``)."""
    return number_flagged_rows(hot_df, TOPIC_QUEUE, max_gap_seconds)


def hot_queue_windows(intervals_df: DataFrame, rules: ProducerRules, *,
                      every_queue: bool = False) -> DataFrame:
    """Windows of a queue whose trailing ``hot_min_minutes`` share stays ≥ factor × even share.

    A snapshot is hot when the intervals ending in the trailing window span the whole window and
    the queue's share of the topic's messages over them is ≥ ``hot_queue_factor / active queues``
    (≥ 4 of them; see :func:`with_trailing_share`).
    Consecutive hot snapshots make one window, from the start of the first one's trailing window
    to the last snapshot; it is kept when the topic received ≥ ``min_messages`` in it and the
    queue's share over the whole window still passes. Returns ``date, cluster, topic,
    broker_name, queue_id, first_seen, last_seen, minutes, share, even_share, queue_messages,
    topic_messages``. The trailing windows run over the queues that can be hot
    (``possibly_hot_queues``), or ``every_queue``: the plain reading the tests compare with.
    """
    width_ms = rules.hot_min_minutes * 60_000
    produced = intervals_df.where(is_producer_topic(F.col("topic")))
    queues = (None if every_queue
              else possibly_hot_queues(produced, rules.hot_min_minutes, rules.hot_queue_factor))
    shared = with_trailing_share(produced, rules.hot_min_minutes, queues)
    threshold = F.when(F.col("_active_queues") > 0, F.lit(rules.hot_queue_factor) / F.col("_active_queues"))
    # no division where the topic got nothing: Sail evaluates both sides of "&" (ANSI: x / 0 fails)
    trailing_share = F.when(F.col("_t_sum") > 0, F.col("_q_sum") / F.col("_t_sum"))
    hot = ((F.col("_active_queues") >= MIN_HOT_QUEUE_TOPIC_QUEUES)
           & (F.col("_ts_ms") - F.unix_millis(F.col("_span_start")) >= width_ms)
           & F.coalesce(trailing_share >= threshold, F.lit(False)))
    row = F.struct("ts", "_span_start", "_q_sum", "_t_sum", "_q_cum", "_t_cum")
    windows = (hot_episodes(shared.where(F.coalesce(hot, F.lit(False))), rules.max_snapshot_gap_seconds)
               .groupBy(*TOPIC_QUEUE, "_episode")
               .agg(F.max("date").alias("date"), F.min("_active_queues").alias("_queues"),
                    # by ts, unique per queue: a min/max of the struct itself is slow on Sail
                    F.min_by(row, "ts").alias("_first"), F.max_by(row, "ts").alias("_last")))
    queue_messages = F.col("_last._q_cum") - F.col("_first._q_cum") + F.col("_first._q_sum")
    topic_messages = F.col("_last._t_cum") - F.col("_first._t_cum") + F.col("_first._t_sum")
    even_share = F.lit(1.0) / F.col("_queues")  # the largest even share of the window: the strictest test
    return (windows
            .select("date", *TOPIC_QUEUE,
                    F.col("_first._span_start").alias("first_seen"), F.col("_last.ts").alias("last_seen"),
                    minutes_between(F.col("_first._span_start"), F.col("_last.ts")).alias("minutes"),
                    F.when(topic_messages > 0, queue_messages / topic_messages).cast("double").alias("share"),
                    even_share.cast("double").alias("even_share"),
                    queue_messages.cast("long").alias("queue_messages"),
                    topic_messages.cast("long").alias("topic_messages"))
            .where((F.col("topic_messages") >= rules.min_messages)
                   & (F.col("share") >= F.col("even_share") * rules.hot_queue_factor)))


def lag_growth_groups(windows_df: DataFrame, queue_offsets_df: DataFrame, noise: float) -> DataFrame:
    """Per hot window (``TOPIC_QUEUE``, ``first_seen``, ``last_seen``), ``lagging_groups``: the
    consuming groups (``queue_offsets_df``: ``cluster, topic, group, broker_name, queue_id, ts,
    lag``) that fall behind on the hot queue alone (DESIGN.md §5.2).

    A queue's growth over the window is its peak lag in [first_seen, last_seen] less its lag at
    the window's first snapshot: read at the two ends only, the growth missed a backlog that
    built up and drained inside the window, and the ends may lie up to ``hot_min_minutes`` away
    from the skew. A group falls behind when its hot queue grows (> 0) while no other queue of
    the topic grows by more than ``noise`` × that growth. Healthy lags are never flat: the broker
    shows the commit the owner persisted up to 5 s ago while producers keep writing
    (RemoteBrokerOffsetStore, rocketmq-facts.md §5.4), so they wobble by tens of messages between
    snapshots, and a saturated owner's other queues settle at a higher queueing level. Judged as
    an exact "no other queue grew", one wobble among several queues kept a hot queue whose lag
    rose by orders of magnitude at ``INFO``. A snapshot without a lag (null) is no evidence, and a
    group with no lag on any other queue of the topic cannot show that the hot queue alone grows."""
    offsets = queue_offsets_df.where(F.col("lag").isNotNull()).select(
        "cluster", "topic", "group", F.col("broker_name").alias("_broker"), F.col("queue_id").alias("_queue"),
        F.col("ts").alias("_ts"), "lag")
    key = [*TOPIC_QUEUE, "first_seen"]
    # a window (≥ 60 min) meets only the offsets of the quarter hours it spans: joined on the
    # topic alone, every window met all of its topic's rows of the day. The start lag by min_by
    # (silver.queue_offsets has one row per group, queue and snapshot): a min of a struct is
    # slow on Sail
    joined = join_between(windows_df.select(*key, "last_seen"), offsets, ["cluster", "topic"],
                          "first_seen", "last_seen", "_ts", 15 * 60)
    per_queue = (joined.groupBy(*key, "group", "_broker", "_queue")
                 .agg(F.min_by("lag", "_ts").alias("_start"), F.max("lag").alias("_peak"))
                 .withColumn("_growth", F.col("_peak") - F.col("_start"))
                 .withColumn("_is_hot", (F.col("_broker") == F.col("broker_name"))
                             & (F.col("_queue") == F.col("queue_id"))))
    per_group = (per_queue.groupBy(*key, "group")
                 .agg(F.max(F.when(F.col("_is_hot"), F.col("_growth"))).alias("_hot_growth"),
                      F.max(F.when(~F.col("_is_hot"), F.col("_growth"))).alias("_other_growth")))
    lagging = (F.col("_hot_growth") > 0) & (F.col("_other_growth") <= F.lit(noise) * F.col("_hot_growth"))
    return (per_group.where(lagging).groupBy(*key)
            .agg(F.array_sort(F.collect_list("group")).alias("lagging_groups")))


def build_hot_queues(intervals_df: DataFrame, queue_offsets_df: DataFrame, rules: ProducerRules,
                     stage: Stage = no_staging) -> DataFrame:
    """HOT_QUEUE rows of gold.producer_findings (module docstring) but ``groups``
    (``with_consuming_groups``). ``stage`` stores the hot windows, which the lag growth reads and
    is joined back to (unstaged, computed twice)."""
    windows = stage(hot_queue_windows(intervals_df, rules), "gold.hot_queue_windows")
    key = [*TOPIC_QUEUE, "first_seen"]
    found = windows.join(lag_growth_groups(windows, queue_offsets_df, rules.lag_growth_noise), key, "left")
    lagging = F.coalesce(F.col("lagging_groups"), F.array().cast(ArrayType(StringType())))
    evidence = F.concat(
        F.format_string("queue %s/%d of %s took %s of the topic's %d messages from %s to %s UTC (%.0f min), "
                        "%.1fx the even share of %s: ", F.col("broker_name"), F.col("queue_id"), F.col("topic"),
                        _percent(F.col("share")), F.col("topic_messages"), _hhmm(F.col("first_seen")),
                        _hhmm(F.col("last_seen")), F.col("minutes"), F.col("share") / F.col("even_share"),
                        _percent(F.col("even_share"))),
        F.lit("typical of SelectMessageQueueByHash with skewed keys: the key distribution, not the consumer, "
              "is the cause"),
        F.when(F.size(lagging) > 0, F.concat(F.lit("; lag grew on this queue only for "),
                                            F.array_join(lagging, ", "))).otherwise(F.lit("")))
    return found.select(
        "date", "cluster", "topic", "broker_name", F.col("queue_id").cast("int").alias("queue_id"),
        F.lit("HOT_QUEUE").alias("finding"), "first_seen", "last_seen", "minutes", "share", "even_share",
        evidence.alias("evidence"),
        F.when(F.size(lagging) > 0, F.lit("WARN")).otherwise(F.lit("INFO")).alias("severity"))


# --- BROKER_STARVED --------------------------------------------------------------------------------

def broker_minutes(intervals_df: DataFrame) -> DataFrame:
    """Per topic, broker and snapshot minute: ``messages`` (all its queues), the interval
    (``prev_ts`` → ``ts``) and ``rate`` (messages a minute over it)."""
    per_minute = (intervals_df.where(is_producer_topic(F.col("topic")))
                  .groupBy("cluster", "topic", "broker_name", F.date_trunc("minute", "ts").alias("minute"))
                  .agg(F.sum("messages_in").alias("messages"), F.min("prev_ts").alias("prev_ts"),
                       F.max("ts").alias("ts"), F.max("date").alias("date"),
                       F.countDistinct("queue_id").alias("queues")))
    minutes = minutes_between(F.col("prev_ts"), F.col("ts"))
    return per_minute.withColumn("rate", F.when(minutes > 0, F.col("messages") / minutes))


def with_median_rate(minutes_df: DataFrame) -> DataFrame:
    """Add ``median_rate``: the exact median of the broker's per-minute rates of the day (by rank,
    the same on every engine, unlike percentile_approx)."""
    broker = ["cluster", "topic", "broker_name"]
    ranked = (minutes_df
              .withColumn("_rank", F.row_number().over(Window.partitionBy(*broker).orderBy("rate", "ts")))
              .withColumn("_n", F.count("*").over(Window.partitionBy(*broker))))
    middle = (F.col("_rank") == F.floor((F.col("_n") + 1) / 2)) | (F.col("_rank") == F.ceil((F.col("_n") + 1) / 2))
    median = ranked.where(middle).groupBy(*broker).agg(F.avg("rate").alias("median_rate"))
    return minutes_df.join(median, broker, "left")


def starved_broker_windows(intervals_df: DataFrame, rules: ProducerRules) -> DataFrame:
    """Windows in which one broker of a topic gets nothing while every other one keeps its pace."""
    broker = ["cluster", "topic", "broker_name"]
    rated = with_median_rate(broker_minutes(intervals_df.where(F.col("prev_ts").isNotNull())))
    keeps_pace = (F.col("median_rate") >= 1) & (F.col("rate") >= F.col("median_rate") / 2)
    same_minute = Window.partitionBy("cluster", "topic", "minute")
    earlier = Window.partitionBy(*broker).orderBy("ts").rowsBetween(Window.unboundedPreceding, -1)
    flagged = (rated
               .withColumn("_brokers", F.count("*").over(same_minute))
               .withColumn("_keeping_pace", F.sum(F.when(keeps_pace, 1).otherwise(0)).over(same_minute))
               .withColumn("_received_before", F.coalesce(F.sum("messages").over(earlier), F.lit(0)))
               .withColumn("_topic_queues", F.sum("queues").over(same_minute)))
    starved = ((F.col("messages") == 0) & (F.col("_brokers") >= 2)
               & (F.col("_keeping_pace") == F.col("_brokers") - 1) & (F.col("_received_before") > 0))
    episodes = (with_episode_id(flagged, broker, starved, rules.max_snapshot_gap_seconds)
                .where("_flag")
                .groupBy(*broker, "_episode")
                .agg(F.max("date").alias("date"), F.min("prev_ts").alias("first_seen"), F.max("ts").alias("last_seen"),
                     F.max("_received_before").alias("received_before"),
                     F.max(F.col("queues") / F.col("_topic_queues")).alias("even_share")))
    return (episodes
            .withColumn("minutes", minutes_between(F.col("first_seen"), F.col("last_seen")))
            .where(F.col("minutes") >= rules.starved_min_minutes)
            .drop("_episode"))


def build_starved_brokers(intervals_df: DataFrame, rules: ProducerRules,
                          master_down_df: DataFrame | None = None) -> DataFrame:
    """BROKER_STARVED rows (module docstring). ``master_down_df`` (``cluster, broker_name,
    down_from, down_to``; a null ``down_to``: not back by the day's end), when given, removes the
    windows that overlap the broker's master-down window: that is BROKER_MASTER_DOWN (DESIGN.md
    §5.3), not producers avoiding the broker. No ``groups`` (``with_consuming_groups``)."""
    windows = starved_broker_windows(intervals_df, rules)
    if master_down_df is not None:
        down = master_down_df.select("cluster", "broker_name", "down_from", "down_to")
        overlap = ((windows["cluster"] == down["cluster"]) & (windows["broker_name"] == down["broker_name"])
                   & (down["down_to"].isNull() | (windows["first_seen"] <= down["down_to"]))
                   & (windows["last_seen"] >= down["down_from"]))
        windows = windows.join(down, overlap, "left_anti")
    evidence = F.concat(
        F.format_string("%s got no message of %s from %s to %s UTC (%.0f min) while the topic's other brokers "
                        "kept their usual rate, after %d messages earlier today: ",
                        F.col("broker_name"), F.col("topic"), _hhmm(F.col("first_seen")), _hhmm(F.col("last_seen")),
                        F.col("minutes"), F.col("received_before")),
        F.lit("producers avoid it (latency fault tolerance shuns a broker after failed or slow sends: up to "
              "10 min on 4.9.x, 30 s on 5.1.4+; or it answers busy) or its write permission is off"))
    return (windows
            .select("date", "cluster", "topic", "broker_name", F.lit(None).cast("int").alias("queue_id"),
                    F.lit("BROKER_STARVED").alias("finding"), "first_seen", "last_seen", "minutes",
                    F.lit(0.0).alias("share"), F.col("even_share").cast("double").alias("even_share"),
                    evidence.alias("evidence"),
                    F.when(F.col("minutes") >= rules.starved_warn_minutes, F.lit("WARN"))
                    .otherwise(F.lit("INFO")).alias("severity")))


# --- QUEUE_COUNT_SKEW -----------------------------------------------------------------------------

def build_queue_count_skew(intervals_df: DataFrame) -> DataFrame:
    """QUEUE_COUNT_SKEW rows: topics that received messages and whose brokers show different
    queue counts in the day's offsets. ``share`` is the busiest broker's share of the topic's
    queues (what round robin sends it), ``even_share`` 1 / brokers. No ``groups``
    (``with_consuming_groups``)."""
    per_broker = (intervals_df.where(is_producer_topic(F.col("topic")))
                  .groupBy("cluster", "topic", "broker_name")
                  .agg(F.countDistinct("queue_id").alias("_queues"), F.sum("messages_in").alias("_messages"),
                       F.min("prev_ts").alias("_first"), F.max("ts").alias("_last"), F.max("date").alias("date")))
    per_topic = (per_broker.groupBy("cluster", "topic")
                 .agg(F.max("date").alias("date"), F.min("_first").alias("first_seen"),
                      F.max("_last").alias("last_seen"), F.sum("_messages").alias("_messages"),
                      F.sum("_queues").alias("_total_queues"), F.min("_queues").alias("_min_queues"),
                      F.max("_queues").alias("_max_queues"), F.count("*").alias("_brokers"),
                      F.array_sort(F.collect_list(F.struct("broker_name", "_queues"))).alias("_counts"))
                 .where((F.col("_min_queues") != F.col("_max_queues")) & (F.col("_messages") > 0)))
    counts = F.array_join(F.transform(F.col("_counts"), lambda c: F.format_string(
        "%s %d queues (%s of the messages)", c["broker_name"], c["_queues"],
        _percent(c["_queues"] / F.col("_total_queues")))), ", ")
    evidence = F.concat(
        F.format_string("the brokers of %s expose different queue counts: ", F.col("topic")), counts,
        F.lit(": round robin gives every queue the same share, so the brokers get uneven load"))
    return (per_topic
            .select("date", "cluster", "topic", F.lit(None).cast("string").alias("broker_name"),
                    F.lit(None).cast("int").alias("queue_id"), F.lit("QUEUE_COUNT_SKEW").alias("finding"),
                    "first_seen", "last_seen",
                    minutes_between(F.col("first_seen"), F.col("last_seen")).alias("minutes"),
                    (F.col("_max_queues") / F.col("_total_queues")).cast("double").alias("share"),
                    (F.lit(1.0) / F.col("_brokers")).cast("double").alias("even_share"),
                    evidence.alias("evidence"), F.lit("INFO").alias("severity")))


# --- ORDER_AT_RISK --------------------------------------------------------------------------------

PUBLISH_LOSS_COLUMNS = ["cluster", "topic", "broker_name", "lost_from", "lost_to", "reason", "order_topic_conf",
                        "evidence"]


def orderly_groups(client_config_df: DataFrame) -> DataFrame:
    """``cluster, group`` of the groups with a client reporting ``PROP_CONSUMEORDERLY=true``."""
    return client_config_df.where(F.col("is_orderly")).select("cluster", "group").distinct()


def master_down_losses(master_down_df: DataFrame) -> DataFrame:
    """Publish-list losses from a broker's master-down windows (``cluster, broker_name,
    down_from, down_to``, DESIGN.md §5.3): every topic on the broker loses it."""
    return master_down_df.select(
        "cluster", F.lit(None).cast("string").alias("topic"), "broker_name",
        F.col("down_from").alias("lost_from"), F.col("down_to").alias("lost_to"),
        F.lit("MASTER_DOWN").alias("reason"), F.lit(None).cast("boolean").alias("order_topic_conf"),
        F.lit("its master was down").alias("evidence"))


def build_order_at_risk(queue_offsets_df: DataFrame, orderly_groups_df: DataFrame,
                        publish_losses_df: DataFrame) -> DataFrame:
    """ORDER_AT_RISK rows (module docstring). ``publish_losses_df``: ``PUBLISH_LOSS_COLUMNS`` —
    a null ``topic`` is every topic on the broker, a null ``lost_to`` lasts to the day's last
    snapshot; ``order_topic_conf`` true leaves the topic out. ``share`` is the lost broker's part
    of the topic's queues (the part of the keys that moved), ``even_share`` one queue's."""
    offsets = queue_offsets_df.where(is_producer_topic(F.col("topic")))
    per_broker = (offsets.groupBy("cluster", "topic", "broker_name")
                  .agg(F.countDistinct("queue_id").alias("_broker_queues"), F.max("date").alias("date"),
                       F.max("ts").alias("_day_end")))
    per_topic = (per_broker.groupBy("cluster", "topic")
                 .agg(F.sum("_broker_queues").alias("_topic_queues"), F.max("_day_end").alias("_topic_end")))
    orderly = (offsets.select("cluster", "topic", "group").distinct()
               .join(orderly_groups_df.select("cluster", "group"), ["cluster", "group"], "inner")
               .groupBy("cluster", "topic").agg(sorted_set("group").alias("groups")))
    losses = publish_losses_df.select(*PUBLISH_LOSS_COLUMNS).where(
        ~F.coalesce(F.col("order_topic_conf"), F.lit(False))).withColumnRenamed("topic", "_loss_topic")
    topics = per_broker.join(per_topic, ["cluster", "topic"]).join(orderly, ["cluster", "topic"], "inner")
    hit = topics.join(losses, ["cluster", "broker_name"], "inner").where(
        F.col("_loss_topic").isNull() | (F.col("_loss_topic") == F.col("topic")))
    last = F.coalesce(F.col("lost_to"), F.col("_topic_end"))
    evidence = F.format_string(
        "%s left the publish list of %s from %s to %s UTC (%s) while orderly %s consume it: keys hashed "
        "to its %d of %d queues went to other queues meanwhile, so per-key order is not guaranteed in "
        "that window", F.col("broker_name"), F.col("topic"), _hhmm(F.col("lost_from")),
        F.when(F.col("lost_to").isNull(), F.lit("the end of the day")).otherwise(_hhmm(F.col("lost_to"))),
        F.col("evidence"), F.array_join(F.col("groups"), ", "), F.col("_broker_queues"), F.col("_topic_queues"))
    return hit.select(
        "date", "cluster", "topic", "broker_name", F.lit(None).cast("int").alias("queue_id"),
        F.lit("ORDER_AT_RISK").alias("finding"), F.col("lost_from").alias("first_seen"), last.alias("last_seen"),
        minutes_between(F.col("lost_from"), last).alias("minutes"),
        (F.col("_broker_queues") / F.col("_topic_queues")).cast("double").alias("share"),
        (F.lit(1.0) / F.col("_topic_queues")).cast("double").alias("even_share"),
        "groups", evidence.alias("evidence"), F.lit("WARN").alias("severity"))


def build_producer_findings(queue_offsets_df: DataFrame, rules: ProducerRules,
                            master_down_df: DataFrame | None = None,
                            orderly_groups_df: DataFrame | None = None,
                            publish_losses_df: DataFrame | None = None,
                            intervals_df: DataFrame | None = None,
                            stage: Stage = no_staging) -> DataFrame:
    """gold.producer_findings from silver.queue_offsets (module docstring); ``master_down_df``:
    see :func:`build_starved_brokers`. ORDER_AT_RISK needs ``orderly_groups_df`` and the
    publish-list losses (``publish_losses_df`` and/or the master-down windows).
    ``intervals_df``: ``queue_intervals`` of the same offsets, when stored already. ``stage``:
    see :func:`build_hot_queues`."""
    intervals = queue_intervals(queue_offsets_df) if intervals_df is None else intervals_df
    found = with_consuming_groups(
        build_hot_queues(intervals, queue_offsets_df, rules, stage)
        .unionByName(build_starved_brokers(intervals, rules, master_down_df))
        .unionByName(build_queue_count_skew(intervals)), queue_offsets_df)
    losses = [df.select(*PUBLISH_LOSS_COLUMNS) for df in (
        publish_losses_df, master_down_losses(master_down_df) if master_down_df is not None else None)
        if df is not None]
    if orderly_groups_df is not None and losses:
        all_losses = losses[0]
        for more in losses[1:]:
            all_losses = all_losses.unionByName(more)
        found = found.unionByName(build_order_at_risk(queue_offsets_df, orderly_groups_df, all_losses))
    return found.select(*FINDING_COLUMNS)
