"""gold.rebalance_events, gold.strategy_whatif and gold.group_health (issue 7): scenario days
against the simulator's truth and the Java vectors, and hand-built frames."""

import datetime as dt
import json
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from jobs.gold.group_health import build_group_health
from jobs.gold.rebalance_events import (
    RebalanceRules,
    assignment_fingerprints,
    assignment_observations,
    ownership_changes,
)
from jobs.gold.strategy_whatif import build_strategy_whatif
from tests.gold.conftest import classic_days, expected, iso
from tests.pipeline.assertions import comparable
from tests.rules.frames import with_prev_ts

VECTORS = Path(__file__).resolve().parents[1] / "data" / "vectors" / "allocation_vectors_public.jsonl"
EVENT_SCENARIOS = ["client-leaves", "topicb-subscription", "healthy", "consumer-crash"]

ORPHANED = ("cluster string, group string, topic string, broker_name string, queue_id int, "
            "first_seen timestamp, last_seen timestamp, orphaned_minutes double, lag_start long, "
            "lag_end long, root_cause string, would_be_owner string, evidence string, "
            "severity string, date date")
DOUBLE_OWNED = ("cluster string, group string, topic string, broker_name string, queue_id int, "
                "owners array<string>, first_seen timestamp, last_seen timestamp, "
                "minutes double, root_cause string, evidence string, severity string, date date")
STUCK = ("cluster string, group string, topic string, broker_name string, queue_id int, "
         "owner string, stuck_since timestamp, last_seen timestamp, stuck_minutes double, "
         "committed_offset long, lag_end long, blocking_offset long, in_flight_span long, "
         "flow_controlled boolean, redelivery_risk long, released_at timestamp, "
         "root_cause string, evidence string, severity string, date date")
EVENTS = ("topic string, ts timestamp, trigger string, clients_before int, clients_after int, "
          "queues_moved long, flaps_per_hour double, evidence string, cluster string, "
          "group string, date date")
OFFSETS = ("cluster string, group string, topic string, broker_name string, queue_id int, "
           "ts timestamp, lag long, date date")
HEALTH_OFFSETS = ("cluster string, group string, topic string, broker_name string, queue_id int, "
                  "ts timestamp, lag long, time_lag_seconds double, date date")
HEALTH = ("status string, orphaned_queues int, double_owned_queues int, stuck_queues int, "
          "max_lag long, max_time_lag_seconds double, rebalances int, findings array<string>, "
          "sources array<string>, cluster string, group string, "
          "date date")


def assert_frames(actual, expected_df):
    assert_df_equality(comparable(actual), comparable(expected_df), ignore_row_order=True,
                       ignore_nullable=True, ignore_column_order=False)


# --- scenario days against the truth -------------------------------------------------------------

def event_key(r):
    return (r["group"], r["topic"], r["ts"], r["trigger"], r["clients_before"],
            r["clients_after"], r["queues_moved"], r.get("flaps_per_hour"))


def found_events(rebalance_events_df):
    """``event_key`` of every gold.rebalance_events row, ``ts`` as the truth writes it."""
    return [event_key({**r.asDict(), "ts": iso(r.ts)}) for r in rebalance_events_df.collect()]


@pytest.mark.parametrize("scenario", classic_days(EVENT_SCENARIOS))
def test_rebalance_events_equal_the_truth(scenario_day, scenario):
    truth, layers = scenario_day(scenario)
    found = found_events(layers["gold"]["rebalance_events"])
    assert sorted(found) == sorted(event_key(r) for r in expected(truth, "expected_rebalance_events"))


@pytest.mark.heavy_day
def test_client_leaves_reports_the_leave_with_8_queues_moved(scenario_day):
    _, layers = scenario_day("client-leaves")
    [row] = layers["gold"]["rebalance_events"].where("topic = 'TopicTest'").collect()
    assert (row.trigger, row.clients_before, row.clients_after, row.queues_moved) == (
        "CLIENT_LEFT", 4, 3, 8)
    assert row.evidence.startswith("10.0.0.2@4102#1700000000002 unregistered")


@pytest.mark.heavy_day
def test_topicb_storm_is_subscription_changed_flapping_with_its_frequency(scenario_day):
    _, layers = scenario_day("topicb-subscription")
    [row] = layers["gold"]["rebalance_events"].collect()
    assert (row.topic, row.trigger, row.queues_moved, row.flaps_per_hour) == (
        "billing-TopicB", "SUBSCRIPTION_CHANGED", 0, 240.0)


