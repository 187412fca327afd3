"""parse_client_log_lines / wall_clock_to_utc: raw rocketmq_client.log lines → typed events.

Lines are written the way the RocketMQ clients print them (4.9.8 inner logger and logback route,
5.3.x ``rmq.client.logback.xml``); every expected ``ts`` is computed by hand from the wall clock and
the zone, never with the code under test.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from chispa import assert_column_equality, assert_df_equality
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from jobs.ingest.client_logs import fixed_offset_millis, parse_client_log_lines, wall_clock_to_utc
from schemas.client_logs import CLIENT_LOG_EVENT_SCHEMA

SOURCE = "client_logs/date=2025-03-14/host-a/rocketmq_client.log"
LINES_SCHEMA = StructType([
    StructField("_source_file", StringType()),
    StructField("_line_no", LongType()),
    StructField("line", StringType()),
])
CLIENT = "10.0.3.17@2815#1863726331447891"
GROUP = "GID_orders"
HEADER_5X = "INFO  [2815] [RebalanceService] [o.a.r.c.i.c.RebalanceImpl#rebalanceByTopic:330]"


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=timezone.utc)


def mq(topic: str, broker_name: str, queue_id: int | None) -> tuple:
    return (topic, broker_name, queue_id)


def parse(spark, *lines: str | None, zone: str = "GMT+8"):
    lines_df = spark.createDataFrame(
        [(SOURCE, line_no, line) for line_no, line in enumerate(lines, start=1)], LINES_SCHEMA)
    return parse_client_log_lines(lines_df, zone).orderBy("_line_no")


def event_rows(spark, *rows: dict):
    """Expected frame in CLIENT_LOG_EVENT_SCHEMA: unnamed columns null, _source_file SOURCE."""
    names = CLIENT_LOG_EVENT_SCHEMA.fieldNames()
    for row in rows:
        unknown = set(row) - set(names)
        assert not unknown, f"not in the schema: {unknown}"
    data = [tuple({"_source_file": SOURCE, **row}.get(name) for name in names) for row in rows]
    return spark.createDataFrame(data, CLIENT_LOG_EVENT_SCHEMA)


def subset_rows(spark, columns: list[str], *rows: tuple):
    schema = StructType([CLIENT_LOG_EVENT_SCHEMA[name] for name in columns])
    return spark.createDataFrame(list(rows), schema)


def assert_frames(actual, expected):
    assert_df_equality(actual, expected, ignore_nullable=False, ignore_column_order=False,
                       ignore_row_order=False)


HEADER_COLUMNS = ["_line_no", "ts", "level", "thread", "logger", "pid", "log_layout"]


# --- schema ----------------------------------------------------------------------------------

def test_output_schema_is_the_contract_even_for_no_lines(spark):
    lines_df = spark.createDataFrame([], LINES_SCHEMA)

    assert parse_client_log_lines(lines_df, "GMT+8").schema == CLIENT_LOG_EVENT_SCHEMA


def test_keep_columns_are_carried_through_after_the_schema_columns(spark):
    schema = StructType([*LINES_SCHEMA.fields, StructField("_folder_date", StringType())])
    line = "\tat org.apache.rocketmq.client.impl.MQClientAPIImpl.pullMessage(MQClientAPIImpl.java)"
    lines_df = spark.createDataFrame([(SOURCE, 1, line, "2025-03-14")], schema)

    actual = parse_client_log_lines(lines_df, "GMT+8", keep_columns=["line", "_folder_date"])

    expected_schema = StructType([*CLIENT_LOG_EVENT_SCHEMA.fields, LINES_SCHEMA["line"],
                                  StructField("_folder_date", StringType())])
    row = {"_source_file": SOURCE, "_line_no": 1, "line": line, "_folder_date": "2025-03-14"}
    expected = spark.createDataFrame([tuple(row.get(n) for n in expected_schema.fieldNames())],
                                     expected_schema)
    assert_frames(actual, expected)


def test_keep_columns_may_not_shadow_an_output_column(spark):
    lines_df = spark.createDataFrame([], LINES_SCHEMA)

    with pytest.raises(ValueError, match="message"):
        parse_client_log_lines(lines_df, "GMT+8", keep_columns=["message"])


# --- layouts ---------------------------------------------------------------------------------

def test_49_logback_layout_without_millis_gives_thread_and_gmt8_wall_clock_in_utc(spark):
    line = ("2025-03-14 10:15:02 INFO RebalanceService - doRebalance, GID_orders, remove "
            "unnecessary mq, MessageQueue [topic=TopicOrders, brokerName=broker-a, queueId=2]")

    actual = parse(spark, line).select(HEADER_COLUMNS)

    expected = subset_rows(spark, HEADER_COLUMNS,
                           (1, utc(2025, 3, 14, 2, 15, 2), "INFO", "RebalanceService", None, None,
                            "4.9"))
    assert_frames(actual, expected)


def test_49_inner_logger_layout_gives_comma_millis_and_logger_name_not_thread(spark):
    line = ("2025-03-14 10:15:05,002 INFO RocketmqClient - [persistAll] Group: GID_orders "
            f"ClientId: {CLIENT} updateConsumeOffsetToBroker MessageQueue [topic=TopicOrders, "
            "brokerName=broker-a, queueId=1] 184467")

    actual = parse(spark, line).select(HEADER_COLUMNS)

    expected = subset_rows(spark, HEADER_COLUMNS,
                           (1, utc(2025, 3, 14, 2, 15, 5, 2000), "INFO", None, "RocketmqClient",
                            None, "4.9"))
    assert_frames(actual, expected)


def test_49_layout_accepts_dot_millis_and_a_dotted_logger_name(spark):
    line = ("2025-03-14 10:15:05.750 WARN org.apache.rocketmq.client.impl.consumer.RebalanceImpl"
            " - doRebalance, GID_orders, add a new mq, MessageQueue [topic=TopicOrders, "
            "brokerName=broker-b, queueId=0]")

    actual = parse(spark, line).select(HEADER_COLUMNS)

    expected = subset_rows(spark, HEADER_COLUMNS,
                           (1, utc(2025, 3, 14, 2, 15, 5, 750000), "WARN", None,
                            "org.apache.rocketmq.client.impl.consumer.RebalanceImpl", None, "4.9"))
    assert_frames(actual, expected)


def test_5x_layout_gives_pid_thread_and_abbreviated_logger(spark):
    line = (f"2025-03-14 10:15:02.481 {HEADER_5X} - doRebalance, GID_orders, add a new mq, "
            "MessageQueue [topic=TopicOrders, brokerName=broker-b, queueId=0]")

    actual = parse(spark, line).select(HEADER_COLUMNS)

    expected = subset_rows(spark, HEADER_COLUMNS,
                           (1, utc(2025, 3, 14, 2, 15, 2, 481000), "INFO", "RebalanceService",
                            "o.a.r.c.i.c.RebalanceImpl", 2815, "5.x"))
    assert_frames(actual, expected)


def test_crlf_ending_is_not_part_of_the_message_or_the_last_value(spark):
    line = ("2025-03-14 10:15:05,002 INFO RocketmqClient - [persistAll] Group: GID_orders "
            f"ClientId: {CLIENT} updateConsumeOffsetToBroker MessageQueue [topic=TopicOrders, "
            "brokerName=broker-a, queueId=1] 184467\r")

    actual = parse(spark, line).select("_line_no", "event", "offset", "message", "parse_error")

    expected = subset_rows(spark, ["_line_no", "event", "offset", "message", "parse_error"],
                           (1, "PERSIST_OFFSET", 184467, line[len("2025-03-14 10:15:05,002 INFO "
                                                                  "RocketmqClient - "):-1], None))
    assert_frames(actual, expected)


def test_padded_logger_name_is_the_logger_not_the_thread(spark):
    # %-60c pads the logger name before " - "
    line = ("2025-03-14 10:15:02,481 INFO RocketmqClient" + " " * 46 + "- doRebalance, "
            "GID_orders, add a new mq, MessageQueue [topic=TopicOrders, brokerName=broker-b, "
            "queueId=0]")

    actual = parse(spark, line).select(HEADER_COLUMNS + ["event"])

    expected = subset_rows(spark, HEADER_COLUMNS + ["event"],
                           (1, utc(2025, 3, 14, 2, 15, 2, 481000), "INFO", None, "RocketmqClient",
                            None, "4.9", "MQ_ADDED"))
    assert_frames(actual, expected)


def test_bracketed_thread_alone_is_the_thread_without_brackets(spark):
    line = ("2025-03-14 10:15:02.481 INFO  [RebalanceService] - doRebalance, GID_orders, add a new "
            "mq, MessageQueue [topic=TopicOrders, brokerName=broker-b, queueId=0]")

    actual = parse(spark, line).select(HEADER_COLUMNS + ["event"])

    expected = subset_rows(spark, HEADER_COLUMNS + ["event"],
                           (1, utc(2025, 3, 14, 2, 15, 2, 481000), "INFO", "RebalanceService",
                            None, None, "4.9", "MQ_ADDED"))
    assert_frames(actual, expected)


def test_thread_in_braces_before_the_level(spark):
    line = ("2025-03-14 10:15:05.002 {MQClientFactoryScheduledThread} INFO RocketmqClient - "
            f"[persistAll] Group: GID_orders ClientId: {CLIENT} updateConsumeOffsetToBroker "
            "MessageQueue [topic=TopicOrders, brokerName=broker-a, queueId=1] 184467")
    columns = HEADER_COLUMNS + ["event", "offset"]

    actual = parse(spark, line).select(columns)

    expected = subset_rows(spark, columns,
                           (1, utc(2025, 3, 14, 2, 15, 5, 2000), "INFO",
                            "MQClientFactoryScheduledThread", "RocketmqClient", None,
                            "thread_first", "PERSIST_OFFSET", 184467))
    assert_frames(actual, expected)


def test_dated_line_of_an_unknown_header_shape_still_gives_time_and_template(spark):
    # level after the logger, no " - ": the template opening follows the header's "|"
    line = ("2025-03-14 10:15:05.002 RocketmqClient:INFO|[persistAll] Group: GID_orders "
            f"ClientId: {CLIENT} updateConsumeOffsetToBroker MessageQueue [topic=TopicOrders, "
            "brokerName=broker-a, queueId=1] 184467")
    columns = HEADER_COLUMNS + ["event", "group", "offset", "parse_error"]

    actual = parse(spark, line).select(columns)

    expected = subset_rows(spark, columns,
                           (1, utc(2025, 3, 14, 2, 15, 5, 2000), None, None, None, None, "other",
                            "PERSIST_OFFSET", GROUP, 184467, None))
    assert_frames(actual, expected)


def test_template_text_inside_another_message_is_not_an_event(spark):
    # the opening must follow the header separator, not sit inside a longer message
    messages = [
        "consume failed: doRebalance, GID_orders, add a new mq, MessageQueue [topic=T, "
        "brokerName=b, queueId=0]",
        f"[persist] Group: GID_orders ClientId: {CLIENT} updateConsumeOffsetToBroker "
        "MessageQueue [topic=T, brokerName=b, queueId=0] 7",
    ]
    lines = [f"2025-03-14 10:15:02 INFO RebalanceService - {m}" for m in messages]

    actual = parse(spark, *lines).select("_line_no", "event", "message")

    expected = subset_rows(spark, ["_line_no", "event", "message"],
                           *[(n, None, m) for n, m in enumerate(messages, start=1)])
    assert_frames(actual, expected)


# --- time zones ------------------------------------------------------------------------------

def test_wall_clock_past_midnight_in_gmt8_lands_on_the_previous_utc_day(spark):
    line = ("2025-03-15 03:10:00 INFO RebalanceService - doRebalance, GID_orders, add a new mq, "
            "MessageQueue [topic=TopicOrders, brokerName=broker-b, queueId=0]")

    actual = parse(spark, line).select("_line_no", "ts")

    assert_frames(actual, subset_rows(spark, ["_line_no", "ts"], (1, utc(2025, 3, 14, 19, 10))))


@pytest.mark.parametrize(("zone", "expected_ts"), [
    ("GMT-3", utc(2025, 3, 14, 13, 15, 2)),
    ("UTC+05:30", utc(2025, 3, 14, 4, 45, 2)),
    ("+08:00", utc(2025, 3, 14, 2, 15, 2)),
    ("+0545", utc(2025, 3, 14, 4, 30, 2)),
    ("UTC", utc(2025, 3, 14, 10, 15, 2)),
])
def test_fixed_offset_zone_is_subtracted_from_the_wall_clock(spark, zone, expected_ts):
    line = ("2025-03-14 10:15:02 INFO RebalanceService - doRebalance, GID_orders, add a new mq, "
            "MessageQueue [topic=TopicOrders, brokerName=broker-b, queueId=0]")

    actual = parse(spark, line, zone=zone).select("_line_no", "ts")

    assert_frames(actual, subset_rows(spark, ["_line_no", "ts"], (1, expected_ts)))


def test_region_id_zone_follows_daylight_saving_time(spark):
    header = (" INFO RebalanceService - doRebalance, GID_orders, add a new mq, "
              "MessageQueue [topic=TopicOrders, brokerName=broker-a, queueId=0]")
    lines = ["2025-01-15 12:00:00" + header, "2025-07-01 12:00:00" + header]

    actual = parse(spark, *lines, zone="Europe/Berlin").select("_line_no", "ts")

    expected = subset_rows(spark, ["_line_no", "ts"],
                           (1, utc(2025, 1, 15, 11, 0)),  # CET, +01:00
                           (2, utc(2025, 7, 1, 10, 0)))  # CEST, +02:00
    assert_frames(actual, expected)


def test_region_id_zone_resolves_dst_gap_forward_and_overlap_to_the_earlier_offset(spark):
    # Pins an engine agreement: classic Spark (java.time) and Sail resolve the local times that
    # do not exist / exist twice the same way.
    header = (" INFO RebalanceService - doRebalance, GID_orders, add a new mq, "
              "MessageQueue [topic=TopicOrders, brokerName=broker-a, queueId=0]")
    lines = ["2025-03-30 02:30:00" + header, "2025-10-26 02:30:00" + header]

    actual = parse(spark, *lines, zone="Europe/Berlin").select("_line_no", "ts")

    expected = subset_rows(spark, ["_line_no", "ts"],
                           (1, utc(2025, 3, 30, 1, 30)),  # gap: read as 03:30 CEST
                           (2, utc(2025, 10, 26, 0, 30)))  # overlap: the CEST reading
    assert_frames(actual, expected)


def test_wall_clock_to_utc_handles_region_ids_fixed_offsets_and_nulls(spark):
    schema = StructType([StructField("wall", TimestampType()),
                         StructField("expected_shanghai", TimestampType()),
                         StructField("expected_gmt_minus_3", TimestampType())])
    df = spark.createDataFrame([
        (utc(2025, 3, 14, 10, 15, 2, 481000), utc(2025, 3, 14, 2, 15, 2, 481000),
         utc(2025, 3, 14, 13, 15, 2, 481000)),
        (None, None, None),
    ], schema).select(
        "*",
        wall_clock_to_utc("wall", "Asia/Shanghai").alias("shanghai"),
        wall_clock_to_utc("wall", "GMT-3").alias("gmt_minus_3"),
    )

    assert_column_equality(df, "shanghai", "expected_shanghai")
    assert_column_equality(df, "gmt_minus_3", "expected_gmt_minus_3")


@pytest.mark.parametrize(("zone", "millis"), [
    ("GMT+8", 8 * 3_600_000),
    ("UTC+08:00", 8 * 3_600_000),
    ("+08:00", 8 * 3_600_000),
    ("GMT-3", -3 * 3_600_000),
    ("+0545", (5 * 60 + 45) * 60_000),
    ("UTC", 0),
    ("Z", 0),
    ("Asia/Shanghai", None),
    ("Etc/GMT-8", None),
])
def test_fixed_offset_millis_reads_offsets_and_leaves_region_ids_to_the_engine(zone, millis):
    assert fixed_offset_millis(zone) == millis


def test_fixed_offset_millis_rejects_an_offset_beyond_18_hours():
    with pytest.raises(ValueError, match="out of range"):
        fixed_offset_millis("GMT+19")


# --- templates -------------------------------------------------------------------------------

def test_49_rebalance_result_gives_strategy_sizes_and_the_allocated_queues(spark):
    message = ("rebalanced result changed. allocateMessageQueueStrategyName=AVG, group=GID_orders, "
               f"topic=TopicOrders, clientId={CLIENT}, mqAllSize=8, cidAllSize=3, "
               "rebalanceResultSize=3, rebalanceResultSet=[MessageQueue [topic=TopicOrders, "
               "brokerName=broker-a, queueId=0], MessageQueue [topic=TopicOrders, "
               "brokerName=broker-a, queueId=1], MessageQueue [topic=TopicOrders, "
               "brokerName=broker-b, queueId=0]]")

    actual = parse(spark, "2025-03-14 10:15:02 INFO RebalanceService - " + message)

    expected = event_rows(spark, dict(
        _line_no=1, ts=utc(2025, 3, 14, 2, 15, 2), event="REBALANCE_RESULT", level="INFO",
        thread="RebalanceService", log_layout="4.9", group=GROUP, client_id=CLIENT,
        topic="TopicOrders", strategy="AVG", mq_all_size=8, cid_all_size=3,
        rebalance_result_size=3,
        queues=[mq("TopicOrders", "broker-a", 0), mq("TopicOrders", "broker-a", 1),
                mq("TopicOrders", "broker-b", 0)],
        message=message))
    assert_frames(actual, expected)


def test_5x_rebalance_result_with_client_prefix_on_a_retry_topic(spark):
    message = ("client rebalanced result changed. allocateMessageQueueStrategyName=AVG_BY_CIRCLE, "
               f"group=GID_orders, topic=%RETRY%GID_orders, clientId={CLIENT}, mqAllSize=2, "
               "cidAllSize=3, rebalanceResultSize=1, rebalanceResultSet=[MessageQueue "
               "[topic=%RETRY%GID_orders, brokerName=broker-b, queueId=0]]")

    actual = parse(spark, f"2025-03-14 10:15:02.481 {HEADER_5X} - {message}")

    expected = event_rows(spark, dict(
        _line_no=1, ts=utc(2025, 3, 14, 2, 15, 2, 481000), event="REBALANCE_RESULT",
        level="INFO", thread="RebalanceService", logger="o.a.r.c.i.c.RebalanceImpl", pid=2815,
        log_layout="5.x", group=GROUP, client_id=CLIENT, topic="%RETRY%GID_orders",
        strategy="AVG_BY_CIRCLE", mq_all_size=2, cid_all_size=3, rebalance_result_size=1,
        queues=[mq("%RETRY%GID_orders", "broker-b", 0)], message=message))
    assert_frames(actual, expected)


def test_rebalance_result_with_an_empty_set_gives_an_empty_queue_list(spark):
    line = (f"2025-03-14 10:15:02.481 {HEADER_5X} - client rebalanced result changed. "
            f"allocateMessageQueueStrategyName=AVG, group=GID_orders, topic=%RETRY%GID_orders, "
            f"clientId={CLIENT}, mqAllSize=2, cidAllSize=3, rebalanceResultSize=0, "
            "rebalanceResultSet=[]")

    actual = parse(spark, line).select("_line_no", "event", "rebalance_result_size", "queues",
                                       "parse_error")

    expected = subset_rows(spark, ["_line_no", "event", "rebalance_result_size", "queues",
                                   "parse_error"],
                           (1, "REBALANCE_RESULT", 0, [], None))
    assert_frames(actual, expected)


def test_5x_persist_all_gives_group_client_queue_and_committed_offset(spark):
    message = (f"[persistAll] Group: GID_orders ClientId: {CLIENT} updateConsumeOffsetToBroker "
               "MessageQueue [topic=%RETRY%GID_orders, brokerName=broker-b, queueId=0] 12")
    line = ("2025-03-14 10:15:05.002 INFO  [2815] [MQClientFactoryScheduledThread] "
            "[o.a.r.c.c.s.RemoteBrokerOffsetStore#persistAll:135] - " + message)

    actual = parse(spark, line)

    expected = event_rows(spark, dict(
        _line_no=1, ts=utc(2025, 3, 14, 2, 15, 5, 2000), event="PERSIST_OFFSET", level="INFO",
        thread="MQClientFactoryScheduledThread", logger="o.a.r.c.c.s.RemoteBrokerOffsetStore",
        pid=2815, log_layout="5.x", group=GROUP, client_id=CLIENT, topic="%RETRY%GID_orders",
        queues=[mq("%RETRY%GID_orders", "broker-b", 0)], offset=12, message=message))
    assert_frames(actual, expected)


def test_49_flow_control_count_reads_the_cache_and_the_pull_request(spark):
    message = ("the cached message count exceeds the threshold 1000, so do flow control, "
               "minOffset=20411, maxOffset=21433, count=1023, size=4 MiB, pullRequest=PullRequest "
               "[consumerGroup=GID_orders, messageQueue=MessageQueue [topic=TopicOrders, "
               "brokerName=broker-a, queueId=1], nextOffset=21434], flowControlTimes=3000")

    actual = parse(spark, "2025-03-14 10:20:41 WARN PullMessageService - " + message)

    expected = event_rows(spark, dict(
        _line_no=1, ts=utc(2025, 3, 14, 2, 20, 41), event="FLOW_CONTROL_COUNT", level="WARN",
        thread="PullMessageService", log_layout="4.9", group=GROUP, topic="TopicOrders",
        queues=[mq("TopicOrders", "broker-a", 1)], min_offset=20411, max_offset=21433,
        cached_count=1023, cached_size_mib=4, threshold=1000, next_offset=21434,
        flow_control_times=3000, message=message))
    assert_frames(actual, expected)


def test_5x_flow_control_size_reads_the_threshold_in_mib(spark):
    message = ("the cached message size exceeds the threshold 100 MiB, so do flow control, "
               "minOffset=5120, maxOffset=5631, count=512, size=101 MiB, pullRequest=PullRequest "
               "[consumerGroup=GID_orders, messageQueue=MessageQueue [topic=TopicOrders, "
               "brokerName=broker-b, queueId=2], nextOffset=5632], flowControlTimes=1000")
    line = ("2025-03-14 10:20:41.917 WARN  [2815] [PullMessageService] "
            "[o.a.r.c.i.c.DefaultMQPushConsumerImpl#pullMessage:286] - " + message)

    actual = parse(spark, line)

    expected = event_rows(spark, dict(
        _line_no=1, ts=utc(2025, 3, 14, 2, 20, 41, 917000), event="FLOW_CONTROL_SIZE",
        level="WARN", thread="PullMessageService", logger="o.a.r.c.i.c.DefaultMQPushConsumerImpl",
        pid=2815, log_layout="5.x", group=GROUP, topic="TopicOrders",
        queues=[mq("TopicOrders", "broker-b", 2)], min_offset=5120, max_offset=5631,
        cached_count=512, cached_size_mib=101, threshold=100, next_offset=5632,
        flow_control_times=1000, message=message))
    assert_frames(actual, expected)


def test_flow_control_span_reads_max_span_and_the_pull_request(spark):
    message = ("the queue's messages, span too long, so do flow control, minOffset=20411, "
               "maxOffset=22560, maxSpan=2149, pullRequest=PullRequest [consumerGroup=GID_orders, "
               "messageQueue=MessageQueue [topic=TopicOrders, brokerName=broker-a, queueId=1], "
               "nextOffset=22561], flowControlTimes=2000")
    line = ("2025-03-14 10:21:07.003 WARN  [2815] [PullMessageService] "
            "[o.a.r.c.i.c.DefaultMQPushConsumerImpl#pullMessage:297] - " + message)

    actual = parse(spark, line)

    expected = event_rows(spark, dict(
        _line_no=1, ts=utc(2025, 3, 14, 2, 21, 7, 3000), event="FLOW_CONTROL_SPAN", level="WARN",
        thread="PullMessageService", logger="o.a.r.c.i.c.DefaultMQPushConsumerImpl", pid=2815,
        log_layout="5.x", group=GROUP, topic="TopicOrders",
        queues=[mq("TopicOrders", "broker-a", 1)], min_offset=20411, max_offset=22560,
        max_span=2149, next_offset=22561, flow_control_times=2000, message=message))
    assert_frames(actual, expected)


def test_not_in_cid_all_gives_the_missing_client_and_the_brokers_list(spark):
    message = (f"[BUG] ConsumerGroup: GID_orders The consumerId: {CLIENT} not in cidAll: "
               "[10.0.3.18@3101#1863726331512004, 10.0.3.19@2977#1863726331598113]")

    actual = parse(spark, "2025-03-14 10:15:02 INFO RebalanceService - " + message)

    expected = event_rows(spark, dict(
        _line_no=1, ts=utc(2025, 3, 14, 2, 15, 2), event="NOT_IN_CID_ALL", level="INFO",
        thread="RebalanceService", log_layout="4.9", group=GROUP, client_id=CLIENT,
        cid_all=["10.0.3.18@3101#1863726331512004", "10.0.3.19@2977#1863726331598113"],
        message=message))
    assert_frames(actual, expected)


def test_send_expire_msg_back_gives_message_queue_offset_and_no_broker_name(spark):
    message = ("send expire msg back. topic=TopicOrders, msgId=0A00031100002A9F00000000001C5E21, "
               "storeHost=/10.0.1.5:10911, queueId=1, queueOffset=20411")

    actual = parse(spark, "2025-03-14 10:45:00 INFO ConsumeMessageScheduledThread_1 - " + message)

    expected = event_rows(spark, dict(
        _line_no=1, ts=utc(2025, 3, 14, 2, 45), event="SEND_EXPIRE_MSG_BACK", level="INFO",
        thread="ConsumeMessageScheduledThread_1", log_layout="4.9", topic="TopicOrders",
        queues=[mq("TopicOrders", None, 1)], offset=20411,
        msg_id="0A00031100002A9F00000000001C5E21", store_host="/10.0.1.5:10911",
        message=message))
    assert_frames(actual, expected)


def test_5x_add_a_new_mq_gives_group_and_queue(spark):
    message = ("doRebalance, GID_orders, add a new mq, MessageQueue [topic=TopicOrders, "
               "brokerName=broker-b, queueId=0]")
    line = ("2025-03-14 10:15:02.480 INFO  [2815] [RebalanceService] "
            "[o.a.r.c.i.c.RebalanceImpl#updateProcessQueueTableInRebalance:485] - " + message)

    actual = parse(spark, line)

    expected = event_rows(spark, dict(
        _line_no=1, ts=utc(2025, 3, 14, 2, 15, 2, 480000), event="MQ_ADDED", level="INFO",
        thread="RebalanceService", logger="o.a.r.c.i.c.RebalanceImpl", pid=2815,
        log_layout="5.x", group=GROUP, topic="TopicOrders",
        queues=[mq("TopicOrders", "broker-b", 0)], message=message))
    assert_frames(actual, expected)


def test_49_remove_unnecessary_mq_gives_group_and_queue(spark):
    message = ("doRebalance, GID_orders, remove unnecessary mq, MessageQueue "
               "[topic=%RETRY%GID_orders, brokerName=broker-a, queueId=0]")

    actual = parse(spark, "2025-03-14 10:15:02 INFO RebalanceService - " + message)

    expected = event_rows(spark, dict(
        _line_no=1, ts=utc(2025, 3, 14, 2, 15, 2), event="MQ_REMOVED", level="INFO",
        thread="RebalanceService", log_layout="4.9", group=GROUP, topic="%RETRY%GID_orders",
        queues=[mq("%RETRY%GID_orders", "broker-a", 0)], message=message))
    assert_frames(actual, expected)


# --- unmatched lines -------------------------------------------------------------------------

def test_look_alike_rocketmq_lines_are_unmatched(spark):
    queue = "MessageQueue [topic=TopicOrders, brokerName=broker-a, queueId=1]"
    messages = [
        f"doRebalance, GID_orders, add a new mq failed, {queue}, because lock failed",
        f"[BUG]doRebalance, GID_orders, remove unnecessary mq, {queue}, because pull is pause, "
        "so try to fixed it",
        f"doRebalance, GID_orders, truncateMessageQueueNotMyTopic remove unnecessary mq, {queue}",
        f"[persist] Group: GID_orders ClientId: {CLIENT} updateConsumeOffsetToBroker {queue} 7",
        "broker rebalanced result changed. allocateMessageQueueStrategyName=AVG, "
        f"group=GID_orders, topic=TopicOrders, clientId={CLIENT}, assignmentSet=[]",
        "The cached message count exceeds the threshold 1000, so do flow control, minOffset=1, "
        "maxOffset=2, count=1001, size=1 MiB, flowControlTimes=1000",
    ]
    lines = [f"2025-03-14 10:15:02 INFO RebalanceService - {message}" for message in messages]

    actual = parse(spark, *lines).select("_line_no", "event", "parse_error")

    expected = subset_rows(spark, ["_line_no", "event", "parse_error"],
                           *[(n, None, None) for n in range(1, len(lines) + 1)])
    assert_frames(actual, expected)


def test_heartbeat_line_keeps_its_header_and_message_but_has_no_event(spark):
    message = "send heart beat to broker[broker-a 0 10.0.1.5:10911] success"
    line = "2025-03-14 10:15:20,114 INFO RocketmqClient - " + message

    actual = parse(spark, line)

    expected = event_rows(spark, dict(
        _line_no=1, ts=utc(2025, 3, 14, 2, 15, 20, 114000), level="INFO",
        logger="RocketmqClient", log_layout="4.9", message=message))
    assert_frames(actual, expected)


def test_stack_trace_exception_blank_and_null_lines_give_all_null_rows(spark):
    lines = [
        "java.lang.IllegalStateException: No route info of this topic, TopicOrders\r",
        "\tat org.apache.rocketmq.client.impl.consumer.RebalanceImpl.rebalanceByTopic"
        "(RebalanceImpl.java:301)",
        "",
        None,
    ]

    actual = parse(spark, *lines)

    expected = event_rows(spark, *[dict(_line_no=n) for n in range(1, len(lines) + 1)])
    assert_frames(actual, expected)


# --- matched but broken ----------------------------------------------------------------------

def test_template_line_without_a_date_is_a_parse_error_not_an_unmatched_line(spark):
    line = ("10:15:02.480 [RebalanceService] INFO  RocketmqClient - doRebalance, GID_orders, add "
            "a new mq, MessageQueue [topic=TopicOrders, brokerName=broker-b, queueId=0]")
    columns = ["_line_no", "ts", "event", "group", "log_layout", "parse_error"]

    actual = parse(spark, line).select(columns)

    expected = subset_rows(spark, columns, (1, None, "MQ_ADDED", GROUP, None,
                                            "no date and time at the start of the line"))
    assert_frames(actual, expected)


def test_impossible_date_on_a_matched_line_is_a_parse_error(spark):
    line = ("2025-13-45 10:15:02 INFO RebalanceService - doRebalance, GID_orders, add a new mq, "
            "MessageQueue [topic=TopicOrders, brokerName=broker-b, queueId=0]")

    actual = parse(spark, line).select("_line_no", "ts", "event", "parse_error")

    expected = subset_rows(spark, ["_line_no", "ts", "event", "parse_error"],
                           (1, None, "MQ_ADDED", "invalid timestamp"))
    assert_frames(actual, expected)


def test_truncated_rebalance_set_is_a_malformed_set(spark):
    line = ("2025-03-14 10:15:02 INFO RebalanceService - rebalanced result changed. "
            "allocateMessageQueueStrategyName=AVG, group=GID_orders, topic=TopicOrders, "
            f"clientId={CLIENT}, mqAllSize=8, cidAllSize=3, rebalanceResultSize=3, "
            "rebalanceResultSet=[MessageQueue [topic=TopicOrders, brokerName=broker-a, queueId=0]"
            ", MessageQueue [topic=TopicOrders, brokerNa")

    actual = parse(spark, line).select("_line_no", "event", "mq_all_size", "queues",
                                       "parse_error")

    expected = subset_rows(spark, ["_line_no", "event", "mq_all_size", "queues", "parse_error"],
                           (1, "REBALANCE_RESULT", 8, None, "malformed MessageQueue set"))
    assert_frames(actual, expected)


def test_decimal_size_is_non_numeric_on_both_engines(spark):
    # A plain cast of "4.5" gives 4 on classic Spark without ANSI and fails on Sail; the parser
    # accepts only whole decimal numbers, so both engines call it non-numeric.
    line = ("2025-03-14 10:20:41 WARN PullMessageService - the cached message count exceeds the "
            "threshold 1000, so do flow control, minOffset=20411, maxOffset=21433, count=1023, "
            "size=4.5 MiB, pullRequest=PullRequest [consumerGroup=GID_orders, "
            "messageQueue=MessageQueue [topic=TopicOrders, brokerName=broker-a, queueId=1], "
            "nextOffset=21434], flowControlTimes=3000")

    actual = parse(spark, line).select("_line_no", "event", "cached_count", "cached_size_mib",
                                       "parse_error")

    expected = subset_rows(spark, ["_line_no", "event", "cached_count", "cached_size_mib",
                                   "parse_error"],
                           (1, "FLOW_CONTROL_COUNT", 1023, None, "non-numeric size"))
    assert_frames(actual, expected)


def test_non_ascii_digit_in_queue_id_is_a_malformed_queue_on_both_engines(spark):
    # Rust's \d (Sail) matches U+0663 ARABIC-INDIC DIGIT THREE, Java's (classic Spark) does not;
    # the parser's [0-9] keeps the engines alike.
    line = ("2025-03-14 10:15:02 INFO RebalanceService - doRebalance, GID_orders, add a new mq, "
            "MessageQueue [topic=TopicOrders, brokerName=broker-b, queueId=\u0663]")

    actual = parse(spark, line).select("_line_no", "event", "queues", "parse_error")

    expected = subset_rows(spark, ["_line_no", "event", "queues", "parse_error"],
                           (1, "MQ_ADDED", None, "malformed MessageQueue"))
    assert_frames(actual, expected)


def test_flow_control_line_cut_before_its_pull_request_does_not_fit_the_template(spark):
    line = ("2025-03-14 10:21:07 WARN PullMessageService - the queue's messages, span too long, "
            "so do flow control, minOffset=20411, maxOffset=22560, maxSpan=2149, "
            "pullRequest=PullRequest [consumerGroup=GID_orders, messageQ")

    actual = parse(spark, line).select("_line_no", "event", "parse_error")

    expected = subset_rows(spark, ["_line_no", "event", "parse_error"],
                           (1, "FLOW_CONTROL_SPAN",
                            "line does not fit the FLOW_CONTROL_SPAN template"))
    assert_frames(actual, expected)


def test_cid_all_cut_before_its_closing_bracket_is_a_malformed_list(spark):
    line = ("2025-03-14 10:15:02 INFO RebalanceService - [BUG] ConsumerGroup: GID_orders The "
            f"consumerId: {CLIENT} not in cidAll: [10.0.3.18@3101#1863726331512004, 10.0.3.19@29")

    actual = parse(spark, line).select("_line_no", "event", "client_id", "cid_all", "parse_error")

    expected = subset_rows(spark, ["_line_no", "event", "client_id", "cid_all", "parse_error"],
                           (1, "NOT_IN_CID_ALL", CLIENT, None, "malformed cidAll list"))
    assert_frames(actual, expected)


# --- a file excerpt --------------------------------------------------------------------------

def test_log_excerpt_gives_one_row_per_line_with_events_only_on_template_lines(spark):
    lines = [
        "2025-03-14 10:15:02,470 INFO RocketmqClient - receive broker's notification"
        "[10.0.1.5:10911], the consumer group: GID_orders changed, rebalance immediately\r",
        "2025-03-14 10:15:02,480 INFO RocketmqClient - doRebalance, GID_orders, add a new mq, "
        "MessageQueue [topic=TopicOrders, brokerName=broker-b, queueId=0]\r",
        "2025-03-14 10:15:02,481 INFO RocketmqClient - rebalanced result changed. "
        "allocateMessageQueueStrategyName=AVG, group=GID_orders, topic=TopicOrders, "
        f"clientId={CLIENT}, mqAllSize=8, cidAllSize=4, rebalanceResultSize=2, rebalanceResultSet="
        "[MessageQueue [topic=TopicOrders, brokerName=broker-a, queueId=1], "
        "MessageQueue [topic=TopicOrders, brokerName=broker-b, queueId=0]]\r",
        "2025-03-14 10:15:03,002 WARN RocketmqClient - execute the pull request exception\r",
        "org.apache.rocketmq.client.exception.MQBrokerException: CODE: 1  DESC: the consumer's "
        "group info not exist\r",
        "\tat org.apache.rocketmq.client.impl.MQClientAPIImpl.processPullResponse"
        "(MQClientAPIImpl.java:838)\r",
        "\r",
        "2025-03-14 10:15:05,002 INFO RocketmqClient - [persistAll] Group: GID_orders ClientId: "
        f"{CLIENT} updateConsumeOffsetToBroker MessageQueue [topic=TopicOrders, "
        "brokerName=broker-a, queueId=1] 184467\r",
    ]

    actual = parse(spark, *lines).select("_line_no", "event", "parse_error")

    expected = subset_rows(spark, ["_line_no", "event", "parse_error"],
                           (1, None, None), (2, "MQ_ADDED", None), (3, "REBALANCE_RESULT", None),
                           # a template since #24 (DESIGN.md §3.4); its exception lines are not
                           (4, "PULL_EXCEPTION", None), (5, None, None), (6, None, None),
                           (7, None, None),
                           (8, "PERSIST_OFFSET", None))
    assert_frames(actual, expected)
