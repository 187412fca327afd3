"""Landing ``client_logs`` → bronze.client_log_events, quarantine rows and per-file counts.

A line that matches no template is counted as ``unmatched`` (not quarantined, DESIGN.md §3.4);
a line that matches one but whose values do not parse is quarantined with the reason. A line's
day is its UTC timestamp's day, or its folder's day when it has none (a stack-trace line).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.ingest.bronze import accepted_records, file_counts, quarantine_rows
from jobs.ingest.client_logs import LogZones, host_of_source_file, parse_client_log_lines
from jobs.ingest.json_sources import SourceFrames
from jobs.ingest.landing_files import (
    files_frame,
    line_day,
    line_defect,
    line_status,
    list_landing_files,
    out_of_window_reason,
    read_lines,
)
from jobs.ingest.landing_source import MAX_PARTITIONS
from jobs.lake import Stage, no_staging
from schemas.client_logs import CLIENT_LOG_EVENT_SCHEMA
from schemas.landing import CLIENT_LOGS

EVENT_FIELDS = [f.name for f in CLIENT_LOG_EVENT_SCHEMA.fields
                if f.name not in ("_source_file", "_line_no", "parse_error")]


def host_of(source_file) -> F.Column:
    """``client_logs/date=D/<host>/…`` → ``<host>`` (null for a file directly in the day folder)."""
    return host_of_source_file(source_file)


def classify_log_lines(lines_df: DataFrame, run_date: dt.date, zone: str | LogZones) -> DataFrame:
    """Numbered log lines → parsed events plus ``_status`` and ``_reason`` (as for JSON sources)."""
    parsed = parse_client_log_lines(lines_df, zone,
                                    keep_columns=("_folder_date", "line", "_defect"))
    day = line_day(F.col("ts"), F.col("_folder_date"))
    # A damaged line (invalid UTF-8, binary, cut by a broken gzip) is quarantined even when it
    # matches no template: it says the file is damaged, not that the client logged something else.
    check = F.coalesce(line_defect(F.col("line"), F.col("_defect")),
                       F.when(F.col("parse_error").isNotNull(),
                              F.concat(F.lit("unparseable_log_line: "), F.col("parse_error"))))
    status = line_status(F.col("_day"), F.col("_folder_date"), F.col("_check"), run_date)
    classified = (parsed.withColumn("_day", day).withColumn("_check", check)
                  .withColumn("_status", status))
    # Unmatched lines are counted, never quarantined, whatever their day — unless their own
    # day's run will count them (other_day), so that no line is counted twice.
    matched_or_not = F.when(F.col("event").isNull() & F.col("_check").isNull()
                            & (F.col("_status") != "other_day"),
                            F.lit("unmatched")).otherwise(F.col("_status"))
    quarantined = F.col("_status") == "quarantined"
    # the raw line is kept only for the quarantine: the staged lines were twice the day's log
    # bytes, as each persist line is its message again (bench M: 6.8 M lines)
    return (classified.withColumn("_status", matched_or_not)
            .withColumn("_reason", F.when(
                quarantined,
                F.coalesce(F.col("_check"),
                           out_of_window_reason(F.col("_day"), F.col("_folder_date")))))
            .withColumn("line", F.when(quarantined, F.col("line")))
            .withColumn("host", host_of(F.col("_source_file"))))


def ingest_client_logs(spark: SparkSession, landing: Path, run_date: dt.date, run_id: str,
                       ingested_at: dt.datetime, raw_max_chars: int, zone: str | LogZones,
                       stage: Stage = no_staging,
                       max_partitions: int = MAX_PARTITIONS) -> SourceFrames:
    files = list_landing_files(landing, CLIENT_LOGS, run_date)
    lines = read_lines(spark, files, max_partitions=max_partitions)
    classified = stage(classify_log_lines(lines, run_date, zone), CLIENT_LOGS)

    def records_of(lines: DataFrame) -> DataFrame:
        return accepted_records(lines, ["host", *EVENT_FIELDS], run_date, run_id, ingested_at)

    return SourceFrames(
        records=records_of(classified),
        quarantine=quarantine_rows(classified, CLIENT_LOGS, run_date, run_id, raw_max_chars),
        counts=file_counts(classified, files_frame(spark, files), CLIENT_LOGS, run_date, run_id),
        files=len(files),
        records_of=records_of,
    )
