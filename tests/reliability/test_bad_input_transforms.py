"""Where Sail and classic Spark read bad input differently, and the portable way each is pinned.

The landing data source reads and parses every line in Python (``jobs.ingest.json_lines``), so
neither engine's readers decide any more; these tests pin the rules it keeps for what the engines
read differently:
- trailing text after a JSON object (two records glued, NUL padding): Spark's ``from_json`` reads
  the first object and ignores the rest, Sail's gives null;
- single quotes and ``NaN``: Spark accepts them by default, Sail does not;
- an int beyond 32 bits: Sail's ``from_json`` wraps it (9999999999 → 1410065407), Spark gives null;
- a UTF-8 byte-order mark: Spark's text reader drops it at the start of a file, Sail's keeps it;
- invalid UTF-8: Spark's text reader puts U+FFFD in, Sail's fails the whole file;
- a truncated gzip fails the read on both.
The Spark-level tests run on both engines with the same expectation; the file-level parts
(``jobs.ingest.file_integrity``) are plain Python and tested here too.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json

import pytest
from pyspark.sql import functions as F

from jobs.ingest.file_integrity import (
    BINARY_DATA,
    INVALID_UTF8,
    TRUNCATED_GZIP,
    decode_block,
    decoded_lines,
    raw_blocks,
    split_lines,
)
from jobs.ingest.json_lines import RecordReader, load_object
from jobs.ingest.landing_files import line_defect, list_landing_files, read_lines
from schemas.landing import OFFSETS, RUNNING_INFO

D = dt.date(2025, 11, 21)
RECORD = ('{"ts":1763719200000,"cluster":"rmq-prod","group":"GID_orders","topic":"orders",'
          '"broker_name":"broker-a","queue_id":0,"broker_offset":1000,"consumer_offset":990}')


@pytest.mark.parametrize("line", [
    RECORD + RECORD,                      # two records glued (a collector lost a newline)
    RECORD + " xyz",
    RECORD + "\x00\x00",
    RECORD + "] junk}",
    RECORD.replace('"', "'"),             # single quotes
    RECORD.replace("1000", "NaN"),
    "[" + RECORD + "]",
    "1", "null", '"text"', "",
])
def test_anything_but_exactly_one_json_object_is_no_record(line):
    assert load_object(line) is None


def test_one_json_object_with_blanks_around_is_a_record():
    parsed = load_object("  " + RECORD + " \t")
    assert (parsed["queue_id"], parsed["broker_offset"]) == (0, 1000)


def test_an_int_beyond_32_bits_is_null_not_wrapped():
    line = RECORD.replace('"queue_id":0', '"queue_id":9999999999')
    rec, _ts, _extra, reason = RecordReader(OFFSETS).read(line)
    assert (rec["queue_id"], rec["broker_offset"], reason) == (None, 1000, "wrong_type: queue_id")


def test_an_int_beyond_32_bits_inside_mq_table_nulls_only_that_field():
    line = json.dumps({"mq_table": [{"topic": "t", "queue_id": 9999999999, "commit_offset": 5},
                                    {"topic": "t", "queue_id": 1, "commit_offset": 6}]})
    rec, *_ = RecordReader(RUNNING_INFO).read(line)
    assert [(q["queue_id"], q["commit_offset"]) for q in rec["mq_table"]] == [(None, 5), (1, 6)]


def test_a_byte_order_mark_is_dropped_at_the_start_of_a_line_only():
    lines = [b"\xef\xbb\xbf{}", b"{}", "a\ufeffb".encode()]
    assert decode_block(lines) == (["{}", "{}", "a\ufeffb"], [None, None, None])


@pytest.mark.parametrize("line, expected", [
    ("\x00" * 8, BINARY_DATA),
    (RECORD + "\x00", BINARY_DATA),
    ("a\x01b", BINARY_DATA),
    ("a\x7fb", None),                     # DEL is printable enough for JSON and logs
    ("\x1b[32mINFO\x1b[0m colored log", None),
    ("tab\tseparated", None),
    (RECORD, None),
    (None, None),
])
def test_line_defect_names_binary_data(spark, line, expected):
    df = spark.createDataFrame([(line, None)], "line string, _defect string")
    assert df.select(line_defect(F.col("line"), F.col("_defect"))).first()[0] == expected


def test_a_decoding_defect_wins_over_the_lines_content(spark):
    df = spark.createDataFrame([("a\x00", INVALID_UTF8)], "line string, _defect string")
    assert df.select(line_defect(F.col("line"), F.col("_defect"))).first()[0] == INVALID_UTF8


def write(path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_invalid_utf8_and_a_truncated_gzip_read_the_same_on_both_engines(spark, tmp_path):
    """Read by the engines' text readers, Sail failed on the first file and both on the second."""
    day = tmp_path / "landing" / "offsets" / "date=2025-11-21"
    write(day / "a.jsonl", b'{"a":"caf\xe9"}\r\n{"b":1}\rlast')
    full = gzip.compress(b"".join(b'{"i":%d}\n' % i for i in range(200)), mtime=0)
    write(day / "b.jsonl.gz", full[:-12])  # the trailer and some data cut
    lines = read_lines(spark, list_landing_files(tmp_path / "landing", "offsets", D),
                       tmp_path / "scratch")
    rows = [tuple(r) for r in lines.orderBy("_source_file", "_line_no")
            .select("_source_file", "_line_no", "line", "_defect").collect()]
    a = "offsets/date=2025-11-21/a.jsonl"
    b = "offsets/date=2025-11-21/b.jsonl.gz"
    assert rows[:3] == [(a, 1, '{"a":"caf\\xe9"}', INVALID_UTF8), (a, 2, '{"b":1}', None),
                        (a, 3, "last", None)]
    gz = rows[3:]
    assert {r[0] for r in gz} == {b}
    assert [r[1] for r in gz] == list(range(1, len(gz) + 1))
    assert all(r[3] is None for r in gz[:-1]) and gz[-1][3] == TRUNCATED_GZIP
    assert [r[2] for r in gz[:-1]] == ['{"i":%d}' % i for i in range(len(gz) - 1)]


