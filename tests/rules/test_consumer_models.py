"""Consumer models (DESIGN.md §5.1, issue #18) on hand-built frames, both engines: each model
from every source that tells it, and the cases that would misfire on a real cluster — a
broadcast group known only from running_info, a pop group with lagging queues, a lite-pull group
with no mq_table whose offsets advance, two broadcast clients on one host. Each misfire case
runs beside a clustering push group (or an mq_table-reporting pull group) with the same rows,
which does get the finding: the exclusion, not the data, keeps the others quiet."""

from chispa import assert_df_equality
from pyspark.sql import functions as F

from jobs.gold.double_owned_queues import build_double_owned_queues
from jobs.gold.orphaned_queues import OrphanRules, build_orphaned_queues
from jobs.gold.strategy_whatif import build_strategy_whatif
from jobs.gold.stuck_queues import StuckRules, build_stuck_queues
from jobs.rules.models import MODELS_SCHEMA, consumer_models, excluded_groups
from jobs.silver.client_config import build_client_config, property_values
from tests.rules.frames import (
    CLIENT_CONFIG_SCHEMA,
    CONSUME_STATUS_SCHEMA,
    DAY,
    PROCESS_QUEUES_SCHEMA,
    at,
    widen,
    with_prev_ts,
)

RULES = OrphanRules(liveness_window_seconds=90, max_snapshot_gap_seconds=300,
                    orphan_min_duration_seconds=120, orphan_transient_max_seconds=300,
                    critical_lag=10000, critical_minutes=30)
STUCK = StuckRules(max_snapshot_gap_seconds=300, stuck_min_duration_seconds=300,
                   consume_concurrently_max_span=2000, critical_lag=10000, critical_minutes=30)
MEMBERS = ("cluster string, group string, ts timestamp, client_id string, processes int, "
           "message_model string, consume_type string")
CONFIG = ("cluster string, group string, client_id string, ts timestamp, message_model string, "
          "consume_type string, is_orderly boolean, consume_concurrently_max_span long, "
          "date date")
PQ = ("cluster string, group string, client_id string, ts timestamp, topic string, "
      "broker_name string, queue_id int, commit_offset long, cached_msg_min_offset long, "
      "cached_msg_max_offset long, cached_msg_count long, dropped boolean, "
      "last_consume_at timestamp, date date")
STATE = ("cluster string, group string, topic string, broker_name string, queue_id int, "
         "ts timestamp, lag long, broker_offset long, consumer_offset long, "
         "broker_offset_delta long, consumer_offset_delta long, owner_ip string, "
         "broker_reports_no_owner boolean, owners array<string>, owner_count int, "
         "owned_by_ip_only boolean, claimed_by array<string>, date date")
HOST_ID = "10.0.0.9@DEFAULT"  # a broadcasting push consumer keeps IP@DEFAULT (facts §3)

# push: clustering push (control) · bcast: BROADCASTING told by running_info only · pop:
# CONSUME_POP in the connections · lite: CONSUME_ACTIVELY in running_info, no mq_table ·
# pull: CONSUME_ACTIVELY whose members report an mq_table (control)
GROUPS = ("push", "bcast", "pop", "lite", "pull")


def members(spark):
    kinds = {"push": ("CLUSTERING", "CONSUME_PASSIVELY"), "bcast": (None, None),
             "pop": ("CLUSTERING", "CONSUME_POP"), "lite": (None, None),
             "pull": (None, "CONSUME_ACTIVELY")}
    return spark.createDataFrame(
        [("c", g, at(m, 5), cid, 1, *kinds[g]) for g in GROUPS for m in range(-2, 10)
         for cid in ("a@1", "b@1")], MEMBERS)


def client_config(spark):
    rows = [("c", "bcast", "a@1", at(0, 3), "BROADCASTING", "CONSUME_PASSIVELY", False, None,
             DAY),
            ("c", "lite", "a@1", at(0, 3), "CLUSTERING", "CONSUME_ACTIVELY", False, None, DAY),
            ("c", "push", "a@1", at(0, 3), "CLUSTERING", "CONSUME_PASSIVELY", False, None, DAY)]
    return spark.createDataFrame(rows, CONFIG)


def process_queues(spark):
    return spark.createDataFrame(
        [("c", "pull", "a@1", at(0, 3), "t", "b", 9, 0, 0, 0, 0, False, None, DAY)], PQ)


def models(spark):
    return consumer_models(members(spark), client_config(spark), process_queues(spark))


def test_each_model_comes_from_every_source_that_tells_it(spark):
    got = spark.createDataFrame(models(spark).collect(), MODELS_SCHEMA)
    expected = spark.createDataFrame([
        ("c", "bcast", True, False, False, False),
        ("c", "lite", False, False, True, False),
        ("c", "pop", False, True, False, False),
        ("c", "pull", False, False, True, True),
        ("c", "push", False, False, False, False),
    ], MODELS_SCHEMA)
    assert_df_equality(got.orderBy("group"), expected, ignore_nullable=True)
    assert sorted(r.group for r in excluded_groups(models(spark)).collect()) == ["bcast", "pop"]


