"""gold.queue_load: messages in per queue and hour, and the queue's share of its topic (DESIGN.md §5.2).

Messages in = the increase of the broker offset (the queue's max offset) between consecutive
snapshots. Every consuming group reports the same broker offset for a queue, so the series is
taken once per topic queue and snapshot time, whichever group reports it. A decrease is a reset
(truncation, a re-created topic), not traffic: it counts 0. Producers put messages on queues
(rocketmq-facts.md §7), so this is where their choice shows; no new pass over the landing is
needed, only silver.queue_offsets.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

TOPIC_QUEUE = ["cluster", "topic", "broker_name", "queue_id"]
INTERVAL_COLUMNS = ["date", *TOPIC_QUEUE, "prev_ts", "ts", "messages_in"]
QUEUE_LOAD_COLUMNS = ["date", *TOPIC_QUEUE, "hour", "messages_in", "share"]


def queue_intervals(queue_offsets_df: DataFrame) -> DataFrame:
    """One row per topic queue and snapshot interval: ``prev_ts`` → ``ts`` and ``messages_in``.

    Input: silver.queue_offsets (``date``, ``cluster``, ``group``, ``topic``, ``broker_name``,
    ``queue_id``, ``ts``, ``broker_offset``). A queue's first snapshot of the day opens no interval.
    Groups seen at the same ``ts`` give one snapshot (the highest broker offset, should they differ).
    """
    snapshots = (queue_offsets_df
                 .groupBy(*TOPIC_QUEUE, "ts")
                 .agg(F.max("broker_offset").alias("broker_offset"), F.max("date").alias("date")))
    order = Window.partitionBy(*TOPIC_QUEUE).orderBy("ts")
    delta = F.col("broker_offset") - F.lag("broker_offset").over(order)
    return (snapshots
            .select("date", *TOPIC_QUEUE, F.lag("ts").over(order).alias("prev_ts"), "ts",
                    F.when(delta > 0, delta).otherwise(F.lit(0)).cast("long").alias("messages_in"))
            .where(F.col("prev_ts").isNotNull())
            .select(*INTERVAL_COLUMNS))


def build_queue_load(queue_offsets_df: DataFrame, intervals_df: DataFrame | None = None
                     ) -> DataFrame:
    """gold.queue_load: per topic queue and UTC hour (0–23, the hour an interval ends in), the
    messages in and ``share`` = that / the topic's messages in that hour (null when the topic got
    none). Queues without any interval in an hour have no row for it. ``intervals_df``:
    ``queue_intervals`` of the same offsets, when computed already."""
    intervals = queue_intervals(queue_offsets_df) if intervals_df is None else intervals_df
    hourly = (intervals
              .groupBy("date", *TOPIC_QUEUE, F.hour("ts").alias("hour"))
              .agg(F.sum("messages_in").cast("long").alias("messages_in")))
    topic_hour = Window.partitionBy("date", "cluster", "topic", "hour")
    topic_total = F.sum("messages_in").over(topic_hour)
    return hourly.select(
        "date", *TOPIC_QUEUE, F.col("hour").cast("int").alias("hour"), "messages_in",
        F.when(topic_total > 0, F.col("messages_in") / topic_total).cast("double").alias("share"))
