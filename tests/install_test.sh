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
# The man page and the three shells' completions, where each looks for them.
test -f "$work/prefix/share/man/man1/ggufkit.1"
grep -q "^complete -o filenames -F _ggufkit ggufkit$" "$work/prefix/share/bash-completion/completions/ggufkit"
grep -q "^#compdef ggufkit$" "$work/prefix/share/zsh/site-functions/_ggufkit"
grep -q "^complete -c ggufkit " "$work/prefix/share/fish/vendor_completions.d/ggufkit.fish"
cmake -S "$source/examples" -B "$work/examples" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/examples" -j 2 >/dev/null
out=$("$work/examples/write_model" "$work/model.gguf")
echo "$out"
grep -q "wrote $work/model.gguf: 384 bytes, data at 256" <<<"$out"
grep -q "weights at byte 256: 1 2 3 4 5 6 7 8" <<<"$out"
"$work/prefix/bin/ggufkit" show "$work/model.gguf" | grep -q "alignment     64"

# The front door, from a program built against the installed package (issue 26's must-show).
corpus=$source/../shared/corpus
cp "$corpus/splits/tiny-llama.gguf" "$work/tiny.gguf"
chmod u+w "$work/tiny.gguf"
before=$(sha256sum <"$work/tiny.gguf")
set +e
out=$("$work/examples/edit_set" "$work/tiny.gguf" tokenizer.ggml.eos_token_id 99999)
rc=$?
set -e
echo "$out"
test "$rc" = 1
test "$out" = "refused: token_id"
test "$(sha256sum <"$work/tiny.gguf")" = "$before"
out=$("$work/examples/edit_set" "$work/tiny.gguf" tokenizer.ggml.eos_token_id 1)
echo "$out"
grep -q "^written: header; 1 change(s); set of 1 file(s)$" <<<"$out"
test "$("$work/prefix/bin/ggufkit" get "$work/tiny.gguf" tokenizer.ggml.eos_token_id)" = 1
test "$(stat -c %s "$work/tiny.gguf")" = 5180032
for k in 1 2 3; do
  cp "$corpus/splits/by-count-0000$k-of-00003.gguf" "$work/set-0000$k-of-00003.gguf"
  chmod u+w "$work/set-0000$k-of-00003.gguf"
done
two=$(sha256sum <"$work/set-00002-of-00003.gguf") three=$(sha256sum <"$work/set-00003-of-00003.gguf")
out=$("$work/examples/edit_set" "$work/set-00003-of-00003.gguf" general.name '"Renamed through the front door"')
echo "$out"
grep -q "^written: header; 1 change(s); set of 3 file(s)$" <<<"$out"
grep -q "set-00001-of-00003.gguf$" <<<"$out"
test "$("$work/prefix/bin/ggufkit" get "$work/set-00001-of-00003.gguf" general.name --shard-only)" = "Renamed through the front door"
test "$(sha256sum <"$work/set-00002-of-00003.gguf")" = "$two"
test "$(sha256sum <"$work/set-00003-of-00003.gguf")" = "$three"
# patch_template: the rule book refuses an end token past the vocabulary, as the command does.
set +e
"$work/examples/patch_template" "$work/tiny.gguf" "$source/examples/patches/chat.jinja" 99999 "$work/fixed.gguf" 2>"$work/err.txt"
rc=$?
set -e
test "$rc" = 1
grep -q "^patch_template: refused: \[token_id\]$" "$work/err.txt"
test ! -e "$work/fixed.gguf"
echo "installed package: find_package(ggufkit) builds and runs the examples; ggufkit::edit refuses, writes the header, edits a set"
