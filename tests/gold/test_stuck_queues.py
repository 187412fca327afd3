"""gold.stuck_queues against the simulator's truth (issue 6): every finding, its window, offsets,
cause, flow control, redelivery risk and release — nothing more, nothing less."""

import datetime as dt
from pathlib import Path

import pytest

from jobs.simulate.run import simulate
from tests.gold.conftest import DAY, classic_days, expected, iso, run_layers

SCENARIOS = ["healthy", "duplicate-client-id", "topicb-subscription", "strategy-mismatch",
             "consumer-crash", "slow-message", "client-leaves"]
# The only consumer of a group crashes and nobody takes over: stopped commits, not a pin.
LONE_CRASH = Path(__file__).parent / "scenarios" / "lone-consumer-crash.toml"
SNAPSHOT = dt.timedelta(seconds=60)


def stuck_key(r):
    return (r["group"], r["topic"], r["broker_name"], r["queue_id"], r["owner"],
            r["stuck_since"], r["last_seen"], r["stuck_minutes"], r["committed_offset"],
            r["lag_end"], r["blocking_offset"], r["flow_controlled"], r["redelivery_risk"],
            r["released_at"] is None, r["root_cause"], r["severity"])


def found_rows(df):
    rows = []
    for r in df.collect():
        d = r.asDict(recursive=True)
        d["stuck_since"], d["last_seen"] = iso(d["stuck_since"]), iso(d["last_seen"])
        rows.append(d)
    return rows


def parse_iso(text):
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).replace(tzinfo=None)


def assert_equal_to_truth(df, truth):
    rows = found_rows(df)
    truth_rows = expected(truth, "expected_stuck_queues")
    assert sorted(map(stuck_key, rows)) == sorted(map(stuck_key, truth_rows))
    # released_at: the truth has the release instant; the data shows it within one snapshot
    by_queue = {(r["group"], r["topic"], r["broker_name"], r["queue_id"]): r for r in truth_rows}
    for r in rows:
        want = by_queue[(r["group"], r["topic"], r["broker_name"], r["queue_id"])]["released_at"]
        if want is not None:
            assert abs(r["released_at"] - parse_iso(want)) <= SNAPSHOT, r


@pytest.fixture(scope="module")
def lone_crash(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("lone-consumer-crash")
    truth = simulate(str(LONE_CRASH), DAY, root / "landing", seed=0, window=("13:50", "14:20"))
    return truth, run_layers(spark, root / "landing", root / "staging")


@pytest.mark.parametrize("scenario", classic_days(SCENARIOS))
def test_stuck_queues_equal_the_truth(scenario_day, scenario):
    truth, layers = scenario_day(scenario)
    assert_equal_to_truth(layers["gold"]["stuck_queues"], truth)


@pytest.mark.heavy_day  # a simulated day of its own
def test_lone_consumer_crash_is_no_owner_as_the_truth_says(lone_crash):
    truth, layers = lone_crash
    assert_equal_to_truth(layers["gold"]["stuck_queues"], truth)
    rows = layers["gold"]["stuck_queues"].collect()
    assert len(rows) == 2 and {r.root_cause for r in rows} == {"NO_OWNER"}
    # the crashed client's claims outlive it; the evidence names it
    assert all("not live" in r.evidence for r in rows)


@pytest.mark.heavy_day  # a simulated day of its own
def test_lone_consumer_crash_orphans_are_no_live_consumer_as_the_truth_says(lone_crash):
    """Nobody takes over: once the crashed channel expires no member is live (DESIGN.md §5);
    the gap is far longer than a transient rebalance gap."""
    truth, layers = lone_crash
    rows = layers["gold"]["orphaned_queues"].collect()
    want = expected(truth, "expected_orphaned_queues")
    assert sorted((r.queue_id, r.root_cause) for r in rows) == sorted(
        (w["queue_id"], w["root_cause"]) for w in want)
    assert {r.root_cause for r in rows} == {"NO_LIVE_CONSUMER"}


@pytest.mark.heavy_day
def test_slow_message_is_one_finding_with_the_blocking_offset_and_its_release(scenario_day):
    truth, layers = scenario_day("slow-message")
    (want,) = expected(truth, "expected_stuck_queues")
    (got,) = layers["gold"]["stuck_queues"].collect()
    assert got.root_cause == "SLOW_MESSAGE"
    assert got.blocking_offset == want["blocking_offset"] == got.committed_offset
    assert got.flow_controlled is True
    assert got.redelivery_risk == want["redelivery_risk"] > 0
    assert got.in_flight_span >= 2000
    assert abs(got.released_at - parse_iso(want["released_at"])) <= SNAPSHOT
    assert "send expire msg back" in got.evidence


@pytest.mark.heavy_day
def test_scenarios_with_stuck_queues_have_them(scenario_day):
    """Guards the equality tests above against an empty truth."""
    for scenario in ("duplicate-client-id", "topicb-subscription", "strategy-mismatch",
                     "slow-message"):
        truth, _ = scenario_day(scenario)
        assert expected(truth, "expected_stuck_queues"), scenario


@pytest.mark.parametrize("scenario", classic_days(SCENARIOS))
def test_no_stuck_finding_on_a_queue_with_lag_0_or_a_moving_offset(scenario_day, scenario):
    """Burrow's rules on the whole scenario: every finding's snapshots lag and share one offset."""
    _, layers = scenario_day(scenario)
    stuck = layers["gold"]["stuck_queues"].select(
        "cluster", "group", "topic", "broker_name", "queue_id", "stuck_since", "last_seen",
        "committed_offset")
    inside = (layers["silver"]["queue_offsets"]
              .join(stuck, on=["cluster", "group", "topic", "broker_name", "queue_id"],
                    how="inner")
              .where("ts >= stuck_since and ts <= last_seen"))
    bad = inside.where("lag = 0 or consumer_offset != committed_offset").count()
    assert bad == 0


@pytest.mark.heavy_day
def test_time_lag_is_0_at_lag_0_and_grows_with_the_pinned_offset(scenario_day):
    _, layers = scenario_day("slow-message")
    q = layers["silver"]["queue_offsets"]
    assert q.where("lag = 0 and time_lag_seconds != 0").count() == 0
    pinned = (q.where("topic = 'payments-slow' and broker_name = 'broker-b' and queue_id = 2 "
                      "and ts between '2025-11-21 10:01:00' and '2025-11-21 10:09:30'")
              .orderBy("ts").select("time_lag_seconds").collect())
    ages = [r.time_lag_seconds for r in pinned]
    assert len(ages) == 9 and all(b - a == pytest.approx(60.0) for a, b in zip(ages, ages[1:]))
    # the first pinned snapshot (10:01:15.530 on the seeds-morning day) less the store time of
    # the message before the hung one, which the broker gives as its lastTimestamp (10:00:24.664)
    assert ages[0] == pytest.approx(50.866, abs=0.001)
