"""The rocketlens DAGs under real Airflow 3: they import, their graph and policies, the day a
scheduled run processes, and the command each task renders for that day."""

from __future__ import annotations

import copy

import pendulum
import pytest

from conftest import run_context

DAG_IDS = ("rocketlens_nightly", "rocketlens_nightly_connect")
RUN_TASK = {"rocketlens_nightly": "spark_submit", "rocketlens_nightly_connect": "rocketlens_run"}
# The scheduled run that starts at 2025-11-22 02:30 UTC covers [11-21 02:30, 11-22 02:30).
START = pendulum.datetime(2025, 11, 21, 2, 30, tz="UTC")
END = pendulum.datetime(2025, 11, 22, 2, 30, tz="UTC")


def rendered(dag, task_id: str, start=START, end=END):
    task = copy.deepcopy(dag.get_task(task_id))  # rendering mutates the task
    task.render_template_fields(run_context(dag, task, start, end))
    return task


def test_dagbag_imports_both_dags_with_no_errors(dagbag):
    assert dagbag.import_errors == {}
    assert set(DAG_IDS) <= set(dagbag.dag_ids)


@pytest.mark.parametrize("dag_id", DAG_IDS)
def test_the_run_waits_for_the_landing_sensor(dagbag, dag_id):
    dag = dagbag.dags[dag_id]
    assert {t.task_id: sorted(t.downstream_task_ids) for t in dag.tasks} == {
        "wait_for_landing": [RUN_TASK[dag_id]], RUN_TASK[dag_id]: ["notify", "report"],
        "report": ["notify"], "notify": []}
    assert dag.get_task("notify").trigger_rule == "all_done_min_one_success"
    sensor = dag.get_task("wait_for_landing")
    assert sensor.mode == "reschedule" and sensor.timeout > 0


@pytest.mark.parametrize("dag_id", DAG_IDS)
def test_one_run_at_a_time_with_retries_and_a_failure_alert(dagbag, dag_module, dag_id):
    dag = dagbag.dags[dag_id]
    assert dag.max_active_runs == 1
    assert dag.catchup is False  # switching the DAG on runs the latest day, not every day since
    for task in dag.tasks:
        assert task.retries == 2
        assert task.retry_delay == pendulum.duration(minutes=10)
        assert dag_module.alert_on_failure.__name__ in {
            getattr(cb, "__name__", "") for cb in task.on_failure_callback}


@pytest.mark.parametrize("dag_id", DAG_IDS)
def test_the_timetable_is_an_explicit_data_interval_one(dagbag, dag_id):
    from airflow.sdk import CronDataIntervalTimetable

    timetable = dagbag.dags[dag_id].timetable
    assert isinstance(timetable, CronDataIntervalTimetable)
    assert (timetable.expression, str(timetable.timezone)) == ("30 2 * * *", "UTC")


@pytest.mark.parametrize("dag_id", DAG_IDS)
def test_the_scheduler_gives_the_run_at_02_30_the_previous_day(dagbag, dag_id):
    """What the scheduler computes from the serialized DAG: the run after [11-20, 11-21) starts
    at 2025-11-22 02:30 and its data_interval_start is the day to process, 2025-11-21."""
    from airflow.serialization.serialized_objects import DagSerialization
    from airflow.timetables.base import DataInterval, TimeRestriction

    dag = DagSerialization.from_dict(DagSerialization.to_dict(dagbag.dags[dag_id]))
    info = dag.timetable.next_dagrun_info(
        last_automated_data_interval=DataInterval(START.subtract(days=1), START),
        restriction=TimeRestriction(earliest=START.subtract(days=30), latest=None, catchup=True))
    assert (info.data_interval.start, info.data_interval.end, info.run_after) == (START, END, END)
    assert info.data_interval.start.strftime("%Y-%m-%d") == "2025-11-21"


def test_a_bare_cron_string_would_process_the_wrong_day():
    """Why the timetable is explicit: in Airflow 3 a cron string is a CronTriggerTimetable,
    whose interval collapses to the run time, so `data_interval_start | ds` is the run's day."""
    from airflow.timetables.trigger import CronTriggerTimetable

    trigger = CronTriggerTimetable("30 2 * * *", timezone="UTC")
    interval = trigger.infer_manual_data_interval(run_after=END)
    assert interval.start == interval.end == END  # 2025-11-22, not 2025-11-21


