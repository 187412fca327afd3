"""``_truth.json``: every injected fault with its exact queues, clients and time window, and the
findings the detectors should report for it, in the DESIGN.md §4 gold shapes.

The findings are read off the simulation's ground truth (who really owned each queue at each
offsets snapshot, what the broker reported) with the DESIGN.md §5 rules and default thresholds:
an orphan or double-owned episode is a run of consecutive snapshots (gaps of up to
``max_snapshot_gap`` carry the state over) whose first and last snapshot are ``orphan_min_duration``
or more apart; a stuck episode is a run with the same committed offset and lag > 0 lasting
``stuck_min_duration``. ``first_seen``/``last_seen``/``stuck_since`` are those snapshots' ``ts``.
Every episode is attributed to the fault that caused it; anything the simulation produced that no
fault explains is listed under ``unexplained`` (the built-in scenarios have none).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from jobs.replay.reference import MessageQueue, allocate_all, sorted_cid_all
from jobs.settings import DetectionSettings, SeveritySettings
from jobs.simulate.cluster import Cluster
from jobs.simulate.flow import Flow
from jobs.simulate.scenario import Fault, Scenario, parse_time_ms
from jobs.simulate.writers import Clock

# The detectors' default thresholds, read from the settings model (their one home), in ms.
_DETECTION, _SEVERITY = DetectionSettings(), SeveritySettings()
ORPHAN_MIN_MS = _DETECTION.orphan_min_duration_seconds * 1000
STUCK_MIN_MS = _DETECTION.stuck_min_duration_seconds * 1000
MAX_GAP_MS = _DETECTION.max_snapshot_gap_seconds * 1000
TRANSIENT_MAX_MS = _DETECTION.orphan_transient_max_seconds * 1000
LIVENESS_MS = _DETECTION.liveness_window_seconds * 1000
CRITICAL_LAG = _SEVERITY.critical_lag
CRITICAL_MS = _SEVERITY.critical_minutes * 60_000
WHATIF_STRATEGIES = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH")
ORPHAN_CAUSE = {"duplicate_client_id": "DUPLICATE_CLIENT_ID",
                "subscription_inconsistent": "SUBSCRIPTION_INCONSISTENT",
                "strategy_inconsistent": "STRATEGY_INCONSISTENT", "consumer_crash": "REBALANCE_GAP"}
# an orderly consumer's SUSPEND loop shows consume failures at every snapshot; a hung consumer
# finishes nothing while messages wait (DESIGN.md §5)
STALL_CAUSE = {"poison_message": "CONSUME_FAILING", "consumer_hang": "CONSUMER_HUNG"}
CAUSE_ORDER = ["DUPLICATE_CLIENT_ID", "SUBSCRIPTION_INCONSISTENT", "STRATEGY_INCONSISTENT",
               "CLIENT_NOT_IN_CID_ALL", "NO_LIVE_CONSUMER", "REBALANCE_GAP", "UNKNOWN"]


@dataclass
class Episode:
    kind: str  # orphan | double | stuck
    gq: int
    first: int  # snapshot index
    last: int
    owners: tuple[int, ...] = ()  # stale: the processes the data shows as owners at ``first``


def build_truth(scenario: Scenario, cluster: Cluster, flow: Flow, clock: Clock, seed: int,
                window: tuple[int, int]) -> dict:
    tr = flow.track
    ts = tr.snapshot_ts
    seen = _observable_owners(ts, tr.connection_ts)
    episodes: list[Episode] = []
    abandoned = _abandoned_groups(cluster, flow, ts)
    # broadcast and pop groups own no queue exclusively: no queue findings (DESIGN.md §5.1)
    no_ownership = {g.name for g in scenario.groups if g.kind in ("broadcast", "pop")}
    stale = _stale_listings(scenario, cluster, flow)
    shown_owners = _ShownOwners(cluster, tr.connection_ts)
    for gq in flow.tracked:
        if flow.gq_keys[gq][0] in abandoned | no_ownership:
            continue
        advanced = _advanced(gq, ts, tr)
        episodes += [_from_previous_snapshot(e, ts, tr) for e in _runs(
            gq, ts, tr, "orphan",
            lambda k, gq=gq, advanced=advanced: not (seen[k] and tr.owners[gq][k]) and not advanced[k])]
        episodes += _runs(gq, ts, tr, "double", lambda k, gq=gq: seen[k] and len(tr.owners[gq][k]) >= 2
                          and shown_owners(tr.owners[gq][k], ts[k]) >= 2)
        episodes += [Episode(e.kind, e.gq, e.first, e.last, tuple(stale[gq][e.first])) for e in _runs(
            gq, ts, tr, "stale", lambda k, gq=gq: seen[k] and len(tr.owners[gq][k]) < 2 and bool(stale[gq][k]))]
        episodes += _stuck_runs(gq, ts, tr)
    episodes = [e for e in episodes if _keep(e, ts, tr)]
    faults_out = []
    claimed: set[int] = set()
    for fi, fault in enumerate(scenario.faults):
        entry = _fault_entry(fi, fault, scenario, cluster, flow, clock, window, episodes, claimed)
        faults_out.append(entry)
    unexplained = [_episode_row(e, flow, clock, None, cluster) for i, e in enumerate(episodes) if i not in claimed]
    return {"scenario": scenario.name, "seed": seed, "date": clock.day.isoformat(),
            "window": {"start": clock.iso_z(window[0]), "end": clock.iso_z(window[1])},
            "thresholds": {"orphan_min_duration_seconds": ORPHAN_MIN_MS // 1000,
                           "stuck_min_duration_seconds": STUCK_MIN_MS // 1000,
                           "max_snapshot_gap_seconds": MAX_GAP_MS // 1000,
                           "critical_lag": CRITICAL_LAG, "critical_minutes": CRITICAL_MS // 60_000},
            "faults": faults_out, "unexplained": unexplained}


# --- episodes --------------------------------------------------------------------------------------

def _observable_owners(ts: list[int], connection_ts: list[int]) -> list[bool]:
    """Per snapshot: is any connection record written in (t − liveness_window, t]? Owners count
    only when their liveness can be read off the data (DESIGN.md §5) — not at the day's first
    snapshot, which comes before the day's first connections round."""
    return [any(t - LIVENESS_MS < c <= t for c in connection_ts) for t in ts]


