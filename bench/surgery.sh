#!/usr/bin/env bash
# Tensor surgery: keeping half the layers of the 4.7 GB Qwen-shaped fixture of make bench
# (`ggufkit edit --keep-layers 0-13`, every copied byte read back) against `cp` + `sync` of a
# file of as many bytes as the output holds, side by side in one run (goal: at most 1.0x,
# peak RSS under 64 MiB). Each command runs twice, alternating, and the second (warm: the
# source in the page cache) run of each is recorded, its wall time by bash's clock and its
# peak RSS by /usr/bin/time; the output is removed before each run. With XFS_DIR (a folder
# on an XFS file system made with reflink=1), the same edit there, for the record.
# Writes the "Tensor surgery" section of bench/RESULTS.md (make bench-surgery; make bench too).
#
#   bench/surgery.sh BUILD_DIR
set -euo pipefail
[ -n "${EPOCHREALTIME:-}" ] || { echo "bench/surgery.sh needs bash 5 (EPOCHREALTIME) to time the runs" >&2; exit 1; }
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
dir=${BENCH_DIR:-/tmp/ggufkit-bench}
bin=$build/ggufkit
model=$dir/qwen7b-q4km.gguf
keep=0-13
mkdir -p "$dir"
[ -f "$dir/qwen7b.yaml" ] || "$here/qwen7b-sketch.sh" > "$dir/qwen7b.yaml"
[ -f "$model" ] || "$bin" write "$dir/qwen7b.yaml" -o "$model"

# timed OUTPUT COMMAND...: removes OUTPUT, runs the command; prints "seconds peak_kb".
timed() {
  local out=$1; shift
  rm -f "$out"
  local from=${EPOCHREALTIME//[.,]/}
  /usr/bin/time -o "$dir/time.txt" -f "%M" "$@" > /dev/null
  local to=${EPOCHREALTIME//[.,]/}
  echo "$(awk -v us=$((to - from)) 'BEGIN { printf "%.2f", us / 1e6 }') $(tail -1 "$dir/time.txt")"
}

size=$("$bin" edit "$model" --keep-layers "$keep" --dry-run --json |
       python3 -c 'import json, sys; print(json.load(sys.stdin)["file_size"]["after"])')
head -c "$size" "$model" > "$dir/same-size.bin"  # cp's source: as many bytes as the output holds
load=$(cut -d' ' -f1 /proc/loadavg)
for run in 1 2; do  # the second run of each is recorded
  read -r cp_s cp_kb < <(timed "$dir/cp.bin" sh -c "cp '$dir/same-size.bin' '$dir/cp.bin' && sync '$dir/cp.bin'")
  read -r ed_s ed_kb < <(timed "$dir/half.gguf" "$bin" edit "$model" --keep-layers "$keep" -o "$dir/half.gguf")
done
[ "$(stat -c %s "$dir/half.gguf")" = "$size" ] || { echo "the output is not the size the dry run planned" >&2; exit 1; }
blocks=$("$bin" get "$dir/half.gguf" qwen2.block_count)
ratio=$(awk -v a="$ed_s" -v b="$cp_s" 'BEGIN { printf "%.2f", a / b }')
echo "cp + sync ($size bytes):     ${cp_s} s, peak ${cp_kb} KB"
echo "ggufkit edit --keep-layers:  ${ed_s} s, peak ${ed_kb} KB  (ratio ${ratio}x, block_count $blocks)"

xfs_row=""
if [ -n "${XFS_DIR:-}" ] && [ -d "$XFS_DIR" ]; then
  cp --reflink=never "$model" "$XFS_DIR/model.gguf"
  sync "$XFS_DIR/model.gguf"
  for run in 1 2; do
    read -r xr_s xr_kb < <(timed "$XFS_DIR/reflink.gguf" sh -c "cp --reflink=always '$XFS_DIR/model.gguf' '$XFS_DIR/reflink.gguf' && sync '$XFS_DIR/reflink.gguf'")
    read -r xe_s xe_kb < <(timed "$XFS_DIR/half.gguf" "$bin" edit "$XFS_DIR/model.gguf" --keep-layers "$keep" -o "$XFS_DIR/half.gguf")
  done
  echo "XFS (reflink): cp --reflink=always of the whole model ${xr_s} s; the edit ${xe_s} s"
  row2() { awk -v n="$1" -v s="$2" -v k="$3" -v c="$4" 'BEGIN { printf "| %s | %s | %.1f | %s |\n", n, s, k / 1024, c }'; }
  xfs_row="$(row2 "on XFS (reflink=1): cp --reflink=always of the whole model + sync" "$xr_s" "$xr_kb" "the extents shared, no byte copied")
$(row2 "on XFS (reflink=1): the same edit" "$xe_s" "$xe_kb" "copy_file_range shares an extent only where source and output offsets agree modulo the block size; packed GGUF tensors after a header of another size seldom do, so the bytes are copied")"
  rm -f "$XFS_DIR/model.gguf" "$XFS_DIR/reflink.gguf" "$XFS_DIR/half.gguf"
fi
row() { awk -v n="$1" -v s="$2" -v k="$3" -v c="$4" 'BEGIN { printf "| %s | %s | %.1f | %s |\n", n, s, k / 1024, c }'; }

section=$(cat <<MD
<!-- surgery -->
## Tensor surgery

\`make bench-surgery\` (bench/surgery.sh): \`ggufkit edit --keep-layers $keep\` of the 4.7 GB
fixture ($(stat -c %s "$model") bytes, 28 layers) into a file of $size bytes (block_count $blocks),
every copied byte read back and compared with its source, against \`cp\` of a file of as many
bytes and \`sync\` of it. Each command run twice, alternating, the second (warm) run recorded.
$(date -u +%Y-%m-%d), $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'),
$(df -T "$dir" | awk 'NR == 2 { print $2 }'), load average $load at the start.
Goal: at most 1.0x cp + sync, peak RSS under 64 MiB; measured **${ratio}x**, $(awk -v k="$ed_kb" 'BEGIN { printf "%.1f", k / 1024 }') MiB.

| command | wall s | peak RSS MiB | what |
|---|---:|---:|---|
$(row "cp FILE OUT && sync OUT" "$cp_s" "$cp_kb" "coreutils $(cp --version | head -1 | awk '{ print $NF }'): $size bytes")
$(row "ggufkit edit FILE --keep-layers $keep -o OUT" "$ed_s" "$ed_kb" "the kept tensors copied in the kernel, verified on a second thread, flushed, renamed into place")
$xfs_row
<!-- /surgery -->
MD
)
results=$here/RESULTS.md
if [ -f "$results" ] && grep -q '<!-- surgery -->' "$results"; then
  awk -v s="$section" '/<!-- surgery -->/ { print s; skip = 1; next } /<!-- \/surgery -->/ { skip = 0; next } !skip' "$results" > "$results.new"
  mv "$results.new" "$results"
else
  printf '\n%s\n' "$section" >> "$results"
fi
rm -f "$dir/same-size.bin" "$dir/cp.bin" "$dir/half.gguf"
