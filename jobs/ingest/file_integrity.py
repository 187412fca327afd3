"""Landing files the engines cannot read as text: invalid UTF-8 and broken gzip.

Why this runs in Python before the Spark read: Sail's text reader fails the whole file on one
invalid UTF-8 byte ("Encountered invalid UTF-8 data") where classic Spark silently puts U+FFFD in
its place, and a truncated or corrupt ``.gz`` fails the read on both engines at action time, so one
bad file would crash the run. Every file is streamed once here (gzip through ``zlib``, text
through an incremental UTF-8 decoder that ASCII chunks skip). The rare file that fails is decoded
line by line into a Parquet copy (``_line_no, line, _defect``) in the run's scratch folder and read
from there, so both engines see the same lines with the same defects.

Lines are split as Hadoop's and Sail's text readers split them: at ``\\n``, ``\\r\\n`` and a lone
``\\r``; a last line without a terminator counts, an empty file has no lines.
"""

from __future__ import annotations

import codecs
import logging
import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

log = logging.getLogger(__name__)

CHUNK_BYTES = 8 << 20
ROWS_PER_BATCH = 10_000

# C0 control characters other than tab, CR, LF and ESC: never in a JSON line (JSON escapes them)
# nor in a log line; ESC is left out because a log written with logback's %highlight carries ANSI
# colour codes and is still text. One pattern for Python's ``re`` (on bytes) and Spark's
# ``rlike`` on both engines.
CONTROL_CHARS = r"[\x00-\x08\x0B\x0C\x0E-\x1A\x1C-\x1F]"
_CONTROL_BYTES = re.compile(CONTROL_CHARS.encode())

BINARY_DATA = "binary_data: control characters in the line"
INVALID_UTF8 = "invalid_utf8"
TRUNCATED_GZIP = "truncated_gzip: the gzip stream ends early; the line read last may be cut"
CORRUPT_GZIP = "corrupt_gzip: "

DECODED_SCHEMA = pa.schema([("_line_no", pa.int64()), ("line", pa.string()),
                            ("_defect", pa.string())])


def is_gzip(path: Path) -> bool:
    return path.name.endswith(".gz")


def read_chunks(path: Path, broken: list[str]) -> Iterator[bytes]:
    """The file's (decompressed) bytes in chunks. A broken gzip stream ends the chunks after its
    readable part and appends the quarantine reason to ``broken``.

    Concatenated gzip members (``cat a.gz b.gz``) are one stream, as for gzip(1) and both engines.
    """
    with path.open("rb") as handle:
        if not is_gzip(path):
            while chunk := handle.read(CHUNK_BYTES):
                yield chunk
            return
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        started = False
        while True:
            data = handle.read(CHUNK_BYTES)
            if not data:
                break
            while data:
                started = True
                try:
                    out = inflater.decompress(data)
                except zlib.error as exc:
                    broken.append(CORRUPT_GZIP + str(exc))
                    return
                if out:
                    yield out
                if inflater.eof:  # next member, if any
                    data = inflater.unused_data
                    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    started = bool(data)
                else:
                    data = b""
        tail = inflater.flush()
        if tail:
            yield tail
        if started and not inflater.eof:
            broken.append(TRUNCATED_GZIP)


def readable_as_text(path: Path) -> bool:
    """True when the file is complete (gzip) and valid UTF-8: the engines can read it as is."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    broken: list[str] = []
    try:
        for chunk in read_chunks(path, broken):
            if chunk.isascii():
                continue
            decoder.decode(chunk)  # partial sequences at chunk ends are carried over
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return not broken


def split_lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Lines without terminators, split at ``\\n``, ``\\r\\n`` and lone ``\\r`` across chunks."""
    carry = b""
    for chunk in chunks:
        buffer = carry + chunk
        parts = buffer.splitlines(keepends=True)
        carry = b""
        if parts and not parts[-1].endswith(b"\n"):
            carry = parts.pop()  # unterminated, or a "\r" whose "\n" may be in the next chunk
        for part in parts:
            yield part.rstrip(b"\r\n")
    if carry:
        yield carry.rstrip(b"\r\n")


def decode_line(raw: bytes) -> tuple[str, str | None]:
    """A line's text and defect: invalid UTF-8 is kept as ``\\xNN`` escapes and quarantined,
    as ``binary_data`` when control bytes show it is no text at all."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "backslashreplace")
        return text, BINARY_DATA if _CONTROL_BYTES.search(raw) else INVALID_UTF8


def decoded_lines(path: Path) -> Iterator[tuple[int, str, str | None]]:
    """``(line_no, text, defect)`` for every line; after a broken gzip stream the line read last
    carries the gzip defect (it may be cut mid-record, so it is never accepted). A gzip broken
    before its first line (not gzip at all, cut inside the header) is one empty line with the
    defect, so that the file shows in quarantine rather than only in a log."""
    broken: list[str] = []
    held: tuple[int, str, str | None] | None = None
    for line_no, raw in enumerate(split_lines(read_chunks(path, broken)), start=1):
        if held is not None:
            yield held
        text, defect = decode_line(raw)
        held = (line_no, text, defect)
    if broken:
        log.warning("%s: %s", path, broken[0])
        held = (held[0], held[1], broken[0]) if held is not None else (1, "", broken[0])
    if held is not None:
        yield held


@dataclass(frozen=True)
class DecodedCopy:
    """A Parquet copy of a landing file's lines, numbered, with each line's defect."""

    path: Path
    lines: int


def write_decoded_copy(path: Path, target: Path) -> DecodedCopy:
    """Decode ``path`` line by line into the Parquet file ``target`` (batches, bounded memory)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    lines = 0
    with pq.ParquetWriter(str(target), DECODED_SCHEMA) as writer:
        batch: list[tuple[int, str, str | None]] = []
        for row in decoded_lines(path):
            batch.append(row)
            lines = row[0]
            if len(batch) == ROWS_PER_BATCH:
                writer.write_table(_table(batch))
                batch = []
        writer.write_table(_table(batch))
    return DecodedCopy(target, lines)


def _table(rows: list[tuple[int, str, str | None]]) -> pa.Table:
    columns: list[Sequence[Any]] = list(zip(*rows)) if rows else [[], [], []]
    return pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns,
                                                                          DECODED_SCHEMA)],
                                schema=DECODED_SCHEMA)
