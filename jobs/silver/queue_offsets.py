"""silver.queue_offsets: one row per (group, queue, snapshot) with lag, time lag and deltas."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from jobs.key_numbers import key_numbers
from jobs.lake import Stage, no_staging
from jobs.silver.dedup import filter_first_per_snapshot

QUEUE_KEY = ["cluster", "group", "topic", "broker_name", "queue_id"]
QUEUE_NO = ["_queue"]  # the queue's number (key_numbers) while the windows run


def owner_ip(client_ip):
    """``consumerProgress -s`` prints ``N/A`` when no reachable client owns the queue (facts §5.2)."""
    trimmed = F.trim(client_ip)
    return F.when(trimmed.isin("", "N/A"), F.lit(None).cast("string")).otherwise(trimmed)


def build_queue_offsets(offsets_df: DataFrame, stage: Stage = no_staging) -> DataFrame:
    """Bronze offsets → de-duplicated snapshots with ``lag`` and deltas to the previous snapshot.

    ``lag`` = broker_offset − consumer_offset, floored at 0: a consumer offset above the broker
    offset happens after broker-side truncation and means nothing to consume (DESIGN.md §3).
    ``last_consumed_at`` is the store time of the last consumed message (0 = none, facts §5.1).
    ``inflight`` = pull_offset − consumer_offset (5.1+ brokers only, facts §5.1).
    ``broker_reports_no_owner``: the collector's ``consumerProgress -s`` said ``N/A`` — no
    reachable client holds the queue (facts §5.2); null when the collector did not ask.
    ``broker_id``: the node that answered (0 = master; admin tools fall back to a slave while
    the master is down, DESIGN.md §3.1, facts §10.4); null when the collector does not say —
    unknown, never read as 0.
    ``min_offset``: the queue's minimum offset on the broker (messages below it are deleted with
    their commit-log file, DESIGN.md §3.1, §5.4); null when the collector does not report it —
    unknown, never read as 0.
    ``time_lag_seconds``: age of the oldest unconsumed message, see :func:`with_time_lag`, which
    ``stage`` serves.
    """
    if "broker_id" not in offsets_df.columns:  # optional (§3.1); bronze written before it
        offsets_df = offsets_df.withColumn("broker_id", F.lit(None).cast("long"))
    if "min_offset" not in offsets_df.columns:  # optional (§3.1); bronze written before it
        offsets_df = offsets_df.withColumn("min_offset", F.lit(None).cast("long"))
    # every window below runs over a queue number (key_numbers), the key's strings joined back at
    # the end; bronze requires the key, so the inner join drops no row
    queues = key_numbers(offsets_df, QUEUE_KEY, QUEUE_NO[0])
    snapshots = filter_first_per_snapshot(
        offsets_df.join(F.broadcast(queues), on=QUEUE_KEY)
        .select(*QUEUE_NO, "ts", "broker_offset", "consumer_offset", "pull_offset",
                "last_timestamp", "client_ip", "broker_id", "min_offset", "_source_file", "_line_no", "date"),
        QUEUE_NO)
    by_queue = Window.partitionBy(*QUEUE_NO).orderBy("ts")
    offsets = snapshots.select(
        *QUEUE_NO,
        "ts",
        "broker_offset",
        "consumer_offset",
        "pull_offset",
        F.greatest(F.col("broker_offset") - F.col("consumer_offset"), F.lit(0)).alias("lag"),
        F.when(F.col("pull_offset").isNotNull(),
               F.greatest(F.col("pull_offset") - F.col("consumer_offset"), F.lit(0)))
        .alias("inflight"),
        F.when(F.col("last_timestamp") > 0, F.timestamp_millis("last_timestamp"))
        .alias("last_consumed_at"),
        owner_ip(F.col("client_ip")).alias("owner_ip"),
        (F.trim("client_ip") == "N/A").alias("broker_reports_no_owner"),
        "broker_id",
        "min_offset",
        F.lag("ts").over(by_queue).alias("prev_ts"),
        (F.col("broker_offset") - F.lag("broker_offset").over(by_queue))
        .alias("broker_offset_delta"),
        (F.col("consumer_offset") - F.lag("consumer_offset").over(by_queue))
        .alias("consumer_offset_delta"),
        *snapshot_neighbours(by_queue),
        "date",
    )
    return (with_time_lag(offsets, QUEUE_NO, stage).join(F.broadcast(queues), on=QUEUE_NO)
            .withColumn("is_retry_topic", F.col("topic").startswith("%RETRY%"))
            .select(*COLUMNS))


COLUMNS = [*QUEUE_KEY, "ts", "broker_offset", "consumer_offset", "pull_offset", "lag",
           "time_lag_seconds", "inflight", "last_consumed_at", "owner_ip",
           "broker_reports_no_owner", "is_retry_topic", "broker_id", "min_offset", "prev_ts",
           "broker_offset_delta", "consumer_offset_delta", "date"]


NO_NEXT_SNAPSHOT = 2**63 - 1  # ``_next_ms`` of a queue's last snapshot
NEIGHBOURS = ["_next_ms", "_first_ms", "_prev_ms", "_prev_broker", "_min_later_broker"]


def snapshot_neighbours(by_queue: WindowSpec) -> list[Column]:
    """The ``NEIGHBOURS`` of each snapshot over ``by_queue`` (the queue's snapshots by ``ts``):
    ``_next_ms`` (the next snapshot, epoch ms; ``NO_NEXT_SNAPSHOT`` after the last), ``_first_ms``
    (the first), ``_prev_ms`` and ``_prev_broker`` (the previous one's time and broker offset) and
    ``_min_later_broker`` (the lowest broker offset of the snapshots after it): enough to place
    most consumer offsets on the queue's broker-offset history without sorting by offset
    (``with_time_lag``)."""
    ms = F.unix_millis(F.col("ts"))
    return [F.coalesce(F.lead(ms).over(by_queue), F.lit(NO_NEXT_SNAPSHOT)).alias("_next_ms"),
            F.first(ms).over(by_queue.rowsBetween(Window.unboundedPreceding, Window.currentRow))
            .alias("_first_ms"),
            F.unix_millis(F.lag("ts").over(by_queue)).alias("_prev_ms"),
            F.lag("broker_offset").over(by_queue).alias("_prev_broker"),
            F.min("broker_offset").over(by_queue.rowsBetween(1, Window.unboundedFollowing))
            .alias("_min_later_broker")]


def with_time_lag(offsets_df: DataFrame, key: list[str] = QUEUE_KEY,
                  stage: Stage = no_staging) -> DataFrame:
    """Add ``time_lag_seconds``: how long the oldest unconsumed message (the one at
    ``consumer_offset``) has been waiting at this snapshot — measured, never extrapolated.

    Its store time is bounded by two facts of the queue's own snapshot history:
    - it is not earlier than ``last_consumed_at`` (the broker's ``lastTimestamp``, the store time of
      the message at consumerOffset − 1, facts §5.1), nor than the latest snapshot whose
      ``broker_offset`` (the queue's max offset) was still ≤ ``consumer_offset`` — the message did
      not exist then;
    - it is not later than the snapshot right after that latest one (the queue's first snapshot
      when there is none): broker offsets only grow, truncation aside, so that is the first
      snapshot whose ``broker_offset`` exceeded ``consumer_offset``.
    The column is ``ts`` minus the earliest possible store time (the larger of the two lower
    bounds), capped by the upper bound — i.e. the longest the message can have waited. On a busy
    queue ``last_consumed_at`` is milliseconds before the oldest message's own store time; after an
    idle spell the snapshot bound is within one snapshot interval. 0 when ``lag`` is 0; null when
    neither lower bound is known (nothing consumed yet and the history starts with the backlog).

    Most snapshots with a lag are one snapshot interval behind at most: the previous snapshot's
    broker offset is ≤ the consumer offset and no later one is (``snapshot_neighbours``), so the
    latest snapshot at or below it is the previous one and the next after that is this one. Only
    the other rows (a backlog older than one interval, or broker offsets that fell: a truncated
    or re-created queue) are placed by sorting: their queues' broker offsets and their consumer
    offsets on one offset line, a snapshot's broker offset ranking before an equal consumer
    offset, so for each consumer offset the broker-offset rows before it are the snapshots with
    ``broker_offset ≤ consumer_offset``; the latest of them, and the next snapshot of the latest,
    are running maxima. At M 5 % of the rows, in 9 % of the rows' queues, need the sort: sorting
    every row was two thirds of silver.queue_offsets (benchmarks/RESULTS.md, issue #19).

    ``stage(df, name)`` stores the rows with their neighbours, which both paths read. Assumes one
    row per queue and ``ts`` (de-duplicated snapshots) and non-null queue keys and offsets (bronze
    requires them). The ``NEIGHBOURS`` are used when the input has them — ``build_queue_offsets``
    takes them from its own window over ``ts`` — else computed here. ``key`` names the queue: its
    key columns, or ``build_queue_offsets``' queue number.
    """
    if not set(NEIGHBOURS) <= set(offsets_df.columns):
        by_ts = Window.partitionBy(*key).orderBy("ts")
        offsets_df = offsets_df.select(*[c for c in offsets_df.columns if c not in NEIGHBOURS],
                                       *snapshot_neighbours(by_ts))
    columns = [c for c in offsets_df.columns if c not in NEIGHBOURS]
    c = F.col("consumer_offset")
    placed_by_sort = (F.col("lag") > 0) & (
        (F.col("_prev_broker") > c) | (F.col("_min_later_broker") <= c))
    rows = stage(offsets_df.withColumn("_by_sort", F.coalesce(placed_by_sort, F.lit(False))),
                 "silver.queue_offsets.snapshots")
    by_neighbours = (rows.where(~F.col("_by_sort"))
                     .select(*columns, "_first_ms", F.col("_prev_ms").alias("_latest_ms"),
                             F.when(F.col("_prev_ms").isNotNull(), F.unix_millis(F.col("ts")))
                             .alias("_after_ms")))
    sorted_queues = rows.where(F.col("_by_sort")).select(*key).distinct()
    by_sort = _bounds_by_sort(rows.join(F.broadcast(sorted_queues), on=key, how="left_semi"),
                              key, columns)
    bounds = [*columns, "_first_ms", "_latest_ms", "_after_ms"]
    return _time_lag(by_neighbours.select(*bounds).unionByName(by_sort.select(*bounds)), columns)


def _bounds_by_sort(rows: DataFrame, key: list[str], columns: list[str]) -> DataFrame:
    """``_latest_ms`` and ``_after_ms`` of the ``_by_sort`` rows of ``rows`` (whole queues) from
    one window over the queues' offsets (``with_time_lag``), with ``columns`` and ``_first_ms``."""
    ms = F.unix_millis(F.col("ts"))
    # A non-literal rank column: Sail cannot sort rows whose rank is a literal of a union branch.
    zero = F.col("broker_offset") * 0
    # Each snapshot becomes its broker offset's entry on its queue's offset line, and a snapshot
    # placed here also its consumer offset's, which carries the rest of the row: the input is
    # referenced once. A union of two selects joined back to the input built the de-duplicated
    # snapshots three times, and the join's hash table could overflow Sail's memory pool.
    rest = [c for c in columns if c not in key] + ["_first_ms"]
    row = F.struct(*[F.col(c) for c in rest])
    broker_entry = F.struct(
        F.col("broker_offset").alias("_offset"), zero.alias("_is_query"), ms.alias("_ms"),
        F.col("_next_ms").alias("_next"), F.when(zero == 1, row).alias("_row"))
    consumer_entry = F.struct(
        F.col("consumer_offset").alias("_offset"), (zero + 1).alias("_is_query"), ms.alias("_ms"),
        F.when(zero == 1, F.col("_next_ms")).alias("_next"), row.alias("_row"))
    entries = (F.when(F.col("_by_sort"), F.array(broker_entry, consumer_entry))
               .otherwise(F.array(broker_entry)))
    # One window, running maxima only: a second, reverse-ordered window for the first snapshot
    # above the consumer offset cost more than the rest of silver.queue_offsets (benchmarks/RESULTS.md).
    before = (Window.partitionBy(*key).orderBy("_offset", "_is_query", "_ms")
              .rowsBetween(Window.unboundedPreceding, -1))
    return (rows.select(*key, F.explode(entries).alias("_e"))
            .select(*key, "_e._offset", "_e._is_query", "_e._ms", "_e._next", "_e._row")
            .select(*key, "_is_query", "_row",
                    F.max(F.when(F.col("_is_query") == 0, F.col("_ms"))).over(before)
                    .alias("_latest_ms"),
                    F.max("_next").over(before).alias("_after_ms"))
            .where(F.col("_is_query") == 1)
            .select(*key, *[F.col("_row")[c].alias(c) for c in rest], "_latest_ms", "_after_ms"))


def _time_lag(bounds: DataFrame, columns: list[str]) -> DataFrame:
    """``columns`` and ``time_lag_seconds`` from each row's ``_latest_ms`` (the latest snapshot
    at or below its consumer offset), ``_after_ms`` (the one after that) and ``_first_ms``."""
    not_yet_stored_at = F.timestamp_millis("_latest_ms")
    # null _after_ms: no snapshot at or below the consumer offset, so the first one is above it
    after_ms = F.coalesce("_after_ms", "_first_ms")
    stored_by = F.when(after_ms != NO_NEXT_SNAPSHOT, F.timestamp_millis(after_ms))
    lower = F.greatest("last_consumed_at", not_yet_stored_at)
    since = F.least(lower, stored_by)
    waited = (F.unix_millis("ts") - F.unix_millis(since)) / F.lit(1000.0)
    return bounds.select(
        *columns,
        F.when(F.col("lag") == 0, F.lit(0.0))
        .when(lower.isNotNull(), F.greatest(waited, F.lit(0.0)))
        .cast("double").alias("time_lag_seconds"))
