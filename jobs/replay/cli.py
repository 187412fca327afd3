"""``rocketlens replay --cases F [--engine python|sail|spark]`` (DESIGN.md §1, §7).

Prints one JSON line per case, in file order: ``{"case_id", "results": [{"current_cid_index",
"current_cid", "allocated", "error"}]}``. ``python`` runs the pure reference; ``sail`` and
``spark`` run the Spark transform on that engine (classic Spark without Delta: none is needed).
The default engine is ``sail``, as everywhere in rocketlens (DESIGN.md §2).
"""

from __future__ import annotations

import json

import click

from jobs.cli import RocketlensError, UsageProblem

REPLAY_ENGINES = ("python", "sail", "spark")


@click.command("replay", epilog="""\b
Example:
  rocketlens replay --cases allocation_vectors_public.jsonl --engine python""")
@click.option("--cases", "cases_path", required=True, envvar="ROCKETLENS_CASES",
              type=click.Path(dir_okay=False),
              help="JSON Lines file of allocation cases (the format of vectors/).")
@click.option("--engine", default="sail", show_default=True, envvar="ROCKETLENS_ENGINE",
              type=click.Choice(REPLAY_ENGINES),
              help="python: the reference; sail / spark: the Spark transform on that engine.")
def replay_command(cases_path: str, engine: str) -> None:
    """Replay RocketMQ's queue allocation for each case; one JSON line per case."""
    from jobs.replay.cases import read_cases, replay_cases_python

    try:
        cases = read_cases(cases_path)
    except FileNotFoundError as exc:
        raise UsageProblem(f"--cases {cases_path}: no such file") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageProblem(f"--cases {cases_path}: not a cases file ({exc})") from exc

    if engine == "python":
        _print_all(replay_cases_python(cases))
        return

    from jobs.engine import EngineError, open_session
    from jobs.replay.spark_cases import replay_cases_spark

    try:
        with open_session(engine, delta=False, shuffle_partitions=2,
                          app_name="rocketlens-replay") as spark:
            _print_all(replay_cases_spark(spark, cases))
    except EngineError as exc:
        raise RocketlensError(str(exc)) from exc


def _print_all(outputs) -> None:
    for output in outputs:
        click.echo(json.dumps(output, ensure_ascii=False))
