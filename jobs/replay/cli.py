"""``rocketlens replay --cases F [--engine python|sail|spark]`` (DESIGN.md §1, §7, §7.1).

Prints one JSON line per case, in file order: for an allocation case ``{"case_id", "results":
[{"current_cid_index", "current_cid", "allocated", "error"}]}``, for a producer case (a record
with a ``selector`` field) ``{"case_id", "broker_name", "queue_id", "error"}``; one file may mix
both. ``python`` runs the pure references; ``sail`` and
``spark`` run the Spark transform on that engine (classic Spark without Delta: none is needed).
The default engine is ``sail``, as everywhere in rocketlens (DESIGN.md §2).
"""

from __future__ import annotations

import json

import click

from jobs.cli_common import RocketlensError, UsageProblem

REPLAY_ENGINES = ("python", "sail", "spark")


@click.command("replay", epilog="""\b
Example:
  rocketlens replay --cases allocation_vectors_public.jsonl --engine python""")
@click.option("--cases", "cases_path", required=True, envvar="ROCKETLENS_CASES",
              type=click.Path(dir_okay=False),
              help="JSON Lines file of allocation and/or producer cases (the format of vectors/).")
@click.option("--engine", default="sail", show_default=True, envvar="ROCKETLENS_ENGINE",
              type=click.Choice(REPLAY_ENGINES),
              help="python: the reference; sail / spark: the Spark transform on that engine.")
def replay_command(cases_path: str, engine: str) -> None:
    """Replay RocketMQ's queue allocation or a producer's queue selection for each case; one
    JSON line per case."""
    from jobs.replay.cases import replay_cases_python
    from jobs.replay.producer_cases import replay_producer_cases_python

    try:
        allocation, producer = read_mixed_cases(cases_path)
    except FileNotFoundError as exc:
        raise UsageProblem(f"--cases {cases_path}: no such file") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageProblem(f"--cases {cases_path}: not a cases file ({exc})") from exc

    if engine == "python":
        _print_in_order(allocation, replay_cases_python(c for _, c in allocation),
                        producer, replay_producer_cases_python(c for _, c in producer))
        return

    from jobs.engine import EngineError, open_session
    from jobs.replay.producer_cases import replay_producer_cases_spark
    from jobs.replay.spark_cases import replay_cases_spark

    try:
        with open_session(engine, delta=False, shuffle_partitions=2,
                          app_name="rocketlens-replay") as spark:
            _print_in_order(allocation, replay_cases_spark(spark, [c for _, c in allocation]),
                            producer, replay_producer_cases_spark(spark, [c for _, c in producer]))
    except EngineError as exc:
        raise RocketlensError(str(exc)) from exc


def read_mixed_cases(path: str) -> tuple[list, list]:
    """(allocation cases, producer cases), each as (line position, case); a record with a
    ``selector`` field is a producer case (vectors/README.md)."""
    from jobs.replay.cases import parse_case
    from jobs.replay.producer_cases import is_producer_record, parse_producer_case

    allocation, producer = [], []
    with open(path, encoding="utf-8") as handle:
        for position, line in enumerate(line for line in handle if line.strip()):
            record = json.loads(line)
            if is_producer_record(record):
                producer.append((position, parse_producer_case(record)))
            else:
                allocation.append((position, parse_case(record)))
    return allocation, producer


def _print_in_order(allocation, allocation_outputs, producer, producer_outputs) -> None:
    """Print both kinds of output in the file's order (each engine answers its kind in a batch)."""
    ordered = sorted([(p, o) for (p, _), o in zip(allocation, allocation_outputs)]
                     + [(p, o) for (p, _), o in zip(producer, producer_outputs)], key=lambda po: po[0])
    _print_all(output for _, output in ordered)


def _print_all(outputs) -> None:
    for output in outputs:
        click.echo(json.dumps(output, ensure_ascii=False))
