// The key rules (check/src/key_rules.cpp): each standard key held to the type and the values
// the key registry says llama.cpp reads it with (key_type, key_type_unusual, key_range,
// key_value_unusual), general.file_type to the tensors' types (file_type_mismatch), and
// general.name and the file's name to what they should say (name_is_hash, name_is_path,
// file_name_mismatch). Each file below has exactly one defect and gets exactly its finding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "ggufkit/check.h"
#include "ggufkit/error.h"
#include "ggufkit/registry.h"
#include "ggufkit/scan.h"
#include "ggufkit/sketch.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;

namespace {

// A small llama of 2 blocks 256 wide, its weights laid out as llama-quantize's Q4_K_M lays
// them (q4_K; q6_K for the output and block 0's attn_v and ffn_down), with no vocabulary.
// The parts a test changes are fields of Parts.
struct Parts {
  std::string name = "Tiny Test", size_label = "8B", file_type = "15", context = "{type: u32, value: 256}";
  std::string weights = "q4_K", more = "q6_K", embd = "q4_K";  // most weights; attn_v, ffn_down of block 0 and output; token_embd
  uint64_t width = 256, rows = 16;  // the embedding width; the vocabulary's rows of token_embd and output
  std::string keys;  // more metadata lines
};
std::string model_yaml(const Parts& p) {
  const std::string w = std::to_string(p.width), ff = std::to_string(2 * p.width);
  std::string y = "version: 3\nmetadata:\n"
                  "  - {key: general.architecture, type: string, value: llama}\n"
                  "  - {key: general.name, type: string, value: \"" + p.name + "\"}\n"
                  "  - {key: general.size_label, type: string, value: \"" + p.size_label + "\"}\n"
                  "  - {key: general.file_type, type: u32, value: " + p.file_type + "}\n"
                  "  - {key: general.quantization_version, type: u32, value: 2}\n"
                  "  - {key: llama.context_length, " + p.context.substr(1) + "\n"
                  "  - {key: llama.embedding_length, type: u32, value: " + w + "}\n"
                  "  - {key: llama.block_count, type: u32, value: 2}\n"
                  "  - {key: llama.feed_forward_length, type: u32, value: " + ff + "}\n"
                  "  - {key: llama.attention.head_count, type: u32, value: 2}\n"
                  "  - {key: llama.attention.layer_norm_rms_epsilon, type: f32, value: 1.0e-5}\n" + p.keys +
                  "tensors:\n";
  auto tensor = [&](const std::string& name, const std::string& type, const std::string& dims) {
    y += "  - {name: " + name + ", type: " + type + ", dims: [" + dims + "], fill: zeros}\n";
  };
  tensor("token_embd.weight", p.embd, w + ", " + std::to_string(p.rows));
  tensor("output_norm.weight", "f32", w);
  tensor("output.weight", p.more, w + ", " + std::to_string(p.rows));
  for (int b = 0; b < 2; ++b) {
    const std::string blk = "blk." + std::to_string(b) + ".";
    tensor(blk + "attn_norm.weight", "f32", w);
    tensor(blk + "attn_q.weight", p.weights, w + ", " + w);
    tensor(blk + "attn_k.weight", p.weights, w + ", " + w);
    tensor(blk + "attn_v.weight", b == 0 ? p.more : p.weights, w + ", " + w);
    tensor(blk + "attn_output.weight", p.weights, w + ", " + w);
    tensor(blk + "ffn_norm.weight", "f32", w);
    tensor(blk + "ffn_gate.weight", p.weights, w + ", " + ff);
    tensor(blk + "ffn_up.weight", p.weights, w + ", " + ff);
    tensor(blk + "ffn_down.weight", b == 0 ? p.more : p.weights, ff + ", " + w);
  }
  return y;
}

// The model written as `file_name` in the test's folder.
std::string model_file(const std::string& file_name, const Parts& p = {}) {
  const std::string path = temp_path(file_name);
  write_file_bytes(path, sketch_bytes(parse_sketch(model_yaml(p), "model.yaml", temp_dir())));
  return path;
}

// Where the value of `key` starts in the file.
uint64_t value_at(const std::string& path, const std::string& key) {
  Scanned s = scan_file(path);
  for (size_t i = 0; i < s.model.metadata.size(); ++i)
    if (s.model.metadata.key(i) == key) return *s.model.metadata.value_offset(i);
  ADD_FAILURE() << key << " is not in " << path;
  return 0;
}

bool new_code(Code c) { return c >= Code::key_type && c <= Code::file_name_mismatch; }

// The one finding of a file with one defect (and of none of the other new codes).
Finding only(const std::vector<Finding>& fs) {
  std::string all;
  for (const Finding& f : fs) all += "\n  [" + std::string(code_name(f.code)) + "] " + f.message;
  EXPECT_EQ(fs.size(), 1u) << all;
  return fs.empty() ? Finding{} : fs[0];
}

}  // namespace

