"""Replay on change vs naive per-snapshot replay on a real lake day (not a test).

``python -m benchmarks.replay_day --lake DIR --date D [--hours H]`` prints one JSON object.

Both start from the same per-snapshot views of every group and topic (``topic_snapshots`` of
gold.strategy_whatif, staged once as Parquet, the first ``H`` hours of the day):
- **on change**: what gold.strategy_whatif does — collapse consecutive equal snapshots into
  states, then replay each distinct state once per strategy (``replay_snapshots``);
- **naive**: replay every snapshot once per strategy (``spark_replay.replay_states`` with one
  state per snapshot), as a job without the state cut would.
Each is timed until the sum of allocated queue counts is collected.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
import time

from pyspark.sql import functions as F

from jobs import lake
from jobs.engine import open_session
from jobs.gold import strategy_whatif as whatif
from jobs.replay import spark_replay


def _allocated_total(df) -> int:
    return df.agg(F.sum(F.coalesce(F.size("allocated"), F.lit(0)))).collect()[0][0] or 0


def replay_day(spark, lake_dir: str, run_date: dt.date, hours: float, staging: str) -> dict:
    offsets = lake.read_day(spark, lake_dir, "silver", "queue_offsets", run_date)
    members = lake.read_day(spark, lake_dir, "silver", "member_context", run_date)
    until = F.lit(dt.datetime.combine(run_date, dt.time()) + dt.timedelta(hours=hours))
    snapshots = whatif.topic_snapshots(offsets.where(F.col("ts") < until),
                                       members.where(F.col("ts") < until))
    snapshots.write.mode("overwrite").parquet(staging)
    snapshots = spark.read.schema(snapshots.schema).parquet(staging)
    n_snapshots = snapshots.count()

    started = time.perf_counter()
    states = whatif.states_of_snapshots(snapshots)
    n_states = states.count()
    on_change_total = _allocated_total(whatif.replay_states(states))
    on_change = time.perf_counter() - started

    strategies = F.array(*[F.lit(s) for s in whatif.STRATEGIES])
    naive_states = (snapshots
                    .select("cluster", "group", "topic", "ts", "mq_all", "cid_all",
                            F.explode(strategies).alias("strategy"))
                    .select(F.concat_ws("|", "cluster", "group", "topic", F.col("ts").cast("string"),
                                        "strategy").alias("state_id"),
                            "strategy",
                            F.when(F.col("strategy") == "CONSISTENT_HASH",
                                   F.lit(whatif.VIRTUAL_NODES)).cast("int").alias("virtual_nodes"),
                            "mq_all", "cid_all"))
    started = time.perf_counter()
    naive_total = _allocated_total(spark_replay.replay_states(naive_states))
    naive = time.perf_counter() - started
    return {"hours": hours, "snapshots": n_snapshots, "states": n_states,
            "on_change_seconds": on_change, "naive_seconds": naive,
            "speedup": naive / on_change if on_change else None,
            "on_change_allocated": on_change_total, "naive_allocated": naive_total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lake", required=True)
    parser.add_argument("--date", required=True, type=dt.date.fromisoformat)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--engine", default="sail", choices=["sail", "spark"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, \
            open_session(args.engine, delta=True, app_name="rocketlens-replay-day") as spark:
        print(json.dumps(replay_day(spark, args.lake, args.date, args.hours, f"{tmp}/snapshots")))


if __name__ == "__main__":
    main()
