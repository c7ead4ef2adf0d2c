// The prompts a product renders are what a model reads: every corpus template with every test
// conversation, rendered by ggufkit as `ggufkit template --render` does (render_prompt, with the
// vocabulary's own bos and eos texts), must be jinja2's text (tests/template/render_oracle.py;
// an error where jinja2 raises), and that text must tokenize with ggufkit to exactly the ids
// llama.cpp's llama_tokenize gives it (add_special and parse_special on, as llama.cpp's chat
// tools tokenize a prompt). Unlike the random texts of test_tokenize.cpp, these hold the real
// special-token literals of real templates next to real text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "ggufkit/jinja_render.h"
#include "ggufkit/prompt.h"
#include "ggufkit/scan.h"
#include "ggufkit/vocab.h"
#include "../helpers.h"
#include "oracle.h"

using namespace testing_helpers;
namespace fs = std::filesystem;
namespace jinja = ggufkit::jinja;

namespace {

const char* const kNow = "1795000000";  // strftime_now's clock on both sides, as in test_render.cpp
constexpr size_t kShown = 5;            // mismatches printed in full


// jinja2's answers for every template x conversation, rendered with these bos and eos texts.
// TZ=UTC: jinja2's strftime_now is local time, ggufkit's SOURCE_DATE_EPOCH clock is UTC.
jinja::Value jinja2_answers(const std::vector<std::string>& templates, const std::vector<std::string>& convs,
                            const std::string& bos, const std::string& eos) {
  std::string job = "{\"templates\": [";
  for (size_t i = 0; i < templates.size(); ++i) job += (i ? ", " : "") + jinja::to_json(jinja::Value::string(templates[i]));
  job += "], \"conversations\": [";
  for (size_t i = 0; i < convs.size(); ++i) job += (i ? ", " : "") + jinja::to_json(jinja::Value::string(convs[i]));
  job += "], \"bos_token\": " + jinja::to_json(jinja::Value::string(bos)) + ", \"eos_token\": " +
         jinja::to_json(jinja::Value::string(eos)) + ", \"now\": " + kNow + "}";
  const std::string job_path = temp_path("chat-job.json"), out_path = temp_path("chat-oracle.json");
  write_file_bytes(job_path, std::vector<uint8_t>(job.begin(), job.end()));
  const std::string cmd = "TZ=UTC python3 " + std::string(GGUFKIT_SOURCE) + "/tests/template/render_oracle.py < " + job_path +
                          " > " + out_path;
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("render_oracle.py failed: " + cmd);
  return jinja::from_json(slurp(out_path));
}

struct Prompt {
  std::string name;  // template x conversation
  std::string text;  // ggufkit's render
};

struct Counts {
  size_t rendered = 0, both_raised = 0, compared = 0, tokens = 0;
};

Counts expect_llama_cpps_ids(const std::string& vocab_file) {
  Counts n;
  const std::vector<std::string> templates = sorted_files(corpus("templates"), ".jinja");
  const std::vector<std::string> convs = sorted_files(std::string(GGUFKIT_SOURCE) + "/tests/template/conversations", ".json");
  EXPECT_EQ(templates.size() * convs.size(), 42u * 8u) << "a new template or conversation: update the counts below";

  const ggufkit::Scanned s = ggufkit::scan_file(vocab_file);
  const std::optional<ggufkit::tokenizer::Vocab> v = ggufkit::load_vocab(s.model, vocab_file);
  if (!v) {
    ADD_FAILURE() << vocab_file << " has no vocabulary";
    return n;
  }
  const std::string bos(v->text(v->loaded().bos)), eos(v->text(v->loaded().eos));
  const jinja::Value want = jinja2_answers(templates, convs, bos, eos);
  if (want.list->size() != templates.size() * convs.size()) {
    ADD_FAILURE() << "render_oracle.py gave " << want.list->size() << " answers";
    return n;
  }

  // Render every pair with ggufkit, as the product does, against jinja2.
  std::vector<Prompt> prompts;
  size_t render_mismatches = 0;
  {
    ggufkit::Context clock;  // the template command's, with SOURCE_DATE_EPOCH=kNow (read as UTC)
    clock.source_date_epoch = kNow;
    for (size_t t = 0; t < templates.size(); ++t) {
      const std::string source = slurp(templates[t]);
      for (size_t c = 0; c < convs.size(); ++c) {
        const jinja::Value& w = (*want.list)[t * convs.size() + c];
        const bool want_ok = w.dict->find("ok")->i != 0;
        const std::string name = fs::path(templates[t]).stem().string() + " x " + fs::path(convs[c]).stem().string();
        std::optional<std::string> got;
        std::string error;
        try {
          got = ggufkit::render_prompt(templates[t], "tokenizer.chat_template", source, s.model, ggufkit::read_conversation(convs[c]),
                                       clock);
        } catch (const std::exception& e) {
          error = e.what();
        }
        if (!want_ok && !got) {
          ++n.both_raised;
          continue;
        }
        if (want_ok && got && *got == w.dict->find("text")->s.str()) {
          ++n.rendered;
          prompts.push_back({name, *got});
          continue;
        }
        if (++render_mismatches <= kShown)
          ADD_FAILURE() << name << ": "
                        << (want_ok && got ? "jinja2 \"" + oracle::escaped(w.dict->find("text")->s.str()) + "\"\n  ggufkit \"" + oracle::escaped(*got) + "\""
                            : want_ok      ? "jinja2 renders, ggufkit raises: " + error
                                           : "jinja2 raises (" + w.dict->find("error")->s.str() + "), ggufkit renders");
      }
    }
  }
  EXPECT_EQ(render_mismatches, 0u) << "pairs where ggufkit's render is not jinja2's";

  // One oracle process for all the prompts of this vocabulary.
  std::vector<oracle::Request> reqs;
  for (const Prompt& p : prompts) reqs.push_back({true, true, p.text});
  const oracle::Run run = oracle::tokenize(vocab_file, reqs);
  if (run.refused) {
    ADD_FAILURE() << "llama.cpp refuses " << vocab_file;
    return n;
  }
  EXPECT_EQ(run.status, "") << "the oracle failed on " << vocab_file;
  size_t differ = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const oracle::Answer& a = run.answers[i];
    std::vector<int32_t> got;
    std::string threw;
    try {
      got = v->tokenize(prompts[i].text, /*add_special=*/true, /*parse_special=*/true);
    } catch (const std::exception& e) {
      threw = e.what();
    }
    ++n.compared;
    n.tokens += a.ids.size();
    if (a.error.empty() && threw.empty() && got == a.ids) continue;
    if (++differ <= kShown)
      ADD_FAILURE() << prompts[i].name << " on " << vocab_file << ", " << prompts[i].text.size() << " bytes: \""
                    << oracle::escaped(prompts[i].text) << "\"\n  llama.cpp (" << a.ids.size()
                    << "): " << (a.error.empty() ? oracle::ids_text(a.ids) : a.error) << "\n  ggufkit   (" << got.size()
                    << "): " << (threw.empty() ? oracle::ids_text(got) : "threw: " + threw);
  }
  EXPECT_EQ(differ, 0u) << "prompts whose ids differ, of " << n.compared;
  std::printf("[ compared ] %s: %zu pairs, %zu rendered, %zu raise in both, %zu prompts tokenized the same, %zu tokens\n",
              vocab_file.c_str(), templates.size() * convs.size(), n.rendered, n.both_raised, n.compared - differ, n.tokens);
  return n;
}

