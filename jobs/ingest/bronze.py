"""Classified lines → the three bronze outputs: accepted records, quarantine rows, per-file counts.

DESIGN.md §4: per source file, lines in = accepted + quarantined + other_day (+ unmatched log
lines); quarantine keeps ``date, source, source_file, line_no, raw, reason, _run_id`` with ``raw``
cut at 64 KiB (configurable).
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

STATUSES = ("accepted", "quarantined", "other_day", "unmatched")

QUARANTINE_COLUMNS = ("source", "source_file", "line_no", "raw", "reason", "_run_id", "date")
FILE_COUNT_COLUMNS = ("source", "source_file", "folder_date", "lines", "accepted", "quarantined",
                      "other_day", "unmatched", "_run_id", "date")


def _run_columns(run_date: dt.date, run_id: str, ingested_at: dt.datetime) -> list:
    return [
        F.lit(ingested_at).cast("timestamp").alias("_ingested_at"),
        F.lit(run_id).alias("_run_id"),
        F.lit(run_date).cast("date").alias("date"),
    ]


def accepted_records(classified_df: DataFrame, fields: list[str], run_date: dt.date, run_id: str,
                     ingested_at: dt.datetime) -> DataFrame:
    """Accepted lines as bronze rows: ``fields`` then lineage columns, ``date`` last.

    ``date`` is last in every lake table because Sail returns partition columns last on read;
    keeping them last on write gives the same ``SELECT *`` on both engines.
    """
    return (classified_df.where(F.col("_status") == "accepted")
            .select(*fields, "_source_file", "_line_no",
                    *_run_columns(run_date, run_id, ingested_at)))


def quarantine_rows(classified_df: DataFrame, source: str, run_date: dt.date, run_id: str,
                    raw_max_chars: int) -> DataFrame:
    """Quarantined lines in the contract's ``bronze.quarantine`` shape."""
    return (classified_df.where(F.col("_status") == "quarantined")
            .select(F.lit(source).alias("source"),
                    F.col("_source_file").alias("source_file"),
                    F.col("_line_no").alias("line_no"),
                    F.substring("line", 1, raw_max_chars).alias("raw"),
                    F.col("_reason").alias("reason"),
                    F.lit(run_id).alias("_run_id"),
                    F.lit(run_date).cast("date").alias("date")))


def file_counts(classified_df: DataFrame, files_df: DataFrame, source: str, run_date: dt.date,
                run_id: str) -> DataFrame:
    """One row per source file of ``files_df`` (``_source_file, _folder_date``): lines and how
    each was handled; the columns reconcile. A file without lines (empty, or a gzip cut inside
    its header) has a row of zeros rather than none, so every landing file read is accounted for.
    """
    counts = [F.sum(F.when(F.col("_status") == s, 1).otherwise(0)).cast("long").alias(s)
              for s in STATUSES]
    per_file = (classified_df.groupBy("_source_file")
                .agg(F.count(F.lit(1)).cast("long").alias("lines"), *counts))
    return (files_df.join(per_file, on="_source_file", how="left")
            .select(F.lit(source).alias("source"),
                    F.col("_source_file").alias("source_file"),
                    F.col("_folder_date").alias("folder_date"),
                    *[F.coalesce(F.col(c), F.lit(0).cast("long")).alias(c)
                      for c in ("lines", *STATUSES)],
                    F.lit(run_id).alias("_run_id"),
                    F.lit(run_date).cast("date").alias("date")))
