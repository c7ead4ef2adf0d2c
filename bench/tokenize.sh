#!/usr/bin/env bash
# The tokenizer against llama.cpp's (issue 28), whole process, side by side in one run:
# 0.5 MB of real text (the corpus chat templates and the README) tokenized with the gpt-2
# (BPE) and the llama-spm (SentencePiece) vocabularies by `ggufkit tokenize` and by
# bench/llama_tokenize.c (llama.cpp's llama_tokenize on a vocab-only load), each RUNS times:
# the median seconds, the peak RSS, tokens per second, and whether the ids are the same.
# Writes the "Tokenizer" section of bench/RESULTS.md (make bench-tokenize; make bench too).
#
#   bench/tokenize.sh BUILD_DIR NPM_DIR [RUNS]
set -euo pipefail
[ -n "${EPOCHREALTIME:-}" ] || { echo "bench/tokenize.sh needs bash 5 (EPOCHREALTIME) to time the runs" >&2; exit 1; }
build=${1:-build} npm=${2:-$HOME/.cache/ggufkit-interop} runs=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
corpus=$here/../../shared/corpus
dir=${BENCH_DIR:-/tmp/ggufkit-bench}
lib=$npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
mkdir -p "$dir"
text=$dir/tokenize-text.txt
# The templates and the README, over again to 512 KiB, cut at the last whole line.
cat "$corpus"/templates/*.jinja "$here/../README.md" "$corpus"/templates/*.jinja "$here/../README.md" > "$text.all"
head -c 524288 "$text.all" | sed '$d' > "$text"
rm -f "$text.all"
bytes=$(stat -c %s "$text")

# run NAME OUT COMMAND...: RUNS runs; prints "median_seconds peak_kb" and keeps the last output.
run() {
  local out=$1; shift
  local times=() rss=0 t
  for ((i = 0; i < runs; i++)); do
    # the wall time to the microsecond (time's %e has hundredths: a sixth of a fast run); it
    # holds /usr/bin/time's own start, about a millisecond, on both sides
    local from=${EPOCHREALTIME//[.,]/}
    /usr/bin/time -o "$dir/time.txt" -f "%M" "$@" > "$out"
    local to=${EPOCHREALTIME//[.,]/}
    t=$(tail -1 "$dir/time.txt")
    times+=("$(awk -v us=$((to - from)) 'BEGIN { printf "%.4f", us / 1e6 }')")
    (( t > rss )) && rss=$t
  done
  echo "$(printf '%s\n' "${times[@]}" | sort -g | sed -n "$(( (runs + 1) / 2 ))p") $rss"
}

rows=""
for v in gpt-2 llama-spm; do
  vocab=$corpus/vocab/ggml-vocab-$v.gguf
  read -r ours_s ours_kb < <(run "$dir/ours.txt" "$build/ggufkit" tokenize "$vocab" -f "$text" --ids)
  read -r llama_s llama_kb < <(run "$dir/llama.txt" "$build/bench/llama_tokenize" "$lib" "$vocab" bench "$text" 1 1)
  same=no
  cmp -s "$dir/ours.txt" "$dir/llama.txt" && same=yes
  tokens=$(wc -w < "$dir/llama.txt")
  row=$(awk -v v="$v" -v os="$ours_s" -v ok="$ours_kb" -v ls="$llama_s" -v lk="$llama_kb" -v n="$tokens" -v same="$same" 'BEGIN {
    r = (ls > 0) ? os / ls : 0; m = (lk > 0) ? ok / lk : 0; otps = (os > 0) ? n / os : 0; ltps = (ls > 0) ? n / ls : 0
    printf "| %s | %d | %.3f s | %.3f s | %.3f | %.0f | %.0f | %.1f MiB | %.1f MiB | %.2f | %s |", v, n, os, ls, r, otps, ltps, ok / 1024, lk / 1024, m, same }')
  echo "$row"
  rows+="$row"$'\n'
done

# A line with a 152,064-token vocabulary (the Qwen2.5 fixture make bench writes, when it is
# there): the whole process is the vocabulary's load, against llama.cpp's vocab-only load.
line_row=""
model=$dir/qwen7b-q4km.gguf
if [ -f "$model" ]; then
  printf 'Hello, world' > "$dir/line.txt"
  read -r ours_s ours_kb < <(run "$dir/ours.txt" "$build/ggufkit" tokenize "$model" -f "$dir/line.txt" --ids)
  read -r llama_s llama_kb < <(run "$dir/llama.txt" "$build/bench/llama_tokenize" "$lib" "$model" bench "$dir/line.txt" 1 1)
  same=no
  cmp -s "$dir/ours.txt" "$dir/llama.txt" && same=yes
  line_row=$(awk -v os="$ours_s" -v ok="$ours_kb" -v ls="$llama_s" -v lk="$llama_kb" -v same="$same" 'BEGIN {
    r = (ls > 0) ? os / ls : 0; m = (lk > 0) ? ok / lk : 0
    printf "| one line, Qwen2.5-7B (152,064 tokens, qwen2) | %.3f s | %.3f s | %.3f | %.1f MiB | %.1f MiB | %.2f | %s |", os, ls, r, ok / 1024, lk / 1024, m, same }')
  echo "$line_row"
fi

section=$(cat <<MD
<!-- tokenize -->
## Tokenizer (issue 28)

\`make bench-tokenize\` (bench/tokenize.sh): $bytes bytes of real text (the corpus chat
templates and the README) tokenized whole, as one text (special tokens added and parsed,
as llama-tokenize does), the whole process timed $runs times: \`ggufkit tokenize VOCAB -f TEXT
--ids\` against \`bench/llama_tokenize\`, a small C program that loads the same vocabulary
with llama.cpp's libllama (node-llama-cpp 3.21.1's build, \`vocab_only\`) and calls
\`llama_tokenize\`. Medians; peak RSS the largest of the runs; tokens per second over the
whole process, load included. Goal: at most 0.2x llama.cpp's time, at most 2x its peak.
$(date -u +%Y-%m-%d), $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//').

| vocabulary | tokens | ggufkit | llama.cpp | time ratio | ggufkit tokens/s | llama.cpp tokens/s | ggufkit peak | llama.cpp peak | peak ratio | same ids |
|---|---|---|---|---|---|---|---|---|---|---|
$rows
A line tokenized with a large vocabulary costs its load, which is lazy where llama.cpp's is
not (the merge ranks are hashed when a merge is first looked up, a token's piece made when
asked for): the same whole process, \`ggufkit tokenize MODEL -f LINE --ids\` against
\`llama_tokenize\` on the 4.7 GB fixture of \`make bench\` (vocab-only: no tensor is read).

| text | ggufkit | llama.cpp | time ratio | ggufkit peak | llama.cpp peak | peak ratio | same ids |
|---|---|---|---|---|---|---|---|
${line_row:-| (no fixture: run make bench first) | | | | | | | |}
<!-- /tokenize -->
MD
)
results=$here/RESULTS.md
if [ -f "$results" ] && grep -q '<!-- tokenize -->' "$results"; then
  awk -v s="$section" '/<!-- tokenize -->/ { print s; skip = 1; next } /<!-- \/tokenize -->/ { skip = 0; next } !skip' "$results" > "$results.new"
  mv "$results.new" "$results"
else
  printf '\n%s\n' "$section" >> "$results"
fi
echo "wrote the tokenizer section of $results"
