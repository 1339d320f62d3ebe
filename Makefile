# Entry points. Every target runs scripts/setup.sh first, which installs what is missing
# (idempotent), so each works on a fresh Debian/Ubuntu machine.
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: setup build test app bench demo fmt

setup:
	@bash scripts/setup.sh $(SETUP_FLAGS)

# Builds the library, the CLI and every plugin cdylib (tests load the .so files).
build: setup
	$(CARGO) build --workspace

test: build
	$(CARGO) test --workspace --no-fail-fast

app: setup
	$(CARGO) build --release --workspace
	@echo "The desktop app is not built yet; the CLI is at target/release/ctxlab"
	./target/release/ctxlab --help

bench: setup
	$(CARGO) build --release --workspace
	$(CARGO) bench --bench ctxlab

fmt:
	$(CARGO) fmt --all
