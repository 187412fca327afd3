"""gold.stuck_queues: queues whose committed offset stands still while messages wait.

DESIGN.md §5: the committed offset is unchanged for ≥ stuck_min_duration while lag > 0 — Burrow's
STALL on RocketMQ data. Burrow's lessons hold by construction: a queue with lag 0 (idle) never
starts an episode, and any change of the committed offset ends one, so a moving queue is never
stuck. Root cause, first that holds (``cause_chain``, the one place that orders them):

- ``NO_OWNER``: the queue is in gold.orphaned_queues during the episode, or no live process
  owns it at any snapshot of the episode (a takeover that shows only at the last snapshot,
  before the new owner's first commit reaches the broker, does not count). A lagging orphaned
  queue is therefore in both gold.orphaned_queues and here — also when every consumer of the
  group stopped (DESIGN.md §4, §5 cause order).
- ``OWNER_DOWN``: the queue had a live owner during the episode but none at its last snapshot —
  commits stopped because the owner is gone (Burrow's STOP), not pinned by a live one.
- ``MASTER_DOWN``: the queue's broker group had no master when the episode started
  (``jobs.rules.master_down``, DESIGN.md §5.3) and a message of the queue failed
  (``failed_here``): failed messages cannot go back and are retried locally, pinning the
  offset; ``blocking_offset`` is the looping message's queueOffset. A slow message, an orderly
  consumer's failure or a queue without running info on B is not MASTER_DOWN by the window alone.
- ``CONSUME_FAILING``: an owner reports ``consume_failed_tps > 0`` for the topic at every one of
  its running-info snapshots of the episode. An orderly consumer's poison message shows exactly
  this: SUSPEND_CURRENT_QUEUE_A_MOMENT (or an exception) counts a failure, puts the message back
  and retries it after suspendCurrentQueueTimeMillis, with no DLQ before maxReconsumeTimes
  (unlimited by default), so the commit waits at it (facts §2.6).
- ``SLOW_MESSAGE``: a concurrent owner's running info shows ``cached_msg_min_offset`` = the
  committed offset (the commit is the smallest in-flight offset, facts §5.3) and later messages
  finish. What counts as "finish": ``consume_ok_tps > 0`` for the topic at a snapshot taken a
  full TPS window (``TPS_WINDOW_SECONDS``) after the episode started; another queue of the topic
  owned by the same client advancing its committed offset during the episode; or the cached
  message count falling between two snapshots while the pinned offset stays first (pulls only
  add messages). Not a signal: a moving ``cached_msg_max_offset`` (pulls move it until flow
  control), a moving ``last_consume_timestamp`` (orderly consumers set it when they take a
  message), a ``send expire msg back`` line (the cleaner also sends back messages of a hung
  consumer), or ``max − min + 1 − count`` (tag filtering leaves offset gaps in the cache).
- ``CONSUMER_HUNG``: nothing of the topic finishes although messages wait — an owner's
  ``consume_ok_tps`` and ``consume_failed_tps`` are both 0 at every snapshot a full TPS window
  into the episode, none of its queues of the topic advance, and the queue caches at least two
  messages at each such snapshot (with a free thread the second would be taken): every consume
  thread is blocked, e.g. on a downstream call that hangs (facts §5.3 "Hung consumer").
- ``SUBSCRIPTION_INCONSISTENT``: none of the above, and a live member of the group does not
  subscribe the topic at some group snapshot of the episode (``subscription_evidence``). A broker
  replaces the group's subscription table with each member's heartbeat; while the table lacks the
  topic it refuses the subscribers' pulls of it (``CODE: 24 … the consumer's subscription not
  exist``, ``CODE: 25 … not latest``), so a queue that is owned still receives nothing — seen on a
  real 4.9.7 cluster (tests/data/real-cluster/README.md, difference 2; the 4.x log line names no
  queue, so the members' subscriptions decide). ``blocking_offset`` = the committed offset, the
  next message the owner cannot pull.
- ``UNKNOWN``: a live owner, no evidence either way.

Running-info evidence (rates, cached counts, spans, the listener) is read only from snapshots at
which the pin still holds (``pinned_snapshots``): taken no later than the episode's last pinned
offsets snapshot, by an owner whose own mq_table still shows the pinned commit offset. A
snapshot of the recovery — between the last pinned offsets snapshot and the first moved one,
with the commit already past the pin and an OK rate counting the backlog finishing — describes
the release, not the episode (DESIGN.md §5). The other queues' commits are read over
(stuck_since, last_seen] for the same reason; a flow-control log line counts only when it names
the pinned offset as its ``minOffset``, which shows the pin itself.

Fields: ``blocking_offset`` = the pinned offset (SLOW_MESSAGE; CONSUME_FAILING when the owner's
process queue holds the committed offset as its first message — in the cache or, orderly, in
the listener); ``in_flight_span`` = the largest ``cached_msg_max_offset − cached_msg_min_offset``
in the episode's pinned running info; ``flow_controlled`` = at a pinned snapshot of the episode
the queue cached more than the client's pullThresholdForQueue messages (an orderly client counts the
messages in its listener too) or more than its pullThresholdSizeForQueue MiB (any push
consumer), or its span reached consumeConcurrentlyMaxSpan (concurrent consumers only; RocketMQ
never checks the span of an orderly one) — the client's properties, else the settings — or a
flow-control log line names the queue at the pinned ``minOffset`` (facts §5.3);
``redelivery_risk`` = messages after the blocking offset already consumed (``max − min + 1 −
cached_msg_count`` at a concurrent pinned snapshot; 0 for an orderly one, which never consumes
past it, and 0 without a blocking offset), delivered again if the queue moves to another client
or the client restarts, since the broker only knows the pinned commit; ``released_at`` = the
``send expire msg back`` line for the pinned offset (the expired-message cleaner, facts §5.3),
else the snapshot at which the offset jumped; null while still stuck.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.columns import plus_seconds, sorted_set
from jobs.rules.episodes import minutes_between, next_snapshots, with_previous_snapshot
from jobs.rules.master_down import master_down_episodes
from jobs.rules.models import excluded_groups, without_groups
from jobs.rules.severity import severity
from jobs.rules.subscription import non_subscribers
from jobs.settings import DetectionSettings

QUEUE_KEY = ["cluster", "group", "topic", "broker_name", "queue_id"]
EPISODE_KEY = [*QUEUE_KEY, "_episode"]
COLUMNS = ["cluster", "group", "topic", "broker_name", "queue_id", "owner", "stuck_since",
           "last_seen", "stuck_minutes", "committed_offset", "lag_end", "blocking_offset",
           "in_flight_span", "flow_controlled", "redelivery_risk", "released_at", "root_cause",
           "evidence", "severity", "date"]
FLOW_CONTROL_EVENTS = ("FLOW_CONTROL_COUNT", "FLOW_CONTROL_SIZE", "FLOW_CONTROL_SPAN")
# ConsumerStatsManager's minute rates: 7 samples 10 s apart, first to last (facts §6.1), so a
# snapshot's consume_ok_tps / consume_failed_tps count what finished in the 70 s before it. Only
# snapshots this far into an episode tell what happened during it.
TPS_WINDOW_SECONDS = 70
_DEFAULTS = DetectionSettings()


@dataclass(frozen=True)
class StuckRules:
    max_snapshot_gap_seconds: int
    stuck_min_duration_seconds: int
    consume_concurrently_max_span: int  # used when a client's properties do not say
    critical_lag: int
    critical_minutes: int
    # used when a client's properties do not say (pullThresholdForQueue, ...SizeForQueue)
    pull_threshold_for_queue: int = _DEFAULTS.pull_threshold_for_queue
    pull_threshold_size_for_queue_mib: int = _DEFAULTS.pull_threshold_size_for_queue_mib


def stuck_snapshots(queue_state_df: DataFrame, max_gap_seconds: int,
                    single_snapshots: bool = False) -> DataFrame:
    """The queue_state rows of stuck episodes, each with ``_episode``: consecutive snapshots
    (gaps ≤ ``max_gap_seconds``) with lag > 0 and the same committed offset share one — as
    ``jobs.rules.episodes.with_episode_id`` numbers them, breaking on the offset.

    Only episodes of two snapshots or more, unless ``single_snapshots`` (an episode of one
    snapshot lasts 0 minutes: only a stuck_min_duration of 0 keeps it). Those are found from the
    snapshots whose committed offset did not move since the previous one (``consumer_offset_delta``
    = 0, a tiny share of a busy day) and that previous snapshot (``with_previous_snapshot``): ordering
    every lagging row of the day with its arrays was most of the stuck detector on Sail (an M day:
    13.5 s against 2.6 s, issue #19). A ``prev_ts`` that names no row of ``queue_state_df`` (the
    previous day's) continues nothing, as a window over the frame would have it."""
    lagging = F.coalesce((F.col("lag") > 0) & (F.col("queue_id") >= 0), F.lit(False))
    near = (F.unix_millis("ts") - F.unix_millis("prev_ts")) <= F.lit(max_gap_seconds * 1000)
    unmoved = lagging & (F.col("consumer_offset_delta") == 0) & near
    continuing = (with_previous_snapshot(queue_state_df.withColumn("is_lagging", lagging),
                                         QUEUE_KEY, unmoved,
                                         carry=("is_lagging", "consumer_offset"))
                  .where(F.col("_prev_is_lagging")
                         & (F.col("consumer_offset") == F.col("_prev_consumer_offset")))
                  .select(*QUEUE_KEY, "ts", "prev_ts"))
    rows = (continuing.select(*QUEUE_KEY, "ts", F.lit(1).alias("_continues"))
            .unionByName(continuing.select(*QUEUE_KEY, F.col("prev_ts").alias("ts"),
                                           F.lit(0).alias("_continues")))
            .groupBy(*QUEUE_KEY, "ts").agg(F.max("_continues").alias("_continues")))
    columns = [*QUEUE_KEY, "ts", "lag", "consumer_offset", "owners", "owner_count",
               "claimed_by", "date"]
    if single_snapshots:
        snapshots = (rows.join(queue_state_df.where(lagging).select(*columns),
                               on=[*QUEUE_KEY, "ts"], how="right")
                     .withColumn("_continues", F.coalesce("_continues", F.lit(0))))
    else:
        snapshots = rows.join(queue_state_df.select(*columns), on=[*QUEUE_KEY, "ts"],
                              how="inner")
    running = (Window.partitionBy(*QUEUE_KEY).orderBy("ts")
               .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    return (snapshots.withColumn("_episode", F.sum(1 - F.col("_continues")).over(running))
            .drop("_continues"))


def stuck_episodes(snapshots_df: DataFrame, queue_state_df: DataFrame,
                   rules: StuckRules) -> DataFrame:
    """One row per episode lasting ≥ stuck_min_duration (``stuck_snapshots``), with who owned
    the queue during it and ``_next_ts`` / ``_next_offset``: the queue's snapshot after the
    episode's last (``queue_state_df``'s row whose ``prev_ts`` that is), which shows how the
    episode ended.

    A busy day starts an episode at nearly every lagging snapshot, so only the lasting ones,
    found with a plain min/max, get the full aggregate: run over every episode it exhausted the
    machine's memory on Sail (benchmarks/RESULTS.md)."""
    lasting = (snapshots_df.groupBy(*EPISODE_KEY)
               .agg(minutes_between(F.min("ts"), F.max("ts")).alias("_minutes"))
               .where(F.col("_minutes") * 60 >= rules.stuck_min_duration_seconds)
               .select(*EPISODE_KEY))
    owned = F.col("owner_count") > 0
    first_owner = F.struct(F.col("ts"), F.element_at("owners", 1).alias("client_id"))
    episodes = snapshots_df.join(lasting, on=EPISODE_KEY, how="left_semi").groupBy(
        *EPISODE_KEY).agg(
        F.min("ts").alias("stuck_since"),
        F.max("ts").alias("last_seen"),
        F.min("consumer_offset").alias("committed_offset"),
        F.min_by("lag", "ts").alias("lag_start"),
        F.max_by("lag", "ts").alias("lag_end"),
        F.min(F.when(owned, F.col("ts"))).alias("_live_first_at"),
        F.max(F.when(owned, F.col("ts"))).alias("_live_last_at"),
        F.max(F.when(~owned, F.col("ts"))).alias("_unowned_last_at"),
        F.min(F.when(owned, first_owner)).alias("_first_owner"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list(
            F.coalesce("owners", F.array().cast("array<string>")))))).alias("_owners"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("claimed_by"))))
        .alias("_claimed_by"),
        F.max("date").alias("date"),
    )
    following = next_snapshots(queue_state_df, QUEUE_KEY, "last_seen",
                               {"ts": "_next_ts", "consumer_offset": "_next_offset"})
    minutes = minutes_between(F.col("stuck_since"), F.col("last_seen"))
    return (episodes.withColumn("stuck_minutes", minutes)
            .where(F.col("stuck_minutes") * 60 >= rules.stuck_min_duration_seconds)
            .join(following, on=[*QUEUE_KEY, "last_seen"], how="left")
            .withColumn("_until", F.coalesce(
                "_next_ts", plus_seconds(F.col("last_seen"), rules.max_snapshot_gap_seconds))))


