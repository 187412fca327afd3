"""``rocketlens notify`` (DESIGN.md §1, issue 22): the message from gold.incidents, and the real
apprise ``json://`` POST received by a local HTTP server on 127.0.0.1."""

import datetime as dt
import http.server
import json
import re
import socket
import threading

import pytest

from jobs.delivery.notify import compose
from tests.conftest import SAMPLE_DAY, run_cli
from tests.delivery.conftest import lake_files

DAY = dt.date(2025, 11, 22)
T = dt.datetime(2025, 11, 22, 1, 0)


def incident(group, severity, open_since, kind="ORPHANED", cause="NO_LIVE_CONSUMER",
             queues=("t/b/0",)):
    return {"cluster": "c1", "group": group, "kind": kind, "cause": cause, "severity": severity,
            "first_seen": T, "last_seen": T + dt.timedelta(minutes=30), "queues": list(queues),
            "evidence": f"evidence of {group}", "remediation": f"fix {group}",
            "open_since_day": open_since, "date": DAY}


def test_new_incidents_come_first_and_continuing_ones_are_marked():
    rows = [incident("g-old-crit", "CRITICAL", dt.date(2025, 11, 19)),
            incident("g-new-warn", "WARN", DAY),
            incident("g-new-crit", "CRITICAL", DAY),
            incident("g-info", "INFO", DAY)]
    message = compose(rows, DAY, "WARN")
    body = message.body
    order = [body.index(g) for g in ("g-new-crit", "g-new-warn", "g-old-crit")]
    assert order == sorted(order)
    assert "g-info" not in body
    assert "[CONTINUING since 2025-11-19] CRITICAL g-old-crit" in body
    assert "[NEW] WARN g-new-warn (c1) ORPHANED NO_LIVE_CONSUMER, 01:00–01:30 UTC" in body
    assert "what to do: fix g-new-crit" in body
    assert message.title == "rocketlens 2025-11-22: 2 CRITICAL, 1 WARN (2 new, 1 continuing)"


def test_nothing_at_or_above_the_severity_is_no_message():
    rows = [incident("g", "WARN", DAY), incident("h", "INFO", DAY)]
    assert compose(rows, DAY, "CRITICAL") is None
    assert compose([], DAY, "INFO") is None
    assert compose(rows, DAY, "INFO").incidents == 2


class _Hook:
    """A JSON webhook on 127.0.0.1: records each POST body; answers ``status``."""

    def __init__(self, status=200):
        self.posts: list[dict] = []
        hook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                hook.posts.append({"path": self.path,
                                   "json": json.loads(self.rfile.read(length))})
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"json://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook():
    h = _Hook()
    yield h
    h.close()


def notify(lake, day, *args, check=False):
    return run_cli("notify", "--date", day, "--lake", str(lake), *args, check=check)


@pytest.mark.delta
def test_a_persisting_fault_is_sent_once_marked_continuing(days_lake, hook):
    before = lake_files(days_lake)
    proc = notify(days_lake, "2025-11-22", "--to", hook.url, "--min-severity", "warn")
    assert proc.returncode == 0, proc.stderr
    assert len(hook.posts) == 1 and hook.posts[0]["path"] == "/hook"
    body = hook.posts[0]["json"]["message"]
    assert "rocketlens 2025-11-22" in hook.posts[0]["json"]["title"]
    assert "[CONTINUING since 2025-11-21] CRITICAL GID_dup_inventory" in body
    assert "DUPLICATE_CLIENT_ID" in body and "instanceName" in body
    assert "[NEW]" not in body
    assert lake_files(days_lake) == before  # notify only reads


@pytest.mark.delta
def test_the_first_day_of_the_fault_is_new(days_lake, hook):
    assert notify(days_lake, "2025-11-21", "--to", hook.url).returncode == 0
    [post] = hook.posts
    assert "[NEW] CRITICAL GID_dup_inventory" in post["json"]["message"]
    assert "CONTINUING" not in post["json"]["message"]