@pytest.mark.heavy_day
def test_healthy_day_has_no_rebalance_events(scenario_day):
    _, layers = scenario_day("healthy")
    assert layers["gold"]["rebalance_events"].count() == 0


WHATIF_COLUMNS = ["rebalances", "queues_moved", "max_queues_per_client", "min_queues_per_client",
                  "orphaned_queue_minutes"]


@pytest.mark.heavy_day
def test_client_leaves_whatif_equals_the_truth(scenario_day):
    truth, layers = scenario_day("client-leaves")
    found = {(r.group, r.topic, r.strategy): r.asDict()
             for r in layers["gold"]["strategy_whatif"].collect()}
    rows = expected(truth, "expected_strategy_whatif")
    assert set(found) == {(r["group"], r["topic"], r["strategy"]) for r in rows}
    for r in rows:
        got = found[(r["group"], r["topic"], r["strategy"])]
        for column in WHATIF_COLUMNS:
            if r[column] is not None:
                assert got[column] == r[column], (r["topic"], r["strategy"], column)


@pytest.mark.heavy_day
def test_client_leaves_whatif_matches_the_java_vectors(scenario_day):
    """Seed 003's table: AVG moves 8, AVG_BY_CIRCLE 18, CONSISTENT_HASH (10 vnodes) 6; the
    per-client sizes are those RocketMQ's own classes returned before and after the leave."""
    _, layers = scenario_day("client-leaves")
    cases = [json.loads(line) for line in VECTORS.read_text().splitlines()]
    leave = {(c["strategy"], c["params"]["phase"]): c for c in cases
             if c["params"]["category"] == "client_leaves"
             and c["params"].get("virtual_nodes", 10) == 10}
    found = {r.strategy: r for r in layers["gold"]["strategy_whatif"]
             .where("topic = 'TopicTest'").collect()}
    for strategy in ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"):
        after = leave[(strategy, "after")]
        sizes = [len(r["allocated"]) for phase in ("before", "after")
                 for r in leave[(strategy, phase)]["results"] if r["current_cid_index"] is not None]
        assert found[strategy].queues_moved == after["derived"]["client_leaves"]["owner_changed_count"]
        assert (found[strategy].max_queues_per_client, found[strategy].min_queues_per_client) == (
            max(sizes), min(sizes))
    assert (found["AVG"].queues_moved, found["CONSISTENT_HASH"].queues_moved) == (8, 6)


@pytest.mark.heavy_day
def test_topicb_no_strategy_owns_the_queues_handed_to_the_member_without_b(scenario_day):
    """t2 never runs B's allocation, so its AVG slice (queues 8-15) is unowned whenever the
    group has live members; every strategy leaves some of B unowned."""
    _, layers = scenario_day("topicb-subscription")
    span = (layers["silver"]["member_context"]
            .agg(((F.unix_millis(F.max("ts")) - F.unix_millis(F.min("ts"))) / 60000.0)
                 .alias("m")).first().m)
    found = {r.strategy: r for r in layers["gold"]["strategy_whatif"]
             .where("topic = 'billing-TopicB'").collect()}
    assert found["AVG"].orphaned_queue_minutes == pytest.approx(8 * span)
    assert all(r.orphaned_queue_minutes > 0 for r in found.values())


def _empty_stuck(spark):
    return spark.createDataFrame([], STUCK)


@pytest.mark.heavy_day
def test_healthy_groups_are_ok(scenario_day, spark):
    _, layers = scenario_day("healthy")
    g = layers["gold"]
    health = build_group_health(g["orphaned_queues"], g["double_owned_queues"],
                                _empty_stuck(spark), g["rebalance_events"],
                                layers["silver"]["queue_offsets"], 10).collect()
    assert health and {(r.status, r.rebalances, tuple(r.findings)) for r in health} == {
        ("OK", 0, ())}


