# throwbox: the two commands a newcomer needs are `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install run test lint format typecheck pytest bench stress clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)  ## create .venv and install the project, the lab and the test tools

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
	$(BIN)/python -m pytest -q -n 2  # two workers (pytest-xdist): most of the suite waits on servers and subprocesses

# Benchmarks (not tests: these machines are shared and noisy; quote medians, compare ratios within one run).
# Each writes its figures as JSON under reports/bench/.
BENCH_OUT := reports/bench
bench: install  ## reader latency, generator throughput, settle detector, live loop, calibration accuracy
	mkdir -p $(BENCH_OUT)
	$(BIN)/throwbox lab bench --json > $(BENCH_OUT)/reader.json
	$(BIN)/throwbox lab synth-bench --scenes 120 > $(BENCH_OUT)/synth.txt
	$(BIN)/throwbox lab settle-bench --throws 20 --seed 0 --json > $(BENCH_OUT)/settle.json
	$(BIN)/throwbox lab live-bench --loops 2 --json > $(BENCH_OUT)/live.json
	$(BIN)/throwbox calibrate selftest --json > $(BENCH_OUT)/calibration.json
	@echo "benchmark reports in $(BENCH_OUT)/"

# The reader on the two real held-out photo sets under nine changes (`throwbox lab stress`); they live outside the
# repository (../shared/datasets/real), so a plain clone is told so and stops.
REAL := ../shared/datasets/real
STRESS_OUT := reports/reader/stress
stress: install  ## the reader on the real held-out photos, each read again under nine changes at three strengths
	@test -d $(REAL)/d6-topdown-nellbyler -a -d $(REAL)/d6-webcam-matteop65 || \
		{ echo "make stress needs the real photo sets in $(REAL) (not part of a clone)"; exit 2; }
	mkdir -p $(STRESS_OUT)
	$(BIN)/throwbox lab stress $(REAL)/d6-topdown-nellbyler --split test --out $(STRESS_OUT)/nellbyler-test.json \
		--plot $(STRESS_OUT)/nellbyler-test.png --sheet $(STRESS_OUT)/nellbyler-test-sheet.jpg
	$(BIN)/throwbox lab stress $(REAL)/d6-webcam-matteop65 --split valid --out $(STRESS_OUT)/matteop65-valid.json \
		--plot $(STRESS_OUT)/matteop65-valid.png --sheet $(STRESS_OUT)/matteop65-valid-sheet.jpg --sheet-image 57

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .pytest_cache .ruff_cache
