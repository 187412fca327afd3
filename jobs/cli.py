"""The ``rocketlens`` command line (DESIGN.md §1).

Exit codes: 0 ran (findings or not), 1 failure, 2 bad usage or settings, 3 findings at or above
``--fail-on``, 4 landing directory missing, 5 no landing data for the day (no file, or files
without a line), 6 engine did not start, 7 Java missing for ``--engine spark``, 8 a notification
was not delivered (docs/operations.md, Failure modes; docs/alerts.md). Every option also reads
``ROCKETLENS_<OPTION>``. A failure prints one line, ``rocketlens: …``, saying what to do; usage
errors too (no usage block), so a scheduler's log shows the reason on the last line.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from jobs import output
from jobs.cli_common import (
    ENGINE_CHOICE,
    FindingsAtOrAbove,
    LandingMissing,
    NoDataForDay,
    RocketlensError,
    UsageProblem,
    env_option,
    first_line,
    load_settings,
    out_of_engine_memory,
    parse_date,
    session,
)

os.environ["TZ"] = "UTC"  # collected timestamps are rendered in UTC whatever the host's zone
time.tzset()


def _check_run_paths(landing: Path, lake: Path) -> None:
    """Landing must exist; the lake must neither hold nor sit inside the landing root (a run
    would read its own output, or the collectors' cleanup delete the lake), and its path is
    quoted into SQL, so a backtick in it is refused rather than escaped."""
    if not landing.is_dir():
        raise LandingMissing(f"landing directory {landing} does not exist: check --landing "
                             "(or that the landing storage is mounted)")
    landing_r, lake_r = landing.resolve(), lake.resolve()
    if lake_r == landing_r or landing_r in lake_r.parents or lake_r in landing_r.parents:
        raise UsageProblem(f"--lake {lake} and --landing {landing} overlap: put the lake "
                           "outside the landing root and vice versa")
    if "`" in str(lake_r):
        raise UsageProblem(f"--lake {lake}: a backtick in the path is not supported")


def _check_landing_data(landing: Path, run_date: dt.date) -> None:
    """Fail before starting an engine when no source has a file for the day (the pipeline
    checks again, after parsing)."""
    import logging

    from jobs.ingest import landing_files
    from schemas.landing import ALL_SOURCES

    quiet = logging.getLogger(landing_files.__name__)
    level, quiet.level = quiet.level, logging.ERROR  # the run itself warns per skipped file
    try:
        found = any(landing_files.list_landing_files(landing, source, run_date)
                    for source in ALL_SOURCES)
    finally:
        quiet.setLevel(level)
    if not found:
        raise NoDataForDay(
            f"no landing files for {run_date} under {landing} (expected "
            f"{landing}/<{'|'.join(ALL_SOURCES)}>/date={run_date}/*.jsonl[.gz] or *.log[.gz]): "
            "check the collectors or --landing, and rerun once the day has landed")


class _OneLineErrors(click.Group):
    """Usage errors as one ``rocketlens: …`` line (exit 2) instead of click's usage block."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **kwargs: Any) -> Any:
        kwargs.update(prog_name=prog_name, complete_var=complete_var)
        if not standalone_mode:
            return super().main(args, standalone_mode=False, **kwargs)
        try:
            return super().main(args, standalone_mode=False, **kwargs)
        except click.UsageError as exc:
            path = exc.ctx.command_path if exc.ctx else "rocketlens"
            click.echo(f"rocketlens: {exc.format_message()} (see '{path} --help')", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("rocketlens: aborted", err=True)
            sys.exit(1)


@click.group(cls=_OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rocketlens")
def main() -> None:
    """rocketlens: orphaned queues, stuck offsets and rebalance churn in RocketMQ consumer groups."""


# The Delta jars for Spark 4.2: delta-spark 4.4.1 (pyproject.toml) has no 4.4.1 jar on Maven Central
# (4.4.0 is the newest for Spark 4.2); the 4.4.0 jars run it (tests/delivery/test_standalone_cluster.py)
DELTA_PACKAGE = "io.delta:delta-spark_4.2_2.13:4.4.0"
_DELTA_MISSING = ("Failed to find the data source: delta", "DeltaCatalog",
                  "DeltaSparkSessionExtension", "ClassNotFoundException: io.delta")


def _delta_missing(exc: BaseException) -> bool:
    """Did classic Spark fail because the Delta jars are not on its class path?"""
    text = str(exc)
    return any(marker in text for marker in _DELTA_MISSING)


@main.command(epilog="""\b
Example:
  rocketlens run --date 2025-11-21 --landing /data/rocketmq/landing --lake /data/rocketlens/lake

Exit codes: 0 ran (findings or not); 1 failure; 2 bad usage or settings; 3 findings at or above
--fail-on; 4 landing directory missing; 5 no landing file or no line for the day; 6 engine did
not start; 7 no Java for --engine spark.""")
@env_option("--date", "run_date", required=True, callback=parse_date, help="UTC day YYYY-MM-DD.")
@env_option("--landing", required=True, type=click.Path(file_okay=False, path_type=Path),
      help="Landing root: <landing>/<source>/date=YYYY-MM-DD/.")
@env_option("--lake", required=True, type=click.Path(file_okay=False, path_type=Path),
      help="Lake root: <lake>/<layer>/<table> (Delta).")
@env_option("--engine", type=ENGINE_CHOICE, default=None, help="Default: engine.name in settings.")
@env_option("--remote", default=None, help="Spark Connect URL for --engine connect.")
@env_option("--conf", default=None, type=click.Path(dir_okay=False), help="Settings TOML file.")
@env_option("--fail-on", type=click.Choice(["INFO", "WARN", "CRITICAL"], case_sensitive=False),
      default=None,
      help="Exit 3 when the day has gold findings at or above this severity.")
@env_option("--log-format", type=click.Choice(["text", "json"]), default="text",
      help="Progress on stderr: text, or one JSON object per step with the run_id.")
def run(run_date: dt.date, landing: Path, lake: Path, engine: str | None, remote: str | None,
        conf: str | None, fail_on: str | None = None, log_format: str = "text") -> None:
    """The nightly pipeline for one day: landing → bronze → silver → gold. Idempotent per day."""
    from jobs import alerts
    from jobs import lake as lake_mod
    from jobs.pipeline import NoLandingData, run_day
    from jobs.runlog import RunLog

    settings = load_settings(conf)
    _check_run_paths(landing, lake)
    _check_landing_data(landing, run_date)
    run_id = f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    engine = engine or settings.engine.name
    log = RunLog(run_id, run_date, log_format)
    findings: dict[str, int] = {}
    try:
        with session(engine, remote, settings, delta=lake_mod.store().needs_delta) as spark:
            if log_format == "json":
                log("started", engine=engine, landing=str(landing), lake=str(lake))
            else:
                click.echo(f"rocketlens run {run_date} run_id={run_id} engine={engine}",
                           err=True)
            report = run_day(spark, landing, lake, run_date, settings, run_id, now, progress=log)
            if fail_on:
                findings = alerts.count_findings(spark, lake, run_date, fail_on)
    except Exception as exc:
        if isinstance(exc, NoLandingData):
            error: RocketlensError = NoDataForDay(str(exc))
        elif _delta_missing(exc):
            error = UsageProblem(
                f"the Delta package is missing from this Spark ({first_line(exc)[:160]}): pass "
                f"--packages {DELTA_PACKAGE} to spark-submit (or put the Delta jars on the "
                "cluster) and rerun")
        elif isinstance(exc, RocketlensError):
            error = exc
        elif isinstance(exc, lake_mod.TableOutdated):
            error = UsageProblem(str(exc))
        elif out_of_memory := out_of_engine_memory(exc, settings):
            error = RocketlensError(f"run of {run_date} {out_of_memory} and rerun "
                                    f"(run_id={run_id})")
        else:  # anything else: one line; the progress lines above say how far it got
            error = RocketlensError(
                f"run of {run_date} failed ({type(exc).__name__}: {first_line(exc)}); "
                f"tables of {run_date} may be incomplete until it is rerun "
                f"(run_id={run_id})")
        if log_format == "json":
            log("failed", level="ERROR", error=error.format_message(), exit_code=error.exit_code)
        raise error from None
    click.echo(output.render_table(
        ["source", "source_file", "lines", "accepted", "quarantined", "other_day", "unmatched"],
        [[r[k] for k in ("source", "source_file", "lines", "accepted", "quarantined",
                         "other_day", "unmatched")] for r in report.file_counts]))
    click.echo()
    click.echo(output.render_table(["table", f"rows {run_date}"],
                                   [[k, v] for k, v in report.table_rows.items()]))
    total = sum(findings.values())
    if not any(r["lines"] for r in report.file_counts):
        # files without a single line: a broken collector must not look like a quiet cluster
        message = (f"the landing files of {run_date} under {landing} hold no line: check the "
                   "collectors, and rerun once the day has landed (the day is stored empty)")
        log(f"no_data {message}", level="WARNING")
        raise NoDataForDay(message)
    if log_format == "json":
        log("finished", seconds=round(report.seconds, 3), rows=report.table_rows,
            findings_at_or_above=fail_on and findings)
    else:
        click.echo(f"done in {report.seconds:.1f}s", err=True)
    if total:
        raise FindingsAtOrAbove(
            f"{total} findings at or above {fail_on} on {run_date}: "
            + ", ".join(f"{name}={n}" for name, n in findings.items()))


SQL_EXAMPLE = """\b
Examples:
  rocketlens sql "SELECT * FROM gold.incidents WHERE severity = 'CRITICAL'" --lake ./lake
  rocketlens sql --file docs/cookbook.sql --lake ./lake --format json
  echo 'SELECT count(*) FROM gold.group_health' | rocketlens sql - --lake ./lake"""


# unknown options are taken as the query: a query may start with "--" (a SQL comment)
@main.command(epilog=SQL_EXAMPLE, context_settings={"ignore_unknown_options": True})
@click.argument("query", required=False)
@env_option("--file", "query_file", type=click.File("r", encoding="utf-8"), default=None,
      help="Read the query from this file ('-' for stdin) instead of QUERY.")
@env_option("--lake", required=True, type=click.Path(file_okay=False, path_type=Path))
@env_option("--format", "fmt", type=click.Choice(["table", "json", "csv"], case_sensitive=False),
      default="table")
@env_option("--engine", type=ENGINE_CHOICE, default=None)
@env_option("--remote", default=None)
@env_option("--conf", default=None, type=click.Path(dir_okay=False))
def sql(query: str | None, lake: Path, fmt: str, engine: str | None, remote: str | None,
        conf: str | None, query_file=None) -> None:
    """Trusted ad-hoc SQL over every lake table (bronze.X, silver.X, gold.X).

    One statement, given as QUERY, with --file F, or on stdin (QUERY or F is '-'); comments
    and a trailing ';' are allowed. The query runs as given, with this process's rights: it can
    read or write any path the process can (``delta.`/any/path```, ``CREATE TABLE …
    LOCATION``). Never pass it text from an untrusted source (docs/operations.md, Failure modes)."""
    from jobs import lake as lake_mod

    if (query is None) == (query_file is None):
        raise click.UsageError("give the query either as QUERY or with --file F (- for stdin)")
    if query_file is not None:
        query = query_file.read()
    elif query == "-":
        query = sys.stdin.read()
    if not query or not query.strip():
        raise click.UsageError("the query is empty")
    fmt = fmt.lower()
    settings = load_settings(conf)
    with session(engine or settings.engine.name, remote, settings) as spark:
        lake_mod.register_tables(spark, lake)
        try:
            df = spark.sql(query)
            columns = df.columns
            rows = [r.asDict(recursive=True) for r in df.collect()]
        except Exception as exc:  # analysis errors: one line
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise RocketlensError(f"query failed: {first}") from None
    click.echo(output.render(columns, rows, fmt), nl=False)


@main.command(epilog="""\b
Example:
  rocketlens tables --lake ./demo-out/lake""")
@env_option("--lake", required=True, type=click.Path(file_okay=False, path_type=Path))
@env_option("--engine", type=ENGINE_CHOICE, default=None)
@env_option("--remote", default=None)
@env_option("--conf", default=None, type=click.Path(dir_okay=False))
def tables(lake: Path, engine: str | None, remote: str | None, conf: str | None) -> None:
    """List lake tables with row counts, schemas and column comments."""
    from jobs import lake as lake_mod
    from schemas.lake_comments import column_comment

    settings = load_settings(conf)
    found = lake_mod.list_tables(lake)
    if not found:
        raise RocketlensError(f"no Delta tables under {lake}: run 'rocketlens run' first")
    with session(engine or settings.engine.name, remote, settings) as spark:
        for layer, name, path in found:
            df = spark.read.format("delta").load(path)
            click.echo(f"{layer}.{name}  rows={df.count()}  {path}")
            for f in df.schema.fields:
                comment = column_comment(f"{layer}.{name}", f.name)
                click.echo(f"    {f.name}: {f.dataType.simpleString()}"
                           + (f"  -- {comment}" if comment else ""))


DEMO_DATE = dt.date(2025, 11, 21)


@main.command(epilog="""\b
Example:
  rocketlens demo --out ./demo-out   # then open demo-out/report.html""")
@env_option("--lake", type=click.Path(file_okay=False, path_type=Path), default=None,
            help="Default: <out>/lake.")
@env_option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("demo-out"))
@env_option("--engine", type=ENGINE_CHOICE, default=None, help="Default: engine.name in settings.")
@env_option("--remote", default=None, help="Spark Connect URL for --engine connect.")
@env_option("--conf", default=None, type=click.Path(dir_okay=False), help="Settings TOML file.")
def demo(lake: Path | None, out: Path, engine: str | None = None, remote: str | None = None,
         conf: str | None = None) -> None:
    """Simulate the bundled sample day, run the nightly pipeline on it (the engine of the
    settings: embedded by default), print the findings and write <out>/report.html."""
    from jobs.report.build import write_report
    from jobs.simulate.run import simulate

    settings = load_settings(conf)
    engine = engine or settings.engine.name
    landing = out / "landing"
    lake = lake or out / "lake"
    click.echo(f"simulating scenario 'sample' for {DEMO_DATE} into {landing}", err=True)
    truth = simulate("sample", DEMO_DATE, landing, seed=0)
    click.echo(f"  {len(truth['faults'])} injected faults listed in {landing / '_truth.json'}",
               err=True)
    click.get_current_context().invoke(run, run_date=DEMO_DATE, landing=landing, lake=lake,
                                       engine=engine, remote=remote, conf=conf)
    report_path = out / "report.html"
    with session(engine, remote, settings) as spark:
        click.echo(f"\nfindings on {DEMO_DATE} (gold.group_health):")
        click.echo(_demo_findings(spark, lake), nl=False)
        write_report(spark, lake, DEMO_DATE, report_path)
    click.echo(f"\nreport: {report_path}")
    click.echo(f"query them: rocketlens sql \"SELECT * FROM gold.orphaned_queues\" --lake {lake}")


def _demo_findings(spark, lake: Path) -> str:
    from jobs import lake as lake_mod

    df = (lake_mod.read_day(spark, lake, "gold", "group_health", DEMO_DATE)
          .orderBy("group")
          .select("group", "status", "orphaned_queues", "double_owned_queues",
                  "stuck_queues", "rebalances", "findings"))
    rows = [r.asDict(recursive=True) for r in df.collect()]
    for r in rows:
        r["findings"] = "; ".join(r["findings"][:3]) + (" …" if len(r["findings"]) > 3 else "")
    return output.render(["group", "status", "orphaned_queues", "double_owned_queues",
                          "stuck_queues", "rebalances", "findings"], rows, "table")


def _register_commands() -> None:
    from jobs.delivery.metrics import metrics_command
    from jobs.delivery.notify import notify_command
    from jobs.replay.cli import replay_command
    from jobs.replay.which_queue import which_queue_command
    from jobs.report.cli import report_command
    from jobs.simulate.cli import simulate_command

    main.add_command(simulate_command)
    main.add_command(replay_command)
    main.add_command(which_queue_command)
    main.add_command(report_command)
    main.add_command(notify_command)
    main.add_command(metrics_command)


_register_commands()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
