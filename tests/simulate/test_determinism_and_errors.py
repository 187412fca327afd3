"""Same seed, same bytes; scenario errors are one clear line."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from click.testing import CliRunner

from jobs.cli import main
from jobs.simulate.run import simulate
from jobs.simulate.scenario import ScenarioError, load_scenario


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_writes_identical_bytes_and_another_seed_differs(tmp_path):
    day = dt.date(2025, 3, 1)
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        simulate("duplicate-client-id", day, tmp_path / name, seed=seed, window=("11:57", "12:03"))
    a, b, c = _files(tmp_path / "a"), _files(tmp_path / "b"), _files(tmp_path / "c")
    assert any(k.endswith(".gz") for k in a)
    assert a == b
    assert a.keys() == c.keys() and a != c


def test_late_records_of_the_last_minutes_land_in_the_next_day_folder(tmp_path):
    simulate("healthy", dt.date(2025, 3, 1), tmp_path, seed=1, window=("23:55", "24:00"))
    assert (tmp_path / "offsets" / "date=2025-03-02" / "late-00000.jsonl").is_file()
    assert (tmp_path / "offsets" / "date=2025-03-01" / "part-00001.jsonl").is_file()


@pytest.mark.parametrize("text, expected", [
    ('name = "x"\n[[brokers]]\nname = "b"\n[[topics]]\nname = "t"\nqueues = { b = 4 }\n'
     '[[groups]]\nname = "g"\n[[clients]]\nname = "c"\ngroup = "g"\nip = "1.2.3.4"\npid = 1\n'
     'strategy = "RANDOM"\nsubscriptions = ["t"]\n', "clients.0.strategy: strategy 'RANDOM' is not simulated"),
    ('name = "x"\n[[brokers]]\nname = "b"\n[[topics]]\nname = "t"\nqueues = { b = 4 }\n'
     '[[groups]]\nname = "g"\n[[clients]]\nname = "c"\ngroup = "g"\nip = "1.2.3.4"\npid = 1\n'
     'subscriptions = ["nope"]\n', "subscriptions names unknown topic 'nope'"),
    # the running-info collector's own cycle is stepped like the simulation (5 s)
    ('name = "x"\n[[groups]]\nname = "g"\nrunning_info_phase = 7\n',
     "groups.0.running_info_phase: Input should be a multiple of 5"),
    ('name = "x"\nbrokers = [\n', "not valid TOML"),
    ('name = "x"\ncolour = "red"\n', "colour: Extra inputs are not permitted"),
])
def test_scenario_errors_are_one_line(tmp_path, text, expected):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(str(path))
    message = str(err.value)
    assert expected in message and "\n" not in message and message.startswith(str(path))


def test_cli_reports_an_unknown_scenario_in_one_line_with_exit_2(tmp_path):
    result = CliRunner().invoke(main, ["simulate", "--scenario", "nope", "--date", "2025-01-15",
                                       "--landing", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "unknown scenario 'nope'" in result.output


def test_every_builtin_scenario_loads():
    from jobs.simulate.scenario import builtin_names

    names = builtin_names()
    assert set(names) >= {"healthy", "duplicate-client-id", "topicb-subscription", "strategy-mismatch",
                          "client-leaves", "slow-message", "consumer-crash", "sample"}
    for name in names:
        assert load_scenario(name).name == name
