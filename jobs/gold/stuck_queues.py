"""gold.stuck_queues: queues whose committed offset stands still while messages wait.

DESIGN.md §5: the committed offset is unchanged for ≥ stuck_min_duration while lag > 0 — Burrow's
STALL on RocketMQ data. Burrow's lessons hold by construction: a queue with lag 0 (idle) never
starts an episode, and any change of the committed offset ends one, so a moving queue is never
stuck. Root cause, first that holds:

- ``NO_OWNER``: the queue is in gold.orphaned_queues during the episode, or no live process
  owns it at any snapshot of the episode (a takeover that shows only at the last snapshot,
  before the new owner's first commit reaches the broker, does not count). A lagging orphaned
  queue is therefore in both gold.orphaned_queues and here — also when every consumer of the
  group stopped (DESIGN.md §4, §5 cause order).
- ``OWNER_DOWN``: the queue had a live owner during the episode but none at its last snapshot —
  commits stopped because the owner is gone (Burrow's STOP), not pinned by a live one.
- ``MASTER_DOWN``: the queue's broker group had no master when the episode started
  (``jobs.rules.master_down``, DESIGN.md §5.3): failed messages cannot go back and are retried
  locally, pinning the offset; ``blocking_offset`` is the looping message's queueOffset.
- ``SLOW_MESSAGE``: the owner is live and its running info shows ``cached_msg_min_offset`` = the
  committed offset while later messages finish (messages after it already consumed, or
  ``cached_msg_max_offset`` / ``last_consume_timestamp`` moving) — one hung listener call pins
  the commit, which is the smallest in-flight offset (facts §5.3); or the client logged
  ``send expire msg back`` for exactly that offset. RocketMQ's own "maybe blocked" check (60 s
  without any consume, facts §6.2) misses this case, because the other messages keep finishing.
- ``CONSUME_FAILING``: the owner is live and reports ``consume_failed_tps > 0`` for the topic at
  every running-info snapshot of the episode.
- ``UNKNOWN``: a live owner, no evidence either way.

Fields: ``blocking_offset`` = the pinned offset (SLOW_MESSAGE only); ``in_flight_span`` = the
largest ``cached_msg_max_offset − cached_msg_min_offset`` in the episode's running info;
``flow_controlled`` = that span reached the client's ``consumeConcurrentlyMaxSpan`` (its
properties, else the RocketMQ default; concurrent consumers only, never an orderly one) or a
flow-control log line names the queue at the pinned
``minOffset`` — the client stopped pulling it (facts §5.3); ``redelivery_risk`` = messages after
the pinned one already consumed (``max − min + 1 − cached_msg_count`` at a pinned snapshot), which
are delivered again if the queue moves to another client or the client restarts, since the broker
only knows the pinned commit; ``released_at`` = the ``send expire msg back`` line for the pinned
offset (the expired-message cleaner, facts §5.3), else the snapshot at which the offset jumped;
null while still stuck.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.columns import plus_seconds
from jobs.rules.episodes import minutes_between
from jobs.rules.master_down import master_down_episodes
from jobs.rules.models import excluded_groups, without_groups
from jobs.rules.severity import severity

QUEUE_KEY = ["cluster", "group", "topic", "broker_name", "queue_id"]
EPISODE_KEY = [*QUEUE_KEY, "_episode"]
COLUMNS = ["cluster", "group", "topic", "broker_name", "queue_id", "owner", "stuck_since",
           "last_seen", "stuck_minutes", "committed_offset", "lag_end", "blocking_offset",
           "in_flight_span", "flow_controlled", "redelivery_risk", "released_at", "root_cause",
           "evidence", "severity", "date"]
FLOW_CONTROL_EVENTS = ("FLOW_CONTROL_COUNT", "FLOW_CONTROL_SIZE", "FLOW_CONTROL_SPAN")


@dataclass(frozen=True)
class StuckRules:
    max_snapshot_gap_seconds: int
    stuck_min_duration_seconds: int
    consume_concurrently_max_span: int  # used when a client's properties do not say
    critical_lag: int
    critical_minutes: int


def stuck_snapshots(queue_state_df: DataFrame, max_gap_seconds: int) -> DataFrame:
    """queue_state rows with lag > 0, each with ``_episode``: consecutive snapshots (gaps ≤
    ``max_gap_seconds``) with lag > 0 and the same committed offset share one. ``_next_ts`` /
    ``_next_offset`` are the queue's following snapshot, which shows how an episode ended."""
    order = Window.partitionBy(*QUEUE_KEY).orderBy("ts")
    running = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    staged = queue_state_df.select(
        *QUEUE_KEY, "ts", "lag", "consumer_offset", "owners", "owner_count", "claimed_by", "date",
        F.coalesce((F.col("lag") > 0) & (F.col("queue_id") >= 0), F.lit(False)).alias("_flag"),
        F.lag("ts").over(order).alias("_prev_ts"),
        F.lag("consumer_offset").over(order).alias("_prev_offset"),
        F.lag("lag").over(order).alias("_prev_lag"),
        F.lead("ts").over(order).alias("_next_ts"),
        F.lead("consumer_offset").over(order).alias("_next_offset"))
    continues = ((F.col("_prev_lag") > 0)
                 & (F.col("_prev_offset") == F.col("consumer_offset"))
                 & (F.unix_millis("ts") - F.unix_millis("_prev_ts")
                    <= F.lit(max_gap_seconds * 1000)))
    starts = F.col("_flag") & ~F.coalesce(continues, F.lit(False))
    return (staged.withColumn("_start", F.when(starts, 1).otherwise(0))
            .withColumn("_episode", F.sum("_start").over(running))
            .where("_flag")
            .drop("_start", "_flag", "_prev_ts", "_prev_offset", "_prev_lag"))


