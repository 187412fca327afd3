"""Landing files as a Spark Python data source: ``spark.read.format("rocketlens_landing")``.

Why a data source: a reader that opens a landing file itself knows every line's number, decodes
gzip and UTF-8 defects per line and parses each JSON line once, in one pass and in bounded
memory (``benchmarks/RESULTS.md``: numbering lines by a window over each file sorted whole files
in one partition; Sail exposes no file order and ignores PERMISSIVE). Both engines run it: classic
Spark in its Python workers, Sail (pysail) in its own Python, with Arrow record batches.

Partitions: a large plain file is cut at line ends into byte ranges of about ``split_bytes``; the
driver counts the lines before each cut (``plan_ranges``), so every range knows its first line
number. A gzip file is one range (it cannot be entered mid-stream). Ranges are then packed into
partitions of up to ``split_bytes`` (``pack_ranges``), and a partition yields one batch per
``CHUNK_BYTES`` read: both bound what a read holds in memory on Sail, whose reader threads run
ahead of the plan.

Lines are split as Hadoop's and Sail's text readers split them: at ``\\n``, ``\\r\\n`` and a lone
``\\r``; a last line without a terminator counts, an empty file has no lines. A leading UTF-8
byte-order mark is dropped from a line (Spark's text reader dropped it at the start of a file,
Sail's kept it).

Options: ``rows`` (``lines``, or the name of a JSON source), ``files`` (JSON list of
``[rel_path, path, folder_date]``), ``split_bytes``, ``max_partitions`` (ranges are packed into
larger partitions when a scan would have more; default ``MAX_PARTITIONS``), ``run_day``. For ``lines`` the rows are the
numbered lines (``LINES_SCHEMA``; client logs are parsed by Spark, ``jobs.ingest.client_logs``);
for a JSON source they are its parsed records with their check (``classified_schema``).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import re
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    DateType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from jobs.ingest.file_integrity import (
    BINARY_DATA,
    BOM,
    CHUNK_BYTES,
    CONTROL_CHARS,
    LF,
    decode_lines,
    is_gzip,
    line_ends,
    numbered_blocks,
    read_chunks,
)
from jobs.ingest.json_lines import (
    MICROS_PER_DAY,
    NOT_OBJECT,
    RecordReader,
    record_ts_micros,
)
from jobs.ingest.native_landing import is_native, native_lines
from schemas.landing import JSON_SOURCES, JsonSource

FORMAT = "rocketlens_landing"
SPLIT_BYTES = 64 << 20
# A scan's partitions are packed into about this many by default: Sail starts every partition
# of a scan at once, each thread holding up to 16 batches, so memory grows with their number (the
# bench M running-info file, 4.8 GB in 75 partitions of 64 MB, peaked at 3.2 GiB; issue #19). The
# run passes ``engine.read_partitions`` (``read_partitions``).
MAX_PARTITIONS = 16


def read_partitions(setting: int) -> int:
    """Partitions for a landing read: ``setting``, or this machine's cores when it is 0. Sail
    reads in threads of one process, where the parsing Python holds the GIL between pyarrow's
    calls: more partitions than cores only contend (the M running-info read: 26.3 s in 2
    partitions, 32.0 s in 16 on 2 cores). On a cluster, set it to the executors' cores."""
    return setting if setting > 0 else (os.cpu_count() or 1)

LINES_SCHEMA = StructType([
    StructField("_source_file", StringType(), False),
    StructField("_folder_date", DateType(), False),
    StructField("_line_no", LongType(), False),
    StructField("line", StringType(), True),
    # why the line is unusable whatever it says (invalid UTF-8, cut by a broken gzip), else null
    StructField("_defect", StringType(), True),
])

_CONTROL = re.compile(CONTROL_CHARS)


def classified_schema(source: JsonSource) -> StructType:
    """A JSON source's rows: file, folder day, line number, the line (only where it may be
    quarantined), the typed fields, unknown keys and the check.

    ``ts`` comes as ``_ts_micros`` (UTC epoch microseconds), turned into a timestamp by Spark:
    Sail 0.7.2 fails a Python data source whose schema has a timestamp (it converts the schema
    to Arrow without a time zone)."""
    fields = [StructField("_ts_micros", LongType(), True) if f.name == "ts"
              else StructField(f.name, f.dataType, True) for f in source.schema.fields]
    return StructType([
        *LINES_SCHEMA.fields[:3],
        StructField("line", StringType(), True),
        *fields,
        StructField("_extra", MapType(StringType(), StringType()), True),
        StructField("_check", StringType(), True),
    ])


