"""mqadmin consumerProgress / consumerConnection text and fastjson ConsumerRunningInfo dumps →
landing records (pure Python: the parsing itself; the Spark side is in test_native_landing.py).

The tables are laid out with the printf formats of RocketMQ's ConsumerProgressSubCommand and
ConsumerConnectionSubCommand (4.9.x and 5.x), not with the parser's own code."""

import datetime as dt
from pathlib import Path

import pytest

from jobs.ingest.fastjson_dump import FastjsonError, Pairs, parse_fastjson, running_info_record
from jobs.ingest.mqadmin_text import (
    FileContext,
    consumer_connection_lines,
    consumer_progress_lines,
    file_context,
    running_info_lines,
)

SAMPLES = Path(__file__).parents[1] / "data" / "mqadmin"
CTX = FileContext(ts="2025-11-21T10:00:00.000Z", cluster="c1", group="G")


def row4(topic, broker, qid, bo, co, last, ip=None):
    """A 4.9.x row: ``%-64s  %-32s  %-4d  %-20d  %-20d  [%-20s ]%-20d  %s``."""
    mid = f"{ip:<20} " if ip is not None else ""
    return f"{topic:<64}  {broker:<32}  {qid:<4}  {bo:<20}  {co:<20}  {mid}{bo - co:<20}  {last}"


def row5(topic, broker, qid, bo, co, inflight, last, ip=None):
    """A 5.x row: ``%-64s  %-32s  %-4d  %-20d  %-20d  [%-20s ]%-20d %-20d %s``."""
    mid = f"{ip:<20} " if ip is not None else f"{bo - co:<20} "
    diff = f"{bo - co:<20} " if ip is not None else ""
    return f"{topic:<64}  {broker:<32}  {qid:<4}  {bo:<20}  {co:<20}  {mid}{diff}{inflight:<20} {last}"


HEAD4 = ("#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime")
HEAD4S = HEAD4[:5] + ("#Client IP",) + HEAD4[5:]


def header4(cols):
    if "#Client IP" in cols:
        return "%-64s  %-32s  %-4s  %-20s  %-20s  %-20s %-20s  %s" % cols
    return "%-64s  %-32s  %-4s  %-20s  %-20s  %-20s  %s" % cols


HEADER5 = "%-64s  %-32s  %-4s  %-20s  %-20s  %-20s %-20s%s" % (
    "#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#Inflight",
    "#LastTime")
HEADER5S = "%-64s  %-32s  %-4s  %-20s  %-20s  %-20s %-20s %-20s%s" % (
    "#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Client IP", "#Diff",
    "#Inflight", "#LastTime")


def records(parsed):
    return [p.record for p in parsed if p.record is not None]


def test_4x_progress_without_client_ip():
    lines = ["RocketMQLog:WARN No appenders could be found for logger (io.netty...).",
             header4(HEAD4),
             row4("%RETRY%G", "broker-a", 0, 0, 0, "N/A"),
             row4("orders", "broker-a", 3, 1200, 1150, "2025-11-21 09:59:58"),
             "", "Consume TPS: 12.50", "Diff Total: 50"]
    parsed = consumer_progress_lines(lines, CTX)
    assert [p.reason for p in parsed] == [None] * 7
    assert records(parsed) == [
        {"ts": CTX.ts, "cluster": "c1", "group": "G", "topic": "%RETRY%G", "broker_name": "broker-a",
         "queue_id": 0, "broker_offset": 0, "consumer_offset": 0, "last_timestamp": 0},
        {"ts": CTX.ts, "cluster": "c1", "group": "G", "topic": "orders", "broker_name": "broker-a",
         "queue_id": 3, "broker_offset": 1200, "consumer_offset": 1150,
         "last_timestamp": int(dt.datetime(2025, 11, 21, 9, 59, 58, tzinfo=dt.timezone.utc)
                               .timestamp() * 1000)}]


