"""ConsumerRunningInfo as RocketMQ's fastjson writes it → a ``running_info`` record (DESIGN.md §3.3).

fastjson writes a map keyed by an object with the key object itself in key position, so
``mqTable`` reads ``{{"brokerName":"b","queueId":0,"topic":"T"}:{"cachedMsgCount":0,…},…}`` and
integer-keyed maps read ``{0:123}`` (rocketmq-facts.md §0): no JSON parser accepts that. This is a
small recursive-descent parser for JSON plus exactly those two extensions (an object or a bare
number/identifier as an object key). An object whose keys are all strings becomes a ``dict``;
any other object becomes ``Pairs`` (its ``(key, value)`` list, in file order). Nothing is evaluated.

Field names are RocketMQ's getters (facts §6.1): ``mqTable`` → ``ProcessQueueInfo`` with the
``droped`` spelling, ``statusTable`` → ``ConsumeStatus`` (``pullRT``, ``consumeOKTPS``…),
``subscriptionSet`` → ``SubscriptionData``. The dump carries no time, cluster, group or client id:
the caller supplies them (``docs/landing-mqadmin.md``).
"""

from __future__ import annotations

import re
from typing import Any


class FastjsonError(ValueError):
    """The text is not a fastjson value; the message says where and why."""


class Pairs(list):
    """An object with a key that is not a string: its ``(key, value)`` pairs in file order."""


_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_WS = re.compile(r"\s*")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
            "t": "\t", "'": "'"}
_LITERALS = {"true": True, "false": False, "null": None}


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.depth = 0

    def fail(self, what: str) -> FastjsonError:
        return FastjsonError(f"{what} at character {self.pos + 1}")

    def skip(self) -> None:
        match = _WS.match(self.text, self.pos)
        self.pos = match.end() if match else self.pos

    def peek(self) -> str:
        self.skip()
        return self.text[self.pos:self.pos + 1]

    def expect(self, char: str) -> None:
        if self.peek() != char:
            found = self.text[self.pos:self.pos + 1] or "end of text"
            raise self.fail(f"expected {char!r}, found {found!r}")
        self.pos += 1

    def value(self, as_key: bool = False) -> Any:
        char = self.peek()
        if char == "{":
            return self.obj()
        if char == "[":
            if as_key:
                raise self.fail("an array as an object key")
            return self.array()
        if char in "\"'":
            return self.string(char)
        number = _NUMBER.match(self.text, self.pos)
        if number:
            self.pos = number.end()
            token = number.group()
            if self.text[self.pos:self.pos + 1] in ("L", "D", "F"):  # WriteClassName suffixes
                self.pos += 1
            return float(token) if any(c in token for c in ".eE") else int(token)
        name = _NAME.match(self.text, self.pos)
        if name:
            word = name.group()
            if word in _LITERALS and not as_key:
                self.pos = name.end()
                return _LITERALS[word]
            if as_key:
                self.pos = name.end()
                return word  # an unquoted field name
            raise self.fail(f"unexpected word {word!r}")
        raise self.fail("expected a value, found " + (repr(char) if char else "end of text"))

    def string(self, quote: str) -> str:
        self.pos += 1
        out: list[str] = []
        text = self.text
        while True:
            end = self.pos
            while end < len(text) and text[end] not in (quote, "\\"):
                end += 1
            out.append(text[self.pos:end])
            if end >= len(text):
                self.pos = end
                raise self.fail("unterminated string")
            if text[end] == quote:
                self.pos = end + 1
                return "".join(out)
            escape = text[end + 1:end + 2]
            if escape == "u":
                digits = text[end + 2:end + 6]
                if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                    self.pos = end
                    raise self.fail("bad \\u escape")
                out.append(chr(int(digits, 16)))
                self.pos = end + 6
            elif escape in _ESCAPES:
                out.append(_ESCAPES[escape])
                self.pos = end + 2
            else:
                self.pos = end
                raise self.fail(f"bad escape \\{escape}")

    def obj(self) -> dict | Pairs:
        self.depth += 1
        if self.depth > 64:
            raise self.fail("nested deeper than 64 levels")
        self.pos += 1
        pairs: list[tuple[Any, Any]] = []
        if self.peek() == "}":
            self.pos += 1
        else:
            while True:
                key = self.value(as_key=True)
                self.expect(":")
                pairs.append((key, self.value()))
                if self.peek() == ",":
                    self.pos += 1
                    continue
                self.expect("}")
                break
        self.depth -= 1
        if all(isinstance(k, str) for k, _ in pairs):
            return dict(pairs)
        return Pairs(pairs)

    def array(self) -> list:
        self.depth += 1
        if self.depth > 64:
            raise self.fail("nested deeper than 64 levels")
        self.pos += 1
        items: list[Any] = []
        if self.peek() == "]":
            self.pos += 1
        else:
            while True:
                items.append(self.value())
                if self.peek() == ",":
                    self.pos += 1
                    continue
                self.expect("]")
                break
        self.depth -= 1
        return items