class _ShownOwners:
    """How many owning processes the data shows at a snapshot. Processes sharing a client id
    show as more than one only once their channels heartbeated while all were listed: at a
    connections round after the round that first listed the latest of them (the dead channel
    of a restart that kept its id never does; jobs.rules.liveness.processes_per_id). Before,
    the id is one owner."""

    def __init__(self, cluster: Cluster, connection_ts: list[int]):
        self.cluster, self.rounds = cluster, sorted(connection_ts)
        self._first: dict[int, int | None] = {}

    def first_listed(self, proc: int) -> int | None:
        if proc not in self._first:
            p = self.cluster.processes[proc]
            mine = [ch for ch in self.cluster.channels[p.group] if ch.process.idx == proc]
            self._first[proc] = next((c for c in self.rounds if any(
                ch.register_ms <= c and (ch.remove_ms is None or c < ch.remove_ms) for ch in mine)), None)
        return self._first[proc]

    def __call__(self, owners: list[int], t: int) -> int:
        i = bisect.bisect_right(self.rounds, t)
        latest = self.rounds[i - 1] if i and self.rounds[i - 1] > t - LIVENESS_MS else None
        by_id: dict[str, list[int]] = {}
        for proc in owners:
            by_id.setdefault(self.cluster.processes[proc].client_id, []).append(proc)
        shown = 0
        for procs in by_id.values():
            firsts = [self.first_listed(proc) for proc in procs]
            both = latest is not None and all(f is not None and f < latest for f in firsts)
            shown += len(procs) if len(procs) == 1 or both else 1
        return shown


