#!/usr/bin/env bash
# Prints a sketch of a Qwen2.5-7B-Instruct Q4_K_M-shaped model: qwen2, 28 blocks,
# embedding 3584, feed-forward 18944, 28 heads / 4 KV heads, 152,064 tokens (made-up texts
# but Qwen's own added tokens and padding) and 151,387 merges (made-up strings of realistic
# count), a 2.5 KB chat template, and 339 tensors
# in q4_K, q6_K and f32 with the real shapes, filled with seeded random bytes: about
# 4.7 GB that cost nothing to describe.
#
#   bench/qwen7b-sketch.sh > /tmp/qwen.yaml && build/ggufkit write /tmp/qwen.yaml -o /tmp/qwen.gguf
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
blocks=28 embd=3584 ff=18944 kv=512 vocab=152064 merges=151387

cat <<YAML
version: 3
metadata:
  - {key: general.architecture, type: string, value: qwen2}
  - {key: general.name, type: string, value: Qwen2.5 7B Instruct (shape only)}
  - {key: general.file_type, type: u32, value: 15}
  - {key: general.quantization_version, type: u32, value: 2}
  - {key: qwen2.block_count, type: u32, value: $blocks}
  - {key: qwen2.context_length, type: u32, value: 32768}
  - {key: qwen2.embedding_length, type: u32, value: $embd}
  - {key: qwen2.feed_forward_length, type: u32, value: $ff}
  - {key: qwen2.attention.head_count, type: u32, value: 28}
  - {key: qwen2.attention.head_count_kv, type: u32, value: 4}
  - {key: qwen2.rope.freq_base, type: f32, value: 1000000.0}
  - {key: qwen2.attention.layer_norm_rms_epsilon, type: f32, value: 1.0e-6}
  - {key: tokenizer.ggml.model, type: string, value: gpt2}
  - {key: tokenizer.ggml.pre, type: string, value: qwen2}
  - key: tokenizer.ggml.tokens
    type: array
    items: string
    value:
YAML
# Qwen2.5's added tokens at 151,643 on (control, then user-defined from <tool_call>), then
# the padding tokens up to the embedding's rows, as convert_hf_to_gguf.py writes them.
added="<|endoftext|> <|im_start|> <|im_end|> <|object_ref_start|> <|object_ref_end|> <|box_start|> <|box_end|>
<|quad_start|> <|quad_end|> <|vision_start|> <|vision_end|> <|vision_pad|> <|image_pad|> <|video_pad|> <tool_call>
</tool_call> <|fim_prefix|> <|fim_middle|> <|fim_suffix|> <|fim_pad|> <|repo_name|> <|file_sep|>"
awk -v n=$vocab -v added="$added" 'BEGIN {
  split(added, a, /[ \n]+/)
  for (i = 0; i < n; i++)
    if (i < 151643) printf "      - \"t%x\"\n", i
    else if (i - 151642 in a) printf "      - \"%s\"\n", a[i - 151642]
    else printf "      - \"[PAD%d]\"\n", i }'
cat <<YAML
  - key: tokenizer.ggml.token_type
    type: array
    items: i32
    value:
YAML
awk -v n=$vocab 'BEGIN { for (i = 0; i < n; i++) print "      - " (i < 151643 ? 1 : i < 151657 ? 3 : i < 151665 ? 4 : 5) }'
cat <<YAML
  - key: tokenizer.ggml.merges
    type: array
    items: string
    value:
YAML
awk -v n=$merges 'BEGIN { for (i = 0; i < n; i++) printf "      - \"t%x t%x\"\n", i % 4096, (i * 7) % 65536 }'
cat <<YAML
  - {key: tokenizer.ggml.eos_token_id, type: u32, value: 151645}
  - {key: tokenizer.ggml.padding_token_id, type: u32, value: 151643}
  - {key: tokenizer.ggml.bos_token_id, type: u32, value: 151643}
  - {key: tokenizer.ggml.add_bos_token, type: bool, value: false}
  - {key: tokenizer.chat_template, type: string, file: $here/chat_template.jinja}
tensors:
  - {name: token_embd.weight, type: q4_K, dims: [$embd, $vocab], fill: {random_bytes: {seed: 1}}}
YAML
for ((b = 0; b < blocks; b++)); do
  # Q4_K_M keeps attn_v and ffn_down in q6_K in about half the blocks.
  if (( b < 4 || b % 3 == 2 || b >= blocks - 4 )); then big=q6_K; else big=q4_K; fi
  s=$((100 + b * 20))
  cat <<YAML
  - {name: blk.$b.attn_norm.weight, type: f32, dims: [$embd], fill: ones}
  - {name: blk.$b.attn_q.weight, type: q4_K, dims: [$embd, $embd], fill: {random_bytes: {seed: $((s + 1))}}}
  - {name: blk.$b.attn_q.bias, type: f32, dims: [$embd], fill: zeros}
  - {name: blk.$b.attn_k.weight, type: q4_K, dims: [$embd, $kv], fill: {random_bytes: {seed: $((s + 2))}}}
  - {name: blk.$b.attn_k.bias, type: f32, dims: [$kv], fill: zeros}
  - {name: blk.$b.attn_v.weight, type: $big, dims: [$embd, $kv], fill: {random_bytes: {seed: $((s + 3))}}}
  - {name: blk.$b.attn_v.bias, type: f32, dims: [$kv], fill: zeros}
  - {name: blk.$b.attn_output.weight, type: q4_K, dims: [$embd, $embd], fill: {random_bytes: {seed: $((s + 4))}}}
  - {name: blk.$b.ffn_norm.weight, type: f32, dims: [$embd], fill: ones}
  - {name: blk.$b.ffn_gate.weight, type: q4_K, dims: [$embd, $ff], fill: {random_bytes: {seed: $((s + 5))}}}
  - {name: blk.$b.ffn_up.weight, type: q4_K, dims: [$embd, $ff], fill: {random_bytes: {seed: $((s + 6))}}}
  - {name: blk.$b.ffn_down.weight, type: $big, dims: [$ff, $embd], fill: {random_bytes: {seed: $((s + 7))}}}
YAML
done
cat <<YAML
  - {name: output_norm.weight, type: f32, dims: [$embd], fill: ones}
  - {name: output.weight, type: q6_K, dims: [$embd, $vocab], fill: {random_bytes: {seed: 2}}}
YAML