def pinned_snapshots(episodes_df: DataFrame, process_queues_df: DataFrame) -> DataFrame:
    """``EPISODE_KEY, client_id, ts``: the running-info snapshots of the episode's owners at which
    the pin still holds — taken in [stuck_since, last_seen] (no later than the episode's last
    pinned offsets snapshot) and whose own mq_table entry for the queue (silver.process_queues,
    not dropped) still shows the pinned offset as its ``commit_offset``. The only snapshots cause
    evidence is read from (DESIGN.md §5).

    Collectors run on independent cycles of about a minute, so a running-info snapshot often
    falls between the episode's last offsets snapshot and the next one, after the release: its
    mq_table already shows the commit past the pinned offset (the client's in-memory offset,
    which the broker learns at the next 5 s persist, facts §5.4), and its one-minute OK rate
    (ConsumerStatsManager, facts §6.1) counts the backlog finishing after the release. Read as
    evidence, that one snapshot of the recovery made a hung consumer's episode SLOW_MESSAGE. A
    snapshot whose mq_table does not list the queue, or lists no commit offset for it, cannot
    show the pin and is no evidence either."""
    window = episodes_df.select(*EPISODE_KEY, "committed_offset", "stuck_since", "last_seen",
                                "_owners")
    pq = process_queues_df.where(~F.col("dropped")).select(*QUEUE_KEY, "client_id", "ts",
                                                           "commit_offset")
    return (window.join(pq, on=QUEUE_KEY, how="inner")
            .where((F.col("ts") >= F.col("stuck_since")) & (F.col("ts") <= F.col("last_seen"))
                   & F.array_contains("_owners", F.col("client_id"))
                   & (F.col("commit_offset") == F.col("committed_offset")))
            .select(*EPISODE_KEY, "client_id", "ts"))


