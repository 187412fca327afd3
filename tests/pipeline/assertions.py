"""Assertions of the hand day's bronze and silver contents, shared by the in-memory test (both
engines) and the Delta/CLI test (Sail)."""

from chispa import assert_df_equality
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType

from tests.pipeline import hand_day_expected as E


def comparable(df):
    """``df`` made comparable by chispa on both engines: rows collected first (Sail 0.7.2 fails
    to plan a sort over a union whose branches hold a literal column, "does not satisfy order
    requirements"), array columns as JSON text (chispa orders rows by ``hash()`` of complex
    columns, which Sail does not implement for arrays: "Unsupported data type in hasher")."""
    df = df.sparkSession.createDataFrame(df.collect(), df.schema)
    return df.select(*[F.to_json(f.name).alias(f.name) if isinstance(f.dataType, ArrayType)
                       else F.col(f.name) for f in df.schema.fields])


def _assert_rows(spark, actual_df, columns: list[str], schema: str, expected_rows) -> None:
    expected = spark.createDataFrame(list(expected_rows), schema)
    assert_df_equality(comparable(actual_df.select(*columns)), comparable(expected),
                       ignore_row_order=True, ignore_nullable=True)


def assert_bronze(spark, tables) -> None:
    _assert_rows(
        spark, tables["ingest_counts"],
        ["source", "source_file", "lines", "accepted", "quarantined", "other_day", "unmatched"],
        "source string, source_file string, lines long, accepted long, quarantined long, "
        "other_day long, unmatched long", E.FILE_COUNTS)
    _assert_rows(spark, tables["quarantine"], ["source", "source_file", "line_no", "reason"],
                 "source string, source_file string, line_no long, reason string", E.QUARANTINE)
    for name, rows in E.BRONZE_ROWS.items():
        assert tables[name].count() == rows, name
    _assert_rows(
        spark, tables["client_log_events"].withColumn("n", F.size("queues")),
        ["ts", "event", "log_layout", "group", "client_id", "topic", "n"],
        "ts timestamp, event string, log_layout string, group string, client_id string, "
        "topic string, n int", E.LOG_EVENTS)


def assert_silver(spark, tables) -> None:
    _assert_rows(
        spark, tables["queue_offsets"],
        ["group", "topic", "broker_name", "queue_id", "ts", "broker_offset", "consumer_offset",
         "lag", "owner_ip", "broker_offset_delta", "consumer_offset_delta"],
        "group string, topic string, broker_name string, queue_id int, ts timestamp, "
        "broker_offset long, consumer_offset long, lag long, owner_ip string, "
        "broker_offset_delta long, consumer_offset_delta long", E.QUEUE_OFFSETS)
    _assert_rows(
        spark, tables["group_members"],
        ["group", "ts", "client_id", "processes", "running_processes", "is_duplicate_id",
         "client_addrs"],
        "group string, ts timestamp, client_id string, processes int, running_processes int, "
        "is_duplicate_id boolean, client_addrs array<string>", E.GROUP_MEMBERS)
    _assert_rows(
        spark, tables["client_config"],
        ["group", "client_id", "ts", "strategy", "consume_concurrently_max_span",
         "client_version"],
        "group string, client_id string, ts timestamp, strategy string, "
        "consume_concurrently_max_span long, client_version string", E.CLIENT_CONFIG)
    expected_subs = [(g, cid, ts, topic, source)
                     for (g, cid), topics in E.SUBSCRIBED.items() for topic in topics
                     for ts in (E.T1, E.T2) for source in ("heartbeat", "running_info")]
    _assert_rows(
        spark, tables["client_subscriptions"], ["group", "client_id", "ts", "topic", "source"],
        "group string, client_id string, ts timestamp, topic string, source string",
        expected_subs)
    _assert_rows(
        spark, tables["queue_ownership"],
        ["group", "client_id", "topic", "broker_name", "queue_id", "source", "valid_from",
         "valid_until"],
        "group string, client_id string, topic string, broker_name string, queue_id int, "
        "source string, valid_from timestamp, valid_until timestamp", E.OWNERSHIP)
    dropped = tables["process_queues"].where("dropped").select(
        "client_id", "ts", "topic", "broker_name", "queue_id")
    _assert_rows(spark, dropped, ["client_id", "ts", "topic", "broker_name", "queue_id"],
                 "client_id string, ts timestamp, topic string, broker_name string, queue_id int",
                 [(E.C2, E.T2, "orders", "broker-a", 1)])
    assert tables["process_queues"].count() == 17
