#!/usr/bin/env bash
# Installs what ctxlab needs on a fresh Debian/Ubuntu machine, only what is missing.
# Idempotent: a second run changes nothing. Needs root (or sudo) for apt-get.
set -euo pipefail

need_apt=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# A C compiler for the C plugin example and -sys crates.
for p in gcc make pkg-config; do have_pkg "$p" || need_apt+=("$p"); done
# The desktop app (Tauri 2 on WebKitGTK), and its end-to-end tests: a virtual display,
# WebKit's WebDriver, Node for the UI build and tests, python3 for the e2e script's free ports,
# lintian for the package test.
for p in libwebkit2gtk-4.1-dev libgtk-3-dev libsoup-3.0-dev librsvg2-dev libayatana-appindicator3-dev \
  libxdo-dev xvfb xauth webkit2gtk-driver python3 python3-pip lintian; do
  have_pkg "$p" || need_apt+=("$p")
done
{ command -v node >/dev/null && command -v npm >/dev/null; } || need_apt+=(nodejs npm)
# codetether-agent 4.7.4, built by `make codetether-differential` (plugins/codetether/harness):
# a C++ compiler for tokenizers (esaxx-rs), ALSA for cpal (alsa-sys), OpenSSL for reqwest's
# native-tls (openssl-sys), and protoc with the well-known .proto files for its build.rs
# (tonic-prost-build compiles proto/a2a/v1/a2a.proto, which imports
# google/protobuf/{empty,struct,timestamp}.proto from /usr/include).
for p in g++ libasound2-dev libssl-dev protobuf-compiler libprotobuf-dev; do
  have_pkg "$p" || need_apt+=("$p")
done

if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

command -v cargo >/dev/null || { echo "setup: cargo not found; install Rust with rustup first" >&2; exit 1; }

# python-dotenv (FIM One reads its .env with it; pyproject pins >=1.0): the fim-one plugin's
# tests parse its exported .env with the real loader. Into target/pydeps, not the system Python.
pydeps="$(cd "$(dirname "$0")/.." && pwd)/target/pydeps"
if ! PYTHONPATH="$pydeps" python3 -c "import importlib.metadata as m, sys; sys.exit(m.version('python-dotenv') != '1.2.2')" 2>/dev/null; then
  echo "setup: python-dotenv 1.2.2 into target/pydeps"
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    --target "$pydeps" python-dotenv==1.2.2
fi

# tauri-driver bridges WebDriver to WebKitWebDriver for the app's end-to-end tests.
command -v tauri-driver >/dev/null || {
  echo "setup: installing tauri-driver"
  cargo install tauri-driver --version ^2 --locked
}

# The npm packages of the UI and of the differential tests (tests/oracles/*: the modelled
# systems' own packages), installed again only when package-lock.json changed since the last
# install (a copy of the lock it installed is kept in node_modules).
root="$(cd "$(dirname "$0")/.." && pwd)"
for dir in "$root/ui" "$root"/tests/oracles/*/; do
  dir="${dir%/}"
  if [ -f "$dir/package-lock.json" ] && ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.installed-lock.json"; then
    echo "setup: npm ci in ${dir#$root/}/"
    (cd "$dir" && npm ci --no-audit --no-fund && cp package-lock.json node_modules/.installed-lock.json)
  fi
done
