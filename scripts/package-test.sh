#!/usr/bin/env bash
# Tests the Debian package as a user gets it: builds it (debug profile, reusing the test build),
# checks its control file and contents, unpacks it into a throwaway root (no dpkg database or
# system folder touched), runs the installed CLI there on a sample, and starts the installed
# app under Xvfb to its first frame. lintian must report no errors.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
fail() { echo "package-test: $*" >&2; exit 1; }

deb="$(bash "$root/scripts/package.sh" debug | tail -1)"
[ -f "$deb" ] || fail "no package built ($deb)"
echo "package-test: $deb"

# The control file declares what WebKitGTK needs at run time.
info="$(dpkg-deb -I "$deb")"
echo "$info" | sed -n '/Package:/,$p'
depends="$(dpkg-deb -f "$deb" Depends)"
for dep in libwebkit2gtk-4.1-0 libgtk-3-0; do
  [[ "$depends" == *"$dep"* ]] || fail "Depends lacks $dep: $depends"
done

# The app, its desktop entry and icon, the CLI and every built-in plugin.
names="$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./||')"
for f in usr/bin/ctxlab-app usr/bin/ctxlab usr/share/applications/ctxlab.desktop \
  usr/lib/ctxlab/plugins/libctxlab_plugin_fuseraft.so usr/lib/ctxlab/plugins/libctxlab_plugin_phi_core.so \
  usr/lib/ctxlab/plugins/libctxlab_plugin_fim_one.so usr/lib/ctxlab/plugins/libctxlab_plugin_librechat.so \
  usr/lib/ctxlab/plugins/libctxlab_plugin_codetether.so; do
  grep -qx "$f" <<<"$names" || fail "the package lacks $f"
done
grep -q '^usr/share/icons/.*\.png$' <<<"$names" || fail "the package has no icon"
if grep -q 'fixture' <<<"$names"; then fail "test fixtures were packaged"; fi
# The menu entry starts the app, not the command line.
desktop="$(dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/applications/ctxlab.desktop 2>/dev/null \
  || dpkg-deb --fsys-tarfile "$deb" | tar -xO usr/share/applications/ctxlab.desktop)"
grep -qx 'Exec=ctxlab-app' <<<"$desktop" || fail "the desktop entry does not start ctxlab-app: $desktop"

# lintian: errors fail the test (warnings are printed).
if lintian --version >/dev/null 2>&1; then
  lint="$(lintian --no-tag-display-limit "$deb" 2>&1 || true)"
  echo "$lint"
  if grep -q '^E:' <<<"$lint"; then fail "lintian reports errors"; fi
else
  fail "lintian is not installed (scripts/setup.sh installs it)"
fi

# Unpacked into a throwaway root, with a home of its own: the installed CLI finds the plugins of
# its own prefix (never the checkout's build folder, never CTXLAB_PLUGIN_PATH).
work="$(mktemp -d)"
# As in app-e2e.sh: the installed app's web processes may still be writing under it as they exit.
cleanup() {
  for _ in $(seq 50); do rm -rf "$work" 2>/dev/null && return 0; sleep 0.1; done
  echo "package-test: could not remove $work" >&2
}
trap cleanup EXIT
dpkg -x "$deb" "$work/root"
export HOME="$work/home" XDG_DATA_HOME="$work/home/.local/share" XDG_CONFIG_HOME="$work/home/.config"
mkdir -p "$HOME"
unset CTXLAB_PLUGIN_PATH
cli="$work/root/usr/bin/ctxlab"
"$cli" plugins list --json >"$work/plugins.json"
python3 - "$work/root/usr/lib/ctxlab/plugins" "$work/plugins.json" <<'EOF' || fail "installed plugins"
import json, sys
sysdir = sys.argv[1]
d = json.load(open(sys.argv[2]))
ids = {s["id"] for s in d["strategies"]}
for want in ["fuseraft.compaction", "phi-core.context", "librechat.agents"]:
    assert want in ids, f"{want} not found: {sorted(ids)}"
outside = [s["path"] for s in d["strategies"] if not s["path"].startswith(sysdir)]
assert not outside, f"strategies loaded from outside the package: {outside}"
assert not d["refused"], d["refused"]
assert any(s["origin"] == "system" and s["path"] == sysdir for s in d["searched"]), d["searched"]
print(f"package-test: {len(ids)} strategies from {sysdir}")
EOF
sample="$root/samples/claude-code"
"$cli" inspect "$sample" >"$work/inspect.txt" || fail "installed ctxlab inspect failed"
grep -q "calls" "$work/inspect.txt" || fail "inspect printed no calls: $(cat "$work/inspect.txt")"
echo "package-test: installed ctxlab inspect read $sample"

# The installed app, under Xvfb, to its first frame, with the packaged plugins.
CTXLAB_PLUGIN_PATH="" E2E_DIR="$root/ui/e2e-installed/" bash "$root/scripts/app-e2e.sh" "$work/root/usr/bin/ctxlab-app"
echo "package-test: ok"
