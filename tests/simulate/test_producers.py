"""The simulator's producers (jobs/simulate/producers.py): queue choice as the client makes it
(rocketmq-facts.md §7; MQFaultStrategy, TopicPublishInfo and SelectMessageQueueByHash of 4.9.7
and 5.1.4 read in apache/rocketmq)."""

from __future__ import annotations

import numpy as np
import pytest

from jobs.replay.producer_reference import select_queue
from jobs.replay.reference import MessageQueue
from jobs.simulate.producers import (
    Producers,
    hash_shares,
    key_popularity,
    not_available_ms,
    selection_shares,
    topic_route,
)
from jobs.simulate.scenario import Scenario, ScenarioError, _validate, load_scenario


@pytest.mark.parametrize("latency, version, shun_ms", [
    (None, (4, 9, 8), 600_000),    # a failed send counts as 30 000 ms: shunned 10 min
    (None, (5, 1, 4), 10_000),     # RIP-63: as 10 000 ms, 10 s
    (2500, (4, 9, 8), 120_000), (2500, (5, 1, 4), 5_000),
    (400, (4, 9, 8), 0), (20_000, (5, 3, 3), 30_000), (None, (5, 1, 3), 600_000),
])
def test_shun_times_are_the_versions_tables(latency, version, shun_ms):
    assert not_available_ms(latency, version) == shun_ms


def test_before_5_1_4_a_shunned_brokers_turns_pile_onto_the_next_available_queue():
    brokers = ["broker-a", "broker-a", "broker-b", "broker-b"]
    old = selection_shares(brokers, {"broker-a"}, (4, 9, 8), latency_fault=True)
    new = selection_shares(brokers, {"broker-a"}, (5, 1, 4), latency_fault=True)
    assert old.tolist() == [0.75, 0.25, 0.0, 0.0]  # positions 2, 3 walk on to 0 (wrapping)
    assert new.tolist() == [0.5, 0.5, 0.0, 0.0]  # the index advances per try: even over the rest
    # without the strategy a failed send's retry skips the broker, the index advancing per try
    assert selection_shares(brokers, {"broker-a"}, (4, 9, 8), latency_fault=False).tolist() == [0.5, 0.5, 0, 0]
    assert selection_shares(brokers, set(), (4, 9, 8), latency_fault=True).tolist() == [0.25] * 4


def test_hash_shares_are_where_the_replay_puts_each_key():
    topic = load_scenario("producer-skew").topic("orders-keyed")
    shares = hash_shares(topic)
    keys, popularity = key_popularity(topic)
    assert sum(shares.values()) == pytest.approx(1.0)
    route = topic_route(topic)
    expected: dict = {}
    for key, weight in zip(keys, popularity):
        queue = select_queue(topic.name, route, "String", key, topic.producer_version)
        expected[queue] = expected.get(queue, 0.0) + weight
    assert shares == pytest.approx(expected)
    # orderTopicConf lists broker-b first: the publish list follows the conf, not the name order
    assert max(shares, key=shares.get) == ("broker-b", 0)


def _scenario(**topic) -> Scenario:
    return Scenario.model_validate({
        "name": "p", "brokers": [{"name": "broker-a"}, {"name": "broker-b"}],
        "topics": [{"name": "T", "queues": {"broker-a": 4, "broker-b": 4}, "rate": 50.0, "diurnal": 0.0} | topic],
        "send_faults": ([{"broker": "broker-b", "at": "10:00", "duration": "00:05"}]
                        if topic.get("latency_fault") else []),
    })


def _tq(scenario: Scenario) -> dict[MessageQueue, int]:
    queues = [MessageQueue("T", b, q) for b in ("broker-a", "broker-b") for q in range(4)]
    return {mq: i for i, mq in enumerate(queues)}


def test_round_robin_keeps_every_queue_within_one_message_of_the_others():
    producers = Producers(_scenario(), _tq(_scenario()), seed=3)
    total = np.zeros(8, dtype=np.int64)
    for step in range(1, 500):
        total += producers.step(step * 5_000, 5_000)
        assert total.max() - total.min() <= 1
    assert total.sum() == pytest.approx(50 * 5 * 499, rel=0.02)


@pytest.mark.parametrize("version, quiet_after_end_s", [("4.9.8", (240, 600)), ("5.1.4", (0, 10))])
def test_a_failing_broker_stays_shunned_for_the_versions_time_after_the_failures_end(version, quiet_after_end_s):
    """broker-b fails every send 10:00-10:05; producers with sendLatencyFaultEnable shun it after
    each probe: 4.9.x up to 10 min past the last failure, 5.1.4 up to 10 s."""
    scenario = _scenario(latency_fault=True, producer_version=version, producers=1)
    producers = Producers(scenario, _tq(scenario), seed=1)
    start, end = 10 * 3_600_000, 10 * 3_600_000 + 300_000
    last_quiet = None
    t = start - 60_000
    while t < end + 900_000:
        t += 5_000
        got = producers.step(t, 5_000)
        b = got[4:].sum()
        if start + 5_000 < t <= end:
            assert b == 0, t  # failed sends store nothing
        if t > end and b == 0:
            last_quiet = t
    quiet = 0 if last_quiet is None else (last_quiet - end) / 1000
    assert quiet_after_end_s[0] <= quiet <= quiet_after_end_s[1]


@pytest.mark.parametrize("conf, message", [
    ("broker-a:9", "names broker-a:9, more queues than the topic has there"),
    ("broker-a", "java.lang.ArrayIndexOutOfBoundsException: Index 1 out of bounds for length 1"),
])
def test_a_bad_order_topic_conf_is_one_line(conf, message):
    data = {"name": "p", "brokers": [{"name": "broker-a"}],
            "topics": [{"name": "T", "queues": {"broker-a": 4}, "order_topic_conf": conf}]}
    with pytest.raises(ScenarioError, match="^p.toml: ") as info:
        _validate("p.toml", data)
    assert message in str(info.value) and "\n" not in str(info.value)
