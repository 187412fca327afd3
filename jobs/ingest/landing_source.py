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
import io
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

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
    CHUNK_BYTES,
    CONTROL_CHARS,
    decoded_blocks,
    has_control_bytes,
    is_gzip,
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
# A scan's partitions are packed into about this many: Sail starts every partition of a scan at
# once, each thread holding up to 16 batches, so memory grows with their number (the bench M
# running-info file, 4.8 GB in 75 partitions of 64 MB, peaked at 3.2 GiB; issue #19).
MAX_PARTITIONS = 16

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
        lines += chunk.count(b"\n")
        if b"\r" in chunk:
            lines += chunk.count(b"\r") - chunk.count(b"\r\n")
            if last.endswith(b"\r") and chunk.startswith(b"\n"):
                lines -= 1  # a CRLF split between chunks: counted once as CR, once as LF
        last = chunk[-1:]
    return lines


def plan_ranges(files: list[tuple[str, str, str]], split_bytes: int) -> list[FileRange]:
    """Partitions for ``files`` (``rel_path, path, folder_date``): a range per ``split_bytes`` of
    a plain file, cut just after a ``\\n``, with the number of its first line; an empty file has
    none (a zero-byte ``.gz`` is no gzip stream)."""
    ranges: list[FileRange] = []
    for rel, path, folder in files:
        size = Path(path).stat().st_size
        if size == 0:
            continue
        if is_gzip(Path(path)) or size <= split_bytes:
            ranges.append(FileRange(rel, path, folder, 0, None, 1))
            continue
        with open(path, "rb") as handle:
            start, first = 0, 1
            while start < size:
                handle.seek(start + split_bytes)
                tail = handle.readline()  # up to and including the next "\n"
                end = start + split_bytes + len(tail)
                if not tail or end >= size:
                    ranges.append(FileRange(rel, path, folder, start, None, first))
                    break
                ranges.append(FileRange(rel, path, folder, start, end, first))
                first += _count_lines(handle, start, end)
                start = end
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

def lines_batch(part: FileRange, first: int, texts: list[str],
                defects: list[str | None]) -> pa.RecordBatch:
    n = len(texts)
    return pa.RecordBatch.from_arrays(
        [pa.array([part.rel_path] * n, pa.string()),
         pa.array([dt.date.fromisoformat(part.folder_date)] * n, pa.date32()),
         pa.array(range(first, first + n), pa.int64()),
         pa.array(texts, pa.string()),
         pa.array(defects, pa.string())],
        schema=to_arrow_schema(LINES_SCHEMA))


_TS_IS_TEXT = re.compile(r'"ts"\s*:\s*"')
# UTF-16 surrogate escapes: orjson refuses a lone one, so such a block is read line by line
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB]")
_MAX_EPOCH_MILLIS = 10**15 - 1
_TEXT_TYPES = (pa.string(), pa.int64(), pa.bool_())


def _text_column(values: list, dtype: pa.DataType) -> list:
    """An inferred column's values as the JSON text a string field holds."""
    if dtype == pa.bool_():
        return [None if v is None else ("true" if v else "false") for v in values]
    if dtype == pa.int64():
        return [None if v is None else str(v) for v in values]
    return values


