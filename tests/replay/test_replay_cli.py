"""``rocketlens replay`` end to end, as a user runs it: ``python -m jobs replay`` from the repo root."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.replay.replay_vectors import REPO_ROOT, mismatches


def run_replay(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jobs", "replay", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=timeout)


def assert_reproduces_vectors(completed: subprocess.CompletedProcess, vector_records: list[dict]) -> None:
    assert completed.returncode == 0, completed.stderr
    outputs = [json.loads(line) for line in completed.stdout.splitlines()]
    assert [o["case_id"] for o in outputs] == [r["case_id"] for r in vector_records]
    assert [p for record, output in zip(vector_records, outputs) for p in mismatches(record, output)] == []


def test_cli_python_engine_reproduces_every_java_vector(vectors_file, vector_records):
    assert_reproduces_vectors(run_replay("--cases", str(vectors_file), "--engine", "python"), vector_records)


@pytest.mark.sail_only
def test_cli_sail_engine_reproduces_every_java_vector(vectors_file, vector_records):
    assert_reproduces_vectors(run_replay("--cases", str(vectors_file), "--engine", "sail"), vector_records)


def test_cli_without_results_makes_one_call_per_position(tmp_path):
    case = {"case_id": "no-results", "strategy": "AVG", "params": {"category": "grid"},
            "mq_all": [{"topic": "t", "broker_name": "b", "queue_id": q} for q in range(3)],
            "cid_all": ["A", "A", "B"]}
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(case) + "\n")
    completed = run_replay("--cases", str(cases), "--engine", "python")
    assert completed.returncode == 0, completed.stderr
    [output] = [json.loads(line) for line in completed.stdout.splitlines()]
    assert [(r["current_cid_index"], r["current_cid"]) for r in output["results"]] == [(0, "A"), (1, "A"), (2, "B")]
    # 3 queues, 3 positions: A's first index is 0 for both copies, slice 1 is unowned (facts §1.1)
    assert [[mq["queue_id"] for mq in r["allocated"]] for r in output["results"]] == [[0], [0], [2]]


def test_cli_missing_cases_file_is_a_usage_error():
    completed = run_replay("--cases", "does-not-exist.jsonl", "--engine", "python")
    assert completed.returncode == 2
    assert completed.stderr.strip() == "rocketlens: --cases does-not-exist.jsonl: no such file"
