"""``rocketlens notify --date D --lake DIR --to URL …`` (DESIGN.md §1; docs/alerts.md).

One message per day through apprise (Slack, Teams, e-mail, PagerDuty, ``json://`` webhooks, …):
the day's gold.incidents at or above ``--min-severity``, new ones first, continuing ones marked
with the day they opened. Nothing at that severity → nothing sent, exit 0. The lake is only read.

Secrets: apprise URLs carry tokens and passwords, so no URL is ever printed; destinations are
named by their scheme and position, and apprise's own log lines (which may quote them) are kept
out of the output.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from pathlib import Path

import click

from jobs.cli_common import ENGINE_CHOICE, env_option, parse_date

SEVERITIES = ("INFO", "WARN", "CRITICAL")
DELIVERY_FAILED_EXIT = 8


class DeliveryFailed(click.ClickException):
    """A destination did not accept the message (exit 8); the lake is untouched."""

    exit_code = DELIVERY_FAILED_EXIT

    def show(self, file=None) -> None:
        click.echo(f"rocketlens: {self.format_message()}", err=True)


@dataclass(frozen=True)
class Message:
    title: str
    body: str
    incidents: int
    new: int


def _at_or_above(severity: str, minimum: str) -> bool:
    return SEVERITIES.index(severity) >= SEVERITIES.index(minimum)


def _hhmm(ts: dt.datetime | None) -> str:
    return ts.strftime("%H:%M") if ts else "?"


def compose(incidents: list[dict], day: dt.date, min_severity: str) -> Message | None:
    """The day's message from gold.incidents rows (dicts), or None when none is at or above
    ``min_severity``. Order: new before continuing, then most severe, then group, kind, cause."""
    chosen = [r for r in incidents if r["severity"] in SEVERITIES
              and _at_or_above(r["severity"], min_severity)]
    if not chosen:
        return None

    def is_new(r: dict) -> bool:
        return r["open_since_day"] is None or r["open_since_day"] >= day

    chosen.sort(key=lambda r: (not is_new(r), -SEVERITIES.index(r["severity"]), r["cluster"],
                               r["group"], r["kind"], r["cause"]))
    counts = {s: sum(r["severity"] == s for r in chosen) for s in reversed(SEVERITIES)}
    new = sum(is_new(r) for r in chosen)
    title = (f"rocketlens {day}: "
             + ", ".join(f"{n} {s}" for s, n in counts.items() if n)
             + f" ({new} new, {len(chosen) - new} continuing)")
    lines = []
    for r in chosen:
        mark = "NEW" if is_new(r) else f"CONTINUING since {r['open_since_day']}"
        queues = r["queues"] or []
        shown = ", ".join(queues[:5]) + (f" … (+{len(queues) - 5})" if len(queues) > 5 else "")
        lines += [
            f"[{mark}] {r['severity']} {r['group']} ({r['cluster']}) {r['kind']} {r['cause']}, "
            f"{_hhmm(r['first_seen'])}–{_hhmm(r['last_seen'])} UTC"
            + (f", {len(queues)} queue{'s' if len(queues) != 1 else ''}: {shown}" if queues else ""),
            f"  evidence: {r['evidence'] or '-'}",
            f"  what to do: {r['remediation'] or '-'}",
            "",
        ]
    lines.append(f"Query: rocketlens sql \"SELECT * FROM gold.incidents WHERE date = '{day}'\"")
    return Message(title, "\n".join(lines), len(chosen), new)


def destinations(urls: list[str]):
    """An ``apprise.Apprise`` holding every URL; a URL apprise cannot use is bad usage, named by
    its position and scheme only (it may hold a secret)."""
    import apprise

    logging.getLogger("apprise").setLevel(logging.CRITICAL + 1)  # its lines may quote URLs
    box = apprise.Apprise()
    for i, url in enumerate(urls, 1):
        if not box.add(url):
            scheme = url.split("://", 1)[0] if "://" in url else "?"
            raise click.BadParameter(
                f"destination #{i} (scheme '{scheme}') is not a URL apprise can send to; see "
                "https://github.com/caronc/apprise/wiki for the URL of each service",
                param_hint="'--to'")
    return box


def send(box, message: Message) -> None:
    """Deliver ``message`` to every destination; any refusal raises :class:`DeliveryFailed`."""
    import apprise

    failed = []
    for i, server in enumerate(box, 1):
        if not server.notify(body=message.body, title=message.title,
                             notify_type=apprise.NotifyType.FAILURE):
            failed.append(f"#{i} ({server.url(privacy=True).split('://', 1)[0]})")
    if failed:
        raise DeliveryFailed(
            f"notification not delivered to destination {', '.join(failed)} of {len(box)}: "
            "check the URL, the service and the network, then rerun notify (the lake is "
            "unchanged)")


def read_incidents(spark, lake: Path, day: dt.date) -> list[dict]:
    from jobs import lake as lake_mod

    return [r.asDict(recursive=True)
            for r in lake_mod.read_day(spark, lake, "gold", "incidents", day).collect()]


def day_was_run(spark, lake: Path, day: dt.date) -> bool:
    """Has the lake a gold.group_health row of ``day``? (No row: the day was never run, which is
    not the same as a quiet day.)"""
    from jobs import lake as lake_mod

    return lake_mod.read_day(spark, lake, "gold", "group_health", day).limit(1).count() > 0


EXAMPLE = """\b
Example:
  rocketlens notify --date 2025-11-21 --lake ./lake \\
      --to 'json://alerts.internal:8080/rocketlens' --to "$SLACK_URL" --min-severity WARN

