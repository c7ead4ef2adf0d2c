#!/usr/bin/env bash
# Turns bench/run.sh's measurements into bench/RESULTS.md (printed to stdout).
set -euo pipefail
export LC_ALL=C  # sort and join agree on the order
results=$1 gbench=$2 model=$3 runs=$4 nlc_ms=$5 hf_ms=$6 show_ms=$7 pairs=$8 set_ms=$9 inplace=${10} render=${11} render_py=${12}
read -r set_med set_min set_max < "$set_ms"
read -r show_med show_min show_max < "$show_ms"
pair_med=$(awk '{ print $3 }' "$pairs" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
pair_list=$(awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $3 }' "$pairs")
get() { awk -F'\t' -v n="$1" -v c="$2" '$1 == n { print $c }' "$results"; }
ratio() { awk -v a="$(get "$1" 2)" -v b="$(get "$2" 2)" 'BEGIN { printf "%.2f", a / b }'; }
ms() { awk -v s="$(get "$1" 2)" 'BEGIN { printf "%.0f", s * 1000 }'; }
mib() { awk -v k="$(get "$1" 5)" 'BEGIN { printf "%.1f", k / 1024 }'; }
header_mb=$(grep -o 'header_MB=[0-9.]*' "$gbench" | head -1 | cut -d= -f2)
parse_ms=$(awk '/^BM_GgufkitParseHeader/ { print $2 }' "$gbench")
ggml_ms=$(awk '/^BM_GgmlParseHeader/ { print $2 }' "$gbench")
parse_ratio=$(awk -v a="$parse_ms" -v b="$ggml_ms" 'BEGIN { printf "%.3f", a / b }')
cat <<MD
# Benchmarks

Reproduce with \`make bench\` (bench/run.sh). Each command ran $runs times on the same
file in one session; the table gives the median, the spread (min to max) and the largest
peak RSS (\`/usr/bin/time\`). The page cache was warm (the 4.7 GB file fits in memory), so
rewrites measure the copy and the writes, not a cold disk.

## Machine

- $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(free -g | awk '/Mem:/ { print $2 }') GiB of memory
- Linux $(uname -r), file system $(df -T "$(dirname "$model")" | awk 'NR == 2 { print $2 }')
- $(date -u +%Y-%m-%d)

## The file

\`bench/qwen7b-sketch.sh\` written by \`ggufkit write\`: a Qwen2.5-7B-Instruct Q4_K_M-shaped
model (qwen2, 28 blocks, embedding 3584, 152,064 tokens, 151,387 merges, a 2.5 KB chat
template, 339 tensors in q4_K, q6_K and f32 with the real shapes, random bytes):
$(stat -c %s "$model") bytes, a header of ${header_mb} MB.

## Figures

| command | median s | spread s | peak RSS KiB |
|---|---:|---:|---:|
$(awk -F'\t' '{ printf "| %s | %s | %s to %s | %s |\n", $1, $2, $3, $4, $5 }' "$results")

The commands, as run (paths relative to the bench folder, \`\$BENCH_DIR\`):

\`\`\`
$(awk -F'\t' '{ printf "%-34s %s\n", $1, $6 }' "$results")
\`\`\`

Header parse in-process, ggufkit (\`scan_file\`) beside ggml's own parser
(\`gguf_init_from_file\`, no_alloc, from node-llama-cpp's \`libggml-base.so\`), the same file
from the page cache, one run (Google Benchmark, \`bench/bench_parse.cpp\`):

\`\`\`
$(grep -E "^(BM_|Benchmark|-)" "$gbench")
\`\`\`

In-process parse time of the peers (their own clocks, without node's start-up):
node-llama-cpp \`readGgufFileInfo\` ${nlc_ms} ms, @huggingface/gguf \`gguf()\` ${hf_ms} ms.

## Against the targets

| target | bar | measured |
|---|---|---|
| header parse against ggml's parser, side by side in-process | at most 0.3x | ${parse_ratio}x (${parse_ms} ms against ${ggml_ms} ms) |
| header parse of the 4.7 GB file (\`ggufkit show\`, whole process, 21 runs, fork and exec included) | under 20 ms | ${show_med} ms median (${show_min} to ${show_max}); the parse alone ${parse_ms} ms |
| its peak memory beyond the header's own size | under 32 MiB | $(mib "ggufkit show") MiB in all, ${header_mb} MB of it the header |
| chat-template edit, \`--no-verify\`, against \`cp\` | at most 1.10x | $(ratio "edit template --no-verify" "cp")x (against cp + sync: $(ratio "edit template --no-verify" "cp + sync")x) |
| chat-template edit, verified, against \`cp + sync\` run right before it, 7 pairs (issue 11) | at most 1.15x | median ${pair_med}x (each pair: ${pair_list}) |
| chat-template fix of the model split with \`--max-size 2G --metadata-only-first\`, verified, in place (issue 14) | at most 50 ms and 40 MiB | ${set_med} ms median of 11 whole runs (${set_min} to ${set_max}), peak RSS $(mib "set: edit template in place, shard 1") MiB; the single 4.7 GB file: $(ms "edit template (verified)") ms |
$(awk -F'\t' -v whole="$(get "end-token id, --whole-file in place" 2)" '{ printf "| %s, edited in place, header only (issue 17) | under 30 ms and 40 MiB | %s ms median of 11 whole runs (%s to %s), peak RSS %.1f MiB%s |\n", $1, $2, $3, $4, $5 / 1024, (NR == 1 ? "; the same edit rewriting the whole file: " whole " s; llama.cpp'"'"'s gguf_set_metadata.py for it: about 7 s (the issue'"'"'s earlier measurement)" : "") }' "$inplace")
$(join -t$'\t' <(sort "$render") <(sort "$render_py") | sort -t$'\t' -k4 -g | tail -1 | awk -F'\t' -v py_worst="$(sort -t$'\t' -k4 -g "$render_py" | tail -1 | cut -f4)" '{ printf "| rendering a corpus template, parse and render, the worst of its 8 conversations (issue 16) | under 5 ms | %s ms at worst (%s); jinja2 compiles and renders the same in %s ms (its own worst: %s ms) |\n", $4, $1, $7, py_worst }')
| the same from the medians of the table above | | $(ratio "edit template (verified)" "cp + sync")x (against plain cp: $(ratio "edit template (verified)" "cp")x) |
| realign to 64, \`--no-verify\` / verified, against \`cp\` | 1.10x / 1.6x | $(ratio "realign 64 --no-verify" "cp")x / $(ratio "realign 64 (verified)" "cp")x |
| peak RSS of edit and realign | under 64 MiB | $(mib "edit template (verified)") MiB / $(mib "realign 64 (verified)") MiB |
| writing the file from its sketch (the sketch issue), against writing the same number of non-zero bytes (\`cp + sync\`) | about the disk's time, flat memory | $(ratio "ggufkit write (the sketch)" "cp + sync")x, peak RSS $(mib "ggufkit write (the sketch)") MiB (against \`dd\` of zeros: $(ratio "ggufkit write (the sketch)" "dd of as many bytes + fsync")x) |

An in-place edit whose header still ends where the data starts writes only the bytes that
differ (one byte for the end-token id), through a journal: the journal is written and
flushed with its folder, the bytes are written and flushed, the header is read back
strictly, the journal is removed. Most of its time is reading the 5.4 MB header, twice.
The commands, as run:

\`\`\`
$(awk -F'\t' '{ printf "%-34s %s\n", $1, $6 }' "$inplace")
\`\`\`

Rendering the 42 corpus templates (\`bench/bench_render.cpp\` beside
\`bench/render_peer.py\`, Python's jinja2 as transformers sets it up), each with the 8
conversations in \`tests/template/conversations\`, in-process, medians of 21 runs: the
template's parse (jinja2: its compile), the slowest of its renders, and both. ms:

| template | ggufkit parse | render | both | jinja2 compile | render | both |
|---|---:|---:|---:|---:|---:|---:|
$(join -t$'\t' <(sort "$render") <(sort "$render_py") | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7 }')

ggufkit flushes the file to disk (fsync) before it renames it into place; plain \`cp\`
does not, so \`cp + sync\` is the like-for-like floor. The verified edit copies the tensor
data in the kernel, as cp does, and a second thread reads every copied piece back from the
page cache and compares it with its source while the first goes on writing and flushing. This machine's virtual disk writes
zeros much faster than other bytes (\`dd\` from /dev/zero against copying the fixture),
so writing the sketch's random bytes is compared with \`cp + sync\` as well. The write
generates 4.7 GB of seeded random bytes on one core as it goes; its peak memory is the
parsed 7 MB YAML sketch (455,000 vocabulary entries), flat in the tensor data. Disk
times on this machine vary by 2x from run to run: read the spreads.
MD
