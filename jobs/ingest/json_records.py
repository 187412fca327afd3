"""Day and status of parsed JSON-Lines landing records (DESIGN.md §3).

The landing data source parses and checks every line in Python (``jobs.ingest.json_lines``); what
is left for Spark is the record's day, hence its status, which both engines compute alike.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from jobs.ingest.json_lines import RecordReader
from jobs.ingest.landing_files import line_day, line_status, out_of_window_reason
from jobs.ingest.landing_source import classified_schema, classify_lines
from jobs.ingest.native_landing import NOT_A_RECORD
from schemas.landing import JsonSource


def with_status(records_df: DataFrame, source: JsonSource, run_date: dt.date) -> DataFrame:
    """Records of the landing data source (``classified_schema``) → ``ts`` as a UTC timestamp
    plus ``_day``, ``_status`` (accepted | quarantined | other_day) and ``_reason`` (why
    quarantined)."""
    day = line_day(F.col("ts"), F.col("_folder_date"))
    classified = (records_df.withColumn("ts", F.timestamp_micros("_ts_micros"))
                  .withColumn("_day", day)
                  .withColumn("_status", F.when(F.col("_check") == NOT_A_RECORD, "unmatched")
                              .otherwise(line_status(F.col("_day"), F.col("_folder_date"),
                                                     F.col("_check"), run_date))))
    reason = F.when(F.col("_status") == "quarantined",
                    F.coalesce(F.col("_check"),
                               out_of_window_reason(F.col("_day"), F.col("_folder_date"))))
    return classified.select(
        "_source_file", "_folder_date", "_line_no", "line", *source.field_names, "_extra",
        "_day", "_status", reason.alias("_reason"))


def classify_json_lines(lines_df: DataFrame, source: JsonSource, run_date: dt.date) -> DataFrame:
    """Numbered lines already in a frame (``_source_file, _folder_date, _line_no, line,
    _defect``) → as ``with_status``, parsed and checked by the same Python code as the landing
    data source (``mapInArrow``)."""
    schema = classified_schema(source)
    arrow_schema = to_arrow_schema(schema)
    run_day = (run_date - dt.date(1970, 1, 1)).days

    def classify(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        reader = RecordReader(source)
        for batch in batches:
            head = [batch.column(name) for name in ("_source_file", "_folder_date", "_line_no")]
            yield classify_lines(reader, arrow_schema, run_day, head,
                                 batch.column("line").to_pylist(),
                                 batch.column("_defect").to_pylist())

    lines = lines_df.select("_source_file", "_folder_date", "_line_no", "line", "_defect")
    return with_status(lines.mapInArrow(classify, schema), source, run_date)