# --- files, ranges and lines --------------------------------------------------------------------

@dataclass(frozen=True)
class FileRange(InputPartition):
    """Bytes ``[start, end)`` of one landing file (``end`` None: to its end), whose first line is
    line ``first_line``."""

    rel_path: str
    path: str
    folder_date: str
    start: int
    end: int | None
    first_line: int


def _count_lines(handle, start: int, end: int) -> int:
    """Lines that end in ``[start, end)``; ``end`` is just after a ``\\n``."""
    handle.seek(start)
    lines, remaining, last = 0, end - start, b""
    while remaining:
        chunk = handle.read(min(CHUNK_BYTES, remaining))
        remaining -= len(chunk)
        lines += line_ends(chunk)
        if b"\r" in chunk:
            lines += chunk.count(b"\r") - chunk.count(b"\r\n")
            if last.endswith(b"\r") and chunk.startswith(b"\n"):
                lines -= 1  # a CRLF split between chunks: counted once as CR, once as LF
        last = chunk[-1:]
    return lines


def plan_ranges(files: list[tuple[str, str, str]], split_bytes: int) -> list[FileRange]:
    """Partitions for ``files`` (``rel_path, path, folder_date``): a range per ``split_bytes`` of
    a plain file, cut just after a ``\\n``, with the number of its first line; an empty file has
    none (a zero-byte ``.gz`` is no gzip stream).

    The cuts are found by seeking; the lines before each cut are then counted on every core at
    once (``_count_lines`` runs without the GIL): counted one range after the other, the M day's
    4.8 GB running-info file kept one core busy for 5.5 s while the other waited (issue #19)."""
    cuts: list[tuple[str, str, str, int, int | None]] = []
    for rel, path, folder in files:
        size = Path(path).stat().st_size
        if size == 0:
            continue
        if is_gzip(Path(path)) or size <= split_bytes:
            cuts.append((rel, path, folder, 0, None))
            continue
        with open(path, "rb") as handle:
            start = 0
            while start < size:
                handle.seek(start + split_bytes)
                tail = handle.readline()  # up to and including the next "\n"
                end = start + split_bytes + len(tail)
                if not tail or end >= size:
                    cuts.append((rel, path, folder, start, None))
                    break
                cuts.append((rel, path, folder, start, end))
                start = end

    def lines_in(cut: tuple[str, str, str, int, int | None]) -> int:
        _rel, path, _folder, start, end = cut
        if end is None:  # a file's last range: no range after it needs its count
            return 0
        with open(path, "rb") as handle:
            return _count_lines(handle, start, end)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        counts = list(pool.map(lines_in, cuts))
    ranges: list[FileRange] = []
    first = 1
    for (rel, path, folder, cut_start, cut_end), lines in zip(cuts, counts):
        if cut_start == 0:
            first = 1
        ranges.append(FileRange(rel, path, folder, cut_start, cut_end, first))
        first += lines
    return ranges


@dataclass(frozen=True)
class RangeGroup(InputPartition):
    """One partition: consecutive ranges read one after the other, together about
    ``split_bytes`` at most (``pack_ranges``)."""

    ranges: tuple[FileRange, ...]


def _range_bytes(part: FileRange) -> int:
    end = Path(part.path).stat().st_size if part.end is None else part.end
    return end - part.start


def pack_ranges(ranges: list[FileRange], split_bytes: int) -> list[RangeGroup]:
    """``ranges`` in order, packed into groups of up to ``split_bytes`` (a larger range is a
    group of its own), as Spark's file sources pack small files into one split.

    Fewer partitions bound the memory of a read: Sail starts every partition of a scan at once,
    each in its own thread that runs ahead of the plan by up to 16 batches, so a day of hundreds
    of small files was held almost whole while Spark parsed it."""
    groups: list[list[FileRange]] = []
    size = 0
    for part in ranges:
        part_bytes = _range_bytes(part)
        if not groups or size + part_bytes > split_bytes:
            groups.append([])
            size = 0
        groups[-1].append(part)
        size += part_bytes
    return [RangeGroup(tuple(group)) for group in groups]


