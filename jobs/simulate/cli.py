"""``rocketlens simulate`` (DESIGN.md §1, §6)."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import click

from jobs.simulate.run import SCALES
from jobs.simulate.scenario import ScenarioError


class _SimulateFailed(click.ClickException):
    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"rocketlens: {self.format_message()}", err=True)


@click.command("simulate", epilog="""\b
Example:
  rocketlens simulate --scenario duplicate-client-id --date 2025-11-21 --landing ./landing""")
@click.option("--scenario", required=True, envvar="ROCKETLENS_SCENARIO",
              help="Built-in scenario name (healthy, duplicate-client-id, topicb-subscription, strategy-mismatch, "
                   "client-leaves, slow-message, consumer-crash, sample) or a .toml/.json scenario file.")
@click.option("--date", "date_", required=True, envvar="ROCKETLENS_DATE",
              type=click.DateTime(formats=["%Y-%m-%d"]), help="UTC day to simulate, YYYY-MM-DD.")
@click.option("--landing", required=True, envvar="ROCKETLENS_LANDING", type=click.Path(file_okay=False),
              help="Landing directory to write into.")
@click.option("--seed", default=0, show_default=True, envvar="ROCKETLENS_SEED", type=int,
              help="Random seed; the same seed gives byte-identical files.")
@click.option("--scale", default="S", show_default=True, envvar="ROCKETLENS_SCALE",
              type=click.Choice(list(SCALES)), help="S: the scenario as written; M/L: padded with healthy groups "
                                                    "to 100/300 groups x 2 topics x 32 queues.")
@click.option("--window", default=None, envvar="ROCKETLENS_WINDOW", metavar="HH:MM-HH:MM",
              help="Write only this part of the day (state before it is still simulated).")
@click.option("--landing-format", default="jsonl", show_default=True, envvar="ROCKETLENS_LANDING_FORMAT",
              type=click.Choice(["jsonl", "mqadmin"]),
              help="mqadmin: offsets, connections and running_info as mqadmin consumerProgress / "
                   "consumerConnection text and fastjson ConsumerRunningInfo dumps (docs/landing-mqadmin.md).")
def simulate_command(scenario: str, date_: dt.datetime, landing: str, seed: int, scale: str,
                     window: str | None, landing_format: str) -> None:
    """Write one day of landing data for a scenario plus _truth.json with the injected faults."""
    from jobs.simulate.run import simulate

    span = None
    if window:
        parts = window.split("-")
        if len(parts) != 2:
            raise _SimulateFailed(f"--window {window!r} is not HH:MM-HH:MM")
        span = (parts[0], parts[1])
    started = time.perf_counter()
    try:
        truth = simulate(scenario, date_.date(), Path(landing), seed=seed, scale=scale, window=span,
                         landing_format=landing_format)
    except ScenarioError as exc:
        raise _SimulateFailed(str(exc)) from None
    lines = ", ".join(f"{k} {v}" for k, v in truth["lines"].items())
    click.echo(f"simulated {truth['scenario']} {truth['date']} seed {seed} scale {scale}: {lines}; "
               f"{len(truth['faults'])} faults -> {Path(landing) / '_truth.json'} "
               f"({time.perf_counter() - started:.1f} s)")
