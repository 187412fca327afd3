"""The DESIGN.md §5.1 real-cluster scenarios (issue #17) through every layer in memory, both
engines: each one's gold tables equal its truth, and what the broken rules used to report on
them is gone."""

import pytest

from jobs.simulate.run import simulate
from tests.gold.conftest import expected, of_groups, run_layers
from tests.gold.test_orphaned_queues import assert_queue_findings_equal_truth, double_key, found
from tests.gold.test_rebalance import event_key, found_events

WINDOW = ("09:50", "10:20")
SCENARIOS = ["logs-only", "offsets-connections-only", "progress-na-loop", "running-info-3min",
             "master-slave-channels", "crash-restart", "crash-restart-same-id", "abandoned-group",
             "partial-subscriptions", "slow-message-na-loop"]


@pytest.fixture(scope="module")
def real_day(spark, tmp_path_factory):
    cache = {}

    def get(name, landing_format="jsonl"):
        if (name, landing_format) not in cache:
            root = tmp_path_factory.mktemp(name)
            from tests.gold.conftest import DAY
            truth = simulate(name, DAY, root / "landing", seed=0, window=WINDOW,
                             landing_format=landing_format)
            cache[name, landing_format] = (truth, run_layers(spark, root / "landing",
                                                             root / "staging"))
        return cache[name, landing_format]

    return get


def stuck_key(r):
    return (r["group"], r["topic"], r["broker_name"], r["queue_id"], r["root_cause"],
            r["severity"])


# The mixed `real-cluster` day holds every scenario of SCENARIOS (its `include`), each as its own
# group: the tests below read their scenario's group from it rather than a day of its own.
MIXED = "real-cluster"


def test_the_mixed_day_holds_every_scenario():
    import tomllib
    from pathlib import Path

    import jobs.simulate.scenarios as builtin

    mixed = tomllib.loads((Path(builtin.__file__).parent / f"{MIXED}.toml").read_text())
    assert set(SCENARIOS) <= set(mixed["include"])


def test_gold_tables_equal_the_truth(real_day):
    truth, layers = real_day(MIXED)
    assert_queue_findings_equal_truth(layers["gold"], truth, stuck_key)


def test_real_cluster_reports_nothing_above_info_without_a_fault(real_day):
    """Issue #17 acceptance: groups without an injected fault are OK, and no finding of theirs
    is WARN or CRITICAL. A crash the supervisor restarts at once (with a new id, or keeping it)
    is no fault to act on: those groups are held to the same."""
    truth, layers = real_day(MIXED)
    faulty = {f["group"] for f in truth["faults"] if f["kind"] != "consumer_crash"}
    assert {"GID_restart_audit", "GID_restart_keepid"} <= {f["group"] for f in truth["faults"]}
    gold = layers["gold"]
    health = {r.group: r for r in gold["group_health"].collect()}
    assert len(health) == 11
    for group, row in health.items():
        if group not in faulty:
            assert row.status == "OK", (group, row.findings)
            assert not [f for f in row.findings if f.startswith(("WARN", "CRITICAL"))], group
    for table in ("orphaned_queues", "double_owned_queues", "stuck_queues"):
        loud = [(r.group, r.severity) for r in gold[table].collect()
                if r.group not in faulty and r.severity != "INFO"]
        assert loud == [], table


def test_logs_only_owners_come_from_the_latest_rebalance_sets(real_day):
    """Case 1: every snapshot after the clients started has a live owner from the logs."""
    layers = of_groups(real_day(MIXED)[1], {"GID_logs_only"})
    rows = layers["silver"]["queue_state"].where("ts > '2025-11-21 09:53:00'").collect()
    assert rows and all(r.owner_count == 1 for r in rows)


def test_offsets_and_connections_only_owners_come_from_client_ip(real_day):
    """Case 2."""
    layers = of_groups(real_day(MIXED)[1], {"GID_blind_billing"})
    rows = layers["silver"]["queue_state"].collect()
    assert rows and all(r.owner_count == 1 and r.owned_by_ip_only for r in rows
                        if r.ts.minute > 50 or r.ts.hour > 9)


