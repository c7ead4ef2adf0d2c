#!/usr/bin/env bash
# ggufkit's benchmarks, side by side in one run, written to bench/RESULTS.md.
#
#   make bench            (or: bench/run.sh BUILD_DIR NPM_DIR [RUNS])
#
# Writes a Qwen2.5-7B-Instruct Q4_K_M-shaped fixture (4.7 GB of random bytes, the real
# shapes and a 152,064-token vocabulary) into $BENCH_DIR unless it is there, then times
# each command RUNS times: the median, the spread (min to max) and the peak RSS.
set -euo pipefail
build=${1:-build} npm=${2:-$HOME/.cache/ggufkit-interop} runs=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
dir=${BENCH_DIR:-/tmp/ggufkit-bench}
bin=$build/ggufkit
mkdir -p "$dir"
model=$dir/qwen7b-q4km.gguf
[ -f "$dir/qwen7b.yaml" ] || "$here/qwen7b-sketch.sh" > "$dir/qwen7b.yaml"
[ -f "$model" ] || "$bin" write "$dir/qwen7b.yaml" -o "$model"
printf '{%% for m in messages %%}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%% endfor %%}' > "$dir/template.jinja"
cp "$here/peers.mjs" "$npm/ggufkit-peers.mjs"

results=$dir/results.tsv
: > "$results"
# measure NAME COMMAND...: RUNS runs; records median, min, max seconds and the largest peak RSS.
measure() {
  local name=$1; shift
  local times=() rss=0
  for ((i = 0; i < runs; i++)); do
    rm -f "$dir/out.gguf" "$dir/cp.gguf"
    sync
    local t
    /usr/bin/time -o "$dir/time.txt" -f "%e %M" "$@" >/dev/null 2>&1
    t=$(tail -1 "$dir/time.txt")
    times+=("${t% *}")
    (( ${t#* } > rss )) && rss=${t#* }
  done
  local sorted
  sorted=$(printf '%s\n' "${times[@]}" | sort -g)
  local med min max
  med=$(sed -n "$(( (runs + 1) / 2 ))p" <<<"$sorted"); min=$(head -1 <<<"$sorted"); max=$(tail -1 <<<"$sorted")
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$med" "$min" "$max" "$rss" "${*//$dir\//}" >> "$results"
  printf '%-34s median %6ss  (%s to %s)  peak RSS %6s KB\n' "$name" "$med" "$min" "$max" "$rss"
}
# In-process times of the node peers (their own clocks, without node's start-up).
peer() {
  local ms=()
  for ((i = 0; i < runs; i++)); do ms+=("$(cd "$npm" && node ggufkit-peers.mjs "$1" "$model" | sed 's/.*"ms":\([0-9.]*\).*/\1/')"); done
  printf '%s\n' "${ms[@]}" | sort -g | sed -n "$(( (runs + 1) / 2 ))p"
}

echo "== header parse of $model"
measure "ggufkit show" "$bin" show "$model"
# /usr/bin/time counts in 10 ms steps: the whole process again, to the tenth of a millisecond.
for ((i = 0; i < 21; i++)); do
  s=$(date +%s%N); "$bin" show "$model" >/dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000 ))
done | sort -n | awk '{ a[NR] = $1 } END { printf "%.1f %.1f %.1f\n", a[11] / 1000, a[1] / 1000, a[21] / 1000 }' > "$dir/show_ms.txt"
echo "ggufkit show, 21 runs: median, min, max ms: $(cat "$dir/show_ms.txt")"
measure "node-llama-cpp readGgufFileInfo" sh -c "cd '$npm' && node ggufkit-peers.mjs nlc '$model'"
measure "@huggingface/gguf gguf()" sh -c "cd '$npm' && node ggufkit-peers.mjs hf '$model'"
nlc_ms=$(peer nlc) hf_ms=$(peer hf)
echo "in-process parse: node-llama-cpp ${nlc_ms} ms, @huggingface/gguf ${hf_ms} ms"
"$build/bench/bench_parse" "$model" "$npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so" \
  --benchmark_format=console | tee "$dir/bench_parse.txt"

echo "== writing the 4.7 GB file from its sketch, against the disk"
size_mb=$(( $(stat -c %s "$model") / 1048576 ))
measure "ggufkit write (the sketch)" "$bin" write "$dir/qwen7b.yaml" -o "$dir/out.gguf"
measure "dd of as many bytes + fsync" dd if=/dev/zero of="$dir/out.gguf" bs=1M count=$size_mb conv=fsync status=none

echo "== rewrites of $model"
measure "cat > /dev/null (read floor)" sh -c "cat '$model' > /dev/null"
measure "cp" cp "$model" "$dir/cp.gguf"
measure "cp + sync" sh -c "cp '$model' '$dir/cp.gguf' && sync '$dir/cp.gguf'"
measure "edit template --no-verify" "$bin" edit "$model" --chat-template-file "$dir/template.jinja" -o "$dir/out.gguf" --no-verify
measure "edit template (verified)" "$bin" edit "$model" --chat-template-file "$dir/template.jinja" -o "$dir/out.gguf"
measure "realign 64 --no-verify" "$bin" realign "$model" -a 64 -o "$dir/out.gguf" --no-verify
measure "realign 64 (verified)" "$bin" realign "$model" -a 64 -o "$dir/out.gguf"
measure "rewrite --no-verify" "$bin" rewrite "$model" -o "$dir/out.gguf" --no-verify
measure "rewrite (verified)" "$bin" rewrite "$model" -o "$dir/out.gguf"

echo "== a corrupt corpus of the tiny llama (goal: under 5 s)"
tiny=$dir/tiny-llama.gguf
[ -f "$tiny" ] || "$bin" write "$here/../examples/tiny-llama.yaml" -D VOCAB="$here/../../shared/corpus/vocab/ggml-vocab-llama-spm.gguf" -o "$tiny"
measure "corrupt (the tiny llama, default)" sh -c "rm -rf '$dir/corrupt' && '$bin' corrupt '$tiny' -o '$dir/corrupt'"
rm -rf "$dir/corrupt"

echo "== a chat-template fix of the model as a shard set whose first shard holds only the keys"
set_prefix=$dir/set/qwen7b
rm -rf "$dir/set"; mkdir -p "$dir/set"
"$bin" split "$model" -o "$set_prefix" --max-size 2G --metadata-only-first > /dev/null
first=$(ls "$dir"/set/qwen7b-00001-of-*.gguf)
printf '{%% for m in messages %%}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%% endfor %%}\n' > "$dir/template2.jinja"
# In place, alternating two templates so that every run changes the file.
measure_set() {
  local times=() rss=0
  for ((i = 0; i < runs; i++)); do
    local t tmpl=$dir/template.jinja
    (( i % 2 )) && tmpl=$dir/template2.jinja
    sync
    /usr/bin/time -o "$dir/time.txt" -f "%e %M" "$bin" edit "$first" --chat-template-file "$tmpl" --in-place >/dev/null 2>&1
    t=$(tail -1 "$dir/time.txt")
    times+=("${t% *}")
    (( ${t#* } > rss )) && rss=${t#* }
  done
  local sorted med min max
  sorted=$(printf '%s\n' "${times[@]}" | sort -g)
  med=$(sed -n "$(( (runs + 1) / 2 ))p" <<<"$sorted"); min=$(head -1 <<<"$sorted"); max=$(tail -1 <<<"$sorted")
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "set: edit template in place, shard 1" "$med" "$min" "$max" "$rss" \
    "build/ggufkit edit set/qwen7b-00001-of-0000N.gguf --chat-template-file template.jinja --in-place" >> "$results"
  printf '%-34s median %6ss  (%s to %s)  peak RSS %6s KB\n' "set: template edit in place" "$med" "$min" "$max" "$rss"
}
measure_set
# whole-process milliseconds, as /usr/bin/time counts in 10 ms steps; bash's own clock,
# so that no `date` process is timed with it
for ((i = 0; i < 11; i++)); do
  tmpl=$dir/template.jinja; (( i % 2 )) && tmpl=$dir/template2.jinja
  s=${EPOCHREALTIME//[.,]/}; "$bin" edit "$first" --chat-template-file "$tmpl" --in-place >/dev/null; e=${EPOCHREALTIME//[.,]/}; echo $(( e - s ))
done | sort -n | awk '{ a[NR] = $1 } END { printf "%.1f %.1f %.1f\n", a[6] / 1000, a[1] / 1000, a[11] / 1000 }' > "$dir/set_ms.txt"
echo "set template edit, 11 runs: median, min, max ms: $(cat "$dir/set_ms.txt")"
rm -rf "$dir/set"

# Header-only edits in place (issue 17), on a copy of the model: 11 whole runs of each,
# alternating two values so that every run changes the file, timed by bash's own clock;
# the peak RSS of three more. --header-only: a fallback to the whole file fails the bench.
echo "== header-only edits in place of a copy of the model"
inplace=$dir/inplace.gguf
cp --reflink=auto "$model" "$inplace" && sync "$inplace"  # the copy written out first: its writeback would slow the fsyncs timed next
sed 's/Keep answers short\./Keep answers brief./' "$here/chat_template.jinja" > "$dir/template-fits.jinja"
cmp -s "$here/chat_template.jinja" "$dir/template-fits.jinja" && { echo "the fitting template edit changes nothing"; exit 1; }
: > "$dir/inplace.tsv"
in_place() {
  local name=$1 even=$2 odd=$3 rss=0 k args
  "$bin" edit "$inplace" $odd --in-place >/dev/null 2>&1  # from the model's own value, which may not fit
  for ((k = 0; k < 11; k++)); do
    args=$even; (( k % 2 )) && args=$odd
    s=${EPOCHREALTIME//[.,]/}
    "$bin" edit "$inplace" $args --in-place --header-only >/dev/null 2>"$dir/err.txt" || { cat "$dir/err.txt" >&2; exit 1; }
    e=${EPOCHREALTIME//[.,]/}
    echo $(( e - s ))
  done | sort -n | awk '{ a[NR] = $1 } END { printf "%.1f\t%.1f\t%.1f", a[6] / 1000, a[1] / 1000, a[11] / 1000 }' > "$dir/t.txt"
  for ((k = 0; k < 3; k++)); do
    args=$even; (( k % 2 )) && args=$odd
    /usr/bin/time -o "$dir/time.txt" -f "%M" "$bin" edit "$inplace" $args --in-place --header-only >/dev/null 2>&1
    (( $(tail -1 "$dir/time.txt") > rss )) && rss=$(tail -1 "$dir/time.txt")
  done
  printf '%s\t%s\t%s\t%s\n' "$name" "$(cat "$dir/t.txt")" "$rss" "edit inplace.gguf $even --in-place --header-only" >> "$dir/inplace.tsv"
  printf '%-34s median %6s ms  peak RSS %6s KB\n' "$name" "$(cut -f1 "$dir/t.txt")" "$rss"
}
in_place "end-token id" "--eos-token-id 151643" "--eos-token-id 151645"
in_place "name of the same length" "--set general.name=Qwen2.5-7B-Instruct" "--set general.name=Qwen2.5-7B-instruct"
in_place "chat template that fits" "--chat-template-file $here/chat_template.jinja" "--chat-template-file $dir/template-fits.jinja"
measure "end-token id, --whole-file in place" "$bin" edit "$inplace" --eos-token-id 151644 --in-place --whole-file
rm -f "$inplace"

# Rendering every corpus template with every test conversation (issue 16), in-process:
# ggufkit's parse and render beside jinja2's compile and render of the same.
echo "== rendering the corpus templates"
"$build/bench/bench_render" "$here/../../shared/corpus/templates" "$here/../tests/template/conversations" > "$dir/render.tsv"
python3 "$here/render_peer.py" "$here/../../shared/corpus/templates" "$here/../tests/template/conversations" > "$dir/render_py.tsv"
sort -t$'\t' -k4 -g "$dir/render.tsv" | tail -3

# The verified edit against cp + sync in pairs, one right after the other, 7 times: this
# disk's speed drifts by 2x within minutes, so the ratio of each pair is steadier than a
# ratio of medians taken minutes apart. Records each pair's seconds and ratio.
echo "== verified template edit against cp + sync, in 7 pairs"
: > "$dir/pairs.txt"
for ((i = 0; i < 7; i++)); do
  rm -f "$dir/out.gguf" "$dir/cp.gguf"; sync
  s=$(date +%s%N); cp "$model" "$dir/cp.gguf" && sync "$dir/cp.gguf"; c=$(( $(date +%s%N) - s ))
  rm -f "$dir/cp.gguf"; sync
  s=$(date +%s%N); "$bin" edit "$model" --chat-template-file "$dir/template.jinja" -o "$dir/out.gguf" >/dev/null; e=$(( $(date +%s%N) - s ))
  awk -v c="$c" -v e="$e" 'BEGIN { printf "%.2f %.2f %.3f\n", c / 1e9, e / 1e9, e / c }' | tee -a "$dir/pairs.txt"
done
rm -f "$dir/out.gguf" "$dir/cp.gguf"

"$here/report.sh" "$results" "$dir/bench_parse.txt" "$model" "$runs" "$nlc_ms" "$hf_ms" "$dir/show_ms.txt" "$dir/pairs.txt" "$dir/set_ms.txt" "$dir/inplace.tsv" "$dir/render.tsv" "$dir/render_py.tsv" > "$here/RESULTS.md"
echo "wrote $here/RESULTS.md"
