# Two entry points: `make test` and `make demo`. Both create .venv when it is absent.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The modules setup.py compiles with mypyc (src/sparkcdc/native.py lists them): an edit to one of
# them needs the install (the build) again, or sparkcdc runs them from source with a warning.
COMPILED_SOURCES := $(shell sed -n 's/^    "\(sparkcdc\.[a-z_.]*\)",$$/\1/p' src/sparkcdc/native.py | tr . / | sed 's|.*|src/&.py|')

.PHONY: test test-fast lint demo bench clean venv

venv: $(STAMP)

$(STAMP): pyproject.toml setup.py scripts/system-deps.sh src/sparkcdc/native.py $(COMPILED_SOURCES)
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "sparkcdc needs Python >= 3.11")'
	./scripts/system-deps.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	$(PY) scripts/precompile_pyspark_zip.py
	$(PY) -m sparkcdc.cli prepare
	touch $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/lint-imports --no-logo
	$(PY) scripts/import_cycles.py

# The suite runs in TEST_WORKERS pytest-xdist workers (TEST_WORKERS=0: one process), a test file each at
# a time (a file's tests share module fixtures and run in order; each worker has its own clusters,
# SparkSession and Debezium JVM). Files are taken longest first (tests/conftest.py's _MODULE_SECONDS),
# not by xdist's count of tests, so that no long file is left for the end. Most tests wait on servers,
# JVMs and subprocesses: one process keeps about one of the two cores busy (64 min from a fresh clone,
# 2026-11-29); see benchmarks/RESULTS.md, "test suite", for the two-worker figure.
TEST_WORKERS ?= 2
WORKER_ARGS := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)
test: lint
	$(PY) -m pytest $(WORKER_ARGS) $(PYTEST_ARGS)

# The inner loop: everything but the kill tests and the tests that run Debezium in a JVM.
test-fast: lint
	$(PY) -m pytest $(WORKER_ARGS) -m "not kill and not oracle" $(PYTEST_ARGS)

demo: $(STAMP)
	$(PY) -m sparkcdc.cli demo $(DEMO_ARGS)

# One benchmark at a time: each compares against its baseline in the same run and needs the cores to itself.
bench: $(STAMP)
	$(PY) benchmarks/decode.py
	$(PY) benchmarks/events.py
	$(PY) benchmarks/snapshot.py
	$(PY) benchmarks/stream.py
	$(PY) benchmarks/big_transaction.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache build src/*.egg-info src/sparkcdc/native_sources.txt
	find src -name '*.so' -delete
