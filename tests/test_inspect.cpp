// Inspect and validate: each command's numbers on fixtures whose numbers are known by
// construction, meta against dump on the corpus, decoding by hand, and validate's findings.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "ggufkit/error.h"
#include "ggufkit/check.h"
#include "ggufkit/inspect.h"
#include "ggufkit/numeric.h"
#include "ggufkit/scan.h"
#include "ggufkit/sketch.h"
#include "ggufkit/writer.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;

namespace {

const std::string kExamples = std::string(GGUFKIT_SOURCE) + "/examples";

std::string write_yaml(const std::string& name, const std::string& yaml) {
  std::string path = temp_path(name);
  write_sketch(parse_sketch(yaml, name, temp_dir()), path);
  return path;
}

const std::string& walkthrough() {
  static std::string p = [] {
    std::string path = temp_path("inspect-408.gguf");
    write_sketch(read_sketch(kExamples + "/sketch-408.yaml"), path);
    return path;
  }();
  return p;
}

// Three blocks of two tensors (block 1's ffn in q8_0, the others f16), an embedding in
// front and an output behind: every number below is worked out from these shapes.
const std::string& stacked() {
  static std::string p = write_yaml("inspect-stack.gguf", R"(
metadata:
  - {key: general.architecture, type: string, value: llama}
  - {key: general.alignment, type: u32, value: 32}
tensors:
  - {name: token_embd.weight, type: f32, dims: [64, 10], fill: zeros}
  - {name: blk.0.attn_q.weight, type: f16, dims: [64, 64], fill: ones}
  - {name: blk.0.ffn_up.weight, type: f16, dims: [64, 128], fill: ones}
  - {name: blk.1.attn_q.weight, type: f16, dims: [64, 64], fill: ones}
  - {name: blk.1.ffn_up.weight, type: q8_0, dims: [64, 128], fill: ones}
  - {name: blk.2.attn_q.weight, type: f16, dims: [64, 64], fill: ones}
  - {name: blk.2.ffn_up.weight, type: f16, dims: [64, 128], fill: ones}
  - {name: output.weight, type: f32, dims: [64, 10], fill: zeros}
)");
  return p;
}

YAML::Node json_of(const std::string& args) {
  CliRun r = run_cli(args);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.err;
  return YAML::Load(r.out);
}

}  // namespace

