"""``rocketlens collect``: poll a RocketMQ cluster through its admin API and write the landing
layout ``rocketlens run`` reads (DESIGN.md §1, §3; docs/collect.md).

The collector is one JVM for the whole collection, not one per group or round: RocketMQ's admin
client (``DefaultMQAdminExt``, rocketmq-tools 4.9.7 from Maven Central) and mqadmin's own
``consumerProgress`` / ``consumerConnection`` sub-commands run inside it, so the landed text is what
the ``mqadmin`` script prints (docs/landing-mqadmin.md). Its source is the small Maven module
``collector/`` of this repository; this module finds its jars, builds them once with Maven when
they are missing, and replaces itself with the JVM (``os.execvp``), so the process a scheduler
starts and stops is the collector itself. Java or Maven missing, or a build that cannot fetch its
jars, stops it with one line saying what to do (exit 7 for Java, 1 otherwise).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import click

from jobs.cli_common import JavaMissing, RocketlensError, env_option

COLLECTOR_POM = Path(__file__).resolve().parents[1] / "collector" / "pom.xml"
COLLECTOR_JAR = "rocketlens-collector-0.1.jar"
COLLECTOR_MAIN = "rocketlens.collector.Collect"
DEFAULT_BUILD = Path.home() / ".cache" / "rocketlens" / "collector-0.1"
# one collector JVM: 116 MB RSS collecting 11 groups every 10 s (tests/data/real-cluster/README.md)
JVM_OPTS = ["-Xmx128m", "-XX:+UseSerialGC", "-Duser.timezone=UTC"]


def build_collector(build_dir: Path) -> Path:
    """Compile ``collector/`` with Maven into ``build_dir`` (its jar and every dependency in
    ``build_dir/lib``; Maven Central through ``~/.m2``) and return that lib folder. Raises
    ``RocketlensError`` with one line when Maven is missing or a jar cannot be fetched."""
    if not COLLECTOR_POM.is_file():
        raise RocketlensError(f"the collector's source ({COLLECTOR_POM}) is not here: build it from a "
                              "rocketlens checkout and pass --lib DIR")
    if shutil.which("mvn") is None:
        raise RocketlensError("mvn not found: install Maven 3 (Debian: apt-get install maven) to build the "
                              "collector once, or pass --lib DIR with a built collector")
    cmd = ["mvn", "-q", "-B", "-f", str(COLLECTOR_POM), f"-Drl.build={build_dir}", "package",
           "dependency:copy-dependencies"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        lines = (r.stdout + r.stderr).splitlines()
        fetch = [ln for ln in lines if "Could not" in ln or "Cannot access" in ln]
        first = (fetch or [ln for ln in lines if "ERROR" in ln] or ["mvn failed"])[0]
        raise RocketlensError(f"cannot build the collector ({' '.join(cmd[:5])} …): {first.strip()[:300]}")
    lib = build_dir / "lib"
    shutil.copy(build_dir / COLLECTOR_JAR, lib / COLLECTOR_JAR)
    return lib


def collector_lib(lib: Path | None, build_dir: Path = DEFAULT_BUILD) -> Path:
    """The folder of the collector's jars: ``lib`` when given (it must hold the collector jar),
    else ``build_dir/lib``, built there on first use."""
    if lib is not None:
        if not (lib / COLLECTOR_JAR).is_file():
            raise RocketlensError(f"{lib} holds no {COLLECTOR_JAR}: build it with 'mvn -f collector/pom.xml "
                                  f"-Drl.build=DIR package dependency:copy-dependencies' and pass --lib DIR/lib")
        return lib
    if (build_dir / "lib" / COLLECTOR_JAR).is_file():
        return build_dir / "lib"
    return build_collector(build_dir)


def collector_argv(lib: Path, namesrv: str, landing: Path, cluster: str, groups: list[str],
                   interval_s: int, rounds: int | None = None, stop_file: Path | None = None,
                   jvm_opts: list[str] | None = None) -> list[str]:
    """The collector's command line (``java … rocketlens.collector.Collect …``)."""
    argv = ["java", *(JVM_OPTS if jvm_opts is None else jvm_opts), "-cp", f"{lib}/*", COLLECTOR_MAIN,
            "--namesrv", namesrv, "--landing", str(landing), "--cluster", cluster,
            "--interval-s", str(interval_s)]
    if groups:
        argv += ["--groups", ",".join(groups)]
    if rounds is not None:
        argv += ["--rounds", str(rounds)]
    if stop_file is not None:
        argv += ["--stop-file", str(stop_file)]
    return argv


@click.command("collect", epilog="""\b
Examples:
  rocketlens collect --namesrv 10.0.0.5:9876 --landing /data/rocketlens/landing --cluster prod
  rocketlens collect --namesrv 10.0.0.5:9876 --landing L --group GID_orders --group GID_billing --rounds 1""")
@env_option("--namesrv", required=True,
            help="name server address(es), HOST:PORT[;HOST:PORT] (mqadmin's -n)")
@env_option("--landing", type=click.Path(file_okay=False, path_type=Path), required=True,
            help="landing root to write (offsets/, connections/, running_info/)")
@env_option("--cluster", default="DefaultCluster", show_default=True,
            help="the cluster= name the files land under")
@click.option("--group", "groups", multiple=True,
              help="consumer group to collect (repeatable); default: every subscription group the masters "
                   "know, RocketMQ's own groups left out, re-read each round")
@env_option("--interval", type=click.IntRange(min=1), default=60, show_default=True,
            help="seconds between rounds")
@click.option("--rounds", type=click.IntRange(min=1), default=None,
              help="stop after N rounds (default: poll until stopped)")
@click.option("--stop-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="stop after the round in which this file appears")
@env_option("--lib", type=click.Path(file_okay=False, path_type=Path), default=None,
            help=f"folder of the built collector jars (default: built once into {DEFAULT_BUILD}/lib)")
def collect_command(namesrv: str, landing: Path, cluster: str, groups: tuple[str, ...], interval: int,
                    rounds: int | None, stop_file: Path | None, lib: Path | None) -> None:
    """Poll a cluster through RocketMQ's admin API and write the landing layout (one JVM)."""
    if shutil.which("java") is None:
        raise JavaMissing("java not found: install a JDK 17 (the collector is RocketMQ's admin client, a JVM)")
    jars = collector_lib(lib)
    landing.mkdir(parents=True, exist_ok=True)
    argv = collector_argv(jars, namesrv, landing, cluster, list(groups), interval, rounds, stop_file)
    os.execvp(argv[0], argv)
