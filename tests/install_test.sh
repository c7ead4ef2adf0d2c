#!/usr/bin/env bash
# Installs the built tree into a fresh prefix and builds examples/ against it with
# find_package(ggufkit), as a library user would; then runs what it built.
set -euo pipefail
build=$1 source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -x "$work/prefix/bin/ggufkit"
test -f "$work/prefix/include/ggufkit/scan.h"
test -f "$work/prefix/include/ggufkit/patch.h"
test -f "$work/prefix/lib/cmake/ggufkit/ggufkitConfig.cmake"
cmake -S "$source/examples" -B "$work/examples" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/examples" -j 2 >/dev/null
out=$("$work/examples/write_model" "$work/model.gguf")
echo "$out"
grep -q "wrote $work/model.gguf: 384 bytes, data at 256" <<<"$out"
grep -q "weights at byte 256: 1 2 3 4 5 6 7 8" <<<"$out"
"$work/prefix/bin/ggufkit" show "$work/model.gguf" | grep -q "alignment     64"
echo "installed package: find_package(ggufkit) builds and runs the examples"