TEST(Inspect, AccountOfTheWalkthroughFollowsItsRule) {
  YAML::Node j = json_of("account --json " + walkthrough());
  EXPECT_EQ(j["head"].as<int>(), 24);
  EXPECT_EQ(j["metadata"].as<int>(), 46 + 55 + 33 + 34 + 76);
  EXPECT_EQ(j["infos"].as<int>(), 59);
  EXPECT_EQ(j["padding"].as<int>(), 57);
  EXPECT_EQ(j["header"].as<int>(), 384);
  EXPECT_EQ(j["tensor_bytes"].as<int>(), 24);
  EXPECT_EQ(j["tensor_padding"].as<int>(), 0);
  EXPECT_EQ(j["file_size"].as<int>(), 408);
  EXPECT_EQ(j["left_over"].as<int>(), 0);  // header + padding + tensor bytes = file size
  EXPECT_EQ(j["contiguous"].as<int>(), 1);
  CliRun text = run_cli("account " + walkthrough());
  EXPECT_NE(text.out.find("  left over                         0\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("1 of 1 tensors start right where the one before ended (padded)"), std::string::npos);
}

TEST(Inspect, AccountOfTheStackSumsToTheFileSize) {
  Account a = account_of(scan_file(stacked()));
  // f32 64x10 = 2560 twice; f16 64x64 = 8192 x3; f16 64x128 = 16384 x2; q8_0 64x128 = 2*4*34*... = 128 rows * 68
  EXPECT_EQ(a.tensor_bytes, 2560u * 2 + 8192 * 3 + 16384 * 2 + 128 * 68);
  EXPECT_EQ(a.tensor_padding, 0u);  // every size here is a multiple of 32
  EXPECT_EQ(static_cast<int64_t>(a.head + a.metadata + a.infos + a.padding + a.tensor_bytes + a.tensor_padding), static_cast<int64_t>(a.file_size));
  EXPECT_EQ(a.left_over, 0);
  EXPECT_EQ(a.contiguous, 8u);
}

TEST(Inspect, StackAndLayerCountTheBlocks) {
  YAML::Node j = json_of("stack --json " + stacked());
  EXPECT_EQ(j["blocks"].as<int>(), 3);
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["name"].as<std::string>(), "blk.#.attn_q.weight");
  EXPECT_EQ(j["rows"][0]["count"].as<int>(), 3);
  EXPECT_EQ(j["rows"][0]["shapes"][0].as<std::string>(), "64x64");
  EXPECT_EQ(j["rows"][0]["types"]["f16"].as<int>(), 3);
  EXPECT_EQ(j["rows"][0]["bytes"].as<int>(), 3 * 8192);
  EXPECT_EQ(j["rows"][1]["types"]["f16"].as<int>(), 2);
  EXPECT_EQ(j["rows"][1]["types"]["q8_0"].as<int>(), 1);
  EXPECT_EQ(j["rows"][1]["bytes"].as<int>(), 2 * 16384 + 128 * 68);
  EXPECT_EQ(j["front"].as<int>(), 2560);
  EXPECT_EQ(j["behind"].as<int>(), 2560);
  EXPECT_EQ(j["inside"].as<int>(), 3 * 8192 + 2 * 16384 + 128 * 68);
  EXPECT_EQ(j["smallest"]["block"].as<int>(), 1);
  EXPECT_EQ(j["smallest"]["bytes"].as<int>(), 8192 + 128 * 68);
  EXPECT_EQ(j["largest"]["bytes"].as<int>(), 8192 + 16384);
  CliRun text = run_cli("stack " + stacked());
  EXPECT_NE(text.out.find("f16 x2 q8_0 x1"), std::string::npos) << text.out;

  YAML::Node l0 = json_of("layer --json " + stacked() + " 0");
  EXPECT_EQ(l0["bytes"].as<int>(), 8192 + 16384);
  ASSERT_EQ(l0["tensors"].size(), 2u);
  EXPECT_EQ(l0["tensors"][1]["name"].as<std::string>(), "blk.0.ffn_up.weight");
  ASSERT_EQ(l0["same_as"].size(), 1u);  // block 2; block 1 has a q8_0 ffn
  EXPECT_EQ(l0["same_as"][0].as<int>(), 2);
  YAML::Node l1 = json_of("layer --json " + stacked() + " 1");
  EXPECT_EQ(l1["same_as"].size(), 0u);
  CliRun missing = run_cli("layer " + stacked() + " 7");
  EXPECT_EQ(missing.code, 1);  // the file lacks what the command names, as get KEY
  EXPECT_NE(missing.err.find("there is no block 7 (the file has 3 blocks)"), std::string::npos) << missing.err;
}

// The issue's pictures: the bytes per block as bars against the largest (stack), and the
// quant mix as bars of the tensor bytes (account, show), each in eighths of a column.
// Blocks 0 and 2 hold 8192 + 16384 bytes, block 1 8192 + 8704: 0.6875 of 40 columns, 27.5.
// Of 71168 tensor bytes, f16 holds 57344 (24.2 of 30 columns), q8_0 8704 (3.7), f32 5120 (2.2).
TEST(Inspect, StackAccountAndShowDrawBars) {
  auto full = [](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += "\u2588";
    return s;
  };
  CliRun stack = run_cli("stack " + stacked());
  ASSERT_EQ(stack.code, 0) << stack.err;
  EXPECT_NE(stack.out.find("\nbytes per block\n"
                           "       0          24576 " + full(40) + "\n"
                           "       1          16896 " + full(27) + "\u258C\n"
                           "       2          24576 " + full(40) + "\n"),
            std::string::npos)
      << stack.out;
  YAML::Node j = json_of("stack --json " + stacked());
  ASSERT_EQ(j["per_block"].size(), 3u);
  EXPECT_EQ(j["per_block"][1]["block"].as<int>(), 1);
  EXPECT_EQ(j["per_block"][1]["bytes"].as<int>(), 16896);
  CliRun account = run_cli("account " + stacked());
  EXPECT_NE(account.out.find("  f16            5 tensors          28672 weights            57344 " + full(24) + "\u258F\n"),
            std::string::npos)
      << account.out;
  EXPECT_NE(account.out.find("  q8_0           1 tensors           8192 weights             8704 " + full(3) + "\u258B\n"),
            std::string::npos)
      << account.out;
  CliRun show = run_cli("show " + stacked());
  EXPECT_NE(show.out.find("f32               2           1280             5120    7.2% " + full(2) + "\u258F\n"), std::string::npos)
      << show.out;
}

TEST(Inspect, ShowGivesTheSummaryOfTheTinyLlama) {
  std::string path = temp_path("inspect-tiny.gguf");
  write_sketch(read_sketch(kExamples + "/tiny-llama.yaml", {{"VOCAB", corpus("vocab/ggml-vocab-llama-spm.gguf")}}), path);
  YAML::Node j = json_of("show --json " + path);
  EXPECT_EQ(j["architecture"].as<std::string>(), "llama");
  EXPECT_EQ(j["file_type"].as<int>(), 7);
  EXPECT_EQ(j["file_type_name"].as<std::string>(), "MOSTLY_Q8_0");
  EXPECT_EQ(j["hyperparameters"]["llama.block_count"].as<int>(), 2);
  EXPECT_EQ(j["hyperparameters"]["llama.attention.head_count_kv"].as<int>(), 2);
  EXPECT_EQ(j["hyperparameters"]["llama.rope.freq_base"].as<double>(), 10000.0);
  EXPECT_EQ(j["head_size"].as<int>(), 16);  // 64 wide / 4 heads
  EXPECT_EQ(j["vocabulary_size"].as<int>(), 32000);
  EXPECT_EQ(j["tokenizer"].as<std::string>(), "llama");
  EXPECT_EQ(j["special_tokens"]["eos"]["id"].as<int>(), 2);
  EXPECT_EQ(j["special_tokens"]["eos"]["text"].as<std::string>(), "</s>");
  EXPECT_EQ(j["special_tokens"]["eos"]["type"].as<std::string>(), "control");
  EXPECT_EQ(j["special_tokens"]["bos"]["id"].as<int>(), 1);
  EXPECT_TRUE(j["chat_template"].as<bool>());
  // weights: 2 x 64x32000 (q8_0) + 5 x 64 (f32) + 2 x (64x64x2 + 64x32x2) (f16) + 2 x 3 x 64x128 (q8_0)
  uint64_t q8w = 2 * 64 * 32000 + 6 * 64 * 128, f16w = 2 * (64 * 64 * 2 + 64 * 32 * 2), f32w = 5 * 64;
  uint64_t bytes = q8w / 32 * 34 + f16w * 2 + f32w * 4;
  EXPECT_EQ(j["weights"].as<uint64_t>(), q8w + f16w + f32w);
  EXPECT_EQ(j["tensor_bytes"].as<uint64_t>(), bytes);
  EXPECT_NEAR(j["bits_per_weight"].as<double>(), 8.0 * bytes / (q8w + f16w + f32w), 1e-4);
  EXPECT_EQ(j["types"][0]["type"].as<std::string>(), "q8_0");
  EXPECT_EQ(j["types"][0]["bytes"].as<uint64_t>(), q8w / 32 * 34);
  CliRun text = run_cli("show " + path);
  EXPECT_NE(text.out.find("file type     7 (MOSTLY_Q8_0)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("special tokens\n"
                          "  bos               1  \"<s>\"                    control\n"
                          "  eos               2  \"</s>\"                   control\n"
                          "  unknown           0  \"<unk>\"                  unknown\n"), std::string::npos) << text.out;
}

TEST(Inspect, ShowNamesEverySpecialTokenWithItsTextTypeAndTheAddFlags) {
  // phi-3's vocabulary: eos and padding are <|endoftext|>; its template ends turns with <|end|>.
  const std::string phi3 = corpus("vocab/ggml-vocab-phi-3.gguf");
  YAML::Node j = json_of("show --json " + phi3);
  EXPECT_EQ(j["special_tokens"]["eos"]["id"].as<int>(), 32000);
  EXPECT_EQ(j["special_tokens"]["eos"]["text"].as<std::string>(), "<|endoftext|>");
  EXPECT_EQ(j["special_tokens"]["padding"]["id"].as<int>(), 32000);
  EXPECT_EQ(j["special_tokens"].size(), 4u);
  EXPECT_TRUE(j["add_bos_token"].as<bool>());
  EXPECT_FALSE(j["add_eos_token"].as<bool>());
  CliRun text = run_cli("show " + phi3);
  EXPECT_NE(text.out.find("  eos           32000  \"<|endoftext|>\"          control\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("adds tokens   bos yes, eos no\n"), std::string::npos);
  // An id past the vocabulary says so instead of a text.
  std::string out = temp_path("phi3-badid.gguf");
  ASSERT_EQ(run_cli("edit " + phi3 + " --set tokenizer.ggml.eot_token_id=99999 --allow-broken -o " + out).code, 0);
  EXPECT_NE(run_cli("show " + out).out.find("  eot           99999  (not in the vocabulary)"), std::string::npos);
}

TEST(Inspect, GetPrintsOneValueAndTemplatePrintsTheStoredBytes) {
  const std::string phi3 = corpus("vocab/ggml-vocab-phi-3.gguf");
  EXPECT_EQ(run_cli("get " + phi3 + " tokenizer.ggml.eos_token_id").out, "32000\n");
  EXPECT_EQ(run_cli("get " + phi3 + " tokenizer.ggml.model").out, "llama\n");
  EXPECT_EQ(run_cli("get " + phi3 + " tokenizer.ggml.add_bos_token --json").out,
            "{\"key\": \"tokenizer.ggml.add_bos_token\", \"type\": \"bool\", \"value\": true}\n");
  CliRun tokens = run_cli("get " + phi3 + " tokenizer.ggml.tokens");
  EXPECT_EQ(std::count(tokens.out.begin(), tokens.out.end(), '\n'), 32064);  // one per line (a newline is the byte token <0x0A>)
  EXPECT_NE(tokens.out.find("\n<|end|>\n"), std::string::npos);
  CliRun missing = run_cli("get " + phi3 + " general.nam");
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("general.nam: no such key (did you mean general.name?)"), std::string::npos) << missing.err;
  // template: the stored bytes, no newline added; --list and --name.
  const ggufkit::Scanned phi3_file = ggufkit::scan_file(phi3);  // kept: the value lives in it
  const ggufkit::Value* t = phi3_file.model.find("tokenizer.chat_template");
  ASSERT_TRUE(t);
  EXPECT_EQ(run_cli("template " + phi3).out, t->str);
  EXPECT_EQ(run_cli("template " + phi3 + " --list --json").out,
            "{\"templates\": [{\"name\": \"default\", \"key\": \"tokenizer.chat_template\", \"bytes\": " +
                std::to_string(t->str.size()) + "}]}\n");
  std::string two = temp_path("two-templates.gguf");
  ASSERT_EQ(run_cli("edit " + phi3 + " --set 'tokenizer.chat_template.tool_use={{ tools }}' -o " + two).code, 0);
  EXPECT_EQ(run_cli("template " + two + " --name tool_use").out, "{{ tools }}");
  CliRun list = run_cli("template " + two + " --list");
  EXPECT_NE(list.out.find("tool_use         tokenizer.chat_template.tool_use         11 bytes\n"), std::string::npos) << list.out;
  CliRun none = run_cli("template " + two + " --name rag");
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("tokenizer.chat_template.rag: the file has no such template (it has: default, tool_use)"),
            std::string::npos) << none.err;
}

TEST(Inspect, TensorsListsRecordsWithOffsetsFromTheDataStart) {
  YAML::Node j = json_of("tensors --json " + stacked());
  EXPECT_EQ(j["data_offset"].as<uint64_t>(), scan_file(stacked()).layout.data_offset);
  ASSERT_EQ(j["tensors"].size(), 8u);
  EXPECT_EQ(j["tensors"][1]["name"].as<std::string>(), "blk.0.attn_q.weight");
  EXPECT_EQ(j["tensors"][1]["offset"].as<int>(), 2560);
  EXPECT_EQ(j["tensors"][1]["bytes"].as<int>(), 8192);
  EXPECT_EQ(j["tensors"][1]["dims"][1].as<int>(), 64);
  EXPECT_EQ(j["tensors"][4]["type"].as<std::string>(), "q8_0");
  EXPECT_EQ(j["tensors"][4]["offset"].as<int>(), 2560 + 8192 + 16384 + 8192);
}

namespace {
// Facts about the corpus from outside ggufkit: the KV counts and vocabulary sizes of
// shared/corpus/README.md, and values at fixed indexes as @huggingface/gguf 0.4.6 reads them.
struct TokenFact {
  size_t index;
  const char* text;
  double score;  // NAN where the file has no scores
  int type;      // -1 where the file has no token types
};
struct CorpusFacts {
  const char* file;
  size_t kv_count;
  const char* architecture;
  size_t tokens;
  std::vector<TokenFact> at;
  size_t merges;
  const char* first_merge;
  const char* last_merge;
};

const std::vector<CorpusFacts>& corpus_facts() {
  static const std::vector<CorpusFacts> f = {
      {"vocab/ggml-vocab-llama-spm.gguf", 22, "llama", 32000,
       {{0, "<unk>", 0, 2}, {1, "<s>", 0, 3}, {2, "</s>", 0, 3}, {13, "<0x0A>", 0, 6}, {1000, "ied", -741, 1},
        {31999, "\xE7\xBB\x99", -31740, 1}},
       0, "", ""},
      {"vocab/ggml-vocab-gpt-2.gguf", 16, "gpt2", 50257,
       {{0, "!", NAN, 1}, {1, "\"", NAN, 1}, {13, ".", NAN, 1}, {1000, "ale", NAN, 1}, {50256, "<|endoftext|>", NAN, 3}},
       50000, "\xC4\xA0 t", "\xC4\xA0g azed"},
      {"vocab/ggml-vocab-phi-3.gguf", 26, "phi3", 32064,
       {{0, "<unk>", -1000, 3}, {2, "</s>", -1000, 4}, {13, "<0x0A>", 0, 6}, {1000, "ied", -741, 1},
        {32063, "[PAD32063]", -10000, 2}},
       0, "", ""},
      {"vocab/ggml-vocab-bert-bge.gguf", 20, "bert", 30522,
       {{0, "[PAD]", NAN, 3}, {13, "[unused12]", NAN, 1}, {1000, "\xE2\x96\x81\"", NAN, 1}, {30521, "\xEF\xBD\x9E", NAN, 1}},
       0, "", ""},
  };
  return f;
}

const YAML::Node* entry(const YAML::Node& meta, const std::string& key, YAML::Node& out) {
  const YAML::Node list = meta["metadata"];
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i]["key"].as<std::string>() == key) {
      out = list[i];
      return &out;
    }
  return nullptr;
}
}  // namespace

