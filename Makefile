# pathweave: the two commands are `make demo` (set up, run the headline simulation) and
# `make test` (set up, run every test that does not run in real time, except the Python ones
# marked slow, which `make slow` runs). `make test-real` runs the real-time tests (emulation,
# the kernel's controllers over emulated links). Everything installs into .venv and target/.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUST_SOURCES := $(shell find crates -name '*.rs' -o -name Cargo.toml) Cargo.toml pyproject.toml

.PHONY: setup demo test test-rust test-python test-real test-real-again test-real-slow lint bench bench-emulate bench-kernel bench-quic slow docs fuzz fuzz-short clean kernel kernel-deps capture-deps

# crates/pathweave-kernel's BPF controllers need clang, bpftool, libbpf's headers, libelf,
# zlib and pkg-config at build time and the kernel's BTF. kernel-deps installs the Debian
# packages when they are missing and we are root; elsewhere the crate is built without its
# BPF part (--no-default-features) and its commands say why. Whether they build is decided by
# the Python package's build backend, which pip uses too (build_support/pathweave_build.py;
# PATHWEAVE_BPF=0 or 1 overrides it).
KERNEL_APT := clang bpftool libbpf-dev libelf-dev zlib1g-dev pkg-config
KERNEL_BPF_OK = $(PYTHON) build_support/pathweave_build.py --quiet
KERNEL_FEATURES = $$( { $(KERNEL_BPF_OK); } || echo --no-default-features )
# The extension (the emulator and `pathweave kernel`) carries the BPF controllers where they build.
EMU_FEATURES = $$( { $(KERNEL_BPF_OK); } && echo --features kernel )

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Build the Rust extension in release mode and install the package with its test extras
# (after kernel-deps, which decides whether the emulator gets the BPF controllers).
$(STAMP): $(BIN)/python $(RUST_SOURCES) $(shell find crates/pathweave-kernel/src/bpf -type f) | kernel-deps
	$(BIN)/pip install --quiet 'maturin>=1.7,<2'
	$(BIN)/maturin develop --release --quiet -E test $(EMU_FEATURES)
	touch $(STAMP)

setup: $(STAMP) kernel capture-deps

# tshark checks the packet captures as Wireshark reads them (tests/test_capture.py, which skips
# those checks without it); installed from Debian's packages when missing and we are root.
capture-deps:
	@if ! command -v tshark >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing tshark for the capture tests"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tshark; } >/dev/null 2>&1 \
	      || echo "note: tshark could not be installed; the capture tests that need it skip"; \
	  else \
	    echo "note: tshark is missing (root and apt-get install it); the capture tests that need it skip"; \
	  fi; \
	fi

kernel-deps:
	@if ! { $(KERNEL_BPF_OK); }; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing the BPF toolchain: $(KERNEL_APT)"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(KERNEL_APT); } >/dev/null 2>&1 \
	      || echo "note: the BPF toolchain could not be installed; pathweave-kernel is built without its BPF programs"; \
	  else \
	    echo "note: the BPF toolchain is missing (root and apt-get install it); pathweave-kernel is built without its BPF programs"; \
	  fi; \
	fi

# The pathweave-kernel binary (`pathweave kernel ...`), with its BPF programs where they build.
kernel: kernel-deps
	cargo build --release -p pathweave-kernel $(KERNEL_FEATURES)

demo: setup
	$(BIN)/pathweave compare scenarios/headline.toml --flow mp --algorithms uncoupled,lia,olia,balia --out results/demo

# Everything that does not run in real time; it ends by naming the command for the rest.
test: setup test-rust test-python
	@echo "make test: passed. The real-time tests (emulation over kernel TCP/MPTCP and the kernel's"
	@echo "controllers over emulated links; root, /dev/net/tun, MPTCP, BTF; 17-23 minutes): make test-real"

# The kernel tests that need root, BTF and MPTCP run where they can and print why elsewhere;
# the emulator's tests run again with the BPF controllers, whose refusal tests skip without.
# Built with the test-opt profile (Cargo.toml): optimised as for release, without the fat LTO
# that cost every test binary the whole crate graph (5.4 min against 1.9 to build from clean).
TEST_PROFILE := --profile test-opt
test-rust: kernel-deps
	cargo test $(TEST_PROFILE) --workspace --exclude pathweave-py --exclude pathweave-kernel
	cargo test $(TEST_PROFILE) -p pathweave-kernel $(KERNEL_FEATURES)
	cargo test $(TEST_PROFILE) -p pathweave-emu $(EMU_FEATURES)

