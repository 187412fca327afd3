"""The producer replay's Spark transform against RocketMQ's answers, on whichever engine this run uses."""

from __future__ import annotations

from chispa import assert_column_equality
from pyspark.sql import functions as F

from jobs.replay.producer_cases import parse_producer_case, replay_producer_cases_spark
from jobs.replay.producer_spark import (
    client_version_number,
    java_long_hash,
    java_parse_int,
    java_split,
    java_string_hash,
    with_publish_queue,
)
from tests.replay.replay_vectors import producer_mismatches


def test_spark_transform_reproduces_every_java_producer_vector(spark, producer_vector_records):
    cases = [parse_producer_case(record) for record in producer_vector_records]
    outputs = list(replay_producer_cases_spark(spark, cases))
    assert len(outputs) == len(producer_vector_records)
    assert [p for record, output in zip(producer_vector_records, outputs)
            for p in producer_mismatches(record, output)] == []


def test_string_hash_column_runs_over_utf16_code_units(spark):
    df = spark.createDataFrame([("", 0), ("hello", 99162322), ("polygenelubricants", -(1 << 31)),
                                ("\U0001F600", 1772899), (None, None)], "key string, expected int")
    assert_column_equality(df.withColumn("h", java_string_hash(F.col("key"))), "h", "expected")


def test_long_hash_column_folds_the_high_word(spark):
    df = spark.createDataFrame([(0, 0), (-7, 6), ((1 << 63) - 1, -(1 << 31)), (-(1 << 63), -(1 << 31)),
                                (1 << 32, 1), (None, None)], "v long, expected int")
    assert_column_equality(df.withColumn("h", java_long_hash(F.col("v"))), "h", "expected")


def test_parse_int_column_is_null_where_java_throws(spark):
    df = spark.createDataFrame([("+3", 3), ("007", 7), ("\u0663", 3), ("-2147483648", -(1 << 31)),
                                (" 4", None), ("", None), ("+", None), ("2147483648", None),
                                ("99999999999", None), ("\U0001D7D1", None), (None, None)],
                               "text string, expected int")
    assert_column_equality(df.withColumn("v", java_parse_int(F.col("text"))), "v", "expected")


def test_split_column_drops_trailing_empty_strings_only(spark):
    df = spark.createDataFrame([("a:4", ["a", "4"]), ("a:", ["a"]), (":", []), ("", [""]), (":a", ["", "a"]),
                                ("a", ["a"]), (None, None)], "text string, expected array<string>")
    assert_column_equality(df.withColumn("parts", java_split(F.col("text"), ":")), "parts", "expected")


def test_client_version_number_reads_both_spellings(spark):
    df = spark.createDataFrame([("V4_7_1", 4007001), ("5.3.3", 5003003), (None, 4009007), ("latest", 4009007)],
                               "v string, expected long")
    assert_column_equality(df.withColumn("n", client_version_number(F.col("v"))), "n", "expected")


ROUTE_DDL = ("struct<order_topic_conf:string, queue_datas:array<struct<broker_name:string, "
             "read_queue_nums:int, write_queue_nums:int, perm:int>>, "
             "broker_datas:array<struct<broker_name:string, broker_ids:array<bigint>>>>")


def test_with_publish_queue_keeps_other_columns_and_answers_each_row(spark):
    both_up = (None, [("broker-b", 4, 4, 6), ("broker-a", 4, 4, 6)],
               [("broker-a", [0, 1]), ("broker-b", [0, 1])])
    b_down = (None, both_up[1], [("broker-a", [0, 1]), ("broker-b", [1])])
    ordered_b_down = ("broker-a:4;broker-b:4", both_up[1], b_down[2])
    rows = [("up", "HASH", "V4_9_7", "t", "Integer", "6", both_up),
            ("down", "HASH", "V4_9_7", "t", "Integer", "6", b_down),
            ("conf", "HASH", "V4_9_7", "t", "Integer", "6", ordered_b_down),
            ("room", "MACHINE_ROOM", "V5_3_3", "t", "String", "k", both_up)]
    df = spark.createDataFrame(rows, "label string, selector string, client_version string, topic string, "
                                     f"key_type string, key_value string, route {ROUTE_DDL}")
    result = {r["label"]: r for r in df.transform(with_publish_queue).collect()}
    assert (result["up"]["broker_name"], result["up"]["queue_id"]) == ("broker-b", 2)
    assert (result["down"]["broker_name"], result["down"]["queue_id"]) == ("broker-a", 2)
    # orderTopicConf lists broker-b whatever its master: the key stays on broker-b:2
    assert (result["conf"]["broker_name"], result["conf"]["queue_id"]) == ("broker-b", 2)
    assert result["room"]["broker_name"] is None
    assert result["room"]["error_message"].startswith("select message queue return null.\n")
    assert result["up"]["topic"] == "t" and result["up"]["error_class"] is None
