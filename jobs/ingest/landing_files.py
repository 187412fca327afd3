"""Find landing files and read them as numbered text lines.

Files are read one by one with ``wholetext`` and split on ``\\n``: that gives exact 1-based line
numbers and lets every row carry its file name as a literal. Both are needed for quarantine and
per-file reconciliation, and neither ``input_file_name()`` nor ``_metadata`` exists on Sail; one
read per file also sidesteps Sail's refusal to mix ``.gz`` and plain files in one read.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, LongType, StringType, StructField, StructType

log = logging.getLogger(__name__)

LANDING_SUFFIXES = (".jsonl", ".jsonl.gz", ".log", ".log.gz")

LINES_SCHEMA = StructType([
    StructField("_source_file", StringType(), False),
    StructField("_folder_date", DateType(), False),
    StructField("_line_no", LongType(), False),
    StructField("line", StringType(), True),
])


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
    """The files of ``source`` in the run's day folders, sorted for a stable order."""
    found: list[LandingFile] = []
    for folder_date in day_folders(run_date):
        folder = landing / source / f"date={folder_date.isoformat()}"
        if not folder.is_dir():
            continue
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            rel = path.relative_to(landing).as_posix()
            if any(part.startswith((".", "_")) for part in path.relative_to(folder).parts):
                continue  # hidden files and markers such as _SUCCESS
            if not path.name.endswith(LANDING_SUFFIXES):
                log.warning("skipping %s: not one of %s", rel, ", ".join(LANDING_SUFFIXES))
                continue
            found.append(LandingFile(source, folder_date, path, rel))
    return found


def split_numbered_lines(text_df: DataFrame) -> DataFrame:
    """Whole-file text rows (``value``) → one row per line with its 1-based ``_line_no``.

    The empty string after a final ``\\n`` is not a line; a trailing ``\\r`` (CRLF) is dropped.
    """
    exploded = text_df.select("*", F.posexplode(F.split("value", "\n")).alias("_pos", "_raw"),
                              F.size(F.split("value", "\n")).alias("_n"))
    is_final_empty = (F.col("_pos") == F.col("_n") - 1) & (F.col("_raw") == "")
    return (exploded.where(~is_final_empty)
            .withColumn("_line_no", (F.col("_pos") + 1).cast("long"))
            .withColumn("line", F.regexp_replace("_raw", "\r$", ""))
            .drop("value", "_pos", "_raw", "_n"))


def read_lines(spark: SparkSession, files: list[LandingFile]) -> DataFrame:
    """All lines of ``files`` as ``LINES_SCHEMA`` rows."""
    if not files:
        return spark.createDataFrame([], LINES_SCHEMA)
    frames = [
        spark.read.text(str(f.path), wholetext=True).select(
            F.lit(f.rel_path).alias("_source_file"),
            F.lit(f.folder_date).cast("date").alias("_folder_date"),
            "value",
        )
        for f in files
    ]
    text_df = functools.reduce(DataFrame.unionByName, frames)
    return split_numbered_lines(text_df).select(*[F.col(f.name) for f in LINES_SCHEMA.fields])


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
