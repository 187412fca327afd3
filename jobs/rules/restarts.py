"""Restarts (DESIGN.md §5.1): a client that crashes and comes back gets a new id (``IP@pid``,
from 4.9.0 ``IP@pid#nanotime``, facts §3), while the broker keeps listing the stale id for up
to 120 s (facts §4). The overlap of the stale id's last claims with the new ids is that
restart's gap (REBALANCE_GAP, INFO), never a double-owned finding."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.columns import plus_seconds
from jobs.rules.claims import client_ip_of


def superseded_ids(members_df: DataFrame, liveness_window_seconds: int) -> DataFrame:
    """``cluster, group, client_id, replaced_at, stale_until``: ids replaced by a newer id at
    the same IP that appeared while the old one was still listed and outlived it.
    ``replaced_at`` = the new id's first connection record; ``stale_until`` = the old id's
    last record + the liveness window (when it stops being live)."""
    spans = (members_df.groupBy("cluster", "group", "client_id")
             .agg(F.min("ts").alias("_first"), F.max("ts").alias("_last"))
             .withColumn("_ip", client_ip_of(F.col("client_id"))))
    new = spans.select("cluster", "group", "_ip", F.col("client_id").alias("_new_id"),
                       F.col("_first").alias("_new_first"), F.col("_last").alias("_new_last"))
    return (spans.join(new, on=["cluster", "group", "_ip"], how="inner")
            .where((F.col("_new_id") != F.col("client_id"))
                   & (F.col("_new_first") > F.col("_first"))
                   & (F.col("_new_first") <= F.col("_last"))
                   & (F.col("_new_last") > F.col("_last")))
            .groupBy("cluster", "group", "client_id")
            .agg(F.min("_new_first").alias("replaced_at"), F.max("_last").alias("_last"))
            .select("cluster", "group", "client_id", "replaced_at",
                    plus_seconds(F.col("_last"), liveness_window_seconds).alias("stale_until")))
