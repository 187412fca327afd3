"""The wall-clock zone of real client logs (tests/data/real-cluster/README.md, difference 9), both
engines: a 4.9.7 client writes its JVM's zone (UTC on the harness's hosts), a 5.3.3 client writes
GMT+8 whatever its JVM's zone, because its own logback pattern names the zone. Each line is
checked against the instant its client recorded in its truth file (``stopping``, written just
before ``shutdown()``), from the committed real-cluster day."""

from __future__ import annotations

import datetime as dt
import json
import tarfile
from pathlib import Path

import pytest

from jobs.ingest.client_logs import LogZones, parse_client_log_lines

TARBALL = Path(__file__).resolve().parents[1] / "data" / "real-cluster" / "day-2026-12-07.tar.gz"
DAY_FOLDER = "client_logs/date=2026-12-07"
# (client, landing host folder, log file, group): one 4.9.7 and one 5.3.3 client, both in UTC JVMs.
# Not healthy-1: a 4.9.7 client logs through an async queue that exit does not drain, and on this day
# healthy-1's last lines (its shutdown OKs) were lost (tests/data/real-cluster/README.md, difference 15).
CLIENTS = {
    "4.9.7": ("healthy-2", "localhost", "c-healthy-2.log", "GID_rc_healthy"),
    "5.3.3": ("healthy5-1", "localhost-v5", "c-healthy5-1.log", "GID_rc_healthy5"),
}
# the shutdown line follows the recorded instant within seconds (a 5.3.3 factory took 3.1 s to stop
# on this day under load); a wrong zone is off by hours
SHUTDOWN_WITHIN = dt.timedelta(seconds=10)


def real_shutdown(version: str) -> tuple[str, str, dt.datetime]:
    """(source file, the ``the consumer [G] shutdown OK`` line as written, the UTC instant the
    client recorded just before it shut down)."""
    name, host, log, group = CLIENTS[version]
    with tarfile.open(TARBALL) as tar:
        text = tar.extractfile(f"landing/{DAY_FOLDER}/{host}/{log}").read().decode()
        truth = tar.extractfile(f"truth/{name}.jsonl").read().decode()
    line = next(ln for ln in text.splitlines(keepends=True) if f"the consumer [{group}] shutdown OK" in ln)
    stopping = next(r for r in map(json.loads, truth.splitlines()) if r["ev"] == "stopping")
    at = dt.datetime.fromtimestamp(stopping["ts"] / 1000, tz=dt.timezone.utc).replace(tzinfo=None)
    return f"{DAY_FOLDER}/{host}/{log}", line, at


def parsed_ts(spark, version: str, zone) -> tuple[dt.datetime, dt.datetime]:
    source, line, recorded = real_shutdown(version)
    lines = spark.createDataFrame([(source, 1, line)], "_source_file string, _line_no long, line string")
    (row,) = parse_client_log_lines(lines, zone).select("ts").collect()
    return row.ts, recorded


@pytest.mark.parametrize("zone", ["UTC", "GMT+8", LogZones("UTC", (("localhost-v5", "UTC"),))])
def test_a_5x_line_is_read_in_gmt8_whatever_the_settings_say(spark, zone):
    ts, recorded = parsed_ts(spark, "5.3.3", zone)
    assert recorded <= ts <= recorded + SHUTDOWN_WITHIN


def test_a_4x_line_is_read_in_the_zone_the_settings_give_its_jvm(spark):
    ts, recorded = parsed_ts(spark, "4.9.7", "UTC")
    assert recorded <= ts <= recorded + SHUTDOWN_WITHIN
    # the same line read in the old default GMT+8 lands 8 h early: the line cannot tell its zone
    early, _ = parsed_ts(spark, "4.9.7", "GMT+8")
    assert ts - early == dt.timedelta(hours=8)


@pytest.mark.parametrize("version", sorted(CLIENTS))
def test_the_client_factory_start_line_names_the_client_its_running_info_does(spark, version):
    """``CLIENT_STARTED`` (the clock check's exact sample, jobs/rules/clocks.py): the start line's
    client id is the one the client recorded; its ``shutdown OK`` line is no event."""
    name, host, log, _ = CLIENTS[version]
    with tarfile.open(TARBALL) as tar:
        text = tar.extractfile(f"landing/{DAY_FOLDER}/{host}/{log}").read().decode()
        truth = tar.extractfile(f"truth/{name}.jsonl").read().decode()
    lines = [(f"{DAY_FOLDER}/{host}/{log}", i, ln) for i, ln in enumerate(text.splitlines(keepends=True))
             if "the client factory [" in ln]
    parsed = parse_client_log_lines(spark.createDataFrame(lines, "_source_file string, _line_no long, line string"),
                                    "UTC").collect()
    started = next(r for r in map(json.loads, truth.splitlines()) if r["ev"] == "start")
    assert sorted((r.event or "-", r.client_id or "-") for r in parsed) == [
        ("-", "-"), ("CLIENT_STARTED", started["client_id"])]