def parse_fastjson(text: str) -> Any:
    """One fastjson value (the whole text, surrounding white space allowed)."""
    parser = _Parser(text.removeprefix("\ufeff"))
    value = parser.value()
    parser.skip()
    if parser.pos != len(parser.text):
        raise parser.fail("text after the value")
    return value


def _items(table: Any) -> list[tuple[Any, Any]]:
    if table is None:
        return []
    if isinstance(table, Pairs):
        return list(table)
    if isinstance(table, dict):
        return list(table.items())
    raise FastjsonError(f"expected a map, found {type(table).__name__}")


_PROCESS_QUEUE = (
    ("commit_offset", "commitOffset"),
    ("cached_msg_min_offset", "cachedMsgMinOffset"),
    ("cached_msg_max_offset", "cachedMsgMaxOffset"),
    ("cached_msg_count", "cachedMsgCount"),
    ("cached_msg_size_mib", "cachedMsgSizeInMiB"),
    ("transaction_msg_min_offset", "transactionMsgMinOffset"),
    ("transaction_msg_max_offset", "transactionMsgMaxOffset"),
    ("transaction_msg_count", "transactionMsgCount"),
    ("locked", "locked"),
    ("try_unlock_times", "tryUnlockTimes"),
    ("last_lock_timestamp", "lastLockTimestamp"),
    ("dropped", "droped"),  # sic, RocketMQ's getter isDroped
    ("last_pull_timestamp", "lastPullTimestamp"),
    ("last_consume_timestamp", "lastConsumeTimestamp"),
)
_CONSUME_STATUS = (
    ("pull_rt", "pullRT"),
    ("pull_tps", "pullTPS"),
    ("consume_rt", "consumeRT"),
    ("consume_ok_tps", "consumeOKTPS"),
    ("consume_failed_tps", "consumeFailedTPS"),
    ("consume_failed_msgs", "consumeFailedMsgs"),
)


def _mq_table(table: Any) -> list[dict]:
    rows = []
    for key, info in _items(table):
        if not isinstance(key, dict) or not isinstance(info, dict):
            raise FastjsonError("mqTable: a key is not a MessageQueue object or a value is no object")
        rows.append({"topic": key.get("topic"), "broker_name": key.get("brokerName"),
                     "queue_id": key.get("queueId"),
                     **{ours: info.get(theirs) for ours, theirs in _PROCESS_QUEUE}})
    return rows


def _subscriptions(items: Any) -> list[dict] | None:
    if items is None:
        return None
    if not isinstance(items, list):
        raise FastjsonError("subscriptionSet is not an array")
    return [{"topic": s.get("topic"), "sub_string": s.get("subString"),
             "expression_type": s.get("expressionType"),
             "tags": sorted(s.get("tagsSet") or []), "sub_version": s.get("subVersion")}
            for s in items if isinstance(s, dict)]


def _plain(value: Any) -> Any:
    """A value JSON can hold: an object with non-string keys becomes ``[[key, value], …]``."""
    if isinstance(value, Pairs):
        return [[_plain(k), _plain(v)] for k, v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def running_info_record(text: str, ts: str, cluster: str, group: str, client_id: str) -> dict:
    """The ``running_info`` record (DESIGN.md §3.3) of one ConsumerRunningInfo dump; raises
    ``FastjsonError`` when the text is no fastjson object or ``mqTable`` is not keyed by
    MessageQueue objects. Other top-level keys (``mqPopTable``, ``userConsumerInfo``,
    ``jstack``…) are kept as extra fields, object keys as ``[key, value]`` pairs."""
    dump = parse_fastjson(text)
    if not isinstance(dump, dict):
        raise FastjsonError("the dump is not a ConsumerRunningInfo object")
    properties = dump.get("properties")
    record = {
        "ts": ts, "cluster": cluster, "group": group, "client_id": client_id,
        "properties": None if properties is None else {
            str(k): v if isinstance(v, str) or v is None else str(v)
            for k, v in _items(properties)},
        "subscriptions": _subscriptions(dump.get("subscriptionSet")),
        "mq_table": _mq_table(dump.get("mqTable")) if "mqTable" in dump else None,
        "status_table": [{"topic": topic, **{ours: (s or {}).get(theirs)
                                             for ours, theirs in _CONSUME_STATUS}}
                         for topic, s in _items(dump.get("statusTable"))],
    }
    known = {"properties", "subscriptionSet", "mqTable", "statusTable"}
    for key, value in dump.items():
        if key not in known and key not in record:
            record[key] = _plain(value)
    return record
