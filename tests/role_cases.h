#pragma once
// Files that are not models, written by tests/gguf_py_writer.py (an encoder independent
// of ggufkit's, by gguf-py's rules) as llama.cpp's tools write them: a LoRA adapter of the
// tiny llama as convert_lora_to_gguf.py writes one, an importance matrix as llama-imatrix
// writes one, and variants of each with one defect. The release tests assert the rule
// book's verdict on each; the interop tests that llama.cpp's llama_adapter_lora_init
// refuses exactly the adapters the rule book finds an error in.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "helpers.h"

namespace role_cases {

struct SpecTensor {
  std::string name, type;  // f32 or f16
  std::vector<uint64_t> dims;
};
struct SpecKV {
  std::string key, type, value;  // value as JSON
};
struct Spec {
  std::vector<SpecKV> kv;
  std::vector<SpecTensor> tensors;

  std::string json() const {
    std::string s = "{\"kv\": [";
    for (size_t i = 0; i < kv.size(); ++i)
      s += (i ? ", " : "") + std::string("[\"") + kv[i].key + "\", \"" + kv[i].type + "\", " + kv[i].value + "]";
    s += "], \"tensors\": [";
    for (size_t i = 0; i < tensors.size(); ++i) {
      s += (i ? ", " : "") + std::string("[\"") + tensors[i].name + "\", \"" + tensors[i].type + "\", [";
      for (size_t k = 0; k < tensors[i].dims.size(); ++k) s += (k ? ", " : "") + std::to_string(tensors[i].dims[k]);
      s += "]]";
    }
    return s + "]}";
  }
  void drop_key(const std::string& key) {
    kv.erase(std::remove_if(kv.begin(), kv.end(), [&](const SpecKV& x) { return x.key == key; }), kv.end());
  }
  void set_key(const std::string& key, const std::string& type, const std::string& value) {
    for (SpecKV& x : kv)
      if (x.key == key) {
        x.type = type, x.value = value;
        return;
      }
    kv.push_back({key, type, value});
  }
  void drop_tensor(const std::string& name) {
    tensors.erase(std::remove_if(tensors.begin(), tensors.end(), [&](const SpecTensor& t) { return t.name == name; }), tensors.end());
  }
  SpecTensor& tensor(const std::string& name) {
    for (SpecTensor& t : tensors)
      if (t.name == name) return t;
    throw std::runtime_error("no tensor " + name);
  }
};

// Writes `spec` with gguf_py_writer.py; the path written.
inline std::string write_by_gguf_py(const Spec& spec, const std::string& name) {
  const std::string json = testing_helpers::temp_path(name + ".json"), out = testing_helpers::temp_path(name + ".gguf");
  std::ofstream(json) << spec.json();
  const auto r = testing_helpers::run_cli(std::string(GGUFKIT_SOURCE) + "/tests/gguf_py_writer.py " + json + " " + out, "", "python3");
  EXPECT_EQ(r.code, 0) << r.err;
  return out;
}

// A rank-4 LoRA adapter of the tiny llama (examples/tiny-llama.yaml: n_embd 64, 4 heads,
// 2 KV heads of 16, n_ff 128, 32000 tokens) as convert_lora_to_gguf.py writes one: the
// architecture first (GGUFWriter's constructor adds it), general.type adapter,
// adapter.type lora, adapter.lora.alpha (f32), then the model card's keys; tensors in
// GGUF's order of ne (innermost first): lora_a {in, r}, lora_b {r, out}, and for
// token_embd (PEFT's lora_embedding_A/B) lora_a {r, n_vocab}, lora_b {r, n_embd}; a norm
// tensor as mergekit adds, which llama.cpp skips.
inline Spec tiny_llama_adapter() {
  Spec s;
  s.kv = {{"general.architecture", "string", "\"llama\""},
          {"general.type", "string", "\"adapter\""},
          {"adapter.type", "string", "\"lora\""},
          {"adapter.lora.alpha", "f32", "8.0"},
          {"general.name", "string", "\"Tiny Llama LoRA\""},
          {"general.quantization_version", "u32", "2"},
          {"general.file_type", "u32", "0"}};
  auto pair = [&](const std::string& w, uint64_t in, uint64_t out) {
    s.tensors.push_back({w + ".lora_a", "f32", {in, 4}});
    s.tensors.push_back({w + ".lora_b", "f32", {4, out}});
  };
  s.tensors.push_back({"token_embd.weight.lora_a", "f32", {4, 32000}});
  s.tensors.push_back({"token_embd.weight.lora_b", "f32", {4, 64}});
  for (const char* b : {"blk.0.", "blk.1."}) {
    pair(std::string(b) + "attn_q.weight", 64, 64);
    pair(std::string(b) + "attn_v.weight", 64, 32);
    pair(std::string(b) + "ffn_down.weight", 128, 64);
  }
  s.tensors.push_back({"blk.0.attn_norm.weight", "f32", {64}});
  return s;
}

struct AdapterCase {
  std::string name;
  Spec spec;
  std::vector<std::string> errors;    // validate --base's error codes, in order
  std::vector<std::string> warnings;  // and its warnings
  bool needs_base = false;            // the error shows only against the base model
};

// One defect each (the first is none); each error is one llama_adapter_lora_init refuses.
inline std::vector<AdapterCase> adapter_cases() {
  std::vector<AdapterCase> cs;
  const Spec ok = tiny_llama_adapter();
  cs.push_back({"valid", ok, {}, {}});
  {
    Spec s = ok;
    s.set_key("general.architecture", "string", "\"qwen2\"");
    cs.push_back({"wrong_architecture", s, {"adapter_architecture"}, {}, true});
  }
  {
    Spec s = ok;
    s.set_key("general.type", "string", "\"model\"");
    cs.push_back({"not_an_adapter", s, {"not_an_adapter"}, {}});
  }
  {
    Spec s = ok;
    s.set_key("adapter.type", "string", "\"ia3\"");
    cs.push_back({"not_lora", s, {"adapter_not_lora"}, {}});
  }
  {
    Spec s = ok;
    s.drop_tensor("blk.1.attn_v.weight.lora_b");
    cs.push_back({"lora_b_missing", s, {"lora_pair"}, {}});
  }
  {
    Spec s = ok;
    s.tensor("blk.0.attn_q.weight.lora_a").dims = {32, 4};
    cs.push_back({"wrong_shape", s, {"lora_shape"}, {}, true});
  }
  {
    Spec s = ok;
    s.tensor("token_embd.weight.lora_b").dims = {4, 32};
    cs.push_back({"wrong_embedding_shape", s, {"lora_shape"}, {}, true});
  }
  {
    Spec s = ok;
    s.tensor("blk.1.ffn_down.weight.lora_b").dims = {8, 64};
    cs.push_back({"ranks_disagree", s, {"lora_shape"}, {}});
  }
  {
    Spec s = ok;
    s.tensors.push_back({"blk.0.attn_q.weight.lora_c", "f32", {64, 4}});
    cs.push_back({"unknown_suffix", s, {"lora_suffix"}, {}});
  }
  {
    Spec s = ok;
    s.tensors.push_back({"blk.7.attn_q.weight.lora_a", "f32", {64, 4}});
    s.tensors.push_back({"blk.7.attn_q.weight.lora_b", "f32", {4, 64}});
    cs.push_back({"no_base_tensor", s, {"lora_base_tensor"}, {}, true});
  }
  {
    Spec s = ok;
    s.set_key("adapter.alora.invocation_tokens", "array:i32", "[1, 2, 3]");
    cs.push_back({"alora_tokens_i32", s, {"role_key_type"}, {}});
  }
  {
    Spec s = ok;
    s.set_key("adapter.alora.invocation_tokens", "array:u32", "[1, 2, 3]");
    cs.push_back({"alora_tokens_u32", s, {}, {}});
  }
  {
    Spec s = ok;
    s.drop_key("adapter.lora.alpha");
    cs.push_back({"no_alpha", s, {}, {"adapter_alpha"}});
  }
  return cs;
}

// An importance matrix of the tiny llama as llama-imatrix writes one (its save_imatrix):
// general.type imatrix, imatrix.datasets, imatrix.chunk_count and imatrix.chunk_size, then
// for each weight it saw NAME.in_sum2 f32 {n_per_row, n_mat} and NAME.counts f32 {1, n_mat}.
inline Spec tiny_llama_imatrix() {
  Spec s;
  s.kv = {{"general.type", "string", "\"imatrix\""},
          {"imatrix.datasets", "array:string", "[\"wiki.train.raw\"]"},
          {"imatrix.chunk_count", "u32", "10"},
          {"imatrix.chunk_size", "u32", "512"}};
  for (const char* b : {"blk.0.", "blk.1."})
    for (const auto& [w, n] : std::vector<std::pair<std::string, uint64_t>>{{"attn_q.weight", 64}, {"ffn_down.weight", 128}}) {
      s.tensors.push_back({b + w + ".in_sum2", "f32", {n, 1}});
      s.tensors.push_back({b + w + ".counts", "f32", {1, 1}});
    }
  return s;
}

}  // namespace role_cases
