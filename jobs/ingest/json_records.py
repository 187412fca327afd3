"""Parse and validate JSON-Lines landing records without engine-specific reader options.

Sail ignores PERMISSIVE/corrupt-record options, so every line is read as text and parsed twice
with ``from_json``: once as ``map<string,string>`` (is it a JSON object, which keys are present,
their raw text) and once with the typed schema (a value of the wrong JSON type parses as null
there while it is present in the map). Both engines give identical results for both parses,
given the strictness below (tests/reliability/test_bad_input_transforms.py pins each difference).
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from jobs.ingest.landing_files import line_day, line_defect, line_status, out_of_window_reason
from schemas.landing import JsonSource

_ISO_WITH_ZONE = r"(Z|z|[+-][0-9]{2}(:?[0-9]{2})?)$"

# Spark's JSON parser takes single quotes and NaN/Infinity by default; Sail's takes neither.
STRICT_JSON = {"allowSingleQuotes": "false", "allowNonNumericNumbers": "false"}
_END_MARK = '{"#end":0}'


def parse_json_object(line: Column) -> Column:
    """The line as ``map<string,string>`` (each value's raw JSON text) when it is exactly one
    JSON object, else null.

    Spark's parser stops after the first complete value and ignores the rest of the line (two
    records glued together, an object followed by NUL padding); Sail's rejects the line. The
    line is therefore parsed as the first of two elements of ``[<line>, {"#end":0}]``: anything
    after the object breaks the array on both engines.
    """
    wrapped = F.from_json(F.concat(F.lit("["), line, F.lit(f",{_END_MARK}]")),
                          "array<map<string,string>>", STRICT_JSON)
    return F.when(F.size(wrapped) == 2, wrapped[0])


def parse_json_record(line: Column, source: JsonSource) -> Column:
    """The line parsed with the source's typed schema (a value of the wrong type is null)."""
    return F.from_json(line, source.parse_schema, STRICT_JSON).try_cast(source.schema)


def malformed_reason(line: Column) -> Column:
    """``malformed_json: truncated record`` for a line that starts a record and never closes it
    (a collector cut mid-write), else ``malformed_json: not a JSON object``."""
    trimmed = F.trim(line)
    return (F.when(trimmed.startswith('{"') & ~trimmed.endswith("}"),
                   F.lit("malformed_json: truncated record"))
            .otherwise(F.lit("malformed_json: not a JSON object")))


def parse_record_ts(raw: Column) -> Column:
    """Epoch milliseconds (a JSON number) or ISO-8601 with ``Z``/offset → UTC timestamp, else null.

    An ISO string without a zone is ambiguous and gives null (quarantined as invalid_timestamp).
    """
    return (F.when(raw.rlike(r"^-?[0-9]{1,15}$"), F.timestamp_millis(raw.try_cast("long")))
            .when(raw.rlike(_ISO_WITH_ZONE), F.try_to_timestamp(raw)))


def _first_reason(checks: list[tuple[Column, Column]]) -> Column:
    """The reason of the first check that holds (null when none does)."""
    expr = None
    for condition, reason in checks:
        expr = F.when(condition, reason) if expr is None else expr.when(condition, reason)
    return expr if expr is not None else F.lit(None).cast("string")


def raw_fields_schema(source: JsonSource) -> StructType:
    """Every known field as a string: ``from_json`` gives a value's JSON text there, as the map
    parse does, but reading a struct field is far cheaper than a map lookup per check."""
    return StructType([StructField(name, StringType()) for name in source.field_names])


def rejection_reason(source: JsonSource, line: Column, raw: Column, rec: Column,
                     ts: Column, raw_fields: Column | None = None,
                     defect: Column | None = None) -> Column:
    """Why a line cannot be accepted, in the order a person would fix it; null if it is fine.

    ``raw`` is the line as ``map<string,string>`` (null: not exactly one JSON object),
    ``raw_fields`` the known fields' raw text (``raw_fields_schema``; default: looked up in
    ``raw``), ``defect`` the line's decoding defect (``LINES_SCHEMA._defect``)."""
    fields = raw if raw_fields is None else raw_fields
    damaged = line_defect(line, F.lit(None).cast("string") if defect is None else defect)
    checks: list[tuple[Column, Column]] = [
        (damaged.isNotNull(), damaged),
        (F.trim(line) == "", F.lit("empty_line")),
        (raw.isNull(), malformed_reason(line)),
    ]
    for name in source.required:
        checks.append((fields[name].isNull(), F.lit(f"missing_required_field: {name}")))
    checks.append((ts.isNull(), F.concat(F.lit("invalid_timestamp: ts="), fields["ts"])))
    for name in source.field_names:
        if name != "ts":
            checks.append((fields[name].isNotNull() & rec[name].isNull(),
                           F.lit(f"wrong_type: {name}")))
    for name in source.non_negative:
        checks.append((rec[name] < 0, F.concat(F.lit(f"negative_offset: {name}="),
                                               rec[name].cast("string"))))
    for name, allowed in source.enums:
        checks.append((rec[name].isNotNull() & ~rec[name].isin(*allowed),
                       F.concat(F.lit(f"unknown_enum_value: {name}="), rec[name])))
    return _first_reason(checks)


def classify_json_lines(lines_df: DataFrame, source: JsonSource, run_date: dt.date) -> DataFrame:
    """Numbered lines → typed record columns plus ``_status``, ``_reason``, ``_day``, ``_extra``.

    Input: ``_source_file, _folder_date, _line_no, line, _defect``. Output keeps all but
    ``_defect`` and adds every field of ``source.schema`` (``ts`` as a UTC timestamp), ``_extra``
    (unknown keys with their raw JSON text; kept, never an error), ``_day``, ``_status``
    (accepted | quarantined | other_day) and ``_reason`` (why quarantined).
    """
    raw = F.col("_raw")
    rec = F.col("_rec")
    known = F.array(*[F.lit(n) for n in source.field_names])
    parsed = lines_df.select(
        "_source_file", "_folder_date", "_line_no", "line", "_defect",
        parse_json_object(F.col("line")).alias("_raw"),
        parse_json_record(F.col("line"), source).alias("_rec"),
        F.from_json("line", raw_fields_schema(source), STRICT_JSON).alias("_raw_fields"),
    ).withColumn("_ts", parse_record_ts(F.col("_raw_fields")["ts"]))
    reason = rejection_reason(source, F.col("line"), raw, rec, F.col("_ts"),
                              F.col("_raw_fields"), F.col("_defect"))
    day = line_day(F.col("_ts"), F.col("_folder_date"))
    classified = parsed.select(
        "*",
        reason.alias("_check"),
        day.alias("_day"),
    ).withColumn("_status", line_status(F.col("_day"), F.col("_folder_date"), F.col("_check"),
                                        run_date))
    reason_final = F.when(F.col("_status") == "quarantined",
                          F.coalesce(F.col("_check"),
                                     out_of_window_reason(F.col("_day"), F.col("_folder_date"))))
    fields = [F.col("_ts").alias("ts") if n == "ts" else rec[n].alias(n)
              for n in source.field_names]
    return classified.select(
        "_source_file", "_folder_date", "_line_no", "line",
        *fields,
        F.map_filter(raw, lambda k, _v: ~F.array_contains(known, k)).alias("_extra"),
        "_day", "_status", reason_final.alias("_reason"),
    )
