// The loader's tensor table (schemas/tensors.yaml): validate and every edit say what
// llama.cpp's load_tensors says of a model's tensors (tensor_missing, tensor_shape,
// tensor_unexpected), at the tensor directory or the tensor's info record. The interop test
// LlamaCpp.EveryTensorVariantOfTheTinyLlamaGetsLlamaCppsVerdict asks llama.cpp itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "ggufkit/check.h"
#include "ggufkit/edit.h"
#include "ggufkit/example.h"
#include "ggufkit/scan.h"
#include "ggufkit/sketch.h"
#include "ggufkit/tensors.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;

namespace {

// examples/tiny-llama.yaml with `edit` applied to its text, written to NAME.gguf.
std::string tiny_variant(const std::string& name, const std::function<void(std::string&)>& edit) {
  std::string text = slurp(std::string(GGUFKIT_SOURCE) + "/examples/tiny-llama.yaml");
  edit(text);
  const std::string yaml = temp_path(name + ".yaml"), out = temp_path(name + ".gguf");
  std::ofstream(yaml) << text;
  write_sketch(read_sketch(yaml, {{"VOCAB", corpus("vocab/ggml-vocab-llama-spm.gguf")}}), out);
  return out;
}

void drop_line(std::string& text, const std::string& holding) {
  const size_t at = text.find(holding);
  ASSERT_NE(at, std::string::npos) << holding;
  const size_t start = text.rfind('\n', at) + 1, end = text.find('\n', at);
  text.erase(start, end - start + 1);
}

void replace(std::string& text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
}

bool tensor_code(Code c) {
  return c == Code::tensor_missing || c == Code::tensor_shape || c == Code::tensor_unexpected || c == Code::tensors_unchecked;
}

std::vector<Finding> tensor_findings(const std::string& path) {
  std::vector<Finding> all = validate_file(path);
  std::erase_if(all, [](const Finding& f) { return !tensor_code(f.code); });
  return all;
}

// Where tensor `name`'s info record starts, and the first one's (the tensor directory).
uint64_t record_of(const std::string& path, const std::string& name) {
  const Scanned s = scan_file(path);
  for (size_t i = 0; i < s.model.tensors.size(); ++i)
    if (s.model.tensors.name(i) == name) return *s.model.tensors.record(i);
  ADD_FAILURE() << name << " is not in " << path;
  return 0;
}

uint64_t directory_of(const std::string& path) { return *scan_file(path).model.tensors.record(0); }

}  // namespace

TEST(TensorTable, TheTinyLlamaAndTheCorpusModelsHaveNoTensorFinding) {
  EXPECT_TRUE(tensor_findings(tiny_llama()).empty());
  for (const char* f : {"splits/tiny-llama.gguf", "splits/merged-by-llama.gguf"}) EXPECT_TRUE(tensor_findings(corpus(f)).empty()) << f;
  // A set is judged as one model: shard 1 alone lacks most tensors, the set none.
  const Verdict v = validate(corpus("splits/by-count-00001-of-00003.gguf"));
  EXPECT_EQ(v.files.size(), 3u);
  for (const auto& [file, f] : v.findings) EXPECT_FALSE(tensor_code(f.code)) << file << ": " << f.message;
}

TEST(TensorTable, ATensorLeftOutIsMissingAtTheTensorDirectoryAndValidateExitsOne) {
  // The new user's case: the line of blk.0.attn_k.weight deleted from the example.
  const std::string path = tiny_variant("no-attn-k", [](std::string& t) { drop_line(t, "name: blk.0.attn_k.weight"); });
  const std::vector<Finding> fs = tensor_findings(path);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, Code::tensor_missing);
  EXPECT_EQ(fs[0].severity, Severity::error);
  EXPECT_EQ(fs[0].place, Place::tensor("blk.0.attn_k.weight"));
  EXPECT_EQ(fs[0].offset, directory_of(path));
  EXPECT_EQ(fs[0].message, "blk.0.attn_k.weight: llama.cpp's llama loader asks for it and the file has no tensor of that name");
  EXPECT_EQ(fs[0].fix, "the file lacks weights: re-convert the model");
  CliRun r = run_cli("validate " + path);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("error tensor_missing at byte " + std::to_string(directory_of(path)) + ": blk.0.attn_k.weight: "), std::string::npos)
      << r.out;
}