def _owner_rows(episodes_df: DataFrame, df: DataFrame, on: list[str],
                pinned_df: DataFrame) -> DataFrame:
    """Rows of ``df`` (running-info facts with ``client_id`` and ``ts``) of the episode's
    ``pinned_snapshots`` (``pinned_df``), with ``_settled``: taken a full TPS window after the
    episode started."""
    window = episodes_df.select(*EPISODE_KEY, "committed_offset", "stuck_since")
    settled = (F.unix_millis("ts") - F.unix_millis("stuck_since")
               >= F.lit(TPS_WINDOW_SECONDS * 1000))
    return (window.join(df, on=on, how="inner")
            .join(pinned_df, on=[*EPISODE_KEY, "client_id", "ts"], how="left_semi")
            .withColumn("_settled", settled))


def process_queue_evidence(episodes_df: DataFrame, process_queues_df: DataFrame,
                           client_config_df: DataFrame, rules: StuckRules,
                           pinned_df: DataFrame) -> DataFrame:
    """Per episode, what the owners' ProcessQueue of the queue shows at the snapshots where the
    pin holds (``pinned_df``, :func:`pinned_snapshots`; facts §5.3, §6.1): the in-flight span,
    flow control per consumption mode, whether the committed offset is the first cached message
    (pinned) or, orderly, the message in the listener, whether the cache drained while pinned,
    and whether messages wait behind the first one."""
    pq = process_queues_df.where(~F.col("dropped")).select(
        *QUEUE_KEY, "client_id", "ts", "cached_msg_min_offset", "cached_msg_max_offset",
        "cached_msg_count", "cached_msg_size_mib", "transaction_msg_min_offset",
        "transaction_msg_count", "last_consume_at")
    cfg = client_config_df.select("cluster", "group", "client_id", "ts",
                                  "consume_concurrently_max_span", "pull_threshold_for_queue",
                                  "pull_threshold_size_for_queue_mib", "is_orderly")
    rows = (_owner_rows(episodes_df, pq, QUEUE_KEY, pinned_df)
            .join(cfg, on=["cluster", "group", "client_id", "ts"], how="left"))
    orderly = F.coalesce("is_orderly", F.lit(False))
    count = F.coalesce("cached_msg_count", F.lit(0))
    in_listener = F.when(orderly, F.coalesce("transaction_msg_count", F.lit(0))).otherwise(0)
    cached = count > 0
    span = F.when(cached, F.col("cached_msg_max_offset") - F.col("cached_msg_min_offset"))
    max_span = F.coalesce("consume_concurrently_max_span",
                          F.lit(rules.consume_concurrently_max_span))
    max_count = F.coalesce("pull_threshold_for_queue", F.lit(rules.pull_threshold_for_queue))
    max_size = F.coalesce("pull_threshold_size_for_queue_mib",
                          F.lit(rules.pull_threshold_size_for_queue_mib))
    pinned = cached & (F.col("cached_msg_min_offset") == F.col("committed_offset"))
    held = pinned | (orderly & (in_listener > 0)
                     & (F.col("transaction_msg_min_offset") == F.col("committed_offset")))
    # Messages in (min, max] no longer cached have finished — or were filtered by tag (gaps):
    # redelivery_risk only, never a "later messages finish" signal.
    finished = (F.col("cached_msg_max_offset") - F.col("cached_msg_min_offset") + 1
                - F.col("cached_msg_count"))
    by_client = Window.partitionBy(*EPISODE_KEY, "client_id").orderBy("ts")
    staged = rows.select(
        *EPISODE_KEY, "client_id", "ts", "_settled", "last_consume_at",
        F.coalesce(span, F.lit(0)).cast("long").alias("_span"),
        # RocketMQ checks the span for concurrent consumers only, count and size for every push
        # consumer; its count includes an orderly client's messages in the listener (facts §5.3)
        F.coalesce((span >= max_span) & ~orderly, F.lit(False)).alias("_span_limited"),
        F.coalesce(((count + in_listener) > max_count)
                   | (F.col("cached_msg_size_mib") > max_size), F.lit(False)).alias("_cache_limited"),
        pinned.alias("_pinned"), held.alias("_held"), orderly.alias("_orderly"),
        (pinned & ~orderly).alias("_concurrent_pinned"),
        F.when(pinned & ~orderly, finished).cast("long").alias("_finished"),
        (count + in_listener).alias("_waiting"), count.alias("_count"))
    previous = staged.select(
        "*", F.lag("_pinned").over(by_client).alias("_prev_pinned"),
        F.lag("_count").over(by_client).alias("_prev_count"))
    drained = (F.col("_concurrent_pinned") & F.coalesce("_prev_pinned", F.lit(False))
               & (F.col("_count") < F.col("_prev_count")))
    drain = F.struct(F.col("ts"), F.col("_prev_count").alias("before"),
                     F.col("_count").alias("after"))
    return previous.groupBy(*EPISODE_KEY).agg(
        F.max("_span").alias("in_flight_span"),
        F.max(F.col("_span_limited").cast("int")).alias("_span_limited"),
        F.max(F.col("_cache_limited").cast("int")).alias("_cache_limited"),
        F.sum(F.col("_concurrent_pinned").cast("int")).alias("_concurrent_pinned_rows"),
        F.sum(F.col("_held").cast("int")).alias("_held_rows"),
        F.max(F.col("_orderly").cast("int")).alias("_orderly"),
        F.max("_finished").alias("_finished"),
        F.min(F.when(drained, drain)).alias("_drain"),
        F.count(F.when(F.col("_settled"), F.lit(1))).alias("_pq_settled_rows"),
        F.count(F.when(F.col("_settled") & (F.col("_waiting") >= 2), F.lit(1)))
        .alias("_waiting_rows"),
        F.min(F.when(F.col("_settled"), F.col("_waiting"))).alias("_waiting_min"),
        F.max("last_consume_at").alias("_last_consume_at"),
        sorted_set(F.when(F.col("_held"), F.col("client_id")))
        .alias("_pinned_by"))


