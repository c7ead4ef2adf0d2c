// The token index against a real std::unordered_map<std::string, int32_t> filled as llama.cpp
// fills token_to_id (operator[] in id order): the same iteration order, id for id, and the
// same id for every text, over every corpus vocabulary and random vocabularies with repeats;
// and any subset of the ids put in that order by working out theirs alone.
// The order decides which special token llama.cpp finds by its text when several are there.
#include <gtest/gtest.h>

#include "../paths.h"

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "../../tokenizer/src/token_index.h"
#include "ggufkit/scan.h"

namespace {

using ggufkit::tokenizer::TokenIndex;

// Both built from `keys`; every difference reported.
void expect_same(const std::vector<std::string>& keys, const std::string& what) {
  std::unordered_map<std::string, int32_t> map;
  TokenIndex index;
  for (size_t i = 0; i < keys.size(); ++i) {
    map[keys[i]] = static_cast<int32_t>(i);
    index.add(keys[i]);
  }
  index.build();
  std::vector<int32_t> want;
  for (const auto& [text, id] : map) want.push_back(id);
  ASSERT_EQ(index.distinct(), map.size()) << what;
  ASSERT_EQ(std::vector<int32_t>(index.order().begin(), index.order().end()), want) << what;
  // Subsets in the same order, worked out for them alone: a few ids, dozens, a tenth of all.
  std::mt19937 rng(static_cast<uint32_t>(keys.size()));
  for (size_t size : {size_t{2}, size_t{3}, size_t{40}, want.size() / 10, want.size()}) {
    if (size < 2 || size > want.size()) continue;
    std::vector<int32_t> subset = want;
    std::shuffle(subset.begin(), subset.end(), rng);
    subset.resize(size);
    std::vector<int32_t> by_id = subset;
    std::sort(by_id.begin(), by_id.end());
    std::vector<int32_t> expected;
    for (int32_t id : want)
      if (std::binary_search(by_id.begin(), by_id.end(), id)) expected.push_back(id);
    ASSERT_EQ(index.in_order(by_id), expected) << what << ": " << size << " ids";
  }
  for (const auto& [text, id] : map) ASSERT_EQ(index.find(text), id) << what << ": " << text;
  EXPECT_EQ(index.find("\x01not a key\x02"), map.count("\x01not a key\x02") ? map["\x01not a key\x02"] : -1) << what;
}

TEST(TokenIndex, IteratesEveryCorpusVocabularyInTheOrderOfStdUnorderedMap) {
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(GGUFKIT_CORPUS) + "/vocab")) {
    if (e.path().extension() != ".gguf") continue;
    const ggufkit::Scanned s = ggufkit::scan_file(e.path().string());
    const ggufkit::Value* tokens = s.model.find("tokenizer.ggml.tokens");
    if (!tokens) continue;
    std::vector<std::string> keys;
    for (std::string_view t : tokens->strs) keys.emplace_back(t);
    expect_same(keys, e.path().filename().string());
    ++files;
  }
  EXPECT_GE(files, 5u);
}

// Sizes across the rehash points (13, 29, 59, ... buckets), short keys that collide in their
// buckets, and repeated keys (a repeat adds no node; its id is the later one).
TEST(TokenIndex, IteratesRandomVocabulariesWithRepeatsAsStdUnorderedMapDoes) {
  std::mt19937 rng(28);
  for (size_t n : {0, 1, 2, 11, 12, 13, 14, 29, 30, 60, 127, 1000, 5087, 20000}) {
    for (int round = 0; round < 3; ++round) {
      std::vector<std::string> keys;
      std::uniform_int_distribution<int> len(0, round == 0 ? 2 : 12), byte(0, round == 2 ? 3 : 255);
      for (size_t i = 0; i < n; ++i) {
        std::string k(static_cast<size_t>(len(rng)), '\0');
        for (char& c : k) c = static_cast<char>(byte(rng));
        keys.push_back(k);
      }
      expect_same(keys, "n=" + std::to_string(n) + " round " + std::to_string(round));
    }
  }
}

// A vocabulary whose texts were chosen to share the low bits of their std::hash (the slot a
// table keyed by it would start each one at: 1,000 texts in one run, a probe per text already
// there) still lands each text near its own slot: the slots go by a hash seeded
// per process, which no file can aim at.
TEST(TokenIndex, TextsMadeToCollideInStdHashDoNotPileUp) {
  std::vector<std::string> keys;
  for (uint64_t n = 0; keys.size() < 1000; ++n) {
    std::string k = "t" + std::to_string(n);
    if ((std::hash<std::string>{}(k) & 0xfff) == 0) keys.push_back(k);
  }
  TokenIndex index;
  for (const std::string& k : keys) index.add(k);
  index.build();
  EXPECT_EQ(index.distinct(), 1000u);
  EXPECT_LE(index.longest_probe(), 200u);  // piled up: 1,000; by the seeded hash, under 40 in 300 runs of it
  for (size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(index.find(keys[i]), static_cast<int32_t>(i));
  expect_same(keys, "colliding");
}

}  // namespace
