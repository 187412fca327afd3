"""The seed numbers of issue #3 / DESIGN.md §6, through the Python reference and the Spark transform.

Each seed is a few group snapshots, one row per (snapshot, client) as a detector would build them.
The Spark side replays all seeds in one job (``replay_snapshots``); each test reads its seed
from both paths. Expected numbers come from the issue and from RocketMQ's vectors/README.md.
"""

from __future__ import annotations

from collections import Counter

import pytest

from jobs.replay.reference import MessageQueue, allocate_all, sorted_cid_all, sorted_mq_all

LEAVE_CIDS = ["10.0.0.1@4101#1700000000001", "10.0.0.2@4102#1700000000002",
              "10.0.0.3@4103#1700000000003", "10.0.0.4@4104#1700000000004"]


def queues(n: int, topic: str = "TopicTest", brokers: tuple[str, ...] = ("broker-a",)) -> list[MessageQueue]:
    per_broker = n // len(brokers)
    return sorted_mq_all(MessageQueue(topic, b, q) for b in brokers for q in range(per_broker))


# seed -> snapshot -> (strategy, mq_all, cid_all, clients that rebalance this topic)
SEEDS = {
    "avg_12_5": {"t0": ("AVG", queues(12), [f"c{i}" for i in range(5)], None)},
    "avg_10_4": {"t0": ("AVG", queues(10), [f"c{i}" for i in range(4)], None)},
    "circle_10_4": {"t0": ("AVG_BY_CIRCLE", queues(10), [f"c{i}" for i in range(4)], None)},
    "avg_leave": {
        "t0": ("AVG", queues(24, brokers=("broker-a", "broker-b", "broker-c")), LEAVE_CIDS, None),
        "t1": ("AVG", queues(24, brokers=("broker-a", "broker-b", "broker-c")),
               [c for c in LEAVE_CIDS if c != LEAVE_CIDS[1]], None)},
    "chash_leave": {
        "t0": ("CONSISTENT_HASH", queues(24, brokers=("broker-a", "broker-b", "broker-c")), LEAVE_CIDS, None),
        "t1": ("CONSISTENT_HASH", queues(24, brokers=("broker-a", "broker-b", "broker-c")),
               [c for c in LEAVE_CIDS if c != LEAVE_CIDS[1]], None)},
    # Topic B, 16 queues; cidAll is group-wide (facts §2.2) but only client 1 subscribes B,
    # so only client 1 rebalances B.
    "topic_b": {"t0": ("AVG", queues(16, topic="B"), ["10.0.0.1@1", "10.0.0.2@2"], {"10.0.0.1@1"})},
    "dup_ids": {"t0": ("AVG", queues(8), ["10.0.0.7@A", "10.0.0.7@A"], None)},
}


def snapshot_rows():
    for seed, snapshots in SEEDS.items():
        for ts, (strategy, mq_all, cid_all, subscribers) in snapshots.items():
            for cid in dict.fromkeys(cid_all):
                if subscribers is None or cid in subscribers:
                    yield seed, ts, cid, strategy, [tuple(mq) for mq in mq_all], cid_all


def python_owned(seed: str) -> dict[str, dict[str, list[MessageQueue]]]:
    """snapshot -> client -> allocated, via the reference (callers' sort, as RebalanceImpl)."""
    result = {}
    for ts, (strategy, mq_all, cid_all, subscribers) in SEEDS[seed].items():
        owned = allocate_all(strategy, sorted_mq_all(mq_all), sorted_cid_all(cid_all))
        result[ts] = {cid: mqs for cid, mqs in owned.items() if subscribers is None or cid in subscribers}
    return result


