"""Fixtures of the replay tests (helpers live in ``replay_vectors.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.replay.replay_vectors import (
    PRODUCER_VECTOR_RECORDS,
    PRODUCER_VECTORS_FILE,
    VECTOR_RECORDS,
    VECTORS_FILE,
)


@pytest.fixture(scope="session")
def vector_records() -> list[dict]:
    assert len(VECTOR_RECORDS) == 240, f"expected the 240 public vectors in {VECTORS_FILE}"
    return VECTOR_RECORDS


@pytest.fixture(scope="session")
def vectors_file(vector_records) -> Path:
    return VECTORS_FILE


@pytest.fixture(scope="session")
def producer_vector_records() -> list[dict]:
    assert len(PRODUCER_VECTOR_RECORDS) == 267, f"expected the 267 public producer vectors in {PRODUCER_VECTORS_FILE}"
    return PRODUCER_VECTOR_RECORDS


@pytest.fixture(scope="session")
def producer_vectors_file(producer_vector_records) -> Path:
    return PRODUCER_VECTORS_FILE
