"""Reruns and backfills leave the tables a run in order would leave (Delta; Sail, and for a rerun
classic Spark + Delta too, in the acceptance tier).

Compared: every column of every table except the run metadata ``_run_id``/``_ingested_at``.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil

import pytest

from jobs import lake
from tests.reliability.conftest import D1, D
from tests.reliability.lakes import contents, rocketlens, run_args

pytestmark = pytest.mark.delta


@pytest.mark.classic_cli
def test_rerunning_a_day_leaves_identical_tables(spark, tmp_path, sim_landing, in_order_lake,
                                                in_order_contents):
    """D run again once D+1 is there: every table as before, though every D row was rewritten.
    (A rerun of D+1 is in every crash-safety test.)"""
    lake_dir = tmp_path / "lake"
    shutil.copytree(in_order_lake, lake_dir)
    before_ids = contents(spark, lake_dir, D, keep_metadata=True)["bronze.offsets"]
    rocketlens(*run_args(D, sim_landing, lake_dir))
    assert contents(spark, lake_dir, D, keep_metadata=True)["bronze.offsets"] != before_ids
    assert contents(spark, lake_dir) == in_order_contents


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory, spark, sim_landing):
    """D+1 run first, then D backfilled; D+1's rows (metadata included) before and after."""
    lake_dir = tmp_path_factory.mktemp("backfill") / "lake"
    rocketlens(*run_args(D1, sim_landing, lake_dir))
    later_before = contents(spark, lake_dir, D1, keep_metadata=True)
    rocketlens(*run_args(D, sim_landing, lake_dir))
    return lake_dir, later_before


def test_backfilling_an_earlier_day_leaves_the_later_day_untouched(spark, backfilled,
                                                                   in_order_lake):
    lake_dir, later_before = backfilled
    assert contents(spark, lake_dir, D1, keep_metadata=True) == later_before
    assert contents(spark, lake_dir, D) == contents(spark, in_order_lake, D)


def test_a_later_day_run_before_its_backfill_lacks_the_lookback_until_rerun(
        spark, tmp_path, backfilled, sim_landing, in_order_lake, in_order_contents):
    """D+1's first snapshots read D's tail from the lake: run before D existed, they miss it
    (different silver.queue_state); rerunning D+1 after the backfill gives the in-order lake."""
    lake_dir, _ = backfilled
    assert (contents(spark, lake_dir, D1)["silver.queue_state"]
            != contents(spark, in_order_lake, D1)["silver.queue_state"])
    rerun = tmp_path / "lake"
    shutil.copytree(lake_dir, rerun)
    rocketlens(*run_args(D1, sim_landing, rerun))
    assert contents(spark, rerun) == in_order_contents


def test_a_day_in_batches_of_groups_reads_the_previous_days_tail_as_one_pass_does(
        spark, tmp_path):
    """The landing sources other than the offsets are staged split into the batches of groups as
    they are parsed; each batch then takes its share of D's tail from the lake. The sample
    scenario's many groups over midnight, D+1 without connections and running info, so that its
    members and claims near midnight are D's (its client logs, split as D's tail of them is, stay):
    run in several batches after D, D+1's tables equal those of one pass."""
    from jobs.simulate.run import simulate

    landing = tmp_path / "landing"
    simulate("sample", dt.date.fromisoformat(D), landing, seed=0, window=("23:40", "24:00"))
    simulate("sample", dt.date.fromisoformat(D1), landing, seed=1, window=("00:00", "00:20"))
    for source in ("connections", "running_info"):
        shutil.rmtree(landing / source / f"date={D1}")

    def run(day, lake_dir, *extra):
        proc = rocketlens(*run_args(day, landing, lake_dir, "--log-format", "json", *extra))
        return [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]

    day_d, one_pass, batched = tmp_path / "day_d", tmp_path / "one_pass", tmp_path / "batched"
    run(D, day_d)
    shutil.copytree(day_d, one_pass)
    run(D1, one_pass)
    offsets = lake.read_day(spark, one_pass, "bronze", "offsets", dt.date.fromisoformat(D1))
    conf = tmp_path / "batches.toml"
    conf.write_text(f"[engine]\ngroup_batch_rows = {offsets.count() // 3 + 1}\n")
    shutil.copytree(day_d, batched)
    events = run(D1, batched, "--conf", str(conf))
    assert max(e.get("batches", 1) for e in events
               if e.get("table") == "silver.queue_state") >= 2
    # without the tails of connections and running info in the batches, D+1's
    # silver.queue_state differs (checked by removing them from run_day)
    assert contents(spark, batched, D1) == contents(spark, one_pass, D1)