def range_chunks(part: FileRange, broken: list[str]) -> Iterator[bytes]:
    """The range's bytes in chunks (a whole file through ``read_chunks``, gzip decoded)."""
    if part.start == 0 and part.end is None:
        yield from read_chunks(Path(part.path), broken)
        return
    with open(part.path, "rb") as handle:
        handle.seek(part.start)
        remaining = None if part.end is None else part.end - part.start
        while remaining is None or remaining > 0:
            chunk = handle.read(CHUNK_BYTES if remaining is None else min(CHUNK_BYTES, remaining))
            if not chunk:
                return
            if remaining is not None:
                remaining -= len(chunk)
            yield chunk


# --- batches --------------------------------------------------------------------------------------

_OPEN_BRACE, _BACKSLASH = ord("{"), ord("\\")
# pyarrow's JSON reader parses a block in pieces of this size on its own threads: one partition
# then uses every core, which matters when another has ended (a gzip file is one partition)
PARSE_BLOCK_BYTES = 1 << 20
_TS_IS_TEXT = re.compile(rb'"ts"\s*:\s*"')
# UTF-16 surrogate escapes: orjson refuses a lone one, so such a block is read line by line
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abAB]")
_MAX_EPOCH_MILLIS = 10**15 - 1
_TEXT_TYPES = (pa.string(), pa.int64(), pa.bool_())
# ISO-8601 values that Arrow's string -> timestamp cast reads as ``record_ts_micros`` does (a
# valid calendar day is left to the cast, which fails on one it does not know): date, time with
# seconds and up to 6 fraction digits, ``Z`` or an offset of at most 18 hours.
_PLAIN_ISO = (r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[T ]"
              r"([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?"
              r"(Z|[+-](0[0-9]|1[0-8])(:?[0-5][0-9])?)$")


def arrow_copy(values: np.ndarray) -> pa.Array:
    """A 1-d NumPy array of numbers copied into memory of Arrow's own. ``pa.array`` of such an
    array wraps the NumPy memory instead, and a batch holding it must not reach Sail: Sail
    releases batches on its own threads, the release takes the GIL, and the scan deadlocked
    (client logs at S, issue #19)."""
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values),
                                 [None, arrow_buffer(values)])


def arrow_buffer(values: np.ndarray) -> pa.Buffer:
    """``values`` copied into a buffer of Arrow's own (``arrow_copy``)."""
    buffer = pa.allocate_buffer(values.nbytes)
    np.frombuffer(buffer, values.dtype)[:] = values
    return buffer


def file_head(rel_path: str, folder: dt.date, first: int, n: int) -> list[pa.Array]:
    """``_source_file``, ``_folder_date`` and ``_line_no`` of ``n`` lines of one file from line
    ``first``."""
    # a one-value array taken n times: 13x faster than pa.repeat of a string or a Python list
    return [pa.array([rel_path], pa.string()).take(pa.repeat(pa.scalar(0, pa.int32()), n)),
            pa.repeat(pa.scalar(folder, pa.date32()), n),
            arrow_copy(np.arange(first, first + n, dtype=np.int64))]


def block_lines(body: bytes) -> pa.Array:
    """The lines of ``body`` (as ``clean_body`` gives it) as a string array, built from the
    positions of its line ends by NumPy without the GIL: splitting it into Python ``bytes`` was
    most of the client-log read (issue #19)."""
    data = np.frombuffer(body, np.uint8)
    is_end = data == LF
    ends = np.flatnonzero(is_end)
    # line k ends where its "\n" is once the k line ends before it are taken out
    bounds = np.append(0, ends - np.arange(len(ends))).astype(np.int64)
    if not body.endswith(b"\n"):
        bounds = np.append(bounds, len(data) - len(ends))
    if bounds[-1] > np.iinfo(np.int32).max:  # more than a string array holds
        lines = body.split(b"\n")
        return pa.array(lines[:-1] if body.endswith(b"\n") else lines, pa.string())
    return pa.StringArray.from_buffers(len(bounds) - 1, arrow_buffer(bounds.astype(np.int32)),
                                       arrow_buffer(data[~is_end]))


def lines_batch(head: list[pa.Array], texts: pa.Array | list[str],
                defects: pa.Array | list[str | None]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [*head, pa.array(texts, pa.string()), pa.array(defects, pa.string())],
        schema=to_arrow_schema(LINES_SCHEMA))


