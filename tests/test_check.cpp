// The rule book (check/): its one table of rules, how an edit's findings are told apart
// from its source's, and the registry's check: values, each held to its rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "ggufkit/check.h"
#include "ggufkit/error.h"
#include "ggufkit/inspect.h"
#include "ggufkit/patch.h"
#include "ggufkit/registry.h"
#include "ggufkit/scan.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;

TEST(RuleTable, OneRowPerCodeWithUniqueNamesThatRoundTrip) {
  const size_t codes = static_cast<size_t>(Code::shard_byte_order) + 1;
  ASSERT_EQ(rules().size(), codes);
  EXPECT_EQ(codes, 81u);  // 2 the tensor types', 2 MTP's, 16 of them the roles' (adapter, imatrix, mmproj), 8 the key rules', 3 the advice's, 4 the tensor table's, 1 load_hparams' conditions, 1 tensor surgery's
  std::set<std::string_view> names;
  for (size_t i = 0; i < codes; ++i) {
    const Rule& r = rules()[i];
    EXPECT_EQ(static_cast<size_t>(r.code), i);
    EXPECT_TRUE(names.insert(r.name).second) << r.name;
    EXPECT_FALSE(r.what.empty()) << r.name;
    EXPECT_EQ(code_named(code_name(r.code)), r.code);
    EXPECT_EQ(&rule_of(r.code), &r);
  }
  EXPECT_EQ(code_name(Code::token_id), "token_id");
  EXPECT_EQ(code_name(Code::turn_end_not_eog), "turn_end_not_eog");
  EXPECT_EQ(rule_of(Code::double_bos_unstripped).severity, Severity::info);
  EXPECT_EQ(rule_of(Code::unknown_pre_tokenizer).severity, Severity::error);
  EXPECT_EQ(code_named("split_keys_in_single_file"), Code::split_keys_in_single_file);
  EXPECT_EQ(code_named("token-id"), std::nullopt);
  EXPECT_EQ(rule_of(Code::alignment).severity, Severity::info);
  EXPECT_EQ(rule_of(Code::bool_value).severity, Severity::warning);
  EXPECT_EQ(rule_of(Code::too_many_shards).severity, Severity::info);
  EXPECT_EQ(rule_of(Code::missing_shard).severity, Severity::error);
  EXPECT_EQ(rule_of(Code::adapter_alpha).severity, Severity::warning);  // llama.cpp loads it, scaled otherwise
  EXPECT_EQ(rule_of(Code::lora_shape).severity, Severity::error);
  EXPECT_EQ(severity_name(Severity::info), "info");
  // A finding takes its rule's severity.
  EXPECT_EQ(finding(Code::template_literal_split, std::nullopt, "m").severity, Severity::warning);
}

TEST(RuleTable, ASetFaultBecomesTheFindingOfItsRule) {
  Finding f = set_finding({"m-00002-of-00002.gguf", "split.no", SetFaultCode::split_no, "split.no is 0, expected 1 from its name"});
  EXPECT_EQ(f.code, Code::split_no);
  EXPECT_EQ(f.severity, Severity::error);
  EXPECT_EQ(f.message, "split.no: split.no is 0, expected 1 from its name");
  EXPECT_EQ(f.offset, std::nullopt);
  // Each fault is the rule of its name.
  const std::vector<std::pair<SetFaultCode, std::string>> each = {
      {SetFaultCode::not_a_shard_name, "not_a_shard_name"},       {SetFaultCode::split_keys_in_single_file, "split_keys_in_single_file"},
      {SetFaultCode::too_many_shards, "too_many_shards"},         {SetFaultCode::missing_shard, "missing_shard"},
      {SetFaultCode::split_no, "split_no"},                       {SetFaultCode::split_count, "split_count"},
      {SetFaultCode::split_tensors_count, "split_tensors_count"}, {SetFaultCode::model_key_in_shard, "model_key_in_shard"},
      {SetFaultCode::tensor_in_two_shards, "tensor_in_two_shards"}, {SetFaultCode::shard_byte_order, "shard_byte_order"}};
  for (const auto& [c, name] : each) EXPECT_EQ(code_name(set_finding({"f", "", c, "x"}).code), name);
}

