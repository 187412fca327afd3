"""What the hand-written landing day (tests/data/hand_day, day 2025-11-21) must give.

Every value below was worked out by hand from the landing lines, not by running the code.
"""

import datetime as dt
from pathlib import Path

HAND_DAY = Path(__file__).resolve().parent.parent / "data" / "hand_day"
RUN_DATE = dt.date(2025, 11, 21)

T1 = dt.datetime(2025, 11, 21, 0, 0, 0)
T2 = dt.datetime(2025, 11, 21, 0, 1, 0)
LATE = dt.datetime(2025, 11, 21, 23, 59, 30)
C1 = "10.0.0.11@4101#1700000000011"
C2 = "10.0.0.12@4102#1700000000012"
C3 = "10.0.0.13@4103#1700000000013"
DUP = "172.17.0.1@1"

# source, source_file, lines, accepted, quarantined, other_day, unmatched
FILE_COUNTS = [
    ("client_logs", "client_logs/date=2025-11-21/host-billing-1/rocketmq_client.log", 3, 3, 0, 0, 0),
    ("client_logs", "client_logs/date=2025-11-21/host-orders-1/rocketmq_client.log", 8, 4, 1, 1, 2),
    ("client_logs", "client_logs/date=2025-11-22/host-billing-1/rocketmq_client.log", 2, 1, 0, 1, 0),
    ("connections", "connections/date=2025-11-21/connections-0.jsonl", 11, 10, 1, 0, 0),
    ("offsets", "offsets/date=2025-11-21/part-00000.jsonl.gz", 10, 10, 0, 0, 0),
    ("offsets", "offsets/date=2025-11-21/part-00001.jsonl", 14, 9, 4, 1, 0),
    ("offsets", "offsets/date=2025-11-22/part-00000.jsonl", 2, 1, 0, 1, 0),
    ("running_info", "running_info/date=2025-11-21/running_info.jsonl", 9, 8, 1, 0, 0),
]

# source, source_file, line_no, reason
QUARANTINE = [
    ("client_logs", "client_logs/date=2025-11-21/host-orders-1/rocketmq_client.log", 8,
     "unparseable_log_line: non-numeric mqAllSize"),
    ("connections", "connections/date=2025-11-21/connections-0.jsonl", 11,
     "missing_required_field: client_addr"),
    ("offsets", "offsets/date=2025-11-21/part-00001.jsonl", 10, "malformed_json: truncated record"),
    ("offsets", "offsets/date=2025-11-21/part-00001.jsonl", 11,
     "missing_required_field: consumer_offset"),
    ("offsets", "offsets/date=2025-11-21/part-00001.jsonl", 12, "wrong_type: queue_id"),
    ("offsets", "offsets/date=2025-11-21/part-00001.jsonl", 13, "negative_offset: broker_offset=-3"),
    ("running_info", "running_info/date=2025-11-21/running_info.jsonl", 9, "wrong_type: mq_table"),
]

BRONZE_ROWS = {"offsets": 20, "connections": 10, "running_info": 8, "client_log_events": 8}

