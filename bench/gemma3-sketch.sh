#!/usr/bin/env bash
# Prints a sketch of a Gemma-3-1B-shaped model, the large-vocabulary case of the header bench:
# gemma3, 26 blocks, embedding 1152, feed-forward 6912, 4 heads / 1 KV head of 256, and a
# 262,144-token SentencePiece vocabulary (type llama) laid out as Gemma's is: <pad> <eos>
# <bos> <unk> <mask>, 6,242 <unusedN> control tokens, the turn markers, 256 byte tokens,
# then pieces with scores. Tensors in q4_0 and f32 with the real shapes, zeros: about 560 MB.
#
#   bench/gemma3-sketch.sh > /tmp/gemma3.yaml && build/ggufkit write /tmp/gemma3.yaml -o /tmp/gemma3.gguf
set -euo pipefail
blocks=26 embd=1152 ff=6912 vocab=262144 unused=6242

cat <<YAML
version: 3
metadata:
  - {key: general.architecture, type: string, value: gemma3}
  - {key: general.name, type: string, value: Gemma 3 1B IT (shape only)}
  - {key: general.file_type, type: u32, value: 2}
  - {key: general.quantization_version, type: u32, value: 2}
  - {key: gemma3.block_count, type: u32, value: $blocks}
  - {key: gemma3.context_length, type: u32, value: 32768}
  - {key: gemma3.embedding_length, type: u32, value: $embd}
  - {key: gemma3.feed_forward_length, type: u32, value: $ff}
  - {key: gemma3.attention.head_count, type: u32, value: 4}
  - {key: gemma3.attention.head_count_kv, type: u32, value: 1}
  - {key: gemma3.attention.key_length, type: u32, value: 256}
  - {key: gemma3.attention.value_length, type: u32, value: 256}
  - {key: gemma3.attention.sliding_window, type: u32, value: 512}
  - {key: gemma3.rope.freq_base, type: f32, value: 1000000.0}
  - {key: gemma3.attention.layer_norm_rms_epsilon, type: f32, value: 1.0e-6}
  - {key: tokenizer.ggml.model, type: string, value: llama}
  - {key: tokenizer.ggml.pre, type: string, value: default}
YAML
# id -> text, score, type: the specials, the unused block, the turn markers, the bytes, pieces.
awk -v n=$vocab -v unused=$unused '
  function tok(i) {
    if (i == 0) return "<pad>"; if (i == 1) return "<eos>"; if (i == 2) return "<bos>"; if (i == 3) return "<unk>"
    if (i == 4) return "<mask>"; if (i < 5 + unused) return sprintf("<unused%d>", i - 5)
    if (i == 5 + unused) return "<start_of_turn>"; if (i == 6 + unused) return "<end_of_turn>"
    if (i < 7 + unused + 256) return sprintf("<0x%02X>", i - 7 - unused)
    return sprintf("\\u2581p%x", i)
  }
  function type(i) { return i == 3 ? 2 : i < 7 + unused ? 3 : i < 7 + unused + 256 ? 6 : 1 }
  BEGIN {
    print "  - key: tokenizer.ggml.tokens\n    type: array\n    items: string\n    value:"
    for (i = 0; i < n; i++) printf "      - \"%s\"\n", tok(i)
    print "  - key: tokenizer.ggml.scores\n    type: array\n    items: f32\n    value:"
    for (i = 0; i < n; i++) printf "      - %s\n", type(i) == 1 ? sprintf("%.1f", -i / 16) : "0.0"
    print "  - key: tokenizer.ggml.token_type\n    type: array\n    items: i32\n    value:"
    for (i = 0; i < n; i++) printf "      - %d\n", type(i)
  }'
cat <<YAML
  - {key: tokenizer.ggml.bos_token_id, type: u32, value: 2}
  - {key: tokenizer.ggml.eos_token_id, type: u32, value: 1}
  - {key: tokenizer.ggml.unknown_token_id, type: u32, value: 3}
  - {key: tokenizer.ggml.padding_token_id, type: u32, value: 0}
  - {key: tokenizer.ggml.add_bos_token, type: bool, value: true}
  - {key: tokenizer.ggml.add_eos_token, type: bool, value: false}
  - {key: tokenizer.chat_template, type: string, value: "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n{{ m['content'] | trim }}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"}
tensors:
  - {name: token_embd.weight, type: q4_0, dims: [$embd, $vocab], fill: zeros}
YAML
for ((b = 0; b < blocks; b++)); do
  cat <<YAML
  - {name: blk.$b.attn_norm.weight, type: f32, dims: [$embd], fill: ones}
  - {name: blk.$b.attn_q.weight, type: q4_0, dims: [$embd, 1024], fill: zeros}
  - {name: blk.$b.attn_k.weight, type: q4_0, dims: [$embd, 256], fill: zeros}
  - {name: blk.$b.attn_v.weight, type: q4_0, dims: [$embd, 256], fill: zeros}
  - {name: blk.$b.attn_output.weight, type: q4_0, dims: [1024, $embd], fill: zeros}
  - {name: blk.$b.post_attention_norm.weight, type: f32, dims: [$embd], fill: ones}
  - {name: blk.$b.attn_k_norm.weight, type: f32, dims: [256], fill: ones}
  - {name: blk.$b.attn_q_norm.weight, type: f32, dims: [256], fill: ones}
  - {name: blk.$b.ffn_norm.weight, type: f32, dims: [$embd], fill: ones}
  - {name: blk.$b.ffn_gate.weight, type: q4_0, dims: [$embd, $ff], fill: zeros}
  - {name: blk.$b.ffn_up.weight, type: q4_0, dims: [$embd, $ff], fill: zeros}
  - {name: blk.$b.ffn_down.weight, type: q4_0, dims: [$ff, $embd], fill: zeros}
  - {name: blk.$b.post_ffw_norm.weight, type: f32, dims: [$embd], fill: ones}
YAML
done
echo "  - {name: output_norm.weight, type: f32, dims: [$embd], fill: ones}"
