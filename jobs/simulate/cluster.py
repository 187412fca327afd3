"""Who owns which queue when: membership, heartbeats, channels and each client's own rebalance.

This is the event side of the simulator (the offsets side is :mod:`jobs.simulate.flow`). It models
the RocketMQ behaviour of rocketmq-facts.md:

- a client id is ``ip@pid`` before 4.9.0 and ``ip@pid#nanotime`` from 4.9.0 (§3);
- a process holds one channel per broker; a clean stop unregisters at once, an unclean one leaves
  the channel until the broker's 10 s housekeeping scan finds its last heartbeat > 120 s old (§4);
- every channel change makes the broker notify the whole group, and each client then rebalances
  from ITS OWN view: cidAll = the channel list of a broker picked at random (group-wide, duplicates
  included), mqAll = the topic's read queues, both sorted, its own strategy, its own subscriptions
  (§2.1, §2.2); a client missing from that list logs ``[BUG] ... not in cidAll`` and drops the topic;
- periodic rebalances every 20 s settle brokers that disagreed for a moment (§2.1);
- the broker's subscription table of a group is overwritten by the last heartbeat (§4), which makes
  a topic only some members subscribe flap in and out of it, each flip notifying the group.

The allocation itself is the replay reference (:mod:`jobs.replay.reference`).
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass, field

from jobs.replay.reference import MessageQueue, allocate, sorted_cid_all, sorted_mq_all
from jobs.simulate import consumer_kinds
from jobs.simulate.scenario import Client, Scenario, parse_time_ms

HEARTBEAT_MS = 30_000  # heartbeatBrokerInterval (facts §4)
REBALANCE_MS = 20_000  # rocketmq.client.rebalance.waitInterval (facts §2.1)
CHANNEL_EXPIRED_MS = 120_000  # channelExpiredTimeout (facts §4)
SCAN_MS = 10_000  # ClientHousekeepingService period (facts §4)
REGISTER_DELAY_MS = 310  # start -> first heartbeat processed by the brokers
NOTIFY_DELAY_MS = 4  # broker notification -> client rebalance
SETTLE_MS = 45_000  # periodic rebalances looked at after each membership change
DAY_MS = 86_400_000
RETRY_PREFIX = "%RETRY%"


def retry_topic(group: str) -> str:
    return f"{RETRY_PREFIX}{group}"


@dataclass
class Process:
    """One consumer JVM (a restart is a new Process with, from 4.9.0, a new client id)."""

    idx: int
    spec: Client
    group: str
    client_id: str
    pid: int
    host: str
    addr: str
    version: tuple[int, int, int]
    strategy: str
    topics: list[str]  # subscribed topics, then %RETRY%<group> (copySubscription, facts §2.5)
    start_ms: int
    stop_ms: int | None
    stop_kind: str
    ports: dict[str, int]
    hb_phase_ms: int
    rebalance_phase_ms: int
    persist_phase_ms: int
    consume_rate: float = 0.0
    log_persist: bool = True

    @property
    def is_5x(self) -> bool:
        return self.version >= (5, 0, 0)

    @property
    def client_version(self) -> str:
        return "V" + "_".join(str(part) for part in self.version)

    @property
    def ip(self) -> str:
        return self.client_id.split("@", 1)[0]

    def alive(self, t: int) -> bool:
        return self.start_ms <= t and (self.stop_ms is None or t < self.stop_ms)

    def heartbeats(self, start: int, end: int) -> list[int]:
        """Heartbeat times in [start, end): one right after start, then every 30 s (facts §4)."""
        first = self.start_ms + REGISTER_DELAY_MS
        stop = end if self.stop_ms is None else min(end, self.stop_ms)
        times = [first] if start <= first < stop else []
        k = -(-(max(start, first + 1) - self.hb_phase_ms) // HEARTBEAT_MS)
        t = self.hb_phase_ms + k * HEARTBEAT_MS
        while t < stop:
            times.append(t)
            t += HEARTBEAT_MS
        return times

    def last_heartbeat(self, t: int) -> int:
        first = self.start_ms + REGISTER_DELAY_MS
        if t < first:
            return first
        k = (t - self.hb_phase_ms) // HEARTBEAT_MS
        periodic = self.hb_phase_ms + k * HEARTBEAT_MS
        return max(first, periodic)


@dataclass
class Channel:
    process: Process
    broker: str
    register_ms: int
    remove_ms: int | None  # None: still open at the end of the simulation


@dataclass
class OwnershipChange:
    t: int
    process: int
    topic: str
    queues: tuple[MessageQueue, ...]
    dead: bool = False  # the process died: it owns nothing from t on, no rebalance happened


@dataclass
class LogEvent:
    t: int
    process: int
    kind: str  # rebalance | add | remove | bug_not_in_cid_all | notify | start | persist_removed
    data: dict = field(default_factory=dict)


@dataclass
class MembershipEvent:
    t: int
    group: str
    kind: str  # CLIENT_JOINED | CLIENT_LEFT | CLIENT_EXPIRED
    process: int


class Cluster:
    """The scenario turned into processes, channels, ownership changes and client log events."""

    def __init__(self, scenario: Scenario, seed: int, sim_start_ms: int, sim_end_ms: int) -> None:
        self.scenario = scenario
        self.sim_start_ms = sim_start_ms
        self.sim_end_ms = sim_end_ms
        self.rng = random.Random(f"cluster:{seed}")
        self.brokers = [b.name for b in scenario.brokers]
        self.broker_ip = {b.name: b.ip or f"10.0.9.{11 + i}" for i, b in enumerate(scenario.brokers)}
        self.scan_phase = {b.name: int(b.scan_phase * 1000) if b.scan_phase is not None
                           else self.rng.randrange(SCAN_MS) for b in scenario.brokers}
        self.mq_all: dict[str, list[MessageQueue]] = {}
        for topic in scenario.topics:
            self.mq_all[topic.name] = sorted_mq_all(
                MessageQueue(topic.name, broker, q) for broker, n in topic.queues.items() for q in range(n))
        self.group_brokers: dict[str, list[str]] = {}
        for group in scenario.groups:
            members = [c for c in scenario.clients if c.group == group.name]
            used = {b for c in members for t in c.subscriptions for b in scenario.topic(t).queues}
            # retryQueueNums = 1 per broker the group consumes from (facts §2.5)
            brokers = [b for b in self.brokers if b in used] or self.brokers[:1]
            self.group_brokers[group.name] = brokers
            self.mq_all[retry_topic(group.name)] = sorted_mq_all(
                MessageQueue(retry_topic(group.name), b, 0) for b in brokers)
        self.processes: list[Process] = []
        for client in scenario.clients:
            self._add_processes(client)
        self.channels: dict[str, list[Channel]] = {g.name: [] for g in scenario.groups}
        self._open_channels()
        self.changes: list[OwnershipChange] = []
        self.log_events: list[LogEvent] = []
        self.membership: list[MembershipEvent] = []
        self.sub_versions: dict[tuple[int, str], int] = {}
        self._alloc_cache: dict[tuple, tuple[MessageQueue, ...]] = {}
        self._rebalance_all()
        self.sub_tables = self._subscription_tables()

    # --- processes and channels -----------------------------------------------------------------

    def _add_processes(self, client: Client) -> None:
        start = parse_time_ms(client.start)
        stop = parse_time_ms(client.stop) if client.stop else None
        kind = client.stop_kind
        for fault in self.scenario.faults:
            if fault.kind in ("client_leaves", "consumer_crash") and fault.clients == [client.name]:
                stop = parse_time_ms(fault.at)
                kind = "clean" if fault.kind == "client_leaves" else "unclean"
            if fault.kind == "client_joins" and fault.clients == [client.name]:
                start = parse_time_ms(fault.at)
        self.processes.append(self._process(client, start, stop, kind, client.pid, client.nanotime))
        if stop is not None and client.restart_after:
            version = tuple(int(x) for x in client.version.split("."))
            pid = client.pid if version < (4, 9, 0) else client.pid + self.rng.randrange(3, 400)
            self.processes.append(self._process(client, stop + parse_time_ms(client.restart_after),
                                                None, "clean", pid, None))

    def _process(self, client: Client, start: int, stop: int | None, kind: str, pid: int,
                 nanotime: int | None) -> Process:
        version = client.version_tuple
        group_kind = self.scenario.group(client.group).kind
        if client.instance_name:
            instance = client.instance_name
        elif consumer_kinds.keeps_default_instance(group_kind):
            instance = "DEFAULT"
        elif version >= (4, 9, 0):
            # changeInstanceNameToPID: "<pid>#<System.nanoTime()>" from 4.9.0 (facts §3)
            instance = f"{pid}#{nanotime if nanotime is not None else self.rng.randrange(10**13, 10**15)}"
        else:
            instance = str(pid)
        addr = client.addr or client.ip
        return Process(
            idx=len(self.processes), spec=client, group=client.group,
            client_id=f"{client.ip}@{instance}", pid=pid,
            host=client.host or f"{client.name}-{client.ip}", addr=addr, version=version,
            strategy=client.strategy,
            topics=list(client.subscriptions) + ([retry_topic(client.group)]
                                                 if consumer_kinds.subscribes_retry(group_kind) else []),
            start_ms=start, stop_ms=stop, stop_kind=kind,
            ports={b: self.rng.randrange(32768, 61000) for b in self.brokers},
            hb_phase_ms=(int(client.heartbeat_phase * 1000) if client.heartbeat_phase is not None
                         else self.rng.randrange(HEARTBEAT_MS)),
            rebalance_phase_ms=self.rng.randrange(REBALANCE_MS),
            persist_phase_ms=self.rng.randrange(5000),
        )

    def _open_channels(self) -> None:
        for p in self.processes:
            for broker in self.brokers:
                register = p.start_ms + REGISTER_DELAY_MS
                if p.stop_ms is None:
                    remove = None
                elif p.stop_kind == "clean":
                    remove = p.stop_ms  # unregisterClient on shutdown
                else:
                    remove = self.expiry_ms(broker, p.last_heartbeat(p.stop_ms - 1))
                self.channels[p.group].append(Channel(p, broker, register, remove))
        for channels in self.channels.values():
            channels.sort(key=lambda c: (c.register_ms, c.process.idx))

    def expiry_ms(self, broker: str, last_heartbeat: int) -> int:
        """The first housekeeping scan that finds the channel older than 120 s (facts §4)."""
        due = last_heartbeat + CHANNEL_EXPIRED_MS + 1
        phase = self.scan_phase[broker]
        return phase + -(-(due - phase) // SCAN_MS) * SCAN_MS

    def channels_at(self, group: str, broker: str | None, t: int) -> list[Channel]:
        """The broker's channel table for the group at t, oldest registration first."""
        return [c for c in self.channels[group]
                if (broker is None or c.broker == broker) and c.register_ms <= t
                and (c.remove_ms is None or t < c.remove_ms)]

    def cid_all(self, group: str, broker: str, t: int) -> list[str]:
        """getAllClientId(): one entry per channel, duplicates kept (facts §2.2, §3)."""
        return [c.process.client_id for c in self.channels_at(group, broker, t)]

    # --- rebalancing ------------------------------------------------------------------------------

    def _rebalance_all(self) -> None:
        for group in self.scenario.groups:
            self._rebalance_group(group.name)
        self.changes.sort(key=lambda c: (c.t, c.process, c.topic))
        self.log_events.sort(key=lambda e: (e.t, e.process))
        self.membership.sort(key=lambda e: (e.t, e.group, e.process))

    def _rebalance_group(self, group: str) -> None:
        members = [p for p in self.processes if p.group == group]
        channels = self.channels[group]
        event_times: list[tuple[int, str, Channel]] = []
        for c in channels:
            event_times.append((c.register_ms, "register", c))
            if c.remove_ms is not None:
                event_times.append((c.remove_ms, "remove", c))
        event_times.sort(key=lambda e: (e[0], e[2].broker, e[2].process.idx))
        # membership as the first broker's channel table shows it (its own expiry scans); the
        # other brokers' events of the same instant must not hide it (they sort first by name
        # when the first broker's name is not the smallest)
        seen: set[tuple[int, int, str]] = set()
        for t, kind, c in event_times:
            key = (t, c.process.idx, kind)
            if c.broker != self.brokers[0] or key in seen:
                continue
            seen.add(key)
            if kind == "register":
                self.membership.append(MembershipEvent(t, group, "CLIENT_JOINED", c.process.idx))
            else:
                p = c.process
                label = "CLIENT_LEFT" if p.stop_kind == "clean" else "CLIENT_EXPIRED"
                self.membership.append(MembershipEvent(t, group, label, p.idx))
        kind = self.scenario.group(group).kind
        if not consumer_kinds.rebalances(kind):
            self._static_ownership(kind, members)
            return
        # evaluation times per member: its start, every notification, periodic runs that follow
        owned: dict[tuple[int, str], tuple[MessageQueue, ...]] = {}
        runs: list[tuple[int, int, str]] = []
        notify_times = sorted({t for t, _, _ in event_times})
        for p in members:
            runs.append((p.start_ms + REGISTER_DELAY_MS + NOTIFY_DELAY_MS, p.idx, "start"))
            for t in notify_times:
                if p.alive(t) and t > p.start_ms + REGISTER_DELAY_MS:
                    runs.append((t + NOTIFY_DELAY_MS, p.idx, "notify"))
                    k = -(-(t - p.rebalance_phase_ms) // REBALANCE_MS)
                    tick = p.rebalance_phase_ms + k * REBALANCE_MS
                    while tick <= t + SETTLE_MS:
                        runs.append((tick, p.idx, "periodic"))
                        tick += REBALANCE_MS
        for t, idx, why in sorted(set(runs)):
            p = self.processes[idx]
            if not p.alive(t) or t >= self.sim_end_ms:
                continue
            if why == "notify" and t - NOTIFY_DELAY_MS >= self.sim_start_ms:
                broker = self.brokers[0]
                self.log_events.append(LogEvent(t - 1, idx, "notify",
                                                {"addr": f"{self.broker_ip[broker]}:10911"}))
            for topic in p.topics:
                self._rebalance_topic(p, topic, t, owned)
        for p in members:
            if p.stop_ms is None:
                continue
            for topic in p.topics:
                if owned.get((p.idx, topic)):
                    if p.stop_kind == "clean":
                        self.log_events.append(LogEvent(p.stop_ms - 2, p.idx, "persist_removed",
                                                        {"queues": owned[(p.idx, topic)]}))
                    self.changes.append(OwnershipChange(p.stop_ms, p.idx, topic, (), dead=True))

    def _static_ownership(self, kind: str, members: list[Process]) -> None:
        """Broadcast, pop and assign() consumers: the queues are held from start to stop."""
        for p in members:
            held = consumer_kinds.static_queues(kind, p, members, self.mq_all)
            for topic, queues in held.items():
                if queues:
                    self.changes.append(OwnershipChange(p.start_ms + REGISTER_DELAY_MS, p.idx, topic, queues))
                    if p.stop_ms is not None:
                        self.changes.append(OwnershipChange(p.stop_ms, p.idx, topic, (), dead=True))

    def _rebalance_topic(self, p: Process, topic: str, t: int,
                         owned: dict[tuple[int, str], tuple[MessageQueue, ...]]) -> None:
        mq_all = self.mq_all[topic]
        broker = self.rng.choice(sorted({mq.broker_name for mq in mq_all}))
        cid_all = sorted_cid_all(self.cid_all(p.group, broker, t))
        before = owned.get((p.idx, topic), ())
        if p.client_id not in cid_all:
            # the [BUG] path: the strategy returns an empty list (facts §1.0)
            self.log_events.append(LogEvent(t, p.idx, "bug_not_in_cid_all", {"cid_all": cid_all}))
            after: tuple[MessageQueue, ...] = ()
        else:
            key = (p.strategy, p.client_id, topic, tuple(cid_all))
            if key not in self._alloc_cache:
                result = allocate(p.strategy, p.client_id, mq_all, cid_all, consumer_group=p.group)
                self._alloc_cache[key] = tuple(sorted_mq_all(result or []))
            after = self._alloc_cache[key]
        if after == before:
            return
        owned[(p.idx, topic)] = after
        self.changes.append(OwnershipChange(t, p.idx, topic, after))
        self.sub_versions[(p.idx, topic)] = t
        removed = [mq for mq in before if mq not in set(after)]
        added = [mq for mq in after if mq not in set(before)]
        self.log_events.append(LogEvent(t, p.idx, "rebalance", {
            "topic": topic, "mq_all_size": len(mq_all), "cid_all_size": len(cid_all),
            "result": after, "removed": removed, "added": added}))

    # --- broker subscription table (facts §4: overwritten by the last heartbeat) ------------------

    def _subscription_tables(self) -> dict[tuple[str, str], tuple[list[int], list[frozenset[str]]]]:
        """Per (group, broker): times at which the table changed and its topic set from then on."""
        tables = {}
        for group in self.scenario.groups:
            members = [p for p in self.processes if p.group == group.name]
            if len({frozenset(p.topics) for p in members}) <= 1:
                continue  # every member heartbeats the same set: the table never changes
            beats = sorted((t, p.idx) for p in members
                           for t in p.heartbeats(self.sim_start_ms - HEARTBEAT_MS, self.sim_end_ms))
            for broker in self.brokers:
                times: list[int] = []
                sets: list[frozenset[str]] = []
                for t, idx in beats:
                    topics = frozenset(self.processes[idx].topics)
                    if not sets or sets[-1] != topics:
                        times.append(t)
                        sets.append(topics)
                        if sets and len(sets) > 1 and t >= self.sim_start_ms:
                            for q in members:
                                if q.alive(t) and q.idx != idx:
                                    self.log_events.append(LogEvent(
                                        t + NOTIFY_DELAY_MS, q.idx, "notify",
                                        {"addr": f"{self.broker_ip[broker]}:10911"}))
                            if self.processes[idx].alive(t):
                                self.log_events.append(LogEvent(
                                    t + NOTIFY_DELAY_MS, idx, "notify",
                                    {"addr": f"{self.broker_ip[broker]}:10911"}))
                tables[(group.name, broker)] = (times, sets)
        self.log_events.sort(key=lambda e: (e.t, e.process))
        return tables

    def topic_reported(self, group: str, broker: str, topic: str, t: int) -> bool:
        """getConsumeStats skips topics missing from a non-empty subscription table (facts §5.1)."""
        table = self.sub_tables.get((group, broker))
        if table is None:
            return True
        times, sets = table
        i = bisect.bisect_right(times, t) - 1
        return i < 0 or topic in sets[i]
