#!/usr/bin/env bash
# Runs every command of BIN, text and --json, on the corpus and on files it writes, and
# prints what each printed (stdout, stderr), its exit status and the checksum of every
# file it wrote, with the paths made relative. The same program gives the same text:
# tests/golden/cli_outputs.txt is this text as the command line gave it when the
# front door was built (issue 26), and the CliOutputs test compares against it.
#
#   tests/cli_outputs.sh BIN CORPUS            print the record
#   tests/cli_outputs.sh BIN CORPUS GOLDEN     compare with GOLDEN; a unified diff and exit 1 when they differ
set -uo pipefail
bin=$(realpath "$1") corpus=$(realpath "$2") golden=${3:+$(realpath "$3")}
here=$(dirname "$(realpath "$0")")
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cd "$work"
export GGUFKIT_LOCK_TIMEOUT=1 SOURCE_DATE_EPOCH=0 LC_ALL=C.UTF-8
tiny=$corpus/splits/tiny-llama.gguf
set3=$corpus/splits/by-count-00003-of-00003.gguf
phi=$corpus/vocab/ggml-vocab-phi-3.gguf
spm=$corpus/vocab/ggml-vocab-llama-spm.gguf
v1=$corpus/history/ggml-vocab-llama.v1.gguf
record=$work/record.txt
n=0

# Long outputs are kept as their first 3,000 bytes and a checksum of the whole.
shown() {
  local f=$1
  if [ "$(wc -c <"$f")" -gt 6000 ]; then
    head -c 3000 "$f" | cut -c1-400
    echo
    echo "[... $(wc -l <"$f") lines, $(wc -c <"$f") bytes, sha256 $(sha256sum <"$f" | cut -c1-16)]"
  else
    cat "$f"
  fi
}

# Every file under $work but the record, with its size and checksum.
files() {
  find . -type f ! -name out.txt ! -name err.txt ! -name record.txt ! -name files.txt | sort |
    while read -r f; do echo "$f $(wc -c <"$f") $(sha256sum <"$f" | cut -c1-16)"; done
}

# run NAME ARGS...: one command, from $work, its stdin from $STDIN when set; then the
# files it wrote or changed.
run() {
  local name=$1
  shift
  n=$((n + 1))
  files >files.txt
  if [ -n "${STDIN:-}" ]; then "$bin" "$@" <"$STDIN" >out.txt 2>err.txt; else "$bin" "$@" </dev/null >out.txt 2>err.txt; fi
  local rc=$?
  # Paths made relative before anything is measured: the record holds on any machine.
  sed -i -e "s#$corpus#CORPUS#g" -e "s#$work#WORK#g" -e "s#$here#TESTS#g" out.txt err.txt
  {
    echo "=== $n $name: ggufkit $*"
    shown out.txt
    if [ -s err.txt ]; then echo "--- stderr"; shown err.txt; fi
    echo "--- exit $rc"
    files | comm -13 files.txt - | sed 's/^/wrote /'
  } | sed -e "s#$corpus#CORPUS#g" -e "s#$work#WORK#g" -e "s#$here#TESTS#g" >>"$record"
}

# Reading, on a file, a set, a vocabulary and a refused v1 file; text and --json.
for f in "$tiny" "$set3" "$phi" "$v1"; do
  for c in show meta tensors stack account validate map hash; do
    run "$c" "$c" "$f"
    run "$c json" "$c" "$f" --json
  done
done
run "show shard-only" show "$set3" --shard-only
run "meta full" meta "$phi" --full
run "get" get "$tiny" general.architecture
run "get array" get "$tiny" tokenizer.ggml.token_type
run "get missing" get "$tiny" no.such.key
run "get json" get "$tiny" general.name --json
run "template" template "$phi"
run "template list" template "$phi" --list
run "template list json" template "$phi" --list --json
run "template none" template "$tiny"
run "layer" layer "$tiny" 0
run "layer json" layer "$tiny" 1 --json
run "layer missing" layer "$tiny" 99
run "tensor" tensor "$tiny" token_embd.weight --head 4
run "tensor json" tensor "$tiny" output_norm.weight --json
run "tensor missing" tensor "$tiny" nope
run "diff same" diff "$tiny" "$corpus/splits/merged-by-llama.gguf"
run "diff json" diff "$tiny" "$corpus/splits/merged-by-llama.gguf" --json
run "diff vocab" diff "$phi" "$spm" --exit-code
run "tokenize" tokenize "$spm" "Hello world, <s>it's 2026!"
run "tokenize no special" tokenize "$phi" "<|user|>Hi<|end|>" --no-parse-special --no-add-special --ids
run "tokenize ids" tokenize "$phi" "<|user|>Hi<|end|>" --ids
run "tokenize json" tokenize "$corpus/vocab/ggml-vocab-gpt-2.gguf" $'Hello  world\n' --json
run "tokenize bert" tokenize "$corpus/vocab/ggml-vocab-bert-bge.gguf" $'Caf\xc3\xa9 NAIVE' --ids
run "tokenize none" tokenize "$tiny"
run "detokenize" detokenize "$spm" 1 15043 3186
run "detokenize json" detokenize "$phi" 32010 6324 32007 --json
run "detokenize range" detokenize "$spm" 32000
run "hash sha256" hash "$tiny" --algo sha256
run "validate strict" validate "$phi" --strict
STDIN=$tiny run "show stdin" show -
STDIN=$tiny run "meta stdin json" meta - --json
STDIN=$tiny run "validate stdin" validate -

