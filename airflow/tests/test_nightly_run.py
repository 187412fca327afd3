"""Whole DAG runs of ``rocketlens_nightly_connect`` under real Airflow 3 (``dag.test()``, a real
metadata DB in the temporary AIRFLOW_HOME): the real ``rocketlens`` CLI of the project venv, a
real Spark Connect server (Sail's), a Delta lake, and apprise POSTing to a local JSON webhook.

- a night with CRITICAL incidents: the run succeeds, report and notify run, notify sends, the DAG
  run is green;
- a failed run: report and notify do not run, the failure callback fires, the DAG run is red.
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pendulum
import pytest

ROOT = Path(__file__).resolve().parents[2]
ROCKETLENS_PYTHON = Path(os.environ.get("ROCKETLENS_PYTHON", ROOT / ".venv" / "bin" / "python"))
DAY = "2025-11-21"
# a manual run at the end of the data interval [11-21 02:30, 11-22 02:30) processes 11-21
LOGICAL = pendulum.datetime(2025, 11, 22, 2, 30, tz="UTC")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def airflow_db():
    """Airflow's own metadata DB (SQLite under the test's AIRFLOW_HOME), migrated once."""
    from airflow.utils import db

    db.resetdb()
    yield


@pytest.fixture(scope="module")
def connect_server():
    """Sail's Spark Connect server from the project venv on a free local port."""
    assert ROCKETLENS_PYTHON.exists(), f"{ROCKETLENS_PYTHON} missing: run 'make venv' first"
    port = _free_port()
    server = subprocess.Popen([str(ROCKETLENS_PYTHON.parent / "sail"), "spark", "server",
                               "--ip", "127.0.0.1", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.5)
    yield f"sc://127.0.0.1:{port}"
    server.terminate()
    server.wait(timeout=30)


@pytest.fixture(scope="module")
def landing(tmp_path_factory):
    """A day with duplicate client ids (CRITICAL incidents), and the next day's folder the
    sensor waits for."""
    root = tmp_path_factory.mktemp("night")
    subprocess.run([str(ROCKETLENS_PYTHON), "-m", "jobs", "simulate", "--scenario",
                    "duplicate-client-id", "--date", DAY, "--landing", str(root / "landing"),
                    "--window", "00:00-00:40"], check=True, capture_output=True, timeout=600)
    # the sensor's conditions for the next night too (its run fails before reading the data)
    next_day = root / "landing" / "offsets" / "date=2025-11-22"
    next_day.mkdir()
    (next_day / "part-00000.jsonl").write_text("{}\n")
    (root / "landing" / "offsets" / "date=2025-11-23").mkdir()
    return root


class Hook:
    def __init__(self):
        self.posts: list[dict] = []
        hook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                hook.posts.append(json.loads(body))
                self.send_response(200)
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
    h = Hook()
    yield h
    h.close()


def set_variables(monkeypatch, landing, lake, reports, connect_url, hook_url):
    for name, value in {"rocketlens_landing": landing, "rocketlens_lake": lake,
                        "rocketlens_reports": reports, "rocketlens_home": ROOT,
                        "rocketlens_python": ROCKETLENS_PYTHON,
                        "rocketlens_spark_connect_url": connect_url,
                        "rocketlens_notify_urls_secret": json.dumps([hook_url])}.items():
        monkeypatch.setenv(f"AIRFLOW_VAR_{name.upper()}", str(value))


def states(dag_run) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in dag_run.get_task_instances()}


def test_a_critical_night_is_a_green_run_that_notifies(airflow_db, dag_module, connect_server,
                                                        landing, hook, tmp_path, monkeypatch):
    set_variables(monkeypatch, landing / "landing", tmp_path / "lake", tmp_path / "reports",
                  connect_server, hook.url)
    dag_run = dag_module.nightly_connect.test(logical_date=LOGICAL,
                                              run_conf={"min_severity": "CRITICAL"})
    assert states(dag_run) == {"wait_for_landing": "success", "rocketlens_run": "success",
                               "report": "success", "notify": "success"}
    assert str(dag_run.state) == "success"
    [post] = hook.posts
    assert "[NEW] CRITICAL GID_dup_inventory" in post["message"]
    assert "DUPLICATE_CLIENT_ID" in post["message"]
    assert (tmp_path / "reports" / f"report-{DAY}.html").is_file()


def test_a_failed_run_fires_the_callback_and_never_notifies(airflow_db, dag_module,
                                                            connect_server, landing, hook,
                                                            tmp_path, monkeypatch):
    # a lake inside the landing root: the run refuses it (exit 2, no retry)
    set_variables(monkeypatch, landing / "landing", landing / "landing" / "lake",
                  tmp_path / "reports", connect_server, hook.url)
    alerts = []
    monkeypatch.setattr(dag_module, "NOTIFIERS", [alerts.append])
    dag_run = dag_module.nightly_connect.test(logical_date=LOGICAL.add(days=1))
    found = states(dag_run)
    assert found["rocketlens_run"] == "failed"
    assert found["report"] == found["notify"] == "upstream_failed"
    assert str(dag_run.state) == "failed"
    assert [a["ti"].task_id for a in alerts] == ["rocketlens_run"]
    assert hook.posts == []
