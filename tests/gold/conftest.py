"""Simulated scenario days through every layer in memory (no Delta), on the test engine."""

import datetime as dt
import json
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

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
from jobs.simulate.scenario import load_scenario
from tests.conftest import TEST_ENGINE, shared_dir

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
SCENARIOS_DIR = Path(__file__).parent / "scenarios"
# Seed scenarios whose windows meet are simulated and computed together, each as its own groups
# beside the others (tests/gold/scenarios/<day>.toml includes them): ``scenario_days(name)`` gives
# the mixed day's layers and truth cut to ``name``'s groups — one day built instead of four or two.
# A mixed day's window covers each member's own (client-leaves ends at 10:30 instead of 10:20).
MIXED_DAYS = {
    "seeds-night": (("00:00", "00:40"),
                    ["healthy", "duplicate-client-id", "topicb-subscription", "strategy-mismatch"]),
    "seeds-morning": (("09:50", "10:30"), ["slow-message", "client-leaves"]),
}
MIXED_DAY_OF = {name: day for day, (_, names) in MIXED_DAYS.items() for name in names}


# The single-scenario days the classic parity tier (`make test`) runs: none. Each costs 70-300 s
# on classic Spark (15 s on Sail, whose pass runs them all), so on classic every one is a
# `heavy_day` of the acceptance tier (`make test-acceptance`, also in CI); their rules run on both
# engines in the unit tests of tests/rules and tests/gold, and the parity tier's day is the mixed
# `real-cluster` day (every partial-collector case beside groups that must stay OK,
# tests/gold/test_real_clusters.py) besides the hand-written day.
CLASSIC_DAYS: frozenset[str] = frozenset()


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


LAYERS_MANIFEST = "layers.json"


def shared_layers(spark, tmp_path_factory, key: str, name: str, window: tuple[str, str],
                  settings: Settings = Settings()):
    """(truth, layers) of scenario ``name`` simulated in ``window`` and computed by
    ``run_layers``, once per pytest run: the first worker computes and stages every table (with
    a manifest of their schemas), the others read the staged tables back — the same Parquet
    files the first worker's frames read. The truth is read back from ``_truth.json`` by all."""
    def build(root):
        simulate(name, DAY, root / "landing", seed=0, window=window)
        layers = run_layers(spark, root / "landing", root / "staging", settings)
        manifest = {layer: {table: df.schema.json() for table, df in frames.items()}
                    for layer, frames in layers.items()}
        (root / LAYERS_MANIFEST).write_text(json.dumps(manifest))

    root = shared_dir(tmp_path_factory, f"layers-{TEST_ENGINE}-{key}", build)
    truth = json.loads((root / "landing" / "_truth.json").read_text())
    manifest = json.loads((root / LAYERS_MANIFEST).read_text())
    layers = {layer: {table: _read_staged(spark, root / "staging", f"{layer}.{table}",
                                          StructType.fromJson(json.loads(schema)))
                      for table, schema in tables.items()}
              for layer, tables in manifest.items()}
    return truth, layers


def _read_staged(spark, staging, name: str, schema: StructType):
    """A table ``run_layers`` staged, as ``lake.stage`` reads it back (no folder: no rows)."""
    path = Path(lake.staging_path(staging, "test", name))
    if not path.is_dir():
        return spark.createDataFrame([], schema)
    return spark.read.schema(schema).parquet(str(path))


def of_groups(layers, groups):
    """Every table of every layer, only the rows of ``groups`` (tables without the column whole)."""
    return {layer: {name: df.where(F.col("group").isin(sorted(groups))) if "group" in df.columns else df
                    for name, df in frames.items()}
            for layer, frames in layers.items()}


def truth_of_groups(truth, groups):
    """``truth`` with only the faults and unexplained episodes of ``groups``."""
    return {**truth, "faults": [f for f in truth["faults"] if f.get("group") in groups],
            "unexplained": [e for e in truth["unexplained"] if e.get("group") in groups]}


def scenario_groups(name: str) -> set[str]:
    return {g.name for g in load_scenario(name).groups}


@pytest.fixture(scope="session")
def scenario_days(spark, tmp_path_factory):
    """``scenario_days(name)`` → (truth dict, layers) — simulated and computed once per run; a
    scenario of ``MIXED_DAYS`` is cut from its mixed day."""
    cache = {}

    def get(name):
        if name in MIXED_DAY_OF:
            day = MIXED_DAY_OF[name]
            if day not in cache:
                cache[day] = shared_layers(spark, tmp_path_factory, day,
                                           str(SCENARIOS_DIR / f"{day}.toml"), MIXED_DAYS[day][0])
            truth, layers = cache[day]
            groups = scenario_groups(name)
            return truth_of_groups(truth, groups), of_groups(layers, groups)
        if name not in cache:
            cache[name] = shared_layers(spark, tmp_path_factory, name, name, WINDOWS[name])
        return cache[name]

    return get


@pytest.fixture
def scenario_day(scenario_days, request):
    """``scenario_days`` for one test: on classic Spark, a day beside ``CLASSIC_DAYS`` needs
    the test marked ``heavy_day`` (it then runs in the acceptance tier, for the parity tier's
    time)."""
    heavy = request.node.get_closest_marker("heavy_day") is not None

    def get(name):
        assert TEST_ENGINE != "spark" or heavy or name in CLASSIC_DAYS, \
            f"mark the test heavy_day: {name}"
        return scenario_days(name)

    return get


def expected(truth, key):
    return [row for fault in truth["faults"] for row in fault.get(key, [])]


def iso(ts):
    return ts.isoformat(timespec="milliseconds") + "Z"


def rows_json(df):
    return [json.loads(json.dumps(r.asDict(recursive=True), default=str)) for r in df.collect()]
