# wardn — common tasks. `make run` starts the daemon with embedded defaults; `make test` is what CI runs.
CARGO ?= cargo
DATA_DIR ?= .data

.PHONY: run test bench fmt lint build kubesim

build:
	$(CARGO) build --workspace

run: build
	./scripts/run-local.sh $(DATA_DIR)

kubesim: build
	$(CARGO) run -p kubesim -- serve --clusters mgmt,staging,production --dir $(DATA_DIR)/kubesim

test: lint
	$(CARGO) test --workspace

bench:
	$(CARGO) bench --workspace

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
