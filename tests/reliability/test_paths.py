"""Paths and dates: ``--date`` has one spelling, landing and lake are checked, and nothing read
from the landing zone (file and folder names, field values, symlinks) can write outside the lake.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from jobs import lake
from tests.reliability.lakes import HAND_DAY, cli_env, rocketlens, run_args

DAY = "2025-11-21"


def only_line(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rocketlens: "), proc.stderr[-3000:]
    return lines[0]


@pytest.mark.parametrize("bad", ["2025-1-5", "2025-11-21T00:00", " 2025-11-21", "2025-11-21 ",
                                 "20251121", "2025-02-30", "2025-11-31", "2025-W47-5",
                                 "２０２５-11-21", "21/11/2025", ""])
def test_date_must_be_exactly_yyyy_mm_dd_of_a_real_day(tmp_path, bad):
    proc = rocketlens(*run_args(bad, HAND_DAY, tmp_path / "lake"), check=False)
    assert proc.returncode == 2
    assert "YYYY-MM-DD" in only_line(proc)
    assert not (tmp_path / "lake").exists()


def test_date_from_the_environment_is_checked_the_same_way(tmp_path):
    proc = rocketlens("run", "--landing", str(HAND_DAY), "--lake", str(tmp_path / "lake"),
                      check=False, env=cli_env(ROCKETLENS_DATE="2025-11-21T00:00"))
    assert proc.returncode == 2 and "YYYY-MM-DD" in only_line(proc)


def overlapping(tmp_path):
    landing = tmp_path / "landing"
    shutil.copytree(HAND_DAY, landing)
    return {"lake inside landing": (landing, landing / "lake"),
            "landing inside lake": (landing, tmp_path),
            "same folder": (landing, landing),
            "same folder through a symlink": (landing, _link(tmp_path / "alias", landing))}


def _link(link, target):
    link.symlink_to(target, target_is_directory=True)
    return link


@pytest.mark.parametrize("case", ["lake inside landing", "landing inside lake", "same folder",
                                  "same folder through a symlink"])
def test_lake_and_landing_must_not_overlap(tmp_path, case):
    landing, lake_dir = overlapping(tmp_path)[case]
    proc = rocketlens(*run_args(DAY, landing, lake_dir), check=False)
    assert proc.returncode == 2
    assert "overlap" in only_line(proc)


@pytest.mark.parametrize("which", ["landing", "lake"])
def test_a_file_where_a_folder_belongs_is_a_usage_error(tmp_path, which):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    landing = a_file if which == "landing" else HAND_DAY
    lake_dir = a_file if which == "lake" else tmp_path / "lake"
    proc = rocketlens(*run_args(DAY, landing, lake_dir), check=False)
    assert proc.returncode == 2
    assert "is a file" in only_line(proc)


def test_a_backtick_in_the_lake_path_is_refused(tmp_path):
    proc = rocketlens(*run_args(DAY, HAND_DAY, tmp_path / "la`ke"), check=False)
    assert proc.returncode == 2 and "backtick" in only_line(proc)


def hostile_landing(root):
    """The hand day plus names and values that look like paths, quotes and SQL, and symlinks
    out of the day folder."""
    landing = root / "landing"
    shutil.copytree(HAND_DAY, landing)
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_text("SECRET LINE\n")
    day = landing / "offsets" / f"date={DAY}"
    record = {"ts": "2025-11-21T10:00:00Z", "cluster": "../../../escape", "group": "/tmp/abs",
              "topic": "x`; DROP TABLE t; --", "broker_name": "date=../../x", "queue_id": 0,
              "broker_offset": 5, "consumer_offset": 1, "client_ip": "'\"`"}
    (day / "x..'`; name=y.jsonl").write_text(json.dumps(record) + "\n")
    (day / "date=..").mkdir()
    (day / "date=.." / "nested.jsonl").write_text(json.dumps(record) + "\n")
    (day / "link.jsonl").symlink_to(outside / "secret.jsonl")
    (day / "linked_dir").symlink_to(outside, target_is_directory=True)
    host = landing / "client_logs" / f"date={DAY}" / "host..` name"
    host.mkdir()
    shutil.copy(landing / "client_logs" / f"date={DAY}" / "host-billing-1" / "rocketmq_client.log",
                host / "rocketmq_client.log")
    return landing, outside


def tree(root) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.delta
def test_nothing_read_from_the_landing_zone_writes_outside_the_lake(spark, tmp_path):
    """Every path the run creates is under <lake>, in <layer>/<table>/(_delta_log|date=D);
    a symlink out of the landing root is not read. (Sail: it writes the Delta lake.)"""
    root = tmp_path / "root"
    root.mkdir()
    landing, outside = hostile_landing(root)
    lake_dir = root / "lake"
    before = tree(root)
    proc = rocketlens(*run_args(DAY, landing, lake_dir))
    created = tree(root) - before
    assert created and all(p.startswith("lake") for p in created), sorted(created)[:20]
    for layer, name, _path in lake.list_tables(lake_dir):
        folders = {p.name for p in (lake_dir / layer / name).iterdir() if p.is_dir()}
        assert folders <= {"_delta_log", f"date={DAY}"}, (name, folders)
    assert "link.jsonl: it links outside the landing root" in proc.stderr
    raw = "\n".join(r.raw or "" for r in lake.read_table(spark, lake_dir, "bronze", "quarantine")
                    .select("raw").collect())
    assert "SECRET LINE" not in raw
    # the hostile names and values did arrive, as data
    assert "offsets/date=2025-11-21/x..'`; name=y.jsonl" in proc.stdout
    assert "../../../escape" in values(spark, lake_dir, "offsets", "cluster")
    assert "host..` name" in values(spark, lake_dir, "client_log_events", "host")
    assert os.listdir(outside) == ["secret.jsonl"]


def values(spark, lake_dir, table, column) -> set:
    return {r[0] for r in lake.read_table(spark, lake_dir, "bronze", table).select(column)
            .distinct().collect()}
