"""Simulated scenario days through every layer in memory (no Delta), on the test engine."""

import datetime as dt
import json

import pytest

from jobs import lake
from jobs.pipeline import (
    bronze_frames,
    derived_silver_frames,
    gold_frames,
    health_frames,
    member_frames,
    silver_frames,
)
from jobs.rules.clocks import host_clock_skew
from jobs.settings import Settings
from jobs.simulate.run import simulate
from tests.conftest import TEST_ENGINE

DAY = dt.date(2025, 11, 21)
# Part of the day is enough for every fault; the simulator still runs the day up to the window.
WINDOWS = {
    "healthy": ("00:00", "00:40"),
    "duplicate-client-id": ("00:00", "00:40"),
    "topicb-subscription": ("00:00", "00:40"),
    "strategy-mismatch": ("00:00", "00:40"),
    "consumer-crash": ("13:50", "14:20"),
    "slow-message": ("09:50", "10:30"),
    "client-leaves": ("09:50", "10:20"),
    "master-down": ("01:05", "01:58"),
}


# The days the classic-Spark pass of `make test` runs: the healthy day (the no-fault guard) and
# the master-down day (its fault with its controls). Each other single-fault day costs 70-150 s
# there (15 s on Sail) and is a `heavy_day` left to `make test-spark-days`; its rules run on both
# engines in the unit tests of tests/rules and tests/gold, and the mixed real-cluster and
# consume-stalls days run on both.
CLASSIC_DAYS = {"healthy", "master-down"}


def classic_days(scenarios):
    """``scenarios`` as pytest params, each not in ``CLASSIC_DAYS`` marked ``heavy_day``."""
    return [s if s in CLASSIC_DAYS else pytest.param(s, marks=pytest.mark.heavy_day) for s in scenarios]


def run_layers(spark, landing, staging, settings=Settings()):
    """bronze → silver → derived silver → gold, each layer staged once as the pipeline does."""
    def stage(df, name):
        return lake.stage(spark, df, staging, "test", name)

    bronze = bronze_frames(spark, landing, DAY, settings, "test", dt.datetime(2025, 11, 22), stage)
    bronze = {k: stage(v, f"bronze.{k}") for k, v in bronze.items()}
    silver = {k: stage(v, f"silver.{k}") for k, v in silver_frames(bronze, settings).items()}
    for frames in (member_frames, derived_silver_frames):
        silver.update({k: stage(v, f"silver.{k}") for k, v in frames(silver, settings).items()})
    gold = {k: stage(v, f"gold.{k}") for k, v in gold_frames(silver, bronze, settings, stage).items()}
    # the skew silver's ownership claims were cut by (group_silver_frames), as the run stages it
    skew = host_clock_skew(bronze["client_log_events"], bronze["running_info"])
    gold.update({k: stage(v, f"gold.{k}") for k, v in health_frames(
        gold, silver, settings, clock_skew_df=skew).items()})
    return {"bronze": bronze, "silver": silver, "gold": gold}


@pytest.fixture(scope="session")
def scenario_day(spark, tmp_path_factory):
    """``scenario_day(name)`` → (truth dict, layers) — simulated and computed once per session."""
    cache = {}

    def get(name):
        if name not in cache:
            # a test reading another day there must be marked heavy_day (CI time)
            assert TEST_ENGINE != "spark" or name in CLASSIC_DAYS, f"mark the test heavy_day: {name}"
            root = tmp_path_factory.mktemp(name)
            truth = simulate(name, DAY, root / "landing", seed=0, window=WINDOWS[name])
            cache[name] = (truth, run_layers(spark, root / "landing", root / "staging"))
        return cache[name]

    return get


def expected(truth, key):
    return [row for fault in truth["faults"] for row in fault.get(key, [])]


def iso(ts):
    return ts.isoformat(timespec="milliseconds") + "Z"


def rows_json(df):
    return [json.loads(json.dumps(r.asDict(recursive=True), default=str)) for r in df.collect()]