def test_na_from_an_aborted_progress_loop_removes_no_owner(real_day):
    """Case 3: every queue says N/A, every queue has its live owner."""
    layers = of_groups(real_day(MIXED)[1], {"GID_na_loop"})
    rows = layers["silver"]["queue_state"].where("ts > '2025-11-21 09:51:00'").collect()
    assert rows and all(r.broker_reports_no_owner for r in rows)
    assert all(r.owner_count == 1 for r in rows)


def test_master_and_slave_channels_are_one_process(real_day):
    """Case 5."""
    layers = of_groups(real_day(MIXED)[1], {"GID_ms_orders"})
    members = layers["silver"]["group_members"].collect()
    assert members and {r.processes for r in members} == {1}
    assert {len(r.broker_addrs) for r in members} == {4}


def test_a_quick_restart_is_a_rebalance_gap_not_double_ownership(real_day):
    """Case 6."""
    group = "GID_restart_audit"
    truth, layers = real_day(MIXED)
    layers = of_groups(layers, {group})
    rows = layers["gold"]["orphaned_queues"].collect()
    assert rows and {(r.root_cause, r.severity) for r in rows} == {("REBALANCE_GAP", "INFO")}
    assert layers["gold"]["double_owned_queues"].collect() == []
    # the restart's join and the stale id's expiry, each with the queues that changed hands: the
    # dead process's last set is no ownership once it is silent (before, the expiry moved 6)
    by_topic = {}
    for key in found_events(layers["gold"]["rebalance_events"]):
        by_topic.setdefault(key[1], []).append(key)
    want = {}
    for r in expected(truth, "expected_rebalance_events"):
        if r["group"] == group:
            want.setdefault(r["topic"], []).append(event_key(r))
    assert sorted(by_topic["restart-audit"]) == sorted(want["restart-audit"])
    # the retry topic's one queue: the same expiry and move, but the new id's first observation
    # of it came after the join's round, so its run starts at the round before the join (3
    # clients listed then, where the truth counts the 4 of the expiry's moment)
    (retry,) = by_topic["%RETRY%GID_restart_audit"]
    (truth_retry,) = want["%RETRY%GID_restart_audit"]
    assert retry[:4] + retry[5:] == truth_retry[:4] + truth_retry[5:]
    assert (retry[4], truth_retry[4]) == (3, 4)


def test_a_restart_that_keeps_its_id_is_a_rebalance_gap_not_a_duplicate_client_id(real_day):
    """No fault: a fixed instanceName keeps the id across a crash and restart. For about 100 s
    the broker lists the dead process's channel beside the new one (cidAll has the id twice,
    so one slot is orphaned), but only one of them heartbeats: a REBALANCE_GAP (INFO) and a
    restart's two rebalances, never DUPLICATE_CLIENT_ID. Before, this day was a WARN."""
    layers = of_groups(real_day(MIXED)[1], {"GID_restart_keepid"})
    gold, silver = layers["gold"], layers["silver"]
    listed_twice = silver["group_members"].where("processes > 1").collect()
    assert listed_twice and {(r.running_processes, r.is_duplicate_id) for r in listed_twice} == {
        (1, False)}
    rows = gold["orphaned_queues"].collect()
    assert rows and {(r.root_cause, r.severity) for r in rows} == {("REBALANCE_GAP", "INFO")}
    assert gold["double_owned_queues"].collect() == []
    (health,) = gold["group_health"].collect()
    assert health.status == "OK"
    assert not [f for f in health.findings if f.startswith(("WARN", "CRITICAL"))]
    events = gold["rebalance_events"].where("topic = 'restart-keepid'").orderBy("ts").collect()
    assert [r.trigger for r in events] == ["CLIENT_JOINED", "CLIENT_EXPIRED"]
    assert "a dead channel behind 10.0.16.22@audit-worker" in events[1].evidence