TEST(KeyRegistry, SaysTheTypesLlamaCppReadsAndWhoReadsThem) {
  const Registry& r = Registry::builtin();
  const KeySpec* kv = r.find("llama.attention.head_count_kv", "llama");
  ASSERT_NE(kv, nullptr);
  EXPECT_EQ(kv->read, KeyRead::model);
  EXPECT_TRUE(kv->per_layer);  // get_key_or_arr
  EXPECT_EQ(kv->wanted(), "u32, or an array of u32, i32 or bool (one per block)");
  EXPECT_TRUE(kv->accepts(ValueType::u32, ValueType::u8));
  EXPECT_TRUE(kv->accepts(ValueType::array, ValueType::i32));
  EXPECT_FALSE(kv->accepts(ValueType::i32, ValueType::u8));  // a scalar is get_key: u32 only
  EXPECT_FALSE(kv->accepts(ValueType::array, ValueType::u64));
  const KeySpec* scores = r.find("tokenizer.ggml.scores", "llama");
  EXPECT_EQ(scores->read, KeyRead::vocab);
  EXPECT_EQ(scores->wanted(), "array of f32 or i32");
  EXPECT_TRUE(scores->accepts(ValueType::array, ValueType::i32));
  EXPECT_EQ(r.find("tokenizer.ggml.token_type", "llama")->wanted(), "array of i32");
  EXPECT_EQ(r.find("tokenizer.ggml.bos_token_id", "llama")->type, ValueType::u32);
  EXPECT_EQ(r.find("tokenizer.ggml.add_bos_token", "llama")->type, ValueType::boolean);
  EXPECT_EQ(r.find("general.alignment", "llama")->read, KeyRead::elsewhere);
  EXPECT_EQ(r.find("general.file_type", "llama")->read, KeyRead::model);
  EXPECT_EQ(r.find("qwen2.attention.layer_norm_rms_epsilon", "qwen2")->read, KeyRead::some);
  EXPECT_TRUE(r.find("qwen2.attention.layer_norm_rms_epsilon", "qwen2")->positive);
  const KeySpec* blocks = r.find("llama.block_count", "llama");
  ASSERT_TRUE(blocks->range);
  EXPECT_EQ(blocks->range->min, 0);
  EXPECT_EQ(blocks->range->max, 512);  // LLAMA_MAX_LAYERS
  EXPECT_EQ(r.find("llama.rope.scaling.type", "llama")->values, (std::vector<std::string>{"none", "linear", "yarn", "longrope"}));
  EXPECT_TRUE(std::isinf(r.find("llama.context_length", "llama")->expect->max));
  // the new fields are checked as the registry loads
  auto refused = [](const std::string& yaml) {
    try {
      Registry::parse(yaml, "t.yaml");
    } catch (const Error& e) {
      return e.message;
    }
    return std::string("accepted");
  };
  EXPECT_NE(refused("keys:\n  k: {type: u32, read: always}\n").find("unknown read 'always' (model, vocab or elsewhere)"), std::string::npos);
  EXPECT_NE(refused("keys:\n  k: {type: u32, range: [5, 1]}\n").find("expected [min, max] with min <= max"), std::string::npos);
  EXPECT_NE(refused("keys:\n  k: {type: string, per_layer: true}\n").find("per_layer: is for a u32, i32 or f32 key"), std::string::npos);
  EXPECT_NE(refused("keys:\n  k: {type: u32, values: [a]}\n").find("values: is a list of strings, for a string key"), std::string::npos);
  EXPECT_NE(refused("keys:\n  k: {type: u32, also: [i32]}\n").find("also: is a list of element types, for an array"), std::string::npos);
}

