"""Every class of the bad-input corpus (tests/data/bad) through the bronze frames, in memory.

No Delta: runs on both engines with the same expectations (tests/reliability/bad_corpus.py).
"""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import functions as F

from jobs import lake
from jobs.pipeline import bronze_frames
from jobs.settings import Settings
from jobs.silver.queue_offsets import build_queue_offsets
from tests.reliability.bad_corpus import (
    BAD_GROUP,
    CASE_IDS,
    CASES,
    DAY,
    EMPTY_DAY_DIRS,
    LONG_LINE_FILE,
    LONG_LINE_QUEUES,
    build_landing,
    corpus_files,
    real_line_count,
)

RAW_MAX = Settings().ingest.quarantine_raw_max_chars


@pytest.fixture(scope="module")
def landing(tmp_path_factory):
    return build_landing(tmp_path_factory.mktemp("bad") / "landing")


@pytest.fixture(scope="module")
def bronze(spark, landing, tmp_path_factory):
    """Bronze frames, each parse staged once as the pipeline does (Sail would otherwise parse the
    2 MB lines again in every expression that uses the parse)."""
    staging = tmp_path_factory.mktemp("staging")

    def stage(df, name):
        return lake.stage(spark, df, staging, "bad-input", name)

    frames = bronze_frames(spark, landing, DAY, Settings(), "bad-input",
                           dt.datetime(2025, 11, 22), stage, staging / "landing")
    return {name: stage(df, f"bronze.{name}") for name, df in frames.items()}


@pytest.fixture(scope="module")
def counts(bronze):
    return {r.source_file: r for r in bronze["ingest_counts"].collect()}


@pytest.fixture(scope="module")
def quarantine(bronze):
    return bronze["quarantine"].orderBy("source_file", "line_no").collect()


def test_every_corpus_file_is_a_case_and_every_file_is_counted_once(counts):
    assert sorted(c.source_file for c in CASES) == corpus_files()
    assert sorted(counts) == corpus_files()  # the empty day folders add no file


def test_empty_day_directories_are_no_files(counts):
    assert not [f for f in counts if f.startswith(EMPTY_DAY_DIRS)]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_lines_in_equal_lines_handled_and_the_files_real_line_count(case, counts, landing):
    row = counts[case.source_file]
    assert row.source == case.source
    assert row.lines == case.expected_lines(real_line_count(landing / case.source_file))
    assert row.lines == row.accepted + row.quarantined + row.other_day + row.unmatched
    assert (row.accepted, row.quarantined, row.other_day, row.unmatched) == (
        case.accepted, case.quarantined, case.other_day, case.unmatched)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_bad_lines_are_quarantined_with_a_reason_naming_the_class(case, quarantine):
    rows = [r for r in quarantine if r.source_file == case.source_file]
    assert tuple(r.reason for r in rows) == case.reasons
    assert {r.source for r in rows} <= {case.source}
    assert all(r.date == DAY for r in rows)


def test_quarantined_raw_of_a_2mb_line_is_cut_at_the_configured_size(quarantine):
    (row,) = [r for r in quarantine if r.source_file == LONG_LINE_FILE]
    assert (row.line_no, len(row.raw)) == (2, RAW_MAX)
    assert row.raw.startswith('{"ts":"2025-11-21T18:00:37+08:00"')


def test_a_valid_2mb_line_is_accepted_whole(bronze):
    rows = (bronze["running_info"].where(F.col("_source_file") == LONG_LINE_FILE)
            .select("_line_no", F.size("mq_table").alias("queues")).collect())
    assert [tuple(r) for r in rows] == [(1, LONG_LINE_QUEUES)]


def test_invalid_utf8_is_kept_readable_in_raw(quarantine):
    raws = [r.raw for r in quarantine if r.reason == "invalid_utf8"]
    assert any('"tags":["caf\\xe9"]' in raw for raw in raws)  # Latin-1 é
    assert any('"group":"GID_\\xb6\\xa9\\xb5\\xa5"' in raw for raw in raws)  # GBK 订单


def test_binary_lines_keep_their_bytes_escaped_or_as_characters(quarantine):
    nul = [r.raw for r in quarantine if r.source_file.endswith("nul_bytes.jsonl")]
    assert nul[0] == "\x00" * 512 and nul[1].endswith('"client_ip":"10.0.77.1"}\x00\x00\x00\x00')
    garbage = [r.raw for r in quarantine if r.source_file.endswith("binary_garbage.jsonl")]
    # size 68, then the magic code DA A3 20 A7: "\xda\xa3" happens to be valid UTF-8 (U+06A3)
    assert all(raw.startswith("\x00\x00\x00D\u06a3 \\xa7") for raw in garbage)


def test_the_readable_prefix_of_a_truncated_gzip_is_accepted(bronze, landing):
    n = real_line_count(landing / "offsets/date=2025-11-21/truncated_gzip.jsonl.gz")
    rows = (bronze["offsets"].where(F.col("queue_id") == 8).orderBy("_line_no")
            .select("_line_no", "broker_offset").collect())
    assert [tuple(r) for r in rows] == [(i, 2000 + 10 * i) for i in range(1, n)]


def test_a_byte_order_mark_does_not_hide_the_first_record(bronze):
    rows = (bronze["offsets"].where(F.col("_source_file").endswith("utf8_bom.jsonl"))
            .orderBy("_line_no").select("_line_no", "cluster", "queue_id").collect())
    assert [tuple(r) for r in rows] == [(1, "rmq-prod", 9), (2, "rmq-prod", 9)]


def test_unknown_extra_fields_are_kept_as_raw_json(bronze):
    (row,) = bronze["offsets"].where(F.col("queue_id") == 7).collect()
    assert row._extra == {"broker_addr": "10.0.9.99:10911", "inflight": '{"count":3}',
                          "tags": '["x"]'}


@pytest.fixture(scope="module")
def bad_queue_offsets(bronze):
    rows = (build_queue_offsets(bronze["offsets"]).where(F.col("group") == BAD_GROUP)
            .orderBy("queue_id", "ts").collect())
    return rows


def _queue(rows, queue_id, *columns):
    return [tuple(r[c] for c in columns) for r in rows if r.queue_id == queue_id]


def test_consumer_offset_ahead_of_the_broker_is_lag_0(bad_queue_offsets):
    assert _queue(bad_queue_offsets, 3, "broker_offset", "consumer_offset", "lag") == [
        (500, 520, 0)]


def test_duplicate_records_are_one_snapshot_each_in_silver(bronze, bad_queue_offsets):
    assert bronze["offsets"].where(F.col("queue_id") == 4).count() == 5
    assert _queue(bad_queue_offsets, 4, "ts", "broker_offset", "broker_offset_delta") == [
        (dt.datetime(2025, 11, 21, 10, 1), 1200, None),
        (dt.datetime(2025, 11, 21, 10, 2), 1210, 10)]


def test_out_of_order_records_are_ordered_by_ts_in_silver(bad_queue_offsets):
    assert _queue(bad_queue_offsets, 5, "ts", "broker_offset", "broker_offset_delta") == [
        (dt.datetime(2025, 11, 21, 10, 1), 1100, None),
        (dt.datetime(2025, 11, 21, 10, 2), 1200, 100),
        (dt.datetime(2025, 11, 21, 10, 3), 1300, 100)]


def test_optional_nulls_are_accepted(bad_queue_offsets):
    assert _queue(bad_queue_offsets, 2, "pull_offset", "inflight", "last_consumed_at",
                  "owner_ip") == [(None, None, None, None)]
