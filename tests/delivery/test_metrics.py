"""``rocketlens metrics`` (DESIGN.md §1, issue 22): the end-of-day lag transform on both engines,
and the textfile parsed back with prometheus-client's own parser against the lake (Sail)."""

import datetime as dt

import pytest
from prometheus_client.parser import text_string_to_metric_families

from jobs.delivery.metrics import end_of_day_lag
from tests.conftest import SAMPLE_DAY, run_cli
from tests.delivery.conftest import lake_files

DAY = dt.date(2025, 11, 21)
T0 = dt.datetime(2025, 11, 21, 23, 58)
OFFSETS = ("cluster string, group string, topic string, broker_name string, queue_id int, "
           "ts timestamp, lag long, date date")


def test_end_of_day_lag_is_the_last_snapshot_s_and_unknown_stays_unknown(spark):
    t1 = T0 + dt.timedelta(minutes=1)
    df = spark.createDataFrame([
        ("c", "g", "t", "b", 0, T0, 900, DAY), ("c", "g", "t", "b", 0, t1, 5, DAY),
        # the last lag is unknown: no sample, not the earlier 7 and not 0
        ("c", "g", "t", "b", 1, T0, 7, DAY), ("c", "g", "t", "b", 1, t1, None, DAY),
        # another group on the same queue keeps its own lag
        ("c", "h", "t", "b", 0, T0, 3, DAY),
    ], OFFSETS)
    rows = {(r.group, r.queue_id): r.lag for r in end_of_day_lag(df).collect()}
    assert rows == {("g", 0): 5, ("h", 0): 3}


def metrics_of(path):
    families = {f.name: f for f in text_string_to_metric_families(path.read_text())}
    return {name: [(s.labels, s.value) for s in f.samples] for name, f in families.items()}


def check_against_lake(spark, lake, day, out):
    from jobs import lake as lake_mod

    proc = run_cli("metrics", "--date", day, "--lake", str(lake), "--out", str(out))
    assert proc.returncode == 0
    m = metrics_of(out)
    d = dt.date.fromisoformat(day)
    health = {(r.cluster, r.group): {"OK": 0, "WARN": 1, "CRITICAL": 2}[r.status]
              for r in lake_mod.read_day(spark, lake, "gold", "group_health", d).collect()}
    assert {(s["cluster"], s["group"]): v for s, v in m["rocketlens_group_status"]} == health
    incidents = {(r.cluster, r.group, r.kind, r.cause, r.severity) for r in
                 lake_mod.read_day(spark, lake, "gold", "incidents", d).collect()}
    assert {(s["cluster"], s["group"], s["kind"], s["cause"], s["severity"])
            for s, v in m["rocketlens_incidents"] if v == 1} == incidents
    # end-of-day lag, from the stored snapshots in Python
    last: dict = {}
    for r in lake_mod.read_day(spark, lake, "silver", "queue_offsets", d).collect():
        key = (r.cluster, r.group, r.topic, r.broker_name, str(r.queue_id))
        if key not in last or r.ts > last[key][0]:
            last[key] = (r.ts, r.lag)
    assert {(s["cluster"], s["group"], s["topic"], s["broker_name"], s["queue_id"]): v
            for s, v in m["rocketlens_queue_lag"]} == {
        k: float(lag) for k, (_ts, lag) in last.items() if lag is not None}
    [(_, stamp)] = m["rocketlens_last_run_timestamp_seconds"]
    assert stamp > dt.datetime(2025, 1, 1, tzinfo=dt.UTC).timestamp()
    return m


@pytest.mark.delta
def test_metrics_equal_the_lake_and_a_persisting_incident_counts_its_days(spark, days_lake,
                                                                          tmp_path):
    out = tmp_path / "rocketlens.prom"
    out.write_text("old\n")
    m = check_against_lake(spark, days_lake, "2025-11-22", out)
    assert {s["kind"]: v for s, v in m["rocketlens_incident_open_days"]} == {
        "ORPHANED": 2.0, "DOUBLE_OWNED": 2.0, "STUCK": 2.0, "BACKLOG": 2.0}
    assert [p.name for p in tmp_path.iterdir()] == ["rocketlens.prom"]  # no temporary left
    healthy = check_against_lake(spark, days_lake, "2025-11-23", out)
    assert healthy["rocketlens_incidents"] == []
    assert {v for _, v in healthy["rocketlens_group_status"]} == {0.0}


