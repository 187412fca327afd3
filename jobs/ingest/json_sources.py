"""Landing JSON sources → bronze frames (records, quarantine rows, per-file counts)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from jobs.ingest.bronze import accepted_records, file_counts, quarantine_rows
from jobs.ingest.json_records import with_status
from jobs.ingest.landing_files import files_frame, list_landing_files
from jobs.ingest.landing_source import MAX_PARTITIONS, read_landing
from jobs.lake import Stage, no_staging
from schemas.landing import JsonSource


@dataclass(frozen=True)
class SourceFrames:
    """What one landing source contributes to bronze."""

    records: DataFrame
    quarantine: DataFrame
    counts: DataFrame
    files: int
    # classified lines (some of the staged ones) → their accepted bronze records: a run that
    # stages the lines split into batches of groups takes each batch's records with it
    records_of: Callable[[DataFrame], DataFrame]


def bronze_fields(source: JsonSource) -> list[str]:
    return [*source.field_names, "_extra"]


def ingest_json_source(spark: SparkSession, landing: Path, source: JsonSource,
                       run_date: dt.date, run_id: str, ingested_at: dt.datetime,
                       raw_max_chars: int, stage: Stage = no_staging,
                       max_partitions: int = MAX_PARTITIONS) -> SourceFrames:
    files = list_landing_files(landing, source.name, run_date)
    records = read_landing(spark, source.name, files, run_date, max_partitions=max_partitions)
    classified = stage(with_status(records, source, run_date), source.name)

    def records_of(lines: DataFrame) -> DataFrame:
        return accepted_records(lines, bronze_fields(source), run_date, run_id, ingested_at)

    return SourceFrames(
        records=records_of(classified),
        quarantine=quarantine_rows(classified, source.name, run_date, run_id, raw_max_chars),
        counts=file_counts(classified, files_frame(spark, files), source.name, run_date, run_id),
        files=len(files),
        records_of=records_of,
    )
