"""A RocketMQ 4.9.x cluster on loopback from Maven Central jars, started and stopped by the harness.

Name server 9876; broker group ``broker-a`` (master 10911) and ``broker-b`` (master 10921, slave 10931),
each broker also holding listenPort-2 (VIP channel) and listenPort+1 (HA). Every JVM this module starts
is a child recorded in ``<root>/pids/<name>.pid`` and carries ``-Drocketlens.realcluster=<root>`` on its
command line: ``stop_all`` ends exactly those (checked against /proc/<pid>/cmdline), never anything
matched by name. Each process has its own ``user.home`` (logs, namesrv kvConfig) under ``<root>/<name>``.

4.9.x servers bind every interface (NettyServerConfig has no bind address), so ``__main__`` runs the
whole harness inside a private network namespace (``unshare -n``, loopback only) when it can.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from jobs.cli_common import RocketlensError
from jobs.collect import build_collector

REPO = Path(__file__).resolve().parents[2]
POM = REPO / "realcluster" / "pom.xml"
POM5 = REPO / "realcluster" / "client5" / "pom.xml"   # the same client programs on the 5.x remoting client
NAMESRV = "127.0.0.1:9876"
CLUSTER = "DefaultCluster"

# GC and heap for every JVM: the machine runs other work beside the harness (2 cores).
SMALL = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k"]
# 4.9.x MappedFile unmaps through reflection into jdk.internal.ref.Cleaner (recipe A1).
ADD_OPENS = [
    "--add-opens", "java.base/java.nio=ALL-UNNAMED",
    "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens", "java.base/java.util=ALL-UNNAMED",
]

LOGBACK = """<configuration>
  <appender name="F" class="ch.qos.logback.core.FileAppender">
    <file>${{user.home}}/logs/rocketmqlogs/{file}</file>
    <encoder><pattern>%d{{yyy-MM-dd HH:mm:ss,GMT+8}} %p %t - %m%n</pattern></encoder></appender>
  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%m%n</pattern></encoder></appender>
  <logger name="{console}" additivity="false"><appender-ref ref="OUT"/></logger>
  <root level="INFO"><appender-ref ref="F"/></root>
</configuration>
"""


def _die_with_parent() -> None:
    """In the child before exec: the kernel sends SIGTERM when the harness dies, so no JVM outlives it."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class HarnessError(RuntimeError):
    """One line for the operator: what failed and what to do."""


@dataclass(frozen=True)
class Broker:
    name: str          # process name: broker-a, broker-b, broker-b-s
    broker_name: str   # RocketMQ brokerName
    broker_id: int
    port: int

    @property
    def role(self) -> str:
        return "ASYNC_MASTER" if self.broker_id == 0 else "SLAVE"

    @property
    def ports(self) -> list[int]:
        return [self.port - 2, self.port, self.port + 1]

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"


BROKERS = [
    Broker("broker-a", "broker-a", 0, 10911),
    Broker("broker-b", "broker-b", 0, 10921),
    Broker("broker-b-s", "broker-b", 1, 10931),
]


def log(msg: str) -> None:
    print(f"[realcluster {time.strftime('%H:%M:%S')}] {msg}", flush=True)


