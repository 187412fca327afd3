"""silver.process_queues: each client's ProcessQueue view of each queue, per running-info snapshot."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.silver.dedup import first_running_info, mq_table_fields

SNAPSHOT_KEY = ["cluster", "group", "client_id", "ts"]


def _ms_to_ts(name: str):
    return F.when(F.col(name) > 0, F.timestamp_millis(name)).alias(name.replace("_timestamp", "_at"))


def build_process_queues(running_info_df: DataFrame) -> DataFrame:
    """Bronze running_info → one row per (client, snapshot, queue in its mq_table).

    ``commit_offset`` is the client's in-memory offset, the smallest in-flight offset for
    concurrent consumers (facts §5.3); ``cached_msg_min_offset``/``max`` bound the messages
    still in the ProcessQueue, so the span between them is what flow control compares with
    consumeConcurrentlyMaxSpan. A running-info answer comes from the first channel of a
    client_id only (facts §3), so a duplicated id shows one process's view.
    """
    snapshots = first_running_info(running_info_df, "date", "mq_table")
    return (snapshots.select(*SNAPSHOT_KEY, "date", F.inline("mq_table"))
            .select(*SNAPSHOT_KEY, "topic", "broker_name", "queue_id",
                    "commit_offset", "cached_msg_min_offset", "cached_msg_max_offset",
                    "cached_msg_count", "cached_msg_size_mib",
                    "transaction_msg_min_offset", "transaction_msg_max_offset",
                    "transaction_msg_count", "locked", "try_unlock_times",
                    F.coalesce("dropped", F.lit(False)).alias("dropped"),
                    _ms_to_ts("last_lock_timestamp"), _ms_to_ts("last_pull_timestamp"),
                    _ms_to_ts("last_consume_timestamp"),
                    "date"))


def build_commit_offsets(running_info_df: DataFrame) -> DataFrame:
    """``build_process_queues``' key, queue, ``commit_offset`` and ``date`` only, taking just those
    fields of each mq_table entry: the clock check reads no more, and carrying whole entries
    through the snapshot window and the explode was most of its cost (issue #19)."""
    snapshots = first_running_info(running_info_df, "date", mq_table_fields(
        "topic", "broker_name", "queue_id", "commit_offset"))
    return snapshots.select(*SNAPSHOT_KEY, "date", F.inline("mq_table"))
