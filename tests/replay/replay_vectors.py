"""The Java-made allocation vectors and how to compare a replay with them.

The vectors (a copy of the steering repo's ``shared/vectors/`` in ``tests/data/vectors/``, or the
folder ``ROCKETLENS_VECTORS`` names) were produced by RocketMQ's own classes; they are the expected
values. A missing file fails the tests: they never pass by skipping. NullPointerException
messages are JDK text, so only the class of an NPE is compared (vectors/README.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
VECTORS_DIR = Path(os.environ.get("ROCKETLENS_VECTORS", REPO_ROOT / "tests" / "data" / "vectors"))
VECTORS_FILE = VECTORS_DIR / "allocation_vectors_public.jsonl"
PRODUCER_VECTORS_FILE = VECTORS_DIR / "producer_hash_vectors_public.jsonl"
NPE = "java.lang.NullPointerException"


def load_vector_records(path: Path = VECTORS_FILE) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


VECTOR_RECORDS = load_vector_records()
PRODUCER_VECTOR_RECORDS = load_vector_records(PRODUCER_VECTORS_FILE)


def producer_mismatches(expected_record: dict, produced: dict) -> list[str]:
    """Differences between a producer case's Java answer and a replay's output line.

    The whole ``getMessage()`` is compared, FAQ line included (the replay models it per client
    version), and the cause where Java has one; JDK texts are those of JDK 17, which made the vectors.
    """
    want = {"case_id": expected_record["case_id"], **expected_record["expected"]}
    return [f"{want['case_id']}: {name} {produced.get(name)!r} != Java {want[name]!r}"
            for name in ("case_id", "broker_name", "queue_id", "error") if produced.get(name) != want[name]]


def mismatches(expected_record: dict, produced: dict) -> list[str]:
    """Differences between a case's Java results and a replay's output line, one string each."""
    problems = []
    if produced.get("case_id") != expected_record["case_id"]:
        return [f"case_id {produced.get('case_id')!r} != {expected_record['case_id']!r}"]
    expected_results, produced_results = expected_record["results"], produced["results"]
    if len(produced_results) != len(expected_results):
        return [f"{len(produced_results)} results, expected {len(expected_results)}"]
    for n, (want, got) in enumerate(zip(expected_results, produced_results)):
        where = f"{expected_record['case_id']} call {n} ({want['current_cid']!r})"
        if (got["current_cid_index"], got["current_cid"]) != (want["current_cid_index"], want["current_cid"]):
            problems.append(f"{where}: call identity {got['current_cid_index']}, {got['current_cid']!r}")
        if got["allocated"] != want["allocated"]:
            problems.append(f"{where}: allocated {got['allocated']} != Java {want['allocated']}")
        want_error, got_error = want["error"], got["error"]
        if (want_error is None) != (got_error is None):
            problems.append(f"{where}: error {got_error} != Java {want_error}")
        elif want_error is not None:
            if got_error["class"] != want_error["class"]:
                problems.append(f"{where}: error class {got_error['class']} != Java {want_error['class']}")
            elif want_error["class"] != NPE and got_error["message"] != want_error["message"]:
                problems.append(f"{where}: message {got_error['message']!r} != Java {want_error['message']!r}")
    return problems


def vector_record(case_id: str) -> dict:
    """One vector by id."""
    for record in VECTOR_RECORDS:
        if record["case_id"] == case_id:
            return record
    raise LookupError(f"vector {case_id} not found in {VECTORS_FILE}")
