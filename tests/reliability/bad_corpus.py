"""The bad-input corpus (tests/data/bad, README there) and what each of its files must give.

Every expectation below was written from the corpus lines by hand; line counts are counted here in
plain Python (``bytes.splitlines``: ``\\n``, ``\\r\\n`` and a lone ``\\r``, as the text readers split)
and never by the code under test.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import zlib
from dataclasses import dataclass
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1] / "data" / "bad"
DAY = dt.date(2025, 11, 21)
BAD_GROUP = "GID_bad_input"  # every record of the corpus belongs to this group
D, D1 = "date=2025-11-21", "date=2025-11-22"

# Generated at test time: git keeps no empty folders, and a 2 MB line is not worth committing.
EMPTY_DAY_DIRS = (f"connections/{D1}", f"running_info/{D1}", f"client_logs/{D}/empty-host")
LONG_LINE_FILE = f"running_info/{D}/long_line.jsonl"
LONG_LINE_QUEUES = 5000

NOT_OBJECT = "malformed_json: not a JSON object"
TRUNCATED = "malformed_json: truncated record"
BINARY = "binary_data: control characters in the line"
TRUNCATED_GZIP = "truncated_gzip: the gzip stream ends early; the line read last may be cut"


def real_line_count(path: Path) -> int:
    """Lines in a landing file; for a gzip, in the part that decompresses (a cut file's prefix)."""
    data = path.read_bytes()
    if path.name.endswith(".gz") and data:
        try:
            data = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data)
        except zlib.error:  # not gzip at all: nothing readable
            data = b""
    return len(data.splitlines())


@dataclass(frozen=True)
class Case:
    """One class of bad input: a landing file and how its lines must be handled."""

    name: str
    source_file: str  # relative to the landing root
    accepted: int
    quarantined: int
    other_day: int = 0
    unmatched: int = 0
    reasons: tuple[str, ...] = ()  # quarantine reasons in line order
    # a gzip broken before its first line is counted as one (empty) quarantined line
    unreadable_gzip: bool = False

    def expected_lines(self, real_lines: int) -> int:
        return 1 if self.unreadable_gzip and real_lines == 0 else real_lines

    @property
    def source(self) -> str:
        return self.source_file.split("/", 1)[0]


_GZ = f"offsets/{D}/truncated_gzip.jsonl.gz"
_GZ_LINES = real_line_count(CORPUS / _GZ)