TEST(TensorTable, AWrongShapeIsToldAtItsInfoRecordWithTheHyperparametersThatMakeIt) {
  const std::string path = tiny_variant("attn-k-64", [](std::string& t) {
    replace(t, "name: blk.0.attn_k.weight, type: f16, dims: [64, 32]", "name: blk.0.attn_k.weight, type: f16, dims: [64, 64]");
  });
  const std::vector<Finding> fs = tensor_findings(path);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, Code::tensor_shape);
  EXPECT_EQ(fs[0].offset, record_of(path, "blk.0.attn_k.weight"));
  EXPECT_EQ(fs[0].message, "blk.0.attn_k.weight is 64x64; llama.cpp expects 64x32 "
                           "(n_embd 64, n_embd_k_gqa 32 = n_embd_head_k 16 * n_head_kv 2)");
  // Swapped dimensions are another shape; a trailing 1 is the same one (ggml's ne[] is padded with 1s).
  const std::string swapped = tiny_variant("ffn-up-swapped", [](std::string& t) {
    replace(t, "name: blk.1.ffn_up.weight, type: q8_0, dims: [64, 128]", "name: blk.1.ffn_up.weight, type: q8_0, dims: [128, 64]");
  });
  const std::vector<Finding> sw = tensor_findings(swapped);
  ASSERT_EQ(sw.size(), 1u);
  EXPECT_EQ(sw[0].message, "blk.1.ffn_up.weight is 128x64; llama.cpp expects 64x128 (n_embd 64, n_ff 128)");
  const std::string padded = tiny_variant("norm-64x1", [](std::string& t) {
    replace(t, "name: blk.0.attn_norm.weight, type: f32, dims: [64]", "name: blk.0.attn_norm.weight, type: f32, dims: [64, 1]");
  });
  EXPECT_TRUE(tensor_findings(padded).empty());
}

TEST(TensorTable, ATensorTooManyIsUnexpectedAndAnOptionalOneIsTaken) {
  const std::string path = tiny_variant("one-too-many", [](std::string& t) {
    t += "  - {name: blk.0.attn_extra.weight, type: f32, dims: [64], fill: ones}\n"
         "  - {name: blk.1.attn_output.bias, type: f32, dims: [64], fill: zeros}\n";  // optional: taken
  });
  const std::vector<Finding> fs = tensor_findings(path);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, Code::tensor_unexpected);
  EXPECT_EQ(fs[0].offset, record_of(path, "blk.0.attn_extra.weight"));
  EXPECT_EQ(fs[0].message, "blk.0.attn_extra.weight: llama.cpp's llama loader takes no tensor of this name, so its count check "
                           "fails (23 tensors in the file, 22 taken)");
}

TEST(TensorTable, WithoutItsOutputTheEmbeddingIsUsedAndAFusedQkvReplacesQKAndV) {
  const std::string tied = tiny_variant("tied", [](std::string& t) { drop_line(t, "name: output.weight"); });
  EXPECT_TRUE(tensor_findings(tied).empty());
  const std::string fused = tiny_variant("fused-qkv", [](std::string& t) {
    for (const char* n : {"name: blk.0.attn_q.weight", "name: blk.0.attn_k.weight", "name: blk.0.attn_v.weight"}) drop_line(t, n);
    t += "  - {name: blk.0.attn_qkv.weight, type: f16, dims: [64, 128], fill: zeros}\n";  // 64 + 32 + 32
  });
  EXPECT_TRUE(tensor_findings(fused).empty());
}

TEST(TensorTable, AnEditThatNoTensorFitsAnyMoreIsRefusedNamingTheFirstAndWritesNothing) {
  EditRequest req;
  req.input = tiny_llama();
  req.output = temp_path("embd-128.gguf");
  std::filesystem::remove(req.output);
  req.patch.add_set("llama.embedding_length", "128");
  try {
    edit(req);
    FAIL() << "the edit was not refused";
  } catch (const EditRefused& e) {
    // llama.cpp's first complaint is the head size the rope no longer covers (load_hparams
    // runs before load_tensors), then each tensor, the embedding first.
    ASSERT_GE(e.findings.size(), 2u);
    EXPECT_EQ(e.findings[0].code, Code::hparam_condition);
    EXPECT_EQ(e.findings[0].message, "llama.rope.dimension_count is 16; llama.cpp's llama loader needs the head size, 32 "
                                     "(embedding_length 128 / head_count 4), and refuses (\"invalid n_rot\")");
    EXPECT_EQ(e.findings[1].code, Code::tensor_shape);
    EXPECT_EQ(e.findings[1].place, Place::tensor("token_embd.weight"));
    EXPECT_EQ(e.findings[1].message, "token_embd.weight is 64x32000; llama.cpp expects 128x32000 (n_embd 128, n_vocab 32000)");
    // each of the 21 tensors is 64 wide in some dimension: each is told
    EXPECT_EQ(std::count_if(e.findings.begin(), e.findings.end(), [](const Finding& f) { return f.code == Code::tensor_shape; }), 21);
  }
  EXPECT_FALSE(std::filesystem::exists(req.output));
}

