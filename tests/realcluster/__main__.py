"""`make realcluster`: RocketMQ itself in the loop (issue 57).

    python -m tests.realcluster [--root DIR] [--seconds S] [--interval S] [--no-netns] [--no-run]
    python -m tests.realcluster stop --root DIR      # ends what a crashed run left (by its pid files)

Builds realcluster/ with Maven (RocketMQ 4.9.7 jars from Maven Central into ~/.m2), then, inside a
private network namespace when it can (4.9.x servers bind every interface), starts the name server and
brokers, creates the topics, starts every case's clients and producers and the collector, lets the day run,
stops everything it started, runs `rocketlens run` on the collected landing and compares the findings with
what the clients recorded: one line per case. Everything lives under --root (default
/tmp/rocketlens-realcluster), nothing in the checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from jobs.collect import collector_argv
from tests.realcluster import cases as C
from tests.realcluster.cluster import (
    BROKERS,
    CLUSTER,
    NAMESRV,
    REPO,
    SMALL,
    Cluster,
    HarnessError,
    Procs,
    build,
    log,
    mqadmin,
)

DEFAULT_ROOT = Path(os.environ.get("RC_ROOT", "/tmp/rocketlens-realcluster"))


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.realcluster")
    ap.add_argument("cmd", nargs="?", default="all", choices=["all", "stop"])
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--seconds", type=int, default=210, help="seconds of traffic after the clients settle")
    ap.add_argument("--interval", type=int, default=10, help="seconds between collection rounds")
    ap.add_argument("--no-netns", action="store_true", help="run on the host network (4.9.x binds 0.0.0.0)")
    ap.add_argument("--no-run", action="store_true", help="stop after collecting (no rocketlens run)")
    ap.add_argument("--lib", type=Path, help="(internal) the built jars; skips the build")
    a = ap.parse_args(argv)
    root = a.root.resolve()
    if a.cmd == "stop":
        Procs(root).stop_all()
        return 0
    try:
        if a.lib is None:
            lib, _ = build(Path(os.environ.get("RC_BUILD", "/tmp/rocketlens-realcluster-build")))
            if not a.no_netns and os.environ.get("RC_NETNS") != "1" and _netns_ok():
                # the rest runs in a network namespace of its own: loopback only
                inner = [sys.executable, "-m", "tests.realcluster", "all", "--root", str(root), "--lib", str(lib),
                         "--seconds", str(a.seconds), "--interval", str(a.interval)]
                inner += ["--no-run"] if a.no_run else []
                env = dict(os.environ, RC_NETNS="1", PYTHONPATH=str(REPO))
                cmd = ["unshare", "-n", "--", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *inner]
                return subprocess.call(cmd, env=env, cwd=REPO)
            if not a.no_netns and os.environ.get("RC_NETNS") != "1":
                log("no network namespace (needs root and unshare): the brokers bind 0.0.0.0 on the host network")
        else:
            lib = a.lib
        return run_day(root, lib, a.seconds, a.interval, a.no_run)
    except HarnessError as e:
        print(f"realcluster: {e}", file=sys.stderr, flush=True)
        return 1


def _netns_ok() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    return subprocess.call(["unshare", "-n", "true"], stderr=subprocess.DEVNULL) == 0


def run_day(root: Path, lib: Path, seconds: int, interval: int, no_run: bool) -> int:
    stale = Procs(root)
    stale.stop_all()  # a crashed earlier run's processes (pid files + marker), nothing else
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    procs = Procs(root)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    metrics: dict = {"started": datetime.now(timezone.utc).isoformat()}
    day = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    t_all = time.monotonic()
    try:
        cluster = Cluster(procs, lib, root / "store")
        cluster.start()
        log("cluster up: " + " ".join(f"{k}={v:.1f}" for k, v in cluster.timings.items()))
        metrics["timings"] = cluster.timings
        _wait_cluster(procs, lib, metrics)
        only = {t: c.broker for c in C.CASES if c.broker for t in c.topics}
        addr = {b.broker_name: b.addr for b in BROKERS if b.broker_id == 0}
        for t in C.topics_of():
            where = ["-b", addr[only[t]]] if t in only else ["-c", CLUSTER]
            out, s = mqadmin(procs, lib, ["updateTopic", *where, "-t", t, "-r", "4", "-w", "4"])
            if "success" not in out:
                raise HarnessError(f"updateTopic {t} failed: {out.strip()[:300]}")
            metrics.setdefault("mqadmin_updateTopic_s", []).append(round(s, 2))
        log(f"topics created: {len(C.topics_of())} (mqadmin JVM per call: "
            f"{min(metrics['mqadmin_updateTopic_s']):.1f}-{max(metrics['mqadmin_updateTopic_s']):.1f}s)")
        metrics["rss_cluster_idle_mib"] = cluster.rss()
        start_clients(procs, lib, root)
        start_collector(procs, lib, root, interval)
        time.sleep(25)  # RebalanceService waits 20 s between rounds: let every group settle first
        start_producers(procs, lib, root, seconds)
        t_start = time.monotonic()
        t_end = t_start + seconds
        leaves = sorted(((c.leave[1], c) for c in C.CASES if c.leave), key=lambda lc: lc[0])
        left: set[str] = set()
        downs = [c.master_down for c in C.CASES if c.master_down]
        down = downs[0] if downs else None
        killed = restarted = False
        while time.monotonic() < t_end:
            time.sleep(1)
            if down and not killed and time.monotonic() - t_start >= down[0]:
                _harness_truth(root, "master_killed", broker="broker-b", addr="127.0.0.1:10921")
                procs.stop("broker-b", kill=True)
                killed = True
                log("broker-b's master killed (-9); its slave keeps serving")
            if down and killed and not restarted and time.monotonic() - t_start >= down[1]:
                s = cluster.start_broker(BROKERS[1], "broker-b_restart_s")
                _harness_truth(root, "master_restarted", broker="broker-b", addr="127.0.0.1:10921")
                restarted = True
                log(f"broker-b's master restarted (boot success in {s:.1f}s)")
            for at, case in leaves:
                if case.name not in left and time.monotonic() - t_start >= at:
                    left.add(case.name)
                    name = f"c-{_leaver(root, case)}"
                    _harness_truth(root, "leave", name=name[2:])
                    procs.stop(name)
                    left.add(name)
                    log(f"{name[2:]} left {case.group} (SIGTERM, clean shutdown)")
            dead = [n for n, p in procs.children.items()
                    if p.poll() is not None and not n.startswith("producer") and n not in left
                    and not (n == "broker-b" and killed and not restarted)]
            if dead:
                raise HarnessError(f"{', '.join(dead)} exited early (see {root}/<name>.out)")
        metrics["rss_loaded_mib"] = {n: procs.rss_mib(n) for n in procs.children}
        # the clients leave while the collector still polls, as they would on a real day
        log("traffic done; stopping clients while the collector keeps polling")
        procs.stop_many([n for n in procs.children if n.startswith("producer")])
        procs.stop_many([n for n in procs.children if n.startswith("c-")])
        time.sleep(interval + 2)
        (root / "collect.stop").touch()
        procs.stop("collector", timeout=30)
    except KeyboardInterrupt:
        log("interrupted: stopping everything this run started")
        procs.stop_all()
        return 130
    except HarnessError:
        procs.stop_all()
        raise
    finally:
        t0 = time.monotonic()
        procs.stop_all()
        metrics["stop_s"] = round(time.monotonic() - t0, 1)
        metrics["collect_rounds"] = _collector_rounds(root)
        (root / "metrics.json").write_text(json.dumps(metrics, indent=1, default=str))
    metrics["collected"] = check_collected(root)
    log(f"collected: {metrics['collected']}")
    land_client_logs(root, day)
    log(f"cluster phase {time.monotonic() - t_all:.0f}s, stop {metrics['stop_s']}s; landing {root / 'landing'}")
    if no_run:
        return 0
    from tests.realcluster import compare
    return compare.run_and_compare(root, day)


def _wait_cluster(procs: Procs, lib: Path, metrics: dict) -> None:
    t0 = time.monotonic()
    for _ in range(20):
        out, s = mqadmin(procs, lib, ["clusterList"])
        metrics.setdefault("mqadmin_clusterList_s", []).append(round(s, 2))
        if out.count("127.0.0.1:109") >= 1 and out.count("127.0.0.1:1092") >= 1 and out.count("127.0.0.1:1093") >= 1:
            metrics["clusterList_ready_s"] = round(time.monotonic() - t0, 1)
            return
        time.sleep(2)
    raise HarnessError("clusterList never showed broker-a, broker-b and its slave")


def client_java(procs: Procs, lib: Path, name: str, main: str, args: list[str], heap: str = "64m",
                v5: bool = False) -> None:
    home = procs.root / "clients" / name
    home.mkdir(parents=True, exist_ok=True)
    if v5:  # realcluster/client5's build beside the 4.9.7 one; 5.x logs through its own logback
        lib = lib.parent / "client5" / "lib"
        (home / "v5").touch()
    logroot = "rocketmq.log.root" if v5 else "rocketmq.client.logRoot"
    argv = ["java", *SMALL, f"-Xmx{heap}", procs.marker, f"-Duser.home={home}",
            f"-D{logroot}={home}/logs/rocketmqlogs", "-cp", f"{lib}/*",
            f"rocketlens.realcluster.{main}", *args]
    p = procs.spawn(name, argv, cwd=home)
    del p


def start_clients(procs: Procs, lib: Path, root: Path) -> None:
    # the 5.x clients first: their start-up RPCs (3 s timeout) failed once behind 20 starting JVMs on 2 cores
    order = sorted(((case, cl) for case in C.CASES for cl in case.clients), key=lambda cc: not cc[1].v5)
    for case, cl in order:
        args = ["--group", case.group, "--topics", ",".join(cl.topics), "--name", cl.name,
                "--truth", str(root / "truth" / f"{cl.name}.jsonl"), "--namesrv", NAMESRV]
        if cl.instance:
            args += ["--instance", cl.instance]
        if cl.orderly:
            args += ["--orderly"]
        if cl.broadcast:
            args += ["--broadcast"]
        if cl.strategy != "avg":
            args += ["--strategy", cl.strategy]
        if cl.slow_key:
            args += ["--slow-key", cl.slow_key, "--slow-ms", str(cl.slow_ms)]
        if cl.fail:
            args += ["--fail"]
        if cl.consume_ms:
            args += ["--consume-ms", str(cl.consume_ms)]
        args += ["--threads", str(cl.threads)]
        if cl.persist_ms:
            args += ["--persist-ms", str(cl.persist_ms)]
        time.sleep(0.5)  # 2 cores: stagger the JVM starts
        client_java(procs, lib, f"c-{cl.name}", "SeedConsumer", args, v5=cl.v5)
    log(f"started {sum(len(c.clients) for c in C.CASES)} consumer JVMs")


def start_producers(procs: Procs, lib: Path, root: Path, seconds: int) -> None:
    plain = [t for c in C.CASES if not c.producer for t in c.topics]
    client_java(procs, lib, "producer-main", "SeedProducer",
                ["--topic", ",".join(plain), "--rate", str(4 * len(plain)), "--seconds", str(seconds),
                 "--name", "producer-main", "--truth", str(root / "truth" / "producer-main.jsonl")])
    for c in C.CASES:
        if c.producer:
            extra = [x for k, v in c.producer.items() for x in (f"--{k}", v)]
            client_java(procs, lib, f"producer-{c.name}", "SeedProducer",
                        ["--topic", ",".join(c.topics), "--rate", str(c.rate), "--seconds", str(seconds),
                         "--name", f"producer-{c.name}", "--truth", str(root / "truth" / f"producer-{c.name}.jsonl"),
                         *extra])
    log("producers started")


def start_collector(procs: Procs, lib: Path, root: Path, interval: int) -> None:
    groups = [c.group for c in C.CASES]
    logback = root / "rmqhome" / "conf" / "logback_collector.xml"
    # the product's command line (`rocketlens collect`, jobs/collect.py) with the harness's JVM options
    argv = collector_argv(lib.parent / "collector" / "lib", NAMESRV, root / "landing", CLUSTER, groups, interval * 1000,
                          stop_file=root / "collect.stop",
                          jvm_opts=[*SMALL, "-Xmx96m", "-Duser.timezone=UTC", procs.marker,
                                    f"-Dlogback.configurationFile={logback}",
                                    f"-Duser.home={root / 'collector'}"])
    argv += ["--routes", str(root / "routes"), "--topics", ",".join(C.topics_of())]
    (root / "collector").mkdir(exist_ok=True)
    # ACL credentials as `rocketlens collect` hands them over (its env, never argv): this cluster runs without
    # aclEnable, so the brokers ignore the signature; check_no_secret then looks for them in what was written
    procs.spawn("collector", argv, cwd=root / "collector", env={**os.environ, **ACL_ENV})
    log(f"collector started: {len(C.CASES)} groups every {interval}s")


def _leaver(root: Path, case: C.Case) -> str:
    """The client to stop: the one named, or for "busiest" the one whose latest own table holds most queues."""
    assert case.leave is not None
    if case.leave[0] != "busiest":
        return case.leave[0]
    best, most = case.clients[0].name, -1
    for cl in case.clients:
        f = root / "truth" / f"{cl.name}.jsonl"
        owned = [json.loads(ln) for ln in f.read_text().splitlines() if '"ev":"owned"' in ln] if f.exists() else []
        n = len([q for q in owned[-1]["queues"].split() if not q.startswith("%RETRY%")]) if owned else 0
        if n > most:
            best, most = cl.name, n
    return best


def _harness_truth(root: Path, ev: str, **kv: object) -> None:
    """What the harness itself did, beside the clients' truth (truth/harness.jsonl)."""
    with open(root / "truth" / "harness.jsonl", "a") as f:
        f.write(json.dumps({"ev": ev, "ts": int(time.time() * 1000), "role": "harness", **kv}) + "\n")