def _live_in_data(cluster: Cluster, connection_ts: list[int], proc: int, t: int) -> bool:
    """Live by DESIGN.md §5: a connections round in (t − liveness_window, t] listed a channel of
    the process (a clean stop unregisters at once; a crash's channel stays until expiry)."""
    p = cluster.processes[proc]
    return any(t - LIVENESS_MS < c <= t and any(
        ch.process.idx == proc and ch.register_ms <= c and (ch.remove_ms is None or c < ch.remove_ms)
        for ch in cluster.channels[p.group]) for c in connection_ts)


def _stale_listings(scenario: Scenario, cluster: Cluster, flow: Flow) -> dict[int, list[list[int]]]:
    """Per tracked queue and snapshot, the owners the data shows there besides the real ones when
    a stale running info still lists it (DESIGN.md §5.1 "Claims"; ``[]`` otherwise): a client's
    running info lists what it held when it answered and holds until its next answer (at most
    ``max_snapshot_gap``), while the queue moved at a rebalance in between (facts §2.2 step 5:
    the old owner drops it at once). Counted when the lister is live in the connections and a
    real owner shows in the data too — live, with a claim of its own: its ``rebalanced result
    changed`` line (logged at the take, when the group ships client logs) or its own latest
    running info. A lister that crashed is no STALE_OWNER (it answers no round again). The
    result is the listers plus those owners, as processes."""
    tr = flow.track
    ts = tr.snapshot_ts
    out: dict[int, list[list[int]]] = {gq: [[] for _ in ts] for gq in flow.tracked}
    answers = sorted(tr.running_info)
    latest: dict[int, tuple[int, frozenset[int]]] = {}
    a = 0
    for k, t in enumerate(ts):
        while a < len(answers) and answers[a][0] <= t:
            at, proc, gqs = answers[a]
            latest[proc] = (at, frozenset(gqs))
            a += 1
        listing = {proc: gqs for proc, (at, gqs) in latest.items() if t - at <= MAX_GAP_MS}
        for proc, gqs in listing.items():
            for gq in gqs:
                owners = tr.owners.get(gq)
                if owners is None or proc in owners[k] or not owners[k]:
                    continue
                # a crashed lister has no next answer to drop it: its stale id is a restart's or
                # crash's gap (DESIGN.md §5.1 "Restarts"), not a STALE_OWNER
                if not cluster.processes[proc].alive(t) or not _live_in_data(
                        cluster, tr.connection_ts, proc, t):
                    continue
                shown = [o for o in owners[k] if _live_in_data(cluster, tr.connection_ts, o, t) and (
                    scenario.group(cluster.processes[o].group).client_logs or gq in listing.get(o, ()))]
                if shown:
                    out[gq][k] = sorted(set(out[gq][k]) | {proc} | set(shown))
    return out


def _abandoned_groups(cluster: Cluster, flow: Flow, ts: list[int]) -> set[str]:
    """Groups with no live member at any written snapshot and no message produced on their
    queues: one INFO note in group_health, no per-queue finding (DESIGN.md §5.1)."""
    tr = flow.track
    out = set()
    for group in {g for g, _ in flow.gq_keys}:
        gqs = [i for i in flow.tracked if flow.gq_keys[i][0] == group]
        written = [k for k in range(len(ts)) if any(tr.emitted[i][k] for i in gqs)]
        if not gqs or not written:
            continue
        members = [p for p in cluster.processes if p.group == group]
        if any(p.alive(ts[k]) for p in members for k in written):
            continue
        if all(len({tr.broker_offset[i][k] for k in written if tr.emitted[i][k]}) <= 1 for i in gqs):
            out.add(group)
    return out


def _advanced(gq: int, ts: list[int], tr) -> list[bool]:
    """Per snapshot: the committed offset moved since the queue's previous written snapshot.
    Someone consumed it, so the snapshot is not orphaned (DESIGN.md §5.1 "Evidence, not
    absence")."""
    out, prev = [False] * len(ts), None
    for k in range(len(ts)):
        if not tr.emitted[gq][k]:
            continue
        out[k] = prev is not None and tr.consumer_offset[gq][k] > tr.consumer_offset[gq][prev]
        prev = k
    return out


