"""Acceptance: a day fed only from RocketMQ's own outputs (mqadmin consumerProgress /
consumerConnection text, fastjson ConsumerRunningInfo dumps; docs/landing-mqadmin.md) gives the
same findings as the same day fed from JSON Lines (simulated both ways, same seed) — except where
the text has less evidence: consumerConnection prints no heartbeat times, so two processes behind
one id are known to run at once only after the broker would have expired a dead one
(docs/rules.md "Duplicate client ids"), and the duplicate's double ownership starts later."""

import datetime as dt
import json
import re

import pytest

from jobs.simulate.run import simulate
from tests.conftest import run_cli
from tests.gold.conftest import DAY, run_layers

SCENARIO, WINDOW = "duplicate-client-id", ("00:00", "00:40")
# mqadmin prints #LastTime to the second, so the lag-in-time of a queue can differ by < 1 s
SECOND_PRECISION = {"max_time_lag_seconds"}


def plain(rows, drop=frozenset()):
    """Rows as sorted JSON texts without run metadata (``_run_id``…) or ``drop`` columns."""
    out = []
    for r in rows:
        d = {k: v for k, v in r.asDict(recursive=True).items()
             if not k.startswith("_") and k not in drop}
        out.append(json.dumps(d, sort_keys=True, default=str))
    return sorted(out)


# without heartbeat times a duplicate is known once its two channels have been listed together
# for over the broker's 120 s expiry + 10 s scan: from the first connections round after that
# (rounds are a minute apart) and the offsets snapshot after it
LATER_BY_AT_MOST = dt.timedelta(seconds=120 + 10 + 60 + 60)
DOUBLE_OWNED_STARTS = {"first_seen", "minutes", "evidence"}


def _double_owned_minutes(finding: str) -> str:
    return re.sub(r"^(\w+ double-owned .*) \(up to [0-9.]+ min\)$", r"\1", finding)


def assert_double_ownership_starts_later(jsonl: list, mqadmin: list) -> None:
    """The same double-owned queues, owners, causes, severities and ends; each starts at the
    same snapshot or later, by less than the broker's expiry and two rounds."""
    assert plain(jsonl, DOUBLE_OWNED_STARTS) == plain(mqadmin, DOUBLE_OWNED_STARTS)
    key = lambda r: json.dumps({k: v for k, v in r.asDict().items()  # noqa: E731
                                if k not in DOUBLE_OWNED_STARTS and not k.startswith("_")},
                               default=str, sort_keys=True)
    for a, b in zip(sorted(jsonl, key=key), sorted(mqadmin, key=key)):
        assert dt.timedelta(0) <= b.first_seen - a.first_seen <= LATER_BY_AT_MOST, key(a)


def assert_same_findings(gold_jsonl: dict, gold_mqadmin: dict) -> None:
    assert sorted(gold_jsonl) == sorted(gold_mqadmin)
    found = 0
    for name in sorted(gold_jsonl):
        a, b = gold_jsonl[name], gold_mqadmin[name]
        if name in ("double_owned_queues", "incidents"):
            whole = name == "double_owned_queues"
            a_double = [r for r in a if whole or r.kind == "DOUBLE_OWNED"]
            b_double = [r for r in b if whole or r.kind == "DOUBLE_OWNED"]
            assert_double_ownership_starts_later(a_double, b_double)
            found += len(a_double)
            a = [r for r in a if r not in a_double]
            b = [r for r in b if r not in b_double]
        drop = SECOND_PRECISION
        if name == "group_health":  # its findings name how long the double ownership lasted
            def findings(rows):
                return sorted((r.cluster, r.group, [_double_owned_minutes(f) for f in r.findings])
                              for r in rows)
            assert findings(a) == findings(b)
            drop = SECOND_PRECISION | {"findings"}
        assert plain(a, drop) == plain(b, drop), name
        found += len(a)
        for col in SECOND_PRECISION & set(a[0].asDict() if a else {}):
            def key(r, col=col):
                return json.dumps({k: v for k, v in r.asDict().items()
                                   if not k.startswith("_") and k not in (col, "findings")},
                                  default=str, sort_keys=True)
            for x, y in zip(sorted(a, key=key), sorted(b, key=key)):
                assert (x[col] is None) == (y[col] is None)
                assert x[col] is None or abs(x[col] - y[col]) <= 1.0, (name, col)
    assert found > 0  # the scenario's faults are found at all


@pytest.fixture(scope="module")
def landings(tmp_path_factory):
    root = tmp_path_factory.mktemp("mqadmin_day")
    for fmt in ("jsonl", "mqadmin"):
        simulate(SCENARIO, DAY, root / fmt, seed=3, window=WINDOW, landing_format=fmt)
    return root


def test_the_mqadmin_landing_holds_no_json_lines_for_the_three_sources(landings):
    for source in ("offsets", "connections", "running_info"):
        names = [p.name for p in (landings / "mqadmin" / source).rglob("*") if p.is_file()]
        assert names and not [n for n in names if ".jsonl" in n], source


@pytest.mark.heavy_day  # two pipeline days: on classic Spark in `make test-acceptance`
def test_same_bronze_records_and_gold_findings_in_memory(spark, landings, tmp_path):
    layers = {fmt: run_layers(spark, landings / fmt, tmp_path / fmt) for fmt in ("jsonl", "mqadmin")}
    for source in ("offsets", "connections", "running_info"):
        assert (layers["jsonl"]["bronze"][source].count()
                == layers["mqadmin"]["bronze"][source].count()), source
    counts = layers["mqadmin"]["bronze"]["ingest_counts"].collect()
    assert all(c.lines == c.accepted + c.quarantined + c.other_day + c.unmatched for c in counts)
    assert layers["mqadmin"]["bronze"]["quarantine"].count() == 0
    assert_same_findings({k: v.collect() for k, v in layers["jsonl"]["gold"].items()},
                         {k: v.collect() for k, v in layers["mqadmin"]["gold"].items()})


@pytest.mark.delta
def test_rocketlens_run_on_each_landing_gives_the_same_gold_tables(spark, landings, tmp_path):
    gold = {}
    for fmt in ("jsonl", "mqadmin"):
        lake = tmp_path / f"lake_{fmt}"
        run_cli("run", "--date", DAY.isoformat(), "--landing", str(landings / fmt),
                "--lake", str(lake))
        gold[fmt] = {p.name: spark.read.format("delta").load(str(p))
                     .where(f"date = '{DAY.isoformat()}'").collect()
                     for p in sorted((lake / "gold").iterdir())}
    assert_same_findings(gold["jsonl"], gold["mqadmin"])
