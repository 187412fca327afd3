"""``rocketlens run`` on a real Spark cluster, submitted as docs/operations.md tells users.

A standalone master and two workers (one core, 1 GiB each) run on loopback from pip's pyspark
(``tests/standalone_cluster.py``); ``make dist`` builds the packed venv; the ``bash`` block of
docs/operations.md's *spark-submit* section is run as written — only the master
(``spark://…`` instead of ``yarn``), the driver's venv, the landing and the lake are put in, and the
event log is switched on to observe the run — from a folder holding ``dist/``, on the simulated
sample day, into a Delta lake (the Delta jars come from Maven Central through ``--packages`` and
are cached in ``~/.ivy2*``). Then:

- its gold tables equal, row for row, the local run's (``sample_lake``: the same day on the
  default engine, Sail, into Delta), all columns but ``_run_id``/``_ingested_at``;
- its event log shows the cluster at work: the landing scans ran as several tasks (byte ranges
  and files packed into partitions, ``jobs/ingest/landing_source.py``) on both executors, the
  tasks sent only small results to the driver (nothing collected), and no physical plan holds a
  global sort (a range-partitioning exchange or a ``Sort …, true``).

Acceptance tier (``spark_only``): it needs Java and minutes (``make dist`` and the cluster run).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.standalone_cluster import (
    ClusterUnavailable,
    spark_home,
    standalone_cluster,
    submit_script,
    submitting,
)

pytestmark = pytest.mark.spark_only

REPO = Path(__file__).resolve().parents[2]
IGNORED_COLUMNS = {"_run_id", "_ingested_at"}
# Doubles are compared to 12 decimals: a sum of doubles depends on the order it adds them in,
# which the partitioning decides (strategy_whatif.max_client_load_share on the S day: Sail
# 0.7157512259640509, the cluster 0.715751225964051)
DOUBLE_DIGITS = 12
FLOATING = {'"double"', '"float"'}
# a scan task's serialized result (its status and metrics) is about 4 kB on the sample day; a
# partition of landing rows sent to the driver would be megabytes
MAX_SCAN_RESULT_BYTES = 64 << 10
# spark.sql.autoBroadcastJoinThreshold's default: the largest table the driver gathers to
# broadcast; on the sample day a stage sent it 1.5 MB at most
MAX_STAGE_RESULT_BYTES = 10 << 20


@pytest.fixture(scope="module")
def dist() -> Path:
    """``make dist`` in the repo, with the venv that runs the tests (``BIN``; ``-o`` keeps make
    from reinstalling it)."""
    proc = subprocess.run(["make", "-o", ".venv/.installed", "dist",
                           f"BIN={Path(sys.executable).parent}"],
                          cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return REPO / "dist"


@pytest.fixture(scope="module")
def cluster_run(dist, sample_lake, tmp_path_factory):
    """The documented spark-submit of the sample day on a two-worker standalone cluster."""
    root = tmp_path_factory.mktemp("cluster")
    submit_dir, events, lake = root / "submit", root / "events", root / "lake"
    submit_dir.mkdir()
    events.mkdir()
    (submit_dir / "dist").symlink_to(dist)
    event_log = ["spark.eventLog.enabled=true", f"spark.eventLog.dir=file://{events}",
                 "spark.eventLog.compress=false", "spark.eventLog.rolling.enabled=false"]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ROCKETLENS", "PYSPARK", "SPARK_"))}
    env["PATH"] = f"{spark_home() / 'bin'}:{env['PATH']}"  # spark-submit as on a Spark node
    env["PYTHONPATH"] = str(REPO)  # the driver runs this checkout (an editable install may not)
    try:
        with standalone_cluster(root / "cluster") as cluster:
            script = submit_script(cluster.master_url, sample_lake.parent / "landing", lake,
                                   event_log)
            with submitting(script, submit_dir, env) as submit:
                out, err = submit.communicate(timeout=2400)
            proc = subprocess.CompletedProcess(submit.args, submit.returncode, out, err)
            workers = cluster.state()["workers"]
    except ClusterUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    logs = list(events.iterdir())
    assert len(logs) == 1, logs
    return proc, lake, [json.loads(line) for line in logs[0].read_text().splitlines()], workers


def _without_nullability(dtype):
    """A Delta schema type without its ``containsNull``/``valueContainsNull``/``nullable`` flags:
    classic Spark writes ``group_health.sources`` as an array that may contain nulls, Sail as
    one that does not (the values are the same)."""
    if isinstance(dtype, dict):
        return {k: _without_nullability(v) for k, v in dtype.items()
                if k not in ("containsNull", "valueContainsNull", "nullable", "metadata")}
    if isinstance(dtype, list):
        return [_without_nullability(v) for v in dtype]
    return dtype


def delta_columns(table: Path) -> dict[str, str]:
    """Column name -> type (nullability aside) of a Delta table, from the schema in its log's
    first metaData."""
    for log in sorted((table / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            meta = json.loads(line).get("metaData") if line.strip() else None
            if meta is not None:
                fields = json.loads(meta["schemaString"])["fields"]
                return {f["name"]: json.dumps(_without_nullability(f["type"])) for f in fields}
    raise AssertionError(f"{table} has no metaData in its Delta log")


def gold_differences(mine: Path, theirs: Path) -> dict[str, tuple[int, int, int]]:
    """Per gold table: (rows, rows only in ``mine``, rows only in ``theirs``), all columns but
    the run's own, compared as multisets (EXCEPT ALL) in one ``rocketlens sql`` on Sail."""
    names = sorted(p.name for p in (theirs / "gold").iterdir() if (p / "_delta_log").is_dir())
    assert names and sorted(p.name for p in (mine / "gold").iterdir()) == names
    parts = []
    for name in names:
        columns = delta_columns(theirs / "gold" / name)
        assert delta_columns(mine / "gold" / name) == columns, name
        cols = ", ".join(f"round(`{c}`, {DOUBLE_DIGITS}) AS `{c}`" if kind in FLOATING else f"`{c}`"
                         for c, kind in columns.items() if c not in IGNORED_COLUMNS)
        a, b = f"delta.`{mine / 'gold' / name}`", f"delta.`{theirs / 'gold' / name}`"
        parts += [f"SELECT '{name}' AS t, 'rows' AS k, count(*) AS n FROM {a}",
                  f"SELECT '{name}', 'mine', count(*) FROM "
                  f"(SELECT {cols} FROM {a} EXCEPT ALL SELECT {cols} FROM {b})",
                  f"SELECT '{name}', 'theirs', count(*) FROM "
                  f"(SELECT {cols} FROM {b} EXCEPT ALL SELECT {cols} FROM {a})"]
    out = run_cli("sql", " UNION ALL ".join(parts), "--lake", str(theirs), "--format", "json")
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    for line in out.stdout.splitlines():
        if line.strip():
            row = json.loads(line)
            counts[row["t"]][row["k"]] = row["n"]
    return {name: (c["rows"], c["mine"], c["theirs"]) for name, c in counts.items()}


