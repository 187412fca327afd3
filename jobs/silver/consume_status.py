"""silver.consume_status: each client's consume rates per topic, per running-info snapshot."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.silver.dedup import first_running_info

SNAPSHOT_KEY = ["cluster", "group", "client_id", "ts"]
COLUMNS = [*SNAPSHOT_KEY, "topic", "pull_tps", "consume_rt", "consume_ok_tps",
           "consume_failed_tps", "consume_failed_msgs", "date"]


def build_consume_status(running_info_df: DataFrame) -> DataFrame:
    """Bronze running_info → one row per (client, snapshot, topic of its ``status_table``).

    ``consume_ok_tps``/``consume_failed_tps`` are the client's minute-window rates for
    ``topic@group``; ``consume_failed_msgs`` is the sum over the last hour (facts §6.1). A listener
    that keeps failing shows ``consume_failed_tps > 0`` at every snapshot (DESIGN.md §5
    CONSUME_FAILING). A snapshot without a status table gives no rows.
    """
    snapshots = first_running_info(running_info_df, "date", "status_table")
    return (snapshots.select(*SNAPSHOT_KEY, "date", F.inline("status_table"))
            .select(*COLUMNS))
