"""silver.group_members: who is in a group at each snapshot, with the channels behind each id."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.columns import sorted_set
from jobs.rules.liveness import processes_per_id
from jobs.silver.dedup import filter_first_per_key

MEMBER_KEY = ["cluster", "group", "ts", "client_id"]


def build_group_members(connections_df: DataFrame) -> DataFrame:
    """Bronze connections → one row per (group, snapshot, client_id).

    ``processes``: ``jobs.rules.liveness.processes_per_id`` (per broker view, DESIGN.md §3.2).
    ``cid_all`` entries per id = ``processes``, as the broker's ``getAllClientId()`` lists one
    entry per channel.
    """
    channel = MEMBER_KEY + ["broker_name", "broker_addr", "client_addr"]
    # only the columns read below through the window: it carries its rows whole through its sort
    channels = filter_first_per_key(
        connections_df.select(*channel, "language", "version", "consume_type", "message_model",
                              "date", "_source_file", "_line_no"), channel)
    # from every copy: a repeated channel adds no distinct address, and the de-duplicating
    # window then runs once, for the details (twice was half of this table's time at M, 10.0 s
    # against 5.8 s; benchmarks/RESULTS.md)
    processes = processes_per_id(connections_df, MEMBER_KEY)
    details = channels.groupBy(*MEMBER_KEY).agg(
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
        (F.col("processes") > 1).alias("is_duplicate_id"),
        "client_addrs",
        "broker_names",
        "broker_addrs",
        "language",
        "version",
        "consume_type",
        "message_model",
        "date",
    )
