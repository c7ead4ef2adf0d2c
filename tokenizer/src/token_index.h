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
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ggufkit/big_vector.h"

namespace ggufkit::tokenizer {

class TokenIndex {
 public:
  void reserve(size_t keys, size_t bytes) { ends_.reserve(keys), bytes_.reserve(bytes); }
  // Appends the next id's key (the text as llama.cpp keeps it in token_to_id).
  void add(std::string_view key);
  // After the last add: the lookup table.
  void build();

  size_t size() const { return ends_.size(); }
  size_t distinct() const { return distinct_; }  // what the map's size() would be
  std::string_view key(int32_t id) const {
    const size_t from = id == 0 ? 0 : ends_[static_cast<size_t>(id) - 1];
    return {bytes_.data() + from, ends_[static_cast<size_t>(id)] - from};
  }
  // The id token_to_id gives `text` (of a repeated text, the last, as operator[] leaves it); -1: none.
  int32_t find(std::string_view text) const;
  // Every distinct key's id, in token_to_id's iteration order: made on the first call, from
  // any thread (a load asks for it only when the order can change what it finds).
  const big_vector<int32_t>& order() const;
  // `ids` (each a distinct key's id, as order() holds them) in that order, worked out for them
  // alone: a few special tokens' order costs a pass over the hash codes per rehash point, not
  // a replay of every insert.
  std::vector<int32_t> in_order(std::vector<int32_t> ids) const;
  // The most slots a key's insert looked at: small for any keys (the slots are by a seeded hash).
  size_t longest_probe() const { return longest_probe_; }

 private:
  // A slot: an id (-1: empty) and its key's hash's high bits, which settle nearly every
  // probe without reading the key.
  struct Slot {
    int32_t id;
    uint32_t tag;
  };
  big_vector<char> bytes_;
  big_vector<size_t> ends_;
  big_vector<Slot> slots_;  // open addressing by text_hash
  size_t distinct_ = 0, longest_probe_ = 0;
  mutable std::once_flag order_once_;
  mutable big_vector<int32_t> order_;
  // in_order's last answers, by what was asked: an edit's before and after ask the same.
  mutable std::mutex in_order_m_;
  mutable std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> in_order_kept_;
};

}  // namespace ggufkit::tokenizer
