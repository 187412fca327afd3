"""Windows over key numbers: each key once, numbered by its sort order, joined back right."""

from __future__ import annotations

import datetime as dt

from chispa import assert_df_equality
from pyspark.sql import functions as F

from jobs.key_numbers import key_numbers
from jobs.silver.queue_offsets import build_queue_offsets

DAY = dt.date(2025, 11, 21)


def at(minute):
    return dt.datetime(2025, 11, 21, 10, minute)


def test_each_key_gets_one_number_in_its_sort_order(spark):
    df = spark.createDataFrame([("b", 1, "x"), ("a", 2, "y"), ("b", 1, "z"), ("a", 1, "w")],
                               "k string, n int, v string")
    actual = key_numbers(df, ["k", "n"], "_no").select("k", "n", F.col("_no").cast("int"))
    expected = spark.createDataFrame([("a", 1, 1), ("a", 2, 2), ("b", 1, 3)],
                                     "k string, n int, _no int")
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def test_queue_offsets_keep_queues_that_differ_in_one_key_part_apart(spark):
    schema = ("ts timestamp, cluster string, group string, topic string, broker_name string, "
              "queue_id int, broker_offset long, consumer_offset long, pull_offset long, "
              "last_timestamp long, client_ip string, _source_file string, _line_no long")
    q0, q1 = ("c", "g", "t", "b", 0), ("c", "g", "t", "b", 1)
    retry = ("c", "g", "%RETRY%g", "b", 0)
    df = spark.createDataFrame([
        (at(0), *q0, 100, 90, None, 0, "1.1.1.1", "f1", 1),
        (at(0), *q1, 500, 500, None, 0, "1.1.1.2", "f1", 2),
        (at(0), *retry, 7, 7, None, 0, "1.1.1.1", "f1", 3),
        (at(1), *q0, 130, 100, None, 0, "1.1.1.1", "f1", 4),
        (at(1), *q1, 520, 510, None, 0, "1.1.1.2", "f1", 5),
        (at(1), *retry, 9, 7, None, 0, "1.1.1.1", "f1", 6),
    ], schema).withColumn("date", F.lit(DAY))
    actual = build_queue_offsets(df).select(
        "topic", "queue_id", "ts", "lag", "prev_ts", "broker_offset_delta",
        "consumer_offset_delta", "owner_ip", "is_retry_topic")
    expected = spark.createDataFrame([
        ("t", 0, at(0), 10, None, None, None, "1.1.1.1", False),
        ("t", 0, at(1), 30, at(0), 30, 10, "1.1.1.1", False),
        ("t", 1, at(0), 0, None, None, None, "1.1.1.2", False),
        ("t", 1, at(1), 10, at(0), 20, 10, "1.1.1.2", False),
        ("%RETRY%g", 0, at(0), 0, None, None, None, "1.1.1.1", True),
        ("%RETRY%g", 0, at(1), 2, at(0), 2, 0, "1.1.1.1", True),
    ], "topic string, queue_id int, ts timestamp, lag long, prev_ts timestamp, "
       "broker_offset_delta long, consumer_offset_delta long, owner_ip string, "
       "is_retry_topic boolean")
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)