def consume_status_evidence(episodes_df: DataFrame, consume_status_df: DataFrame,
                            pinned_df: DataFrame) -> DataFrame:
    """Per episode, the owners' consume rates for the topic (silver.consume_status) at the
    snapshots where the pin holds (``pinned_df``: the status table and the mq_table are one
    running-info answer): how many report failures, and — a full TPS window into the episode —
    whether messages finished (OK rate > 0) or nothing did (both rates 0)."""
    status = consume_status_df.select("cluster", "group", "client_id", "ts", "topic",
                                      "consume_ok_tps", "consume_failed_tps")
    rows = _owner_rows(episodes_df, status, ["cluster", "group", "topic"], pinned_df)
    settled = F.col("_settled")
    ok, failed = F.col("consume_ok_tps"), F.col("consume_failed_tps")
    return rows.groupBy(*EPISODE_KEY).agg(
        F.count(failed).alias("_status_rows"),
        F.count(F.when(failed > 0, F.lit(1))).alias("_failing_rows"),
        F.max(failed).alias("_max_failed_tps"),
        F.count(F.when(settled & ok.isNotNull() & failed.isNotNull(), F.lit(1)))
        .alias("_settled_status_rows"),
        F.count(F.when(settled & (ok > 0), F.lit(1))).alias("_ok_rows"),
        F.max(F.when(settled, ok)).alias("_max_ok_tps"),
        F.count(F.when(settled & (ok == 0) & (failed == 0), F.lit(1))).alias("_idle_rows"))


