"""Raw ``rocketmq_client.log`` lines → typed client-log events (DESIGN.md §3.4).

Users route the client's logger through whatever log4j / logback / Log4j2 pattern they run, so the
parser assumes no layout. A line is read in three steps:

1. **Time** at the start of the line, after at most one bracketed token (a trace id, ``[1031…] ``)
   and inside an optional ``[`` ``]``: ``yyyy-MM-dd HH:mm:ss`` or the 3.x ``yy-MM-dd HH:mm:ss``,
   then ``,SSS`` or ``.SSS`` (further sub-millisecond digits are dropped).
2. **Level, thread, logger** from the rest of the header where a known shape gives them
   (``log_layout``): ``4.9`` — ``LEVEL token - msg``, the 4.9 logback pattern
   ``%d{yyy-MM-dd HH:mm:ss,GMT+8} %p %t - %m%n`` and the inner logger (token = logger name),
   padded ``%-60c`` names included; ``5.x`` — ``rmq.client.logback.xml`` (5.1.0+),
   ``%d{yyy-MM-dd HH:mm:ss.SSS,GMT+8} %-5p [%pid] [%t] [%logger{12}#%M:%L] - %m%n``;
   ``bracketed`` — ``LEVEL [logger] [thread] - msg`` (padded ``%-30logger``) or
   ``LEVEL [thread] (File.java:115) - msg``; ``thread_first`` — logback's default
   ``[thread] LEVEL logger - msg`` (with a date) and ``{thread} LEVEL logger-line - msg``;
   ``pipe`` — ``ts|LEVEL |traceId=…|thread|logger:line|msg``; ``cpp`` — the C++ client's
   ``[ts] [level] [thread@N] - msg``; ``other`` — a dated line whose header is none of these.
   A logger printed with its line number (``%c-%L``, ``%c:%L``, or the 3.x client's log4j
   ``%c{1}(%L)``, ``RocketmqClient(680)``) is stored without it.
3. **Template** by its literal opening text anywhere in the rest, right after a header separator
   (`` - `` or ``|``, or at the very start): the message is the text from there on. A template
   therefore needs no layout at all, and ``broker rebalanced result changed.`` or
   ``[BUG]doRebalance, …`` (no separator before the opening) stay out.

The 4.x inner logger (``LoggingBuilder.DefaultLayout``) formats time as
``yyyy-MM-dd HH:mm:ss,sss``: lower-case ``sss`` is the *seconds* again, zero-padded
(``23:47:18,018``). On a ``4.9`` line of a ``Rocketmq…`` logger whose three digits are ``0`` +
the seconds, they are not milliseconds and ``ts`` is kept to the second (a real millisecond value
that happens to equal them loses under a second).

Lines carry a zone-less wall clock: GMT+8 in RocketMQ's logback patterns, the JVM's default zone in
the 4.9 inner logger. A line of the ``5.x`` layout (``rmq.client.logback.xml``, whose pattern says
``%d{yyy-MM-dd HH:mm:ss.SSS,GMT+8}``) is read in ``FIVE_X_LOG_ZONE`` whatever the host's setting:
a real 5.3.3 client in a UTC JVM wrote GMT+8 (tests/data/real-cluster/README.md, difference 9).
Every other layout is read in the zone the settings give the host (``LogZones``): the 4.9.x inner
logger writes the JVM's default zone, which the line does not tell. ``ts`` is stored in UTC.

The templates are the ``log.info``/``log.warn`` format strings of the RocketMQ client (facts §2.2,
§2.3, §5.3). The wording changes are the ``client `` prefix RIP-19 put before ``rebalanced result
changed.`` (5.0.0+) and the 3.x persist line, which has no ``[persistAll]`` (``Group: G ClientId:
C updateConsumeOffsetToBroker MessageQueue [...] OFFSET``, every minute). ``broker rebalanced
result changed.`` (the server-side assignment path) is a different line and is not matched; nor is
the 3.x ``rebalanced result changed. …, ConsumerId=…, rebalanceSize=…, rebalanceMqSet=<count>``,
which prints no queue set (it gets ``line does not fit the REBALANCE_RESULT template``).
``PullRequest.toString()`` and ``MessageQueue.toString()`` print the same in all versions.

Every regular expression here is written for the common subset of Java's ``Pattern`` (classic Spark)
and Rust's ``regex`` (Sail): ``[0-9]`` instead of ``\\d`` (Rust's ``\\d`` is Unicode-wide), ``(?s)``
so ``.`` means the same on both, no look-around, no back-references.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, StringType

from schemas.client_logs import CLIENT_LOG_EVENT_SCHEMA, MESSAGE_QUEUE_TYPE

# The zone the 5.x client's own logback pattern prints its time in, whatever the JVM's zone.
FIVE_X_LOG_ZONE = "GMT+8"
# Same accepted forms as jobs.settings.IngestSettings.client_log_timezone.
_FIXED_OFFSET = re.compile(r"^(?:GMT|UTC|UT)?\s*([+-])([0-9]{1,2})(?::?([0-9]{2}))?$")
_ZERO_OFFSET_NAMES = frozenset({"UTC", "GMT", "UT", "Z"})


def fixed_offset_millis(zone: str) -> int | None:
    """The offset of ``zone`` from UTC in milliseconds when it is a fixed offset, else ``None``.

    Fixed offsets: ``UTC``, ``GMT``, ``Z``, ``GMT+8``, ``UTC+08:00``, ``+08:00``, ``+0800``,
    ``GMT-3``. Anything else (``Asia/Shanghai``) is a region id, left to the engine.
    """
    name = zone.strip()
    if name in _ZERO_OFFSET_NAMES:
        return 0
    match = _FIXED_OFFSET.match(name)
    if not match:
        return None
    sign, hours, minutes = match.group(1), int(match.group(2)), int(match.group(3) or 0)
    if hours > 18 or minutes > 59:
        raise ValueError(f"time zone offset out of range: {zone!r}")
    millis = (hours * 3600 + minutes * 60) * 1000
    return -millis if sign == "-" else millis


def wall_clock_to_utc(col: Column | str, zone: str) -> Column:
    """Turn a naive wall-clock timestamp of ``zone`` into the UTC instant it denotes.

    Assumes the session time zone is UTC (``jobs.engine.COMMON_CONF``), so a naive timestamp's
    epoch value is its wall clock read as UTC. Fixed offsets are subtracted in milliseconds
    (sub-millisecond digits are dropped) because Sail's ``to_utc_timestamp`` accepts only region
    ids, while classic Spark accepts both; region ids go through ``to_utc_timestamp``, which both
    engines resolve alike, DST gaps and overlaps included.
    """
    column = F.col(col) if isinstance(col, str) else col
    offset = fixed_offset_millis(zone)
    if offset is None:
        return F.to_utc_timestamp(column, zone)
    return F.timestamp_millis(F.unix_millis(column) - F.lit(offset))


# --- line layouts ----------------------------------------------------------------------------

# groups: 1 date (yyyy or yy), 2 time, 3 fraction separator, 4 fraction (ms); the rest of the
# line follows the match (``_groups_and_tail``)
_HEADER = (r"(?s)^(?:\[[^\[\]]*\] +)?\[?([0-9]{2}(?:[0-9]{2})?-[0-9]{2}-[0-9]{2})[ T]"
           r"([0-9]{2}:[0-9]{2}:[0-9]{2})(?:([.,])([0-9]{3})[0-9]*)?\]?")
_LEVEL = r"([A-Z]{4,5})"
# the closing group of a pattern that takes the rest of the text ((?s): always matches)
_TAIL = "(.*)$"


@dataclass(frozen=True)
class _Layout:
    """One header shape after the time. ``refs`` name the groups of ``pattern`` that hold
    (level, pid, first token, second token, message), 0 where the shape has none."""

    name: str
    pattern: str
    refs: tuple[int, int, int, int, int]

    @property
    def head(self) -> str | None:
        """``pattern`` without its closing ``(.*)$`` (the message, ``refs``' last group), or
        ``None`` where the message is not simply the rest (cpp)."""
        if not self.pattern.endswith(_TAIL) or self.refs[4] != re.compile(self.pattern).groups:
            return None
        return self.pattern[:-len(_TAIL)]


# Most specific first: the general 4.9 shape would also take the bracketed and 5.x lines. The
# two shapes RocketMQ writes come first, a one-word 4.9 token being the cheap common case.
_LAYOUTS = (
    _Layout("5.x", r"(?s)^ +" + _LEVEL + r" +\[([0-9]{1,9})\] +\[(.*?)\] +"
            r"\[([^\[\]#\s]+)#[^\]]*\] - (.*)$", (1, 2, 3, 4, 5)),
    _Layout("4.9", r"(?s)^ +" + _LEVEL + r" +([^\[{ ][^ ]*) +- (.*)$", (1, 0, 2, 0, 3)),
    _Layout("pipe", r"(?s)^\|" + _LEVEL + r" *\|(?:[^|=]*=[^|]*\|)*([^|=]*)\|([^|:]*?) *"
            r"(?::[0-9]+)? *\|(.*)$", (1, 0, 2, 3, 4)),
    _Layout("thread_first", r"(?s)^ +[\[{](.*?)[\]}] +" + _LEVEL + r" +(.*?) *- (.*)$",
            (2, 0, 1, 3, 4)),
    # second token: [thread] after a [logger], or (File.java:line) after a [thread]
    _Layout("bracketed", r"(?s)^ +" + _LEVEL + r" +\[([^\]]*)\] +(?:\[(.*?)\]|\([^)]*\)) +- (.*)$",
            (1, 0, 2, 3, 4)),
    # the C++ client's spdlog pattern; some builds append " [File.cpp:98 (function)]"
    _Layout("cpp", r"(?s)^ +\[([a-z]+)\] +\[(.*?)\] +- (.*?)(?: \[[^\[\]]*:[0-9]+ \([^()]*\)\])?$",
            (1, 0, 2, 0, 3)),
    _Layout("4.9", r"(?s)^ +" + _LEVEL + r" +(.*?) +- (.*)$", (1, 0, 2, 0, 3)),
)
# The header RocketMQ's own patterns print, "yyyy-MM-dd HH:mm:ss,SSS " (or ".SSS "): _HEADER's
# groups sit at fixed places and are read by substrings (on Sail 3.0 s for the M day's lines
# against 7.2 s captured; issue #19). _HEADER gives the same groups for these lines
# (tests/ingest/test_client_log_heads.py). The same for the 4.9 layout, by a split, was slower.
_PLAIN_HEADER = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}[.,][0-9]{3} "
# The inner logger prints its logger name (RocketmqClient, RocketmqRemoting, ...); a logback
# pattern with %c/%logger prints a dotted class name. Thread names have neither shape.
_LOGGER_NAME = r"^(?:Rocketmq[A-Za-z]*|[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+)$"
_INNER_LOGGER = r"^Rocketmq[A-Za-z]*$"
# %c-%L, %c:%L ("RocketmqClient-95") and %c{1}(%L) ("RocketmqClient(680)", the 3.x log4j pattern)
_LINE_SUFFIX = r"(?:[-:][0-9]+|\([0-9]+\))$"
_CPP_LOCATION = r" \[[^\[\]]*:[0-9]+ \([^()]*\)\]$"
# A template's opening must follow one of these: the rest's start, " - " or "|".
_MESSAGE_START = r"(?s)(?:^ *| - |\|)"

# --- RocketMQ toString forms (facts §0, §5.3) ------------------------------------------------

# Topic names are [%|a-zA-Z0-9_-]+; queue ids are small, so 9 digits always fit an int.
_MQ = r"MessageQueue \[topic=[^,\[\]]*, brokerName=[^,\[\]]*, queueId=-?[0-9]{1,9}\]"
_MQ_PARTS = r"^MessageQueue \[topic=([^,\[\]]*), brokerName=([^,\[\]]*), queueId=(-?[0-9]{1,9})\]$"
_MQ_SET = r"^\[(?:" + _MQ + r"(?:, " + _MQ + r")*)?\]$"
_JAVA_LIST = r"(?s)^\[.*\]$"
# BrokerData.toString: 4.x "BrokerData [brokerName=B, brokerAddrs={0=a, 1=b}]", 5.x adds
# ", enableActingMaster=false"; brokerAddrs is a HashMap<Long, String> (ids ascending).
_BROKER_DATA = r"BrokerData \[brokerName=[^,\[\]]*, brokerAddrs=\{[^{}]*\}"
_BROKER_DATA_PARTS = r"^BrokerData \[brokerName=([^,\[\]]*), brokerAddrs=\{([^{}]*)\}$"
_MASTER_ADDR = r"(?:^|, )0=([^,]*)"
_ROUTE = r"(?s)^TopicRouteData \[.*\]$"
_WHOLE_NUMBER = r"^-?[0-9]{1,19}$"


@dataclass(frozen=True)
class _Template:
    """One RocketMQ log statement: ``opening`` (a regex, unanchored) decides the event and where
    its message starts, ``pattern`` (anchored on that message) takes its values; a line is
    tested against ``opening`` only when it contains one of the ``gates`` (plain substrings).

    ``fields`` maps a raw field (RocketMQ's name for it) to its group in ``pattern``. The groups
    are loose (``.*?``) so that a line whose values are broken still fits and gets a
    ``parse_error`` naming the value, rather than falling back to unmatched.
    """

    event: str
    gates: tuple[str, ...]
    opening: str
    pattern: str
    fields: dict[str, int]


_PULL_REQUEST = (r"pullRequest=PullRequest \[consumerGroup=(.*?), messageQueue=(.*?), "
                 r"nextOffset=(.*?)\], flowControlTimes=(.*)$")
_CACHED = r"so do flow control, minOffset=(.*?), maxOffset=(.*?), count=(.*?), size=(.*?) MiB, "
_FLOW_FIELDS = {"threshold": 1, "minOffset": 2, "maxOffset": 3, "count": 4, "size": 5,
                "consumerGroup": 6, "messageQueue": 7, "nextOffset": 8, "flowControlTimes": 9}

_TEMPLATES = (
    _Template(
        "REBALANCE_RESULT",
        ("rebalanced result changed. allocateMessageQueueStrategyName=",),
        r"(?:client )?rebalanced result changed\. allocateMessageQueueStrategyName=",
        r"(?s)^(?:client )?rebalanced result changed\. allocateMessageQueueStrategyName=(.*?), "
        r"group=(.*?), topic=(.*?), clientId=(.*?), mqAllSize=(.*?), cidAllSize=(.*?), "
        r"rebalanceResultSize=(.*?), rebalanceResultSet=(.*)$",
        {"allocateMessageQueueStrategyName": 1, "group": 2, "topic": 3, "clientId": 4,
         "mqAllSize": 5, "cidAllSize": 6, "rebalanceResultSize": 7, "rebalanceResultSet": 8},
    ),
    _Template(
        "PERSIST_OFFSET",
        ("updateConsumeOffsetToBroker",),
        # 4.x+ opens with [persistAll]; 3.x prints the same without it, only every minute.
        r"(?:\[persistAll\] Group: |Group: [^ ]* ClientId: [^ ]* updateConsumeOffsetToBroker )",
        r"(?s)^(?:\[persistAll\] )?Group: (.*?) ClientId: (.*?) "
        r"updateConsumeOffsetToBroker (.*) ([^ ]*)$",
        {"group": 1, "clientId": 2, "messageQueue": 3, "offset": 4},
    ),
    _Template(
        "FLOW_CONTROL_COUNT",
        ("the cached message count exceeds the threshold ",),
        r"the cached message count exceeds the threshold ",
        r"(?s)^the cached message count exceeds the threshold (.*?), " + _CACHED + _PULL_REQUEST,
        _FLOW_FIELDS,
    ),
    _Template(
        "FLOW_CONTROL_SIZE",
        ("the cached message size exceeds the threshold ",),
        r"the cached message size exceeds the threshold ",
        r"(?s)^the cached message size exceeds the threshold (.*?) MiB, " + _CACHED + _PULL_REQUEST,
        _FLOW_FIELDS,
    ),
    _Template(
        "FLOW_CONTROL_SPAN",
        ("the queue's messages, span too long, so do flow control, ",),
        r"the queue's messages, span too long, so do flow control, ",
        r"(?s)^the queue's messages, span too long, so do flow control, minOffset=(.*?), "
        r"maxOffset=(.*?), maxSpan=(.*?), " + _PULL_REQUEST,
        {"minOffset": 1, "maxOffset": 2, "maxSpan": 3, "consumerGroup": 4, "messageQueue": 5,
         "nextOffset": 6, "flowControlTimes": 7},
    ),
    _Template(
        "NOT_IN_CID_ALL",
        ("[BUG] ConsumerGroup: ",),
        r"\[BUG\] ConsumerGroup: ",
        r"(?s)^\[BUG\] ConsumerGroup: (.*?) The consumerId: (.*?) not in cidAll: (.*)$",
        {"group": 1, "clientId": 2, "cidAll": 3},
    ),
    _Template(
        "SEND_EXPIRE_MSG_BACK",
        ("send expire msg back. ",),
        r"send expire msg back\. ",
        r"(?s)^send expire msg back\. topic=(.*?), msgId=(.*?), storeHost=(.*?), queueId=(.*?), "
        r"queueOffset=(.*)$",
        {"topic": 1, "msgId": 2, "storeHost": 3, "queueId": 4, "queueOffset": 5},
    ),
    # Group names cannot hold a comma, which keeps "add a new mq failed, …, because lock failed"
    # and "truncateMessageQueueNotMyTopic remove unnecessary mq" out; "[BUG]doRebalance, …" has
    # no separator before "doRebalance".
    _Template(
        "MQ_ADDED",
        (", add a new mq, ",),
        r"doRebalance, [^,]*, add a new mq, ",
        r"(?s)^doRebalance, ([^,]*), add a new mq, (.*)$",
        {"group": 1, "messageQueue": 2},
    ),
    _Template(
        "MQ_REMOVED",
        (", remove unnecessary mq, ",),
        r"doRebalance, [^,]*, remove unnecessary mq, ",
        r"(?s)^doRebalance, ([^,]*), remove unnecessary mq, (.*)$",
        {"group": 1, "messageQueue": 2},
    ),
    # Written only when both the hand-back to the broker and its fallback send to %RETRY%<group>
    # failed, once per local retry (facts §10.1); the cause follows on the next lines. 4.x+
    # MessageExt.toString; the topic is the Message part's. brokerName came with 4.x (optional).
    _Template(
        "SEND_BACK_FAILED",
        ("sendMessageBack exception, group: ",),
        r"sendMessageBack exception, group: ",
        r"(?s)^sendMessageBack exception, group: (.*?) msg: MessageExt \[(?:brokerName=(.*?), )?"
        r"queueId=(.*?), storeSize=.*?, queueOffset=(.*?), .*?, storeHost=(.*?), msgId=(.*?), "
        r".*?, reconsumeTimes=(.*?), .*?toString\(\)=Message\{topic='(.*?)', .*$",
        {"group": 1, "brokerName": 2, "queueId": 3, "queueOffset": 4, "storeHost": 5,
         "msgId": 6, "reconsumeTimes": 7, "topic": 8},
    ),
    # MQClientInstance.updateTopicRouteInfoFromNameServer on every route change of a topic the
    # client uses (facts §10); 3.x misspells "old" as "odl". Only the new route is read.
    _Template(
        "ROUTE_CHANGED",
        (" route info changed, o",),
        r"the topic\[[^\]]*\] route info changed, o(?:ld|dl)\[",
        r"(?s)^the topic\[(.*?)\] route info changed, o(?:ld|dl)\[.*\] ?,new\[(.*)\]$",
        {"topic": 1, "newRoute": 2},
    ),
    # DefaultMQPushConsumerImpl.pullMessage's catch; 5.2.0+ names the group and queue (a 5.x
    # slave rejects every pull with [REJECTREQUEST]system busy, printed on the next line).
    _Template(
        "PULL_EXCEPTION",
        ("execute the pull request exception",),
        r"execute the pull request exception",
        r"(?s)^execute the pull request exception(?:, group=([^,]*), messageQueue=(MessageQueue "
        r"\[[^\]]*\]))?.*$",
        {"consumerGroup": 1, "messageQueue": 2},
    ),
    # MQClientInstance.start, once per client instance, 4.x and 5.x alike; the same client's
    # running info carries PROP_CONSUMER_START_TIMESTAMP (epoch ms, a few hundred ms earlier):
    # together they tell the log's zone exactly (jobs.rules.clocks). "… shutdown OK" stays out.
    _Template(
        "CLIENT_STARTED",
        ("the client factory [",),
        r"the client factory \[[^\]]*\] start OK",
        r"(?s)^the client factory \[(.*?)\] start OK.*$",
        {"clientId": 1},
    ),
)

# The typed value of a raw field, by the schema type it lands in.
_INT_FIELDS = ("mqAllSize", "cidAllSize", "rebalanceResultSize", "queueId", "reconsumeTimes")
_LONG_FIELDS = ("offset", "queueOffset", "minOffset", "maxOffset", "count", "size", "threshold",
                "maxSpan", "nextOffset", "flowControlTimes")


def _raw_name(field: str) -> str:
    return f"__raw_{field}"


def _whole_number(col: Column, type_name: str) -> Column:
    """``col`` as ``type_name`` when it is a plain decimal integer that fits, else null.

    The regex gate decides what a number is, not the engine's cast rules: a plain cast of ``4.5``
    gives 4 on classic Spark without ANSI and fails on Sail, and ``try_cast`` takes `` 12`` and
    ``+7``, which RocketMQ never prints.
    """
    return F.when(col.rlike(_WHOLE_NUMBER), col.try_cast(type_name))


def message_queue_struct(text: Column) -> Column:
    """``MessageQueue [topic=t, brokerName=b, queueId=n]`` → struct(topic, broker_name, queue_id),
    null when ``text`` is not of that form. The one reading of the format, for single queues and
    for each queue of a rebalance set."""
    parts = regexp_groups(text, _MQ_PARTS, 3)
    return F.when(parts.isNotNull(), F.struct(
        parts[0].alias("topic"), parts[1].alias("broker_name"),
        parts[2].try_cast("int").alias("queue_id")))


def _by_event(cases: dict[str, Column], data_type: DataType | str) -> Column:
    """The value for the line's ``event``; null (of ``data_type``) for events not in ``cases``."""
    result = F.lit(None).cast(data_type)
    for event, value in reversed(cases.items()):
        result = F.when(F.col("event") == F.lit(event), value).otherwise(result)
    return result


_GROUP_SEP = "\u0001"


def regexp_groups(text: Column, pattern: str, groups: int,
                  refs: Sequence[int] | None = None) -> Column:
    """The ``groups`` capture groups of ``pattern`` (anchored ``^…$``) in ``text`` as an array
    of strings (``""`` for a group that took no part), null when ``text`` does not match.
    ``refs`` picks and orders the groups instead (0 gives ``""``).

    One ``regexp_replace`` rewrites the text into its groups joined by U+0001 and a split takes
    them apart: a ``regexp_extract`` per group would run the regex once per group, which made
    client-log parsing the pipeline's largest cost. A text that holds U+0001 itself is taken
    apart group by group instead, so it cannot shift the fields. ``text`` should be a column,
    not an expression: it is referenced several times.
    """
    picks = list(refs) if refs is not None else list(range(1, groups + 1))
    return F.when(text.rlike(pattern), _groups_of_a_match(text, pattern, picks))


def _groups_and_tail(text: Column, head: str, picks: Sequence[int]) -> Column:
    """``picks`` groups of ``head`` (a ``(?s)^…`` pattern, not anchored at the end) in a ``text``
    known to match it, then the text after the match: what ``_groups_of_a_match`` gives for
    ``head + "(.*)$"`` with that last group picked too, since the tail always matches.

    Only the head is captured: both engines' regex search finds where a match ends before it
    captures groups, and capturing the tail as well made the client-log parse about 40 % slower
    (2.74 s against 3.81 s for 445 k M lines). The replacement puts the groups before the untouched tail."""
    joined = F.regexp_replace(text, head, "".join((f"${i}" if i else "") + _GROUP_SEP
                                                  for i in picks))
    matched = F.regexp_extract(text, head, 0)
    one_by_one = F.array(*[F.regexp_extract(text, head, i) if i else F.lit("") for i in picks],
                         F.substr(text, F.length(matched) + 1))
    return (F.when(text.contains(_GROUP_SEP), one_by_one)
            .otherwise(F.split(joined, _GROUP_SEP, len(picks) + 1)))


def _groups_of_a_match(text: Column, pattern: str, picks: Sequence[int]) -> Column:
    """``regexp_groups`` for a ``text`` known to match ``pattern``."""
    joined = F.regexp_replace(text, pattern, _GROUP_SEP.join(f"${i}" if i else "" for i in picks))
    one_by_one = F.array(*[F.regexp_extract(text, pattern, i) if i else F.lit("")
                           for i in picks])
    return (F.when(text.contains(_GROUP_SEP), one_by_one)
            .otherwise(F.split(joined, _GROUP_SEP, len(picks))))


@dataclass(frozen=True)
class LogZones:
    """The wall-clock zone of each host's client log: ``by_host`` is ``(glob, zone)`` pairs tried
    in order on the landing folder name (``client_logs/date=D/<host>/…``), ``default`` for the
    rest (settings ``ingest.client_log_timezones`` and ``ingest.client_log_timezone``)."""

    default: str
    by_host: tuple[tuple[str, str], ...] = ()


def host_of_source_file(source_file: Column) -> Column:
    """``client_logs/date=D/<host>/…`` → ``<host>`` (null for a file directly in the day folder)."""
    host = F.regexp_extract(source_file, r"^[^/]+/date=[^/]+/([^/]+)/", 1)
    return F.when(host != "", host)


def glob_regex(glob: str) -> str:
    """A shell glob (``*``, ``?``) as an anchored regex both engines read alike: every other
    character is a one-character class, so no escape syntax is involved."""
    parts = []
    for ch in glob:
        if ch == "*":
            parts.append(".*")
        elif ch == "?":
            parts.append(".")
        elif ch.isalnum():
            parts.append(ch)
        elif ch in "]\\^":
            parts.append("\\" + ch)
        else:
            parts.append(f"[{ch}]")
    return "^" + "".join(parts) + "$"


def log_wall_clock_to_utc(col: Column, zones: str | LogZones, source_file: Column) -> Column:
    """:func:`wall_clock_to_utc` with the zone of the line's host (first matching glob)."""
    if isinstance(zones, str):
        return wall_clock_to_utc(col, zones)
    expr = wall_clock_to_utc(col, zones.default)
    host = host_of_source_file(source_file)
    for glob, zone in reversed(zones.by_host):
        expr = F.when(F.coalesce(host.rlike(glob_regex(glob)), F.lit(False)),
                      wall_clock_to_utc(col, zone)).otherwise(expr)
    return expr


def header_groups(line: Column) -> Column:
    """``_HEADER``'s groups (date, time, fraction separator, fraction) and the rest of the line
    after them, as strings; null when the line does not start with a date and time."""
    plain = F.array(F.substring(line, 1, 10), F.substring(line, 12, 8), F.substring(line, 20, 1),
                    F.substring(line, 21, 3), F.substr(line, F.lit(24)))
    return (F.when(line.rlike(_PLAIN_HEADER), plain)
            .when(line.rlike(_HEADER), _groups_and_tail(line, _HEADER, range(1, 5))))


def layout_fields(rest: Column) -> Column:
    """The first layout (``_LAYOUTS``) that fits ``rest``, the line after its time, as
    (name, level, pid, token 1, token 2, message); null when none fits."""
    fields = F.lit(None).cast(ArrayType(StringType()))
    for layout in reversed(_LAYOUTS):
        opening = layout.head
        groups = (_groups_of_a_match(rest, layout.pattern, layout.refs) if opening is None
                  else _groups_and_tail(rest, opening, layout.refs[:4]))
        fields = F.when(rest.rlike(opening or layout.pattern),
                        F.concat(F.array(F.lit(layout.name)), groups)).otherwise(fields)
    return fields


def _thread_and_logger(name: Column, token1_raw: Column, token2_raw: Column) -> tuple[Column, Column]:
    """The thread and logger a layout's two header tokens give (``_LAYOUTS``' refs 3 and 4)."""
    token1, token2 = F.trim(token1_raw), F.trim(token2_raw)
    # a logger printed with its line (_LINE_SUFFIX) is stored without it
    logger1, logger2 = (F.regexp_replace(token1, _LINE_SUFFIX, ""),
                        F.regexp_replace(token2, _LINE_SUFFIX, ""))
    token1_is_logger = logger1.rlike(_LOGGER_NAME)
    # bracketed: [logger] [thread] or [thread] (File.java:n); 4.9: one token, either kind
    thread = (F.when(name.isin("5.x", "pipe", "thread_first", "cpp"), token1_raw)
              .when(name == "bracketed", F.when((token2 != "") & token1_is_logger, token2_raw)
                    .otherwise(token1_raw))
              .when((name == "4.9") & ~token1_is_logger,
                    F.regexp_replace(token1, r"^\[(.*)\]$", "$1")))
    logger = (F.when(name.isin("5.x", "pipe"), token2)
              .when(name == "thread_first", logger2)
              .when(name == "bracketed", F.when(token2 == "", F.lit(None))
                    .when(token1_is_logger, logger1).otherwise(logger2))
              .when((name == "4.9") & token1_is_logger, logger1))
    return F.when(thread != "", thread), F.when(logger != "", logger)


def _line_ts(name: Column, date: Column, time: Column, separator: Column, fraction: Column,
             token1_raw: Column, zone: str | LogZones) -> Column:
    """The UTC instant of a line's header: ``date`` (yyyy or yy), ``time``, the fraction and its
    separator as printed, and the layout's first token (the 4.x inner logger's ``,sss``)."""
    # 3.x "yy-MM-dd": RocketMQ is younger than 2000
    date = F.when(F.length(date) == 8, F.concat(F.lit("20"), date)).otherwise(date)
    # Every caller's regex holds date and time to digits in that shape, where a cast reads the
    # same instants and nulls as the strict pattern on both engines
    # (tests/test_time_parsing.py), at a third of the pattern's cost on Sail (RESULTS.md, s. 22)
    wall = F.concat(date, F.lit(" "), time).try_cast("timestamp")
    seconds = F.substring(time, 7, 2)
    # token1 as printed: the inner logger writes no line number, so "RocketmqClient(680)"
    # (the 3.x log4j pattern, real ,SSS milliseconds) is never taken for it
    seconds_again = F.when(
        (name == "4.9") & (separator == ",") & (fraction == F.concat(F.lit("0"), seconds)),
        F.trim(token1_raw).rlike(_INNER_LOGGER)).otherwise(F.lit(False))
    millis = F.when((fraction == "") | seconds_again, F.lit(0)).otherwise(
        fraction.try_cast("long"))
    local = F.timestamp_millis(F.unix_millis(wall) + millis)
    return (F.when(name == "5.x", wall_clock_to_utc(local, FIVE_X_LOG_ZONE))
            .otherwise(log_wall_clock_to_utc(local, zone, F.col("_source_file"))))


def _with_header(zone: str | LogZones, keep_columns: tuple[str, ...]):
    """Header fields of each line. Each projection computes what the next one reads as a column,
    so every regex runs once per line (neither engine reliably shares repeated expressions)."""
    def transform(df: DataFrame) -> DataFrame:
        passthrough = ["_source_file", "_line_no", *keep_columns]
        line, head, rest = F.col("_line"), F.col("_head"), F.col("_rest")
        dated = head.isNotNull()

        f = F.col("_fields")
        name = f[0]
        thread, logger = _thread_and_logger(name, f[3], f[4])
        return (
            df.select(*passthrough, F.regexp_replace(F.col("line"), r"[\r\n]+$", "").alias("_line"))
            .select(*passthrough, "_line", header_groups(line).alias("_head"))
            .select(*passthrough, "_head", F.when(dated, head[4]).otherwise(line).alias("_rest"))
            .select(*passthrough, "_head", "_rest", F.when(dated, layout_fields(rest))
                    .alias("_fields"))
            .select(
                *passthrough,
                # the text templates are looked for in, without a trailer after the message
                F.when(name == "cpp", F.regexp_replace(rest, _CPP_LOCATION, "")).otherwise(rest)
                .alias("_rest"),
                dated.alias("_dated"),
                _line_ts(name, head[0], head[1], head[2], head[3], f[3], zone).alias("ts"),
                F.upper(f[1]).alias("level"),
                thread.alias("thread"),
                logger.alias("logger"),
                F.when(name == "5.x", f[2].try_cast("int")).alias("pid"),
                F.when(dated, F.coalesce(name, F.lit("other"))).alias("log_layout"),
                F.when(dated, F.coalesce(f[5], F.ltrim(rest))).alias("_layout_message"),
            )
        )
    return transform


def message_from(rest: Column, opening: str) -> Column:
    """The text of ``rest`` from its first ``opening`` that follows a header separator
    (``_MESSAGE_START``) on, for a ``rest`` known to hold one. The text up to the opening is
    replaced by the opening itself: only that much is captured (see ``_groups_and_tail``)."""
    return F.regexp_replace(rest, "(?s)^.*?" + _MESSAGE_START + "(" + opening + ")", "$1")


def _with_event(df: DataFrame) -> DataFrame:
    """``event`` and ``message``: the first template whose opening follows a header separator in
    the rest of the line, and the text from that opening on. Lines that contain none of a
    template's gates skip its regex."""
    rest = F.col("_rest")
    event = F.lit(None).cast("string")
    for template in reversed(_TEMPLATES):
        gated = functools.reduce(lambda a, b: a | b, [rest.contains(g) for g in template.gates])
        # nested, not `&`: the regex is evaluated only where a gate matched
        matches = F.when(gated, rest.rlike(_MESSAGE_START + template.opening)).otherwise(False)
        event = F.when(matches, F.lit(template.event)).otherwise(event)
    message = _by_event({t.event: message_from(rest, t.opening) for t in _TEMPLATES}, "string")
    with_event = df.withColumn("event", event)
    return (with_event.withColumn("message", F.coalesce(message, F.col("_layout_message")))
            .drop("_layout_message"))


def _with_raw_fields(df: DataFrame) -> DataFrame:
    """One string column per RocketMQ field name, taken with the pattern of the line's event.

    A field is null when the line's event does not print it or the line does not fit the pattern.
    The pattern runs once per line (``regexp_groups``); the fields are read off its groups.
    """
    message = F.col("message")

    def template_groups(t: _Template) -> Column:
        # Split only, without regexp_groups' group-by-group fallback: a message holding U+0001
        # does not fit its template (the ingest quarantines such a line as binary_data anyway,
        # file_integrity.CONTROL_CHARS). One regexp_extract per group of every template made
        # classic Spark's generated projection outgrow the JVM's 64 KB method limit.
        n = re.compile(t.pattern).groups
        joined = F.regexp_replace(message, t.pattern, _GROUP_SEP.join(f"${i}" for i in range(1, n + 1)))
        return F.when(~message.contains(_GROUP_SEP) & message.rlike(t.pattern),
                      F.split(joined, _GROUP_SEP, n))

    groups = _by_event({t.event: template_groups(t) for t in _TEMPLATES}, ArrayType(StringType()))
    fields = sorted({name for template in _TEMPLATES for name in template.fields})
    raw = [_by_event({t.event: F.col("__groups")[t.fields[name] - 1]
                      for t in _TEMPLATES if name in t.fields}, "string").alias(_raw_name(name))
           for name in fields]
    fits = F.when(F.col("event").isNotNull(), F.col("__groups").isNotNull())
    return (df.select("*", groups.alias("__groups"))
            .select(*df.columns, fits.alias("__fits"), *raw))


# Fields inside an optional part of their template: "" when the part is absent, read as null.
_OPTIONAL_FIELDS = {"SEND_BACK_FAILED": ("brokerName",),
                    "PULL_EXCEPTION": ("consumerGroup", "messageQueue")}


def route_brokers(route: Column) -> Column:
    """The ``BrokerData`` entries of a ``TopicRouteData`` text as (broker_name, master_addr):
    ``master_addr`` is the ``0=`` address, null when the group has no master in the route."""
    def entry(text: Column) -> Column:
        addrs = F.regexp_extract(text, _BROKER_DATA_PARTS, 2)
        master = F.regexp_extract(addrs, _MASTER_ADDR, 1)
        return F.struct(F.regexp_extract(text, _BROKER_DATA_PARTS, 1).alias("broker_name"),
                        F.when(master != "", master).alias("master_addr"))
    return F.transform(F.regexp_extract_all(route, F.lit(_BROKER_DATA), 0), entry)


def _typed_fields(df: DataFrame) -> DataFrame:
    for event, names in _OPTIONAL_FIELDS.items():
        for name in names:
            column = F.col(_raw_name(name))
            df = df.withColumn(_raw_name(name), F.when(
                (F.col("event") == event) & (column == ""), F.lit(None).cast("string"))
                .otherwise(column))

    def raw(name: str) -> Column:
        return F.col(_raw_name(name))

    # First projection: every number and the single queue once, as columns the second reads.
    numbers = {name: _whole_number(raw(name), "int") for name in _INT_FIELDS}
    numbers.update({name: _whole_number(raw(name), "long") for name in _LONG_FIELDS})
    df = df.select("*", *[v.alias(f"__num_{k}") for k, v in numbers.items()],
                   message_queue_struct(raw("messageQueue")).alias("__mq"))
    typed = {name: F.col(f"__num_{name}") for name in numbers}

    single_mq_ok = F.col("__mq").isNotNull()
    single_mq = F.when(single_mq_ok, F.array(F.col("__mq")))
    mq_set_ok = raw("rebalanceResultSet").rlike(_MQ_SET)
    mq_set = F.when(mq_set_ok, F.transform(
        F.regexp_extract_all(raw("rebalanceResultSet"), F.lit(_MQ), 0), message_queue_struct))
    expire_mq = F.when(typed["queueId"].isNotNull(), F.array(F.struct(
        raw("topic").alias("topic"),
        F.lit(None).cast("string").alias("broker_name"),
        typed["queueId"].alias("queue_id"),
    )))
    send_back_mq = F.when(typed["queueId"].isNotNull(), F.array(F.struct(
        raw("topic").alias("topic"), raw("brokerName").alias("broker_name"),
        typed["queueId"].alias("queue_id"))))
    route_ok = raw("newRoute").rlike(_ROUTE)
    brokers = F.when(route_ok, route_brokers(raw("newRoute")))
    cid_all_ok = raw("cidAll").rlike(_JAVA_LIST)
    # "[a, b]" → [a, b]; "[]" → [] (split gives one empty element, dropped by the filter).
    cid_all = F.when(cid_all_ok, F.filter(
        F.split(F.regexp_extract(raw("cidAll"), r"(?s)^\[(.*)\]$", 1), ", "),
        lambda cid: cid != ""))

    single_queue_events = ("PERSIST_OFFSET", "FLOW_CONTROL_COUNT", "FLOW_CONTROL_SIZE",
                           "FLOW_CONTROL_SPAN", "MQ_ADDED", "MQ_REMOVED")
    queues = _by_event({"REBALANCE_RESULT": mq_set,
                        **{event: single_mq for event in single_queue_events},
                        "PULL_EXCEPTION": single_mq, "SEND_EXPIRE_MSG_BACK": expire_mq,
                        "SEND_BACK_FAILED": send_back_mq}, ArrayType(MESSAGE_QUEUE_TYPE))
    topic = _by_event({"REBALANCE_RESULT": raw("topic"), "SEND_EXPIRE_MSG_BACK": raw("topic"),
                       "SEND_BACK_FAILED": raw("topic"), "ROUTE_CHANGED": raw("topic"),
                       "PULL_EXCEPTION": F.element_at(single_mq, 1).getField("topic"),
                       **{event: F.element_at(single_mq, 1).getField("topic")
                          for event in single_queue_events}}, "string")
    group = F.coalesce(raw("group"), raw("consumerGroup"))
    offset = F.coalesce(typed["offset"], typed["queueOffset"])

    def failed(name: str) -> Column:
        return raw(name).isNotNull() & typed[name].isNull()

    # A raw field is non-null only on lines of an event that prints it, so one check per name.
    numeric_names = dict.fromkeys(name for template in _TEMPLATES for name in template.fields
                                  if name in typed)
    reasons = [(~F.col("__fits"), F.concat(F.lit("line does not fit the "), F.col("event"),
                                           F.lit(" template")))]
    reasons += [(failed(name), F.lit(f"non-numeric {name}")) for name in numeric_names]
    reasons += [
        (raw("rebalanceResultSet").isNotNull() & ~mq_set_ok, F.lit("malformed MessageQueue set")),
        (raw("messageQueue").isNotNull() & ~single_mq_ok, F.lit("malformed MessageQueue")),
        (raw("cidAll").isNotNull() & ~cid_all_ok, F.lit("malformed cidAll list")),
        (raw("newRoute").isNotNull() & ~route_ok, F.lit("malformed route")),
    ]
    parse_error = F.when(F.col("event").isNotNull(), F.coalesce(
        F.when(~F.col("_dated"), F.lit("no date and time at the start of the line")),
        F.when(F.col("ts").isNull(), F.lit("invalid timestamp")),
        *[F.when(condition, reason) for condition, reason in reasons],
    ))

    return df.select(
        "*",
        group.alias("group"),
        raw("clientId").alias("client_id"),
        topic.alias("topic"),
        raw("allocateMessageQueueStrategyName").alias("strategy"),
        typed["mqAllSize"].alias("mq_all_size"),
        typed["cidAllSize"].alias("cid_all_size"),
        typed["rebalanceResultSize"].alias("rebalance_result_size"),
        queues.alias("queues"),
        offset.alias("offset"),
        typed["minOffset"].alias("min_offset"),
        typed["maxOffset"].alias("max_offset"),
        typed["count"].alias("cached_count"),
        typed["size"].alias("cached_size_mib"),
        typed["threshold"].alias("threshold"),
        typed["maxSpan"].alias("max_span"),
        typed["nextOffset"].alias("next_offset"),
        typed["flowControlTimes"].alias("flow_control_times"),
        cid_all.alias("cid_all"),
        raw("msgId").alias("msg_id"),
        raw("storeHost").alias("store_host"),
        typed["reconsumeTimes"].alias("reconsume_times"),
        brokers.alias("route_brokers"),
        parse_error.alias("parse_error"),
    )


# --- the persist and flow-control lines, read by their words -------------------------------

# Nine lines in ten of a client log are [persistAll] lines (one per queue every 5 s) in RocketMQ's
# own 4.9 or 5.x layout; a consumer holding pulls back for a backlog adds a flow-control line
# every 1,000 times (a counter of the consumer's, across its queues: facts §5.3). A line of
# exactly one of these shapes (values in the characters RocketMQ's names take, so that no value
# holds a space or a separator) is read by its words; the general reading gives the same values
# for it (tests/ingest/test_client_log_fast_path.py).
# ``\z``: Java's ``$`` also matches before a final U+0085 or U+2028, which the general reading
# takes as part of the last value.
_FAST_HEAD = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}[.,][0-9]{3} [A-Z]{4,5} {1,2}"
    r"(?:[A-Za-z0-9_.$-]+|"
    r"\[[0-9]{1,9}\] \[[A-Za-z0-9_.-]+\] \[[A-Za-z0-9_.$]+#[A-Za-z0-9_$:<>]*\])"
)
_FAST_MQ = (r"MessageQueue \[topic=[%|A-Za-z0-9_-]+, brokerName=[A-Za-z0-9_.-]+, "
            r"queueId=-?[0-9]{1,9}\]")
