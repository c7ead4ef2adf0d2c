#!/usr/bin/env bash
# The jobs that read or edit only a header, each against ggml's own header read of the same
# file (gguf_init_from_file, no_alloc: bench/ggml_header.c on node-llama-cpp's libggml-base),
# as whole processes, side by side: every round runs each command once, in turn, so a drift
# of the machine's speed falls on all of them alike; the medians and their ratios to ggml's
# are reported, with each job's peak RSS beside the header's size.
#
# Two models, both written by the sketch writer: the Qwen2.5-7B-shaped 4.7 GB file of make
# bench (152,064 tokens, BPE) and a Gemma-3-1B-shaped one (262,144 tokens, SentencePiece).
# For each: show, validate (its template checked at the token level), an end-token id edited
# in place (journal and flushes included) on a copy, and a chat template edited in place in
# shard 1 of the model split with --max-size 2G --metadata-only-first (against ggml's read
# of that shard). The edits alternate between two values, so that every run writes.
#
#   bench/header_jobs.sh BUILD_DIR NPM_DIR [ROUNDS]     (make bench-header)
# Writes the "Header jobs" section of bench/RESULTS.md (and prints it).
set -euo pipefail
[ -n "${EPOCHREALTIME:-}" ] || { echo "bench/header_jobs.sh needs bash 5 (EPOCHREALTIME)" >&2; exit 1; }
build=${1:-build} npm=${2:-$HOME/.cache/ggufkit-interop} rounds=${3:-21}
here=$(cd "$(dirname "$0")" && pwd)
dir=${BENCH_DIR:-/tmp/ggufkit-bench}
bin=$build/ggufkit ggml=$build/bench/ggml_header
lib=$npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so
[ -x "$ggml" ] || { echo "bench/header_jobs.sh: build the ggml_header target first" >&2; exit 1; }
[ -f "$lib" ] || { echo "bench/header_jobs.sh: no $lib (make interop-deps)" >&2; exit 1; }
mkdir -p "$dir"

