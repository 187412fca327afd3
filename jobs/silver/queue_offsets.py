"""silver.queue_offsets: one row per (group, queue, snapshot) with lag, time lag and deltas."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from jobs.key_numbers import key_numbers
from jobs.silver.dedup import filter_first_per_snapshot

QUEUE_KEY = ["cluster", "group", "topic", "broker_name", "queue_id"]
QUEUE_NO = ["_queue"]  # the queue's number (key_numbers) while the windows run


def owner_ip(client_ip):
    """``consumerProgress -s`` prints ``N/A`` when no reachable client owns the queue (facts §5.2)."""
    trimmed = F.trim(client_ip)
    return F.when(trimmed.isin("", "N/A"), F.lit(None).cast("string")).otherwise(trimmed)


def build_queue_offsets(offsets_df: DataFrame) -> DataFrame:
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
    ``time_lag_seconds``: age of the oldest unconsumed message, see :func:`with_time_lag`.
    """
    if "broker_id" not in offsets_df.columns:  # optional (§3.1); bronze written before it
        offsets_df = offsets_df.withColumn("broker_id", F.lit(None).cast("long"))
    # every window below runs over a queue number (key_numbers), the key's strings joined back at
    # the end; bronze requires the key, so the inner join drops no row
    queues = key_numbers(offsets_df, QUEUE_KEY, QUEUE_NO[0])
    snapshots = filter_first_per_snapshot(
        offsets_df.join(F.broadcast(queues), on=QUEUE_KEY)
        .select(*QUEUE_NO, "ts", "broker_offset", "consumer_offset", "pull_offset",
                "last_timestamp", "client_ip", "broker_id", "_source_file", "_line_no", "date"),
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
        F.lag("ts").over(by_queue).alias("prev_ts"),
        (F.col("broker_offset") - F.lag("broker_offset").over(by_queue))
        .alias("broker_offset_delta"),
        (F.col("consumer_offset") - F.lag("consumer_offset").over(by_queue))
        .alias("consumer_offset_delta"),
        *snapshot_neighbours(by_queue),
        "date",
    )
    return (with_time_lag(offsets, QUEUE_NO).join(F.broadcast(queues), on=QUEUE_NO)
            .withColumn("is_retry_topic", F.col("topic").startswith("%RETRY%"))
            .select(*COLUMNS))


COLUMNS = [*QUEUE_KEY, "ts", "broker_offset", "consumer_offset", "pull_offset", "lag",
           "time_lag_seconds", "inflight", "last_consumed_at", "owner_ip",
           "broker_reports_no_owner", "is_retry_topic", "broker_id", "prev_ts",
           "broker_offset_delta", "consumer_offset_delta", "date"]


NO_NEXT_SNAPSHOT = 2**63 - 1  # ``_next_ms`` of a queue's last snapshot


def snapshot_neighbours(by_queue: WindowSpec) -> list[Column]:
    """``_next_ms`` (the queue's next snapshot, epoch ms; ``NO_NEXT_SNAPSHOT`` after its last)
    and ``_first_ms`` (its first snapshot) over ``by_queue``: the queue's snapshots by ``ts``."""
    ms = F.unix_millis(F.col("ts"))
    return [F.coalesce(F.lead(ms).over(by_queue), F.lit(NO_NEXT_SNAPSHOT)).alias("_next_ms"),
            F.first(ms).over(by_queue.rowsBetween(Window.unboundedPreceding, Window.currentRow))
            .alias("_first_ms")]


def with_time_lag(offsets_df: DataFrame, key: list[str] = QUEUE_KEY) -> DataFrame:
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

    Both bounds come from one sort of the queue's broker offsets and consumer offsets together
    (no self-join): rows are ordered by offset, a snapshot's broker offset ranking before an equal
    consumer offset, so for each consumer offset the broker-offset rows before it are the snapshots
    with ``broker_offset ≤ consumer_offset``; the latest of them, and the next snapshot of the
    latest (each snapshot carries its next one's time), are running maxima. Assumes one row per
    queue and ``ts`` (de-duplicated snapshots) and non-null queue keys and offsets (bronze
    requires them). ``_next_ms`` and ``_first_ms`` (``snapshot_neighbours``) are used when the
    input has them — ``build_queue_offsets`` takes them from its own window over ``ts`` — else
    computed here. ``key`` names the queue: its key columns, or ``build_queue_offsets``' queue
    number.
    """
    if "_next_ms" not in offsets_df.columns:
        by_ts = Window.partitionBy(*key).orderBy("ts")
        offsets_df = offsets_df.select("*", *snapshot_neighbours(by_ts))
    columns = [c for c in offsets_df.columns if c not in ("_next_ms", "_first_ms")]
    ms = F.unix_millis(F.col("ts"))
    # A non-literal rank column: Sail cannot sort rows whose rank is a literal of a union branch.
    zero = F.col("broker_offset") * 0
    # Each snapshot becomes two entries on its queue's offset line, its broker offset and its
    # consumer offset, and the latter carries the rest of the row: the input is referenced once.
    # A union of two selects joined back to the input built the de-duplicated snapshots three
    # times, and the join's hash table could overflow Sail's memory pool.
    rest = [c for c in offsets_df.columns if c not in key and c != "_next_ms"]
    row = F.struct(*[F.col(c) for c in rest])
    entries = F.array(
        F.struct(F.col("broker_offset").alias("_offset"), zero.alias("_is_query"), ms.alias("_ms"),
                 F.col("_next_ms").alias("_next"), F.when(zero == 1, row).alias("_row")),
        F.struct(F.col("consumer_offset").alias("_offset"), (zero + 1).alias("_is_query"),
                 ms.alias("_ms"), F.when(zero == 1, F.col("_next_ms")).alias("_next"),
                 row.alias("_row")))
    # One window, running maxima only: a second, reverse-ordered window for the first snapshot
    # above the consumer offset cost more than the rest of silver.queue_offsets (benchmarks/RESULTS.md).
    before = (Window.partitionBy(*key).orderBy("_offset", "_is_query", "_ms")
              .rowsBetween(Window.unboundedPreceding, -1))
    bounds = (offsets_df.select(*key, F.explode(entries).alias("_e"))
              .select(*key, "_e._offset", "_e._is_query", "_e._ms", "_e._next", "_e._row")
              .select(*key, "_is_query", "_row",
                      F.max(F.when(F.col("_is_query") == 0, F.col("_ms"))).over(before)
                      .alias("_latest_ms"),
                      F.max("_next").over(before).alias("_after_ms"))
              .where(F.col("_is_query") == 1)
              .select(*key, *[F.col("_row")[c].alias(c) for c in rest], "_latest_ms",
                      "_after_ms"))
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
