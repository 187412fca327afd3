"""A broker group's master down (DESIGN.md §5.3) on small hand-built frames, both engines:
the windows and the evidence they rest on, the stuck cause MASTER_DOWN after OWNER_DOWN and
before CONSUME_FAILING, never on flat offsets alone, and the offset that goes back after the
master returns."""

from __future__ import annotations

from chispa import assert_df_equality

from jobs.gold.stuck_queues import build_stuck_queues
from jobs.rules.master_down import (
    build_master_down_windows,
    groups_on_down_brokers,
    return_regressions,
    with_master_return,
    without_return_regressions,
)
from tests.gold.test_stuck_rules import (
    CONFIG_SCHEMA,
    DAY,
    PQ_SCHEMA,
    RULES,
    STATE_SCHEMA,
    STATUS_SCHEMA,
    at,
    live,
    no_models,
    pinned_rows,
    state,
)
from tests.rules.frames import (
    CLIENT_CONFIG_SCHEMA,
    CONSUME_STATUS_SCHEMA,
    PROCESS_QUEUES_SCHEMA,
    widen,
    with_prev_ts,
)

OFFSETS_SCHEMA = ("cluster string, group string, topic string, broker_name string, "
                  "queue_id int, ts timestamp, consumer_offset long, "
                  "consumer_offset_delta long, broker_id long, date date")
EVENTS_SCHEMA = ("group string, ts timestamp, event string, topic string, host string, "
                 "queues array<struct<topic:string,broker_name:string,queue_id:int>>, "
                 "offset long, min_offset long, msg_id string, reconsume_times int, "
                 "route_brokers array<struct<broker_name:string,master_addr:string>>, "
                 "parse_error string")
WINDOW_SCHEMA = ("cluster string, broker_name string, down_from timestamp, "
                 "down_until timestamp, down_evidence string, return_evidence string, date date")
MSG = "0A00090C00002A9F0000000000126F2A"


def offsets(broker, ids, group="g", topic="t", queue_id=0):
    """One offsets row a minute; ``ids`` the answering broker_id per minute."""
    return [("c", group, topic, broker, queue_id, at(m), 100, 0, broker_id, DAY)
            for m, broker_id in enumerate(ids)]


def route(minute, second, masters):
    """A route-change line of topic t on host app-3 listing ``masters`` (broker → 0= or None)."""
    return ("g", at(minute, second), "ROUTE_CHANGED", "t", "app-3", None, None, None, None,
            None, [(b, addr) for b, addr in masters.items()], None)


def send_back(minute, second, broker, queue_id, offset, retries, msg_id=MSG):
    return ("g", at(minute, second), "SEND_BACK_FAILED", "t", "app-3", [("t", broker, queue_id)],
            offset, None, msg_id, retries, None, None)


def pull_exception(minute, broker, second=1):
    return ("g", at(minute, second), "PULL_EXCEPTION", "t", "app-3", [("t", broker, 0)], None, None,
            None, None, None, None)


def master_down_day(spark):
    rows = []
    # b: master, then a slave answers from minute 3 to 9, the master again from minute 10
    rows += offsets("b", [0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0])
    rows += offsets("a", [0] * 12)  # a: always the master
    rows += offsets("x", [None] * 12)  # x: the collector does not say (unknown, not 0)
    rows += offsets("y", [None] * 12)
    rows += offsets("z", [None] * 12)
    events = [
        # b leaves the route at 10:02:40 (before the first slave-answered snapshot), back at
        # 10:09:50 (before the master answers the 10:10 snapshot)
        route(2, 40, {"a": "10.0.9.11:10911", "b": None}),
        route(9, 50, {"a": "10.0.9.11:10911", "b": "10.0.9.12:10911"}),
        # a: one send-back failure is no loop (a one-off timeout); x: the same msgId twice
        # without a rising count is no loop either
        send_back(5, 0, "a", 1, 50, 1, msg_id="A"),
        send_back(5, 0, "x", 1, 50, 3, msg_id="X"), send_back(5, 10, "x", 1, 50, 3, msg_id="X"),
        # y: two rejected pulls are a blip; z: three a second apart are the 5.x slave-only state
        pull_exception(4, "y"), pull_exception(5, "y"),
        pull_exception(6, "z"), pull_exception(6, "z", 2), pull_exception(6, "z", 3),
        # b's failing consumer: msgId MSG at 800 retried locally every 10 s
        *[send_back(3, 10 * k, "b", 2, 800, k + 1) for k in range(5)],
    ]
    return (spark.createDataFrame(rows, OFFSETS_SCHEMA),
            spark.createDataFrame(events, EVENTS_SCHEMA))


