# dpaudit developer commands. `make test` and `make audit` work on a fresh machine:
# they create .venv and install the project with its dev, libraries and training extras when needed (the library
# and training audits run in CI). The training extra (torch 2.13.0 CPU, Opacus, jax-privacy) took 95 s on top
# with torch's CPU wheel on local disk (BENCHMARKS.md); EXTRAS=dev,libraries leaves it out.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXTRAS ?= dev,libraries,training

.PHONY: test test-slow test-notebooks notebooks audit lint format bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

# The default suite runs on TEST_WORKERS pytest-xdist processes, one test file per process at
# a time (--dist loadfile keeps a file's compiled programs in one process), the heaviest files
# first (tests/conftest.py, HEAVY_FILES; --no-loadscope-reorder keeps that order instead of
# xdist's most-tests-first); TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= 2
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest --durations=30 $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow

test-notebooks: $(STAMP)
	$(BIN)/python -m pytest tests/test_notebooks.py -m notebooks -p no:cacheprovider

notebooks: $(STAMP)
	$(BIN)/python notebooks/execute.py

# compiled XLA programs are kept in .cache/jax: a second run skips most compilation.
# With AUDIT_WORKERS=N the specs run on N local processes, this one and N-1 workers,
# family-affine (the specs of one mechanism family in one process, so no program is compiled
# twice; each spec read first and prepared once, by the process that audits it; results
# identical to a serial run, tests/runtime). Default: one process per core on machines with
# 4 cores or more, otherwise serially in one process. Measured on 2 cores side by side,
# 15 specs at load 14-36 (BENCHMARKS.md, "The caller audits a share"): warm, 2 processes use
# the serial run's CPU (the s12 pool +26 %) and 0.78-0.97x its wall, largest process 1.05 GB
# (serial 1.4 GB); cold they do not win (1.0-1.17x the wall: a second JAX import and the
# programs shared across families compiled twice), so 2 cores stay serial.
AUDIT_WORKERS ?= $(shell n=$$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1); [ "$$n" -ge 4 ] && echo $$n)
audit: $(STAMP)
	$(BIN)/dpaudit audit audits/ --report reports/ --cache-dir .cache/jax $(if $(AUDIT_WORKERS),--workers $(AUDIT_WORKERS))

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP)
	$(BIN)/python benchmarks/sampling_time.py
	$(BIN)/python benchmarks/loss_throughput.py
	$(BIN)/python benchmarks/iclp_accounting.py
	$(BIN)/python benchmarks/blackbox_faulty.py
	$(BIN)/python benchmarks/blackbox_tightness.py --seed 7

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis reports .cache