TEST(Inspect, MetaJsonAgreesWithFactsAboutTheCorpusFromOutsideGgufkit) {
  for (const CorpusFacts& f : corpus_facts()) {
    SCOPED_TRACE(f.file);
    YAML::Node meta = json_of("meta --json " + corpus(f.file));
    EXPECT_EQ(meta["version"].as<int>(), 3);
    EXPECT_EQ(meta["metadata"].size(), f.kv_count);
    YAML::Node e;
    ASSERT_TRUE(entry(meta, "general.architecture", e));
    EXPECT_EQ(e["type"].as<std::string>(), "string");
    EXPECT_EQ(e["value"].as<std::string>(), f.architecture);
    ASSERT_TRUE(entry(meta, "tokenizer.ggml.tokens", e));
    EXPECT_EQ(e["items"].as<std::string>(), "string");
    YAML::Node tokens = e["value"];
    ASSERT_EQ(tokens.size(), f.tokens);
    YAML::Node scores, types;
    bool has_scores = entry(meta, "tokenizer.ggml.scores", e), has_types = false;
    if (has_scores) {
      EXPECT_EQ(e["items"].as<std::string>(), "f32");
      scores = e["value"];
      ASSERT_EQ(scores.size(), f.tokens);
    }
    if (entry(meta, "tokenizer.ggml.token_type", e)) {
      has_types = true;
      EXPECT_EQ(e["items"].as<std::string>(), "i32");
      types = e["value"];
      ASSERT_EQ(types.size(), f.tokens);
    }
    for (const TokenFact& t : f.at) {
      SCOPED_TRACE(t.index);
      EXPECT_EQ(tokens[t.index].as<std::string>(), t.text);
      EXPECT_EQ(has_scores, !std::isnan(t.score));
      if (has_scores) {
        EXPECT_EQ(scores[t.index].as<double>(), t.score);
      }
      EXPECT_TRUE(has_types);
      if (has_types) {
        EXPECT_EQ(types[t.index].as<int>(), t.type);
      }
    }
    if (f.merges) {
      ASSERT_TRUE(entry(meta, "tokenizer.ggml.merges", e));
      ASSERT_EQ(e["value"].size(), f.merges);
      EXPECT_EQ(e["value"][0].as<std::string>(), f.first_merge);
      EXPECT_EQ(e["value"][f.merges - 1].as<std::string>(), f.last_merge);
    }
  }
  CliRun text = run_cli("meta " + corpus("vocab/ggml-vocab-gpt-2.gguf"));
  EXPECT_NE(text.out.find("(50257 string)"), std::string::npos) << text.out.substr(0, 3000);
}

TEST(Inspect, TensorDecodesEveryEncodableTypeWithinItsRounding) {
  std::string path = write_yaml("inspect-decode.gguf", R"(
tensors:
  - {name: f32, type: f32, dims: [64], fill: {ramp: {start: -1, step: 0.03125}}}
  - {name: f16, type: f16, dims: [64], fill: {ramp: {start: -1, step: 0.03125}}}
  - {name: bf16, type: bf16, dims: [64], fill: {ramp: {start: -1, step: 0.03125}}}
  - {name: q8_0, type: q8_0, dims: [64], fill: {ramp: {start: -1, step: 0.03125}}}
  - {name: q4_0, type: q4_0, dims: [64], fill: {ramp: {start: -1, step: 0.03125}}}
  - {name: f64, type: f64, dims: [4], values: [1.5, -2.25, nan, inf]}
)");
  const double tol[] = {0, 0, 0, 1.0 / 127 / 2 + 1e-6, 1.0 / 8 + 1e-6};  // exact for ramps of 1/32; q8_0 and q4_0 steps
  const char* names[] = {"f32", "f16", "bf16", "q8_0", "q4_0"};
  for (int k = 0; k < 5; ++k) {
    SCOPED_TRACE(names[k]);
    YAML::Node j = json_of(std::string("tensor --json ") + path + " " + names[k] + " --head 64");
    EXPECT_EQ(j["count"].as<int>(), 64);
    ASSERT_EQ(j["head"].size(), 64u);
    for (int i = 0; i < 64; ++i) EXPECT_NEAR(j["head"][i].as<double>(), -1 + i * 0.03125, tol[k]) << i;
    EXPECT_NEAR(j["min"].as<double>(), -1, tol[k]);
    EXPECT_NEAR(j["max"].as<double>(), -1 + 63 * 0.03125, tol[k]);
    EXPECT_NEAR(j["mean"].as<double>(), -1 + 31.5 * 0.03125, tol[k] + 1e-6);
  }
  CliRun f64 = run_cli("tensor " + path + " f64");
  EXPECT_EQ(f64.code, 1);  // f64 tensors are written, not decoded
  EXPECT_NE(f64.err.find("decoding f64 is not supported"), std::string::npos) << f64.err;
}