@pytest.fixture(scope="module")
def spark_owned(spark):
    """All seeds through ``replay_snapshots`` in one job: seed -> snapshot -> client -> allocated."""
    from jobs.replay.spark_replay import replay_snapshots

    snapshots_df = spark.createDataFrame(
        list(snapshot_rows()),
        "seed string, ts string, current_cid string, strategy string, "
        "mq_all array<struct<topic:string,broker_name:string,queue_id:int>>, cid_all array<string>")
    result: dict = {}
    for row in replay_snapshots(snapshots_df).collect():
        assert row["error_class"] is None, row
        allocated = [MessageQueue(mq["topic"], mq["broker_name"], mq["queue_id"]) for mq in row["allocated"]]
        result.setdefault(row["seed"], {}).setdefault(row["ts"], {})[row["current_cid"]] = allocated
    return result


@pytest.fixture(params=["python", pytest.param("spark", marks=pytest.mark.engine)])
def owned(request):
    if request.param == "python":
        return python_owned
    spark_result = request.getfixturevalue("spark_owned")
    return lambda seed: spark_result[seed]


def sizes(allocation: dict[str, list[MessageQueue]]) -> list[int]:
    return [len(allocation[cid]) for cid in sorted(allocation)]


def owner_of(allocation: dict[str, list[MessageQueue]]) -> dict[MessageQueue, list[str]]:
    owners: dict[MessageQueue, list[str]] = {}
    for cid, mqs in allocation.items():
        for mq in mqs:
            owners.setdefault(mq, []).append(cid)
    return owners


def moved(before: dict, after: dict, mq_all: list[MessageQueue]) -> int:
    owners_before, owners_after = owner_of(before), owner_of(after)
    return sum(owners_before.get(mq) != owners_after.get(mq) for mq in mq_all)


def test_avg_12_queues_5_clients_gives_3_3_2_2_2(owned):
    assert sizes(owned("avg_12_5")["t0"]) == [3, 3, 2, 2, 2]


def test_avg_10_queues_4_clients_gives_3_3_2_2(owned):
    assert sizes(owned("avg_10_4")["t0"]) == [3, 3, 2, 2]


def test_avg_by_circle_10_queues_4_clients_stripes_queues(owned):
    allocation = owned("circle_10_4")["t0"]
    assert [{mq.queue_id for mq in allocation[cid]} for cid in sorted(allocation)] == [
        {0, 4, 8}, {1, 5, 9}, {2, 6}, {3, 7}]


def test_second_of_four_clients_leaving_moves_8_of_24_queues_under_avg(owned):
    allocation = owned("avg_leave")
    assert moved(allocation["t0"], allocation["t1"], SEEDS["avg_leave"]["t0"][1]) == 8


def test_second_of_four_clients_leaving_moves_6_of_24_queues_under_consistent_hash(owned):
    allocation = owned("chash_leave")
    mq_all = SEEDS["chash_leave"]["t0"][1]
    assert moved(allocation["t0"], allocation["t1"], mq_all) == 6
    # only the leaver's queues move (vectors/README.md behaviour 5)
    assert all(owners == [LEAVE_CIDS[1]] for mq, owners in owner_of(allocation["t0"]).items()
               if owner_of(allocation["t1"]).get(mq) != owners)


def test_topic_b_subscribed_by_first_client_only_leaves_queues_8_to_15_unowned(owned):
    owners = owner_of(owned("topic_b")["t0"])
    assert sorted(mq.queue_id for mq in SEEDS["topic_b"]["t0"][1] if mq not in owners) == list(range(8, 16))


def test_duplicate_ids_share_the_first_slice_and_leave_the_second_unowned_under_avg(owned):
    allocation = owned("dup_ids")["t0"]
    assert [mq.queue_id for mq in allocation["10.0.0.7@A"]] == [0, 1, 2, 3]
    owners = owner_of(allocation)
    assert sorted(mq.queue_id for mq in SEEDS["dup_ids"]["t0"][1] if mq not in owners) == [4, 5, 6, 7]


def test_every_queue_has_at_most_one_owner_without_duplicates(owned):
    for seed in ("avg_12_5", "avg_10_4", "circle_10_4", "avg_leave", "chash_leave"):
        for allocation in owned(seed).values():
            assert max(Counter(mq for mqs in allocation.values() for mq in mqs).values()) == 1