def other_queues_evidence(episodes_df: DataFrame, queue_state_df: DataFrame) -> DataFrame:
    """Per episode, the first advance of the committed offset of another queue of the topic
    owned by one of the episode's owners, during the episode (broker offsets: the owner's other
    messages finish; DESIGN.md §5 SLOW_MESSAGE, CONSUMER_HUNG)."""
    window = episodes_df.select(*EPISODE_KEY, "stuck_since", "last_seen", "_owners")
    moved = queue_state_df.where(F.col("consumer_offset_delta") > 0).select(
        "cluster", "group", "topic", F.col("broker_name").alias("_o_broker"),
        F.col("queue_id").alias("_o_queue"), F.col("ts").alias("_o_ts"),
        F.col("owners").alias("_o_owners"))
    first = F.struct(F.col("_o_ts").alias("ts"), F.col("_o_broker").alias("broker_name"),
                     F.col("_o_queue").alias("queue_id"))
    return (window.join(moved, on=["cluster", "group", "topic"], how="inner")
            .where(((F.col("_o_broker") != F.col("broker_name"))
                    | (F.col("_o_queue") != F.col("queue_id")))
                   & (F.col("_o_ts") > F.col("stuck_since"))
                   & (F.col("_o_ts") <= F.col("last_seen"))
                   & F.arrays_overlap("_owners", "_o_owners"))
            .groupBy(*EPISODE_KEY).agg(F.min(first).alias("_other_advanced")))


def log_evidence(episodes_df: DataFrame, log_events_df: DataFrame) -> DataFrame:
    """Per episode: flow-control lines naming the queue at the pinned ``minOffset``, and the
    first ``send expire msg back`` for the pinned offset, between ``stuck_since`` and the
    queue's next snapshot. Log lines carry no cluster; the send-back line no group or broker
    (its queueOffset is matched instead)."""
    bounds = episodes_df.select(*EPISODE_KEY, "committed_offset", "stuck_since", "_next_ts")
    mq = F.element_at("queues", 1)

    def in_window(at: Column) -> Column:
        return (at >= F.col("stuck_since")) & (F.col("_next_ts").isNull()
                                                | (at <= F.col("_next_ts")))

    fc = log_events_df.where(F.col("event").isin(*FLOW_CONTROL_EVENTS)).select(
        "group", mq.getField("topic").alias("topic"),
        mq.getField("broker_name").alias("broker_name"),
        mq.getField("queue_id").alias("queue_id"), F.col("ts").alias("_at"),
        F.col("min_offset").alias("_min_offset"))
    fc_hits = (bounds.join(fc, on=["group", "topic", "broker_name", "queue_id"], how="inner")
               .where(in_window(F.col("_at"))
                      & (F.col("_min_offset") == F.col("committed_offset")))
               .groupBy(*EPISODE_KEY).agg(F.count(F.lit(1)).alias("_fc_lines")))
    expire = log_events_df.where(F.col("event") == "SEND_EXPIRE_MSG_BACK").select(
        mq.getField("topic").alias("topic"), mq.getField("queue_id").alias("queue_id"),
        F.col("ts").alias("_at"), F.col("offset").alias("_queue_offset"))
    sent_back = (bounds.join(expire, on=["topic", "queue_id"], how="inner")
                 .where(in_window(F.col("_at"))
                        & (F.col("_queue_offset") == F.col("committed_offset")))
                 .groupBy(*EPISODE_KEY).agg(F.min("_at").alias("_sent_back_at")))
    return (bounds.select(*EPISODE_KEY)
            .join(fc_hits, on=EPISODE_KEY, how="left")
            .join(sent_back, on=EPISODE_KEY, how="left"))


def subscription_evidence(episodes_df: DataFrame, group_context_df: DataFrame) -> DataFrame:
    """Per episode: ``_non_subscribers``, the live members that do not subscribe the queue's topic
    at some group snapshot (``gold.group_context``) within [stuck_since, last_seen]
    (``jobs.rules.subscription.non_subscribers``); empty when every member subscribes it."""
    ctx = group_context_df.select("cluster", "group", F.col("ts").alias("_ctx_ts"), "members")
    return (episodes_df.select(*EPISODE_KEY, "stuck_since", "last_seen")
            .join(ctx, on=["cluster", "group"], how="inner")
            .where((F.col("_ctx_ts") >= F.col("stuck_since")) & (F.col("_ctx_ts") <= F.col("last_seen")))
            .groupBy(*EPISODE_KEY)
            .agg(F.array_sort(F.array_distinct(F.flatten(F.collect_list(
                non_subscribers(F.col("topic"), F.col("members")))))).alias("_non_subscribers")))


