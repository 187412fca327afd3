"""rocketlens nightly DAGs (Airflow 3): one UTC day of RocketMQ monitoring data per run.

``rocketlens_nightly``: wait for the day's landing data, then ``spark-submit`` the job
(``SparkSubmitOperator``, Delta through ``--packages``, the packed venv through ``--archives``).
``rocketlens_nightly_connect``: the same day through a Spark Connect server (``--engine connect``).

Which day: the timetable is an explicit *data-interval* timetable. A run scheduled at 02:30 UTC
on D+1 covers [D 02:30, D+1 02:30) and processes ``{{ data_interval_start | ds }}`` = D; the
2.5 h lets collectors flush D's late records into ``date=D+1`` (DESIGN.md §3). A bare cron string
in Airflow 3 means ``CronTriggerTimetable``, whose interval is collapsed to the run time: the same
template would then give D+1 and silently process the wrong (incomplete) day.

Settings are Airflow Variables read when a task runs (Jinja ``var.value``), never at parse time;
each has a default (``VARIABLES``). ``rocketlens run`` exit codes that a retry cannot change fail
the task at once (``FAIL_FAST``): 2 bad usage or settings, 3 findings at or above ``--fail-on``
(the findings would not go away), 7 no Java on the worker. The others retry: 1 any other failure
(a rerun repairs a partly replaced day), 4 landing directory missing (storage not mounted), 5 no
landing data (the sensor saw the day's offsets, so files vanishing is likely transient), 6 engine
did not start (cluster or Connect server down). ``alert_on_failure`` fires on any failure after
the last try.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
from pathlib import Path

import pendulum
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG, CronDataIntervalTimetable, task
from airflow.sdk.exceptions import AirflowFailException

log = logging.getLogger("rocketlens.alerts")

# Airflow Variable → default. Paths are on the Airflow worker (client deploy mode) and shared
# storage the cluster sees; ROCKETLENS_HOME holds what `make dist` builds (see docs/operations.md).
VARIABLES = {
    "rocketlens_landing": "/data/rocketmq/landing",
    "rocketlens_lake": "/data/rocketlens/lake",
    "rocketlens_home": "/opt/rocketlens",  # entrypoint.py, rocketlens-venv.tar.gz, conf/
    "rocketlens_python": "/opt/rocketlens/venv/bin/python",  # a venv with the wheel installed
    "rocketlens_spark_conn_id": "spark_default",
    # the artifact delta-spark 4.4.1 names for pyspark 4.2; "" when the image has the jars
    "rocketlens_delta_packages": "io.delta:delta-spark_4.2_2.13:4.4.1",
    "rocketlens_spark_connect_url": "sc://spark-connect:15002",
    "rocketlens_fail_on": "CRITICAL",
}

DAY = "{{ data_interval_start | ds }}"
SCHEDULE = CronDataIntervalTimetable("30 2 * * *", timezone="UTC")
# First data interval; set to the first day the landing zone holds (catchup runs every day since).
START_DATE = pendulum.parse(os.environ.get("ROCKETLENS_DAG_START_DATE", "2025-11-20"), tz="UTC")
FINDINGS_EXIT_CODE = 3
# rocketlens run's exit codes that fail the task without retries (docs/operations.md, Failure modes)
FAIL_FAST = {
    2: "bad usage or settings",
    FINDINGS_EXIT_CODE: "findings at or above --fail-on",
    7: "no Java for --engine spark on the worker",
}

# Notifiers called with the task context on every failure, e.g.
#   from airflow.providers.slack.notifications.slack import SlackNotifier
#   NOTIFIERS.append(SlackNotifier(slack_conn_id="slack", text="rocketlens {{ ti.task_id }} failed"))
NOTIFIERS: list = []


def var(name: str) -> str:
    """The Jinja expression of Variable ``name`` with its default (rendered when the task runs)."""
    return "{{ var.value.get('%s', '%s') }}" % (name, VARIABLES[name])


def alert_on_failure(context) -> None:
    """Failure callback: one ERROR log line naming the run and the day, then every notifier."""
    ti = context.get("ti")
    day = context.get("data_interval_start")
    log.error("rocketlens alert: dag=%s task=%s run_id=%s day=%s try=%s error=%s",
              getattr(ti, "dag_id", None), getattr(ti, "task_id", None), context.get("run_id"),
              day.strftime("%Y-%m-%d") if day else None, getattr(ti, "try_number", None),
              context.get("exception"))
    for notifier in NOTIFIERS:
        notifier(context)


class _FailFastOnPermanentErrors:
    """The ``FAIL_FAST`` exit codes fail the task without retries; other errors retry."""

    exit_code_pattern: str  # with one {code} placeholder: how the operator's error names it

    def execute(self, context):
        try:
            return super().execute(context)
        except Exception as exc:
            for code, reason in FAIL_FAST.items():
                if re.search(self.exit_code_pattern.format(code=code), str(exc)):
                    raise AirflowFailException(
                        f"rocketlens {reason} for {context['data_interval_start']:%Y-%m-%d} "
                        f"(exit {code}); see the task log's last rocketlens: line") from exc
            raise


class RocketlensSparkSubmitOperator(_FailFastOnPermanentErrors, SparkSubmitOperator):
    """``SparkSubmitOperator`` whose connection id and archives come from Variables too."""

    template_fields = (*SparkSubmitOperator.template_fields, "_conn_id", "_archives")
    exit_code_pattern = r"Error code is: {code}\b"


class RocketlensBashOperator(_FailFastOnPermanentErrors, BashOperator):
    exit_code_pattern = r"non-zero exit code {code}\b"


@task.sensor(poke_interval=10 * 60, timeout=12 * 3600, mode="reschedule")
def wait_for_landing(landing: str, day: str) -> bool:
    """Done when ``offsets/date=D`` holds a data file and ``offsets/date=D+1`` exists (the
    collectors have passed midnight, so D's late records are flushed there)."""
    offsets = Path(landing) / "offsets"
    next_day = dt.date.fromisoformat(day) + dt.timedelta(days=1)
    day_dir = offsets / f"date={day}"
    has_data = day_dir.is_dir() and any(
        p.is_file() and not p.name.startswith((".", "_")) for p in day_dir.rglob("*"))
    return has_data and (offsets / f"date={next_day.isoformat()}").is_dir()


def cli_args(engine: str) -> list[str]:
    return ["run", "--date", DAY, "--landing", var("rocketlens_landing"),
            "--lake", var("rocketlens_lake"), "--engine", engine,
            "--fail-on", var("rocketlens_fail_on"), "--log-format", "json"]


DEFAULT_ARGS = {
    "owner": "rocketlens",
    "retries": 2,
    "retry_delay": dt.timedelta(minutes=10),
    "on_failure_callback": alert_on_failure,
}
COMMON = dict(schedule=SCHEDULE, start_date=START_DATE, catchup=True, max_active_runs=1,
              default_args=DEFAULT_ARGS, tags=["rocketlens", "rocketmq"])


with DAG("rocketlens_nightly", description="RocketMQ day → Delta lake on Spark (spark-submit)",
         doc_md=__doc__, **COMMON) as nightly:
    landed = wait_for_landing(var("rocketlens_landing"), DAY)
    submit = RocketlensSparkSubmitOperator(
        task_id="spark_submit",
        conn_id=var("rocketlens_spark_conn_id"),
        application=var("rocketlens_home") + "/entrypoint.py",
        application_args=cli_args("spark"),
        name="rocketlens-" + DAY,
        packages=var("rocketlens_delta_packages"),
        conf={
            "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
            "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
            "spark.sql.session.timeZone": "UTC",
            "spark.pyspark.python": "./environment/bin/python",
            "spark.pyspark.driver.python": var("rocketlens_python"),
        },
        archives=var("rocketlens_home") + "/rocketlens-venv.tar.gz#environment",
        env_vars={
            "PYSPARK_PYTHON": "./environment/bin/python",
            "PYSPARK_DRIVER_PYTHON": var("rocketlens_python"),
            "ROCKETLENS_ENV": "prod",
            "ROCKETLENS_CONF_DIR": var("rocketlens_home") + "/conf",
        },
        execution_timeout=dt.timedelta(hours=6),
    )
    landed >> submit


with DAG("rocketlens_nightly_connect",
         description="RocketMQ day → Delta lake through a Spark Connect server",
         doc_md=__doc__, **COMMON) as nightly_connect:
    landed = wait_for_landing(var("rocketlens_landing"), DAY)
    run = RocketlensBashOperator(
        task_id="rocketlens_run",
        bash_command=" ".join([var("rocketlens_python"), "-m", "jobs", *cli_args("connect"),
                               "--remote", var("rocketlens_spark_connect_url")]),
        env={"ROCKETLENS_ENV": "prod", "ROCKETLENS_CONF_DIR": var("rocketlens_home") + "/conf"},
        append_env=True,
        execution_timeout=dt.timedelta(hours=6),
    )
    landed >> run
