"""Messages through the queues: production, consumption, commits, flow control, the expired-message
cleaner, and the snapshots the collectors take (the offsets side of the simulator).

State lives in numpy arrays over every (group, queue) pair and advances in steps: 60 s steps
before the output window (state only), 5 s steps inside it (the client's persist period). Facts
modelled (rocketmq-facts.md):

- producers pick queues as the client does (round robin, latency-fault avoidance, key hash over
  Zipf-popular keys): :mod:`jobs.simulate.producers`, §7;
- a queue with no live owner is not consumed; a new owner starts from the broker's offset, §5.4;
- the broker's consumer offset is what the owner persisted at its last 5 s persist, so it lags the
  client's in-memory ``commitOffset``, §5.4;
- the committed offset is the smallest in-flight offset: a hung message pins it while later
  messages finish, until the span exceeds ``consumeConcurrentlyMaxSpan`` and pulls stop, §5.3;
- the expired-message cleaner runs every ``consumeTimeout`` minutes from the consumer's start and
  sends a message that started more than ``consumeTimeout`` ago back to ``%RETRY%``, releasing
  the offset (``send expire msg back``), §5.3;
- flow-control lines are sampled 1 in 1000 per consumer instance (a re-pull every 50 ms), §5.3;
- an orderly consumer's poison message is suspended and retried in place about once a second
  (SUSPEND_CURRENT_QUEUE_A_MOMENT, suspendCurrentQueueTimeMillis 1000 ms, no DLQ with the default
  maxReconsumeTimes): its commit waits, every try counts a failure, pulls go on up to
  pullThresholdForQueue and ``takeMessages`` keeps last_consume_timestamp fresh, §2.6;
- a consumer whose every consume thread hangs (a downstream call) finishes nothing: commits of
  all its queues stop, pulls go on up to pullThresholdForQueue, its OK and failed rates fall to
  0 and last_consume_timestamp stays where it was, §5.3 "Hung consumer";
- a broker group's master down (§10): nothing is produced on its queues, 4.9.x consumers pull
  from the slave and commit there, the admin tools' offsets come from the slave (``broker_id`` 1),
  the clients log the route change at their next 30 s route poll; a message that keeps failing
  (``consume_failing``) is handed back to ``%RETRY%`` while a master hosts the retry topic, and
  otherwise retried locally every 10 s (5 s name-server timeout + 5 s resubmit) without bound,
  pinning the offset, with a ``sendMessageBack exception`` line per try; on the return the next
  try's fallback send succeeds (its local count is past 16: straight to the DLQ) and the returned
  master reports its pre-outage offsets until the owners' next persist (≤ 5 s).
- ``[persistAll]`` lines every 5 s per owned queue, §2.3.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from jobs.replay.reference import MessageQueue
from jobs.simulate import consumer_kinds, log_zones
from jobs.simulate.cluster import DAY_MS, Cluster, Process, retry_topic
from jobs.simulate.producers import Producers
from jobs.simulate.scenario import Scenario, parse_time_ms
from jobs.simulate.writers import Clock, LandingFiles, log_line

FINE_MS = 5_000  # persistConsumerOffsetInterval
COARSE_MS = 60_000
SNAPSHOT_PHASE_MS = 15_000  # the exporter's collection runs at second 15 of every minute (facts §8.2)
FLOW_CONTROL_PER_S = 20  # a flow-controlled pull is retried every 50 ms
MSG_BYTES = 1024
ALLOCATE_CLASS = {
    "AVG": "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely",
    "AVG_BY_CIRCLE": "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle",
    "CONSISTENT_HASH": "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash",
}


@dataclass
class SlowMessage:
    gq: int
    at_ms: int
    hang_ms: int
    fault_index: int
    started: bool = False
    blocking_offset: int = -1
    released_ms: int | None = None
    release_kind: str = ""
    owner: int = -1
    max_span: int = 0
    redelivery_risk: int = 0


@dataclass
class Stall:
    """Consumption stopped while the owner stays live: ``poison`` (an orderly consumer's SUSPEND
    loop on queue ``gq``) or ``hang`` (every consume thread of process ``proc`` blocked)."""

    kind: str
    at_ms: int
    end_ms: int
    fault_index: int
    gq: int | None = None
    proc: int | None = None
    started: bool = False
    ended: bool = False
    blocking: dict[int, int] = field(default_factory=dict)  # gq -> its frozen commit
    # gq -> times of the owner's running-info answers that showed the commit still frozen and more
    # than pullThresholdForQueue messages cached
    flow_controlled: dict[int, list[int]] = field(default_factory=dict)


@dataclass
class MasterDown:
    """A broker group's master stopped from ``from_ms`` to ``until_ms`` (its slave stays up)."""

    broker: str
    from_ms: int
    until_ms: int
    stale: dict[int, int] = field(default_factory=dict)  # gq -> the master's offset at the stop


@dataclass
class FailingMessage:
    """One message that fails every delivery (facts §10.1)."""

    gq: int
    at_ms: int
    fault_index: int
    started: bool = False
    offset: int = -1
    owner: int = -1
    next_try_ms: int = 0
    tries: int = 0  # deliveries so far = its reconsumeTimes at the next one
    handed_back: int = 0
    done: bool = False
    loop_from_ms: int | None = None  # the first failed hand-back (the local loop)
    released_ms: int | None = None
    max_span: int = 0
    redelivery_risk: int = 0
    failures: list[int] = field(default_factory=list)


# delayLevel 3 + reconsumeTimes of a hand-back (messageDelayLevel 1s 5s 10s 30s 1m 2m ... 2h)
RETRY_DELAYS_MS = [10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000, 420_000,
                   480_000, 540_000, 600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000]
MAX_RECONSUME_TIMES = 16
LOOP_MS = 10_000  # 4.9.x: the hand-back's 5 s name-server timeout, then the 5 s resubmit
ROUTE_POLL_MS = 30_000  # pollNameServerInterval


@dataclass
class Track:
    """Ground truth at every snapshot of the output window, for the truth file."""

    snapshot_ts: list[int] = field(default_factory=list)
    # per gq: lists aligned with snapshot_ts
    emitted: dict[int, list[bool]] = field(default_factory=dict)
    broker_offset: dict[int, list[int]] = field(default_factory=dict)
    consumer_offset: dict[int, list[int]] = field(default_factory=dict)
    owners: dict[int, list[tuple[int, ...]]] = field(default_factory=dict)
    # times of the written connections rounds: DESIGN.md §5 liveness is read from them
    connection_ts: list[int] = field(default_factory=list)
    # running-info answers of the tracked groups: (ts, process, the gqs its mq_table listed)
    running_info: list[tuple[int, int, tuple[int, ...]]] = field(default_factory=list)


