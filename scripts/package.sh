#!/usr/bin/env bash
# Builds the Debian package: the desktop app (Tauri's bundler, which writes the .desktop entry,
# the icon and the control file), the `ctxlab` CLI in /usr/bin, and the built-in strategy plugins
# in /usr/lib/ctxlab/plugins, the system folder the plugin host searches after the user's own.
# Usage: scripts/package.sh [release|debug]   (prints the .deb's path on its last line)
# `make package` builds release; the package test builds debug to reuse the test build.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
profile="${1:-release}"
case "$profile" in
  release) cargo_flag=(--release); tauri_flag=() ;;
  debug) cargo_flag=(); tauri_flag=(--debug) ;;
  *) echo "package: profile must be release or debug, not $profile" >&2; exit 2 ;;
esac
CARGO="${CARGO:-cargo}"

# The CLI and the plugin cdylibs (the app links the library itself).
(cd "$root" && $CARGO build "${cargo_flag[@]}" --workspace)

# The five modelled systems and the example strategy ship; test fixtures never do.
plugins=(fuseraft phi_core fim_one librechat codetether example)
config="$(mktemp --suffix=.json)"
trap 'rm -f "$config"' EXIT
{
  echo '{"bundle": {"linux": {"deb": {"files": {'
  echo "  \"/usr/bin/ctxlab\": \"$root/target/$profile/ctxlab\""
  for p in "${plugins[@]}"; do
    lib="$root/target/$profile/libctxlab_plugin_$p.so"
    [ -f "$lib" ] || { echo "package: $lib was not built" >&2; exit 1; }
    echo "  ,\"/usr/lib/ctxlab/plugins/libctxlab_plugin_$p.so\": \"$lib\""
  done
  echo '}}}}}'
} >"$config"

# Tauri's CLI comes from the UI's npm dev dependencies (@tauri-apps/cli, a prebuilt binary).
(cd "$root/src-tauri" && "$root/ui/node_modules/.bin/tauri" build "${tauri_flag[@]}" --bundles deb \
  --config "$config" --ci) >&2
deb="$(ls -t "$root/src-tauri/target/$profile/bundle/deb/"*.deb | head -1)"

# Finished as Debian policy asks (lintian reports no errors): binaries stripped (release builds
# keep debug info for profiling), the copyright file and changelog, a maintainer contact, the C
# library among the dependencies, and an override for what lintian cannot know of Rust crates.
stage="$(mktemp -d)"
trap 'rm -f "$config"; rm -rf "$stage"' EXIT
dpkg-deb -R "$deb" "$stage/pkg"
find "$stage/pkg/usr/bin" "$stage/pkg/usr/lib/ctxlab/plugins" -type f -exec \
  strip --strip-unneeded --remove-section=.comment --remove-section=.note {} +
doc="$stage/pkg/usr/share/doc/ctxlab"
overrides="$stage/pkg/usr/share/lintian/overrides"
mkdir -p "$doc" "$overrides"
version="$(sed -n 's/^Version: //p' "$stage/pkg/DEBIAN/control")"
when="$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)"
cat >"$doc/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: ctxlab
Source: the ctxlab repository

Files: *
Copyright: the ctxlab authors
License: MIT or Apache-2.0
 ctxlab is dual-licensed under the MIT licence and the Apache License 2.0, at your option.
 On Debian systems the Apache License 2.0 is in /usr/share/common-licenses/Apache-2.0.
 The binaries statically link Rust crates under their own permissive licences
 (MIT, Apache-2.0, BSD, ISC, Zlib, Unicode-3.0); their notices are in each crate's source.
COPYRIGHT
{
  printf 'ctxlab (%s) unstable; urgency=medium\n\n' "$version"
  printf '  * Package built from the ctxlab repository.\n\n'
  printf ' -- ctxlab maintainers <maintainers@ctxlab.invalid>  %s\n' "$(date -R -d "@$when")"
} | gzip -9n >"$doc/changelog.gz"
cat >"$overrides/ctxlab" <<OVERRIDES
# unsafe-libyaml, a Rust translation of libyaml used through serde_yaml_ng to read and write the
# YAML config files of the modelled systems: Rust crates are linked statically by design.
ctxlab: embedded-library libyaml *
OVERRIDES
chmod 0644 "$doc/copyright" "$doc/changelog.gz" "$overrides/ctxlab"
sed -i -e 's/^Maintainer: .*/Maintainer: ctxlab maintainers <maintainers@ctxlab.invalid>/' \
  -e 's/^Depends: \(.*\)/Depends: libc6, libgcc-s1, \1/' "$stage/pkg/DEBIAN/control"
sed -i "s/^Installed-Size: .*/Installed-Size: $(du -sk --exclude=DEBIAN "$stage/pkg" | cut -f1)/" \
  "$stage/pkg/DEBIAN/control"
(cd "$stage/pkg" && find usr -type f -print0 | sort -z | xargs -0 md5sum >DEBIAN/md5sums)
dpkg-deb --root-owner-group -Zxz --build "$stage/pkg" "$deb" >&2
echo "$deb"