def _from_previous_snapshot(e: Episode, ts: list[int], tr) -> Episode:
    """An orphan episode covers the snapshot intervals in which nobody committed: it starts at
    the snapshot before its first orphaned one (the last commit seen), when that one is within
    ``max_snapshot_gap`` (DESIGN.md §5.2 counts durations in snapshot intervals too)."""
    prev = next((k for k in range(e.first - 1, -1, -1) if tr.emitted[e.gq][k]), None)
    if prev is not None and ts[e.first] - ts[prev] <= MAX_GAP_MS:
        return Episode(e.kind, e.gq, prev, e.last)
    return e


def _runs(gq: int, ts: list[int], tr, kind: str, flag) -> list[Episode]:
    out, start, last = [], None, None
    for k in range(len(ts)):
        if not tr.emitted[gq][k]:
            continue
        if last is not None and ts[k] - ts[last] > MAX_GAP_MS:
            if start is not None:
                out.append(Episode(kind, gq, start, last))
            start = None
        if flag(k):
            if start is None:
                start = k
        elif start is not None:
            out.append(Episode(kind, gq, start, last))
            start = None
        last = k
    if start is not None:
        out.append(Episode(kind, gq, start, last))
    return out


def _stuck_runs(gq: int, ts: list[int], tr) -> list[Episode]:
    out, start, last = [], None, None
    co, bo = tr.consumer_offset[gq], tr.broker_offset[gq]
    for k in range(len(ts)):
        if not tr.emitted[gq][k]:
            continue
        lagging = bo[k] > co[k]
        gap = last is not None and ts[k] - ts[last] > MAX_GAP_MS
        same = start is not None and not gap and co[k] == co[start]
        if start is not None and not (same and lagging):
            out.append(Episode("stuck", gq, start, last))
            start = None
        if start is None and lagging:
            start = k
        last = k
    if start is not None:
        out.append(Episode("stuck", gq, start, last))
    return out


def _keep(e: Episode, ts: list[int], tr) -> bool:
    span = ts[e.last] - ts[e.first]
    if e.kind == "stuck":
        return span >= STUCK_MIN_MS
    if span < ORPHAN_MIN_MS:
        return False
    if e.kind == "orphan":
        bo, co = tr.broker_offset[e.gq], tr.consumer_offset[e.gq]
        ks = range(e.first, e.last + 1)
        return any(bo[k] > co[k] for k in ks) or bo[e.last] > bo[e.first]
    return True


def _severity(cause: str, lag_end: int, span_ms: int) -> str:
    if cause in ("REBALANCE_GAP", "STALE_OWNER"):
        return "INFO"
    return "CRITICAL" if lag_end >= CRITICAL_LAG or span_ms >= CRITICAL_MS else "WARN"


def _episode_row(e: Episode, flow: Flow, clock: Clock, cause: str | None, cluster: Cluster,
                 **extra) -> dict:
    tr = flow.track
    group, mq = flow.gq_keys[e.gq]
    ts = tr.snapshot_ts
    span = ts[e.last] - ts[e.first]
    lag_start = max(0, tr.broker_offset[e.gq][e.first] - tr.consumer_offset[e.gq][e.first])
    lag_end = max(0, tr.broker_offset[e.gq][e.last] - tr.consumer_offset[e.gq][e.last])
    row = {"group": group, "topic": mq.topic, "broker_name": mq.broker_name, "queue_id": mq.queue_id}
    cause = cause or "UNKNOWN"
    if e.kind == "orphan":
        row |= {"first_seen": clock.iso_z(ts[e.first]), "last_seen": clock.iso_z(ts[e.last]),
                "orphaned_minutes": round(span / 60_000, 3), "lag_start": lag_start, "lag_end": lag_end,
                "root_cause": cause, "would_be_owner": extra.get("would_be_owner")}
    elif e.kind in ("double", "stale"):
        owners = sorted(cluster.processes[p].client_id
                        for p in (e.owners if e.kind == "stale" else tr.owners[e.gq][e.first]))
        row |= {"owners": owners, "first_seen": clock.iso_z(ts[e.first]), "last_seen": clock.iso_z(ts[e.last]),
                "minutes": round(span / 60_000, 3), "root_cause": cause}
    else:
        owners = tr.owners[e.gq][e.first]
        row |= {"owner": cluster.processes[owners[0]].client_id if owners else None,
                "stuck_since": clock.iso_z(ts[e.first]), "last_seen": clock.iso_z(ts[e.last]),
                "stuck_minutes": round(span / 60_000, 3),
                "committed_offset": tr.consumer_offset[e.gq][e.first], "lag_end": lag_end,
                "blocking_offset": extra.get("blocking_offset"), "flow_controlled": extra.get("flow_controlled", False),
                "redelivery_risk": extra.get("redelivery_risk", 0), "released_at": extra.get("released_at"),
                "root_cause": cause}
    row["severity"] = _severity(cause, lag_end if e.kind != "double" else 0, span)
    return row


