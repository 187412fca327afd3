# Two commands matter on a fresh machine: `make demo` and `make test`. The first run of either
# creates .venv and installs the package with its test extra (pyspark, pysail, delta-spark, pytest,
# ruff, mypy); `make test` also installs chromium (as root) and the Airflow venv (.venv-airflow).
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint chromium test-sail test-spark test-acceptance test-airflow venv clean bench dist realcluster

$(STAMP): pyproject.toml
	@command -v $(PY) >/dev/null 2>&1 || { echo "python3.11 not found: install Python 3.11 or run 'make PY=/path/to/python3.11'"; exit 1; }
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/rocketlens demo --lake demo-out/lake --out demo-out

# `make test`: lint, the whole suite on Sail, the classic parity tier (every test that exercises
# the engine, on classic Spark local[2] + Delta: transforms, detectors, the hand day, the mixed days,
# the in-process lake writes; the others — pure Python, and the CLI, which runs Sail unless given
# --engine — are deselected there, tests/conftest.py), then the Airflow DAG tests in their own venv
# with real Airflow 3 (airflow/run_tests.sh). `make test-acceptance` is the heavier classic tier:
# the single-scenario simulated days (heavy_day), the CLI runs on classic Spark + Delta (classic_cli:
# the hand day, a rerun, a kill and rerun, concurrent days; and the gold engine-parity test) and the real
# spark-submit (spark_only). `.ci/run` runs both; every test runs in one of them. The classic session
# fetches Delta's jars from Maven Central once (~/.ivy2.5.2/jars).
# JUNIT_DIR=dir writes each pass's JUnit XML report there (the slowest tests: --durations).
# The Airflow venv (mostly downloads) is built in the background meanwhile; its log is
# build/airflow-venv.log, and test-airflow waits for it (a lock in airflow/run_tests.sh).
test:
	@mkdir -p build && { PY=$(PY) bash airflow/run_tests.sh --build-only > build/airflow-venv.log 2>&1 & }
	$(MAKE) --no-print-directory venv lint chromium test-sail test-spark test-airflow

# ruff and mypy, configured in pyproject.toml ([tool.ruff], [tool.mypy]).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

# tests/test_report.py renders the HTML report in headless Chromium (Debian's package).
chromium:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium (apt-get) for tests/test_report.py"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
	  echo "chromium not found: install it (Debian/Ubuntu: sudo apt-get install chromium) and rerun make test"; \
	  exit 1; \
	fi

# Two pytest workers (pytest-xdist), a test file each at a time: one process alone keeps about
# one core busy (small frames: the engines wait on the driver), two keep both. What several files
# read (simulated days, lakes) is built once per run and shared by the workers (shared_dir in
# tests/conftest.py). TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist loadfile
JUNIT_DIR ?=
PYTEST = $(BIN)/pytest -q $(XDIST) --durations=30 $(if $(JUNIT_DIR),--junitxml=$(JUNIT_DIR)/$@.xml)

test-sail: $(STAMP)
	ROCKETLENS_TEST_ENGINE=sail $(PYTEST) -m "not spark_only"

test-spark: $(STAMP)
	ROCKETLENS_TEST_ENGINE=spark $(PYTEST) -m "not heavy_day and not spark_only and not classic_cli"

test-acceptance: $(STAMP)
	ROCKETLENS_TEST_ENGINE=spark $(PYTEST) -m "heavy_day or spark_only or classic_cli"

# RocketMQ itself in the loop (issue 57; tests/data/real-cluster/README.md): builds realcluster/ and the
# product's collector/ with Maven (RocketMQ 4.9.7 from Maven Central into ~/.m2), starts a name server, broker-a
# and broker-b (master + slave) in a network namespace of its own when run as root, runs the seed cases with real
# clients, collects the day with `rocketlens collect`'s collector, runs `rocketlens run` on it and prints one line
# per case; everything it started is stopped. Needs Java 17 and Maven; 7.5-8.7 minutes on 2 cores (measured
# under other load). Scratch in /tmp/rocketlens-realcluster (RC_ROOT), never here.
realcluster: $(STAMP)
	@command -v java >/dev/null 2>&1 || { echo "realcluster: java not found: install a JDK 17"; exit 1; }
	@command -v mvn >/dev/null 2>&1 || { echo "realcluster: mvn not found: install Maven 3 (apt-get install maven)"; exit 1; }
	$(BIN)/python -m tests.realcluster

test-airflow: $(STAMP)  # the DAG-run tests start the project venv's CLI and Sail server
	PY=$(PY) bash airflow/run_tests.sh

# Production artefacts under dist/ (see docs/operations.md, spark-submit): the wheel, a packed
# venv for `spark-submit --archives dist/rocketlens-venv.tar.gz#environment` (without pyspark, py4j
# and pysail: the cluster's Spark puts its own pyspark and py4j first on PYTHONPATH, and executors
# never start Sail), the entry script and conf/. Files are made world-readable before packing
# (a umask of 077 would otherwise give 0600 files that a YARN container user cannot read).
# The packed venv links to the interpreter it was built with ($(PY)); nodes need Python
# 3.11 at that path, or pass VENV_PACK_ARGS="--python-prefix /their/prefix".
DIST_VENV := build/dist-venv
VENV_PACK_ARGS ?=
dist: $(STAMP)
	rm -rf dist $(DIST_VENV)
	$(BIN)/pip wheel --quiet --no-deps --wheel-dir dist .
	$(PY) -m venv $(DIST_VENV)
	$(DIST_VENV)/bin/pip install --quiet dist/rocketlens-*.whl
	$(DIST_VENV)/bin/pip uninstall --quiet --yes pyspark py4j pysail
	chmod -R u+rwX,go+rX-w $(DIST_VENV)
	$(BIN)/pip install --quiet venv-pack==0.2.0
	$(BIN)/venv-pack --quiet --prefix $(DIST_VENV) --output dist/rocketlens-venv.tar.gz $(VENV_PACK_ARGS)
	cp jobs/entrypoint.py dist/entrypoint.py
	cp -r conf dist/conf
	chmod -R u+rwX,go+rX-w dist
	@ls -l dist
	@echo "executors need Python $$($(DIST_VENV)/bin/python -c 'import sys; print(sys.version.split()[0])') at $$(readlink -f $(DIST_VENV)/bin/python) (or build with VENV_PACK_ARGS=\"--python-prefix /their/prefix\"); see docs/operations.md"

# Never part of `make test`: simulates S and M days once (cached outside the repo, ~9 GB) and
# runs the nightly pipeline per engine; figures in benchmarks/RESULTS.md (docs/performance.md). E.g.
# make bench BENCH_ARGS="--scales S --engines sail"
BENCH_ARGS ?=
bench: $(STAMP)
	$(BIN)/python -m benchmarks $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .venv-airflow demo-out .pytest_cache build dist
