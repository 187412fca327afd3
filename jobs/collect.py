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

import datetime as dt
import os
import re
import shutil
import subprocess
from pathlib import Path

import click

from jobs.cli_common import JavaMissing, RocketlensError, UsageProblem, env_option, load_settings

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


# RocketMQ's group-name alphabet (Validators / TopicValidator: ``^[%|a-zA-Z0-9_-]+$``) plus the
# glob signs the collector matches: ``*`` any run, ``?`` one sign, ``[abc]`` / ``[!abc]`` one of
GLOB = re.compile(r"^(?:[%|a-zA-Z0-9_\-*?]|\[!?[%|a-zA-Z0-9_\-]+\])+$")
DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h)?\s*$")
DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, None: 1000}
# the environment the collector JVM reads the ACL credentials from (never its argv)
ACCESS_KEY_ENV = "ROCKETLENS_COLLECT_ACCESS_KEY"
SECRET_KEY_ENV = "ROCKETLENS_COLLECT_SECRET_KEY"


def parse_groups(values: tuple[str, ...] | list[str]) -> list[str]:
    """The ``--groups`` patterns, each value split on commas and blanks (``--groups 'GID_* GID_x'``,
    ``--groups GID_a,GID_b``, the option repeated), duplicates dropped, order kept. A pattern
    with a sign no group name can hold, or a ``[`` set that is unclosed or empty, is a usage error
    (exit 2). Matching is fnmatch's (``*`` any run, ``?`` one sign, ``[a-c]`` / ``[!a-c]`` one of /
    none of), done by the collector against the groups the masters list each round."""
    out: list[str] = []
    for value in values:
        for pattern in re.split(r"[,\s]+", value.strip()):
            if not pattern or pattern in out:
                continue
            if not GLOB.match(pattern):
                raise UsageProblem(f"--groups {pattern!r} is not a group name or glob: use letters, digits, "
                                   "%|_- and the glob signs * ? [...]")
            out.append(pattern)
    return out


def parse_interval(text: str) -> int:
    """``--interval`` as milliseconds: ``60s``, ``1m``, ``1h``, ``500ms``, or bare seconds
    (``60``); at least one second."""
    m = DURATION.match(text)
    if m is None:
        raise UsageProblem(f"--interval {text!r} is not a duration: write e.g. 60s, 1m, 1h (bare number = seconds)")
    ms = int(m.group(1)) * DURATION_MS[m.group(2)]
    if ms < 1000:
        raise UsageProblem(f"--interval {text} is below 1s: a round takes about a second; use 1s or more")
    return ms


def parse_until(text: str, now: dt.datetime | None = None) -> int:
    """``--until`` as epoch milliseconds: an ISO-8601 time (``2026-12-08T06:00:00Z``, an offset,
    or none = UTC). No round starts at or after it; a time already past is a usage error."""
    try:
        when = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise UsageProblem(f"--until {text!r} is not a time: write ISO-8601, e.g. 2026-12-08T06:00:00Z") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    now = now or dt.datetime.now(dt.timezone.utc)
    if when <= now:
        raise UsageProblem(f"--until {text} is already past (now {now:%Y-%m-%dT%H:%M:%SZ}): give a later time")
    return int(when.timestamp() * 1000)


def acl_env(access_key: str, secret_key: str) -> dict[str, str]:
    """The env vars that hand the ACL credentials to the collector JVM (it reads them with
    ``System.getenv``; argv is world-readable in ``ps``, the environment is not): empty when
    neither is set; one without the other is a usage error naming the missing key only."""
    if bool(access_key) != bool(secret_key):
        missing = "secret_key" if access_key else "access_key"
        raise UsageProblem(f"ACL: collect.{missing} is not set while its pair is: set both "
                           f"(ROCKETLENS__COLLECT__ACCESS_KEY and ROCKETLENS__COLLECT__SECRET_KEY) or neither")
    return {ACCESS_KEY_ENV: access_key, SECRET_KEY_ENV: secret_key} if access_key else {}


