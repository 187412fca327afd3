"""Where ``producer.send(msg, selector, key)`` puts a message: a pure-Python reference (DESIGN.md §7.1).

Modelled on the client source of the three tags the vectors name (``rocketmq-facts.md`` §7,
``vectors/README.md``), read, not copied:
- the publish list is ``MQClientInstance.topicRouteData2TopicPublishInfo``: with a non-empty
  ``orderTopicConf`` exactly its ``broker:count`` items (Java ``split``, ``Integer.parseInt`` and
  their exceptions, which reach the caller unwrapped); else the queue datas sorted by broker name in
  Java ``String`` order (UTF-16 code units, stable), writable ones only (``perm & 2``), the first
  BrokerData of the same name, which must list a master (broker id 0), ``writeQueueNums`` queues each;
- an empty list is ``MQClientException("No route info for this topic, <topic>")``;
- ``SelectMessageQueueByHash`` over the whole list (no latency-fault or availability filter on
  this path), with Java's ``hashCode`` of the key's class; before 4.8.0 ``abs`` came before ``%``,
  so a hash of ``Integer.MIN_VALUE`` indexes a negative position unless the size divides 2^31;
- what ``select`` throws becomes ``MQClientException("select message queue throwed|threw
  exception.", cause)``; a null answer (``SelectMessageQueueByMachineRoom``, a stub)
  ``MQClientException("select message queue return null.")``.
``MQClientException`` messages carry the FAQ line of the client version (``FAQUrl.attachDefaultURL``).
The publish list is kept as (broker, count) segments, so a conf such as ``broker-a:2147483647``
answers without building two billion queues.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from jobs.replay.reference import java_split

MQ_CLIENT_EXCEPTION = "org.apache.rocketmq.client.exception.MQClientException"
NFE = "java.lang.NumberFormatException"
AIOOBE = "java.lang.ArrayIndexOutOfBoundsException"
IOOBE = "java.lang.IndexOutOfBoundsException"
# Not a Java class: a selector this replay does not model (e.g. RANDOM, whose answer is random).
UNSUPPORTED_SELECTOR = "rocketlens.UnsupportedSelector"

SELECTORS = ("HASH", "MACHINE_ROOM")
KEY_TYPES = ("String", "Long", "Integer")
PERM_WRITE = 1 << 1
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1

# The client version decides the selector's arithmetic and the error texts (vectors/README.md).
DEFAULT_CLIENT_VERSION = "V4_9_7"
SELECTOR_FIX_VERSION = (4, 8, 0)    # commit 0b600484b5: "%" before "abs"; 5002de07b6: "threw"
NEW_FAQ_URL_VERSION = (5, 1, 0)     # commits 7cbdad378e, 65737a0d0e
OLD_FAQ_URL = "http://rocketmq.apache.org/docs/faq/"
NEW_FAQ_URL = "https://rocketmq.apache.org/docs/bestPractice/06FAQ"
FAQ_TIP_BEGIN = "\nSee "            # a message that already has a tip gets no URL line

_VERSION = re.compile(r"^[Vv]?([0-9]+)[._]([0-9]+)[._]([0-9]+)")


class SendError(Exception):
    """What ``send()`` throws: the Java class, ``getMessage()`` and the optional cause (class, message)."""

    def __init__(self, java_class: str, message: str, cause: tuple[str, str] | None = None):
        super().__init__(f"{java_class}: {message}")
        self.java_class, self.message, self.cause = java_class, message, cause

    def as_json(self) -> dict:
        error: dict[str, object] = {"class": self.java_class, "message": self.message}
        if self.cause is not None:
            error["cause"] = {"class": self.cause[0], "message": self.cause[1]}
        return error


def parse_client_version(text: str | None) -> tuple[int, int, int]:
    """``V4_7_1`` (``MQVersion.Version`` name) or ``4.7.1`` → (4, 7, 1); a suffix such as
    ``_SNAPSHOT`` is ignored. ValueError when it names no version."""
    match = _VERSION.match((text or DEFAULT_CLIENT_VERSION).strip())
    if not match:
        raise ValueError(f"client version {text!r} is not like V4_9_7 or 4.9.7")
    return tuple(int(part) for part in match.groups())  # type: ignore[return-value]


def mq_client_exception(text: str, version: tuple[int, int, int],
                        cause: tuple[str, str] | None = None) -> SendError:
    """``new MQClientException(text, cause)``: ``getMessage()`` is the text plus the FAQ line."""
    url = NEW_FAQ_URL if version >= NEW_FAQ_URL_VERSION else OLD_FAQ_URL
    message = text if FAQ_TIP_BEGIN in text else f"{text}\nFor more information, please visit the url, {url}"
    return SendError(MQ_CLIENT_EXCEPTION, message, cause)


# --- Java's hashCode ------------------------------------------------------------------------------

def to_int32(value: int) -> int:
    """Java ``(int)`` of a long: the low 32 bits, two's complement."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value > INT_MAX else value


