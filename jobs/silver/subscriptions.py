"""silver.client_subscriptions: what each client says it subscribes, per snapshot."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

COLUMNS = ["cluster", "group", "client_id", "ts", "topic", "sub_string", "expression_type",
           "source", "date"]


def _explode_subscriptions(df: DataFrame, source: str) -> DataFrame:
    # Fields are picked one by one rather than with inline(): the nested ``tags`` arrays of the
    # two bronze tables can differ in their Parquet element name, which Sail refuses to union.
    return (df.where(F.col("subscriptions").isNotNull())
            .select("cluster", "group", "client_id", "ts", "date",
                    F.explode("subscriptions").alias("s"))
            .select("cluster", "group", "client_id", "ts", "s.topic", "s.sub_string",
                    "s.expression_type", F.lit(source).alias("source"), "date"))


def build_client_subscriptions(connections_df: DataFrame, running_info_df: DataFrame) -> DataFrame:
    """One row per (client, snapshot, topic, source) from heartbeats and running info.

    Each client's own heartbeat is the truth about that client; the broker's group table is
    overwritten by whichever member heartbeated last (facts §4, the topicB case), so it is not
    used. A client heartbeats every broker, hence the ``distinct``.
    """
    heartbeat = _explode_subscriptions(connections_df, "heartbeat")
    running = _explode_subscriptions(running_info_df, "running_info")
    return heartbeat.unionByName(running).distinct().select(*COLUMNS)
