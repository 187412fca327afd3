"""What every ``rocketlens`` command shares: its errors and exit codes, the ``YYYY-MM-DD`` day,
options that also read ``ROCKETLENS_<OPTION>``, the settings and the engine session.

The commands (``jobs/cli.py``, ``jobs/replay/cli.py``, ``jobs/report/cli.py``,
``jobs/simulate/cli.py``) import from here; only entry points import ``jobs.cli``, which keeps
the command modules free of import cycles (tests/test_import_graph.py).

Exit codes (DESIGN.md §1; docs/operations.md): 0 ran (findings or not), 1 failure, 2 bad usage or
settings, 3 findings at or above ``--fail-on``, 4 landing directory missing, 5 no landing data
for the day, 6 engine did not start, 7 Java missing for ``--engine spark``. A failure prints one
line, ``rocketlens: …``, saying what to do.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from jobs.settings import Settings


class RocketlensError(click.ClickException):
    """A failure with a one-line, actionable message (exit 1)."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        click.echo(f"rocketlens: {self.format_message()}", err=True)


class UsageProblem(RocketlensError):
    """Bad usage or settings (exit 2)."""

    exit_code = 2


class FindingsAtOrAbove(RocketlensError):
    """The run succeeded and found what ``--fail-on`` asks to fail on (exit 3, for Airflow)."""

    exit_code = 3


class LandingMissing(RocketlensError):
    """``--landing`` does not exist (exit 4): a wrong path or storage not mounted."""

    exit_code = 4


class NoDataForDay(RocketlensError):
    """The landing root holds no file, or no line, for the day (exit 5): the collectors have not
    delivered."""

    exit_code = 5


class EngineDidNotStart(RocketlensError):
    """The Spark engine could not be started or reached (exit 6)."""

    exit_code = 6


class JavaMissing(RocketlensError):
    """``--engine spark`` needs a JVM and finds no Java (exit 7)."""

    exit_code = 7


ENGINE_CHOICE = click.Choice(["sail", "spark", "connect"])

_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def parse_date(ctx: Any, param: Any, value: str | None) -> dt.date | None:
    """Exactly ``YYYY-MM-DD`` of a real day (not ``2025-1-5``, ``20251121``, ISO week dates, or
    a time): the day names partitions and folders, so it must have one spelling. A click
    option callback; ``ctx`` and ``param`` may be None."""
    if value is None:
        return None
    try:
        if not _DAY.fullmatch(value):
            raise ValueError
        return dt.date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a UTC calendar day YYYY-MM-DD") from None


def env_option(name: str, *dest: str, **kwargs: Any) -> Any:
    """An option that also reads ``ROCKETLENS_<OPTION>`` (DESIGN.md §1)."""
    env = "ROCKETLENS_" + name.lstrip("-").replace("-", "_").upper()
    return click.option(name, *dest, envvar=env, show_envvar=True, **kwargs)


def load_settings(conf: str | None) -> Settings:
    """The layered settings (jobs/settings.py); a bad one is a usage error (exit 2)."""
    from jobs.settings import SettingsError
    from jobs.settings import load_settings as load

    try:
        return load(conf)
    except SettingsError as exc:
        raise UsageProblem(str(exc)) from None


@contextmanager
def session(engine: str, remote: str | None, settings: Settings,
            delta: bool = True) -> Iterator[SparkSession]:
    """The engine's session, configured by ``settings.engine``; its start failures become
    one-line errors with their exit code."""
    from jobs.engine import EngineConfigError, EngineError, JavaNotFound, open_session

    with ExitStack() as stack:
        try:
            spark = stack.enter_context(open_session(
                engine, remote=remote or settings.engine.remote or None, delta=delta,
                shuffle_partitions=settings.engine.shuffle_partitions,
                connect_timeout=settings.engine.connect_timeout_seconds,
                sail_memory_pool_mib=settings.engine.sail_memory_pool_mib,
                sail_batch_rows=settings.engine.sail_batch_rows))
        except EngineConfigError as exc:
            raise UsageProblem(str(exc)) from None
        except JavaNotFound as exc:
            raise JavaMissing(str(exc)) from None
        except EngineError as exc:
            raise EngineDidNotStart(str(exc)) from None
        yield spark


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


# Sail's messages when a query outgrows its memory pool (engine.sail_memory_pool_mib).
_OUT_OF_MEMORY = ("Resources exhausted", "Failed to allocate additional")


def out_of_engine_memory(exc: BaseException, settings: Settings) -> str | None:
    """``ran out of engine memory (…); raise engine.sail_memory_pool_mib (now N)`` when ``exc``
    is the embedded engine's memory pool refusing a query, else None."""
    if not any(marker in str(exc) for marker in _OUT_OF_MEMORY):
        return None
    return (f"ran out of engine memory ({first_line(exc)}); raise engine.sail_memory_pool_mib "
            f"(now {settings.engine.sail_memory_pool_mib})")
