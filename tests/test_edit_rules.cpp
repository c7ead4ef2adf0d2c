// An edit never writes what llama.cpp would refuse (validate's rules, checked on the model
// about to be written) unless --allow-broken: each case is refused with exit 1, the rule
// and the key named, nothing written; with --allow-broken the same edit writes the file,
// and validate reports the same rule in it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ggufkit/scan.h"
#include "helpers.h"

using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

struct Case {
  const char* name;
  std::string args;  // after FILE
  std::string patch;  // a patch file's text, when the case needs one
  const char* code;   // the rule
  std::string says;   // and a part of its message
};

std::vector<Case> cases() {
  return {
      {"alignment16", "realign FILE -a 16", "", "alignment_too_small", "general.alignment = 16: llama.cpp needs at least 32"},
      {"alignment1", "realign FILE -a 1", "", "alignment_too_small", "general.alignment = 1:"},
      {"alignment8", "edit FILE --alignment 8", "", "alignment_too_small", "general.alignment = 8:"},
      {"alignment2MiB", "realign FILE -a 2097152", "", "alignment_too_large", "general.alignment = 2097152 is over"},
      {"vocab2", "edit FILE -p PATCH",
       "set:\n  tokenizer.ggml.tokens: [a, b]\n  tokenizer.ggml.scores: [0.0, 0.0]\n  tokenizer.ggml.token_type: [1, 1]\n",
       "token_id", "tokenizer.ggml.eos_token_id = 2 is not below the vocabulary size 2"},
      {"vocab3", "edit FILE -p PATCH",
       "set:\n  tokenizer.ggml.tokens: [a, b, c]\n  tokenizer.ggml.scores: [0.0, 0.0, 0.0]\n  tokenizer.ggml.token_type: [1, 1, 1]\n",
       "vocab_rows", "token_embd.weight has 32000 rows but the vocabulary has 3 tokens"},
      {"vocab_lengths", "edit FILE -p PATCH", "set:\n  tokenizer.ggml.scores: [0.0, 0.0, 0.0]\n", "vocab_length",
       "tokenizer.ggml.scores has 3 items, tokenizer.ggml.tokens has 32000"},
      {"vocab_empty", "edit FILE -p PATCH",
       "set:\n  tokenizer.ggml.tokens: []\n  tokenizer.ggml.scores: []\n  tokenizer.ggml.token_type: []\n", "empty_vocab",
       "tokenizer.ggml.tokens is empty"},
      {"vocab_removed", "edit FILE --remove tokenizer.ggml.tokens --remove tokenizer.ggml.scores --remove tokenizer.ggml.token_type",
       "", "missing_vocab", "no tokenizer.ggml.tokens"},
      {"arch_removed", "edit FILE --remove general.architecture", "", "missing_architecture", "no general.architecture"},
      {"arch_empty", "edit FILE --set general.architecture=", "", "missing_architecture", "no general.architecture"},
      {"head_count0", "edit FILE --set llama.attention.head_count=0", "", "zero_hparam", "llama.attention.head_count is 0"},
      {"embedding0", "edit FILE --set llama.embedding_length=0", "", "zero_hparam", "llama.embedding_length is 0"},
      {"block_count5", "edit FILE --set llama.block_count=5", "", "block_count",
       "llama.block_count = 5 but the tensors are of 2 blocks (blk.0 to blk.1)"},
  };
}

std::string fill(std::string args, const std::string& file, const std::string& patch) {
  args.replace(args.find("FILE"), 4, file);
  if (size_t p = args.find("PATCH"); p != std::string::npos) args.replace(p, 5, patch);
  return args;
}

}  // namespace