@pytest.mark.delta
def test_the_sample_day_s_group_status_equals_group_health(spark, sample_lake, tmp_path):
    m = check_against_lake(spark, sample_lake, SAMPLE_DAY, tmp_path / "sample.prom")
    assert {v for _, v in m["rocketlens_group_status"]} == {0.0, 1.0, 2.0}


@pytest.mark.delta
def test_a_day_not_in_the_lake_leaves_the_file_as_it_was(days_lake, tmp_path):
    out = tmp_path / "rocketlens.prom"
    out.write_text("yesterday's\n")
    before = lake_files(days_lake)
    proc = run_cli("metrics", "--date", "2025-11-30", "--lake", str(days_lake), "--out",
                   str(out), check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "rocketlens: 2025-11-30 is not in the lake")
    assert out.read_text() == "yesterday's\n"
    assert lake_files(days_lake) == before


def test_the_grafana_dashboard_queries_only_metrics_the_command_writes():
    import json
    import re
    from pathlib import Path

    from prometheus_client import generate_latest

    from jobs.delivery.metrics import build_registry

    registry = build_registry(
        [{"cluster": "c", "group": "g", "status": "WARN"}],
        [{"cluster": "c", "group": "g", "kind": "STUCK", "cause": "SLOW_MESSAGE",
          "severity": "WARN", "queues": ["t/b/0"], "open_since_day": DAY}],
        [{"cluster": "c", "group": "g", "topic": "t", "broker_name": "b", "queue_id": 0,
          "lag": 4}], T0, DAY)
    written = {f.name for f in text_string_to_metric_families(generate_latest(registry).decode())}
    dashboard = json.loads((Path(__file__).parents[2] / "docs" / "grafana-rocketlens.json")
                           .read_text())
    queried = {name for p in dashboard["panels"] for t in p["targets"]
               for name in re.findall(r"rocketlens_[a-z_]+", t["expr"])}
    assert queried and queried <= written
    assert {"rocketlens_group_status", "rocketlens_incidents", "rocketlens_queue_lag",
            "rocketlens_last_run_timestamp_seconds"} <= queried


def test_backlog_clear_and_loss_horizons_are_seconds_from_the_forecast_and_absent_when_null():
    """DESIGN.md §5.4: per group x topic, clears_at and loss_at less as_of; null gives no sample."""
    from prometheus_client import generate_latest

    from jobs.delivery.metrics import build_registry

    as_of = dt.datetime(2025, 11, 21, 23, 59, 15)
    backlog = [{"cluster": "c", "group": "g", "topic": "t", "as_of": as_of,
                "clears_at": as_of + dt.timedelta(hours=2, minutes=5), "loss_at": None},
               {"cluster": "c", "group": "h", "topic": "t", "as_of": as_of, "clears_at": None,
                "loss_at": as_of + dt.timedelta(hours=4)}]
    accuracy = [{"cluster": "c", "group": "g", "topic": "t", "broker_name": "b", "queue_id": 1,
                 "error_minutes": -3.5},
                {"cluster": "c", "group": "g", "topic": "t", "broker_name": "b", "queue_id": 2,
                 "error_minutes": None}]
    text = generate_latest(build_registry([], [], [], None, DAY, backlog, accuracy)).decode()
    m = {f.name: [(s.labels, s.value) for s in f.samples]
         for f in text_string_to_metric_families(text)}
    assert m["rocketlens_backlog_clears_in_seconds"] == [
        ({"cluster": "c", "group": "g", "topic": "t"}, 7500.0)]
    assert m["rocketlens_backlog_loss_in_seconds"] == [
        ({"cluster": "c", "group": "h", "topic": "t"}, 14400.0)]
    assert m["rocketlens_forecast_error_minutes"] == [
        ({"cluster": "c", "group": "g", "topic": "t", "broker_name": "b", "queue_id": "1"}, -3.5)]
