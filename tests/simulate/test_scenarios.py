"""Each built-in scenario's written files against its _truth.json (DESIGN.md §6, issue #4)."""

from __future__ import annotations

from collections import defaultdict

from tests.simulate.conftest import ts_ms


def _owned_by(running_info: list[dict]) -> dict[int, dict[tuple, list[str]]]:
    """ts bucket (minute) -> queue -> client ids listing it in their mq_table."""
    out: dict[int, dict[tuple, list[str]]] = defaultdict(lambda: defaultdict(list))
    for r in running_info:
        minute = ts_ms(r["ts"]) // 60_000
        for q in r["mq_table"]:
            out[minute][(r["group"], q["topic"], q["broker_name"], q["queue_id"])].append(r["client_id"])
    return out


def test_healthy_has_no_faults_and_every_queue_has_exactly_one_owner(simulated):
    day = simulated("healthy")
    assert day.truth["faults"] == [] and day.truth["unexplained"] == []
    offsets = day.records("offsets")
    assert offsets and all(r["client_ip"] != "N/A" for r in offsets)
    queues = {(r["group"], r["topic"], r["broker_name"], r["queue_id"]) for r in offsets}
    for _minute, owners in _owned_by(day.records("running_info")).items():
        assert set(owners) == queues
        assert all(len(ids) == 1 for ids in owners.values())


def test_topicb_queues_8_to_15_have_no_owner_and_a_frozen_consumer_offset(simulated):
    day = simulated("topicb-subscription")
    fault = day.fault("subscription_inconsistent")
    assert fault["topic"] == "billing-TopicB" and fault["queue_ids"] == list(range(8, 16))
    t2 = fault["clients"][0]
    assert {r["would_be_owner"] for r in fault["expected_orphaned_queues"]} == {t2}
    assert {r["root_cause"] for r in fault["expected_orphaned_queues"]} == {"SUBSCRIPTION_INCONSISTENT"}
    owned = {(q["topic"], q["queue_id"]) for r in day.records("running_info") for q in r["mq_table"]}
    b_owned = sorted(q for t, q in owned if t == "billing-TopicB")
    assert b_owned == list(range(8))
    rows = defaultdict(list)
    for r in day.records("offsets"):
        if r["topic"] == "billing-TopicB":
            rows[r["queue_id"]].append(r)
    for queue_id in range(8, 16):
        seq = sorted(rows[queue_id], key=lambda r: ts_ms(r["ts"]))
        assert len({r["consumer_offset"] for r in seq}) == 1
        assert seq[-1]["broker_offset"] > seq[0]["broker_offset"]
        assert {r["client_ip"] for r in seq} == {"N/A"}
    for queue_id in range(8):
        seq = sorted(rows[queue_id], key=lambda r: ts_ms(r["ts"]))
        assert seq[-1]["consumer_offset"] > seq[0]["consumer_offset"]


def test_slow_message_pins_commit_offset_until_the_cleaner_releases_it(simulated):
    day = simulated("slow-message")
    fault = day.fault("slow_message")
    [stuck] = fault["expected_stuck_queues"]
    blocking, released = stuck["blocking_offset"], ts_ms(stuck["released_at"])
    start = ts_ms(fault["start"])
    assert stuck["root_cause"] == "SLOW_MESSAGE" and stuck["flow_controlled"] is True
    assert stuck["stuck_minutes"] >= 5 and stuck["redelivery_risk"] > 2000
    table = sorted(((ts_ms(r["ts"]), q) for r in day.records("running_info") if r["client_id"] == stuck["owner"]
                    for q in r["mq_table"] if q["broker_name"] == "broker-b" and q["queue_id"] == 2),
                   key=lambda x: x[0])
    during = [q for t, q in table if start + 5_000 < t < released]
    after = [q for t, q in table if t > released]
    assert during and all(q["commit_offset"] == q["cached_msg_min_offset"] == blocking for q in during)
    assert max(q["cached_msg_max_offset"] - q["cached_msg_min_offset"] for q in during) > 2000
    assert after[0]["commit_offset"] > blocking + 2000  # the jump
    logs = [line for lines in day.log_lines().values() for line in lines]
    assert any("send expire msg back." in line and f"queueOffset={blocking}" in line for line in logs)
    assert any("span too long, so do flow control" in line for line in logs)
    offsets = [r for r in day.records("offsets") if r["broker_name"] == "broker-b" and r["queue_id"] == 2
               and r["topic"] == "payments-slow"]
    pinned = [r for r in offsets if ts_ms(stuck["stuck_since"]) <= ts_ms(r["ts"]) <= ts_ms(stuck["last_seen"])]
    assert len(pinned) >= 6 and {r["consumer_offset"] for r in pinned} == {blocking}
    assert pinned[-1]["broker_offset"] > pinned[0]["broker_offset"]