TEST(TensorTable, AnArchitectureWithoutATableIsNotedAndOneLlamaCppDoesNotKnowIsNot) {
  const std::string qwen = tiny_variant("as-olmo", [](std::string& t) {
    replace(t, "value: llama}", "value: olmo}");
    for (size_t at; (at = t.find("llama.")) != std::string::npos;) t.replace(at, 6, "olmo.");
  });
  const std::vector<Finding> fs = tensor_findings(qwen);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, Code::tensors_unchecked);
  EXPECT_EQ(fs[0].severity, Severity::info);
  EXPECT_EQ(fs[0].message, "tensors not checked for architecture olmo: ggufkit has no table of what llama.cpp's loader takes for it");
  const std::string made_up = tiny_variant("as-made-up", [](std::string& t) { replace(t, "value: llama}", "value: madeup}"); });
  EXPECT_TRUE(tensor_findings(made_up).empty());
}

TEST(TensorTable, ASetIsJudgedAsOneModelAndAShardAloneIsNot) {
  // Split 8 tensors a shard, the set lacks blk.0.attn_k.weight: told once, for the set, and
  // never for a shard read alone (it holds part of the tensors by design).
  const std::string whole = tiny_variant("set-no-attn-k", [](std::string& t) { drop_line(t, "name: blk.0.attn_k.weight"); });
  const std::string dir = temp_path("set-no-attn-k");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  SplitRequest req;
  req.input = whole;
  req.prefix = dir + "/m";
  req.max_tensors = 8;
  const std::vector<WrittenFile> shards = split(req);
  ASSERT_EQ(shards.size(), 3u);  // 20 tensors
  const Verdict v = validate(shards[0].path);
  std::vector<std::string> told;
  for (const auto& [file, f] : v.findings)
    if (tensor_code(f.code)) told.push_back(file + " " + std::string(code_name(f.code)) + " " + f.place.name);
  EXPECT_EQ(told, std::vector<std::string>{shards[0].path + " tensor_missing blk.0.attn_k.weight"});
  for (const WrittenFile& s : shards) EXPECT_TRUE(tensor_findings(s.path).empty()) << s.path;
}

TEST(ArchExample, TheSmallestLlamaHasEveryTensorItsLoaderAsksForAndNoFinding) {
  const std::string out = temp_path("example-llama.gguf");
  CliRun r = run_cli("example --arch llama -o " + out + " --force");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, out + ": 370240 bytes, 20 tensors\n");  // 2 blocks of 9, the embedding and the output norm
  const Scanned s = scan_file(out);
  EXPECT_EQ(s.model.find("llama.block_count")->as_u64(), 2u);
  EXPECT_EQ(s.model.find("tokenizer.ggml.tokens")->size(), 259u);
  EXPECT_EQ(s.model.tensors.name(0), "token_embd.weight");
  EXPECT_EQ(s.model.tensors[0].dims, (std::vector<uint64_t>{64, 259}));
  std::vector<Finding> fs = validate_file(out);
  std::erase_if(fs, [](const Finding& f) { return f.severity == Severity::info; });
  EXPECT_TRUE(fs.empty()) << fs[0].message;
  // --set names a hyperparameter (its architecture's prefix may be left out); experts
  // bring the router and the expert tensors in place of the dense feed-forward ones.
  CliRun moe = run_cli("example --arch llama --set block_count=3 --set llama.expert_count=4 --set expert_used_count=2 -o " + out + " --force");
  ASSERT_EQ(moe.code, 0) << moe.err;
  const Scanned m = scan_file(out);
  EXPECT_EQ(m.model.tensors.size(), 2u + 3 * 9);  // per block: 2 norms, q k v o, router, down and up experts
  bool router = false;
  for (const Tensor& t : m.model.tensors) router |= t.name == "blk.2.ffn_gate_inp.weight" && t.dims == std::vector<uint64_t>{64, 4};
  EXPECT_TRUE(router);
}