class Flow:
    def __init__(self, scenario: Scenario, cluster: Cluster, seed: int, clock: Clock,
                 window: tuple[int, int], files: LandingFiles) -> None:
        self.scenario = scenario
        self.cluster = cluster
        self.clock = clock
        self.files = files
        self.window = window
        self.rng = np.random.Generator(np.random.PCG64(seed))
        self.cluster_name = scenario.cluster
        # --- index: topic-queues (production) and group-queues (consumption) -----------------
        self.tq_index: dict[MessageQueue, int] = {}
        for mqs in cluster.mq_all.values():
            for mq in mqs:
                self.tq_index[mq] = len(self.tq_index)
        self.gq_keys: list[tuple[str, MessageQueue]] = []
        self.gq_index: dict[tuple[str, MessageQueue], int] = {}
        self.group_topics: dict[str, list[str]] = {}
        for group in scenario.groups:
            members = [p for p in cluster.processes if p.group == group.name]
            topics = []
            for p in members:
                topics += [t for t in p.topics if t not in topics and not t.startswith("%RETRY%")]
            if consumer_kinds.subscribes_retry(group.kind):
                topics.append(retry_topic(group.name))
            self.group_topics[group.name] = topics
            for topic in topics:
                for mq in cluster.mq_all[topic]:
                    self.gq_index[(group.name, mq)] = len(self.gq_keys)
                    self.gq_keys.append((group.name, mq))
        n_tq, n_gq = len(self.tq_index), len(self.gq_keys)
        self.gq_tq = np.array([self.tq_index[mq] for _, mq in self.gq_keys], dtype=np.int64)
        prng = np.random.Generator(np.random.PCG64(seed + 7))
        # the producers pick queues as the client does (jobs.simulate.producers, facts §7)
        self.producers = Producers(scenario, self.tq_index, seed)
        self.prod = np.zeros(n_tq, dtype=np.int64)
        for mq, i in self.tq_index.items():
            if not mq.topic.startswith("%RETRY%"):
                self.prod[i] = int(prng.integers(20_000, 8_000_000))
        # a group's backlog at the start (Group.backlog): its queues hold at least that many
        behind = np.array([0 if mq.topic.startswith("%RETRY%") else scenario.group(g).backlog
                           for g, mq in self.gq_keys], dtype=np.int64)
        np.maximum.at(self.prod, self.gq_tq, behind)
        self.commit = self.prod[self.gq_tq] - behind
        self.bco = self.commit.copy()
        self.bco_before = self.bco
        self.pulled = self.commit.copy()
        self.pull_ahead = np.array([self.scenario.group(g).pull_threshold + 32 for g, _ in self.gq_keys],
                                   dtype=np.int64)
        self.hi = np.zeros(n_gq, dtype=np.int64)
        self.pinned = np.zeros(n_gq, dtype=bool)
        self.owner_n = np.zeros(n_gq, dtype=np.int64)
        self.cap = np.zeros(n_gq)  # msgs per ms the owners can finish
        self.last_consume = np.zeros(n_gq, dtype=np.int64)
        self.prev_commit = self.commit.copy()
        # broadcast clients keep their offsets locally: the broker's stays where it was (consumer_kinds)
        self.gq_commits = np.array([consumer_kinds.commits_to_broker(scenario.group(g).kind)
                                    for g, _ in self.gq_keys], dtype=bool)
        self.owners: list[list[int]] = [[] for _ in range(n_gq)]
        self.proc_owned: list[dict[str, tuple[MessageQueue, ...]]] = [{} for _ in cluster.processes]
        self.proc_gqs: list[list[int]] = [[] for _ in cluster.processes]
        self.fc_counter = [0 for _ in cluster.processes]
        self.span_counter = [0 for _ in cluster.processes]
        self._set_rates()
        self.slow = [SlowMessage(self.gq_index[(f.group, MessageQueue(f.topic, f.broker_name, f.queue_id))],
                                 parse_time_ms(f.at), parse_time_ms(f.duration), i)
                     for i, f in enumerate(scenario.faults) if f.kind == "slow_message"]
        self.frozen = np.zeros(n_gq, dtype=bool)
        self.stalls = [self._stall(i, f) for i, f in enumerate(scenario.faults)
                       if f.kind in ("poison_message", "consumer_hang")]
        self.down = [MasterDown(f.broker_name, parse_time_ms(f.at),
                                parse_time_ms(f.at) + parse_time_ms(f.duration))
                     for f in scenario.faults if f.kind == "master_down"]
        self.failing = [FailingMessage(self.gq_index[(f.group, MessageQueue(f.topic, f.broker_name, f.queue_id))],
                                       parse_time_ms(f.at), i)
                        for i, f in enumerate(scenario.faults) if f.kind == "consume_failing"]
        # a collector that records the answering node writes broker_id (DESIGN.md §3.1)
        self.with_broker_id = bool(self.down)
        # a topic with ``retained`` gets min_offset in its offsets lines (DESIGN.md §3.1); -1: none
        self.gq_retained = np.array([-1 if (r := self._retained(mq.topic)) is None else r
                                     for _, mq in self.gq_keys], dtype=np.int64)
        self.tq_broker = [mq.broker_name for mq, _ in sorted(self.tq_index.items(), key=lambda kv: kv[1])]
        self.gq_broker = [mq.broker_name for _, mq in self.gq_keys]
        self.slave_ip = {b.name: b.slave_ip for b in scenario.brokers}
        self.pending: list[tuple[int, int, str]] = []  # log lines due later than their step
        # the exporter's collection second plus its fixed run time; connections/running_info vary
        self.offsets_phase_ms = int(prng.integers(100, 1000))
        # groups polled for running info on their own cycle (Group.running_info_phase), by phase;
        # their own draws and their own previous commits for the minute rates
        self.ri_rng = np.random.Generator(np.random.PCG64(seed + 17))
        self.ri_phases: dict[int, list] = {}
        for group in scenario.groups:
            if group.running_info_phase:
                self.ri_phases.setdefault(group.running_info_phase * 1000, []).append(group)
        self.shifted_prev_commit = self.commit.copy()
        self.track = Track()
        self.tracked_group_names = self.tracked_groups()
        self.tracked = [i for i, (g, _) in enumerate(self.gq_keys) if g in self.tracked_group_names]
        for i in self.tracked:
            self.track.emitted[i] = []
            self.track.broker_offset[i] = []
            self.track.consumer_offset[i] = []
            self.track.owners[i] = []
        self.groups = {g.name: g for g in scenario.groups}
        # the nodes that list a channel: the master, and the slave if the scenario has one
        self.broker_nodes = {
            b.name: ([""] if not b.slave_ip else
                     [f'"broker_addr":"{cluster.broker_ip[b.name]}:10911",',
                      f'"broker_addr":"{b.slave_ip}:10911",'])
            for b in scenario.brokers}
        self._static_strings()
        # queues of groups whose broker subscription table flips (facts §4)
        self.flapping = [i for i, (g, mq) in enumerate(self.gq_keys) if (g, mq.broker_name) in cluster.sub_tables]
        # a broadcast group that never committed has no offset table on the broker (Group.broker_offsets)
        self.gq_broker_offsets = [scenario.group(g).broker_offsets for g, _ in self.gq_keys]

    # --- setup ---------------------------------------------------------------------------------

    def _stall(self, index: int, fault) -> Stall:
        at, end = parse_time_ms(fault.at), parse_time_ms(fault.at) + parse_time_ms(fault.duration)
        if fault.kind == "poison_message":
            gq = self.gq_index[(fault.group, MessageQueue(fault.topic, fault.broker_name, fault.queue_id))]
            return Stall("poison", at, end, index, gq=gq)
        proc = next(p.idx for p in self.cluster.processes if p.spec.name == fault.clients[0] and p.alive(at))
        return Stall("hang", at, end, index, proc=proc)

    def _retained(self, topic: str) -> int | None:
        known = [t for t in self.scenario.topics if t.name == topic]
        return known[0].retained if known else None

    def tracked_groups(self) -> set[str]:
        return {g.name for g in self.scenario.groups if not g.name.startswith("GID_fill_")} | \
            {f.group for f in self.scenario.faults}

    def _set_rates(self) -> None:
        """Default capacity: 4x the process's fair share of its topics' traffic, plus a floor."""
        for p in self.cluster.processes:
            members = [c for c in self.scenario.clients if c.group == p.group]
            total = sum(self.scenario.topic(topic).rate / max(1, sum(topic in c.subscriptions for c in members))
                        for topic in p.spec.subscriptions)
            p.consume_rate = p.spec.consume_rate if p.spec.consume_rate else 4 * total + 20

    def _static_strings(self) -> None:
        c = self.cluster_name
        self.off_mid = [f',"cluster":"{c}","group":"{g}","topic":"{mq.topic}","broker_name":"{mq.broker_name}",'
                        f'"queue_id":{mq.queue_id},"broker_offset":' for g, mq in self.gq_keys]
        self.mq_text = [str(mq) for _, mq in self.gq_keys]
        self.conn_static: dict[tuple[int, str], str] = {}
        self.ri_head: dict[int, str] = {}
        for p in self.cluster.processes:
            kind = self.scenario.group(p.group).kind
            consume_type, message_model = consumer_kinds.connection_fields(kind)
            for broker in self.cluster.brokers:
                self.conn_static[(p.idx, broker)] = (
                    f'"cluster":"{c}","group":"{p.group}","client_id":"{p.client_id}",'
                    f'"client_addr":"{p.addr}:{p.ports[broker]}","broker_name":"{broker}","language":"JAVA",'
                    f'"version":"{p.client_version}","consume_type":"{consume_type}",'
                    f'"message_model":"{message_model}","consume_from_where":"CONSUME_FROM_LAST_OFFSET",')
            group = self.scenario.group(p.group)
            props = {
                "adjustThreadPoolNumsThreshold": "100000",
                "allocateMessageQueueStrategy": f"{ALLOCATE_CLASS[p.strategy]}@{(p.pid * 2654435761) % (1 << 31):x}",
                "clientIP": p.ip, "consumeConcurrentlyMaxSpan": str(group.max_span),
                "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "consumeMessageBatchMaxSize": "1",
                "consumeThreadMax": "20", "consumeThreadMin": "20", "consumeTimeout": str(group.consume_timeout),
                "consumerGroup": p.group, "instanceName": p.client_id.split("@", 1)[1],
                "maxReconsumeTimes": "-1", "messageModel": "CLUSTERING",
                "namesrvAddr": "10.0.9.2:9876;10.0.9.3:9876", "pullBatchSize": "32", "pullInterval": "0",
                "pullThresholdForQueue": str(group.pull_threshold), "pullThresholdForTopic": "-1",
                "pullThresholdSizeForQueue": "100", "pullThresholdSizeForTopic": "-1",
                "unitMode": "false", "PROP_CLIENT_VERSION": p.client_version,
                "PROP_CONSUME_TYPE": "CONSUME_PASSIVELY",
                "PROP_CONSUMEORDERLY": "true" if group.orderly else "false",
                "PROP_CONSUMER_START_TIMESTAMP": str(self.clock.epoch(p.start_ms)),
                "PROP_NAMESERVER_ADDR": "10.0.9.2:9876;10.0.9.3:9876;", "PROP_THREADPOOL_CORE_SIZE": "20",
            }
            props.update(consumer_kinds.property_overrides(kind, p.version))
            props = {k: v for k, v in props.items() if v != ""}
            self.ri_head[p.idx] = (f'"cluster":"{c}","group":"{p.group}","client_id":"{p.client_id}",'
                                   f'"properties":{json.dumps(props, sort_keys=True, separators=(",", ":"))},')

    def _subs(self, p: Process) -> str:
        parts = []
        for t in p.topics:
            sv = self.clock.epoch(self.cluster.sub_versions.get((p.idx, t), p.start_ms))
            parts.append(f'{{"topic":"{t}","sub_string":"*","expression_type":"TAG","tags":[],"sub_version":{sv}}}')
        return "[" + ",".join(parts) + "]"

    # --- ownership ------------------------------------------------------------------------------

    def apply_change(self, ch) -> None:
        p = self.cluster.processes[ch.process]
        before = self.proc_owned[p.idx].get(ch.topic, ())
        after = ch.queues
        gone = [mq for mq in before if mq not in set(after)]
        new = [mq for mq in after if mq not in set(before)]
        for mq in gone:
            i = self.gq_index[(p.group, mq)]
            self.owners[i].remove(p.idx)
            if not ch.dead and self.gq_commits[i]:
                self.bco[i] = self.commit[i]  # removeUnnecessaryMessageQueue persists first (facts §2.5)
            if not self.owners[i]:
                self.pinned[i] = False
        for mq in new:
            i = self.gq_index[(p.group, mq)]
            if not self.owners[i]:
                self.commit[i] = self.bco[i]  # start from the broker's offset (facts §5.4)
                self.pulled[i] = self.bco[i]
            self.owners[i].append(p.idx)
        if after:
            self.proc_owned[p.idx][ch.topic] = after
        else:
            self.proc_owned[p.idx].pop(ch.topic, None)
        self.proc_gqs[p.idx] = sorted(self.gq_index[(p.group, mq)]
                                      for mqs in self.proc_owned[p.idx].values() for mq in mqs)
        touched = set(self.proc_gqs[p.idx]) | {self.gq_index[(p.group, mq)] for mq in gone}
        for i in touched:
            self.owner_n[i] = len(self.owners[i])
            self.cap[i] = sum(self._per_queue_cap(o) for o in self.owners[i])
        for o in {o for i in touched for o in self.owners[i]}:
            for i in self.proc_gqs[o]:
                self.cap[i] = sum(self._per_queue_cap(x) for x in self.owners[i])

    def _per_queue_cap(self, proc: int) -> float:
        n = max(1, len(self.proc_gqs[proc]))
        return self.cluster.processes[proc].consume_rate / n / 1000.0

    # --- the loop -------------------------------------------------------------------------------

    def step_times(self) -> list[int]:
        start = min([p.start_ms for p in self.cluster.processes] + [self.window[0] - 180_000])
        start = max(start, -DAY_MS) - COARSE_MS
        t = (start - SNAPSHOT_PHASE_MS) // COARSE_MS * COARSE_MS + SNAPSHOT_PHASE_MS
        fine_from = self.window[0] - 180_000
        end = self.window[1] + FINE_MS
        times = []
        while t < end:
            times.append(t)
            t += COARSE_MS if t < fine_from else FINE_MS
        return times

    def run(self) -> None:
        times = self.step_times()
        changes = self.cluster.changes
        ci = 0
        events = self.cluster.log_events
        ei = 0
        snaps = [t for t in times if (t - SNAPSHOT_PHASE_MS) % COARSE_MS == 0]
        self.hist = np.zeros((len(snaps) + 1, len(self.prod)), dtype=np.int64)
        self.hist_t = np.array(snaps + [snaps[-1] + COARSE_MS], dtype=np.int64)
        self.hist_n = 0
        self.ptr = np.zeros(len(self.gq_keys), dtype=np.int64)
        out_from = max(self.window[0], -120_000) if self.window[0] == 0 else self.window[0]
        prev = times[0] - COARSE_MS
        for t in times:
            dt_ms = t - prev
            fine = dt_ms == FINE_MS
            in_out = out_from <= t < self.window[1]
            owned = self.owner_n > 0
            # 1. the owners' persist during the step: the broker learns the commit of the step start
            self.bco_before = self.bco
            self.bco = np.where(owned & self.gq_commits, self.commit, self.bco)
            # 2. production (nothing is written to a broker group without its master; the
            # simplification: those sends are not redistributed to the other brokers)
            self.prod += (self.producers.step(t, dt_ms) * self._writable(t)).astype(np.int64)
            # 3. rebalance results and deaths up to t
            while ci < len(changes) and changes[ci].t <= t:
                self.apply_change(changes[ci])
                ci += 1
            owned = self.owner_n > 0
            # 4. hung messages
            step_logs: list[tuple[int, int, str]] = []
            for s in self.slow:
                self._slow_step(s, t, prev, step_logs)
            for st in self.stalls:
                self._stall_step(st, t)
            for d in self.down:
                self._master_step(d, t, prev, step_logs)
            for f in self.failing:
                self._failing_step(f, t, step_logs)
            if self.pending:
                self._flush_pending(t, step_logs)
            # 5. consumption
            avail = self.prod[self.gq_tq]
            budget = (self.cap * dt_ms).astype(np.int64)
            free = owned & ~self.pinned & ~self.frozen
            new_commit = np.minimum(avail, self.commit + budget)
            moved = free & (new_commit > self.commit)
            self.last_consume = np.where(moved, t, self.last_consume)
            self.commit = np.where(free, new_commit, self.commit)
            backlog = avail - self.commit
            # the client pulls ahead of its commit up to pullThresholdForQueue (+ one batch of 32),
            # also while nothing is consumed (a stall)
            self.pulled = np.where(free | (owned & self.frozen),
                                   np.minimum(avail, self.commit + self.pull_ahead), self.pulled)
            for st in self.stalls:
                if st.kind == "poison" and st.started and not st.ended:
                    self.last_consume[st.gq] = t  # takeMessages before every try (facts §2.6)
            if self.pinned.any():
                self._pinned_step(t, avail, budget)
            if in_out and fine:
                self._flow_control_logs(t, dt_ms, backlog, owned, step_logs)
            # 6. snapshots
            if (t - SNAPSHOT_PHASE_MS) % COARSE_MS == 0:
                self._history(t)
                if in_out:
                    self._snapshot(t)
            if in_out and fine:
                for phase, groups in self.ri_phases.items():
                    if (t - SNAPSHOT_PHASE_MS - phase) % COARSE_MS == 0:
                        self._shifted_running_info(t, groups)
            # 7. client log lines of this step
            while ei < len(events) and events[ei].t <= t:
                e = events[ei]
                ei += 1
                if out_from <= e.t < self.window[1]:
                    step_logs.extend(self._format_event(e))
            if in_out and fine:
                self._persist_lines(t, step_logs)
            if step_logs:
                self._flush_logs(step_logs)
            prev = t

    # --- slow message (facts §5.3) ---------------------------------------------------------------

    def _slow_step(self, s: SlowMessage, t: int, prev: int, logs: list) -> None:
        if not s.started and s.at_ms <= t:
            if not self.owners[s.gq]:
                s.started = True
                s.release_kind = "no_owner"
                return
            s.started = True
            s.owner = self.owners[s.gq][0]
            s.blocking_offset = int(self.commit[s.gq])
            self.pinned[s.gq] = True
            self.hi[s.gq] = s.blocking_offset + 1
            return
        if not s.started or s.released_ms is not None or not self.pinned[s.gq]:
            return
        p = self.cluster.processes[s.owner]
        timeout_ms = self.scenario.group(p.group).consume_timeout * 60_000
        # cleaner ticks: start + k * consumeTimeout, k >= 1 (scheduleAtFixedRate, initial delay = period)
        k = max(1, -(-(s.at_ms + timeout_ms + 1 - p.start_ms) // timeout_ms))
        tick = p.start_ms + k * timeout_ms
        finish = s.at_ms + s.hang_ms
        release = min(tick, finish)
        if release > t:
            span = int(self.hi[s.gq]) - 1 - s.blocking_offset
            s.max_span = max(s.max_span, span)
            return
        s.released_ms = release
        s.release_kind = "expired_cleaner" if tick <= finish else "listener_returned"
        s.redelivery_risk = int(self.hi[s.gq]) - 1 - s.blocking_offset
        self.pinned[s.gq] = False
        self.commit[s.gq] = self.hi[s.gq]  # msgTreeMap empty -> queueOffsetMax + 1
        self.last_consume[s.gq] = release
        if s.release_kind == "expired_cleaner":
            group, mq = self.gq_keys[s.gq]
            retry = self.tq_index[MessageQueue(retry_topic(group), mq.broker_name, 0)]
            self.prod[retry] += 1  # sent back to %RETRY%<group> with delay level 3
            if self.window[0] <= release < self.window[1]:
                ip = self.cluster.broker_ip[mq.broker_name]
                host_hex = "".join(f"{int(x):02X}" for x in ip.split("."))
                msg_id = f"{host_hex}00002A9F{s.blocking_offset * MSG_BYTES:016X}"
                text = (f"send expire msg back. topic={mq.topic}, msgId={msg_id}, storeHost={ip}:10911, "
                        f"queueId={mq.queue_id}, queueOffset={s.blocking_offset}")
                logs.append((release, s.owner, log_line(self.clock, release, "INFO", "CleanExpireMsgScheduledThread_1",
                                                         text, is_5x=p.is_5x, pid=p.pid, line_no=361)))

    # --- stalls: an orderly poison message, a hung consumer (facts §2.6, §5.3) -------------------

    def _stall_step(self, st: Stall, t: int) -> None:
        if not st.started and st.at_ms <= t:
            st.started = True
            gqs = ([st.gq] if self.owners[st.gq] else []) if st.kind == "poison" else list(self.proc_gqs[st.proc])
            for gq in gqs:
                st.blocking[gq] = int(self.commit[gq])
                self.frozen[gq] = True
        elif st.started and not st.ended and st.end_ms <= t:
            st.ended = True
            for gq in st.blocking:
                self.frozen[gq] = False

    def _failures(self, proc: int, topic: str, ts: int, seconds: int) -> int:
        """Tries of a poison message of ``proc`` on ``topic`` in the ``seconds`` before ``ts``:
        one a second (suspendCurrentQueueTimeMillis 1000 ms, a listener that fails at once)."""
        n = 0
        for st in self.stalls:
            if st.kind != "poison" or not st.started or self.gq_keys[st.gq][1].topic != topic:
                continue
            if st.gq not in st.blocking or proc not in self.owners[st.gq]:
                continue
            lo, hi = max(st.at_ms, ts - seconds * 1000), min(st.end_ms, ts)
            n += max(0, (hi - lo) // 1000)
        return n

    # --- a broker group's master down, a message that keeps failing (facts §10) ------------------

    def master_up(self, broker: str, t: int) -> bool:
        return not any(d.broker == broker and d.from_ms <= t < d.until_ms for d in self.down)

    def _writable(self, t: int) -> np.ndarray | float:
        """Per topic queue: 0 while its broker has no master (nothing can be written), else 1."""
        down = {d.broker for d in self.down if d.from_ms <= t < d.until_ms}
        if not down:
            return 1.0
        return np.array([0.0 if b in down else 1.0 for b in self.tq_broker])

    def _master_step(self, d: MasterDown, t: int, prev: int, logs: list) -> None:
        if prev < d.from_ms <= t:
            # the master's own offset table as it stops (the step's persists came after the stop
            # and went to the slave): what it reports again on its return
            d.stale = {i: int(self.bco_before[i]) for i, b in enumerate(self.gq_broker) if b == d.broker}
            self._route_lines(d, d.from_ms, logs, master=False)
        if prev < d.until_ms <= t:
            for i, value in d.stale.items():
                if not self.owners[i]:
                    self.bco[i] = value  # nobody commits: the master's old value stays
            self._route_lines(d, d.until_ms, logs, master=True)

    def _route_lines(self, d: MasterDown, at: int, logs: list, *, master: bool) -> None:
        """Each live client logs the route change of every topic it uses with queues on the
        broker, at its next route poll (every 30 s, MQClientInstance)."""
        for p in self.cluster.processes:
            poll = at + (p.hb_phase_ms - at) % ROUTE_POLL_MS
            if not p.alive(poll) or not self.window[0] <= poll < self.window[1]:
                continue
            for topic in p.topics:
                if not any(mq.broker_name == d.broker for mq in self.cluster.mq_all[topic]):
                    continue
                old, new = self._route(topic, d.broker, not master), self._route(topic, d.broker, master)
                text = f"the topic[{topic}] route info changed, old[{old}] ,new[{new}]"
                self.pending.append((poll, p.idx, log_line(self.clock, poll, "INFO", "MQClientFactoryScheduledThread",
                                                           text, is_5x=p.is_5x, pid=p.pid, line_no=806)))

    def _route(self, topic: str, broker: str, with_master: bool) -> str:
        """TopicRouteData.toString of 4.9.x (facts §10.3: only the master's address leaves)."""
        counts: dict[str, int] = {}
        for mq in self.cluster.mq_all[topic]:
            counts[mq.broker_name] = counts.get(mq.broker_name, 0) + 1
        queues = ", ".join(f"QueueData [brokerName={b}, readQueueNums={n}, writeQueueNums={n}, perm=6, "
                           f"topicSysFlag=0]" for b, n in sorted(counts.items()))
        datas = []
        for b in sorted(counts):
            addrs = []
            if b != broker or with_master:
                addrs.append(f"0={self.cluster.broker_ip[b]}:10911")
            if self.slave_ip.get(b):
                addrs.append(f"1={self.slave_ip[b]}:10911")
            datas.append(f"BrokerData [brokerName={b}, brokerAddrs={{{', '.join(addrs)}}}]")
        return (f"TopicRouteData [orderTopicConf=null, queueDatas=[{queues}], "
                f"brokerDatas=[{', '.join(datas)}], filterServerTable={{}}]")

    def _flush_pending(self, t: int, logs: list) -> None:
        due = [row for row in self.pending if row[0] <= t]
        if due:
            self.pending = [row for row in self.pending if row[0] > t]
            logs.extend(due)

    def _hand_back_broker(self, group: str, broker: str, t: int) -> str | None:
        """Where a failed message goes back: the message's broker's master, else (the fallback
        send) any master hosting %RETRY%<group>; None when neither is up (facts §10.2)."""
        if self.master_up(broker, t):
            return broker
        return next((b for b in self.cluster.group_brokers[group] if self.master_up(b, t)), None)

    def _failing_step(self, f: FailingMessage, t: int, logs: list) -> None:
        if f.done or (not f.started and t < f.at_ms):
            return
        group, mq = self.gq_keys[f.gq]
        if not f.started:
            f.started = True
            if not self.owners[f.gq]:
                f.done = True
                return
            f.owner = self.owners[f.gq][0]
            f.offset = int(self.commit[f.gq])
            f.next_try_ms = f.at_ms
        if self.pinned[f.gq] and f.loop_from_ms is not None and f.released_ms is None:
            f.max_span = max(f.max_span, int(self.hi[f.gq]) - 1 - f.offset)
        while not f.done and f.next_try_ms <= t:
            now = f.next_try_ms
            f.failures.append(now)
            target = self._hand_back_broker(group, mq.broker_name, now)
            if target is not None:
                if f.loop_from_ms is not None and f.released_ms is None:
                    f.released_ms = now
                    f.redelivery_risk = int(self.hi[f.gq]) - 1 - f.offset
                    self.pinned[f.gq] = False
                    self.commit[f.gq] = self.hi[f.gq]  # msgTreeMap empty -> queueOffsetMax + 1
                    self.last_consume[f.gq] = now
                if f.tries >= MAX_RECONSUME_TIMES:
                    f.done = True  # %DLQ%<group>
                    break
                # back to %RETRY%<group>, redelivered after delay level 3 + reconsumeTimes
                self.prod[self.tq_index[MessageQueue(retry_topic(group), target, 0)]] += 1
                f.next_try_ms = now + RETRY_DELAYS_MS[f.tries]
                f.tries += 1
                f.handed_back += 1
                continue
            # no master for the hand-back nor for the fallback: kept and retried locally
            if f.loop_from_ms is None:
                f.loop_from_ms = now
                self.pinned[f.gq] = True
                self.hi[f.gq] = max(int(self.hi[f.gq]), f.offset + 1)
            self._send_back_lines(f, now, logs)
            f.tries += 1  # local only (msg.setReconsumeTimes), no bound
            f.next_try_ms = now + LOOP_MS

    def _send_back_lines(self, f: FailingMessage, consumed: int, logs: list) -> None:
        """The inner hand-back error after the 5 s name-server timeout, then the outer line
        with the MessageExt once the fallback send failed too (facts §10.1, §10.2)."""
        p = self.cluster.processes[f.owner]
        group, mq = self.gq_keys[f.gq]
        ip = self.cluster.broker_ip[mq.broker_name]
        host_hex = "".join(f"{int(x):02X}" for x in ip.split("."))
        msg_id = f"{host_hex}00002A9F{f.offset * MSG_BYTES:016X}"
        born = self.clock.epoch(f.at_ms - 1500)
        thread = f"ConsumeMessageThread_{1 + f.tries % 20}"
        msg = (f"MessageExt [brokerName={mq.broker_name}, queueId={mq.queue_id}, storeSize=203, "
               f"queueOffset={f.offset}, sysFlag=0, bornTimestamp={born}, bornHost=/{p.ip}:{40000 + p.pid % 20000}, "
               f"storeTimestamp={born + 3}, storeHost=/{ip}:10911, msgId={msg_id}, "
               f"commitLogOffset={f.offset * MSG_BYTES}, bodyCRC=1032136437, reconsumeTimes={f.tries}, "
               f"preparedTransactionOffset=0, toString()=Message{{topic='{mq.topic}', flag=0, "
               f"properties={{MIN_OFFSET=0, MAX_OFFSET={f.offset + 1}, "
               f"CONSUME_START_TIME={self.clock.epoch(consumed)}, "
               f"UNIQ_KEY={msg_id}, CLUSTER={self.cluster_name}, TAGS=*}}, body=[123, 34, 105, 100, 34], "
               f"transactionId='null'}}]")
        inner, outer = consumed + 5_000, consumed + 5_004

        def add(at: int, level: str, text: str) -> None:
            if self.window[0] <= at < self.window[1]:
                self.pending.append((at, p.idx, log_line(self.clock, at, level, thread, text, is_5x=p.is_5x,
                                                         pid=p.pid, line_no=325)))

        def cont(at: int, text: str) -> None:
            if self.window[0] <= at < self.window[1]:
                self.pending.append((at, p.idx, text))

        add(inner, "ERROR", f"sendMessageBack Exception, {group}")
        cont(inner, "org.apache.rocketmq.remoting.exception.RemotingTimeoutException: wait response on the "
                    "channel <10.0.9.2:9876> timeout, 5000(ms)")
        cont(inner, "\tat org.apache.rocketmq.remoting.netty.NettyRemotingAbstract.invokeSyncImpl"
                    "(NettyRemotingAbstract.java:427)")
        add(outer, "ERROR", f"sendMessageBack exception, group: {group} msg: {msg}")
        cont(outer, f"org.apache.rocketmq.client.exception.MQClientException: No route info of this topic: "
                    f"{retry_topic(group)}")
        cont(outer, "See http://rocketmq.apache.org/docs/faq/ for further details.")
        cont(outer, "\tat org.apache.rocketmq.client.impl.producer.DefaultMQProducerImpl.sendDefaultImpl"
                    "(DefaultMQProducerImpl.java:699)")

    def _failed_tps(self, p: Process, topic: str, t: int) -> tuple[float, int]:
        """consumeFailedTPS over the last minute and failed messages in the last hour."""
        minute = hour = 0
        for f in self.failing:
            if f.owner == p.idx and self.gq_keys[f.gq][1].topic == topic:
                minute += sum(1 for x in f.failures if t - 60_000 < x <= t)
                hour += sum(1 for x in f.failures if t - 3_600_000 < x <= t)
        return minute / 60.0, hour

    def _pinned_step(self, t: int, avail: np.ndarray, budget: np.ndarray) -> None:
        idx = np.nonzero(self.pinned)[0]
        for i in idx:
            group = self.gq_keys[i][0]
            limit = self.commit[i] + self.scenario.group(group).max_span + 32
            new_hi = min(int(avail[i]), int(self.hi[i] + budget[i]), int(limit))
            if new_hi > self.hi[i]:
                self.last_consume[i] = t
                self.hi[i] = new_hi
            self.pulled[i] = self.hi[i]

    def _flow_control_logs(self, t: int, dt_ms: int, backlog: np.ndarray, owned: np.ndarray,
                           logs: list) -> None:
        per_step = FLOW_CONTROL_PER_S * dt_ms // 1000
        span_fc = [i for i in np.nonzero(self.pinned)[0]
                   if self.hi[i] - 1 - self.commit[i] > self.scenario.group(self.gq_keys[i][0]).max_span]
        count_fc = np.nonzero(owned & ~self.pinned & (backlog > self.pull_ahead - 32))[0]
        for kind, queues in (("span", span_fc), ("count", count_fc)):
            by_proc: dict[int, list[int]] = {}
            for i in queues:
                by_proc.setdefault(self.owners[i][0], []).append(int(i))
            for proc, gqs in sorted(by_proc.items()):
                counters = self.span_counter if kind == "span" else self.fc_counter
                old = counters[proc]
                counters[proc] = old + per_step * len(gqs)
                for m in range(old // 1000 + 1, counters[proc] // 1000 + 1):
                    times = m * 1000
                    frac = (times - old) / (counters[proc] - old)
                    when = t - dt_ms + int(frac * dt_ms)
                    i = gqs[m % len(gqs)]
                    logs.append((when, proc, self._fc_line(kind, proc, i, when, times - 1000 if times else 0)))

    def _fc_line(self, kind: str, proc: int, i: int, when: int, times: int) -> str:
        p = self.cluster.processes[proc]
        group = self.scenario.group(p.group)
        lo = int(self.commit[i])
        hi = int(self.hi[i] - 1) if self.pinned[i] else int(self.pulled[i] - 1)
        pull = (f"PullRequest [consumerGroup={p.group}, messageQueue={self.mq_text[i]}, "
                f"nextOffset={hi + 1}]")
        if kind == "span":
            text = (f"the queue's messages, span too long, so do flow control, minOffset={lo}, maxOffset={hi}, "
                    f"maxSpan={group.max_span}, pullRequest={pull}, flowControlTimes={times}")
        else:
            count = hi - lo + 1
            text = (f"the cached message count exceeds the threshold {group.pull_threshold}, so do flow control, "
                    # size: a long in RocketMQ (facts §5.3)
                    f"minOffset={lo}, maxOffset={hi}, count={count}, size={count * MSG_BYTES // 1048576} MiB, "
                    f"pullRequest={pull}, flowControlTimes={times}")
        return log_line(self.clock, when, "WARN", "PullMessageService", text, is_5x=p.is_5x, pid=p.pid,
                        line_no=287)

    # --- snapshots ----------------------------------------------------------------------------------

    def _history(self, t: int) -> None:
        self.hist[self.hist_n] = self.prod
        self.hist_n += 1

    def _last_timestamps(self, co: np.ndarray) -> np.ndarray:
        """Store time of the message at consumerOffset-1 (facts §5.1), from the minute history."""
        target = co - 1
        n = self.hist_n
        tq = self.gq_tq
        while True:
            nxt = np.minimum(self.ptr + 1, n - 1)
            step = (nxt > self.ptr) & (self.hist[nxt, tq] <= target)
            if not step.any():
                break
            self.ptr = np.where(step, nxt, self.ptr)
        lo = self.hist[self.ptr, tq]
        hi_i = np.minimum(self.ptr + 1, n - 1)
        hi = self.hist[hi_i, tq]
        frac = np.where(hi > lo, (target - lo) / np.maximum(hi - lo, 1), 0.0)
        when = self.hist_t[self.ptr] + (np.clip(frac, 0, 1) * (self.hist_t[hi_i] - self.hist_t[self.ptr]))
        ts = self.clock.day_ms + when.astype(np.int64) - 3
        return np.where(co > 0, ts, 0)

    def _snapshot(self, t: int) -> None:
        clock = self.clock
        ts_off = t + self.offsets_phase_ms
        cl = self.cluster
        # offsets: one row per group x queue the broker reports (facts §5.1)
        owner_ip = self._owner_ips()
        bo = self.prod[self.gq_tq].tolist()
        co = self.bco.tolist()
        pull = np.maximum(self.bco, self.pulled).tolist()
        last = self._last_timestamps(self.bco).tolist()
        e_ts = clock.epoch(ts_off)
        reported = self._reported(ts_off)
        node = [""] * len(self.gq_keys)
        if self.with_broker_id:
            # the node that answered: the slave while the master is down (facts §10.4)
            node = [f',"broker_id":{0 if self.master_up(b, ts_off) else 1}' for b in self.gq_broker]
            for d in self.down:
                if d.until_ms <= ts_off < d.until_ms + FINE_MS:
                    # the returned master's pre-outage table, until the owners' next persist
                    for i, value in d.stale.items():
                        co[i] = value
        if (self.gq_retained >= 0).any():
            # the queue's minimum offset: what its commit-log files still hold (DESIGN.md §3.1)
            low = np.maximum(self.prod[self.gq_tq] - self.gq_retained, 0).tolist()
            node = [node[i] + (f',"min_offset":{low[i]}' if self.gq_retained[i] >= 0 else "")
                    for i in range(len(self.gq_keys))]
        lines = [f'{{"ts":{e_ts}{self.off_mid[i]}{bo[i]},"consumer_offset":{co[i]},"pull_offset":{pull[i]},'
                 f'"last_timestamp":{last[i]},"client_ip":{owner_ip[i]}{node[i]}}}'
                 for i in range(len(self.gq_keys)) if reported[i]]
        name = "part-00000.jsonl.gz" if ts_off % DAY_MS < DAY_MS // 2 else "part-00001.jsonl"
        self.files.write_lines("offsets", ts_off, name, lines)
        # ground truth for the truth file
        self.track.snapshot_ts.append(ts_off)
        for i in self.tracked:
            self.track.emitted[i].append(bool(reported[i]))
            self.track.broker_offset[i].append(bo[i])
            self.track.consumer_offset[i].append(co[i])
            self.track.owners[i].append(tuple(self.owners[i]))
        # connections: one row per group x broker x channel (consumerConnection, facts §6.3)
        ts_conn = t + int(self.rng.integers(200, 2600))
        iso = clock.iso_z(ts_conn)
        conn = []
        round_no = len(self.track.connection_ts)
        for group in self.scenario.groups:
            with_subs = round_no % group.subscriptions_every == 0
            for ch in cl.channels_at(group.name, None, ts_conn):
                p = ch.process
                lu = clock.epoch(p.last_heartbeat(min(ts_conn, p.stop_ms - 1) if p.stop_ms else ts_conn))
                subs = f',"subscriptions":{self._subs(p)}' if with_subs else ""
                nodes = self.broker_nodes[ch.broker]
                if len(nodes) > 1 and not self.master_up(ch.broker, ts_conn):
                    nodes = nodes[1:]  # only the slave lists the channel while the master is down
                for node in nodes:
                    conn.append(f'{{"ts":"{iso}",{self.conn_static[(p.idx, ch.broker)]}{node}'
                                f'"last_update_timestamp":{lu}{subs}}}')
        self.files.write_lines("connections", ts_conn, "part-00000.jsonl", conn)
        self.track.connection_ts.append(ts_conn)
        # running_info: per client id, answered by its first channel (facts §3, §6.1)
        ts_ri = t + int(self.rng.integers(2600, 5000))
        self._running_info_round(ts_ri, [g for g in self.scenario.groups if not g.running_info_phase],
                                 self.prev_commit)
        self.prev_commit = self.commit.copy()

    def _shifted_running_info(self, t: int, groups: list) -> None:
        """A running-info round of ``groups`` on their own cycle, ``running_info_phase`` after the
        offsets collection: the state of step ``t``, which may already show a stall released
        after the last offsets snapshot (commit moved, the minute's OK rate counting the backlog)."""
        self._running_info_round(t + int(self.ri_rng.integers(2600, 5000)), groups, self.shifted_prev_commit)
        gqs = [i for i, (g, _) in enumerate(self.gq_keys) if g in {group.name for group in groups}]
        self.shifted_prev_commit[gqs] = self.commit[gqs]

    def _running_info_round(self, ts_ri: int, groups: list, prev_commit: np.ndarray) -> None:
        """One line per answering client id of ``groups`` (facts §3, §6.1); the minute rates count
        the commits since ``prev_commit`` (the group's previous round)."""
        iso8 = self.clock.iso_gmt8(ts_ri)
        ri = []
        commit = self.commit.tolist()
        minute = len(self.track.connection_ts) - 1
        for group in groups:
            if not group.running_info or minute % group.running_info_every:
                continue
            for p in self.running_info_processes(group.name, ts_ri):
                if p.spec.name in group.admin_unanswered:
                    continue
                ri.append(f'{{"ts":"{iso8}",{self.ri_head[p.idx]}"subscriptions":{self._subs(p)},'
                          f'"mq_table":{self._mq_table(p, ts_ri, commit)},'
                          f'"status_table":{self._status(p, ts_ri, prev_commit)}}}')
                self._track_answer(ts_ri, p)
                self._track_stall_flow_control(ts_ri, p)
        self.files.write_lines("running_info", ts_ri, "part-00000.jsonl", ri)

    def _track_stall_flow_control(self, ts: int, p: Process) -> None:
        """Ground truth of flow control during a stall as the answer shows it: the queue's commit
        still at its frozen offset and more than pullThresholdForQueue messages cached."""
        owned = set(self.proc_gqs[p.idx])
        for st in self.stalls:
            for gq, frozen_at in st.blocking.items():
                if gq in owned and self.commit[gq] == frozen_at and \
                        self.pulled[gq] - self.commit[gq] > self.scenario.group(self.gq_keys[gq][0]).pull_threshold:
                    st.flow_controlled.setdefault(gq, []).append(ts)

    def _track_answer(self, t: int, p: Process) -> None:
        """Ground truth of what a running-info answer listed (stale listings, DESIGN.md §5.1)."""
        if p.group in self.tracked_group_names:
            self.track.running_info.append((t, p.idx, tuple(self.proc_gqs[p.idx])))

    def running_info_processes(self, group: str, t: int) -> list[Process]:
        seen: dict[str, Process] = {}
        broker = self.cluster.brokers[0]
        for ch in self.cluster.channels_at(group, broker, t):
            if ch.process.client_id not in seen:
                seen[ch.process.client_id] = ch.process
        return [p for p in seen.values() if p.alive(t)]

    def _owner_ips(self) -> list[str]:
        """consumerProgress -s: the owner's IP from the running infos (last writer wins), else N/A;
        ``null`` where the group's collector does not run it. It asks the connections in turn and
        gives up at the first that does not answer (``Group.admin_unanswered``): N/A from there."""
        out = []
        procs = self.cluster.processes
        for i, owners in enumerate(self.owners):
            group = self.groups[self.gq_keys[i][0]]
            if group.client_ip == "none":
                out.append("null")
                continue
            # consumerProgress -s reads the owners' mqTable: none from pop or pre-5.1.1 lite pull
            owners = [o for o in owners if consumer_kinds.reports_mq_table(group.kind, procs[o].version)]
            if group.admin_unanswered:
                cut = self._unanswered_from(group)
                owners = [o for o in owners if cut is None or procs[o].client_id < cut]
            out.append(f'"{procs[owners[-1]].ip}"' if owners else '"N/A"')
        return out

    def _unanswered_from(self, group) -> str | None:
        ids = [p.client_id for p in self.cluster.processes
               if p.group == group.name and p.spec.name in group.admin_unanswered]
        return min(ids) if ids else None

    def _reported(self, t: int) -> list[bool]:
        reported = list(self.gq_broker_offsets)
        for i in self.flapping:
            g, mq = self.gq_keys[i]
            reported[i] = self.cluster.topic_reported(g, mq.broker_name, mq.topic, t)
        return reported

    def _mq_table(self, p: Process, ts: int, commit: list[int]) -> str:
        if not consumer_kinds.reports_mq_table(self.groups[p.group].kind, p.version):
            return "[]"
        rows = []
        epoch = self.clock.epoch
        # orderly: the queue lock is renewed every 20 s (consumer_kinds.locks_queues)
        lock = (f'"locked":true,"try_unlock_times":0,"last_lock_timestamp":'
                f'{epoch(ts - (ts - p.start_ms) % consumer_kinds.LOCK_RENEW_MS)},'
                if consumer_kinds.locks_queues(self.groups[p.group].kind)
                else '"locked":false,"try_unlock_times":0,"last_lock_timestamp":0,')
        for i in self.proc_gqs[p.idx]:
            _, mq = self.gq_keys[i]
            c = commit[i]
            if self.pinned[i]:
                lo, hi, count = c, int(self.hi[i]) - 1, 1
            else:
                cached = int(self.pulled[i]) - c
                lo, hi, count = (c, c + cached - 1, cached) if cached > 0 else (0, 0, 0)
            size = count * MSG_BYTES // 1048576
            lc = epoch(int(self.last_consume[i])) if self.last_consume[i] else 0
            rows.append(
                f'{{"topic":"{mq.topic}","broker_name":"{mq.broker_name}","queue_id":{mq.queue_id},'
                f'"commit_offset":{c},"cached_msg_min_offset":{lo},"cached_msg_max_offset":{hi},'
                f'"cached_msg_count":{count},"cached_msg_size_mib":{size},"transaction_msg_min_offset":0,'
                f'"transaction_msg_max_offset":0,"transaction_msg_count":0,{lock}'
                f'"dropped":false,"last_pull_timestamp":{epoch(ts - 37)},'
                f'"last_consume_timestamp":{lc}}}')
        return "[" + ",".join(rows) + "]"

    def _status(self, p: Process, ts: int, prev_commit: np.ndarray) -> str:
        if not consumer_kinds.reports_status_table(self.groups[p.group].kind):
            return "[]"
        rows = []
        for topic in p.topics:
            gqs = [i for i in self.proc_gqs[p.idx] if self.gq_keys[i][1].topic == topic]
            done = sum(int(self.commit[i] - prev_commit[i]) for i in gqs)
            tps = max(0.0, done / 60.0)
            # failed: the minute rate and the hour's sum (ConsumerStatsManager, facts §6.1), of an
            # orderly poison message and of a message that keeps failing (master down or not)
            failed_tps = self._failures(p.idx, topic, ts, 60) / 60.0
            failed_msgs = self._failures(p.idx, topic, ts, 3600)
            if self.failing:
                rate, failed = self._failed_tps(p, topic, ts)
                failed_tps += rate
                failed_msgs += failed
            rows.append(f'{{"topic":"{topic}","pull_rt":{1.2 + (p.pid % 7) / 10:.1f},"pull_tps":{tps:.2f},'
                        f'"consume_rt":{3.0 + (p.pid % 5):.1f},"consume_ok_tps":{tps:.2f},'
                        f'"consume_failed_tps":{f"{failed_tps:.2f}" if failed_tps else "0.0"},'
                        f'"consume_failed_msgs":{failed_msgs}}}')
        return "[" + ",".join(rows) + "]"

    # --- client logs ----------------------------------------------------------------------------------

    def _persist_lines(self, t: int, logs: list) -> None:
        bco = self.bco
        for p in self.cluster.processes:
            if not p.log_persist or not p.alive(t) or not self.proc_gqs[p.idx]:
                continue
            when = t - FINE_MS + p.persist_phase_ms
            if when < self.window[0]:
                continue
            head = log_line(self.clock, when, "INFO", "MQClientFactoryScheduledThread",
                            f"[persistAll] Group: {p.group} ClientId: {p.client_id} updateConsumeOffsetToBroker ",
                            is_5x=p.is_5x, pid=p.pid, line_no=120)
            for i in self.proc_gqs[p.idx]:
                logs.append((when, p.idx, f"{head}{self.mq_text[i]} {bco[i]}"))

    def _format_event(self, e) -> list[tuple[int, int, str]]:
        p = self.cluster.processes[e.process]
        clock = self.clock
        out = []

        def line(t: int, level: str, thread: str, text: str, no: int) -> None:
            out.append((t, p.idx, log_line(clock, t, level, thread, text, is_5x=p.is_5x, pid=p.pid, line_no=no)))

        if e.kind == "rebalance":
            for mq in e.data["removed"]:
                line(e.t, "INFO", "RebalanceService", f"doRebalance, {p.group}, remove unnecessary mq, {mq}", 424)
            for mq in e.data["added"]:
                line(e.t, "INFO", "RebalanceService", f"doRebalance, {p.group}, add a new mq, {mq}", 467)
            prefix = "client rebalanced" if p.is_5x else "rebalanced"
            result = "[" + ", ".join(str(mq) for mq in e.data["result"]) + "]"
            line(e.t, "INFO", "RebalanceService",
                 f"{prefix} result changed. allocateMessageQueueStrategyName={p.strategy}, group={p.group}, "
                 f"topic={e.data['topic']}, clientId={p.client_id}, mqAllSize={e.data['mq_all_size']}, "
                 f"cidAllSize={e.data['cid_all_size']}, rebalanceResultSize={len(e.data['result'])}, "
                 f"rebalanceResultSet={result}", 302)
        elif e.kind == "bug_not_in_cid_all":
            line(e.t, "INFO", "RebalanceService", f"[BUG] ConsumerGroup: {p.group} The consumerId: {p.client_id} "
                 f"not in cidAll: [{', '.join(e.data['cid_all'])}]", 48)
        elif e.kind == "notify":
            line(e.t, "INFO", "NettyClientPublicExecutor_1", f"receive broker's notification[{e.data['addr']}], "
                 f"the consumer group: {p.group} changed, rebalance immediately", 194)
        elif e.kind == "persist_removed":
            for mq in e.data["queues"]:
                i = self.gq_index[(p.group, mq)]
                line(e.t, "INFO", "main", f"[persist] Group: {p.group} ClientId: {p.client_id} "
                     f"updateConsumeOffsetToBroker {mq} {self.commit[i]}", 147)
        return out

    def _flush_logs(self, logs: list[tuple[int, int, str]]) -> None:
        by_host: dict[tuple[str, int], list[tuple[int, int, str]]] = {}
        procs = self.cluster.processes
        for t, proc, text in logs:
            if not self.groups[procs[proc].group].client_logs:
                continue
            folder = self.clock.folder_date(t).toordinal()
            by_host.setdefault((procs[proc].host, folder), []).append((t, proc, text))
        for (host, _), rows in sorted(by_host.items()):
            rows.sort(key=lambda r: r[0])
            self.files.write_log(host, rows[0][0], [log_zones.as_written(r[2], log_zones.zone_of(procs[r[1]]))
                                                    for r in rows])
