"""The DAG file's task code: the landing sensor, fail-fast on findings, the failure alert."""

from __future__ import annotations

import logging
import os
import stat

import pendulum
import pytest
from airflow.sdk.exceptions import AirflowException, AirflowFailException

DAY = "2025-11-21"
CONTEXT = {"data_interval_start": pendulum.datetime(2025, 11, 21, 2, 30, tz="UTC")}


def sensor_check(dag_module, landing, day=DAY):
    return dag_module.wait_for_landing.function(str(landing), day)


def test_sensor_waits_for_the_day_with_data_and_the_next_day_folder(dag_module, tmp_path):
    day_dir = tmp_path / "offsets" / f"date={DAY}"
    assert sensor_check(dag_module, tmp_path) is False
    day_dir.mkdir(parents=True)
    (day_dir / ".part-0.jsonl.crc").write_text("")
    (day_dir / "_SUCCESS").write_text("")
    (tmp_path / "offsets" / "date=2025-11-22").mkdir()
    assert sensor_check(dag_module, tmp_path) is False  # only hidden files and markers
    (day_dir / "part-00000.jsonl.gz").write_bytes(b"")
    assert sensor_check(dag_module, tmp_path) is True
    (tmp_path / "offsets" / "date=2025-11-22").rmdir()
    assert sensor_check(dag_module, tmp_path) is False  # late records may still come


# rocketlens exit codes (docs/operations.md, Failure modes): 2 usage, 3 findings, 7 no Java fail at once;
# 1 other failure, 4 landing missing, 5 no landing data, 6 engine down, 8 not delivered retry.
FAIL_FAST = {2, 3, 7}
EXIT_CODES = [(code, AirflowFailException if code in FAIL_FAST else AirflowException)
              for code in range(1, 9)]


@pytest.mark.parametrize("code, error", EXIT_CODES)
def test_cli_step_fails_fast_only_on_permanent_errors(dag_module, tmp_path, code, error):
    """The exit code comes from the process itself: a stand-in interpreter exiting with it."""
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\necho \"rocketlens: failing on purpose ($*)\"\nexit {code}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    op = dag_module.RocketlensCliOperator(task_id="t", python=str(fake), arguments=["run"])
    with pytest.raises(error) as raised:
        op.execute(CONTEXT)
    assert (raised.type is AirflowFailException) == (code in FAIL_FAST)
    assert f"(exit {code})" in str(raised.value)


@pytest.mark.parametrize("code, error", EXIT_CODES)
def test_spark_submit_fails_fast_only_on_permanent_errors(dag_module, tmp_path, monkeypatch, code,
                                                          error):
    fake = tmp_path / "spark-submit"
    fake.write_text(f"#!/bin/sh\necho \"fake spark-submit $*\"\nexit {code}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", '{"conn_type": "spark", "host": "local"}')
    op = dag_module.RocketlensSparkSubmitOperator(task_id="t", conn_id="spark_local",
                                                  application="entrypoint.py",
                                                  application_args=["run"])
    with pytest.raises(error) as raised:
        op.execute(CONTEXT)
    assert (raised.type is AirflowFailException) == (code in FAIL_FAST)


def test_failure_alert_logs_the_run_and_calls_every_notifier(dag_module, caplog, monkeypatch):
    seen = []
    monkeypatch.setattr(dag_module, "NOTIFIERS", [seen.append])

    class TI:
        dag_id, task_id, try_number = "rocketlens_nightly", "spark_submit", 3

    context = {**CONTEXT, "ti": TI(), "run_id": "scheduled__x", "exception": RuntimeError("boom")}
    with caplog.at_level(logging.ERROR, logger="rocketlens.alerts"):
        dag_module.alert_on_failure(context)
    assert ("rocketlens alert: dag=rocketlens_nightly task=spark_submit run_id=scheduled__x "
            "day=2025-11-21 try=3 error=boom") in caplog.text
    assert seen == [context]