TEST(ArchExample, AnArchitectureWithoutATableOrAKeyWithoutATypeIsRefusedAndNothingWritten) {
  const std::string out = temp_path("example-none.gguf");
  std::filesystem::remove(out);
  CliRun r = run_cli("example --arch olmo -o " + out);
  EXPECT_EQ(r.code, 2);
  std::string covered;
  for (const std::string& a : tensor_table_architectures()) covered += (covered.empty() ? "" : ", ") + a;
  for (const char* a : {"llama", "qwen3moe", "lfm2", "gpt-oss", "bert"}) EXPECT_NE(covered.find(a), std::string::npos) << a;
  EXPECT_EQ(r.err, "ggufkit: error: olmo: --arch: the tensor table has no architecture 'olmo'; it covers " + covered + "\n");
  CliRun k = run_cli("example --arch llama --set made_up=3 -o " + out);
  EXPECT_EQ(k.code, 2);
  EXPECT_NE(k.err.find("llama.made_up: not a key of the example nor a single-valued key of the registry"), std::string::npos) << k.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

// Where a loader asks a layer's own value (hparams.n_head_kv(i)), the table reads the
// per-layer array's item for that layer: lfm2's layers with no KV heads are convolutions.
TEST(TensorTable, ALayersOwnHeadCountDecidesItsTensorsWhereTheLoaderAsksPerLayer) {
  std::string text = arch_example_sketch({"lfm2", {}, 1});
  ASSERT_NE(text.find("attention.head_count_kv\", type: array, items: u32, value: [0, 2]}"), std::string::npos) << text;
  auto written = [&](const std::string& name, const std::string& from, const std::string& to) {
    std::string t = text;
    replace(t, from, to);
    const std::string yaml = temp_path(name + ".yaml"), out = temp_path(name + ".gguf");
    std::ofstream(yaml) << t;
    write_sketch(read_sketch(yaml), out);
    return out;
  };
  const std::string same = written("lfm2-example", "value: [0, 2]", "value: [0, 2]");
  EXPECT_TRUE(tensor_findings(same).empty());
  const Scanned s = scan_file(same);
  ASSERT_EQ(s.model.tensors.size(), 21u);  // embedding, its norm; a convolution block of 8, an attention block of 11
  EXPECT_EQ(s.model.tensors.name(7), "blk.0.shortconv.conv.weight");
  EXPECT_EQ(s.model.tensors[7].dims, (std::vector<uint64_t>{3, 64}));
  EXPECT_EQ(s.model.tensors.name(18), "blk.1.attn_k.weight");
  EXPECT_EQ(s.model.tensors[18].dims, (std::vector<uint64_t>{64, 32}));

  // One KV head at layer 1: its k and v are too wide, told with the layer's own values.
  const std::string narrow = written("lfm2-one-kv-head", "value: [0, 2]", "value: [0, 1]");
  const std::vector<Finding> fs = tensor_findings(narrow);
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].code, Code::tensor_shape);
  EXPECT_EQ(fs[0].offset, record_of(narrow, "blk.1.attn_k.weight"));
  EXPECT_EQ(fs[0].message, "blk.1.attn_k.weight is 64x32; llama.cpp expects 64x16 "
                           "(n_embd 64, n_embd_k_gqa(1) 16 = n_embd_head_k 16 * n_head_kv(1) 1)");
  EXPECT_EQ(fs[1].place.name, "blk.1.attn_v.weight");

  // Layer 0 made an attention layer: its attention is missing and its convolution unexpected.
  const std::string swapped = written("lfm2-attention-first", "value: [0, 2]", "value: [2, 2]");
  std::vector<std::string> missing, unexpected;
  for (const Finding& f : tensor_findings(swapped))
    (f.code == Code::tensor_missing ? missing : unexpected).push_back(f.place.name);
  EXPECT_EQ(missing, (std::vector<std::string>{"blk.0.attn_q_norm.weight", "blk.0.attn_k_norm.weight", "blk.0.attn_q.weight",
                                               "blk.0.attn_k.weight", "blk.0.attn_v.weight", "blk.0.attn_output.weight"}));
  EXPECT_EQ(unexpected, (std::vector<std::string>{"blk.0.shortconv.conv.weight", "blk.0.shortconv.in_proj.weight",
                                                  "blk.0.shortconv.out_proj.weight"}));

  // --set gives the array its items, or one value for every layer.
  const std::string out = temp_path("example-lfm2.gguf");
  CliRun r = run_cli("example --arch lfm2 --set attention.head_count_kv=[2,0] -o " + out + " --force");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(scan_file(out).model.tensors.name(7), "blk.0.attn_q_norm.weight");
  CliRun all = run_cli("example --arch lfm2 --set attention.head_count_kv=2 -o " + out + " --force");
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_EQ(scan_file(out).model.find("lfm2.attention.head_count_kv")->as_u64(), 2u);
}

