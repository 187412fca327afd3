"""Producer queue selection as Spark SQL: where ``send(msg, selector, key)`` puts a message (DESIGN.md §7.1).

The same rules as :mod:`jobs.replay.producer_reference` (read its docstring for the RocketMQ
source behind each), as column functions over one row per send:
- ``topic``, ``selector`` (``HASH``; ``MACHINE_ROOM`` is the stub that returns null),
  ``client_version`` (``V4_7_1`` or ``4.7.1``; null = ``DEFAULT_CLIENT_VERSION``),
  ``key_type`` (``String``, ``Long``, ``Integer``), ``key_value`` (the String, or decimal text),
- ``route``: ``ROUTE_TYPE`` — ``order_topic_conf``, ``queue_datas`` and ``broker_datas`` with the
  broker ids of ``brokerAddrs`` as numbers (0 = master); an array, not a map, as Sail cannot
  explode maps and nothing here needs the addresses.
Adds ``broker_name``, ``queue_id`` and ``error_class``, ``error_message``, ``error_cause_class``,
``error_cause_message`` (null without an error). No Python worker: hashing runs over the UTF-16
code units of ``encode(key, 'UTF-16BE')`` in an ``aggregate``, and the publish list stays a short
array of (broker, count) segments, so an ``orderTopicConf`` with a huge count costs nothing.
"""

from __future__ import annotations

import re
import unicodedata

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, IntegerType, LongType, StringType, StructField, StructType

from jobs.replay.producer_reference import (
    AIOOBE,
    DEFAULT_CLIENT_VERSION,
    FAQ_TIP_BEGIN,
    IOOBE,
    MQ_CLIENT_EXCEPTION,
    NEW_FAQ_URL,
    NEW_FAQ_URL_VERSION,
    NFE,
    OLD_FAQ_URL,
    PERM_WRITE,
    SELECTOR_FIX_VERSION,
    UNSUPPORTED_SELECTOR,
)
from jobs.replay.spark_replay import java_string_order

QUEUE_DATA_TYPE = StructType([
    StructField("broker_name", StringType()),
    StructField("read_queue_nums", IntegerType()),
    StructField("write_queue_nums", IntegerType()),
    StructField("perm", IntegerType()),
])
BROKER_DATA_TYPE = StructType([
    StructField("broker_name", StringType()),
    StructField("broker_ids", ArrayType(LongType())),
])
ROUTE_TYPE = StructType([
    StructField("order_topic_conf", StringType()),
    StructField("queue_datas", ArrayType(QUEUE_DATA_TYPE)),
    StructField("broker_datas", ArrayType(BROKER_DATA_TYPE)),
])
SEGMENT_TYPE = StructType([
    StructField("broker_name", StringType()),
    StructField("count", LongType()),
    StructField("error_class", StringType()),
    StructField("error_message", StringType()),
])
RESULT_COLUMNS = ("broker_name", "queue_id", "error_class", "error_message", "error_cause_class",
                  "error_cause_message")
TWO_32 = 1 << 32
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


def _version_number(version: tuple[int, int, int]) -> int:
    return version[0] * 1_000_000 + version[1] * 1_000 + version[2]


def client_version_number(client_version: Column) -> Column:
    """``V4_7_1`` / ``4.7.1`` as 4007001, so versions compare as numbers; null or unreadable = the
    default (callers validate versions first, :func:`jobs.replay.producer_reference.parse_client_version`)."""
    pattern = r"^[Vv]?([0-9]+)[._]([0-9]+)[._]([0-9]+)"
    text = F.when(client_version.rlike(pattern), client_version).otherwise(F.lit(DEFAULT_CLIENT_VERSION))
    part = [F.regexp_extract(text, pattern, n).cast("long") for n in (1, 2, 3)]
    return part[0] * 1_000_000 + part[1] * 1_000 + part[2]


# --- Java's hashCode ------------------------------------------------------------------------------

