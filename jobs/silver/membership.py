"""silver.group_members: who is in a group at each snapshot, with the channels behind each id."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.columns import sorted_set
from jobs.rules.liveness import processes_per_id

MEMBER_KEY = ["cluster", "group", "ts", "client_id"]


def build_group_members(connections_df: DataFrame, channel_expiry_seconds: int) -> DataFrame:
    """Bronze connections → one row per (group, snapshot, client_id).

    ``processes`` and ``running_processes``: ``jobs.rules.liveness.processes_per_id`` (per
    broker view, DESIGN.md §3.2). ``cid_all`` entries per id = ``processes``, as the broker's
    ``getAllClientId()`` lists one entry per channel, a dead one too; ``is_duplicate_id`` when
    two of them run at once (a restart that keeps its id is not a duplicate).
    """
    # from every copy of a channel: a collector's repeated record adds no distinct address to
    # the sets, and the details are maxima over the id's channels anyway, so copies that
    # disagree (one wrote null) give the largest value, whatever the row order. Keeping only
    # each channel's first copy (a window over its eight columns) was five sixths of this
    # table's time at M (1.2 s against 0.2 s for a fifth of the groups; benchmarks/RESULTS.md).
    processes = processes_per_id(connections_df, MEMBER_KEY, channel_expiry_seconds)
    details = connections_df.groupBy(*MEMBER_KEY).agg(
        sorted_set("client_addr").alias("client_addrs"),
        sorted_set("broker_name").alias("broker_names"),
        sorted_set("broker_addr").alias("broker_addrs"),
        F.max("language").alias("language"),
        F.max("version").alias("version"),
        F.max("consume_type").alias("consume_type"),
        F.max("message_model").alias("message_model"),
        F.max("date").alias("date"),
    )
    return details.join(processes, on=MEMBER_KEY, how="inner").select(
        *MEMBER_KEY,
        "processes",
        "running_processes",
        (F.col("running_processes") > 1).alias("is_duplicate_id"),
        "client_addrs",
        "broker_names",
        "broker_addrs",
        "language",
        "version",
        "consume_type",
        "message_model",
        "date",
    )
