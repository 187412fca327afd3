"""parse_client_log_lines over verbatim client-log lines from public user reports.

The files are in ``tests/data/real/`` (sources in its README.md). Every expected value is read off
the line by hand; the zone is UTC, so ``ts`` is the line's own wall clock — except on a line of the
5.x layout, which is always GMT+8 (its pattern names the zone).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from chispa import assert_df_equality
from pyspark.sql.types import LongType, StringType, StructField, StructType

from jobs.ingest.client_logs import parse_client_log_lines
from schemas.client_logs import CLIENT_LOG_EVENT_SCHEMA

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
LINES_SCHEMA = StructType([
    StructField("_source_file", StringType()),
    StructField("_line_no", LongType()),
    StructField("line", StringType()),
])


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=timezone.utc)


def read_lines(name: str, prefix: str = "") -> list[str]:
    return [prefix + line for line in (REAL / name).read_text(encoding="utf-8").splitlines()]


def parse(spark, lines: list[str], columns: list[str]):
    df = spark.createDataFrame([("real", n, line) for n, line in enumerate(lines, start=1)],
                               LINES_SCHEMA)
    return parse_client_log_lines(df, "UTC").orderBy("_line_no").select(["_line_no", *columns])


def expected(spark, columns: list[str], *rows: tuple):
    schema = StructType([CLIENT_LOG_EVENT_SCHEMA[name] for name in ["_line_no", *columns]])
    return spark.createDataFrame(list(rows), schema)


def assert_frames(actual, expected_df):
    assert_df_equality(actual, expected_df, ignore_nullable=False, ignore_row_order=False)


PERSIST = ["ts", "event", "level", "thread", "logger", "log_layout", "group", "client_id",
           "topic", "queues", "offset", "parse_error"]


def test_pipe_layout_with_trace_id_and_padded_logger_gives_every_persisted_offset(spark):
    lines = read_lines("pipe_traceid_layout.log")
    host = "10.168.1.34@staging-cnbj2-rocketmq.namesrv.api.xiaomi.net:9876@1@"
    broker = "tjwqtst-common-rocketmq-raft0"

    def row(n, millis, group, client, topic, offset):
        return (n, utc(2024, 9, 4, 14, 55, 56, millis * 1000), "PERSIST_OFFSET", "INFO",
                "ScheduledThread", "RocketmqClient", "pipe", group, host + client, topic,
                [(topic, broker, 0)], offset, None)

    checklist, template = "ipd-checklist-consumer-test", "ipd-checklistTemplate-consumer-test"
    actual = parse(spark, lines, PERSIST)

    assert_frames(actual, expected(
        spark, PERSIST,
        row(1, 565, "cg_review_created_test", "2498504990671740", "tp_task_start_test", 11),
        row(2, 691, checklist, "2498505147441571", "ipd-windchill-checklist-event", 64),
        row(3, 691, checklist, "2498505147441571", "ipd-windchill-checklist-event", 64),
        row(4, 691, checklist, "2498505147441571", "%RETRY%" + checklist, 171),
        row(5, 691, checklist, "2498505147441571", "%RETRY%" + checklist, 171),
        row(6, 758, "review_consume_workflowevent_group_test", "2498505214259475",
            "ipd-workflow-event-test", 20350),
        row(7, 833, "ipd_review_sync_input_consumer_test", "2498505289216535",
            "ipd_review_sync_input_test", 199),
        row(8, 995, template, "2498505451381016", "%RETRY%" + template, 28),
        row(9, 995, template, "2498505451381016", "%RETRY%" + template, 28),
        row(10, 995, template, "2498505451381016", "ipd-windchill-checklistTemplate-event", 47),
    ))


def test_trace_id_prefix_and_bracketed_padded_logger_then_thread(spark):
    lines = read_lines("seatunnel_trace_prefix_padded_logger.log")
    client = "10.233.98.223@rocketmq-nameserver:9876-{0}@rocketmq-nameserver:9876-{0}@STREAM"
    topic, group = "b2c_front_track_report", "b2c_front_track_report_group"
    ts = utc(2025, 10, 16, 20, 40, 50, 965000)
    consumer = "RocketMq Source Data Consumer"

    def persist(n, uuid, queue_id, offset):
        return (n, ts, "PERSIST_OFFSET", "INFO", consumer, "RocketmqClient", "bracketed", group,
                client.format(uuid), topic, [(topic, "broker-g0", queue_id)], offset, None)

    actual = parse(spark, lines, PERSIST)

    assert_frames(actual, expected(
        spark, PERSIST,
        persist(1, "4a9fac8c-d71e-4f0d-8433-808b33d555e7", 3, 4725),
        persist(2, "c53da799-5db9-4649-bae2-904489754fb3", 5, 4708),
        persist(3, "fe1c818d-d539-44c1-94d2-8a54517dcda7", 12, 4650),
        (4, utc(2025, 10, 16, 20, 40, 50, 969000), None, "INFO",
         "hz.main.generic-operation.thread-7", "a.s.e.s.s.s.DefaultSlotService", "bracketed",
         None, None, None, None, None, None),
        (5, utc(2025, 10, 16, 20, 40, 50, 976000), None, "INFO", "NettyClientPublicExecutor_1",
         "RocketmqClient", "bracketed", None, None, None, None, None, None),
    ))


def test_3x_persist_wording_and_two_digit_year(spark):
    lines = read_lines("alibaba_3x_two_digit_year.log")
    queue = [("YooliSMSTopic", "broker-b", 6)]

    def persist(n, minute):
        return (n, utc(2016, 6, 21, 12, minute, 28), "PERSIST_OFFSET", "INFO",
                "MQClientFactoryScheduledThread", None, "4.9", "sms_consumer_group",
                "192.168.1.148@9560", "YooliSMSTopic", queue, 707212, None)

    def other(n):
        return (n, utc(2016, 6, 21, 13, 9), None, "INFO", "MQClientFactoryScheduledThread", None,
                "4.9", None, None, None, None, None, None)

    actual = parse(spark, lines, PERSIST)

    assert_frames(actual, expected(spark, PERSIST, persist(1, 57), persist(2, 58),
                                   persist(3, 59), other(4), other(5)))


def test_inner_logger_seconds_after_the_comma_are_not_milliseconds(spark):
    # 4.x LoggingBuilder.DefaultLayout writes "yyyy-MM-dd HH:mm:ss,sss": 12:29:41,041.
    columns = ["ts", "event", "logger", "log_layout", "group", "queues", "min_offset",
               "max_offset", "cached_count", "cached_size_mib", "threshold", "next_offset",
               "flow_control_times", "parse_error"]

    actual = parse(spark, read_lines("inner_logger_seconds_as_millis.log"), columns)

    assert_frames(actual, expected(
        spark, columns,
        (1, utc(2018, 12, 18, 12, 29, 41), "FLOW_CONTROL_COUNT", "RocketmqClient", "4.9",
         "eric_cg", [("EricTpc", "broker-a", 2)], 68, 1091, 1024, 0, 1000, 1092, 711001, None)))


def test_comma_digits_that_are_not_the_seconds_stay_milliseconds(spark):
    # Same layout, but 041 is not "0" + the seconds (42): real milliseconds.
    line = read_lines("inner_logger_seconds_as_millis.log")[0].replace("12:29:41,041",
                                                                       "12:29:42,041")

    actual = parse(spark, [line], ["ts"])

    assert_frames(actual, expected(spark, ["ts"], (1, utc(2018, 12, 18, 12, 29, 42, 41000))))


def test_5x_layout_with_unknown_caller_location(spark):
    columns = ["ts", "event", "level", "thread", "logger", "pid", "log_layout"]
    lines = read_lines("client_5x_layout_unknown_location.log")

    # the 5.x layout's wall clock is GMT+8 whatever the zone passed (its pattern names it):
    # 10:20:30 on the line is 02:20:30 UTC
    def row(n, millis, level, thread, logger):
        return (n, utc(2023, 11, 17, 2, 20, 30, millis * 1000), None, level, thread, logger,
                46212, "5.x")

    actual = parse(spark, lines, columns)

    processor, remoting = "o.a.r.c.i.ClientRemotingProcessor", "RocketmqRemoting"
    instance = "o.a.r.c.i.f.MQClientInstance"
    assert_frames(actual, expected(
        spark, columns,
        row(1, 814, "INFO", "NettyClientPublicExecutor_5", processor),
        row(2, 846, "INFO", "RebalanceService", remoting),
        row(3, 846, "INFO", "main", remoting),
        row(4, 846, "INFO", "NettyClientWorkerThread_3", remoting),
        row(5, 846, "WARN", "NettyEventExecutor", instance),
        row(6, 881, "INFO", "NettyClientPublicExecutor_7", processor),
        row(7, 881, "INFO", "main", instance),
    ))


def test_thread_then_caller_file_and_line(spark):
    columns = ["ts", "event", "level", "thread", "logger", "log_layout", "message"]
    lines = read_lines("slf4j_thread_then_file_line.log")
    message = ("The Pull Task is cancelled after doPullTask, MessageQueue [topic=t, "
               "brokerName=rmq-b5, queueId=3]")
    ts = utc(2021, 3, 9, 20, 16, 19, 911000)

    actual = parse(spark, lines, columns)

    assert_frames(actual, expected(
        spark, columns,
        (1, ts, None, "WARN", "PullMsgThread-c_g1", None, "bracketed", message),
        (2, ts, None, "WARN", "PullMsgThread-c_g2", None, "bracketed", message)))


UNDATED = ["ts", "event", "group", "queues", "log_layout", "parse_error"]


def test_undated_logback_default_layout_template_lines_say_they_have_no_date(spark):
    lines = read_lines("logback_default_undated_3x.log")
    no_date = "no date and time at the start of the line"

    def added(n, topic, queue_id):
        return (n, None, "MQ_ADDED", "testConsumer", [(topic, "licp", queue_id)], None, no_date)

    def result(n):  # 3.x wording: does not fit the template either, the date is named first
        return (n, None, "REBALANCE_RESULT", None, None, None, no_date)

    def other(n):
        return (n, None, None, None, None, None, None)

    route = (1, None, "ROUTE_CHANGED", None, None, None, no_date)
    actual = parse(spark, lines, UNDATED)

    assert_frames(actual, expected(
        spark, UNDATED, route, other(2), added(3, "TopicTest", 2), added(4, "TopicTest", 1),
        added(5, "TopicTest", 3), added(6, "TopicTest", 0), other(7), other(8), result(9),
        added(10, "%RETRY%testConsumer", 0), result(11)))


def test_logback_default_layout_with_a_date_reads_thread_level_logger(spark):
    # The file's lines with only a date put in front (2014-11-29, the day the blog's run
    # printed as subVersion=1417245619421): logback's default pattern with %d{yyyy-MM-dd ...}.
    lines = read_lines("logback_default_undated_3x.log", prefix="2014-11-29 ")
    columns = ["ts", "event", "thread", "logger", "log_layout", "group", "queues",
               "parse_error"]

    def added(n, millis, topic, queue_id):
        return (n, utc(2014, 11, 29, 15, 20, 20, millis * 1000), "MQ_ADDED", "RebalanceService",
                "RocketmqClient", "thread_first", "testConsumer", [(topic, "licp", queue_id)],
                None)

    def result(n, millis):
        # 3.x wording (ConsumerId=, rebalanceSize=, rebalanceMqSet=<count>): no queue set
        return (n, utc(2014, 11, 29, 15, 20, 20, millis * 1000), "REBALANCE_RESULT",
                "RebalanceService", "RocketmqClient", "thread_first", None, None,
                "line does not fit the REBALANCE_RESULT template")

    def other(n, millis, thread):
        return (n, utc(2014, 11, 29, 15, 20, 20, millis * 1000), None, thread, "RocketmqClient",
                "thread_first", None, None, None)

    actual = parse(spark, lines, columns)

    route = (1, utc(2014, 11, 29, 15, 20, 20, 218000), "ROUTE_CHANGED",
             "MQClientFactoryScheduledThread", "RocketmqClient", "thread_first", None, None, None)
    assert_frames(actual, expected(
        spark, columns,
        route,
        other(2, 421, "NettyClientPublicExecutor_1"),
        added(3, 578, "TopicTest", 2), added(4, 578, "TopicTest", 1),
        added(5, 578, "TopicTest", 3), added(6, 593, "TopicTest", 0),
        other(7, 593, "RebalanceService"), other(8, 593, "RebalanceService"),
        result(9, 593), added(10, 640, "%RETRY%testConsumer", 0), result(11, 640)))


def test_3x_route_change_with_odl_reads_the_topic_and_the_master_of_the_new_route(spark):
    # The real 3.x line (odl[null]: the client's first route of TopicTest) lists broker licp
    # with its master, 0=192.168.1.31:10911 (DESIGN.md §3.4, §5.3).
    lines = read_lines("logback_default_undated_3x.log", prefix="2014-11-29 ")[:1]
    columns = ["event", "topic", "route_brokers", "parse_error"]

    actual = parse(spark, lines, columns)

    assert_frames(actual, expected(
        spark, columns,
        (1, "ROUTE_CHANGED", "TopicTest", [("licp", "192.168.1.31:10911")], None)))


def test_cpp_client_1x_lines_have_no_java_template_and_no_readable_date(spark):
    # [2020-Jun-30 15:40:57.458273](info): a month name, and the persist wording is its own.
    lines = read_lines("cpp_client_1x_persist.log")
    columns = ["ts", "event", "log_layout", "parse_error"]

    actual = parse(spark, lines, columns)

    assert_frames(actual, expected(spark, columns,
                                   *[(n, None, None, None, None) for n in range(1, 8)]))


def test_cpp_client_bracketed_time_and_lower_case_level(spark):
    lines = read_lines("cpp_client_re_dev.log")
    columns = ["ts", "event", "level", "thread", "log_layout"]

    def row(n, millis, level):
        return (n, utc(2021, 2, 1, 14, 24, 42, millis * 1000), None, level, "thread@30244", "cpp")

    actual = parse(spark, lines, columns)

    # line 1 is "add a new mq failed, …, because lock failed", not the MQ_ADDED template
    assert_frames(actual, expected(spark, columns, row(1, 592, "WARNING"), row(2, 593, "INFO"),
                                   row(3, 593, "WARNING"), row(4, 595, "INFO")))


def test_cpp_client_prints_the_java_persist_template_in_its_own_layout(spark):
    # rocketmq-client-cpp re_dev logs the Java text (LOG_INFO_NEW("[persistAll] Group: {} ClientId:
    # {} updateConsumeOffsetToBroker {} {}", ...)) through the spdlog pattern of
    # cpp_client_re_dev.log; some builds append " [%@ (%!)]" after the message.
    message = ("[persistAll] Group: myGroup ClientId: fe80::5c03:7258:6b59:5e16@16236 "
               "updateConsumeOffsetToBroker MessageQueue [topic=321321, brokerName=broker-a, "
               "queueId=1] 42")
    lines = [f"[2021-02-01 14:24:47.600] [info] [thread@30251] - {message}",
             f"[2021-02-01 14:24:47.600] [info] [thread@30251] - {message} "
             "[RemoteBrokerOffsetStore.cpp:98 (persistAll)]"]
    columns = ["ts", "event", "level", "thread", "log_layout", "group", "client_id", "queues",
               "offset", "message", "parse_error"]
    row = (utc(2021, 2, 1, 14, 24, 47, 600000), "PERSIST_OFFSET", "INFO", "thread@30251", "cpp",
           "myGroup", "fe80::5c03:7258:6b59:5e16@16236", [("321321", "broker-a", 1)], 42, message,
           None)

    actual = parse(spark, lines, columns)

    assert_frames(actual, expected(spark, columns, (1, *row), (2, *row)))


def test_go_client_logrus_tty_lines_are_counted_not_read(spark):
    # no date (seconds since start) and the persist line names no client id
    columns = ["ts", "event", "log_layout", "message", "parse_error"]

    actual = parse(spark, read_lines("go_client_logrus_tty.log"), columns)

    assert_frames(actual, expected(spark, columns,
                                   *[(n, None, None, None, None, None) for n in range(1, 9)]))


def test_thread_in_braces_and_logger_with_its_line_number(spark):
    # %d{yyyy-MM-dd HH:mm:ss.SSS} {%t} %-5p %c{...}-%L - %m: the logger is kept without "-95"
    columns = ["ts", "event", "level", "thread", "logger", "log_layout", "group", "queues",
               "parse_error"]

    def other(n, hms_millis, thread, logger):
        h, m, sec, millis = hms_millis
        return (n, utc(2020, 12, 3, h, m, sec, millis * 1000), None, "INFO", thread, logger,
                "thread_first", None, None, None)

    callback, client = "c.e.consumer.test.consumer.TestConsumerCallback", "RocketmqClient"
    netty = "NettyClientPublicExecutor_1"

    actual = parse(spark, read_lines("brace_thread_logger_line.log"), columns)

    assert_frames(actual, expected(
        spark, columns,
        other(1, (18, 26, 26, 248), "ConsumeMessageThread_broadcast-test-consumer_1", callback),
        other(2, (18, 30, 17, 42), netty, client),
        other(3, (18, 30, 17, 46), netty, client),
        other(4, (18, 30, 17, 91), "PullMessageService", client),
        other(5, (18, 30, 26, 284), "ConsumeMessageThread_broadcast-test-consumer_5", client),
        (6, utc(2020, 12, 3, 18, 30, 27, 169000), "MQ_ADDED", "INFO", netty, client,
         "thread_first", "broadcast-test-consumer",
         [("broadcast-test-topic", "broker-a", 2)], None),
        other(7, (18, 30, 27, 174), netty, client),
        other(8, (18, 30, 27, 189), netty, client),
        other(9, (18, 30, 47, 185), "ConsumeMessageThread_broadcast-test-consumer_8", callback),
    ))


ROUTE_DROP = ["ts", "event", "level", "thread", "logger", "log_layout", "group", "client_id",
              "topic", "queues", "offset", "route_brokers", "parse_error"]


def test_3x_log4j_logger_with_its_line_and_a_route_change_that_drops_the_master(spark):
    # The 3.x client's log4j_rocketmq_client.xml, %d{yyy-MM-dd HH:mm:ss,SSS} %p %c{1}(%L) - %m%n:
    # the logger is kept without "(680)". Line 1: %RETRY%adjpush's new route keeps broker-1 with
    # its slave 1=10.55.180.115:10911 only (the old one had 0=10.43.49.232:10911 too).
    lines = read_lines("alibaba_3x_route_drops_master.log")

    def row(n, hms_millis, level, event=None, **values):
        h, m, sec, millis = hms_millis
        rest = [values.get(name) for name in ROUTE_DROP[6:]]
        return (n, utc(2016, 3, 6, h, m, sec, millis * 1000), event, level, None,
                "RocketmqClient", "4.9", *rest)

    actual = parse(spark, lines, ROUTE_DROP)

    assert_frames(actual, expected(
        spark, ROUTE_DROP,
        row(1, (18, 41, 1, 438), "INFO", "ROUTE_CHANGED", topic="%RETRY%adjpush",
            route_brokers=[("broker-1", None)]),
        row(2, (18, 41, 1, 438), "INFO"),  # updateTopicPublishInfo: no template
        row(3, (18, 41, 2, 362), "WARN"),  # the pull request offset illegal: no template
        row(4, (18, 41, 11, 425), "INFO", "PERSIST_OFFSET", group="adjpush",
            client_id="121.43.59.215@1148", topic="adjpush",
            queues=[("adjpush", "broker-1", 2)], offset=87),
    ))


def test_3x_log4j_comma_digits_equal_to_the_seconds_stay_milliseconds(spark):
    # Only the time changed (,438 → ,001 at second 01): a logger printed with its line is no
    # 4.x inner logger, whose ",sss" repeats the seconds; log4j's ,SSS are milliseconds.
    line = read_lines("alibaba_3x_route_drops_master.log")[0].replace("18:41:01,438",
                                                                      "18:41:01,001")

    actual = parse(spark, [line], ["ts", "logger"])

    assert_frames(actual, expected(spark, ["ts", "logger"],
                                   (1, utc(2016, 3, 6, 18, 41, 1, 1000), "RocketmqClient")))