def java_string_hash(text: str) -> int:
    """``String.hashCode``: ``s[0]*31^(n-1) + …`` over UTF-16 code units, int overflow.
    A lone surrogate (possible in a Java string and in JSON) is one unit, as in Java."""
    data = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return to_int32(h)


def java_long_hash(value: int) -> int:
    """``Long.hashCode``: ``(int)(v ^ (v >>> 32))``."""
    unsigned = value & 0xFFFFFFFFFFFFFFFF
    return to_int32(unsigned ^ (unsigned >> 32))


def parse_key(key_type: str, value) -> object:
    """The key as the Java object it stands for; ValueError when it cannot be one."""
    if key_type == "String":
        if not isinstance(value, str):
            raise ValueError(f"a String key must be text, got {value!r}")
        return value
    if key_type not in ("Long", "Integer"):
        raise ValueError(f"key type {key_type!r} is not one of {', '.join(KEY_TYPES)}")
    text = str(value).strip()
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ValueError(f"{key_type} key {value!r} is not a decimal integer")
    number = int(text)
    low, high = (LONG_MIN, LONG_MAX) if key_type == "Long" else (INT_MIN, INT_MAX)
    if not low <= number <= high:
        raise ValueError(f"{key_type} key {value!r} is out of range [{low}, {high}]")
    return number


def key_hash(key_type: str, value) -> int:
    """``arg.hashCode()`` of a ``String``, ``Long`` or ``Integer`` key."""
    key = parse_key(key_type, value)
    if key_type == "String":
        return java_string_hash(key)  # type: ignore[arg-type]
    if key_type == "Long":
        return java_long_hash(key)  # type: ignore[arg-type]
    return key  # type: ignore[return-value]


# --- Java's parseInt (split is jobs.replay.reference.java_split) ------------------------------------

def _java_digit(unit: str) -> int:
    """``Character.digit(char, 10)``: the value of a decimal digit (Unicode Nd) in the BMP, else -1;
    a surrogate code unit is no digit."""
    if len(unit) != 1 or ord(unit) > 0xFFFF or 0xD800 <= ord(unit) <= 0xDFFF:
        return -1
    return unicodedata.decimal(unit, -1)


def java_parse_int(text: str) -> int:
    """``Integer.parseInt(text)``: an optional ``+``/``-`` and decimal digits (any Unicode Nd),
    in int range; no spaces, no ``_``. Else ``NumberFormatException`` with JDK 17's text."""
    def fail() -> SendError:
        return SendError(NFE, f'For input string: "{text}"')

    units = text.encode("utf-16-be", "surrogatepass")
    chars = [units[i:i + 2].decode("utf-16-be", "surrogatepass") for i in range(0, len(units), 2)]
    if not chars:
        raise fail()
    sign, start = 1, 0
    if chars[0] in "+-":
        sign, start = (-1 if chars[0] == "-" else 1), 1
        if len(chars) == 1:
            raise fail()
    value = 0
    for unit in chars[start:]:
        digit = _java_digit(unit)
        if digit < 0:
            raise fail()
        value = value * 10 + digit
        if value > -INT_MIN:
            raise fail()
    value *= sign
    if not INT_MIN <= value <= INT_MAX:
        raise fail()
    return value


