"""A run SIGKILLed mid-way is repaired by running the day again (Delta; Sail, and for the kill
between a table's DELETE and its append classic Spark + Delta too, in the acceptance tier).

The run is a real ``python -m jobs run`` subprocess, killed when its stderr shows a progress line
(README, Progress) — during parsing, during bronze, between layers, during gold — and, through the
test-side store ``ROCKETLENS_TEST_KILL_AFTER_DELETE`` installs (tests/lake_hooks.py), between a table's
DELETE and its append, the one point no outside observer can hit reliably. The rerun must leave
the tables of an uninterrupted run, and no staging folder behind.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys

import pytest

from jobs import lake
from tests.lake_hooks import KILL_AFTER_DELETE_ENV
from tests.reliability.conftest import D1, D
from tests.reliability.lakes import REPO, cli_env, contents, rocketlens, run_args

pytestmark = pytest.mark.delta


def run_killed_at(args: list[str], marker: str | None, **env: str) -> list[str]:
    """Run the CLI, SIGKILL it on the first stderr line containing ``marker``; its lines."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.lake_hooks", *args], cwd=REPO,
                            env=cli_env(**env), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if marker and marker in line:
                proc.send_signal(signal.SIGKILL)
                break
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, lines[-5:])
    return lines


def staging_dirs(lake_dir):
    staging = lake_dir / "_staging"
    return sorted(p.name for p in staging.iterdir()) if staging.is_dir() else []


KILL_POINTS = (
    "parsing client_logs",           # bronze parsed lines staged, nothing written yet
    "wrote bronze.connections",      # some bronze tables of D+1 replaced, others not
    "wrote bronze.ingest_counts",    # between bronze and silver
    "wrote gold.orphaned_queues",    # during gold
)


def test_a_rerun_after_kills_at_every_stage_gives_the_uninterrupted_tables(
        spark, tmp_path, sim_landing, day_d_lake, in_order_contents):
    """D+1 is killed at each point in turn on the same lake (each attempt starts from the
    previous one's debris), then run to the end."""
    lake_dir = tmp_path / "lake"
    shutil.copytree(day_d_lake, lake_dir)
    for marker in KILL_POINTS:
        lines = run_killed_at(run_args(D1, sim_landing, lake_dir), marker)
        run_id = lines[0].split("run_id=")[1].split()[0]
        # the killed run's folder stays (no finally ran); the previous dead one was swept
        assert staging_dirs(lake_dir) == [run_id], marker
    rocketlens(*run_args(D1, sim_landing, lake_dir))
    assert contents(spark, lake_dir) == in_order_contents
    assert not (lake_dir / "_staging").exists()


@pytest.mark.classic_cli
def test_a_kill_between_delete_and_append_leaves_the_day_missing_until_the_rerun(
        spark, tmp_path, sim_landing, in_order_lake, in_order_contents):
    """The documented gap of the non-atomic day replace (jobs/lake.py): the run dies right
    after silver.queue_state's DELETE of D+1, which then has no D+1 rows; D's stay."""
    lake_dir = tmp_path / "lake"
    shutil.copytree(in_order_lake, lake_dir)
    run_killed_at(run_args(D1, sim_landing, lake_dir), None,
                  **{KILL_AFTER_DELETE_ENV: "silver.queue_state"})
    after_kill = contents(spark, lake_dir)
    assert after_kill["silver.queue_state"] == contents(spark, in_order_lake, D)[
        "silver.queue_state"]
    rocketlens(*run_args(D1, sim_landing, lake_dir))
    assert contents(spark, lake_dir) == in_order_contents


def test_a_kill_while_creating_the_first_tables_is_repaired_by_the_rerun(spark, tmp_path,
                                                                        sim_landing,
                                                                        day_d_lake):
    """On an empty lake the first table is created, the rest are not yet."""
    lake_dir = tmp_path / "lake"
    run_killed_at(run_args(D, sim_landing, lake_dir), "wrote bronze.offsets")
    tables = [f"{layer}.{name}" for layer, name, _path in lake.list_tables(lake_dir)]
    assert "bronze.offsets" in tables and not any(t.startswith(("silver", "gold")) for t in tables)
    rocketlens(*run_args(D, sim_landing, lake_dir))
    assert contents(spark, lake_dir) == contents(spark, day_d_lake)
