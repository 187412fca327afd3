"""Windows over a number instead of a key's strings.

A window carries its rows whole through a shuffle and a sort, and on Sail its cost follows the
bytes it moves: at M, the time-lag window over 17.6 M offset entries took 29.0 s partitioned by
the five queue-key columns (four of them strings) and 14.9 s by one long; carrying the strings
alongside a long key cost nearly as much as partitioning on them (benchmarks/RESULTS.md). A
key has few distinct values (a queue has thousands of snapshots a day), so number them once,
run the windows over the number and join the strings back at the end.

Only where the rows are narrow: joining the number onto silver.queue_state's rows (owner
arrays) made the stuck-episode windows slower, not faster (43.5 → 56.2 s at M).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F


def key_numbers(df: DataFrame, key: list[str], name: str) -> DataFrame:
    """The distinct ``key`` values of ``df``, numbered 1, 2, … in ``name`` in their sort order:
    a number depends on the set of keys only, never on the engine's row order."""
    return (df.select(*key).distinct()
            .withColumn(name, F.row_number().over(Window.orderBy(*key))))
