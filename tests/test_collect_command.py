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
    monkeypatch.setattr(collect.os, "execvp", lambda file, argv: seen.append((file, argv)))
    result = invoke("--namesrv", "10.0.0.5:9876;10.0.0.6:9876", "--landing", str(tmp_path / "landing"),
                    "--cluster", "prod", "--group", "GID_a", "--group", "GID_b", "--interval", "30",
                    "--rounds", "2", "--lib", str(lib))
    assert result.exit_code == 0, result.output
    (file, argv), = seen
    assert file == "java" and argv[0] == "java"
    assert "-Duser.timezone=UTC" in argv
    assert argv[argv.index("-cp") + 1] == f"{lib}/*"
    main_at = argv.index(collect.COLLECTOR_MAIN)
    opts = dict(zip(argv[main_at + 1::2], argv[main_at + 2::2]))
    assert opts == {"--namesrv": "10.0.0.5:9876;10.0.0.6:9876", "--landing": str(tmp_path / "landing"),
                    "--cluster": "prod", "--interval-s": "30", "--groups": "GID_a,GID_b", "--rounds": "2"}
    assert (tmp_path / "landing").is_dir()


def test_without_groups_the_collector_discovers_them(tmp_path):
    argv = collect.collector_argv(tmp_path, "ns:9876", tmp_path / "l", "c", [], 60)
    assert "--groups" not in argv and "--rounds" not in argv
