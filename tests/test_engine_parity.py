"""The whole pipeline on classic Spark + Delta gives the gold tables Sail gives, row for row
(docs/contract.md §1: one code path, two engines), on the mixed ``real-cluster`` day. (The sample
day's classic + Delta run is the standalone cluster's, tests/delivery/test_standalone_cluster.py,
compared there with the same Sail lake.) One engine per process: each run is ``rocketlens run`` in a subprocess,
``--engine spark`` for classic; this process's session (classic + Delta in the classic pass)
only reads both lakes. Acceptance tier (``spark_only``: a classic run of a day takes minutes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs import lake
from tests.conftest import run_cli, shared_dir
from tests.gold.test_real_clusters import WINDOW as MIXED_WINDOW

pytestmark = pytest.mark.spark_only

RUN_METADATA = ("_run_id", "_ingested_at")  # differ between runs by design (docs/lake.md, Reruns)


def gold_rows(spark, lake_dir: Path) -> dict[str, list[str]]:
    """Every gold table of ``lake_dir`` as sorted JSON rows, run metadata left out."""
    out = {}
    for layer, name, path in lake.list_tables(lake_dir):
        if layer != "gold":
            continue
        df = spark.read.format("delta").load(path)
        df = df.select(*[c for c in df.columns if c not in RUN_METADATA])
        out[name] = sorted(json.dumps(r.asDict(recursive=True), default=str, sort_keys=True)
                           for r in df.collect())
    return out


def differences(sail: dict[str, list[str]], classic: dict[str, list[str]]) -> dict[str, dict]:
    """Per gold table that differs: its row counts and up to 3 rows only one engine has."""
    out = {}
    for table in sorted(set(sail) | set(classic)):
        a, b = sail.get(table), classic.get(table)
        if a == b:
            continue
        a, b = a or [], b or []
        out[table] = {"sail_rows": len(a), "classic_rows": len(b),
                      "only_sail": sorted(set(a) - set(b))[:3],
                      "only_classic": sorted(set(b) - set(a))[:3]}
    return out


def classic_lake(tmp_path_factory, key: str, landing: Path, day: str) -> Path:
    return shared_dir(tmp_path_factory, f"classic-{key}", lambda root: run_cli(
        "run", "--date", day, "--landing", str(landing), "--lake", str(root / "lake"),
        "--engine", "spark")) / "lake"


def assert_same_gold(spark, sail_lake: Path, classic: Path) -> None:
    sail, other = gold_rows(spark, sail_lake), gold_rows(spark, classic)
    assert len(sail) >= 10 and sum(map(len, sail.values())) > 0
    assert differences(sail, other) == {}


def test_the_mixed_real_cluster_day_gives_the_same_gold_tables_on_classic_delta_and_sail(
        spark, tmp_path_factory):
    day = "2025-11-21"

    def build(root: Path) -> None:
        run_cli("simulate", "--scenario", "real-cluster", "--date", day, "--landing",
                str(root / "landing"), "--window", "-".join(MIXED_WINDOW))
        run_cli("run", "--date", day, "--landing", str(root / "landing"), "--lake",
                str(root / "lake"))  # the CLI's default engine: Sail

    sail_root = shared_dir(tmp_path_factory, "mixed-sail", build)
    assert_same_gold(spark, sail_root / "lake",
                     classic_lake(tmp_path_factory, "mixed", sail_root / "landing", day))
