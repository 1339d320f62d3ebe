#!/usr/bin/env bash
# `make bench`: runs every bench binary in benches/ (release build, each measurement on one
# thread) and writes docs/benchmarks.md from the Markdown fragment each one leaves in
# target/bench-results/. The corpus is generated under target/bench-corpus/ at bench time.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"

# ccusage, the peer of benches/load.rs, installed locally (nothing global). Pinned: 20.0.26, the
# newest at the time of writing, has no linux-x64 native package on npm, so its CLI cannot start.
ccusage_version=20.0.24
tools="$target/bench-tools"
if [ -z "${CCUSAGE:-}" ] && [ ! -x "$tools/node_modules/.bin/ccusage" ]; then
  if command -v npm >/dev/null; then
    npm install --prefix "$tools" --no-audit --no-fund --loglevel=error "ccusage@$ccusage_version" \
      || echo "bench: could not install ccusage; benches/load.rs runs without its peer" >&2
  else
    echo "bench: npm not found; benches/load.rs runs without ccusage" >&2
  fi
fi

# `scripts/bench.sh load tokens` reruns only those benches and keeps the others' last results.
status=0
if [ $# -eq 0 ]; then
  rm -rf "$target/bench-results"
  "${CARGO:-cargo}" bench --no-fail-fast --bench '*' || status=$?
else
  "${CARGO:-cargo}" bench --no-fail-fast $(printf -- '--bench %s ' "$@") || status=$?
fi

shopt -s nullglob
fragments=("$target"/bench-results/*.md)
if [ ${#fragments[@]} -eq 0 ]; then
  echo "bench: no bench wrote results to $target/bench-results" >&2
  exit 1
fi
{
  echo "# Benchmarks"
  echo
  echo "Written by \`make bench\` (scripts/bench.sh) on $(date -u +%Y-%m-%d) at commit" \
       "$(git rev-parse --short HEAD 2>/dev/null || echo unknown); regenerate rather than edit."
  echo "Each figure stands beside its peer measured in the same run on the same input. The"
  echo "benches are plain \`harness = false\` binaries, not criterion: they time single large runs"
  echo "(hundreds of MB) in child processes to read each one's peak memory, and run external peers"
  echo "(ccusage), which criterion's repeated sampling does not fit. Targets: DESIGN.md §9."
  echo "The machine is shared: figures taken while other builds run are low; compare the ratios."
  for f in "${fragments[@]}"; do
    echo
    cat "$f"
  done
} > docs/benchmarks.md
echo "wrote docs/benchmarks.md"
if [ "$status" -ne 0 ]; then
  echo "bench: a bench failed (status $status); docs/benchmarks.md holds the ones that finished" >&2
fi
exit "$status"
