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
# With AUDIT_WORKERS=N the specs run on N local worker processes, family-affine (the specs
# of one mechanism family on one worker, so no program is compiled twice; results
# identical to a serial run, tests/runtime). Default: one worker per core on machines with
# 4 cores or more, otherwise serially in one process. Measured on 2 cores side by side,
# 12 specs (BENCHMARKS.md, "Family-affine local workers"): 2 workers now match the serial
# run cold or beat it (412 vs 428 s at load 17-39, before 627 s; 137 vs 232 s at load 10)
# but stay slower warm (87 vs 58 s; 34 vs 28 s: every worker imports the engine and
# prepares its specs again, the driver validates them too), and three processes with JAX
# peak above 2 GB (2.25 GB vs 1.53 GB).
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