# group, topic, broker_name, queue_id, ts, broker_offset, consumer_offset, lag, owner_ip,
# broker_offset_delta, consumer_offset_delta
QUEUE_OFFSETS = [
    ("GID_orders", "orders", "broker-a", 0, T1, 1000, 990, 10, "10.0.0.11", None, None),
    ("GID_orders", "orders", "broker-a", 0, T2, 1060, 1055, 5, "10.0.0.11", 60, 65),
    ("GID_orders", "orders", "broker-a", 1, T1, 1200, 1200, 0, "10.0.0.11", None, None),
    ("GID_orders", "orders", "broker-a", 1, T2, 1250, 1240, 10, "10.0.0.11", 50, 40),
    ("GID_orders", "orders", "broker-b", 0, T1, 800, 780, 20, "10.0.0.12", None, None),
    ("GID_orders", "orders", "broker-b", 0, T2, 870, 860, 10, "10.0.0.12", 70, 80),
    ("GID_orders", "orders", "broker-b", 1, T1, 900, 900, 0, "10.0.0.12", None, None),
    ("GID_orders", "orders", "broker-b", 1, T2, 950, 949, 1, "10.0.0.12", 50, 49),
    ("GID_orders", "%RETRY%GID_orders", "broker-a", 0, T1, 5, 5, 0, "10.0.0.11", None, None),
    ("GID_orders", "%RETRY%GID_orders", "broker-a", 0, T2, 5, 5, 0, "10.0.0.11", 0, 0),
    ("GID_billing", "billing", "broker-a", 0, T1, 300, 300, 0, "10.0.0.13", None, None),
    ("GID_billing", "billing", "broker-a", 0, T2, 330, 325, 5, "10.0.0.13", 30, 25),
    ("GID_billing", "billing", "broker-a", 0, LATE, 900, 899, 1, "10.0.0.13", 570, 574),
    ("GID_billing", "billing", "broker-a", 1, T1, 310, 312, 0, "10.0.0.13", None, None),
    ("GID_billing", "billing", "broker-a", 1, T2, 340, 340, 0, "10.0.0.13", 30, 28),
    ("GID_audit", "audit", "broker-b", 0, T1, 50, 40, 10, "172.17.0.1", None, None),
    ("GID_audit", "audit", "broker-b", 0, T2, 55, 52, 3, "172.17.0.1", 5, 12),
    ("GID_audit", "audit", "broker-b", 1, T1, 60, 20, 40, None, None, None),
    ("GID_audit", "audit", "broker-b", 1, T2, 75, 20, 55, None, 15, 0),
]

# group, ts, client_id, processes, running_processes, is_duplicate_id, client_addrs
# DUP's two channels carry broker heartbeat times: at T1 .17 last beat 5 s before and .18 20 s
# before, so nothing yet shows .18 beating after .17 was first seen (a dead channel beside a
# restart would look the same); at T2 both beat after 23:59:55, .17's first heartbeat: 2 running.
GROUP_MEMBERS = [
    (g, ts, cid, n, 2 if n > 1 and ts == T2 else 1, n > 1 and ts == T2, addrs)
    for ts in (T1, T2)
    for g, cid, n, addrs in (
        ("GID_orders", C1, 1, ["10.0.0.11:50001"]),
        ("GID_orders", C2, 1, ["10.0.0.12:50002"]),
        ("GID_billing", C3, 1, ["10.0.0.13:50003"]),
        ("GID_audit", DUP, 2, ["10.8.4.17:40122", "10.8.4.18:38871"]),
    )
]

# group, client_id, ts, strategy, consume_concurrently_max_span, client_version
CLIENT_CONFIG = [
    (g, cid, ts, strategy, 2000, version)
    for ts in (T1, T2)
    for g, cid, strategy, version in (
        ("GID_orders", C1, "AVG", "V4_9_8"),
        ("GID_orders", C2, "AVG", "V4_9_8"),
        ("GID_billing", C3, "CONSISTENT_HASH", "V5_1_4"),
        ("GID_audit", DUP, "AVG", "V4_3_6"),
    )
]

# group, client_id, topic (one per snapshot and source: heartbeat and running_info)
SUBSCRIBED = {
    ("GID_orders", C1): ["%RETRY%GID_orders", "orders"],
    ("GID_orders", C2): ["%RETRY%GID_orders", "orders"],
    ("GID_billing", C3): ["%RETRY%GID_billing", "billing"],
    ("GID_audit", DUP): ["%RETRY%GID_audit", "audit"],
}

REB_ORDERS = dt.datetime(2025, 11, 21, 0, 0, 5, 310000)
REB_BILLING = dt.datetime(2025, 11, 21, 0, 0, 6, 250000)
REB_BILLING_LATE = dt.datetime(2025, 11, 21, 23, 59, 59, 900000)
PERSIST_ORDERS = dt.datetime(2025, 11, 21, 0, 0, 10, 2000)
PERSIST_BILLING = dt.datetime(2025, 11, 21, 23, 59, 59, 950000)

