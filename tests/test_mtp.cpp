// Multi-token-prediction (MTP, "nextn") layers: show says whether a file holds them
// (embedded, absent, a drafter only), validate holds {arch}.nextn_predict_layers against the
// blk.N.nextn.* tensors both ways, and a drafter (role mtp) is checked against its model.
#include <gtest/gtest.h>

#include <cstdio>

#include "ggufkit/check.h"
#include "ggufkit/role.h"
#include "ggufkit/scan.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;

namespace {

// The smallest qwen35 (Qwen3.5, dense) llama.cpp loads, with its last block of two an MTP
// layer: blk.1 holds a trunk block and nextn.eh_proj, nextn.enorm, nextn.hnorm.
const std::string& with_mtp() {
  static const std::string p = [] {
    const std::string path = temp_path("qwen35-mtp.gguf");
    CliRun r = run_cli("example --arch qwen35 --set nextn_predict_layers=1 -o " + path + " --force");
    EXPECT_EQ(r.code, 0) << r.err;
    return path;
  }();
  return p;
}

// with_mtp() edited (written even where llama.cpp would refuse it: a fixture on purpose).
std::string edited(const std::string& name, const std::string& edit) {
  const std::string path = temp_path(name);
  CliRun r = run_cli("edit " + with_mtp() + " " + edit + " --allow-broken -o " + path + " --force");
  EXPECT_EQ(r.code, 0) << r.err;
  return path;
}

std::vector<Finding> of_code(const std::vector<Finding>& fs, Code c) {
  std::vector<Finding> out;
  for (const Finding& f : fs)
    if (f.code == c) out.push_back(f);
  return out;
}

uint64_t key_value_at(const std::string& path, const std::string& key) {
  for (const LabeledSpan& sp : scan_file(path).layout.spans)
    if (sp.kind == SpanKind::kv_value && sp.path.find(key) != std::string::npos) return sp.span.offset;
  ADD_FAILURE() << "no key " << key;
  return 0;
}

}  // namespace

TEST(Mtp, AModelWithItsMtpLayerSaysEmbeddedAndValidatesClean) {
  const MtpFacts f = mtp_facts(scan_file(with_mtp()).model);
  EXPECT_EQ(f.state, MtpFacts::State::embedded);
  EXPECT_EQ(f.claimed, 1u);
  EXPECT_EQ(f.layers, (std::vector<uint64_t>{1}));
  EXPECT_EQ(f.trunk_blocks, 1u);
  CliRun s = run_cli("show " + with_mtp());
  EXPECT_NE(s.out.find("role          model\n"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("MTP           embedded (1 layer: blk.1)\n"), std::string::npos) << s.out;
  CliRun j = run_cli("show " + with_mtp() + " --json");
  EXPECT_NE(j.out.find("\"mtp\": {\"state\": \"embedded\", \"nextn_predict_layers\": 1, \"layers\": [1]}"), std::string::npos) << j.out;
  CliRun v = run_cli("validate " + with_mtp());
  EXPECT_EQ(v.code, 0) << v.out;
  EXPECT_EQ(v.out.find("mtp_layers"), std::string::npos) << v.out;
}

TEST(Mtp, AFileClaimingAnMtpLayerItDoesNotHoldIsToldAtTheKeyAndTheFixWritesTheTrunk) {
  const std::string path = edited("qwen35-no-nextn.gguf", "--remove-tensor 'blk.1.nextn.*'");
  CliRun s = run_cli("show " + path);
  EXPECT_NE(s.out.find("MTP           absent (nextn_predict_layers 1, but no blk.N.nextn.* tensor is in the file)"), std::string::npos) << s.out;
  const std::vector<Finding> m = of_code(validate_file(path), Code::mtp_layers);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].severity, Severity::warning);
  EXPECT_EQ(m[0].offset, std::optional<uint64_t>(key_value_at(path, "qwen35.nextn_predict_layers")));
  EXPECT_EQ(m[0].message, "qwen35.nextn_predict_layers = 1 says blk.1 is an MTP layer, but the file holds no blk.N.nextn.* tensor: "
                          "it claims MTP layers it does not have");
  EXPECT_EQ(m[0].fix, "ggufkit edit FILE --keep-layers 0-0 -o OUT   (the trunk alone; block_count and nextn_predict_layers follow)");
  // The fix, followed, writes a model of one block and no MTP claim, which validates clean.
  const std::string out = temp_path("qwen35-trunk.gguf");
  CliRun e = run_cli("edit " + path + " --keep-layers 0-0 -o " + out + " --force");
  ASSERT_EQ(e.code, 0) << e.err;
  Scanned t = scan_file(out);
  EXPECT_EQ(t.model.find("qwen35.block_count")->as_u64(), 1u);
  EXPECT_EQ(t.model.find("qwen35.nextn_predict_layers")->as_u64(), 0u);
  CliRun v = run_cli("validate " + out);
  EXPECT_EQ(v.code, 0) << v.out;
  EXPECT_EQ(v.out.find("mtp_layers"), std::string::npos) << v.out;
}