_FAST_LONG = r"-?[0-9]{1,18}"  # always fits a long: no "non-numeric" on the general way
_PERSIST_TAIL = (
    r" - \[persistAll\] Group: [%|A-Za-z0-9_-]+ ClientId: [A-Za-z0-9_.:@#%|-]+ "
    r"updateConsumeOffsetToBroker " + _FAST_MQ + " " + _FAST_LONG + r"\z"
)
# DefaultMQPushConsumerImpl.pullMessage, the cached-count case (FLOW_CONTROL_COUNT)
_FLOW_COUNT_OPENING = " - the cached message count exceeds the threshold "
_FLOW_COUNT_TAIL = (
    _FLOW_COUNT_OPENING + _FAST_LONG + r", so do flow control, minOffset=" + _FAST_LONG
    + ", maxOffset=" + _FAST_LONG + ", count=" + _FAST_LONG + ", size=" + _FAST_LONG
    + r" MiB, pullRequest=PullRequest \[consumerGroup=[%|A-Za-z0-9_-]+, messageQueue=" + _FAST_MQ
    + ", nextOffset=" + _FAST_LONG + r"\], flowControlTimes=" + _FAST_LONG + r"\z"
)
_PERSIST_LINE = _FAST_HEAD + _PERSIST_TAIL
_FLOW_COUNT_LINE = _FAST_HEAD + _FLOW_COUNT_TAIL
_FAST_LINE = _FAST_HEAD + "(?:" + _PERSIST_TAIL + "|" + _FLOW_COUNT_TAIL + ")"  # either shape


