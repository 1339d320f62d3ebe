# Entry points. Every target runs scripts/setup.sh first, which installs what is missing
# (idempotent), so each works on a fresh Debian/Ubuntu machine.
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: setup build test oracle-test codetether-differential app app-test package package-test plugins-install ui bench demo fmt

setup:
	@bash scripts/setup.sh $(SETUP_FLAGS)

# Builds the library, the CLI and every plugin cdylib (tests load the .so files).
build: setup
	$(CARGO) build --workspace

test: build
	$(CARGO) test --workspace --no-fail-fast
	$(MAKE) --no-print-directory oracle-test
	$(MAKE) --no-print-directory codetether-differential
	$(MAKE) --no-print-directory app-test
	$(MAKE) --no-print-directory package-test

# Differential tests against the modelled systems' own packages (tests/oracles/<system>/, each
# with its own package.json; scripts/setup.sh installs them). They drive the built CLI.
oracle-test: build
	cd tests/oracles/librechat && npm test

# The CodeTether plugin against codetether-agent 4.7.4's own code, call by call on real logs, and
# its export read by the crate's own config loader (plugins/codetether/harness: a package outside
# the workspace with its own target folder, so the workspace's build never compiles the ~600
# crates codetether-agent pulls; docs/strategies/codetether.md has its build time and size).
codetether-differential: build
	cd plugins/codetether/harness && $(CARGO) test -- --nocapture

# The desktop app (src-tauri has its own workspace and target folder). Debug build for the
# tests: its commands on Tauri's mock runtime, the UI logic with vitest, then end to end under
# Xvfb with tauri-driver + WebKitWebDriver (screenshots in target/e2e-shots/).
app-test: build ui
	cd src-tauri && $(CARGO) test --features tauri/custom-protocol --no-fail-fast
	cd ui && npm test
	bash scripts/app-e2e.sh

# The Debian package (release): the app, the `ctxlab` CLI and the built-in strategy plugins in
# /usr/lib/ctxlab/plugins. Prints the .deb's path (src-tauri/target/release/bundle/deb/).
package: ui
	bash scripts/package.sh release

# The package built (debug), checked (control file, contents, lintian), unpacked into a throwaway
# root, its CLI and app run from there.
package-test: ui
	bash scripts/package-test.sh

# The built-in strategy plugins, built in release and copied to the user's plugin folder (for a
# `cargo install`ed CLI, which finds plugins there).
plugins-install: setup
	$(CARGO) build --release --workspace
	mkdir -p "$${XDG_DATA_HOME:-$$HOME/.local/share}/ctxlab/plugins"
	cp target/release/libctxlab_plugin_*.so "$${XDG_DATA_HOME:-$$HOME/.local/share}/ctxlab/plugins/"

# The web UI, built into ui/dist (the app embeds it at compile time).
ui: setup
	cd ui && npm run build

# The desktop app in release with exact tokenizers, its plugins beside it, started with the
# samples open.
app: ui
	$(CARGO) build --release --workspace
	cd src-tauri && $(CARGO) build --release --features tauri/custom-protocol
	mkdir -p src-tauri/target/release/plugins
	cp target/release/libctxlab_plugin_*.so src-tauri/target/release/plugins/
	./src-tauri/target/release/ctxlab-app $(if $(wildcard samples/*),samples)

# The release app (UI embedded) is built too: benches/app_startup.rs times its start to a chart.
bench: setup ui
	$(CARGO) build --release --workspace
	cd src-tauri && $(CARGO) build --release --features tauri/custom-protocol
	CARGO="$(CARGO)" bash scripts/bench.sh

fmt:
	$(CARGO) fmt --all

# Every installed strategy compared on a sample session (Claude Code, 349 calls, two agents, one
# recorded compaction); writes the HTML report and the chart, then opens the report.
demo: build
	@mkdir -p target/demo
	./target/debug/ctxlab compare samples/claude-code/-home-maren-src-tidewater --all \
		--html target/demo/report.html --png target/demo/compare.png --open
