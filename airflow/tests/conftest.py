"""Airflow 3 in its own venv, no metadata DB: DAGs are parsed with the real DagBag, rendered with
the real Jinja environment and Variable accessor (Variables come from ``AIRFLOW_VAR_*``, the
environment secrets backend, which Airflow consults before the DB)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="rocketlens-airflow-"))
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(Path(__file__).resolve().parents[1] / "dags")

import pendulum  # noqa: E402
import pytest  # noqa: E402

DAGS = Path(__file__).resolve().parents[1] / "dags"


@pytest.fixture(scope="session")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS))


@pytest.fixture(scope="session")
def dag_module(dagbag):
    """The DAG file as a module (for its helpers), imported the way Airflow's DagBag does."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("rocketlens_nightly_dags",
                                                  DAGS / "rocketlens_nightly.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_context(dag, task, start: pendulum.DateTime, end: pendulum.DateTime) -> dict:
    """The template context of a scheduled run with data interval [start, end)."""
    from airflow.sdk.execution_time.context import VariableAccessor

    return {"dag": dag, "task": task, "data_interval_start": start, "data_interval_end": end,
            "logical_date": start, "run_id": f"scheduled__{end.isoformat()}",
            "var": {"value": VariableAccessor(deserialize_json=False),
                    "json": VariableAccessor(deserialize_json=True)}}
