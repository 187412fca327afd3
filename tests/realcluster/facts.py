"""Measure the recipe's unverified facts on this machine (tests/data/real-cluster/README.md, "Recipe facts verified").

    unshare -n sh -c 'ip link set lo up && exec python -m tests.realcluster.facts LIB ROOT'

LIB is the jar folder `python -m tests.realcluster` builds (/tmp/rocketlens-realcluster-build/lib).
Prints one JSON object per fact. Starts its own name server and broker-a only; stops them by pid.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.realcluster import cluster as K

CLIENT_ID_JAVA = """
import org.apache.rocketmq.client.ClientConfig;
public class ClientIdProbe {
    public static void main(String[] a) {
        ClientConfig c = new ClientConfig();
        c.changeInstanceNameToPID();
        System.out.println(c.getClientIP() + " " + c.buildMQClientId());
    }
}
"""


def fact(name: str, **kv: object) -> None:
    print(json.dumps({"fact": name, **kv}), flush=True)


def grep(path: Path, needle: str) -> list[str]:
    return [ln for ln in path.read_text(errors="replace").splitlines() if needle in ln] if path.exists() else []


def main(lib: Path, root: Path) -> None:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    procs = K.Procs(root)
    try:
        K.write_confs(root, root / "store")
        t0 = time.monotonic()
        procs.java("namesrv", lib, "org.apache.rocketmq.namesrv.NamesrvStartup", [], heap="96m")
        fact("namesrv_boot_s", seconds=round(K.wait_for_line(procs, "namesrv", "boot success", 60), 2))
        broker = K.BROKERS[0]

        # 1. idle mqadmin JVM cost
        times = []
        for _ in range(3):
            _, s = K.mqadmin(procs, lib, ["clusterList"])
            times.append(round(s, 2))
        fact("mqadmin_clusterList_idle_s", runs=times)

        # 2. the broker without the --add-opens flags: graceful stop after writes, restart after kill -9
        for flags in ("none", "add-opens"):
            saved = K.ADD_OPENS[:]
            if flags == "none":
                K.ADD_OPENS.clear()
            name = f"facts-broker-{flags}"  # own .out, user.home and logs per variant
            try:
                store = root / "store" / broker.name
                shutil.rmtree(store, ignore_errors=True)
                procs.java(name, lib, "org.apache.rocketmq.broker.BrokerStartup",
                           ["-c", str(root / f"{broker.name}.conf")], heap="192m")
                boot = K.wait_for_line(procs, name, "boot success", 90)
                rss = procs.rss_mib(name)
                _produce(procs, lib, root, 8)
                procs.stop(name)  # SIGTERM: shutdown hook unmaps the commit log
                log = root / name / "logs" / "rocketmqlogs" / "broker.log"
                graceful = grep(log, "InaccessibleObject") + grep(root / f"{name}.out", "InaccessibleObject")
                # restart, write, kill -9, restart: recovery truncates dirty files through MappedFile.clean
                procs.java(name, lib, "org.apache.rocketmq.broker.BrokerStartup",
                           ["-c", str(root / f"{broker.name}.conf")], heap="192m")
                K.wait_for_line(procs, name, "boot success", 90)
                _produce(procs, lib, root, 5)
                procs.stop(name, kill=True)
                out = root / f"{name}.out"
                before = out.read_text(errors="replace").count("boot success")
                procs.java(name, lib, "org.apache.rocketmq.broker.BrokerStartup",
                           ["-c", str(root / f"{broker.name}.conf")], heap="192m")
                restarted = True
                try:
                    t = time.monotonic()
                    while out.read_text(errors="replace").count("boot success") <= before:
                        if not procs.alive(name) or time.monotonic() - t > 60:
                            restarted = False
                            break
                        time.sleep(0.2)
                except K.HarnessError:
                    restarted = False
                procs.stop(name)
                after = grep(log, "InaccessibleObject") + grep(out, "InaccessibleObject")
                fact("broker_jdk17", flags=flags, boot_s=round(boot, 2), rss_mib=rss,
                     inaccessible_on_graceful_stop=graceful[:2], restart_after_kill9_ok=restarted,
                     inaccessible_lines_total=len(after), sample=after[:2])
            finally:
                K.ADD_OPENS[:] = saved

        # 3. client id and client IP without setClientIP, in this network (loopback only under unshare -n)
        src = root / "ClientIdProbe.java"
        src.write_text(CLIENT_ID_JAVA)
        r = subprocess.run(["java", "-cp", f"{lib}/*", str(src)], capture_output=True, text=True, timeout=60)
        fact("client_id_without_setClientIP", out=r.stdout.strip(), err=r.stderr.strip()[-300:],
             netns=os.environ.get("RC_NETNS") == "1")

        # 4. rocketmq_client.log zone: a consumer in Asia/Shanghai, its first line against the UTC clock
        home = root / "clients" / "tz"
        home.mkdir(parents=True)
        utc_before = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
        p = subprocess.Popen(["java", *K.SMALL, "-Xmx64m", "-Duser.timezone=Asia/Shanghai", procs.marker,
                              f"-Duser.home={home}", "-cp", f"{lib}/*", "rocketlens.realcluster.SeedConsumer",
                              "--group", "GID_tz", "--topics", "TopicTz", "--name", "tz",
                              "--truth", str(root / "tz.jsonl")], cwd=home, preexec_fn=K._die_with_parent)
        time.sleep(8)
        p.terminate()
        p.wait(20)
        first = (home / "logs" / "rocketmqlogs" / "rocketmq_client.log").read_text(errors="replace").splitlines()[:1]
        fact("client_log_zone", utc_now=utc_before, jvm_zone="Asia/Shanghai", first_line=first,
             crlf=(home / "logs" / "rocketmqlogs" / "rocketmq_client.log").read_bytes().count(b"\r\n") > 0)
        fact("broker_log_first_line", line=(root / "facts-broker-add-opens" / "logs" / "rocketmqlogs" / "broker.log")
             .read_text(errors="replace").splitlines()[:1], utc_now=utc_before)
        fact("total_s", seconds=round(time.monotonic() - t0, 1))
    finally:
        procs.stop_all()


def _produce(procs: K.Procs, lib: Path, root: Path, seconds: int) -> None:
    home = root / "clients" / "p"
    home.mkdir(parents=True, exist_ok=True)
    subprocess.run(["java", *K.SMALL, "-Xmx64m", procs.marker, f"-Duser.home={home}", "-cp", f"{lib}/*",
                    "rocketlens.realcluster.SeedProducer", "--topic", "TopicFacts", "--rate", "50",
                    "--seconds", str(seconds), "--name", "facts-p", "--truth", str(root / "p.jsonl")],
                   cwd=home, capture_output=True, timeout=120, preexec_fn=K._die_with_parent)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