def test_windows_rest_on_evidence_of_absence_and_end_at_the_first_evidence_of_return(spark):
    offsets_df, events_df = master_down_day(spark)

    actual = build_master_down_windows(offsets_df, events_df)

    expected = spark.createDataFrame([
        ("c", "b", at(2, 40), at(9, 50), "route change of t on host app-3",
         "route change of t on host app-3", DAY),
        ("c", "z", at(6, 1), None, "pulls of g rejected", None, DAY),
    ], WINDOW_SCHEMA)
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def test_rejected_pulls_count_in_runs_not_over_the_day(spark):
    """Broker v: three pull exceptions a second apart at 10:03 (the outage), a route line with its
    master back at 10:05, then one line per queue at 10:08 — a client shutting down fails each
    in-flight pull once (the real cluster's 5.3.3 clients, README difference 14). Counted over the
    day that queue had four lines and the shutdown opened a second window that never closed."""
    offsets_df = spark.createDataFrame(offsets("v", [None] * 12), OFFSETS_SCHEMA)
    events = [
        *[("g", at(3, s), "PULL_EXCEPTION", "t", "app-3", [("t", "v", 0)], None, None, None, None,
           None, None) for s in (1, 2, 3)],
        route(5, 0, {"v": "10.0.9.14:10911"}),
        *[("g", at(8, 10), "PULL_EXCEPTION", "t", "app-3", [("t", "v", q)], None, None, None, None,
           None, None) for q in (0, 1, 2)],
    ]

    actual = build_master_down_windows(offsets_df, spark.createDataFrame(events, EVENTS_SCHEMA))

    assert [(r.broker_name, r.down_from, r.down_until) for r in actual.collect()] == [
        ("v", at(3, 1), at(5))]


def test_offsets_alone_give_the_window_when_no_client_log_says_anything(spark):
    offsets_df, _ = master_down_day(spark)
    no_logs = spark.createDataFrame([], EVENTS_SCHEMA)

    actual = build_master_down_windows(offsets_df, no_logs).select("broker_name", "down_from",
                                                                   "down_until", "down_evidence")

    expected = spark.createDataFrame(
        [("b", at(3), at(10), "offsets answered by a slave (broker_id ≠ 0)")],
        "broker_name string, down_from timestamp, down_until timestamp, down_evidence string")
    assert_df_equality(actual, expected, ignore_nullable=True)


STUCK_COLUMNS = ["broker_name", "queue_id", "owner", "committed_offset", "blocking_offset",
                 "root_cause"]


def stuck_day(spark):
    """Group g: a pinned queue on b while b's master is gone, the same pin on a (master up),
    a pin on b whose owner went away, and b's pin before the window."""
    def on(broker, rows):
        return [(r[0], r[1], r[2], broker, *r[4:]) for r in rows]

    rows = []
    rows += on("b", pinned_rows(2, 800, live("c3"), claims=("c3",), minutes=range(3, 10)))
    rows += on("a", pinned_rows(6, 800, live("c3"), claims=("c3",), minutes=range(3, 10)))
    rows += on("b", pinned_rows(3, 300, lambda m: ["c2"] if m <= 6 else [], claims=("c2",),
                                minutes=range(3, 10)))
    # pinned from 09:50, long before b's master went away: not this cause
    rows += on("b", state(4, [(m, 1000 + m, 900, ["c3"], ["c3"]) for m in range(-10, 10)]))
    status = [("c", "g", "c3", at(m, 3), "t", 0.2, DAY) for m in range(-10, 10)]
    # on b the looping message stays cached while later ones finish (facts §10.5)
    pq = [("c", "g", "c3", at(m, 3), "t", "b", 2, 800, 800, 810, 1, False, at(m, 1), DAY)
          for m in range(3, 10)]
    # elsewhere nothing is cached: the failing message is retried in place
    pq += [("c", "g", "c3", at(m, 3), "t", broker, q, offset, 0, 0, 0, False, None, DAY)
           for m in range(-10, 10) for broker, q, offset in (("a", 6, 800), ("b", 4, 900))]
    cfg = [("c", "g", "c3", at(m, 3), None, False, DAY) for m in range(-10, 10)]
    return (with_prev_ts(spark.createDataFrame(rows, STATE_SCHEMA)),
            widen(spark, spark.createDataFrame(pq, PQ_SCHEMA), PROCESS_QUEUES_SCHEMA),
            widen(spark, spark.createDataFrame(cfg, CONFIG_SCHEMA), CLIENT_CONFIG_SCHEMA),
            widen(spark, spark.createDataFrame(status, STATUS_SCHEMA), CONSUME_STATUS_SCHEMA))