def to_int32(value: Column) -> Column:
    """Java ``(int)`` of a long in [0, 2^32): values from 2^31 wrap to negative (ANSI-safe)."""
    low = F.pmod(value, F.lit(TWO_32))
    return F.when(low > INT_MAX, low - TWO_32).otherwise(low).cast("int")


def java_string_hash(text: Column) -> Column:
    """``String.hashCode`` over UTF-16 code units (4 hex digits each), kept in [0, 2^32)."""
    hexed = F.hex(F.encode(text, "UTF-16BE"))
    units = (F.length(hexed) / 4).cast("int")
    total = F.aggregate(
        F.sequence(F.lit(1), F.greatest(units, F.lit(1))), F.lit(0).cast("long"),
        lambda acc, i: F.when(i <= units, F.pmod(
            acc * 31 + F.conv(hexed.substr((i - 1) * 4 + 1, F.lit(4)), 16, 10).cast("long"),
            F.lit(TWO_32))).otherwise(acc))
    return F.when(text.isNotNull(), to_int32(total))


def java_long_hash(value: Column) -> Column:
    """``Long.hashCode``: ``(int)(v ^ (v >>> 32))``; the low 32 bits of ``v >> 32`` are the same."""
    return to_int32(value.bitwiseXOR(F.shiftright(value, 32)).bitwiseAND(F.lit(TWO_32 - 1)))


def key_hash(key_type: Column, key_value: Column) -> Column:
    """``arg.hashCode()`` of the key's Java class; null for a key that is not its type."""
    is_number = key_value.rlike(r"^[+-]?[0-9]{1,19}$")
    as_long = F.when(is_number, key_value.cast("decimal(20,0)"))
    long_ok = as_long.between(-(1 << 63), (1 << 63) - 1)
    return (F.when(key_type == "String", java_string_hash(key_value))
            .when((key_type == "Long") & long_ok, java_long_hash(as_long.cast("long")))
            .when((key_type == "Integer") & as_long.between(INT_MIN, INT_MAX), as_long.cast("int")))


# --- Java's split and parseInt --------------------------------------------------------------------

def java_split(text: Column, separator: str) -> Column:
    """``text.split(separator)`` (one literal character): no match keeps ``[text]``; else trailing
    empty strings go, a leading one stays."""
    parts = F.split(text, re.escape(separator), -1)
    last_kept = F.array_max(F.transform(parts, lambda part, i: F.when(part != "", i + 1).otherwise(0)))
    return F.when(F.size(parts) == 1, parts).otherwise(F.slice(parts, 1, last_kept))


