"""Finding landing files and numbering their lines (both engines)."""

import datetime as dt
import gzip

import pytest
from pyspark.sql import functions as F

from jobs.ingest.landing_files import list_landing_files, read_lines

D = dt.date(2025, 11, 21)


def write(path, text, gz=False):
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode()
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return path


def test_a_run_lists_its_day_and_the_next_day_folder_only(tmp_path):
    for day in ("2025-11-20", "2025-11-21", "2025-11-22", "2025-11-23"):
        write(tmp_path / "offsets" / f"date={day}" / "a.jsonl", "{}\n")
    found = list_landing_files(tmp_path, "offsets", D)
    assert [f.rel_path for f in found] == ["offsets/date=2025-11-21/a.jsonl",
                                           "offsets/date=2025-11-22/a.jsonl"]
    assert [f.folder_date for f in found] == [D, D + dt.timedelta(days=1)]


def test_hidden_files_markers_and_other_extensions_are_skipped(tmp_path):
    day = tmp_path / "client_logs" / "date=2025-11-21"
    for name in ("h1/rocketmq_client.log", "h1/old.log.gz", "_SUCCESS", ".h1.swp",
                 "h1/notes.txt", "x.jsonl.gz", "_tmp/y.log"):
        write(day / name, "")
    assert [f.rel_path for f in list_landing_files(tmp_path, "client_logs", D)] == [
        "client_logs/date=2025-11-21/h1/old.log.gz",
        "client_logs/date=2025-11-21/h1/rocketmq_client.log",
        "client_logs/date=2025-11-21/x.jsonl.gz",
    ]


def test_lines_are_numbered_per_file_with_crlf_blank_lines_and_gzip(spark, tmp_path):
    write(tmp_path / "offsets/date=2025-11-21/a.jsonl", "first\r\n\r\nthird\r\n")
    write(tmp_path / "offsets/date=2025-11-21/b.jsonl.gz", "g1\ng2", gz=True)
    write(tmp_path / "offsets/date=2025-11-21/empty.jsonl", "")
    lines = read_lines(spark, list_landing_files(tmp_path, "offsets", D))
    assert sorted(tuple(r) for r in lines.select("_source_file", "_line_no", "line").collect()) == [
        ("offsets/date=2025-11-21/a.jsonl", 1, "first"),
        ("offsets/date=2025-11-21/a.jsonl", 2, ""),
        ("offsets/date=2025-11-21/a.jsonl", 3, "third"),
        ("offsets/date=2025-11-21/b.jsonl.gz", 1, "g1"),
        ("offsets/date=2025-11-21/b.jsonl.gz", 2, "g2"),
    ]


@pytest.fixture
def small_partitions(spark):
    key = "spark.sql.files.maxPartitionBytes"
    before = spark.conf.get(key)
    spark.conf.set(key, "200000")
    yield
    spark.conf.set(key, before)


def test_line_numbers_follow_file_order_across_partitions(spark, tmp_path, small_partitions):
    """A 1.2 MB file with 200 kB partitions: classic Spark reads it in 6 splits, Sail usually in
    2 (its file scan splits by target partitions, not by this setting)."""
    n = 100_000
    write(tmp_path / "offsets/date=2025-11-21/big.jsonl",
          "".join(f'{{"i":{i}}}\n' for i in range(1, n + 1)))
    lines = read_lines(spark, list_landing_files(tmp_path, "offsets", D))
    check = lines.agg(
        F.count("*").alias("n"),
        F.sum(F.when(F.get_json_object("line", "$.i").cast("long") != F.col("_line_no"), 1)
              .otherwise(0)).alias("misnumbered"))
    assert tuple(check.collect()[0]) == (n, 0)
