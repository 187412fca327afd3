"""The landing data source: byte ranges cut at line ends with exact line numbers (both engines),
and the JSON rules it keeps where the engines' own readers disagreed."""

import datetime as dt
import gzip
import json
import os
import re

import pytest
from pyspark.sql import functions as F

from jobs.ingest.file_integrity import CONTROL_CHARS, decoded_blocks, read_chunks
from jobs.ingest.json_lines import NOT_OBJECT, RecordReader, record_ts_micros
from jobs.ingest.json_records import classify_json_lines
from jobs.ingest.landing_files import list_landing_files
from jobs.ingest.landing_source import (
    LINES,
    LandingReader,
    block_lines,
    object_lines,
    pack_ranges,
    plan_ranges,
    range_chunks,
    read_landing,
    read_partitions,
)
from schemas.landing import CONNECTIONS, OFFSETS, RUNNING_INFO

D = dt.date(2025, 11, 21)
LINES_DDL = "_source_file string, _folder_date date, _line_no long, line string, _defect string"


def write(path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def lines_of(data: bytes) -> list[str]:
    """Expected lines, split independently of the code under test (``bytes.splitlines``)."""
    return [line.decode() for line in data.splitlines()]


def read_ranges(path, split_bytes):
    """Every range of ``path`` read on its own, as ``(line_no, text)``."""
    out = []
    for part in plan_ranges([("f", str(path), "2025-11-21")], split_bytes):
        broken: list[str] = []
        for first, texts, _defects in decoded_blocks(range_chunks(part, broken), broken,
                                                     part.first_line):
            out += list(zip(range(first, first + len(texts)), texts))
    return out


@pytest.mark.parametrize("split_bytes", [1, 7, 64, 1000])
def test_ranges_cut_at_line_ends_number_every_line_once(tmp_path, split_bytes):
    """CRLF, lone CR, blank lines and a last line without terminator, cut anywhere."""
    data = (b'{"i":1}\r\n\r\n{"i":3}\r{"i":4}\n' + b"x" * 50 + b"\n\r\n"
            + "订单\n".encode() * 5 + b"tail")
    path = write(tmp_path / "a.jsonl", data)
    got = read_ranges(path, split_bytes)
    assert got == list(enumerate(lines_of(data), start=1))
    if split_bytes < len(data):
        assert len(plan_ranges([("f", str(path), "2025-11-21")], split_bytes)) > 1


def test_a_crlf_split_between_counting_chunks_is_one_line_end(tmp_path, monkeypatch):
    monkeypatch.setattr("jobs.ingest.landing_source.CHUNK_BYTES", 4)
    data = b"abc\r\nd\re\r\n" * 20
    path = write(tmp_path / "a.log", data)
    assert read_ranges(path, 9) == list(enumerate(lines_of(data), start=1))


def test_a_gzip_file_is_one_range(tmp_path):
    path = write(tmp_path / "a.jsonl.gz", gzip.compress(b"1\n2\n" * 1000, mtime=0))
    assert len(plan_ranges([("f", str(path), "2025-11-21")], 10)) == 1


def test_small_files_share_a_partition_and_a_large_range_has_its_own(tmp_path):
    files = [(name, str(write(tmp_path / name, b"x\n" * (size // 2))), "2025-11-21")
             for name, size in [("a", 40), ("b", 40), ("c", 30), ("d", 200), ("e", 10)]]
    groups = pack_ranges(plan_ranges(files, 100), 100)
    assert [[r.rel_path for r in g.ranges] for g in groups] == [
        ["a", "b"], ["c"], ["d"], ["d"], ["e"]]
    assert [r.first_line for r in groups[2].ranges + groups[3].ranges] == [1, 52]


def test_a_scan_is_packed_into_at_most_about_max_partitions_and_keeps_every_range(tmp_path):
    """Sail runs every partition of a scan at once: their number bounds a read's memory."""
    files = [[name, str(write(tmp_path / name, b"xy\n" * 3000)), "2025-11-21"]
             for name in ("a", "b", "c")]
    options = {"rows": LINES, "files": json.dumps(files), "split_bytes": "1000"}
    ranges = plan_ranges([tuple(f) for f in files], 1000)
    assert len(ranges) == 27
    capped = LandingReader({**options, "max_partitions": "4"}).partitions()
    assert 1 < len(capped) <= 2 * 4
    assert [r for g in capped for r in g.ranges] == ranges
    assert len(LandingReader({**options, "max_partitions": "100"}).partitions()) == 27


def test_a_gzip_file_inflates_in_bounded_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr("jobs.ingest.file_integrity.CHUNK_BYTES", 64)
    data = b"".join(b"line %d\n" % i for i in range(2000))
    members = gzip.compress(data[:5000], mtime=0) + gzip.compress(data[5000:], mtime=0)
    broken: list[str] = []
    chunks = list(read_chunks(write(tmp_path / "a.log.gz", members), broken))
    assert b"".join(chunks) == data and broken == []
    assert max(len(c) for c in chunks) <= 64


def test_a_file_read_in_many_ranges_is_numbered_in_file_order(spark, tmp_path):
    n = 20_000
    day = tmp_path / "offsets" / "date=2025-11-21"
    write(day / "big.jsonl", "".join(f'{{"i":{i}}}\n' for i in range(1, n + 1)).encode())
    write(day / "small.jsonl.gz", gzip.compress(b'{"i":1}\n{"i":2}\n', mtime=0))
    lines = read_landing(spark, LINES, list_landing_files(tmp_path, "offsets", D),
                         split_bytes=10_000)
    check = lines.groupBy("_source_file").agg(
        F.count("*").alias("n"),
        F.sum(F.when(F.get_json_object("line", "$.i").cast("long") != F.col("_line_no"), 1)
              .otherwise(0)).alias("misnumbered"))
    assert sorted(tuple(r) for r in check.collect()) == [
        ("offsets/date=2025-11-21/big.jsonl", n, 0),
        ("offsets/date=2025-11-21/small.jsonl.gz", 2, 0)]


def test_accepted_records_do_not_carry_their_line(spark, tmp_path):
    rec = {"ts": "2025-11-21T10:00:00Z", "cluster": "c", "group": "g", "topic": "t",
           "broker_name": "b", "queue_id": 0, "broker_offset": 10, "consumer_offset": 5}
    other = dict(rec, ts="2025-11-20T23:00:00Z")
    day = tmp_path / "offsets" / "date=2025-11-21"
    write(day / "a.jsonl", f"{json.dumps(rec)}\n{json.dumps(other)}\n{{bad\n".encode())
    rows = (read_landing(spark, "offsets", list_landing_files(tmp_path, "offsets", D), D)
            .orderBy("_line_no").collect())
    assert [(r._line_no, r.line is None, r._check) for r in rows] == [
        (1, True, None), (2, False, None), (3, False, NOT_OBJECT)]


# --- rules where the engines' readers disagreed: now one reading on both -------------------------

def classify(spark, lines, source):
    df = spark.createDataFrame([("f", D, i + 1, line, None) for i, line in enumerate(lines)],
                               LINES_DDL)
    return [(r._status, r._reason) for r in
            classify_json_lines(df, source, D).orderBy("_line_no").collect()]


def test_an_array_element_that_is_no_object_is_a_wrong_type(spark):
    """Classic Spark's ``from_json`` nulled the whole field, Sail's kept a null element."""
    conn = {"ts": "2025-11-21T10:00:00Z", "cluster": "c", "group": "g", "client_id": "1.2.3.4@1",
            "client_addr": "1.2.3.4:5"}
    info = {"ts": "2025-11-21T10:00:00Z", "cluster": "c", "group": "g", "client_id": "x@1"}
    assert classify(spark, [json.dumps(dict(conn, subscriptions=[1]))], CONNECTIONS) == [
        ("quarantined", "wrong_type: subscriptions")]
    assert classify(spark, [json.dumps(dict(info, mq_table=[1, {"topic": "t"}]))],
                    RUNNING_INFO) == [("quarantined", "wrong_type: mq_table")]


def test_a_lone_surrogate_escape_is_no_json_object(spark):
    """Classic Spark accepted ``"\\ud800"`` (an unpaired UTF-16 half), Sail did not."""
    line = ('{"ts":1763719200000,"cluster":"c","group":"g\\ud800","topic":"t","broker_name":"b",'
            '"queue_id":0,"broker_offset":10,"consumer_offset":5}')
    assert classify(spark, [line], OFFSETS) == [("quarantined", NOT_OBJECT)]


def test_a_fractional_epoch_ts_is_quoted_as_written():
    """Classic Spark quoted 1763719200000.5 as ``1.7637192000005E12``, Sail as written."""
    line = json.dumps({"ts": 1763719200000.5, "cluster": "c", "group": "g", "topic": "t",
                       "broker_name": "b", "queue_id": 0, "broker_offset": 10,
                       "consumer_offset": 5})
    assert RecordReader(OFFSETS).read(line)[3] == "invalid_timestamp: ts=1763719200000.5"


@pytest.mark.parametrize("text, expected", [
    ("1763719200000", 1763719200000000),
    ("-1000", -1000000),
    ("1234567890123456", None),                      # 16 digits: not epoch millis
    ("2025-11-21T10:00:00Z", 1763719200000000),
    ("2025-11-21 10:00:00Z", 1763719200000000),
    ("2025-11-21T18:00:00+08:00", 1763719200000000),
    ("2025-11-21T18:00:00+0800", 1763719200000000),
    ("2025-11-21T18:00:00+08", 1763719200000000),
    ("2025-11-21T06:30:00-03:30", 1763719200000000),
    ("2025-11-21T10:00:00.123456789Z", 1763719200123456),
    (" 2025-11-21T10:00:00Z", 1763719200000000),
    ("2025-11-21", 1763683200000000),                # "-21" reads as a zone; a date is midnight
    ("2025-11-21T10:00:00", None),                   # no zone: ambiguous
    ("2025-11-21T10:00Z", None),
    ("2025-11-21T10:00:00z", None),
    ("2025-11-21T10:00:00Z ", None),
    ("2025-11-21T25:00:00Z", None),
    ("2025-02-29T10:00:00Z", None),
    ("2024-02-29T00:00:00Z", 1709164800000000),
    ("+10000-01-01T00:00:00Z", 253402300800000000),
    ("yesterday", None),
])
def test_record_timestamps(text, expected):
    """Each case as both engines' ``try_to_timestamp`` read it before (the probe is in the
    issue #19 report)."""
    assert record_ts_micros(text) == expected


def test_a_block_with_a_control_byte_is_not_read_at_once():
    """Every byte below 0x20 but the line end sends a block line by line, where a control
    character is quarantined as binary data: the block-at-once reading never sees one."""
    pattern = re.compile(CONTROL_CHARS)
    for code in range(0x80):
        if code == 0x0A:
            continue
        body = f'{{"a":"x{chr(code)}y"}}\n{{"a":"z"}}\n'.encode()
        assert (object_lines(body) is None) == (code < 0x20), code
        if pattern.search(chr(code)):
            assert object_lines(body) is None, code
    # multi-byte UTF-8 (CJK, emoji, U+0080-U+009F) holds no byte below 0x80: no control byte
    wide = '{"a":"消费者组 \U0001F600 \u0085"}'.encode()
    assert object_lines(wide) == (1, len(wide) + 1)


@pytest.mark.parametrize(("body", "shape"), [
    (b'{"a":1}', (1, 8)),
    (b'{"a":1}\n', (1, 8)),
    (b'{"a":1}\n{"bb":22}\n{}', (3, 10)),
    (b'{"a":1}\n{"bb":22}\n{}\n', (3, 10)),
    (b'{"a":"\\u00e9\\n"}\n', (1, 17)),
    (b'{"a":1}\n\n', None),  # a blank line
    (b'{"a":1}\n{"b":2}\n\n', None),
    (b'{"a":1}\n[1]\n', None),  # a line that is no object
    (b' {"a":1}\n', None),
    (b'null\n{"a":1}\n', None),  # pyarrow crashed on a block starting with a bare null
    (b'{"a":1}\r\n', None),
    (b'{"a":"\\ud83d\\ude00"}\n', None),  # a surrogate escape: orjson refuses a lone one
    (b'{"a":"\\uD800"}', None),
    (b'', None),
])
def test_object_lines_gives_the_lines_and_the_longest_or_none(body, shape):
    assert object_lines(body) == shape


@pytest.mark.parametrize("body", [
    b"a", b"a\n", b"a\n\nb", b"a\n\nb\n", b"\n\n", "消费者组\nß \U0001F600\n".encode(),
    b"x" * 70_000 + b"\n" + b"y",
])
def test_block_lines_are_the_lines_between_line_ends(body):
    expected = body.decode().split("\n")
    if body.endswith(b"\n"):
        expected.pop()  # the last line's end starts no line
    lines = block_lines(body)
    lines.validate(full=True)
    assert lines.to_pylist() == expected


def test_read_partitions_are_the_setting_or_this_machines_cores():
    assert read_partitions(3) == 3
    assert read_partitions(0) == (os.cpu_count() or 1)
