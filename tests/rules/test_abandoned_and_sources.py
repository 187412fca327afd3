"""Abandoned groups (issue #17 case 7) and groups with no ownership source (case 2), on
hand-built frames, both engines."""

from jobs.gold.group_health import build_group_health
from jobs.gold.orphaned_queues import OrphanRules, build_orphaned_queues
from jobs.rules.abandoned import abandoned_groups
from jobs.rules.models import consumer_models
from tests.rules.frames import DAY, at, with_prev_ts

RULES = OrphanRules(liveness_window_seconds=90, max_snapshot_gap_seconds=300,
                    orphan_min_duration_seconds=120, orphan_transient_max_seconds=300,
                    critical_lag=10000, critical_minutes=30)
STATE = ("cluster string, group string, topic string, broker_name string, queue_id int, "
         "ts timestamp, lag long, broker_offset long, consumer_offset long, "
         "broker_offset_delta long, consumer_offset_delta long, owner_ip string, "
         "broker_reports_no_owner boolean, owners array<string>, owner_count int, "
         "claimed_by array<string>, date date")
MEMBERS = ("cluster string, group string, ts timestamp, client_id string, processes int, "
           "message_model string, consume_type string")


def flat(group, queue_id, lag, grow=0, claimed=(), minutes=range(6)):
    """Nobody owns the queue; the broker offset grows ``grow`` a minute, the commit stands."""
    return [("c", group, "t", "b", queue_id, at(m), lag + grow * m, 1000 + lag + grow * m, 1000,
             None if m == 0 else grow, None if m == 0 else 0, None, None, [], 0, list(claimed),
             DAY) for m in minutes]


def test_a_group_nobody_connects_to_and_nothing_feeds_is_abandoned(spark):
    state = spark.createDataFrame(
        flat("old", 0, 500) + flat("old", 1, 0) + flat("fed", 0, 500, grow=5)
        + flat("live", 0, 500), STATE)
    members = spark.createDataFrame([("c", "live", at(0), "a@1", 1, None, None)], MEMBERS)
    rows = [(r.group, r.backlog, r.lagging_queues)
            for r in abandoned_groups(state, members).collect()]
    assert rows == [("old", 500, 1)]


def test_group_health_notes_an_abandoned_group_once_as_info(spark):
    empty = {
        "orphaned": "cluster string, group string, topic string, broker_name string, "
                    "queue_id int, orphaned_minutes double, root_cause string, severity string, "
                    "date date",
        "double": "cluster string, group string, topic string, broker_name string, "
                  "queue_id int, minutes double, root_cause string, severity string, date date",
        "stuck": "cluster string, group string, topic string, broker_name string, "
                 "queue_id int, stuck_minutes double, root_cause string, severity string, "
                 "date date",
        "events": "cluster string, group string, topic string, ts timestamp, trigger string, "
                  "queues_moved long, flaps_per_hour double, date date",
    }
    frames = {k: spark.createDataFrame([], v) for k, v in empty.items()}
    offsets = spark.createDataFrame([("c", "old", "t", 500, 3600.0, DAY)],
                                    "cluster string, group string, topic string, lag long, "
                                    "time_lag_seconds double, date date")
    abandoned = spark.createDataFrame([("c", "old", DAY, 500, 1)],
                                      "cluster string, group string, date date, backlog long, "
                                      "lagging_queues int")
    (row,) = build_group_health(frames["orphaned"], frames["double"], frames["stuck"],
                                frames["events"], offsets, 10, abandoned_df=abandoned).collect()
    assert (row.status, row.orphaned_queues, row.stuck_queues) == ("OK", 0, 0)
    assert row.findings == ["INFO abandoned: no consumer connected all day and nothing "
                            "produced; backlog 500 on 1 queues"]


