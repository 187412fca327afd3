"""The replay case format of ``vectors/`` (DESIGN.md §7): reading cases, listing calls, printing results.

A case is one allocation state (strategy, its parameters, ``mq_all``, ``cid_all``); its calls are
the input's ``results`` entries (only ``current_cid_index`` and ``current_cid`` are read) or, without
them, one call per position of ``cid_all``. Output per case:
``{"case_id", "results": [{"current_cid_index", "current_cid", "allocated", "error"}]}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from jobs.replay.reference import AllocationError, MessageQueue, allocate, as_message_queue


@dataclass(frozen=True)
class Call:
    current_cid_index: int | None
    current_cid: str | None


@dataclass(frozen=True)
class Case:
    """One line of a cases file, with its parameters flattened to ``allocate``'s keywords."""

    case_id: str
    strategy: str
    mq_all: list[MessageQueue] | None
    cid_all: list[str] | None
    calls: list[Call]
    consumer_group: str = ""
    virtual_nodes: int | None = None
    consumer_idcs: list[str] | None = None
    config_queues: list[MessageQueue] | None = None
    inner_strategy: str | None = None
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    def params(self) -> dict:
        return {"consumer_group": self.consumer_group, "virtual_nodes": self.virtual_nodes,
                "consumer_idcs": self.consumer_idcs, "config_queues": self.config_queues,
                "inner_strategy": self.inner_strategy}


def parse_case(record: dict) -> Case:
    """Build a Case from one JSON object; missing ``results`` means one call per position."""
    params = record.get("params") or {}
    mq_all = record.get("mq_all")
    cid_all = record.get("cid_all")
    if "results" in record and record["results"] is not None:
        calls = [Call(r.get("current_cid_index"), r.get("current_cid")) for r in record["results"]]
    else:
        calls = [Call(i, cid) for i, cid in enumerate(cid_all or [])]
    config_queues = params.get("config_queues")
    return Case(
        case_id=record["case_id"],
        strategy=record["strategy"],
        mq_all=None if mq_all is None else [as_message_queue(mq) for mq in mq_all],
        cid_all=None if cid_all is None else list(cid_all),
        calls=calls,
        consumer_group=record.get("consumer_group") or "",
        virtual_nodes=params.get("virtual_nodes"),
        consumer_idcs=params.get("consumer_idcs"),
        config_queues=None if config_queues is None else [as_message_queue(mq) for mq in config_queues],
        inner_strategy=params.get("inner_strategy"),
        raw=record,
    )


def read_cases(path: str | Path) -> list[Case]:
    """Every non-blank line of a JSON Lines cases file, in file order."""
    with open(path, encoding="utf-8") as handle:
        return [parse_case(json.loads(line)) for line in handle if line.strip()]


def mq_json(mq: MessageQueue) -> dict:
    return {"topic": mq.topic, "broker_name": mq.broker_name, "queue_id": mq.queue_id}


def result_json(call: Call, allocated: Iterable[MessageQueue] | None,
                error: tuple[str, str] | None) -> dict:
    """One output entry; ``allocated`` is null when the call threw or CONFIG had no list."""
    return {
        "current_cid_index": call.current_cid_index,
        "current_cid": call.current_cid,
        "allocated": None if allocated is None or error else [mq_json(mq) for mq in allocated],
        "error": None if error is None else {"class": error[0], "message": error[1]},
    }


def replay_case_python(case: Case) -> dict:
    """Every call of a case through the pure-Python reference."""
    results = []
    for call in case.calls:
        try:
            allocated = allocate(case.strategy, call.current_cid, case.mq_all, case.cid_all,
                                 **case.params())
            results.append(result_json(call, allocated, None))
        except AllocationError as exc:
            results.append(result_json(call, None, (exc.java_class, exc.message)))
    return {"case_id": case.case_id, "results": results}


def replay_cases_python(cases: Iterable[Case]) -> Iterator[dict]:
    for case in cases:
        yield replay_case_python(case)
