"""Severity of a finding (DESIGN.md §4, §5.1)."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

INFO_CAUSES = ("REBALANCE_GAP", "STALE_OWNER")


def severity(root_cause: Column, lag_end: Column, minutes: Column, critical_lag: int,
             critical_minutes: int) -> Column:
    """DESIGN.md §4: INFO for REBALANCE_GAP and STALE_OWNER; CRITICAL at lag_end ≥
    critical_lag or minutes ≥ critical_minutes; WARN otherwise."""
    return (F.when(root_cause.isin(*INFO_CAUSES), F.lit("INFO"))
            .when((F.coalesce(lag_end, F.lit(0)) >= critical_lag)
                  | (minutes >= critical_minutes), F.lit("CRITICAL"))
            .otherwise(F.lit("WARN")))


def at_most_info(severity_col: Column, has_ownership_source: Column) -> Column:
    """A group with no ownership source at all (no running info, rebalance or persist lines,
    no client_ip) gets at most INFO: its unowned queues are unknown, not faults (§5.1)."""
    return F.when(F.coalesce(has_ownership_source, F.lit(False)), severity_col).otherwise(
        F.lit("INFO"))
