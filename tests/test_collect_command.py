"""``rocketlens collect`` (jobs/collect.py, docs/collect.md): finding or building the collector and
the one line a missing piece prints. No JVM starts here: the real collector runs against a real
cluster in ``make realcluster`` (tests/realcluster/__main__.py starts it through
``collector_argv`` and builds it through ``build_collector``)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from jobs import collect
from jobs.cli import main


def invoke(*args: str):
    return CliRunner().invoke(main, ["collect", *args])


def fake_tool(folder: Path, name: str, script: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / name
    tool.write_text("#!/bin/sh\n" + script)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)


def test_without_java_one_line_and_exit_7(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    result = invoke("--namesrv", "127.0.0.1:9876", "--landing", str(tmp_path / "landing"))
    assert result.exit_code == 7
    assert result.output.strip().splitlines() == [
        "rocketlens: java not found: install a JDK 17 (the collector is RocketMQ's admin client, a JVM)"]


def test_a_lib_without_the_collector_jar_says_how_to_build_it(monkeypatch, tmp_path):
    fake_tool(tmp_path / "bin", "java", "exit 0\n")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    (tmp_path / "lib").mkdir()
    result = invoke("--namesrv", "x:9876", "--landing", str(tmp_path / "landing"), "--lib", str(tmp_path / "lib"))
    assert result.exit_code == 1
    line, = result.output.strip().splitlines()
    assert f"holds no {collect.COLLECTOR_JAR}" in line and "mvn -f collector/pom.xml" in line


def test_without_maven_and_without_a_build_one_line(monkeypatch, tmp_path):
    fake_tool(tmp_path / "bin", "java", "exit 0\n")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(collect, "DEFAULT_BUILD", tmp_path / "cache")
    with pytest.raises(collect.RocketlensError, match=r"^mvn not found: install Maven 3 .* or pass --lib DIR"):
        collect.collector_lib(None, tmp_path / "cache")


def test_a_jar_maven_cannot_fetch_is_named(monkeypatch, tmp_path):
    fake_tool(tmp_path / "bin", "mvn",
              'echo "[ERROR] Failed to execute goal on project rocketlens-collector: Could not resolve dependencies:'
              ' Could not find artifact org.apache.rocketmq:rocketmq-tools:jar:4.9.7 in central"\nexit 1\n')
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(collect.RocketlensError) as err:
        collect.build_collector(tmp_path / "build")
    assert "cannot build the collector" in str(err.value)
    assert "Could not find artifact org.apache.rocketmq:rocketmq-tools:jar:4.9.7" in str(err.value)


def test_the_command_becomes_the_collector_jvm(monkeypatch, tmp_path):
    """With Java and a built lib the command replaces itself with one JVM: the collector's main
    class, every jar of the lib, UTC (mqadmin prints #LastTime in the JVM's zone; the landing reads
    UTC), the groups joined, the landing created."""
    fake_tool(tmp_path / "bin", "java", "exit 0\n")
    monkeypatch.setenv("PATH", str(tmp_path / "bin") + os.pathsep + os.environ["PATH"])
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / collect.COLLECTOR_JAR).write_bytes(b"")
    seen = []
    monkeypatch.setattr(collect.os, "execvpe", lambda file, argv, env: seen.append((file, argv)))
    result = invoke("--namesrv", "10.0.0.5:9876;10.0.0.6:9876", "--landing", str(tmp_path / "landing"),
                    "--cluster", "prod", "--groups", "GID_a", "--group", "GID_b", "--interval", "30s",
                    "--rounds", "2", "--lib", str(lib))
    assert result.exit_code == 0, result.output
    (file, argv), = seen
    assert file == "java" and argv[0] == "java"
    assert "-Duser.timezone=UTC" in argv
    assert argv[argv.index("-cp") + 1] == f"{lib}/*"
    main_at = argv.index(collect.COLLECTOR_MAIN)
    opts = dict(zip(argv[main_at + 1::2], argv[main_at + 2::2]))
    assert opts == {"--namesrv": "10.0.0.5:9876;10.0.0.6:9876", "--landing": str(tmp_path / "landing"),
                    "--cluster": "prod", "--interval-ms": "30000", "--groups": "GID_a,GID_b", "--rounds": "2"}
    assert (tmp_path / "landing").is_dir()


def test_without_groups_the_collector_discovers_them(tmp_path):
    argv = collect.collector_argv(tmp_path, "ns:9876", tmp_path / "l", "c", [], 60)
    assert "--groups" not in argv and "--rounds" not in argv


def exec_with_fake_java(monkeypatch, tmp_path, *args: str, env: dict[str, str] | None = None):
    """Runs ``rocketlens collect`` up to the exec of the JVM; returns (result, argv, env) of that exec
    (argv/env None when it stopped before)."""
    fake_tool(tmp_path / "bin", "java", "exit 0\n")
    monkeypatch.setenv("PATH", str(tmp_path / "bin") + os.pathsep + os.environ["PATH"])
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    lib = tmp_path / "lib"
    lib.mkdir(exist_ok=True)
    (lib / collect.COLLECTOR_JAR).write_bytes(b"")
    seen = []
    monkeypatch.setattr(collect.os, "execvpe", lambda file, argv, env: seen.append((argv, env)))
    result = invoke("--namesrv", "ns:9876", "--landing", str(tmp_path / "landing"), "--lib", str(lib), *args)
    argv, exec_env = seen[0] if seen else (None, None)
    return result, argv, exec_env


def collector_opts(argv: list[str]) -> dict[str, str]:
    main_at = argv.index(collect.COLLECTOR_MAIN)
    return dict(zip(argv[main_at + 1::2], argv[main_at + 2::2]))


@pytest.mark.parametrize(("given", "ms"), [("60s", 60_000), ("1m", 60_000), ("90", 90_000), ("2h", 7_200_000),
                                           ("1500ms", 1500)])
def test_interval_is_a_duration(monkeypatch, tmp_path, given, ms):
    result, argv, _ = exec_with_fake_java(monkeypatch, tmp_path, "--interval", given)
    assert result.exit_code == 0, result.output
    assert collector_opts(argv)["--interval-ms"] == str(ms)


def test_interval_defaults_to_60s(monkeypatch, tmp_path):
    result, argv, _ = exec_with_fake_java(monkeypatch, tmp_path)
    assert collector_opts(argv)["--interval-ms"] == "60000"
    assert "--rounds" not in argv and "--until-ms" not in argv


@pytest.mark.parametrize(("args", "message"), [
    (("--interval", "soon"), "--interval 'soon' is not a duration: write e.g. 60s, 1m, 1h"),
    (("--interval", "500ms"), "--interval 500ms is below 1s"),
    (("--interval", "-5s"), "--interval '-5s' is not a duration"),
    (("--until", "tomorrow"), "--until 'tomorrow' is not a time: write ISO-8601"),
    (("--until", "2020-01-01T00:00:00Z"), "--until 2020-01-01T00:00:00Z is already past"),
    (("--rounds", "3", "--until", "2999-01-01T00:00:00Z"), "--rounds and --until both given"),
    (("--groups", "GID a/b"), "--groups 'a/b' is not a group name or glob"),
    (("--groups", "GID_[ab"), "--groups 'GID_[ab' is not a group name or glob"),
    (("--groups", "GID_[]"), "--groups 'GID_[]' is not a group name or glob"),
])
def test_bad_options_are_one_line_usage_errors(monkeypatch, tmp_path, args, message):
    result, argv, _ = exec_with_fake_java(monkeypatch, tmp_path, *args)
    assert result.exit_code == 2 and argv is None
    line, = result.output.strip().splitlines()
    assert line.startswith("rocketlens: ") and message in line, line


def test_until_is_handed_over_as_epoch_ms(monkeypatch, tmp_path):
    result, argv, _ = exec_with_fake_java(monkeypatch, tmp_path, "--until", "2999-01-01T01:00:00+01:00")
    assert result.exit_code == 0, result.output
    assert collector_opts(argv)["--until-ms"] == "32472144000000"   # 2999-01-01T00:00:00Z


def test_groups_take_globs_lists_and_repeats(monkeypatch, tmp_path):
    result, argv, _ = exec_with_fake_java(monkeypatch, tmp_path, "--groups", "GID_orders*,GID_[!t]x",
                                          "--groups", "CID_? GID_billing", "--group", "GID_billing")
    assert result.exit_code == 0, result.output
    assert collector_opts(argv)["--groups"] == "GID_orders*,GID_[!t]x,CID_?,GID_billing"


def test_groups_from_the_env_var(monkeypatch, tmp_path):
    result, argv, _ = exec_with_fake_java(monkeypatch, tmp_path, env={"ROCKETLENS_GROUPS": "GID_a* GID_b"})
    assert result.exit_code == 0, result.output
    assert collector_opts(argv)["--groups"] == "GID_a*,GID_b"


SECRET = "s3cr3t-Value-9f2"


def test_acl_credentials_reach_the_jvm_env_never_its_argv(monkeypatch, tmp_path):
    result, argv, env = exec_with_fake_java(
        monkeypatch, tmp_path, env={"ROCKETLENS__COLLECT__ACCESS_KEY": "rl-admin",
                                    "ROCKETLENS__COLLECT__SECRET_KEY": SECRET})
    assert result.exit_code == 0, result.output
    assert env[collect.ACCESS_KEY_ENV] == "rl-admin" and env[collect.SECRET_KEY_ENV] == SECRET
    assert not any(SECRET in a or "rl-admin" in a for a in argv)
    assert SECRET not in result.output


def test_acl_credentials_from_a_conf_file(monkeypatch, tmp_path):
    conf = tmp_path / "collect.toml"
    conf.write_text(f'[collect]\naccess_key = "rl-admin"\nsecret_key = "{SECRET}"\n')
    result, argv, env = exec_with_fake_java(monkeypatch, tmp_path, "--conf", str(conf))
    assert result.exit_code == 0, result.output
    assert env[collect.SECRET_KEY_ENV] == SECRET and not any(SECRET in a for a in argv)


def test_without_acl_settings_no_credential_env(monkeypatch, tmp_path):
    monkeypatch.delenv(collect.SECRET_KEY_ENV, raising=False)
    monkeypatch.delenv(collect.ACCESS_KEY_ENV, raising=False)
    result, _, env = exec_with_fake_java(monkeypatch, tmp_path)
    assert result.exit_code == 0 and collect.SECRET_KEY_ENV not in env


def test_half_an_acl_pair_is_a_usage_error_that_hides_the_value(monkeypatch, tmp_path):
    result, argv, _ = exec_with_fake_java(monkeypatch, tmp_path, env={"ROCKETLENS__COLLECT__SECRET_KEY": SECRET})
    assert result.exit_code == 2 and argv is None
    line, = result.output.strip().splitlines()
    assert "collect.access_key is not set" in line and SECRET not in line


def test_a_numeric_secret_stays_text_and_a_bad_one_is_not_echoed(monkeypatch, tmp_path):
    result, _, env = exec_with_fake_java(monkeypatch, tmp_path, env={"ROCKETLENS__COLLECT__ACCESS_KEY": "ak",
                                                                     "ROCKETLENS__COLLECT__SECRET_KEY": "1e5"})
    assert result.exit_code == 0 and env[collect.SECRET_KEY_ENV] == "1e5"
    monkeypatch.delenv("ROCKETLENS__COLLECT__SECRET_KEY")   # the env var would win over the file
    conf = tmp_path / "bad.toml"
    conf.write_text("[collect]\naccess_key = \"ak\"\nsecret_key = 918273645\n")
    result, argv, _ = exec_with_fake_java(monkeypatch, tmp_path, "--conf", str(conf))
    assert result.exit_code == 2 and argv is None
    assert "collect.secret_key" in result.output and "918273645" not in result.output
