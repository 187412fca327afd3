"""The fast path of ``parse_client_log_lines`` (``[persistAll]`` and cached-count flow-control
lines) gives, for every line, what the general reading gives (``fast_path=False``).

The fast path reads a line of RocketMQ's own 4.9 or 5.x layout by its words (``_PERSIST_LINE``,
``_FLOW_COUNT_LINE``). The lines here are the real client logs in ``tests/data/real``, the corner
lines of ``test_client_log_heads``, and persist and flow-control lines written near the edge of
those shapes: each either takes the fast path and must come out equal, or misses it and goes the
general way. The test also pins which lines take it, so it cannot pass by the fast path taking
none.
"""

from __future__ import annotations

import re

import pytest
from pyspark.sql import functions as F

from jobs.ingest.client_logs import _FAST_LINE, LogZones, parse_client_log_lines
from tests.ingest.test_client_log_heads import sample_lines

PERSIST = ("[persistAll] Group: GID_orders ClientId: 10.0.3.17@2815#1863726331447891 "
           "updateConsumeOffsetToBroker MessageQueue [topic=orders, brokerName=broker-a, "
           "queueId=3] 4217")
T49 = "2025-03-14 10:00:01,123 INFO MQClientFactoryScheduledThread - "
T5X = ("2025-03-14 10:00:01.123 INFO [2815] [MQClientFactoryScheduledThread] "
       "[o.a.r.c.c.s.RemoteBrokerOffsetStore#persistAll:120] - ")

# (line, takes the fast path)
PERSIST_LINES = [
    (T49 + PERSIST, True),
    (T5X + PERSIST, True),
    # the 4.x inner logger prints ",sss", the seconds again: 23:47:18,018 is kept to the second
    ("2025-03-14 23:47:18,018 INFO RocketmqClient - " + PERSIST, True),
    ("2025-03-14 23:47:18,123 INFO RocketmqClient - " + PERSIST, True),
    ("2025-03-14 23:47:18,018 INFO MQClientFactoryScheduledThread - " + PERSIST, True),
    # a logger with its line number, a dotted logger, a one-character thread
    ("2025-03-14 10:00:01,018 INFO RocketmqClient-95 - " + PERSIST, True),
    ("2025-03-14 10:00:01,123 INFO o.a.r.c.c.s.RemoteBrokerOffsetStore - " + PERSIST, True),
    ("2025-03-14 10:00:01,123 INFO - - " + PERSIST, True),
    # padded and five-letter levels, a period before the milliseconds
    ("2025-03-14 10:00:01,123 INFO  MQClientFactoryScheduledThread - " + PERSIST, True),
    ("2025-03-14 10:00:01.123 ERROR MQClientFactoryScheduledThread - " + PERSIST, True),
    ("2025-03-14 10:00:01.123 INFO  [2815] [main] [RocketmqClient#persistAll:120] - " + PERSIST,
     True),
    ("2025-03-14 10:00:01.123 WARN [2815] [main] [RocketmqClient#] - " + PERSIST, True),
    # retry topics, a negative queue id and offset, the longest offset a long always holds
    (T49 + PERSIST.replace("topic=orders", "topic=%RETRY%GID_orders"), True),
    (T49 + PERSIST.replace("queueId=3] 4217", "queueId=-1] -1"), True),
    (T49 + PERSIST.replace("] 4217", "] 999999999999999999"), True),
    (T49 + PERSIST.replace("10.0.3.17@2815#1863726331447891", "fe80::1%eth0@DEFAULT|x"), True),
    # a day the calendar does not have: the same "invalid timestamp"
    ("2025-02-30 10:00:01,123 INFO MQClientFactoryScheduledThread - " + PERSIST, True),
    # -- the general way --
    (T49 + PERSIST.replace("] 4217", "] 9999999999999999999"), False),  # 19 digits
    (T49 + PERSIST.replace("] 4217", "] 4217 "), False),
    (T49 + PERSIST.replace("] 4217", "] 4217\u2028"), False),  # a Java line terminator
    (T49 + PERSIST.replace("] 4217", "] 4217\r"), False),
    (T49 + PERSIST.replace("] 4217", "] 42x7"), False),
    (T49 + PERSIST.replace("queueId=3", "queueId=1234567890"), False),
    (T49 + PERSIST.replace("queueId=3", "queueId=x"), False),
    (T49 + PERSIST.replace("GID_orders", "GID orders"), False),
    (T49 + PERSIST.replace("brokerName=broker-a", "brokerName=broker a"), False),
    (T49 + PERSIST.replace("ClientId: ", "ClientId:  "), False),
    (T49 + PERSIST.replace("GID_orders", "GID_o\u0001rders"), False),
    (T49 + PERSIST.replace("[persistAll] ", ""), False),  # 3.x
    (T49.replace("MQClientFactoryScheduledThread", "[main]") + PERSIST, False),
    (T49.replace("INFO", "info") + PERSIST, False),
    (T49.replace("INFO ", "INFO\t") + PERSIST, False),
    (T49.replace("2025-", "25-") + PERSIST, False),
    (T49.replace(",123", ",1234") + PERSIST, False),
    (T49.replace(" - ", "  - ") + PERSIST, False),
    (T5X.replace("[MQClientFactoryScheduledThread]", "[pool 1]") + PERSIST, False),
    ("2025-03-14 10:00:01.123|INFO |MQClientFactoryScheduledThread|o.a.r.Store:120|" + PERSIST,
     False),
    (T49 + PERSIST + " " + PERSIST, False),
]

