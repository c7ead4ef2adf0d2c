#!/usr/bin/env bash
# The Python module against gguf-py (llama.cpp's Python package, the release node-llama-cpp
# carries), side by side in one run: open the 4.7 GB fixture of `make bench` and read every
# metadata value, its type and every tensor record, RUNS times each; the median in-process
# time, the ratio, and the memory each added beyond the header (peak RSS - RSS before open
# - the header's bytes).
#
#   make bench-python      (or: bench/python.sh BUILD_DIR NPM_DIR [RUNS])
set -euo pipefail
build=${1:-build} npm=${2:-$HOME/.cache/ggufkit-interop} runs=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
dir=${BENCH_DIR:-/tmp/ggufkit-bench}
py=${PYTHON:-/usr/bin/python3}
mkdir -p "$dir"
model=$dir/qwen7b-q4km.gguf
[ -f "$dir/qwen7b.yaml" ] || "$here/qwen7b-sketch.sh" > "$dir/qwen7b.yaml"
[ -f "$model" ] || "$build/ggufkit" write "$dir/qwen7b.yaml" -o "$model"
# gguf-py from the llama.cpp release node-llama-cpp carries, checked out beside the fixture.
src=$dir/llama.cpp
if [ ! -d "$src/gguf-py" ]; then
  rm -rf "$src"
  git clone -q "$npm/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$src"
fi
header=$("$build/ggufkit" tensors --json "$model" | sed -n 's/^{"data_offset": \([0-9]*\).*/\1/p')
cat "$model" > /dev/null  # the page cache warm for both sides

side() {  # side NAME PYTHONPATH: one JSON line a run
  for ((i = 0; i < runs; i++)); do PYTHONPATH=$2 "$py" "$here/python_open.py" "$1" "$model"; done
}
k=$(side ggufkit "$build/python") g=$(side gguf-py "$src/gguf-py")
"$py" - "$header" <<PY
import json, statistics, sys
header = int(sys.argv[1])
def load(text): return [json.loads(l) for l in text.splitlines() if l.strip()]
k, g = load('''$k'''), load('''$g''')
def row(runs):
    ms = statistics.median(r["ms"] for r in runs)
    beyond = max(r["rss_peak_kib"] - r["rss_before_kib"] for r in runs) * 1024 - header
    return ms, beyond, runs[0]
km, kb, k0 = row(k)
gm, gb, g0 = row(g)
print(f"model {sys.argv[1]} header bytes; {k0['keys']} keys, {k0['items']} values, {k0['tensors']} tensors (gguf-py: {g0['keys']} fields)")
print(f"ggufkit.open + every value and tensor: median {km:9.1f} ms  ({min(r['ms'] for r in k)} to {max(r['ms'] for r in k)}), beyond the header {kb / 2**20:7.1f} MiB")
print(f"gguf-py GGUFReader + contents():      median {gm:9.1f} ms  ({min(r['ms'] for r in g)} to {max(r['ms'] for r in g)}), beyond the header {gb / 2**20:7.1f} MiB")
print(f"ratio ggufkit / gguf-py: {km / gm:.4f}x (target at most 0.02x); ggufkit beyond the header: {kb / 2**20:.1f} MiB (target at most 64)")
PY
