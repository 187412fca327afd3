"""Processes per client id (jobs.rules.liveness.processes_per_id through silver.group_members),
both engines: issue #17 case 5 — a master's and its slave's channels are one process."""

from chispa import assert_df_equality

from jobs.rules.models import consumer_models, excluded_groups
from jobs.silver.membership import build_group_members
from tests.rules.frames import DAY, at

CONNECTIONS = ("cluster string, group string, ts timestamp, client_id string, client_addr string, "
               "broker_name string, broker_addr string, language string, version string, "
               "consume_type string, message_model string, date date, _source_file string, "
               "_line_no long")


def channel(client_id, addr, broker, broker_addr, line, language="JAVA", version="V4_9_8",
            consume_type="CONSUME_PASSIVELY", message_model="CLUSTERING"):
    return ("c", "g", at(0), client_id, addr, broker, broker_addr, language, version,
            consume_type, message_model, DAY, "f", line)


def members_of(spark, rows):
    return build_group_members(spark.createDataFrame(rows, CONNECTIONS)).orderBy("client_id")


def test_processes_are_counted_per_broker_view(spark):
    rows = [
        # a: one process with channels to broker-a's master and slave and to broker-b's master
        channel("a@1", "10.0.0.1:5001", "broker-a", "10.9.0.1:10911", 1),
        channel("a@1", "10.0.0.1:5002", "broker-a", "10.9.0.2:10911", 2),
        channel("a@1", "10.0.0.1:5003", "broker-b", "10.9.0.3:10911", 3),
        # d: one id, two processes (two channels in broker-a master's own view)
        channel("d@1", "10.0.0.2:6001", "broker-a", "10.9.0.1:10911", 4),
        channel("d@1", "10.0.0.3:6002", "broker-a", "10.9.0.1:10911", 5),
        channel("d@1", "10.0.0.2:6003", "broker-a", "10.9.0.2:10911", 6),
        # n: a collector that names neither broker: every channel is one view
        channel("n@1", "10.0.0.4:7001", None, None, 7),
        channel("n@1", "10.0.0.5:7002", None, None, 8),
        # s: a collector without broker_addr still lists one channel per broker name
        channel("s@1", "10.0.0.6:8001", "broker-a", None, 9),
        channel("s@1", "10.0.0.6:8002", "broker-b", None, 10),
        # the same channel twice (a collector retry) is one channel
        channel("s@1", "10.0.0.6:8001", "broker-a", None, 11),
    ]
    members = build_group_members(spark.createDataFrame(rows, CONNECTIONS))
    assert_df_equality(
        members.select("client_id", "processes", "is_duplicate_id").orderBy("client_id"),
        spark.createDataFrame([("a@1", 1, False), ("d@1", 2, True), ("n@1", 2, True),
                               ("s@1", 1, False)],
                              "client_id string, processes int, is_duplicate_id boolean"),
        ignore_nullable=True)
    addrs = {r.client_id: r.broker_addrs for r in members.collect()}
    assert addrs["a@1"] == ["10.9.0.1:10911", "10.9.0.2:10911", "10.9.0.3:10911"]
    assert addrs["n@1"] == []


def test_repeated_channel_records_change_no_member(spark):
    """A collector's retry repeats a channel's record: identical copies change nothing, and
    copies that disagree (one without the client's language and version) give the values that
    are there, in either row order."""
    one = [channel("a@1", "10.0.0.1:5001", "broker-a", "10.9.0.1:10911", 1)]
    again = one + [channel("a@1", "10.0.0.1:5001", "broker-a", "10.9.0.1:10911", 2)]
    blank = channel("a@1", "10.0.0.1:5001", "broker-a", "10.9.0.1:10911", 0, language=None,
                    version=None)
    assert_df_equality(members_of(spark, again), members_of(spark, one), ignore_nullable=True)
    assert_df_equality(members_of(spark, [blank, *one]), members_of(spark, one),
                       ignore_nullable=True)
    assert_df_equality(members_of(spark, [*one, blank]), members_of(spark, one),
                       ignore_nullable=True)


def test_a_blank_first_copy_does_not_hide_a_broadcasting_group(spark):
    """No fault, and no running info collected: a broadcasting consumer's channel record
    arrives twice, the first copy without message model and consume type (a collector that
    wrote N/A). The group is still known to broadcast, so it gets no ownership findings
    (every broadcast client takes every queue, DESIGN.md §5.1)."""
    rows = [channel("b@1", "10.0.0.1:5001", "broker-a", "10.9.0.1:10911", 0, consume_type=None,
                    message_model=None),
            channel("b@1", "10.0.0.1:5001", "broker-a", "10.9.0.1:10911", 1,
                    message_model="BROADCASTING")]
    excluded = excluded_groups(consumer_models(members_of(spark, rows)))
    assert [tuple(r) for r in excluded.collect()] == [("c", "g")]
