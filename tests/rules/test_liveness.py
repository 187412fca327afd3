"""Processes per client id (jobs.rules.liveness.processes_per_id through silver.group_members),
both engines: issue #17 case 5 — a master's and its slave's channels are one process; a restart
or a reconnect that keeps its id leaves a dead channel listed, which is not a second process."""

from chispa import assert_df_equality

from jobs.rules.models import consumer_models, excluded_groups
from jobs.silver.membership import build_group_members
from tests.rules.frames import DAY, at, epoch_ms

CONNECTIONS = ("cluster string, group string, ts timestamp, client_id string, client_addr string, "
               "broker_name string, broker_addr string, language string, version string, "
               "consume_type string, message_model string, date date, _source_file string, "
               "_line_no long, last_update_timestamp long")


def channel(client_id, addr, broker, broker_addr, line, language="JAVA", version="V4_9_8",
            consume_type="CONSUME_PASSIVELY", message_model="CLUSTERING", minute=0, beat=None):
    """A connection record of the round at ``minute``; ``beat``: the broker's
    last_update_timestamp as seconds after the test's T0 (None: the collector gives none)."""
    lu = None if beat is None else epoch_ms(at(0, beat))
    return ("c", "g", at(minute), client_id, addr, broker, broker_addr, language, version,
            consume_type, message_model, DAY, "f", line, lu)


def members_of(spark, rows, channel_expiry_seconds=120):
    return build_group_members(spark.createDataFrame(rows, CONNECTIONS),
                               channel_expiry_seconds).orderBy("client_id", "ts")


def counts(spark, rows):
    """(minute, processes, running_processes, is_duplicate_id) per round of the one id."""
    return [(round((r.ts - at(0)).total_seconds() / 60), r.processes, r.running_processes,
             r.is_duplicate_id) for r in members_of(spark, rows).collect()]


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
    members = members_of(spark, rows)
    # one round without heartbeat times: d's and n's two channels could be a dead process
    # beside its restart, so they are listed twice but not yet known to run twice
    assert_df_equality(
        members.select("client_id", "processes", "running_processes", "is_duplicate_id"),
        spark.createDataFrame([("a@1", 1, 1, False), ("d@1", 2, 1, False), ("n@1", 2, 1, False),
                               ("s@1", 1, 1, False)],
                              "client_id string, processes int, running_processes int, "
                              "is_duplicate_id boolean"),
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


MASTER = ("broker-a", "10.9.0.1:10911")


def test_a_restart_that_keeps_its_id_is_not_a_duplicate(spark):
    """No fault: a fixed instanceName. The process behind d@1 dies after its heartbeat at
    T0+10 s and comes back 20 s later over a new port; the broker lists the dead channel until
    its 120 s expiry. Two channels are listed (cidAll has the id twice, as the clients see it),
    but the dead one never heartbeats after the new one's first heartbeat: one process runs."""
    old, new = "10.0.0.2:6001", "10.0.0.2:6002"
    rows = [channel("d@1", old, *MASTER, 1, minute=0, beat=10),
            channel("d@1", old, *MASTER, 2, minute=1, beat=10),
            channel("d@1", new, *MASTER, 3, minute=1, beat=50),
            channel("d@1", old, *MASTER, 4, minute=2, beat=10),
            channel("d@1", new, *MASTER, 5, minute=2, beat=110),
            channel("d@1", new, *MASTER, 6, minute=3, beat=170)]
    assert counts(spark, rows) == [(0, 1, 1, False), (1, 2, 1, False), (2, 2, 1, False),
                                   (3, 1, 1, False)]


def test_two_processes_that_both_heartbeat_are_a_duplicate_id(spark):
    """The duplicate-clientID fault: two JVMs on one host with the same instanceName. Both
    channels heartbeat after both are there, so from the round after the second one appeared
    the id runs twice. Its first round proves nothing yet: the older channel had not
    heartbeated since the newer one's first heartbeat."""
    a, b = "10.0.0.2:6001", "10.0.0.2:6002"
    rows = [channel("d@1", a, *MASTER, 1, minute=0, beat=20),
            channel("d@1", a, *MASTER, 2, minute=1, beat=50),
            channel("d@1", b, *MASTER, 3, minute=1, beat=55),
            channel("d@1", a, *MASTER, 4, minute=2, beat=110),
            channel("d@1", b, *MASTER, 5, minute=2, beat=115)]
    assert counts(spark, rows) == [(0, 1, 1, False), (1, 2, 1, False), (2, 2, 2, True)]


def test_without_heartbeat_times_two_channels_run_once_listed_together_past_the_expiry(spark):
    """A collector without last_update_timestamp (mqadmin's text output): a dead channel is
    gone 120 s + the 10 s scan after its last heartbeat, which was before its successor's
    first record. Two channels listed together for longer both run; before that it is unknown,
    and unknown is not a duplicate."""
    a, b = "10.0.0.2:6001", "10.0.0.3:6002"
    rows = [channel("d@1", addr, *MASTER, i, minute=m)
            for i, (m, addr) in enumerate([(0, a), (0, b), (2, a), (2, b), (3, a), (3, b)])]
    assert counts(spark, rows) == [(0, 2, 1, False), (2, 2, 1, False), (3, 2, 2, True)]
    # a collector that writes 0 where it has no heartbeat time: the same
    zeros = [(*r[:-1], 0) for r in rows]
    assert counts(spark, zeros) == [(0, 2, 1, False), (2, 2, 1, False), (3, 2, 2, True)]
    # a broker configured with a longer channelExpiredTimeout keeps a dead channel longer
    longer = members_of(spark, rows, channel_expiry_seconds=300).collect()
    assert [r.running_processes for r in longer] == [1, 1, 1]


def test_a_duplicates_master_and_slave_channels_count_it_twice_not_four_times(spark):
    """Two processes with one id, each with a channel to broker-a's master and its slave: the
    slave's view lists the same two, so the id runs on two processes."""
    slave = ("broker-a", "10.9.0.2:10911")
    rows = []
    for minute, beat in ((0, 20), (1, 80)):
        for view in (MASTER, slave):
            rows += [channel("d@1", "10.0.0.2:6001", *view, len(rows), minute=minute, beat=beat),
                     channel("d@1", "10.0.0.3:6001", *view, len(rows) + 1, minute=minute,
                             beat=beat + 2)]
    assert counts(spark, rows)[-1] == (1, 2, 2, True)
