"""A broker group's master down under a failing consumer (DESIGN.md §5.3, rocketmq-facts.md §10).

While broker group B has no master, a concurrent consumer that fails a message of B cannot hand it
back: the hand-back goes to B's master only, and its fallback send to ``%RETRY%<group>`` needs a
master that hosts that topic. The client keeps the message and retries it locally every ~10 s
(4.9.x) or ~5 s (5.x), with no bound and no DLQ, and the queue's committed offset stays pinned at it
until B's master returns (facts §10.1, §10.2). Flat offsets alone prove nothing: this module only
reads evidence that B's master was gone (§5 "Evidence, not absence"):

- ``offsets``: snapshots of B's queues answered by a node with ``broker_id`` ≠ 0 — admin tools
  fall back to a slave while the master is down (facts §10.4); ``broker_id`` 0 shows it back.
  A null ``broker_id`` (the collector does not record it) says nothing either way;
- ``route``: a ``the topic[…] route info changed, old[…] ,new[…]`` line (3.x ``odl[``) whose new
  route lists B without a ``0=`` address; one with ``0=`` shows the master back (facts §10.3: the
  name server removes only the master's address, the slave and the queues stay);
- ``send-back``: ``sendMessageBack exception, group: G msg: MessageExt [brokerName=B, …]`` lines
  of one ``msgId`` repeating with a rising ``reconsumeTimes``. The client writes that line only
  when the hand-back and its fallback both failed (facts §10.1), once per local retry, so a
  repeat is the unbounded local loop, not a one-off network error;
- ``pull``: 5.x slave-only state, ``execute the pull request exception`` lines naming B's queues
  (the slave rejects every pull, ``[REJECTREQUEST]system busy``, retried every second; facts
  §10.3). The rejection text is on the exception's own line, which carries no template, so a
  queue counts from ``PULL_REJECT_MIN_LINES`` lines in a row on (each within
  ``PULL_RUN_MAX_GAP_SECONDS`` of the last): one failed pull is a network blip, and so is the one
  line per queue a client writes as it shuts down.

The master-down window of B is cluster-wide (any group, any host): from the earliest evidence of
absence to the earliest evidence of return after it (null while not back). Log lines carry no
cluster; they apply to every cluster whose offsets name the broker.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.columns import plus_seconds

QUEUE_KEY = ["cluster", "group", "topic", "broker_name", "queue_id"]
WINDOW_KEY = ["cluster", "broker_name"]
WINDOW_COLUMNS = [*WINDOW_KEY, "down_from", "down_until", "down_evidence", "return_evidence",
                  "date"]
# a 5.x slave rejects pulls every pullTimeDelayMillsWhenException (1 s): three in a row are no blip
PULL_REJECT_MIN_LINES = 3
# ... in a row: a queue's next line within this many seconds. A client shutting down fails each
# in-flight pull once (one line per queue, any broker): on the real cluster those lines came 32 s
# after broker-b's outage lines and opened a second, never-closed window (README difference 14)
PULL_RUN_MAX_GAP_SECONDS = 10
# A client logs a route change at its next route poll (pollNameServerInterval, 30 s; facts §10.3), so
# the return evidence can come up to this long after the master is back, while the collector, which
# asks the name server each round, already reads the returned master's offsets (README difference 20)
ROUTE_POLL_SECONDS = 30


def _hhmmss(ts: Column) -> Column:
    return F.date_format(ts, "HH:mm:ss")


def _log_evidence(log_events_df: DataFrame) -> DataFrame:
    """(broker_name, ts, present, detail) from the three client-log templates."""
    # bronze keeps only the lines that parsed (the others are quarantined)
    events = log_events_df.where(F.col("event").isin(
        "ROUTE_CHANGED", "SEND_BACK_FAILED", "PULL_EXCEPTION"))
    host = F.coalesce(F.col("host"), F.lit("?"))
    route = (events.where(F.col("event") == "ROUTE_CHANGED")
             .select("ts", "topic", host.alias("_host"),
                     F.explode("route_brokers").alias("_b"))
             .select(F.col("_b.broker_name").alias("broker_name"), "ts",
                     F.col("_b.master_addr").isNotNull().alias("present"),
                     F.concat(F.lit("route change of "), F.col("topic"), F.lit(" on host "),
                              F.col("_host")).alias("detail")))
    mq = F.element_at("queues", 1)
    send_back = events.where(F.col("event") == "SEND_BACK_FAILED").select(
        "group", "msg_id", "ts", "reconsume_times", mq.getField("broker_name").alias("broker_name"))
    looping = (send_back.where(F.col("broker_name").isNotNull())
               .groupBy("group", "broker_name", "msg_id")
               .agg(F.count(F.lit(1)).alias("_lines"),
                    F.min("reconsume_times").alias("_lo"), F.max("reconsume_times").alias("_hi"))
               .where((F.col("_lines") >= 2) & (F.col("_hi") > F.col("_lo")))
               .select("group", "broker_name", "msg_id"))
    loop = (send_back.join(looping, on=["group", "broker_name", "msg_id"], how="left_semi")
            .select("broker_name", "ts", F.lit(False).alias("present"),
                    F.concat(F.lit("sendMessageBack failures of "), F.col("group"))
                    .alias("detail")))
    pulls = events.where((F.col("event") == "PULL_EXCEPTION") & F.col("queues").isNotNull()).select(
        "group", "ts", mq.getField("topic").alias("topic"),
        mq.getField("broker_name").alias("broker_name"),
        mq.getField("queue_id").alias("queue_id"))
    # runs of one queue's lines, cut where the next comes more than PULL_RUN_MAX_GAP_SECONDS later
    queue_key = ["group", "topic", "broker_name", "queue_id"]
    order = Window.partitionBy(*queue_key).orderBy("ts")
    gap = F.unix_millis("ts") - F.unix_millis(F.lag("ts").over(order))
    starts = F.when(gap.isNull() | (gap > PULL_RUN_MAX_GAP_SECONDS * 1000), 1).otherwise(0)
    runs = (pulls.withColumn("_start", starts)
            .withColumn("_run", F.sum("_start").over(
                order.rowsBetween(Window.unboundedPreceding, Window.currentRow))))
    rejecting = (runs.groupBy(*queue_key, "_run").agg(F.count(F.lit(1)).alias("_lines"))
                 .where(F.col("_lines") >= PULL_REJECT_MIN_LINES).drop("_lines"))
    rejected = (runs.join(rejecting, on=[*queue_key, "_run"], how="left_semi")
                .select("broker_name", "ts", F.lit(False).alias("present"),
                        F.concat(F.lit("pulls of "), F.col("group"), F.lit(" rejected"))
                        .alias("detail")))
    return route.unionByName(loop).unionByName(rejected)


def master_evidence(offsets_df: DataFrame, log_events_df: DataFrame) -> DataFrame:
    """Every piece of evidence of a master being gone (``present`` false) or back (true):
    ``cluster, broker_name, ts, present, detail``. Offsets give one row per broker and snapshot
    time: present when any queue of the broker was answered by ``broker_id`` 0."""
    if "broker_id" not in offsets_df.columns:  # optional (DESIGN.md §3.1): unknown
        offsets_df = offsets_df.withColumn("broker_id", F.lit(None).cast("long"))
    answered = offsets_df.where(F.col("broker_id").isNotNull())
    offsets = (answered.groupBy(*WINDOW_KEY, "ts")
               .agg(F.max((F.col("broker_id") == 0).cast("int")).alias("_master"))
               .select(*WINDOW_KEY, "ts", (F.col("_master") == 1).alias("present"),
                       F.when(F.col("_master") == 1,
                              F.lit("offsets answered by the master (broker_id 0)"))
                       .otherwise(F.lit("offsets answered by a slave (broker_id ≠ 0)"))
                       .alias("detail")))
    clusters = offsets_df.select(*WINDOW_KEY).distinct()
    logs = _log_evidence(log_events_df).join(clusters, on="broker_name", how="inner")
    return offsets.unionByName(logs.select(*WINDOW_KEY, "ts", "present", "detail"))


def master_down_windows(evidence_df: DataFrame) -> DataFrame:
    """Windows of a broker group without its master (``WINDOW_COLUMNS``, silver.master_down_windows):
    one per run of absence evidence, from its earliest piece (``down_evidence`` names it) to the
    earliest evidence of return after it (``down_until`` null while not back; ``date`` is the UTC
    day of ``down_from``). At equal times absence comes first."""
    order = Window.partitionBy(*WINDOW_KEY).orderBy("ts", "present")
    running = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    prev_present = F.lag("present").over(order)
    starts = ~F.col("present") & (prev_present.isNull() | prev_present)
    runs = (evidence_df.withColumn("_start", F.when(starts, 1).otherwise(0))
            .withColumn("_run", F.sum("_start").over(running))
            .where(F.col("_run") > 0))
    absent, present = ~F.col("present"), F.col("present")
    return (runs.groupBy(*WINDOW_KEY, "_run").agg(
        F.min(F.when(absent, F.struct("ts", "detail"))).alias("_down"),
        F.min(F.when(present, F.struct("ts", "detail"))).alias("_back"))
        .select(*WINDOW_KEY, F.col("_down.ts").alias("down_from"),
                F.col("_back.ts").alias("down_until"),
                F.col("_down.detail").alias("down_evidence"),
                F.col("_back.detail").alias("return_evidence"),
                F.to_date(F.col("_down.ts")).alias("date")))


def build_master_down_windows(offsets_df: DataFrame, log_events_df: DataFrame) -> DataFrame:
    """Offsets (bronze or silver: ``cluster, broker_name, ts, broker_id``) and bronze client-log
    events in, silver.master_down_windows out."""
    return master_down_windows(master_evidence(offsets_df, log_events_df))


def _overlaps(start: Column, end: Column) -> Column:
    """The window [down_from, down_until] overlaps [start, end] (an open window runs on)."""
    return (F.col("down_from") <= end) & (F.col("down_until").isNull()
                                         | (F.col("down_until") >= start))


def master_down_episodes(episodes_df: DataFrame, windows_df: DataFrame,
                         log_events_df: DataFrame, lead_seconds: int) -> DataFrame:
    """Per stuck episode of a queue of broker B that starts while B's master is gone (or up to
    ``lead_seconds`` — one snapshot gap — before its first evidence): ``_master_down`` true, the
    looping message from this queue's ``sendMessageBack exception`` lines of the episode
    (``_md_blocking_offset`` its queueOffset, ``_md_msg_id``, ``_md_retries`` the highest local
    reconsumeTimes) and ``_md_evidence``, the sentence naming B, the window and its evidence.
    ``episodes_df``: the stuck episodes (queue key, ``_episode``, ``stuck_since``,
    ``last_seen``)."""
    key = [*QUEUE_KEY, "_episode"]
    hits = (episodes_df.select(*key, "stuck_since", "last_seen")
            .join(windows_df, on=WINDOW_KEY, how="inner")
            .where(_overlaps(F.col("stuck_since"), F.col("last_seen"))
                   & (F.col("stuck_since") >= plus_seconds(F.col("down_from"), -lead_seconds)))
            .groupBy(*key).agg(F.min(F.struct("down_from", "down_until", "down_evidence"))
                               .alias("_w")))
    mq = F.element_at("queues", 1)
    send_back = log_events_df.where(F.col("event") == "SEND_BACK_FAILED").select(
        "group", mq.getField("topic").alias("topic"),
        mq.getField("broker_name").alias("broker_name"),
        mq.getField("queue_id").alias("queue_id"), F.col("ts").alias("_at"),
        F.col("offset").alias("_offset"), "msg_id", "reconsume_times")
    bounds = episodes_df.select(*key, "stuck_since", "last_seen")
    loops = (bounds.join(send_back, on=["group", "topic", "broker_name", "queue_id"], how="inner")
             .where(F.col("_at") <= F.col("last_seen"))
             # the loop starts before the pinned offset's first snapshot
             .where(F.col("_at") >= plus_seconds(F.col("stuck_since"), -lead_seconds))
             .groupBy(*key).agg(
                 F.min(F.struct("_offset", "msg_id")).alias("_m"),
                 F.max("reconsume_times").alias("_md_retries")))
    window = F.col("_w")
    back = F.when(window["down_until"].isNotNull(), F.concat(
        F.lit(", back at "), _hhmmss(window["down_until"]), F.lit(" UTC"))).otherwise(
        F.lit(", not back by the last evidence"))
    message = F.when(F.col("_m").isNotNull(), F.concat(
        F.lit("; msgId "), F.col("_m.msg_id"),
        F.lit(" at offset "), F.col("_m._offset").cast("string"),
        F.lit(" failed and cannot go back to the broker: retried locally "),
        F.coalesce(F.col("_md_retries").cast("string"), F.lit("?")),
        F.lit(" times, no DLQ"))).otherwise(F.lit(
            "; no sendMessageBack failure of this queue in the client logs"))
    evidence = F.concat(
        F.col("broker_name"), F.lit("'s master was gone from "), _hhmmss(window["down_from"]),
        F.lit(" UTC ("), window["down_evidence"], F.lit(")"), back, message)
    return (hits.join(loops, on=key, how="left")
            .select(*key, F.lit(True).alias("_master_down"),
                    F.col("_m._offset").alias("_md_blocking_offset"),
                    F.col("_m.msg_id").alias("_md_msg_id"), "_md_retries",
                    evidence.alias("_md_evidence")))


def return_regressions(queue_offsets_df: DataFrame, windows_df: DataFrame,
                       master_return_window_seconds: int) -> DataFrame:
    """Snapshots of B's queues whose committed offset went back within
    ``master_return_window_seconds`` after B's master returned: the master starts from its
    pre-outage offset table (the slave's outage commits are overwritten, facts §10.3) until the
    owner commits again. The return is known from its evidence, which a client's route poll may
    give up to ``ROUTE_POLL_SECONDS`` late, so a decrease that early (and inside the window) counts
    too. Accepted, not a reset: ``QUEUE_KEY``, ``ts``, ``_back_from`` (the offset before) and
    ``_back_to``."""
    returned = (windows_df.where(F.col("down_until").isNotNull())
                .select(*WINDOW_KEY, "down_from", "down_until"))
    since = F.greatest(F.col("down_from"), plus_seconds(F.col("down_until"), -ROUTE_POLL_SECONDS))
    until = plus_seconds(F.col("down_until"), master_return_window_seconds)
    return (queue_offsets_df.where(F.col("consumer_offset_delta") < 0)
            .join(returned, on=WINDOW_KEY, how="inner")
            .where((F.col("ts") > F.col("down_from")) & (F.col("ts") >= since) & (F.col("ts") <= until))
            .select(*QUEUE_KEY, "ts",
                    (F.col("consumer_offset") - F.col("consumer_offset_delta"))
                    .alias("_back_from"), F.col("consumer_offset").alias("_back_to"))
            .distinct())


def bridged_return_regressions(queue_state_df: DataFrame, regressions_df: DataFrame,
                               master_return_window_seconds: int) -> DataFrame:
    """silver.queue_state as the stuck detector reads it: the stale snapshots B's returned master
    reports (``return_regressions``: its pre-outage offset, below the one before it) are left out,
    and the next snapshot continues from the one before them — its ``prev_ts`` is that snapshot's
    and its ``consumer_offset_delta`` counts from the offset before the regression (``_back_from``).

    A stale snapshot is one within ``master_return_window_seconds`` of a regression of its queue,
    at or after it, whose committed offset is below that regression's ``_back_from``. The offset
    the client committed is the same before and after the blip, so a pin spanning the master's
    return is one episode: on the real cluster a ``%RETRY%`` queue pinned at 48 for 80 s read 48,
    44 (the returned master), 48 and was cut into 40 s + 20 s (tests/data/real-cluster/README.md,
    difference 18)."""
    window_ms = master_return_window_seconds * 1000
    regressions = (regressions_df.select(*QUEUE_KEY, F.col("ts").alias("_r_ts"), "_back_from")
                   .join(queue_state_df.select(*QUEUE_KEY, F.col("ts").alias("_r_ts"),
                                               F.col("prev_ts").alias("_r_prev_ts")),
                         on=[*QUEUE_KEY, "_r_ts"], how="inner"))
    stale = (queue_state_df.select(*QUEUE_KEY, "ts", "consumer_offset")
             .join(regressions, on=QUEUE_KEY, how="inner")
             .where((F.col("ts") >= F.col("_r_ts"))
                    & (F.unix_millis("ts") <= F.unix_millis("_r_ts") + F.lit(window_ms))
                    & (F.col("consumer_offset") < F.col("_back_from")))
             .groupBy(*QUEUE_KEY, "ts")
             .agg(F.max_by("_r_prev_ts", "_r_ts").alias("_r_prev_ts"),
                  F.max_by("_back_from", "_r_ts").alias("_back_from")))
    after = stale.select(*QUEUE_KEY, F.col("ts").alias("prev_ts"), "_r_prev_ts", "_back_from")
    kept = queue_state_df.join(stale.select(*QUEUE_KEY, "ts"), on=[*QUEUE_KEY, "ts"], how="left_anti")
    return (kept.join(after, on=[*QUEUE_KEY, "prev_ts"], how="left")
            .withColumn("consumer_offset_delta", F.when(
                F.col("_back_from").isNotNull(), F.col("consumer_offset") - F.col("_back_from"))
                .otherwise(F.col("consumer_offset_delta")))
            .withColumn("prev_ts", F.coalesce("_r_prev_ts", "prev_ts"))
            .drop("_r_prev_ts", "_back_from")
            .select(*queue_state_df.columns))


def without_return_regressions(episodes_df: DataFrame, regressions_df: DataFrame) -> DataFrame:
    """Stuck episodes minus those that start at an accepted post-return regression: the stale
    offset the returned master reports is no stuck episode of its own (DESIGN.md §5.3)."""
    starts = regressions_df.select(*QUEUE_KEY, F.col("ts").alias("stuck_since"))
    return episodes_df.join(starts, on=[*QUEUE_KEY, "stuck_since"], how="left_anti")


def groups_on_down_brokers(queue_offsets_df: DataFrame, windows_df: DataFrame) -> DataFrame:
    """Each group with queues on B while B's master was gone: ``cluster, group, date,
    broker_name, down_from, down_until`` (one row per group and window)."""
    seen = queue_offsets_df.select("cluster", "group", "broker_name", "ts", "date")
    return (seen.join(windows_df.select(*WINDOW_KEY, "down_from", "down_until"),
                      on=WINDOW_KEY, how="inner")
            .where((F.col("ts") >= F.col("down_from"))
                   & (F.col("down_until").isNull() | (F.col("ts") <= F.col("down_until"))))
            .select("cluster", "group", "date", "broker_name", "down_from", "down_until")
            .distinct())


def with_master_return(stuck_df: DataFrame, queue_state_df: DataFrame, windows_df: DataFrame,
                       master_return_window_seconds: int) -> DataFrame:
    """gold.stuck_queues rows with what B's master's return does to their MASTER_DOWN rows
    (DESIGN.md §5.3); other rows unchanged.

    - ``released_at``: the first snapshot after the episode whose committed offset passes
      ``blocking_offset`` — not the returned master's old, lower offset that may show first;
    - ``redelivery_risk``: when the queue changes owner within ``master_return_window_seconds``
      of the return while the broker still reports an offset below the highest committed before
      the change, the new owner starts there and consumes those messages again: the larger of that
      count and the row's own (messages after the pinned one already consumed).
    ``queue_state_df``: silver.queue_state (``owners`` per snapshot)."""
    key = ["cluster", "group", "topic", "broker_name", "queue_id"]
    rows = stuck_df.where(F.col("root_cause") == "MASTER_DOWN").select(
        *key, "stuck_since", "blocking_offset")
    state = queue_state_df.select(*key, "ts", "consumer_offset", "owners")
    passed = (rows.join(state, on=key, how="inner")
              .where((F.col("ts") > F.col("stuck_since"))
                     & (F.col("consumer_offset") > F.col("blocking_offset")))
              .groupBy(*key, "stuck_since").agg(F.min("ts").alias("_passed_at")))
    returned = (windows_df.where(F.col("down_until").isNotNull())
                .select("cluster", "broker_name", "down_from", "down_until"))
    order = Window.partitionBy(*key).orderBy("ts")
    running = order.rowsBetween(Window.unboundedPreceding, -1)
    near = (rows.join(returned, on=["cluster", "broker_name"], how="inner")
            .where(F.col("stuck_since") <= F.col("down_until"))
            .join(state, on=key, how="inner")
            .where((F.col("ts") >= F.col("down_from"))
                   & (F.col("ts") <= plus_seconds(F.col("down_until"),
                                                  master_return_window_seconds)))
            .select(*key, "stuck_since", "ts", "down_until", "consumer_offset",
                    F.array_sort("owners").alias("_owners"),
                    F.lag(F.array_sort("owners")).over(order).alias("_before"),
                    F.max("consumer_offset").over(running).alias("_highest")))
    # an owner set that changes, not one that empties or fills (unknown is no change)
    moved = (near.where((F.col("ts") >= F.col("down_until")) & (F.size("_before") > 0)
                        & (F.size("_owners") > 0) & (F.col("_owners") != F.col("_before")))
             .groupBy(*key, "stuck_since")
             .agg(F.max(F.greatest(F.col("_highest") - F.col("consumer_offset"), F.lit(0)))
                  .alias("_again")))
    master_down = F.col("root_cause") == "MASTER_DOWN"
    # the evidence's last clause says how the episode ended (stuck_queues.evidence)
    release = F.when(F.col("_passed_at").isNotNull(), F.concat(
        F.lit("; the offset passed it at "), F.date_format("_passed_at", "yyyy-MM-dd HH:mm:ss"),
        F.lit(" UTC"))).otherwise(F.lit("; still stuck at the last snapshot"))
    evidence = F.concat(F.regexp_replace(
        "evidence", "; (the offset moved at [^;]* UTC|still stuck at the last snapshot)$", ""),
        release)
    return (stuck_df.join(passed, on=[*key, "stuck_since"], how="left")
            .join(moved, on=[*key, "stuck_since"], how="left")
            .withColumn("released_at", F.when(master_down, F.col("_passed_at"))
                        .otherwise(F.col("released_at")))
            .withColumn("evidence", F.when(master_down, evidence).otherwise(F.col("evidence")))
            .withColumn("redelivery_risk", F.when(master_down, F.greatest(
                F.col("redelivery_risk"), F.coalesce(F.col("_again"), F.lit(0)).cast("long")))
                .otherwise(F.col("redelivery_risk")))
            .select(*stuck_df.columns))