def clean_body(block: bytes) -> bytes | None:
    """``block`` when its lines can be taken as they are: valid UTF-8, split at ``\\n`` alone, no
    line starting with a byte-order mark, at least one character; else None (the lines are then
    decoded one by one, ``decode_lines``). The body keeps the block's last line end (no copy):
    ``block_lines`` and ``object_lines`` read it as the end of the last line."""
    if block in (b"", b"\n") or b"\r" in block:
        return None
    if not block.isascii():  # a byte-order mark and invalid UTF-8 are not ASCII
        if block.startswith(BOM) or b"\n" + BOM in block:
            return None
        try:
            block.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return block


def object_lines(body: bytes) -> tuple[int, int] | None:
    """``(lines, longest line)`` of ``body`` (as ``clean_body`` gives it) when every line starts a
    JSON object and it holds no byte below 0x20 but the line ends and no backslash-u escape of a
    UTF-16 surrogate (orjson refuses a lone one); else None, and the caller reads the block line by
    line. One NumPy scan, run without the GIL (Sail runs every partition's Python in one
    process): counting the lines, the object starts and the control bytes with ``bytes`` methods
    held the GIL for a tenth of the JSON parse (issue #19). A tab or CR between tokens is valid
    JSON: it only sends its block the slow way."""
    data = np.frombuffer(body, np.uint8)
    if not len(data) or data[0] != _OPEN_BRACE:
        return None
    ends = np.flatnonzero(data < 0x20)
    if len(ends) and (data[ends] != LF).any():
        return None
    if body.endswith(b"\n"):
        starts, last_end = ends[:-1] + 1, len(data) - 1
    else:
        starts, last_end = ends + 1, len(data)
    if (data[starts] != _OPEN_BRACE).any():
        return None
    if (data == _BACKSLASH).any() and _SURROGATE_ESCAPE.search(body):
        return None
    bounds = np.concatenate(([-1], ends[:len(starts)], [last_end]))
    return len(starts) + 1, int(np.diff(bounds).max())


def text_ts_micros(values: pa.Array) -> pa.Array:
    """``record_ts_micros`` of every text ``ts``: one Arrow cast where every value has the plain
    shape both read alike (``_PLAIN_ISO``), else value by value (the connections parse spent half
    its time here, issue #19)."""
    if values.null_count == 0 and pc.all(pc.match_substring_regex(values, _PLAIN_ISO)).as_py():
        try:
            return pc.cast(pc.cast(values, pa.timestamp("us", tz="UTC")), pa.int64())
        except pa.ArrowInvalid:  # a day the calendar does not have
            pass
    return pa.array([record_ts_micros(v) for v in values.to_pylist()], pa.int64())


def struct_as_map(column: pa.ChunkedArray, map_type: pa.MapType) -> pa.Array:
    """A JSON object pyarrow read as a struct of string fields → the map of its present fields,
    in the struct's field order; a null struct → a null map. Vectorised: running info's
    ``properties`` row by row was a tenth of its parse (issue #19)."""
    flat = column.combine_chunks()
    names = pa.array([flat.type.field(i).name for i in range(flat.type.num_fields)], pa.string())
    children = flat.flatten()  # a null struct's fields are null: no entries
    n = len(flat)
    present = (np.column_stack([np.asarray(c.is_valid()) for c in children]) if children
               else np.zeros((n, 0), bool))
    rows, fields = np.nonzero(present)  # row-major: each row's entries in field order
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(present.sum(axis=1), out=offsets[1:])
    items = (pa.concat_arrays(children).take(pa.array(fields * n + rows)) if children
             else pa.array([], pa.string()))
    return pa.MapArray.from_arrays(arrow_copy(offsets), names.take(pa.array(fields)), items,
                                   type=map_type, mask=pc.invert(flat.is_valid()))


def _text_column(values: list, dtype: pa.DataType) -> list:
    """An inferred column's values as the JSON text a string field holds."""
    if dtype == pa.bool_():
        return [None if v is None else ("true" if v else "false") for v in values]
    if dtype == pa.int64():
        return [None if v is None else str(v) for v in values]
    return values


