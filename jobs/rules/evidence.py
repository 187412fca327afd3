"""What one offsets snapshot proves by itself (DESIGN.md §5.1 "Evidence, not absence").

A missing record, an ``N/A`` or a quiet source is unknown, never proof of a fault."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


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
    (facts §5.2), so it never removes the claim of a queue whose offset moves."""
    return (F.coalesce(broker_reports_no_owner, F.lit(False))
            & ~offset_advanced(consumer_offset_delta) & F.coalesce(lag > 0, F.lit(False)))
