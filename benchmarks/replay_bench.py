"""Allocation replay throughput (not a test): ``python -m benchmarks.replay_bench [--engine sail|spark] [--states N]``.

Prints states/s for the Python reference and for the Spark transform over N distinct random
states (AVG, AVG_BY_CIRCLE, CONSISTENT_HASH with 10 vnodes, a few MACHINE_ROOM and NEARBY), then
the point of replaying distinct states: the same N states seen at K snapshots each, replayed once
per distinct state (``replay_snapshots``) versus naively once per snapshot.
"""

from __future__ import annotations

import argparse
import random
import time

from jobs.replay.reference import MessageQueue, allocate_all, sorted_cid_all, sorted_mq_all

STRATEGY_MIX = (["AVG"] * 4 + ["AVG_BY_CIRCLE"] * 2 + ["CONSISTENT_HASH"] * 3
                + ["MACHINE_ROOM", "MACHINE_ROOM_NEARBY-AVG"])
ROOMS = ("room1", "room2", "room3")


def random_state(rng: random.Random, n: int) -> dict:
    """One group view: 1-12 clients, 4-48 queues over 1-4 brokers, a strategy from the mix."""
    strategy = rng.choice(STRATEGY_MIX)
    roomed = strategy.startswith("MACHINE_ROOM")
    brokers = [f"{rng.choice(ROOMS)}@broker-{b}" if roomed else f"broker-{b}" for b in range(rng.randint(1, 4))]
    per_broker = rng.randint(1, 12)
    mq_all = sorted_mq_all(MessageQueue("TopicTest", b, q) for b in brokers for q in range(per_broker))
    cid_all = sorted_cid_all(
        f"{rng.choice(ROOMS) + '-' if roomed else ''}"
        f"10.0.{rng.randint(0, 3)}.{rng.randint(1, 250)}@{rng.randint(1, 65535)}"
        for _ in range(rng.randint(1, 12)))
    return {"state_id": f"s{n}", "strategy": strategy, "virtual_nodes": 10,
            "consumer_idcs": list(ROOMS[:2]) if strategy == "MACHINE_ROOM" else None,
            "mq_all": mq_all, "cid_all": cid_all}


def bench_python(states: list[dict]) -> float:
    started = time.perf_counter()
    for state in states:
        allocate_all(state["strategy"], state["mq_all"], state["cid_all"],
                     virtual_nodes=state["virtual_nodes"], consumer_idcs=state["consumer_idcs"])
    return time.perf_counter() - started


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def consume(df) -> None:
    """Force every allocation to be computed and brought back as one number."""
    from pyspark.sql import functions as F

    df.agg(F.sum(F.coalesce(F.size("allocated"), F.lit(0)))).collect()


def bench_spark(engine: str, states: list[dict], snapshots_per_state: int) -> None:
    from pyspark.sql import functions as F

    from jobs.engine import open_session
    from jobs.replay.spark_cases import STATES_SCHEMA
    from jobs.replay.spark_replay import replay_snapshots, replay_states

    rows = [(s["state_id"], s["strategy"], s["virtual_nodes"], s["consumer_idcs"], None,
             [tuple(mq) for mq in s["mq_all"]], s["cid_all"]) for s in states]
    n = len(states)
    with open_session(engine, delta=False, shuffle_partitions=4, app_name="rocketlens-replay-bench") as spark:
        states_df = spark.createDataFrame(rows, STATES_SCHEMA).cache()
        states_df.count()
        consume(replay_states(states_df.limit(50)))  # warm-up: first plan, JIT / codegen
        wall = timed(lambda: consume(replay_states(states_df)))
        calls = sum(len(s["cid_all"]) for s in states)
        print(f"spark transform ({engine}): {n} states, {calls} calls in {wall:.2f} s "
              f"-> {n / wall:,.0f} states/s")

        k = snapshots_per_state
        # Not cached: a local classic JVM (default heap) runs out of memory caching large runs, and
        # Sail ignores cache(); both timings below rebuild the same cross join.
        snapshots_df = (states_df
                        .crossJoin(spark.range(k).withColumnRenamed("id", "snapshot"))
                        .withColumn("current_cid", F.explode(F.array_distinct("cid_all"))))
        snapshot_rows = snapshots_df.count()
        distinct_wall = timed(lambda: consume(replay_snapshots(snapshots_df, sort_inputs=False)))
        naive_states_df = (states_df
                           .crossJoin(spark.range(k).withColumnRenamed("id", "snapshot"))
                           .withColumn("state_id", F.concat_ws("#", "state_id", F.col("snapshot").cast("string")))
                           .drop("snapshot"))
        naive_wall = timed(lambda: consume(replay_states(naive_states_df)))
        print(f"{n} states x {k} snapshots = {n * k} snapshot states, {snapshot_rows} client rows:")
        print(f"  distinct-state replay (replay_snapshots): {distinct_wall:.2f} s "
              f"-> {n * k / distinct_wall:,.0f} snapshots/s")
        print(f"  naive per-snapshot replay:               {naive_wall:.2f} s "
              f"-> {n * k / naive_wall:,.0f} snapshots/s ({naive_wall / distinct_wall:.1f}x slower)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engine", default="sail", choices=["sail", "spark"])
    parser.add_argument("--states", type=int, default=2000, help="distinct states to replay")
    parser.add_argument("--snapshots", type=int, default=20, help="snapshots per state for the dedup comparison")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    states = [random_state(rng, n) for n in range(args.states)]
    wall = bench_python(states)
    print(f"python reference: {len(states)} states in {wall:.2f} s -> {len(states) / wall:,.0f} states/s")
    bench_spark(args.engine, states, args.snapshots)


if __name__ == "__main__":
    main()