def test_a_group_with_no_ownership_source_gets_at_most_info(spark):
    """``blind``: offsets and connections only (no running info, logs or client_ip) — nobody can
    say who owns its queues, so a standing queue is INFO/UNKNOWN however long; ``seen`` has a
    claim (by a client that is not live): the same queue there is a WARN."""
    state = with_prev_ts(spark.createDataFrame(
        flat("blind", 0, 50) + flat("seen", 0, 50, claimed=["x@1"]), STATE))
    member = "struct<client_id:string,processes:int,topics:array<string>,strategy:string>"
    context = spark.createDataFrame(
        [("c", g, at(m), [("a@1", 1, None, None)], 1, [], [], ["a@1"])
         for g in ("blind", "seen") for m in range(6)],
        f"cluster string, group string, ts timestamp, members array<{member}>, "
        "live_processes int, duplicate_ids array<string>, strategies array<string>, "
        "live_ids array<string>")
    member_context = spark.createDataFrame(
        [("c", g, at(m), "a@1", 1, None, None) for g in ("blind", "seen") for m in range(6)],
        "cluster string, group string, ts timestamp, client_id string, processes int, "
        "topics array<string>, strategy string")
    members = spark.createDataFrame(
        [("c", g, at(m), "a@1", 1, "CLUSTERING", "CONSUME_PASSIVELY")
         for g in ("blind", "seen") for m in range(6)], MEMBERS)
    events = spark.createDataFrame([], "group string, ts timestamp, client_id string, "
                                       "event string")
    rows = build_orphaned_queues(state, member_context, context, consumer_models(members), events,
                                 RULES).collect()
    assert sorted((r.group, r.root_cause, r.severity) for r in rows) == [
        ("blind", "UNKNOWN", "INFO"), ("seen", "UNKNOWN", "WARN")]


def test_a_broadcast_group_that_never_committed_gets_its_ok_row(spark):
    """A broadcasting group keeps its offsets on the clients, so the broker has none of it
    (4.9.7 consumerProgress: ``CODE: 206 … offset table is empty``; tests/data/real-cluster
    difference 3): seen in connections only, it still gets its row, OK with the broadcast note.
    Not so a clustering group seen only in connections (nothing to judge), and a broadcasting
    group with offsets keeps its one row."""
    empty = {
        "orphaned": "cluster string, group string, topic string, broker_name string, "
                    "queue_id int, orphaned_minutes double, root_cause string, severity string, "
                    "date date",
        "double": "cluster string, group string, topic string, broker_name string, "
                  "queue_id int, minutes double, root_cause string, severity string, date date",
        "stuck": "cluster string, group string, topic string, broker_name string, "
                 "queue_id int, stuck_minutes double, root_cause string, severity string, "
                 "date date",
        "events": "cluster string, group string, topic string, ts timestamp, trigger string, "
                  "queues_moved long, flaps_per_hour double, date date",
    }
    frames = {k: spark.createDataFrame([], v) for k, v in empty.items()}
    offsets = spark.createDataFrame([("c", "bcast-old", "t", 70, 30.0, DAY)],
                                    "cluster string, group string, topic string, lag long, "
                                    "time_lag_seconds double, date date")
    members = spark.createDataFrame(
        [("c", g, at(0), "10.0.0.1@DEFAULT", 2, model, "CONSUME_PASSIVELY")
         for g, model in (("bcast", "BROADCASTING"), ("bcast-old", "BROADCASTING"),
                          ("clus", "CLUSTERING"))], MEMBERS)
    sources = spark.createDataFrame(
        [("c", "bcast", DAY, ["connections", "running_info"]),
         ("c", "bcast-old", DAY, ["offsets", "connections"]),
         ("c", "clus", DAY, ["connections"])],
        "cluster string, group string, date date, sources array<string>")

    rows = build_group_health(frames["orphaned"], frames["double"], frames["stuck"],
                              frames["events"], offsets, 10, models_df=consumer_models(members),
                              sources_df=sources).collect()

    by_group = {r.group: r for r in rows}
    assert sorted(by_group) == ["bcast", "bcast-old"]
    new = by_group["bcast"]
    assert (new.status, new.max_lag, new.max_time_lag_seconds, new.sources) == (
        "OK", None, None, ["connections", "running_info"])
    assert new.findings == ["INFO broadcast: offsets live on the clients (LocalFileOffsetStore); "
                            "the broker's lag n/a is not consumption"]
    assert by_group["bcast-old"].findings == [
        "INFO broadcast: offsets live on the clients (LocalFileOffsetStore); the broker's lag 70 "
        "is not consumption"]
    # without the sources the day rests on, the rows are those of the offsets, as before
    only_offsets = build_group_health(frames["orphaned"], frames["double"], frames["stuck"],
                                      frames["events"], offsets, 10,
                                      models_df=consumer_models(members)).collect()
    assert [r.group for r in only_offsets] == ["bcast-old"]
