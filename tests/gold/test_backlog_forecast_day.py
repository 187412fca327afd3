"""The built-in ``backlog-forecast`` day through bronze → silver → gold (DESIGN.md §5.4, issue 60).

Truth comes from the rates the scenario states (jobs/simulate/scenarios/backlog-forecast.toml),
computed here by hand, not from the rule: every topic has 4 queues written at 10 msgs/s each
(40/s round robin, no daily wave), each group's queues are ``backlog`` behind at 00:00 when its
clients start, and each queue drains at its owner's consume_rate shared over its queues. The
brokers of this cluster keep 4 h of commit log (``retention.clusters``), so the backlogs older
than the day's start are near deletion. One day built once per run (``shared_layers``); on
classic Spark it is a ``heavy_day`` (acceptance tier).
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os

import pytest

from jobs.settings import ClusterRetention, RetentionSettings, Settings
from tests.conftest import TEST_ENGINE
from tests.gold.conftest import DAY, shared_layers

pytestmark = pytest.mark.heavy_day

WINDOW = ("00:30", "02:00")
SETTINGS = Settings(retention=RetentionSettings(
    clusters={"rmq-prod": ClusterRetention(file_reserved_hours=4)}))
MIDNIGHT = dt.datetime.combine(DAY, dt.time())
PER_QUEUE = 10.0  # msgs/s into each queue (40/s over 4 queues)
CLEARED = 100  # forecast.cleared_lag


@pytest.fixture(scope="module")
def day(spark, tmp_path_factory):
    truth, layers = shared_layers(spark, tmp_path_factory, "backlog-forecast", "backlog-forecast",
                                  WINDOW, SETTINGS)
    return layers


@pytest.fixture(scope="module")
def forecast(day):
    return [r.asDict() for r in day["gold"]["backlog_forecast"].collect()]


def topic_row(forecast, group):
    rows = [r for r in forecast if r["group"] == group and r["queue_id"] is None]
    assert len(rows) == 1, (group, rows)
    return rows[0]


def queue_rows(forecast, group):
    return {r["queue_id"]: r for r in forecast if r["group"] == group and r["queue_id"] is not None}


def seconds_after_midnight(backlog, drain, arrival=PER_QUEUE):
    """When a queue ``backlog`` behind at 00:00 is down to the cleared lag: hand calculation."""
    return MIDNIGHT + dt.timedelta(seconds=(backlog - CLEARED) / (drain - arrival))


def assert_within_10_percent(row, actual):
    """``clears_at`` within ±10 % of the time from the forecast to the actual clear."""
    assert row["clears_at"] is not None, row
    ahead = (actual - row["as_of"]).total_seconds()
    assert ahead > 0
    assert abs((row["clears_at"] - actual).total_seconds()) <= 0.1 * ahead, (row, actual)


def test_constant_drain_clears_when_the_stated_rates_say(forecast):
    # 200000 behind, 30/s per queue against 10/s: 9995 s after midnight, 02:46:35
    row = topic_row(forecast, "GID_drain")
    assert row["trend"] == "DRAINING" and row["no_clear_reason"] is None
    assert_within_10_percent(row, seconds_after_midnight(200_000, 30.0))
    for queue in queue_rows(forecast, "GID_drain").values():
        assert_within_10_percent(queue, seconds_after_midnight(200_000, 30.0))


def test_step_change_is_forecast_from_the_rates_after_it(forecast):
    # 150000 behind, 15/s per queue; 10/s arrive until 00:55, nothing after: 5/s net for 3300 s,
    # then 15/s net for the rest. A rate over the whole day (00:30-02:00) would be 11.7/s net.
    left_at_step = 150_000 - 5.0 * 3300
    actual = MIDNIGHT + dt.timedelta(seconds=3300 + (left_at_step - CLEARED) / 15.0)
    row = topic_row(forecast, "GID_step")
    assert row["arrival_rate"] == 0.0 and row["trend"] == "DRAINING"
    assert_within_10_percent(row, actual)


def test_the_slow_queue_decides_the_group(forecast):
    # three clients drain 40/s (one queue each), the fourth, the last client id, 20/s: under AVG
    # it holds queue 3, which clears at (250000 - 100) / 10 s; the others at / 30 s
    row = topic_row(forecast, "GID_slow")
    assert row["deciding_queue"] == "broker-a/3"
    assert_within_10_percent(row, seconds_after_midnight(250_000, 20.0))
    queues = queue_rows(forecast, "GID_slow")
    assert sorted(queues) == [0, 1, 2, 3]
    for queue_id in (0, 1, 2):
        assert_within_10_percent(queues[queue_id], seconds_after_midnight(250_000, 40.0))
    assert row["clears_at"] == max(q["clears_at"] for q in queues.values())


def test_a_growing_backlog_will_not_clear(day, forecast):
    # 5/s per queue against 10/s
    row = topic_row(forecast, "GID_growing")
    assert (row["trend"], row["clears_at"], row["no_clear_reason"]) == ("GROWING", None, "GROWING")
    assert abs(row["drain_rate"] - 20.0) < 1 and abs(row["arrival_rate"] - 40.0) < 2
    findings = health_findings(day, "GID_growing")
    assert [f for f in findings if "BACKLOG_GROWING" in f] and \
        all(f.startswith("WARN") for f in findings if "backlog" in f)


def last_lines(landing, group):
    """Each queue's last offsets line of ``group`` as the collector wrote it."""
    folder = landing / "offsets" / f"date={DAY}"
    last = {}
    for path in sorted(folder.iterdir()):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as fh:
            for line in fh:
                record = json.loads(line)
                if record["group"] == group and not record["topic"].startswith("%RETRY%"):
                    key = record["queue_id"]
                    if key not in last or record["ts"] > last[key]["ts"]:
                        last[key] = record
    return last


