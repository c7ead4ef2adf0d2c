#!/usr/bin/env bash
# Runs libFuzzer targets of a build tree, each for SECONDS from its seeds (made here from the
# examples, the corpus, tests/fuzz/seeds and tests/fuzz/regressions):
#   run.sh [--fresh] BUILD CORPUS SECONDS TARGET... [-- LIBFUZZER_FLAGS...]
# `make fuzz` runs every target long, keeping what it finds in BUILD/fuzz-corpus/TARGET;
# `make test` runs each briefly with --fresh (an empty corpus folder: the same start every
# time) and a fixed -seed. A crash, a sanitizer report or an input slower than -timeout
# stops it with the input saved as BUILD/crash-TARGET-*: copy it into tests/fuzz/regressions/
# (as TARGET-WHAT) once fixed, and the FuzzReplay tests keep it fixed.
set -euo pipefail
fresh=0
if [ "$1" = --fresh ]; then fresh=1; shift; fi
build=$(cd "$1" && pwd) corpus=$(cd "$2" && pwd) seconds=$3
shift 3
targets=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do targets+=("$1"); shift; done
[ $# -gt 0 ] && shift
src=$(cd "$(dirname "$0")/../.." && pwd)
cd "$src"
for t in "${targets[@]}"; do
  seeds=$build/fuzz-seeds/$t
  rm -rf "$seeds" && mkdir -p "$seeds"
  dirs=("$seeds")
  case $t in
    reader|roundtrip)
      for f in examples/sketch-408.yaml examples/broken/*.yaml; do
        "$build/ggufkit" write "$f" -o "$seeds/$(basename "$f" .yaml).gguf" --force >/dev/null
      done
      dirs+=("$corpus/vocab");;
    sketch) cp examples/*.yaml examples/broken/*.yaml "$seeds/";;
    patch) cp examples/patches/*.yaml "$seeds/";;
    template) dirs+=("$corpus/templates");;
    render)  # each corpus template with each test conversation, NUL between
      for tp in "$corpus"/templates/*.jinja; do for c in tests/template/conversations/*.json; do
        { cat "$tp"; printf '\0'; cat "$c"; } > "$seeds/$(basename "$tp" .jinja)-$(basename "$c" .json)"
      done; done
      dirs+=("$corpus/templates");;
    tokenize)  # each test text file on each vocabulary (first byte), add and parse specials (second)
      for f in "$corpus"/tokenizer/*.inp; do for v in 0 1 2 3 4 5 6 7; do
        { printf "\\$(printf %03o "$v")\\003"; cat "$f"; } > "$seeds/$v-$(basename "$f" .inp)"
      done; done;;
    vocab) cp tests/fuzz/seeds/vocab/* "$seeds/";;
  esac
  # Fixed findings are seeds too (regressions/TARGET-*; sketch-* are sketches, gguf-* the readers').
  for r in tests/fuzz/regressions/"$t"-*; do [ -f "$r" ] && cp "$r" "$seeds/"; done
  work=$build/fuzz-corpus/$t
  if [ $fresh = 1 ]; then rm -rf "$work"; fi
  mkdir -p "$work"
  echo "== fuzz_$t for ${seconds}s"
  "$build/fuzz_$t" "$work" "${dirs[@]}" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$build/crash-$t-" "$@"
done
