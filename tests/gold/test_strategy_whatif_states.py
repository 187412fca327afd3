"""gold.strategy_whatif's states: built from change candidates only, they must equal the states
of every snapshot compared one by one (``states_of_snapshots(topic_snapshots(...))``)."""

import datetime as dt

from pyspark.sql import functions as F

from jobs.gold.strategy_whatif import states_of_snapshots, topic_snapshots, topic_states
from tests.rules.frames import with_prev_ts

DAY = dt.date(2025, 11, 21)
T = [dt.datetime(2025, 11, 21, 10, 0, 0) + dt.timedelta(minutes=k) for k in range(13)]
OFFSETS = ("cluster string, group string, topic string, broker_name string, queue_id int, "
           "ts timestamp, date date")
MEMBERS = ("cluster string, group string, ts timestamp, client_id string, processes int, "
           "topics array<string>, date date")
STATE_COLUMNS = ["cluster", "group", "topic", "run", "start", "last", "mq_all", "cid_all",
                 "subscribers", "minutes", "rooms_known"]


def _offsets(spark):
    """ta: b0, b1; b2 added at 3 and gone at 4; b1 swapped for b2 at 6 (same count), back at 7;
    no ta queue at 11. tb: b0 throughout. A queue id −1 row at every snapshot. g2: b0 and b1,
    then b0 twice (silver never repeats a row, but the states must not merge if it did)."""
    ta = {k: [0, 1] for k in range(13) if k != 11}
    ta[3], ta[6] = [0, 1, 2], [0, 2]
    rows = [("c1", "g", "ta", "b", q, T[k], DAY) for k, queues in ta.items() for q in queues]
    rows += [("c1", "g", "tb", "b", 0, T[k], DAY) for k in range(13)]
    rows += [("c1", "g", "ta", "b", -1, T[k], DAY) for k in range(13)]
    rows += [("c1", "g2", "ta", "b", q, T[k], DAY) for k, q in ((0, 0), (0, 1), (1, 0), (1, 0))]
    # each queue's first snapshot here follows one of the previous day, which the frame lacks
    return with_prev_ts(spark.createDataFrame(rows, OFFSETS), previous_day=True)


def _members(spark):
    """m1 (ta, tb) and m2 (ta; 2 processes from 2, tb too from 8); m3 with unknown topics at 1
    and 11; m4 with unknown processes at 3; nobody live at 5; no process at 9; g2: m1."""
    rows = []
    for k in range(13):
        if k == 5:
            continue
        processes = 0 if k == 9 else 1
        rows.append(("c1", "g", T[k], "m1", processes, ["ta", "tb"], DAY))
        rows.append(("c1", "g", T[k], "m2", 0 if k == 9 else (2 if k >= 2 else 1),
                     ["ta", "tb"] if k >= 8 else ["ta"], DAY))
    rows += [("c1", "g", T[k], "m3", 1, None, DAY) for k in (1, 11)]
    rows += [("c1", "g", T[3], "m4", None, ["ta"], DAY)]
    rows += [("c1", "g2", T[k], "m1", 1, None, DAY) for k in (0, 1)]
    return spark.createDataFrame(rows, MEMBERS)


def test_states_from_change_candidates_equal_the_states_of_every_snapshot(spark):
    offsets, members = _offsets(spark), _members(spark)
    actual = topic_states(offsets, members).select(*STATE_COLUMNS)
    reference = states_of_snapshots(topic_snapshots(offsets, members)).select(*STATE_COLUMNS)
    assert actual.exceptAll(reference).count() == 0
    assert reference.exceptAll(actual).count() == 0
    starts = {(r.group, r.topic): sorted(r.starts) for r in actual.groupBy("group", "topic")
              .agg(F.collect_list("start").alias("starts")).collect()}
    # ta: a change undone (4 after 3, 7 after 6) is a new state; the gap at 5, the empty cid_all
    # at 9, m2's subscribing tb at 8 and ta's absence at 11 (m3 there) change nothing for ta.
    assert starts == {("g", "ta"): [T[0], T[1], T[2], T[3], T[4], T[6], T[7]],
                      ("g", "tb"): [T[0], T[1], T[2], T[8], T[11], T[12]],
                      ("g2", "ta"): [T[0], T[1]]}
    last = actual.where("group = 'g' AND topic = 'ta'").agg(F.max("last")).first()[0]
    assert last == T[12]