# Writing: each writing command, text and --json, and the refusals.
run "example" example -o ex.gguf
run "example again" example -o ex.gguf
run "rewrite" rewrite "$tiny" -o re.gguf
run "rewrite json" rewrite "$tiny" -o re2.gguf --json
run "edit dry" edit "$tiny" --set general.name=Golden --dry-run
run "edit dry json" edit "$tiny" --set general.name=Golden --dry-run --json
run "edit eos refused" edit "$tiny" --eos-token-id 99999 -o e1.gguf
run "edit eos allow" edit "$tiny" --eos-token-id 99999 --allow-broken -o e2.gguf
run "edit eos json" edit "$tiny" --eos-token-id 1 -o e3.gguf --json
run "edit nothing" edit "$tiny" --set general.architecture=llama -o e4.gguf
run "edit template" edit "$phi" --chat-template-file "$corpus/templates/Qwen-Qwen2.5-7B-Instruct.jinja" -o e5.gguf
run "edit template bad" edit "$phi" --set 'tokenizer.chat_template={% if %}' -o e6.gguf
printf '{%% if %%}broken' >bad.jinja
run "edit template syntax" edit "$phi" --chat-template-file bad.jinja -o e8.gguf
run "edit template forced" edit "$phi" --chat-template-file bad.jinja --no-template-check -o e9.gguf
run "edit template warning" edit "$tiny" --chat-template '<|im_start|>{{ bos_token }}' -o e10.gguf
run "edit set typed" edit "$tiny" --set-typed my.key=array[u32]:[1,2] --remove general.name --rename llama.rope.dimension_count=llama.rope.dims -o e11.gguf --json
run "edit patch file" edit "$tiny" --patch "$here/../examples/patches/fix-model.yaml" -o e12.gguf
run "edit set split key" edit "$set3" --set split.count=4 -o e13
run "edit convert set" convert "$set3" --byte-order big -o e14
run "edit special" edit "$phi" --special-token eos='<|end|>' -o e7.gguf
run "edit keep layers" edit "$tiny" --keep-layers 1 -o s1.gguf
run "edit keep layers json" edit "$tiny" --remove-layers 0 --dry-run --json
run "edit rename tensor" edit "$tiny" --rename-tensor 'blk.*.attn_q.*=blk.*.q.*' --dry-run
run "edit remove tensor refused" edit "$tiny" --remove-tensor 'blk.0.ffn_*' -o s2.gguf
run "edit remove tensor none" edit "$tiny" --remove-tensor 'blk.7.*' -o s3.gguf
run "edit layers past" edit "$tiny" --keep-layers 0-4 -o s4.gguf
run "edit set keep layers" edit "$set3" --keep-layers 0 -o s5
run "extract tensors" extract "$tiny" -t 'token_embd.*' -o s6.gguf
run "edit render" edit "$phi" --chat-template-file "$corpus/templates/Qwen-Qwen2.5-7B-Instruct.jinja" --dry-run \
  --render "$here/template/conversations/03-several-turns.json"