def finished_event(proc) -> dict:
    found = [json.loads(line) for line in proc.stdout.splitlines()
             if line.startswith('{"ts"') and '"event": "finished"' in line]
    assert len(found) == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    return found[0]


def test_the_documented_submit_runs_the_day_on_the_cluster(cluster_run):
    proc, lake, _events, workers = cluster_run
    finished = finished_event(proc)
    findings = sum(finished["findings_at_or_above"].values())
    assert proc.returncode == (3 if findings else 0), proc.stdout[-3000:] + proc.stderr[-3000:]
    assert len(workers) == 2 and all(w["state"] == "ALIVE" for w in workers)
    assert {p.name for p in (lake / "gold").iterdir()} >= {"group_health", "orphaned_queues"}


def test_the_cluster_s_gold_tables_equal_the_local_run_s_row_for_row(cluster_run, sample_lake):
    _proc, lake, _events, _workers = cluster_run
    diff = gold_differences(lake, sample_lake)
    assert sum(rows for rows, _, _ in diff.values()) > 0
    assert {name: d for name, d in diff.items() if d[1] or d[2]} == {}


def _landing_stages(events: list[dict]) -> set[int]:
    """Stages whose RDDs include the landing data source's scan."""
    stages = set()
    for e in events:
        if e["Event"] == "SparkListenerStageSubmitted":
            info = e["Stage Info"]
            if any("rocketlens_landing" in json.dumps(rdd) for rdd in info["RDD Info"]):
                stages.add(info["Stage ID"])
    return stages


def test_the_landing_read_runs_in_several_tasks_on_both_executors(cluster_run):
    _proc, _lake, events, _workers = cluster_run
    landing = _landing_stages(events)
    assert landing, "no stage of the event log reads the landing data source"
    tasks = [e for e in events if e["Event"] == "SparkListenerTaskEnd"]
    on_executor: dict[str, int] = defaultdict(int)
    per_stage: dict[int, int] = defaultdict(int)
    for t in tasks:
        if t["Stage ID"] in landing:
            on_executor[t["Task Info"]["Executor ID"]] += 1
            per_stage[t["Stage ID"]] += 1
    executors = {e["Executor ID"] for e in events if e["Event"] == "SparkListenerExecutorAdded"}
    assert len(executors) == 2 and "driver" not in executors
    assert set(on_executor) == executors, on_executor  # both executors read landing data
    assert max(per_stage.values()) >= 2, per_stage  # a scan split into several partitions


def test_the_landing_rows_stay_on_the_executors_and_no_plan_sorts_globally(cluster_run):
    """A landing scan's task returns its status only (its rows go to shuffle files and lake
    files); no stage sends the driver more than Spark's broadcast threshold (what reaches the
    driver: small tables it broadcasts for joins, Delta's commit statistics, the per-group
    counts that plan the batches, each task's status); and no physical plan holds a
    range-partitioning exchange or a global ``Sort …, true``."""
    _proc, _lake, events, _workers = cluster_run
    landing = _landing_stages(events)
    tasks = [e for e in events if e["Event"] == "SparkListenerTaskEnd" and e.get("Task Metrics")]
    assert len(tasks) > 10
    scanned = [t for t in tasks if t["Stage ID"] in landing]
    assert sum(t["Task Metrics"]["Input Metrics"]["Records Read"] for t in scanned) > 100_000
    assert max(t["Task Metrics"]["Result Size"] for t in scanned) < MAX_SCAN_RESULT_BYTES
    to_driver: dict[int, int] = defaultdict(int)
    for t in tasks:
        to_driver[t["Stage ID"]] += t["Task Metrics"]["Result Size"]
    assert max(to_driver.values()) < MAX_STAGE_RESULT_BYTES, max(to_driver.values())
    plans = [e["physicalPlanDescription"] for e in events
             if e["Event"].endswith(("SQLExecutionStart", "SQLAdaptiveExecutionUpdate"))]
    assert any("BatchScan rocketlens_landing" in plan for plan in plans)
    global_sorts = [line.strip() for plan in plans for line in plan.splitlines()
                    if "rangepartitioning" in line or re.search(r"\bSort \[.*\], true", line)]
    assert global_sorts == []