def orphaned_during(episodes_df: DataFrame, orphaned_df: DataFrame) -> DataFrame:
    """Per stuck episode: ``_orphaned`` when a gold.orphaned_queues row of the same queue
    overlaps it."""
    orphans = orphaned_df.select(*QUEUE_KEY, F.col("first_seen").alias("_o_from"),
                                 F.col("last_seen").alias("_o_until"))
    return (episodes_df.select(*EPISODE_KEY, "stuck_since", "last_seen")
            .join(orphans, on=QUEUE_KEY, how="inner")
            .where((F.col("_o_from") <= F.col("last_seen"))
                   & (F.col("_o_until") >= F.col("stuck_since")))
            .select(*EPISODE_KEY).distinct()
            .withColumn("_orphaned", F.lit(True)))


def _n(name: str) -> Column:
    return F.coalesce(F.col(name), F.lit(0))


def later_messages_finish() -> Column:
    """SLOW_MESSAGE's evidence that messages after the pinned one finish (module docstring)."""
    return ((_n("_ok_rows") > 0) | F.col("_other_advanced").isNotNull()
            | F.col("_drain").isNotNull())


def failed_here() -> Column:
    """MASTER_DOWN's second condition (DESIGN.md §5.3): a message of this queue failed, so a
    hand-back was needed — this queue's own ``sendMessageBack exception`` lines in the episode
    (``_md_blocking_offset``, from ``jobs.rules.master_down.master_down_episodes``), or a
    concurrent owner reporting ``consume_failed_tps > 0`` for the topic at a pinned snapshot.
    An orderly consumer retries a failed message locally whatever the broker (facts §2.6), and a
    slow or idle message needs no hand-back: a window of B alone does not explain their pins
    (tests/data/real-cluster/README.md, difference 5)."""
    return (F.col("_md_blocking_offset").isNotNull()
            | ((_n("_failing_rows") > 0) & (_n("_orderly") == 0)))


def cause_chain() -> list[tuple[str, Column]]:
    """The DESIGN.md §5 stuck causes in their order, each with the condition that decides it;
    the first that holds wins, ``UNKNOWN`` otherwise. This list is the one place that orders
    them: MASTER_DOWN (§5.3) is inserted between OWNER_DOWN and CONSUME_FAILING, with its
    evidence columns joined in ``explain_stuck_episodes``."""
    never_owned = (F.coalesce(F.col("_orphaned"), F.lit(False))
                   | F.col("_live_first_at").isNull()
                   | (F.col("_live_first_at") == F.col("last_seen")))
    owner_gone = (F.col("_unowned_last_at") == F.col("last_seen")) & (
        F.col("_live_first_at") < F.col("last_seen"))
    failing = (_n("_status_rows") > 0) & (F.col("_failing_rows") == F.col("_status_rows"))
    slow = (_n("_concurrent_pinned_rows") > 0) & later_messages_finish()
    nothing_finishes = ((_n("_settled_status_rows") > 0)
                        & (F.col("_idle_rows") == F.col("_settled_status_rows")))
    messages_wait = ((_n("_pq_settled_rows") > 0)
                     & (F.col("_waiting_rows") == F.col("_pq_settled_rows")))
    hung = nothing_finishes & messages_wait & F.col("_other_advanced").isNull()
    master_down = (F.coalesce(F.col("_master_down"), F.lit(False))  # jobs.rules.master_down
                   & failed_here())
    return [
        ("NO_OWNER", never_owned),
        ("OWNER_DOWN", owner_gone),
        ("MASTER_DOWN", master_down),
        ("CONSUME_FAILING", failing),
        ("SLOW_MESSAGE", slow),
        ("CONSUMER_HUNG", hung),
        ("SUBSCRIPTION_INCONSISTENT", F.coalesce(F.size("_non_subscribers"), F.lit(0)) > 0),
    ]


def with_root_cause(df: DataFrame) -> DataFrame:
    """``root_cause`` (first of ``cause_chain`` that holds) and the fields it decides."""
    chain = cause_chain()
    cause = F.when(chain[0][1], F.lit(chain[0][0]))
    for name, holds in chain[1:]:
        cause = cause.when(holds, F.lit(name))
    cause = cause.otherwise(F.lit("UNKNOWN"))
    rc = F.col("root_cause")
    jumped = ((F.col("_next_offset") != F.col("committed_offset"))
              & (F.col("_next_ts") <= F.col("_until")))
    blocks = ((rc == "SLOW_MESSAGE") | (rc == "SUBSCRIPTION_INCONSISTENT")
              | ((rc == "CONSUME_FAILING") & (_n("_held_rows") > 0)))
    return (df.withColumn("root_cause", cause)
            .withColumn("owner", F.when(rc != "NO_OWNER",
                                        F.col("_first_owner").getField("client_id")))
            .withColumn("blocking_offset", F.when(blocks, F.col("committed_offset"))
                        .when(rc == "MASTER_DOWN",
                              F.coalesce("_md_blocking_offset", "committed_offset")))
            .withColumn("flow_controlled",
                        (_n("_span_limited") == 1) | (_n("_cache_limited") == 1)
                        | (_n("_fc_lines") > 0))
            .withColumn("redelivery_risk", F.when(
                F.col("blocking_offset").isNotNull(), F.greatest(_n("_finished"), F.lit(0)))
                .otherwise(F.lit(0)).cast("long"))
            .withColumn("released_at", F.coalesce(
                "_sent_back_at", F.when(jumped, F.col("_next_ts")))))


def _iso(ts: Column) -> Column:
    return F.date_format(ts, "yyyy-MM-dd HH:mm:ss")


def _text(col: str | Column) -> Column:
    column = F.col(col) if isinstance(col, str) else col
    return F.coalesce(column.cast("string"), F.lit("?"))


