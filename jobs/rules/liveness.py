"""Liveness (DESIGN.md §5): a client is live at t when it has a connection record with ts in
(t − liveness_window, t]. The broker keeps a crashed client's channel up to 120 s (facts §4), so
a stale id is live by this rule — RocketMQ's own clients see it in cidAll too."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.columns import plus_seconds
from jobs.time_joins import join_recent


def live_processes(snapshots_df: DataFrame, members_df: DataFrame,
                   liveness_window_seconds: int) -> DataFrame:
    """Per (group, snapshot ts, client_id) live at ts: the processes behind the id at its latest
    connection record in (ts − window, ts]. Input ``snapshots_df``: ``cluster, group, ts``;
    ``members_df``: silver.group_members."""
    members = members_df.select("cluster", "group", "client_id",
                                F.col("ts").alias("_seen"), "processes")
    joined = join_recent(snapshots_df, members, ["cluster", "group"], "ts", "_seen",
                         liveness_window_seconds)
    return joined.groupBy("cluster", "group", "ts", "client_id").agg(
        F.max_by("processes", "_seen").alias("processes"),
        F.max("_seen").alias("last_seen_connection"))


def liveness_ends(members_df: DataFrame, liveness_window_seconds: int) -> DataFrame:
    """Per (cluster, group, client_id): ``live_until``, the moment its last connection record of
    the data stops making it live (last record + window). A claim still open at the end of the
    data holds until then (DESIGN.md §5.1 "Claims")."""
    return (members_df.groupBy("cluster", "group", "client_id")
            .agg(F.max("ts").alias("_last"))
            .select("cluster", "group", "client_id",
                    plus_seconds(F.col("_last"), liveness_window_seconds).alias("live_until")))


def processes_per_id(channels_df: DataFrame, key: list[str]) -> DataFrame:
    """``key`` + ``processes``: how many processes hold a client id (DESIGN.md §3.2). A process
    holds one channel per broker node, so processes are counted within one broker's view — the
    same ``broker_name`` and ``broker_addr`` (or none): two different ``client_addr`` there are
    two processes, the duplicate-clientID case RocketMQ's own tools cannot see (facts §3). The
    channels a process keeps to a master and to its slaves (one ``broker_name``, several
    ``broker_addr``) are one process. ``channels_df``: connection records, one per channel."""
    view = F.concat_ws("|", F.coalesce("broker_name", F.lit("")),
                       F.coalesce("broker_addr", F.lit("")))
    per_view = channels_df.groupBy(*key, view.alias("_view")).agg(
        F.countDistinct("client_addr").alias("_addrs"))
    return per_view.groupBy(*key).agg(F.max("_addrs").cast("int").alias("processes"))