TEST(EditRules, WhatLlamaCppWouldRefuseIsRefusedBeforeWritingUnlessAllowBroken) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    std::string dir = temp_path(std::string("rules-") + c.name);
    fs::create_directories(dir);
    std::string model = dir + "/model.gguf", patch = dir + "/patch.yaml", out = dir + "/out.gguf";
    fs::copy_file(tiny_llama(), model);
    if (!c.patch.empty()) std::ofstream(patch) << c.patch;
    auto listing = files_in(dir);
    const auto before = read_file_bytes(model);

    // Refused, as a dry run too, and nothing is written.
    for (const char* how : {" -o ", " --dry-run -o "}) {
      CliRun r = run_cli(fill(c.args, model, patch) + how + out);
      EXPECT_EQ(r.code, 1) << r.err;
      EXPECT_NE(r.err.find("refusing to write a model that llama.cpp would refuse:\n  [" + std::string(c.code) + "] "),
                std::string::npos) << r.err;
      EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("give --allow-broken to write it anyway"), std::string::npos) << r.err;
      EXPECT_EQ(files_in(dir), listing);
    }
    EXPECT_TRUE(read_file_bytes(model) == before);

    // Forced: written, with a note, and validate finds the same rule broken in the result.
    CliRun f = run_cli(fill(c.args, model, patch) + " --allow-broken -o " + out);
    ASSERT_EQ(f.code, 0) << f.err;
    EXPECT_NE(f.err.find("ggufkit: note: " + model + ": written anyway (--allow-broken): [" + c.code + "] "),
              std::string::npos) << f.err;
    CliRun v = run_cli("validate " + out);
    EXPECT_EQ(v.code, 1) << v.out;
    EXPECT_NE(v.out.find(c.code), std::string::npos) << v.out;
    EXPECT_TRUE(read_file_bytes(model) == before);
  }
}

TEST(EditRules, ASourcesOwnFaultDoesNotStopTheEditThatFixesIt) {
  // A model whose block_count is already wrong (written with --allow-broken) may be edited
  // elsewhere, and fixed; the fix makes validate pass again.
  std::string dir = temp_path("rules-fix");
  fs::create_directories(dir);
  std::string broken = dir + "/broken.gguf", renamed = dir + "/renamed.gguf", fixed = dir + "/fixed.gguf";
  ASSERT_EQ(run_cli("edit " + tiny_llama() + " --set llama.block_count=5 --allow-broken -o " + broken).code, 0);
  CliRun other = run_cli("edit " + broken + " --set general.name=renamed -o " + renamed);
  EXPECT_EQ(other.code, 0) << other.err;
  CliRun fix = run_cli("edit " + broken + " --set llama.block_count=2 -o " + fixed);
  ASSERT_EQ(fix.code, 0) << fix.err;
  EXPECT_TRUE(read_file_bytes(fixed) == read_file_bytes(tiny_llama()));
  CliRun v = run_cli("validate " + fixed);
  EXPECT_EQ(v.code, 0) << v.out;
}

TEST(EditRules, ValidateReportsTheNewRulesWithTheKeysOffset) {
  std::string dir = temp_path("rules-validate");
  fs::create_directories(dir);
  std::string out = dir + "/heads.gguf";
  ASSERT_EQ(run_cli("edit " + tiny_llama() + " --set llama.attention.head_count=0 --allow-broken -o " + out).code, 0);
  CliRun v = run_cli("validate " + out + " --json");
  EXPECT_EQ(v.code, 1);
  ggufkit::Scanned s = ggufkit::scan_file(out);
  const ggufkit::LabeledSpan* sp = nullptr;
  for (size_t i = 0; i < s.model.metadata.size(); ++i)
    if (s.model.metadata[i].key == "llama.attention.head_count")
      sp = s.layout.find(ggufkit::SpanKind::kv_value, "kv[" + std::to_string(i) + "] llama.attention.head_count");
  ASSERT_NE(sp, nullptr);
  EXPECT_NE(v.out.find("\"code\": \"zero_hparam\""), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("\"offset\": " + std::to_string(sp->span.offset)), std::string::npos) << v.out;
}
