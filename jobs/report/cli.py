"""``rocketlens report --date D --lake DIR --out FILE.html`` (DESIGN.md §1)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import click


@click.command("report", epilog="""\b
Example:
  rocketlens report --date 2025-11-21 --lake ./lake --out report-2025-11-21.html""")
@click.option("--date", "run_date", required=True, envvar="ROCKETLENS_DATE", show_envvar=True,
              help="UTC day YYYY-MM-DD.")
@click.option("--lake", required=True, envvar="ROCKETLENS_LAKE", show_envvar=True,
              type=click.Path(file_okay=False, path_type=Path), help="Lake root.")
@click.option("--out", required=True, envvar="ROCKETLENS_OUT", show_envvar=True,
              type=click.Path(dir_okay=False, path_type=Path), help="HTML file to write.")
@click.option("--engine", type=click.Choice(["sail", "spark", "connect"]), default=None,
              envvar="ROCKETLENS_ENGINE", show_envvar=True, help="Default: engine.name in settings.")
@click.option("--remote", default=None, envvar="ROCKETLENS_REMOTE", show_envvar=True)
@click.option("--conf", default=None, envvar="ROCKETLENS_CONF", show_envvar=True,
              type=click.Path(dir_okay=False))
def report_command(run_date: str, lake: Path, out: Path, engine: str | None, remote: str | None,
                   conf: str | None) -> None:
    """Self-contained HTML report of one day: group health, lag timelines, ownership heatmaps."""
    from jobs.cli import RocketlensError, _load_settings, _parse_date, _session
    from jobs.report.build import write_report

    day = _parse_date(None, None, run_date)
    if not (lake / "gold" / "group_health").is_dir():
        raise RocketlensError(f"no gold.group_health under {lake}: run 'rocketlens run' first")
    settings = _load_settings(conf)
    with _session(engine or settings.engine.name, remote, settings) as spark:
        summary = write_report(spark, lake, day, out)
    click.echo(f"wrote {out}: {summary['groups']} groups, {summary['findings']} findings, "
               f"{summary['timelines']} timelines, {summary['heatmaps']} heatmaps, "
               f"{summary['incidents']} incidents")


def report_for_demo(lake: Path, day: dt.date, out: Path) -> dict:
    """Used by ``rocketlens demo``: the report with the embedded engine."""
    from jobs.engine import open_session
    from jobs.report.build import write_report

    with open_session("sail") as spark:
        return write_report(spark, lake, day, out)
