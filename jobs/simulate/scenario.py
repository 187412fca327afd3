"""Scenario files: the cluster, its topics, groups, clients and the faults to inject (DESIGN.md §6).

A scenario is a TOML (or JSON) file validated by pydantic; the built-in ones live in
``jobs/simulate/scenarios/*.toml``. ``include = ["healthy", ...]`` merges other scenarios into one
cluster (that is how ``sample`` is built). Every validation problem is reported as ONE line naming
the file and the key (:class:`ScenarioError`).

Times of day are ``HH:MM[:SS]`` (UTC, on the simulated day); a leading ``-`` means that long before
midnight, e.g. ``start = "-06:00"`` is 18:00 the evening before.
"""

from __future__ import annotations

import json
import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

STRATEGY_NAMES = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH")
FAULT_KINDS = ("duplicate_client_id", "subscription_inconsistent", "strategy_inconsistent",
               "client_leaves", "slow_message", "consumer_crash", "client_joins", "poison_message",
               "consumer_hang", "master_down", "consume_failing")
QUEUE_FAULTS = ("slow_message", "poison_message")  # name one queue and a time window
BUILTIN_PACKAGE = "jobs.simulate.scenarios"

_TIME = re.compile(r"^(-)?(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?$")


class ScenarioError(ValueError):
    """A scenario that cannot be used; the message is one line."""


def parse_time_ms(text: str) -> int:
    """``"10:00:05"`` -> ms after midnight; ``"-06:00"`` -> ms before it (negative)."""
    match = _TIME.match(text.strip())
    if not match:
        raise ValueError(f"time {text!r} is not HH:MM[:SS[.mmm]] (optionally with a leading '-')")
    sign, hh, mm, ss, frac = match.groups()
    if int(mm) > 59 or int(ss or 0) > 59:
        raise ValueError(f"time {text!r} has minutes or seconds above 59")
    ms = ((int(hh) * 60 + int(mm)) * 60 + int(ss or 0)) * 1000 + int((frac or "0").ljust(3, "0"))
    return -ms if sign else ms


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Broker(_Model):
    name: str = Field(min_length=1)
    ip: str = ""
    scan_phase: float | None = Field(None, ge=0, lt=10)  # seconds into the 10 s channel-expiry scan
    # a slave node: clients with consumers heartbeat it too (facts §4), so a collector asking both
    # nodes lists every channel twice, once per broker_addr (DESIGN.md §3.2)
    slave_ip: str = ""


class Topic(_Model):
    name: str = Field(min_length=1)
    # readQueueNums per broker (facts §2.2 step 1): mqAll is one MessageQueue per read queue.
    queues: dict[str, int]
    rate: float = Field(20.0, ge=0)  # messages per second over the whole topic, day average
    producer: Literal["round_robin", "hash"] = "round_robin"
    skew: float = Field(1.0, ge=0)  # hash-keyed producers: Zipf exponent of the key popularity
    diurnal: float = Field(0.5, ge=0, lt=1)  # amplitude of the daily traffic wave
    produce_until: str | None = None  # producers stop here (e.g. a retired application)
    # how the producers pick queues (jobs/simulate/producers.py, facts §7): hash-keyed producers
    # send `keys` distinct String keys with Zipf(`skew`) popularity through SelectMessageQueueByHash;
    # the route may carry an orderTopicConf ("broker-a:4;broker-b:4") that replaces the publish list
    keys: int = Field(1000, ge=1)
    order_topic_conf: str | None = None
    producer_version: str = "4.9.8"  # the producers' client version (selector and fault tables)
    latency_fault: bool = False  # sendLatencyFaultEnable (com.rocketmq.sendLatencyEnable)
    producers: int = Field(2, ge=1)  # producer instances, each with its own fault table
    # messages each queue's commit-log files still hold: the collector reports min_offset =
    # broker_offset - retained (older ones deleted, DESIGN.md §3.1, §5.4); None = not reported
    retained: int | None = Field(None, ge=0)

    @field_validator("produce_until")
    @classmethod
    def _until(cls, value: str | None) -> str | None:
        if value is not None:
            parse_time_ms(value)
        return value

    @field_validator("producer_version")
    @classmethod
    def _producer_version(cls, value: str) -> str:
        if not re.match(r"^\d+\.\d+\.\d+$", value):
            raise ValueError(f"producer_version {value!r} is not like 4.9.8")
        return value

    @field_validator("queues")
    @classmethod
    def _positive(cls, value: dict[str, int]) -> dict[str, int]:
        if not value:
            raise ValueError("needs at least one broker")
        for broker, count in value.items():
            if count < 1:
                raise ValueError(f"broker {broker!r} needs at least 1 read queue, got {count}")
        return value


