"""``rocketlens which-queue``: the queue ``SelectMessageQueueByHash`` picks for one key (DESIGN.md §7.1).

Answers from a topic route, as the client of the given version builds its publish list
(:mod:`jobs.replay.producer_reference`), and with ``--down B`` from the route the name server
answers while B's master is down (its BrokerData keeps only the slaves, rocketmq-facts.md §10):
- without ``orderTopicConf`` B leaves the publish list, the list shrinks and the key is re-hashed
  over what is left, so it may land elsewhere even when its own broker is up: per-key order
  breaks for the outage (the reorder an orderly topic suffers during a failover);
- with ``orderTopicConf`` the list does not change, the key keeps its queue and, when that queue
  is on B, the send fails (``The broker[B] not exist``) until the master returns.
The route file is ``mqadmin topicRoute`` output (camelCase, with fastjson's unquoted numeric
``brokerAddrs`` keys) or the vectors' snake_case route, alone or inside a case record.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import click

from jobs.replay.producer_reference import (
    DEFAULT_CLIENT_VERSION,
    KEY_TYPES,
    PublishList,
    SendError,
    TopicRoute,
    broker_unreachable,
    key_hash,
    parse_client_version,
    parse_key,
    publish_list,
    route_from_json,
    select_queue,
)

# fastjson writes Map<Long, String> keys bare: {"brokerAddrs":{0:"10.0.0.1:10911"}}. A JSON string
# is matched whole first, so digits inside strings are never touched.
_STRING_OR_BARE_KEY = re.compile(r'"(?:[^"\\]|\\.)*"|(?<=[{,])(\s*)(-?[0-9]+)(\s*):')


class RouteFileError(ValueError):
    """The route file cannot be read as a topic route; the text says why."""


def quote_bare_keys(text: str) -> str:
    """fastjson's ``{0:"…"}`` as standard JSON ``{"0":"…"}``."""
    return _STRING_OR_BARE_KEY.sub(
        lambda m: m.group(0) if m.group(2) is None else f'{m.group(1)}"{m.group(2)}"{m.group(3)}:', text)


