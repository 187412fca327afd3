"""Parse and validate JSON-Lines landing records in Python, strictly, one line at a time.

One implementation for both engines: the landing data source (``jobs.ingest.landing_source``)
runs it inside the read, so a line is parsed once (orjson) instead of three ``from_json`` per line
(Sail ignores PERMISSIVE/corrupt-record options), and Sail and classic Spark cannot read a line
differently. The rules are the ones the Spark expressions applied before (DESIGN.md §3):

- a line must be exactly one JSON object (RFC 8259: no single quotes, ``NaN``, trailing text);
- a JSON ``null`` is a missing field; a present value that does not fit the field's type is a
  ``wrong_type`` (a string field takes any value as its JSON text, as Spark's ``from_json`` does);
  inside arrays and structs a value that does not fit is null and the record stays — except an
  array element that is not an object where an object is expected: the whole field is then a
  ``wrong_type`` (classic Spark's reading; Sail's ``from_json`` kept a null element);
- ``ts`` is epoch milliseconds (up to 15 digits) or an ISO-8601 string ending in ``Z`` or an
  offset; anything else is an ``invalid_timestamp``;
- unknown keys are kept with their JSON text (``_extra``), never an error.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

import orjson
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructType,
)

from schemas.landing import JsonSource

NOT_OBJECT = "malformed_json: not a JSON object"
TRUNCATED = "malformed_json: truncated record"
EMPTY_LINE = "empty_line"

_INT64 = (-(1 << 63), (1 << 63) - 1)
_INT32 = (-(1 << 31), (1 << 31) - 1)
_EPOCH_MILLIS = re.compile(r"-?[0-9]{1,15}")
_ISO_WITH_ZONE = re.compile(r"(Z|z|[+-][0-9]{2}(:?[0-9]{2})?)$")
# What a string -> timestamp cast takes for a zoned ISO-8601 value on both engines: a date, or a
# date and time with seconds and up to 9 fraction digits (kept to microseconds), then Z or an
# offset. A date alone is midnight UTC (its "-DD" passes the zone test above, as it did before).
_ISO_TIMESTAMP = re.compile(
    r"([+-]?[0-9]{4,6})-([0-9]{2})-([0-9]{2})"
    r"(?:[T ]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?"
    r"(Z|[+-][0-9]{2}(?::?[0-9]{2})?))?")
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
MICROS_PER_DAY = 86_400_000_000


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text}")
    return value


def _reject_constant(text: str) -> None:
    raise ValueError(f"not JSON: {text}")


def load_object(line: str | bytes) -> dict | None:
    """The line as a dict when it is exactly one JSON object (blanks around allowed), else None.

    orjson first; the standard library only for what orjson reads as a float though it is an
    integer beyond 64 bits (a ``wrong_type`` for a long field, as before, not a float)."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    if any(type(v) is float for v in value.values()):
        try:
            value = json.loads(line, parse_float=_finite_float, parse_constant=_reject_constant)
        except ValueError:
            return None
    return value


def json_text(value: Any) -> str | None:
    """A value's JSON text as a string field holds it: a string as itself, anything else as
    compact JSON (``from_json`` into a string field did the same)."""
    if value is None or isinstance(value, str):
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return orjson.dumps(value).decode()


class WrongType(Exception):
    """A value that cannot be read as its field's type where that fails the whole field."""