TEST(Inspect, Q4KAndQ6KBlocksDecodeToTheNumbersWorkedOutByHand) {
  // q4_K: d = 1.0, dmin = 0.5; sub-blocks 0-3 scale 2 min 1, sub-blocks 4-7 scale 3 min 1;
  // every quant byte 0x21 (low nibble 1, high nibble 2). Each 64 values: 32 from the low
  // nibbles (scale of sub-block 2k), 32 from the high (sub-block 2k+1).
  std::string q4k = "003c 0038 02020202 01010101 13131313" + std::string(256, '0');
  for (size_t i = 0; i < 128; ++i) q4k.replace(q4k.size() - 256 + 2 * i, 2, "21");
  // q6_K: ql all 0x5A, qh all 0x9C, scales 1..16, d = 0.5. q1 = 10-32, q2 = 58-32,
  // q3 = 21-32, q4 = 37-32; element l of a 128 group uses scale is + 0/2/4/6 (is = l/16).
  std::string q6k;
  for (int i = 0; i < 128; ++i) q6k += "5a";
  for (int i = 0; i < 64; ++i) q6k += "9c";
  for (int i = 1; i <= 16; ++i) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", i);
    q6k += b;
  }
  q6k += "0038";
  std::string path = write_yaml("inspect-kquants.gguf", "tensors:\n  - {name: q4k, type: q4_K, dims: [256], bytes: \"" + q4k +
                                                         "\"}\n  - {name: q6k, type: q6_K, dims: [256], bytes: \"" + q6k + "\"}\n");
  Scanned s = scan_file(path);
  std::vector<float> a = tensor_values(s.model.tensors[0]);
  ASSERT_EQ(a.size(), 256u);
  const float q4_expect[8] = {1.5f, 3.5f, 1.5f, 3.5f, 2.5f, 5.5f, 2.5f, 5.5f};  // 2*1-0.5, 2*2-0.5, 3*1-0.5, 3*2-0.5
  for (int i = 0; i < 256; ++i) ASSERT_EQ(a[i], q4_expect[i / 32]) << i;
  std::vector<float> b = tensor_values(s.model.tensors[1]);
  ASSERT_EQ(b.size(), 256u);
  const std::pair<int, float> q6_expect[] = {
      {0, -11},   {16, -22},  {32, 39},    {48, 52},   {64, -27.5}, {80, -33},   {96, 17.5},  {112, 20},
      {128, -99}, {144, -110}, {160, 143}, {176, 156}, {192, -71.5}, {208, -77}, {224, 37.5}, {240, 40}};
  for (auto [i, v] : q6_expect) {
    EXPECT_EQ(b[i], v) << i;
    EXPECT_EQ(b[i + 15], v) << i + 15;  // the same all through its 16
  }
  YAML::Node j = json_of("tensor --json " + path + " q6k --head 3");
  EXPECT_EQ(j["min"].as<double>(), -110);
  EXPECT_EQ(j["max"].as<double>(), 156);
  EXPECT_EQ(j["head"].size(), 3u);
}

TEST(Validate, NamesEachBrokenExampleWithItsCodeAndOffset) {
  for (auto& e : std::filesystem::directory_iterator(kExamples + "/broken")) {
    std::string name = e.path().stem().string();
    SCOPED_TRACE(name);
    Sketch s = read_sketch(e.path().string());
    std::string path = temp_path("validate-" + name + ".gguf");
    write_sketch(s, path);
    auto fs = validate_file(path);
    ASSERT_FALSE(fs.empty());
    if (name == "nonzero-padding") {
      EXPECT_EQ(fs[0].code, "nonzero_padding");
      EXPECT_EQ(fs[0].severity, "warning");
      EXPECT_EQ(fs[0].offset, scan_file(path).layout.header_size);  // the first padding byte
      continue;
    }
    if (name == "unknown-tensor-type" || name == "removed-tensor-type") {  // read as opaque bytes; llama.cpp refuses them
      const Scanned sc = scan_file(path);
      EXPECT_EQ(sc.model.tensors[0].opaque_bytes, std::optional<uint64_t>(32));
      auto it = std::find_if(fs.begin(), fs.end(), [](const Finding& x) { return x.code == Code::tensor_type_unknown; });
      ASSERT_NE(it, fs.end());
      EXPECT_EQ(it->severity, "error");
      EXPECT_EQ(it->offset, *sc.model.tensors.record(0) + 8 + 1 + 4 + 8);  // name "a", one dim: the type field
      continue;
    }
    const Finding& f = fs[0];
    bool truncated = name == "truncated-data" || name == "offset-past-end";
    EXPECT_EQ(f.code, truncated ? "truncated" : "read") << f.message;
    EXPECT_EQ(f.severity, "error");
    EXPECT_TRUE(f.offset.has_value());
    if (!truncated) {  // the reader's own offset
      try {
        scan_file(path);
        ADD_FAILURE() << "the reader accepted what validate calls an error";
      } catch (const Error& err) {
        EXPECT_EQ(f.offset, err.offset);
        EXPECT_EQ(f.message, err.field + ": " + err.message);
      }
    }
  }
}

TEST(Validate, FindsAFileCut200BytesIntoItsTensorData) {
  std::string full = stacked();
  auto bytes = read_file_bytes(full);
  Scanned s = scan_file(full);
  uint64_t cut_at = s.layout.data_offset + 200;
  bytes.resize(cut_at);
  std::string path = temp_path("cut-200.gguf");
  write_file_bytes(path, bytes);
  auto fs = validate_file(path);
  ASSERT_GE(fs.size(), 2u);
  EXPECT_EQ(fs[0].code, "truncated");
  EXPECT_EQ(fs[0].offset, s.layout.data_offset);  // token_embd.weight, 2560 bytes from the data start
  EXPECT_NE(fs[0].message.find("past the end of the file at " + std::to_string(cut_at)), std::string::npos) << fs[0].message;
  EXPECT_NE(fs[0].message.find(std::to_string(s.layout.file_size - cut_at) + " bytes missing"), std::string::npos);
  EXPECT_EQ(fs[1].message, "8 tensors in all lie past the end of the file");
  CliRun r = run_cli("validate " + path);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("error truncated at byte " + std::to_string(s.layout.data_offset)), std::string::npos) << r.out;
}

