"""silver.queue_offsets: one row per (group, queue, snapshot) with lag and deltas."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from jobs.silver.dedup import filter_first_per_key

QUEUE_KEY = ["cluster", "group", "topic", "broker_name", "queue_id"]


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
    """
    snapshots = filter_first_per_key(offsets_df, QUEUE_KEY + ["ts"])
    by_queue = Window.partitionBy(*QUEUE_KEY).orderBy("ts")
    return snapshots.select(
        *QUEUE_KEY,
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
        F.col("topic").startswith("%RETRY%").alias("is_retry_topic"),
        F.lag("ts").over(by_queue).alias("prev_ts"),
        (F.col("broker_offset") - F.lag("broker_offset").over(by_queue))
        .alias("broker_offset_delta"),
        (F.col("consumer_offset") - F.lag("consumer_offset").over(by_queue))
        .alias("consumer_offset_delta"),
        "date",
    )
