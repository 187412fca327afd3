"""A Spark standalone cluster on loopback from pip's pyspark: one master and N workers started with
``spark-class org.apache.spark.deploy.master.Master`` / ``…worker.Worker``, for the real-cluster
spark-submit test (tests/delivery/test_standalone_cluster.py) and the benchmark
(``python -m benchmarks --engines cluster``).

``standalone_cluster(workdir)`` starts it, waits until the master lists every worker ALIVE and
yields the master URL; on leaving (also on failure) it stops every process it started: each runs
in a process group of its own, which holds the executor JVMs and Python workers the worker
spawned too, sent SIGTERM and then SIGKILL. A missing Java or a master that cannot bind raises
:class:`ClusterUnavailable` with one line saying what to do.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT = 90.0  # seconds for the master and every worker to come up (2 loaded cores)
REPO = Path(__file__).resolve().parents[1]
OPERATIONS = REPO / "docs" / "operations.md"
DOC_LANDING, DOC_LAKE = "/data/rocketmq/landing", "/data/rocketlens/lake"
DOC_DRIVER_PYTHON = "/opt/rocketlens/venv/bin/python"
DOC_MASTER = "--master yarn --deploy-mode client"


class ClusterUnavailable(RuntimeError):
    """The standalone cluster did not start; the message is the one line to act on."""


@dataclass(frozen=True)
class Cluster:
    master_url: str  # spark://127.0.0.1:PORT
    ui_url: str  # the master's web UI, http://127.0.0.1:PORT (``/json/``: its state)
    workdir: Path
    worker_pids: tuple[int, ...] = ()  # the workers' JVMs; their children are the executors

    def state(self) -> dict:
        with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=5) as reply:
            return json.load(reply)


def spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_taken(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM each process group (workers first), SIGKILL what is left after 15 s."""
    for proc in reversed(procs):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for proc in reversed(procs):
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the group: executors and Python workers too
        proc.wait()


def _last_lines(log: Path, n: int = 3) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return " | ".join(lines[-n:])[-600:]


@contextlib.contextmanager
def standalone_cluster(workdir: Path, workers: int = 2, cores: int = 1, memory: str = "1g",
                       master_port: int | None = None) -> Iterator[Cluster]:
    """A master and ``workers`` workers of ``cores`` cores and ``memory`` each on 127.0.0.1, their
    logs and work folders under ``workdir``; everything is stopped on leaving."""
    from jobs.engine import java_executable

    if java_executable() is None:
        raise ClusterUnavailable(
            "standalone cluster: no Java (JAVA_HOME/bin/java or java on PATH): install a JDK 17 "
            "or set JAVA_HOME")
    port = master_port or free_port()
    if _port_taken(port):
        raise ClusterUnavailable(f"standalone cluster: port {port} on 127.0.0.1 is taken: stop "
                                 "what listens there or pick another master port")
    ui_port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    home = spark_home()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK"))}
    env.update(SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(workdir),
               SPARK_WORKER_DIR=str(workdir / "work"),
               # Spark retries the next ports when one is taken; fail instead (one clear line).
               # No REST submission server: its fixed port 6066 would clash with another cluster
               SPARK_MASTER_OPTS="-Dspark.port.maxRetries=0 -Dspark.master.rest.enabled=false")
    spark_class = str(home / "bin" / "spark-class")
    procs: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> tuple[subprocess.Popen, Path]:
        log = workdir / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([spark_class, *args], env=env, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        procs.append(proc)
        return proc, log

    previous = _stop_on_sigterm()
    try:
        master, master_log = start("master", "org.apache.spark.deploy.master.Master",
                                   "--host", "127.0.0.1", "--port", str(port),
                                   "--webui-port", str(ui_port))
        cluster = Cluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}", workdir)
        _wait(lambda: cluster.state().get("status") == "ALIVE", master, master_log,
              f"standalone master on 127.0.0.1:{port}")
        for i in range(workers):
            start(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                  "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port()),
                  "--work-dir", str(workdir / f"work-{i}"), cluster.master_url)
        _wait(lambda: sum(w.get("state") == "ALIVE" for w in cluster.state()["workers"]) == workers,
              master, master_log, f"{workers} standalone workers")
        yield dataclasses.replace(cluster, worker_pids=tuple(p.pid for p in procs[1:]))
    finally:
        _stop(procs)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _stop_on_sigterm() -> dict:
    """SIGTERM and SIGHUP raise SystemExit while the cluster runs (in the main thread), so that a
    killed test or benchmark still stops it: Python's default would exit without ``finally``.
    Returns the handlers to put back."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}

    def leave(signum, _frame):
        raise SystemExit(128 + signum)

    previous = {}
    for signum in (signal.SIGTERM, signal.SIGHUP):
        previous[signum] = signal.signal(signum, leave)
    return previous


def _wait(ready, proc: subprocess.Popen, log: Path, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            text = log.read_text(errors="replace")
            if "BindException" in text or "Address already in use" in text:
                raise ClusterUnavailable(f"{what}: a port is taken (see {log}): stop what "
                                         "listens there or pick another port")
            raise ClusterUnavailable(f"{what} exited {proc.returncode}: {_last_lines(log)}")
        with contextlib.suppress(OSError, ValueError, KeyError):
            if ready():
                return
        time.sleep(0.5)
    raise ClusterUnavailable(f"{what} not up after {START_TIMEOUT:.0f} s: {_last_lines(log)}")


def documented_submit() -> str:
    """The ``bash`` block of docs/operations.md's *spark-submit* section."""
    section = OPERATIONS.read_text().split("## spark-submit", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    if len(blocks) != 1:
        raise AssertionError("docs/operations.md's spark-submit section must hold one bash block")
    return blocks[0]


def submit_script(master: str, landing: Path, lake: Path, conf: Sequence[str] = ()) -> str:
    """The documented block for this cluster, to run with bash from a folder that holds
    ``dist/``: ``make dist`` left out (built before), the master (and ``--conf`` ``conf``, e.g.
    the event log) put in place of YARN, this process's Python as the driver's venv (it has the
    package), and the paths."""
    script = documented_submit()
    extra = "".join(f" --conf {c}" for c in conf)
    for old, new in [("make dist\n", ""), (DOC_MASTER, f"--master {master} --deploy-mode client{extra}"),
                     (DOC_DRIVER_PYTHON, sys.executable), (DOC_LANDING, str(landing)),
                     (DOC_LAKE, str(lake))]:
        if old not in script:
            raise AssertionError(f"docs/operations.md's spark-submit block lacks {old!r}")
        script = script.replace(old, new)
    return script


def executor_pids(cluster: Cluster) -> dict[str, int]:
    """Executor id -> pid of the executor JVMs the cluster's workers run now."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            args = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if parent in cluster.worker_pids and b"--executor-id" in args:
            found[args[args.index(b"--executor-id") + 1].decode()] = int(entry)
    return found


@contextlib.contextmanager
def submitting(script: str, cwd: Path, env: dict[str, str]) -> Iterator[subprocess.Popen]:
    """``bash -euc script`` (a spark-submit) in a process group of its own, output piped; the
    group (bash, spark-submit's JVM, the driver's Python) is killed on leaving if still there."""
    proc = subprocess.Popen(["bash", "-euc", script], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