def test_running_info_properties_give_the_model_and_orderliness(spark):
    props = {"messageModel": "BROADCASTING", "PROP_CONSUME_TYPE": "CONSUME_ACTIVELY",
             "PROP_CONSUMEORDERLY": "true"}
    bronze = spark.createDataFrame(
        [("c", "g", "a@1", at(0), props, [("t",)], DAY, "f", 1)],
        "cluster string, group string, client_id string, ts timestamp, "
        "properties map<string,string>, mq_table array<struct<topic:string>>, date date, "
        "_source_file string, _line_no int")
    (row,) = build_client_config(bronze).collect()
    assert (row.message_model, row.consume_type, row.is_orderly) == (
        "BROADCASTING", "CONSUME_ACTIVELY", True)


def test_property_values_find_each_key_and_null_where_absent(spark):
    """The properties are read by their position among the map's keys (issue #19): the first and
    the last key, a missing key, an empty and a null map."""
    df = spark.createDataFrame(
        [(1, {"a": "x", "b": "y", "c": "z"}), (2, {"c": "w"}), (3, {}), (4, None)],
        "k int, properties map<string,string>")
    rows = df.select("k", *property_values(F.col("properties"), ("a", "c", "d"))).orderBy("k")
    assert [tuple(r) for r in rows.collect()] == [
        (1, "x", "z", None), (2, None, "w", None), (3, None, None, None), (4, None, None, None)]


def state(group, queue_id, minutes, owners, *, lag=500, advancing=()):
    """One queue_state row a minute; the commit moves 10 at the ``advancing`` minutes only."""
    rows, committed = [], 1000
    for m in minutes:
        moved = 10 if m in advancing else 0
        committed += moved
        rows.append(("c", group, "t", "b", queue_id, at(m), lag, committed + lag, committed,
                     None if m == minutes[0] else moved, None if m == minutes[0] else moved,
                     None, None, list(owners), len(owners), False, list(owners), DAY))
    return rows


def context_frames(spark):
    member = "struct<client_id:string,processes:int,topics:array<string>,strategy:string>"
    context = spark.createDataFrame(
        [("c", g, at(m), [("a@1", 1, None, None), ("b@1", 1, None, None)], 2, [], [],
          ["a@1", "b@1"]) for g in GROUPS for m in range(10)],
        f"cluster string, group string, ts timestamp, members array<{member}>, "
        "live_processes int, duplicate_ids array<string>, strategies array<string>, "
        "live_ids array<string>")
    member_context = spark.createDataFrame(
        [("c", g, at(m), cid, 1, None, None) for g in GROUPS for m in range(10)
         for cid in ("a@1", "b@1")],
        "cluster string, group string, ts timestamp, client_id string, processes int, "
        "topics array<string>, strategy string")
    return context, member_context


def test_no_orphans_without_queue_ownership_or_an_mq_table(spark):
    """The queue stands for 5 minutes with lag and nobody claims it, then the lite-pull client's
    auto-commit moves it again: unknown for lite-pull (assign() reports no mq_table), broadcast
    and pop; an orphan for push and for a pull group whose members report mq_tables."""
    rows = [r for g in GROUPS for r in state(g, 0, list(range(9)), [], advancing=(6, 7, 8))]
    context, member_context = context_frames(spark)
    events = spark.createDataFrame([], "group string, ts timestamp, client_id string, "
                                       "event string")
    found = build_orphaned_queues(with_prev_ts(spark.createDataFrame(rows, STATE)), member_context, context,
                                  models(spark), events, RULES).collect()
    assert sorted((r.group, r.first_seen, r.last_seen) for r in found) == [
        ("pull", at(0), at(5)), ("push", at(0), at(5))]


def test_two_broadcast_clients_on_one_host_are_no_duplicate_client_id(spark):
    """Both JVMs keep IP@DEFAULT and take every queue: one id, two processes, every queue owned
    twice — the design of broadcasting, not a fault. The same rows in a clustering group are
    DUPLICATE_CLIENT_ID; two owners in a lite-pull group without mq_table prove nothing."""
    rows = (state("bcast", 0, list(range(6)), [HOST_ID, HOST_ID])
            + state("push", 0, list(range(6)), [HOST_ID, HOST_ID])
            + state("pop", 0, list(range(6)), ["a@1", "b@1"])
            + state("lite", 0, list(range(6)), ["a@1", "b@1"])
            + state("pull", 0, list(range(6)), ["a@1", "b@1"]))
    context = spark.createDataFrame([("c", g, at(m), ["AVG"]) for g in GROUPS for m in range(6)],
                                    "cluster string, group string, ts timestamp, "
                                    "strategies array<string>")
    host = spark.createDataFrame(
        [("c", g, at(m, 5), HOST_ID, 2, None, None) for g in ("bcast", "push")
         for m in range(-2, 8)], MEMBERS)
    found = build_double_owned_queues(with_prev_ts(spark.createDataFrame(rows, STATE)), context,
                                      members(spark).unionByName(host), RULES,
                                      models_df=models(spark)).collect()
    assert sorted((r.group, r.root_cause) for r in found) == [
        ("pull", "UNKNOWN"), ("push", "DUPLICATE_CLIENT_ID")]


