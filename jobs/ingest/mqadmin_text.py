"""``mqadmin consumerProgress -g`` and ``mqadmin consumerConnection -g`` text → landing records.

Both commands print a table (``tools/.../ConsumerProgressSubCommand.java``,
``ConsumerConnectionSubCommand.java``; rocketmq-facts.md §5.2, §6.3) and carry no time, cluster or
group: those come from the file's place in the landing zone (``FileContext``,
``docs/landing-mqadmin.md``). Each line of a file becomes one ``ParsedLine``: a record (a table
row), a reason (a row that cannot be read: quarantined with its line number), or neither (the
header, footers, blank lines and what mqadmin prints around the table: counted as ``unmatched``).

consumerProgress columns, found by the header (``#Broker Name`` has a space; cells have none):
4.x ``#Topic #Broker Name #QID #Broker Offset #Consumer Offset [#Client IP] #Diff #LastTime``,
5.x adds ``#Inflight`` after ``#Diff``. ``#LastTime`` is ``yyyy-MM-dd HH:mm:ss`` in the mqadmin
host's time zone or ``N/A``; ``#Client IP`` (``-s true``) is the owner's IP or ``N/A``.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from jobs.ingest.fastjson_dump import FastjsonError, parse_fastjson, running_info_record

TOPIC_PRINT_WIDTH = 64  # UtilAll.frontStringAtLeast(topic, 64): longer names are cut
BROKER_PRINT_WIDTH = 32


@dataclass(frozen=True)
class FileContext:
    """What a file's path says: its snapshot time (ISO-8601 UTC), cluster, group and optional
    client id, broker name/address and the zone of ``#LastTime``."""

    ts: str
    cluster: str
    group: str
    client_id: str | None = None
    broker_name: str | None = None
    broker_addr: str | None = None
    tz: dt.tzinfo = dt.timezone.utc


@dataclass(frozen=True)
class ParsedLine:
    text: str
    record: dict | None = None
    reason: str | None = None


_STAMP = re.compile(r"(\d{8})T(\d{6})(\d{3})?Z")
_MILLIS = re.compile(r"\d{13}")
_TZ = re.compile(r"([+-])(\d{2}):?(\d{2})")


def file_context(rel_path: str) -> FileContext | str:
    """The context of ``<source>/date=D/cluster=C/group=G[/client=ID][/broker_name=B]
    [/broker_addr=A][/tz=±HH:MM]/<stamp>[.anything]`` where ``<stamp>`` is
    ``yyyyMMddTHHmmss[SSS]Z`` (UTC) or epoch milliseconds; else the reason it has none."""
    parts = rel_path.split("/")
    keys: dict[str, str] = {}
    for part in parts[2:-1]:
        key, sep, value = part.partition("=")
        if sep and value:
            keys[key] = value
    missing = [k for k in ("cluster", "group") if k not in keys]
    if missing:
        return f"missing_file_context: no {'/'.join(k + '=' for k in missing)} folder in the path"
    stem = parts[-1].split(".", 1)[0]
    stamp = _STAMP.fullmatch(stem)
    if stamp:
        day, clock, millis = stamp.groups()
        ts = (f"{day[:4]}-{day[4:6]}-{day[6:]}T{clock[:2]}:{clock[2:4]}:{clock[4:]}"
              f".{millis or '000'}Z")
    elif _MILLIS.fullmatch(stem):
        ts = stem
    else:
        return (f"missing_file_context: file name {parts[-1]!r} does not start with the snapshot "
                f"time (yyyyMMddTHHmmssZ or epoch milliseconds)")
    tz: dt.tzinfo = dt.timezone.utc
    if "tz" in keys:
        zone = _TZ.fullmatch(keys["tz"])
        if not zone:
            return f"missing_file_context: tz={keys['tz']} is not ±HH:MM"
        sign = -1 if zone.group(1) == "-" else 1
        tz = dt.timezone(sign * dt.timedelta(hours=int(zone.group(2)), minutes=int(zone.group(3))))
    return FileContext(ts=ts, cluster=keys["cluster"], group=keys["group"],
                       client_id=keys.get("client"), broker_name=keys.get("broker_name"),
                       broker_addr=keys.get("broker_addr"), tz=tz)


# --- consumerProgress -----------------------------------------------------------------------------

_PROGRESS_COLUMNS = ("#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset",
                     "#Client IP", "#Diff", "#Inflight", "#LastTime")
_PROGRESS_REQUIRED = ("#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset",
                      "#Diff", "#LastTime")