class Group(_Model):
    name: str = Field(min_length=1)
    consume_timeout: int = Field(15, ge=1)  # minutes (DefaultMQPushConsumer.consumeTimeout)
    max_span: int = Field(2000, ge=1)  # consumeConcurrentlyMaxSpan
    pull_threshold: int = Field(1000, ge=1)  # pullThresholdForQueue
    # What the collectors gather for this group (DESIGN.md §5.1, real clusters are partial):
    running_info: bool = True  # consumerStatus polled at all
    running_info_every: int = Field(1, ge=1)  # minutes between running-info rounds
    # seconds after the offsets collection at which the running-info collector polls the group: 0,
    # in the same pass (a few seconds after); else on its own cycle (collectors run independently,
    # so an answer can fall between two offsets snapshots). A multiple of the 5 s simulation step.
    running_info_phase: int = Field(0, ge=0, lt=60, multiple_of=5)
    client_logs: bool = True  # the members' rocketmq_client.log shipped
    persist_logged: bool = True  # [persistAll] lines in those logs
    client_ip: Literal["owner", "none"] = "owner"  # consumerProgress -s run, or not
    # clients that never answer admin requests: no running info from them, and consumerProgress
    # -s gives up at the first one (one try/catch around its loop, facts §5.2): N/A for it and
    # every later connection (ordered by client id)
    admin_unanswered: list[str] = Field(default_factory=list)
    subscriptions_every: int = Field(1, ge=1)  # connection rounds carrying subscriptions
    # consumer kind (jobs.simulate.consumer_kinds): push | orderly | broadcast | pop | lite_pull | lite_pull_assign
    kind: Literal["push", "orderly", "broadcast", "pop", "lite_pull", "lite_pull_assign"] = "push"
    # broadcast only: the broker keeps the offsets of the group's clustering days (frozen rows in
    # consumerProgress), or — false — the group never committed, so the broker has no offset table
    # for it and consumerProgress lists nothing (4.9.7: CODE 206; tests/data/real-cluster difference 3)
    broker_offsets: bool = True
    # messages each queue of the group's topics (not its retry topic) is behind when the simulation
    # starts: a backlog left by an earlier outage, drained at the members' consume_rate from then on
    backlog: int = Field(0, ge=0)

    @model_validator(mode="after")
    def _offsets_of_broadcast_only(self) -> Group:
        if not self.broker_offsets and self.kind != "broadcast":
            raise ValueError("broker_offsets = false is for broadcast groups (the others commit)")
        return self

    @property
    def orderly(self) -> bool:
        """MessageListenerOrderly (PROP_CONSUMEORDERLY): queue locks, SUSPEND retries in place, no
        span flow control."""
        return self.kind == "orderly"


