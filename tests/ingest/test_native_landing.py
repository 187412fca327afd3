"""RocketMQ's own outputs through the landing data source into bronze (both engines): the same
records, quarantine and per-file counts as the JSON Lines sources (DESIGN.md §3, §4)."""

import datetime as dt
import gzip
from pathlib import Path

from jobs.ingest.json_sources import ingest_json_source
from schemas.landing import CONNECTIONS, OFFSETS, RUNNING_INFO

D = dt.date(2025, 11, 21)
SAMPLES = Path(__file__).parents[1] / "data" / "mqadmin"
HEADER5S = "%-64s  %-32s  %-4s  %-20s  %-20s  %-20s %-20s %-20s%s" % (
    "#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Client IP", "#Diff",
    "#Inflight", "#LastTime")


def row5s(topic, qid, bo, co, ip, inflight, last):
    return "%-64s  %-32s  %-4d  %-20d  %-20d  %-20s %-20d %-20d %s" % (
        topic, "broker-a", qid, bo, co, ip, bo - co, inflight, last)


PROGRESS = [HEADER5S,
            row5s("orders", 0, 100, 90, "10.0.0.7", 5, "2025-11-21 09:59:00"),
            row5s("orders", 1, 100, 100, "N/A", 0, "N/A"),
            row5s("orders", 2, 100, 90, "10.0.0.7", 5, "N/A").replace("  90  ", "  9x  "),
            "", "Consume TPS: 0.00", "Consume Diff Total: 10", "Consume Inflight Total: 5"]


def write(path: Path, lines: list[str], gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data) if gz else data)


def ingest(spark, landing, source):
    frames = ingest_json_source(spark, landing, source, D, "r1", dt.datetime(2025, 11, 22), 65536)
    counts = sorted(tuple(r) for r in frames.counts.select(
        "source_file", "lines", "accepted", "quarantined", "other_day", "unmatched").collect())
    quarantine = sorted((r.source_file, r.line_no, r.reason, r.raw)
                        for r in frames.quarantine.collect())
    return frames.records, quarantine, counts


def test_consumer_progress_files_become_offsets_records(spark, tmp_path):
    base = "offsets/date=2025-11-21/cluster=c1/group=G"
    write(tmp_path / base / "20251121T100000Z.txt", PROGRESS)
    write(tmp_path / base / "20251121T100100Z.txt.gz", PROGRESS[:3], gz=True)
    write(tmp_path / "offsets/date=2025-11-22/cluster=c1/group=G/20251121T235930Z.txt", PROGRESS[:2])
    write(tmp_path / "offsets/date=2025-11-21/cluster=c1/group=G/20251120T235930Z.txt", PROGRESS[:2])
    records, quarantine, counts = ingest(spark, tmp_path, OFFSETS)
    rows = sorted((r.ts.isoformat(), r.queue_id, r.broker_offset, r.consumer_offset, r.pull_offset,
                   r.client_ip, r.last_timestamp, r._line_no)
                  for r in records.collect())
    t0 = int(dt.datetime(2025, 11, 21, 9, 59, tzinfo=dt.timezone.utc).timestamp() * 1000)
    assert rows == [("2025-11-21T10:00:00", 0, 100, 90, 95, "10.0.0.7", t0, 2),
                    ("2025-11-21T10:00:00", 1, 100, 100, 100, "N/A", 0, 3),
                    ("2025-11-21T10:01:00", 0, 100, 90, 95, "10.0.0.7", t0, 2),
                    ("2025-11-21T10:01:00", 1, 100, 100, 100, "N/A", 0, 3),
                    ("2025-11-21T23:59:30", 0, 100, 90, 95, "10.0.0.7", t0, 2)]
    assert quarantine == [(f"{base}/20251121T100000Z.txt", 4,
                           "malformed_row: #Consumer Offset is not a number: '9x'", PROGRESS[3])]
    assert counts == [
        ("offsets/date=2025-11-21/cluster=c1/group=G/20251120T235930Z.txt", 2, 0, 0, 1, 1),
        (f"{base}/20251121T100000Z.txt", 8, 2, 1, 0, 5),
        (f"{base}/20251121T100100Z.txt.gz", 3, 2, 0, 0, 1),
        ("offsets/date=2025-11-22/cluster=c1/group=G/20251121T235930Z.txt", 2, 1, 0, 0, 1)]