class ChatTokens : public testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!oracle::available(why)) FAIL() << "the oracle cannot run: " << why;  // as every interop test: missing is a failure
  }
};

// The counts are those of the corpus (42 templates x 8 conversations, fixed at one upstream
// commit of llama.cpp's models/templates): a new template or conversation changes them. 18
// pairs raise in jinja2 on purpose (a system role refused, tools needed, ...), in both
// vocabularies alike: no template branches on the bos or eos text.
TEST_F(ChatTokens, TinyLlamaPromptsTokenizeToLlamaCppsIds) {
  const Counts n = expect_llama_cpps_ids(corpus("splits/tiny-llama.gguf"));
  EXPECT_EQ(n.compared + n.both_raised, 42u * 8u);
  EXPECT_EQ(n.compared, 318u);
  EXPECT_EQ(n.both_raised, 18u);
}

TEST_F(ChatTokens, Phi3PromptsTokenizeToLlamaCppsIds) {
  const Counts n = expect_llama_cpps_ids(corpus("vocab/ggml-vocab-phi-3.gguf"));
  EXPECT_EQ(n.compared + n.both_raised, 42u * 8u);
  EXPECT_EQ(n.compared, 318u);
  EXPECT_EQ(n.both_raised, 18u);
}

// Issue 29: `edit --dry-run --render CONV --tokens --json` gives the ids llama.cpp's chat path
// feeds the model before and after the edit: on the tiny llama (which adds BOS, not EOS: as
// llama.cpp loads it) with Qwen2.5's corpus template, prompt.tokens.before and .after are
// llama_tokenize's ids (add and parse special) of prompt.before and .after, each less a
// leading "<s>" (the BOS piece), as common/chat.cpp strips it before tokenizing.
TEST_F(ChatTokens, AnEditsDryRunGivesTheIdsLlamaCppsChatPathFeedsBeforeAndAfter) {
  const std::string tiny = corpus("splits/tiny-llama.gguf");
  const std::string loaded = oracle::loaded(tiny);
  ASSERT_NE(loaded.find("\"bos\": 1,"), std::string::npos) << loaded;
  ASSERT_NE(loaded.find("\"add_bos\": true, \"add_eos\": false"), std::string::npos) << loaded;
  const std::string qwen = corpus("templates/Qwen-Qwen2.5-7B-Instruct.jinja");
  std::vector<oracle::Request> reqs;
  std::vector<std::vector<int32_t>> shown;
  size_t stripped = 0;
  for (const std::string& conv : sorted_files(std::string(GGUFKIT_SOURCE) + "/tests/template/conversations", ".json")) {
    CliRun r = run_cli("edit " + tiny + " --chat-template-file " + qwen + " --dry-run --render " + conv + " --tokens --json");
    ASSERT_EQ(r.code, 0) << conv << ": " << r.err;
    const jinja::Value out = jinja::from_json(r.out);
    const jinja::Value* prompt = out.dict->find("prompt");
    ASSERT_NE(prompt, nullptr) << r.out;
    const jinja::Value* tokens = prompt->dict->find("tokens");
    ASSERT_NE(tokens, nullptr) << r.out;
    for (const char* side : {"before", "after"}) {
      std::string text = prompt->dict->find(side)->s.str();
      if (text.starts_with("<s>")) text.erase(0, 3), ++stripped;
      reqs.push_back({true, true, text});
      std::vector<int32_t> ids;
      for (const jinja::Value& id : *tokens->dict->find(side)->list) ids.push_back(static_cast<int32_t>(id.i));
      shown.push_back(ids);
    }
  }
  ASSERT_EQ(reqs.size(), 16u);
  EXPECT_EQ(stripped, 0u) << "neither template prints bos_token";
  const oracle::Run run = oracle::tokenize(tiny, reqs);
  ASSERT_EQ(run.status, "");
  size_t tokens = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(run.answers[i].error, "");
    EXPECT_EQ(shown[i], run.answers[i].ids) << (i % 2 ? "after" : "before") << " of conversation " << i / 2 << ": \""
                                            << oracle::escaped(reqs[i].text) << "\"";
    ASSERT_FALSE(shown[i].empty());
    EXPECT_EQ(shown[i][0], 1) << "one BOS, added by the vocabulary";
    tokens += shown[i].size();
  }
  std::printf("[ compared ] %zu prompts, %zu tokens\n", reqs.size(), tokens);
}

