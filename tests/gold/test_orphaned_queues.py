"""gold.orphaned_queues and gold.double_owned_queues against the simulator's truth (issue 5):
every finding, its window, lags, root cause and would-be owner — nothing more, nothing less."""

import pytest

from tests.gold.conftest import classic_days, expected, iso

SCENARIOS = ["healthy", "duplicate-client-id", "topicb-subscription", "strategy-mismatch",
             "consumer-crash", "slow-message", "client-leaves"]


def orphan_key(r):
    return (r["group"], r["topic"], r["broker_name"], r["queue_id"], r["first_seen"],
            r["last_seen"], r["orphaned_minutes"], r["lag_start"], r["lag_end"], r["root_cause"],
            r["would_be_owner"], r["severity"])


def double_key(r):
    return (r["group"], r["topic"], r["broker_name"], r["queue_id"], tuple(r["owners"]),
            r["first_seen"], r["last_seen"], r["minutes"], r["root_cause"], r["severity"])


def found(df, key):
    rows = []
    for r in df.collect():
        d = r.asDict(recursive=True)
        d["first_seen"], d["last_seen"] = iso(d["first_seen"]), iso(d["last_seen"])
        rows.append(key(d))
    return sorted(rows)


def assert_queue_findings_equal_truth(gold, truth, stuck_key):
    """gold.orphaned_queues, double_owned_queues and stuck_queues equal the scenario's truth
    (``stuck_key``: the stuck columns compared), and the truth explains every episode."""
    from tests.gold.conftest import expected

    assert not truth["unexplained"]
    assert found(gold["orphaned_queues"], orphan_key) == sorted(
        orphan_key(r) for r in expected(truth, "expected_orphaned_queues"))
    assert found(gold["double_owned_queues"], double_key) == sorted(
        double_key(r) for r in expected(truth, "expected_double_owned_queues"))
    assert sorted(stuck_key(r.asDict()) for r in gold["stuck_queues"].collect()) == sorted(
        stuck_key(r) for r in expected(truth, "expected_stuck_queues"))


@pytest.mark.parametrize("scenario", classic_days(SCENARIOS))
def test_orphaned_queues_equal_the_truth(scenario_day, scenario):
    truth, layers = scenario_day(scenario)
    assert found(layers["gold"]["orphaned_queues"], orphan_key) == sorted(
        orphan_key(r) for r in expected(truth, "expected_orphaned_queues"))


@pytest.mark.parametrize("scenario", classic_days(SCENARIOS))
def test_double_owned_queues_equal_the_truth(scenario_day, scenario):
    truth, layers = scenario_day(scenario)
    assert found(layers["gold"]["double_owned_queues"], double_key) == sorted(
        double_key(r) for r in expected(truth, "expected_double_owned_queues"))


@pytest.mark.heavy_day
def test_scenarios_with_orphans_have_them(scenario_day):
    """Guards the equality tests above against an empty truth."""
    for scenario in ("duplicate-client-id", "topicb-subscription", "strategy-mismatch",
                     "consumer-crash"):
        truth, _ = scenario_day(scenario)
        assert expected(truth, "expected_orphaned_queues"), scenario


@pytest.mark.heavy_day
def test_topicb_orphans_queues_8_to_15_and_names_the_member_without_topic_b(scenario_day):
    _, layers = scenario_day("topicb-subscription")
    rows = layers["gold"]["orphaned_queues"].collect()
    assert sorted(r.queue_id for r in rows) == list(range(8, 16))
    members = layers["silver"]["member_context"].where("topics is not null").collect()
    without_b = {m.client_id for m in members if "billing-TopicB" not in m.topics}
    assert len(without_b) == 1 and {r.would_be_owner for r in rows} == without_b
    (member,) = without_b
    assert all(f"{member} do not subscribe billing-TopicB" in r.evidence for r in rows)


@pytest.mark.heavy_day
def test_duplicate_id_evidence_names_the_id(scenario_day):
    _, layers = scenario_day("duplicate-client-id")
    for r in layers["gold"]["orphaned_queues"].collect():
        assert r.evidence.startswith("client id 172.17.0.1@1 is held by more than one process")
