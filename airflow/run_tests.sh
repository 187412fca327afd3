#!/usr/bin/env bash
# The Airflow DAG tests against real Airflow 3, in their own venv: the Spark provider brings
# pyspark-client, which clashes with the project's pyspark, so the two never share a venv.
# The venv (.venv-airflow at the repo root) is kept between runs and rebuilt when the pins or
# constraints change; a fresh machine builds it. Extra arguments go to pytest.
#   airflow/run_tests.sh               run the tests
#   airflow/run_tests.sh --refreeze    rebuild the venv from the pins alone, rewrite constraints.txt
#   airflow/run_tests.sh --build-only  build the venv when needed, run nothing (`make test` starts
#                                      this in the background while the other passes run)
# Two at once (the background build and the tests) take turns on a lock: one builds, the other
# waits and then finds the venv built.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
PY="${PY:-$(command -v python3.11 || command -v python3)}"
VENV="${AIRFLOW_VENV:-$ROOT/.venv-airflow}"
PINS=(apache-airflow==3.3.2 apache-airflow-providers-apache-spark==6.3.4 pytest==9.2.0)
CONSTRAINTS="$HERE/constraints.txt"

refreeze=0 build_only=0
if [[ "${1:-}" == "--refreeze" ]]; then refreeze=1; shift; fi
if [[ "${1:-}" == "--build-only" ]]; then build_only=1; shift; fi

exec 9>"$VENV.lock"
flock 9

want="$(printf '%s\n' "${PINS[@]}"; [[ $refreeze == 1 ]] || cat "$CONSTRAINTS")"
if [[ $refreeze == 1 || ! -f "$VENV/.installed" || "$(cat "$VENV/.installed")" != "$want" ]]; then
  echo "airflow/run_tests.sh: building $VENV (${PINS[*]})" >&2
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  if [[ $refreeze == 1 ]]; then
    "$VENV/bin/pip" install --quiet "${PINS[@]}"
    { sed -n '1,2p' "$CONSTRAINTS"; "$VENV/bin/pip" freeze; } > "$CONSTRAINTS.new"
    mv "$CONSTRAINTS.new" "$CONSTRAINTS"
    want="$(printf '%s\n' "${PINS[@]}"; cat "$CONSTRAINTS")"
  else
    "$VENV/bin/pip" install --quiet -c "$CONSTRAINTS" "${PINS[@]}"
  fi
  printf '%s\n' "$want" > "$VENV/.installed"
fi
flock -u 9
if [[ $build_only == 1 ]]; then exit 0; fi

AIRFLOW_HOME="$(mktemp -d)"
export AIRFLOW_HOME
trap 'rm -rf "$AIRFLOW_HOME"' EXIT
cd "$HERE"
"$VENV/bin/python" -m pytest -c pytest.ini -q "$@"
