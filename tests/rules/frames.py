"""Hand-built silver frames for the rule tests (both engines)."""

import datetime as dt

from jobs.rules.claims import QUEUE_KEY

T0 = dt.datetime(2025, 11, 21, 10, 0, 0)
DAY = T0.date()

OFFSETS_SCHEMA = ("cluster string, group string, topic string, broker_name string, queue_id int, "
                  "ts timestamp, lag long, broker_offset long, consumer_offset long, "
                  "prev_ts timestamp, broker_offset_delta long, consumer_offset_delta long, "
                  "owner_ip string, broker_reports_no_owner boolean, is_retry_topic boolean, "
                  "date date")
OWNERSHIP_SCHEMA = ("cluster string, group string, client_id string, topic string, "
                    "broker_name string, queue_id int, source string, valid_from timestamp, "
                    "valid_until timestamp, date date")
MEMBERS_SCHEMA = ("cluster string, group string, ts timestamp, client_id string, processes int, "
                  "running_processes int")


def at(minute, second=0.0):
    return T0 + dt.timedelta(minutes=minute, seconds=second)


def epoch_ms(ts):
    """A naive UTC timestamp of the tests as epoch milliseconds (last_update_timestamp)."""
    return int(ts.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)


def snapshots(queue_id, minutes, *, advance=10, client_ip=None, lag=50, group="g"):
    """One offsets row per minute; the committed offset moves ``advance`` per snapshot
    (``client_ip``: what ``consumerProgress -s`` printed, 'N/A', an IP or None)."""
    rows = []
    for i, m in enumerate(minutes):
        co = 1000 + advance * i
        rows.append(("c", group, "t", "b", queue_id, at(m), lag, co + lag, co,
                     None if i == 0 else at(minutes[i - 1]),
                     None if i == 0 else 10, None if i == 0 else advance,
                     None if client_ip in (None, "N/A") else client_ip,
                     None if client_ip is None else client_ip == "N/A", False, DAY))
    return rows


def with_prev_ts(df, keys=QUEUE_KEY, previous_day=False):
    """A hand-built silver.queue_offsets or queue_state frame with ``prev_ts``, the key's
    snapshot before, as silver.queue_offsets computes it. ``previous_day``: each key's first row
    follows a snapshot of the previous day, as silver has it over the day and its look-back,
    which the frame (one day, as gold reads it) does not hold; else its ``prev_ts`` is null."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    before = F.lag("ts").over(Window.partitionBy(*keys).orderBy("ts"))
    if previous_day:
        before = F.coalesce(before, F.col("ts") - F.expr("INTERVAL 1 DAY"))
    return df.withColumn("prev_ts", before)


def claim(client_id, queue_id, source, start, end=None, group="g"):
    return ("c", group, client_id, "t", "b", queue_id, source, start, end, DAY)


def connected(client_id, minutes, processes=1, group="g", running=None):
    """silver.group_members rows: ``processes`` channels listed, ``running`` of them (default:
    all) run at once."""
    running = processes if running is None else running
    return [("c", group, at(m, 5), client_id, processes, running) for m in minutes]


def queue_state_of(spark, offsets, claims, members, window=90, gap=300, round_seconds=30):
    """silver.queue_state over hand-built offsets, claims and connection rows, with the live
    members per snapshot as the pipeline stores them in silver.member_context."""
    from jobs.rules.liveness import live_processes
    from jobs.silver.queue_state import build_queue_state

    offsets_df = spark.createDataFrame(offsets, OFFSETS_SCHEMA)
    members_df = spark.createDataFrame(members, MEMBERS_SCHEMA)
    live = live_processes(offsets_df.select("cluster", "group", "ts").distinct(), members_df,
                          window)
    return build_queue_state(offsets_df, spark.createDataFrame(claims, OWNERSHIP_SCHEMA),
                             members_df, live, window, gap, round_seconds)


# The stuck detector's silver inputs in full (jobs/silver/process_queues.py, client_config.py,
# consume_status.py; bronze client_log_events): a test builds the columns it sets and ``widen``
# adds the others as nulls, which is what a snapshot without them gives.
PROCESS_QUEUES_SCHEMA = (
    "cluster string, group string, client_id string, ts timestamp, topic string, "
    "broker_name string, queue_id int, commit_offset long, cached_msg_min_offset long, "
    "cached_msg_max_offset long, cached_msg_count long, cached_msg_size_mib long, "
    "transaction_msg_min_offset long, transaction_msg_max_offset long, "
    "transaction_msg_count long, locked boolean, try_unlock_times long, dropped boolean, "
    "last_lock_at timestamp, last_pull_at timestamp, last_consume_at timestamp, date date")
CLIENT_CONFIG_SCHEMA = (
    "cluster string, group string, client_id string, ts timestamp, strategy string, "
    "strategy_class string, consume_concurrently_max_span long, consume_timeout_minutes long, "
    "pull_threshold_for_queue long, pull_threshold_size_for_queue_mib long, "
    "message_model string, consume_type string, is_orderly boolean, client_version string, "
    "consumer_started_at timestamp, date date")
CONSUME_STATUS_SCHEMA = (
    "cluster string, group string, client_id string, ts timestamp, topic string, "
    "pull_tps double, consume_rt double, consume_ok_tps double, consume_failed_tps double, "
    "consume_failed_msgs long, date date")
LOG_EVENTS_SCHEMA = ("group string, ts timestamp, event string, "
                     "queues array<struct<topic:string,broker_name:string,queue_id:int>>, "
                     "offset long, min_offset long")


def widen(spark, df, schema):
    """``df`` with every column of ``schema`` (DDL), in its order; the missing ones null."""
    from pyspark.sql import functions as F

    have = set(df.columns)
    return df.select(*[F.col(f.name).cast(f.dataType) if f.name in have
                       else F.lit(None).cast(f.dataType).alias(f.name)
                       for f in spark.createDataFrame([], schema).schema.fields])
