"""Replay on change vs naive per-snapshot replay on a real lake day (not a test).

``python -m benchmarks.replay_day --lake DIR --date D [--hours H]`` prints one JSON object.

- **on change**: what gold.strategy_whatif does, from silver: find the snapshots where
  something may have changed (``topic_states``: counts and windows, arrays built only there),
  cut the day into states, then replay each distinct state once per strategy
  (``replay_states``), staging the intermediates as the run does;
- **on change from snapshots** (``on_change_from_snapshots_seconds``): the same states cut from
  the per-snapshot views below (``states_of_snapshots``), as the job did before it found the
  changes first — the comparison on equal footing with the naive side;
- **naive**: replay every snapshot once per strategy (``spark_replay.replay_states`` with one
  state per snapshot), as a job without the state cut would, from the per-snapshot views of
  every group and topic (``topic_snapshots``, staged as Parquet first and not timed).
All cover the first ``H`` hours of the day; each is timed until the sum of allocated queue
counts is collected (both on-change sums are reported: they must agree).

Bounded memory: a whole large day in one naive query exhausts the machine's memory, so the
naive side replays at most ``--chunk-snapshots`` snapshots per query, cut at snapshot times,
and sums the queries' times: each snapshot is replayed on its own, so the chunks add up to the
whole span. ``naive_chunks`` says how many queries that took; the per-query cost is small
(benchmarks/RESULTS.md). The snapshots are staged an hour at a time (not timed).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import resource
import sys
import tempfile
import time

from pyspark.sql import functions as F

from jobs import lake
from jobs.engine import open_session
from jobs.gold import strategy_whatif as whatif
from jobs.replay import spark_replay

CHUNK_SNAPSHOTS = 20_000


def _allocated_total(df) -> int:
    return df.agg(F.sum(F.coalesce(F.size("allocated"), F.lit(0)))).collect()[0][0] or 0


def _progress(message: str) -> None:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"replay_day: {message} (peak RSS {peak:.2f} GiB)", file=sys.stderr, flush=True)


def _hours(run_date: dt.date, hours: float) -> list[tuple]:
    """``[start, end)`` timestamps of each hour of the first ``hours`` of the day."""
    midnight = dt.datetime.combine(run_date, dt.time())
    bounds = [midnight + dt.timedelta(hours=min(h, hours)) for h in range(math.ceil(hours) + 1)]
    return list(zip(bounds, bounds[1:]))


def _chunks(snapshots, most: int) -> list[tuple]:
    """``[start, end)`` timestamps holding at most ``most`` snapshots each (or one ts's)."""
    counts = snapshots.groupBy("ts").count().orderBy("ts").collect()
    chunks, start, size = [], None, 0
    for row in counts:
        if start is not None and size + row["count"] > most:
            chunks.append((start, row["ts"]))
            start, size = None, 0
        start, size = start or row["ts"], size + row["count"]
    if start is not None:
        chunks.append((start, counts[-1]["ts"] + dt.timedelta(microseconds=1)))
    return chunks


def _in(df, chunk):
    return df.where((F.col("ts") >= F.lit(chunk[0])) & (F.col("ts") < F.lit(chunk[1])))


def replay_day(spark, lake_dir: str, run_date: dt.date, hours: float, staging: str,
               chunk_snapshots: int = CHUNK_SNAPSHOTS) -> dict:
    offsets = lake.read_day(spark, lake_dir, "silver", "queue_offsets", run_date)
    members = lake.read_day(spark, lake_dir, "silver", "member_context", run_date)
    span = _hours(run_date, hours)
    for chunk in span:  # a snapshot is one ts: the hours' views are the span's
        snapshots = whatif.topic_snapshots(_in(offsets, chunk), _in(members, chunk))
        snapshots.write.mode("append").parquet(f"{staging}/snapshots")
    snapshots = spark.read.schema(snapshots.schema).parquet(f"{staging}/snapshots")
    n_snapshots = snapshots.count()
    _progress(f"staged {n_snapshots:,} snapshots")

    def stage(df, name):  # as the run stages, under the scratch folder
        return lake.stage(spark, df, staging, "replay_day", name)

    whole = (span[0][0], span[-1][1])
    started = time.perf_counter()
    states = stage(whatif.topic_states(_in(offsets, whole), _in(members, whole), stage), "states")
    n_states = states.count()
    on_change_total = _allocated_total(whatif.replay_states(states))
    on_change = time.perf_counter() - started
    _progress(f"on change: {n_states:,} states, {on_change:.1f} s")

    started = time.perf_counter()
    states = whatif.states_of_snapshots(snapshots)
    n_states_from_snapshots = states.count()
    from_snapshots_total = _allocated_total(whatif.replay_states(states))
    from_snapshots = time.perf_counter() - started
    _progress(f"on change from snapshots: {n_states_from_snapshots:,} states, "
              f"{from_snapshots:.1f} s")

    strategies = F.array(*[F.lit(s) for s in whatif.STRATEGIES])

    def naive_states(chunk):
        return (_in(snapshots, chunk)
                .select("cluster", "group", "topic", "ts", "mq_all", "cid_all",
                        F.explode(strategies).alias("strategy"))
                .select(F.concat_ws("|", "cluster", "group", "topic", F.col("ts").cast("string"),
                                    "strategy").alias("state_id"),
                        "strategy",
                        F.when(F.col("strategy") == "CONSISTENT_HASH",
                               F.lit(whatif.VIRTUAL_NODES)).cast("int").alias("virtual_nodes"),
                        "mq_all", "cid_all"))

    naive, naive_total = 0.0, 0
    chunks = _chunks(snapshots, chunk_snapshots)
    for chunk in chunks:
        started = time.perf_counter()
        naive_total += _allocated_total(spark_replay.replay_states(naive_states(chunk)))
        naive += time.perf_counter() - started
        _progress(f"naive from {chunk[0]:%H:%M:%S}: {naive:.1f} s so far")
    return {"hours": hours, "snapshots": n_snapshots, "states": n_states,
            "on_change_seconds": on_change, "naive_seconds": naive, "naive_chunks": len(chunks),
            "speedup": naive / on_change if on_change else None,
            "on_change_from_snapshots_seconds": from_snapshots,
            "speedup_from_snapshots": naive / from_snapshots if from_snapshots else None,
            "states_from_snapshots": n_states_from_snapshots,
            "on_change_allocated": on_change_total,
            "on_change_from_snapshots_allocated": from_snapshots_total,
            "naive_allocated": naive_total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lake", required=True)
    parser.add_argument("--date", required=True, type=dt.date.fromisoformat)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--chunk-snapshots", type=int, default=CHUNK_SNAPSHOTS,
                        help="most snapshots per naive replay query (bounds its memory)")
    parser.add_argument("--engine", default="sail", choices=["sail", "spark"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, \
            open_session(args.engine, delta=True, app_name="rocketlens-replay-day") as spark:
        print(json.dumps(replay_day(spark, args.lake, args.date, args.hours, tmp,
                                    args.chunk_snapshots)))


if __name__ == "__main__":
    main()
