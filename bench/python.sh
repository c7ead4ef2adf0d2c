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
load=$(cut -d' ' -f1 /proc/loadavg)

# Alternately, so that the machine's drifting load falls on both sides alike.
: > "$dir/python-ggufkit.jsonl"
: > "$dir/python-gguf-py.jsonl"
for ((i = 0; i < runs; i++)); do
  PYTHONPATH=$build/python "$py" "$here/python_open.py" ggufkit "$model" >> "$dir/python-ggufkit.jsonl"
  PYTHONPATH=$src/gguf-py "$py" "$here/python_open.py" gguf-py "$model" >> "$dir/python-gguf-py.jsonl"
done
"$py" "$here/python_report.py" "$header" "$here/RESULTS.md" "$dir/python-ggufkit.jsonl" "$dir/python-gguf-py.jsonl" "$load"