@pytest.mark.heavy_day
def test_a_restart_that_keeps_its_id_seen_by_mqadmin_is_no_duplicate_either(real_day):
    """The same day through RocketMQ's own tool outputs: consumerConnection prints no heartbeat
    times, so nothing shows which of the two listed channels runs. Two channels listed together
    for less than the broker's expiry are unknown, not a duplicate: still no WARN or CRITICAL."""
    _, layers = real_day("crash-restart-same-id", "mqadmin")
    gold, silver = layers["gold"], layers["silver"]
    assert silver["group_members"].where("processes > 1").count() > 0  # listed twice
    assert silver["group_members"].where("is_duplicate_id").count() == 0
    rows = gold["orphaned_queues"].collect()
    assert {(r.root_cause, r.severity) for r in rows} <= {("REBALANCE_GAP", "INFO")}
    assert gold["double_owned_queues"].collect() == []
    (health,) = gold["group_health"].collect()
    assert health.status == "OK", health.findings
    assert not [f for f in health.findings if f.startswith(("WARN", "CRITICAL"))]
    events = gold["rebalance_events"].where("topic = 'restart-keepid'").orderBy("ts").collect()
    # the dead channel's departure: no heartbeat time tells an expiry from a clean shutdown
    # (with them it is CLIENT_EXPIRED, above); before, this read as FLAPPING
    assert [r.trigger for r in events] == ["CLIENT_JOINED", "CLIENT_LEFT"]
    assert ("a channel behind 10.0.16.22@audit-worker left (a restart or reconnect that kept its "
            "id; the connection records carry no heartbeat times") in events[1].evidence


def test_an_abandoned_group_is_one_info_note(real_day):
    """Case 7."""
    layers = of_groups(real_day(MIXED)[1], {"GID_retired"})
    (row,) = layers["gold"]["group_health"].collect()
    assert row.status == "OK" and row.orphaned_queues == 0 and row.stuck_queues == 0
    assert len(row.findings) == 1 and row.findings[0].startswith("INFO abandoned: ")


def test_a_client_joining_after_a_3min_round_leaves_stale_owners(real_day):
    """Case 4: a client joins right after a running-info round. The old owners drop the moved
    queues at once and the new owners log the take, but the old owners' running infos list
    them until the next round: STALE_OWNER (INFO), the rows the truth computes from the answers
    the simulator wrote. The join itself is one CLIENT_JOINED event."""

    truth, layers = real_day(MIXED)
    group = "GID_ri_3min_join"
    gold = layers["gold"]
    want = [r for r in expected(truth, "expected_double_owned_queues") if r["group"] == group]
    assert len(want) == 3 and {(r["root_cause"], r["severity"]) for r in want} == {
        ("STALE_OWNER", "INFO")}
    assert found(gold["double_owned_queues"].where(f"`group` = '{group}'"), double_key) == sorted(
        double_key(r) for r in want)
    events = found_events(gold["rebalance_events"].where(f"`group` = '{group}'"))
    assert events == [event_key(r) for r in expected(truth, "expected_rebalance_events")
                      if r["group"] == group]
    (health,) = [r for r in gold["group_health"].collect() if r.group == group]
    assert health.status == "OK"


def test_partial_subscription_records_make_no_storm(real_day):
    """Case 9."""
    layers = of_groups(real_day(MIXED)[1], {"GID_partial_subs"})
    assert layers["gold"]["rebalance_events"].collect() == []


@pytest.mark.delta
def test_rocketlens_run_on_the_real_cluster_day_flags_only_the_faults(tmp_path):
    """Issue #17 acceptance, end to end: ``rocketlens simulate`` + ``rocketlens run`` (Delta
    lake, embedded engine); no group without an injected fault is WARN or CRITICAL."""
    import json

    from tests.conftest import run_cli

    landing, lake = tmp_path / "landing", tmp_path / "lake"
    run_cli("simulate", "--scenario", "real-cluster", "--date", "2025-11-21", "--landing",
            str(landing), "--window", "-".join(WINDOW))
    run_cli("run", "--date", "2025-11-21", "--landing", str(landing), "--lake", str(lake))
    truth = json.loads((landing / "_truth.json").read_text())
    faulty = {f["group"] for f in truth["faults"]}
    out = run_cli("sql", "SELECT `group`, status, findings FROM gold.group_health", "--lake",
                  str(lake), "--format", "json").stdout
    health = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert len(health) == 11
    loud = [(h["group"], h["status"], h["findings"]) for h in health
            if h["group"] not in faulty and (h["status"] != "OK" or any(
                f.startswith(("WARN", "CRITICAL")) for f in h["findings"]))]
    assert loud == []
