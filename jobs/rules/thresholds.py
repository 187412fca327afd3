"""The thresholds the ownership rules read (DESIGN.md §5; values from jobs.settings)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OwnershipRules:
    liveness_window_seconds: int
    max_snapshot_gap_seconds: int
    orphan_min_duration_seconds: int
    orphan_transient_max_seconds: int
    critical_lag: int
    critical_minutes: int
