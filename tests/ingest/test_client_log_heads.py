"""The client-log regexes capture only the head of a line; what they give must equal the
whole-line captures they replaced (``_groups_and_tail``, ``message_from``).

Every line is tried: the real client logs in ``tests/data/real`` and lines written to reach the
corners — U+0001 inside a line (the group-by-group fallback), a template opening that appears
twice, separators inside values, CR inside a line, lines a pattern does not fit. The reference
is the whole-line pattern (the head followed by ``(.*)$``) read by ``regexp_groups``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import functions as F

from jobs.ingest.client_logs import (
    _HEADER,
    _LAYOUTS,
    _MESSAGE_START,
    _TAIL,
    _TEMPLATES,
    _groups_and_tail,
    _groups_of_a_match,
    header_groups,
    layout_fields,
    message_from,
    regexp_groups,
)

REAL = Path(__file__).resolve().parents[1] / "data" / "real"

CRAFTED = [
    "2025-03-14 10:00:01,123 INFO RocketmqClient - rebalanced result changed. "
    "allocateMessageQueueStrategyName=AVG, group=G, topic=T, clientId=c, mqAllSize=1, "
    "cidAllSize=1, rebalanceResultSize=1, rebalanceResultSet=[]",
    # U+0001 in the message and in the header: the group-by-group fallback
    "2025-03-14 10:00:01.123 WARN [29631] [PullMessageService] [o.a.r.c.i.c.X#pull:287] - a\u0001b",
    "2025-03-14 10:00:01.123 WARN [296\u000131] [Pull] [o.a.r.c.X#pull:287] - the cached message "
    "count exceeds the threshold 1000, so do flow control, minOffset=1",
    "[tr\u0001ce] 2025-03-14 10:00:01 INFO RocketmqClient - x",
    # an opening twice, separators in values, a CR inside, a pipe layout
    "2025-03-14 10:00:01,123 INFO RocketmqClient - send expire msg back. send expire msg back. "
    "topic=a - b|c, msgId=1, storeHost=h, queueId=1, queueOffset=2",
    "2025-03-14 10:00:01,123 INFO RocketmqClient - x - doRebalance, G, add a new mq, "
    "MessageQueue [topic=T, brokerName=b, queueId=1]\r - doRebalance, H, add a new mq, y",
    "2025-03-14 10:00:01.123|WARN |traceId=1|PullMessageService|o.a.r.Impl:287|[persistAll] "
    "Group: G ClientId: c updateConsumeOffsetToBroker MessageQueue [topic=T, brokerName=b, "
    "queueId=0] 12",
    "[2025-03-14 10:00:01.123456] [info] [rebalance@12] - doRebalance, G, remove unnecessary mq, z",
    "25-03-14 10:00:01,001 INFO  [main] (RocketmqClient.java:115) - [BUG] ConsumerGroup: G "
    "The consumerId: c not in cidAll: [a, b]",
    "[PullMessageService] WARN o.a.r.c.Impl - execute the pull request exception",
    # the real 4.9.7 and 5.3.3 lines (tests/data/real-cluster), and a shutdown line the template leaves out
    "2026-12-07 12:15:03,676 INFO RocketmqClient - the client factory [127.0.0.1@20172#4812522638793] start OK",
    "2026-12-07 20:15:03.302 INFO  [20143] [main] [o.a.r.c.i.f.MQClientInstance#?:?] - the client factory "
    "[127.0.0.1@20143#4811936886580] start OK",
    "2026-12-07 12:19:10,233 INFO RocketmqClient - the client factory [127.0.0.1@20172#4812522638793] shutdown OK",
    "2025-03-14 10:00:01,123 WARN RocketmqClient - the cached message size exceeds the threshold "
    "100 MiB, so do flow control, minOffset=1, maxOffset=2, count=3, size=101 MiB, pullRequest="
    "PullRequest [consumerGroup=G, messageQueue=MessageQueue [topic=T, brokerName=b, queueId=1], "
    "nextOffset=3], flowControlTimes=1",
    "2025-03-14 10:00:01,123 WARN RocketmqClient - the queue's messages, span too long, so do "
    "flow control, minOffset=1, maxOffset=2002, maxSpan=2001, pullRequest=PullRequest "
    "[consumerGroup=G, messageQueue=MessageQueue [topic=T, brokerName=b, queueId=1], "
    "nextOffset=3], flowControlTimes=1",
    "2025-03-14 10:00:01,123 WARN RocketmqClient - sendMessageBack exception, group: G msg: "
    "MessageExt [brokerName=b, queueId=1, storeSize=1, queueOffset=2, sysFlag=0, storeHost=/h:1, "
    "msgId=M, reconsumeTimes=3, toString()=Message{topic='T', flag=0}]",
    "2025-03-14T10:00:01 INFO RocketmqClient-95 - ",
    # near the plain header read by substrings (header_groups) and the 4.9 layout
    "2025-03-14 10:00:01,1234 INFO RocketmqClient - more fraction digits",
    "2025-03-14 10:00:01,123] INFO RocketmqClient - a bracket after the time",
    "2025-03-14 10:00:01.123 ERROR MQClientFactoryScheduledThread - five letters",
    "2025-03-14 10:00:01,123 INFO  RocketmqClient - a padded level",
    "2025-03-14 10:00:01,123 INFO {thread} INFO x - a braced token",
    "2025-03-14 10:00:01,123 INFO RocketmqClient -no space",
    "2025-03-14 10:00:01,123 INFO RocketmqClient - ",
    "2025-03-14 10:00:01,123 INFO a|b - c - d\ne",
    "2025-03-14 10:00:01,123 WARNING RocketmqClient - seven letters",
    "2025-03-14 10:00:01,123 NOTICE RocketmqClient - six letters",
    "2025-03-14 10:00:01,123 INFO RocketmqClient  - two spaces before the dash",
    "2025-03-14 10:00:01,123",
    "2025-03-14 10:00:01",
    "not a log line at all - the cached message count exceeds the threshold 1",
    "",
]


def sample_lines() -> list[str]:
    lines = list(CRAFTED)
    for path in sorted(REAL.glob("*.log")):
        lines += path.read_text(encoding="utf-8", errors="replace").splitlines()
    return lines


@pytest.fixture(scope="module")
def lines_df(spark):
    lines = sample_lines()
    df = spark.createDataFrame([(i, line) for i, line in enumerate(lines)], "i long, line string")
    reference_head = regexp_groups(F.col("line"), _HEADER + _TAIL, 5)
    return df.select("i", "line", F.coalesce(reference_head[4], F.col("line")).alias("rest"))


def differences(df, new, old) -> list:
    return (df.select("i", "line", new.alias("new"), old.alias("old"))
            .where(~F.col("new").eqNullSafe(F.col("old"))).collect())


def test_header_head_and_tail_equal_the_whole_line_groups(lines_df):
    line = F.col("line")
    old = regexp_groups(line, _HEADER + _TAIL, 5)
    new = F.when(line.rlike(_HEADER), _groups_and_tail(line, _HEADER, range(1, 5)))
    assert differences(lines_df, new, old) == []
    # the substrings of the plain header give the same
    assert differences(lines_df, header_groups(line), old) == []
    # the sample reaches the fallback: a dated line holding U+0001
    assert lines_df.where(line.rlike(_HEADER) & line.contains("\u0001")).count() >= 2


@pytest.mark.parametrize("layout", [layout for layout in _LAYOUTS if layout.head],
                         ids=lambda layout: layout.name)
def test_layout_head_and_tail_equal_the_whole_pattern_groups(lines_df, layout):
    rest = F.col("rest")
    new = F.when(rest.rlike(layout.head), _groups_and_tail(rest, layout.head, layout.refs[:4]))
    old = F.when(rest.rlike(layout.pattern), _groups_of_a_match(rest, layout.pattern, layout.refs))
    assert differences(lines_df, new, old) == []
    assert lines_df.where(rest.rlike(layout.pattern)).count() > 0, "no line of this layout"


def test_layout_fields_are_the_first_whole_pattern_that_fits(lines_df):
    rest = F.col("rest")
    old = F.lit(None).cast("array<string>")
    for layout in reversed(_LAYOUTS):
        old = F.when(rest.rlike(layout.pattern), F.concat(F.array(F.lit(layout.name)), _groups_of_a_match(
            rest, layout.pattern, layout.refs))).otherwise(old)
    assert differences(lines_df, layout_fields(rest), old) == []


def test_only_the_cpp_layout_keeps_its_whole_pattern():
    assert [layout.name for layout in _LAYOUTS if layout.head is None] == ["cpp"]


@pytest.mark.parametrize("template", _TEMPLATES, ids=lambda template: template.event)
def test_message_from_the_opening_equals_the_whole_line_extract(lines_df, template):
    rest = F.col("rest")
    found = rest.rlike(_MESSAGE_START + template.opening)
    new = F.when(found, message_from(rest, template.opening))
    old = F.when(found, F.regexp_extract(rest, _MESSAGE_START + "(" + template.opening + ".*)$", 1))
    assert differences(lines_df, new, old) == []
    assert lines_df.where(found).count() > 0, "no line holds this template's opening"
