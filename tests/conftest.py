"""One engine per pytest process (a Sail session and a classic one cannot share a process).

``ROCKETLENS_TEST_ENGINE=sail`` (default) runs everything; ``=spark`` runs on classic Spark
local[2] with Delta tests deselected (``-m "not delta"``), since the Delta jars come from Maven
Central, which these machines cannot reach.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("SPARK_TESTING", "1")
os.environ.setdefault("TZ", "UTC")

TEST_ENGINE = os.environ.get("ROCKETLENS_TEST_ENGINE", "sail")


@pytest.fixture(scope="session")
def engine_name() -> str:
    return TEST_ENGINE


@pytest.fixture(scope="session")
def spark():
    from jobs.engine import open_session

    with open_session(TEST_ENGINE, delta=False, master="local[2]", shuffle_partitions=2,
                      app_name="rocketlens-tests") as session:
        yield session


def pytest_collection_modifyitems(config, items):
    if TEST_ENGINE == "sail":
        for item in items:
            if item.get_closest_marker("spark_only"):
                item.add_marker(pytest.mark.skip(reason="needs classic Spark; runs in its pass"))
        return
    for item in items:
        if item.get_closest_marker("delta") or item.get_closest_marker("sail_only"):
            item.add_marker(pytest.mark.skip(reason="Delta/Sail-only test; runs in the Sail pass"))
