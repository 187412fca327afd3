"""The queue's minimum offset (DESIGN.md §3.1) from bronze to silver.queue_offsets: carried as
reported, null when the collector does not report it — unknown, never 0 (both engines)."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F

from jobs.silver.queue_offsets import build_queue_offsets

DAY = dt.date(2025, 11, 21)
SCHEMA = ("ts timestamp, cluster string, group string, topic string, broker_name string, "
          "queue_id int, broker_offset long, consumer_offset long, pull_offset long, "
          "last_timestamp long, client_ip string, _source_file string, _line_no long")


def bronze(spark, rows, with_min_offset):
    df = spark.createDataFrame([row[:13] for row in rows], SCHEMA).withColumn("date", F.lit(DAY))
    if with_min_offset:
        minimum = spark.createDataFrame([(row[12], row[13]) for row in rows],
                                        "_line_no long, min_offset long")
        df = df.join(minimum, on="_line_no")
    return df


def at(minute):
    return dt.datetime(2025, 11, 21, 10, minute)


ROWS = [(at(0), "c", "g", "t", "b", 0, 100, 40, None, 0, "1.1.1.1", "f", 1, 60),
        (at(1), "c", "g", "t", "b", 0, 130, 50, None, 0, "1.1.1.1", "f", 2, None),
        (at(0), "c", "g", "t", "b", 1, 100, 90, None, 0, "1.1.1.1", "f", 3, 0)]


def minimums(df):
    return {(r.queue_id, r.ts.minute): r.min_offset
            for r in df.select("queue_id", "ts", "min_offset").collect()}


def test_min_offset_is_carried_as_reported_and_null_stays_unknown(spark):
    silver = build_queue_offsets(bronze(spark, ROWS, with_min_offset=True))
    assert minimums(silver) == {(0, 0): 60, (0, 1): None, (1, 0): 0}


def test_bronze_without_the_column_gives_unknown_not_zero(spark):
    silver = build_queue_offsets(bronze(spark, ROWS, with_min_offset=False))
    assert minimums(silver) == {(0, 0): None, (0, 1): None, (1, 0): None}
