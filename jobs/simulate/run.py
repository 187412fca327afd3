"""One simulated day: scenario -> cluster events -> message flow -> landing files + ``_truth.json``."""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path

from jobs.simulate import consumer_kinds
from jobs.simulate.cluster import DAY_MS, Cluster
from jobs.simulate.flow import Flow
from jobs.simulate.producer_truth import expected_producer_findings
from jobs.simulate.scenario import Scenario, ScenarioError, load_scenario, parse_time_ms
from jobs.simulate.truth import build_truth
from jobs.simulate.writers import Clock, LandingFiles

SCALES = {"S": 0, "M": 100, "L": 300}  # total consumer groups after padding with healthy ones
FILL_PERSIST_LOGGED = 3  # filler groups whose [persistAll] lines are written at M/L (README)


def simulate(scenario: str | Scenario, date: dt.date, landing: Path, *, seed: int = 0, scale: str = "S",
             window: tuple[str, str] | None = None, landing_format: str = "jsonl") -> dict:
    """Write one day of landing data for ``scenario`` and return the truth.

    ``landing_format`` "mqadmin" writes offsets, connections and running_info as mqadmin text and
    fastjson dumps (``docs/landing-mqadmin.md``) instead of JSON Lines.
    ``window`` ("HH:MM", "HH:MM") limits the written records to part of the day (tests); the state
    before it is still simulated, so offsets and lags are those of the full day.
    """
    base = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    if scale not in SCALES:
        raise ScenarioError(f"unknown scale {scale!r}; use one of {', '.join(SCALES)}")
    full = expand_scale(base, scale, seed)
    span = (0, DAY_MS)
    if window is not None:
        span = (parse_time_ms(window[0]), parse_time_ms(window[1]) if window[1] != "24:00" else DAY_MS)
        if not 0 <= span[0] < span[1] <= DAY_MS:
            raise ScenarioError(f"window {window[0]}-{window[1]} is not inside the day")
    landing = Path(landing)
    clock = Clock(date)
    cluster = Cluster(full, seed, -DAY_MS, span[1])
    fill = [g.name for g in full.groups if g.name.startswith("GID_fill_")]
    logged = {g.name for g in full.groups if g.persist_logged}
    for p in cluster.processes:
        p.log_persist = p.group in logged and (p.group not in fill or p.group in fill[:FILL_PERSIST_LOGGED])
        p.log_persist = p.log_persist and consumer_kinds.logs_persist(full.group(p.group).kind)
    files = LandingFiles(landing, clock, gzip_level=6 if scale == "S" else 1,
                         landing_format=landing_format)
    flow = Flow(full, cluster, seed, clock, span, files)
    try:
        flow.run()
    finally:
        files.close()
    truth = build_truth(full, cluster, flow, clock, seed, span)
    truth["expected_producer_findings"] = expected_producer_findings(full, flow, clock)
    truth["scale"] = scale
    truth["lines"] = dict(sorted(files.lines.items()))
    landing.mkdir(parents=True, exist_ok=True)
    (landing / "_truth.json").write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
    return truth


def expand_scale(scenario: Scenario, scale: str, seed: int) -> Scenario:
    """Pad the scenario with healthy groups (2 topics x 2 brokers x 16 queues, 4 clients each)."""
    target = SCALES[scale]
    missing = target - len(scenario.groups)
    if missing <= 0:
        return scenario
    rng = random.Random(f"scale:{seed}")
    data = scenario.model_dump(exclude_defaults=True)
    data.pop("include", None)
    brokers = [b["name"] for b in data.get("brokers", [])]
    for name in ("broker-a", "broker-b"):
        if name not in brokers:
            data.setdefault("brokers", []).append({"name": name})
    for n in range(missing):
        group = f"GID_fill_{n:03d}"
        topics = [f"fill-{n:03d}-orders", f"fill-{n:03d}-events"]
        for i, topic in enumerate(topics):
            data.setdefault("topics", []).append({
                "name": topic, "queues": {"broker-a": 16, "broker-b": 16},
                "rate": round(rng.uniform(20, 120), 1), "producer": "hash" if i else "round_robin",
                "skew": round(rng.uniform(0.5, 1.2), 2)})
        data.setdefault("groups", []).append({"name": group})
        for c in range(4):
            ip = f"10.{20 + n // 200}.{n % 200}.{10 + c}"
            data.setdefault("clients", []).append({
                "name": f"fill-{n:03d}-c{c}", "group": group, "ip": ip, "pid": rng.randrange(1000, 60000),
                "version": rng.choice(["4.9.8", "4.9.4", "5.1.4"]), "subscriptions": topics,
                "start": f"-{rng.randrange(1, 20):02d}:{rng.randrange(60):02d}"})
    return Scenario.model_validate(data)
