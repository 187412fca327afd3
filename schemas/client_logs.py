"""Schema of the events parsed from raw ``rocketmq_client.log`` lines (DESIGN.md §3.4).

One row per input line. Columns carry RocketMQ's own names (facts §0, §2.2, §2.3, §5.3) and are
null where an event does not print the field; ``event`` is null for a line that matches no template.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

# `MessageQueue [topic=<t>, brokerName=<b>, queueId=<n>]` (facts §0).
MESSAGE_QUEUE_TYPE = StructType([
    StructField("topic", StringType()),
    StructField("broker_name", StringType()),
    StructField("queue_id", IntegerType()),
])

# One broker group of a `the topic[T] route info changed` line's new route: `BrokerData
# [brokerName=B, brokerAddrs={0=master, 1=slave}]`; `master_addr` is the `0=` address, null when
# the route lists the group without a master (facts §10, DESIGN.md §5.3).
ROUTE_BROKER_TYPE = StructType([
    StructField("broker_name", StringType()),
    StructField("master_addr", StringType()),
])

CLIENT_LOG_EVENTS = (
    "REBALANCE_RESULT",
    "PERSIST_OFFSET",
    "FLOW_CONTROL_COUNT",
    "FLOW_CONTROL_SIZE",
    "FLOW_CONTROL_SPAN",
    "NOT_IN_CID_ALL",
    "SEND_EXPIRE_MSG_BACK",
    "MQ_ADDED",
    "MQ_REMOVED",
    "SEND_BACK_FAILED",
    "ROUTE_CHANGED",
    "PULL_EXCEPTION",
    "CLIENT_STARTED",
)

# The header shape after the time (jobs.ingest.client_logs); "other" for a dated line of none.
LOG_LAYOUTS = ("4.9", "5.x", "bracketed", "thread_first", "pipe", "cpp", "other")

CLIENT_LOG_EVENT_SCHEMA = StructType([
    StructField("_source_file", StringType()),
    StructField("_line_no", LongType()),
    StructField("ts", TimestampType()),  # UTC
    StructField("event", StringType()),  # one of CLIENT_LOG_EVENTS, null when unmatched
    StructField("level", StringType()),
    StructField("thread", StringType()),
    StructField("logger", StringType()),
    StructField("pid", IntegerType()),
    StructField("log_layout", StringType()),  # one of LOG_LAYOUTS, null when undated
    StructField("group", StringType()),
    StructField("client_id", StringType()),
    StructField("topic", StringType()),
    StructField("strategy", StringType()),  # allocateMessageQueueStrategyName
    StructField("mq_all_size", IntegerType()),
    StructField("cid_all_size", IntegerType()),
    StructField("rebalance_result_size", IntegerType()),
    StructField("queues", ArrayType(MESSAGE_QUEUE_TYPE)),
    StructField("offset", LongType()),
    StructField("min_offset", LongType()),
    StructField("max_offset", LongType()),
    StructField("cached_count", LongType()),
    StructField("cached_size_mib", LongType()),
    StructField("threshold", LongType()),
    StructField("max_span", LongType()),
    StructField("next_offset", LongType()),
    StructField("flow_control_times", LongType()),
    StructField("cid_all", ArrayType(StringType())),
    StructField("msg_id", StringType()),
    StructField("store_host", StringType()),
    StructField("reconsume_times", IntegerType()),  # SEND_BACK_FAILED: the local retry count
    StructField("route_brokers", ArrayType(ROUTE_BROKER_TYPE)),  # ROUTE_CHANGED: the new route
    StructField("message", StringType()),
    StructField("parse_error", StringType()),
])
