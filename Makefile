# pathweave: the two commands are `make demo` (set up, run the headline simulation) and
# `make test` (set up, run every test). Everything installs into .venv and target/.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUST_SOURCES := $(shell find crates -name '*.rs' -o -name Cargo.toml) Cargo.toml pyproject.toml

.PHONY: setup demo test test-rust test-python lint bench bench-emulate slow docs fuzz fuzz-short clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Build the Rust extension in release mode and install the package with its test extras.
$(STAMP): $(BIN)/python $(RUST_SOURCES)
	$(BIN)/pip install --quiet 'maturin>=1.7,<2'
	$(BIN)/maturin develop --release --quiet -E test
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/pathweave compare scenarios/headline.toml --flow mp --algorithms uncoupled,lia,olia,balia --out results/demo

test: setup test-rust test-python

test-rust:
	cargo test --release --workspace --exclude pathweave-py

# PYTEST_ARGS narrows the run, e.g. PYTEST_ARGS='-m "not slow and not emulation"'.
PYTEST_ARGS ?=
test-python: setup
	$(BIN)/pytest $(PYTEST_ARGS)

lint: setup
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(BIN)/ruff check python tests bench
	$(BIN)/ruff format --check python tests bench
	$(BIN)/mypy

# Slow reproductions and cross-checks (deselected by default).
slow: setup
	$(BIN)/pytest -m slow

# The documentation site, with broken links as errors.
docs: setup
	$(BIN)/mkdocs build --strict --quiet

# The fuzz harness on the scenario reader and builder: 10^6 inputs (fuzz-short: 10^5, in CI).
FUZZ_RUNS ?= 1000000
fuzz:
	cargo run --release --quiet -p pathweave-fuzz -- --runs $(FUZZ_RUNS)

fuzz-short:
	$(MAKE) fuzz FUZZ_RUNS=100000

bench: setup
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/dumbbell.py
	$(BIN)/python bench/multipath.py

# Real-time capacity and lateness of the link emulator (root).
bench-emulate: setup
	$(BIN)/python bench/emulate.py

clean:
	rm -rf $(VENV) target results
