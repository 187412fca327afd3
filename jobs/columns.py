"""Column functions shared across layers."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


def plus_seconds(ts: Column, seconds: float) -> Column:
    """``ts`` moved by ``seconds`` (negative moves back), in millisecond arithmetic: interval
    literals and ``to_utc_timestamp`` offsets are not read alike by Sail and classic Spark."""
    return F.timestamp_millis(F.unix_millis(ts) + F.lit(int(seconds * 1000)))
