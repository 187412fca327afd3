"""A Delta lake of consecutive simulated days, built once by the CLI (Sail), for notify and
metrics: duplicate client ids on 11-21 and 11-22 (a fault that persists), a healthy 11-23."""

import pytest

from tests.conftest import run_cli, shared_dir

DAYS = {"2025-11-21": "duplicate-client-id", "2025-11-22": "duplicate-client-id",
        "2025-11-23": "healthy"}
WINDOW = "00:00-00:40"


@pytest.fixture(scope="session")
def days_lake(tmp_path_factory):
    """Built once per run; the tests only read it (several check that nothing was written)."""
    def build(root):
        for day, scenario in DAYS.items():
            run_cli("simulate", "--scenario", scenario, "--date", day, "--landing",
                    str(root / "landing"), "--window", WINDOW)
            run_cli("run", "--date", day, "--landing", str(root / "landing"), "--lake",
                    str(root / "lake"))

    return shared_dir(tmp_path_factory, "days", build) / "lake"


def lake_files(lake):
    """Every file of the lake with its size and mtime: what 'untouched' compares."""
    return sorted((str(p.relative_to(lake)), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in lake.rglob("*") if p.is_file())