_PROGRESS_FOOTERS = ("Consume TPS:", "Diff Total:", "Consume Diff Total:", "Consume Inflight Total:")
_LAST_TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")


def _header_columns(line: str) -> list[str]:
    return [c.strip() for c in re.findall(r"#[^#]+", line)]


def progress_layout(line: str) -> list[str] | None:
    """The columns of a consumerProgress ``-g`` header line, else None."""
    columns = _header_columns(line)
    if not columns or columns[0] != "#Topic":
        return None
    if any(c not in _PROGRESS_COLUMNS for c in columns):
        return None
    order = [c for c in _PROGRESS_COLUMNS if c in columns]
    if order != columns or any(c not in columns for c in _PROGRESS_REQUIRED):
        return None
    return columns


def _int(cells: dict[str, str], column: str) -> int:
    value = cells[column]
    if not re.fullmatch(r"-?\d+", value):
        raise ValueError(f"malformed_row: {column} is not a number: {value!r}")
    return int(value)


def progress_row(line: str, columns: list[str], context: FileContext) -> dict:
    """One table row → an ``offsets`` record (DESIGN.md §3.1); ``ValueError`` with the reason."""
    tokens = line.split()
    fixed = len(columns) - 1  # every cell before #LastTime is one token
    if len(tokens) < fixed + 1:
        raise ValueError(f"malformed_row: {len(tokens)} cells, the header has {len(columns)} columns")
    cells = dict(zip(columns[:-1], tokens[:fixed]))
    last_text = " ".join(tokens[fixed:])
    if last_text == "N/A":
        last_timestamp = 0
    elif _LAST_TIME.fullmatch(last_text):
        local = dt.datetime.strptime(last_text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=context.tz)
        last_timestamp = int(local.timestamp() * 1000)
    else:
        raise ValueError(f"malformed_row: #LastTime is neither yyyy-MM-dd HH:mm:ss nor N/A: "
                         f"{last_text!r}")
    queue_id = _int(cells, "#QID")
    broker_offset = _int(cells, "#Broker Offset")
    consumer_offset = _int(cells, "#Consumer Offset")
    if _int(cells, "#Diff") != broker_offset - consumer_offset:
        raise ValueError("inconsistent_row: #Diff is not #Broker Offset - #Consumer Offset "
                         "(cells out of place)")
    topic, broker = cells["#Topic"], cells["#Broker Name"]
    if len(topic) == TOPIC_PRINT_WIDTH or len(broker) == BROKER_PRINT_WIDTH:
        raise ValueError(f"truncated_name: mqadmin prints at most {TOPIC_PRINT_WIDTH} characters of "
                         f"a topic and {BROKER_PRINT_WIDTH} of a broker name; this one may be cut")
    record = {"ts": context.ts, "cluster": context.cluster, "group": context.group,
              "topic": topic, "broker_name": broker, "queue_id": queue_id,
              "broker_offset": broker_offset, "consumer_offset": consumer_offset,
              "last_timestamp": last_timestamp}
    if "#Inflight" in cells:
        inflight = _int(cells, "#Inflight")
        # a broker before 5.1 reports pullOffset 0, printed as a negative inflight: unknown
        record["pull_offset"] = consumer_offset + inflight if inflight >= 0 else None
    if "#Client IP" in cells:
        record["client_ip"] = cells["#Client IP"]
    return record


def consumer_progress_lines(lines: list[str], context: FileContext | str) -> list[ParsedLine]:
    """Every line of one ``mqadmin consumerProgress -g G [-s true]`` output."""
    if isinstance(context, str):
        return [ParsedLine(t, reason=context) if t.strip() else ParsedLine(t) for t in lines]
    header = next((i for i, t in enumerate(lines) if progress_layout(t)), None)
    if header is None:
        reason = ("no_table_header: not the output of mqadmin consumerProgress -g "
                  "(no #Topic … #LastTime header)")
        return [ParsedLine(t, reason=reason) if t.strip() else ParsedLine(t) for t in lines]
    columns = progress_layout(lines[header]) or []
    parsed = [ParsedLine(t) for t in lines[:header + 1]]
    for text in lines[header + 1:]:
        stripped = text.strip()
        if not stripped or stripped.startswith(_PROGRESS_FOOTERS):
            parsed.append(ParsedLine(text))
            continue
        try:
            parsed.append(ParsedLine(text, record=progress_row(text, columns, context)))
        except ValueError as exc:
            parsed.append(ParsedLine(text, reason=str(exc)))
    return parsed


# --- consumerConnection ---------------------------------------------------------------------------

