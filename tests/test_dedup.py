"""De-duplication of snapshots: which copy wins, whatever the engine's row order."""

from __future__ import annotations

import datetime as dt

from chispa import assert_df_equality
from pyspark.sql import functions as F

from jobs.silver.dedup import filter_first_per_key, filter_first_per_snapshot, first_running_info
from jobs.silver.queue_offsets import build_queue_offsets

DAY = dt.date(2025, 11, 21)
SCHEMA = "q string, ts timestamp, v long, _source_file string, _line_no long"


def at(minute):
    return dt.datetime(2025, 11, 21, 10, minute)


def rows():
    return [
        ("a", at(0), 1, "f2", 1),
        ("a", at(0), 2, "f1", 9),   # earlier file wins over an earlier line
        ("a", at(0), 3, "f1", 10),
        ("a", at(1), 4, "f1", 11),
        ("a", at(2), 5, "f3", 2),
        ("a", at(2), 6, "f3", 1),   # same file: the earlier line wins
        ("b", at(0), 7, "f1", 1),
        ("b", None, 8, "f1", 3),
        ("b", None, 9, "f1", 2),    # a null ts is one snapshot too
        (None, at(0), 10, "f1", 5),
        (None, at(0), 11, "f1", 4),
    ]


EXPECTED = [("a", at(0), 2), ("a", at(1), 4), ("a", at(2), 6), ("b", at(0), 7), ("b", None, 9),
            (None, at(0), 11)]


def test_first_per_snapshot_keeps_the_first_copy_by_file_then_line(spark):
    df = spark.createDataFrame(rows(), SCHEMA)
    actual = filter_first_per_snapshot(df, ["q"]).select("q", "ts", "v")
    expected = spark.createDataFrame(EXPECTED, "q string, ts timestamp, v long")
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def test_first_per_snapshot_keeps_the_rows_of_first_per_key(spark):
    df = spark.createDataFrame(rows(), SCHEMA)
    expected = spark.createDataFrame(EXPECTED, "q string, ts timestamp, v long")
    actual = filter_first_per_key(df, ["q", "ts"]).select("q", "ts", "v")
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def test_queue_offsets_deltas_follow_the_winning_copies(spark):
    schema = ("ts timestamp, cluster string, group string, topic string, broker_name string, "
              "queue_id int, broker_offset long, consumer_offset long, pull_offset long, "
              "last_timestamp long, client_ip string, _source_file string, _line_no long")
    q = ("c", "g", "t", "b", 0)
    df = spark.createDataFrame([
        (at(0), *q, 100, 90, None, 0, "1.1.1.1", "f1", 1),
        (at(0), *q, 999, 999, None, 0, "9.9.9.9", "f2", 1),   # a late repeat that lost
        (at(1), *q, 130, 100, None, 0, "N/A", "f2", 2),
        (at(1), *q, 555, 555, None, 0, "N/A", "f2", 3),
        (at(2), *q, 130, 130, 131, 0, " ", "f1", 7),
    ], schema).withColumn("date", F.lit(DAY))
    actual = build_queue_offsets(df).select(
        "ts", "lag", "prev_ts", "broker_offset_delta", "consumer_offset_delta", "owner_ip",
        "broker_reports_no_owner", "inflight", "time_lag_seconds")
    expected = spark.createDataFrame([
        (at(0), 10, None, None, None, "1.1.1.1", False, None, None),
        # message 100 did not exist at 10:00 (broker offset 100), so it waited at most 60 s
        (at(1), 30, at(0), 30, 10, None, True, None, 60.0),
        (at(2), 0, at(1), 0, 30, None, False, 1, 0.0),
    ], "ts timestamp, lag long, prev_ts timestamp, broker_offset_delta long, "
       "consumer_offset_delta long, owner_ip string, broker_reports_no_owner boolean, "
       "inflight long, time_lag_seconds double")
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def test_first_running_info_next_ts_is_the_clients_next_snapshot(spark):
    """``next_ts``: the client's next snapshot, never another copy of the same one, nor another
    client's or group's; null after the client's last."""
    schema = ("cluster string, group string, client_id string, ts timestamp, v long, "
              "_source_file string, _line_no long")
    df = spark.createDataFrame([
        ("c", "g", "a@1", at(0), 1, "f1", 1),
        ("c", "g", "a@1", at(0), 2, "f2", 1),  # a copy of the first snapshot
        ("c", "g", "a@1", at(2), 3, "f1", 2),
        ("c", "g", "a@1", at(5), 4, "f1", 3),
        ("c", "g", "b@1", at(1), 5, "f1", 4),
        ("c", "h", "a@1", at(3), 6, "f1", 5),
    ], schema)
    actual = first_running_info(df, "v", next_ts="next")
    expected = spark.createDataFrame([
        ("c", "g", "a@1", at(0), 1, at(2)), ("c", "g", "a@1", at(2), 3, at(5)),
        ("c", "g", "a@1", at(5), 4, None), ("c", "g", "b@1", at(1), 5, None),
        ("c", "h", "a@1", at(3), 6, None),
    ], "cluster string, group string, client_id string, ts timestamp, v long, next timestamp")
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True,
                       ignore_column_order=True)


def test_first_running_info_takes_the_winning_copys_columns(spark):
    """The window numbers the copies by key and place only; the columns are joined to the
    winner, so they must be that copy's, never another copy's of the same snapshot."""
    schema = ("cluster string, group string, client_id string, ts timestamp, v long, "
              "w string, _source_file string, _line_no long")
    df = spark.createDataFrame([
        ("c", "g", "a@1", at(0), 1, "late", "f2", 1),
        ("c", "g", "a@1", at(0), 2, "first", "f1", 9),
        ("c", "g", "a@1", at(0), 3, "same file, later", "f1", 10),
        ("c", "g", "a@1", at(1), 4, "only", "f2", 2),
        ("c", "g", "b@1", at(0), 5, "other client", "f2", 1),
    ], schema)
    actual = first_running_info(df, "v", "w")
    expected = spark.createDataFrame([
        ("c", "g", "a@1", at(0), 2, "first"), ("c", "g", "a@1", at(1), 4, "only"),
        ("c", "g", "b@1", at(0), 5, "other client"),
    ], "cluster string, group string, client_id string, ts timestamp, v long, w string")
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True,
                       ignore_column_order=True)