ACL_ENV = {"ROCKETLENS_COLLECT_ACCESS_KEY": "rl-harness-ak-7c1", "ROCKETLENS_COLLECT_SECRET_KEY": "rl-harness-sk-93d0f"}


def check_collected(root: Path) -> dict:
    """What DESIGN.md §1 asks of the collector that the cases do not check: neither ACL credential
    in any landed file or in the collector's output, every landed file whole (no temp file left),
    and every JSON Lines offsets row it wrote with ``broker_id`` and ``min_offset``."""
    leaks, temps, rows, without = [], [], 0, 0
    for f in sorted((root / "landing").rglob("*")):
        if not f.is_file():
            continue
        if f.name.startswith("."):
            temps.append(str(f))
        text = f.read_text(errors="replace")
        leaks += [f"{f}: {k}" for k, v in ACL_ENV.items() if v in text]
        if f.name.endswith(".unlisted.jsonl"):
            for ln in text.splitlines():
                rows += 1
                without += not {"broker_id", "min_offset"} <= json.loads(ln).keys()
    out = root / "collector.out"
    if out.exists():
        leaks += [f"{out}: {k}" for k, v in ACL_ENV.items() if v in out.read_text(errors="replace")]
    if leaks or temps or without:
        raise HarnessError(f"collector: credentials in {leaks[:3]}, temp files {temps[:3]}, "
                           f"{without} of {rows} JSON Lines offsets rows without broker_id/min_offset")
    return {"unlisted_rows": rows, "acl_leaks": 0, "temp_files": 0}


def _collector_rounds(root: Path) -> list[str]:
    out = root / "collector.out"
    return [ln for ln in out.read_text().splitlines() if ln.startswith("round ")] if out.exists() else []


def land_client_logs(root: Path, day: str) -> None:
    """Each client's rocketmq_client.log as the product reads it: client_logs/date=D/<host>/<file>.log.
    The 5.x clients' logs (GMT+8 whatever the JVM zone) go under the host folder `localhost-v5`, the
    4.9.x ones (the JVM's zone, UTC here) under `localhost`: the conf names each folder's zone."""
    for f in sorted((root / "clients").glob("*/logs/rocketmqlogs/rocketmq_client.log")):
        host = "localhost-v5" if (f.parents[2] / "v5").exists() else "localhost"
        dest = root / "landing" / "client_logs" / f"date={day}" / host
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dest / f"{f.parents[2].name}.log")


if __name__ == "__main__":
    sys.exit(main())
