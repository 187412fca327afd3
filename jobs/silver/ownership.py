"""silver.queue_ownership: who claims which queue, as intervals ``[valid_from, valid_until)``.

DESIGN.md §5: a client owns a queue at t when the queue is in its latest running-info mq_table
(not dropped), in its latest ``rebalanced result changed`` set, or in a ``[persistAll]`` line
within 2 × the persist interval. Each claim holds until the same client's next observation of
the same kind (``valid_until`` null = until the end of the data). Liveness and processes per id
are applied by the detectors, not here.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from jobs.columns import plus_seconds
from jobs.silver.dedup import first_running_info, mq_table_fields

COLUMNS = ["cluster", "group", "client_id", "topic", "broker_name", "queue_id", "source",
           "valid_from", "valid_until", "date"]


def running_info_claims(running_info_df: DataFrame) -> DataFrame:
    """Every non-dropped mq_table entry, valid until that client's next running-info snapshot."""
    # the next snapshot found before the join: a window over the joined rows carried every
    # snapshot's mq_table through its sort
    snapshots = first_running_info(running_info_df, "date",
                                   mq_table_fields("topic", "broker_name", "queue_id", "dropped"),
                                   next_ts="valid_until")
    return (snapshots
            .select("cluster", "group", "client_id", "ts", "valid_until", "date",
                    F.inline("mq_table"))
            .where(~F.coalesce(F.col("dropped"), F.lit(False)))
            .select("cluster", "group", "client_id", "topic", "broker_name", "queue_id",
                    F.lit("running_info").alias("source"), F.col("ts").alias("valid_from"),
                    "valid_until", "date"))


def _log_claims(events_df: DataFrame, valid_until, source: str,
                clusters_df: DataFrame) -> DataFrame:
    """One claim per queue named by each log line, ``[ts, valid_until)``. Log lines do not name
    the cluster; it comes from the group's connection records (``cluster, group, client_id``).
    ``valid_until`` is computed per line before the queues are exploded (it may be a window)."""
    claims = (events_df.withColumn("valid_until", valid_until)
              .select("group", "client_id", F.col("ts").alias("valid_from"), "valid_until",
                      "date", F.explode("queues").alias("mq"))
              .select("group", "client_id", "mq.topic", "mq.broker_name", "mq.queue_id",
                      F.lit(source).alias("source"), "valid_from", "valid_until", "date"))
    # the few (group, client) rows first: Sail builds its hash table from the left input,
    # and a table of every claim could not spill in a bounded Sail memory pool
    return clusters_df.join(claims, on=["group", "client_id"], how="right").select(*COLUMNS)


def rebalance_log_claims(log_events_df: DataFrame, clusters_df: DataFrame) -> DataFrame:
    """Each ``rebalanced result changed`` set, valid until the client's next one for that topic
    (the client logs only when its set changes, facts §2.2 step 6)."""
    nxt = Window.partitionBy("group", "client_id", "topic").orderBy("ts", "_source_file",
                                                                    "_line_no")
    return _log_claims(log_events_df.where(F.col("event") == "REBALANCE_RESULT"),
                       F.lead("ts").over(nxt), "rebalance_log", clusters_df)


def persist_log_claims(log_events_df: DataFrame, clusters_df: DataFrame,
                       persist_interval_seconds: int) -> DataFrame:
    """``[persistAll]`` lines: the client commits every owned queue each persist interval
    (facts §2.3), so a line proves ownership for 2 × that interval."""
    return _log_claims(log_events_df.where(F.col("event") == "PERSIST_OFFSET"),
                       plus_seconds(F.col("ts"), 2 * persist_interval_seconds), "persist_log",
                       clusters_df)


def build_queue_ownership(running_info_df: DataFrame, log_events_df: DataFrame,
                          connections_df: DataFrame, persist_interval_seconds: int) -> DataFrame:
    clusters = connections_df.select("cluster", "group", "client_id").distinct()
    return (running_info_claims(running_info_df)
            .unionByName(rebalance_log_claims(log_events_df, clusters))
            .unionByName(persist_log_claims(log_events_df, clusters, persist_interval_seconds))
            .select(*COLUMNS))