def test_messages_lost_exactly_where_the_consumer_offset_is_below_min_offset(
        day, forecast, tmp_path_factory):
    # the ledger topic's files hold the last 50000 messages per queue; GID_lost is 80000 behind
    # and drains as fast as messages arrive: about 30000 per queue are gone. GID_ledger_ok keeps up.
    lost = {(r["group"], r["queue_id"]): r["lost_messages"] for r in forecast
            if r["lost_messages"]}
    assert set(lost) == {("GID_lost", q) for q in range(4)} | {("GID_lost", None)}
    landing = day_landing(tmp_path_factory)
    for queue_id, line in last_lines(landing, "GID_lost").items():
        assert lost[("GID_lost", queue_id)] == line["min_offset"] - line["consumer_offset"]
        assert abs(lost[("GID_lost", queue_id)] - 30_000) < 0.05 * 30_000
    assert lost[("GID_lost", None)] == sum(lost[("GID_lost", q)] for q in range(4))
    lines = [f for f in health_findings(day, "GID_lost") if "MESSAGES_LOST" in f]
    assert len(lines) == 1 and lines[0].startswith("CRITICAL") and \
        str(lost[("GID_lost", None)]) in lines[0]
    assert topic_row(forecast, "GID_lost")["trend"] == "FLAT"
    # no min_offset reported for the orders topic: unknown, not 0
    assert topic_row(forecast, "GID_drain")["lost_messages"] is None


def day_landing(tmp_path_factory):
    """The landing ``shared_layers`` simulated (``shared_dir``'s folder of the key)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    return base / "shared" / f"layers-{TEST_ENGINE}-backlog-forecast" / "landing"


def test_loss_at_is_the_first_delete_hour_after_the_retention(day, forecast):
    # 4 h of commit log, deleted at 04:00 UTC: a backlog stored before 00:00 goes at 04:00 today
    # (within 6 h: CRITICAL); one stored after 00:00 lives until 04:00 tomorrow (no finding)
    today, tomorrow = MIDNIGHT + dt.timedelta(hours=4), MIDNIGHT + dt.timedelta(hours=28)
    expected = {"GID_step": today, "GID_slow": today, "GID_lost": today,
                "GID_drain": tomorrow, "GID_growing": tomorrow}
    assert {g: topic_row(forecast, g)["loss_at"] for g in expected} == expected
    for group, at in expected.items():
        risk = [f for f in health_findings(day, group) if "LOSS_RISK" in f]
        assert [f.split()[0] for f in risk] == (["CRITICAL"] if at == today else []), risk
    # the day's last snapshot is at 01:59:15.7 (second 15 of the minute, plus the collector's
    # run): 2 h 00 min 44 s before 04:00, read in hours and minutes
    assert "in 2 h 01 min" in next(f for f in health_findings(day, "GID_step") if "LOSS_RISK" in f)


def test_nothing_on_caught_up_quiet_or_broadcast_groups(day, forecast):
    quiet = {"GID_caught_up", "GID_ledger_ok", "GID_quiet", "GID_bcast"}
    assert not [r for r in forecast if r["group"] in quiet]
    # the broadcast group's broker lag grows all day (its offsets live on the clients)
    health = {r["group"]: r for r in day["gold"]["group_health"].collect()}
    assert health["GID_bcast"]["max_lag"] is None or health["GID_bcast"]["max_lag"] > 0
    for group in quiet:
        assert not [f for f in health[group]["findings"] if " backlog " in f], group


def health_findings(day, group):
    rows = day["gold"]["group_health"].where(f"`group` = '{group}'").collect()
    return list(rows[0]["findings"]) if rows else []


def test_every_column_of_the_forecast_has_a_comment(day):
    from schemas.lake_comments import column_comment

    columns = day["gold"]["backlog_forecast"].columns
    assert [c for c in columns if not column_comment("gold.backlog_forecast", c)] == []