def _bmp_decimal_digits() -> tuple[str, str]:
    """Every BMP character that ``Character.digit(ch, 10)`` reads as a digit other than 0-9, and
    its value: Java's ``parseInt`` accepts any Unicode Nd digit (a surrogate is none)."""
    src, dst = [], []
    for code in range(0x80, 0x10000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        value = unicodedata.decimal(chr(code), -1)
        if value >= 0:
            src.append(chr(code))
            dst.append(str(value))
    return "".join(src), "".join(dst)


_DIGITS_FROM, _DIGITS_TO = _bmp_decimal_digits()


def java_parse_int(text: Column) -> Column:
    """``Integer.parseInt``: the int, or null where Java throws ``NumberFormatException``."""
    ascii_text = F.translate(text, _DIGITS_FROM, _DIGITS_TO)
    significant = F.regexp_replace(F.regexp_replace(ascii_text, "^[+-]", ""), "^0+", "")
    fits = ascii_text.rlike("^[+-]?[0-9]+$") & (F.length(significant) <= 10)
    magnitude = F.when(fits, F.concat(F.lit("0"), significant).cast("long"))
    value = F.when(ascii_text.startswith("-"), -magnitude).otherwise(magnitude)
    return F.when(value.between(INT_MIN, INT_MAX), value.cast("int"))


# --- the publish list -----------------------------------------------------------------------------

def _segment(broker: Column, count: Column, error_class: Column | None = None,
             error_message: Column | None = None) -> Column:
    return F.struct(broker.alias("broker_name"), count.cast("long").alias("count"),
                    (error_class if error_class is not None else F.lit(None)).alias("error_class"),
                    (error_message if error_message is not None else F.lit(None)).alias("error_message"),
                    ).cast(SEGMENT_TYPE)


def order_conf_segments(conf: Column) -> Column:
    """The publish list of ``orderTopicConf``: per ``;`` part, ``item = part.split(":")``,
    ``Integer.parseInt(item[1])`` queues of ``item[0]``; a part that throws carries the error."""
    def part_segment(part: Column) -> Column:
        item = java_split(part, ":")
        count_text = F.try_element_at(item, F.lit(2))
        count = java_parse_int(count_text)
        error_class = (F.when(F.size(item) < 2, F.lit(AIOOBE)).when(count.isNull(), F.lit(NFE)))
        error_message = (F.when(F.size(item) < 2, F.format_string("Index 1 out of bounds for length %d", F.size(item)))
                         .when(count.isNull(), F.concat(F.lit('For input string: "'), count_text, F.lit('"'))))
        return _segment(F.element_at(item, 1), F.greatest(F.coalesce(count, F.lit(0)), F.lit(0)),
                        error_class, error_message)
    return F.transform(java_split(conf, ";"), part_segment)


def route_segments(queue_datas: Column, broker_datas: Column) -> Column:
    """The publish list without ``orderTopicConf``: queue datas in Java String order of broker
    name (stable), write bit set, first BrokerData of the name listing broker id 0, ``writeQueueNums``."""
    keyed = F.transform(F.coalesce(queue_datas, F.array().cast(ArrayType(QUEUE_DATA_TYPE))),
                        lambda qd, i: F.struct(java_string_order(qd["broker_name"]).alias("k"),
                                               i.alias("i"), qd.alias("qd")))
    ordered = F.transform(F.array_sort(keyed), lambda k: k["qd"])

    def has_master(qd: Column) -> Column:
        first = F.try_element_at(
            F.filter(F.coalesce(broker_datas, F.array().cast(ArrayType(BROKER_DATA_TYPE))),
                     lambda bd: bd["broker_name"] == qd["broker_name"]), F.lit(1))
        return F.coalesce(F.array_contains(first["broker_ids"], F.lit(0).cast("long")), F.lit(False))

    sendable = F.filter(ordered, lambda qd: (qd["perm"].bitwiseAND(F.lit(PERM_WRITE)) == PERM_WRITE)
                        & has_master(qd))
    return F.transform(sendable, lambda qd: _segment(qd["broker_name"], F.greatest(qd["write_queue_nums"], F.lit(0))))


def publish_segments(route: Column) -> Column:
    """``topicRouteData2TopicPublishInfo`` as ``array<SEGMENT_TYPE>``: orderTopicConf when set and
    not empty, else the queue datas. A segment with ``error_class`` is where Java threw."""
    conf = route["order_topic_conf"]
    return F.when(conf.isNotNull() & (F.length(conf) > 0), order_conf_segments(conf)).otherwise(
        route_segments(route["queue_datas"], route["broker_datas"]))


# --- the send path --------------------------------------------------------------------------------

def _mq_client_exception(text: Column, version: Column) -> Column:
    url = F.when(version >= _version_number(NEW_FAQ_URL_VERSION), F.lit(NEW_FAQ_URL)).otherwise(F.lit(OLD_FAQ_URL))
    return F.when(F.instr(text, FAQ_TIP_BEGIN) > 0, text).otherwise(
        F.concat(text, F.lit("\nFor more information, please visit the url, "), url))


def hash_index(h: Column, size: Column, version: Column) -> Column:
    """SelectMessageQueueByHash's index (Spark's ``%`` truncates like Java's); 4.8.0+:
    ``|h % n|``; before: ``abs`` first, which leaves Integer.MIN_VALUE negative."""
    h = h.cast("long")
    size = F.when(size > 0, size)  # no "% 0" under ANSI: an empty list fails before selecting
    fixed = F.abs(h % size)
    old = F.when(h == INT_MIN, h % size).otherwise(F.abs(h) % size)
    return F.when(version >= _version_number(SELECTOR_FIX_VERSION), fixed).otherwise(old)


def with_publish_queue(df: DataFrame) -> DataFrame:
    """Add the queue each row's send goes to, or the exception it throws (module docstring)."""
    version = client_version_number(F.col("client_version"))
    segments = F.col("_segments")
    good = F.filter(segments, lambda s: s["error_class"].isNull() & (s["count"] > 0))
    first_error = F.try_element_at(F.filter(segments, lambda s: s["error_class"].isNotNull()), F.lit(1))
    size = F.aggregate(good, F.lit(0).cast("long"), lambda acc, s: acc + s["count"])
    index = hash_index(key_hash(F.col("key_type"), F.col("key_value")), F.col("_size"), F.col("_version"))
    placed = F.transform(F.col("_good"), lambda s, i: F.struct(
        s["broker_name"].alias("broker_name"), s["count"].alias("count"),
        F.aggregate(F.filter(F.col("_good"), lambda _, j: j < i), F.lit(0).cast("long"),
                    lambda acc, t: acc + t["count"]).alias("start")))
    chosen = F.try_element_at(F.filter(placed, lambda p: (p["start"] <= F.col("_index"))
                                       & (F.col("_index") < p["start"] + p["count"])), F.lit(1))
    select_text = F.when(F.col("_version") >= _version_number(SELECTOR_FIX_VERSION),
                         F.lit("select message queue threw exception.")).otherwise(
                             F.lit("select message queue throwed exception."))
    selector = F.coalesce(F.col("selector"), F.lit("HASH"))
    no_route = F.concat(F.lit("No route info for this topic, "), F.col("topic"))
    error = (F.when(F.col("_error").isNotNull(), F.struct(F.col("_error.error_class").alias("c"),
                                                          F.col("_error.error_message").alias("m")))
             .when(F.col("_size") == 0, F.struct(F.lit(MQ_CLIENT_EXCEPTION).alias("c"),
                                                 _mq_client_exception(no_route, F.col("_version")).alias("m")))
             .when(selector == "MACHINE_ROOM", F.struct(
                 F.lit(MQ_CLIENT_EXCEPTION).alias("c"),
                 _mq_client_exception(F.lit("select message queue return null."), F.col("_version")).alias("m")))
             .when(selector != "HASH", F.struct(F.lit(UNSUPPORTED_SELECTOR).alias("c"),
                                                F.concat(F.lit("no replay for selector "), selector).alias("m")))
             .when(F.col("_index") < 0, F.struct(F.lit(MQ_CLIENT_EXCEPTION).alias("c"),
                                                 _mq_client_exception(select_text, F.col("_version")).alias("m"))))
    cause = F.when(F.col("_error").isNull() & (F.col("_size") > 0) & (selector == "HASH") & (F.col("_index") < 0),
                   F.struct(F.lit(IOOBE).alias("c"),
                            F.format_string("Index %d out of bounds for length %d", F.col("_index"),
                                            F.col("_size")).alias("m")))
    columns = [c for c in df.columns if c not in RESULT_COLUMNS]
    return (df
            .withColumn("_version", version)
            .withColumn("_segments", publish_segments(F.col("route")))
            .withColumn("_error", first_error)
            .withColumn("_good", good)
            .withColumn("_size", size)
            .withColumn("_index", index)
            .withColumn("_chosen", chosen)
            .withColumn("_failure", error)
            .withColumn("_cause", cause)
            .select(*columns,
                    F.when(F.col("_failure").isNull(), F.col("_chosen.broker_name")).alias("broker_name"),
                    F.when(F.col("_failure").isNull(), (F.col("_index") - F.col("_chosen.start")).cast("int"))
                    .alias("queue_id"),
                    F.col("_failure.c").alias("error_class"), F.col("_failure.m").alias("error_message"),
                    F.col("_cause.c").alias("error_cause_class"), F.col("_cause.m").alias("error_cause_message")))
