"""What one offsets snapshot proves by itself (DESIGN.md §5.1 "Evidence, not absence").

A missing record, an ``N/A`` or a quiet source is unknown, never proof of a fault."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from jobs.columns import plus_seconds


def offset_advanced(consumer_offset_delta: Column) -> Column:
    """The committed offset moved forward since the queue's previous snapshot: someone consumes
    it, so the snapshot is not orphaned whatever the claims say. Unknown (first snapshot): no."""
    return F.coalesce(consumer_offset_delta > 0, F.lit(False))


def nobody_consumes_per_broker(broker_reports_no_owner: Column, consumer_offset_delta: Column,
                               lag: Column) -> Column:
    """``consumerProgress -s`` printed ``N/A`` **and** the committed offset did not advance
    while messages wait (lag > 0; an idle queue proves nothing): two sources agree that no
    client holds the queue (a crashed client still listed by its channel
    answers nobody and commits nothing, facts §3 "Stale ids"). ``N/A`` alone proves nothing:
    mqadmin stops filling owners for every later connection once one client does not answer
    (facts §5.2), so it never removes the claim of a queue whose offset moves — nor a claim
    its claimant still backs (``answered_running_info_claims``): a live owner stuck behind one
    slow message pins the offset too, and keeps listing the queue in every running info."""
    return (F.coalesce(broker_reports_no_owner, F.lit(False))
            & ~offset_advanced(consumer_offset_delta) & F.coalesce(lag > 0, F.lit(False)))


def answered_running_info_claims(running_info_claims_df: DataFrame,
                                 round_seconds: int) -> DataFrame:
    """The claims a claimant itself still backs: its running-info claims (``claim_lifetimes``
    rows of source ``running_info``) each cut where the claimant first misses a round of its
    group's running info — ``round_seconds`` after the first later round — or earlier where the
    claim ends. A live client answers every round, so its mq_table stays fresh; a crashed one
    (its stale id listed up to 120 s, facts §3 "Stale ids") stops answering at once while its
    group-mates answer. A round is the answers of one collector poll; they lie within
    ``round_seconds`` of each other. Columns: those of the input."""
    key = ["cluster", "group"]
    polls = running_info_claims_df.select(*key, "client_id", "valid_from").distinct()
    no_ts, no_id = F.lit(None).cast("timestamp"), F.lit(None).cast("string")
    probes = polls.select(*key, "client_id", "valid_from",
                          plus_seconds(F.col("valid_from"), round_seconds).alias("_t"),
                          no_ts.alias("_round"))
    rounds = polls.select(*key, no_id.alias("client_id"), no_ts.alias("valid_from"),
                          F.col("valid_from").alias("_t"), F.col("valid_from").alias("_round"))
    later = (Window.partitionBy(*key).orderBy("_t", F.col("_round").asc_nulls_first())
             .rowsBetween(Window.currentRow, Window.unboundedFollowing))
    next_round = (probes.unionByName(rounds)
                  .withColumn("_next_round", F.first("_round", ignorenulls=True).over(later))
                  .where(F.col("_round").isNull())
                  .select(*key, "client_id", "valid_from", "_next_round"))
    cut = plus_seconds(F.col("_next_round"), round_seconds)
    until = F.when(F.col("_next_round").isNull(), F.col("valid_until")).otherwise(
        F.least(F.col("valid_until"), cut))
    return (running_info_claims_df.join(next_round, on=[*key, "client_id", "valid_from"],
                                        how="left")
            .withColumn("valid_until", until)
            .drop("_next_round"))