CASES = [
    Case("malformed_json", f"offsets/{D}/malformed_json.jsonl", 0, 6, reasons=(NOT_OBJECT,) * 6),
    Case("truncated_line", f"offsets/{D}/truncated_line.jsonl", 2, 2, reasons=(TRUNCATED,) * 2),
    Case("binary_garbage", f"offsets/{D}/binary_garbage.jsonl", 0, 6, reasons=(BINARY,) * 6),
    Case("nul_bytes", f"offsets/{D}/nul_bytes.jsonl", 2, 2, reasons=(BINARY,) * 2),
    Case("nul_bytes_log", f"client_logs/{D}/bad-nul-host/rocketmq_client.log", 1, 1,
         reasons=(BINARY,)),
    Case("invalid_utf8", f"connections/{D}/invalid_utf8.jsonl", 1, 2,
         reasons=("invalid_utf8",) * 2),
    Case("invalid_utf8_log", f"client_logs/{D}/bad-gbk-host/rocketmq_client.log", 0, 1,
         unmatched=1, reasons=("invalid_utf8",)),
    Case("long_line", LONG_LINE_FILE, 1, 1, reasons=(TRUNCATED,)),
    Case("empty_file", f"offsets/{D}/empty_file.jsonl", 0, 0),
    Case("empty_file_gz", f"offsets/{D}/empty_file.jsonl.gz", 0, 0),
    Case("truncated_gzip", _GZ, _GZ_LINES - 1, 1, reasons=(TRUNCATED_GZIP,)),
    Case("not_gzip", f"offsets/{D}/not_gzip.jsonl.gz", 0, 1, unreadable_gzip=True, reasons=(
        "corrupt_gzip: Error -3 while decompressing data: incorrect header check",)),
    Case("wrong_types", f"offsets/{D}/wrong_types.jsonl", 0, 5, reasons=(
        "wrong_type: queue_id", "wrong_type: broker_offset", "wrong_type: consumer_offset",
        "wrong_type: queue_id", "wrong_type: last_timestamp")),
    Case("missing_required_fields", f"offsets/{D}/missing_required_fields.jsonl", 0, 3,
         reasons=("missing_required_field: broker_name", "missing_required_field: ts",
                  "missing_required_field: consumer_offset")),
    Case("missing_required_fields_connections",
         f"connections/{D}/missing_required_fields.jsonl", 0, 1,
         reasons=("missing_required_field: client_addr",)),
    Case("missing_required_fields_running_info",
         f"running_info/{D}/missing_required_fields.jsonl", 0, 1,
         reasons=("missing_required_field: mq_table",)),
    Case("nulls", f"offsets/{D}/nulls.jsonl", 1, 3, reasons=(
        "missing_required_field: group", "missing_required_field: queue_id",
        "missing_required_field: ts")),
    Case("negative_offsets", f"offsets/{D}/negative_offsets.jsonl", 0, 3, reasons=(
        "negative_offset: consumer_offset=-5", "negative_offset: broker_offset=-1",
        "negative_offset: pull_offset=-1")),
    Case("consumer_offset_ahead", f"offsets/{D}/consumer_ahead.jsonl", 1, 0),
    Case("duplicate_records", f"offsets/{D}/duplicates.jsonl", 5, 0),
    Case("out_of_order", f"offsets/{D}/out_of_order.jsonl", 3, 0),
    Case("future_timestamps", f"offsets/{D}/future_timestamps.jsonl", 0, 4, reasons=tuple(
        f"out_of_window: record day {day} in folder date=2025-11-21"
        for day in ("2099-01-01", "2100-01-01", "2025-11-23", "+10000-01-01"))),
    Case("other_day", f"offsets/{D}/other_day.jsonl", 1, 1, other_day=1,
         reasons=("out_of_window: record day 2025-11-18 in folder date=2025-11-21",)),
    Case("other_day_next_folder", f"offsets/{D1}/other_day.jsonl", 1, 0, other_day=2),
    Case("unknown_enum_values", f"connections/{D}/unknown_enum_values.jsonl", 1, 2, reasons=(
        "unknown_enum_value: consume_type=CONSUME_PUSH",
        "unknown_enum_value: message_model=CLUSTERED")),
    Case("unknown_extra_fields", f"offsets/{D}/unknown_extra_fields.jsonl", 1, 0),
    Case("unexpected_log_lines", f"client_logs/{D}/bad-shapes-host/rocketmq_client.log", 0, 1,
         unmatched=6, reasons=("unparseable_log_line: non-numeric mqAllSize",)),
    Case("utf8_bom", f"offsets/{D}/utf8_bom.jsonl", 2, 0),
    Case("invalid_timestamp", f"offsets/{D}/invalid_timestamp.jsonl", 0, 2, reasons=(
        "invalid_timestamp: ts=2025-11-21 10:00:00", "invalid_timestamp: ts=yesterday")),
    Case("blank_lines", f"offsets/{D}/blank_lines.jsonl", 2, 2, reasons=("empty_line",) * 2),
]
CASE_IDS = [c.name for c in CASES]


def long_running_info(queues: int) -> str:
    """A valid running_info line of ~2 MB: a client of BAD_GROUP holding ``queues`` queues."""
    entry = {"topic": "bad-topic", "broker_name": "broker-x", "commit_offset": 1190,
             "cached_msg_min_offset": 1190, "cached_msg_max_offset": 1199, "cached_msg_count": 10,
             "cached_msg_size_mib": 0, "transaction_msg_min_offset": 0,
             "transaction_msg_max_offset": 0, "transaction_msg_count": 0, "locked": False,
             "try_unlock_times": 0, "last_lock_timestamp": 0, "dropped": False,
             "last_pull_timestamp": 1763719206000, "last_consume_timestamp": 1763719206500}
    return json.dumps({
        "ts": "2025-11-21T18:00:37+08:00", "cluster": "rmq-prod", "group": BAD_GROUP,
        "client_id": "10.0.77.2@7702#1763700000772",
        "properties": {"allocateMessageQueueStrategy": "org.apache.rocketmq.client.consumer."
                       "rebalance.AllocateMessageQueueAveragely@5e9f23b4"},
        "mq_table": [{**entry, "queue_id": q} for q in range(queues)],
    }, separators=(",", ":"))


def build_landing(target: Path) -> Path:
    """The corpus as a landing folder at ``target`` (merged into whatever is there), with the
    generated parts: empty day folders and a 2 MB line file (valid, then cut at 2,000,000 chars)."""
    for source_dir in (p for p in CORPUS.iterdir() if p.is_dir()):
        shutil.copytree(source_dir, target / source_dir.name, dirs_exist_ok=True)
    for rel in EMPTY_DAY_DIRS:
        (target / rel).mkdir(parents=True, exist_ok=True)
    line = long_running_info(LONG_LINE_QUEUES)
    assert len(line) > 2_000_000
    (target / LONG_LINE_FILE).write_text(line + "\n" + line[:2_000_000] + "\n")
    return target


def corpus_files() -> list[str]:
    """Every landing file the materialised corpus holds, relative to the landing root."""
    committed = [p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*")
                 if p.is_file() and p.relative_to(CORPUS).parts[0] != p.name]
    return sorted([*committed, LONG_LINE_FILE])