@pytest.mark.delta
def test_a_healthy_day_sends_nothing_and_exits_0(days_lake, hook):
    proc = notify(days_lake, "2025-11-23", "--to", hook.url)
    assert proc.returncode == 0, proc.stderr
    assert hook.posts == []
    assert "nothing sent" in proc.stderr


@pytest.mark.delta
def test_a_day_not_in_the_lake_is_an_error_not_a_quiet_day(days_lake, hook):
    proc = notify(days_lake, "2025-11-24", "--to", hook.url)
    assert proc.returncode == 1 and hook.posts == []
    assert proc.stderr.strip().splitlines() == [
        f"rocketlens: 2025-11-24 is not in the lake {days_lake}: run 'rocketlens run --date "
        "2025-11-24' first (nothing was sent)"]


def _dead_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.delta
def test_a_delivery_failure_is_one_line_exit_8_without_the_secret(days_lake):
    before = lake_files(days_lake)
    refusing = _Hook(status=500)
    try:
        urls = [f"json://ops:s3cr3t-token@127.0.0.1:{_dead_port()}/hook",
                refusing.url.replace("json://", "json://ops:s3cr3t-token@")]
        proc = notify(days_lake, "2025-11-22", "--to", urls[0], "--to", urls[1])
    finally:
        refusing.close()
    assert proc.returncode == 8
    assert proc.stderr.strip().splitlines() == [
        "rocketlens: notification not delivered to destination #1 (json), #2 (json) of 2: "
        "check the URL, the service and the network, then rerun notify (the lake is unchanged)"]
    assert "s3cr3t" not in proc.stdout + proc.stderr
    assert len(refusing.posts) == 1  # it was tried and refused
    assert lake_files(days_lake) == before


def test_an_unusable_url_is_bad_usage_naming_its_position_only(tmp_path):
    proc = notify(tmp_path, "2025-11-22", "--to", "nosuchservice://user:s3cr3t@host/x")
    assert proc.returncode == 2
    assert "destination #1 (scheme 'nosuchservice')" in proc.stderr
    assert "s3cr3t" not in proc.stderr


@pytest.mark.delta
def test_urls_come_from_settings_through_the_environment(days_lake, hook, monkeypatch):
    import subprocess
    import sys

    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("ROCKETLENS")}
    env["ROCKETLENS__NOTIFY__URLS"] = json.dumps([hook.url])
    proc = subprocess.run([sys.executable, "-m", "jobs", "notify", "--date", "2025-11-21",
                           "--lake", str(days_lake)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert len(hook.posts) == 1


@pytest.mark.delta
def test_the_sample_day_names_every_warn_or_critical_group_and_cause_and_no_ok_group(
        sample_lake, hook, spark):
    """The demo day (every seed fault): one POST naming each WARN/CRITICAL incident's group and
    cause, and none of the OK groups."""
    from jobs import lake as lake_mod

    day = dt.date.fromisoformat(SAMPLE_DAY)
    health = {r.group: r.status for r in
              lake_mod.read_day(spark, sample_lake, "gold", "group_health", day).collect()}
    alerting = {(r.group, r.cause) for r in
                lake_mod.read_day(spark, sample_lake, "gold", "incidents", day).collect()
                if r.severity in ("WARN", "CRITICAL")}
    assert notify(sample_lake, SAMPLE_DAY, "--to", hook.url).returncode == 0
    [post] = hook.posts
    heads = [re.match(r"\[(?:NEW|CONTINUING since \S+)\] \S+ (\S+) \(\S+\) \S+ ([A-Z_]+)", ln)
             for ln in post["json"]["message"].splitlines() if ln.startswith("[")]
    named = {(m.group(1), m.group(2)) for m in heads}
    assert named == alerting
    assert {g for g, _ in named} == {g for g, s in health.items() if s != "OK"}