def test_a_running_info_collector_on_its_own_cycle_answers_with_the_recovery_before_the_offsets(simulated):
    """consumer-hung polls GID_billing 30 s after the offsets collection (``running_info_phase``):
    the hung client's answer after the release shows the commit past the frozen offset and an
    OK rate counting the backlog, while the broker's offsets snapshot before it is still pinned
    (issue 56). Its minute rates count the commits since its own previous answer."""
    day = simulated("consumer-hung")
    fault = day.fault("consumer_hang")
    end = ts_ms(fault["end"])
    offsets = [r for r in day.records("offsets") if r["group"] == "GID_billing"]
    assert {ts_ms(r["ts"]) // 1000 % 60 for r in offsets} == {15}
    answers = sorted(((ts_ms(r["ts"]), r) for r in day.records("running_info") if r["group"] == "GID_billing"),
                     key=lambda answer: answer[0])
    assert {t // 1000 % 60 for t, _ in answers} <= set(range(47, 51))
    for stuck in fault["expected_stuck_queues"]:
        key = (stuck["topic"], stuck["broker_name"], stuck["queue_id"])
        last_pinned, pin = ts_ms(stuck["last_seen"]), stuck["committed_offset"]
        moved = next(ts_ms(r["ts"]) for r in offsets if (r["topic"], r["broker_name"], r["queue_id"]) == key
                     and ts_ms(r["ts"]) > last_pinned)
        assert last_pinned < end < moved
        [recovery] = [r for t, r in answers if last_pinned < t < moved and r["client_id"] == stuck["owner"]]
        [entry] = [q for q in recovery["mq_table"] if (q["topic"], q["broker_name"], q["queue_id"]) == key]
        [status] = [s for s in recovery["status_table"] if s["topic"] == stuck["topic"]]
        assert entry["commit_offset"] > pin and status["consume_ok_tps"] > 0
        pinned = [r for t, r in answers if ts_ms(stuck["stuck_since"]) + 70_000 <= t <= last_pinned
                  and r["client_id"] == stuck["owner"]]
        assert len(pinned) >= 7
        assert all(s["consume_ok_tps"] == 0 for r in pinned for s in r["status_table"])
        assert stuck["root_cause"] == "CONSUMER_HUNG" and stuck["flow_controlled"] is True

def test_duplicate_client_id_shows_twice_in_connections_once_in_running_info(simulated):
    day = simulated("duplicate-client-id")
    fault = day.fault("duplicate_client_id")
    [dup] = fault["clients"]
    by_ts = defaultdict(list)
    for r in day.records("connections"):
        if r["client_id"] == dup and r["broker_name"] == "broker-a":
            by_ts[r["ts"]].append(r["client_addr"])
    assert by_ts and all(len(set(addrs)) == 2 for addrs in by_ts.values())
    per_ts = defaultdict(list)
    for r in day.records("running_info"):
        per_ts[r["ts"]].append(r["client_id"])
    assert all(ids.count(dup) == 1 for ids in per_ts.values())
    assert [r["queue_id"] for r in fault["expected_orphaned_queues"]] == [6, 7, 8, 9, 10]
    assert {r["would_be_owner"] for r in fault["expected_orphaned_queues"]} == {dup}
    doubles = fault["expected_double_owned_queues"]
    assert {r["queue_id"] for r in doubles if r["topic"] == "inventory-dup"} == set(range(6))
    assert all(r["owners"] == [dup, dup] for r in doubles)
    for r in day.records("offsets"):
        if r["topic"] == "inventory-dup":
            assert (r["client_ip"] == "N/A") == (6 <= r["queue_id"] <= 10)


def test_strategy_mismatch_orphans_and_doubles_match_running_info(simulated):
    day = simulated("strategy-mismatch")
    fault = day.fault("strategy_inconsistent")
    orphans = {(r["broker_name"], r["queue_id"]) for r in fault["expected_orphaned_queues"]}
    doubles = {(r["broker_name"], r["queue_id"]) for r in fault["expected_double_owned_queues"]}
    assert orphans and doubles
    strategies = {r["properties"]["allocateMessageQueueStrategy"].split("@")[0].rsplit(".", 1)[1]
                  for r in day.records("running_info")}
    assert strategies == {"AllocateMessageQueueAveragely", "AllocateMessageQueueAveragelyByCircle"}
    for _minute, owners in _owned_by(day.records("running_info")).items():
        topic = {(b, q): ids for (_, t, b, q), ids in owners.items() if t == "shipping-mismatch"}
        assert {k for k, ids in topic.items() if len(ids) == 2} == doubles
        all_queues = {(b, q) for b in ("broker-a", "broker-b") for q in range(8)}
        assert all_queues - set(topic) == orphans


def test_client_leaves_moves_8_queues_under_avg_and_6_under_consistent_hash(simulated):
    day = simulated("client-leaves")
    fault = day.fault("client_leaves")
    [leaver] = fault["clients"]
    event = next(e for e in fault["expected_rebalance_events"] if e["topic"] == "TopicTest")
    assert (event["clients_before"], event["clients_after"], event["queues_moved"]) == (4, 3, 8)
    whatif = {r["strategy"]: r["queues_moved"] for r in fault["expected_strategy_whatif"]
              if r["topic"] == "TopicTest"}
    assert whatif == {"AVG": 8, "AVG_BY_CIRCLE": 18, "CONSISTENT_HASH": 6}
    at = ts_ms(fault["start"])
    before, after = {}, {}
    for r in day.records("running_info"):
        target = before if ts_ms(r["ts"]) < at else after
        for q in r["mq_table"]:
            if q["topic"] == "TopicTest":
                target[(q["broker_name"], q["queue_id"])] = r["client_id"]
    assert len(before) == len(after) == 24 and leaver not in after.values()
    assert sum(before[q] != after[q] for q in before) == 8
    logs = day.log_lines()
    changed = [line for lines in logs.values() for line in lines
               if "rebalanced result changed." in line and "topic=TopicTest" in line]
    assert len(changed) == 3 and all("cidAllSize=3" in line and "mqAllSize=24" in line for line in changed)


def test_consumer_crash_keeps_the_stale_id_in_connections_for_up_to_120_s(simulated):
    day = simulated("consumer-crash")
    fault = day.fault("consumer_crash")
    crashed = fault["clients"][0]
    crash, expiry = ts_ms(fault["start"]), ts_ms(fault["end"])
    assert 110_000 <= expiry - crash <= 130_000
    conn = [ts_ms(r["ts"]) for r in day.records("connections") if r["client_id"] == crashed]
    assert max(conn) > crash + 60_000 and max(conn) < expiry
    ri = [ts_ms(r["ts"]) for r in day.records("running_info") if r["client_id"] == crashed]
    assert max(ri) < crash
    orphans = fault["expected_orphaned_queues"]
    assert orphans and {r["root_cause"] for r in orphans} == {"REBALANCE_GAP"}
    assert {r["severity"] for r in orphans} == {"INFO"}
    triggers = [e["trigger"] for e in fault["expected_rebalance_events"] if e["topic"] == "audit-crash"]
    assert triggers == ["CLIENT_EXPIRED", "CLIENT_JOINED"]
    for r in day.records("offsets"):
        key = {"topic": r["topic"], "broker_name": r["broker_name"], "queue_id": r["queue_id"]}
        t = ts_ms(r["ts"])
        if any(all(o[k] == v for k, v in key.items()) for o in orphans) and crash < t < expiry:
            assert r["client_ip"] == "N/A"


def test_sample_holds_every_fault_kind_and_nothing_unexplained(simulated):
    day = simulated("sample")
    kinds = sorted(f["kind"] for f in day.truth["faults"])
    assert kinds == sorted(["duplicate_client_id", "subscription_inconsistent", "strategy_inconsistent",
                            "client_leaves", "slow_message", "consumer_crash"])
    assert day.truth["unexplained"] == []
    assert len({r["group"] for r in day.records("offsets")}) == 10
    assert {f["finding"] for f in day.truth["expected_producer_findings"]} == {"HOT_QUEUE", "QUEUE_COUNT_SKEW"}


def test_membership_comes_from_the_first_broker_whatever_the_brokers_names():
    """A cluster whose first broker is not the smallest name (broker-b, then broker-a): the
    client leaving 4-client ``cg-orders`` is still one CLIENT_LEFT membership event, as in the
    client-leaves scenario alone (the other brokers' events of the same instant once hid it)."""
    from pathlib import Path

    from jobs.simulate.cluster import Cluster
    from jobs.simulate.run import DAY_MS, expand_scale
    from jobs.simulate.scenario import load_scenario

    def leaves(name):
        scenario = expand_scale(load_scenario(name), "S", 0)
        cluster = Cluster(scenario, 0, -DAY_MS, DAY_MS)
        return cluster.brokers[0], [(m.t, m.kind, cluster.processes[m.process].spec.name)
                                    for m in cluster.membership
                                    if m.group == "cg-orders" and m.kind != "CLIENT_JOINED"]

    mixed = Path(__file__).parents[1] / "gold" / "scenarios" / "seeds-morning.toml"
    first, events = leaves(str(mixed))
    assert first == "broker-b"
    assert events == leaves("client-leaves")[1] and [e[1:] for e in events] == [("CLIENT_LEFT", "l2")]