TEST(NewFindings, ComparesByCodeAndPlaceNotByMessage) {
  const std::string eos = "tokenizer.ggml.eos_token_id", bos = "tokenizer.ggml.bos_token_id";
  const std::vector<Finding> was = {finding(Code::token_id, 10, eos + " = 99999 is not below the vocabulary size 32000", Place::key(eos))};
  // Same code, same key, another message (and offset): the source's, not new.
  EXPECT_TRUE(new_findings(was, {finding(Code::token_id, 20, eos + " = 88888 ...", Place::key(eos))}).empty());
  // Same code, another key: new.
  auto other = new_findings(was, {finding(Code::token_id, 10, bos + " = 99999 ...", Place::key(bos))});
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].place, Place::key(bos));
  // Another code, the same key: new.
  auto code = new_findings(was, {finding(Code::bool_value, 10, "x", Place::key(eos))});
  ASSERT_EQ(code.size(), 1u);
  EXPECT_EQ(code[0].code, Code::bool_value);
  // One key, another item (a template's literal): new.
  const std::string t = "tokenizer.chat_template";
  EXPECT_EQ(new_findings({finding(Code::template_literal_split, std::nullopt, "a", Place::key(t, "<|a|>"))},
                         {finding(Code::template_literal_split, std::nullopt, "b", Place::key(t, "<|b|>"))}).size(), 1u);
  // A key the edit touched is held to its check's rules, whatever the source had.
  EXPECT_EQ(new_findings(was, {finding(Code::token_id, 20, "m", Place::key(eos))}, {{eos, KeyCheck::token_id}}).size(), 1u);
  EXPECT_TRUE(new_findings(was, {finding(Code::token_id, 20, "m", Place::key(eos))}, {{eos, KeyCheck::template_}}).empty());
  EXPECT_TRUE(new_findings(was, {finding(Code::token_id, 20, "m", Place::key(eos))}, {{bos, KeyCheck::token_id}}).empty());
}

TEST(KeyChecks, ParsedFromTheRegistryAndUnknownOnesRefused) {
  for (KeyCheck k : {KeyCheck::token_id, KeyCheck::vocab, KeyCheck::alignment, KeyCheck::template_})
    EXPECT_EQ(key_check_named(key_check_name(k)), k);
  EXPECT_EQ(key_check_name(KeyCheck::template_), "template");
  EXPECT_EQ(key_check_named("vocabulary"), std::nullopt);
  const Registry& r = Registry::builtin();
  EXPECT_EQ(r.find("tokenizer.ggml.eos_token_id", "llama")->check, KeyCheck::token_id);
  EXPECT_EQ(r.find("tokenizer.ggml.scores", "llama")->check, KeyCheck::vocab);
  EXPECT_EQ(r.find("general.alignment", "llama")->check, KeyCheck::alignment);
  EXPECT_EQ(r.find("tokenizer.chat_template.tool_use", "llama")->check, KeyCheck::template_);
  EXPECT_EQ(r.find("general.name", "llama")->check, KeyCheck::none);
  try {
    Registry::parse("keys:\n  my.key: {type: u32, check: vocabulary}\n", "test.yaml");
    FAIL() << "an unknown check was taken";
  } catch (const Error& e) {
    EXPECT_NE(e.message.find("unknown check 'vocabulary'"), std::string::npos) << e.message;
  }
  EXPECT_EQ(Registry::parse("keys:\n  my.key: {type: u32, check: token_id}\n", "t.yaml").find("my.key", "")->check, KeyCheck::token_id);
}

namespace {
// What the edit gate asks: the rules' errors and the templates' warnings of a model, and
// the registry's check of every key a patch changed.
std::vector<Finding> gate(const Model& m) {
  std::vector<Finding> out = check_model(m, Layout{}, true);
  for (Finding& f : template_findings(m)) out.push_back(std::move(f));
  return out;
}
struct Edited {
  std::vector<Finding> was, now;
  std::vector<std::pair<std::string, KeyCheck>> touched;
};
Edited edit_with(Model& m, const std::string& patch_text) {
  Edited e;
  e.was = gate(m);
  Patch p = parse_patch(patch_text, "patch.yaml", ".");
  p.allow_broken = true;
  for (const Change& c : apply_patch(m, p)) {
    const std::string key = c.to.empty() ? c.key : c.to;
    if (const KeySpec* s = Registry::builtin().find(key, architecture(m))) e.touched.push_back({key, s->check});
  }
  e.now = gate(m);
  return e;
}
}  // namespace

