"""silver.queue_state: who owns each queue at each offsets snapshot, with liveness applied.

The rules are in ``jobs.rules``: claims and their lifetimes (``claims``), liveness
(``liveness``), what a snapshot proves by itself (``evidence``). Who is live at a snapshot is
read from silver.member_context, where it is computed and stored once. Owners are the live claimants,
one entry per process; where no claim names a live owner, the live members at the
``consumerProgress -s`` owner IP (then ``owned_by_ip_only``). ``N/A`` with a committed offset
that did not move and lag leaves only the owners whose own running info or ``[persistAll]``
lines still list the queue (``nobody_consumes_per_broker``, ``answered_running_info_claims``):
N/A never removes those.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.columns import same_columns
from jobs.lake import Stage, no_staging
from jobs.rules.claims import at_owner_ip, claim_lifetimes, claims_in_force
from jobs.rules.evidence import answered_running_info_claims, nobody_consumes_per_broker
from jobs.rules.liveness import liveness_ends

QUEUE_KEY = ["cluster", "group", "topic", "broker_name", "queue_id"]
SNAPSHOT_KEY = QUEUE_KEY + ["ts"]


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


def _with_claimants(snaps: DataFrame, claims_df: DataFrame, name: str) -> DataFrame:
    """``snaps`` with ``name``: the ids whose claim stretch (``claims_df``) covers each
    snapshot's ts (null: none)."""
    in_segment = (same_columns("_s", "_g", QUEUE_KEY)
                  & (F.col("_g._seg_from") <= F.col("_s.ts"))
                  & (F.col("_s.ts") < F.col("_g._seg_until")))
    # small side first (right joins): the engine builds its hash table from the left input, and
    # a day's snapshot rows there could outgrow Sail's memory pool
    return (claimant_segments(claims_df).alias("_g")
            .join(snaps.alias("_s"), on=in_segment, how="right")
            .select("_s.*", F.col("_g.claimed_by").alias(name)))


def live_per_snapshot(live_df: DataFrame) -> DataFrame:
    """Per (group, snapshot ts): ``_live``, the live ids with their process counts
    (silver.member_context rows, one per id, ``jobs.rules.liveness.live_processes``; a group
    has a handful); ``_live_ids``, the ids held by exactly one process, and
    ``_most_processes``, the largest count (``live_owners``)."""
    # the cast drops column metadata from the struct's fields: Sail rejected a lambda over
    # structs whose fields carried it from some inputs and not from others
    member = F.struct("client_id", "processes").cast("struct<client_id:string,processes:int>")
    return live_df.groupBy("cluster", "group", "ts").agg(
        F.collect_list(member).alias("_live"),
        F.collect_list(F.when(F.col("processes") == 1, F.col("client_id"))).alias("_live_ids"),
        F.max("processes").alias("_most_processes"))


def live_owners(claimed_by: Column) -> Column:
    """Each live claimant once per process, sorted; empty when none is live. Reads
    ``live_per_snapshot``'s columns.

    Where no id of the group is held by two processes (a duplicate client id is the exception),
    that is the claimants among ``_live_ids``: a plain intersection, without the lambda over the
    members (a fifth of M's groups on Sail: every snapshot's owners in 1.0 s against 1.45 s,
    issue #19). An id whose process count is 0 or unknown owns nothing either way."""
    by_members = _live_members_where(F.col("_live"),
                                     lambda m: F.array_contains(claimed_by, m["client_id"]))
    plain = F.array_sort(F.array_intersect(claimed_by, F.col("_live_ids")))
    return F.when(F.col("_most_processes") <= 1, plain).otherwise(by_members)


def live_owners_at_ip(owner_ip: Column) -> Column:
    """Each live member at ``owner_ip`` (``at_owner_ip``) once per process, sorted; empty when
    none is, or the IP is null. One pass over ``_live`` (``live_per_snapshot``): the live
    claimants of a list of the members at the IP evaluated that list's filter once per member
    (over every row of a fifth of M's groups, 9.9 s against 0.9 s; issue #19)."""
    return _live_members_where(F.col("_live"), lambda m: at_owner_ip(m, owner_ip))


def _live_members_where(live: Column, keep) -> Column:
    """The ids of the live members for which ``keep(member)`` holds (null: not), each once per
    process, sorted; empty when none."""
    owning = F.filter(live, lambda m: m["processes"].isNotNull() & keep(m))
    return F.coalesce(F.array_sort(F.flatten(F.transform(
        owning, lambda m: F.array_repeat(m["client_id"], m["processes"])))),
        F.array().cast("array<string>"))


