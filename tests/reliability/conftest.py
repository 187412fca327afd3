"""Shared small days for the reliability tests.

Simulated ``healthy`` day slices (seconds to write, ~8 s to run): D = 2025-11-21 23:40–24:00 and
D+1 = 2025-11-22 00:00–00:20, adjacent so that D+1's first snapshots need D's tail from the lake
(docs/rules.md: the look-back); and D+3 = 2025-11-24 00:00–00:20, whose look-back day (D+2)
nobody writes, for runs in parallel with D.
"""

from __future__ import annotations

import datetime as dt
import shutil

import pytest

from tests.conftest import shared_dir
from tests.reliability.lakes import rocketlens, run_args

D, D1, D3 = "2025-11-21", "2025-11-22", "2025-11-24"


# Each built once per run (shared by the pytest workers); tests copy a lake before writing to it.
@pytest.fixture(scope="session")
def sim_landing(tmp_path_factory):
    from jobs.simulate.run import simulate

    def build(root):
        landing = root / "landing"
        simulate("healthy", dt.date.fromisoformat(D), landing, seed=0, window=("23:40", "24:00"))
        simulate("healthy", dt.date.fromisoformat(D1), landing, seed=1, window=("00:00", "00:20"))
        simulate("healthy", dt.date.fromisoformat(D3), landing, seed=3, window=("00:00", "00:20"))

    return shared_dir(tmp_path_factory, "reliability-sim", build) / "landing"


@pytest.fixture(scope="session")
def day_d_lake(tmp_path_factory, sim_landing):
    """A lake after running D alone (an empty lake before)."""
    return shared_dir(tmp_path_factory, "reliability-day-d",
                      lambda root: rocketlens(*run_args(D, sim_landing, root / "lake"))) / "lake"


@pytest.fixture(scope="session")
def in_order_lake(tmp_path_factory, day_d_lake, sim_landing):
    """The reference: D, then D+1, each run once, in order (as the nightly schedule does)."""
    def build(root):
        shutil.copytree(day_d_lake, root / "lake")
        rocketlens(*run_args(D1, sim_landing, root / "lake"))

    return shared_dir(tmp_path_factory, "reliability-in-order", build) / "lake"


@pytest.fixture(scope="session")
def in_order_contents(spark, in_order_lake):
    from tests.reliability.lakes import contents

    return contents(spark, in_order_lake)