cp "$tiny" inplace.gguf
chmod u+w inplace.gguf
run "edit in place" edit inplace.gguf --set general.name=Golden --in-place
run "edit in place json" edit inplace.gguf --eos-token-id 1 --in-place --json
run "edit in place whole" edit inplace.gguf --set general.name=Whole --in-place --whole-file
run "edit header-only refused" edit inplace.gguf --alignment 64 --in-place --header-only
run "edit both" edit inplace.gguf --set general.name=X -o x.gguf --in-place
run "realign" realign "$tiny" -a 64 -o r64.gguf
run "realign json" realign r64.gguf -a default -o r32.gguf --json
run "convert" convert "$tiny" --byte-order big -o big.gguf
run "convert back" convert big.gguf --byte-order little -o little.gguf --json
run "split" split "$tiny" -o part --max-tensors 8
run "split json" split "$tiny" -o jpart --max-size 2M --json
run "merge" merge part-00001-of-00003.gguf -o merged.gguf
run "merge json" merge part-00002-of-00003.gguf -o merged2.gguf --json
for f in part-0000*.gguf; do chmod u+w "$f"; done
run "set edit in place" edit part-00003-of-00003.gguf --set general.name=SetName --in-place
run "set edit json" edit part-00002-of-00003.gguf --set general.name=SetJson -o newset --json
run "set edit dry" edit part-00001-of-00003.gguf --set general.name=Dry --dry-run
run "set realign" realign part-00001-of-00003.gguf -a 64 -o set64
run "dump" dump ex.gguf
run "dump json" dump ex.gguf --format json --inline-data
run "dump to file" dump ex.gguf -o ex.yaml
run "write" write ex.yaml -o ex2.gguf --map
run "write json map" write ex.yaml -o ex3.gguf --map --json
run "recover none" recover inplace.gguf

# The command line itself.
run "no args"
run "help" --help
run "version" --version
run "unknown" shwo "$tiny"
run "bad option" show "$tiny" --nope
run "missing file" show nope.gguf
run "missing arg" layer "$tiny"
for c in show meta get template tensors stack layer account tensor diff hash validate map tokenize detokenize rewrite edit realign \
  convert split merge write dump example corrupt recover; do
  run "$c help" "$c" --help
done

# The command line as people type it (issue 48): plain text for string keys, gguf-py's
# forms answered with ours, "did you mean", findings normal for most files only on asking.
run "set text" edit "$tiny" --set 'general.name=Llama: the tiny one' --set 'general.description=[draft] tiny' --dry-run
run "set text quotes" edit "$tiny" --set 'general.name="My Model"' --dry-run
run "set yaml" edit "$tiny" --set-yaml 'general.name="My Model"' --set-yaml 'general.tags=[a, b]' --dry-run
run "set yaml unquoted" edit "$tiny" --set-yaml 'general.description=[draft] tiny' --dry-run
run "set yaml colon" edit "$tiny" --set-yaml 'general.name=Llama: the tiny one' --dry-run
run "set new key text" edit "$tiny" --set 'my.note=Llama: tiny' --dry-run
run "set typed string" edit "$tiny" --set-typed 'my.note=string:Llama: tiny' --dry-run
run "set number not yaml" edit "$tiny" --set 'llama.block_count=two' --dry-run
run "chat template text" edit "$tiny" --chat-template '{% for m in messages %}{{ m.content }}{% endfor %}' --dry-run
run "chat template inline bad" edit "$tiny" --chat-template '{% if %}' --dry-run
run "gguf-py special token" edit "$tiny" --special-token eos '</s>' --dry-run
run "gguf-py special token id" edit "$tiny" --special-token-id eos 2 --dry-run
run "gguf-py set metadata" edit "$tiny" general.name Foo --dry-run
run "gguf-py realign" realign "$tiny" 64 -o r64.gguf
run "mean dry-run" edit "$tiny" --dry --set general.name=x
run "mean ids" tokenize "$tiny" --id 1
run "mean tensor" tensor "$tiny" blk.0.attn_q
run "mean tensors" tensor "$tiny" blk.0.attn
run "validate verbose" validate "$tiny" --verbose
run "validate quiet" validate "$tiny" --quiet
run "validate quiet error" validate "$corpus/splits/by-count-00002-of-00003.gguf" --shard-only --quiet --strict
# Pictures and diffs (issue 48): a tensor's values as bars, an added key on one line, a
# template as a diff of its lines, and realign -a 32 saying how to get the original back.
run "tensor histogram" tensor "$tiny" token_embd.weight --histogram --bins 10 --head 2
run "realign 64 again" realign "$tiny" -a 64 -o h64.gguf
run "realign 32 after 64" realign h64.gguf -a 32 -o h32.gguf
run "diff added key" diff "$tiny" h32.gguf
run "diff removed key" diff h32.gguf "$tiny"
run "edit template" edit "$tiny" --chat-template '{% for m in messages %}{{ m.content }}
{% endfor %}' --no-template-check -o tpl.gguf
run "diff template" diff "$tiny" tpl.gguf
run "help help" help --help

if [ -z "$golden" ]; then
  cat "$record"
  exit 0
fi
if diff -u "$golden" "$record" >diff.txt; then
  echo "the $n commands print, exit and write as $golden records"
  exit 0
fi
cat diff.txt
exit 1