TEST(Validate, FindsWhatReadersLetThrough) {
  struct Case { std::string yaml, code, severity; };
  const std::string tokens = "  - {key: tokenizer.ggml.tokens, type: array, items: string, value: [a, b, c]}\n";
  const std::vector<Case> cases = {
      {"metadata:\n  - {key: general.name, type: string, value: x}\n", "missing_architecture", "error"},
      {"metadata:\n  - {key: general.architecture, type: string, value: llama}\n", "missing_hparam", "error"},
      {"metadata:\n  - {key: general.architecture, type: string, value: x}\n" + tokens +
           "  - {key: tokenizer.ggml.eos_token_id, type: u32, value: 3}\n", "token_id", "error"},
      {"metadata:\n  - {key: general.architecture, type: string, value: x}\n" + tokens +
           "  - {key: tokenizer.ggml.scores, type: array, items: f32, value: [1, 2]}\n", "vocab_length", "error"},
      {"metadata:\n  - {key: general.architecture, type: string, value: x}\n"
       "  - {key: n, type: array, items: array, value: [{items: u8, value: [1]}]}\n", "nested_array", "error"},
      {"metadata:\n  - {key: general.architecture, type: string, value: {hex: \"ff\"}}\n", "invalid_utf8", "warning"},
      {"metadata:\n  - {key: general.architecture, type: string, value: x}\ntensors:\n"
       "  - {name: q, type: q8_0, dims: [32], fill: zeros}\n", "missing_quantization_version", "warning"},
      {"metadata:\n  - {key: general.architecture, type: string, value: x}\ntensors:\n"
       "  - {name: a, type: f32, dims: [8], fill: zeros}\nraw: {truncate_at: 1000}\n", "trailing_bytes", "warning"},
      {"metadata:\n  - {key: general.architecture, type: string, value: x}\n  - {key: general.alignment, type: u32, value: 32}\n"
       "tensors:\n  - {name: a, type: f32, dims: [8], fill: zeros}\n  - {name: b, type: f32, dims: [4], fill: zeros, raw: {offset: 64}}\n"
       "raw: {truncate_at: 256}\n", "offset_gap", "error"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.code);
    std::string path = write_yaml("validate-" + c.code + ".gguf", c.yaml);
    auto fs = validate_file(path);
    auto it = std::find_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.code == c.code; });
    ASSERT_NE(it, fs.end());
    EXPECT_EQ(it->severity, c.severity);
    CliRun r = run_cli("validate --json " + path);
    EXPECT_EQ(r.code, c.severity == "error" ? 1 : 0) << r.out;
    CliRun strict = run_cli("validate --strict " + path);
    EXPECT_EQ(strict.code, 1) << strict.out;
  }
  // Offsets point at the field: the token id's value.
  std::string path = temp_path("validate-token_id.gguf");
  auto fs = validate_file(path);
  Scanned s = scan_file(path);
  EXPECT_EQ(fs[0].offset, s.layout.find(SpanKind::kv_value, "kv[2] tokenizer.ggml.eos_token_id")->span.offset);
  EXPECT_EQ(fs[0].message, "tokenizer.ggml.eos_token_id = 3 is not below the vocabulary size 3");
}

TEST(Validate, PassesTheCorpusWithNoErrors) {
  for (const char* f : {"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-phi-3.gguf",
                        "vocab/ggml-vocab-bert-bge.gguf", "vocab/ggml-vocab-falcon.gguf",
                        "vocab/ggml-vocab-baichuan.gguf", "history/ggml-vocab-falcon.v2.gguf"}) {
    SCOPED_TRACE(f);
    for (const auto& finding : validate_file(corpus(f))) EXPECT_NE(finding.severity, "error") << finding.message;
    CliRun r = run_cli("validate " + corpus(f));
    EXPECT_EQ(r.code, 0) << r.out;
  }
  auto v1 = validate_file(corpus("history/ggml-vocab-llama.v1.gguf"));
  ASSERT_EQ(v1.size(), 1u);
  EXPECT_EQ(v1[0].code, "read");
  EXPECT_EQ(v1[0].offset, 4u);
}

TEST(DiffHash, AChatTemplateEditIsOneKeyAndEveryHashIsKept) {
  std::string tiny = temp_path("diff-tiny.gguf"), edited = temp_path("diff-edited.gguf");
  write_sketch(read_sketch(kExamples + "/tiny-llama.yaml", {{"VOCAB", corpus("vocab/ggml-vocab-llama-spm.gguf")}}), tiny);
  ASSERT_EQ(run_cli("edit " + tiny + " --set tokenizer.chat_template=hello -o " + edited).code, 0);
  YAML::Node d = json_of("diff --json " + tiny + " " + edited);
  EXPECT_FALSE(d["same"].as<bool>());
  ASSERT_EQ(d["differences"].size(), 1u);
  EXPECT_EQ(d["differences"][0]["change"].as<std::string>(), "changed");
  EXPECT_EQ(d["differences"][0]["key"].as<std::string>(), "tokenizer.chat_template");
  EXPECT_EQ(d["differences"][0]["b"].as<std::string>(), "hello");  // the value, not its display form
  YAML::Node h1 = json_of("hash --json " + tiny), h2 = json_of("hash --json " + edited);
  EXPECT_EQ(h1["all"].as<std::string>(), h2["all"].as<std::string>());
  ASSERT_EQ(h1["tensors"].size(), 21u);
  for (size_t i = 0; i < 21; ++i) EXPECT_EQ(h1["tensors"][i]["xxh64"].as<std::string>(), h2["tensors"][i]["xxh64"].as<std::string>());
  YAML::Node s1 = json_of("hash --json --algo sha256 " + tiny), s2 = json_of("hash --json --algo sha256 " + edited);
  EXPECT_EQ(s1["all"].as<std::string>(), s2["all"].as<std::string>());
  EXPECT_EQ(s1["all"].as<std::string>().size(), 64u);
  // A changed tensor byte shows as exactly that tensor.
  std::string poked = temp_path("diff-poked.gguf");
  auto bytes = read_file_bytes(tiny);
  Scanned s = scan_file(tiny);
  bytes[s.model.tensors[3].source_offset] ^= 1;
  write_file_bytes(poked, bytes);
  YAML::Node p = json_of("diff --json " + tiny + " " + poked);
  ASSERT_EQ(p["differences"].size(), 1u);
  EXPECT_EQ(p["differences"][0]["change"].as<std::string>(), "tensor_bytes");
  EXPECT_EQ(p["differences"][0]["key"].as<std::string>(), s.model.tensors[3].name);
  YAML::Node same = json_of("diff --json " + tiny + " " + tiny);
  EXPECT_TRUE(same["same"].as<bool>());
}