def build_queue_state(queue_offsets_df: DataFrame, ownership_df: DataFrame,
                      members_df: DataFrame, member_context_df: DataFrame,
                      liveness_window_seconds: int, max_snapshot_gap_seconds: int,
                      running_info_round_seconds: int, stage: Stage = no_staging) -> DataFrame:
    """One row per offsets snapshot of a queue with ``owners`` (one entry per live owning process,
    sorted), ``owner_count``, ``claimed_by`` (every claimant, live or not) and the broker's view;
    ``prev_ts`` (the queue's snapshot before, from silver.queue_offsets) lets the detectors find
    a snapshot's neighbours by a join instead of a window over every row.
    ``member_context_df``: silver.member_context (who is live at each snapshot of the group);
    ``members_df``: silver.group_members (when each client stops being live, for the claims
    that hold until then). ``running_info_round_seconds``: the answers of one running-info poll
    of a group lie within this (``answered_running_info_claims``).

    ``stage(df, name)`` stores the claim lifetimes, the [persistAll] claims merged, the answered
    claims and both sets of claims in force (a few rows per queue): each feeds two sides of its
    range join, and unstaged the windows over every ownership row ran four times (a fifth of M's
    groups: 23.7 s unstaged, 6.1 s staged)."""
    snaps = queue_offsets_df.select(*SNAPSHOT_KEY, "lag", "broker_offset", "consumer_offset",
                                    "prev_ts", "broker_offset_delta", "consumer_offset_delta",
                                    "owner_ip",
                                    "broker_reports_no_owner", "is_retry_topic", "date")
    live_until = liveness_ends(members_df, liveness_window_seconds)
    lifetimes = stage(claim_lifetimes(ownership_df, live_until, max_snapshot_gap_seconds),
                      "silver.claim_lifetimes")
    # the [persistAll] claims merged once, for both sets of claims in force below: merging is a
    # union of intervals, so merge(A ∪ B) = merge(A ∪ merge(B)), and M's 6.3 M persist claims
    # are sorted once instead of twice
    claim = [*QUEUE_KEY, "client_id", "valid_from", "valid_until"]
    persisted = F.col("source") == "persist_log"
    persisted_in_force = stage(claims_in_force(lifetimes.where(persisted)),
                               "silver.persisted_claims_in_force")
    # what the claimant itself keeps saying: every running-info round it answers, and its
    # [persistAll] lines (every persist interval, each held 2 intervals); a rebalance set is
    # logged once, so it says nothing about the client being alive now
    # staged too: merging them into claims in force reads them three times (the keys, the
    # intervals, each key's last end), and each read ran the rounds' window again
    answered = stage(answered_running_info_claims(
        lifetimes.where(F.col("source") == "running_info"), running_info_round_seconds
    ).select(*claim).unionByName(persisted_in_force), "silver.answered_claims")
    in_force = claims_in_force(lifetimes.where(~F.coalesce(persisted, F.lit(False)))
                               .select(*claim).unionByName(persisted_in_force))
    claimed = _with_claimants(snaps, stage(in_force, "silver.claims_in_force"), "claimed_by")
    claimed = _with_claimants(claimed, stage(claims_in_force(answered),
                                             "silver.answered_claims_in_force"), "answered_by")
    # a process owns what it pulls: a dead channel still listed behind a restarted id pulls
    # nothing, so owners count the processes that run (``running_processes``), not the listing
    live = live_per_snapshot(member_context_df.select(
        "cluster", "group", "ts", "client_id", F.col("running_processes").alias("processes")))
    empty = F.array().cast("array<string>")
    claimed_by = F.coalesce("claimed_by", empty)
    by_claims = live_owners(claimed_by)
    by_ip = live_owners_at_ip(F.col("owner_ip"))
    by_answers = live_owners(F.coalesce("answered_by", empty))
    nobody = nobody_consumes_per_broker(F.col("broker_reports_no_owner"),
                                        F.col("consumer_offset_delta"), F.col("lag"))
    # by_ip and by_answers only inside the branches that need them: each is a lambda over the
    # live members of every snapshot row, and both engines evaluate a CASE branch only for the
    # rows that reach it (three per row were a third of queue_state at M, issue #19)
    claims_own = F.size("_by_claims") > 0
    owners = F.when(nobody, by_answers).when(claims_own, F.col("_by_claims")).otherwise(by_ip)
    ip_only = F.when(claims_own, F.lit(False)).otherwise(~nobody & (F.size(by_ip) > 0))
    return (live.join(claimed, on=["cluster", "group", "ts"], how="right")
            .withColumn("_by_claims", by_claims)
            .withColumn("owners", owners)
            .withColumn("owned_by_ip_only", ip_only)
            .select(*SNAPSHOT_KEY, "lag", "broker_offset", "consumer_offset", "prev_ts",
                    "broker_offset_delta", "consumer_offset_delta", "owner_ip", "is_retry_topic",
                    "owners", F.size("owners").alias("owner_count"),
                    claimed_by.alias("claimed_by"),
                    "broker_reports_no_owner", "owned_by_ip_only",
                    "date"))
