"""Ownership claims and how long each holds (DESIGN.md §5, §5.1 "Claims").

A client owns a queue at t when a claim of one of these sources covers t:
- ``running_info``: the queue is in its mq_table (not dropped); holds until the client's next
  running info, **at most** ``max_snapshot_gap`` after its ts — a collector polling every 3 min
  would otherwise leave every rebalance's old owner in place for 3 min;
- ``rebalance_log``: the queue is in its ``rebalanced result changed`` set; the client logs only
  when its set changes (facts §2.2 step 6), so the set holds until its next set for the topic
  or until the client stops being live — also when it is the last line of the data;
- ``persist_log``: a ``[persistAll]`` line, every owned queue each persist interval (facts
  §2.3), holds 2 × that interval;
- ``client_ip``: a non-N/A ``consumerProgress -s`` owner IP is a claim by the live member(s) at
  that IP (the part of the client id before ``@``, facts §5.2), used where no other claim
  names a live owner.
Only live claimants own (``jobs.rules.liveness``); a client id held by k processes is k owners.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from jobs.columns import plus_seconds
from jobs.time_joins import merge_intervals

QUEUE_KEY = ["cluster", "group", "topic", "broker_name", "queue_id"]


def claim_lifetimes(ownership_df: DataFrame, live_until_df: DataFrame,
                    max_snapshot_gap_seconds: int) -> DataFrame:
    """silver.queue_ownership claims with the end each one really has (module docstring):
    ``cluster, group, topic, broker_name, queue_id, client_id, source, valid_from, valid_until``.
    ``live_until_df``: ``jobs.rules.liveness.liveness_ends``. A claim of a client never seen in
    the connections (no cluster) or ending before it starts is dropped: it cannot own."""
    capped = plus_seconds(F.col("valid_from"), max_snapshot_gap_seconds)
    end = (F.when(F.col("source") == "running_info",
                  F.least(F.coalesce("valid_until", capped), capped))
           .when(F.col("source") == "rebalance_log",
                 F.coalesce("valid_until", "live_until"))
           .otherwise(F.col("valid_until")))
    return (ownership_df.join(live_until_df, on=["cluster", "group", "client_id"], how="left")
            .select(*QUEUE_KEY, "client_id", "source", "valid_from", end.alias("valid_until"))
            .where(F.col("valid_until").isNotNull()
                   & (F.col("valid_until") > F.col("valid_from"))))


def claims_in_force(lifetimes_df: DataFrame) -> DataFrame:
    """Per queue and client, the stretches of time some claim covers (``claim_lifetimes`` rows,
    merged): the snapshot join meets a few stretches, not every claim (a [persistAll] line every
    5 s; joining every claim with every cut of its queue grows with the square of the day)."""
    return merge_intervals(lifetimes_df.select(*QUEUE_KEY, "client_id", "valid_from", "valid_until"),
                           [*QUEUE_KEY, "client_id"], "valid_from", "valid_until")


def client_ip_of(client_id: Column) -> Column:
    """The IP part of a client id (``IP@pid[#nanotime]`` or ``IP@instanceName``, facts §3)."""
    return F.substring_index(client_id, "@", 1)


def at_owner_ip(member: Column, owner_ip: Column) -> Column:
    """Whether a live member (a struct with ``client_id``) is at ``owner_ip``, the owner
    ``consumerProgress -s`` printed; null (not) when that is null (N/A: nobody)."""
    return client_ip_of(member["client_id"]) == owner_ip


def groups_with_ownership_source(queue_state_df: DataFrame) -> DataFrame:
    """``cluster, group, has_ownership_source`` (true) of the groups with any ownership source
    that day: some queue claimed by a running-info, rebalance or persist claim, or a non-N/A
    ``client_ip``. The others get at most INFO findings (DESIGN.md §5.1: with no source, an
    unowned queue is unknown, not a fault)."""
    return (queue_state_df
            .where((F.size("claimed_by") > 0) | F.col("owner_ip").isNotNull())
            .select("cluster", "group").distinct()
            .withColumn("has_ownership_source", F.lit(True)))