def collector_argv(lib: Path, namesrv: str, landing: Path, cluster: str, groups: list[str],
                   interval_ms: int, rounds: int | None = None, stop_file: Path | None = None,
                   jvm_opts: list[str] | None = None, until_ms: int | None = None) -> list[str]:
    """The collector's command line (``java … rocketlens.collector.Collect …``); never the ACL
    credentials (:func:`acl_env`)."""
    argv = ["java", *(JVM_OPTS if jvm_opts is None else jvm_opts), "-cp", f"{lib}/*", COLLECTOR_MAIN,
            "--namesrv", namesrv, "--landing", str(landing), "--cluster", cluster,
            "--interval-ms", str(interval_ms)]
    if groups:
        argv += ["--groups", ",".join(groups)]
    if rounds is not None:
        argv += ["--rounds", str(rounds)]
    if until_ms is not None:
        argv += ["--until-ms", str(until_ms)]
    if stop_file is not None:
        argv += ["--stop-file", str(stop_file)]
    return argv


@click.command("collect", epilog="""\b
Examples:
  rocketlens collect --namesrv 10.0.0.5:9876 --landing /data/rocketlens/landing --cluster prod
  rocketlens collect --namesrv 10.0.0.5:9876 --landing L --groups 'GID_orders*' GID_billing --rounds 1
  rocketlens collect --namesrv "10.0.0.5:9876;10.0.0.6:9876" --landing L --interval 30s --until 2026-12-08T06:00:00Z
\b
ACL: ROCKETLENS__COLLECT__ACCESS_KEY / ROCKETLENS__COLLECT__SECRET_KEY (or [collect] in --conf).""")
@env_option("--namesrv", required=True,
            help="name server address(es), HOST:PORT[;HOST:PORT] (mqadmin's -n)")
@env_option("--landing", type=click.Path(file_okay=False, path_type=Path), required=True,
            help="landing root to write (offsets/, connections/, running_info/)")
@env_option("--cluster", default="DefaultCluster", show_default=True,
            help="the cluster= name the files land under")
@env_option("--groups", "--group", "groups", multiple=True,
            help="groups to collect: names or globs (* ? [...]), several per option (comma or blank "
                 "separated) or the option repeated; default: every subscription group the masters know, "
                 "RocketMQ's own left out, re-read each round (globs too)")
@env_option("--interval", default="60s", show_default=True,
            help="time between round starts: 60s, 1m, 1h (bare number = seconds)")
@click.option("--rounds", type=click.IntRange(min=1), default=None,
              help="stop after N rounds (default: poll until stopped)")
@click.option("--until", default=None,
              help="start no round at or after this ISO-8601 time (Z/offset; none = UTC); instead of --rounds")
@click.option("--stop-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="extra: stop after the round in which this file appears")
@env_option("--lib", type=click.Path(file_okay=False, path_type=Path), default=None,
            help=f"extra: folder of the built collector jars (default: built once into {DEFAULT_BUILD}/lib)")
@env_option("--conf", type=click.Path(dir_okay=False), default=None,
            help="settings file layered over conf/ (DESIGN.md §2): its [collect] holds the ACL credentials")
def collect_command(namesrv: str, landing: Path, cluster: str, groups: tuple[str, ...], interval: str,
                    rounds: int | None, until: str | None, stop_file: Path | None, lib: Path | None,
                    conf: str | None) -> None:
    """Poll a cluster through RocketMQ's admin API and write the landing layout (one JVM)."""
    if rounds is not None and until is not None:
        raise UsageProblem("--rounds and --until both given: stop after N rounds or at a time, not both")
    patterns = parse_groups(groups)
    interval_ms = parse_interval(interval)
    until_ms = parse_until(until) if until is not None else None
    creds = load_settings(conf).collect
    env = acl_env(creds.access_key, creds.secret_key)
    if shutil.which("java") is None:
        raise JavaMissing("java not found: install a JDK 17 (the collector is RocketMQ's admin client, a JVM)")
    jars = collector_lib(lib)
    landing.mkdir(parents=True, exist_ok=True)
    argv = collector_argv(jars, namesrv, landing, cluster, patterns, interval_ms, rounds, stop_file,
                          until_ms=until_ms)
    os.execvpe(argv[0], argv, {**os.environ, **env})