# The Python tests that do not run in real time, spread over PYTEST_JOBS processes (a test file
# stays in one of them); PYTEST_ARGS narrows the run (e.g. PYTEST_ARGS='-k sweep'), and a run
# that selects nothing is not a failure.
PYTEST_ARGS ?=
PYTEST_JOBS ?= 2
PYTEST := $(BIN)/pytest --durations=15 -rs
NOTHING_SELECTED_OK := rc=$$?; [ $$rc = 0 ] || [ $$rc = 5 ]
test-python: setup
	$(PYTEST) -n $(PYTEST_JOBS) --dist loadfile -m "not slow and not emulation" $(PYTEST_ARGS); $(NOTHING_SELECTED_OK)

# The real-time tests (marked `emulation`), alone so that nothing competes for the CPUs while
# they measure. Each that needs what the machine lacks (root, /dev/net/tun, MPTCP, BTF, the BPF
# build) skips with the reason; a run late in all its tries skips as a measurement of a busy
# machine. The session ends with each lateness skip and the line `real-time checks: N passed,
# M skipped for lateness`, also written to target/realtime-summary.json.
# REALTIME_MAX_LATE=0.25 fails the run when more than that share was skipped for lateness
# while the host left the CPU alone (tests/conftest.py, QUIET_HOST).
REALTIME_MAX_LATE ?=
test-real: setup
	PATHWEAVE_REALTIME_SUMMARY=target/realtime-summary.json \
	PATHWEAVE_REALTIME_MAX_LATE=$(REALTIME_MAX_LATE) \
	$(PYTEST) -m "emulation and not slow" $(PYTEST_ARGS); $(NOTHING_SELECTED_OK)

# The real-time checks the last `make test-real` skipped for lateness, run again and judged with
# that run's other outcomes (REALTIME_MAX_LATE applies to the two as one): for a host that took
# the CPU for a spell.
test-real-again: setup
	PATHWEAVE_REALTIME_AGAIN=target/realtime-summary.json \
	PATHWEAVE_REALTIME_SUMMARY=target/realtime-again-summary.json \
	PATHWEAVE_REALTIME_MAX_LATE=$(REALTIME_MAX_LATE) \
	$(PYTEST) -m "emulation and not slow" $(PYTEST_ARGS); $(NOTHING_SELECTED_OK)

# Clippy on the release profile reuses the build scripts and procedural macros setup built.
CLIPPY := cargo clippy --release
lint: setup
	cargo fmt --all -- --check
	$(CLIPPY) --workspace --exclude pathweave-kernel --all-targets -- -D warnings
	$(CLIPPY) -p pathweave-emu --all-targets $(EMU_FEATURES) -- -D warnings
	$(CLIPPY) -p pathweave-kernel --all-targets $(KERNEL_FEATURES) -- -D warnings
	$(CLIPPY) -p pathweave-kernel --all-targets --no-default-features -- -D warnings
	$(BIN)/ruff check python tests bench build_support
	$(BIN)/ruff format --check python tests bench build_support
	$(BIN)/mypy

# Slow reproductions and cross-checks (deselected by default); the slow real-time checks
# have a target of their own.
slow: setup
	$(BIN)/pytest --durations=10 -m "slow and not emulation"

# The real-time checks too long for every run (root): every algorithm of the multipath QUIC
# checks and their agreement with the simulator (about 6 minutes).
test-real-slow: setup
	PATHWEAVE_REALTIME_SUMMARY=target/realtime-slow-summary.json \
	PATHWEAVE_REALTIME_MAX_LATE=$(REALTIME_MAX_LATE) \
	$(PYTEST) -m "emulation and slow" $(PYTEST_ARGS); $(NOTHING_SELECTED_OK)

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
	$(BIN)/python bench/series_memory.py
	$(BIN)/python bench/capture.py
	$(BIN)/python bench/datacenter.py

# Real-time capacity and lateness of the link emulator (root).
bench-emulate: setup
	$(BIN)/python bench/emulate.py
	$(BIN)/python bench/emulate.py --trace --rates 12 120 602 1203

# CPU cost per ACK of the BPF controllers (root, BTF, the BPF build).
bench-kernel: setup
	$(BIN)/python bench/kernel.py

# Goodput and CPU time per packet of two-path multipath QUIC beside kernel MPTCP, over shaped
# veth pairs and through the emulator (root, MPTCP; BENCH_QUIC_RUNS runs per case, default 3).
bench-quic: setup
	$(BIN)/python bench/quic.py

clean:
	rm -rf $(VENV) target results