def _parse_fast_lines(lines_df: DataFrame, zone: str | LogZones,
                      keep: tuple[str, ...]) -> DataFrame:
    """``parse_client_log_lines`` for ``_PERSIST_LINE``s and ``_FLOW_COUNT_LINE``s, read off the
    line's words; thread, logger and time go through the general reading's own rules
    (``_thread_and_logger``, ``_line_ts``).

    Each word is cut out by itself (``substring_index``) into a column of its own, read by the
    projection after: splitting the whole line into an array of its words was about half of the
    path's cost on Sail beyond reading the lines (RESULTS.md, session 22). Both kinds are read in
    one pass over the lines, a pass of their own costing a read of every line; so what both print
    is read the same way for both — the header's tokens are the last words before the message's
    opening, the queue the text after its ``topic=``, ``brokerName=`` and ``queueId=`` — and only
    the values one kind alone prints are cut out of that kind's lines (RESULTS.md, session 23:
    choosing between two readings of every value cost more than it saved)."""
    line = F.col("line")
    flow = F.col("_flow")
    # the columns the first projection cuts out, by name: the second reads them
    cut: dict[str, Column] = {}

    def at(name: str, text: Column) -> Column:
        cut.setdefault(name, text)
        return F.col(name)

    def word(index: int, of: Column = line) -> Column:
        # the index-th word (counted from the end when < 0): the text up to the index-th space,
        # then its last word (the text from the index-th space from the end, then its first)
        upto = F.substring_index(of, " ", index)
        return F.substring_index(upto, " ", -1 if index > 0 else 1)

    def after(marker: str, end: str) -> Column:
        """The text between the line's only ``marker`` and the next ``end``."""
        return F.substring_index(F.substring_index(line, marker, -1), end, 1)

    def inner(text: Column, left: int, right: int = 1) -> Column:
        return F.substr(text, F.lit(left + 1), F.length(text) - left - right)

    # the message opens at " - [persistAll] " or " - the cached message count …": one of the two
    opening = F.greatest(F.instr(line, " - [persistAll] "), F.instr(line, _FLOW_COUNT_OPENING))
    head = F.substr(line, F.lit(1), opening - 1)  # date, time, level and the layout's tokens
    last = {index: at(f"_h{-index}", word(index, head)) for index in (-1, -2, -3)}
    is_5x = last[-1].startswith("[")  # the 4.9 token never starts with "["
    name = F.when(is_5x, F.lit("5.x")).otherwise(F.lit("4.9"))
    # 5.x: [pid] [thread] [logger#method:line]; 4.9: one token, a thread or a logger
    token1 = F.when(is_5x, inner(last[-2], 1)).otherwise(last[-1])
    token2 = F.when(is_5x, F.substr(last[-1], F.lit(2), F.instr(last[-1], "#") - 2)
                    ).otherwise("")
    thread, logger = _thread_and_logger(name, token1, token2)
    stamp = at("_w2", word(2))
    ts = _line_ts(name, at("_w1", word(1)), F.substring(stamp, 1, 8), F.substring(stamp, 9, 1),
                  F.substring(stamp, 10, 3), token1, zone)
    # the queue from its three values, not message_queue_struct's regex: the strict line already
    # holds it to that form, and the regex over every persist line is what this path avoids
    topic = at("_topic", after("MessageQueue [topic=", ","))
    queue = F.struct(topic.alias("topic"),
                     at("_broker", after(", brokerName=", ",")).alias("broker_name"),
                     at("_queue_id", after(", queueId=", "]")).try_cast("int").alias("queue_id"))
    last_word = at("_w_last1", word(-1))

    def flow_number(index: int, field: str, right: int = 1) -> Column:
        """``field=N`` (then ``right`` characters) at word ``index`` of a flow-control line."""
        text = last_word if index == -1 else at(f"_f{-index}", F.when(flow, word(index)))
        return F.when(flow, inner(text, len(field) + 1, right).try_cast("long"))

    values = {
        "ts": ts,
        "event": F.when(flow, F.lit("FLOW_CONTROL_COUNT")).otherwise(F.lit("PERSIST_OFFSET")),
        "level": at("_w3", word(3)),
        "thread": thread,
        "logger": logger,
        "pid": F.when(is_5x, inner(last[-3], 1).try_cast("int")),
        "log_layout": name,
        "group": F.when(flow, at("_flow_group", F.when(flow, after("[consumerGroup=", ","))))
        .otherwise(at("_persist_group", F.when(~flow, after(" Group: ", " ")))),
        "client_id": at("_client_id", F.when(~flow, after(" ClientId: ", " "))),
        "topic": topic,
        "queues": F.array(queue),
        "offset": F.when(~flow, last_word.try_cast("long")),
        "threshold": F.when(flow, inner(at("_f18", F.when(flow, word(-18))), 0).try_cast("long")),
        "min_offset": flow_number(-13, "minOffset"),
        "max_offset": flow_number(-12, "maxOffset"),
        "cached_count": flow_number(-11, "count"),
        "cached_size_mib": flow_number(-10, "size", 0),
        "next_offset": flow_number(-2, "nextOffset", 2),
        "flow_control_times": flow_number(-1, "flowControlTimes", 0),
        "message": F.substr(line, opening + len(" - ")),
    }
    columns = dict.fromkeys(("_source_file", "_line_no", "line", *keep))
    parsed = (lines_df.select(*columns, line.contains(_FLOW_COUNT_OPENING).alias("_flow"))
              .select(*columns, "_flow", *[text.alias(name) for name, text in cut.items()])
              .select("_source_file", "_line_no", *keep,
                      *[value.alias(name) for name, value in values.items()]))
    return parsed.select(*[
        F.col(field.name).cast(field.dataType) if field.name in parsed.columns
        else F.when(F.col("ts").isNull(), F.lit("invalid timestamp")).alias(field.name)
        if field.name == "parse_error" else F.lit(None).cast(field.dataType).alias(field.name)
        for field in CLIENT_LOG_EVENT_SCHEMA], *keep)