TEST(KeyChecks, EachCheckValueIsEnforcedByItsRuleOnTheKey) {
  struct Case { const char* patch; KeyCheck check; Code code; const char* key; const char* message; };
  const std::vector<Case> cases = {
      {"set: {tokenizer.ggml.eos_token_id: 99999}\n", KeyCheck::token_id, Code::token_id, "tokenizer.ggml.eos_token_id",
       "tokenizer.ggml.eos_token_id = 99999 is not below the vocabulary size 32000"},
      {"set: {tokenizer.ggml.scores: [0.0, 0.0, 0.0]}\n", KeyCheck::vocab, Code::vocab_length, "tokenizer.ggml.scores",
       "tokenizer.ggml.scores has 3 items, tokenizer.ggml.tokens has 32000"},
      {"alignment: 16\n", KeyCheck::alignment, Code::alignment_too_small, "general.alignment",
       "general.alignment = 16: llama.cpp needs at least 32 (its TENSOR_ALIGNMENT) and aborts on load"},
      {"set: {tokenizer.chat_template: \"{{ bos_token }}\\0tail\"}\n", KeyCheck::template_, Code::template_nul,
       "tokenizer.chat_template", "tokenizer.chat_template: the template has a NUL byte at byte 15; llama.cpp cuts it there"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.patch);
    Model m = scan_file(tiny_llama()).model;
    Edited e = edit_with(m, c.patch);
    ASSERT_EQ(e.touched.size(), 1u);
    EXPECT_EQ(e.touched[0], std::make_pair(std::string(c.key), c.check));
    EXPECT_TRUE(enforces(c.check, c.code));
    std::vector<Finding> errors;
    for (const Finding& f : new_findings(e.was, e.now, e.touched))
      if (f.severity == Severity::error) errors.push_back(f);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].code, c.code);
    EXPECT_EQ(errors[0].place, Place::key(c.key));
    EXPECT_EQ(errors[0].message, c.message);
    // Set again to another bad value, on a source that already had the fault: still held.
    Edited again = edit_with(m, c.patch);
    std::vector<Finding> held;
    for (const Finding& f : new_findings(again.was, again.now, again.touched))
      if (f.severity == Severity::error) held.push_back(f);
    ASSERT_EQ(held.size(), 1u);
    EXPECT_EQ(held[0].code, c.code);
    EXPECT_EQ(held[0].place, Place::key(c.key));
  }
}

TEST(KeyChecks, AnEditThatSetsABrokenTokenIdAgainIsRefused) {
  // The source's eos is already outside the vocabulary (forced); an edit that sets it to
  // another id outside is refused by the token_id rule, an edit elsewhere is not.
  const std::string broken = temp_path("check-broken-eos.gguf"), out = temp_path("check-out.gguf");
  ASSERT_EQ(run_cli("edit " + tiny_llama() + " --set tokenizer.ggml.eos_token_id=99999 --allow-broken -o " + broken).code, 0);
  CliRun again = run_cli("edit " + broken + " --set tokenizer.ggml.eos_token_id=88888 -o " + out);
  EXPECT_EQ(again.code, 1);
  EXPECT_NE(again.err.find("refusing to write a model that llama.cpp would refuse or misuse:\n  [token_id] "
                           "tokenizer.ggml.eos_token_id = 88888 is not below the vocabulary size 32000\n"),
            std::string::npos) << again.err;
  CliRun other = run_cli("edit " + broken + " --set general.name=other -o " + out);
  EXPECT_EQ(other.code, 0) << other.err;
}