class Client(_Model):
    name: str = Field(min_length=1)
    group: str
    ip: str
    pid: int = Field(ge=1)
    version: str = "4.9.8"
    nanotime: int | None = None  # the #nanotime suffix of 4.9.0+ ids; drawn from the seed if absent
    instance_name: str = ""  # an explicit rocketmq.client.name replaces pid(#nanotime)
    addr: str = ""  # the address the broker sees (NAT); defaults to ip
    host: str = ""  # folder of its rocketmq_client.log; defaults to "<name>-<ip>"
    start: str = "-06:00"
    stop: str | None = None
    stop_kind: Literal["clean", "unclean"] = "clean"
    restart_after: str | None = None  # a new process (new id from 4.9.0) this long after the stop
    strategy: str = "AVG"
    subscriptions: list[str] = Field(min_length=1)
    consume_rate: float | None = Field(None, gt=0)  # msgs/s this process can finish; None = 4x its load
    heartbeat_phase: float | None = Field(None, ge=0, lt=30)  # seconds into each 30 s heartbeat period
    # the zone this JVM's logback writes rocketmq_client.log in (a JVM started with -Duser.timezone=UTC)
    log_timezone: Literal["GMT+8", "UTC"] = "GMT+8"

    @field_validator("strategy")
    @classmethod
    def _strategy(cls, value: str) -> str:
        if value not in STRATEGY_NAMES:
            raise ValueError(f"strategy {value!r} is not simulated; use one of {', '.join(STRATEGY_NAMES)}")
        return value

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        if not re.match(r"^\d+\.\d+\.\d+$", value):
            raise ValueError(f"version {value!r} is not like 4.9.8")
        return value

    @field_validator("start", "stop", "restart_after")
    @classmethod
    def _time(cls, value: str | None) -> str | None:
        if value is not None:
            parse_time_ms(value)
        return value

    @property
    def version_tuple(self) -> tuple[int, int, int]:
        return tuple(int(part) for part in self.version.split("."))  # type: ignore[return-value]


class Fault(_Model):
    kind: str
    group: str = ""  # every kind but master_down (a broker group's, cluster-wide)
    topic: str | None = None
    clients: list[str] = Field(default_factory=list)
    # slow_message: which queue, when the message starts, how long the listener hangs on it;
    # consume_failing: which queue, when its next message starts failing every delivery;
    # master_down: broker_name, when its master stops and for how long (its slave stays up)
    broker_name: str | None = None
    queue_id: int | None = Field(None, ge=0)
    at: str | None = None
    duration: str | None = None
    note: str = ""

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        if value not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {value!r}; use one of {', '.join(FAULT_KINDS)}")
        return value

    @field_validator("at", "duration")
    @classmethod
    def _time(cls, value: str | None) -> str | None:
        if value is not None:
            parse_time_ms(value)
        return value


class SendFault(_Model):
    """A broker that answers sends slowly or not at all for a while (facts §7): producers with
    ``latency_fault`` shun it for the time their client version maps the latency to."""

    broker: str
    at: str
    duration: str
    latency_ms: int | None = Field(None, ge=0)  # None: the sends fail (timeouts, "busy")
    # the producers that see it (a network path between their hosts and the broker); empty: all
    topics: list[str] = Field(default_factory=list)
    note: str = ""

    @field_validator("at", "duration")
    @classmethod
    def _time(cls, value: str) -> str:
        parse_time_ms(value)
        return value


