"""Fixtures of the replay tests (helpers live in ``replay_vectors.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.replay.replay_vectors import VECTOR_RECORDS, VECTORS_FILE


@pytest.fixture(scope="session")
def vector_records() -> list[dict]:
    if not VECTOR_RECORDS:
        pytest.skip(f"allocation vectors not found at {VECTORS_FILE} (set ROCKETLENS_VECTORS)")
    return VECTOR_RECORDS


@pytest.fixture(scope="session")
def vectors_file(vector_records) -> Path:
    return VECTORS_FILE