TEST(KeyRules, TheModelAsQuantizeLaysItOutHasNoFinding) {
  EXPECT_TRUE(validate_file(model_file("Tiny-8B-Q4_K_M.gguf")).empty());
  // Q4_K_S has the same main type; a bare Q4_K in the name is llama-quantize's alias of Q4_K_M
  Parts s;
  s.file_type = "14";
  EXPECT_TRUE(validate_file(model_file("Tiny-8B-Q4_K.gguf", s)).empty());
  EXPECT_TRUE(validate_file(model_file("tiny-8b-instruct-q4_k_s.gguf", s)).empty());
}

TEST(KeyType, AKeyOfAnotherTypeThanLlamaCppReadsIsAnErrorAtItsValueWithTheRetypingEdit) {
  Parts p;
  p.context = "{type: u64, value: 256}";
  const std::string path = model_file("context-u64.gguf", p);
  const Finding f = only(validate_file(path));
  EXPECT_EQ(f.code, Code::key_type);
  EXPECT_EQ(f.severity, Severity::error);
  EXPECT_EQ(f.place, Place::key("llama.context_length"));
  EXPECT_EQ(f.offset, value_at(path, "llama.context_length"));
  EXPECT_EQ(f.message, "llama.context_length is u64; llama.cpp reads it as u32 and refuses to load the model "
                       "(\"key llama.context_length has wrong type\")");
  EXPECT_EQ(f.fix, "ggufkit edit FILE --remove llama.context_length --set llama.context_length=256 --in-place");
  // a value that does not fit the type wanted gets no edit
  p.context = "{type: i32, value: -1}";
  const Finding neg = only(validate_file(model_file("context-neg.gguf", p)));
  EXPECT_EQ(neg.message, "llama.context_length is i32; llama.cpp reads it as u32 and refuses to load the model "
                         "(\"key llama.context_length has wrong type\")");
  EXPECT_EQ(neg.fix, "");
}

TEST(KeyType, APerLayerArrayOfOnePerBlockIsTakenAndOfAnotherLengthIsNot) {
  Parts p;
  p.keys = "  - {key: llama.attention.head_count_kv, type: array, items: i32, value: [2, 1]}\n";
  EXPECT_TRUE(validate_file(model_file("kv-array.gguf", p)).empty());  // gguf-py writes per-layer lists as i32
  p.keys = "  - {key: llama.attention.head_count_kv, type: array, items: bool, value: [true, true]}\n";
  // get_arr into std::array takes bools, each as 1: the type is right, but one KV head no
  // longer fits k and v sized for two (llama.cpp refuses the shapes, as the tensor table says)
  const std::vector<Finding> bools = validate_file(model_file("kv-bools.gguf", p));
  ASSERT_EQ(bools.size(), 4u);
  for (const Finding& f : bools) EXPECT_EQ(f.code, Code::tensor_shape) << f.message;
  EXPECT_EQ(bools[0].message, "blk.0.attn_k.weight is 256x256; llama.cpp expects 256x128 "
                              "(n_embd 256, n_embd_k_gqa 128 = n_embd_head_k 128 * n_head_kv 1)");
  p.keys = "  - {key: llama.attention.head_count_kv, type: array, items: u32, value: [2, 2, 2]}\n";
  const std::string three = model_file("kv-three.gguf", p);
  const Finding f = only(validate_file(three));
  EXPECT_EQ(f.code, Code::key_type);
  EXPECT_EQ(f.offset, value_at(three, "llama.attention.head_count_kv"));
  EXPECT_EQ(f.message, "llama.attention.head_count_kv is an array of 3 items, but llama.block_count is 2; llama.cpp wants one "
                       "per block and refuses to load the model (\"key llama.attention.head_count_kv has wrong array length\")");
  p.keys = "  - {key: llama.attention.head_count_kv, type: array, items: f32, value: [2, 2]}\n";
  const Finding floats = only(validate_file(model_file("kv-floats.gguf", p)));
  EXPECT_EQ(floats.code, Code::key_type);
  EXPECT_EQ(floats.message, "llama.attention.head_count_kv is array of f32; llama.cpp reads it as u32, or an array of u32, i32 "
                            "or bool (one per block) and refuses to load the model (\"key llama.attention.head_count_kv has wrong type\")");
}