# --- plain Python: file checks ----------------------------------------------------------------

def test_split_lines_splits_like_the_text_readers_across_chunk_boundaries():
    chunks = [b"a\r", b"\nb\r", b"c\n\n", b"d", b"e\r"]
    assert list(split_lines(iter(chunks))) == [b"a", b"b", b"c", b"", b"de"]
    assert list(split_lines(iter([b""]))) == []


def test_raw_blocks_hold_whole_lines_however_the_chunks_are_cut():
    # a line longer than a chunk, CRLF and lone CR, an unterminated last line
    text = b"ab\r\ncd\n\nefghijklmnop\rq\nrs"
    for size in range(1, len(text) + 1):
        chunks = [text[i:i + size] for i in range(0, len(text), size)]
        blocks = list(raw_blocks(iter(chunks)))
        assert b"".join(blocks) == text, size
        assert all(block.endswith(b"\n") for block in blocks[:-1]), size
        assert len(blocks) <= len(chunks) + 1, size  # one block per chunk read, and the rest
        assert blocks[-1] == b"rs" and all(type(block) is bytes for block in blocks), size
    assert list(raw_blocks(iter([b"x\n", b"y\n"]))) == [b"x\n", b"y\n"]


def test_a_clean_file_and_concatenated_gzip_members_decode_without_defects(tmp_path):
    plain = write(tmp_path / "a.jsonl", "{\"g\":\"订单\"}\n".encode())
    members = write(tmp_path / "b.jsonl.gz", gzip.compress(b"1\n") + gzip.compress(b"2\n"))
    assert list(decoded_lines(plain)) == [(1, '{"g":"订单"}', None)]
    assert list(decoded_lines(members)) == [(1, "1", None), (2, "2", None)]


def test_a_utf8_sequence_split_across_chunks_is_still_valid(tmp_path, monkeypatch):
    monkeypatch.setattr("jobs.ingest.file_integrity.CHUNK_BYTES", 3)
    assert list(decoded_lines(write(tmp_path / "a.jsonl", "ab订单\n".encode()))) == [
        (1, "ab订单", None)]


def test_binary_and_invalid_utf8_lines_are_told_apart(tmp_path):
    path = write(tmp_path / "a.log", b"ok\n\xff\xfe text\n\x00\x01\xff\n")
    assert list(decoded_lines(path)) == [(1, "ok", None), (2, "\\xff\\xfe text", INVALID_UTF8),
                                         (3, "\x00\x01\\xff", BINARY_DATA)]


def test_a_gzip_broken_before_its_first_line_is_one_quarantined_line(tmp_path):
    not_gzip = write(tmp_path / "a.jsonl.gz", b'{"a":1}\n')
    header_only = write(tmp_path / "b.jsonl.gz", gzip.compress(b'{"a":1}\n')[:6])
    assert [(n, t, d.split(":")[0]) for n, t, d in decoded_lines(not_gzip)] == [
        (1, "", "corrupt_gzip")]
    assert list(decoded_lines(header_only)) == [(1, "", TRUNCATED_GZIP)]