// The stripping itself: phi-3's own template prints bos_token and its vocabulary adds BOS.
// `template --render --tokens --ids` gives llama_tokenize's ids of the prompt less its
// leading "<s>": one BOS, where the unstripped prompt gives llama.cpp two. (common/chat.cpp,
// which strips, is not in libllama: the strip here is the test's, written as it does it.)
TEST_F(ChatTokens, TheTemplatesBosIsStrippedAsLlamaCppsChatPathStripsIt) {
  const std::string phi3 = corpus("vocab/ggml-vocab-phi-3.gguf");
  const std::string conv = std::string(GGUFKIT_SOURCE) + "/tests/template/conversations/03-several-turns.json";
  const std::string prompt = run_cli("template " + phi3 + " --render " + conv).out;
  ASSERT_TRUE(prompt.starts_with("<s><|user|>")) << prompt;
  CliRun ids = run_cli("template " + phi3 + " --render " + conv + " --tokens --ids");
  ASSERT_EQ(ids.code, 0) << ids.err;
  const oracle::Run run = oracle::tokenize(phi3, {{true, true, prompt.substr(3)}, {true, true, prompt}});
  ASSERT_EQ(run.answers.size(), 2u);
  EXPECT_EQ(ids.out, oracle::ids_text(run.answers[0].ids) + "\n");
  EXPECT_EQ(run.answers[0].ids.at(0), 1);
  EXPECT_EQ(run.answers[0].ids.at(1), 32010);  // <|user|>
  EXPECT_EQ(run.answers[1].ids.at(1), 1) << "unstripped, llama.cpp feeds two BOS";
}