def test_spark_submit_renders_the_day_and_the_variables(dagbag, monkeypatch):
    monkeypatch.setenv("AIRFLOW_VAR_ROCKETLENS_LAKE", "/mnt/lake")
    task = rendered(dagbag.dags["rocketlens_nightly"], "spark_submit")
    assert task.application_args == [
        "run", "--date", "2025-11-21", "--landing", "/data/rocketmq/landing",
        "--lake", "/mnt/lake", "--engine", "spark", "--log-format", "json"]
    assert task.application == "/opt/rocketlens/entrypoint.py"
    assert task.name == "rocketlens-2025-11-21"


def test_spark_submit_command_for_a_logical_date(dagbag, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_YARN",
                       '{"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "client"}}')
    monkeypatch.setenv("AIRFLOW_VAR_ROCKETLENS_SPARK_CONN_ID", "spark_yarn")
    monkeypatch.setenv("AIRFLOW_VAR_ROCKETLENS_HOME", "/srv/rocketlens")
    task = rendered(dagbag.dags["rocketlens_nightly"], "spark_submit")
    command = task._get_hook()._build_spark_submit_command(task.application)
    text = " ".join(command)
    assert command[:3] == ["spark-submit", "--master", "yarn"]
    assert "--packages io.delta:delta-spark_4.2_2.13:4.4.0" in text
    assert "--conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension" in text
    assert ("--conf spark.sql.catalog.spark_catalog="
            "org.apache.spark.sql.delta.catalog.DeltaCatalog") in text
    assert "--conf spark.pyspark.python=./environment/bin/python" in text
    assert "--archives /srv/rocketlens/rocketlens-venv.tar.gz#environment" in text
    assert text.endswith("/srv/rocketlens/entrypoint.py run --date 2025-11-21 --landing "
                         "/data/rocketmq/landing --lake /data/rocketlens/lake --engine spark "
                         "--log-format json")
    assert task.env_vars["PYSPARK_PYTHON"] == "./environment/bin/python"


def test_connect_variant_renders_the_cli_with_the_connect_url(dagbag, monkeypatch):
    monkeypatch.setenv("AIRFLOW_VAR_ROCKETLENS_SPARK_CONNECT_URL", "sc://connect.internal:15002")
    task = rendered(dagbag.dags["rocketlens_nightly_connect"], "rocketlens_run")
    assert (task.python, task.arguments) == ("/opt/rocketlens/venv/bin/python", [
        "run", "--date", "2025-11-21", "--landing", "/data/rocketmq/landing", "--lake",
        "/data/rocketlens/lake", "--engine", "connect", "--log-format", "json", "--remote",
        "sc://connect.internal:15002"])


@pytest.mark.parametrize("dag_id", DAG_IDS)
def test_sensor_renders_the_same_day(dagbag, dag_id):
    task = rendered(dagbag.dags[dag_id], "wait_for_landing")
    assert list(task.op_args) == ["/data/rocketmq/landing", "2025-11-21"]


@pytest.mark.parametrize("dag_id", DAG_IDS)
def test_template_fields_are_public_attributes(dagbag, dag_id):
    for task in dagbag.dags[dag_id].tasks:
        assert all(not f.startswith("_") for f in task.template_fields), task.task_id
        assert all(hasattr(task, f) for f in task.template_fields), task.task_id


@pytest.mark.parametrize("dag_id", DAG_IDS)
def test_report_and_notify_render_the_day_and_the_severity_param(dagbag, dag_id, monkeypatch):
    monkeypatch.setenv("AIRFLOW_VAR_ROCKETLENS_NOTIFY_URLS_SECRET", '["json://hook:1/x"]')
    dag = dagbag.dags[dag_id]
    assert dag.params["min_severity"] == "WARN"
    report = rendered(dag, "report")
    assert report.arguments == ["report", "--date", "2025-11-21", "--lake",
                                "/data/rocketlens/lake", "--engine", "sail", "--out",
                                "/data/rocketlens/reports/report-2025-11-21.html"]
    task = copy.deepcopy(dag.get_task("notify"))
    context = run_context(dag, task, START, END)
    context["params"] = {"min_severity": "CRITICAL"}
    task.render_template_fields(context)
    assert task.arguments == ["notify", "--date", "2025-11-21", "--lake", "/data/rocketlens/lake",
                              "--engine", "sail", "--min-severity", "CRITICAL"]
    assert task.env["ROCKETLENS__NOTIFY__URLS"] == '["json://hook:1/x"]'
