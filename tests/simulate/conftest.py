"""Simulated days for the simulator tests, read back with plain json/gzip (no Spark)."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path

import pytest

from jobs.simulate.run import simulate

DAY = dt.date(2025, 1, 15)
# each scenario's faults fall inside its window; state before the window is still simulated
WINDOWS = {
    "healthy": ("09:00", "09:20"),
    "duplicate-client-id": ("09:00", "09:20"),
    "topicb-subscription": ("09:00", "09:30"),
    "strategy-mismatch": ("09:00", "09:20"),
    "client-leaves": ("09:50", "10:10"),
    "slow-message": ("09:55", "10:20"),
    "consumer-hung": ("09:55", "10:15"),
    "consumer-crash": ("13:55", "14:15"),
    "sample": ("13:58", "14:05"),
}


class Day:
    def __init__(self, root: Path, truth: dict) -> None:
        self.root = root
        self.truth = truth

    def records(self, source: str) -> list[dict]:
        rows = []
        for path in sorted((self.root / source).rglob("*.jsonl*")):
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt", encoding="utf-8") as fh:
                rows += [json.loads(line) for line in fh]
        return rows

    def log_lines(self) -> dict[str, list[str]]:
        return {p.parent.name: p.read_text(encoding="utf-8").splitlines()
                for p in sorted((self.root / "client_logs").rglob("rocketmq_client.log"))}

    def fault(self, kind: str) -> dict:
        return next(f for f in self.truth["faults"] if f["kind"] == kind)


@pytest.fixture(scope="session")
def simulated(tmp_path_factory):
    cache: dict[str, Day] = {}

    def get(name: str) -> Day:
        if name not in cache:
            root = tmp_path_factory.mktemp(name)
            truth = simulate(name, DAY, root, seed=7, window=WINDOWS[name])
            cache[name] = Day(root, truth)
        return cache[name]

    return get


def ts_ms(value) -> int:
    if isinstance(value, int):
        return value
    return int(dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