// show says what llama.cpp's loader takes of a model: how many tensors (its count check) and
// the optional ones the file does without, each kind once; --json gives the same.
TEST(TensorTable, ShowSaysHowManyTensorsTheLoaderTakesAndWhatTheFileLeavesOut) {
  const std::string out = temp_path("show-loader.gguf");
  ASSERT_EQ(run_cli("example --arch llama -o " + out + " --force").code, 0);
  CliRun r = run_cli("show " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\nloader        takes 20 tensors (the file has 20); no output.weight: token_embd.weight is the output too\n"
                       "left out      output.weight, blk.N.attn_qkv.weight, blk.N.attn_q.bias, blk.N.attn_k.bias,\n"),
            std::string::npos)
      << r.out;
  CliRun j = run_cli("show " + out + " --json");
  ASSERT_EQ(j.code, 0) << j.err;
  const YAML::Node loader = YAML::Load(j.out)["loader"];
  EXPECT_EQ(loader["expected_tensors"].as<size_t>(), 20u);
  EXPECT_TRUE(loader["tied_output"].as<bool>());
  ASSERT_EQ(loader["left_out"].size(), 12u);  // output, fused qkv and its bias... the 12 kinds llama's loader may take
  EXPECT_EQ(loader["left_out"][4].as<std::string>(), "blk.N.attn_v.bias");
  // A vocabulary-only file is no model the loader takes: no loader line, null in JSON.
  CliRun other = run_cli("show " + corpus("vocab/ggml-vocab-llama-spm.gguf") + " --json");
  ASSERT_EQ(other.code, 0) << other.err;
  EXPECT_TRUE(YAML::Load(other.out)["loader"].IsNull());
}

// A header is the attacker's: hyperparameters at the ends of int64 (a u64 embedding length
// of 2^63 over a head count of 2^64-1 makes the default head size INT64_MIN / -1) and
// negative signed counts neither crash validate or show nor are quoted as 2^64-1.
TEST(TensorTable, HyperparametersAtTheEndsOfTheIntegersNeitherCrashNorAreMisquoted) {
  std::string text = arch_example_sketch({"llama", {}, 1});
  auto written = [&](const std::string& name, const std::vector<std::pair<std::string, std::string>>& lines) {
    std::string t = text;
    for (const auto& [from, to] : lines) replace(t, from, to);
    const std::string yaml = temp_path(name + ".yaml"), out = temp_path(name + ".gguf");
    std::ofstream(yaml) << t;
    write_sketch(read_sketch(yaml), out);
    return out;
  };
  const std::string huge = written("hparams-int64-min", {{"embedding_length\", type: u32, value: 64}", "embedding_length\", type: u64, value: 9223372036854775808}"},
                                                         {"head_count\", type: u32, value: 4}", "head_count\", type: u64, value: 18446744073709551615}"}});
  const std::vector<Finding> fs = validate_file(huge);
  EXPECT_TRUE(std::any_of(fs.begin(), fs.end(), [](const Finding& f) { return f.severity == Severity::error; }));
  CliRun show = run_cli("show " + huge);
  EXPECT_EQ(show.code, 0) << show.err;
  const std::string negative = written("hparams-negative", {{"block_count\", type: u32, value: 2}", "block_count\", type: i32, value: -1}"}});
  for (const Finding& f : validate_file(negative)) EXPECT_EQ(f.message.find("18446744073709551615"), std::string::npos) << f.message;
}

// show counts what the loader takes from the file as it is: a deepseek2 file without its
// multi-token-prediction layer (the loader then makes every MTP tensor optional) takes as
// many tensors as it has.
TEST(TensorTable, ShowCountsATrunkOnlyFileAsTheLoaderTakesIt) {
  std::string text = arch_example_sketch({"deepseek2", {{"block_count", "3"}, {"nextn_predict_layers", "1"}}, 1});
  std::string trunk;
  for (size_t at = 0; at < text.size();) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at + 1);
    if (line.find("\"blk.2.") == std::string::npos) trunk += line;
    at = end + 1;
  }
  const std::string yaml = temp_path("deepseek2-trunk.yaml"), out = temp_path("deepseek2-trunk.gguf");
  std::ofstream(yaml) << trunk;
  write_sketch(read_sketch(yaml), out);
  const Scanned s = scan_file(out);
  EXPECT_EQ(s.model.tensors.size(), 34u);
  EXPECT_TRUE(tensor_findings(out).empty());
  const std::optional<LoaderSummary> l = loader_summary(s.model);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->expected, 34u);
}