def _finish_signal() -> Column:
    """Which signal showed later messages finishing (the first that holds)."""
    other = F.col("_other_advanced")
    drain = F.col("_drain")
    return (F.when(_n("_ok_rows") > 0, F.concat(
        F.lit("consume_ok_tps for the topic up to "), _text("_max_ok_tps"),
        F.lit(" a full minute into the episode")))
        .when(other.isNotNull(), F.concat(
            F.lit("its queue "), _text(other.getField("broker_name")), F.lit("/"),
            _text(other.getField("queue_id")), F.lit(" of the topic committed past its offset at "),
            _iso(other.getField("ts")), F.lit(" UTC")))
        .otherwise(F.concat(
            F.lit("the cached message count fell from "), _text(drain.getField("before")),
            F.lit(" to "), _text(drain.getField("after")), F.lit(" at "),
            _iso(drain.getField("ts")), F.lit(" UTC while the offset stayed first"))))


def evidence() -> Column:
    """A sentence naming the clients, offsets and times that show the cause, and which signal
    decided it."""
    rc = F.col("root_cause")
    offset = _text("committed_offset")
    release = F.when(F.col("_sent_back_at").isNotNull(), F.concat(
        F.lit("; released at "), _iso(F.col("released_at")),
        F.lit(" UTC by the expired-message cleaner (send expire msg back)"))).when(
        F.col("released_at").isNotNull(), F.concat(
            F.lit("; the offset moved at "), _iso(F.col("released_at")), F.lit(" UTC"))).otherwise(
        F.lit("; still stuck at the last snapshot"))
    claimants = F.when(F.size("_claimed_by") > 0, F.concat(
        F.lit(" (claimed by "), F.array_join("_claimed_by", ", "), F.lit(", not live)")))
    holder = F.when(F.size("_pinned_by") > 0, F.array_join("_pinned_by", ", ")).otherwise(
        _text("owner"))
    flow = F.when(F.col("flow_controlled"), F.lit(", flow-controlled")).otherwise(F.lit(""))
    orderly = _n("_orderly") == 1
    text = (
        F.when(rc == "NO_OWNER", F.concat(
            F.lit("no live process owned the queue"), F.coalesce(claimants, F.lit("")),
            F.lit(", so nobody commits past offset "), offset))
        .when(rc == "OWNER_DOWN", F.concat(
            F.lit("owner "), _text("owner"), F.lit(" was last live at "),
            _iso(F.col("_live_last_at")),
            F.lit(" UTC and nobody took the queue over; its last commit "), offset,
            F.lit(" stays")))
        .when(rc == "MASTER_DOWN", F.concat(
            F.col("_md_evidence"), F.lit("; offset pinned at "), offset))
        .when(rc == "CONSUME_FAILING", F.concat(
            F.lit("owner "), _text("owner"),
            F.lit(" reports consume_failed_tps > 0 for the topic at all "), _text("_status_rows"),
            F.lit(" of its running-info snapshots (up to "), _text("_max_failed_tps"),
            F.lit("/s)"),
            F.when(orderly & (_n("_held_rows") > 0), F.concat(
                F.lit("; orderly consumer: message "), offset,
                F.lit(" is first in its process queue and is suspended and retried in place"
                      " (SUSPEND_CURRENT_QUEUE_A_MOMENT), never skipped before"
                      " maxReconsumeTimes — unlimited by default")))
            .when(_n("_held_rows") > 0, F.concat(
                F.lit("; message "), offset, F.lit(" stays first in its process queue")))
            .otherwise(F.lit("")),
            F.lit("; the commit stays at "), offset, flow))
        .when(rc == "SLOW_MESSAGE", F.concat(
            F.lit("message "), offset, F.lit(" hangs in "), holder,
            F.lit(": cached_msg_min_offset = commit offset while later messages finish ("),
            _finish_signal(), F.lit("); "), _text("redelivery_risk"),
            F.lit(" later messages already consumed (in-flight span "), _text("in_flight_span"),
            flow, F.lit("); they are consumed again if the queue moves or the client restarts")))
        .when(rc == "CONSUMER_HUNG", F.concat(
            F.lit("owner "), _text("owner"),
            F.lit(" is live but nothing of the topic finishes: consume_ok_tps and"
                  " consume_failed_tps are 0 at all "), _text("_settled_status_rows"),
            F.lit(" of its running-info snapshots a full minute into the episode, none of its"
                  " queues of the topic advance, and at least "), _text("_waiting_min"),
            F.lit(" messages wait behind offset "), offset,
            F.when(F.col("_last_consume_at").isNotNull(), F.concat(
                F.lit(" (last consumed at "), _iso(F.col("_last_consume_at")), F.lit(" UTC)")))
            .otherwise(F.lit("")),
            F.lit(": every consume thread is blocked, e.g. on a downstream call"), flow))
        .when(rc == "SUBSCRIPTION_INCONSISTENT", F.concat(
            F.lit("live member(s) "), F.array_join("_non_subscribers", ", "),
            F.lit(" do not subscribe "), F.col("topic"),
            F.lit(": a broker replaces the group's subscription table with each member's heartbeat and,"
                  " while it lacks the topic, refuses the pulls of its queues (CODE: 24 the consumer's"
                  " subscription not exist), so owner "), _text("owner"),
            F.lit(" receives nothing past offset "), offset, F.lit(" although it holds the queue")))
        .otherwise(F.concat(
            F.lit("owner "), _text("owner"), F.lit(" is live but the commit stays at "), offset,
            F.lit("; its running info shows no failures, no pinned message with later ones"
                  " finishing, and no consumer with nothing finishing"))))
    window = F.concat(F.lit("; stuck from "), _iso(F.col("stuck_since")), F.lit(" to "),
                      _iso(F.col("last_seen")), F.lit(" UTC"))
    lag = F.concat(F.lit("; lag "), _text("lag_start"), F.lit(" → "), _text("lag_end"))
    return F.concat(text, window, lag, release)