# --- faults ----------------------------------------------------------------------------------------

def _fault_entry(fi: int, fault: Fault, scenario: Scenario, cluster: Cluster, flow: Flow, clock: Clock,
                 window: tuple[int, int], episodes: list[Episode], claimed: set[int]) -> dict:
    procs = [p for p in cluster.processes if p.spec.name in fault.clients]
    start, end = _fault_window(fault, cluster, flow, window)
    orphaned, double, stuck, events, whatif = [], [], [], [], []
    queues: list[MessageQueue] = []
    ts = flow.track.snapshot_ts
    for i, e in enumerate(episodes):
        group, mq = flow.gq_keys[e.gq]
        if i in claimed or group != fault.group:
            continue
        if ts[e.last] < start - 60_000 or ts[e.first] > end + 60_000:
            continue
        if fault.topic and fault.kind != "slow_message" and mq.topic != fault.topic and e.kind == "orphan":
            continue
        if fault.kind == "consume_failing":
            f = next(f for f in flow.failing if f.fault_index == fi)
            if e.kind != "stuck" or e.gq != f.gq or f.loop_from_ms is None:
                continue  # while a master takes the hand-back the offset moves on (facts §10.2)
            claimed.add(i)
            stuck.append(_episode_row(
                e, flow, clock, "MASTER_DOWN", cluster, blocking_offset=f.offset,
                flow_controlled=f.max_span >= scenario.group(group).max_span,
                redelivery_risk=f.redelivery_risk, released_at=_passed_at(e, f.offset, flow, clock)))
            queues.append(mq)
            continue
        if fault.kind == "slow_message":
            s = next(s for s in flow.slow if s.fault_index == fi)
            if e.kind != "stuck" or e.gq != s.gq:
                continue
            claimed.add(i)
            stuck.append(_episode_row(e, flow, clock, "SLOW_MESSAGE", cluster, blocking_offset=s.blocking_offset,
                                      flow_controlled=s.max_span >= scenario.group(group).max_span,
                                      redelivery_risk=s.redelivery_risk,
                                      released_at=clock.iso_z(s.released_ms) if s.released_ms is not None else None))
            queues.append(mq)
            continue
        if e.kind == "stale":
            # the membership change moved the queue; a stale running info still lists it
            if fault.kind in ("client_joins", "client_leaves"):
                claimed.add(i)
                double.append(_episode_row(e, flow, clock, "STALE_OWNER", cluster))
                queues.append(mq)
            continue
        if fault.kind in STALL_CAUSE:
            st = next(st for st in flow.stalls if st.fault_index == fi)
            if e.kind != "stuck" or e.gq not in st.blocking:
                continue
            claimed.add(i)
            stuck.append(_episode_row(
                e, flow, clock, STALL_CAUSE[fault.kind], cluster,
                # the poison message is first in its owner's process queue (facts §2.6)
                blocking_offset=st.blocking[e.gq] if st.kind == "poison" else None,
                # as the owner's answers between the episode's first and last offsets snapshot
                # showed it (DESIGN.md §5: evidence only while the pin holds)
                flow_controlled=any(ts[e.first] <= x <= ts[e.last] for x in st.flow_controlled.get(e.gq, [])),
                redelivery_risk=0,
                released_at=clock.iso_z(st.end_ms) if st.ended else None))
            queues.append(mq)
            continue
        cause = ORPHAN_CAUSE.get(fault.kind)
        if cause is None:
            continue
        if e.kind == "orphan":
            claimed.add(i)
            if cause == "REBALANCE_GAP" and ts[e.last] - ts[e.first] >= TRANSIENT_MAX_MS:
                # DESIGN.md §5: a gap is transient (< orphan_transient_max); a crash nobody
                # takes over leaves the group without a live consumer once the channel expires
                cause = "NO_LIVE_CONSUMER"
            orphaned.append(_episode_row(e, flow, clock, cause, cluster,
                                         would_be_owner=_would_be_owner(fault, cluster, flow, e, mq)))
            queues.append(mq)
        elif e.kind == "double" and fault.kind in ("duplicate_client_id", "strategy_inconsistent"):
            claimed.add(i)
            double.append(_episode_row(e, flow, clock, cause, cluster))
            queues.append(mq)
        elif e.kind == "stuck" and all(not o for o in flow.track.owners[e.gq][e.first:e.last + 1]):
            claimed.add(i)
            stuck.append(_episode_row(e, flow, clock, "NO_OWNER", cluster))
    if fault.kind == "subscription_inconsistent":
        events = _subscription_flapping(fault, cluster, clock, window)
    if fault.kind in ("client_leaves", "consumer_crash", "client_joins"):
        events = _rebalance_events(fault, cluster, flow, clock, window)
        if fault.kind == "client_joins":
            queues += [MessageQueue(r["topic"], b, q) for r in events for b, q in r.pop("_moved")]
        elif fault.kind == "client_leaves":
            whatif = _whatif(fault, cluster, procs[0].start_ms, start)
            queues += [MessageQueue(r["topic"], b, q) for r in events for b, q in r.pop("_moved")]
        else:
            for r in events:
                r.pop("_moved")
    master_down = {}
    if fault.kind == "master_down":
        # DESIGN.md §5.3: every group with queues on the broker during the window
        on_broker = sorted({g for g, mq in flow.gq_keys if mq.broker_name == fault.broker_name})
        master_down = {"broker_name": fault.broker_name, "down_from": clock.iso_z(start),
                       "down_until": clock.iso_z(end), "groups": on_broker}
    queues = sorted(set(queues))
    brokers = sorted({mq.broker_name for mq in queues})
    topics = sorted({mq.topic for mq in queues})
    return {
        "kind": fault.kind, "group": fault.group,
        "topic": fault.topic or (topics[0] if len(topics) == 1 else None),
        "broker_name": brokers[0] if len(brokers) == 1 else fault.broker_name,
        "queue_ids": sorted({mq.queue_id for mq in queues}) if len(brokers) <= 1 and len(topics) <= 1 else None,
        "queues": [{"topic": mq.topic, "broker_name": mq.broker_name, "queue_id": mq.queue_id} for mq in queues],
        "clients": sorted({p.client_id for p in procs}),
        "start": clock.iso_z(start), "end": clock.iso_z(end), "note": fault.note,
        "expected_orphaned_queues": orphaned, "expected_double_owned_queues": double,
        "expected_stuck_queues": stuck, "expected_rebalance_events": events,
        "expected_strategy_whatif": whatif,
        **({"expected_master_down": master_down} if master_down else {}),
    }


