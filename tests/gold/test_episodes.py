"""Episode numbering from the flagged rows alone equals numbering over every row (both engines)."""

import datetime as dt

from pyspark.sql import functions as F

from jobs.rules.episodes import interval_start, number_episodes, with_episode_id, with_previous_snapshot
from tests.rules.frames import with_prev_ts

T0 = dt.datetime(2025, 11, 21, 0, 0, 0)
SCHEMA = "q string, ts timestamp, candidate boolean, refined boolean, payload string"


def _at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


ROWS = [
    # q1: an unflagged snapshot splits two runs; a gap of exactly 300 s continues, 301 s does not
    ("q1", _at(0), True, True, "a"), ("q1", _at(60), True, True, "b"),
    ("q1", _at(120), False, None, "c"), ("q1", _at(180), True, True, "d"),
    ("q1", _at(480), True, True, "e"), ("q1", _at(781), True, True, "f"),
    # q2: a candidate whose refined flag fails breaks the run like an unflagged snapshot
    ("q2", _at(0), True, True, "g"), ("q2", _at(60), True, False, "h"),
    ("q2", _at(120), True, True, "i"), ("q2", _at(180), None, None, "j"),
    ("q2", _at(240), True, True, "k"),
    # q3: never flagged
    ("q3", _at(0), False, None, "l"),
]


def test_flagged_rows_get_the_episode_numbers_of_the_full_window(spark):
    df = with_prev_ts(spark.createDataFrame(ROWS, SCHEMA), ["q"], previous_day=True)
    candidates = with_previous_snapshot(df, ["q"], F.col("candidate"))
    previous = df.select("q", F.col("ts").alias("_prev_ts"), F.col("refined").alias("_prev_refined"))
    got = number_episodes(candidates.join(previous, on=["q", "_prev_ts"], how="left"), ["q"],
                          F.col("refined"), F.col("_prev_candidate") & F.col("_prev_refined"),
                          300)
    rows = sorted((r["q"], r["payload"], r["_episode"]) for r in got.collect())
    assert rows == [("q1", "a", 1), ("q1", "b", 1), ("q1", "d", 2), ("q1", "e", 2),
                    ("q1", "f", 3), ("q2", "g", 1), ("q2", "i", 2), ("q2", "k", 3)]
    assert set(got.columns) == {"q", "ts", "candidate", "refined", "payload", "prev_ts",
                                "_episode", "_prev_refined", "_prev_ts", "_episode_start"}

    flag = F.coalesce(F.col("candidate") & F.col("refined"), F.lit(False))
    full = with_episode_id(df, ["q"], flag, 300).where("_flag")
    assert rows == sorted((r["q"], r["payload"], r["_episode"]) for r in full.collect())


def test_an_episode_starts_at_the_snapshot_before_its_first_flagged_one(spark):
    """``interval_start``: the first row of each episode gets the previous snapshot's value when
    that snapshot is within the gap (q1 'd' after 'c' at 120 s), else its own (q1 'a' has none;
    q1 'f' comes 301 s after 'e'); null on the other rows."""
    df = (with_prev_ts(spark.createDataFrame(ROWS, SCHEMA), ["q"], previous_day=True)
          .withColumn("n", F.unix_timestamp("ts")))
    flag = F.coalesce(F.col("candidate") & F.col("refined"), F.lit(False))
    candidates = with_previous_snapshot(df, ["q"], flag, carry=("n",))
    got = number_episodes(candidates, ["q"], flag, F.col("_prev_candidate"), 300).select(
        "q", "payload", interval_start("n", 300).alias("start"))
    t0 = int(T0.replace(tzinfo=dt.timezone.utc).timestamp())
    rows = sorted((r["q"], r["payload"], None if r["start"] is None else r["start"] - t0)
                  for r in got.collect())
    assert rows == [("q1", "a", 0), ("q1", "b", None), ("q1", "d", 120), ("q1", "e", None),
                    ("q1", "f", 781), ("q2", "g", 0), ("q2", "i", 60), ("q2", "k", 180)]


def test_a_changed_break_column_starts_a_new_episode(spark):
    """``breaks_on``: the stuck detector's runs end where the committed offset moves, also
    between two flagged snapshots; a null offset after a known one is a change too, a gap of
    301 s still splits, and the value returning to an earlier one is a new run."""
    rows = [("q", _at(0), 5), ("q", _at(60), 5), ("q", _at(120), 7), ("q", _at(180), 7),
            ("q", _at(240), None), ("q", _at(300), None), ("q", _at(601), None),
            ("q", _at(660), 5)]
    df = spark.createDataFrame(rows, "q string, ts timestamp, offset long")
    got = with_episode_id(df, ["q"], F.lit(True), 300, breaks_on=("offset",))
    assert [r["_episode"] for r in got.orderBy("ts").collect()] == [1, 1, 2, 2, 3, 3, 4, 5]
