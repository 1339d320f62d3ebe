#!/usr/bin/env bash
# Installs what ctxlab needs on a fresh Debian/Ubuntu machine, only what is missing.
# Idempotent: a second run changes nothing. Needs root (or sudo) for apt-get.
set -euo pipefail

need_apt=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# A C compiler for the C plugin example and -sys crates.
for p in gcc make pkg-config; do have_pkg "$p" || need_apt+=("$p"); done

if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

command -v cargo >/dev/null || { echo "setup: cargo not found; install Rust with rustup first" >&2; exit 1; }