def _passed_at(e: Episode, offset: int, flow: Flow, clock: Clock) -> str | None:
    """The first written snapshot after the episode whose committed offset passes ``offset``."""
    tr = flow.track
    for k in range(e.last + 1, len(tr.snapshot_ts)):
        if tr.emitted[e.gq][k] and tr.consumer_offset[e.gq][k] > offset:
            return clock.iso_z(tr.snapshot_ts[k])
    return None


def _fault_window(fault: Fault, cluster: Cluster, flow: Flow, window: tuple[int, int]) -> tuple[int, int]:
    procs = [p for p in cluster.processes if p.spec.name in fault.clients]
    if fault.kind == "slow_message":
        s = next(s for s in flow.slow if s.gq == flow.gq_index[(fault.group, MessageQueue(
            fault.topic, fault.broker_name, fault.queue_id))])
        return s.at_ms, s.released_ms if s.released_ms is not None else window[1]
    if fault.kind in STALL_CAUSE:
        st = next(st for st in flow.stalls if st.at_ms == parse_time_ms(fault.at)
                  and (st.proc is None or cluster.processes[st.proc].spec.name in fault.clients))
        return st.at_ms, min(st.end_ms, window[1])
    if fault.kind in ("client_leaves", "client_joins"):
        at = parse_time_ms(fault.at)
        return at, at
    if fault.kind == "master_down":
        at = parse_time_ms(fault.at)
        return at, at + parse_time_ms(fault.duration)
    if fault.kind == "consume_failing":
        f = next(f for f in flow.failing if f.gq == flow.gq_index[(fault.group, MessageQueue(
            fault.topic, fault.broker_name, fault.queue_id))])
        return f.at_ms, f.released_ms if f.released_ms is not None else window[1]
    if fault.kind == "consumer_crash":
        at = parse_time_ms(fault.at)
        gone = [c.remove_ms for c in cluster.channels[fault.group] if c.process.spec.name == fault.clients[0]
                and c.process.stop_ms == at]
        return at, max(gone)
    members = [p for p in cluster.processes if p.group == fault.group]
    involved = procs or members
    start = max([window[0]] + [p.start_ms for p in involved])
    end = min([window[1]] + [p.stop_ms for p in involved if p.stop_ms is not None])
    return start, end


