"""``rocketlens report --date D --lake DIR --out FILE.html`` (DESIGN.md §1)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import click

from jobs.cli_common import (
    ENGINE_CHOICE,
    RocketlensError,
    env_option,
    first_line,
    load_settings,
    out_of_engine_memory,
    parse_date,
    session,
)


@click.command("report", epilog="""\b
Example:
  rocketlens report --date 2025-11-21 --lake ./lake --out report-2025-11-21.html""")
@env_option("--date", "run_date", required=True, callback=parse_date, help="UTC day YYYY-MM-DD.")
@env_option("--lake", required=True, type=click.Path(file_okay=False, path_type=Path),
            help="Lake root.")
@env_option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path),
            help="HTML file to write.")
@env_option("--engine", type=ENGINE_CHOICE, default=None, help="Default: engine.name in settings.")
@env_option("--remote", default=None, help="Spark Connect URL for --engine connect.")
@env_option("--conf", default=None, type=click.Path(dir_okay=False), help="Settings TOML file.")
def report_command(run_date: dt.date, lake: Path, out: Path, engine: str | None,
                   remote: str | None, conf: str | None) -> None:
    """Self-contained HTML report of one day: group health, lag timelines, ownership heatmaps."""
    from jobs.report.build import write_report

    if not (lake / "gold" / "group_health").is_dir():
        raise RocketlensError(f"no gold.group_health under {lake}: run 'rocketlens run' first")
    settings = load_settings(conf)
    with session(engine or settings.engine.name, remote, settings) as spark:
        try:
            summary = write_report(spark, lake, run_date, out)
        except Exception as exc:
            out_of_memory = out_of_engine_memory(exc, settings)
            if out_of_memory:
                raise RocketlensError(f"report of {run_date} {out_of_memory} and run it "
                                      "again") from None
            raise RocketlensError(
                f"report of {run_date} failed ({type(exc).__name__}: {first_line(exc)}): check "
                f"that 'rocketlens run' finished for {run_date}, then run it again") from None
    click.echo(f"wrote {out}: {summary['groups']} groups, {summary['findings']} findings, "
               f"{summary['timelines']} timelines, {summary['heatmaps']} heatmaps, "
               f"{summary['incidents']} incidents, {summary['load_plots']} producer load plots")
