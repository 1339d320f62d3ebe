#!/usr/bin/env bash
# End-to-end tests of the desktop app: Xvfb, tauri-driver (+ WebKitWebDriver) and the debug app
# with the UI embedded, driven by ui/e2e/*.test.mjs. Starts everything itself, on free ports, and
# stops what it started whatever happens. Usage: scripts/app-e2e.sh [path/to/ctxlab-app]
# (E2E_DIR: another folder of tests, e.g. ui/e2e-installed for the packaged app)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
app="${1:-$root/src-tauri/target/debug/ctxlab-app}"
[ -x "$app" ] || { echo "app-e2e: no app at $app (build it with: cd src-tauri && cargo test --features tauri/custom-protocol --no-run)" >&2; exit 1; }
real_logs="$(cd "$root/.." && pwd)/shared/real-logs"
[ -d "$real_logs" ] || { echo "app-e2e: missing $real_logs (../shared must sit beside the checkout)" >&2; exit 1; }
command -v tauri-driver >/dev/null || { echo "app-e2e: tauri-driver not found (scripts/setup.sh installs it)" >&2; exit 1; }
command -v WebKitWebDriver >/dev/null || { echo "app-e2e: WebKitWebDriver not found (apt-get install webkit2gtk-driver)" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

pids=()
work="$(mktemp -d)"
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  # The app's web processes can still be writing its data folder as they exit ("Directory not
  # empty" failed a passing run once): try again for a while; a leftover temporary folder is
  # reported, never a failure.
  for _ in $(seq 50); do rm -rf "$work" 2>/dev/null && return 0; sleep 0.1; done
  echo "app-e2e: could not remove $work" >&2
}
trap cleanup EXIT

# A display of our own: the first free number from 90 on.
display=90
while [ -e "/tmp/.X11-unix/X$display" ] || [ -e "/tmp/.X$display-lock" ]; do display=$((display + 1)); done
Xvfb ":$display" -screen 0 1600x1000x24 -nolisten tcp >"$work/xvfb.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -e "/tmp/.X11-unix/X$display" ] && break; sleep 0.1; done
export DISPLAY=":$display"

# The app's own world: no user logs, no user plugins, the workspace's plugin builds.
export HOME="$work/home" XDG_DATA_HOME="$work/home/.local/share" XDG_CONFIG_HOME="$work/home/.config" XDG_CACHE_HOME="$work/home/.cache"
mkdir -p "$HOME"
# The workspace's plugin builds, unless the caller says otherwise (the package test sets it empty
# so the installed app finds its own system folder).
export CTXLAB_PLUGIN_PATH="${CTXLAB_PLUGIN_PATH-$root/target/debug}"

port="$(free_port)"
native_port="$(free_port)"
tauri-driver --port "$port" --native-port "$native_port" --native-driver "$(command -v WebKitWebDriver)" >"$work/driver.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done

status=0
CTXLAB_APP="$app" WEBDRIVER_URL="http://127.0.0.1:$port" SHOTS="$root/target/e2e-shots" REAL_LOGS="$real_logs" \
  node --test --test-concurrency=1 --test-reporter=spec "${E2E_DIR:-$root/ui/e2e/}" || status=$?
if [ "$status" -ne 0 ]; then
  echo "--- tauri-driver log ---" >&2
  tail -50 "$work/driver.log" >&2 || true
fi
exit "$status"