def _would_be_owner(fault: Fault, cluster: Cluster, flow: Flow, e: Episode, mq: MessageQueue) -> str | None:
    """The member whose slot the queue is when the subscribing members' strategy is replayed (§5)."""
    if fault.kind not in ("duplicate_client_id", "subscription_inconsistent"):
        return None
    t = flow.track.snapshot_ts[e.first]
    cids = sorted_cid_all(cluster.cid_all(fault.group, mq.broker_name, t))
    subscribers = [p for p in cluster.processes if p.group == fault.group and mq.topic in p.topics and p.alive(t)]
    strategy = subscribers[0].strategy if subscribers else "AVG"
    # one distinct name per position, so each copy of a duplicated id gets its own slot
    positional = [f"{cid}\u0000{k}" for k, cid in enumerate(cids)]
    owners = allocate_all(strategy, cluster.mq_all[mq.topic], positional)
    for name, got in owners.items():
        if got and mq in got:
            return name.split("\u0000", 1)[0]
    return None


def _owners_at(cluster: Cluster, group: str, t: int) -> dict[str, dict[MessageQueue, frozenset[str]]]:
    owned: dict[tuple[int, str], tuple[MessageQueue, ...]] = {}
    for ch in cluster.changes:
        if ch.t > t:
            break
        if cluster.processes[ch.process].group == group:
            owned[(ch.process, ch.topic)] = ch.queues
    out: dict[str, dict[MessageQueue, set[str]]] = {}
    for (proc, topic), mqs in owned.items():
        for mq in mqs:
            out.setdefault(topic, {}).setdefault(mq, set()).add(cluster.processes[proc].client_id)
    return {topic: {mq: frozenset(v) for mq, v in d.items()} for topic, d in out.items()}


