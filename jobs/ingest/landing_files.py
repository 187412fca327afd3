"""Find landing files and read them as numbered text lines.

Files are read one by one so that every row can carry its file name as a literal (neither
``input_file_name()`` nor ``_metadata`` exists on Sail; one read per file also sidesteps Sail's
refusal to mix ``.gz`` and plain files in one read). The 1-based line number is the row's rank
by ``monotonically_increasing_id()`` within its file: both engines number a file's rows in file
order, partition by partition (tests/ingest/test_landing_files.py checks a multi-partition file).
A file that is not valid UTF-8 or whose gzip stream is broken is read from a decoded copy instead
(``jobs.ingest.file_integrity``); its bad lines carry a ``_defect`` and are quarantined.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, LongType, StringType, StructField, StructType

from jobs.ingest.file_integrity import (
    BINARY_DATA,
    CONTROL_CHARS,
    readable_as_text,
    write_decoded_copy,
)

log = logging.getLogger(__name__)

LANDING_SUFFIXES = (".jsonl", ".jsonl.gz", ".log", ".log.gz")

LINES_SCHEMA = StructType([
    StructField("_source_file", StringType(), False),
    StructField("_folder_date", DateType(), False),
    StructField("_line_no", LongType(), False),
    StructField("line", StringType(), True),
    # why the line is unusable whatever it says (invalid UTF-8, cut by a broken gzip), else null
    StructField("_defect", StringType(), True),
])

DECODED_LINES_SCHEMA = StructType([LINES_SCHEMA["_line_no"], LINES_SCHEMA["line"],
                                   LINES_SCHEMA["_defect"]])


@dataclass(frozen=True)
class LandingFile:
    """One landing file: its source folder, the ``date=`` folder it sits in, and its path."""

    source: str
    folder_date: dt.date
    path: Path
    rel_path: str  # relative to the landing root, posix separators: what `_source_file` holds


def day_folders(run_date: dt.date) -> tuple[dt.date, dt.date]:
    """A run for day D reads ``date=D`` and ``date=D+1`` (collectors flush late; DESIGN.md §3)."""
    return run_date, run_date + dt.timedelta(days=1)


def list_landing_files(landing: Path, source: str, run_date: dt.date) -> list[LandingFile]:
    """The files of ``source`` in the run's day folders, sorted for a stable order.

    Symlinked folders are not descended (``Path.rglob``); a file that resolves outside the
    landing root is skipped with a warning (docs/operations.md, Failure modes: paths)."""
    found: list[LandingFile] = []
    root = landing.resolve()
    for folder_date in day_folders(run_date):
        folder = landing / source / f"date={folder_date.isoformat()}"
        if not folder.is_dir():
            continue
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            rel = path.relative_to(landing).as_posix()
            if any(part.startswith((".", "_")) for part in path.relative_to(folder).parts):
                continue  # hidden files and markers such as _SUCCESS
            if not path.resolve().is_relative_to(root):
                # a symlink out of the landing root would copy any readable file into bronze
                log.warning("skipping %s: it links outside the landing root %s", rel, root)
                continue
            if not path.name.endswith(LANDING_SUFFIXES):
                log.warning("skipping %s: not one of %s", rel, ", ".join(LANDING_SUFFIXES))
                continue
            found.append(LandingFile(source, folder_date, path, rel))
    return found


def clean_line(value: Column) -> Column:
    """A line as both engines should see it: a trailing ``\\r`` (CRLF files) and a leading
    UTF-8 byte-order mark dropped (Spark's reader skips a BOM at the start of a file, Sail's
    keeps it, which would make the first record malformed on Sail only)."""
    return F.regexp_replace(F.regexp_replace(value, "\r$", ""), "^\ufeff", "")


def number_lines(text_df: DataFrame) -> DataFrame:
    """Rows of ``value`` with their read order ``_order`` → ``_line_no`` (1-based) and ``line``,
    in one scan: a window over each file. One scan on purpose: numbering from a count per scan
    partition was tried and was wrong now and then on Sail (a second scan may split a file
    differently; a staged copy's partition ids did not always follow file order). The window
    sorts each file in one partition, in memory unless Sail's pool makes it spill
    (benchmarks/RESULTS.md).
    The line is ``clean_line``'d; it has no ``_defect`` (the engine could read it).
    """
    in_file = Window.partitionBy("_source_file").orderBy("_order")
    return text_df.select(
        "_source_file", "_folder_date",
        F.row_number().over(in_file).cast("long").alias("_line_no"),
        clean_line(F.col("value")).alias("line"),
        F.lit(None).cast("string").alias("_defect"),
    )


def union_all(frames: list[DataFrame]) -> DataFrame:
    """``unionByName`` of all ``frames`` as a balanced tree: a chain of hundreds of unions (one
    per landing file) overflowed Sail's stack while planning (SIGSEGV); the tree is log2(n)
    deep."""
    while len(frames) > 1:
        frames = [functools.reduce(DataFrame.unionByName, frames[i:i + 2])
                  for i in range(0, len(frames), 2)]
    return frames[0]


def _file_columns(f: LandingFile) -> list[Column]:
    return [F.lit(f.rel_path).alias("_source_file"),
            F.lit(f.folder_date).cast("date").alias("_folder_date")]


def read_lines(spark: SparkSession, files: list[LandingFile],
               scratch_dir: Path | None = None) -> DataFrame:
    """All lines of ``files`` as ``LINES_SCHEMA`` rows, numbered in one scan (``number_lines``).

    Empty files have no lines and are not read (a zero-byte ``.gz`` is no gzip stream). Files
    the engines cannot read as text are decoded into numbered Parquet copies under
    ``scratch_dir`` (a new temporary folder when not given), which must outlive the returned
    frame's evaluation.
    """
    text_frames, decoded_frames = [], []
    for f in files:
        if f.path.stat().st_size == 0:
            continue
        if readable_as_text(f.path):
            text_frames.append(spark.read.text(str(f.path)).select(
                *_file_columns(f), "value", F.monotonically_increasing_id().alias("_order")))
            continue
        scratch_dir = scratch_dir or Path(tempfile.mkdtemp(prefix="rocketlens-decoded-"))
        copy = write_decoded_copy(f.path, scratch_dir / "decoded" / f"{f.rel_path}.parquet")
        log.warning("%s is not clean UTF-8 text: read from a decoded copy (%d lines)",
                    f.rel_path, copy.lines)
        decoded_frames.append(spark.read.schema(DECODED_LINES_SCHEMA).parquet(str(copy.path))
                              .select(*_file_columns(f), "_line_no",
                                      clean_line(F.col("line")).alias("line"), "_defect"))
    frames = decoded_frames
    if text_frames:
        text_df = union_all(text_frames)
        frames = [number_lines(text_df), *decoded_frames]
    if not frames:
        return spark.createDataFrame([], LINES_SCHEMA)
    return union_all(frames).select(*[F.col(f.name).cast(f.dataType).alias(f.name)
                                      for f in LINES_SCHEMA.fields])


def files_frame(spark: SparkSession, files: list[LandingFile]) -> DataFrame:
    """One row per landing file (``_source_file, _folder_date``), so that a file without lines
    is still counted in ``bronze.ingest_counts``."""
    return spark.createDataFrame([(f.rel_path, f.folder_date) for f in files],
                                 "_source_file string, _folder_date date")


def line_defect(line: Column, defect: Column) -> Column:
    """Why a line is unusable whatever it says, or null: its decoding defect (``invalid_utf8``,
    ``truncated_gzip``…), else control characters — binary data, such as the NUL run a crash
    leaves in a preallocated file."""
    return F.coalesce(defect, F.when(line.rlike(CONTROL_CHARS), F.lit(BINARY_DATA)))


def line_day(record_ts: Column, folder_date: Column) -> Column:
    """The day a line belongs to: its record's UTC day, else (no usable ts) its folder's day."""
    return F.coalesce(F.to_date(record_ts), folder_date)


def line_status(day: Column, folder_date: Column, reason: Column, run_date: dt.date) -> Column:
    """``accepted`` | ``quarantined`` | ``other_day`` for a line in the run for ``run_date``.

    A record of day D in folder D or D+1 is this run's. Records of another day are ``other_day``
    when the run of their own day reads this folder (day D−1 in folder D; anything in folder
    D+1); anything else in folder D could never be taken by any run, so it is quarantined
    (``out_of_window``) rather than lost.
    """
    d = F.lit(run_date).cast("date")
    return (F.when(day == d, F.when(reason.isNull(), F.lit("accepted")).otherwise("quarantined"))
            .when((folder_date == d) & (day == F.date_sub(d, 1)), F.lit("other_day"))
            .when(folder_date == F.date_add(d, 1), F.lit("other_day"))
            .otherwise(F.lit("quarantined")))


def out_of_window_reason(day: Column, folder_date: Column) -> Column:
    return F.concat(F.lit("out_of_window: record day "), day.cast("string"),
                    F.lit(" in folder date="), folder_date.cast("string"))
