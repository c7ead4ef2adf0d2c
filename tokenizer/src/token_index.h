#pragma once
// The token texts as llama.cpp's token_to_id (a std::unordered_map<std::string, llama_token>)
// holds them (internal): looked up by text, and walked in that map's iteration order, which
// decides the special tokens llama.cpp finds by their text when several are there (phi-3's
// "<|end|>" and "<|endoftext|>" are both end-of-turn texts: the first met wins).
//
// The order is computed, not taken from a map of 150,000 nodes: libstdc++'s hash table places
// each insert by its std::hash code alone (the bucket is code % buckets; its rehash points come
// from _Prime_rehash_policy, used here as is), so replaying its inserts on arrays of indices
// gives the same order at a tenth of the cost. tests/tokenizer/test_token_index.cpp holds it
// to a real std::unordered_map over every corpus vocabulary and random ones.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ggufkit::tokenizer {

class TokenIndex {
 public:
  void reserve(size_t keys, size_t bytes) { ends_.reserve(keys), bytes_.reserve(bytes); }
  // Appends the next id's key (the text as llama.cpp keeps it in token_to_id).
  void add(std::string_view key);
  // After the last add: the lookup table and the order.
  void build();

  size_t size() const { return ends_.size(); }
  size_t distinct() const { return distinct_; }  // what the map's size() would be
  std::string_view key(int32_t id) const {
    const size_t from = id == 0 ? 0 : ends_[static_cast<size_t>(id) - 1];
    return std::string_view(bytes_).substr(from, ends_[static_cast<size_t>(id)] - from);
  }
  // The id token_to_id gives `text` (of a repeated text, the last, as operator[] leaves it); -1: none.
  int32_t find(std::string_view text) const;
  // Every distinct key's id, in token_to_id's iteration order.
  const std::vector<int32_t>& order() const { return order_; }
  // The most slots a key's insert looked at: small for any keys (the slots are by a seeded hash).
  size_t longest_probe() const { return longest_probe_; }

 private:
  std::string bytes_;
  std::vector<size_t> ends_;
  std::vector<int32_t> slots_;  // open addressing by text_hash: an id, or -1
  std::vector<int32_t> order_;
  size_t distinct_ = 0, longest_probe_ = 0;
};

}  // namespace ggufkit::tokenizer
