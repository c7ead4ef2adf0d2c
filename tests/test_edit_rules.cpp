// An edit never writes what llama.cpp would refuse (validate's rules, checked on the model
// about to be written) unless --allow-broken: each case is refused with exit 1, the rule
// and the key named, nothing written; with --allow-broken the same edit writes the file,
// and validate reports the same rule in it.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>

#include "ggufkit/scan.h"
#include "edit_rule_cases.h"
#include "helpers.h"

using namespace testing_helpers;
namespace fs = std::filesystem;

TEST(EditRules, WhatLlamaCppWouldRefuseIsRefusedBeforeWritingUnlessAllowBroken) {
  for (const EditRuleCase& c : edit_rule_cases()) {
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
      EXPECT_NE(r.err.find("refusing to write a model that llama.cpp would refuse or misuse:\n  [" + std::string(c.code) + "] "),
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
    if (std::string(c.code) == "alignment_too_small") {  // the data truly starts off 32
      EXPECT_NE(ggufkit::scan_file(out).layout.data_offset % 32, 0u);
    }
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
  YAML::Node j = YAML::Load(v.out);  // JSON is YAML
  bool found = false;
  for (const auto& f : j["findings"])
    if (f["code"].as<std::string>() == "zero_hparam") {
      found = true;
      EXPECT_EQ(f["offset"].as<uint64_t>(), sp->span.offset) << v.out;
    }
  EXPECT_TRUE(found) << v.out;
}

namespace {

// A patch or command line that is refused while it is read or applied (exit 1, the line
// and column or the command line in the message), and what --allow-broken does with it.
struct InputCase {
  const char* name;
  std::string args;   // after FILE
  std::string patch;  // the patch file, when there is one
  std::string says;   // the refusal
  const char* allowed;  // with --allow-broken: "written" (and the note says), or "refused" still
};

std::vector<InputCase> input_cases() {
  std::string long_key(65536, 'k');
  return {
      {"empty_key", "-p PATCH", "set:\n  \"\": {type: u32, value: 1}\n", "patch.yaml:2:7: set : an empty key", "refused"},
      {"nul_key", "-p PATCH", "set:\n  \"my.k\\0ey\": {type: u32, value: 1}\n",
       "patch.yaml:2:15: set my.k\\x00ey: the key has a NUL byte at byte 4", "written"},
      {"long_key", "-p PATCH", "set:\n  ? " + long_key + "\n  : {type: u32, value: 1}\n",
       "the key is 65536 bytes, over the format's 65,535", "written"},
      {"template_nul", "-p PATCH", "set:\n  tokenizer.chat_template: \"{{ a }}\\0{{ b }}\"\n",
       "patch.yaml:2:28: set tokenizer.chat_template: the chat template has a NUL byte at byte 7", "written"},
      {"not_utf8", "-p PATCH", "set:\n  general.name: caf\xE9\n", "patch.yaml:2:17: set general.name: the string is not valid UTF-8",
       "written"},
      {"bool_2", "--set-typed my.flag=bool:2", "", "set my.flag: expected true or false, found '2'", "written"},
      {"bool_word", "--set-typed my.flag=bool:maybe", "", "expected true or false, found 'maybe'", "refused"},
      {"bool_existing_2", "--set tokenizer.ggml.add_bos_token=2", "",
       "set tokenizer.ggml.add_bos_token: expected true or false, found '2'", "written"},
      {"binary_tag", "-p PATCH", "set:\n  general.name: !!binary aGVsbG8=\n", "patch.yaml:2:17: yaml: YAML tags (!!binary) are not allowed",
       "refused"},
      {"alignment_twice", "-p PATCH --alignment 128", "alignment: 64\n",
       "the alignment is given twice: 64 at PATCH:1:12 and 128 on the command line", "refused"},
      {"set_twice", "-p PATCH --set general.name=b", "set:\n  general.name: a\n",
       "general.name is set twice: at PATCH:2:3 and on the command line", "refused"},
      {"template_twice", "-p PATCH --chat-template-file PATCH", "set:\n  tokenizer.chat_template: x\n",
       "tokenizer.chat_template is set twice", "refused"},
      {"value_and_file", "-p PATCH", "set:\n  my.text: {type: string, value: a, file: PATCH}\n",
       "give the value as one of value: or file:, not both", "refused"},
  };
}

std::string fill_all(std::string s, const std::string& file, const std::string& patch) {
  s = fill(s, file, patch);
  for (size_t p; (p = s.find("PATCH")) != std::string::npos;) s.replace(p, 5, patch);
  return s;
}

}  // namespace

TEST(EditRules, BrokenInputIsRefusedWhereItIsWrittenAndAllowBrokenWritesWhatCanBeWritten) {
  for (const InputCase& c : input_cases()) {
    SCOPED_TRACE(c.name);
    std::string dir = temp_path(std::string("input-") + c.name);
    fs::create_directories(dir);
    std::string model = dir + "/model.gguf", patch = dir + "/patch.yaml", out = dir + "/out.gguf";
    fs::copy_file(tiny_llama(), model);
    if (!c.patch.empty()) std::ofstream(patch, std::ios::binary) << c.patch;
    auto listing = files_in(dir);
    for (const char* how : {" -o ", " --dry-run -o "}) {
      CliRun r = run_cli("edit " + fill_all("FILE " + c.args, model, patch) + how + out);
      EXPECT_EQ(r.code, 1) << r.err;
      EXPECT_NE(r.err.find(fill_all(c.says, model, patch)), std::string::npos) << r.err.substr(0, 500);
      EXPECT_EQ(files_in(dir), listing);
    }
    CliRun f = run_cli("edit " + fill_all("FILE " + c.args, model, patch) + " --allow-broken -o " + out);
    if (std::string(c.allowed) == "written") {
      EXPECT_EQ(f.code, 0) << f.err.substr(0, 500);
      EXPECT_NE(f.err.find("written anyway (--allow-broken)"), std::string::npos) << f.err.substr(0, 500);
      EXPECT_TRUE(fs::exists(out));
    } else {
      EXPECT_EQ(f.code, 1) << f.err.substr(0, 500);
      EXPECT_FALSE(fs::exists(out));
    }
  }
}

TEST(EditRules, SetYamlReadsItsValueAsAPatchDoesAndSetTypedAddsAKeyOfAType) {
  std::string dir = temp_path("set-yaml");
  fs::create_directories(dir);
  std::string out = dir + "/out.gguf";
  CliRun r = run_cli("edit " + tiny_llama() + " --set-yaml 'general.name=\"My Model\"' --set-typed my.ratio=f32:0.5 "
                     "--set-typed my.list=array[u32]:[1,2,3] --set-typed my.flag=bool:yes -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  ggufkit::Scanned s = ggufkit::scan_file(out);
  EXPECT_EQ(s.model.find("general.name")->str, "My Model");  // no quotes
  EXPECT_EQ(s.model.find("my.ratio")->as_f64(), 0.5);
  EXPECT_EQ(s.model.find("my.list")->size(), 3u);
  EXPECT_EQ(s.model.find("my.list")->at(2).as_u64(), 3u);
  EXPECT_EQ(s.model.find("my.flag")->bits, 1u);
  // A key that is not lower-case words with dots is written, with a warning.
  CliRun w = run_cli("edit " + tiny_llama() + " --set-typed My.Key=u32:1 --force -o " + out);
  ASSERT_EQ(w.code, 0) << w.err;
  EXPECT_NE(w.err.find("the key 'My.Key' is not ASCII lower-case words with dots"), std::string::npos) << w.err;
}

TEST(EditRules, ValidateReportsBoolBytesTemplateNulsAndTensorNamesGgmlCuts) {
  // Sketches make what an edit refuses: a bool byte of 2, a template with a NUL, tensor
  // names with a NUL that collide once cut.
  std::string dir = temp_path("validate-names");
  fs::create_directories(dir);
  std::string sketch = dir + "/s.yaml", file = dir + "/s.gguf";
  std::ofstream(sketch) << "metadata:\n"
                           "  - {key: general.architecture, type: string, value: x}\n"
                           "  - {key: my.flag, type: bool, value: 2}\n"
                           "  - {key: tokenizer.chat_template, type: string, value: \"a\\0b\"}\n"
                           "tensors:\n"
                           "  - {name: \"w\\0one\", type: f32, dims: [1], values: [1]}\n"
                           "  - {name: \"w\\0two\", type: f32, dims: [1], values: [2]}\n";
  ASSERT_EQ(run_cli("write " + sketch + " -o " + file).code, 0);
  CliRun v = run_cli("validate " + file);
  EXPECT_EQ(v.code, 1);
  EXPECT_NE(v.out.find("warning bool_value"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("error template_nul"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("error tensor_name"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("error duplicate_tensor_name: tensor[1] and tensor[0] are both 'w' to ggml"), std::string::npos) << v.out;
}
