"""silver.queue_offsets' ``time_lag_seconds`` on simulated days, on the test engine, against the
definition (``with_time_lag``) evaluated row by row in Python: the rows placed by their
neighbouring snapshots and the rows placed by the offset sort must both give what the whole
history says."""

from __future__ import annotations

from collections import defaultdict

import pytest

from tests.gold.conftest import classic_days

QUEUE = ["cluster", "group", "topic", "broker_name", "queue_id"]


def time_lag_by_definition(snapshots):
    """{(queue, ts): seconds} from one queue's de-duplicated snapshots, by the docstring of
    ``with_time_lag``: the latest snapshot with broker_offset ≤ consumer_offset (over the whole
    history), the one after it (or the first snapshot when there is none), lastTimestamp."""
    rows = sorted(snapshots, key=lambda r: r.ts)
    first = rows[0].ts
    lags = {}
    for row in rows:
        if row.lag == 0:
            lags[row.ts] = 0.0
            continue
        at_or_below = [i for i, s in enumerate(rows) if s.broker_offset <= row.consumer_offset]
        latest = rows[max(at_or_below, key=lambda i: rows[i].ts)] if at_or_below else None
        if latest is None:
            after = first
        else:
            i = rows.index(latest)
            after = rows[i + 1].ts if i + 1 < len(rows) else None
        bounds = [t for t in (row.last_consumed_at, latest.ts if latest else None) if t]
        if not bounds:
            lags[row.ts] = None
            continue
        since = max(bounds) if after is None else min(max(bounds), after)
        lags[row.ts] = max((row.ts - since).total_seconds(), 0.0)
    return lags


def needs_history(rows):
    """How many rows with a lag are not one snapshot interval behind their queue's broker offset:
    the rows ``with_time_lag`` places by sorting."""
    count = 0
    for queue in rows.values():
        queue = sorted(queue, key=lambda r: r.ts)
        for i, row in enumerate(queue):
            later = [s.broker_offset for s in queue[i + 1:]]
            if row.lag > 0 and ((i > 0 and queue[i - 1].broker_offset > row.consumer_offset)
                                or (later and min(later) <= row.consumer_offset)):
                count += 1
    return count


# the slow-message day's pinned queue falls more than one snapshot interval behind
@pytest.mark.parametrize("name", classic_days(["healthy", "slow-message"]))
def test_time_lag_is_the_definitions_on_every_row(scenario_day, name):
    _truth, layers = scenario_day(name)
    collected = layers["silver"]["queue_offsets"].select(
        *QUEUE, "ts", "broker_offset", "consumer_offset", "lag", "last_consumed_at",
        "time_lag_seconds").collect()
    per_queue = defaultdict(list)
    for row in collected:
        per_queue[tuple(row[c] for c in QUEUE)].append(row)
    want = {(queue, ts): lag for queue, rows in per_queue.items()
            for ts, lag in time_lag_by_definition(rows).items()}
    got = {(tuple(r[c] for c in QUEUE), r.ts): r.time_lag_seconds for r in collected}
    assert sum(1 for r in collected if r.lag > 0) > 100
    assert needs_history(per_queue) >= (5 if name == "slow-message" else 0)
    assert got == want
