"""``rocketlens metrics --date D --lake DIR --out FILE`` (DESIGN.md §1; docs/metrics.md).

Prometheus text format for node_exporter's textfile collector, written with prometheus-client
(``write_to_textfile``: a temporary file beside ``FILE``, then a rename, so the collector never
reads half a file). Gauges of one day:
- ``rocketlens_group_status{cluster,group}``: gold.group_health ``status``, 0 OK, 1 WARN, 2 CRITICAL;
- ``rocketlens_incidents{cluster,group,kind,cause,severity}``: 1 per gold.incidents row;
  ``rocketlens_incident_queues`` (its queue count) and ``rocketlens_incident_open_days`` (days
  open, 1 when new) with the same labels;
- ``rocketlens_queue_lag{cluster,group,topic,broker_name,queue_id}``: lag at the queue's last
  snapshot of the day (silver.queue_offsets); a queue whose last lag is unknown has no sample
  (unknown is not 0);
- ``rocketlens_backlog_clears_in_seconds{cluster,group,topic}`` and
  ``rocketlens_backlog_loss_in_seconds`` (same labels): gold.backlog_forecast's group × topic
  ``clears_at`` and ``loss_at`` less its ``as_of`` (DESIGN.md §5.4); absent when null (will not
  clear, or unknown); ``rocketlens_forecast_error_minutes{cluster,group,topic,broker_name,queue_id}``:
  gold.forecast_accuracy's ``error_minutes`` (the previous night's forecast; absent when the
  queue did not clear);
- ``rocketlens_last_run_timestamp_seconds``: when the day's stored run started (the bronze
  records' ``_ingested_at``), and ``rocketlens_data_day_timestamp_seconds``: the day's midnight UTC, so a
  dashboard can tell a stale file (no run last night) from a healthy one.
"""

from __future__ import annotations

import calendar
import datetime as dt
from pathlib import Path

import click
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.cli_common import ENGINE_CHOICE, env_option, parse_date

STATUS_VALUES = {"OK": 0, "WARN": 1, "CRITICAL": 2}
QUEUE_KEY = ["cluster", "group", "topic", "broker_name", "queue_id"]


def end_of_day_lag(queue_offsets_df: DataFrame) -> DataFrame:
    """Per queue of a group: the lag at its last snapshot (silver.queue_offsets of one day in;
    ``QUEUE_KEY`` + ``lag`` out). A last snapshot with an unknown lag gives no row."""
    last = queue_offsets_df.groupBy(*QUEUE_KEY).agg(F.max("ts").alias("ts"))
    return (queue_offsets_df.join(last, on=[*QUEUE_KEY, "ts"])
            .where(F.col("lag").isNotNull())
            .groupBy(*QUEUE_KEY).agg(F.max("lag").alias("lag")))


def _epoch(ts: dt.datetime) -> float:
    return calendar.timegm(ts.timetuple()) + ts.microsecond / 1e6


def build_registry(health: list[dict], incidents: list[dict], lags: list[dict],
                   last_run: dt.datetime | None, day: dt.date,
                   backlog: list[dict] | None = None, accuracy: list[dict] | None = None):
    """A prometheus-client registry holding the day's gauges (rows as dicts; ``backlog``: the
    group × topic rows of gold.backlog_forecast, ``accuracy``: gold.forecast_accuracy)."""
    from prometheus_client import CollectorRegistry, Gauge

    registry = CollectorRegistry()
    status = Gauge("rocketlens_group_status",
                   "gold.group_health status of the day: 0 OK, 1 WARN, 2 CRITICAL",
                   ["cluster", "group"], registry=registry)
    for r in health:
        status.labels(r["cluster"], r["group"]).set(STATUS_VALUES[r["status"]])
    labels = ["cluster", "group", "kind", "cause", "severity"]
    present = Gauge("rocketlens_incidents", "gold.incidents of the day (1 per incident)", labels,
                    registry=registry)
    queues = Gauge("rocketlens_incident_queues", "queues of the incident", labels,
                   registry=registry)
    open_days = Gauge("rocketlens_incident_open_days",
                      "days the incident has been open without a gap (1 when new)", labels,
                      registry=registry)
    for r in incidents:
        key = [r[k] for k in labels]
        present.labels(*key).set(1)
        queues.labels(*key).set(len(r["queues"] or []))
        open_days.labels(*key).set((day - (r["open_since_day"] or day)).days + 1)
    lag = Gauge("rocketlens_queue_lag", "consumer lag (messages) at the queue's last snapshot of "
                "the day", QUEUE_KEY, registry=registry)
    for r in lags:
        lag.labels(*[str(r[k]) for k in QUEUE_KEY]).set(r["lag"])
    topic_key = ["cluster", "group", "topic"]
    clears = Gauge("rocketlens_backlog_clears_in_seconds",
                   "seconds from the day's last snapshot until the backlog clears at its rates",
                   topic_key, registry=registry)
    loss = Gauge("rocketlens_backlog_loss_in_seconds",
                 "seconds from the day's last snapshot until unread messages reach retention",
                 topic_key, registry=registry)
    for r in backlog or []:
        key = [r[k] for k in topic_key]
        if r["clears_at"] is not None:
            clears.labels(*key).set((r["clears_at"] - r["as_of"]).total_seconds())
        if r["loss_at"] is not None:
            loss.labels(*key).set((r["loss_at"] - r["as_of"]).total_seconds())
    error = Gauge("rocketlens_forecast_error_minutes",
                  "actual minus predicted clear time of the previous night's forecast",
                  QUEUE_KEY, registry=registry)
    for r in accuracy or []:
        if r["error_minutes"] is not None:
            error.labels(*[str(r[k]) for k in QUEUE_KEY]).set(r["error_minutes"])
    if last_run is not None:
        Gauge("rocketlens_last_run_timestamp_seconds",
              "start of the rocketlens run that wrote the day (UTC epoch seconds)",
              registry=registry).set(_epoch(last_run))
    Gauge("rocketlens_data_day_timestamp_seconds", "the day the values describe (its 00:00 UTC)",
          registry=registry).set(_epoch(dt.datetime.combine(day, dt.time())))
    return registry


