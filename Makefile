# The two commands that matter: `make demo` and `make test`. Both build .venv from requirements.lock on first use.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test soak fuzz console lint typecheck bench bench-synth lock clean

# Every module is compiled once, here: where the environment keeps Python from writing bytecode as it imports
# (PYTHONDONTWRITEBYTECODE), every command would compile them again (0.2 s of each start, measured on `sweep
# --help`). pip compiles what it installs one file after another; compileall on every core does the same work in
# about a third of the time (the build 31.5 s to 25 s on 2 cores). As with pip, a third-party file that does not
# compile is passed over. A module edited since is compiled afresh on import, as ever.
$(STAMP): requirements.lock pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --no-compile --require-hashes -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-compile --no-deps --no-build-isolation -e .
	$(BIN)/python -m compileall -qq -j 0 "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || true
	$(BIN)/python -m compileall -q bot diagnostics
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/fabricbot demo

console: $(STAMP)
	$(BIN)/fabricbot console

# The suite on one worker per core (pytest-xdist), each test module whole on one worker so its module fixtures are
# built once (measured faster than spreading single tests: the README's "The test suite"). TEST_WORKERS=0 runs it
# in this process. The type check (25 s of one core from a fresh clone) runs beside the suite, its report printed
# after it: either failing fails the target (`make lint` checks alone, first); an interrupted suite stops it too.
TEST_WORKERS ?= auto
test: $(STAMP)
	$(BIN)/ruff check bot diagnostics tests benchmarks
	@echo "$(BIN)/mypy (beside the suite)"; $(BIN)/mypy > $(VENV)/mypy.out 2>&1 & typing=$$!; \
	trap 'kill $$typing 2>/dev/null' INT TERM; \
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadscope; suite=$$?; \
	wait $$typing; typed=$$?; echo "$(BIN)/mypy:"; cat $(VENV)/mypy.out; \
	[ $$suite -eq 0 ] && [ $$typed -eq 0 ]

# The long variants: the two-writer test at 100 rounds of 50 filings per filer, the rack eval on more seeds.
soak: $(STAMP)
	FABRICBOT_SOAK=1 $(BIN)/python -m pytest tests/bot/test_two_writers.py tests/synth/test_rack_eval.py -q

# The long fuzz run: FUZZ_CASES mutants of the real and sample files (`make test` runs a bounded 2,200).
# Prints tracebacks, hangs, silent wrong numbers and silent row losses, by format; a failing input is kept in
# tests/fuzz/corpus/.
FUZZ_CASES ?= 10000
fuzz: $(STAMP)
	$(BIN)/python -m tests.fuzz.run --cases $(FUZZ_CASES)

lint: $(STAMP)
	$(BIN)/ruff check bot diagnostics tests benchmarks
	$(BIN)/mypy

bench: $(STAMP)
	@# the Prometheus benchmark at its full size (256 nodes x 24 h) backfills for about 20 minutes: run it by hand
	@for b in benchmarks/bench_*.py; do \
		case $$b in *bench_sweep.py) args="--nodes 32 --hours 6";; *) args="";; esac; \
		echo "== $$b $$args"; $(BIN)/python $$b $$args || exit 1; done

# The product's own workload: `fabricbot synth` fleets of 256 and 1,024 nodes x 24 h in a store. The first run builds
# the stores (about 30 minutes on 2 cores) under $FABRICBOT_BENCH_CACHE (default ~/.cache/fabricbot-bench) and
# later runs reuse them.
bench-synth: $(STAMP)
	$(BIN)/python benchmarks/bench_store_window.py --synth 256 1024
	$(BIN)/python benchmarks/bench_fleet.py --synth 256 1024

# Re-pin every dependency (runtime and test) with hashes after editing pyproject.toml.
lock:
	uv pip compile --python-version 3.11 --generate-hashes --extra test --extra build -o requirements.lock pyproject.toml

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
