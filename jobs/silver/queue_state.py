"""silver.queue_state: who owns each queue at each offsets snapshot, with liveness applied.

DESIGN.md §5. A client is live at t when it has a connection record in (t − liveness_window, t].
A claim (silver.queue_ownership) covers t when ``valid_from ≤ t < valid_until``; a running-info
claim with no later snapshot of that client carries over for at most ``max_snapshot_gap``. A
client_id held by k processes (silver.group_members) is k owners. When the broker reported the
queue's owner as ``N/A`` at that snapshot (``consumerProgress -s``: no reachable client holds it,
facts §5.2) the queue has no owner whatever older claims say — a crashed client still listed by
its channel (120 s expiry, facts §4) answers nobody, which is exactly when its queues are orphaned.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.columns import plus_seconds
from jobs.time_joins import join_recent, merge_intervals

QUEUE_KEY = ["cluster", "group", "topic", "broker_name", "queue_id"]
SNAPSHOT_KEY = QUEUE_KEY + ["ts"]


def claims_in_force(ownership_df: DataFrame, max_snapshot_gap_seconds: int) -> DataFrame:
    """Per queue and client, the stretches of time some claim of any source covers: an open
    running-info claim ends after the snapshot gap; overlapping claims are merged, so the
    snapshot join meets a few stretches, not every claim (a [persistAll] line every 5 s)."""
    open_end = F.when(F.col("source") == "running_info",
                      plus_seconds(F.col("valid_from"), max_snapshot_gap_seconds))
    claims = (ownership_df.select(*QUEUE_KEY, "client_id", "valid_from",
                                  F.coalesce("valid_until", open_end).alias("valid_until"))
              # a rebalance-log claim still open at the end of the data never matched
              # `ts < valid_until` (null); merging must not let it swallow its neighbours
              .where(F.col("valid_until").isNotNull()))
    return merge_intervals(claims, [*QUEUE_KEY, "client_id"], "valid_from", "valid_until")


def live_processes(snapshots_df: DataFrame, members_df: DataFrame,
                   liveness_window_seconds: int) -> DataFrame:
    """Per (group, snapshot ts, client_id) live at ts: the processes behind the id at its latest
    connection record in (ts − window, ts]. Input ``snapshots_df``: ``cluster, group, ts``."""
    members = members_df.select("cluster", "group", "client_id",
                                F.col("ts").alias("_seen"), "processes")
    joined = join_recent(snapshots_df, members, ["cluster", "group"], "ts", "_seen",
                         liveness_window_seconds)
    return joined.groupBy("cluster", "group", "ts", "client_id").agg(
        F.max_by("processes", "_seen").alias("processes"),
        F.max("_seen").alias("last_seen_connection"))


def claimants_per_snapshot(claims_df: DataFrame) -> DataFrame:
    """Per snapshot: ``claimed_by`` (sorted claimant ids) and ``_live_owners`` (each live
    claimant once per process, sorted), from one row per (snapshot, claimant, ``processes``).

    Nearly every snapshot has one claimant, whose arrays are built from its own row; only the
    few with several go through ``collect_list``. Sail's ``collect_list`` over millions of
    groups took 538 s at scale M (9 M snapshots); the count that splits them is a fast aggregate.
    """
    live_owners = F.when(F.col("processes").isNotNull(),
                         F.array_repeat("client_id", F.col("processes")))
    empty = F.array().cast("array<string>")
    counted = claims_df.join(claims_df.groupBy(*SNAPSHOT_KEY).agg(F.count(F.lit(1)).alias("_n")),
                             on=SNAPSHOT_KEY, how="inner")
    single = counted.where(F.col("_n") == 1).select(
        *SNAPSHOT_KEY, F.array("client_id").alias("claimed_by"),
        F.coalesce(live_owners, empty).alias("_live_owners"))
    several = counted.where(F.col("_n") > 1).groupBy(*SNAPSHOT_KEY).agg(
        F.array_sort(F.collect_list("client_id")).alias("claimed_by"),
        F.array_sort(F.flatten(F.collect_list(live_owners))).alias("_live_owners"))
    return single.unionByName(several)


def build_queue_state(queue_offsets_df: DataFrame, ownership_df: DataFrame,
                      members_df: DataFrame, liveness_window_seconds: int,
                      max_snapshot_gap_seconds: int) -> DataFrame:
    """One row per offsets snapshot of a queue with ``owners`` (one entry per live owning process,
    sorted), ``owner_count``, ``claimed_by`` (every claimant, live or not) and the broker's view."""
    snaps = queue_offsets_df.select(*SNAPSHOT_KEY, "lag", "broker_offset", "consumer_offset",
                                    "broker_offset_delta", "consumer_offset_delta", "owner_ip",
                                    "broker_reports_no_owner", "is_retry_topic", "date")
    claims = claims_in_force(ownership_df, max_snapshot_gap_seconds)
    claimed = (snaps.select(*SNAPSHOT_KEY)
               .join(claims, on=QUEUE_KEY, how="inner")
               .where((F.col("valid_from") <= F.col("ts")) & (F.col("ts") < F.col("valid_until")))
               .select(*SNAPSHOT_KEY, "client_id").distinct())
    live = live_processes(snaps.select("cluster", "group", "ts").distinct(), members_df,
                          liveness_window_seconds)
    owned = claimants_per_snapshot(
        claimed.join(live, on=["cluster", "group", "ts", "client_id"], how="left"))
    broker_says_none = F.coalesce(F.col("broker_reports_no_owner"), F.lit(False))
    empty = F.array().cast("array<string>")
    owners = F.when(broker_says_none, empty).otherwise(F.coalesce("_live_owners", empty))
    return (snaps.join(owned, on=SNAPSHOT_KEY, how="left")
            .withColumn("owners", owners)
            .select(*SNAPSHOT_KEY, "lag", "broker_offset", "consumer_offset",
                    "broker_offset_delta", "consumer_offset_delta", "owner_ip", "is_retry_topic",
                    "owners", F.size("owners").alias("owner_count"),
                    F.coalesce("claimed_by", empty).alias("claimed_by"),
                    "broker_reports_no_owner",
                    "date"))
