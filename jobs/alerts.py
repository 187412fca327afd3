"""Findings at or above a severity, for ``rocketlens run --fail-on`` (DESIGN.md §1: exit 3).

Severity order is DESIGN.md §4's: ``INFO`` < ``WARN`` < ``CRITICAL``. The finding tables are the
gold tables with a ``severity`` per finding; ``stuck_queues`` counts when the lake has it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs import lake

SEVERITIES = ("INFO", "WARN", "CRITICAL")
FINDING_TABLES = ("orphaned_queues", "double_owned_queues", "stuck_queues")


def filter_at_or_above(severity: str) -> Callable[[DataFrame], DataFrame]:
    """Keep the findings whose ``severity`` is ``severity`` or higher (input: a gold finding table)."""
    if severity not in SEVERITIES:
        raise ValueError(f"unknown severity {severity!r}; choose one of {', '.join(SEVERITIES)}")
    levels = list(SEVERITIES[SEVERITIES.index(severity):])

    def transform(df: DataFrame) -> DataFrame:
        return df.where(F.col("severity").isin(levels))

    return transform


def count_findings(spark: SparkSession, lake_dir: str | Path, run_date: dt.date,
                   severity: str) -> dict[str, int]:
    """``{"gold.<table>": n}`` of the day's findings at or above ``severity``, per finding table
    present in the lake."""
    present = {name for layer, name, _path in lake.list_tables(lake_dir) if layer == "gold"}
    return {f"gold.{name}": lake.read_day(spark, lake_dir, "gold", name, run_date)
            .transform(filter_at_or_above(severity)).count()
            for name in FINDING_TABLES if name in present}
