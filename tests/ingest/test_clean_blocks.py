"""The landing data source's block-at-once reading (pyarrow's JSON reader on the bytes as read)
gives what reading the same lines one by one gives (issue #19: the fast path must not change a
record)."""

import datetime as dt
import itertools
import json

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from jobs.ingest.file_integrity import CHUNK_BYTES, numbered_blocks, read_chunks
from jobs.ingest.json_lines import RecordReader, record_ts_micros
from jobs.ingest.landing_source import (
    arrow_copy,
    classified_schema,
    classify_lines,
    clean_body,
    decode_lines,
    file_head,
    read_clean_block,
    struct_as_map,
    text_ts_micros,
)
from schemas.landing import JSON_SOURCES, OFFSETS
from tests.conftest import run_cli

D = dt.date(2025, 11, 21)
RUN_DAY = (D - dt.date(1970, 1, 1)).days


@pytest.fixture(scope="module")
def landing(tmp_path_factory):
    """Two hours of the simulated sample day: every JSON source as the simulator writes it."""
    root = tmp_path_factory.mktemp("clean") / "landing"
    run_cli("simulate", "--scenario", "sample", "--date", D.isoformat(), "--landing", str(root),
            "--window", "09:50-11:50")
    return root


def rows(batch: pa.RecordBatch) -> list[dict]:
    """A batch's rows with maps as sorted pairs (a map's key order is no part of a record)."""
    out = []
    for row in batch.to_pylist():
        out.append({k: sorted(v) if isinstance(v, list) and v and isinstance(v[0], tuple)
                    else v for k, v in row.items()})
    return out


@pytest.mark.parametrize("source", JSON_SOURCES, ids=lambda s: s.name)
@pytest.mark.parametrize("run_day", [RUN_DAY, RUN_DAY - 1], ids=["on_day", "other_day"])
@pytest.mark.parametrize("pieces", ["whole", "pieces"])
def test_a_clean_block_reads_as_its_lines_read_one_by_one(landing, source, run_day, pieces,
                                                          monkeypatch):
    """``pieces``: pyarrow parses each block in pieces of 4 KB on its threads (a piece then
    infers an unknown key's type alone), as it parses an 8 MB block in 1 MB pieces."""
    if pieces == "pieces":
        monkeypatch.setattr("jobs.ingest.landing_source.PARSE_BLOCK_BYTES", 4096)
    files = sorted((landing / source.name).rglob("*.jsonl*"))
    assert files, f"the simulator wrote no {source.name}"
    reader = RecordReader(source)
    schema = to_arrow_schema(classified_schema(source))
    blocks = 0
    for path in files:
        broken: list[str] = []
        for first, block, defect in numbered_blocks(read_chunks(path, broken), broken):
            body = clean_body(block)
            assert body is not None and defect is None
            clean = read_clean_block(reader, schema, run_day, body)
            assert clean is not None, f"{path.name}: a simulated block was not read at once"
            texts, defects = decode_lines(block, defect)
            head = file_head(path.name, D, first, len(texts))
            at_once = classify_lines(reader, schema, run_day, head, texts, defects)
            one_by_one = classify_lines(reader, schema, run_day, head, texts, defects,
                                        clean_tried=True)
            assert rows(at_once) == rows(one_by_one)
            blocks += 1
    assert blocks


