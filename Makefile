# throwbox: the two commands a newcomer needs are `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install run test lint format typecheck pytest bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)  ## create .venv and install the project with its test tools

run: install  ## start the service with the demo table on http://127.0.0.1:8000 (dashboard at /)
	$(BIN)/throwbox serve --demo

test: install lint typecheck pytest  ## the whole gate: lint, format check, types, tests

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format:
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

typecheck:
	$(BIN)/mypy

pytest:
	$(BIN)/python -m pytest -q

# Benchmarks (not tests: these machines are shared and noisy; quote medians, compare ratios within one run).
# Each writes its figures as JSON under reports/bench/.
BENCH_OUT := reports/bench
bench: install  ## reader latency, generator throughput, settle detector, live loop, calibration accuracy
	mkdir -p $(BENCH_OUT)
	$(BIN)/throwbox bench --json > $(BENCH_OUT)/reader.json
	$(BIN)/throwbox synth-bench --scenes 120 > $(BENCH_OUT)/synth.txt
	$(BIN)/throwbox settle-bench --throws 20 --seed 0 --json > $(BENCH_OUT)/settle.json
	$(BIN)/throwbox live-bench --loops 2 --json > $(BENCH_OUT)/live.json
	$(BIN)/throwbox calibrate selftest --json > $(BENCH_OUT)/calibration.json
	@echo "benchmark reports in $(BENCH_OUT)/"

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .pytest_cache .ruff_cache
