// llama.cpp's own tokenizer test vectors (../shared/corpus/tokenizer): every text of the five
// corpus vocabularies gives exactly the ids llama.cpp's test-tokenizer-0 wrote, tokenized as
// it does (add_special = false, parse_special = false, on a vocabulary-only load).
#include <gtest/gtest.h>

#include "../paths.h"

#include <fstream>
#include <sstream>

#include "ggufkit/scan.h"
#include "ggufkit/vocab.h"

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

// The .inp texts are separated (and ended) by "\n__ggml_vocab_test__\n"; the .out has one
// line of space-separated ids per text.
std::vector<Case> cases(const std::string& name) {
  std::string dir = std::string(GGUFKIT_CORPUS) + "/tokenizer/";
  std::string inp = slurp(dir + name + ".inp"), out = slurp(dir + name + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<Case> r;
  for (size_t at = 0; at < inp.size();) {
    size_t end = inp.find(sep, at);
    if (end == std::string::npos) break;
    r.push_back({inp.substr(at, end - at), {}});
    at = end + sep.size();
  }
  std::istringstream lines(out);
  std::string line;
  for (Case& c : r) {
    std::getline(lines, line);
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) c.ids.push_back(id);
  }
  return r;
}

std::string show(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += " " + std::to_string(id);
  return s;
}

size_t differences(const std::string& name) {
  ggufkit::Scanned s = ggufkit::scan_file(std::string(GGUFKIT_CORPUS) + "/vocab/" + name);
  std::optional<ggufkit::tokenizer::Vocab> vocab = ggufkit::load_vocab(s.model, name);
  EXPECT_TRUE(vocab.has_value());
  if (!vocab) return 1;
  std::vector<Case> all = cases(name);
  EXPECT_EQ(all.size(), 46u) << name;
  size_t bad = 0;
  for (const Case& c : all) {
    std::vector<int32_t> got = vocab->tokenize(c.text, false, false);
    if (got != c.ids) {
      ++bad;
      ADD_FAILURE() << name << ": text \"" << c.text << "\"\n  llama.cpp:" << show(c.ids) << "\n  ggufkit:  " << show(got);
    }
  }
  return bad;
}

TEST(TokenizerVectors, LlamaSpmGivesLlamaCppsIdsForEveryText) { EXPECT_EQ(differences("ggml-vocab-llama-spm.gguf"), 0u); }
TEST(TokenizerVectors, Phi3GivesLlamaCppsIdsForEveryText) { EXPECT_EQ(differences("ggml-vocab-phi-3.gguf"), 0u); }
TEST(TokenizerVectors, Gpt2GivesLlamaCppsIdsForEveryText) { EXPECT_EQ(differences("ggml-vocab-gpt-2.gguf"), 0u); }
TEST(TokenizerVectors, FalconGivesLlamaCppsIdsForEveryText) { EXPECT_EQ(differences("ggml-vocab-falcon.gguf"), 0u); }
TEST(TokenizerVectors, BertBgeGivesLlamaCppsIdsForEveryText) { EXPECT_EQ(differences("ggml-vocab-bert-bge.gguf"), 0u); }

}  // namespace
