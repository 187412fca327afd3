"""Decode landing files line by line: gzip (``zlib``), UTF-8 per line, defects kept.

The landing data source (``jobs.ingest.landing_source``) reads every file through here, so both
engines see the same lines with the same defects: Sail's text reader failed a whole file on one
invalid UTF-8 byte where classic Spark silently put U+FFFD in its place, and a truncated or
corrupt ``.gz`` failed the read on both engines at action time. A bad line is kept with its
defect and quarantined; the rest of the file is read.

Lines are split as Hadoop's and Sail's text readers split them: at ``\\n``, ``\\r\\n`` and a lone
``\\r``; a last line without a terminator counts, an empty file has no lines.
"""

from __future__ import annotations

import logging
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

# bytes read at a time, and so about what a block of whole lines holds: a block is one batch of
# the landing data source, and a larger one spreads the per-block costs of pyarrow's reader over
# more lines (400 MB of running info: 7.2 s in 8 MB blocks, 8.7 s in 2 MB; issue #19)
CHUNK_BYTES = 8 << 20
BOM = b"\xef\xbb\xbf"  # a UTF-8 byte-order mark
LF = ord("\n")

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
                    # at most a chunk out at a time: a compressed chunk inflates many times over
                    out = inflater.decompress(data, CHUNK_BYTES)
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
                    data = inflater.unconsumed_tail
        tail = inflater.flush()
        if tail:
            yield tail
        if started and not inflater.eof:
            broken.append(TRUNCATED_GZIP)


def raw_blocks(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Blocks of whole lines, one per chunk read: a block ends just after its last ``\\n`` (a
    ``\\r`` at a chunk's end may be half a CRLF) and the rest waits for the next chunk; the last
    block may end without a terminator."""
    carry = b""
    for chunk in chunks:
        buffer = carry + chunk if carry else chunk
        cut = buffer.rfind(b"\n") + 1
        carry = buffer[cut:]
        if cut:
            yield buffer[:cut]
    if carry:
        yield carry


def line_ends(data: bytes) -> int:
    """The ``\\n`` in ``data``, counted by NumPy without the GIL (``bytes.count`` holds it, and
    Sail runs the landing reads' Python in threads of one process)."""
    return int(np.count_nonzero(np.frombuffer(data, np.uint8) == LF))


def count_lines(block: bytes) -> int:
    """Lines in a ``raw_blocks`` block, split at ``\\n``, ``\\r\\n`` and lone ``\\r``."""
    if b"\r" in block:
        return len(block.splitlines())
    return line_ends(block) + (not block.endswith(b"\n"))


def split_lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Lines without terminators, split at ``\\n``, ``\\r\\n`` and lone ``\\r`` across chunks."""
    for block in raw_blocks(chunks):
        yield from block.splitlines()


def decode_line(raw: bytes) -> tuple[str, str | None]:
    """A line's text and defect: invalid UTF-8 is kept as ``\\xNN`` escapes and quarantined,
    as ``binary_data`` when control bytes show it is no text at all."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "backslashreplace")
        return text, BINARY_DATA if _CONTROL_BYTES.search(raw) else INVALID_UTF8


def decode_block(raw: list[bytes]) -> tuple[list[str], list[str | None]]:
    """Texts and defects of a block of lines; a leading byte-order mark is dropped from a line
    (Spark's text reader dropped it at the start of a file, Sail's kept it, which made the first
    record malformed on Sail only)."""
    texts: list[str] = []
    defects: list[str | None] = [None] * len(raw)
    for i, line in enumerate(raw):
        if line.startswith(BOM):
            line = line[3:]
        try:
            texts.append(line.decode("utf-8"))
        except UnicodeDecodeError:
            text, defects[i] = decode_line(line)
            texts.append(text)
    return texts, defects


def numbered_blocks(chunks: Iterator[bytes], broken: list[str], first_line: int = 1,
                    ) -> Iterator[tuple[int, bytes, str | None]]:
    """``(first line number, block, defect of its last line)`` per ``raw_blocks`` block.

    ``broken`` is filled by ``read_chunks`` when the gzip stream breaks: the line read last then
    carries the gzip defect (it may be cut mid-record); a gzip broken before its first line is
    one empty line (an empty block) with the defect, so that the file shows in quarantine rather
    than only in a log."""
    line_no = first_line
    held: tuple[int, bytes, str | None] | None = None
    for block in raw_blocks(chunks):
        if held is not None:
            yield held
        held = (line_no, block, None)
        line_no += count_lines(block)
    if broken:
        held = (line_no, b"", broken[0]) if held is None else (held[0], held[1], broken[0])
    if held is not None:
        yield held


def decoded_blocks(chunks: Iterator[bytes], broken: list[str], first_line: int = 1,
                   ) -> Iterator[tuple[int, list[str], list[str | None]]]:
    """``(first line number, texts, defects)`` per ``numbered_blocks`` block, its lines decoded
    one by one (``decode_lines``)."""
    for first, block, defect in numbered_blocks(chunks, broken, first_line):
        yield (first, *decode_lines(block, defect))


def decode_lines(block: bytes, last_defect: str | None) -> tuple[list[str], list[str | None]]:
    """Texts and defects of a ``numbered_blocks`` block, its last line given ``last_defect``."""
    texts, defects = decode_block(block.splitlines() or [b""])
    if last_defect is not None:
        defects[-1] = last_defect
    return texts, defects


def decoded_lines(path: Path) -> Iterator[tuple[int, str, str | None]]:
    """``(line_no, text, defect)`` for every line of the file (``decoded_blocks``)."""
    broken: list[str] = []
    for first, texts, defects in decoded_blocks(read_chunks(path, broken), broken):
        yield from zip(range(first, first + len(texts)), texts, defects)
    if broken:
        log.warning("%s: %s", path, broken[0])