class Scenario(_Model):
    name: str = Field(min_length=1)
    description: str = ""
    cluster: str = "DefaultCluster"
    include: list[str] = Field(default_factory=list)
    brokers: list[Broker] = Field(default_factory=list)
    topics: list[Topic] = Field(default_factory=list)
    groups: list[Group] = Field(default_factory=list)
    clients: list[Client] = Field(default_factory=list)
    faults: list[Fault] = Field(default_factory=list)
    send_faults: list[SendFault] = Field(default_factory=list)

    @model_validator(mode="after")
    def _references(self) -> "Scenario":
        if self.include:
            return self  # checked after the merge
        _unique("brokers", [b.name for b in self.brokers])
        _unique("topics", [t.name for t in self.topics])
        _unique("groups", [g.name for g in self.groups])
        _unique("clients", [c.name for c in self.clients])
        brokers = {b.name for b in self.brokers}
        topics = {t.name: t for t in self.topics}
        groups = {g.name for g in self.groups}
        clients = {c.name: c for c in self.clients}
        for topic in self.topics:
            for broker in topic.queues:
                if broker not in brokers:
                    raise ValueError(f"topics.{topic.name}.queues names unknown broker {broker!r}")
        for topic in self.topics:
            if topic.order_topic_conf is not None:
                _check_order_topic_conf(topic)
        for i, sf in enumerate(self.send_faults):
            if sf.broker not in brokers:
                raise ValueError(f"send_faults[{i}].broker names unknown broker {sf.broker!r}")
            for name in sf.topics:
                if name not in topics:
                    raise ValueError(f"send_faults[{i}].topics names unknown topic {name!r}")
        for client in self.clients:
            if client.group not in groups:
                raise ValueError(f"clients.{client.name}.group names unknown group {client.group!r}")
            for topic in client.subscriptions:
                if topic not in topics:
                    raise ValueError(f"clients.{client.name}.subscriptions names unknown topic {topic!r}")
            if client.stop is not None and parse_time_ms(client.stop) <= parse_time_ms(client.start):
                raise ValueError(f"clients.{client.name}.stop must be after its start")
        for i, fault in enumerate(self.faults):
            where = f"faults[{i}] ({fault.kind})"
            if fault.kind == "master_down":
                for key in ("broker_name", "at", "duration"):
                    if getattr(fault, key) is None:
                        raise ValueError(f"{where} needs {key}")
                broker = next((b for b in self.brokers if b.name == fault.broker_name), None)
                if broker is None or not broker.slave_ip:
                    raise ValueError(f"{where}: broker {fault.broker_name!r} needs a slave_ip "
                                     "(the slave answers while the master is down)")
                continue
            if fault.group not in groups:
                raise ValueError(f"{where}.group names unknown group {fault.group!r}")
            for name in fault.clients:
                if name not in clients:
                    raise ValueError(f"{where}.clients names unknown client {name!r}")
                if clients[name].group != fault.group:
                    raise ValueError(f"{where}: client {name!r} is not in group {fault.group!r}")
            if fault.topic is not None and fault.topic not in topics:
                raise ValueError(f"{where}.topic names unknown topic {fault.topic!r}")
            if fault.kind == "consume_failing":
                for key in ("topic", "broker_name", "queue_id", "at"):
                    if getattr(fault, key) is None:
                        raise ValueError(f"{where} needs {key}")
                if topics[fault.topic].queues.get(fault.broker_name, 0) <= fault.queue_id:
                    raise ValueError(f"{where}: {fault.topic} has no queue {fault.broker_name}/{fault.queue_id}")
            if fault.kind in QUEUE_FAULTS:
                for key in ("topic", "broker_name", "queue_id", "at", "duration"):
                    if getattr(fault, key) is None:
                        raise ValueError(f"{where} needs {key}")
                if topics[fault.topic].queues.get(fault.broker_name, 0) <= fault.queue_id:
                    raise ValueError(f"{where}: {fault.topic} has no queue {fault.broker_name}/{fault.queue_id}")
                # a slow message pins a concurrent commit (facts §5.3); a poison message loops in
                # an orderly consumer's SUSPEND retries (facts §2.6) — a concurrent one hands it back
                orderly = self.group(fault.group).orderly
                if orderly != (fault.kind == "poison_message"):
                    kind = "an orderly" if fault.kind == "poison_message" else "a concurrent"
                    raise ValueError(f"{where} needs {kind} group")
            if fault.kind == "consumer_hang" and (len(fault.clients) != 1 or fault.at is None
                                                  or fault.duration is None):
                raise ValueError(f"{where} needs exactly one client, 'at' and 'duration'")
            if fault.kind in ("client_leaves", "consumer_crash", "client_joins"):
                if len(fault.clients) != 1 or fault.at is None:
                    raise ValueError(f"{where} needs exactly one client and 'at'")
            if fault.kind == "duplicate_client_id" and len(fault.clients) < 2:
                raise ValueError(f"{where} needs the clients that share one id")
            if fault.kind == "subscription_inconsistent" and (fault.topic is None or not fault.clients):
                raise ValueError(f"{where} needs the topic and the clients that do not subscribe it")
        return self

    def group(self, name: str) -> Group:
        return next(g for g in self.groups if g.name == name)

    def topic(self, name: str) -> Topic:
        return next(t for t in self.topics if t.name == name)


