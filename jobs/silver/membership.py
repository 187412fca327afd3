"""silver.group_members: who is in a group at each snapshot, with the channels behind each id."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.silver.dedup import filter_first_per_key

MEMBER_KEY = ["cluster", "group", "ts", "client_id"]


def build_group_members(connections_df: DataFrame) -> DataFrame:
    """Bronze connections → one row per (group, snapshot, client_id).

    ``processes`` counts channels within one broker's view: a process holds one channel per
    broker, so two different ``client_addr`` for one id on the same broker (or with no broker
    named) are two processes — the duplicate-clientID case RocketMQ's own tools cannot see,
    because they key by client_id (DESIGN.md §3.2, facts §3). ``cid_all`` entries per id =
    ``processes``, as the broker's ``getAllClientId()`` lists one entry per channel.
    """
    channels = filter_first_per_key(
        connections_df, MEMBER_KEY + ["broker_name", "client_addr"]
    ).withColumn("_broker", F.coalesce("broker_name", F.lit("")))
    per_broker = channels.groupBy(*MEMBER_KEY, "_broker").agg(
        F.countDistinct("client_addr").alias("_addrs"))
    processes = per_broker.groupBy(*MEMBER_KEY).agg(F.max("_addrs").cast("int").alias("processes"))
    details = channels.groupBy(*MEMBER_KEY).agg(
        F.array_sort(F.collect_set("client_addr")).alias("client_addrs"),
        F.array_sort(F.collect_set("broker_name")).alias("broker_names"),
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
        "language",
        "version",
        "consume_type",
        "message_model",
        "date",
    )