def test_4x_progress_with_client_ip_keeps_na_as_the_brokers_no_owner():
    lines = [header4(HEAD4S), row4("orders", "broker-a", 0, 10, 4, "N/A", ip="10.0.0.7"),
             row4("orders", "broker-a", 1, 10, 2, "N/A", ip="N/A")]
    got = records(consumer_progress_lines(lines, CTX))
    assert [(r["queue_id"], r["client_ip"], "pull_offset" in r) for r in got] == [
        (0, "10.0.0.7", False), (1, "N/A", False)]


def test_5x_progress_inflight_gives_the_pull_offset_and_a_pre_5_1_broker_none():
    lines = [HEADER5, row5("orders", "broker-b", 2, 500, 480, 15, "N/A"),
             row5("orders", "broker-b", 3, 500, 480, -480, "N/A"),
             "", "Consume TPS: 0.00", "Consume Diff Total: 40", "Consume Inflight Total: -465"]
    got = records(consumer_progress_lines(lines, CTX))
    assert [(r["queue_id"], r["pull_offset"]) for r in got] == [(2, 495), (3, None)]
    assert all("client_ip" not in r for r in got)


def test_5x_progress_with_client_ip_and_the_mqadmin_hosts_zone():
    ctx = file_context("offsets/date=2025-11-21/cluster=c1/group=G/tz=+08:00/20251121T100000Z.txt")
    lines = [HEADER5S, row5("orders", "broker-b", 2, 500, 480, 20, "2025-11-21 17:59:58", ip="10.0.0.9")]
    (rec,) = records(consumer_progress_lines(lines, ctx))
    assert (rec["client_ip"], rec["pull_offset"]) == ("10.0.0.9", 500)
    assert rec["last_timestamp"] == int(dt.datetime(2025, 11, 21, 9, 59, 58, tzinfo=dt.timezone.utc)
                                        .timestamp() * 1000)


@pytest.mark.parametrize("line, reason", [
    (row5("orders", "broker-b", 2, 500, 480, 20, "N/A")[:120], "malformed_row: 4 cells, the header has 8 columns"),
    (row5("orders", "broker-b", 2, 500, 480, 20, "yesterday"), "malformed_row: #LastTime"),
    (row5("orders", "broker-b", 2, 500, 480, 20, "N/A").replace(" 2   ", " x   "),
     "malformed_row: #QID is not a number: 'x'"),
    (row5("orders", "broker-b", 2, 500, 480, 20, "N/A").replace("20                   ", "7  "),
     "inconsistent_row"),
    (row5("t" * 64, "broker-b", 2, 500, 480, 20, "N/A"), "truncated_name"),
])
def test_a_malformed_progress_row_gets_a_reason(line, reason):
    parsed = consumer_progress_lines([HEADER5, row5("ok", "broker-b", 0, 1, 1, 0, "N/A"), line], CTX)
    assert parsed[1].reason is None and parsed[1].record is not None
    assert parsed[2].record is None and parsed[2].reason.startswith(reason)


def test_progress_text_without_a_header_is_quarantined_line_by_line():
    lines = ["org.apache.rocketmq.tools.command.SubCommandException: ConsumerProgressSubCommand command failed",
             "", "\tat org.apache.rocketmq.tools.command.MQAdminStartup.main0(MQAdminStartup.java:164)"]
    parsed = consumer_progress_lines(lines, CTX)
    assert [p.reason is not None for p in parsed] == [True, False, True]
    assert parsed[0].reason.startswith("no_table_header")


CONN = ["%-36s %-22s %-10s %s" % ("#ClientId", "#ClientAddr", "#Language", "#Version"),
        "%-36s %-22s %-10s %s" % ("10.0.0.7@1", "10.8.4.17:40122", "JAVA", "V4_9_8"),
        "%-36s %-22s %-10s %s" % ("10.0.0.7@1", "10.8.4.18:38871", "JAVA", "V4_9_8"),
        "%-36s %-22s %-10s %s" % ("10.0.0.8@4711#1234567", "10.0.0.8:50210", "JAVA", "V5_3_1"),
        "", "Below is subscription:", "%-20s %s" % ("#Topic", "#SubExpression"),
        "%-20s %s" % ("orders", "TagA || TagB"), "%-20s %s" % ("%RETRY%G", "*"), "",
        "ConsumeType: CONSUME_PASSIVELY", "MessageModel: CLUSTERING",
        "ConsumeFromWhere: CONSUME_FROM_LAST_OFFSET"]


