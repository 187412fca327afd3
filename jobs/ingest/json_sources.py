"""Landing JSON sources → bronze frames (records, quarantine rows, per-file counts)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from jobs.ingest.bronze import accepted_records, file_counts, quarantine_rows
from jobs.ingest.json_records import classify_json_lines
from jobs.ingest.landing_files import files_frame, list_landing_files, read_lines
from jobs.lake import Stage, no_staging
from schemas.landing import JsonSource


@dataclass(frozen=True)
class SourceFrames:
    """What one landing source contributes to bronze."""

    records: DataFrame
    quarantine: DataFrame
    counts: DataFrame
    files: int


def bronze_fields(source: JsonSource) -> list[str]:
    return [*source.field_names, "_extra"]


def ingest_json_source(spark: SparkSession, landing: Path, source: JsonSource,
                       run_date: dt.date, run_id: str, ingested_at: dt.datetime,
                       raw_max_chars: int, stage: Stage = no_staging,
                       scratch_dir: Path | None = None) -> SourceFrames:
    files = list_landing_files(landing, source.name, run_date)
    # Numbering leaves each file's lines in one partition, and a JSON source is a few large
    # files: spread the lines so that the parsing runs on every core. Client logs, hundreds of
    # files, are spread already and only pay for the shuffle (slower), so they are left alone.
    lines = read_lines(spark, files, scratch_dir).repartition("_line_no")
    classified = stage(classify_json_lines(lines, source, run_date), source.name)
    return SourceFrames(
        records=accepted_records(classified, bronze_fields(source), run_date, run_id,
                                 ingested_at),
        quarantine=quarantine_rows(classified, source.name, run_date, run_id, raw_max_chars),
        counts=file_counts(classified, files_frame(spark, files), source.name, run_date, run_id),
        files=len(files),
    )