TEST(DiffHash, Sha256IsTheStandardOne) {
  EXPECT_EQ(sha256_hex(reinterpret_cast<const uint8_t*>("abc"), 3),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(nullptr, 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  std::string m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(sha256_hex(reinterpret_cast<const uint8_t*>(m.data()), m.size()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Inspect, TensorChoosesRowsPrintsAllValuesAndTheStandardDeviation) {
  std::string path = write_yaml("inspect-rows.gguf", R"(
tensors:
  - {name: m, type: f32, dims: [4, 3], values: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]}
)");
  CliRun all = run_cli("tensor " + path + " m --all");
  ASSERT_EQ(all.code, 0) << all.err;
  // 0..11: mean 5.5, population variance (12^2 - 1) / 12, so the deviation is 3.452052529534663
  EXPECT_NE(all.out.find("count 12  min 0  max 11  mean 5.5  std 3.452052529534663  nan 0  inf 0"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("values  0 1 2 3 4 5 6 7 8 9 10 11\n"), std::string::npos) << all.out;
  CliRun rows = run_cli("tensor " + path + " m --rows 1:3 --json");
  ASSERT_EQ(rows.code, 0) << rows.err;
  YAML::Node j = YAML::Load(rows.out);
  EXPECT_EQ(j["count"].as<int>(), 8);
  EXPECT_EQ(j["min"].as<double>(), 4);
  EXPECT_EQ(j["max"].as<double>(), 11);
  EXPECT_EQ(j["mean"].as<double>(), 7.5);
  EXPECT_NEAR(j["std"].as<double>(), 2.29128784747792, 1e-12);  // sqrt(5.25)
  EXPECT_EQ(j["head"][0].as<double>(), 4);
  CliRun open_end = run_cli("tensor " + path + " m --rows 2:");
  EXPECT_NE(open_end.out.find("count 4  min 8  max 11  mean 9.5"), std::string::npos) << open_end.out;
  CliRun bad = run_cli("tensor " + path + " m --rows 3:9");
  EXPECT_EQ(bad.code, 1);  // well formed, past the tensor: what the file lacks
  EXPECT_NE(bad.err.find("--rows 3:9 holds no row of the 3 the tensor has"), std::string::npos) << bad.err;
}

// The issue's case: nothing drew a tensor's values. 63 zeros and one 100 (element 45: row
// 11, column 1 of rows of 4): mean 1.5625, deviation sqrt(10000/64 - 1.5625^2) = 12.40196,
// so 100 lies 7.9 deviations out and is named; four bins of 25 from 0 hold 63, 0, 0, 1, the
// 1 a bar of 40/63 of a column: 5 eighths.
TEST(Inspect, TensorHistogramDrawsBarsAndNamesTheOutliers) {
  std::string values;
  for (int i = 0; i < 64; ++i) values += std::string(i ? ", " : "") + (i == 45 ? "100" : "0");
  std::string path = write_yaml("inspect-histogram.gguf", "tensors:\n  - {name: w, type: f32, dims: [4, 16], values: [" + values + "]}\n");
  CliRun r = run_cli("tensor " + path + " w --histogram --bins 4 --head 2");
  ASSERT_EQ(r.code, 0) << r.err;
  std::string full;
  for (int i = 0; i < 40; ++i) full += "\u2588";
  EXPECT_NE(r.out.find("histogram of 64 finite values in 4 bins from 0 to 100\n"
                       "   0           63 " + full + "\n"
                       "  25            0\n"
                       "  50            0\n"
                       "  75            1 \u258B\n"
                       "1 outlier beyond 6 standard deviations (74.41176) of the mean 1.5625:\n"
                       "  element 45 (row 11, column 1): 100\n"),
            std::string::npos)
      << r.out;
  // Rows 2 to 15 (56 values, 100 now 7.4 deviations out): the element is 37 of the part,
  // still row 11; the JSON says the same.
  CliRun j = run_cli("tensor " + path + " w --rows 2:16 --histogram --bins 2 --json");
  ASSERT_EQ(j.code, 0) << j.err;
  YAML::Node h = YAML::Load(j.out)["histogram"];
  EXPECT_EQ(h["lo"].as<double>(), 0);
  EXPECT_EQ(h["hi"].as<double>(), 100);
  ASSERT_EQ(h["bins"].size(), 2u);
  EXPECT_EQ(h["bins"][0].as<int>(), 55);
  EXPECT_EQ(h["bins"][1].as<int>(), 1);
  EXPECT_EQ(h["beyond"].as<int>(), 1);
  ASSERT_EQ(h["outliers"].size(), 1u);
  EXPECT_EQ(h["outliers"][0]["index"].as<int>(), 37);
  EXPECT_EQ(h["outliers"][0]["row"].as<int>(), 11);
  EXPECT_EQ(h["outliers"][0]["column"].as<int>(), 1);
  EXPECT_EQ(h["outliers"][0]["value"].as<double>(), 100);
  // Alike values: one bin whatever --bins says, its bar full, no outliers.
  std::string flat = write_yaml("inspect-flat.gguf", "tensors:\n  - {name: f, type: f32, dims: [4], values: [2, 2, 2, 2]}\n");
  CliRun f = run_cli("tensor " + flat + " f --histogram --bins 2");
  EXPECT_NE(f.out.find("in 1 bin from 2 to 2\n  2            4 " + full + "\nno outliers: every value is within 6 standard deviations of the mean\n"),
            std::string::npos)
      << f.out;
  EXPECT_EQ(run_cli("tensor " + flat + " f --histogram --bins 0").code, 2);
  // A narrow range: labels with as many digits as tell the bins apart (at 4 all were "1000")
  std::string narrow = write_yaml("inspect-narrow.gguf", "tensors:\n  - {name: n, type: f32, dims: [4], values: [1000, 1000, 1000.0703125, 1000.0703125]}\n");
  CliRun nr = run_cli("tensor " + narrow + " n --histogram --bins 4");
  EXPECT_NE(nr.out.find("\n     1000            2 " + full + "\n  1000.02            0\n  1000.04            0\n  1000.05            2 " + full + "\n"),
            std::string::npos)
      << nr.out;
  CliRun negative = run_cli("tensor " + flat + " f --histogram --bins -1");
  EXPECT_EQ(negative.err, "ggufkit: error: --bins must be 1 to 1000, found -1\n");
  CliRun alone = run_cli("tensor " + flat + " f --bins 5");
  EXPECT_EQ(alone.code, 2);
  EXPECT_NE(alone.err.find("--bins is for --histogram: give --histogram too"), std::string::npos) << alone.err;
}

// A tensor of 70 MB decoded on a terminal says how far it is, as hash and the writes do;
// piped, it prints nothing on standard error.
TEST(Inspect, TensorShowsProgressOnATerminalAndNowhereElse) {
  std::string path = write_yaml("tensor-big.gguf", "tensors:\n  - {name: big, type: f32, dims: [4096, 4300], fill: zeros}\n");
  CliRun piped = run_cli("tensor " + path + " big --histogram");
  ASSERT_EQ(piped.code, 0) << piped.err;
  EXPECT_EQ(piped.err, "");
  std::string transcript = temp_path("tensor-tty.txt");
  std::string cmd = "script -qec '" + std::string(GGUFKIT_BIN) + " tensor " + path + " big --histogram > /dev/null' " + transcript +
                    " < /dev/null > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  auto t = read_file_bytes(transcript);
  std::string text(t.begin(), t.end());
  // Two passes (the figures, then the bins), each to 100%.
  size_t first = text.find("ggufkit: decoding 70.5 MB of 70.5 MB (100%)");
  ASSERT_NE(first, std::string::npos) << text.substr(0, 500);
  EXPECT_NE(text.find("ggufkit: decoding 70.5 MB of 70.5 MB (100%)", first + 1), std::string::npos);
}

// Validating a set of more than 64 MiB shows the bytes of the shards judged on a terminal,
// shard by shard (two shards of 36.7 MB: 50% after the first), and nothing when piped or
// for a lone file (whose header is all validate reads).
TEST(Inspect, ValidateShowsASetsProgressOnATerminalAndNowhereElse) {
  std::string path = write_yaml("validate-big.gguf",
                                "tensors:\n  - {name: a, type: f32, dims: [4096, 2240], fill: zeros}\n"
                                "  - {name: b, type: f32, dims: [4096, 2240], fill: zeros}\n");
  const std::string prefix = temp_path("validate-big-set");
  CliRun split = run_cli("split " + path + " --max-tensors 1 -o " + prefix);
  ASSERT_EQ(split.code, 0) << split.err;
  const std::string first = prefix + "-00001-of-00002.gguf";
  CliRun piped = run_cli("validate " + first);
  EXPECT_EQ(piped.code, 1) << piped.err;  // a sketch of tensors alone names no architecture: an error
  EXPECT_NE(piped.out.find("validate-big-set-00001-of-00002.gguf: 1 errors, 0 warnings"), std::string::npos) << piped.out;
  EXPECT_EQ(piped.err, "");
  std::string transcript = temp_path("validate-tty.txt");
  std::string cmd = "script -qec '" + std::string(GGUFKIT_BIN) + " validate " + first + " > /dev/null' " + transcript +
                    " < /dev/null > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 256);  // script passes the exit status on: 1
  auto t = read_file_bytes(transcript);
  std::string text(t.begin(), t.end());
  EXPECT_NE(text.find("\rggufkit: validating 36.7 MB of 73.4 MB (50%)"), std::string::npos) << text.substr(0, 500);
  EXPECT_NE(text.find("\rggufkit: validating 73.4 MB of 73.4 MB (100%)\r\n"), std::string::npos) << text.substr(0, 500);
  // a lone file of 73.4 MB (the one split) is no set: no line
  cmd = "script -qec '" + std::string(GGUFKIT_BIN) + " validate " + path + " > /dev/null' " + transcript + " < /dev/null > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 256);
  t = read_file_bytes(transcript);
  EXPECT_EQ(std::string(t.begin(), t.end()).find("validating"), std::string::npos);
}

// A one-line value of the file (meta, show, a dry run's change) cannot turn the printed line
// around: the bidirectional controls are escaped as the other controls are, in text and
// in JSON (which reads back to the same string).
TEST(Inspect, BidiControlsInAValueAreEscapedWhereverItIsPrinted) {
  std::string path = write_yaml("bidi.gguf", "metadata:\n  - {key: general.name, type: string, value: \"evil \\u202e txt.exe \\u2066 isolate\"}\n");
  const std::string raw_rlo = "\xe2\x80\xae", raw_lri = "\xe2\x81\xa6";
  for (const std::string& cmd : {"meta " + path, "show " + path, "edit " + path + " --set general.name=x --dry-run", "meta --json " + path}) {
    SCOPED_TRACE(cmd);
    CliRun r = run_cli(cmd);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("evil \\u202e txt.exe \\u2066 isolate"), std::string::npos) << r.out;  // show's unquoted
    EXPECT_EQ(r.out.find(raw_rlo), std::string::npos);
    EXPECT_EQ(r.out.find(raw_lri), std::string::npos);
  }
  YAML::Node j = YAML::Load(run_cli("meta --json " + path).out);
  bool found = false;
  for (const auto& e : j["metadata"])
    if (e["key"].as<std::string>() == "general.name") found = e["value"].as<std::string>() == "evil " + raw_rlo + " txt.exe " + raw_lri + " isolate";
  EXPECT_TRUE(found) << run_cli("meta --json " + path).out;
}

namespace {
std::string with_model(const std::string& name, const std::function<void(Model&)>& change) {
  Scanned s = scan_file(tiny_llama());
  change(s.model);
  std::string out = temp_path(name);
  write_file(s.model, out);
  return out;
}
}  // namespace

TEST(Diff, EveryKindOfDifferenceIsReportedAndExitCodeSaysSo) {
  const std::string a = tiny_llama();
  struct Case {
    std::string name, b, expect;  // the line diff prints for it
  };
  auto appended = [&] {
    auto bytes = read_file_bytes(a);
    bytes.insert(bytes.end(), {1, 2, 3});
    std::string p = temp_path("diff-trailing.gguf");
    write_file_bytes(p, bytes);
    return p;
  };
  auto padded = [&] {  // one non-zero byte in the padding before the data
    auto bytes = read_file_bytes(a);
    Scanned s = scan_file(a);
    bytes[s.layout.header_size] = 0x55;
    std::string p = temp_path("diff-padding.gguf");
    write_file_bytes(p, bytes);
    return p;
  };
  std::string big = temp_path("diff-be.gguf");
  ASSERT_EQ(run_cli("convert " + a + " --byte-order big -o " + big).code, 0);
  std::string a64 = temp_path("diff-64.gguf");
  ASSERT_EQ(run_cli("realign " + a + " -a 64 -o " + a64).code, 0);
  std::string renamed = temp_path("diff-renamed.gguf");
  ASSERT_EQ(run_cli("edit " + a + " --rename general.name=general.title -o " + renamed).code, 0);
  for (const Case& c : {
           Case{"swapped keys", with_model("diff-swap.gguf", [](Model& m) {
             KV one = m.metadata[1];
             m.metadata.set(1, m.metadata[2]);
             m.metadata.set(2, one);
           }),
                "key_order       general.name: position 1 of the shared keys -> general.file_type stands there"},
           Case{"version", with_model("diff-v2.gguf", [](Model& m) { m.version = 2; }), "version         3 -> 2"},
           Case{"byte order", big, "byte_order      little -> big"},
           Case{"alignment", a64, "alignment       32 -> 64"},
           Case{"rename", renamed, "renamed         general.name -> general.title"},
           Case{"changed", with_model("diff-eos.gguf", [](Model& m) { m.find("tokenizer.ggml.eos_token_id")->bits = 7; }),
                "changed         tokenizer.ggml.eos_token_id: 2 -> 7"},
           Case{"tensor order", with_model("diff-torder.gguf", [](Model& m) { std::swap(m.tensors.edit(1), m.tensors.edit(2)); }),
                "tensor_order"},
           Case{"trailing bytes", appended(), "trailing        0 bytes after the end -> 3 bytes after the end"},
           Case{"padding", padded(), "padding         0 non-zero bytes -> 1 non-zero bytes"}}) {
    SCOPED_TRACE(c.name);
    EXPECT_NE(read_file_bytes(a), read_file_bytes(c.b));
    CliRun r = run_cli("diff " + a + " " + c.b + " --exit-code");
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << r.out;
    EXPECT_EQ(run_cli("diff " + a + " " + c.b).code, 0);  // without --exit-code
  }
  CliRun same = run_cli("diff " + a + " " + a + " --exit-code");
  EXPECT_EQ(same.code, 0);
  EXPECT_EQ(same.out, "no differences\n");
}

// The issue's cases: an added key printed as `added general.alignment:  -> 32`, and a changed
// template as two 60-character prefixes; and realign -a 32 saying how to get the original back.
TEST(Diff, AnAddedOrRemovedKeyIsOneLineAndALongStringIsADiffOfItsLines) {
  const std::string a = tiny_llama();
  const std::string a64 = temp_path("diff-line-64.gguf"), a32 = temp_path("diff-line-32.gguf"), back = temp_path("diff-line-back.gguf");
  ASSERT_EQ(run_cli("realign " + a + " -a 64 -o " + a64).code, 0);
  CliRun r32 = run_cli("realign " + a64 + " -a 32 -o " + a32);
  ASSERT_EQ(r32.code, 0) << r32.err;
  EXPECT_NE(r32.err.find("alignment 32 is written as the key general.alignment = 32; -a default removes the key instead"),
            std::string::npos)
      << r32.err;
  // Said in a patch's own form there, and not at all when the key already holds 32.
  const std::string patch = temp_path("diff-line-32.yaml");
  write_file_bytes(patch, {'a', 'l', 'i', 'g', 'n', 'm', 'e', 'n', 't', ':', ' ', '3', '2', '\n'});
  CliRun p32 = run_cli("edit " + a64 + " --patch " + patch + " -o " + temp_path("diff-line-p32.gguf"));
  EXPECT_NE(p32.err.find("diff-line-32.yaml:1:12: alignment 32 is written as the key general.alignment = 32; alignment: default removes"),
            std::string::npos)
      << p32.err;
  CliRun again = run_cli("realign " + a32 + " -a 32 -o " + temp_path("diff-line-32-again.gguf"));
  EXPECT_EQ(again.err.find("alignment 32 is written"), std::string::npos) << again.err;
  EXPECT_EQ(run_cli("diff " + a + " " + a32).out, "added           general.alignment: 32\n1 differences\n");
  EXPECT_EQ(run_cli("diff " + a32 + " " + a).out, "removed         general.alignment: 32\n1 differences\n");
  // The advice followed gives the original bytes back, and says nothing more.
  CliRun d = run_cli("realign " + a64 + " -a default -o " + back);
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(d.err.find("'default'"), std::string::npos) << d.err;
  EXPECT_EQ(read_file_bytes(back), read_file_bytes(a));

  std::string before;
  const std::string changed = with_model("diff-line-template.gguf", [&](Model& m) {
    Value* t = m.find("tokenizer.chat_template");
    before = t->str;
    t->str.replace(t->str.find("assistant"), 9, "ASSISTANT");
  });
  ASSERT_EQ(before.size(), 151u);
  CliRun r = run_cli("diff " + a + " " + changed);
  EXPECT_EQ(r.out, "changed         tokenizer.chat_template: string of 151 bytes -> 151 bytes, by lines:\n"
                   "--- " + a + ":tokenizer.chat_template\n"
                   "+++ " + changed + ":tokenizer.chat_template\n"
                   "@@ -1,4 +1,4 @@\n"
                   " {% for message in messages %}<|{{ message['role'] }}|>\n"
                   " {{ message['content'] }}</s>\n"
                   "-{% endfor %}{% if add_generation_prompt %}<|assistant|>\n"
                   "+{% endfor %}{% if add_generation_prompt %}<|ASSISTANT|>\n"
                   " {% endif %}\n"
                   "\\ No newline at end of file\n"
                   "1 differences\n");
  // The file's text cannot act on the terminal: an escape sequence, a NUL and a right-to-left
  // override in a template are shown escaped, each on its line.
  const std::string hostile = with_model("diff-line-hostile.gguf", [&](Model& m) {
    m.find("tokenizer.chat_template")->str = std::string("line one\n\x1b[2J\x1b]0;title\x07 and \xE2\x80\xAE rtl\nnul ") +
                                             std::string(1, '\0') + " after\n";
  });
  CliRun h = run_cli("diff " + a + " " + hostile);
  EXPECT_NE(h.out.find("+line one\n+\\u001b[2J\\u001b]0;title\\u0007 and \\u202e rtl\n+nul \\u0000 after\n1 differences\n"),
            std::string::npos)
      << h.out;
  EXPECT_EQ(h.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(h.out.find("\xE2\x80\xAE"), std::string::npos);
  // A short one-line string keeps its one line.
  const std::string named = with_model("diff-line-name.gguf", [](Model& m) { m.find("general.name")->str = "other"; });
  CliRun n = run_cli("diff " + a + " " + named);
  EXPECT_NE(n.out.find("changed         general.name: \"ggufkit tiny llama\" -> \"other\"\n"), std::string::npos) << n.out;
}

TEST(Diff, EveryKindHasItsOwnNameAndTheNameReadsBack) {
  std::vector<std::string> names;
  for (int i = 0; i <= static_cast<int>(kLastDiffKind); ++i) {
    const DiffKind k = static_cast<DiffKind>(i);
    const std::string name(diff_kind_name(k));
    EXPECT_EQ(std::count(names.begin(), names.end(), name), 0) << name;
    EXPECT_EQ(diff_kind_named(name), k) << name;
    names.push_back(name);
  }
  // The list schemas/json.md gives for diff's "change", in its order.
  std::string joined;
  for (const std::string& n : names) joined += (joined.empty() ? "" : " ") + n;
  EXPECT_EQ(joined, "version byte_order alignment key_order renamed removed added changed tensor_order tensor_removed "
                    "tensor_added tensor_changed tensor_bytes tensor_offset padding trailing");
  EXPECT_EQ(diff_kind_named("tensor"), std::nullopt);
  EXPECT_EQ(diff_kind_named(""), std::nullopt);
}

TEST(Diff, JsonGivesTypedValues) {
  std::string p = write_yaml("diff-typed-a.gguf", "metadata:\n  - {key: n, type: u32, value: 2}\n"
                                                   "  - {key: l, type: array, items: f32, value: [0.5, 1]}\n"
                                                   "  - {key: s, type: string, value: x}\n");
  std::string q = write_yaml("diff-typed-b.gguf", "metadata:\n  - {key: n, type: u32, value: 7}\n"
                                                   "  - {key: l, type: array, items: f32, value: [0.5, 2]}\n"
                                                   "  - {key: s, type: string, value: y}\n");
  YAML::Node j = json_of("diff --json " + p + " " + q);
  EXPECT_FALSE(j["same"].as<bool>());
  ASSERT_EQ(j["differences"].size(), 3u);
  YAML::Node n = j["differences"][0], l = j["differences"][1], s = j["differences"][2];
  EXPECT_EQ(n["key"].as<std::string>(), "n");
  EXPECT_EQ(n["type"].as<std::string>(), "u32");
  EXPECT_EQ(n["a"].as<int>(), 2);
  EXPECT_EQ(n["b"].as<int>(), 7);
  EXPECT_TRUE(l["b"].IsSequence());
  EXPECT_EQ(l["b"][1].as<double>(), 2.0);
  EXPECT_EQ(s["b"].as<std::string>(), "y");
}

TEST(DiffHash, HashShowsProgressOnATerminalAndNowhereElse) {
  std::string path = write_yaml("hash-big.gguf", "tensors:\n"
                                                  "  - {name: big, type: f32, dims: [4096, 4300], fill: {random_bytes: {seed: 5}}}\n");
  ASSERT_GT(std::filesystem::file_size(path), 64u << 20);
  CliRun piped = run_cli("hash " + path);
  ASSERT_EQ(piped.code, 0) << piped.err;
  EXPECT_EQ(piped.err, "");  // not a terminal: nothing but the result
  // script(1) gives the program a terminal; what it printed there lands in the transcript.
  std::string transcript = temp_path("hash-tty.txt");
  std::string cmd = "script -qec '" + std::string(GGUFKIT_BIN) + " hash " + path + " > /dev/null' " + transcript + " < /dev/null > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  auto t = read_file_bytes(transcript);
  std::string text(t.begin(), t.end());
  EXPECT_NE(text.find("ggufkit: hashing 70.5 MB of 70.5 MB (100%)"), std::string::npos) << text.substr(0, 500);
}

TEST(FileTypes, OneTableNamesEveryTypeShowPrintsAndTheRuleBookKnowsOnlyLlamaCppsOwn) {
  // show's names and the rule book's types come from one table: they disagreed on 4 (show
  // named it, the rules did not know it) and on 39-41 (the rules knew them, show printed "").
  EXPECT_EQ(ggufkit::file_type_name(0), "ALL_F32");
  EXPECT_EQ(ggufkit::file_type_name(15), "MOSTLY_Q4_K_M");
  EXPECT_EQ(ggufkit::file_type_name(4), "MOSTLY_Q4_1_SOME_F16");  // an old file's: named
  EXPECT_EQ(ggufkit::file_type_name(39), "MOSTLY_NVFP4");
  EXPECT_EQ(ggufkit::file_type_name(41), "MOSTLY_Q2_0");
  EXPECT_EQ(ggufkit::file_type_name(5), "");  // Q4_2: removed before GGUF
  ASSERT_NE(ggufkit::file_type(4), nullptr);
  EXPECT_TRUE(ggufkit::file_type(4)->removed);  // and unknown to llama.cpp (KeyValueUnusual's case)
  ASSERT_NE(ggufkit::file_type(41), nullptr);
  EXPECT_EQ(ggufkit::file_type(41)->main, 42u);
  size_t named = 0;
  for (const ggufkit::FileType& f : ggufkit::file_types()) named += !ggufkit::file_type_name(f.id).empty();
  EXPECT_EQ(named, ggufkit::file_types().size());
  EXPECT_EQ(ggufkit::file_types().size(), 37u);
}

// "Did you mean": a swap of neighbours is one edit, a name the word begins is one, and
// nothing past the limit is offered.
TEST(Inspect, NearestNamesCountSwapsAndPrefixesAndStopAtTheLimit) {
  EXPECT_EQ(ggufkit::edit_distance("shwo", "show"), 1u);
  EXPECT_EQ(ggufkit::edit_distance("--nope", "--file"), 3u);
  EXPECT_EQ(ggufkit::edit_distance("", "abc"), 3u);
  EXPECT_EQ(ggufkit::edit_distance("kitten", "sitting"), 3u);
  const std::vector<std::string> opts = {"--file", "--json", "--dry-run", "--help"};
  EXPECT_EQ(ggufkit::nearest_names("--dry", opts, 2), std::vector<std::string>{"--dry-run"});
  EXPECT_EQ(ggufkit::nearest_names("--jsno", opts, 2), std::vector<std::string>{"--json"});
  EXPECT_TRUE(ggufkit::nearest_names("--nope", opts, 2).empty());
  EXPECT_TRUE(ggufkit::nearest_names("--json", opts, 2).empty());  // the name itself is no suggestion
  // a quarter of a long word is no typo: at most 8 edits
  const std::string longer(40, 'a');
  EXPECT_TRUE(ggufkit::nearest_names(longer, {std::string(30, 'a') + std::string(10, 'b')}, 10).empty());
  EXPECT_EQ(ggufkit::nearest_names(longer, {std::string(32, 'a') + std::string(8, 'b')}, 10).size(), 1u);
  EXPECT_EQ(ggufkit::did_you_mean({}), "");
  EXPECT_EQ(ggufkit::did_you_mean({"a"}), "did you mean 'a'?");
  EXPECT_EQ(ggufkit::did_you_mean({"a", "b"}), "did you mean 'a' or 'b'?");
  EXPECT_EQ(ggufkit::did_you_mean({"a", "b", "c", "d", "e", "f"}), "did you mean 'a', 'b', 'c', 'd' or 2 more?");
}