# group, client_id, topic, broker_name, queue_id, source, valid_from, valid_until
OWNERSHIP = (
    [(g, cid, t, b, q, "running_info", T1, T2) for g, cid, t, b, q in (
        ("GID_orders", C1, "orders", "broker-a", 0), ("GID_orders", C1, "orders", "broker-a", 1),
        ("GID_orders", C1, "%RETRY%GID_orders", "broker-a", 0),
        ("GID_orders", C2, "orders", "broker-b", 0), ("GID_orders", C2, "orders", "broker-b", 1),
        ("GID_billing", C3, "billing", "broker-a", 0), ("GID_billing", C3, "billing", "broker-a", 1),
        ("GID_audit", DUP, "audit", "broker-b", 0))]
    + [(g, cid, t, b, q, "running_info", T2, None) for g, cid, t, b, q in (
        ("GID_orders", C1, "orders", "broker-a", 0), ("GID_orders", C1, "orders", "broker-a", 1),
        ("GID_orders", C1, "%RETRY%GID_orders", "broker-a", 0),
        ("GID_orders", C2, "orders", "broker-b", 0), ("GID_orders", C2, "orders", "broker-b", 1),
        ("GID_billing", C3, "billing", "broker-a", 0), ("GID_billing", C3, "billing", "broker-a", 1),
        ("GID_audit", DUP, "audit", "broker-b", 0))]
    + [
        ("GID_orders", C1, "orders", "broker-a", 0, "rebalance_log", REB_ORDERS, None),
        ("GID_orders", C1, "orders", "broker-a", 1, "rebalance_log", REB_ORDERS, None),
        ("GID_billing", C3, "billing", "broker-a", 0, "rebalance_log", REB_BILLING, REB_BILLING_LATE),
        ("GID_billing", C3, "billing", "broker-a", 1, "rebalance_log", REB_BILLING, REB_BILLING_LATE),
        ("GID_billing", C3, "billing", "broker-a", 1, "rebalance_log", REB_BILLING_LATE, None),
        ("GID_orders", C1, "orders", "broker-a", 0, "persist_log", PERSIST_ORDERS,
         PERSIST_ORDERS + dt.timedelta(seconds=10)),
        ("GID_billing", C3, "billing", "broker-a", 1, "persist_log", PERSIST_BILLING,
         PERSIST_BILLING + dt.timedelta(seconds=10)),
    ]
)

# ts, event, log_layout, group, client_id, topic, queue count
LOG_EVENTS = [
    (REB_ORDERS, "REBALANCE_RESULT", "4.9", "GID_orders", C1, "orders", 2),
    (dt.datetime(2025, 11, 21, 0, 0, 5, 311000), "MQ_REMOVED", "4.9", "GID_orders", None, "orders", 1),
    (REB_BILLING, "REBALANCE_RESULT", "5.x", "GID_billing", C3, "billing", 2),
    (PERSIST_ORDERS, "PERSIST_OFFSET", "4.9", "GID_orders", C1, "orders", 1),
    (dt.datetime(2025, 11, 21, 0, 0, 20, 500000), "FLOW_CONTROL_SPAN", "4.9", "GID_orders", None,
     "orders", 1),
    (dt.datetime(2025, 11, 21, 0, 15, 6), "SEND_EXPIRE_MSG_BACK", "5.x", None, None, "billing", 1),
    (REB_BILLING_LATE, "REBALANCE_RESULT", "5.x", "GID_billing", C3, "billing", 1),
    (PERSIST_BILLING, "PERSIST_OFFSET", "5.x", "GID_billing", C3, "billing", 1),
]

# Gold: no finding. Every group is seen at two snapshots one minute apart (T1, T2; billing also at
# LATE, 23 h later, beyond max_snapshot_gap), shorter than orphan_min_duration (2 min): audit
# queue 1 (no owner, lag 40 → 55) and audit queue 0 (DUP on two processes) do not last long enough;
# no committed offset stays put for stuck_min_duration (5 min) either.
GOLD_ROWS = {"orphaned_queues": 0, "double_owned_queues": 0, "stuck_queues": 0}