# DefaultMQPushConsumerImpl.pullMessage's cached-count flow control, as the M day's logs print it
FLOW = ("the cached message count exceeds the threshold 1000, so do flow control, "
        "minOffset=7640964, maxOffset=7641995, count=1032, size=1 MiB, pullRequest=PullRequest "
        "[consumerGroup=GID_orders, messageQueue=MessageQueue [topic=orders, brokerName=broker-a, "
        "queueId=13], nextOffset=7641996], flowControlTimes=0")
P49 = "2025-03-14 10:00:07,500 WARN PullMessageService - "
P5X = ("2025-03-14 10:00:07.500 WARN [2815] [PullMessageService] "
       "[o.a.r.c.i.c.DefaultMQPushConsumerImpl#pullMessage:260] - ")

FLOW_LINES = [
    (P49 + FLOW, True),
    (P5X + FLOW, True),
    ("2025-03-14 23:47:18,018 WARN RocketmqClient - " + FLOW, True),
    ("2025-03-14 10:00:07,500 WARN  PullMessageService - " + FLOW, True),
    ("2025-03-14 10:00:07,500 WARN - - " + FLOW, True),
    (P49 + FLOW.replace("topic=orders", "topic=%RETRY%GID_orders"), True),
    (P49 + FLOW.replace("queueId=13]", "queueId=-1]").replace("size=1 ", "size=0 "), True),
    (P49 + FLOW.replace("minOffset=7640964", "minOffset=-1")
     .replace("flowControlTimes=0", "flowControlTimes=999999999999999999"), True),
    ("2025-02-30 10:00:07,500 WARN PullMessageService - " + FLOW, True),
    # -- the general way --
    (P49 + FLOW.replace("maxOffset=7641995", "maxOffset=9999999999999999999"), False),
    (P49 + FLOW.replace("threshold 1000", "threshold 1x00"), False),
    (P49 + FLOW.replace("size=1 MiB", "size=1.5 MiB"), False),
    (P49 + FLOW + " ", False),
    (P49 + FLOW + "\u2028", False),
    (P49 + FLOW.replace("GID_orders", "GID orders"), False),
    (P49 + FLOW.replace("brokerName=broker-a", "brokerName=broker a"), False),
    (P49 + FLOW.replace("queueId=13", "queueId=1234567890"), False),
    (P49 + FLOW.replace("count=1032, ", ""), False),
    (P49.replace("PullMessageService", "[PullMessageService]") + FLOW, False),
    (P49 + FLOW.replace("message count exceeds the threshold 1000",
                        "message size exceeds the threshold 100 MiB"), False),
    (P49 + FLOW + " " + FLOW, False),
]

FAST_LINES = PERSIST_LINES + FLOW_LINES


# Python's reading of the shape; ``\z`` is Python's ``\Z``
FAST_PATTERN = re.compile(_FAST_LINE.replace(r"\z", r"\Z"))


def all_lines() -> list[str]:
    return [line for line, _ in FAST_LINES] + sample_lines()


@pytest.fixture(scope="module")
def lines_df(spark):
    hosts = ["host-a", "host-b", "host-c"]
    rows = [(f"client_logs/date=2025-03-14/{hosts[i % 3]}/rocketmq_client.log", i, line)
            for i, line in enumerate(all_lines())]
    return spark.createDataFrame(rows, "_source_file string, _line_no long, line string")


def test_the_fast_path_takes_exactly_the_lines_of_its_shape():
    assert [bool(FAST_PATTERN.search(line)) for line, _ in FAST_LINES] == [
        fast for _, fast in FAST_LINES]


def test_the_engine_takes_the_same_lines_for_the_fast_path(lines_df):
    lines = all_lines()
    fast = {r._line_no for r in lines_df.where(F.col("line").rlike(_FAST_LINE)).collect()}
    assert fast == {i for i, line in enumerate(lines) if FAST_PATTERN.search(line)}
    # a user's own flow-control line (tests/data/real) is one of them
    real = [lines[i] for i in fast if i >= len(FAST_LINES)]
    assert any("so do flow control" in line for line in real)


@pytest.mark.parametrize("zone", ["GMT+8", LogZones("UTC", (("host-b", "Asia/Shanghai"),))],
                         ids=["fixed", "per-host"])
def test_every_line_parses_as_the_general_reading_does(lines_df, zone):
    keep = ("line",)
    fast = parse_client_log_lines(lines_df, zone, keep_columns=keep)
    general = parse_client_log_lines(lines_df, zone, keep_columns=keep, fast_path=False)
    assert fast.schema == general.schema
    got = {r._line_no: r for r in fast.collect()}
    want = {r._line_no: r for r in general.collect()}
    assert got.keys() == want.keys()
    differences = [(n, got[n], want[n]) for n in sorted(want) if got[n] != want[n]]
    assert differences == []
    # the lines written to be read were read: an event on each, the timestamp on the valid days
    for first, kind, event in ((0, PERSIST_LINES, "PERSIST_OFFSET"),
                               (len(PERSIST_LINES), FLOW_LINES, "FLOW_CONTROL_COUNT")):
        taken = [want[first + i] for i, (_, takes) in enumerate(kind) if takes]
        assert {row.event for row in taken} == {event}
        assert [row.parse_error for row in taken].count("invalid timestamp") == 1


@pytest.mark.sail_only
def test_sail_gap_an_array_holding_substring_index_cannot_be_collected(spark):
    """Why ``_parse_persist_lines`` takes the 5.x logger with ``instr``/``substr``: Sail 0.7.2's
    ``substring_index`` gives a ``string_view`` that an array cannot hand over. When this fails,
    Sail has fixed it."""
    df = spark.createDataFrame([("logger#method:120",)], "s string")
    with pytest.raises(Exception, match="string_view"):
        df.select(F.array(F.lit("x"), F.substring_index(F.col("s"), "#", 1))).collect()
