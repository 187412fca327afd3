"""The built-in ``hot-queue-lag`` scenario through bronze → silver → gold (DESIGN.md §5.2, issue 56):
three hash-keyed topics with one hot queue each, whose consumers commit every 5 s while producers
keep writing, so the lags they keep up with wobble by tens of messages between snapshots. HOT_QUEUE
is WARN only where the hot queue's owner falls behind and the other queues only wobble (GID_clicks);
INFO where every queue grows (GID_views, slow consumers) and where every lag only wobbles (GID_feed)."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from jobs.settings import Settings
from jobs.simulate.run import simulate
from tests.gold.conftest import DAY, run_layers

# classic Spark: in the acceptance tier (`make test-acceptance`); the rule's cases run on both
# engines in tests/gold/test_producer_load.py
pytestmark = pytest.mark.heavy_day
# 45 minutes of records: a 30-minute hot window fits (the default 60 would need a longer day)
SETTINGS = Settings(producer={"hot_min_minutes": 30})
SEVERITY = {"clicks-keyed": "WARN", "views-keyed": "INFO", "feed-keyed": "INFO"}


@pytest.fixture(scope="module")
def lag_day(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("hot-queue-lag")
    truth = simulate("hot-queue-lag", DAY, root / "landing", seed=0, window=("10:00", "10:45"))
    return truth, run_layers(spark, root / "landing", root / "staging", SETTINGS)


def test_hot_queue_severity_is_the_truths(lag_day):
    truth, layers = lag_day
    rows = layers["gold"]["producer_findings"].collect()
    got = sorted((r.finding, r.topic, r.broker_name, r.queue_id, r.severity, tuple(r.groups)) for r in rows)
    want = sorted((e["finding"], e["topic"], e["broker_name"], e["queue_id"], e["severity"], tuple(e["groups"]))
                  for e in truth["expected_producer_findings"])
    assert got == want
    assert {r.topic: r.severity for r in rows if r.finding == "HOT_QUEUE"} == SEVERITY


def test_the_lags_beside_the_hot_queue_wobble(lag_day):
    """The day has the noise the rule must see through: every other queue the consumers keep up
    with rises above its lag at the window start by at most tens of messages, and on the topic
    whose hot queue falls behind some end above their start — an end-to-end reading of "no
    other queue grows" took that for growth and kept the finding at INFO."""
    _, layers = lag_day
    hot = {(r.topic, r.broker_name, r.queue_id) for r in layers["gold"]["producer_findings"].collect()}
    offsets = layers["silver"]["queue_offsets"].where(F.col("group").isin("GID_clicks", "GID_feed"))
    per_queue = (offsets.groupBy("group", "topic", "broker_name", "queue_id")
                 .agg(F.min_by("lag", "ts").alias("start"), F.max_by("lag", "ts").alias("end"),
                      F.max("lag").alias("peak")).collect())
    others = [r for r in per_queue if (r.topic, r.broker_name, r.queue_id) not in hot
              and not r.topic.startswith("%RETRY%")]
    assert len(others) == 14
    assert all(0 < r.peak - r.start <= 60 for r in others if r.peak > r.start)
    assert max(r.peak - r.start for r in others) >= 10
    assert any(r.end > r.start for r in others if r.group == "GID_clicks")
    [clicks_hot] = [r for r in per_queue if (r.topic, r.broker_name, r.queue_id) in hot and r.group == "GID_clicks"]
    assert clicks_hot.peak - clicks_hot.start > 10_000


def test_only_the_group_behind_on_the_hot_queue_warns_for_it(lag_day):
    _, layers = lag_day
    health = {r.group: r for r in layers["gold"]["group_health"].collect()}
    producer = {g: [f for f in h.findings if " producer " in f] for g, h in health.items()}
    assert [f.split(" ", 1)[0] for f in producer["GID_clicks"]] == ["WARN"]
    assert [f.split(" ", 1)[0] for f in producer["GID_views"] + producer["GID_feed"]] == ["INFO", "INFO"]