def _check_order_topic_conf(topic: Topic) -> None:
    """The conf must parse as the client parses it and name only queues the topic has."""
    from jobs.replay.producer_reference import SendError, TopicRoute, publish_list

    try:
        segments = publish_list(TopicRoute(order_topic_conf=topic.order_topic_conf)).segments
    except SendError as exc:
        raise ValueError(f"topics.{topic.name}.order_topic_conf: {exc.java_class}: {exc.message}") from None
    for broker, count in segments:
        if count > topic.queues.get(broker, 0):
            raise ValueError(f"topics.{topic.name}.order_topic_conf names {broker}:{count}, "
                             f"more queues than the topic has there")


def _unique(what: str, names: list[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{what}: {name!r} is defined twice")
        seen.add(name)


def builtin_names() -> list[str]:
    folder = resources.files(BUILTIN_PACKAGE)
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def load_scenario(name_or_file: str) -> Scenario:
    """A built-in scenario by name, or a ``.toml`` / ``.json`` file; includes are merged."""
    return _load(name_or_file, stack=())


def _read(name_or_file: str) -> tuple[str, dict]:
    path = Path(name_or_file)
    if path.suffix in (".toml", ".json") or path.exists():
        if not path.is_file():
            raise ScenarioError(f"scenario file {name_or_file} does not exist")
        text, label = path.read_text(encoding="utf-8"), str(path)
        suffix = path.suffix
    else:
        resource = resources.files(BUILTIN_PACKAGE) / f"{name_or_file}.toml"
        if not resource.is_file():
            raise ScenarioError(f"unknown scenario {name_or_file!r}; built-in: {', '.join(builtin_names())} "
                                f"(or give a .toml/.json file)")
        text, label, suffix = resource.read_text(encoding="utf-8"), f"{name_or_file}.toml", ".toml"
    try:
        data = json.loads(text) if suffix == ".json" else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ScenarioError(f"{label}: not valid {suffix[1:].upper()}: {_one_line(str(exc))}") from None
    return label, data


def _load(name_or_file: str, stack: tuple[str, ...]) -> Scenario:
    if name_or_file in stack:
        raise ScenarioError(f"scenario include cycle: {' -> '.join(stack + (name_or_file,))}")
    label, data = _read(name_or_file)
    scenario = _validate(label, data)
    if not scenario.include:
        return scenario
    merged: dict[str, list] = {"brokers": [], "topics": [], "groups": [], "clients": [], "faults": [],
                               "send_faults": []}
    for part in [_load(name, stack + (name_or_file,)) for name in scenario.include] + [scenario]:
        for key in merged:
            for item in getattr(part, key):
                dump = item.model_dump(exclude_defaults=True)
                same = [b for b in merged[key] if key == "brokers" and b["name"] == dump["name"]]
                if same:  # brokers are the cluster's, shared by the included scenarios
                    same[0].update({k: v for k, v in dump.items() if k not in same[0]})
                    continue
                merged[key].append(dump)
    data = {k: v for k, v in data.items() if k != "include"} | merged
    return _validate(label, data)


def _validate(label: str, data: dict) -> Scenario:
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "scenario"
        message = error["msg"].removeprefix("Value error, ")
        raise ScenarioError(f"{label}: {where}: {_one_line(message)}") from None


def _one_line(text: str) -> str:
    return " ".join(text.split())