TEST(KeyTypeUnusual, AKeyOnlySomeArchitecturesReadIsAWarning) {
  Parts p;
  p.keys = "  - {key: llama.attention.sliding_window, type: u64, value: 4096}\n";
  const std::string path = model_file("swa-u64.gguf", p);
  const Finding f = only(validate_file(path));
  EXPECT_EQ(f.code, Code::key_type_unusual);
  EXPECT_EQ(f.severity, Severity::warning);
  EXPECT_EQ(f.offset, value_at(path, "llama.attention.sliding_window"));
  EXPECT_EQ(f.message, "llama.attention.sliding_window is u64; it is written as u32, and llama.cpp, for the architectures that "
                       "read it, takes only that");
  EXPECT_EQ(f.fix, "ggufkit edit FILE --remove llama.attention.sliding_window --set llama.attention.sliding_window=4096 --in-place");
}

TEST(KeyTypeUnusual, AnAdapterAnImatrixOrAnMmprojIsNoModelToRefuse) {
  // llama.cpp reads no hyperparameters of them: a mistyped one is a warning, the file type
  // and the values are not judged (their role's own rules, test_roles.cpp's, are not these)
  for (const std::string kind : {"  - {key: general.type, type: string, value: adapter}\n",
                                 "  - {key: general.type, type: string, value: imatrix}\n"}) {
    Parts p;
    p.context = "{type: u64, value: 0}";
    p.file_type = "7";  // the weights are q4_K
    p.keys = kind;
    std::vector<Finding> fs;
    for (const Finding& f : validate_file(model_file("not-a-model.gguf", p)))
      if (new_code(f.code)) fs.push_back(f);
    const Finding f = only(fs);
    EXPECT_EQ(f.code, Code::key_type_unusual) << kind;
    EXPECT_EQ(f.place, Place::key("llama.context_length"));
  }
  Model clip = scan_file(model_file("clip.gguf")).model;
  for (size_t i = 0; i < clip.metadata.size(); ++i)
    if (clip.metadata.key(i) == "general.architecture") clip.metadata.edit(i).value = Value::of_string("clip");
  clip.metadata.push_back({"clip.block_count", Value::of_u64(600)});
  clip.metadata.push_back({"general.file_type", Value::of_u32(4)});
  std::vector<Finding> found;
  for (const Finding& f : check_model(clip, plan(clip)))
    if (new_code(f.code)) found.push_back(f);
  const Finding f = only(found);
  EXPECT_EQ(f.code, Code::key_type_unusual);
  EXPECT_EQ(f.message, "clip.block_count is u64; it is written as u32, and llama.cpp, for the architectures that read it, takes only that");
}

TEST(KeyRange, AValueLlamaCppRefusesIsAnError) {
  Parts p;
  p.keys = "  - {key: llama.rope.scaling.type, type: string, value: dynamic}\n";
  const std::string path = model_file("rope-dynamic.gguf", p);
  const Finding f = only(validate_file(path));
  EXPECT_EQ(f.code, Code::key_range);
  EXPECT_EQ(f.severity, Severity::error);
  EXPECT_EQ(f.offset, value_at(path, "llama.rope.scaling.type"));
  EXPECT_EQ(f.message, "llama.rope.scaling.type is \"dynamic\", which llama.cpp does not know (it takes none, linear, yarn, "
                       "longrope) and aborts on load");
  p.keys = "  - {key: llama.expert_count, type: u32, value: 2000}\n";
  const std::string experts = model_file("experts.gguf", p);
  // The tensor table adds what 2000 experts ask of the loader: each layer's router and
  // expert tensors are missing, and its dense feed-forward ones are then not taken.
  std::vector<Finding> all = validate_file(experts);
  auto count = [&](Code c) { return std::count_if(all.begin(), all.end(), [&](const Finding& x) { return x.code == c; }); };
  EXPECT_EQ(count(Code::tensor_missing), 6);     // ffn_gate_inp, ffn_down_exps, ffn_up_exps of blk.0 and blk.1
  EXPECT_EQ(count(Code::tensor_unexpected), 6);  // ffn_gate, ffn_down, ffn_up of blk.0 and blk.1
  std::erase_if(all, [](const Finding& x) { return x.code == Code::tensor_missing || x.code == Code::tensor_unexpected; });
  const Finding e = only(all);
  EXPECT_EQ(e.code, Code::key_range);
  EXPECT_EQ(e.offset, value_at(experts, "llama.expert_count"));
  EXPECT_EQ(e.message, "llama.expert_count = 2000: llama.cpp takes 0 to 1024 and refuses to load the model");
}

