"""Producer tables wired into the gold stage (DESIGN.md §5.2): a simulated day whose hash-keyed
producers make a hot queue, through bronze → silver → gold → group_health → incidents in memory,
on the test engine; and the sample day, where no producer finding fires."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.gold.incidents import REMEDIATION
from jobs.gold.incidents import SCHEMA as INCIDENTS_SCHEMA
from jobs.pipeline import incident_frames
from jobs.settings import Settings
from jobs.simulate.run import simulate
from schemas.lake_comments import column_comment
from tests.conftest import run_cli
from tests.gold.conftest import DAY, run_layers

# classic Spark: in the acceptance tier, `make test-acceptance` (CI runs it); the producer-skew day runs the producer
# findings in the classic pass
pytestmark = pytest.mark.heavy_day

HOT_QUEUE_DAY = Path(__file__).parent / "scenarios" / "hot-queue.toml"
# 45 minutes of records: a 30-minute hot window fits (the default 60 would need a longer day)
SETTINGS = Settings(producer={"hot_min_minutes": 30})
HOT_GROUPS = ["GID_hot_billing", "GID_hot_orders"]


@pytest.fixture(scope="module")
def hot_day(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("hot-queue")
    simulate(str(HOT_QUEUE_DAY), DAY, root / "landing", seed=0, window=("09:00", "09:45"))
    layers = run_layers(spark, root / "landing", root / "staging", SETTINGS)
    gold = layers["gold"]
    gold.update(incident_frames(gold, spark.createDataFrame([], INCIDENTS_SCHEMA), SETTINGS))
    return gold


def test_the_hot_queue_is_the_only_producer_finding_and_names_both_consuming_groups(hot_day):
    rows = hot_day["producer_findings"].collect()
    assert [(r.finding, r.topic, r.groups, r.severity) for r in rows] == [
        ("HOT_QUEUE", "orders-hot", HOT_GROUPS, "INFO")]  # both groups keep up: INFO
    [hot] = rows
    # the queue it names is the one queue_load shows carrying most of the topic's messages
    load = hot_day["queue_load"].where("topic = 'orders-hot'").groupBy("broker_name", "queue_id").sum(
        "messages_in").orderBy("sum(messages_in)", ascending=False).collect()
    assert (load[0].broker_name, load[0].queue_id) == (hot.broker_name, hot.queue_id)
    assert hot.share >= 2 * hot.even_share and hot.even_share == 1 / 8


def test_queue_load_shares_add_up_to_the_topic_per_hour(hot_day):
    # retry topics are in it too; without failures they receive nothing and have no share
    totals = hot_day["queue_load"].where("share is not null").groupBy("topic", "hour").sum("share").collect()
    assert {r.topic for r in totals} == {"orders-hot", "audit-even"}
    assert all(abs(r["sum(share)"] - 1.0) < 1e-9 for r in totals)


def test_group_health_lists_the_info_finding_without_raising_the_status(hot_day):
    health = {r.group: r for r in hot_day["group_health"].collect()}
    for group in HOT_GROUPS:
        assert health[group].status == "OK"
        assert [f for f in health[group].findings if "producer" in f] == [
            f"INFO producer HOT_QUEUE orders-hot {_queue(hot_day)} ({_minutes(hot_day)} min)"]
    assert health["GID_even_audit"].status == "OK"
    assert not [f for f in health["GID_even_audit"].findings if "producer" in f]


def test_each_consuming_group_gets_a_producer_incident_with_the_remediation(hot_day):
    rows = hot_day["incidents"].where("kind = 'PRODUCER'").orderBy("group").collect()
    assert [(r.group, r.cause, r.severity, r.queues) for r in rows] == [
        (g, "HOT_QUEUE", "INFO", [f"orders-hot/{_queue(hot_day)}"]) for g in HOT_GROUPS]
    assert all(r.remediation == REMEDIATION[("PRODUCER", "HOT_QUEUE")] for r in rows)
    assert "key distribution, not the consumer" in rows[0].remediation
    assert "SelectMessageQueueByHash" in rows[0].evidence


def test_every_column_of_the_new_gold_tables_has_a_comment(hot_day):
    for name in ("queue_load", "producer_findings", "incidents", "group_health"):
        missing = [c for c in hot_day[name].columns if not column_comment(f"gold.{name}", c)]
        assert missing == [], f"gold.{name} columns without a comment: {missing}"


def _queue(gold):
    [hot] = gold["producer_findings"].collect()
    return f"{hot.broker_name}/{hot.queue_id}"


def _minutes(gold):
    [hot] = gold["producer_findings"].collect()
    return round(hot.minutes, 1)


@pytest.mark.delta
def test_the_sample_day_s_producer_findings_are_the_producer_skew_truth(sample_lake):
    """The sample day holds producer-skew: its findings and no others (the healthy group's hash-keyed
    topic is only mildly skewed); only the groups consuming those topics see them."""
    def rows(sql):
        return [json.loads(line) for line in
                run_cli("sql", sql, "--lake", str(sample_lake), "--format", "json").stdout.splitlines()]

    truth = json.loads((sample_lake.parent / "landing" / "_truth.json").read_text())
    expected = sorted((e["finding"], e["topic"], e["broker_name"], e["queue_id"], e["severity"])
                      for e in truth["expected_producer_findings"])
    assert [e[0] for e in expected] == ["BROKER_STARVED", "HOT_QUEUE", "QUEUE_COUNT_SKEW"]
    found = rows("SELECT finding, topic, broker_name, queue_id, severity FROM gold.producer_findings "
                 "ORDER BY finding")
    assert [tuple(r.values()) for r in found] == expected
    assert rows("SELECT count(*) AS n FROM gold.queue_load")[0]["n"] > 0
    producer_groups = rows("SELECT DISTINCT `group` FROM gold.incidents WHERE kind = 'PRODUCER' ORDER BY 1")
    assert [r["group"] for r in producer_groups] == ["GID_skew_orders", "GID_skew_shop"]
    findings = "SELECT count(*) AS n FROM gold.group_health WHERE array_join(findings, '|') LIKE "
    assert rows(findings + "'%producer %' AND `group` NOT LIKE 'GID_skew_%'")[0]["n"] == 0
    assert rows(findings + "'%stuck %'")[0]["n"] > 0  # the query does read the findings (the slow message)


def test_whatif_load_share_is_carried_by_whoever_owns_the_hot_queue(hot_day):
    load = hot_day["queue_load"].where("topic = 'orders-hot'").groupBy("broker_name", "queue_id").sum(
        "messages_in").collect()
    hot_day_share = max(r["sum(messages_in)"] for r in load) / sum(r["sum(messages_in)"] for r in load)
    rows = hot_day["strategy_whatif"].where("topic = 'orders-hot'").collect()
    shares = {(r.group, r.strategy): r.max_client_load_share for r in rows}
    assert {s for g, s in shares} == {"AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"}
    for strategy in ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"):
        assert shares[("GID_hot_billing", strategy)] == pytest.approx(1.0)  # its only client has it all
        # two clients: the hot queue's owner carries at least that queue, whichever strategy
        assert hot_day_share - 1e-9 <= shares[("GID_hot_orders", strategy)] < 1.0