def test_connection_rows_take_the_groups_settings_from_the_footer():
    ctx = file_context("connections/date=2025-11-21/cluster=c1/group=G/broker_name=broker-a/"
                       "1763719200000.txt")
    parsed = consumer_connection_lines(CONN, ctx)
    assert all(p.reason is None for p in parsed)
    got = records(parsed)
    assert [(r["client_id"], r["client_addr"], r["version"]) for r in got] == [
        ("10.0.0.7@1", "10.8.4.17:40122", "V4_9_8"), ("10.0.0.7@1", "10.8.4.18:38871", "V4_9_8"),
        ("10.0.0.8@4711#1234567", "10.0.0.8:50210", "V5_3_1")]
    assert {(r["ts"], r["broker_name"], r["consume_type"], r["message_model"],
             r["consume_from_where"], "subscriptions" in r) for r in got} == {
        ("1763719200000", "broker-a", "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET",
         False)}


def test_a_malformed_connection_row_gets_a_reason():
    lines = CONN[:2] + ["10.0.0.9@1 JAVA V4_9_8", "10.0.0.9@1 nowhere JAVA V4_9_8"] + CONN[4:]
    parsed = consumer_connection_lines(lines, CTX)
    assert parsed[2].reason == "malformed_row: 3 cells, the header has 4 columns"
    assert parsed[3].reason == "malformed_row: #ClientAddr is not host:port: 'nowhere'"
    assert len(records(parsed)) == 1


@pytest.mark.parametrize("path, expected", [
    ("offsets/date=2025-11-21/cluster=c1/group=G/20251121T235930Z.txt",
     ("2025-11-21T23:59:30.000Z", "c1", "G", None)),
    ("running_info/date=2025-11-21/cluster=c1/group=G/client=10.0.0.8@4711#12/20251121T100000123Z.json.gz",
     ("2025-11-21T10:00:00.123Z", "c1", "G", "10.0.0.8@4711#12")),
    ("offsets/date=2025-11-21/cluster=c1/group=%RETRY%G/1763719200000.txt",
     ("1763719200000", "c1", "%RETRY%G", None)),
])
def test_file_context_from_the_path(path, expected):
    ctx = file_context(path)
    assert (ctx.ts, ctx.cluster, ctx.group, ctx.client_id) == expected


@pytest.mark.parametrize("path, reason", [
    ("offsets/date=2025-11-21/group=G/20251121T100000Z.txt", "no cluster= folder"),
    ("offsets/date=2025-11-21/cluster=c/group=G/progress.txt", "does not start with the snapshot time"),
    ("offsets/date=2025-11-21/cluster=c/group=G/tz=CST/20251121T100000Z.txt", "tz=CST"),
])
def test_a_path_without_context_quarantines_the_files_lines(path, reason):
    ctx = file_context(path)
    assert isinstance(ctx, str) and reason in ctx
    parsed = consumer_progress_lines([HEADER5, row5("o", "b", 0, 1, 1, 0, "N/A")], ctx)
    assert all(p.record is None and p.reason == ctx for p in parsed)


# --- fastjson -------------------------------------------------------------------------------------

def test_fastjson_object_and_integer_keys():
    value = parse_fastjson('{"offsetTable":{"t@g":{0:123,1:-4}},'
                           '"m":{{"brokerName":"b","queueId":0,"topic":"T"}:{"x":1.5e2}}}')
    assert value["offsetTable"]["t@g"] == Pairs([(0, 123), (1, -4)])
    assert value["m"] == Pairs([({"brokerName": "b", "queueId": 0, "topic": "T"}, {"x": 150.0})])