def stuck_episodes(snapshots_df: DataFrame, rules: StuckRules) -> DataFrame:
    """One row per episode lasting ≥ stuck_min_duration, with who owned the queue during it.

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
        F.max_by("_next_ts", "ts").alias("_next_ts"),
        F.max_by("_next_offset", "ts").alias("_next_offset"),
        F.min(F.when(owned, F.col("ts"))).alias("_live_first_at"),
        F.max(F.when(owned, F.col("ts"))).alias("_live_last_at"),
        F.max(F.when(~owned, F.col("ts"))).alias("_unowned_last_at"),
        F.min(F.when(owned, first_owner)).alias("_first_owner"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("claimed_by"))))
        .alias("_claimed_by"),
        F.max("date").alias("date"),
    )
    minutes = minutes_between(F.col("stuck_since"), F.col("last_seen"))
    return (episodes.withColumn("stuck_minutes", minutes)
            .where(F.col("stuck_minutes") * 60 >= rules.stuck_min_duration_seconds)
            .withColumn("_until", F.coalesce(
                "_next_ts", plus_seconds(F.col("last_seen"), rules.max_snapshot_gap_seconds))))


def running_info_evidence(episodes_df: DataFrame, process_queues_df: DataFrame,
                          client_config_df: DataFrame, consume_status_df: DataFrame,
                          rules: StuckRules) -> DataFrame:
    """Per episode, what the clients' running info (snapshots in [stuck_since, next snapshot))
    says about the queue: the in-flight span, whether it reached the client's
    consumeConcurrentlyMaxSpan, whether the smallest cached offset is pinned at the committed
    offset while later messages finish, and the consume failure rate."""
    window = episodes_df.select(*EPISODE_KEY, "committed_offset", "stuck_since", "_until")
    pq = process_queues_df.where(~F.col("dropped")).select(
        *QUEUE_KEY, "client_id", "ts", "cached_msg_min_offset", "cached_msg_max_offset",
        "cached_msg_count", "last_consume_at")
    cfg = client_config_df.select("cluster", "group", "client_id", "ts",
                                  "consume_concurrently_max_span", "is_orderly")
    status = consume_status_df.select("cluster", "group", "client_id", "ts", "topic",
                                      "consume_failed_tps")
    rows = (window.join(pq, on=QUEUE_KEY, how="inner")
            .where((F.col("ts") >= F.col("stuck_since")) & (F.col("ts") < F.col("_until")))
            .join(cfg, on=["cluster", "group", "client_id", "ts"], how="left")
            .join(status, on=["cluster", "group", "client_id", "ts", "topic"], how="left"))
    cached = F.coalesce(F.col("cached_msg_count"), F.lit(0)) > 0
    span = F.when(cached, F.col("cached_msg_max_offset") - F.col("cached_msg_min_offset"))
    max_span = F.coalesce("consume_concurrently_max_span",
                          F.lit(rules.consume_concurrently_max_span))
    # Messages in (min, max] that are no longer cached have finished (facts §5.3, msgTreeMap).
    finished = (F.col("cached_msg_max_offset") - F.col("cached_msg_min_offset") + 1
                - F.col("cached_msg_count"))
    staged = rows.select(
        *EPISODE_KEY, "client_id", "cached_msg_max_offset", "last_consume_at",
        "consume_failed_tps",
        F.coalesce(span, F.lit(0)).cast("long").alias("_span"),
        # RocketMQ checks the span for concurrent consumers only (facts §5.3)
        F.coalesce((span >= max_span) & ~F.coalesce("is_orderly", F.lit(False)),
                   F.lit(False)).alias("_span_limited"),
        (cached & (F.col("cached_msg_min_offset") == F.col("committed_offset"))).alias("_pinned"),
        finished.cast("long").alias("_finished"))
    pinned = F.col("_pinned")
    return staged.groupBy(*EPISODE_KEY).agg(
        F.max("_span").alias("in_flight_span"),
        F.max(F.col("_span_limited").cast("int")).alias("_span_limited"),
        F.sum(pinned.cast("int")).alias("_pinned_rows"),
        F.max(F.when(pinned, F.col("_finished"))).alias("_finished"),
        F.min(F.when(pinned, F.col("cached_msg_max_offset"))).alias("_pinned_max_lo"),
        F.max(F.when(pinned, F.col("cached_msg_max_offset"))).alias("_pinned_max_hi"),
        F.min(F.when(pinned, F.col("last_consume_at"))).alias("_consumed_lo"),
        F.max(F.when(pinned, F.col("last_consume_at"))).alias("_consumed_hi"),
        F.array_sort(F.collect_set(F.when(pinned, F.col("client_id")))).alias("_pinned_by"),
        F.count("consume_failed_tps").alias("_status_rows"),
        F.count(F.when(F.col("consume_failed_tps") > 0, F.lit(1))).alias("_failing_rows"))


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


def with_root_cause(df: DataFrame) -> DataFrame:
    """``root_cause`` (first that holds, see the module docstring) and the fields it decides."""
    never_owned = (F.coalesce(F.col("_orphaned"), F.lit(False))
                   | F.col("_live_first_at").isNull()
                   | (F.col("_live_first_at") == F.col("last_seen")))
    owner_gone = (F.col("_unowned_last_at") == F.col("last_seen")) & (
        F.col("_live_first_at") < F.col("last_seen"))
    master_down = F.coalesce(F.col("_master_down"), F.lit(False))  # jobs.rules.master_down
    later_finished = ((F.coalesce("_finished", F.lit(0)) > 0)
                      | (F.col("_pinned_max_hi") > F.col("_pinned_max_lo"))
                      | (F.col("_consumed_hi") > F.col("_consumed_lo")))
    slow = ((F.coalesce("_pinned_rows", F.lit(0)) > 0) & later_finished) | F.col(
        "_sent_back_at").isNotNull()
    failing = (F.coalesce("_status_rows", F.lit(0)) > 0) & (
        F.col("_failing_rows") == F.col("_status_rows"))
    cause = (F.when(never_owned, F.lit("NO_OWNER"))
             .when(owner_gone, F.lit("OWNER_DOWN"))
             .when(master_down, F.lit("MASTER_DOWN"))
             .when(slow, F.lit("SLOW_MESSAGE"))
             .when(failing, F.lit("CONSUME_FAILING"))
             .otherwise(F.lit("UNKNOWN")))
    jumped = ((F.col("_next_offset") != F.col("committed_offset"))
              & (F.col("_next_ts") <= F.col("_until")))
    return (df.withColumn("root_cause", cause)
            .withColumn("owner", F.when(F.col("root_cause") != "NO_OWNER",
                                        F.col("_first_owner").getField("client_id")))
            .withColumn("blocking_offset", F.when(F.col("root_cause") == "SLOW_MESSAGE",
                                                  F.col("committed_offset"))
                        .when(F.col("root_cause") == "MASTER_DOWN",
                              F.coalesce("_md_blocking_offset", "committed_offset")))
            .withColumn("flow_controlled",
                        F.coalesce(F.col("_span_limited") == 1, F.lit(False))
                        | F.coalesce(F.col("_fc_lines") > 0, F.lit(False)))
            .withColumn("redelivery_risk", F.greatest(F.coalesce("_finished", F.lit(0)),
                                                      F.lit(0)).cast("long"))
            .withColumn("released_at", F.coalesce(
                "_sent_back_at", F.when(jumped, F.col("_next_ts")))))


def _iso(ts: Column) -> Column:
    return F.date_format(ts, "yyyy-MM-dd HH:mm:ss")


def _text(col: str) -> Column:
    return F.coalesce(F.col(col).cast("string"), F.lit("?"))


def evidence() -> Column:
    """A sentence naming the clients, offsets and times that show the cause."""
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
    text = (
        F.when(rc == "NO_OWNER", F.concat(
            F.lit("no live process owned the queue"), F.coalesce(claimants, F.lit("")),
            F.lit(", so nobody commits past offset "), offset))
        .when(rc == "OWNER_DOWN", F.concat(
            F.lit("owner "), _text("owner"), F.lit(" was last live at "),
            _iso(F.col("_live_last_at")),
            F.lit(" UTC and nobody took the queue over; its last commit "), offset,
            F.lit(" stays")))
        .when(rc == "SLOW_MESSAGE", F.concat(
            F.lit("message "), offset, F.lit(" hangs in "),
            F.when(F.size("_pinned_by") > 0, F.array_join("_pinned_by", ", "))
            .otherwise(_text("owner")),
            F.lit(": cached_msg_min_offset = commit offset while "),
            _text("redelivery_risk"),
            F.lit(" later messages finished (in-flight span "), _text("in_flight_span"),
            F.when(F.col("flow_controlled"), F.lit(", flow-controlled")).otherwise(F.lit("")),
            F.lit("); they are consumed again if the queue moves or the client restarts")))
        .when(rc == "MASTER_DOWN", F.concat(
            F.col("_md_evidence"), F.lit("; offset pinned at "), offset))
        .when(rc == "CONSUME_FAILING", F.concat(
            F.lit("owner "), _text("owner"),
            F.lit(" reports consume_failed_tps > 0 for the topic at every running-info snapshot;"
                  " the commit stays at "), offset))
        .otherwise(F.concat(
            F.lit("owner "), _text("owner"), F.lit(" is live but the commit stays at "), offset,
            F.lit("; its running info shows no pinned message"))))
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
    """The episodes worth explaining. Small, and read three times by ``explain_stuck_episodes``:
    the pipeline stages it so the snapshot windows run once. Broadcasting and pop groups
    (``jobs.rules.models``) are never stuck: broadcast offsets live on the clients and the
    broker's committed offset never moves (facts §2.4); pop has no queue owner to be stuck."""
    queues = without_groups(queue_state_df, excluded_groups(models_df))
    return stuck_episodes(stuck_snapshots(queues, rules.max_snapshot_gap_seconds), rules)


