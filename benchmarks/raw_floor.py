"""The raw-read floor: pyarrow parsing the same landing files the pipeline reads (not a test).

``python -m benchmarks.raw_floor LANDING --date D`` prints seconds and rows per source.

What the floor does per file, with pyarrow's C++ readers on all cores: JSON Lines sources are
decompressed and parsed into typed Arrow columns (``pyarrow.json``, schema inferred); client
logs are decompressed, split into lines and each line's header (time, level, thread, logger) is
extracted with one regex (``pyarrow.compute.extract_regex``). No validation, no day rules, no
output: the least work any reader must do to see the records, so pipeline / floor is how much
the pipeline spends beyond reading.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from jobs.ingest.landing_files import list_landing_files
from schemas.landing import ALL_SOURCES

LOG_HEADER = (r"^(?P<time>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}[,.]\d{3}) +(?P<level>[A-Z]+) "
              r"+(?P<thread>\S+) *-? *(?P<rest>.*)$")
JSON_BLOCK = 64 << 20  # large records (running info is ~9 KB a line) need big parse blocks


def _stream(path: Path):
    return pa.input_stream(str(path), compression="gzip" if path.name.endswith(".gz") else None)


def read_json_file(path: Path) -> int:
    with _stream(path) as stream:
        table = pj.read_json(stream, read_options=pj.ReadOptions(block_size=JSON_BLOCK))
    return table.num_rows


def read_log_file(path: Path) -> int:
    with _stream(path) as stream:
        data = stream.read()
    lines = pa.array(data.split(b"\n"), pa.binary()).cast(pa.string())
    headers = pc.extract_regex(lines, LOG_HEADER)
    return len(headers)


def raw_floor(landing: Path, run_date: dt.date) -> dict[str, dict]:
    """Per source: ``seconds``, ``rows`` and ``bytes`` of reading the run's files (D and D+1)."""
    out = {}
    for source in ALL_SOURCES:
        files = list_landing_files(landing, source, run_date)
        read = read_log_file if source == "client_logs" else read_json_file
        started = time.perf_counter()
        rows = sum(read(f.path) for f in files)
        out[source] = {"seconds": time.perf_counter() - started, "rows": rows,
                       "bytes": sum(f.path.stat().st_size for f in files)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("landing", type=Path)
    parser.add_argument("--date", required=True, type=dt.date.fromisoformat)
    args = parser.parse_args()
    print(json.dumps(raw_floor(args.landing, args.date)))


if __name__ == "__main__":
    main()
