// Issue 41, advice that damages: edits that make generation stop at a byte, retype a byte
// (unused, normal) token to control or make a turn's opening an end of generation are
// refused; every fix the tool offers, applied, removes its finding and brings in none as
// bad; a template on the vocabulary it was written for is no finding.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "ggufkit/check.h"
#include "helpers.h"

using namespace testing_helpers;
using ggufkit::Finding;
namespace fs = std::filesystem;

namespace {

// A folder of its own for one test's outputs, empty.
std::string fresh_dir(const std::string& name) {
  const std::string d = temp_path("advice-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string edited(const std::string& source, const std::string& name, const std::string& args) {
  const std::string out = temp_path("advice-" + name + ".gguf");
  CliRun r = run_cli("edit " + source + " " + args + " -o " + out + " --force");
  EXPECT_EQ(r.code, 0) << r.err;
  return out;
}

std::string with_template(const std::string& source, const std::string& name, const std::string& text) {
  const std::string t = temp_path("advice-" + name + ".jinja");
  std::ofstream(t, std::ios::binary) << text;
  return edited(source, name, "--chat-template-file " + t);
}

// Llama 2's chat template as meta-llama published it: [INST] and [/INST] are text.
const char* kLlama2 =
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}"
    "{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = "
    "'<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}"
    "{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif "
    "message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";

// The tiny llama with Llama 2's template: a correct Llama 2 file (the issue's tiny llama).
const std::string& llama2() {
  static const std::string path = with_template(tiny_llama(), "llama2", kLlama2);
  return path;
}

std::vector<std::string> codes_of(const std::string& file) {
  std::vector<std::string> out;
  for (const auto& [where, f] : ggufkit::validate(file).findings) out.emplace_back(ggufkit::code_name(f.code));
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

// The issue's first case: eos set to <0x0A> (id 13, the newline byte token) would stop
// generation at every newline. Refused, naming the token and why; nothing is left behind.
// With --allow-broken it is written, and validate names the root cause with no fix at all.
TEST(SafeAdvice, AnEosThatIsAByteTokenIsRefusedNamingTheByte) {
  const std::string dir = fresh_dir("t13");
  CliRun r = run_cli("edit " + llama2() + " --eos-token-id 13 -o " + dir + "/t13.gguf");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("[eog_byte_token] tokenizer.ggml.eos_token_id = 13 is \"<0x0A>\", a byte token (the byte 0x0A, a newline): "
                       "llama.cpp stops generating at eos, so generation would stop wherever the model writes it, at every newline"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--allow-broken"), std::string::npos) << r.err;
  EXPECT_EQ(files_in(dir), std::vector<std::string>{});  // no output, no temporary
  CliRun anyway = run_cli("edit " + llama2() + " --eos-token-id 13 -o " + dir + "/t13.gguf --allow-broken");
  ASSERT_EQ(anyway.code, 0) << anyway.err;
  CliRun v = run_cli("validate " + dir + "/t13.gguf");
  EXPECT_EQ(v.code, 1);
  EXPECT_NE(v.out.find("error eog_byte_token at byte "), std::string::npos) << v.out;
  // Its template prints eos_token, now "<0x0A>" as text: the findings that follow from it
  // offer no retype of the byte, and the turn's end, <s> (BOS), is not offered as eot.
  EXPECT_NE(v.out.find("warning special_not_control"), std::string::npos) << v.out;
  EXPECT_EQ(v.out.find("=control"), std::string::npos) << v.out;
  EXPECT_EQ(v.out.find("eot=<s>"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("an assistant turn ends in \"<s>\" (id 1)"), std::string::npos) << v.out;
  EXPECT_EQ(v.out.find("fix: ggufkit"), std::string::npos) << v.out;
  const size_t at = v.out.find("eog_byte_token");
  EXPECT_EQ(v.out.substr(at, v.out.find('\n', at) + 3 - at).find("fix:"), std::string::npos) << v.out;  // no command follows it
}

// --token-type of a byte or normal token to control; eot naming BOS (which the tiny llama
// adds to every prompt) or a token the template opens a turn with (phi-3's <|user|>):
// refused with the reason, no file left.
TEST(SafeAdvice, RetypesToControlAndTurnOpenersAsEndsAreRefused) {
  const std::string dir = fresh_dir("refused");
  struct Case {
    std::string source, args, says;
  };
  const std::string phi3 = corpus("vocab/ggml-vocab-phi-3.gguf");
  const Case cases[] = {
      {tiny_llama(), "--token-type '<0x0A>=control'",
       "[retype_to_control] token 13 \"<0x0A>\" is a byte token; as control it is no longer the byte"},
      {tiny_llama(), "--token-type '\xE2\x96\x81the=control'", "[retype_to_control] token 278 \"\xE2\x96\x81the\" is a normal token (text)"},
      {tiny_llama(), "--special-token 'eot=<s>'",
       "[eog_at_start] tokenizer.ggml.eot_token_id: BOS \"<s>\" (id 1) is a token llama.cpp stops generating at, and it adds BOS "
       "at the start of every prompt"},
      {phi3, "--special-token 'eot=<|user|>'",
       "[eog_at_start] \"<|user|>\" (id 32010) is the first token of the prompt of \"system and user\", and llama.cpp stops generating at it"},
  };
  for (const Case& c : cases) {
    CliRun r = run_cli("edit " + c.source + " " + c.args + " -o " + dir + "/out.gguf");
    EXPECT_EQ(r.code, 1) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(files_in(dir), std::vector<std::string>{}) << c.args;
  }
  // user_defined keeps a normal token printed as its text: not refused.
  CliRun ud = run_cli("edit " + tiny_llama() + " --token-type '\xE2\x96\x81the=user_defined' -o " + dir + "/ud.gguf");
  EXPECT_EQ(ud.code, 0) << ud.err;
}

// Llama 2's template on Llama 2's vocabulary: [INST] was never a token there, so it is no
// finding and --strict passes. The tiny llama's own zephyr template (<|user|>, <|assistant|>)
// on that vocabulary is still found.
TEST(SafeAdvice, ATemplateOnTheVocabularyItWasWrittenForIsNoFinding) {
  CliRun strict = run_cli("validate --strict " + llama2());
  EXPECT_EQ(strict.code, 0) << strict.out;
  EXPECT_EQ(strict.out.find("template_literal_split"), std::string::npos) << strict.out;
  CliRun zephyr = run_cli("validate " + tiny_llama());
  EXPECT_NE(zephyr.out.find("warning template_literal_split at byte "), std::string::npos) << zephyr.out;
  EXPECT_NE(zephyr.out.find("\"<|user|>\" tokenizes into"), std::string::npos) << zephyr.out;
  EXPECT_EQ(run_cli("validate --strict " + tiny_llama()).code, 1);
  // A vocabulary with control tokens of the [NAME] form (bert's [CLS], [SEP]) takes [INST] as
  // one that should be a token.
  const std::string bert = with_template(corpus("vocab/ggml-vocab-bert-bge.gguf"), "bert-inst",
                                         "{% for m in messages %}[INST] {{ m.content }} [/INST]{% endfor %}");
  EXPECT_TRUE(has(codes_of(bert), "template_literal_split"));
}

// Every fix validate offers, for every corpus file and every test model with findings,
// applied to a copy: it succeeds, its finding is gone, and no finding of equal or higher
// severity that was not there before appears (the refused kinds are errors: they would).
TEST(SafeAdvice, EveryFixOfferedRemovesItsFindingAndBringsInNoneAsBad) {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(std::string(GGUFKIT_CORPUS)))
    if (e.path().extension() == ".gguf") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  const std::string phi3 = corpus("vocab/ggml-vocab-phi-3.gguf");
  std::string own = run_cli("template " + phi3).out;
  for (size_t at; (at = own.find("<|end|>")) != std::string::npos;) own.replace(at, 7, "<|placeholder1|>");
  const std::string dir = fresh_dir("models");
  files.push_back(tiny_llama());
  files.push_back(llama2());
  files.push_back(with_template(phi3, "m-chatml", "{% for m in messages %}<|im_start|>{{ m.content }}<|end|>{% endfor %}"));
  files.push_back(with_template(phi3, "m-placeholder", own));
  files.push_back(edited(phi3, "m-end-normal", "--token-type '<|end|>=normal'"));
  files.push_back(edited(phi3, "m-user-normal", "--token-type '<|user|>=normal'"));
  files.push_back(edited(phi3, "m-untyped", "--remove tokenizer.ggml.token_type"));
  files.push_back(edited(tiny_llama(), "m-t13", "--eos-token-id 13 --allow-broken"));
  files.push_back(edited(llama2(), "m-llama2-t13", "--eos-token-id 13 --allow-broken"));
  files.push_back(with_template(tiny_llama(), "m-bos-twice", "{{ bos_token }}{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"));
  files.push_back(edited(tiny_llama(), "m-name-hash", "--set general.name=0123456789abcdef0123456789abcdef01234567"));
  size_t applied = 0, files_with_fixes = 0;
  const std::regex shard(R"((.*)-\d{5}-of-\d{5}\.gguf$)");
  for (const std::string& file : files) {
    std::vector<std::pair<std::string, Finding>> before;
    try {
      before = ggufkit::validate(file).findings;
    } catch (const std::exception&) {
      continue;  // a file validate cannot read says so; it offers no fix
    }
    bool any = false;
    for (size_t k = 0; k < before.size(); ++k) {
      const auto& [where, f] = before[k];
      static const std::string placeholder = "ggufkit edit FILE ";
      if (!f.fix.starts_with("ggufkit ")) continue;  // advice in words, not a command
      ASSERT_TRUE(f.fix.starts_with(placeholder)) << f.fix;
      EXPECT_EQ(f.fix.find("=control"), std::string::npos) << file << ": " << f.fix;
      any = true;
      // A copy of the file (of every shard of its set) under its own name in a folder of its own.
      const std::string copies = fresh_dir("fix-" + std::to_string(applied));
      const fs::path from = fs::path(where);
      std::smatch m;
      const std::string name = from.filename().string();
      if (std::regex_match(name, m, shard)) {
        for (const auto& e : fs::directory_iterator(from.parent_path()))
          if (e.path().filename().string().starts_with(m[1].str() + "-")) fs::copy_file(e.path(), copies + "/" + e.path().filename().string());
      } else {
        fs::copy_file(from, copies + "/" + name);
      }
      const std::string copy = copies + "/" + name;
      const std::string top = copies + "/" + fs::path(file).filename().string();
      CliRun r = run_cli("edit " + copy + " " + f.fix.substr(placeholder.size()));
      ++applied;
      ASSERT_EQ(r.code, 0) << file << ": " << f.fix << "\n" << r.err;
      const auto after = ggufkit::validate(top).findings;
      auto same = [](const std::pair<std::string, Finding>& a, const std::pair<std::string, Finding>& b) {
        return fs::path(a.first).filename() == fs::path(b.first).filename() && a.second.code == b.second.code &&
               a.second.place == b.second.place;
      };
      for (const auto& g : after) {
        EXPECT_FALSE(same(g, before[k])) << file << ": " << f.fix << " leaves " << g.second.message;
        if (g.second.severity > f.severity) continue;  // less severe than what it fixed
        const bool was = std::any_of(before.begin(), before.end(), [&](const auto& b) { return same(b, g); });
        EXPECT_TRUE(was) << file << ": " << f.fix << " brings in " << ggufkit::code_name(g.second.code) << ": " << g.second.message;
      }
    }
    files_with_fixes += any;
  }
  // What this walk covered: the corpus offers no command (its findings are the zephyr
  // template's, told in words); the test models offer 5 (eot for phi-3's placeholder turn
  // end, user_defined for <|end|> and twice for <|user|> typed normal, general.name).
  EXPECT_EQ(applied, 5u);
  EXPECT_EQ(files_with_fixes, 4u);
  std::cout << "applied " << applied << " fixes of " << files_with_fixes << " files\n";
}
