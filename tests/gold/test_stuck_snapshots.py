"""The stuck detector's episodes, found from the unmoved snapshots and their ``prev_ts``, equal
a window over every snapshot of the frame (both engines)."""

import datetime as dt

from pyspark.sql import Window
from pyspark.sql import functions as F

from jobs.gold.stuck_queues import QUEUE_KEY, StuckRules, stuck_episodes, stuck_snapshots
from jobs.rules.episodes import with_episode_id

T0 = dt.datetime(2025, 11, 21, 0, 0, 0)
DAY = T0.date()
SCHEMA = ("cluster string, group string, topic string, broker_name string, queue_id int, "
          "ts timestamp, lag long, consumer_offset long, prev_ts timestamp, "
          "consumer_offset_delta long, owners array<string>, owner_count int, "
          "claimed_by array<string>, date date")


def _queue(queue_id, points):
    """Snapshots ``(second, lag, consumer_offset)`` of one queue, with ``prev_ts`` and the delta
    as silver computes them over the day and its look-back: the day's first snapshot follows one
    of the previous day at the same committed offset, which the frame (the day) does not hold."""
    rows, prev_ts, prev_offset = [], T0 - dt.timedelta(seconds=30), points[0][2]
    for second, lag, offset in points:
        ts = T0 + dt.timedelta(seconds=second)
        rows.append(("c", "g", "t", "b", queue_id, ts, lag, offset, prev_ts,
                     offset - prev_offset, ["a@1"], 1, ["a@1"], DAY))
        prev_ts, prev_offset = ts, offset
    return rows


ROWS = (
    _queue(0, [(0, 5, 100), (60, 5, 100),  # continues the previous day's snapshot: not here
               (120, 0, 105),  # idle: no episode
               (180, 3, 105), (240, 3, 105),  # starts after an idle snapshot
               (541, 3, 105), (600, 3, 105),  # 301 s later: a new episode, same offset
               (660, 2, 110), (720, 2, 110), (780, 2, 110),  # the offset moved: a new one
               (840, 1, 120), (900, 1, 130),  # one snapshot each
               (960, 4, 140)])  # the day's last snapshot: no next one in the frame
    + _queue(1, [(0, 7, 50), (60, 7, 50), (120, 7, 50)])
    + _queue(-1, [(0, 9, 1), (60, 9, 1)])  # a pop retry queue: never an episode
)


def _episodes(df):
    """``{frozenset of second offsets}`` per episode of ``stuck_snapshots``' output."""
    out = {}
    for r in df.collect():
        key = (r["queue_id"], r["_episode"])
        out.setdefault(key, set()).add(int((r["ts"] - T0).total_seconds()))
    return {(q, frozenset(s)) for (q, _), s in out.items()}


def _reference(df, keep_single):
    """The episodes a window over every snapshot numbers (the rule as first written)."""
    lagging = F.coalesce((F.col("lag") > 0) & (F.col("queue_id") >= 0), F.lit(False))
    flagged = with_episode_id(df, QUEUE_KEY, lagging, 300,
                              breaks_on=("consumer_offset",)).where("_flag")
    episodes = _episodes(flagged)
    return episodes if keep_single else {e for e in episodes if len(e[1]) > 1}


def test_unmoved_snapshots_give_the_episodes_of_a_window_over_every_snapshot(spark):
    df = spark.createDataFrame(ROWS, SCHEMA)
    got = _episodes(stuck_snapshots(df, 300))
    assert got == _reference(df, keep_single=False)
    assert got == {(0, frozenset({0, 60})), (0, frozenset({180, 240})),
                   (0, frozenset({541, 600})), (0, frozenset({660, 720, 780})),
                   (1, frozenset({0, 60, 120}))}
    single = _episodes(stuck_snapshots(df, 300, single_snapshots=True))
    assert single == _reference(df, keep_single=True)
    assert single - got == {(0, frozenset({840})), (0, frozenset({900})), (0, frozenset({960}))}


def test_an_episode_ends_at_the_snapshot_after_its_last(spark):
    """``_next_ts`` / ``_next_offset``: the queue's next snapshot in the frame, as ``lead`` over
    every snapshot gives it; none after the day's last one. A stuck_min_duration of 0 keeps the
    one-snapshot episodes."""
    df = spark.createDataFrame(ROWS, SCHEMA)
    order = Window.partitionBy(*QUEUE_KEY).orderBy("ts")
    following = {(r["queue_id"], r["ts"]): (r["_next_ts"], r["_next_offset"]) for r in df.select(
        "queue_id", "ts", F.lead("ts").over(order).alias("_next_ts"),
        F.lead("consumer_offset").over(order).alias("_next_offset")).collect()}
    for minimum, expected in ((60, 4), (120, 2), (0, 8)):
        rules = StuckRules(300, minimum, 2000, 10_000, 30)
        snapshots = stuck_snapshots(df, 300, single_snapshots=minimum == 0)
        rows = stuck_episodes(snapshots, df, rules).collect()
        assert len(rows) == expected
        for r in rows:
            assert (r["_next_ts"], r["_next_offset"]) == following[(r["queue_id"], r["last_seen"])]
            assert r["_until"] == (r["_next_ts"] or r["last_seen"] + dt.timedelta(seconds=300))
