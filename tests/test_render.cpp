// Rendering chat templates: byte for byte what Python's jinja2 gives in Hugging Face's
// environment (the oracle, tests/template/render_oracle.py, run through Debian's
// python3-jinja2), for every corpus template and every conversation in
// tests/template/conversations; an error where jinja2 raises. Then the sandbox's limits.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "ggufkit/jinja.h"
#include "ggufkit/jinja_render.h"
#include "helpers.h"

using namespace testing_helpers;
namespace fs = std::filesystem;
namespace jinja = ggufkit::jinja;

namespace {

const int64_t kNow = 1795000000;  // strftime_now's clock in both renderers: 2026-11-18

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> sorted_files(const std::string& dir, const std::string& ext) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ext) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

struct Outcome {
  bool ok = false;
  std::string text;  // the prompt, or the error
};

Outcome ours(const std::string& source, const jinja::Value& conversation) {
  try {
    jinja::Template t = jinja::parse(source);
    jinja::RenderOptions opt;
    opt.now = kNow;
    return {true, jinja::render(t, jinja::chat_context(conversation, "<s>", "</s>"), opt)};
  } catch (const std::exception& e) {
    return {false, e.what()};
  }
}

// Where two texts first differ, with a little of each.
std::string first_difference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  size_t from = i > 30 ? i - 30 : 0;
  return "at byte " + std::to_string(i) + ": jinja2 \"" + a.substr(from, 80) + "\" | ggufkit \"" + b.substr(from, 80) + "\"";
}

}  // namespace

TEST(Render, EveryCorpusTemplateAgreesWithJinja2ForEveryConversation) {
  const std::vector<std::string> templates = sorted_files(corpus("templates"), ".jinja");
  const std::vector<std::string> convs = sorted_files(std::string(GGUFKIT_SOURCE) + "/tests/template/conversations", ".json");
  ASSERT_EQ(templates.size(), 42u);
  ASSERT_GE(convs.size(), 8u);
  // One run of the oracle for all pairs.
  std::string job = "{\"templates\": [";
  for (size_t i = 0; i < templates.size(); ++i) job += (i ? ", " : "") + jinja::to_json(jinja::Value::string(templates[i]));
  job += "], \"conversations\": [";
  for (size_t i = 0; i < convs.size(); ++i) job += (i ? ", " : "") + jinja::to_json(jinja::Value::string(convs[i]));
  job += "], \"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"now\": " + std::to_string(kNow) + "}";
  const std::string job_path = temp_path("render-job.json"), out_path = temp_path("render-oracle.json");
  write_file_bytes(job_path, std::vector<uint8_t>(job.begin(), job.end()));
  ASSERT_EQ(std::system(("python3 " + std::string(GGUFKIT_SOURCE) + "/tests/template/render_oracle.py < " + job_path + " > " +
                         out_path)
                            .c_str()),
            0);
  jinja::Value oracle = jinja::from_json(slurp(out_path));
  ASSERT_EQ(oracle.list->size(), templates.size() * convs.size());

  std::vector<jinja::Value> conversations;
  for (const std::string& c : convs) conversations.push_back(jinja::from_json(slurp(c)));
  size_t agree = 0, raised = 0;
  std::vector<std::string> differ;
  std::string errors;
  std::string table = "templates x conversations (= same prompt, e both raise, X differ)\n";
  for (size_t t = 0; t < templates.size(); ++t) {
    const std::string source = slurp(templates[t]);
    std::string row;
    for (size_t c = 0; c < convs.size(); ++c) {
      const jinja::Value& want = (*oracle.list)[t * convs.size() + c];
      const bool want_ok = want.dict->find("ok")->i != 0;
      Outcome got = ours(source, conversations[c]);
      std::string name = fs::path(templates[t]).stem().string() + " x " + fs::path(convs[c]).stem().string();
      if (want_ok && got.ok && got.text == want.dict->find("text")->s) {
        ++agree;
        row += " =";
      } else if (!want_ok && !got.ok) {
        ++raised;
        row += " e";
        // The same kind of error with the same message (ggufkit adds the line).
        const std::string& why = want.dict->find("error")->s;
        const size_t colon = why.find(": ");
        EXPECT_EQ(got.text.substr(0, got.text.find(" (line")), why.substr(0, colon)) << name;
        EXPECT_EQ(got.text.substr(got.text.find("): ") + 3), why.substr(colon + 2)) << name;
        errors += "  " + name + ": jinja2 " + why + " | ggufkit " + got.text + "\n";
      } else {
        row += " X";
        differ.push_back(name + ": " +
                         (want_ok && got.ok ? first_difference(want.dict->find("text")->s, got.text)
                          : want_ok         ? "jinja2 renders, ggufkit raises: " + got.text
                                            : "jinja2 raises (" + want.dict->find("error")->s + "), ggufkit renders"));
      }
    }
    char name[48];
    std::snprintf(name, sizeof name, "%-46.46s", fs::path(templates[t]).stem().string().c_str());
    table += name + row + "\n";
  }
  std::printf("%s%zu pairs: %zu the same prompt, %zu raise in both, %zu differ\nwhere both raise:\n%s", table.c_str(),
              templates.size() * convs.size(), agree, raised, differ.size(), errors.c_str());
  for (const std::string& d : differ) ADD_FAILURE() << d;
  // Most pairs render: a table of errors would prove little.
  EXPECT_GE(agree, templates.size() * convs.size() * 3 / 4);
}