def test_a_table_file_placed_without_its_context_is_quarantined_not_guessed(spark, tmp_path):
    write(tmp_path / "offsets/date=2025-11-21/cluster=c1/G/20251121T100000Z.txt", PROGRESS[:2])
    records, quarantine, counts = ingest(spark, tmp_path, OFFSETS)
    assert records.count() == 0
    assert [(q[1], q[2]) for q in quarantine] == [
        (1, "missing_file_context: no group= folder in the path"),
        (2, "missing_file_context: no group= folder in the path")]


def test_consumer_connection_files_become_connections_records(spark, tmp_path):
    rel = "connections/date=2025-11-21/cluster=c1/group=G/broker_name=broker-a/20251121T100002Z.txt"
    lines = ["%-36s %-22s %-10s %s" % ("#ClientId", "#ClientAddr", "#Language", "#Version"),
             "%-36s %-22s %-10s %s" % ("172.17.0.1@1", "10.8.4.17:40122", "JAVA", "V4_9_8"),
             "%-36s %-22s %-10s %s" % ("172.17.0.1@1", "10.8.4.18:38871", "JAVA", "V4_9_8"),
             "", "Below is subscription:", "%-20s %s" % ("#Topic", "#SubExpression"),
             "%-20s %s" % ("orders", "*"), "",
             "ConsumeType: CONSUME_PASSIVELY", "MessageModel: BROADCAST", "ConsumeFromWhere: CONSUME_FROM_LAST_OFFSET"]
    write(tmp_path / rel, lines)
    records, quarantine, counts = ingest(spark, tmp_path, CONNECTIONS)
    assert records.count() == 0  # MessageModel is checked as in a JSON line
    assert [(q[1], q[2], q[3]) for q in quarantine] == [
        (2, "unknown_enum_value: message_model=BROADCAST", lines[1]),
        (3, "unknown_enum_value: message_model=BROADCAST", lines[2])]
    write(tmp_path / rel, lines[:9] + ["MessageModel: CLUSTERING"] + lines[10:])
    records, quarantine, counts = ingest(spark, tmp_path, CONNECTIONS)
    assert sorted((r.client_id, r.client_addr, r.broker_name, r.message_model, r.subscriptions)
                  for r in records.collect()) == [
        ("172.17.0.1@1", "10.8.4.17:40122", "broker-a", "CLUSTERING", None),
        ("172.17.0.1@1", "10.8.4.18:38871", "broker-a", "CLUSTERING", None)]
    assert quarantine == [] and counts == [(rel, 11, 2, 0, 0, 9)]


def test_a_fastjson_running_info_dump_becomes_one_running_info_record(spark, tmp_path):
    rel = ("running_info/date=2025-11-21/cluster=c1/group=CG-FTEST-Normal/"
           "client=192.168.1.20@12345#99/20251121T100004Z.json")
    text = (SAMPLES / "running_info_pretty.json").read_text(encoding="utf-8")
    write(tmp_path / rel, text.splitlines())
    bad = rel.replace("20251121T100004Z", "20251121T100104Z")
    write(tmp_path / bad, ['{"mqTable":{{"brokerName":"b","queueId":0,"topic":"T"}}}'])
    records, quarantine, counts = ingest(spark, tmp_path, RUNNING_INFO)
    (rec,) = records.collect()
    assert (rec.client_id, rec.group, rec._line_no) == ("192.168.1.20@12345#99", "CG-FTEST-Normal", 1)
    assert [(q.topic, q.broker_name, q.queue_id, q.commit_offset, q.dropped, q.cached_msg_count)
            for q in rec.mq_table] == [("%RETRY%CG-FTEST-Normal", "POC-Broker-a", 0, 72, False, 0),
                                       ("%RETRY%CG-FTEST-Normal", "POC-Broker-b", 0, 48, False, 0),
                                       ("TP-FTEST-Normal", "POC-Broker-b", 3, 1031, True, 2)]
    assert rec.properties["allocateMessageQueueStrategy"].endswith("AllocateMessageQueueAveragely@6d06d69c")
    assert [(q[1], q[2][:35]) for q in quarantine] == [(1, "malformed_fastjson: expected ':', f")]
    n = len(text.splitlines())
    assert counts == [(rel, n, 1, 0, 0, n - 1), (bad, 1, 0, 1, 0, 0)]