# --- the route and the publish list ---------------------------------------------------------------

@dataclass(frozen=True)
class QueueData:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int


@dataclass(frozen=True)
class BrokerData:
    broker_name: str
    broker_ids: tuple[int, ...]  # the keys of brokerAddrs; 0 is the master (MixAll.MASTER_ID)


@dataclass(frozen=True)
class TopicRoute:
    queue_datas: tuple[QueueData, ...] = ()
    broker_datas: tuple[BrokerData, ...] = ()
    order_topic_conf: str | None = None

    def without_masters(self, brokers) -> TopicRoute:
        """The route the name server answers while these brokers' masters are down: their
        BrokerData keeps the slaves only (facts §10), everything else unchanged."""
        down = set(brokers)
        return TopicRoute(self.queue_datas, tuple(
            BrokerData(bd.broker_name, tuple(i for i in bd.broker_ids if i != 0)) if bd.broker_name in down else bd
            for bd in self.broker_datas), self.order_topic_conf)


@dataclass(frozen=True)
class PublishList:
    """``TopicPublishInfo.messageQueueList`` as (broker, queue count) segments, in list order."""

    segments: tuple[tuple[str, int], ...] = field(default_factory=tuple)
    order_topic: bool = False

    @property
    def size(self) -> int:
        return sum(count for _, count in self.segments)

    def queue_at(self, index: int) -> tuple[str, int]:
        """``messageQueueList.get(index)`` as (broker_name, queue_id), for 0 <= index < size."""
        for broker, count in self.segments:
            if index < count:
                return broker, index
            index -= count
        raise IndexError(index)

    def queues(self) -> list[tuple[str, int]]:
        return [(broker, q) for broker, count in self.segments for q in range(count)]


def java_string_key(text: str) -> bytes:
    """A sort key that orders like ``String.compareTo`` (UTF-16 code units)."""
    return text.encode("utf-16-be", "surrogatepass")


def publish_list(route: TopicRoute) -> PublishList:
    """``topicRouteData2TopicPublishInfo`` (module docstring). Raises the unwrapped JDK exception
    (``NumberFormatException``, ``ArrayIndexOutOfBoundsException``) of a malformed orderTopicConf."""
    conf = route.order_topic_conf
    if conf:
        segments = []
        for broker in java_split(conf, ";"):
            item = java_split(broker, ":")
            if len(item) < 2:
                raise SendError(AIOOBE, f"Index 1 out of bounds for length {len(item)}")
            count = java_parse_int(item[1])
            if count > 0:
                segments.append((item[0], count))
        return PublishList(tuple(segments), order_topic=True)
    segments = []
    for qd in sorted(route.queue_datas, key=lambda qd: java_string_key(qd.broker_name)):  # stable
        if qd.perm & PERM_WRITE != PERM_WRITE:
            continue
        broker_data = next((bd for bd in route.broker_datas if bd.broker_name == qd.broker_name), None)
        if broker_data is None or 0 not in broker_data.broker_ids:
            continue
        if qd.write_queue_nums > 0:
            segments.append((qd.broker_name, qd.write_queue_nums))
    return PublishList(tuple(segments), order_topic=False)


# --- the selector and the send path ---------------------------------------------------------------

def hash_index(h: int, size: int, version: tuple[int, int, int]) -> int:
    """``SelectMessageQueueByHash``'s index with Java's truncating ``%``; may be negative before 4.8.0."""
    def java_rem(a: int, b: int) -> int:
        return abs(a) % b * (1 if a >= 0 else -1)

    if version >= SELECTOR_FIX_VERSION:
        return abs(java_rem(h, size))
    if h < 0:
        h = to_int32(abs(h))  # Math.abs(Integer.MIN_VALUE) is Integer.MIN_VALUE
    return java_rem(h, size)