@pytest.mark.heavy_day
def test_topicb_group_is_critical_with_the_storm_among_its_findings(scenario_day, spark):
    _, layers = scenario_day("topicb-subscription")
    g = layers["gold"]
    [row] = build_group_health(g["orphaned_queues"], g["double_owned_queues"],
                               _empty_stuck(spark), g["rebalance_events"],
                               layers["silver"]["queue_offsets"], 10).collect()
    assert (row.status, row.orphaned_queues, row.rebalances) == ("CRITICAL", 8, 1)
    assert row.findings == [
        "CRITICAL orphaned billing-TopicB ×8 SUBSCRIPTION_INCONSISTENT (up to 39.0 min)",
        "WARN flapping billing-TopicB SUBSCRIPTION_CHANGED 240.0/h"]


# --- hand-built frames ---------------------------------------------------------------------------

DAY = dt.date(2025, 11, 21)
T0 = dt.datetime(2025, 11, 21, 10, 0, 0)
T1 = T0 + dt.timedelta(minutes=1)
T2 = T0 + dt.timedelta(minutes=2)


def _offsets(spark, groups, null_lag_group=None):
    """One snapshot per group; its oldest unconsumed message waited 1.5 s per message of lag."""
    rows = [("c1", g, "t", "b", 0, T0, lag, lag * 1.5, DAY) for g, lag in groups]
    if null_lag_group:
        rows.append(("c1", null_lag_group, "t", "b", 1, T0, None, None, DAY))
    return spark.createDataFrame(rows, HEALTH_OFFSETS)


def test_group_health_status_is_the_highest_severity_and_info_counts_as_ok(spark):
    orphaned = spark.createDataFrame([
        ("c1", "g-crit", "tb", "b", 8, T0, T2, 39.0, 10, 20000, "SUBSCRIPTION_INCONSISTENT",
         "x", "e", "CRITICAL", DAY),
        ("c1", "g-crit", "tb", "b", 9, T0, T2, 12.0, 10, 20, "SUBSCRIPTION_INCONSISTENT",
         "x", "e", "CRITICAL", DAY),
        ("c1", "g-info", "t", "b", 1, T0, T1, 3.0, 5, 7, "REBALANCE_GAP", None, "e", "INFO", DAY),
    ], ORPHANED)
    double = spark.createDataFrame([
        ("c1", "g-crit", "ta", "b", 0, ["a", "a"], T0, T2, 2.0, "DUPLICATE_CLIENT_ID", "e",
         "WARN", DAY)], DOUBLE_OWNED)
    stuck = spark.createDataFrame([
        ("c1", "g-crit", "tb", "b", 8, None, T0, T2, 39.0, 5, 20000, None, None, False, 0, None,
         "NO_OWNER", "e", "CRITICAL", DAY)], STUCK)
    events = spark.createDataFrame([
        ("t", T1, "CLIENT_LEFT", 4, 3, 8, None, "e", "c1", "g-info", DAY),
        ("tb", T0, "SUBSCRIPTION_CHANGED", 2, 2, 0, 240.0, "e", "c1", "g-flap", DAY),
    ], EVENTS)
    offsets = _offsets(spark, [("g-crit", 20000), ("g-info", 7), ("g-flap", 0), ("g-ok", 3)],
                       null_lag_group="g-ok")
    actual = build_group_health(orphaned, double, stuck, events, offsets, 10)
    expected_df = spark.createDataFrame([
        ("CRITICAL", 2, 1, 1, 20000, 30000.0, 0, [
            "CRITICAL orphaned tb ×2 SUBSCRIPTION_INCONSISTENT (up to 39.0 min)",
            "CRITICAL stuck tb ×1 NO_OWNER (up to 39.0 min)",
            "WARN double-owned ta ×1 DUPLICATE_CLIENT_ID (up to 2.0 min)"],
         ["offsets"], "c1", "g-crit", DAY),
        ("OK", 1, 0, 0, 7, 10.5, 1, [
            "INFO orphaned t ×1 REBALANCE_GAP (up to 3.0 min)",
            "INFO rebalance t CLIENT_LEFT at 10:01:00 moved 8"], ["offsets"], "c1", "g-info", DAY),
        ("WARN", 0, 0, 0, 0, 0.0, 1, ["WARN flapping tb SUBSCRIPTION_CHANGED 240.0/h"],
         ["offsets"], "c1", "g-flap", DAY),
        ("OK", 0, 0, 0, 3, 4.5, 0, [], ["offsets"], "c1", "g-ok", DAY),
    ], HEALTH)
    assert_frames(actual, expected_df)


