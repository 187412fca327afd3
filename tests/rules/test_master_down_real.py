"""A real 3.x client log whose route change drops a master (alibaba/rocketmq#210; sources in
tests/data/real/README.md), from a landing file through the ingest to the master-down rule
(DESIGN.md §5.3, rocketmq-facts.md §10.3), both engines.

The line's wall clock is read in the default zone GMT+8: 2016-03-06 18:41:01,438 is 10:41:01.438
UTC. The post names no host; the landing folder is the client's IP from its persist line. The
parsed lines are staged as Parquet, as a run stages them (``jobs.lake.stage``): on Sail, filtering
the unstaged parse by its event plans the parse expressions again and took gigabytes here.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from chispa import assert_df_equality

from jobs.ingest.client_log_records import ingest_client_logs
from jobs.lake import stage
from jobs.rules.master_down import build_master_down_windows, master_evidence

REAL = Path(__file__).resolve().parents[1] / "data" / "real" / "alibaba_3x_route_drops_master.log"
DAY = dt.date(2016, 3, 6)
HOST = "121.43.59.215"
ROUTE_LINE_TS = dt.datetime(2016, 3, 6, 10, 41, 1, 438000, tzinfo=dt.timezone.utc)
DETAIL = f"route change of %RETRY%adjpush on host {HOST}"
# the offsets only give the broker its cluster: no broker_id, so no evidence of their own
OFFSETS_SCHEMA = "cluster string, broker_name string, ts timestamp, broker_id long"
EVIDENCE_SCHEMA = "cluster string, broker_name string, ts timestamp, present boolean, detail string"
WINDOW_SCHEMA = ("cluster string, broker_name string, down_from timestamp, "
                 "down_until timestamp, down_evidence string, return_evidence string, date date")


def ingest(spark, tmp_path: Path, data: bytes):
    path = tmp_path / "client_logs" / f"date={DAY.isoformat()}" / HOST / "rocketmq_client.log"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return ingest_client_logs(spark, tmp_path, DAY, "run-real", dt.datetime(2016, 3, 7), 65536,
                              "GMT+8", lambda df, name: stage(spark, df, tmp_path / "lake",
                                                              "run-real", name))


def offsets(spark):
    return spark.createDataFrame([("c", "broker-1", ROUTE_LINE_TS, None)], OFFSETS_SCHEMA)


def route_line() -> str:
    return REAL.read_text(encoding="utf-8").splitlines()[0]


def test_the_real_route_change_opens_broker_1s_master_down_window_at_its_line(spark, tmp_path):
    frames = ingest(spark, tmp_path, REAL.read_bytes())
    events = frames.records

    # the four lines: the route change and the 3.x persist line are events, two lines match no
    # template, nothing is quarantined
    assert [tuple(r) for r in frames.counts.select("lines", "accepted", "quarantined",
                                                  "unmatched").collect()] == [(4, 2, 0, 2)]
    route = events.where("event = 'ROUTE_CHANGED'").select(
        "ts", "host", "topic", "route_brokers", "_line_no").collect()
    assert [tuple(r) for r in route] == [
        (ROUTE_LINE_TS.replace(tzinfo=None), HOST, "%RETRY%adjpush", [("broker-1", None)], 1)]

    evidence = master_evidence(offsets(spark), events)
    assert_df_equality(evidence, spark.createDataFrame(
        [("c", "broker-1", ROUTE_LINE_TS, False, DETAIL)], EVIDENCE_SCHEMA),
        ignore_row_order=True, ignore_nullable=True)

    windows = build_master_down_windows(offsets(spark), events)
    assert_df_equality(windows, spark.createDataFrame(
        [("c", "broker-1", ROUTE_LINE_TS, None, DETAIL, None, DAY)], WINDOW_SCHEMA),
        ignore_row_order=True, ignore_nullable=True)


def test_the_old_route_with_its_master_alone_gives_no_master_leaving_evidence(spark, tmp_path):
    # The same line with its two routes swapped (nothing else changed): the new route is the
    # old one, broker-1 with master 0=10.43.49.232:10911 and its slave.
    line = route_line()
    old = line.split(" route info changed, odl[", 1)[1].split("] ,new[", 1)[0]
    new = line.split("] ,new[", 1)[1][:-1]
    swapped = line.replace(f"odl[{old}] ,new[{new}]", f"odl[{new}] ,new[{old}]")
    assert swapped.endswith(
        "brokerAddrs={0=10.43.49.232:10911, 1=10.55.180.115:10911}]], filterServerTable={}]]")

    events = ingest(spark, tmp_path, (swapped + "\n").encode("utf-8")).records

    assert [tuple(r) for r in events.select("event", "route_brokers").collect()] == [
        ("ROUTE_CHANGED", [("broker-1", "10.43.49.232:10911")])]
    # evidence of the master being there, none of it leaving: no window
    assert [tuple(r) for r in master_evidence(offsets(spark), events)
            .select("broker_name", "present").collect()] == [("broker-1", True)]
    assert build_master_down_windows(offsets(spark), events).count() == 0
