"""A host whose JVM logs in UTC on a GMT+8 deployment, through a whole run (DESIGN.md §5.1
"Clocks"): the sample day with one host's client log moved 8 h back, computed in several batches of
groups. Its ``[persistAll]`` lines give no ownership claims, and group_health names the host once —
from the clock skew silver staged for that host's batch of groups (``CLOCK_SKEW``)."""

from __future__ import annotations

import datetime as dt
import shutil

import pytest
from pyspark.sql import functions as F

from jobs import lake
from tests.conftest import SAMPLE_DAY, run_cli

DAY = dt.date.fromisoformat(SAMPLE_DAY)
HOST = "h1-10.0.1.11"  # GID_healthy_orders, a consumer with moving queues and running info
STAMP = "%Y-%m-%d %H:%M:%S"


def moved_back(line: str, hours: int) -> str:
    """``line`` with its leading ``yyyy-MM-dd HH:mm:ss`` ``hours`` earlier (other lines as they are)."""
    try:
        at = dt.datetime.strptime(line[:19], STAMP)
    except ValueError:
        return line
    return (at - dt.timedelta(hours=hours)).strftime(STAMP) + line[19:]


@pytest.fixture(scope="module")
def skewed_lake(spark, sample_lake, tmp_path_factory):
    root = tmp_path_factory.mktemp("clock")
    landing = root / "landing"
    shutil.copytree(sample_lake.parent / "landing", landing)
    log = landing / "client_logs" / f"date={SAMPLE_DAY}" / HOST / "rocketmq_client.log"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(moved_back(line, 8) for line in lines), encoding="utf-8")
    offsets = lake.read_day(spark, sample_lake, "bronze", "offsets", DAY)
    conf = root / "batches.toml"
    conf.write_text(f"[engine]\ngroup_batch_rows = {offsets.count() // 3 + 1}\n")
    run_cli("run", "--date", SAMPLE_DAY, "--landing", str(landing), "--lake", str(root / "lake"),
            "--conf", str(conf))
    return root / "lake"


@pytest.mark.delta
def test_group_health_names_the_host_whose_log_clock_is_off(spark, skewed_lake):
    health = lake.read_day(spark, skewed_lake, "gold", "group_health", DAY).collect()
    clock = [(r.group, f) for r in health for f in r.findings if f.startswith("INFO clock")]
    assert clock == [("GID_healthy_orders",
                      f"INFO clock: host {HOST} client-log times are 8 h behind running_info (its "
                      "JVM logs in GMT+0?); map it in ingest.client_log_timezones")]


@pytest.mark.delta
def test_its_persist_lines_are_no_ownership_claims(spark, skewed_lake):
    events = lake.read_day(spark, skewed_lake, "bronze", "client_log_events", DAY)
    clients = [r.client_id for r in events.where((F.col("host") == HOST)
                                                 & (F.col("event") == "PERSIST_OFFSET"))
               .select("client_id").distinct().collect()]
    assert clients
    persist = lake.read_day(spark, skewed_lake, "silver", "queue_ownership", DAY).where(
        F.col("source") == "persist_log")
    assert persist.where(F.col("client_id").isin(clients)).count() == 0
    assert persist.where(F.col("group") == "GID_healthy_orders").count() > 0  # the other hosts'


@pytest.mark.delta
def test_a_host_logging_in_another_zone_raises_no_warn_or_critical(spark, skewed_lake):
    """No fault here, only a collection problem: the group still owns and consumes every queue
    (its running info and its other hosts say so), so the lost claims make no finding."""
    (row,) = lake.read_day(spark, skewed_lake, "gold", "group_health", DAY).where(
        F.col("group") == "GID_healthy_orders").collect()
    assert row.status == "OK"
    assert [f for f in row.findings if not f.startswith("INFO")] == []
