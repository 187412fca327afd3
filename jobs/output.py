"""Render query results for the terminal: aligned table, JSON Lines or CSV (DESIGN.md §1)."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from decimal import Decimal


def to_jsonable(value):
    """Timestamps as ISO-8601 UTC (``…Z``), dates as ``YYYY-MM-DD``, nested values recursively."""
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None).isoformat() + "Z"
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "asDict"):
        return to_jsonable(value.asDict(recursive=True))
    return value


def _cell(value) -> str:
    value = to_jsonable(value)
    if value is None:
        return "NULL"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def render_table(columns: list[str], rows: list[list]) -> str:
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    return "\n".join(line.rstrip() for line in lines)


def render(columns: list[str], rows: list[dict], fmt: str) -> str:
    if fmt == "json":
        return "".join(json.dumps({c: to_jsonable(r[c]) for c in columns}) + "\n" for r in rows)
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(columns)
        for r in rows:
            writer.writerow([_cell(r[c]) if r[c] is not None else "" for c in columns])
        return buf.getvalue()
    return render_table(columns, [[r[c] for c in columns] for r in rows]) + "\n"
