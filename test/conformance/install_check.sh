#!/bin/sh
# The SDK as users get it: install the build into a scratch folder, build
# examples/protocols out of tree with its Makefile (pkg-config --cflags
# --libs pami, nothing else), then run the installed pami-conformance
# over the plug-in (its cases pass) and its broken twin (the run fails).
#   install_check.sh BUILD_DIR SOURCE_DIR PAMIRUN
set -eu
build=$1 src=$2 pamirun=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build" --destdir "$tmp/root" --no-rebuild --quiet \
  >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; exit 1; }
pc=$(find "$tmp/root" -name pami.pc | head -n 1)
runner=$(find "$tmp/root" -name pami-conformance -type f | head -n 1)
[ -n "$pc" ] || { echo "FAIL: no pami.pc installed"; exit 1; }
[ -n "$runner" ] || { echo "FAIL: pami-conformance not installed"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
cp -r "$src/examples/protocols" "$tmp/example"
# The installed .pc names the final prefix: the sysroot maps it here.
PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR="$tmp/root" \
  make -s -C "$tmp/example" >"$tmp/make.log" 2>&1 || {
  cat "$tmp/make.log"; echo "FAIL: the example did not build out of tree"
  exit 1; }
echo "built with: $(PKG_CONFIG_PATH=$(dirname "$pc") \
  PKG_CONFIG_SYSROOT_DIR="$tmp/root" pkg-config --cflags --libs pami)"
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The installed runner, not the build's.
if ! ldd "$runner" | grep -q "$libdir/libpami"; then
  ldd "$runner"; echo "FAIL: the installed runner does not use the installed libpami"
  exit 1
fi
"$pamirun" -n 4 --timeout 200 "$runner" --timeout 60 --tap \
  --protocol "$tmp/example/libexample_protocol.so" \
  --filter 'protocols.example_protocol.*' --filter 'user.*' \
  >"$tmp/good.tap" 2>"$tmp/good.err" || {
  cat "$tmp/good.tap"; tail -20 "$tmp/good.err"
  echo "FAIL: the example plug-in did not pass"; exit 1; }
grep -c '^ok ' "$tmp/good.tap" | sed 's/^/good plug-in: passed /'
if "$pamirun" -n 4 --timeout 200 "$runner" --timeout 20 --tap \
     --protocol "$tmp/example/libexample_protocol_broken.so" \
     --filter 'user.*' >"$tmp/bad.tap" 2>/dev/null; then
  cat "$tmp/bad.tap"; echo "FAIL: the broken plug-in passed"; exit 1
fi
failed=$(grep '^not ok ' "$tmp/bad.tap" | sed 's/^not ok [0-9]* - //' | sort | tr '\n' ' ')
want="user.example_protocol_broken.add_every_peer user.example_protocol_broken.last_task_answers user.example_protocol_broken.malformed_dropped "
[ "$failed" = "$want" ] || { echo "FAIL: broken plug-in failed [$failed], expected [$want]"; exit 1; }
echo "OK: installed SDK builds the example out of tree; broken one fails [$failed]"
