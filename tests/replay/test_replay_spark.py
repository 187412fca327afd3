"""The Spark transform against RocketMQ's outputs, on whichever engine this pytest run uses."""

from __future__ import annotations

import hashlib

import pytest
from chispa import assert_column_equality
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from jobs.replay.cases import parse_case
from jobs.replay.spark_cases import replay_cases_spark
from jobs.replay.spark_replay import (
    MQ_ARRAY,
    STRING_ARRAY,
    machine_room_of_broker,
    md5_ring_hash,
    replay_snapshots,
    replay_states,
    sort_cid_all,
    sort_mq_all,
)
from tests.replay.replay_vectors import mismatches, vector_record

SNAPSHOT_SCHEMA = StructType([
    StructField("ts", StringType()),
    StructField("current_cid", StringType()),
    StructField("strategy", StringType()),
    StructField("mq_all", MQ_ARRAY),
    StructField("cid_all", STRING_ARRAY),
])


def test_spark_transform_reproduces_every_java_vector(spark, vector_records):
    cases = [parse_case(record) for record in vector_records]
    outputs = list(replay_cases_spark(spark, cases))
    problems = [p for record, output in zip(vector_records, outputs) for p in mismatches(record, output)]
    assert len(outputs) == len(vector_records)
    assert problems == []


def test_replay_states_gives_one_row_per_position_and_duplicates_share_the_first_slice(spark):
    record = vector_record("avg-dup-02")  # AVG, ids [A, A], 5 queues: both take 3, 2 unowned
    states_df = spark.createDataFrame(
        [("s", record["strategy"], record["mq_all"], record["cid_all"])],
        "state_id string, strategy string, mq_all array<struct<topic:string,broker_name:string,queue_id:int>>, "
        "cid_all array<string>")
    rows = replay_states(states_df).orderBy("cid_index").collect()
    assert [row["cid_index"] for row in rows] == list(range(len(record["cid_all"])))
    assert [[mq.asDict() for mq in row["allocated"]] for row in rows] == [
        result["allocated"] for result in record["results"] if result["current_cid_index"] is not None]


def test_sort_mq_all_orders_broker_names_as_strings_and_queue_ids_as_numbers(spark):
    df = spark.createDataFrame([
        ([("t", "broker-9", 4), ("t", "broker-10", 15), ("t", "broker-10", 4), ("t", "broker-11", 14)],
         [("t", "broker-10", 4), ("t", "broker-10", 15), ("t", "broker-11", 14), ("t", "broker-9", 4)]),
        (None, None),
    ], StructType([StructField("mq_all", MQ_ARRAY), StructField("expected", MQ_ARRAY)]))
    assert_column_equality(df.withColumn("mq_all", sort_mq_all(F.col("mq_all"))), "mq_all", "expected")


def test_sort_cid_all_uses_java_utf16_order_and_keeps_duplicates(spark):
    df = spark.createDataFrame([
        (["\uffff", "10.0.0.83@1", "\U00010000", "10.0.0.117@1", "10.0.0.83@1"],
         ["10.0.0.117@1", "10.0.0.83@1", "10.0.0.83@1", "\U00010000", "\uffff"]),
        (None, None),
    ], StructType([StructField("cid_all", STRING_ARRAY), StructField("expected", STRING_ARRAY)]))
    assert_column_equality(df.withColumn("cid_all", sort_cid_all(F.col("cid_all"))), "cid_all", "expected")


def test_machine_room_of_broker_follows_java_split(spark):
    df = spark.createDataFrame(
        [("room1@broker-a", "room1"), ("room1@", None), ("room1@broker@y", None), ("broker-x", None),
         ("@broker-z", ""), ("a@b@", "a"), ("@", None), (None, None)],
        "broker_name string, expected string")
    assert_column_equality(df.withColumn("room", machine_room_of_broker(F.col("broker_name"))), "room", "expected")


def test_md5_ring_hash_is_first_four_digest_bytes_unsigned(spark):
    keys = ["10.0.0.2@4102#1700000000002-0", "MessageQueue [topic=t, brokerName=broker-a, queueId=7]", "A-19"]
    df = spark.createDataFrame([(k, int.from_bytes(hashlib.md5(k.encode()).digest()[:4], "big")) for k in keys]
                               + [(None, None)], "key string, expected bigint")
    assert_column_equality(df.withColumn("hash", md5_ring_hash(F.col("key"))), "hash", "expected")


def _snapshots_df(spark, rows):
    return spark.createDataFrame(rows, SNAPSHOT_SCHEMA)


def test_replay_snapshots_replays_each_distinct_state_once_and_keeps_every_row(spark):
    mqs = [("t", "b", q) for q in range(5)]
    rows = [(f"t{minute}", cid, "AVG", mqs, cids)
            for minute in range(3)
            for cids in [["B", "A"]]
            for cid in cids]
    rows.append(("t3", "A", "AVG", list(reversed(mqs)), ["A", "B"]))  # same state, other order
    rows.append(("t3", "Z", "AVG", mqs, ["A", "B"]))  # a caller not in cidAll
    result_df = replay_snapshots(_snapshots_df(spark, rows))
    result = result_df.collect()
    assert len(result) == len(rows)
    assert result_df.select("state_id").distinct().count() == 1
    owned = {(r["ts"], r["current_cid"]): [mq["queue_id"] for mq in r["allocated"]] for r in result}
    assert owned[("t0", "A")] == [0, 1, 2] and owned[("t0", "B")] == [3, 4]
    assert owned[("t3", "A")] == [0, 1, 2]
    assert owned[("t3", "Z")] == []


def test_replay_snapshots_reports_java_errors_per_row(spark):
    rows = [("t0", "", "AVG", [("t", "b", 0)], ["A"]), ("t0", "A", "AVG", [], ["A"])]
    result = {r["current_cid"]: r for r in replay_snapshots(_snapshots_df(spark, rows)).collect()}
    assert (result[""]["error_class"], result[""]["error_message"]) == (
        "java.lang.IllegalArgumentException", "currentCID is empty")
    assert result["A"]["error_message"] == "mqAll is null or mqAll empty"
    assert result["A"]["allocated"] is None


@pytest.mark.parametrize("strategy", ["MACHINE_ROOM_NEARBY-CONSISTENT_HASH", "ROUND_ROBIN"])
def test_strategies_without_a_spark_replay_are_flagged_not_guessed(spark, strategy):
    rows = [("t0", "room1-A", strategy, [("t", "room1@b", 0)], ["room1-A"])]
    result = replay_snapshots(_snapshots_df(spark, rows)).collect()[0]
    assert result["error_class"] == "rocketlens.UnsupportedStrategy"
    assert result["allocated"] is None


def test_replay_states_accepts_non_nullable_keys(spark):
    # concat_ws is never null; Sail 0.7 once failed such plans (physical vs logical nullability).
    states_df = (spark.createDataFrame(
        [("s", "AVG", [("t", "b", 0), ("t", "b", 1)], ["A", "B"])],
        "state_id string, strategy string, mq_all array<struct<topic:string,broker_name:string,queue_id:int>>, "
        "cid_all array<string>")
        .withColumn("state_id", F.concat_ws("#", "state_id", F.lit("1"))))
    rows = replay_states(states_df).orderBy("cid_index").collect()
    assert [(r["state_id"], r["current_cid"], [mq["queue_id"] for mq in r["allocated"]]) for r in rows] == [
        ("s#1", "A", [0]), ("s#1", "B", [1])]