def test_master_down_is_chosen_after_owner_down_and_before_consume_failing(spark):
    offsets_df, events_df = master_down_day(spark)
    windows = build_master_down_windows(offsets_df, events_df)
    queue_state, pq, cfg, status = stuck_day(spark)

    actual = build_stuck_queues(queue_state, pq, cfg, status, events_df, RULES,
                                models_df=no_models(spark), master_down_windows_df=windows)

    expected = spark.createDataFrame([
        ("b", 2, "c3", 800, 800, "MASTER_DOWN"),
        # the same failing consumer while a's master is up: flat offsets, no evidence
        ("a", 6, "c3", 800, None, "CONSUME_FAILING"),
        ("b", 3, "c2", 300, None, "OWNER_DOWN"),
        ("b", 4, "c3", 900, None, "CONSUME_FAILING"),
    ], "broker_name string, queue_id int, owner string, committed_offset long, "
       "blocking_offset long, root_cause string")
    rows = actual.select(*STUCK_COLUMNS).collect()
    assert_df_equality(spark.createDataFrame(rows, expected.schema), expected,
                       ignore_row_order=True, ignore_nullable=True)
    evidence = actual.where("root_cause = 'MASTER_DOWN'").select("evidence").first()[0]
    assert evidence.startswith(
        "b's master was gone from 10:02:40 UTC (route change of t on host app-3), back at "
        f"10:09:50 UTC; msgId {MSG} at offset 800 failed and cannot go back to the broker: "
        "retried locally 5 times, no DLQ; offset pinned at 800; stuck from ")


def pins_on_b_without_a_hand_back(spark):
    """Pins on b inside b's window (10:02:40–10:09:50) that need no hand-back, beside one that
    does: b/5 a slow message of concurrent c4 (later ones finish, nothing fails — the real
    cluster's slow message on broker-b, tests/data/real-cluster/README.md difference 5); b/6
    orderly c6 failing (suspends and retries locally whatever the broker); b/7 c5 with no
    running info and no log line (a missing source); b/8 concurrent c7 failing, its client log
    not collected: the failure rate alone shows the hand-back."""
    def on_b(rows):
        return [(r[0], r[1], r[2], "b", *r[4:]) for r in rows]

    minutes = range(3, 10)
    rows = []
    for queue_id, offset, owner in ((5, 700, "c4"), (6, 600, "c6"), (7, 500, "c5"),
                                    (8, 400, "c7")):
        rows += on_b(pinned_rows(queue_id, offset, live(owner), claims=(owner,), minutes=minutes))
    pq = [("c", "g", "c4", at(m, 3), "t", "b", 5, 700, 700, 700 + 10 * m, 1, False, at(m, 1), DAY)
          for m in minutes]
    pq += [("c", "g", client, at(m, 3), "t", "b", q, offset, offset, offset, 1, False, None, DAY)
           for m in minutes for client, q, offset in (("c6", 6, 600), ("c7", 8, 400))]
    cfg = [("c", "g", client, at(m, 3), None, client == "c6", DAY)
           for m in minutes for client in ("c4", "c6", "c7")]
    status = [("c", "g", client, at(m, 3), "t", ok, failed, DAY) for m in minutes
              for client, ok, failed in (("c4", 2.0, 0.0), ("c6", 0.0, 0.3), ("c7", 0.0, 0.5))]
    return (with_prev_ts(spark.createDataFrame(rows, STATE_SCHEMA)),
            widen(spark, spark.createDataFrame(pq, PQ_SCHEMA), PROCESS_QUEUES_SCHEMA),
            widen(spark, spark.createDataFrame(cfg, CONFIG_SCHEMA), CLIENT_CONFIG_SCHEMA),
            widen(spark, spark.createDataFrame(
                status, "cluster string, group string, client_id string, ts timestamp, "
                        "topic string, consume_ok_tps double, consume_failed_tps double, "
                        "date date"), CONSUME_STATUS_SCHEMA))