TEST(Mtp, TheTrunkAloneWithTheKeyKeptIsAbsentAndNoFinding) {
  // block_count 2 and nextn_predict_layers 1 kept, blk.1 left out whole: the trunk-only form
  // llama.cpp's deepseek2 and glm4moe loaders take.
  const std::string path = edited("qwen35-trunk-only.gguf", "--remove-tensor 'blk.1.*'");
  EXPECT_EQ(mtp_facts(scan_file(path).model).state, MtpFacts::State::absent);
  EXPECT_TRUE(of_code(validate_file(path), Code::mtp_layers).empty());
}

TEST(Mtp, MtpTensorsTheKeyDoesNotCountAreToldWithTheCountToSet) {
  const std::string path = edited("qwen35-uncounted.gguf", "--set qwen35.nextn_predict_layers=0");
  const std::vector<Finding> m = of_code(validate_file(path), Code::mtp_layers);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].message, "blk.1 holds MTP tensors (nextn.*), but qwen35.nextn_predict_layers is 0: llama.cpp builds it as trunk "
                          "blocks and finds tensors it does not take");
  EXPECT_EQ(m[0].fix, "ggufkit edit FILE --set qwen35.nextn_predict_layers=1 -o OUT");
  // MTP tensors in a block the key does not name.
  const std::string two = edited("qwen35-misplaced.gguf", "--rename-tensor 'blk.1.nextn.eh_proj.weight=blk.0.nextn.eh_proj.weight'");
  const std::vector<Finding> w = of_code(validate_file(two), Code::mtp_layers);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].message, "qwen35.nextn_predict_layers = 1 says blk.1 is an MTP layer, but the nextn.* tensors are in blk.0, blk.1");
}

TEST(Mtp, ADrafterOnlyFileIsRoleMtpAndIsCheckedAgainstItsModel) {
  const std::string path = edited("qwen35-drafter.gguf", "--remove-tensor 'blk.0.*'");
  Scanned d = scan_file(path);
  EXPECT_EQ(role_of(d.model), Role::mtp);
  const MtpFacts f = mtp_facts(d.model);
  EXPECT_EQ(f.state, MtpFacts::State::drafter);
  EXPECT_EQ(f.trunk_blocks, 0u);
  CliRun s = run_cli("show " + path);
  EXPECT_NE(s.out.find("role          mtp (a multi-token-prediction drafter"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("MTP           a drafter only (1 layer: blk.1; no trunk blocks)"), std::string::npos) << s.out;
  CliRun j = run_cli("show " + path + " --json");
  EXPECT_NE(j.out.find("\"role\": \"mtp\""), std::string::npos) << j.out;
  // Against its own model: nothing to say. Against another architecture's: refused by code.
  Verdict ok = validate(path, false, nullptr, with_mtp());
  EXPECT_EQ(ok.errors, 0u);
  for (const auto& [file, x] : ok.findings) EXPECT_NE(x.code, Code::mtp_base) << x.message;
  const std::string llama = temp_path("llama-for-mtp.gguf");
  ASSERT_EQ(run_cli("example --arch llama -o " + llama + " --force").code, 0);
  CliRun v = run_cli("validate " + path + " --base " + llama);
  EXPECT_EQ(v.code, 1);
  EXPECT_NE(v.out.find("error mtp_base at byte " + std::to_string(key_value_at(path, "general.architecture")) +
                       ": the drafter is qwen35, its model llama: a drafter runs on the hidden states of the model it was trained with"),
            std::string::npos) << v.out;
  // A model of the same architecture and another vocabulary: the first token that differs.
  const std::string other = edited("qwen35-other-vocab.gguf", "--set 'tokenizer.ggml.tokens=[\"<unk>\", \"<s>\", \"</s>\"]'");
  Verdict bad = validate(path, false, nullptr, other);
  std::vector<std::string> said;
  for (const auto& [file, x] : bad.findings)
    if (x.code == Code::mtp_base) said.push_back(x.message);
  EXPECT_EQ(said, (std::vector<std::string>{"the drafter's vocabulary has 259 tokens, its model's 3"}));
  // As many tokens, one of them (200, a byte token) renamed: that one is named.
  std::string texts = "[\"<unk>\", \"<s>\", \"</s>\"";
  for (int b = 0; b < 256; ++b) {
    char t[8];
    std::snprintf(t, sizeof t, "<0x%02X>", b);
    texts += std::string(", \"") + (b + 3 == 200 ? "renamed" : t) + "\"";
  }
  const std::string renamed = edited("qwen35-renamed-token.gguf", "--set 'tokenizer.ggml.tokens=" + texts + "]'");
  said.clear();
  for (const auto& [file, x] : validate(path, false, nullptr, renamed).findings)
    if (x.code == Code::mtp_base) said.push_back(x.message);
  EXPECT_EQ(said, (std::vector<std::string>{"token 200 is '<0xC5>' in the drafter, 'renamed' in its model: the two vocabularies differ"}));
}
