"""Two runs at once into one lake: both complete and neither disturbs the other (Delta; Sail, and
classic Spark + Delta in the acceptance tier).

Sail 0.7.2 refuses a commit made on a table version another writer has moved past, even a DELETE
of another day; ``lake.write_day`` retries the replace (jobs/lake.py). Days run in parallel must
not be adjacent: D+1's look-back reads D's tail, which a parallel run of D is replacing (docs/operations.md,
Failure modes).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from jobs import lake
from jobs.migrate import today_schemas
from tests.conftest import CLI_TIMEOUT_SECONDS, TEST_ENGINE
from tests.reliability.conftest import D3, D
from tests.reliability.lakes import REPO, cli_env, contents, rocketlens, run_args

# Rounds of the two runs at once, per test engine. Classic Spark: one, the race on an empty lake
# where both runs create every table (two classic runs at once of the small days take ~7 minutes
# on two cores beside the acceptance tier's other worker, and the tier had to fit CI's limit);
# its day replaces run alone in the rerun and kill tests. Sail: both, the second being the
# replace race Sail loses and retries (the test below).
ROUNDS = {"sail": 2, "spark": 1}


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", *args], cwd=REPO, env=cli_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def finish(procs: list[subprocess.Popen]) -> list[str]:
    errs = [p.communicate(timeout=CLI_TIMEOUT_SECONDS)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * len(procs), [e[-2000:] for e in errs]
    return errs


@pytest.mark.classic_cli
def test_two_days_run_at_once_match_each_day_run_alone(spark, tmp_path, sim_landing,
                                                       day_d_lake):
    lake_dir = tmp_path / "lake"
    # first on an empty lake (both create every table), then again (both DELETE + append); on
    # classic Spark the first round only (ROUNDS), for CI's time limit
    for _ in range(ROUNDS[TEST_ENGINE]):
        finish([start("jobs", *run_args(D, sim_landing, lake_dir)),
                start("jobs", *run_args(D3, sim_landing, lake_dir))])
    alone = tmp_path / "alone"
    rocketlens(*run_args(D3, sim_landing, alone))
    together = contents(spark, lake_dir, D)
    assert together == contents(spark, day_d_lake)
    assert contents(spark, lake_dir, D3) == contents(spark, alone)
    # every table of the lake (this release's tables, schemas/lake_tables.json)
    assert len(together) == len(today_schemas()) and sum(map(len, together.values())) > 1000


@pytest.mark.delta  # the writers are Sail processes: the race Sail loses (classic Delta lets
# replaces of different days both commit, so nothing would be retried there)
def test_write_day_retries_commits_lost_to_a_concurrent_writer(spark, tmp_path):
    """Two processes replace their own day of one table 12 times each, at the same moments: on
    Sail most DELETEs lose a commit race; every replace lands after retries."""
    go = tmp_path / "go"
    procs = [start("tests.reliability.replace_day_loop", str(tmp_path / "lake"), day, "12",
                   str(go)) for day in ("2025-01-01", "2025-01-02")]
    go.touch()
    errs = finish(procs)
    conflicts = sum(e.count("commit conflict on gold.t") for e in errs)
    assert conflicts >= 1, errs  # the race really happened (measured: most rounds conflict)
    rows = lake.read_table(spark, tmp_path / "lake", "gold", "t").collect()
    assert sorted((str(r.date), r.v) for r in rows) == [("2025-01-01", "2025-01-01#11"),
                                                        ("2025-01-02", "2025-01-02#11")]


def test_write_day_raises_other_errors_at_once(spark, tmp_path):
    import datetime as dt

    day = dt.date(2025, 1, 1)
    lake.write_day(spark, spark.createDataFrame([(day, "a")], "date date, v string"),
                   tmp_path, "gold", "t", day)
    slept = []
    with pytest.raises(Exception) as raised:
        lake.write_day(spark, spark.createDataFrame([(day, 1, 2)], "date date, v int, w int"),
                       tmp_path, "gold", "t", day, sleep=slept.append)
    assert slept == [] and not lake.is_commit_conflict(raised.value)