# model NAME SKETCH: writes the model from its sketch unless it is there, a copy to edit in
# place, and the split set.
prepare() {
  local name=$1 sketch=$2
  [ -f "$dir/$name.yaml" ] || "$here/$sketch" > "$dir/$name.yaml"
  [ -f "$dir/$name.gguf" ] || "$bin" write "$dir/$name.yaml" -o "$dir/$name.gguf" > /dev/null 2>&1
  [ -f "$dir/$name-inplace.gguf" ] || cp --reflink=auto "$dir/$name.gguf" "$dir/$name-inplace.gguf"
  if ! ls "$dir/hset-$name"/*-00001-of-*.gguf > /dev/null 2>&1; then
    rm -rf "$dir/hset-$name" && mkdir -p "$dir/hset-$name"
    "$bin" split "$dir/$name.gguf" -o "$dir/hset-$name/$name" --max-size 2G --metadata-only-first > /dev/null
  fi
}
[ -f "$dir/qwen7b-q4km.gguf" ] && [ ! -e "$dir/qwen.gguf" ] && ln -s qwen7b-q4km.gguf "$dir/qwen.gguf"
[ -f "$dir/qwen7b.yaml" ] && [ ! -e "$dir/qwen.yaml" ] && ln -s qwen7b.yaml "$dir/qwen.yaml"
prepare qwen qwen7b-sketch.sh
prepare gemma3 gemma3-sketch.sh
printf '{%% for m in messages %%}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%% endfor %%}' > "$dir/hj-a.jinja"
printf '{%% for m in messages %%}<start_of_turn>{{ m.role }}\n{{ m.content }}<end_of_turn>\n{%% endfor %%}' > "$dir/hj-b.jinja"

# elapsed COMMAND...: the wall time of one run in microseconds (its output dropped).
elapsed() {
  local from=${EPOCHREALTIME//[.,]/}
  "$@" > /dev/null 2>&1 || { echo "bench/header_jobs.sh: failed: $*" >&2; exit 1; }
  local to=${EPOCHREALTIME//[.,]/}
  echo $((to - from))
}
peak() { /usr/bin/time -f "%M" -o "$dir/hj-rss.txt" "$@" > /dev/null 2>&1; tail -1 "$dir/hj-rss.txt"; }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

{
echo "<!-- header-jobs -->"
echo "## Header jobs"
echo
echo "\`bench/header_jobs.sh\` ($(date +%F), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg) at the start): whole"
echo "processes, $rounds rounds, each round every command once in turn, the files in the page cache;"
echo "the median wall time, its ratio to ggml's header read of the same file (\`gguf_init_from_file\`,"
echo "no_alloc, as a process: \`bench/ggml_header.c\`), and the peak RSS (the header's size beside it)."
echo
echo "| model | job | median ms | against ggml | peak RSS MiB | header MiB |"
echo "|---|---|---:|---:|---:|---:|"
for name in qwen gemma3; do
  file=$dir/$name.gguf inplace=$dir/$name-inplace.gguf
  shard=$(ls "$dir/hset-$name"/*-00001-of-*.gguf)
  header_mib=$("$bin" show "$file" --json | python3 -c 'import json, sys; print("%.1f" % (json.load(sys.stdin)["data_offset"] / 1048576))')
  shard_mib=$(awk -v b="$(stat -c %s "$shard")" 'BEGIN { printf "%.1f", b / 1048576 }')
  # the end-token id and the padding one: each edit sets one or the other
  read -r eos other < <("$bin" show "$file" --json |
    python3 -c 'import json, sys; s = json.load(sys.stdin)["special_tokens"]; print(s["eos"]["id"], s["padding"]["id"])')
  for f in ggml_file ggml_shard show validate eos shard; do : > "$dir/hj-$f.txt"; done
  for ((r = 0; r < rounds; r++)); do
    id=$(( r % 2 ? eos : other ))
    tmpl=$([ $((r % 2)) -eq 0 ] && echo "$dir/hj-a.jinja" || echo "$dir/hj-b.jinja")
    elapsed "$ggml" "$lib" "$file" >> "$dir/hj-ggml_file.txt"
    elapsed "$bin" show "$file" >> "$dir/hj-show.txt"
    elapsed "$bin" validate "$file" >> "$dir/hj-validate.txt"
    elapsed "$bin" edit "$inplace" --eos-token-id "$id" --in-place --header-only >> "$dir/hj-eos.txt"
    elapsed "$ggml" "$lib" "$shard" >> "$dir/hj-ggml_shard.txt"
    elapsed "$bin" edit "$shard" --chat-template-file "$tmpl" --in-place >> "$dir/hj-shard.txt"
  done
  "$bin" edit "$inplace" --eos-token-id "$eos" --in-place --header-only > /dev/null 2>&1
  g=$(median < "$dir/hj-ggml_file.txt") gs=$(median < "$dir/hj-ggml_shard.txt")
  row() {  # JOB TIMES BASE RSS HEADER
    local t; t=$(median < "$dir/hj-$2.txt")
    awk -v n="$name" -v j="$1" -v t="$t" -v b="$3" -v m="$4" -v h="$5" \
      'BEGIN { printf "| %s | %s | %.1f | %.2fx | %.1f | %s |\n", n, j, t / 1000, t / b, m / 1024, h }'
  }
  row "ggml's header read (\`gguf_init_from_file\`)" ggml_file "$g" "$(peak "$ggml" "$lib" "$file")" "$header_mib"
  row "show" show "$g" "$(peak "$bin" show "$file")" "$header_mib"
  row "validate" validate "$g" "$(peak "$bin" validate "$file")" "$header_mib"
  row "end-token id, in place" eos "$g" "$(peak "$bin" edit "$inplace" --eos-token-id "$eos" --in-place --header-only)" "$header_mib"
  row "ggml's read of shard 1" ggml_shard "$gs" "$(peak "$ggml" "$lib" "$shard")" "$shard_mib"
  row "template of shard 1, in place" shard "$gs" "$(peak "$bin" edit "$shard" --chat-template-file "$dir/hj-a.jinja" --in-place)" "$shard_mib"
done
echo "<!-- /header-jobs -->"
} > "$dir/hj-section.md"
cat "$dir/hj-section.md"
results=$here/RESULTS.md
if [ -f "$results" ] && grep -q '<!-- header-jobs -->' "$results"; then
  awk -v f="$dir/hj-section.md" '/<!-- header-jobs -->/ { while ((getline l < f) > 0) print l; skip = 1; next } /<!-- \/header-jobs -->/ { skip = 0; next } !skip' "$results" > "$results.new"
  mv "$results.new" "$results"
else
  { echo; cat "$dir/hj-section.md"; } >> "$results"
fi
