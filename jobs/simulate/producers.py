"""Producers: how many messages each topic queue receives per step, chosen as the client chooses.

The queue choice is the client's (rocketmq-facts.md §7), so the load the offsets show comes out of
the mechanics, not out of planted weights:
- the publish list is :func:`jobs.replay.producer_reference.publish_list` of the topic's route
  (masters up, perm read+write, ``writeQueueNums`` = the scenario's queues, brokers in Java
  ``String`` order) or, with ``order_topic_conf``, exactly the brokers and counts it lists;
- round robin: each send takes the next position of a per-thread index with a random start
  (``ThreadLocalIndex``), so a step's messages fill consecutive positions and two queues of a
  topic differ by at most one message a step;
- hash: ``keys`` distinct String keys with Zipf(``skew``) popularity, each sent where
  ``SelectMessageQueueByHash`` of the producers' version puts it (Java ``String.hashCode``, the
  4.8.0 ``abs`` fix): a queue's share is the popularity of the keys that land on it. A selector
  bypasses the latency-fault strategy (``send(msg, selector, arg)``), so hashed topics ignore it;
- latency fault (``sendLatencyFaultEnable``, default off): a send's latency maps to a time the
  producer instance shuns the broker — before 5.1.4 ``{50,100,550,1000,2000,3000,15000}`` ms →
  ``{0,0,30,60,120,180,600}`` s and a failed send counts as 30 000 ms (10 min); from 5.1.4 (RIP-63)
  ``{50,100,550,1800,3000,5000,15000}`` → ``{0,0,2,5,6,10,30}`` s and a failure as 10 000 ms
  (10 s). Once the time is over, the next send probes the broker again. While a broker is shunned,
  before 5.1.4 the selection walks from the thread's position to the next available queue without
  advancing the thread index, so the shunned broker's turns pile onto the first queue after it
  in the list; from 5.1.4 the index advances on every try and the other queues share evenly;
- a failing broker without the latency-fault strategy: the send fails and its retry avoids the
  broker (``lastBrokerName``), the index advancing per try: even over the other queues.
Failed sends store nothing; a slow send is stored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from jobs.replay.producer_reference import (
    BrokerData,
    QueueData,
    TopicRoute,
    hash_index,
    java_string_hash,
    parse_client_version,
    publish_list,
)
from jobs.replay.reference import MessageQueue
from jobs.simulate.cluster import DAY_MS
from jobs.simulate.scenario import Scenario, SendFault, Topic, parse_time_ms

PERM_READ_WRITE = 6
RIP63_VERSION = (5, 1, 4)  # commit b028277018: the new latency tables and the filter loop
LATENCY_MAX_OLD = (50, 100, 550, 1000, 2000, 3000, 15000)
NOT_AVAILABLE_OLD = (0, 0, 30_000, 60_000, 120_000, 180_000, 600_000)
ISOLATION_LATENCY_OLD = 30_000
LATENCY_MAX_NEW = (50, 100, 550, 1800, 3000, 5000, 15000)
NOT_AVAILABLE_NEW = (0, 0, 2_000, 5_000, 6_000, 10_000, 30_000)
ISOLATION_LATENCY_NEW = 10_000


def not_available_ms(latency_ms: int | None, version: tuple[int, int, int]) -> int:
    """``MQFaultStrategy.computeNotAvailableDuration`` of a send (``None`` = failed, isolation)."""
    new = version >= RIP63_VERSION
    if latency_ms is None:
        latency_ms = ISOLATION_LATENCY_NEW if new else ISOLATION_LATENCY_OLD
    table = zip(LATENCY_MAX_NEW, NOT_AVAILABLE_NEW) if new else zip(LATENCY_MAX_OLD, NOT_AVAILABLE_OLD)
    duration = 0
    for bound, shun in table:
        if latency_ms >= bound:
            duration = shun
    return duration


def selection_shares(brokers: list[str], available: set[str], version: tuple[int, int, int],
                     latency_fault: bool) -> np.ndarray:
    """Share of a thread's sends per publish-list position while only ``available`` brokers take
    sends (module docstring). With none available every position keeps its turn
    (``pickOneAtLeast`` / the plain round robin)."""
    n = len(brokers)
    shares = np.zeros(n)
    ok = [b in available for b in brokers]
    if not any(ok):
        return np.full(n, 1.0 / n)
    if latency_fault and version < RIP63_VERSION:
        for p in range(n):  # `pos = abs(index++) % size` until isAvailable: the thread index stays
            q = p
            while not ok[q]:
                q = (q + 1) % n
            shares[q] += 1.0 / n
        return shares
    shares[ok] = 1.0 / sum(ok)
    return shares


def topic_route(topic: Topic) -> TopicRoute:
    """The name server's route of a scenario topic: every broker's master up, read+write."""
    return TopicRoute(
        tuple(QueueData(b, n, n, PERM_READ_WRITE) for b, n in topic.queues.items()),
        tuple(BrokerData(b, (0, 1)) for b in topic.queues),
        topic.order_topic_conf)


def key_popularity(topic: Topic) -> tuple[list[str], np.ndarray]:
    """The topic's keys and their Zipf popularity (rank r ∝ 1 / r^skew)."""
    keys = [f"{topic.name}-{rank:06d}" for rank in range(1, topic.keys + 1)]
    weights = 1.0 / np.arange(1, topic.keys + 1, dtype=float) ** topic.skew
    return keys, weights / weights.sum()