// Issue 28: the rule book asks the tokenizer, which loads the vocabulary as llama.cpp does;
// a pre-tokenizer name llama.cpp does not know makes it refuse the model, and an edit that
// would write one is refused before anything is written.
// llama.cpp makes every token's piece at load; a byte token's from its "<0xHH>" text: one
// too short for that throws (SentencePiece, BPE), and a WordPiece vocabulary has no byte
// tokens at all (it aborts). So a retype to byte is refused where llama.cpp would fail to
// load, and let through where its text reads as a byte.
TEST(VocabRefused, AByteTokenLlamaCppCannotReadIsRefusedAtLoad) {
  const std::string phi3 = corpus("vocab/ggml-vocab-phi-3.gguf"), bert = corpus("vocab/ggml-vocab-bert-bge.gguf");
  const std::string out = temp_path("byte-retype.gguf");
  CliRun a = run_cli("edit " + phi3 + " --token-type a=byte -o " + out);
  EXPECT_EQ(a.code, 1) << a.err;
  EXPECT_NE(a.err.find("[vocab_refused] llama.cpp refuses the vocabulary: byte token 29874 'a' is too short: llama.cpp's substr throws"),
            std::string::npos) << a.err;
  CliRun w = run_cli("edit " + bert + " --token-type the=byte -o " + out);
  EXPECT_EQ(w.code, 1) << w.err;
  EXPECT_NE(w.err.find("a byte token (10760) in a vocabulary of type wpm: llama.cpp aborts"), std::string::npos) << w.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  // <0x41> (68) is a byte token of phi-3's: normal and back to byte are both loadable
  const std::string normal = temp_path("byte-normal.gguf");
  ASSERT_EQ(run_cli("edit " + phi3 + " --token-type '<0x41>=normal' -o " + normal).code, 0);
  CliRun back = run_cli("edit " + normal + " --token-type '<0x41>=byte' -o " + out);
  EXPECT_EQ(back.code, 0) << back.err;
  EXPECT_TRUE(read_file_bytes(out) == read_file_bytes(phi3));
}

// Issue 29: an unknown tokenizer.ggml.pre is its own finding, unknown_pre_tokenizer, an
// error (llama.cpp refuses the model), at the key's value, with the names that would do.
TEST(VocabRefused, AnUnknownPreTokenizerIsTheErrorLlamaCppRefusesTheModelWith) {
  const std::string gpt2 = corpus("vocab/ggml-vocab-gpt-2.gguf");
  Scanned s = scan_file(gpt2);
  std::vector<Finding> clean = check_model(s.model, s.layout, false);
  auto is_pre = [](const Finding& f) { return f.code == Code::unknown_pre_tokenizer || f.code == Code::vocab_refused; };
  EXPECT_TRUE(std::none_of(clean.begin(), clean.end(), is_pre));
  size_t at = 0;
  while (s.model.metadata.key(at) != "tokenizer.ggml.pre") ++at;
  const uint64_t value_at = *s.model.metadata.value_offset(at);
  s.model.metadata.edit(at).value = Value::of_string("no-such-pre");
  std::vector<Finding> found = check_model(s.model, s.layout, false);
  ASSERT_EQ(std::count_if(found.begin(), found.end(), is_pre), 1);
  auto it = std::find_if(found.begin(), found.end(), is_pre);
  EXPECT_EQ(it->code, Code::unknown_pre_tokenizer);
  EXPECT_EQ(it->severity, Severity::error);
  EXPECT_EQ(it->place.name, "tokenizer.ggml.pre");
  EXPECT_EQ(it->offset, value_at);
  EXPECT_TRUE(it->message.starts_with("tokenizer.ggml.pre is \"no-such-pre\", a pre-tokenizer llama.cpp does not know: it "
                                      "refuses to load the model. Set it to the one the model was converted with")) << it->message;
  EXPECT_NE(it->message.find("; llama.cpp knows default, minicpm5, llama3, "), std::string::npos) << it->message;  // the names, in its order
  EXPECT_NE(it->message.find(", qwen2, "), std::string::npos) << it->message;
  EXPECT_EQ(it->fix, "ggufkit edit FILE --set tokenizer.ggml.pre=NAME --in-place");

  const std::string out = temp_path("vocab-refused.gguf");
  CliRun r = run_cli("edit " + gpt2 + " --set tokenizer.ggml.pre=no-such-pre -o " + out);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("unknown_pre_tokenizer"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}