@dataclass
class Procs:
    """Every process the harness starts: pid files under root/pids, stopped by pid only."""

    root: Path
    children: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def marker(self) -> str:
        return f"-Drocketlens.realcluster={self.root}"

    def spawn(self, name: str, argv: list[str], *, env: dict[str, str] | None = None,
              cwd: Path | None = None) -> subprocess.Popen:
        (self.root / "pids").mkdir(parents=True, exist_ok=True)
        out = open(self.root / f"{name}.out", "ab")
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                             start_new_session=True, preexec_fn=_die_with_parent)
        out.close()
        (self.root / "pids" / f"{name}.pid").write_text(f"{p.pid}\n")
        self.children[name] = p
        return p

    def java(self, name: str, lib: Path, main: str, args: list[str], *, heap: str,
             jvm: list[str] | None = None, home: Path | None = None) -> subprocess.Popen:
        home = home or self.root / name
        home.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, ROCKETMQ_HOME=str(self.root / "rmqhome"))
        argv = ["java", *SMALL, f"-Xmx{heap}", f"-Xms{heap}", "-XX:MaxDirectMemorySize=128m", *ADD_OPENS,
                self.marker, f"-Duser.home={home}", *(jvm or []), "-cp", f"{lib}/*", main, *args]
        return self.spawn(name, argv, env=env, cwd=home)

    def alive(self, name: str) -> bool:
        p = self.children.get(name)
        return p is not None and p.poll() is None

    def rss_mib(self, name: str) -> float | None:
        p = self.children.get(name)
        if p is None or p.poll() is not None:
            return None
        try:
            for line in Path(f"/proc/{p.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            return None
        return None

    def stop(self, name: str, *, kill: bool = False, timeout: float = 20.0) -> None:
        pidfile = self.root / "pids" / f"{name}.pid"
        if not pidfile.exists():
            return
        pid = int(pidfile.read_text().split()[0])
        if _ours(pid, self.marker, self.children.get(name)):
            try:
                os.kill(pid, signal.SIGKILL if kill else signal.SIGTERM)
            except ProcessLookupError:
                pass
            _wait_gone(pid, self.children.get(name), timeout)
            if _ours(pid, self.marker, self.children.get(name)):
                os.kill(pid, signal.SIGKILL)
                _wait_gone(pid, self.children.get(name), 5)
        pidfile.unlink(missing_ok=True)

    def stop_many(self, names: list[str], timeout: float = 20.0) -> None:
        """SIGTERM to all at once, then wait (a broker's shutdown hook takes ~3 s)."""
        for n in names:
            pidfile = self.root / "pids" / f"{n}.pid"
            if pidfile.exists():
                pid = int(pidfile.read_text().split()[0])
                if _ours(pid, self.marker, self.children.get(n)):
                    try:
                        os.kill(pid, signal.SIGTERM)
                    except ProcessLookupError:
                        pass
        for n in names:
            self.stop(n, timeout=timeout)

    def stop_all(self) -> None:
        """Clients first (they shut down against live brokers), then slaves, masters, name server."""
        piddir = self.root / "pids"
        if not piddir.exists():
            return
        names = [p.stem for p in piddir.glob("*.pid")]
        servers = ["broker-b-s", "broker-a", "broker-b", "namesrv"]
        self.stop_many([n for n in names if n not in servers])
        self.stop_many([n for n in ["broker-b-s"] if n in names])
        self.stop_many([n for n in ["broker-a", "broker-b"] if n in names])
        self.stop_many([n for n in ["namesrv"] if n in names])


def _ours(pid: int, marker: str, child: subprocess.Popen | None) -> bool:
    if child is not None:
        if child.poll() is not None:
            return False
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return marker.encode() in cmd or (child is not None and child.pid == pid)


def _wait_gone(pid: int, child: subprocess.Popen | None, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if child is not None:
            if child.poll() is not None:
                return
        elif not Path(f"/proc/{pid}").exists():
            return
        time.sleep(0.1)


def build(build_dir: Path) -> tuple[Path, Path]:
    """Compile realcluster/ and copy RocketMQ's jars (Maven Central through ~/.m2) into build_dir/lib; the
    5.x client build into build_dir/client5/lib; the product's collector into build_dir/collector/lib."""
    t0 = time.monotonic()
    if shutil.which("mvn") is None:
        raise HarnessError("mvn not found: install Maven 3 (Debian: apt-get install maven)")
    libs = []
    for pom, out, jar in [(POM, build_dir, "realcluster-0.1.jar"),
                          (POM5, build_dir / "client5", "realcluster-client5-0.1.jar")]:
        cmd = ["mvn", "-q", "-B", "-f", str(pom), f"-Drl.build={out}", "package", "dependency:copy-dependencies"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            text = r.stdout + r.stderr
            missing = [ln for ln in text.splitlines() if "Could not find artifact" in ln
                       or "Could not resolve" in ln or "Could not transfer" in ln]
            first = (missing or [ln for ln in text.splitlines() if "ERROR" in ln] or ["mvn failed"])[0]
            raise HarnessError(f"cannot fetch or build the RocketMQ jars ({pom.relative_to(REPO)}): "
                               f"{first.strip()[:400]}")
        lib = out / "lib"
        shutil.copy(out / jar, lib / jar)
        libs.append(lib)
    try:  # the product's collector (collector/, `rocketlens collect`), built the way that command builds it
        coll = build_collector(build_dir / "collector")
    except RocketlensError as e:
        raise HarnessError(e.format_message()) from None
    log(f"built realcluster ({len(list(libs[0].glob('*.jar')))} jars), its 5.x client "
        f"({len(list(libs[1].glob('*.jar')))} jars) and the collector ({len(list(coll.glob('*.jar')))} jars) "
        f"in {time.monotonic() - t0:.1f}s -> {build_dir}")
    return libs[0], libs[1]


def port_taken(port: int) -> bool:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("0.0.0.0", port))  # 4.9.x binds the wildcard address
        return False
    except OSError:
        return True
    finally:
        s.close()


def check_ports() -> None:
    for name, ports in [("namesrv", [9876])] + [(b.name, b.ports) for b in BROKERS]:
        for p in ports:
            if port_taken(p):
                raise HarnessError(f"port {p} (for {name}) is taken: stop what listens there "
                                   f"(ss -ltnp 'sport = :{p}') and rerun")


def write_confs(root: Path, store_dir: Path) -> None:
    conf = root / "rmqhome" / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    for kind, file, console in [("namesrv", "namesrv.log", "RocketmqNamesrvConsole"),
                                ("broker", "broker.log", "RocketmqConsole"),
                                ("tools", "tools.log", "RocketmqConsole")]:
        (conf / f"logback_{kind}.xml").write_text(LOGBACK.format(file=file, console=console))
    # The collector runs mqadmin's sub commands in its JVM and captures System.out: logback's default
    # console appender would write the admin client's own log lines into the landing files.
    (conf / "logback_collector.xml").write_text(
        '<configuration><appender name="F" class="ch.qos.logback.core.FileAppender">'
        '<file>${user.home}/logs/rocketmqlogs/collector.log</file><encoder><pattern>%d{ISO8601} %p %t - %m%n'
        '</pattern></encoder></appender><root level="INFO"><appender-ref ref="F"/></root></configuration>\n')
    for b in BROKERS:
        store = store_dir / b.name
        (root / f"{b.name}.conf").write_text("\n".join([
            f"brokerClusterName={CLUSTER}",
            f"brokerName={b.broker_name}",
            f"brokerId={b.broker_id}",
            f"brokerRole={b.role}",
            "flushDiskType=ASYNC_FLUSH",
            f"namesrvAddr={NAMESRV}",
            "brokerIP1=127.0.0.1",
            "brokerIP2=127.0.0.1",
            f"listenPort={b.port}",
            f"storePathRootDir={store}",
            f"storePathCommitLog={store}/commitlog",
            "mappedFileSizeCommitLog=33554432",
            "mappedFileSizeConsumeQueue=120000",
            "maxHashSlotNum=4000",
            "maxIndexNum=1000",
            # off, as in production: with it on, a consumer's send-back fallback to %RETRY%<group> while its
            # broker group has no master auto-creates the retry topic on another broker through TBW102 (seen
            # here), which ends the local retry loop of seed 002. Topics are created with updateTopic.
            "autoCreateTopicEnable=false",
            "autoCreateSubscriptionGroup=true",
            # small thread pools: 2 cores, three brokers
            "sendMessageThreadPoolNums=2",
            "pullMessageThreadPoolNums=4",
            "",
        ]))


def wait_for_line(procs: Procs, name: str, needle: str, timeout: float, seen: int = 0) -> float:
    """Seconds until the process printed `needle` more than `seen` times (its .out is appended across restarts)."""
    t0 = time.monotonic()
    out = procs.root / f"{name}.out"
    while time.monotonic() - t0 < timeout:
        if out.exists() and out.read_text(errors="replace").count(needle) > seen:
            return time.monotonic() - t0
        if not procs.alive(name):
            tail = out.read_text(errors="replace").strip().splitlines()[-3:] if out.exists() else []
            raise HarnessError(f"{name} exited before '{needle}': {' | '.join(tail)[:400]} (see {out})")
        time.sleep(0.1)
    raise HarnessError(f"{name} did not print '{needle}' within {timeout:.0f}s (see {out})")


@dataclass
class Cluster:
    procs: Procs
    lib: Path
    store_dir: Path
    timings: dict[str, float] = field(default_factory=dict)

    def start(self) -> None:
        check_ports()
        write_confs(self.procs.root, self.store_dir)
        t0 = time.monotonic()
        self.procs.java("namesrv", self.lib, "org.apache.rocketmq.namesrv.NamesrvStartup", [], heap="96m")
        self.timings["namesrv_boot_s"] = wait_for_line(self.procs, "namesrv", "The Name Server boot success", 60)
        for b in BROKERS:
            self.start_broker(b)
        self.timings["cluster_up_s"] = time.monotonic() - t0

    def start_broker(self, b: Broker, key: str = "") -> float:
        out = self.procs.root / f"{b.name}.out"
        seen = out.read_text(errors="replace").count("boot success") if out.exists() else 0
        self.procs.java(b.name, self.lib, "org.apache.rocketmq.broker.BrokerStartup",
                        ["-c", str(self.procs.root / f"{b.name}.conf")], heap="192m")
        s = wait_for_line(self.procs, b.name, "boot success", 90, seen)
        self.timings[key or f"{b.name}_boot_s"] = s
        return s

    def rss(self) -> dict[str, float | None]:
        return {n: self.procs.rss_mib(n) for n in ["namesrv", *[b.name for b in BROKERS]]}


def mqadmin(procs: Procs, lib: Path, args: list[str], *, timeout: float = 60) -> tuple[str, float]:
    """One mqadmin call as an operator runs it (one JVM); returns its output and wall seconds."""
    home = procs.root / "tools"
    home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, ROCKETMQ_HOME=str(procs.root / "rmqhome"), TZ="UTC")
    argv = ["java", *SMALL, "-Xmx128m", procs.marker, f"-Duser.home={home}", "-cp", f"{lib}/*",
            "org.apache.rocketmq.tools.command.MQAdminStartup", *args, "-n", NAMESRV]
    t0 = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=home, timeout=timeout)
    return r.stdout + r.stderr, time.monotonic() - t0


if __name__ == "__main__":  # pragma: no cover - manual use: python -m tests.realcluster.cluster stop ROOT
    if len(sys.argv) == 3 and sys.argv[1] == "stop":
        Procs(Path(sys.argv[2]).resolve()).stop_all()
