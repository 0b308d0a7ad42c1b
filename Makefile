# wardn — common tasks. `make run` starts the daemon with embedded defaults; `make test` is what CI runs.
CARGO ?= cargo
DATA_DIR ?= .data
# The fuzz targets are their own workspace (cargo fuzz wants that) but are checked in the root's
# target directory, against the dependencies clippy has just checked.
TARGET_DIR ?= $(or $(CARGO_TARGET_DIR),target)

.PHONY: run test bench bench-full e2e e2e-kind fmt fmt-check lint build kubesim

build:
	$(CARGO) build --workspace

run: build
	./scripts/run-local.sh $(DATA_DIR)

kubesim: build
	$(CARGO) run -p kubesim -- serve --clusters mgmt,staging,production --dir $(DATA_DIR)/kubesim

# Every test of the workspace (what `cargo test --workspace` runs), several test binaries at
# a time: most wait on the processes they start (scripts/run-tests.py says why and how). The
# build is `make lint`'s clippy step as well (`--clippy`: every target compiled through
# clippy's driver with -D warnings), so the dependencies are compiled once, not checked for
# clippy and then built for the tests; the fuzz targets compile (and replay their corpora) in
# tests/fuzz_corpus.rs.
test: fmt-check
	CARGO=$(CARGO) python3 scripts/run-tests.py --clippy

# Benchmarks print their figures. `make bench` runs the fleet benchmarks scaled down (100 Apps
# on 2 clusters, a 500-object App); `make bench-full` at full size (1,000 Apps on 10 clusters,
# a 5,000-object App), the figures in the README.
bench:
	WARDN_BENCH_QUICK=1 $(CARGO) bench --workspace

bench-full:
	WARDN_BENCH_QUICK=0 $(CARGO) bench --workspace

# End-to-end scenarios (e2e/scenarios) on kubesim; e2e-kind runs them unchanged on two kind
# clusters (needs docker and kind).
e2e: build
	./e2e/kubesim/run.sh

e2e-kind: build
	./e2e/kind/run.sh

fmt:
	$(CARGO) fmt --all

fmt-check:
	$(CARGO) fmt --all -- --check
	$(CARGO) fmt --manifest-path fuzz/Cargo.toml -- --check

# The quick check while working (type-checking only). The fuzz targets are a workspace of
# their own (cargo fuzz builds them with sanitizers); checking it here (without compiling
# libFuzzer's C++) checks its manifest too.
lint: fmt-check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) check --manifest-path fuzz/Cargo.toml --bins --no-default-features --target-dir $(TARGET_DIR)
