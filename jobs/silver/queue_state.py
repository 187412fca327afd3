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

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.columns import plus_seconds, same_columns
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


def claimant_segments(claims_df: DataFrame) -> DataFrame:
    """Per queue, the time cut at every start and end of a claim stretch (``claims_in_force``):
    ``_seg_from, _seg_until`` and ``claimed_by``, the sorted ids whose stretch covers that piece
    (none: no row). A snapshot lies in at most one piece of its queue, so its claimants come from
    one row: no aggregate over every snapshot of the day (collecting per snapshot, then joining
    back to the snapshots, was most of queue_state's time on Sail)."""
    bounds = (claims_df.select(*QUEUE_KEY, F.col("valid_from").alias("_seg_from"))
              .unionByName(claims_df.select(*QUEUE_KEY, F.col("valid_until").alias("_seg_from")))
              .where(F.col("_seg_from").isNotNull())
              .distinct())
    order = Window.partitionBy(*QUEUE_KEY).orderBy("_seg_from")
    pieces = (bounds.withColumn("_seg_until", F.lead("_seg_from").over(order))
              .where(F.col("_seg_until").isNotNull()))
    return (pieces.join(claims_df, on=QUEUE_KEY, how="inner")
            .where((F.col("valid_from") <= F.col("_seg_from"))
                   & (F.col("_seg_until") <= F.col("valid_until")))
            .groupBy(*QUEUE_KEY, "_seg_from", "_seg_until")
            .agg(F.array_sort(F.collect_list("client_id")).alias("claimed_by")))


def live_per_snapshot(live_df: DataFrame) -> DataFrame:
    """Per (group, snapshot ts): ``_live``, the live ids with their process counts
    (``live_processes``; a group has a handful)."""
    # the cast drops column metadata from the struct's fields: Sail rejected a lambda over
    # structs whose fields carried it from some inputs and not from others
    member = F.struct("client_id", "processes").cast("struct<client_id:string,processes:int>")
    return live_df.groupBy("cluster", "group", "ts").agg(F.collect_list(member).alias("_live"))


def live_owners(claimed_by: Column, live: Column) -> Column:
    """Each live claimant once per process, sorted; empty when none is live."""
    owning = F.filter(live, lambda m: m["processes"].isNotNull()
                      & F.array_contains(claimed_by, m["client_id"]))
    return F.coalesce(F.array_sort(F.flatten(F.transform(
        owning, lambda m: F.array_repeat(m["client_id"], m["processes"])))),
        F.array().cast("array<string>"))


def build_queue_state(queue_offsets_df: DataFrame, ownership_df: DataFrame,
                      members_df: DataFrame, liveness_window_seconds: int,
                      max_snapshot_gap_seconds: int) -> DataFrame:
    """One row per offsets snapshot of a queue with ``owners`` (one entry per live owning process,
    sorted), ``owner_count``, ``claimed_by`` (every claimant, live or not) and the broker's view."""
    snaps = queue_offsets_df.select(*SNAPSHOT_KEY, "lag", "broker_offset", "consumer_offset",
                                    "broker_offset_delta", "consumer_offset_delta", "owner_ip",
                                    "broker_reports_no_owner", "is_retry_topic", "date")
    segments = claimant_segments(claims_in_force(ownership_df, max_snapshot_gap_seconds))
    in_segment = (same_columns("_s", "_g", QUEUE_KEY)
                  & (F.col("_g._seg_from") <= F.col("_s.ts"))
                  & (F.col("_s.ts") < F.col("_g._seg_until")))
    # small side first (right joins): the engine builds its hash table from the left input, and
    # a day's snapshot rows there could outgrow Sail's memory pool
    claimed = (segments.alias("_g").join(snaps.alias("_s"), on=in_segment, how="right")
               .select("_s.*", "_g.claimed_by"))
    live = live_per_snapshot(live_processes(snaps.select("cluster", "group", "ts").distinct(),
                                            members_df, liveness_window_seconds))
    broker_says_none = F.coalesce(F.col("broker_reports_no_owner"), F.lit(False))
    empty = F.array().cast("array<string>")
    claimed_by = F.coalesce("claimed_by", empty)
    owners = F.when(broker_says_none, empty).otherwise(live_owners(claimed_by, F.col("_live")))
    return (live.join(claimed, on=["cluster", "group", "ts"], how="right")
            .withColumn("owners", owners)
            .select(*SNAPSHOT_KEY, "lag", "broker_offset", "consumer_offset",
                    "broker_offset_delta", "consumer_offset_delta", "owner_ip", "is_retry_topic",
                    "owners", F.size("owners").alias("owner_count"),
                    claimed_by.alias("claimed_by"),
                    "broker_reports_no_owner",
                    "date"))