def test_blocks_are_numbered_as_their_lines_run(tmp_path):
    data = b"".join(b'{"i":%d}\n' % i for i in range(1, 3 * CHUNK_BYTES // 8))
    path = tmp_path / "a.jsonl"
    path.write_bytes(data + b'{"last":1}')
    broken: list[str] = []
    numbered = list(numbered_blocks(read_chunks(path, broken), broken))
    assert len(numbered) > 1
    lines = [(first + i, line) for first, block, _ in numbered
             for i, line in enumerate(block.splitlines())]
    assert lines == list(enumerate(path.read_bytes().splitlines(), start=1))


PLAIN_VALUES = [
    "2025-11-21T10:00:00Z", "2025-11-21 10:00:00Z", "2025-11-21T18:00:00+08:00",
    "2025-11-21T18:00:00+0800", "2025-11-21T18:00:00+08", "2025-11-21T06:30:00-03:30",
    "2025-11-21T10:00:00.1Z", "2025-11-21T10:00:00.123456Z", "2025-11-21T10:00:00.123+18:59",
    "2025-11-21T10:00:00-00:00", "2024-02-29T00:00:00Z", "2025-02-29T10:00:00Z",
    "2025-04-31T00:00:00Z", "2100-02-29T00:00:00Z", "2000-02-29T23:59:59.999999Z",
    "0001-01-01T00:00:00Z", "0000-03-01T00:00:00Z", "1969-12-31T23:59:59.999Z",
    "9999-12-31T23:59:59Z", "2025-12-31T23:59:59-18:00",
]
OTHER_VALUES = [
    "1763719200000", "2025-11-21T10:00:00.1234567Z", "2025-11-21", "2025-11-21T10:00:00",
    "2025-11-21T10:00Z", "2025-11-21T10:00:00z", " 2025-11-21T10:00:00Z", "2025-11-21T10:00:00Z ",
    "2025-11-21T24:00:00Z", "2025-11-21T10:00:00+19:00", "2025-13-01T00:00:00Z",
    "+10000-01-01T00:00:00Z", "yesterday", "",
]


def generated_values() -> list[str]:
    """Plain ISO values across months, days past each month's end, fractions and offsets."""
    rng = np.random.default_rng(19)
    out = []
    for year, month, day in itertools.product((1900, 2023, 2024), range(1, 13), (1, 28, 29, 30, 31)):
        fraction = "" if rng.random() < 0.3 else "." + "7" * int(rng.integers(1, 7))
        hours = int(rng.integers(0, 19))
        zone = rng.choice(["Z", f"+{hours:02d}:30", f"-{hours:02d}", f"+{hours:02d}45"])
        out.append(f"{year:04d}-{month:02d}-{day:02d}T{int(rng.integers(0, 24)):02d}:"
                   f"{int(rng.integers(0, 60)):02d}:{int(rng.integers(0, 60)):02d}{fraction}{zone}")
    return out


@pytest.mark.parametrize("value", PLAIN_VALUES + OTHER_VALUES + generated_values())
def test_a_text_ts_reads_at_once_as_value_by_value(value):
    assert text_ts_micros(pa.array([value])).to_pylist() == [record_ts_micros(value)]


def test_a_column_of_text_ts_reads_at_once_as_value_by_value():
    for values in (PLAIN_VALUES, PLAIN_VALUES + OTHER_VALUES, generated_values()):
        assert text_ts_micros(pa.array(values)).to_pylist() == [
            record_ts_micros(v) for v in values]


def test_an_object_read_as_a_struct_becomes_the_map_of_its_present_fields():
    struct = pa.array([{"a": "1", "b": None}, None, {"a": None, "b": None}, {"a": "x", "b": "y"}],
                      pa.struct([("a", pa.string()), ("b", pa.string())]))
    got = struct_as_map(pa.chunked_array([struct[:2], struct[2:]]), pa.map_(pa.string(),
                                                                             pa.string()))
    assert got.to_pylist() == [[("a", "1")], None, [], [("a", "x"), ("b", "y")]]
    empty = pa.array([{}, None], pa.struct([]))
    assert struct_as_map(pa.chunked_array([empty]),
                         pa.map_(pa.string(), pa.string())).to_pylist() == [[], None]


def test_an_arrow_copy_has_the_values_in_memory_of_its_own():
    values = np.arange(7, 12, dtype=np.int64)
    copied = arrow_copy(values)
    assert copied.to_pylist() == [7, 8, 9, 10, 11] and copied.type == pa.int64()
    assert copied.buffers()[1].address != values.ctypes.data
    assert pa.array(values).buffers()[1].address == values.ctypes.data  # what it avoids


OFFSET = {"ts": 1763719200000, "cluster": "c", "group": "g", "topic": "t", "broker_name": "b",
          "queue_id": 0, "broker_offset": 10, "consumer_offset": 5}


@pytest.mark.parametrize(("late", "at_once"), [
    ({"note": "x"}, True),  # an unknown key only in the last piece
    ({"note": None}, False),  # a JSON null and a missing key read alike: line by line
    ({"n": 1.5}, False),  # the early pieces' int and a late float: pyarrow makes both floats
    ({"n": "s"}, False),  # an int and a string: pyarrow fails
    ({"n": 7}, True),
    ({"flag": True}, True),
])
def test_a_block_parsed_in_pieces_reads_as_its_lines_one_by_one(monkeypatch, late, at_once):
    """pyarrow infers an unknown key's type piece by piece; what it reads at once must be what
    the lines read one by one give, whatever the pieces saw."""
    monkeypatch.setattr("jobs.ingest.landing_source.PARSE_BLOCK_BYTES", 1024)
    early = [dict(OFFSET, queue_id=i, n=i) if "n" in late else dict(OFFSET, queue_id=i)
             for i in range(40)]
    texts = [json.dumps(r, separators=(",", ":")) for r in early + [dict(OFFSET, **late)]]
    body = ("\n".join(texts) + "\n").encode()
    assert len(body) > 3 * 1024
    reader = RecordReader(OFFSETS)
    schema = to_arrow_schema(classified_schema(OFFSETS))
    assert (read_clean_block(reader, schema, RUN_DAY, body) is not None) == at_once
    head = file_head("a.jsonl", D, 1, len(texts))
    one_by_one = classify_lines(reader, schema, RUN_DAY, head, texts, [None] * len(texts),
                                clean_tried=True)
    at_once_rows = classify_lines(reader, schema, RUN_DAY, head, texts, [None] * len(texts))
    assert rows(at_once_rows) == rows(one_by_one)
