"""Landing-zone record schemas (DESIGN.md §3): what ``from_json`` parses each source line with.

``ts`` is read as text because it comes either as epoch milliseconds (a JSON number) or as an
ISO-8601 string; :func:`jobs.ingest.records.with_record_ts` turns it into a UTC timestamp.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)


def _fields(*pairs) -> StructType:
    return StructType([StructField(name, dtype, True) for name, dtype in pairs])


MESSAGE_QUEUE = _fields(("topic", StringType()), ("broker_name", StringType()),
                        ("queue_id", IntegerType()))

SUBSCRIPTION = _fields(
    ("topic", StringType()),
    ("sub_string", StringType()),
    ("expression_type", StringType()),
    ("tags", ArrayType(StringType())),
    ("sub_version", LongType()),
)

PROCESS_QUEUE_INFO = _fields(
    ("topic", StringType()),
    ("broker_name", StringType()),
    ("queue_id", IntegerType()),
    ("commit_offset", LongType()),
    ("cached_msg_min_offset", LongType()),
    ("cached_msg_max_offset", LongType()),
    ("cached_msg_count", LongType()),
    ("cached_msg_size_mib", LongType()),
    ("transaction_msg_min_offset", LongType()),
    ("transaction_msg_max_offset", LongType()),
    ("transaction_msg_count", LongType()),
    ("locked", BooleanType()),
    ("try_unlock_times", LongType()),
    ("last_lock_timestamp", LongType()),
    ("dropped", BooleanType()),
    ("last_pull_timestamp", LongType()),
    ("last_consume_timestamp", LongType()),
)

CONSUME_STATUS = _fields(
    ("topic", StringType()),
    ("pull_rt", DoubleType()),
    ("pull_tps", DoubleType()),
    ("consume_rt", DoubleType()),
    ("consume_ok_tps", DoubleType()),
    ("consume_failed_tps", DoubleType()),
    ("consume_failed_msgs", LongType()),
)


@dataclass(frozen=True)
class JsonSource:
    """One JSON-Lines landing source: its folder name, record schema and validation rules."""

    name: str
    schema: StructType
    required: tuple[str, ...]
    non_negative: tuple[str, ...] = ()
    # field -> allowed values (RocketMQ enum names); anything else is quarantined.
    enums: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(self.schema.fieldNames())

    @property
    def parse_schema(self) -> StructType:
        """``schema`` with every int widened to long: what lines are parsed with before a
        ``try_cast`` to ``schema``. Sail's ``from_json`` wraps an int that overflows 32 bits
        (``"queue_id": 9999999999`` → 1410065407) where Spark gives null; parsing as long and
        casting gives null (a ``wrong_type``) on both."""
        return _widen_ints(self.schema)


def _widen_ints(dtype):
    if isinstance(dtype, IntegerType):
        return LongType()
    if isinstance(dtype, StructType):
        return StructType([StructField(f.name, _widen_ints(f.dataType), f.nullable)
                           for f in dtype.fields])
    if isinstance(dtype, ArrayType):
        return ArrayType(_widen_ints(dtype.elementType), dtype.containsNull)
    if isinstance(dtype, MapType):
        return MapType(dtype.keyType, _widen_ints(dtype.valueType), dtype.valueContainsNull)
    return dtype


OFFSETS = JsonSource(
    name="offsets",
    schema=_fields(
        ("ts", StringType()),
        ("cluster", StringType()),
        ("group", StringType()),
        ("topic", StringType()),
        ("broker_name", StringType()),
        ("queue_id", IntegerType()),
        ("broker_offset", LongType()),
        ("consumer_offset", LongType()),
        ("pull_offset", LongType()),
        ("last_timestamp", LongType()),
        ("client_ip", StringType()),
        ("broker_id", LongType()),
        ("min_offset", LongType()),
    ),
    required=("ts", "cluster", "group", "topic", "broker_name", "queue_id", "broker_offset",
              "consumer_offset"),
    non_negative=("broker_offset", "consumer_offset", "pull_offset", "min_offset"),
)

CONNECTIONS = JsonSource(
    name="connections",
    schema=_fields(
        ("ts", StringType()),
        ("cluster", StringType()),
        ("group", StringType()),
        ("client_id", StringType()),
        ("client_addr", StringType()),
        ("broker_name", StringType()),
        ("broker_addr", StringType()),
        ("language", StringType()),
        ("version", StringType()),
        ("consume_type", StringType()),
        ("message_model", StringType()),
        ("consume_from_where", StringType()),
        ("last_update_timestamp", LongType()),
        ("subscriptions", ArrayType(SUBSCRIPTION)),
    ),
    required=("ts", "cluster", "group", "client_id", "client_addr"),
    enums=(
        ("consume_type", ("CONSUME_PASSIVELY", "CONSUME_ACTIVELY", "CONSUME_POP")),
        ("message_model", ("CLUSTERING", "BROADCASTING")),
    ),
)

RUNNING_INFO = JsonSource(
    name="running_info",
    schema=_fields(
        ("ts", StringType()),
        ("cluster", StringType()),
        ("group", StringType()),
        ("client_id", StringType()),
        ("properties", MapType(StringType(), StringType())),
        ("subscriptions", ArrayType(SUBSCRIPTION)),
        ("mq_table", ArrayType(PROCESS_QUEUE_INFO)),
        ("status_table", ArrayType(CONSUME_STATUS)),
    ),
    required=("ts", "cluster", "group", "client_id", "mq_table"),
)

JSON_SOURCES = (OFFSETS, CONNECTIONS, RUNNING_INFO)
CLIENT_LOGS = "client_logs"
ALL_SOURCES = tuple(s.name for s in JSON_SOURCES) + (CLIENT_LOGS,)