def parse_client_log_lines(lines_df: DataFrame, zone: str | LogZones, *,
                           keep_columns: Sequence[str] = (), fast_path: bool = True) -> DataFrame:
    """Parse raw client-log lines into one ``CLIENT_LOG_EVENT_SCHEMA`` row per line.

    Input columns: ``_source_file`` string, ``_line_no`` long, ``line`` string (the raw line, CR
    and LF endings allowed). ``zone`` is the zone of the logs' wall clock (``GMT+8`` by default,
    setting ``ingest.client_log_timezone``), or a :class:`LogZones` giving it per host (setting
    ``ingest.client_log_timezones``, read off ``_source_file``).

    ``event`` is null for a line that matches no template: other RocketMQ lines, stack-trace
    continuations, blank and null lines; the caller counts those (DESIGN.md §3.4). ``ts``,
    ``log_layout`` and ``message`` are still set whenever the line starts with a date and time.
    A line that matched a template but whose values cannot be read keeps its event and gets a
    short ``parse_error`` (``no date and time at the start of the line`` — a template in a layout
    without a date, whose day cannot be known —, ``invalid timestamp``, ``line does not fit the
    <EVENT> template``, ``non-numeric <field>``, ``malformed MessageQueue set``,
    ``malformed MessageQueue``, ``malformed cidAll list``).

    Column notes: ``thread`` and ``logger`` come from the header where its ``log_layout`` gives
    them (a 4.9 line carries one of the two); ``logger`` is the 5.x ``%logger{12}`` without
    ``#method:line``, and a padded logger name without its padding. ``message`` of a template line
    starts at the template's opening. ``queues`` is the
    rebalance set, or the one queue of a persist / flow-control / add / remove line, with ``topic``
    taken from that queue. ``send expire msg back`` prints no broker name (``store_host`` is the
    store's address), so its queue is ``(topic, null, queueId)``; its ``topic`` is the message's,
    which for a redelivered message is the original topic the client restored
    (``resetRetryAndNamespace``) while ``queueId``/``queueOffset`` are of the ``%RETRY%`` queue.
    ``offset`` is the persisted offset or the expired message's ``queueOffset``.

    ``keep_columns`` names input columns to carry through unchanged after the schema's columns
    (e.g. ``line`` for a quarantine's ``raw``), which saves a join back on the line key.

    The ``[persistAll]`` and cached-count flow-control lines of RocketMQ's own layouts are read by
    their words (``_parse_fast_lines``); ``fast_path=False`` reads them the general way too (for
    tests that compare the two).
    """
    keep = tuple(keep_columns)
    clashes = sorted(set(keep) & set(CLIENT_LOG_EVENT_SCHEMA.fieldNames()))
    if clashes:
        raise ValueError(f"keep_columns may not name output columns: {', '.join(clashes)}")
    if not fast_path:
        return _parse_general(lines_df, zone, keep)
    # Two reads of the lines, the fast kinds and the rest: a CASE between the fast and the
    # general reading of each value cost more on Sail than the second read, and one projection
    # holding both readings outgrew classic Spark's 64 KB limit on a generated method.
    is_fast = F.coalesce(F.col("line").rlike(_FAST_LINE), F.lit(False))
    fast = _parse_fast_lines(lines_df.where(is_fast), zone, keep)
    return _parse_general(lines_df.where(~is_fast), zone, keep).unionByName(fast)


def _parse_general(lines_df: DataFrame, zone: str | LogZones,
                   keep: tuple[str, ...]) -> DataFrame:
    return (
        lines_df
        .transform(_with_header(zone, keep))
        .transform(_with_event)
        .transform(_with_raw_fields)
        .transform(_typed_fields)
        .select(*[F.col(field.name).cast(field.dataType) for field in CLIENT_LOG_EVENT_SCHEMA],
                *keep)
    )
