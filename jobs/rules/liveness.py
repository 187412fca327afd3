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
    connection record in (ts − window, ts], as the broker lists them (``processes``) and as
    they run (``running_processes``, ``processes_per_id``). Input ``snapshots_df``:
    ``cluster, group, ts``; ``members_df``: silver.group_members."""
    members = members_df.select("cluster", "group", "client_id",
                                F.col("ts").alias("_seen"), "processes", "running_processes")
    joined = join_recent(snapshots_df, members, ["cluster", "group"], "ts", "_seen",
                         liveness_window_seconds)
    return joined.groupBy("cluster", "group", "ts", "client_id").agg(
        F.max_by("processes", "_seen").alias("processes"),
        F.max_by("running_processes", "_seen").alias("running_processes"),
        F.max("_seen").alias("last_seen_connection"))


def liveness_ends(members_df: DataFrame, liveness_window_seconds: int) -> DataFrame:
    """Per (cluster, group, client_id): ``live_until``, the moment its last connection record of
    the data stops making it live (last record + window). A claim still open at the end of the
    data holds until then (DESIGN.md §5.1 "Claims")."""
    return (members_df.groupBy("cluster", "group", "client_id")
            .agg(F.max("ts").alias("_last"))
            .select("cluster", "group", "client_id",
                    plus_seconds(F.col("_last"), liveness_window_seconds).alias("live_until")))


# the broker's channel scan runs every 10 s (ClientHousekeepingService, facts §4): a dead
# channel is gone at most this long after its expiry timeout
CHANNEL_SCAN_SECONDS = 10


def processes_per_id(channels_df: DataFrame, key: list[str],
                     channel_expiry_seconds: int) -> DataFrame:
    """``key`` + ``processes`` and ``running_processes`` per client id (DESIGN.md §3.2).

    ``processes``: the channels the broker lists for the id, counted within one broker's view
    (the same ``broker_name`` and ``broker_addr``, or none). A process holds one channel per
    broker node, so two ``client_addr`` there are two entries in cidAll: what the clients
    allocate over, stale or not. The channels a process keeps to a master and to its slaves
    (one ``broker_name``, several ``broker_addr``) are one process.

    ``running_processes``: how many of those channels belong to processes that run at the same
    time, the duplicate-clientID case (facts §3). A restart that keeps its id (a fixed
    ``instanceName``), or a reconnect over a new port, leaves the dead channel listed until
    the broker expires it (up to ``channel_expiry_seconds`` after its last heartbeat, facts
    §4); that is one process, not two. Evidence of two: a channel counts when it heartbeated
    (``last_update_timestamp``, the broker's clock) no earlier than the first heartbeat seen
    from the view's newest channel, so both beat while both existed; a dead channel's
    heartbeat stops before its successor's first. Without timestamps (mqadmin's text output
    has none), two channels listed together for longer than the expiry plus the broker's scan
    period both run, as the broker would have dropped a dead one; before that it is unknown
    and counted as one. ``channels_df``: connection records, one per channel."""
    view = F.concat_ws("|", F.coalesce("broker_name", F.lit("")),
                       F.coalesce("broker_addr", F.lit("")))
    channel_day = ["cluster", "group", "client_id", "_view", "client_addr"]
    # a collector that writes 0 for a timestamp it does not have gives no heartbeat time
    beat = F.when(F.col("last_update_timestamp") > 0, F.col("last_update_timestamp"))
    channels = (channels_df.select(*key, view.alias("_view"), "client_addr", beat.alias("_lu"))
                .groupBy(*key, "_view", "client_addr").agg(F.max("_lu").alias("_lu")))
    firsts = channels.groupBy(*channel_day).agg(F.min("_lu").alias("_first_lu"),
                                                F.min("ts").alias("_first_ts"))
    per_view = (channels.join(firsts, on=channel_day, how="inner")
                .groupBy(*key, "_view").agg(
                    F.count("client_addr").alias("_addrs"),
                    F.collect_list("_lu").alias("_lus"),
                    F.max("_first_lu").alias("_newest_lu"),
                    F.max("_first_ts").alias("_newest_ts")))
    listed_together = (F.unix_timestamp("ts") - F.unix_timestamp("_newest_ts")
                       > channel_expiry_seconds + CHANNEL_SCAN_SECONDS)
    beating = F.size(F.filter("_lus", lambda lu: lu >= F.col("_newest_lu")))
    running = F.when(listed_together, F.col("_addrs")).otherwise(F.greatest(F.lit(1), beating))
    return per_view.groupBy(*key).agg(
        F.max("_addrs").cast("int").alias("processes"),
        F.max(running).cast("int").alias("running_processes"))