def test_group_health_with_an_empty_stuck_frame_counts_no_stuck_queues(spark):
    orphaned = spark.createDataFrame([
        ("c1", "g", "t", "b", 3, T0, T2, 2.0, 10, 20, "NO_LIVE_CONSUMER", None, "e", "WARN", DAY)],
        ORPHANED)
    actual = build_group_health(orphaned, spark.createDataFrame([], DOUBLE_OWNED),
                                _empty_stuck(spark), spark.createDataFrame([], EVENTS),
                                _offsets(spark, [("g", 20)]), 10)
    expected_df = spark.createDataFrame([
        ("WARN", 1, 0, 0, 20, 30.0, 0, ["WARN orphaned t ×1 NO_LIVE_CONSUMER (up to 2.0 min)"],
         ["offsets"], "c1", "g", DAY)], HEALTH)
    assert_frames(actual, expected_df)


def test_group_health_flags_churn_and_cuts_the_findings_list(spark):
    events = spark.createDataFrame([
        ("t", T0 + dt.timedelta(minutes=k), "FLAPPING", 3, 3, 1, None, "e", "c1", "g", DAY)
        for k in range(3)], EVENTS)
    actual = build_group_health(spark.createDataFrame([], ORPHANED),
                                spark.createDataFrame([], DOUBLE_OWNED), _empty_stuck(spark),
                                events, _offsets(spark, [("g", 0)]), 3, max_findings=2)
    expected_df = spark.createDataFrame([
        ("WARN", 0, 0, 0, 0, 0.0, 3, ["WARN churn 3 rebalances",
                                 "INFO rebalance t FLAPPING at 10:00:00 moved 1", "+2 more"],
         ["offsets"], "c1", "g", DAY)], HEALTH)
    assert_frames(actual, expected_df)


MEMBERS = ("cluster string, group string, ts timestamp, client_id string, processes int, "
           "topics array<string>, strategy string, date date")
WHATIF = ("topic string, strategy string, rebalances int, queues_moved long, "
          "max_queues_per_client int, min_queues_per_client int, orphaned_queue_minutes double, "
          "max_client_load_share double, cluster string, group string, date date")
QUEUE_LOAD = ("date date, cluster string, topic string, broker_name string, queue_id int, hour int, "
              "messages_in long, share double")


def test_whatif_replays_machine_room_nearby_when_rooms_are_known(spark):
    """room1@broker-a and room2@broker-b, two queues each; room2's only consumer leaves. NEARBY
    keeps room1's queues where they were and hands room2's (now an orphan room) to all of
    cidAll: 2 moved. AVG over [a0, a1, b0, b1]: c1 a0-a1, c2 b0, c3 b1 → c1 a0-a1, c2 b0-b1:
    1 moved. The member with unknown subscriptions (null topics) counts as subscribing."""
    c1, c2, c3 = "room1-10.0.0.1@1", "room1-10.0.0.2@2", "room2-10.0.0.3@3"
    queues = [("room1@broker-a", 0), ("room1@broker-a", 1), ("room2@broker-b", 0),
              ("room2@broker-b", 1)]
    offsets = with_prev_ts(spark.createDataFrame(
        [("c1", "g", "t", b, q, ts, 0, DAY) for ts in (T0, T1, T2) for b, q in queues], OFFSETS))
    members = spark.createDataFrame(
        [("c1", "g", T0, c3, 1, None, "AVG", DAY)]
        + [("c1", "g", ts, c, 1, ["t"], "AVG", DAY) for ts in (T0, T1, T2) for c in (c1, c2)],
        MEMBERS)
    actual = (build_strategy_whatif(offsets, members)
              .where(F.col("strategy").isin("AVG", "MACHINE_ROOM_NEARBY-AVG")))
    expected_df = spark.createDataFrame([
        ("t", "AVG", 1, 1, 2, 1, 0.0, None, "c1", "g", DAY),
        ("t", "MACHINE_ROOM_NEARBY-AVG", 1, 2, 2, 1, 0.0, None, "c1", "g", DAY),
    ], WHATIF)
    assert_frames(actual, expected_df)
    # with the day's load (a0 60, a1 20, b0 10, b1 10 messages), the busiest client is c1: under
    # AVG it keeps a0-a1 in both states (80 %); under NEARBY it has a0 (60 %), then a0 and b0
    # (70 %), each state one minute of the two: 65 %
    load = spark.createDataFrame(
        [(DAY, "c1", "t", b, q, 10, n, None) for (b, q), n in zip(queues, (60, 20, 10, 10))], QUEUE_LOAD)
    shares = {r.strategy: r.max_client_load_share
              for r in build_strategy_whatif(offsets, members, queue_load_df=load).collect()}
    assert shares["AVG"] == pytest.approx(0.8) and shares["MACHINE_ROOM_NEARBY-AVG"] == pytest.approx(0.65)


