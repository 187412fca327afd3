"""``rocketlens replay`` end to end, as a user runs it: ``python -m jobs replay`` from the repo root."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.replay.replay_vectors import REPO_ROOT, mismatches, producer_mismatches


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


def assert_reproduces_producer_vectors(completed: subprocess.CompletedProcess, records: list[dict]) -> None:
    assert completed.returncode == 0, completed.stderr
    outputs = [json.loads(line) for line in completed.stdout.splitlines()]
    assert [o["case_id"] for o in outputs] == [r["case_id"] for r in records]
    assert [p for record, output in zip(records, outputs) for p in producer_mismatches(record, output)] == []


def test_cli_python_engine_reproduces_every_java_producer_vector(producer_vectors_file, producer_vector_records):
    assert_reproduces_producer_vectors(run_replay("--cases", str(producer_vectors_file), "--engine", "python"),
                                       producer_vector_records)


@pytest.mark.sail_only
def test_cli_sail_engine_reproduces_every_java_producer_vector(producer_vectors_file, producer_vector_records):
    assert_reproduces_producer_vectors(run_replay("--cases", str(producer_vectors_file), "--engine", "sail"),
                                       producer_vector_records)


@pytest.mark.sail_only
def test_cli_answers_a_mixed_file_in_file_order(tmp_path, vector_records, producer_vector_records):
    records = [producer_vector_records[0], vector_records[0], producer_vector_records[1], vector_records[1]]
    cases = tmp_path / "mixed.jsonl"
    cases.write_text("".join(json.dumps(r) + "\n" for r in records))
    completed = run_replay("--cases", str(cases), "--engine", "sail")
    assert completed.returncode == 0, completed.stderr
    outputs = [json.loads(line) for line in completed.stdout.splitlines()]
    assert [o["case_id"] for o in outputs] == [r["case_id"] for r in records]
    assert producer_mismatches(records[0], outputs[0]) == [] and mismatches(records[1], outputs[1]) == []


def test_cli_producer_case_with_a_bad_key_is_a_usage_error(tmp_path, producer_vector_records):
    record = dict(producer_vector_records[0], key={"type": "Integer", "value": "4294967296"})
    cases = tmp_path / "bad.jsonl"
    cases.write_text(json.dumps(record) + "\n")
    completed = run_replay("--cases", str(cases), "--engine", "python")
    assert completed.returncode == 2
    assert completed.stderr.startswith(f"rocketlens: --cases {cases}: not a cases file (Integer key")