def hash_shares(topic: Topic) -> dict[tuple[str, int], float]:
    """Share of the topic's messages per (broker, queue) under ``SelectMessageQueueByHash``."""
    publish = publish_list(topic_route(topic))
    version = parse_client_version(topic.producer_version)
    keys, popularity = key_popularity(topic)
    shares: dict[tuple[str, int], float] = {}
    for key, weight in zip(keys, popularity):
        index = hash_index(java_string_hash(key), publish.size, version)
        queue = publish.queue_at(index)  # the fixed selector never gives a negative index
        shares[queue] = shares.get(queue, 0.0) + float(weight)
    return shares


@dataclass
class _FaultedTopic:
    """A round-robin topic whose brokers have send faults: simulated per producer instance."""

    topic: Topic
    tq: np.ndarray  # tq index per publish position
    brokers: list[str]  # broker per publish position
    version: tuple[int, int, int]
    faults: dict[str, list[SendFault]]
    shun_until: list[dict[str, float]] = field(default_factory=list)
    probes: list[tuple[int, str, int]] = field(default_factory=list)  # (t, broker, shun ms) of failed/slow sends


class Producers:
    """Per step, the messages each topic queue (``tq_index``) receives (module docstring)."""

    def __init__(self, scenario: Scenario, tq_index: dict[MessageQueue, int], seed: int) -> None:
        self.rng = np.random.Generator(np.random.PCG64(seed + 11))
        self.n_tq = len(tq_index)
        topics = list(scenario.topics)
        self.rate = np.array([t.rate / 1000.0 for t in topics])  # messages per ms, day average
        self.diurnal = np.array([t.diurnal for t in topics])
        self.until = np.array([parse_time_ms(t.produce_until) if t.produce_until else math.inf for t in topics])
        faults_by_broker: dict[str, list[SendFault]] = {}
        for sf in scenario.send_faults:
            faults_by_broker.setdefault(sf.broker, []).append(sf)
        rr_tq, rr_topic, rr_pos, rr_n = [], [], [], []
        self.rr_topics: list[int] = []
        h_tq, h_topic, h_w = [], [], []
        self.faulted: list[tuple[int, _FaultedTopic]] = []
        self.publish: dict[str, list[tuple[str, int]]] = {}
        for ti, topic in enumerate(topics):
            publish = publish_list(topic_route(topic)).queues()
            self.publish[topic.name] = publish
            tqs = [tq_index[MessageQueue(topic.name, b, q)] for b, q in publish]
            if topic.producer == "hash":
                shares = hash_shares(topic)
                for (b, q), tq in zip(publish, tqs):
                    h_tq.append(tq)
                    h_topic.append(ti)
                    h_w.append(shares.get((b, q), 0.0))
                continue
            faults = {b: [f for f in faults_by_broker.get(b, []) if not f.topics or topic.name in f.topics]
                      for b in topic.queues}
            faults = {b: fs for b, fs in faults.items() if fs}
            if faults:
                ft = _FaultedTopic(topic, np.array(tqs, dtype=np.int64), [b for b, _ in publish],
                                   parse_client_version(topic.producer_version), faults)
                ft.shun_until = [{} for _ in range(topic.producers)]
                self.faulted.append((ti, ft))
                continue
            k = len(self.rr_topics)
            self.rr_topics.append(ti)
            for pos, tq in enumerate(tqs):
                rr_tq.append(tq)
                rr_topic.append(k)
                rr_pos.append(pos)
            rr_n.append(len(tqs))
        self.rr_tq = np.array(rr_tq, dtype=np.int64)
        self.rr_t = np.array(rr_topic, dtype=np.int64)
        self.rr_pos = np.array(rr_pos, dtype=np.int64)
        self.rr_n = np.array(rr_n, dtype=np.int64)
        self.rr_idx = np.array([int(self.rng.integers(0, max(n, 1))) for n in rr_n], dtype=np.int64)
        self.rr_topic_idx = np.array(self.rr_topics, dtype=np.int64)
        self.h_tq = np.array(h_tq, dtype=np.int64)
        self.h_t = np.array(h_topic, dtype=np.int64)
        self.h_w = np.array(h_w)

    def expected(self, t: int, dt_ms: int) -> np.ndarray:
        """Expected messages per topic in the step ending at ``t`` (daily wave, ``produce_until``)."""
        hour = (t % DAY_MS) / 3_600_000.0
        wave = 1.0 + self.diurnal * math.cos(2 * math.pi * (hour - 6.0) / 24.0)
        return self.rate * wave * dt_ms * (t < self.until)

    def step(self, t: int, dt_ms: int) -> np.ndarray:
        """Messages per topic queue sent in ``[t - dt_ms, t)``."""
        out = np.zeros(self.n_tq, dtype=np.int64)
        lam = self.expected(t, dt_ms)
        if len(self.rr_n):
            sent = self.rng.poisson(lam[self.rr_topic_idx])
            base, rem = sent // self.rr_n, sent % self.rr_n
            n = self.rr_n[self.rr_t]
            turn = (self.rr_pos - self.rr_idx[self.rr_t]) % n
            out[self.rr_tq] += base[self.rr_t] + (turn < rem[self.rr_t])
            self.rr_idx = (self.rr_idx + sent) % self.rr_n
        if len(self.h_tq):
            out[self.h_tq] += self.rng.poisson(lam[self.h_t] * self.h_w)
        for ti, ft in self.faulted:
            out[ft.tq] += self._faulted_step(ft, t, dt_ms, lam[ti])
        return out

    def _faulted_step(self, ft: _FaultedTopic, t: int, dt_ms: int, lam: float) -> np.ndarray:
        start = t - dt_ms
        if not any(s < t and start < e for fs in ft.faults.values() for s, e in map(_fault_span, fs)) and \
                all(until <= start for shun in ft.shun_until for until in shun.values()):
            return self.rng.poisson(np.full(len(ft.brokers), lam / len(ft.brokers)))  # nothing shunned
        expected = np.zeros(len(ft.brokers))
        stored_probes = np.zeros(len(ft.brokers))
        per_instance = lam / len(ft.shun_until)
        for shun in ft.shun_until:
            unavailable = {b: self._unavailable(ft, shun, b, start, t, stored_probes) for b in ft.faults}
            cuts = sorted({start, t} | {x for spans in unavailable.values() for span in spans for x in span})
            for a, b in zip(cuts, cuts[1:]):
                if b <= a:
                    continue
                mid = (a + b) / 2
                down = {br for br, spans in unavailable.items() if any(s <= mid < e for s, e in spans)}
                available = set(ft.brokers) - down
                shares = selection_shares(ft.brokers, available, ft.version, ft.topic.latency_fault)
                expected += per_instance * (b - a) / dt_ms * shares
        return self.rng.poisson(expected) + stored_probes.astype(np.int64)

    def _unavailable(self, ft: _FaultedTopic, shun: dict[str, float], broker: str, start: int, end: int,
                     stored_probes: np.ndarray) -> list[tuple[float, float]]:
        """The spans of ``[start, end)`` in which this producer instance sends nothing to ``broker``.
        A send reaches the broker as soon as it is available again (producers send continuously)."""
        spans: list[tuple[float, float]] = []
        cursor: float = start
        while cursor < end:
            until = shun.get(broker, -math.inf)
            if until > cursor:
                spans.append((cursor, min(until, end)))
                cursor = until
                continue
            active = next((f for f in ft.faults[broker] if _fault_span(f)[0] <= cursor < _fault_span(f)[1]), None)
            if active is None:
                upcoming = [s for s, _ in map(_fault_span, ft.faults[broker]) if cursor < s < end]
                if not upcoming:
                    break
                cursor = min(upcoming)
                continue
            if not ft.topic.latency_fault:
                if active.latency_ms is not None:
                    break  # a slow send is stored; nothing avoids the broker
                fault_end = _fault_span(active)[1]
                spans.append((cursor, min(fault_end, end)))
                cursor = fault_end
                continue
            duration = not_available_ms(active.latency_ms, ft.version)
            ft.probes.append((int(cursor), broker, duration))
            if active.latency_ms is not None:
                stored_probes[ft.brokers.index(broker)] += 1
            if duration == 0:
                break
            shun[broker] = cursor + duration
        return spans


def _fault_span(fault: SendFault) -> tuple[int, int]:
    at = parse_time_ms(fault.at)
    return at, at + parse_time_ms(fault.duration)