def test_whatif_has_no_nearby_row_without_rooms(spark):
    """Also the regression test of the replay's sub-call nullability (spark_replay._sub_call):
    Sail 0.7 panicked on these aggregate-built states before the cast."""
    offsets = with_prev_ts(spark.createDataFrame([("c1", "g", "t", "broker-a", 0, T0, 0, DAY)],
                                                 OFFSETS))
    members = spark.createDataFrame([("c1", "g", T0, "10.0.0.1@1", 1, ["t"], "AVG", DAY)],
                                    MEMBERS)
    strategies = sorted(r.strategy for r in build_strategy_whatif(offsets, members).collect())
    assert strategies == ["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"]


LOG_OBSERVATIONS = ("event string, `group` string, client_id string, topic string, ts timestamp, "
                    "queues array<struct<topic:string,broker_name:string,queue_id:int>>, "
                    "mq_all_size int, _source_file string, _line_no long")
RUNNING_OBSERVATIONS = ("cluster string, `group` string, client_id string, ts timestamp, "
                        "mq_table array<struct<topic:string,broker_name:string,queue_id:int,"
                        "dropped:boolean>>, subscriptions array<struct<topic:string>>, "
                        "_source_file string, _line_no long")
ROUNDS = "cluster string, `group` string, ts timestamp, ids array<string>"
FULL_ROUNDS = ("cluster string, `group` string, ts timestamp, cid_all array<string>, "
               "ids array<string>, stale_ids array<string>, stale_channel_ids array<string>, "
               "unheard_ids array<string>, "
               "subs array<struct<client_id:string,topics:array<string>>>")


def test_an_overlapping_log_line_and_a_snapshot_of_the_same_millisecond_are_one_observation(spark):
    """A collector that ships a ``rebalanced result changed`` line twice (two files overlap), and
    a running-info snapshot taken in the same millisecond: one observation of the client's set
    (the log line: it names the change). Two would list the client twice in the round's
    assignment and move its queues from "c1" to "c1,c1" — a rebalance that never happened."""
    q = lambda n: ("t", "broker-a", n)  # noqa: E731
    line = ("REBALANCE_RESULT", "g", "c1", "t", T0, [q(0), q(1)], 4)
    logs = spark.createDataFrame([(*line, "a.log", 5), (*line, "b.log", 2)], LOG_OBSERVATIONS)
    running = spark.createDataFrame([
        ("k", "g", "c1", T0, [(*q(0), False)], [("t",)], "ri.json", 1),  # same ms: the log wins
        ("k", "g", "c2", T1, [(*q(2), False), (*q(3), False)], [("t",)], "ri.json", 2),
    ], RUNNING_OBSERVATIONS)
    connections = spark.createDataFrame([("k", "g", "c1"), ("k", "g", "c2")],
                                        "cluster string, `group` string, client_id string")
    observations = assignment_observations(logs, running, connections)
    assert sorted((r.client_id, r.ts, len(r.queues), r.mq_all_size)
                  for r in observations.collect()) == [("c1", T0, 2, 4), ("c2", T1, 2, None)]

    # c2 is first observed at T1: the round at T0 is incomplete, the one at T1 counts it
    rounds = spark.createDataFrame([("k", "g", T0, ["c1", "c2"]), ("k", "g", T1, ["c1", "c2"])],
                                   ROUNDS)
    rows = {r.ts: r for r in assignment_fingerprints(rounds, observations).collect()}
    assert rows[T0]._complete == 0 and rows[T1]._complete == 1

    # no fault: c1's next snapshot (T2) holds the same two queues, so nothing moved
    later = spark.createDataFrame(
        [("k", "g", "c1", T2, [(*q(0), False), (*q(1), False)], [("t",)], "ri.json", 3)],
        RUNNING_OBSERVATIONS)
    observations = assignment_observations(logs, running.unionByName(later), connections)
    members = ["c1", "c2"]
    rounds = spark.createDataFrame(
        [("k", "g", ts, members, members, [], [], [], [(c, ["t"]) for c in members])
         for ts in (T1, T2)],
        FULL_ROUNDS)
    changes = ownership_changes(rounds, observations,
                                RebalanceRules(max_snapshot_gap_seconds=300,
                                               heartbeat_interval_seconds=30))
    assert changes.collect() == []


