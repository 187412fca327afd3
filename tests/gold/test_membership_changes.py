"""``membership_changes`` (both engines): the snapshots at which a group's live members change —
an id come or gone, or a channel more or fewer listed behind one. The second is how a restart
that keeps its id (a fixed instanceName) shows: the dead process's channel stays listed beside
the new one until the broker expires it, so the orphaned slot it shadows is a REBALANCE_GAP."""

from jobs.gold.group_context import build_group_context, membership_changes
from tests.rules.frames import at

CONTEXT = ("cluster string, group string, ts timestamp, client_id string, processes int, "
           "running_processes int, topics array<string>, strategy string")


def changes(spark, rounds):
    """``rounds``: per minute, the live (client_id, processes listed, running) of group g."""
    rows = [("c", "g", at(m), cid, listed, running, ["t"], "AVG")
            for m, members in enumerate(rounds) for cid, listed, running in members]
    context = build_group_context(spark.createDataFrame(rows, CONTEXT))
    return [round((r.changed_at - at(0)).total_seconds() / 60)
            for r in membership_changes(context).orderBy("changed_at").collect()]


def test_an_id_or_a_channel_come_or_gone_is_a_change_and_nothing_else_is(spark):
    a, b = ("a@1", 1, 1), ("b@1", 1, 1)
    restarted_b = ("b@1", 2, 1)  # the dead channel listed beside the new one: one runs
    duplicated_b = ("b@1", 2, 2)
    rounds = [[a, b], [a, b], [a, restarted_b], [a, restarted_b], [a, b],
              [a, b, ("c@1", 1, 1)], [a, duplicated_b, ("c@1", 1, 1)],
              [a, duplicated_b, ("c@1", 1, 1)]]
    assert changes(spark, rounds) == [2, 4, 5, 6]


def test_a_steady_group_with_a_duplicated_id_has_no_change(spark):
    """No fault in the membership: the same two processes behind one id all along."""
    assert changes(spark, [[("a@1", 2, 2), ("b@1", 1, 1)]] * 4) == []