// Issue 29, the fix in place: phi-3's <|user|> (32010) retyped normal is split by llama.cpp
// where phi-3's own template writes it; validate says so (special_not_control naming 32010,
// template_literal_split with the pieces), names the fix, and the fix run in place writes the
// header alone: the same size, llama.cpp reads <|user|> as 32010 again, the findings gone.
TEST_F(ChatTokens, AUserTokenTypedNormalIsFoundAndRetypedInPlace) {
  const std::string phi3 = corpus("vocab/ggml-vocab-phi-3.gguf");
  const std::string f = temp_path("phi3-user-normal.gguf");
  fs::remove(f);
  CliRun retype = run_cli("edit " + phi3 + " --token-type '<|user|>=normal' -o " + f);
  ASSERT_EQ(retype.code, 0) << retype.err;
  const uint64_t size = fs::file_size(f);
  EXPECT_EQ(size, fs::file_size(phi3));
  // writable by its owner, whatever the corpus's mode (an output keeps its source's)
  fs::permissions(f, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add);
  const oracle::Run split = oracle::tokenize(f, {{false, true, "<|user|>"}});
  ASSERT_EQ(split.answers.size(), 1u);
  EXPECT_EQ(oracle::ids_text(split.answers[0].ids), "529 29989 1792 29989 29958") << "llama.cpp splits it";

  CliRun v = run_cli("validate --json " + f);
  auto line_of = [&](const std::string& out, const std::string& code) {
    size_t at = out.find("\"code\": \"" + code + "\"");
    if (at == std::string::npos) return std::string();
    size_t start = out.rfind('\n', at) + 1;
    return out.substr(start, out.find('\n', at) - start);
  };
  const std::string snc = line_of(v.out, "special_not_control"), lit = line_of(v.out, "template_literal_split");
  EXPECT_NE(snc.find("\"message\": \"\\\"<|user|>\\\" (id 32010) is typed normal, so llama.cpp takes the text as text"), std::string::npos) << v.out;
  EXPECT_NE(snc.find("\"ids\": [32010]"), std::string::npos) << snc;
  const std::string fix = "ggufkit edit " + f + " --token-type '<|user|>=user_defined' --in-place";  // never control: see SafeAdvice
  EXPECT_NE(snc.find("\"fix\": \"" + fix + "\""), std::string::npos) << snc;
  EXPECT_NE(lit.find("\\\"<|user|>\\\" tokenizes into 5 tokens (529 29989 1792 29989 29958) in the prompt of \\\"system and user\\\" at byte 3: "
                     "it is token 32010, typed normal"), std::string::npos) << lit;
  EXPECT_NE(lit.find("\"ids\": [529, 29989, 1792, 29989, 29958]"), std::string::npos) << lit;

  // The fix, as named (less "ggufkit", the binary under test).
  CliRun fixed = run_cli(fix.substr(std::string("ggufkit ").size()));
  ASSERT_EQ(fixed.code, 0) << fixed.err;
  EXPECT_NE(fixed.out.find("retype  \"<|user|>\" (id 32010): normal -> user_defined"), std::string::npos) << fixed.out;
  EXPECT_NE(fixed.out.find(": wrote the header alone, in place (it fits before the data start; no tensor byte moves): 1 of its 726019 bytes differ, at 725185"),
            std::string::npos) << fixed.out;
  EXPECT_EQ(fs::file_size(f), size);
  const oracle::Run whole = oracle::tokenize(f, {{false, true, "<|user|>"}, {true, true, "<|user|>\nHi<|end|>\n<|assistant|>\n"}});
  ASSERT_EQ(whole.answers.size(), 2u);
  EXPECT_EQ(oracle::ids_text(whole.answers[0].ids), "32010");
  EXPECT_EQ(whole.answers[1].ids.at(1), 32010);
  CliRun after = run_cli("validate --json " + f);
  EXPECT_EQ(line_of(after.out, "special_not_control"), "") << after.out;
  EXPECT_EQ(line_of(after.out, "template_literal_split"), "") << after.out;
  // The published file has it control; user_defined is parsed the same and still printed:
  // the one byte of its type is all that differs.
  const auto got = read_file_bytes(f), published = read_file_bytes(phi3);
  ASSERT_EQ(got.size(), published.size());
  size_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i) differ += got[i] != published[i];
  EXPECT_EQ(differ, 1u);
}

}  // namespace