def _rebalance_events(fault: Fault, cluster: Cluster, flow: Flow, clock: Clock,
                      window: tuple[int, int]) -> list[dict]:
    """One row per topic whose owners changed at a membership event of the fault's clients.

    ``ts`` is the first allocation change of the topic at or after the event (the first
    ``rebalanced result changed`` line the clients log, facts §2.2): the broker's own
    unregister/expiry instant is in no collected record."""
    rows = []
    for m in cluster.membership:
        if m.group != fault.group or not (window[0] <= m.t < window[1]):
            continue
        if cluster.processes[m.process].spec.name not in fault.clients:
            continue
        before = _owners_at(cluster, m.group, m.t - 1)
        after = _owners_at(cluster, m.group, m.t + 60_000)
        n_before = len(cluster.cid_all(m.group, cluster.brokers[0], m.t - 1))
        n_after = len(cluster.cid_all(m.group, cluster.brokers[0], m.t + 60_000))
        for topic in flow.group_topics[m.group]:
            moved = [mq for mq in cluster.mq_all[topic]
                     if before.get(topic, {}).get(mq, frozenset()) != after.get(topic, {}).get(mq, frozenset())]
            if moved:
                first = min((ch.t for ch in cluster.changes if ch.topic == topic and not ch.dead
                             and cluster.processes[ch.process].group == m.group
                             and m.t <= ch.t <= m.t + 60_000), default=m.t)
                rows.append({"group": m.group, "topic": topic, "ts": clock.iso_z(first), "trigger": m.kind,
                             "clients_before": n_before, "clients_after": n_after, "queues_moved": len(moved),
                             "_moved": [(mq.broker_name, mq.queue_id) for mq in moved]})
    return rows


def _subscription_flapping(fault: Fault, cluster: Cluster, clock: Clock,
                           window: tuple[int, int]) -> list[dict]:
    """The broker's subscription table of the group flips at every heartbeat from a member
    whose topic set differs from the previous heartbeat's (facts §4, the topicB case): one row
    with its first flip in the window and its flips per hour (the busiest broker's table)."""
    flips = []
    for broker in cluster.brokers:
        times = cluster.sub_tables.get((fault.group, broker), ([], []))[0]
        flips.append([t for t in times[1:] if window[0] <= t < window[1]])
    flips = [f for f in flips if f]
    if not flips:
        return []
    members = len(cluster.cid_all(fault.group, cluster.brokers[0], window[0]))
    hours = (window[1] - window[0]) / 3_600_000
    return [{"group": fault.group, "topic": fault.topic, "ts": clock.iso_z(min(f[0] for f in flips)),
             "trigger": "SUBSCRIPTION_CHANGED", "clients_before": members, "clients_after": members,
             "queues_moved": 0, "flaps_per_hour": round(max(len(f) for f in flips) / hours, 1)}]


def _whatif(fault: Fault, cluster: Cluster, start_ms: int, at: int) -> list[dict]:
    """Queues that would change owner under each strategy for the same departure (DESIGN.md §4),
    for every topic the leaver rebalanced (its subscriptions and the group's retry topic)."""
    rows = []
    leaver = next(p for p in cluster.processes if p.spec.name == fault.clients[0])
    before = sorted_cid_all(cluster.cid_all(fault.group, cluster.brokers[0], at - 1))
    after = [c for c in before if c != leaver.client_id]
    for topic in leaver.topics:
        mq_all = cluster.mq_all[topic]
        for strategy in WHATIF_STRATEGIES:
            alloc_b, alloc_a = allocate_all(strategy, mq_all, before), allocate_all(strategy, mq_all, after)
            own_b, own_a = _owner_map(alloc_b), _owner_map(alloc_a)
            moved = sum(own_b.get(mq) != own_a.get(mq) for mq in mq_all)
            sizes = [len(mqs or []) for alloc in (alloc_b, alloc_a) for mqs in alloc.values()]
            holes = len(mq_all) - len(own_b) + len(mq_all) - len(own_a)
            rows.append({"group": fault.group, "topic": topic, "strategy": strategy,
                         "rebalances": 1 if moved else 0, "queues_moved": moved,
                         "max_queues_per_client": max(sizes), "min_queues_per_client": min(sizes),
                         # exact only when no state leaves a queue unallocated
                         "orphaned_queue_minutes": 0.0 if holes == 0 else None})
    return rows


def _owner_map(alloc: dict) -> dict[MessageQueue, str]:
    return {mq: cid for cid, mqs in alloc.items() for mq in (mqs or [])}