def converter(dtype: DataType) -> Callable[[Any], Any]:
    """A function: parsed JSON value -> the value typed as ``dtype`` (None when it does not fit).

    Built once per schema so that the per-value work is one call per field."""
    if isinstance(dtype, StringType):
        return json_text
    if isinstance(dtype, (LongType, IntegerType)):
        low, high = _INT64 if isinstance(dtype, LongType) else _INT32

        def to_int(v):
            return v if type(v) is int and low <= v <= high else None
        return to_int
    if isinstance(dtype, DoubleType):
        def to_double(v):
            return float(v) if type(v) in (int, float) else None
        return to_double
    if isinstance(dtype, BooleanType):
        def to_bool(v):
            return v if type(v) is bool else None
        return to_bool
    if isinstance(dtype, ArrayType):
        element = converter(dtype.elementType)
        objects = isinstance(dtype.elementType, StructType)

        def to_list(v):
            if type(v) is not list:
                return None
            if objects and any(e is not None and type(e) is not dict for e in v):
                raise WrongType
            return [element(e) for e in v]
        return to_list
    if isinstance(dtype, StructType):
        fields = [(f.name, converter(f.dataType)) for f in dtype.fields]

        def to_struct(v):
            if type(v) is not dict:
                return None
            return {name: conv(v.get(name)) for name, conv in fields}
        return to_struct
    if isinstance(dtype, MapType):
        value = converter(dtype.valueType)

        def to_map(v):
            if type(v) is not dict:
                return None
            return [(k, value(x)) for k, x in v.items()]
        return to_map
    raise TypeError(f"no JSON reading for {dtype}")


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year, unlike ``datetime``)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _iso_micros(text: str) -> int | None:
    match = _ISO_TIMESTAMP.fullmatch(text.strip())
    if not match:
        return None
    year, month, day = int(match[1]), int(match[2]), int(match[3])
    if not 1 <= month <= 12:
        return None
    last = 29 if month == 2 and _is_leap(year) else _DAYS_IN_MONTH[month - 1]
    if not 1 <= day <= last:
        return None
    micros = _days_from_civil(year, month, day) * MICROS_PER_DAY
    if match[4] is None:
        return micros
    hour, minute, second = int(match[4]), int(match[5]), int(match[6])
    if hour > 23 or minute > 59 or second > 59:
        return None
    fraction = int((match[7] or "").ljust(6, "0")[:6])
    zone = match[8]
    offset = 0
    if zone != "Z":
        digits = zone[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:] or 0)
        if hours > 18 or minutes > 59:
            return None
        offset = (hours * 60 + minutes) * 60 * (-1 if zone[0] == "-" else 1)
    return micros + ((hour * 60 + minute) * 60 + second - offset) * 1_000_000 + fraction


def record_ts_micros(raw: str | None) -> int | None:
    """A ``ts`` value's text → UTC epoch microseconds, else None: epoch milliseconds (up to 15
    digits) or ISO-8601 with ``Z``/an offset; an ISO value without a zone is ambiguous."""
    if raw is None:
        return None
    if _EPOCH_MILLIS.fullmatch(raw):
        return int(raw) * 1000
    if _ISO_WITH_ZONE.search(raw, max(0, len(raw) - 6)):  # a zone is at most 6 characters
        return _iso_micros(raw)
    return None


def malformed_reason(line: str) -> str:
    """``truncated record`` for a line that starts a record and never closes it (a collector cut
    mid-write), else ``not a JSON object``."""
    trimmed = line.strip(" ")
    if trimmed.startswith('{"') and not trimmed.endswith("}"):
        return TRUNCATED
    return NOT_OBJECT


class RecordReader:
    """Parses and checks the lines of one JSON source (its converters built once)."""

    def __init__(self, source: JsonSource):
        self.source = source
        self.names = source.field_names
        self.known = frozenset(self.names)
        self.converters = [(name, converter(source.schema[name].dataType))
                           for name in self.names if name != "ts"]
        self.required = source.required
        self.non_negative = source.non_negative
        self.enums = source.enums

    def read(self, line: str) -> tuple[dict | None, int | None, list | None, str | None]:
        """``(typed fields, ts micros, extra, reason)`` of a line free of decoding defects.

        ``typed`` and ``extra`` are None when the line is no JSON object; ``reason`` is None
        when the record passes every check (its day is decided later)."""
        line = line.removeprefix("\ufeff")  # a byte-order mark, as the reader drops it
        if line.strip(" ") == "":
            return None, None, None, EMPTY_LINE
        raw = load_object(line)
        if raw is None:
            return None, None, None, malformed_reason(line)
        extra = [(k, json_text(v)) for k, v in raw.items() if k not in self.known]
        typed: dict[str, Any] = {}
        wrong = None
        for name, conv in self.converters:
            value = raw.get(name)
            try:
                typed[name] = None if value is None else conv(value)
            except WrongType:
                typed[name] = None
            if wrong is None and value is not None and typed[name] is None:
                wrong = name
        ts_text = json_text(raw.get("ts"))
        ts = record_ts_micros(ts_text)
        typed["ts"] = ts
        return typed, ts, extra, self._reason(raw, typed, ts, ts_text, wrong)

    def _reason(self, raw: dict, typed: dict, ts: int | None, ts_text: str | None,
                wrong: str | None) -> str | None:
        for name in self.required:
            if raw.get(name) is None:
                return f"missing_required_field: {name}"
        if ts is None:
            return f"invalid_timestamp: ts={ts_text}"
        if wrong is not None:
            return f"wrong_type: {wrong}"
        for name in self.non_negative:
            value = typed[name]
            if value is not None and value < 0:
                return f"negative_offset: {name}={value}"
        for name, allowed in self.enums:
            value = typed[name]
            if value is not None and value not in allowed:
                return f"unknown_enum_value: {name}={value}"
        return None