def read_clean_block(reader: RecordReader, arrow_schema: pa.Schema, run_day: int,
                     body: bytes) -> list[pa.Array] | None:
    """The typed columns, ``_extra`` and ``line`` of ``body`` (lines as ``clean_body`` gives
    them) when every line is an acceptable record, read at once by pyarrow's JSON reader;
    None when any line may need a reason, is ambiguous to it or is read differently by it — the
    caller then reads the block line by line (``RecordReader``), which decides. pyarrow fails on
    what the per-line reading would turn into a ``wrong_type`` or text (a number in a string
    field, an int beyond 32 bits, a duplicate key, trailing text), and a blank line or two
    objects on one line change its row count. Works on the bytes as read: decoding each line to
    text and joining them again was a third of the parse (issue #19)."""
    # every line must start an object: pyarrow 26 crashes the process (SIGSEGV) on a block whose
    # first value is a bare ``null``, and other values are no records anyway
    shape = object_lines(body)
    if shape is None:
        return None
    n, longest = shape
    source = reader.source
    # a null in an inferred column is a JSON null or a missing key: searched only when it matters
    nulls_are_json = functools.cache(lambda: b"null" in body)
    maps = {f.name for f in source.schema.fields if isinstance(f.dataType, MapType)}
    first_end = body.find(b"\n")
    ts_text = bool(_TS_IS_TEXT.search(body if first_end < 0 else body[:first_end]))
    parse_fields = [pa.field("ts", pa.string() if ts_text else pa.int64())]
    parse_fields += [arrow_schema.field(n) for n in reader.names if n != "ts" and n not in maps]
    try:
        table = pa_json.read_json(
            pa.BufferReader(body),  # native: pyarrow's threads read it without the GIL
            read_options=pa_json.ReadOptions(use_threads=True,
                                             block_size=max(PARSE_BLOCK_BYTES, longest + 1)),
            parse_options=pa_json.ParseOptions(explicit_schema=pa.schema(parse_fields),
                                               unexpected_field_behavior="infer"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != n:
        return None
    for field in parse_fields[1:]:
        if table.schema.field(field.name).type != field.type:
            return None  # e.g. an unknown key inside mq_table elements
    for name in source.required:
        if name in maps or table.column(name).null_count:
            return None
    ts = table.column("ts")
    if ts.null_count:
        return None
    if ts_text:
        ts_micros = text_ts_micros(ts.combine_chunks())
        if ts_micros.null_count:
            return None
    else:
        bounds = pc.min_max(ts)
        if bounds["min"].as_py() < 0 or bounds["max"].as_py() > _MAX_EPOCH_MILLIS:
            return None
        ts_micros = pc.multiply(ts, 1000).combine_chunks()
    if pc.min(ts_micros).as_py() < 0:
        return None
    for name in source.non_negative:
        low = pc.min(table.column(name)).as_py()
        if low is not None and low < 0:
            return None
    for name, allowed in source.enums:
        values = table.column(name).drop_null()
        if len(values) and not pc.all(pc.is_in(values, value_set=pa.array(allowed))).as_py():
            return None
    extra_names = [n for n in table.column_names if n not in reader.known]
    extra_values = []
    for name in extra_names:
        column = table.column(name)
        if column.type not in _TEXT_TYPES or (column.null_count and nulls_are_json()):
            return None
        extra_values.append(_text_column(column.to_pylist(), column.type))
    map_values: dict[str, pa.Array] = {}
    for name in maps:
        map_type = arrow_schema.field(name).type
        if name not in table.column_names:
            map_values[name] = pa.nulls(n, map_type)
            continue
        column = table.column(name)
        if not isinstance(column.type, pa.StructType) or any(
                column.type.field(i).type != pa.string() for i in range(column.type.num_fields)):
            return None  # map values that are not all strings: their text is the line's
        flat = column.combine_chunks()
        if any(flat.field(i).null_count > flat.null_count
               for i in range(column.type.num_fields)) and nulls_are_json():
            return None  # a null value and a missing key look alike here
        map_values[name] = struct_as_map(column, map_type)
    columns = []
    for name in reader.names:
        if name == "ts":
            columns.append(ts_micros)
        elif name in maps:
            columns.append(map_values[name])
        else:
            columns.append(table.column(name).combine_chunks())
    if extra_names:
        extras = [[(k, v) for k, v in zip(extra_names, row) if v is not None]
                  for row in zip(*extra_values)]
    else:
        extras = [[]] * n
    off_day = pc.not_equal(pc.divide(ts_micros, MICROS_PER_DAY), run_day)
    nulls = pa.nulls(n, pa.string())
    line = pc.if_else(off_day, block_lines(body), nulls) if pc.any(off_day).as_py() else nulls
    return [*columns, pa.array(extras, arrow_schema.field("_extra").type), line]


def clean_batch(arrow_schema: pa.Schema, head: Sequence[pa.Array],
                clean: list[pa.Array]) -> pa.RecordBatch:
    """A ``classified_schema`` batch of lines that ``read_clean_block`` read (no check failed)."""
    *fields, extra, line = clean
    return pa.RecordBatch.from_arrays(
        [*head, line, *fields, extra, pa.nulls(len(line), pa.string())], schema=arrow_schema)


def classify_lines(reader: RecordReader, arrow_schema: pa.Schema, run_day: int,
                   head: Sequence[pa.Array], texts: Sequence[str | None],
                   defects: Sequence[str | None], clean_tried: bool = False) -> pa.RecordBatch:
    """Lines of a JSON source (``head``: their file, folder day and number) → a
    ``classified_schema`` batch. ``line`` is kept only where the record may be quarantined (a
    check failed, or its day is not ``run_day``, days since epoch): an accepted line is not
    carried any further. A block of clean lines is read by pyarrow (``read_clean_block``) unless
    the caller already tried, any other line by line."""
    n = len(texts)
    if not clean_tried and n and all(t is not None for t in texts) and all(
            d is None for d in defects):
        body = clean_body("\n".join(texts).encode())  # type: ignore[arg-type]
        clean = None if body is None else read_clean_block(reader, arrow_schema, run_day, body)
        if clean is not None and len(clean[0]) == n:  # else a text held a line end
            return clean_batch(arrow_schema, head, clean)
    names = reader.names
    columns: dict[str, list] = {name: [] for name in names}
    types = [arrow_schema.field("_ts_micros" if n == "ts" else n).type for n in names]
    kept, extras, checks = [], [], []
    for text, defect in zip(texts, defects):
        typed = ts = extra = None
        check: str | None
        if text is None:
            check = NOT_OBJECT
        elif defect is not None:
            check = defect
        elif _CONTROL.search(text):
            check = BINARY_DATA
        else:
            typed, ts, extra, check = reader.read(text)
        for name in names:
            columns[name].append(None if typed is None else typed[name])
        extras.append(extra)
        checks.append(check)
        on_day = ts is not None and ts // MICROS_PER_DAY == run_day
        kept.append(None if check is None and on_day else text)
    arrays = [*head, pa.array(kept, pa.string())]
    arrays += [pa.array(columns[name], t) for name, t in zip(names, types)]
    arrays += [pa.array(extras, arrow_schema.field("_extra").type),
               pa.array(checks, pa.string())]
    assert all(len(a) == n for a in arrays)
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)


# --- the data source ------------------------------------------------------------------------------

LINES = "lines"


def json_source(rows: str) -> JsonSource | None:
    """The JSON source whose records the ``rows`` option asks for; None for ``lines``."""
    if rows == LINES:
        return None
    found = [s for s in JSON_SOURCES if s.name == rows]
    if not found:
        raise ValueError(f"rows must be {LINES!r} or a JSON source name, not {rows!r}")
    return found[0]


def output_schema(rows: str) -> StructType:
    source = json_source(rows)
    return LINES_SCHEMA if source is None else classified_schema(source)


class LandingDataSource(DataSource):
    """``spark.read.format("rocketlens_landing")``: landing files of one source, numbered."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        return output_schema(self.options["rows"])

    def reader(self, schema: StructType) -> DataSourceReader:
        return LandingReader(dict(self.options))


class LandingReader(DataSourceReader):
    def __init__(self, options: dict[str, str]):
        self.rows = options["rows"]
        self.files = [tuple(f) for f in json.loads(options["files"])]
        self.split_bytes = int(options.get("split_bytes", SPLIT_BYTES))
        self.max_partitions = int(options.get("max_partitions", MAX_PARTITIONS))
        self.run_day = int(options.get("run_day", 0))

    def partitions(self) -> list[RangeGroup]:
        # RocketMQ's own outputs are parsed as whole files (jobs.ingest.native_landing)
        native = [f for f in self.files if is_native(self.rows, f[0])]
        ranges = plan_ranges([f for f in self.files if f not in native], self.split_bytes)
        ranges += plan_ranges(native, 1 << 62)
        # a source without lines still needs one (empty) partition on both engines
        # at most about max_partitions partitions: Sail runs them all at once (pack_ranges)
        total = sum(_range_bytes(part) for part in ranges)
        pack_bytes = max(self.split_bytes, -(-total // self.max_partitions))
        return pack_ranges(ranges, pack_bytes) or [RangeGroup(())]

    def read(self, partition: RangeGroup) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        for part in partition.ranges:
            yield from self.read_range(part)

    def read_range(self, partition: FileRange) -> Iterator[pa.RecordBatch]:
        broken: list[str] = []
        blocks = numbered_blocks(range_chunks(partition, broken), broken, partition.first_line)
        folder = dt.date.fromisoformat(partition.folder_date)
        source = json_source(self.rows)
        if source is None:
            for first, block, defect in blocks:
                body = None if defect else clean_body(block)
                if body is not None:
                    lines = block_lines(body)
                    yield lines_batch(file_head(partition.rel_path, folder, first, len(lines)),
                                      lines, pa.nulls(len(lines), pa.string()))
                else:
                    texts, defects = decode_lines(block, defect)
                    yield lines_batch(file_head(partition.rel_path, folder, first, len(texts)),
                                      texts, defects)
            return
        reader = RecordReader(source)
        arrow_schema = to_arrow_schema(classified_schema(source))
        if is_native(self.rows, partition.rel_path):
            yield native_batch(reader, arrow_schema, self.run_day, partition, folder, blocks)
            return
        for first, block, defect in blocks:
            body = None if defect else clean_body(block)
            if body is not None:
                clean = read_clean_block(reader, arrow_schema, self.run_day, body)
                if clean is not None:
                    head = file_head(partition.rel_path, folder, first, len(clean[0]))
                    yield clean_batch(arrow_schema, head, clean)
                    continue
            texts, defects = decode_lines(block, defect)
            yield classify_lines(reader, arrow_schema, self.run_day,
                                 file_head(partition.rel_path, folder, first, len(texts)),
                                 texts, defects, clean_tried=body is not None)


def native_batch(reader: RecordReader, arrow_schema: pa.Schema, run_day: int, part: FileRange,
                 folder: dt.date, blocks) -> pa.RecordBatch:
    """A whole mqadmin / fastjson file → a ``classified_schema`` batch: its records checked as
    JSON lines are, a kept line being the file's raw text (``jobs.ingest.native_landing``)."""
    texts: list[str] = []
    defects: list[str | None] = []
    for _, block, defect in blocks:
        block_texts, block_defects = decode_lines(block, defect)
        texts += block_texts
        defects += block_defects
    checked, reasons, raws = native_lines(reader.source.name, part.rel_path, texts, defects)
    n = len(texts)
    batch = classify_lines(reader, arrow_schema, run_day, file_head(part.rel_path, folder, 1, n),
                           checked, reasons)
    index = batch.schema.get_field_index("line")
    kept = batch.column(index)
    raw = pc.if_else(pc.is_null(kept), pa.nulls(n, pa.string()), pa.array(raws, pa.string()))
    return batch.set_column(index, batch.schema.field(index), raw)


def read_landing(spark: SparkSession, rows: str, files: list, run_date: dt.date | None = None,
                 split_bytes: int = SPLIT_BYTES, max_partitions: int = MAX_PARTITIONS) -> DataFrame:
    """The numbered lines (``rows="lines"``) or a JSON source's classified records of ``files``
    (``LandingFile``s), one read for all of them, in about ``max_partitions`` partitions;
    ``run_date`` tells the reader which accepted lines need not be carried."""
    spark.dataSource.register(LandingDataSource)
    listed = [(f.rel_path, str(f.path), f.folder_date.isoformat()) for f in files]
    run_day = (run_date - dt.date(1970, 1, 1)).days if run_date else 0
    return (spark.read.format(FORMAT)
            .option("rows", rows)
            .option("files", json.dumps(listed))
            .option("split_bytes", str(split_bytes))
            .option("max_partitions", str(max_partitions))
            .option("run_day", str(run_day))
            .load())
