#!/usr/bin/env bash
# Verifying a download: `ggufkit hash --file` against sha256sum on the 4.7 GB fixture of
# make bench, side by side in one run (goal: at most 1.0x sha256sum's wall time), then the
# tensor checksums, a llama-gguf-hash manifest and its check for the record. Each command
# runs twice in a row and the second (warm: the file in the page cache) run is recorded,
# its wall time by bash's clock and its peak RSS by /usr/bin/time. Both digests must agree.
# Writes the "Hashing" section of bench/RESULTS.md (make bench-hash; make bench too).
#
#   bench/hash.sh BUILD_DIR
set -euo pipefail
[ -n "${EPOCHREALTIME:-}" ] || { echo "bench/hash.sh needs bash 5 (EPOCHREALTIME) to time the runs" >&2; exit 1; }
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
dir=${BENCH_DIR:-/tmp/ggufkit-bench}
bin=$build/ggufkit
model=$dir/qwen7b-q4km.gguf
mkdir -p "$dir"
[ -f "$dir/qwen7b.yaml" ] || "$here/qwen7b-sketch.sh" > "$dir/qwen7b.yaml"
[ -f "$model" ] || "$bin" write "$dir/qwen7b.yaml" -o "$model"

# warm OUT COMMAND...: runs it twice, keeps the second run's output in OUT; prints
# "seconds peak_kb" of the second.
warm() {
  local out=$1; shift
  "$@" > "$out"
  local from=${EPOCHREALTIME//[.,]/}
  /usr/bin/time -o "$dir/time.txt" -f "%M" "$@" > "$out"
  local to=${EPOCHREALTIME//[.,]/}
  echo "$(awk -v us=$((to - from)) 'BEGIN { printf "%.2f", us / 1e6 }') $(tail -1 "$dir/time.txt")"
}

load=$(cut -d' ' -f1 /proc/loadavg)  # other work on the machine slows both sides alike
read -r sum_s sum_kb < <(warm "$dir/sha256sum.txt" sha256sum "$model")
read -r file_s file_kb < <(warm "$dir/hash-file.txt" "$bin" hash --file "$model")
same=no
[ "$(cut -c1-64 "$dir/sha256sum.txt")" = "$(cut -c1-64 "$dir/hash-file.txt")" ] && same=yes
ratio=$(awk -v a="$file_s" -v b="$sum_s" 'BEGIN { printf "%.2f", a / b }')
echo "sha256sum:              ${sum_s} s, peak ${sum_kb} KB"
echo "ggufkit hash --file:    ${file_s} s, peak ${file_kb} KB  (ratio ${ratio}x, same digest: $same)"
[ "$same" = yes ] || { echo "the digests differ" >&2; exit 1; }

read -r sha_s sha_kb < <(warm "$dir/hash-sha256.txt" "$bin" hash "$model" --algo sha256)
read -r xxh_s xxh_kb < <(warm "$dir/hash-xxh64.txt" "$bin" hash "$model")
read -r man_s man_kb < <(warm "$dir/qwen7b.manifest" "$bin" hash "$model" --manifest)
read -r chk_s chk_kb < <(warm "$dir/check.txt" "$bin" hash "$model" --check "$dir/qwen7b.manifest")
tail -1 "$dir/check.txt" | grep -q ' - Success$' || { echo "the check of its own manifest failed" >&2; exit 1; }
tensors=$(($(wc -l < "$dir/hash-sha256.txt") - 1))
row() { awk -v n="$1" -v s="$2" -v k="$3" -v c="$4" 'BEGIN { printf "| %s | %s | %.1f | %s |\n", n, s, k / 1024, c }'; }

section=$(cat <<MD
<!-- hash -->
## Hashing

\`make bench-hash\` (bench/hash.sh): the whole 4.7 GB fixture ($(stat -c %s "$model") bytes,
$tensors tensors), each command run twice in a row and the second, warm run recorded (the
file in the page cache: the first run reads it from disk). $(date -u +%Y-%m-%d), $(nproc) cores:
$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), SHA extensions: $(grep -qw sha_ni /proc/cpuinfo && echo yes || echo no), load average
$load at the start (the machine's other work slows both sides of the ratio).
Goal: \`hash --file\` at most 1.0x sha256sum's wall time; measured **${ratio}x** (the same
digest: $same).

| command | wall s | peak RSS MiB | what |
|---|---:|---:|---|
$(row "sha256sum FILE" "$sum_s" "$sum_kb" "coreutils $(sha256sum --version | head -1 | awk '{ print $NF }')")
$(row "ggufkit hash --file FILE" "$file_s" "$file_kb" "the same SHA-256 (OpenSSL), 4 MiB reads, the next read on a second thread")
$(row "ggufkit hash FILE --algo sha256" "$sha_s" "$sha_kb" "each tensor and all tensor data: two streams of 4.7 GB on $(nproc) threads")
$(row "ggufkit hash FILE" "$xxh_s" "$xxh_kb" "the same in xxh64")
$(row "ggufkit hash FILE --manifest" "$man_s" "$man_kb" "llama-gguf-hash --all: xxh64, sha1 and sha256 of each tensor and of the file's tensor data")
$(row "ggufkit hash FILE --check M" "$chk_s" "$chk_kb" "that manifest checked by its strongest type, sha256")
<!-- /hash -->
MD
)
results=$here/RESULTS.md
if [ -f "$results" ] && grep -q '<!-- hash -->' "$results"; then
  awk -v s="$section" '/<!-- hash -->/ { print s; skip = 1; next } /<!-- \/hash -->/ { skip = 0; next } !skip' "$results" > "$results.new"
  mv "$results.new" "$results"
else
  printf '\n%s\n' "$section" >> "$results"
fi
rm -f "$dir/sha256sum.txt" "$dir/hash-file.txt" "$dir/hash-sha256.txt" "$dir/hash-xxh64.txt" "$dir/qwen7b.manifest" "$dir/check.txt"
echo "wrote the hashing section of $results"
