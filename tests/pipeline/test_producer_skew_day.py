"""The built-in ``producer-skew`` scenario through bronze → silver → gold (DESIGN.md §5.2, §6): the
simulator's producers pick queues as the client does (jobs/simulate/producers.py), and the gold
producer findings are exactly the ones the truth reads off the simulation — the hash-keyed hot
queue, the broker the latency-fault strategy shuns, the uneven queue counts — and nothing on the
topics where they must not fire (even round robin, < 4 queues, no traffic at all, retry topics)."""

from __future__ import annotations

import datetime as dt

import pytest

from jobs.gold.incidents import SCHEMA as INCIDENTS_SCHEMA
from jobs.pipeline import incident_frames
from jobs.settings import Settings
from jobs.simulate.run import simulate
from tests.gold.conftest import DAY, run_layers

# a single-scenario day: on classic Spark in the acceptance tier (`make test-acceptance`); the
# rules' cases run on both engines in tests/gold/test_producer_load.py
pytestmark = pytest.mark.heavy_day

# 45 minutes of records: a 30-minute hot window fits (the default 60 would need a longer day)
SETTINGS = Settings(producer={"hot_min_minutes": 30})
QUIET_TOPICS = {"audit-steady", "small-keyed", "idle-feed"}


@pytest.fixture(scope="module")
def skew_day(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("producer-skew")
    truth = simulate("producer-skew", DAY, root / "landing", seed=0, window=("10:00", "10:45"))
    gold = run_layers(spark, root / "landing", root / "staging", SETTINGS)["gold"]
    gold.update(incident_frames(gold, spark.createDataFrame([], INCIDENTS_SCHEMA), SETTINGS))
    return truth, gold


def _key(row) -> tuple:
    return (row["finding"], row["topic"], row["broker_name"], row["queue_id"], row["severity"],
            tuple(row["groups"]))


def _ts(value) -> dt.datetime:
    if isinstance(value, str):
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).replace(tzinfo=None)
    return value


def test_the_producer_findings_are_exactly_the_truths(skew_day):
    truth, gold = skew_day
    expected = truth["expected_producer_findings"]
    rows = [r.asDict() for r in gold["producer_findings"].collect()]
    assert sorted(map(_key, rows)) == sorted(map(_key, expected))
    assert {e["finding"] for e in expected} == {"HOT_QUEUE", "BROKER_STARVED", "QUEUE_COUNT_SKEW"}
    found = {(r["finding"], r["topic"]): r for r in rows}
    for e in expected:
        row = found[(e["finding"], e["topic"])]
        if e["finding"] == "BROKER_STARVED":  # the shunned window, to the snapshot
            assert (row["first_seen"], row["last_seen"]) == (_ts(e["first_seen"]), _ts(e["last_seen"]))
            assert row["minutes"] == pytest.approx(e["minutes"])
        if e["finding"] == "HOT_QUEUE":  # the hash selection's share of the keys' popularity
            assert row["share"] == pytest.approx(e["share"], abs=0.02)
            assert row["even_share"] == pytest.approx(e["even_share"])


def test_nothing_fires_on_even_small_idle_or_retry_topics(skew_day):
    _, gold = skew_day
    topics = {r.topic for r in gold["producer_findings"].collect()}
    assert not topics & QUIET_TOPICS
    assert not [t for t in topics if t.startswith("%RETRY%")]
    # the quiet topics did receive (or, idle-feed, were reported with no) traffic: the rule had input
    load = {r.topic: r["sum(messages_in)"] for r in gold["queue_load"].groupBy("topic").sum("messages_in").collect()}
    assert load["audit-steady"] > 0 and load["small-keyed"] > 0 and load["idle-feed"] == 0


def test_group_health_only_the_starved_broker_warns(skew_day):
    _, gold = skew_day
    health = {r.group: r for r in gold["group_health"].collect()}
    assert health["GID_skew_audit"].status == "OK" and health["GID_skew_audit"].findings == []
    assert health["GID_skew_orders"].status == "OK"  # a hot queue its owner keeps up with is INFO
    assert health["GID_skew_shop"].status == "WARN"
    for group in ("GID_skew_orders", "GID_skew_shop"):
        assert all(" producer " in f for f in health[group].findings), health[group].findings
    incidents = sorted((r.group, r.kind, r.cause, r.severity) for r in gold["incidents"].collect())
    assert incidents == [("GID_skew_orders", "PRODUCER", "HOT_QUEUE", "INFO"),
                         ("GID_skew_shop", "PRODUCER", "BROKER_STARVED", "WARN"),
                         ("GID_skew_shop", "PRODUCER", "QUEUE_COUNT_SKEW", "INFO")]
