"""RocketMQ's own outputs in the landing zone: which files they are and how their lines become
the JSON records every source is checked with (``docs/landing-mqadmin.md``).

``offsets/…/*.txt[.gz]`` is ``mqadmin consumerProgress`` text, ``connections/…/*.txt[.gz]``
``mqadmin consumerConnection`` text, ``running_info/…/*.json[.gz]`` a fastjson
ConsumerRunningInfo dump; time, cluster, group (and client) come from the path
(``mqadmin_text.file_context``). A parsed record is handed on as its JSON text, so it meets the
same checks as a JSON Lines record (``json_lines.RecordReader``); a quarantined line keeps its raw
text; header, footer and blank lines carry ``NOT_A_RECORD`` and are counted as ``unmatched``.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from jobs.ingest.mqadmin_text import (
    ParsedLine,
    consumer_connection_lines,
    consumer_progress_lines,
    file_context,
    running_info_lines,
)

NOT_A_RECORD = "not_a_record"  # a line of a table file that holds no record (header, footer)

_PARSERS: dict[str, tuple[tuple[str, ...], Callable[..., list[ParsedLine]]]] = {
    "offsets": ((".txt", ".txt.gz"), consumer_progress_lines),
    "connections": ((".txt", ".txt.gz"), consumer_connection_lines),
    "running_info": ((".json", ".json.gz"), running_info_lines),
}


def is_native(source: str, rel_path: str) -> bool:
    entry = _PARSERS.get(source)
    return entry is not None and rel_path.endswith(entry[0])


def native_lines(source: str, rel_path: str, texts: list[str],
                 defects: list[str | None]) -> tuple[list[str], list[str | None], list[str]]:
    """For the lines of one whole native file: the text to check (a record's JSON, else the
    line), its defect (decoding defect, quarantine reason or ``NOT_A_RECORD``) and the raw text a
    quarantined line keeps."""
    parser = _PARSERS[source][1]
    parsed = parser([t.removeprefix("\ufeff") for t in texts], file_context(rel_path))
    checked: list[str] = []
    reasons: list[str | None] = []
    raws: list[str] = []
    for line, defect in zip(parsed, defects):
        raws.append(line.text)
        if defect is not None:
            checked.append(line.text)
            reasons.append(defect)
        elif line.record is not None:
            checked.append(json.dumps(line.record, separators=(",", ":")))
            reasons.append(None)
        else:
            checked.append(line.text)
            reasons.append(line.reason or NOT_A_RECORD)
    return checked, reasons, raws