TEST(KeyValueUnusual, ASurprisingValueIsAWarning) {
  struct Case { std::string keys, file_type, key, message; };
  const std::vector<Case> cases = {
      {"  - {key: llama.rope.freq_base, type: f32, value: 0.0}\n", "15", "llama.rope.freq_base",
       "llama.rope.freq_base = 0: a value above 0 is expected"},
      {"  - {key: llama.attention.layer_norm_epsilon, type: f32, value: -1.0e-6}\n", "15", "llama.attention.layer_norm_epsilon",
       "llama.attention.layer_norm_epsilon = -1e-06: a value above 0 is expected"},
      {"  - {key: llama.pooling_type, type: u32, value: 9}\n", "15", "llama.pooling_type", "llama.pooling_type = 9: 0 to 4 is expected"},
      {"", "4", "general.file_type", "general.file_type = 4 is no file type llama.cpp knows (it prints \"unknown, may not work\")"},
      {"", "1039", "general.file_type",
       "general.file_type = 1039 carries llama.cpp's \"guessed\" flag (1024), which its loader sets in memory for a file without "
       "the key and llama-quantize never writes; the type is 15 (Q4_K_M)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    Parts p;
    p.keys = c.keys;
    p.file_type = c.file_type;
    const std::string path = model_file("unusual.gguf", p);
    const Finding f = only(validate_file(path));
    EXPECT_EQ(f.code, Code::key_value_unusual);
    EXPECT_EQ(f.severity, Severity::warning);
    EXPECT_EQ(f.place.name, c.key);
    EXPECT_EQ(f.offset, value_at(path, c.key));
    EXPECT_EQ(f.message, c.message);
  }
  // general.quantization_version is in every file of the model above: 1 is before ggml's 2
  Model m = scan_file(model_file("qv.gguf")).model;
  for (size_t i = 0; i < m.metadata.size(); ++i)
    if (m.metadata.key(i) == "general.quantization_version") m.metadata.edit(i).value = Value::of_u32(1);
  const Finding f = only(check_model(m, plan(m)));
  EXPECT_EQ(f.message, "general.quantization_version = 1: 2 is expected");
}

TEST(FileTypeMismatch, AFileTypeNoWeightIsOfIsAWarningWithLlamaCppsGuessAsTheFix) {
  Parts p;
  p.file_type = "7";  // Q8_0, over q4_K weights
  const std::string path = model_file("q8-says.gguf", p);
  const Finding f = only(validate_file(path));
  EXPECT_EQ(f.code, Code::file_type_mismatch);
  EXPECT_EQ(f.severity, Severity::warning);
  EXPECT_EQ(f.place, Place::key("general.file_type"));
  EXPECT_EQ(f.offset, value_at(path, "general.file_type"));
  EXPECT_EQ(f.message, "general.file_type = 7 (Q8_0) names q8_0 weights, but none of the 16 weight tensors (2-D or more, of rows "
                       "of whole q8_0 blocks) is q8_0: they are 13 q4_K, 3 q6_K; without the key llama.cpp would guess 15 "
                       "(Q4_K_M) from them");
  EXPECT_EQ(f.fix, "ggufkit edit FILE --set general.file_type=15 --in-place");
  // A type that quantizes every layer alike: most weights of another type is a mismatch too
  Parts pure;
  pure.file_type = "1";  // F16 over q8_0 weights with a few f16
  pure.weights = "q8_0", pure.embd = "q8_0", pure.more = "f16";
  const Finding most = only(validate_file(model_file("f16-says.gguf", pure)));
  EXPECT_EQ(most.code, Code::file_type_mismatch);
  EXPECT_EQ(most.message, "general.file_type = 1 (F16) names f16 weights, but most of the 16 weight tensors (2-D or more, "
                          "of rows of whole f16 blocks) are q8_0: they are 13 q8_0, 3 f16; without the key llama.cpp would guess "
                          "7 (Q8_0) from them");
}

TEST(FileTypeMismatch, MixesFallbacksAndTiesAreNoMismatch) {
  // Q4_0 layers under a q8_0 embedding and output that outweigh them (a small model of a
  // large vocabulary): the layers outnumber them, so no finding
  Parts small;
  small.file_type = "2", small.weights = "q4_0", small.more = "q8_0", small.embd = "q8_0", small.rows = 8192;
  EXPECT_TRUE(validate_file(model_file("q4_0-mix.gguf", small)).empty());
  // rows of 64 hold no q4_K block: llama-quantize falls back (q5_0, q8_0), and Q4_K_M is
  // still what the file is
  Parts narrow;
  narrow.width = 64, narrow.weights = "q5_0", narrow.more = "q8_0", narrow.embd = "q5_0";
  EXPECT_TRUE(validate_file(model_file("narrow.gguf", narrow)).empty());
  // the project's tiny llama: Q8_0 with as many f16 attention weights as q8_0 ones (a tie)
  for (const Finding& f : validate_file(tiny_llama())) EXPECT_FALSE(new_code(f.code)) << f.message;
}

TEST(GeneralName, AHashOrAPathIsNotAModelsName) {
  struct Case { std::string name; Code code; std::string message; };
  const std::vector<Case> cases = {
      {"5f0b02c75b57c5855da9ae460ce51323ea669d8a", Code::name_is_hash,
       "general.name is \"5f0b02c75b57c5855da9ae460ce51323ea669d8a\", a hash of 40 hex digits (a snapshot or blob id the model was "
       "converted from), not the model's name; tools show it as the model's name"},
      {"sha256-6a0746a1ec1aef3e7ec53868f220ff6e389f6f8ef87a01d77c96807de94ca2aa", Code::name_is_hash, ""},
      {"models/llama-7b", Code::name_is_path,
       "general.name is \"models/llama-7b\", a path or a file name (the folder or file it was converted from), not the model's "
       "name; tools show it as the model's name"},
      {"C:\\\\models\\\\llama", Code::name_is_path, ""},
      {"./llama", Code::name_is_path, ""},
      {"~/llama", Code::name_is_path, ""},
      {"model.safetensors", Code::name_is_path, ""},
      {"pytorch_model.bin", Code::name_is_path, ""},
      {"Llama-3.1-8B.GGUF", Code::name_is_path, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Parts p;
    p.name = c.name;
    const std::string path = model_file("named.gguf", p);
    const Finding f = only(validate_file(path));
    EXPECT_EQ(f.code, c.code);
    EXPECT_EQ(f.severity, Severity::warning);
    EXPECT_EQ(f.offset, value_at(path, "general.name"));
    if (!c.message.empty()) {
      EXPECT_EQ(f.message, c.message);
    }
    EXPECT_EQ(f.fix, "ggufkit edit FILE --set general.name=NAME --in-place");
  }
  for (const std::string ok : {"Llama 3.1 8B Instruct", "Qwen2.5-Coder-7B-Instruct", "Phi-3.5 mini", "deadbeef 7B"}) {
    Parts p;
    p.name = ok;
    EXPECT_TRUE(validate_file(model_file("named.gguf", p)).empty()) << ok;
  }
}

TEST(FileNameMismatch, AnEncodingInTheNameThatIsNotTheFileTypeIsAWarningAtTheKey) {
  const std::string path = model_file("Tiny-8B-Q8_0.gguf");  // the file type is 15
  const Finding f = only(validate_file(path));
  EXPECT_EQ(f.code, Code::file_name_mismatch);
  EXPECT_EQ(f.severity, Severity::warning);
  EXPECT_EQ(f.place, Place::key("general.file_type", "file name"));
  EXPECT_EQ(f.offset, value_at(path, "general.file_type"));
  EXPECT_EQ(f.message, "the file is named \"Tiny-8B-Q8_0.gguf\", of encoding Q8_0, but general.file_type is 15 (Q4_K_M); one of "
                       "them is wrong");
  // the model in memory (an edit's result) has no file name to judge
  Scanned s = scan_file(path);
  for (const Finding& x : check_model(s.model, s.layout)) EXPECT_FALSE(new_code(x.code)) << x.message;
  // the same through validate, with the path as given
  CliRun r = run_cli("validate " + path);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("warning file_name_mismatch at byte " + std::to_string(*f.offset) + ": the file is named"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(": 0 errors, 1 warnings"), std::string::npos) << r.out;
}

TEST(FileNameMismatch, ASizeLabelInTheNameThatIsNotTheMetadatasIsAWarningAtTheKey) {
  const std::string path = model_file("Tiny-70B-Instruct-Q4_K_M.gguf");  // general.size_label is 8B
  const Finding f = only(validate_file(path));
  EXPECT_EQ(f.code, Code::file_name_mismatch);
  EXPECT_EQ(f.place, Place::key("general.size_label", "file name"));
  EXPECT_EQ(f.offset, value_at(path, "general.size_label"));
  EXPECT_EQ(f.message, "the file is named \"Tiny-70B-Instruct-Q4_K_M.gguf\", of size 70B, but general.size_label is \"8B\"; one "
                       "of them is wrong");
  // the shard and the type parts of the name are not the encoding
  EXPECT_EQ(only(validate_file(model_file("Tiny-70B-Q4_K_M-00001-of-00002.gguf"))).place, Place::key("general.size_label", "file name"));
  EXPECT_EQ(only(validate_file(model_file("Tiny-70B-Q4_K_M-vocab.gguf"))).place, Place::key("general.size_label", "file name"));
}

TEST(FileNameMismatch, NamesThatDoNotClearlyFollowTheConventionOrAgreeAreNoFinding) {
  Parts phi;
  phi.size_label = "3.8B";
  Parts moe;
  moe.size_label = "30B-A3B";
  Parts experts;
  experts.size_label = "8x7B";
  const std::vector<std::pair<std::string, Parts>> names = {
      {"Tiny-8B-Q4_K_M.gguf", {}},
      {"tiny.Q8_0.gguf", {}},                        // TheBloke's dots: not the convention
      {"Tiny-8B-Q4_K_XL.gguf", {}},                  // no encoding llama-quantize names
      {"Q8_0.gguf", {}},                             // an encoding alone, no base name
      {"Tiny-7B-Q4_K_M.gguf", {}},                   // within half again of 8B
      {"Tiny-v0.1-Q4_K_M.gguf", {}},                 // no size in the name
      {"Phi-3-mini-4k-instruct-Q4_K_M.gguf", phi},   // 4k is a context length
      {"Qwen3-30B-A3B-Q4_K_M.gguf", moe},            // the label as the name gives it
      {"Mixtral-8x7B-v0.1-Q4_K_M.gguf", experts},
      {"Mixtral-56B-Q4_K_M.gguf", experts},          // 8x7B is 56B
      {"model.gguf", {}},
  };
  for (const auto& [name, p] : names) EXPECT_TRUE(validate_file(model_file(name, p)).empty()) << name;
}

TEST(KeyRulesCorpus, EveryCorpusFileValidatesWithNoNewFinding) {
  // errors and warnings of each file (a set counted once per shard named), none of the new codes
  const std::vector<std::tuple<std::string, size_t, size_t>> files = {
      {"vocab/ggml-vocab-baichuan.gguf", 0, 0},      {"vocab/ggml-vocab-bert-bge.gguf", 0, 0},
      {"vocab/ggml-vocab-falcon.gguf", 0, 0},        {"vocab/ggml-vocab-gpt-2.gguf", 0, 0},
      {"vocab/ggml-vocab-llama-spm.gguf", 0, 0},     {"vocab/ggml-vocab-phi-3.gguf", 0, 0},
      {"history/ggml-vocab-falcon.v2.gguf", 0, 0},   {"history/ggml-vocab-llama.v1.gguf", 1, 0},
      {"splits/tiny-llama.gguf", 0, 3},              {"splits/merged-by-llama.gguf", 0, 4},
      {"splits/by-count-00001-of-00003.gguf", 0, 3}, {"splits/by-size-00001-of-00002.gguf", 0, 3},
      {"splits/metadata-first-00001-of-00004.gguf", 0, 3},
  };
  for (const auto& [name, errors, warnings] : files) {
    SCOPED_TRACE(name);
    const Verdict v = validate(corpus(name));
    EXPECT_EQ(v.errors, errors);
    EXPECT_EQ(v.warnings, warnings);
    for (const auto& [where, f] : v.findings) EXPECT_FALSE(new_code(f.code)) << where << ": " << f.message;
    if (name.starts_with("vocab/") || name.starts_with("splits/tiny")) {  // the model's rules alone, as an edit asks them
      Scanned s = scan_file(corpus(name));
      for (const Finding& f : check_model(s.model, s.layout)) EXPECT_FALSE(new_code(f.code)) << f.message;
    }
  }
}

// The edit layer gives a new key the registry's type and refuses another; an existing key
// keeps its type, and one llama.cpp refuses is held to key_type when the edit touches it.
TEST(KeyRulesEdit, AWrongTypedWellKnownKeyIsRefusedOrRetypedAsTheRuleSays) {
  const std::string src = model_file("edit-src.gguf");
  int n = 0;
  auto out_path = [&] { return temp_path("edit-out-" + std::to_string(++n) + ".gguf"); };
  std::string out = out_path();
  CliRun f64 = run_cli("edit " + src + " --set-typed llama.rope.scaling.factor=f64:2.0 -o " + out);
  EXPECT_EQ(f64.code, 1);
  EXPECT_NE(f64.err.find("set llama.rope.scaling.factor: the key registry has llama.rope.scaling.factor as f32, not f64"),
            std::string::npos) << f64.err;
  out = out_path();
  CliRun plain = run_cli("edit " + src + " --set llama.rope.scaling.factor=2 -o " + out);  // a new key: the registry's f32
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(scan_file(out).model.find("llama.rope.scaling.factor")->type, ValueType::f32);
  // a per-layer array is one of the types the registry takes; of one per block, it validates
  out = out_path();
  CliRun arr = run_cli("edit " + src + " --set-typed 'llama.attention.head_count_kv=array[i32]:[2, 1]' -o " + out);
  ASSERT_EQ(arr.code, 0) << arr.err;
  EXPECT_TRUE(validate_file(out).empty());
  out = out_path();
  CliRun three = run_cli("edit " + src + " --set-typed 'llama.attention.head_count_kv=array[i32]:[2, 1, 1]' -o " + out);
  EXPECT_EQ(three.code, 1);
  EXPECT_NE(three.err.find("[key_type] llama.attention.head_count_kv is an array of 3 items, but llama.block_count is 2"),
            std::string::npos) << three.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  out = out_path();
  CliRun range = run_cli("edit " + src + " --set llama.rope.scaling.type=dynamic -o " + out);
  EXPECT_EQ(range.code, 1);
  EXPECT_NE(range.err.find("[key_range] llama.rope.scaling.type is \"dynamic\""), std::string::npos) << range.err;
  EXPECT_FALSE(std::filesystem::exists(out));

  // A source whose context_length llama.cpp refuses (u64): an edit elsewhere writes (the
  // fault is the source's); setting the key keeps its type and is refused; the finding's
  // fix retypes it.
  Parts p;
  p.context = "{type: u64, value: 256}";
  const std::string bad = model_file("edit-bad.gguf", p);
  out = out_path();
  CliRun other = run_cli("edit " + bad + " --set general.name=Other -o " + out);
  EXPECT_EQ(other.code, 0) << other.err;
  out = out_path();
  CliRun touch = run_cli("edit " + bad + " --set llama.context_length=512 -o " + out);
  EXPECT_EQ(touch.code, 1);
  EXPECT_NE(touch.err.find("[key_type] llama.context_length is u64; llama.cpp reads it as u32"), std::string::npos) << touch.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  out = out_path();
  CliRun fixed = run_cli("edit " + bad + " --remove llama.context_length --set llama.context_length=256 -o " + out);
  ASSERT_EQ(fixed.code, 0) << fixed.err;
  EXPECT_TRUE(validate_file(out).empty());
  EXPECT_EQ(scan_file(out).model.find("llama.context_length")->type, ValueType::u32);
}
