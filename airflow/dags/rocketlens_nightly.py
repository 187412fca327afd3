"""rocketlens nightly DAGs (Airflow 3): one UTC day of RocketMQ monitoring data per run.

``rocketlens_nightly``: wait for the day's landing data, ``spark-submit`` the job
(``SparkSubmitOperator``, Delta through ``--packages``, the packed venv through ``--archives``),
then ``report`` and ``notify`` on the worker.
``rocketlens_nightly_connect``: the same day through a Spark Connect server (``--engine connect``).

Each run: ``wait_for_landing`` → run → ``report`` → ``notify``. Findings never fail the run task
(no ``--fail-on``): a night with CRITICAL incidents is a green DAG run whose ``notify`` step sends
them (apprise URLs from the Variable ``rocketlens_notify_urls_secret``, a JSON list, masked in
logs; threshold: the DAG param ``min_severity``). A red task means the pipeline itself failed;
``alert_on_failure`` fires then, after the last try. ``notify`` runs when the run succeeded, even
if the report failed (``all_done_min_one_success`` over both).

Which day: the timetable is an explicit *data-interval* timetable. A run scheduled at 02:30 UTC
on D+1 covers [D 02:30, D+1 02:30) and processes ``{{ data_interval_start | ds }}`` = D; the
2.5 h lets collectors flush D's late records into ``date=D+1`` (DESIGN.md §3). A bare cron string
in Airflow 3 means ``CronTriggerTimetable``, whose interval is collapsed to the run time: the same
template would then give D+1 and silently process the wrong (incomplete) day.

``catchup`` is off (``ROCKETLENS_DAG_CATCHUP=true`` turns it on): switching the DAG on runs the
latest day only. Backfill earlier days explicitly, e.g.
``airflow backfill create --dag-id rocketlens_nightly --from-date 2025-11-20 --to-date 2025-11-27``
(days run in order, one at a time: ``max_active_runs=1``, and each day's ``open_since_day``
reads the day before).

Settings are Airflow Variables read when a task runs (Jinja ``var.value``), never at parse time;
each has a default (``VARIABLES``). Exit codes come from the process's return code (the CLI
steps; spark-submit in client mode), never from error text. Codes a retry cannot change fail the
task at once (``FAIL_FAST``): 2 bad usage or settings, 3 findings at or above ``--fail-on`` (when
a deployment adds it), 7 no Java on the worker. The others retry: 1 any other failure (a rerun
repairs a partly replaced day), 4 landing directory missing (storage not mounted), 5 no landing
data (the sensor saw the day's offsets, so files vanishing is likely transient), 6 engine did not
start (cluster or Connect server down), 8 a notification not delivered.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import subprocess
from pathlib import Path

import pendulum
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, BaseOperator, CronDataIntervalTimetable, Param, TriggerRule, task
from airflow.sdk.exceptions import AirflowException, AirflowFailException

log = logging.getLogger("rocketlens.alerts")

# Airflow Variable → default. Paths are on the Airflow worker (client deploy mode) and shared
# storage the cluster sees; ROCKETLENS_HOME holds what `make dist` builds (see docs/operations.md).
VARIABLES = {
    "rocketlens_landing": "/data/rocketmq/landing",
    "rocketlens_lake": "/data/rocketlens/lake",
    "rocketlens_home": "/opt/rocketlens",  # entrypoint.py, rocketlens-venv.tar.gz, conf/
    "rocketlens_python": "/opt/rocketlens/venv/bin/python",  # a venv with the wheel installed
    "rocketlens_spark_conn_id": "spark_default",
    # the Delta jars for Spark 4.2 (4.4.1 has none on Maven Central; docs/operations.md); ""
    # when the image has the jars
    "rocketlens_delta_packages": "io.delta:delta-spark_4.2_2.13:4.4.0",
    "rocketlens_spark_connect_url": "sc://spark-connect:15002",
    "rocketlens_reports": "/data/rocketlens/reports",  # report-<day>.html per run
    # apprise URLs as a JSON list; "secret" in the name makes Airflow mask the value in logs
    "rocketlens_notify_urls_secret": "[]",
}

DAY = "{{ data_interval_start | ds }}"
SCHEDULE = CronDataIntervalTimetable("30 2 * * *", timezone="UTC")
# First data interval; set to the first day the landing zone holds (catchup runs every day since).
START_DATE = pendulum.parse(os.environ.get("ROCKETLENS_DAG_START_DATE", "2025-11-20"), tz="UTC")
CATCHUP = os.environ.get("ROCKETLENS_DAG_CATCHUP", "false").strip().lower() == "true"
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


def raise_for_exit_code(code: int | None, context, error: BaseException | None = None):
    """A non-zero ``rocketlens`` exit code as the task's failure: ``FAIL_FAST`` codes without
    retries, the others (and an unknown code) retried."""
    day = f"{context['data_interval_start']:%Y-%m-%d}"
    if code in FAIL_FAST:
        raise AirflowFailException(f"rocketlens {FAIL_FAST[code]} for {day} (exit {code}); see "
                                   "the task log's last rocketlens: line") from error
    raise AirflowException(f"rocketlens failed for {day} (exit {code}); see the task log's "
                           "last rocketlens: line") from error


class RocketlensSparkSubmitOperator(SparkSubmitOperator):
    """``SparkSubmitOperator`` whose connection id and archives are public template fields (from
    Variables), and whose failures keep spark-submit's return code (client mode: the driver's)."""

    template_fields = (*SparkSubmitOperator.template_fields, "conn_id", "archives")

    def __init__(self, *, conn_id: str = "spark_default", archives: str | None = None, **kwargs):
        super().__init__(conn_id=conn_id, archives=archives, **kwargs)
        self.conn_id = conn_id
        self.archives = archives

    def _get_hook(self):
        self._conn_id, self._archives = self.conn_id, self.archives  # the rendered values
        return super()._get_hook()

    def execute(self, context):
        try:
            return super().execute(context)
        except AirflowException as exc:
            process = getattr(self._hook, "_submit_sp", None)
            code = process.returncode if process is not None else None
            if code is None:  # cluster mode or no process: nothing to tell; retry
                raise
            raise_for_exit_code(code, context, exc)


class RocketlensCliOperator(BaseOperator):
    """``<python> -m jobs <arguments>`` on the worker: output into the task log, the exit code
    from the process (``raise_for_exit_code``)."""

    template_fields = ("arguments", "python", "env")

    def __init__(self, *, arguments: list[str], python: str, env: dict | None = None, **kwargs):
        super().__init__(**kwargs)
        self.arguments = arguments
        self.python = python
        self.env = env or {}

    def execute(self, context):
        command = [self.python, "-m", "jobs", *self.arguments]
        self.log.info("running rocketlens %s", " ".join(self.arguments[:1]))
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env={**os.environ, **self.env}) as process:
            for line in process.stdout:
                self.log.info("%s", line.rstrip())
            code = process.wait()
        if code:
            raise_for_exit_code(code, context)


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
            "--lake", var("rocketlens_lake"), "--engine", engine, "--log-format", "json"]


CLI_ENV = {"ROCKETLENS_ENV": "prod", "ROCKETLENS_CONF_DIR": var("rocketlens_home") + "/conf"}


def report_and_notify(run) -> None:
    """``run`` → ``report`` → ``notify`` on the worker (the embedded engine reads the lake)."""
    report = RocketlensCliOperator(
        task_id="report", python=var("rocketlens_python"), env=CLI_ENV,
        arguments=["report", "--date", DAY, "--lake", var("rocketlens_lake"), "--engine", "sail",
                   "--out", var("rocketlens_reports") + "/report-" + DAY + ".html"],
        execution_timeout=dt.timedelta(hours=1))
    notify = RocketlensCliOperator(
        task_id="notify", python=var("rocketlens_python"),
        env={**CLI_ENV, "ROCKETLENS__NOTIFY__URLS": var("rocketlens_notify_urls_secret")},
        arguments=["notify", "--date", DAY, "--lake", var("rocketlens_lake"), "--engine", "sail",
                   "--min-severity", "{{ params.min_severity }}"],
        trigger_rule=TriggerRule.ALL_DONE_MIN_ONE_SUCCESS,  # after the run, even without a report
        execution_timeout=dt.timedelta(minutes=30))
    run >> report >> notify
    run >> notify


DEFAULT_ARGS = {
    "owner": "rocketlens",
    "retries": 2,
    "retry_delay": dt.timedelta(minutes=10),
    "on_failure_callback": alert_on_failure,
}
PARAMS = {"min_severity": Param("WARN", enum=["INFO", "WARN", "CRITICAL"],
                                description="notify sends the incidents at or above this")}
COMMON = dict(schedule=SCHEDULE, start_date=START_DATE, catchup=CATCHUP, max_active_runs=1,
              default_args=DEFAULT_ARGS, params=PARAMS, tags=["rocketlens", "rocketmq"])


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
            **CLI_ENV,
        },
        execution_timeout=dt.timedelta(hours=6),
    )
    landed >> submit
    report_and_notify(submit)


with DAG("rocketlens_nightly_connect",
         description="RocketMQ day → Delta lake through a Spark Connect server",
         doc_md=__doc__, **COMMON) as nightly_connect:
    landed = wait_for_landing(var("rocketlens_landing"), DAY)
    run = RocketlensCliOperator(
        task_id="rocketlens_run", python=var("rocketlens_python"), env=CLI_ENV,
        arguments=[*cli_args("connect"), "--remote", var("rocketlens_spark_connect_url")],
        execution_timeout=dt.timedelta(hours=6),
    )
    landed >> run
    report_and_notify(run)