def test_a_pin_on_b_during_its_window_is_master_down_only_when_a_message_of_it_failed(spark):
    offsets_df, events_df = master_down_day(spark)
    windows = build_master_down_windows(offsets_df, events_df)
    queue_state, pq, cfg, status = pins_on_b_without_a_hand_back(spark)

    actual = build_stuck_queues(queue_state, pq, cfg, status, events_df, RULES,
                                models_df=no_models(spark), master_down_windows_df=windows)

    rows = actual.select(*STUCK_COLUMNS).collect()
    assert sorted((r.queue_id, r.owner, r.blocking_offset, r.root_cause) for r in rows) == [
        (5, "c4", 700, "SLOW_MESSAGE"),
        (6, "c6", 600, "CONSUME_FAILING"),
        (7, "c5", None, "UNKNOWN"),
        (8, "c7", 400, "MASTER_DOWN"),
    ]


def test_without_windows_no_episode_is_master_down(spark):
    _, events_df = master_down_day(spark)
    queue_state, pq, cfg, status = stuck_day(spark)

    actual = build_stuck_queues(queue_state, pq, cfg, status, events_df, RULES,
                                models_df=no_models(spark))

    assert actual.where("root_cause = 'MASTER_DOWN'").count() == 0


def test_an_offset_that_goes_back_after_the_return_is_no_stuck_episode_of_its_own(spark):
    offsets_df, events_df = master_down_day(spark)
    windows = build_master_down_windows(offsets_df, events_df)
    rows = [
        # the returned master reports its pre-outage 850 at 10:10, the owner commits 910 later
        ("c", "h", "t", "b", 0, at(9), 900, 10, 1, DAY),
        ("c", "h", "t", "b", 0, at(10), 850, -50, 0, DAY),
        # 20 minutes after the return the window is over: a decrease there is not accepted
        ("c", "h", "t", "b", 0, at(30), 800, -120, 0, DAY),
        # on a, whose master never left, neither
        ("c", "h", "t", "a", 0, at(10), 850, -50, 0, DAY),
        # the return evidence (09:50) is a client's route poll, up to 30 s late: the collector read
        # the returned master's stale offset at 09:30 (README difference 20) ...
        ("c", "h", "t", "b", 1, at(9, 30), 850, -50, None, DAY),
        # ... but 40 s before it, and in the middle of the outage, a decrease is no return
        ("c", "h", "t", "b", 2, at(9, 10), 850, -50, None, DAY),
        ("c", "h", "t", "b", 3, at(5), 850, -50, None, DAY),
    ]

    regressions = return_regressions(spark.createDataFrame(rows, OFFSETS_SCHEMA), windows, 900)

    assert sorted((r.broker_name, r.queue_id, r.ts, r._back_from, r._back_to)
                  for r in regressions.collect()) == [
        ("b", 0, at(10), 900, 850), ("b", 1, at(9, 30), 900, 850)]
    episodes = spark.createDataFrame(
        [("c", "h", "t", "b", 0, 1, at(10)), ("c", "h", "t", "b", 0, 2, at(30))],
        "cluster string, group string, topic string, broker_name string, queue_id int, "
        "_episode int, stuck_since timestamp")
    kept = without_return_regressions(episodes, regressions)
    assert [r._episode for r in kept.collect()] == [2]


def test_groups_on_the_down_broker_during_the_window(spark):
    offsets_df, events_df = master_down_day(spark)
    windows = build_master_down_windows(offsets_df, events_df)
    rows = offsets_df.collect() + [
        ("c", "h", "t2", "b", 0, at(5), 10, 0, 1, DAY),  # h on b during the window
        ("c", "k", "t3", "b", 0, at(11), 10, 0, 0, DAY),  # k on b only after it
    ]

    actual = groups_on_down_brokers(spark.createDataFrame(rows, OFFSETS_SCHEMA), windows)

    assert sorted((r.group, r.broker_name, r.down_until) for r in actual.collect()) == [
        ("g", "b", at(9, 50)), ("g", "z", None), ("h", "b", at(9, 50))]


