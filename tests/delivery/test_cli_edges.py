"""CLI edges of issue 22: ``sql --file`` / stdin with leading comments, severities in any case,
an example in every command's ``--help``, and a day whose landing files hold no line (exit 5)."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli

REPO = Path(__file__).resolve().parents[2]
COMMANDS = ["run", "sql", "tables", "demo", "report", "simulate", "replay", "notify", "metrics"]
QUERY = ("-- the persisting fault's incidents\n/* one row per kind */\n"
         "SELECT kind, open_since_day FROM gold.incidents\n"
         "WHERE date = DATE'2025-11-22' ORDER BY kind;\n")
# duplicate-client-id days: the orphaned queues' backlog grows too (docs/contract.md §5.4)
EXPECTED = ("kind,open_since_day\nBACKLOG,2025-11-21\nDOUBLE_OWNED,2025-11-21\n"
            "ORPHANED,2025-11-21\nSTUCK,2025-11-21\n")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_s_help_shows_an_example(command):
    proc = run_cli(command, "--help")
    assert "Example" in proc.stdout and f"rocketlens {command} " in proc.stdout


@pytest.mark.delta
def test_sql_reads_a_file_whose_first_line_is_a_comment(days_lake, tmp_path):
    query = tmp_path / "q.sql"
    query.write_text(QUERY)
    proc = run_cli("sql", "--file", str(query), "--lake", str(days_lake), "--format", "CSV")
    assert proc.stdout == EXPECTED


@pytest.mark.delta
@pytest.mark.parametrize("args", [["-"], ["--file", "-"]], ids=["query-dash", "file-dash"])
def test_sql_reads_stdin(days_lake, args):
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("ROCKETLENS")}
    proc = subprocess.run([sys.executable, "-m", "jobs", "sql", *args, "--lake", str(days_lake),
                           "--format", "csv"], input=QUERY, cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert (proc.returncode, proc.stdout) == (0, EXPECTED), proc.stderr


@pytest.mark.delta
def test_sql_takes_a_query_argument_that_starts_with_a_comment(days_lake):
    assert run_cli("sql", QUERY, "--lake", str(days_lake), "--format", "csv").stdout == EXPECTED


def test_sql_wants_exactly_one_query(tmp_path):
    (tmp_path / "q.sql").write_text("SELECT 1")
    for args in ([], ["SELECT 1", "--file", str(tmp_path / "q.sql")]):
        proc = run_cli("sql", *args, "--lake", str(tmp_path), check=False)
        assert proc.returncode == 2
        assert proc.stderr.startswith("rocketlens: give the query either as QUERY or with --file")


@pytest.mark.delta
def test_fail_on_takes_a_severity_in_any_case(days_lake, tmp_path):
    """The persisting CRITICAL fault: --fail-on critical (lower case) exits 3 like CRITICAL."""
    landing = days_lake.parent / "landing"
    proc = run_cli("run", "--date", "2025-11-21", "--landing", str(landing), "--lake",
                   str(tmp_path / "lake"), "--fail-on", "critical", check=False)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("rocketlens: ")
    assert "at or above CRITICAL on 2025-11-21" in proc.stderr


@pytest.mark.delta
def test_a_day_whose_landing_files_hold_no_line_warns_and_exits_5(tmp_path):
    day_dir = tmp_path / "landing" / "offsets" / "date=2025-11-21"
    day_dir.mkdir(parents=True)
    (day_dir / "part-0.jsonl").write_text("")
    proc = run_cli("run", "--date", "2025-11-21", "--landing", str(tmp_path / "landing"),
                   "--lake", str(tmp_path / "lake"), "--log-format", "json", check=False)
    assert proc.returncode == 5
    assert '"event": "no_data"' in proc.stderr and '"level": "WARNING"' in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "rocketlens: the landing files of 2025-11-21 under")


def test_an_unreachable_connect_server_fails_in_one_line_within_the_default_10_s(tmp_path):
    """Nothing listens on port 1; the default engine.connect_timeout_seconds is 10."""
    landing = tmp_path / "landing" / "offsets" / "date=2025-11-21"
    landing.mkdir(parents=True)
    (landing / "part-0.jsonl").write_text("{}\n")
    proc = run_cli("run", "--date", "2025-11-21", "--landing", str(tmp_path / "landing"),
                   "--lake", str(tmp_path / "lake"), "--engine", "connect", "--remote",
                   "sc://127.0.0.1:1", check=False)
    assert proc.returncode == 6
    assert proc.stderr.strip().splitlines()[-1] == (
        "rocketlens: no Spark Connect server answered at sc://127.0.0.1:1 within 10s: start it "
        "or fix --remote")