def explain_stuck_episodes(episodes_df: DataFrame, process_queues_df: DataFrame,
                           client_config_df: DataFrame, consume_status_df: DataFrame,
                           log_events_df: DataFrame, rules: StuckRules,
                           orphaned_df: DataFrame | None = None,
                           master_down_windows_df: DataFrame | None = None) -> DataFrame:
    """Lasting episodes plus their running-info and log evidence → gold.stuck_queues.
    ``master_down_windows_df``: ``jobs.rules.master_down.build_master_down_windows`` (MASTER_DOWN
    needs it; without it no episode gets that cause)."""
    ri = running_info_evidence(episodes_df, process_queues_df, client_config_df,
                               consume_status_df, rules)
    logs = log_evidence(episodes_df, log_events_df)
    joined = (episodes_df.join(ri, on=EPISODE_KEY, how="left")
              .join(logs, on=EPISODE_KEY, how="left"))
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
                       master_down_windows_df: DataFrame | None = None) -> DataFrame:
    """The whole detector: silver frames (and bronze client-log events, gold.orphaned_queues,
    the master-down windows) in, gold.stuck_queues out."""
    return explain_stuck_episodes(lasting_stuck_episodes(queue_state_df, rules,
                                                         models_df=models_df),
                                  process_queues_df, client_config_df, consume_status_df,
                                  log_events_df, rules, orphaned_df, master_down_windows_df)