def select_queue(topic: str, route: TopicRoute, key_type: str, key_value, client_version: str | None = None,
                 selector: str = "HASH") -> tuple[str, int]:
    """The (broker_name, queue_id) that ``send(msg, selector, key)`` sends to, or SendError."""
    version = parse_client_version(client_version)
    publish = publish_list(route)
    size = publish.size
    if size == 0:
        raise mq_client_exception(f"No route info for this topic, {topic}", version)
    select_text = "select message queue threw exception." if version >= SELECTOR_FIX_VERSION \
        else "select message queue throwed exception."
    if selector == "MACHINE_ROOM":  # SelectMessageQueueByMachineRoom is a stub: it returns null
        raise mq_client_exception("select message queue return null.", version)
    if selector != "HASH":
        raise SendError(UNSUPPORTED_SELECTOR, f"no replay for selector {selector}")
    index = hash_index(key_hash(key_type, key_value), size, version)
    if index < 0:
        raise mq_client_exception(select_text, version,
                                  cause=(IOOBE, f"Index {index} out of bounds for length {size}"))
    return publish.queue_at(index)


def broker_unreachable(route: TopicRoute, broker_name: str, version: tuple[int, int, int]) -> SendError | None:
    """``sendKernelImpl``'s check after selecting: the client's broker address table (the route's
    BrokerDatas put in order, so the last of a name wins) must give the broker's master, else
    ``MQClientException("The broker[B] not exist")``. Only an ``orderTopicConf`` list can hold
    such a broker (a master going down leaves its slaves in the route, facts §10)."""
    ids = None
    for bd in route.broker_datas:
        if bd.broker_name == broker_name:
            ids = bd.broker_ids
    if ids and 0 in ids:
        return None
    return mq_client_exception(f"The broker[{broker_name}] not exist", version)


# --- routes from JSON -----------------------------------------------------------------------------

def _broker_id(key) -> int:
    text = str(key).strip()
    if not re.fullmatch(r"-?[0-9]+", text):
        raise ValueError(f"broker id {key!r} in brokerAddrs is not a number")
    return int(text)


def _int_field(record: dict, snake: str, camel: str) -> int:
    value = record.get(snake, record.get(camel))
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{camel} {value!r} is not an integer")
    return value


def route_from_json(record: dict) -> TopicRoute:
    """A ``TopicRouteData`` from the vectors' snake_case or ``mqadmin topicRoute``'s camelCase JSON.
    ValueError names the first field that is missing or of the wrong type."""
    if not isinstance(record, dict):
        raise ValueError("a route is a JSON object with queueDatas and brokerDatas")
    queue_list = record.get("queue_datas", record.get("queueDatas"))
    broker_list = record.get("broker_datas", record.get("brokerDatas"))
    if not isinstance(queue_list, list) or not isinstance(broker_list, list):
        raise ValueError("a route needs the lists queueDatas and brokerDatas")
    conf = record.get("order_topic_conf", record.get("orderTopicConf"))
    if conf is not None and not isinstance(conf, str):
        raise ValueError(f"orderTopicConf {conf!r} is not a string")
    mapping = record.get("topicQueueMappingByBroker") or record.get("topic_queue_mapping_by_broker")
    if mapping and conf is None:
        raise ValueError("a static topic (topicQueueMappingByBroker) is not replayed")
    queue_datas = []
    for qd in queue_list:
        name = qd.get("broker_name", qd.get("brokerName")) if isinstance(qd, dict) else None
        if not isinstance(name, str):
            raise ValueError(f"queue data {qd!r} has no brokerName")
        queue_datas.append(QueueData(name,
                                     _int_field(qd, "read_queue_nums", "readQueueNums"),
                                     _int_field(qd, "write_queue_nums", "writeQueueNums"),
                                     _int_field(qd, "perm", "perm")))
    broker_datas = []
    for bd in broker_list:
        name = bd.get("broker_name", bd.get("brokerName")) if isinstance(bd, dict) else None
        addrs = bd.get("broker_addrs", bd.get("brokerAddrs")) if isinstance(bd, dict) else None
        if not isinstance(name, str) or not isinstance(addrs, dict):
            raise ValueError(f"broker data {bd!r} needs brokerName and brokerAddrs")
        broker_datas.append(BrokerData(name, tuple(_broker_id(k) for k in addrs)))
    return TopicRoute(tuple(queue_datas), tuple(broker_datas), conf)
