# Two commands matter on a fresh machine: `make demo` and `make test`.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-sail test-spark venv clean bench

$(STAMP): pyproject.toml
	@command -v $(PY) >/dev/null 2>&1 || { echo "python3.11 not found: install Python 3.11 or run 'make PY=/path/to/python3.11'"; exit 1; }
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/rocketlens demo --lake demo-out/lake --out demo-out

# The suite runs twice: everything on Sail, then every transform on classic Spark local[2]
# (Delta tests deselected there: the Delta jars come from Maven Central, out of reach here).
test: $(STAMP) test-sail test-spark

test-sail: $(STAMP)
	ROCKETLENS_TEST_ENGINE=sail $(BIN)/pytest -q

test-spark: $(STAMP)
	ROCKETLENS_TEST_ENGINE=spark $(BIN)/pytest -q -m "not delta and not sail_only"

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) demo-out .pytest_cache
