"""Find landing files and read them as numbered text lines.

Every row carries its file name (neither ``input_file_name()`` nor ``_metadata`` exists on Sail)
and its 1-based line number: the landing data source (``jobs.ingest.landing_source``) reads the
files itself. Its bad lines carry a ``_defect`` (invalid UTF-8, cut by a broken gzip) and are
quarantined.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.ingest.file_integrity import BINARY_DATA, CONTROL_CHARS
from jobs.ingest.landing_source import LINES, MAX_PARTITIONS, read_landing
from jobs.ingest.native_landing import is_native

log = logging.getLogger(__name__)

LANDING_SUFFIXES = (".jsonl", ".jsonl.gz", ".log", ".log.gz")

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
            # RocketMQ's own outputs (.txt, .json) under cluster=C/group=G/ (docs/landing-mqadmin.md)
            native = "/cluster=" in rel and is_native(source, rel)
            if not native and not path.name.endswith(LANDING_SUFFIXES):
                log.warning("skipping %s: not one of %s", rel, ", ".join(LANDING_SUFFIXES))
                continue
            found.append(LandingFile(source, folder_date, path, rel))
    return found


def union_all(frames: list[DataFrame]) -> DataFrame:
    """``unionByName`` of all ``frames`` as a balanced tree: a chain of hundreds of unions (one
    per landing file) overflowed Sail's stack while planning (SIGSEGV); the tree is log2(n)
    deep."""
    while len(frames) > 1:
        frames = [functools.reduce(DataFrame.unionByName, frames[i:i + 2])
                  for i in range(0, len(frames), 2)]
    return frames[0]


def read_lines(spark: SparkSession, files: list[LandingFile],
               scratch_dir: Path | None = None, max_partitions: int = MAX_PARTITIONS) -> DataFrame:
    """All lines of ``files`` as ``LINES_SCHEMA`` rows, numbered per file by the landing data
    source (``jobs.ingest.landing_source``), which also decodes broken gzip and invalid UTF-8
    line by line, in about ``max_partitions`` partitions. ``scratch_dir`` is not used any more:
    nothing is copied."""
    del scratch_dir
    return read_landing(spark, LINES, files, max_partitions=max_partitions)


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
