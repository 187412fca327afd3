"""The delivery files agree with the code: spark-defaults.conf, the Delta coordinates, the
entry script."""

import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from jobs.engine import DELTA_CATALOG, DELTA_EXTENSION, delta_package

REPO = Path(__file__).resolve().parents[2]


def spark_defaults() -> dict[str, str]:
    lines = (REPO / "conf" / "spark-defaults.conf").read_text().splitlines()
    pairs = [line.split(None, 1) for line in lines if line.strip() and not line.startswith("#")]
    return {k: v.strip() for k, v in pairs}


def test_spark_defaults_enable_the_delta_extension_and_catalog():
    conf = spark_defaults()
    assert conf["spark.sql.extensions"] == DELTA_EXTENSION
    assert conf["spark.sql.catalog.spark_catalog"] == DELTA_CATALOG
    assert conf["spark.sql.session.timeZone"] == "UTC"


def test_spark_defaults_rebuild_delta_state_as_wide_as_the_local_session_does():
    """Delta's state rebuild width under spark-submit is the one the local classic session takes
    from ``engine.shuffle_partitions`` (jobs/engine.py, docs/engines.md)."""
    from jobs.settings import EngineSettings

    width = spark_defaults()["spark.databricks.delta.snapshotPartitions"]
    assert width == str(EngineSettings().shuffle_partitions)


def test_operations_doc_dag_and_conf_name_the_delta_artifact_maven_central_serves():
    """pyspark 4.2's Delta artifact, 4.4.0: Maven Central has no delta-spark_4.2_2.13:4.4.1, the
    version of the pinned Python package (jobs.engine.DELTA_SPARK_JAR_VERSION)."""
    package = delta_package()
    assert package == "io.delta:delta-spark_4.2_2.13:4.4.0"
    assert version("delta-spark") == "4.4.1"
    for path in ("docs/operations.md", "conf/spark-defaults.conf", "airflow/dags/rocketlens_nightly.py"):
        text = (REPO / path).read_text()
        assert package in text, path
        assert set(re.findall(r"io\.delta:delta-spark_[\w.]+:[\d.]*\d", text)) == {package}, path


def test_entry_script_runs_the_cli_from_any_working_directory(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "jobs" / "entrypoint.py"), "run", "--help"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "--fail-on" in proc.stdout and "Usage: rocketlens run" in proc.stdout