def load_route_file(path: Path) -> tuple[TopicRoute, str | None]:
    """(route, topic named in the file or None). RouteFileError for anything that is not a route."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RouteFileError("no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RouteFileError(f"cannot read it ({exc})") from None
    # mqadmin run with 2>&1 may print logger warnings before the JSON: start at the first line that opens it
    opening = re.search(r"^\s*\{", text, re.MULTILINE)
    if opening is not None:
        text = text[opening.start():]
    try:
        record = json.loads(quote_bare_keys(text))
    except json.JSONDecodeError as exc:
        raise RouteFileError(f"not JSON ({exc})") from None
    topic = None
    if isinstance(record, dict) and isinstance(record.get("route"), dict):
        topic = record.get("topic") if isinstance(record.get("topic"), str) else None
        record = record["route"]
    try:
        return route_from_json(record), topic
    except ValueError as exc:
        raise RouteFileError(str(exc)) from None


@dataclass(frozen=True)
class Answer:
    """Where the send goes: (broker, queue) or the exception, and the list it was chosen from."""

    publish: PublishList | None
    broker_name: str | None = None
    queue_id: int | None = None
    error: SendError | None = None

    def as_json(self) -> dict:
        return {"broker_name": self.broker_name, "queue_id": self.queue_id,
                "error": None if self.error is None else self.error.as_json(),
                "publish_list": None if self.publish is None else [
                    {"broker_name": b, "queues": n} for b, n in self.publish.segments]}


def answer(topic: str, route: TopicRoute, key_type: str, key: str, client_version: str) -> Answer:
    """The send of ``key`` on ``route``: select (§7.1), then the broker address check of the send."""
    try:
        publish = publish_list(route)
    except SendError as exc:
        return Answer(None, error=exc)
    try:
        broker, queue_id = select_queue(topic, route, key_type, key, client_version)
    except SendError as exc:
        return Answer(publish, error=exc)
    unreachable = broker_unreachable(route, broker, parse_client_version(client_version))
    if unreachable is not None:
        return Answer(publish, broker, queue_id, unreachable)
    return Answer(publish, broker, queue_id)


def _where(a: Answer) -> str:
    if a.error is None:
        return f"{a.broker_name} queue {a.queue_id}"
    first_line = a.error.message.split("\n", 1)[0]
    target = f" (selected {a.broker_name} queue {a.queue_id})" if a.broker_name is not None else ""
    return f"the send fails{target}: {a.error.java_class.rsplit('.', 1)[-1]}: {first_line}"


def _publish_text(publish: PublishList | None) -> str:
    if publish is None:
        return "no publish list"
    return f"{publish.size} queues: " + (", ".join(f"{b} x{n}" for b, n in publish.segments) or "none")


def describe_down(before: Answer, during: Answer, down: list[str], order_topic: bool) -> str:
    """One sentence: what happens to the key while the masters of ``down`` are gone."""
    brokers = ", ".join(down)
    head = f"while the master of {brokers} is down: {_where(during)} ({_publish_text(during.publish)})"
    if during.error is not None and during.broker_name in down and order_topic:
        return (head + f". orderTopicConf keeps {during.broker_name} in the publish list, so the key does not "
                "move: its sends fail until the master returns (order kept, these messages not sent)")
    if before.error is None and during.error is None:
        if (before.broker_name, before.queue_id) == (during.broker_name, during.queue_id):
            return head + ". The key stays on its queue"
        return (head + f". The key moves from {before.broker_name} queue {before.queue_id}: messages sent during "
                "the outage are not in order with those before and after it (hash selection skips no broker "
                "of the list, so the shorter list re-hashes every key)")
    return head


@click.command("which-queue")
@click.option("--route", "route_path", required=True, envvar="ROCKETLENS_ROUTE",
              type=click.Path(dir_okay=False, path_type=Path),
              help="Topic route: 'mqadmin topicRoute' JSON, or the vectors' snake_case route or case.")
@click.option("--key", required=True, envvar="ROCKETLENS_KEY", help="The key passed to send(msg, selector, key).")
@click.option("--key-type", type=click.Choice(KEY_TYPES), default="String", show_default=True,
              envvar="ROCKETLENS_KEY_TYPE", help="The key's Java class (its hashCode differs).")
@click.option("--client-version", default=DEFAULT_CLIENT_VERSION, show_default=True,
              envvar="ROCKETLENS_CLIENT_VERSION", help="Producer client version, e.g. 4.7.1 or V5_3_3.")
@click.option("--down", multiple=True, envvar="ROCKETLENS_DOWN",
              help="A broker name whose master is down (repeatable).")
@click.option("--topic", default=None, envvar="ROCKETLENS_TOPIC",
              help="Topic name for error texts (default: the file's, else TOPIC).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              envvar="ROCKETLENS_FORMAT")
def which_queue_command(route_path: Path, key: str, key_type: str, client_version: str, down: tuple[str, ...],
                        topic: str | None, fmt: str) -> None:
    """The queue a producer's SelectMessageQueueByHash picks for KEY, and where it goes while the
    masters of --down brokers are down."""
    from jobs.cli_common import UsageProblem

    if not route_path.is_file():
        raise UsageProblem(f"--route {route_path}: no such file")
    try:
        route, file_topic = load_route_file(route_path)
    except RouteFileError as exc:
        raise UsageProblem(f"--route {route_path}: not a topic route: {exc}") from None
    try:
        parse_key(key_type, key)
        parse_client_version(client_version)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    known = {qd.broker_name for qd in route.queue_datas} | {bd.broker_name for bd in route.broker_datas}
    unknown = [b for b in down if b not in known]
    if unknown:
        raise UsageProblem(f"--down {', '.join(unknown)}: not a broker of the route ({', '.join(sorted(known))})")
    topic = topic or file_topic or "TOPIC"
    before = answer(topic, route, key_type, key, client_version)
    during = answer(topic, route.without_masters(down), key_type, key, client_version) if down else None
    order_topic = bool(route.order_topic_conf)
    if fmt == "json":
        out = {"topic": topic, "key": key, "key_type": key_type, "hash": key_hash(key_type, key),
               "client_version": client_version, **before.as_json()}
        if during is not None:
            out["down"] = {"brokers": list(down), **during.as_json(),
                           "moved": None if before.error or during.error else
                           (before.broker_name, before.queue_id) != (during.broker_name, during.queue_id)}
        click.echo(json.dumps(out, ensure_ascii=False))
        return
    click.echo(f"key {key!r} ({key_type}, hashCode {key_hash(key_type, key)}), SelectMessageQueueByHash on a "
               f"{client_version} client, topic {topic}"
               + (" (orderTopicConf " + repr(route.order_topic_conf) + ")" if order_topic else ""))
    click.echo(f"now: {_where(before)} ({_publish_text(before.publish)})")
    if during is not None:
        click.echo(describe_down(before, during, list(down), order_topic))
