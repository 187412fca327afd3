"""Batches of whole groups (``engine.group_batch_rows``, issue #19): the per-group silver tables
computed batch by batch give the same lake as one pass. The sample day (every fault and consumer
kind, several groups) run again with a batch size that cuts it into several batches; every
silver and gold table must hold the same rows as the one-batch lake of ``sample_lake``."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from pyspark.sql import functions as F

from jobs import lake
from jobs.pipeline import group_batches, in_group_batch
from tests.conftest import SAMPLE_DAY, run_cli

DAY = dt.date.fromisoformat(SAMPLE_DAY)

pytestmark = pytest.mark.delta

RUN_METADATA = {"_run_id", "_ingested_at", "run_id"}


def _rows(spark, lake_dir, layer, name) -> list[str]:
    df = lake.read_day(spark, lake_dir, layer, name, DAY)
    cols = sorted(c for c in df.columns if c not in RUN_METADATA)
    return sorted(r[0] for r in df.select(F.to_json(F.struct(*cols))).collect())


@pytest.fixture(scope="module")
def batched_lake(spark, sample_lake, tmp_path_factory):
    root = tmp_path_factory.mktemp("batched")
    offsets = lake.read_day(spark, sample_lake, "bronze", "offsets", DAY).count()
    batch_rows = offsets // 3 + 1
    assert group_batches(offsets, batch_rows) == 3
    conf = root / "batches.toml"
    conf.write_text(f"[engine]\ngroup_batch_rows = {batch_rows}\n")
    proc = run_cli("run", "--date", SAMPLE_DAY, "--landing", str(sample_lake.parent / "landing"),
                   "--lake", str(root / "lake"), "--conf", str(conf), "--log-format", "json")
    events = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    return root / "lake", events


def test_the_sample_day_is_computed_in_three_batches(batched_lake):
    _, events = batched_lake
    batches = {(e.get("table"), e.get("batch")) for e in events if e.get("batches")}
    assert {b for t, b in batches if t == "silver.queue_state"} == {1, 2, 3}
    assert {e["batches"] for e in events if e.get("batches")} == {3}


@pytest.mark.parametrize("layer", ["silver", "gold"])
def test_batched_tables_equal_the_one_pass_tables(spark, sample_lake, batched_lake, layer):
    lake_dir, _ = batched_lake
    one_pass = {name for lyr, name, _ in lake.list_tables(sample_lake) if lyr == layer}
    assert one_pass == {name for lyr, name, _ in lake.list_tables(lake_dir) if lyr == layer}
    differing = [name for name in sorted(one_pass)
                 if _rows(spark, sample_lake, layer, name) != _rows(spark, lake_dir, layer, name)]
    assert differing == []


def test_a_batch_holds_whole_groups_and_the_batches_hold_every_row(spark):
    rows = [(g, q) for g in ("g-a", "g-b", "g-c", "g-d", None) for q in range(3)]
    df = spark.createDataFrame(rows, "group string, queue_id int")
    parts = [in_group_batch(b, 3)(df).collect() for b in range(3)]
    assert sorted(map(tuple, sum(parts, [])), key=str) == sorted(rows, key=str)
    groups_per_batch = [{r["group"] for r in part} for part in parts]
    assert all(not (a & b) for i, a in enumerate(groups_per_batch)
               for b in groups_per_batch[i + 1:])
    cluster_wide = spark.createDataFrame([("broker-a",)], "broker_name string")
    assert in_group_batch(1, 3)(cluster_wide).count() == 1