def test_broadcast_and_pop_groups_are_never_stuck(spark):
    """Broker offsets of a broadcast group never move (the clients store them locally) and pop
    has no queue owner: a standing, lagging committed offset there is no finding. Push and
    pull/lite-pull groups follow the stuck rules."""
    rows = [r for g in GROUPS for r in state(g, 0, list(range(9)), ["a@1"])]
    empty_events = spark.createDataFrame(
        [], "group string, ts timestamp, event string, "
            "queues array<struct<topic:string,broker_name:string,queue_id:int>>, "
            "offset long, min_offset long")
    status = spark.createDataFrame([], "cluster string, group string, client_id string, "
                                       "ts timestamp, topic string, consume_failed_tps double, "
                                       "date date")
    found = build_stuck_queues(with_prev_ts(spark.createDataFrame(rows, STATE)),
                               widen(spark, process_queues(spark), PROCESS_QUEUES_SCHEMA),
                               widen(spark, client_config(spark), CLIENT_CONFIG_SCHEMA),
                               widen(spark, status, CONSUME_STATUS_SCHEMA), empty_events, STUCK,
                               models_df=models(spark)).collect()
    assert sorted(r.group for r in found) == ["lite", "pull", "push"]


def test_orderly_clients_get_no_span_flow_control(spark):
    """Span ≥ consumeConcurrentlyMaxSpan flags a concurrent consumer only (facts §5.3)."""
    rows = (state("push", 0, list(range(9)), ["a@1"])
            + state("push", 1, list(range(9)), ["o@1"]))
    pq = spark.createDataFrame(
        [("c", "push", cid, at(m, 3), "t", "b", q, 1000, 1000, 1050, 10, False, None, DAY)
         for m in range(9) for cid, q in (("a@1", 0), ("o@1", 1))], PQ)
    cfg = spark.createDataFrame(
        [("c", "push", cid, at(m, 3), "CLUSTERING", "CONSUME_PASSIVELY", orderly, 40, DAY)
         for m in range(9) for cid, orderly in (("a@1", False), ("o@1", True))], CONFIG)
    status = spark.createDataFrame([], "cluster string, group string, client_id string, "
                                       "ts timestamp, topic string, consume_failed_tps double, "
                                       "date date")
    events = spark.createDataFrame(
        [], "group string, ts timestamp, event string, "
            "queues array<struct<topic:string,broker_name:string,queue_id:int>>, "
            "offset long, min_offset long")
    found = build_stuck_queues(with_prev_ts(spark.createDataFrame(rows, STATE)),
                               widen(spark, pq, PROCESS_QUEUES_SCHEMA),
                               widen(spark, cfg, CLIENT_CONFIG_SCHEMA),
                               widen(spark, status, CONSUME_STATUS_SCHEMA), events,
                               STUCK, models_df=models(spark)).collect()
    assert sorted((r.queue_id, r.in_flight_span, r.flow_controlled) for r in found) == [
        (0, 50, True), (1, 50, False)]


def test_whatif_leaves_out_broadcast_and_pop_groups(spark):
    offsets = with_prev_ts(spark.createDataFrame(
        [("c", g, "t", "b", q, at(m), 0, DAY) for g in GROUPS for m in range(3)
         for q in range(2)],
        "cluster string, group string, topic string, broker_name string, queue_id int, "
        "ts timestamp, lag long, date date"))
    member_context = spark.createDataFrame(
        [("c", g, at(m), cid, 1, ["t"], "AVG", DAY) for g in GROUPS for m in range(3)
         for cid in ("a@1", "b@1")],
        "cluster string, group string, ts timestamp, client_id string, processes int, "
        "topics array<string>, strategy string, date date")
    groups = {r.group for r in build_strategy_whatif(offsets, member_context,
                                                     models(spark)).collect()}
    assert groups == {"push", "lite", "pull"}


def test_models_of_a_day_without_any_model_field_are_all_clustering_push(spark):
    """A collector that sends neither field: nothing is excluded (unknown is not a model)."""
    bare = spark.createDataFrame([("c", "g", at(0), "a@1", 1, None, None)], MEMBERS)
    (row,) = consumer_models(bare).collect()
    assert (row.broadcasting, row.pop, row.actively, row.reports_mq_table) == (
        False, False, False, False)
