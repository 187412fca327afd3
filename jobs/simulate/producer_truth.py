"""``_truth.json``'s ``expected_producer_findings``: what DESIGN.md §5.2 should find in the day the
producers (:mod:`jobs.simulate.producers`) made, read off the simulation's ground truth.

- ``HOT_QUEUE``: a topic with ≥ 4 publish queues and traffic whose producers' queue choice gives one
  queue ≥ ``hot_queue_factor`` × the even share: the shares are the hash selection's over the keys'
  popularity (round robin is even). Listed with its share; the window is the whole output window
  (the choice does not change during the day). ``severity`` is ``WARN`` when a consuming group's lag
  on that queue grew over the window (its peak above its lag at the first snapshot) while no other
  queue of the topic grew by more than ``lag_growth_noise`` × that growth, else ``INFO``.
- ``BROKER_STARVED``: a run of consecutive offsets snapshots in which one broker of a topic received
  nothing while each other broker received messages in every interval, after it had received some
  in the window; ``first_seen``/``last_seen`` are the run's first interval start and last snapshot.
- ``QUEUE_COUNT_SKEW``: a topic with traffic whose brokers hold different queue counts.
Retry topics get none. Default thresholds (``jobs.settings.ProducerSettings``).
"""

from __future__ import annotations

from jobs.replay.reference import MessageQueue
from jobs.settings import ProducerSettings
from jobs.simulate.flow import Flow
from jobs.simulate.producers import hash_shares
from jobs.simulate.scenario import Scenario
from jobs.simulate.writers import Clock

_PRODUCER = ProducerSettings()
MIN_HOT_TOPIC_QUEUES = 4


def expected_producer_findings(scenario: Scenario, flow: Flow, clock: Clock) -> list[dict]:
    ts = flow.track.snapshot_ts
    if len(ts) < 2:
        return []
    rows: list[dict] = []
    for topic in scenario.topics:
        groups = sorted(g for g, topics in flow.group_topics.items() if topic.name in topics)
        publish = flow.producers.publish[topic.name]
        base = {"topic": topic.name, "groups": groups}
        if topic.rate > 0 and len(publish) >= MIN_HOT_TOPIC_QUEUES:
            shares = hash_shares(topic) if topic.producer == "hash" else {}
            even = 1.0 / len(publish)
            for (broker, queue), share in sorted(shares.items()):
                if share >= _PRODUCER.hot_queue_factor * even:
                    rows.append(base | {
                        "finding": "HOT_QUEUE", "broker_name": broker, "queue_id": queue,
                        "first_seen": clock.iso_z(ts[0]), "last_seen": clock.iso_z(ts[-1]),
                        "share": round(share, 4), "even_share": even,
                        "severity": _hot_severity(flow, topic.name, broker, queue, groups)})
        counts = {n for n in topic.queues.values()}
        if topic.rate > 0 and len(counts) > 1:
            rows.append(base | {"finding": "QUEUE_COUNT_SKEW", "broker_name": None, "queue_id": None,
                                "severity": "INFO"})
        rows += [base | row for row in _starved_runs(flow, clock, topic.name, topic.queues)]
    return rows


def _hot_severity(flow: Flow, topic: str, broker: str, queue: int, groups: list[str]) -> str:
    tr = flow.track
    for group in groups:
        growth = {}
        for gq, (g, mq) in enumerate(flow.gq_keys):
            if g != group or mq.topic != topic or gq not in tr.broker_offset:
                continue
            lag = [max(0, b - c) for b, c in zip(tr.broker_offset[gq], tr.consumer_offset[gq])]
            growth[(mq.broker_name, mq.queue_id)] = max(lag) - lag[0]
        hot = growth.pop((broker, queue), 0)
        if hot > 0 and growth and max(growth.values()) <= _PRODUCER.lag_growth_noise * hot:
            return "WARN"
    return "INFO"


def _starved_runs(flow: Flow, clock: Clock, topic: str, queues: dict[str, int]) -> list[dict]:
    if len(queues) < 2:
        return []
    ts = flow.track.snapshot_ts
    row_of = {int(t): k for k, t in enumerate(flow.hist_t[:flow.hist_n])}
    rows_k = [row_of[t - flow.offsets_phase_ms] for t in ts]
    per_broker = {}
    for broker, n in queues.items():
        tqs = [flow.tq_index[MessageQueue(topic, broker, q)] for q in range(n)]
        totals = [int(flow.hist[k, tqs].sum()) for k in rows_k]
        per_broker[broker] = [b - a for a, b in zip(totals, totals[1:])]
    out = []
    for broker, deltas in per_broker.items():
        others = [d for b, d in per_broker.items() if b != broker]
        flags = [d == 0 and all(o[i] > 0 for o in others) for i, d in enumerate(deltas)]
        i = 0
        while i < len(flags):
            if not flags[i]:
                i += 1
                continue
            j = i
            while j + 1 < len(flags) and flags[j + 1]:
                j += 1
            first, last = ts[i], ts[j + 1]
            minutes = (last - first) / 60_000
            if sum(deltas[:i]) > 0 and minutes >= _PRODUCER.starved_min_minutes:
                out.append({"finding": "BROKER_STARVED", "broker_name": broker, "queue_id": None,
                            "first_seen": clock.iso_z(first), "last_seen": clock.iso_z(last),
                            "minutes": round(minutes, 3),
                            "severity": "WARN" if minutes >= _PRODUCER.starved_warn_minutes else "INFO"})
            i = j + 1
    return out