_CONNECTION_HEADER = ["#ClientId", "#ClientAddr", "#Language", "#Version"]
_ADDR = re.compile(r"\S+:\d{1,5}")
_SETTINGS = {"ConsumeType:": "consume_type", "MessageModel:": "message_model",
             "ConsumeFromWhere:": "consume_from_where"}


def consumer_connection_lines(lines: list[str], context: FileContext | str) -> list[ParsedLine]:
    """Every line of one ``mqadmin consumerConnection -g G`` output: a ``connections`` record
    (DESIGN.md §3.2) per channel row, with the group's ConsumeType/MessageModel/ConsumeFromWhere
    from the footer. The ``Below is subscription`` table is the broker's merged table, not a
    client's own heartbeat, so it fills no record's ``subscriptions``."""
    if isinstance(context, str):
        return [ParsedLine(t, reason=context) if t.strip() else ParsedLine(t) for t in lines]
    header = next((i for i, t in enumerate(lines) if _header_columns(t) == _CONNECTION_HEADER),
                  None)
    if header is None:
        reason = ("no_table_header: not the output of mqadmin consumerConnection -g "
                  "(no #ClientId #ClientAddr #Language #Version header)")
        return [ParsedLine(t, reason=reason) if t.strip() else ParsedLine(t) for t in lines]
    settings: dict[str, str] = {}
    for text in lines[header + 1:]:
        key, _, value = text.strip().partition(" ")
        if key in _SETTINGS and value.strip():
            settings[_SETTINGS[key]] = value.strip()
    parsed = [ParsedLine(t) for t in lines[:header + 1]]
    in_table = True
    for text in lines[header + 1:]:
        stripped = text.strip()
        if not stripped or stripped == "Below is subscription:":
            in_table = in_table and not stripped.startswith("Below")
            parsed.append(ParsedLine(text))
            continue
        if not in_table or stripped.split(" ", 1)[0] in _SETTINGS:
            parsed.append(ParsedLine(text))
            continue
        cells = stripped.split()
        if len(cells) != 4:
            parsed.append(ParsedLine(text, reason=f"malformed_row: {len(cells)} cells, the header "
                                                  f"has 4 columns"))
        elif not _ADDR.fullmatch(cells[1]):
            parsed.append(ParsedLine(text, reason=f"malformed_row: #ClientAddr is not host:port: "
                                                  f"{cells[1]!r}"))
        else:
            record = {"ts": context.ts, "cluster": context.cluster, "group": context.group,
                      "client_id": cells[0], "client_addr": cells[1], "language": cells[2],
                      "version": cells[3], **settings}
            if context.broker_name:
                record["broker_name"] = context.broker_name
            if context.broker_addr:
                record["broker_addr"] = context.broker_addr
            parsed.append(ParsedLine(text, record=record))
    return parsed


# --- ConsumerRunningInfo dumps --------------------------------------------------------------------

def _client_from_properties(text: str) -> str | None:
    """``clientIP@instanceName[@unitName]`` (ClientConfig.buildMQClientId, facts §0) from the
    dump's properties, for a file placed without ``client=``."""
    dump = parse_fastjson(text)
    props = dump.get("properties") if isinstance(dump, dict) else None
    if not isinstance(props, dict) or not props.get("clientIP") or not props.get("instanceName"):
        return None
    client = f"{props['clientIP']}@{props['instanceName']}"
    return f"{client}@{props['unitName']}" if props.get("unitName") else client


def running_info_lines(lines: list[str], context: FileContext | str) -> list[ParsedLine]:
    """One fastjson ConsumerRunningInfo dump (one line, or pretty-printed over several): one
    record on its first line (its raw text the whole dump); the other lines are counted as
    ``unmatched``."""
    if not any(t.strip() for t in lines):
        return [ParsedLine(t) for t in lines]
    first = next(i for i, t in enumerate(lines) if t.strip())
    whole = "\n".join(lines[first:])
    rest = [ParsedLine(t) for t in lines[first + 1:]]
    head = [ParsedLine(t) for t in lines[:first]]
    if isinstance(context, str):
        return [*head, ParsedLine(whole, reason=context), *rest]
    try:
        client = context.client_id or _client_from_properties(whole)
        if client is None:
            raise FastjsonError("no client= folder and no clientIP/instanceName in properties")
        record = running_info_record(whole, context.ts, context.cluster, context.group, client)
    except FastjsonError as exc:
        return [*head, ParsedLine(whole, reason=f"malformed_fastjson: {exc}"), *rest]
    return [*head, ParsedLine(whole, record=record), *rest]
