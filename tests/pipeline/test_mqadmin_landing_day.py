"""Acceptance: a day fed only from RocketMQ's own outputs (mqadmin consumerProgress /
consumerConnection text, fastjson ConsumerRunningInfo dumps; docs/landing-mqadmin.md) gives the
same findings as the same day fed from JSON Lines (simulated both ways, same seed)."""

import json

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


def assert_same_findings(gold_jsonl: dict, gold_mqadmin: dict) -> None:
    assert sorted(gold_jsonl) == sorted(gold_mqadmin)
    found = 0
    for name in sorted(gold_jsonl):
        a, b = gold_jsonl[name], gold_mqadmin[name]
        assert plain(a, SECOND_PRECISION) == plain(b, SECOND_PRECISION), name
        found += len(a)
        for col in SECOND_PRECISION & set(a[0].asDict() if a else {}):
            def key(r, col=col):
                return json.dumps({k: v for k, v in r.asDict().items()
                                   if not k.startswith("_") and k != col}, default=str, sort_keys=True)
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


@pytest.mark.heavy_day  # two pipeline days: on classic Spark in `make test-spark-days` (CI time)
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