def collect(spark, lake: Path, day: dt.date) -> tuple[list, list, list, dt.datetime | None]:
    from jobs import lake as lake_mod

    def rows(df: DataFrame) -> list[dict]:
        return [r.asDict(recursive=True) for r in df.collect()]

    health = rows(lake_mod.read_day(spark, lake, "gold", "group_health", day))
    incidents = rows(lake_mod.read_day(spark, lake, "gold", "incidents", day))
    lags = rows(end_of_day_lag(lake_mod.read_day(spark, lake, "silver", "queue_offsets", day)))
    stamps = None
    for name in ("offsets", "connections", "running_info", "client_log_events"):
        if (lake / "bronze" / name).is_dir():
            df = lake_mod.read_day(spark, lake, "bronze", name, day).select("_ingested_at")
            stamps = df if stamps is None else stamps.unionByName(df)
    latest = stamps.agg(F.max("_ingested_at").alias("t")).first() if stamps is not None else None
    last_run = latest["t"] if latest is not None else None
    return health, incidents, lags, last_run


def collect_backlog(spark, lake: Path, day: dt.date) -> tuple[list[dict], list[dict]]:
    """The day's gold.backlog_forecast group × topic rows and gold.forecast_accuracy rows; none
    from a lake written before those tables."""
    from jobs import lake as lake_mod

    def rows(table: str, where: str | None = None) -> list[dict]:
        if not (lake / "gold" / table).is_dir():
            return []
        df = lake_mod.read_day(spark, lake, "gold", table, day)
        return [r.asDict() for r in (df.where(where) if where else df).collect()]

    return rows("backlog_forecast", "queue_id IS NULL"), rows("forecast_accuracy")


EXAMPLE = """\b
Example (node_exporter --collector.textfile.directory=/var/lib/node_exporter):
  rocketlens metrics --date 2025-11-21 --lake ./lake \\
      --out /var/lib/node_exporter/rocketlens.prom

Exit codes: 0 written; 1 failure (e.g. the day is not in the lake); 2 bad usage."""


@click.command("metrics", epilog=EXAMPLE)
@env_option("--date", "run_date", required=True, callback=parse_date, help="UTC day YYYY-MM-DD.")
@env_option("--lake", required=True,
              type=click.Path(file_okay=False, path_type=Path), help="Lake root.")
@env_option("--out", required=True,
              type=click.Path(dir_okay=False, path_type=Path),
              help="File to write (*.prom for the textfile collector); replaced atomically.")
@env_option("--engine", type=ENGINE_CHOICE, default=None, help="Default: engine.name.")
@env_option("--remote", default=None)
@env_option("--conf", default=None,
              type=click.Path(dir_okay=False))
def metrics_command(run_date: dt.date, lake: Path, out: Path, engine: str | None,
                    remote: str | None, conf: str | None) -> None:
    """Write the day's group status, incidents and end-of-day queue lag as Prometheus metrics."""
    from prometheus_client import write_to_textfile

    from jobs.cli_common import RocketlensError, load_settings, session

    day = run_date
    assert day is not None  # --date is required
    settings = load_settings(conf)
    for table in ("gold/group_health", "gold/incidents", "silver/queue_offsets"):
        if not (lake / table).is_dir():
            raise RocketlensError(f"no {table.replace('/', '.')} under {lake}: run "
                                  "'rocketlens run' first")
    if not out.parent.is_dir():
        raise click.BadParameter(f"folder {out.parent} does not exist", param_hint="'--out'")
    with session(engine or settings.engine.name, remote, settings) as spark:
        health, incidents, lags, last_run = collect(spark, lake, day)
        backlog, accuracy = collect_backlog(spark, lake, day)
    if not health:
        raise RocketlensError(f"{day} is not in the lake {lake}: run 'rocketlens run --date "
                              f"{day}' first ({out} left as it was)")
    write_to_textfile(str(out), build_registry(health, incidents, lags, last_run, day,
                                               backlog, accuracy))
    click.echo(f"wrote {out}: {len(health)} groups, {len(incidents)} incidents, "
               f"{len(lags)} queues", err=True)
