"""possibly_hot_queues lets hot_queue_windows run its trailing windows over a few queues: the
windows it finds must be the ones found over every queue, and an even topic must drop out.

The day reaches where a loose bound would lose a window: hot stretches just one window long that
start and end inside a quarter-window bucket, a burst of a single interval, two snapshots a
minute on one topic (more interval rows per minute than queues), a broker that goes quiet (fewer
active queues, a lower bar), a gap in the snapshots, and a topic with fewer than four queues.
"""

from __future__ import annotations

import datetime as dt
import random

import pytest

from jobs.gold.producer_findings import ProducerRules, hot_queue_windows, possibly_hot_queues

DAY = dt.date(2025, 11, 21)
START = dt.datetime(2025, 11, 21, 6, 0)
SCHEMA = ("date date, cluster string, topic string, broker_name string, queue_id int, "
          "prev_ts timestamp, ts timestamp, messages_in long")
RULES = ProducerRules(min_messages=100, hot_queue_factor=2.0, hot_min_minutes=20,
                      max_snapshot_gap_seconds=300)


def _topic_rows(rng: random.Random, topic: str, queues: list[tuple[str, int]], minutes: int,
                step_seconds: int, rate, start_minute: int = 0) -> list[tuple]:
    rows = []
    for broker, queue_id in queues:
        prev = None
        for i in range(minutes * 60 // step_seconds):
            if topic == "gappy" and 70 <= i < 80:
                continue  # snapshots missing for ten minutes
            ts = START + dt.timedelta(minutes=start_minute, seconds=i * step_seconds + 13)
            if prev is not None:
                rows.append((DAY, "c1", topic, broker, queue_id, prev, ts,
                             rate(rng, broker, queue_id, i)))
            prev = ts
    return rows


def day() -> list[tuple]:
    rng = random.Random(7)
    eight = [("broker-a", q) for q in range(4)] + [("broker-b", q) for q in range(4)]

    def even(rng, broker, queue_id, i):
        return 10 + rng.randrange(0, 3)

    def stretches(rng, broker, queue_id, i):
        # queue a/1 hot for exactly one window from minute 37, queue b/2 for longer from 101
        if (broker, queue_id) == ("broker-a", 1) and 37 <= i < 57:
            return 40
        if (broker, queue_id) == ("broker-b", 2) and 101 <= i < 140:
            return 25 + rng.randrange(0, 5)
        return 10

    def burst(rng, broker, queue_id, i):
        return 5000 if (broker, queue_id) == ("broker-a", 0) and i == 63 else 10

    def quiet_broker(rng, broker, queue_id, i):
        if broker == "broker-b" and 30 <= i < 120:
            return 0  # broker-b out of the publish list: the even share doubles
        return 30 if (broker, queue_id) == ("broker-a", 2) and 40 <= i < 80 else 10

    def half_minutes(rng, broker, queue_id, i):
        return 22 if (broker, queue_id) == ("broker-b", 3) and 80 <= i < 150 else 5

    def late_burst(rng, broker, queue_id, i):
        # the topic's data starts at 07:00:13; the burst ends at 07:01:13, so only the snapshot
        # at 07:20:13 both reaches back a whole window and still holds the burst: the one hot
        # snapshot's burst lies in the bucket four before its own
        return 400 if (broker, queue_id) == ("broker-a", 0) and i == 1 else 10

    rows = _topic_rows(rng, "even", eight, 180, 60, even)
    rows += _topic_rows(rng, "late-start", eight, 120, 60, late_burst, start_minute=60)
    rows += _topic_rows(rng, "stretches", eight, 180, 60, stretches)
    rows += _topic_rows(rng, "burst", eight, 180, 60, burst)
    rows += _topic_rows(rng, "quiet-broker", eight, 180, 60, quiet_broker)
    rows += _topic_rows(rng, "half-minutes", eight, 90, 30, half_minutes)
    rows += _topic_rows(rng, "gappy", eight, 180, 60, stretches)
    rows += _topic_rows(rng, "three", [("broker-a", q) for q in range(3)], 180, 60, stretches)
    return rows


@pytest.fixture(scope="module")
def intervals(spark):
    return spark.createDataFrame(day(), SCHEMA)


def test_windows_over_the_possible_queues_are_those_over_every_queue(intervals):
    actual = hot_queue_windows(intervals, RULES)
    expected = hot_queue_windows(intervals, RULES, every_queue=True)
    assert sorted(map(tuple, actual.collect())) == sorted(map(tuple, expected.collect()))
    found = {(r.topic, r.broker_name, r.queue_id) for r in expected.collect()}
    # the day has windows on most of its topics, else the comparison says little
    assert {("stretches", "broker-a", 1), ("stretches", "broker-b", 2),
            ("quiet-broker", "broker-a", 2), ("half-minutes", "broker-b", 3),
            ("late-start", "broker-a", 0)} <= found
    late = [r for r in expected.collect() if r.topic == "late-start"]
    assert [(r.first_seen, r.last_seen) for r in late] == [
        (dt.datetime(2025, 11, 21, 7, 0, 13), dt.datetime(2025, 11, 21, 7, 20, 13))]


def test_an_even_topic_has_no_possible_queue(intervals):
    possible = {(r.topic, r.broker_name, r.queue_id)
                for r in possibly_hot_queues(intervals, RULES.hot_min_minutes,
                                             RULES.hot_queue_factor).collect()}
    assert not {key for key in possible if key[0] == "even"}
    assert ("stretches", "broker-a", 1) in possible
    assert ("stretches", "broker-a", 3) not in possible