def finalize_stuck(df: DataFrame, rules: StuckRules) -> DataFrame:
    """Contract columns of gold.stuck_queues (DESIGN.md §4)."""
    return df.select(
        *QUEUE_KEY, "owner", "stuck_since", "last_seen", "stuck_minutes",
        F.col("committed_offset").cast("long").alias("committed_offset"),
        F.col("lag_end").cast("long").alias("lag_end"),
        F.col("blocking_offset").cast("long").alias("blocking_offset"),
        F.col("in_flight_span").cast("long").alias("in_flight_span"),
        "flow_controlled", "redelivery_risk",
        F.col("released_at").cast("timestamp").alias("released_at"),
        "root_cause", evidence().alias("evidence"),
        severity(F.col("root_cause"), F.col("lag_end"), F.col("stuck_minutes"),
                 rules.critical_lag, rules.critical_minutes).alias("severity"),
        "date").select(*COLUMNS)


def lasting_stuck_episodes(queue_state_df: DataFrame, rules: StuckRules, *,
                           models_df: DataFrame) -> DataFrame:
    """The episodes worth explaining. Small, and read several times by
    ``explain_stuck_episodes``: the pipeline stages it so the snapshot windows run once.
    Broadcasting and pop groups (``jobs.rules.models``) are never stuck: broadcast offsets live on
    the clients and the broker's committed offset never moves (facts §2.4); pop has no queue
    owner to be stuck."""
    queues = without_groups(queue_state_df, excluded_groups(models_df))
    snapshots = stuck_snapshots(queues, rules.max_snapshot_gap_seconds,
                                single_snapshots=rules.stuck_min_duration_seconds == 0)
    return stuck_episodes(snapshots, queues, rules)


def explain_stuck_episodes(episodes_df: DataFrame, process_queues_df: DataFrame,
                           client_config_df: DataFrame, consume_status_df: DataFrame,
                           log_events_df: DataFrame, rules: StuckRules,
                           orphaned_df: DataFrame | None = None,
                           master_down_windows_df: DataFrame | None = None, *,
                           queue_state_df: DataFrame,
                           group_context_df: DataFrame | None = None) -> DataFrame:
    """Lasting episodes plus their running-info, offset and log evidence → gold.stuck_queues.
    ``master_down_windows_df``: ``jobs.rules.master_down.build_master_down_windows`` (MASTER_DOWN
    needs it; without it no episode gets that cause). ``group_context_df``: gold.group_context
    (SUBSCRIPTION_INCONSISTENT needs it; without it no episode gets that cause)."""
    joined = episodes_df
    pinned = pinned_snapshots(episodes_df, process_queues_df)
    for part in (process_queue_evidence(episodes_df, process_queues_df, client_config_df, rules,
                                        pinned),
                 consume_status_evidence(episodes_df, consume_status_df, pinned),
                 other_queues_evidence(episodes_df, queue_state_df),
                 log_evidence(episodes_df, log_events_df)):
        joined = joined.join(part, on=EPISODE_KEY, how="left")
    if master_down_windows_df is None:
        joined = joined.select("*", F.lit(None).cast("boolean").alias("_master_down"),
                               F.lit(None).cast("long").alias("_md_blocking_offset"),
                               F.lit(None).cast("string").alias("_md_evidence"))
    else:
        joined = joined.join(master_down_episodes(
            episodes_df, master_down_windows_df, log_events_df,
            rules.max_snapshot_gap_seconds).select(
                *EPISODE_KEY, "_master_down", "_md_blocking_offset", "_md_evidence"),
            on=EPISODE_KEY, how="left")
    if group_context_df is None:
        joined = joined.withColumn("_non_subscribers", F.lit(None).cast("array<string>"))
    else:
        joined = joined.join(subscription_evidence(episodes_df, group_context_df), on=EPISODE_KEY,
                             how="left")
    if orphaned_df is None:
        joined = joined.withColumn("_orphaned", F.lit(None).cast("boolean"))
    else:
        joined = joined.join(orphaned_during(episodes_df, orphaned_df), on=EPISODE_KEY,
                             how="left")
    return finalize_stuck(with_root_cause(joined), rules)


def build_stuck_queues(queue_state_df: DataFrame, process_queues_df: DataFrame,
                       client_config_df: DataFrame, consume_status_df: DataFrame,
                       log_events_df: DataFrame, rules: StuckRules,
                       orphaned_df: DataFrame | None = None, *,
                       models_df: DataFrame,
                       master_down_windows_df: DataFrame | None = None,
                       group_context_df: DataFrame | None = None) -> DataFrame:
    """The whole detector: silver frames (and bronze client-log events, gold.orphaned_queues,
    the master-down windows) in, gold.stuck_queues out."""
    return explain_stuck_episodes(lasting_stuck_episodes(queue_state_df, rules,
                                                         models_df=models_df),
                                  process_queues_df, client_config_df, consume_status_df,
                                  log_events_df, rules, orphaned_df, master_down_windows_df,
                                  queue_state_df=queue_state_df, group_context_df=group_context_df)
