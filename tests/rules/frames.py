"""Hand-built silver frames for the rule tests (both engines)."""

import datetime as dt

T0 = dt.datetime(2025, 11, 21, 10, 0, 0)
DAY = T0.date()

OFFSETS_SCHEMA = ("cluster string, group string, topic string, broker_name string, queue_id int, "
                  "ts timestamp, lag long, broker_offset long, consumer_offset long, "
                  "broker_offset_delta long, consumer_offset_delta long, owner_ip string, "
                  "broker_reports_no_owner boolean, is_retry_topic boolean, date date")
OWNERSHIP_SCHEMA = ("cluster string, group string, client_id string, topic string, "
                    "broker_name string, queue_id int, source string, valid_from timestamp, "
                    "valid_until timestamp, date date")
MEMBERS_SCHEMA = "cluster string, group string, ts timestamp, client_id string, processes int"


def at(minute, second=0.0):
    return T0 + dt.timedelta(minutes=minute, seconds=second)


def snapshots(queue_id, minutes, *, advance=10, client_ip=None, lag=50, group="g"):
    """One offsets row per minute; the committed offset moves ``advance`` per snapshot
    (``client_ip``: what ``consumerProgress -s`` printed, 'N/A', an IP or None)."""
    rows = []
    for i, m in enumerate(minutes):
        co = 1000 + advance * i
        rows.append(("c", group, "t", "b", queue_id, at(m), lag, co + lag, co,
                     None if i == 0 else 10, None if i == 0 else advance,
                     None if client_ip in (None, "N/A") else client_ip,
                     None if client_ip is None else client_ip == "N/A", False, DAY))
    return rows


def claim(client_id, queue_id, source, start, end=None, group="g"):
    return ("c", group, client_id, "t", "b", queue_id, source, start, end, DAY)


def connected(client_id, minutes, processes=1, group="g"):
    return [("c", group, at(m, 5), client_id, processes) for m in minutes]


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
