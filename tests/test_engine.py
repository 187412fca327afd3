"""Engine settings reach the embedded engine (``jobs.engine``)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# the largest batch a Python function sees inside the embedded engine (its operators' batch size)
_PROBE = """
import sys
import pandas as pd
from pyspark.sql import functions as F
from jobs.engine import open_session

with open_session("sail", sail_batch_rows=int(sys.argv[1])) as spark:
    @F.pandas_udf("long")
    def rows(ids: pd.Series) -> pd.Series:
        return pd.Series([len(ids)] * len(ids))

    print(spark.range(0, 100_000, 1, 1).select(F.max(rows("id"))).first()[0])
"""


@pytest.mark.sail_only
def test_the_batch_rows_setting_sizes_the_embedded_engines_batches():
    """``engine.sail_batch_rows`` decides, also over a ``SAIL_EXECUTION__BATCH_SIZE`` inherited
    from the parent process (a run started by another run)."""
    env = {**os.environ, "SAIL_EXECUTION__BATCH_SIZE": "5000", "PYTHONPATH": str(ROOT)}
    largest = {}
    for rows in (3000, 4096):
        proc = subprocess.run([sys.executable, "-c", _PROBE, str(rows)], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        largest[rows] = int(proc.stdout.strip().splitlines()[-1])
    assert largest == {3000: 3000, 4096: 4096}


_STRINGS_PROBE = """
import os
from jobs.engine import open_session

with open_session("sail") as spark:
    print(os.environ.get("SAIL_PARQUET__SCHEMA_FORCE_VIEW_TYPES"), spark.range(1).count())
"""


@pytest.mark.sail_only
def test_the_embedded_engine_reads_plain_strings_whatever_it_inherits():
    """The embedded server starts told to read Parquet strings as plain ``Utf8``, not view types
    (faster and smaller here, benchmarks/RESULTS.md session 30): the variable its server reads
    at start is ours, also when the parent process set another value."""
    env = {**os.environ, "SAIL_PARQUET__SCHEMA_FORCE_VIEW_TYPES": "true", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _STRINGS_PROBE], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "false 1"


_CLASSIC_DELTA_PROBE = """
from jobs.engine import open_session

with open_session("spark", master="local[1]") as spark:
    print(spark.range(1).count())
"""


@pytest.mark.spark_only
def test_classic_delta_offline_without_the_jar_cache_says_in_one_line_what_to_fetch(tmp_path):
    """A local classic session with Delta fetches delta-spark's jars from Maven Central into the
    Ivy cache. With no cache (an empty home) and no network (a proxy that refuses), the start
    fails with one line naming the artifact, the cache folder and what to do."""
    home = tmp_path / "home"
    home.mkdir()
    nowhere = "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=9 -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=9"
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": os.pathsep.join(filter(None, (
               str(ROOT), os.environ.get("PYTHONPATH")))),
           "JAVA_TOOL_OPTIONS": f"-Duser.home={home} {nowhere}"}
    proc = subprocess.run([sys.executable, "-c", _CLASSIC_DELTA_PROBE], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    from jobs.engine import delta_package

    assert f"classic Spark + Delta needs {delta_package()} and its dependencies" in last, last
    assert str(home / ".ivy2.5.2" / "jars") in last and "repo1.maven.org" in last, last