def _running(spark, sets_at):
    """Running-info observations: ``sets_at`` = [(ts, client_id, [queue ids of topic t])]."""
    return spark.createDataFrame(
        [("k", "g", c, ts, [("t", "broker-a", n, False) for n in ids], [("t",)], "ri.json", i)
         for i, (ts, c, ids) in enumerate(sets_at)], RUNNING_OBSERVATIONS)


def _changes(spark, sets_at, round_times=(), rounds=None, clients=("c1", "c2")):
    """``ownership_changes`` of ``clients`` with the running-info ``sets_at``, over ``rounds``
    (``FULL_ROUNDS`` rows), or over rounds at ``round_times`` where c1 and c2 are listed once."""
    connections = spark.createDataFrame([("k", "g", c) for c in clients],
                                        "cluster string, `group` string, client_id string")
    logs = spark.createDataFrame([], LOG_OBSERVATIONS)
    observations = assignment_observations(logs, _running(spark, sets_at), connections)
    members = ["c1", "c2"]
    if rounds is None:
        rounds = [("k", "g", ts, members, members, [], [], [], [(c, ["t"]) for c in members])
                  for ts in round_times]
    return ownership_changes(spark.createDataFrame(rounds, FULL_ROUNDS), observations,
                             RebalanceRules(max_snapshot_gap_seconds=300,
                                            heartbeat_interval_seconds=30)).collect()


def test_two_members_that_swap_their_sets_are_a_rebalance_of_every_swapped_queue(spark):
    """The same sets under other ids: each member's fingerprint part is of its id and its set,
    so a swap changes the round's fingerprint (a fingerprint of the sets alone would not)."""
    t3 = T2 + dt.timedelta(seconds=30)
    rows = _changes(spark, [(T0, "c1", [0, 1]), (T0, "c2", [2, 3]),
                            (T2, "c1", [2, 3]), (T2, "c2", [0, 1])], [T1, t3])
    assert [(r.trigger, r.queues_moved, r.clients_before, r.clients_after) for r in rows] == [
        ("FLAPPING", 4, 2, 2)]


@pytest.mark.parametrize("stale_channel, unheard, trigger, evidence", [
    (["c2"], [], "CLIENT_EXPIRED", "a dead channel behind c2 (a restart or reconnect"),
    ([], ["c1", "c2"], "CLIENT_LEFT", "a channel behind c2 left (a restart or reconnect that kept "
     "its id; the connection records carry no heartbeat times: an expiry after a crash or a "
     "clean unregister, unknown)"),
    ([], [], "CLIENT_LEFT", "a channel behind c2 unregistered while the id stayed"),
])
def test_a_channel_that_leaves_an_id_is_expired_only_when_it_had_gone_silent(
        spark, stale_channel, unheard, trigger, evidence):
    """c2 is listed twice (a restart that kept its id), so cidAll has three entries and queue 3
    falls to the second c2, which pulls nothing; when that channel goes, c2 takes queue 3.
    Silent before: the broker expired it. Still heartbeating: it unregistered. Without heartbeat
    times (mqadmin's consumerConnection) either: unknown, said so — before, FLAPPING."""
    t3 = T2 + dt.timedelta(seconds=30)
    subs = [(c, ["t"]) for c in ("c1", "c2")]
    (row,) = _changes(
        spark, [(T0, "c1", [0, 1]), (T0, "c2", [2]), (T2, "c2", [2, 3])], rounds=[
            ("k", "g", T1, ["c1", "c2", "c2"], ["c1", "c2"], [], stale_channel, unheard, subs),
            ("k", "g", t3, ["c1", "c2"], ["c1", "c2"], [], [], unheard, subs)])
    assert (row.trigger, row.queues_moved, row.clients_before, row.clients_after) == (
        trigger, 1, 3, 2)
    assert row.evidence.startswith(evidence), row.evidence


