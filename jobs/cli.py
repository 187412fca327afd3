"""The ``rocketlens`` command line (DESIGN.md §1).

Exit codes: 0 ran (findings or not), 1 failure, 2 bad usage, 3 findings at or above ``--fail-on``.
Every option also reads ``ROCKETLENS_<OPTION>``. A failure prints one line saying what to do.
"""

from __future__ import annotations

import sys

import click


class RocketlensError(click.ClickException):
    """A failure with a one-line, actionable message (exit 1)."""

    exit_code = 1

    def show(self, file=None) -> None:
        click.echo(f"rocketlens: {self.format_message()}", err=True)


class UsageProblem(RocketlensError):
    """Bad usage or settings (exit 2)."""

    exit_code = 2


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rocketlens")
def main() -> None:
    """rocketlens: orphaned queues, stuck offsets and rebalance churn in RocketMQ consumer groups."""


def run_main() -> None:  # pragma: no cover - thin wrapper for console scripts
    main(standalone_mode=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

from jobs.replay.cli import replay_command  # noqa: E402
main.add_command(replay_command)