def test_after_the_return_released_at_passes_the_blocking_offset_and_a_new_owner_counts(spark):
    offsets_df, events_df = master_down_day(spark)
    windows = build_master_down_windows(offsets_df, events_df)  # b: 10:02:40 to 10:09:50
    stuck_schema = ("cluster string, group string, topic string, broker_name string, "
                    "queue_id int, stuck_since timestamp, blocking_offset long, "
                    "redelivery_risk long, released_at timestamp, root_cause string, "
                    "evidence string")
    stuck = spark.createDataFrame([
        ("c", "g", "t", "b", 2, at(3), 800, 30, at(10), "MASTER_DOWN",
         "…; the offset moved at 2025-11-21 10:10:00 UTC"),
        ("c", "g", "t", "b", 3, at(3), None, 5, at(10), "UNKNOWN", "…"),
    ], stuck_schema)
    # b/2: pinned at 800 by c3; at 10:10 the returned master reports 700 and c4 takes the
    # queue over from there; 760 at 10:11, past 800 at 10:12
    state_rows = [  # ..., consumer_offset, consumer_offset_delta, ...
        *[("c", "g", "t", "b", 2, at(m), 100, 900, 800, None if m == 3 else 0, ["c3"], 1, ["c3"],
           DAY) for m in range(3, 10)],
        ("c", "g", "t", "b", 2, at(10), 200, 900, 700, -100, ["c4"], 1, ["c4"], DAY),
        ("c", "g", "t", "b", 2, at(11), 140, 900, 760, 60, ["c4"], 1, ["c4"], DAY),
        ("c", "g", "t", "b", 2, at(12), 0, 900, 900, 140, ["c4"], 1, ["c4"], DAY),
    ]
    state = with_prev_ts(spark.createDataFrame(state_rows, STATE_SCHEMA))

    actual = with_master_return(stuck, state, windows, 900).orderBy("queue_id").collect()

    assert [(r.queue_id, r.released_at, r.redelivery_risk) for r in actual] == [
        (2, at(12), 100),  # 700 → 800 consumed again by c4; 100 > the pinned row's own 30
        (3, at(10), 5)]  # not MASTER_DOWN: unchanged
    assert actual[0].evidence == "…; the offset passed it at 2025-11-21 10:12:00 UTC"


def test_a_pin_spanning_the_return_is_one_episode_across_the_stale_offsets(spark):
    """bridged_return_regressions (README difference 18): the returned master's stale offsets
    leave the stuck detector's queue_state and the next snapshot continues from the one before
    them; a decrease outside the return window, or with no regression, is left as it is."""
    from jobs.gold.stuck_queues import stuck_snapshots
    from jobs.rules.master_down import bridged_return_regressions

    schema = ("cluster string, group string, topic string, broker_name string, queue_id int, "
              "ts timestamp, prev_ts timestamp, lag long, consumer_offset long, "
              "consumer_offset_delta long, owners array<string>, owner_count int, "
              "claimed_by array<string>, date date")
    offsets_by_queue = {
        0: [48, 48, 48, 48, 44, 48, 48],    # one stale snapshot (minute 4), the pin goes on
        1: [48, 48, 48, 48, 44, 44, 50],    # two stale snapshots, then the owner moves on
        2: [48, 48, 48, 48, 48, 48, 48],
    }
    rows = []
    for q, offs in offsets_by_queue.items():
        for m, off in enumerate(offs):
            prev = offs[m - 1] if m else None
            rows.append(("c", "g", "t", "b", q, at(m), at(m - 1) if m else None, 10 + m, off,
                         None if prev is None else off - prev, ["o"], 1, ["o"], DAY))
    # queue 2: a decrease 20 minutes after its regression, past the 15-minute return window
    rows += [("c", "g", "t", "b", 2, at(24), at(6), 30, 40, -8, ["o"], 1, ["o"], DAY)]
    regressions = spark.createDataFrame(
        [("c", "g", "t", "b", 0, at(4), 48, 44), ("c", "g", "t", "b", 1, at(4), 48, 44),
         ("c", "g", "t", "b", 2, at(4), 48, 48)],
        "cluster string, group string, topic string, broker_name string, queue_id int, ts timestamp, "
        "_back_from long, _back_to long")

    bridged = bridged_return_regressions(spark.createDataFrame(rows, schema), regressions, 900)

    got = sorted((r.queue_id, r.ts, r.prev_ts, r.consumer_offset_delta)
                 for r in bridged.collect() if r.ts >= at(3))
    assert got == sorted([
        (0, at(3), at(2), 0), (0, at(5), at(3), 0), (0, at(6), at(5), 0),
        (1, at(3), at(2), 0), (1, at(6), at(3), 2),
        (2, at(3), at(2), 0), (2, at(4), at(3), 0), (2, at(5), at(4), 0), (2, at(6), at(5), 0),
        (2, at(24), at(6), -8)])
    episodes = {(r.queue_id, r._episode) for r in stuck_snapshots(bridged, 300).collect()}
    assert sorted(q for q, _ in episodes) == [0, 1, 2]  # one episode per queue: none split