@pytest.mark.parametrize("stale, unheard, trigger, evidence", [
    (["c2"], [], "CLIENT_EXPIRED", "c2 stopped heartbeating and was expired by the broker; "),
    ([], ["c1", "c2"], "CLIENT_LEFT", "c2 left (the connection records carry no heartbeat times: "
     "an expiry after a crash or a clean unregister, unknown); "),
    ([], [], "CLIENT_LEFT", "c2 unregistered (clean shutdown); "),
])
def test_an_id_that_leaves_without_heartbeat_times_is_not_called_a_clean_shutdown(
        spark, stale, unheard, trigger, evidence):
    """Evidence, not absence: a departed id whose records carried no heartbeat time may have
    crashed and been expired, or shut down cleanly; before, it read as a clean shutdown."""
    t3 = T2 + dt.timedelta(seconds=30)
    (row,) = _changes(
        spark, [(T0, "c1", [0, 1]), (T0, "c2", [2, 3]), (T2, "c1", [0, 1, 2, 3])], rounds=[
            ("k", "g", T1, ["c1", "c2"], ["c1", "c2"], stale, [], unheard,
             [("c1", ["t"]), ("c2", ["t"])]),
            ("k", "g", t3, ["c1"], ["c1"], [], [], unheard[:1], [("c1", ["t"])])])
    assert (row.trigger, row.queues_moved, row.clients_before, row.clients_after) == (
        trigger, 2, 2, 1)
    assert row.evidence.startswith(evidence), row.evidence


def test_a_crashed_member_restarted_under_a_new_id_owns_nothing_once_silent(spark):
    """crash-restart: c2 dies after T0 and comes back as c3 (a new id); until the broker's expiry
    scan drops c2, cidAll lists c1, c2 and c3, and c2's slot (queue 2) is orphaned. c2's newest
    set is still its last one from before the crash: counted, the expiry moved queues 2 and 3
    where only queue 2 changed hands (orphaned → c3). A member silent at either end of a run
    owns nothing at either end."""
    t3, t4, t5 = (T2 + dt.timedelta(seconds=s) for s in (30, 60, 90))
    subs = lambda ids: [(c, ["t"]) for c in ids]  # noqa: E731
    three, two = ["c1", "c2", "c3"], ["c1", "c3"]
    rows = _changes(
        spark, [(T0, "c1", [0, 1]), (T0, "c2", [2, 3]), (T2, "c3", [3]),
                (t4 + dt.timedelta(seconds=10), "c3", [2, 3])], clients=three, rounds=[
            ("k", "g", T1, ["c1", "c2"], ["c1", "c2"], [], [], [], subs(["c1", "c2"])),
            ("k", "g", t3, three, three, ["c2"], ["c2"], [], subs(three)),
            ("k", "g", t4, three, three, ["c2"], ["c2"], [], subs(three)),
            ("k", "g", t5, two, two, [], [], [], subs(two))])
    assert sorted((r.ts, r.trigger, r.queues_moved, r.clients_before, r.clients_after)
                  for r in rows) == [(t3, "CLIENT_JOINED", 1, 2, 3),
                                     (t5, "CLIENT_EXPIRED", 1, 3, 2)]


def test_a_set_that_changes_and_changes_back_between_two_rounds_moves_nothing(spark):
    """No fault: c1 held 0,1, briefly 0 (a running-info snapshot mid-rebalance), then 0,1 again
    before the next round: both rounds have the same assignment, so there is no event."""
    t3, t4 = (T2 + dt.timedelta(seconds=s) for s in (10, 20))
    rows = _changes(spark, [(T0, "c1", [0, 1]), (T0, "c2", [2, 3]),
                            (T2, "c1", [0]), (t3, "c1", [0, 1])], [T1, t4])
    assert rows == []


@pytest.mark.sail_only
def test_sail_gap_an_array_of_an_aggregates_structs_cannot_be_built(spark):
    """Why ``queues_moved`` picks a run's two ends by a side number: on Sail 0.7.2 an array of
    two structs made of ``max`` and ``min_by`` results panics (their fields' metadata differ).
    When this fails, Sail has fixed it."""
    df = spark.createDataFrame([("a", T0, T1)], "k string, t1 timestamp, t2 timestamp")
    ends = df.groupBy("k").agg(F.max("t1").alias("a"), F.min_by("t2", "t1").alias("b"))
    with pytest.raises(Exception, match="inconsistent types"):
        ends.select(F.explode(F.array(F.struct(F.col("a").alias("ts")),
                                      F.struct(F.col("b").alias("ts"))))).collect()