def read_clean_block(reader: RecordReader, arrow_schema: pa.Schema, run_day: int,
                     texts: Sequence[str | None], defects: Sequence[str | None]) -> list[pa.Array] | None:
    """The typed columns, ``_extra`` and ``line`` of a block whose every line is an acceptable
    record, read at once by pyarrow's JSON reader; None when any line may need a reason, is
    ambiguous to it or is read differently by it — the caller then reads the block line by line
    (``RecordReader``), which decides. pyarrow fails on what the per-line reading would turn into
    a ``wrong_type`` or text (a number in a string field, an int beyond 32 bits, a duplicate key,
    trailing text), and a blank line or two objects on one line change its row count."""
    lines = [t for t in texts if t is not None]
    if not lines or len(lines) != len(texts) or any(d is not None for d in defects):
        return None
    joined = "\n".join(lines)
    # every line must start an object: pyarrow 26 crashes the process (SIGSEGV) on a block whose
    # first value is a bare ``null``, and other values are no records anyway
    if not joined.startswith("{") or joined.count("\n{") != len(texts) - 1:
        return None
    data = joined.encode()
    if has_control_bytes(data) or ("\\u" in joined and _SURROGATE_ESCAPE.search(joined)):
        return None
    source = reader.source
    maps = {f.name for f in source.schema.fields if isinstance(f.dataType, MapType)}
    ts_text = bool(_TS_IS_TEXT.search(lines[0]))
    parse_fields = [pa.field("ts", pa.string() if ts_text else pa.int64())]
    parse_fields += [arrow_schema.field(n) for n in reader.names if n != "ts" and n not in maps]
    try:
        table = pa_json.read_json(
            io.BytesIO(data),
            read_options=pa_json.ReadOptions(use_threads=False, block_size=len(joined) + 1024),
            parse_options=pa_json.ParseOptions(explicit_schema=pa.schema(parse_fields),
                                               unexpected_field_behavior="infer"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != len(texts):
        return None
    nulls_are_json = "null" in joined  # else a null in an inferred column is a missing key
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
        micros = [record_ts_micros(v) for v in ts.to_pylist()]
        if None in micros:
            return None
        ts_micros = pa.array(micros, pa.int64())
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
        if column.type not in _TEXT_TYPES or (column.null_count and nulls_are_json):
            return None
        extra_values.append(_text_column(column.to_pylist(), column.type))
    map_values: dict[str, list] = {}
    for name in maps:
        if name not in table.column_names:
            map_values[name] = [None] * len(texts)
            continue
        column = table.column(name)
        if not isinstance(column.type, pa.StructType) or any(
                column.type.field(i).type != pa.string() for i in range(column.type.num_fields)):
            return None  # map values that are not all strings: their text is the line's
        flat = column.combine_chunks()
        if nulls_are_json and any(flat.field(i).null_count > flat.null_count
                                  for i in range(column.type.num_fields)):
            return None  # a null value and a missing key look alike here
        rows = column.to_pylist()
        map_values[name] = [None if row is None else
                            [(k, v) for k, v in row.items() if v is not None] for row in rows]
    columns = []
    for name in reader.names:
        if name == "ts":
            columns.append(ts_micros)
        elif name in maps:
            columns.append(pa.array(map_values[name], arrow_schema.field(name).type))
        else:
            columns.append(table.column(name).combine_chunks())
    if extra_names:
        extras = [[(k, v) for k, v in zip(extra_names, row) if v is not None]
                  for row in zip(*extra_values)]
    else:
        extras = [[]] * len(texts)
    off_day = pc.not_equal(pc.divide(ts_micros, MICROS_PER_DAY), run_day)
    line = pc.if_else(off_day, pa.array(texts, pa.string()), pa.nulls(len(texts), pa.string()))
    return [*columns, pa.array(extras, arrow_schema.field("_extra").type), line]


def classify_lines(reader: RecordReader, arrow_schema: pa.Schema, run_day: int,
                   files: list[str], folders: list[dt.date], line_nos: list[int],
                   texts: Sequence[str | None], defects: Sequence[str | None]) -> pa.RecordBatch:
    """Lines of a JSON source → a ``classified_schema`` batch. ``line`` is kept only where the
    record may be quarantined (a check failed, or its day is not ``run_day``, days since epoch):
    an accepted line is not carried any further. A block of clean lines is read by pyarrow
    (``read_clean_block``), any other line by line."""
    n = len(texts)
    head = [pa.array(files, pa.string()), pa.array(folders, pa.date32()),
            pa.array(line_nos, pa.int64())]
    clean = read_clean_block(reader, arrow_schema, run_day, texts, defects)
    if clean is not None:
        *fields, extra, line = clean
        return pa.RecordBatch.from_arrays(
            [*head, line, *fields, extra, pa.nulls(n, pa.string())], schema=arrow_schema)
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
        blocks = decoded_blocks(range_chunks(partition, broken), broken, partition.first_line)
        source = json_source(self.rows)
        if source is None:
            for first, texts, defects in blocks:
                yield lines_batch(partition, first, texts, defects)
            return
        reader = RecordReader(source)
        arrow_schema = to_arrow_schema(classified_schema(source))
        folder = dt.date.fromisoformat(partition.folder_date)
        if is_native(self.rows, partition.rel_path):
            yield native_batch(reader, arrow_schema, self.run_day, partition, folder, blocks)
            return
        for first, texts, defects in blocks:
            n = len(texts)
            yield classify_lines(reader, arrow_schema, self.run_day, [partition.rel_path] * n,
                                 [folder] * n, list(range(first, first + n)), texts, defects)


def native_batch(reader: RecordReader, arrow_schema: pa.Schema, run_day: int, part: FileRange,
                 folder: dt.date, blocks) -> pa.RecordBatch:
    """A whole mqadmin / fastjson file → a ``classified_schema`` batch: its records checked as
    JSON lines are, a kept line being the file's raw text (``jobs.ingest.native_landing``)."""
    texts: list[str] = []
    defects: list[str | None] = []
    for _, block_texts, block_defects in blocks:
        texts += block_texts
        defects += block_defects
    checked, reasons, raws = native_lines(reader.source.name, part.rel_path, texts, defects)
    n = len(texts)
    batch = classify_lines(reader, arrow_schema, run_day, [part.rel_path] * n, [folder] * n,
                           list(range(1, n + 1)), checked, reasons)
    index = batch.schema.get_field_index("line")
    kept = batch.column(index)
    raw = pc.if_else(pc.is_null(kept), pa.nulls(n, pa.string()), pa.array(raws, pa.string()))
    return batch.set_column(index, batch.schema.field(index), raw)


def read_landing(spark: SparkSession, rows: str, files: list, run_date: dt.date | None = None,
                 split_bytes: int = SPLIT_BYTES) -> DataFrame:
    """The numbered lines (``rows="lines"``) or a JSON source's classified records of ``files``
    (``LandingFile``s), one read for all of them; ``run_date`` tells the reader which accepted
    lines need not be carried."""
    spark.dataSource.register(LandingDataSource)
    listed = [(f.rel_path, str(f.path), f.folder_date.isoformat()) for f in files]
    run_day = (run_date - dt.date(1970, 1, 1)).days if run_date else 0
    return (spark.read.format(FORMAT)
            .option("rows", rows)
            .option("files", json.dumps(listed))
            .option("split_bytes", str(split_bytes))
            .option("run_day", str(run_day))
            .load())
