"""with_trailing_share sums the topic and its brokers over one row per broker and snapshot time;
it must equal the same sums taken by windows over every queue row.

The reference below is that plain reading: each sum a range window over the rows of its topic
or broker. The intervals reach the corners: brokers snapshotted at different seconds of a
minute, two queues whose ts differ by microseconds only (one millisecond), a broker that gets
nothing for a while, a gap longer than the window, a topic snapshotted twice a minute (each
queue counts once among the active queues), two topics and two clusters.
"""

from __future__ import annotations

import datetime as dt
import random

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

from jobs.gold.producer_findings import with_trailing_share
from jobs.gold.queue_load import TOPIC_QUEUE

WINDOW_MINUTES = 10
START = dt.datetime(2025, 3, 14, 8, 0, 0)
SCHEMA = ("date date, cluster string, topic string, broker_name string, queue_id int, "
          "prev_ts timestamp, ts timestamp, messages_in long")


def reference(intervals_df, window_minutes: int):
    """Every sum as a window over the queue rows themselves."""
    width = window_minutes * 60_000
    queue = Window.partitionBy(*TOPIC_QUEUE).orderBy("_ts_ms")
    topic = Window.partitionBy("cluster", "topic").orderBy("_ts_ms")
    broker = Window.partitionBy("cluster", "topic", "broker_name").orderBy("_ts_ms")
    trailing, so_far = (-(width - 1), 0), (Window.unboundedPreceding, 0)
    return (intervals_df
            .withColumn("_ts_ms", F.unix_millis("ts"))
            .withColumn("_q_sum", F.sum("messages_in").over(queue.rangeBetween(*trailing)))
            .withColumn("_span_start", F.min("prev_ts").over(queue.rangeBetween(*trailing)))
            .withColumn("_t_sum", F.sum("messages_in").over(topic.rangeBetween(*trailing)))
            .withColumn("_q_cum", F.sum("messages_in").over(queue.rangeBetween(*so_far)))
            .withColumn("_t_cum", F.sum("messages_in").over(topic.rangeBetween(*so_far)))
            .withColumn("_b_sum", F.sum("messages_in").over(broker.rangeBetween(*trailing)))
            .withColumn("_active_queues", F.size(F.collect_set(
                F.when(F.col("_b_sum") > 0, F.struct("broker_name", "queue_id"))).over(
                Window.partitionBy("cluster", "topic", F.date_trunc("minute", "ts")))).cast("long"))
            .drop("_b_sum"))


def intervals() -> list[tuple]:
    rng = random.Random(19)
    rows = []
    topics = [("c1", "orders", {"broker-a": 3, "broker-b": 2}), ("c1", "pay", {"broker-a": 4}),
              ("c2", "orders", {"broker-a": 2, "broker-c": 2}), ("c2", "half-minutes", {"broker-a": 2, "broker-b": 3})]
    for cluster, topic, brokers in topics:
        step = 30 if topic == "half-minutes" else 60  # a collector that polls twice a minute
        for broker, queues in brokers.items():
            offset_s = rng.randrange(0, step - 10)  # each broker's snapshot second within the step
            for queue_id in range(queues):
                prev = None
                for minute in range(0, 60 * 60 // step):
                    if 30 <= minute < 45 and topic == "orders" and cluster == "c1":
                        continue  # a gap longer than the window
                    # queue 1 of broker-a is a few microseconds after queue 0: the same millisecond
                    ts = START + dt.timedelta(seconds=minute * step + offset_s,
                                              microseconds=7 * queue_id if broker == "broker-a" else 0)
                    quiet = broker == "broker-b" and 10 <= minute < 25
                    messages = 0 if quiet else rng.choice([0, 1, 5, 40, 300])
                    if prev is not None:
                        rows.append((START.date(), cluster, topic, broker, queue_id, prev, ts, messages))
                    prev = ts
    return rows


@pytest.mark.parametrize("window_minutes", [1, WINDOW_MINUTES, 60])
def test_sums_over_per_timestamp_rows_equal_windows_over_every_queue_row(spark, window_minutes):
    df = spark.createDataFrame(intervals(), SCHEMA)
    actual = with_trailing_share(df, window_minutes)
    expected = reference(df, window_minutes)
    assert sorted(actual.columns) == sorted(expected.columns)
    assert dict(actual.dtypes) == dict(expected.dtypes)
    columns = expected.columns
    assert actual.count() == expected.count() == df.count()
    assert actual.select(columns).exceptAll(expected.select(columns)).collect() == []
    assert expected.select(columns).exceptAll(actual.select(columns)).collect() == []
    # the day reaches the corners the sums differ on when taken wrongly
    assert expected.where("_active_queues > 0 and _active_queues < 5").count() > 0
    assert df.groupBy("cluster", "topic", F.unix_millis("ts")).agg(
        F.countDistinct("ts").alias("n")).where("n > 1").count() > 0
    # a queue snapshotted twice in a minute counts once among the active queues
    twice = df.groupBy("cluster", "topic", "broker_name", "queue_id", F.date_trunc("minute", "ts")).count()
    assert twice.where("count > 1").count() > 0
    assert expected.where("topic = 'half-minutes'").agg(F.max("_active_queues")).first()[0] == 5