Exit codes: 0 sent, or nothing at that severity; 1 failure (e.g. the day is not in the lake);
2 bad usage; 8 a destination did not accept the message (the lake is untouched)."""


@click.command("notify", epilog=EXAMPLE)
@env_option("--date", "run_date", required=True, callback=parse_date, help="UTC day YYYY-MM-DD.")
@env_option("--lake", required=True,
              type=click.Path(file_okay=False, path_type=Path), help="Lake root.")
@env_option("--to", "urls", multiple=True,
              help="apprise URL (repeatable; env: space-separated). Default: notify.urls in "
                   "settings.")
@env_option("--min-severity", type=click.Choice(SEVERITIES, case_sensitive=False),
              default=None,
              help="Send incidents at or above this. Default: notify.min_severity (WARN).")
@env_option("--engine", type=ENGINE_CHOICE, default=None, help="Default: engine.name.")
@env_option("--remote", default=None)
@env_option("--conf", default=None,
              type=click.Path(dir_okay=False))
def notify_command(run_date: dt.date, lake: Path, urls: tuple[str, ...], min_severity: str | None,
                   engine: str | None, remote: str | None, conf: str | None) -> None:
    """Send the day's incidents at or above a severity as one message, new ones first."""
    from jobs.cli_common import RocketlensError, load_settings, session

    day = run_date
    assert day is not None  # --date is required
    settings = load_settings(conf)
    urls = tuple(urls) or tuple(settings.notify.urls)
    if not urls:
        raise click.UsageError("no destination: pass --to URL, or set notify.urls "
                               "(ROCKETLENS__NOTIFY__URLS)")
    minimum = (min_severity or settings.notify.min_severity).upper()
    box = destinations(list(urls))  # bad URLs fail before an engine starts
    if not (lake / "gold" / "incidents").is_dir():
        raise RocketlensError(f"no gold.incidents under {lake}: run 'rocketlens run' first")
    with session(engine or settings.engine.name, remote, settings) as spark:
        if not day_was_run(spark, lake, day):
            raise RocketlensError(f"{day} is not in the lake {lake}: run 'rocketlens run "
                                  f"--date {day}' first (nothing was sent)")
        message = compose(read_incidents(spark, lake, day), day, minimum)
    if message is None:
        click.echo(f"no incidents at or above {minimum} on {day}: nothing sent", err=True)
        return
    send(box, message)
    click.echo(f"sent {message.incidents} incidents ({message.new} new) at or above {minimum} "
               f"for {day} to {len(box)} destination{'s' if len(box) != 1 else ''}", err=True)
