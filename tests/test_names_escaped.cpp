// Names from a file (keys, tensors) and from the command line (file paths) reach a terminal
// escaped, as values do: a model cannot set the window title, clear the screen or turn a
// line around. --json keeps them as they are, in valid JSON.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <sstream>

#include "ggufkit/text.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;

namespace {

// OSC "set the title", then BEL, then RIGHT-TO-LEFT OVERRIDE.
const std::string kKey = "evil\x1b]0;pwned\x07.key\xe2\x80\xae" "X";
const std::string kKeyShown = "evil\\u001b]0;pwned\\u0007.key\\u202eX";
// CSI "clear the screen", then the C1 CSI (U+009B).
const std::string kTensor = "t\x1b[2J\xc2\x9b";
const std::string kTensorShown = "t\\u001b[2J\\u009b";
// A name is one line: its line break and tab are escaped too.
const std::string kTwoLines = "two\nlines\tkey";
const std::string kTwoLinesShown = "two\\nlines\\tkey";
// A named chat template that jinja2 refuses, so that validate names its key.
const std::string kTemplateKey = "tokenizer.chat_template.evil\x1b]0;pwned\x07\xe2\x80\xae";
const std::string kTemplateKeyShown = "tokenizer.chat_template.evil\\u001b]0;pwned\\u0007\\u202e";
// A file name of the same kind.
const std::string kFileName = "f\x1b]0;t\x07\xc2\x9b\xe2\x80\xae.gguf";
const std::string kFileNameShown = "f\\u001b]0;t\\u0007\\u009b\\u202e.gguf";

// Version 3, three keys, one f32 tensor of 4 values at the default alignment of 32.
std::vector<uint8_t> model_bytes(const std::string& value, float first, const std::string& tensor = kTensor) {
  Bytes b;
  b.head(3, 1, 3);
  b.str(kKey).u32(8).str(value);
  b.str(kTwoLines).u32(4).u32(1);
  b.str(kTemplateKey).u32(8).str("{% if");
  b.str(tensor).u32(1).u64(4).u32(0).u64(0);
  b.pad_to(32);
  for (uint8_t byte : f32_bytes({first, 2, 3, 4})) b.u8(byte);
  return b.b;
}

// The file whose own name holds terminal controls, and a second one that differs from it.
const std::string& evil() {
  static std::string p = [] {
    std::string path = temp_path(kFileName);
    write_file_bytes(path, model_bytes("v", 1));
    return path;
  }();
  return p;
}
const std::string& other() {
  static std::string p = [] {
    std::string path = temp_path("names-other.gguf");
    write_file_bytes(path, model_bytes("w", 5));
    return path;
  }();
  return p;
}
// The shown form of evil()'s path: its folder is plain.
std::string evil_shown() { return evil().substr(0, evil().size() - kFileName.size()) + kFileNameShown; }

// A shell word for /bin/sh: the names hold no single quote.
std::string word(const std::string& s) { return "'" + s + "'"; }

// Nothing a terminal would act on, in either stream.
void expect_clean(const CliRun& r, const std::string& what) {
  for (const std::string* s : {&r.out, &r.err}) {
    EXPECT_EQ(s->find('\x1b'), std::string::npos) << what << ":\n" << *s;
    EXPECT_EQ(s->find('\x07'), std::string::npos) << what << ":\n" << *s;
    EXPECT_EQ(s->find("\xe2\x80\xae"), std::string::npos) << what << ":\n" << *s;
    EXPECT_EQ(s->find("\xc2\x9b"), std::string::npos) << what << ":\n" << *s;
  }
}

bool has_line(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l == line) return true;
  return false;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(Names, AKeyATensorAndAFileNameHoldingTerminalControlsPrintEscapedEverywhere) {
  CliRun meta = run_cli("meta " + word(evil()));
  EXPECT_EQ(meta.code, 0) << meta.err;
  expect_clean(meta, "meta");
  EXPECT_TRUE(has_line(meta.out, "   0  " + kKeyShown + std::string(40 - kKeyShown.size(), ' ') + " string         \"v\""))
      << meta.out;

  CliRun tensors = run_cli("tensors " + word(evil()));
  EXPECT_EQ(tensors.code, 0) << tensors.err;
  expect_clean(tensors, "tensors");
  EXPECT_TRUE(has_line(tensors.out, kTensorShown + std::string(40 - kTensorShown.size(), ' ') +
                                        " 4                      f32                   0             16"))
      << tensors.out;

  CliRun map = run_cli("map " + word(evil()));
  EXPECT_EQ(map.code, 0) << map.err;
  expect_clean(map, "map");
  EXPECT_TRUE(has_line(map.out, "          24           30  kv_key         kv[0] " + kKeyShown)) << map.out;
  EXPECT_TRUE(has_line(map.out, "         224           16  tensor_data    tensor[0] " + kTensorShown)) << map.out;

  CliRun validate = run_cli("validate " + word(evil()));
  expect_clean(validate, "validate");
  EXPECT_TRUE(has(validate.out, "template_syntax at byte 149: " + kTemplateKeyShown +
                                    ": line 1, column 6: unexpected 'end of template'"))
      << validate.out;
  EXPECT_TRUE(has_line(validate.out, evil_shown() + ": 1 errors, 2 warnings")) << validate.out;

  CliRun templates = run_cli("template --list " + word(evil()));
  expect_clean(templates, "template --list");
  EXPECT_TRUE(has(templates.out, " " + kTemplateKeyShown + " ")) << templates.out;

  CliRun show = run_cli("show " + word(evil()));
  EXPECT_EQ(show.code, 0) << show.err;
  expect_clean(show, "show");
  EXPECT_TRUE(has_line(show.out, "file          " + evil_shown())) << show.out;

  CliRun diff = run_cli("diff " + word(evil()) + " " + word(other()));
  EXPECT_EQ(diff.code, 0) << diff.err;
  expect_clean(diff, "diff");
  EXPECT_EQ(diff.out, "changed         " + kKeyShown + ": \"v\" -> \"w\"\ntensor_bytes    " + kTensorShown + "\n2 differences\n");
}

TEST(Names, AFindingThatNamesATensorPrintsItEscaped) {
  // An adapter's lone lora_a: the finding names the tensor.
  Bytes b;
  b.head(3, 1, 3);
  b.str("general.type").u32(8).str("adapter");
  b.str("adapter.type").u32(8).str("lora");
  b.str("adapter.lora.alpha").u32(6).u32(0x41000000);  // 8.0f
  b.str(kTensor + ".lora_a").u32(1).u64(4).u32(0).u64(0);
  b.pad_to(32);
  b.zeros(16);
  const std::string path = temp_path("names-adapter.gguf");
  write_file_bytes(path, b.b);
  CliRun validate = run_cli("validate " + word(path));
  EXPECT_EQ(validate.code, 1);
  expect_clean(validate, "validate of an adapter");
  EXPECT_TRUE(has(validate.out, ": " + kTensorShown + " has a lora_a but no lora_b: llama.cpp refuses the adapter (\"LoRA tensor pair for '" +
                                    kTensorShown + "' is missing one component\")"))
      << validate.out;
}

TEST(Names, AKeyThatHoldsALineBreakAndATabPrintsOnOneLine) {
  CliRun meta = run_cli("meta " + word(evil()));
  EXPECT_TRUE(has_line(meta.out, "   1  " + kTwoLinesShown + std::string(40 - kTwoLinesShown.size(), ' ') +
                                     " u32            1"))
      << meta.out;
  CliRun map = run_cli("map " + word(evil()));
  EXPECT_TRUE(has(map.out, kTwoLinesShown)) << map.out;
  EXPECT_FALSE(has(map.out, "\nlines")) << map.out;
}

TEST(Names, AnErrorNamingAFileThatIsNotThereShowsItsNameEscaped) {
  const std::string missing = temp_path("gone" + kFileName);
  const std::string shown = missing.substr(0, missing.size() - kFileName.size()) + kFileNameShown;
  CliRun show = run_cli("show " + word(missing));
  EXPECT_EQ(show.code, 2);
  expect_clean(show, "show of a missing file");
  EXPECT_EQ(show.err, "ggufkit: error: " + shown + ": cannot open for reading: No such file or directory\n");
  // A usage error names what it was given the same way.
  CliRun bad = run_cli("show " + word(evil()) + " " + word("--x" + kTensor));
  EXPECT_EQ(bad.code, 2);
  expect_clean(bad, "an unknown option");
}

TEST(Names, JsonOutputIsValidAndGivesBackTheOriginalNames) {
  YAML::Node meta = YAML::Load(run_cli("meta --json " + word(evil())).out);
  EXPECT_EQ(meta["metadata"][0]["key"].as<std::string>(), kKey);
  EXPECT_EQ(meta["metadata"][1]["key"].as<std::string>(), kTwoLines);
  YAML::Node tensors = YAML::Load(run_cli("tensors --json " + word(evil())).out);
  EXPECT_EQ(tensors["tensors"][0]["name"].as<std::string>(), kTensor);
  YAML::Node show = YAML::Load(run_cli("show --json " + word(evil())).out);
  EXPECT_EQ(show["file"].as<std::string>(), evil());
  YAML::Node validate = YAML::Load(run_cli("validate --json " + word(evil())).out);
  EXPECT_EQ(validate["file"].as<std::string>(), evil());
  bool template_named = false;
  for (const YAML::Node& f : validate["findings"]) template_named |= has(f["message"].as<std::string>(), kTemplateKey + ": line 1");
  EXPECT_TRUE(template_named);
  YAML::Node map = YAML::Load(run_cli("map --json " + word(evil())).out);
  bool key_span = false, tensor_span = false;
  for (const YAML::Node& sp : map["spans"]) {
    key_span |= has(sp["name"].as<std::string>(), kKey);
    tensor_span |= has(sp["name"].as<std::string>(), kTensor);
  }
  EXPECT_TRUE(key_span && tensor_span);
  YAML::Node diff = YAML::Load(run_cli("diff --json " + word(evil()) + " " + word(other())).out);
  bool key_changed = false;
  for (const YAML::Node& d : diff["differences"]) key_changed |= d["key"] && d["key"].as<std::string>() == kKey;
  EXPECT_TRUE(key_changed);
  YAML::Node error = YAML::Load(run_cli("show --json " + word(temp_path("gone" + kFileName))).out);
  EXPECT_EQ(error["error"]["file"].as<std::string>(), temp_path("gone" + kFileName));
}

TEST(Names, ANameShownOnALineHasItsLineBreaksAndTabsEscapedWhereTextKeepsThem) {
  EXPECT_EQ(terminal_text("a\nb\tc\x1b"), "a\nb\tc\\u001b");
  EXPECT_EQ(terminal_name("a\nb\tc\x1b"), "a\\nb\\tc\\u001b");
  EXPECT_EQ(terminal_name("x\xff" "y\r"), "x\\xffy\\u000d");
  EXPECT_EQ(terminal_name(terminal_name(kKey)), terminal_name(kKey));  // escaping twice changes nothing
}

// Found by the review: an edit's report of what it changes printed the names raw.
TEST(Names, AnEditsReportOfItsChangesShowsTheNamesEscaped) {
  const std::string patch = temp_path("names-patch.yaml");
  const std::string text = "tensors:\n  rename: {\"t\\e[2J\\u009b\": x.weight}\nremove: [\"evil\\e]0;pwned\\a.key\\u202eX\"]\n";
  write_file_bytes(patch, std::vector<uint8_t>(text.begin(), text.end()));
  CliRun r = run_cli("edit " + word(evil()) + " --patch " + patch + " --dry-run");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\n  rename  tensor " + kTensorShown + " -> x.weight\n  remove  " + kKeyShown + " (was \"v\")\n"),
            std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.out.find("\xe2\x80\xae"), std::string::npos);
  EXPECT_EQ(r.out.find("\xc2\x9b"), std::string::npos);
}