@pytest.mark.parametrize("text, message", [
    ('{"a":1', "expected '}', found 'end of text' at character 7"),
    ('{"a":__import__("os")}', "unexpected word '__import__' at character 6"),
    ('{"a":1} x', "text after the value at character 9"),
    ('{[1]:2}', "an array as an object key at character 2"),
    ('{"a":"\\q"}', "bad escape \\q at character 7"),
])
def test_fastjson_refuses_what_it_is_not(text, message):
    with pytest.raises(FastjsonError, match=message.replace("\\", "\\\\").replace("(", r"\(")
                       .replace(")", r"\)").replace("[", r"\[")):
        parse_fastjson(text)


def test_pretty_printed_running_info_dump_becomes_one_record():
    """Pretty-printed as fastjson writes it (``JSON.toJSONString(info, true)``), the layout seen in
    a dump posted to apache/rocketmq-dashboard#297 (tests/data/mqadmin/README.md)."""
    text = (SAMPLES / "running_info_pretty.json").read_text(encoding="utf-8")
    lines = text.splitlines()
    ctx = file_context("running_info/date=2025-04-22/cluster=POC/group=CG-FTEST-Normal/"
                       "client=192.168.1.20@12345#99/20250422T065959Z.json")
    parsed = running_info_lines(lines, ctx)
    assert len(parsed) == len(lines)
    (rec,) = records(parsed)
    assert [p.record is None and p.reason is None for p in parsed[1:]] == [True] * (len(lines) - 1)
    assert rec["client_id"] == "192.168.1.20@12345#99"
    assert [(q["topic"], q["broker_name"], q["queue_id"], q["commit_offset"], q["dropped"], q["locked"])
            for q in rec["mq_table"]] == [
        ("%RETRY%CG-FTEST-Normal", "POC-Broker-a", 0, 72, False, True),
        ("%RETRY%CG-FTEST-Normal", "POC-Broker-b", 0, 48, False, True),
        ("TP-FTEST-Normal", "POC-Broker-b", 3, 1031, True, False)]
    assert rec["properties"]["PROP_CONSUMEORDERLY"] == "true"
    assert rec["subscriptions"] == [{"topic": "TP-FTEST-Normal", "sub_string": "*",
                                     "expression_type": "TAG", "tags": [],
                                     "sub_version": 1745303080000}]
    assert rec["status_table"] == [{"topic": "TP-FTEST-Normal", "pull_rt": 1.5, "pull_tps": 0.0,
                                    "consume_rt": 0.0, "consume_ok_tps": 0.0,
                                    "consume_failed_tps": 0.0, "consume_failed_msgs": 0}]
    assert rec["mqPopTable"] == {}


def test_a_dump_without_client_folder_takes_the_client_id_from_its_properties():
    ctx = file_context("running_info/date=2025-11-21/cluster=c1/group=G/20251121T100000Z.json")
    dump = '{"mqTable":{},"properties":{"clientIP":"10.0.0.8","instanceName":"4711#12","unitName":""}}'
    (rec,) = records(running_info_lines([dump], ctx))
    assert (rec["client_id"], rec["mq_table"]) == ("10.0.0.8@4711#12", [])


def test_a_broken_dump_is_one_quarantined_record():
    parsed = running_info_lines(['{"mqTable":{{"brokerName":"b","queueId":0,"topic":"T"}', '}'], CTX)
    assert parsed[0].reason.startswith("malformed_fastjson: expected ':'")
    assert parsed[1].reason is None and parsed[1].record is None


def test_running_info_record_keeps_unknown_keys_with_object_keys_as_pairs():
    rec = running_info_record('{"mqTable":{},"mqPopTable":{{"brokerName":"b","queueId":1,"topic":"T"}:'
                              '{"droped":false,"waitAckCount":3}}}', "1", "c", "g", "id")
    assert rec["mqPopTable"] == [[{"brokerName": "b", "queueId": 1, "topic": "T"},
                                  {"droped": False, "waitAckCount": 3}]]
