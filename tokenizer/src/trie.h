#pragma once
// The tokens' texts as llama.cpp's naive_trie holds them (a key inserted twice keeps the
// last value), for its longest-match and every-match walks, in memory and time bounded:
//
// - memory: a path-compressed trie (a node per branching point, its edge a view of a key),
//   so a vocabulary of 1,000 texts of 10 KB costs some 2,000 nodes, not 10 million (a byte
//   trie of hash map edges cost 52 bytes a text byte);
// - time: a walk reads at most kWalk bytes; keys longer than that (none in real
//   vocabularies but runs of spaces or dashes) are found by a rolling hash of the text's
//   windows of their lengths, so a text costs its length times kWalk plus the distinct long
//   lengths, where walking a key of 100,000 bytes at each position cost its square.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "impl.h"

namespace ggufkit::tokenizer {

class KeyTrie {
 public:
  static constexpr size_t kWalk = 128;

  // `keys` are (text, value) in insertion order; their texts must outlive the trie.
  explicit KeyTrie(const std::vector<std::pair<std::string_view, int32_t>>& keys) {
    keys_.reserve(keys.size());
    values_.reserve(keys.size());
    for (const auto& [key, value] : keys) keys_.push_back(key), values_.push_back(value);
    index();
  }

 private:
  void index() {
    std::vector<uint32_t> order(keys_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
    // sorted by text; of equal texts, only the last inserted is kept
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return keys_[a] < keys_[b]; });
    size_t kept = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      if (i + 1 < order.size() && keys_[order[i + 1]] == keys_[order[i]]) continue;
      order[kept++] = order[i];
    }
    order.resize(kept);
    build(order);
    index_long(order);
  }

 public:
  // Calls f(depth, value) for every (non-empty) key that `text` starts with of at most kWalk
  // bytes (or `most`), shortest first; returns how many bytes of the text the trie follows (so far).
  template <class F>
  size_t walk(std::string_view text, F&& f, size_t most = kWalk) const {
    const size_t limit = std::min(most, text.size());
    uint32_t node = 0;
    size_t depth = 0;
    while (depth < limit) {
      const Node& n = nodes_[node];
      // the child whose edge starts with the next byte (children sorted by it)
      const auto c = static_cast<uint8_t>(text[depth]);
      uint32_t lo = n.first_child, hi = n.first_child + n.children;
      while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (first_byte(mid) < c) lo = mid + 1;
        else hi = mid;
      }
      if (lo == n.first_child + n.children || first_byte(lo) != c) return depth;
      const Node& child = nodes_[lo];
      const std::string_view label = keys_[child.key].substr(child.from, child.length);
      size_t k = 0;
      while (k < label.size() && depth < limit && text[depth] == label[k]) ++k, ++depth;
      if (k < label.size()) return depth;
      node = lo;
      if (child.value >= 0) f(depth, child.value);
    }
    return depth;
  }

  // The keys longer than kWalk that a text holds: (where, length, value), by where, then
  // longest first.
  struct Long {
    size_t at, length;
    int32_t value;
  };
  std::vector<Long> long_keys(std::string_view text) const {
    std::vector<Long> found;
    for (size_t j = 0; j < long_lengths_.size(); ++j) {
      const auto [length, from] = long_lengths_[j];
      if (length > text.size()) continue;
      const size_t to = j + 1 < long_lengths_.size() ? long_lengths_[j + 1].second : long_keys_.size();
      const uint64_t top = SpecialIndex::power(length);
      uint64_t h = 0;
      for (size_t i = 0; i < text.size(); ++i) {
        h = SpecialIndex::roll(h, text.substr(i, 1));
        if (i >= length) h = SpecialIndex::unroll(h, static_cast<uint8_t>(text[i - length]), top);
        if (i + 1 < length) continue;
        const size_t at = i + 1 - length;
        // the long keys of this length with this hash (sorted by hash within the length)
        auto it = std::lower_bound(long_keys_.begin() + static_cast<std::ptrdiff_t>(from), long_keys_.begin() + static_cast<std::ptrdiff_t>(to), h,
                                   [](const LongKey& k, uint64_t x) { return k.hash < x; });
        for (; it != long_keys_.begin() + static_cast<std::ptrdiff_t>(to) && it->hash == h; ++it)
          if (text.compare(at, length, keys_[it->key]) == 0) {
            found.push_back({at, length, values_[it->key]});
            break;
          }
      }
    }
    std::sort(found.begin(), found.end(), [](const Long& a, const Long& b) { return a.at != b.at ? a.at < b.at : a.length > b.length; });
    return found;
  }

  size_t nodes() const { return nodes_.size(); }

 private:
  struct Node {
    uint32_t key = 0, from = 0, length = 0;  // the edge into it: keys_[key].substr(from, length)
    uint32_t first_child = 0;
    uint16_t children = 0;
    int32_t value = -1;
  };
  struct LongKey {
    uint64_t hash;
    uint32_t key;
  };
  uint8_t first_byte(uint32_t node) const { return static_cast<uint8_t>(keys_[nodes_[node].key][nodes_[node].from]); }

  // Breadth first over the sorted keys: a node's children are made together, in byte order.
  void build(const std::vector<uint32_t>& order) {
    struct Todo {
      uint32_t node;
      size_t lo, hi, depth;  // its keys (all sharing its first `depth` bytes)
    };
    nodes_.assign(1, Node{});
    std::deque<Todo> todo{{0, 0, order.size(), 0}};
    while (!todo.empty()) {
      auto [node, lo, hi, depth] = todo.front();
      todo.pop_front();
      if (lo < hi && keys_[order[lo]].size() == depth) nodes_[node].value = values_[order[lo++]];
      nodes_[node].first_child = static_cast<uint32_t>(nodes_.size());
      for (size_t g = lo; g < hi;) {
        const char c = keys_[order[g]][depth];
        size_t e = g + 1;
        while (e < hi && keys_[order[e]][depth] == c) ++e;
        // the group's common prefix: that of its first and last (they are sorted)
        const std::string_view a = keys_[order[g]], b = keys_[order[e - 1]];
        size_t common = depth + 1;
        while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
        Node child;
        child.key = order[g], child.from = static_cast<uint32_t>(depth), child.length = static_cast<uint32_t>(common - depth);
        const auto index = static_cast<uint32_t>(nodes_.size());
        nodes_.push_back(child);
        ++nodes_[node].children;
        todo.push_back({index, g, e, common});
        g = e;
      }
    }
  }

  void index_long(const std::vector<uint32_t>& order) {
    for (uint32_t k : order)
      if (keys_[k].size() > kWalk) long_keys_.push_back({SpecialIndex::roll(0, keys_[k]), k});
    std::sort(long_keys_.begin(), long_keys_.end(), [&](const LongKey& a, const LongKey& b) {
      const size_t la = keys_[a.key].size(), lb = keys_[b.key].size();
      return la != lb ? la > lb : a.hash < b.hash;
    });
    for (size_t i = 0; i < long_keys_.size(); ++i)
      if (i == 0 || keys_[long_keys_[i].key].size() != keys_[long_keys_[i - 1].key].size())
        long_lengths_.push_back({keys_[long_keys_[i].key].size(), i});
  }

  std::vector<std::string_view> keys_;
  std::vector<int32_t> values_;
  std::vector<Node> nodes_;
  std::vector<LongKey> long_keys_;                      // by length (longest first), then hash
  std::vector<std::pair<size_t, size_t>> long_lengths_;  // each long length and its first in long_keys_
};

}  // namespace ggufkit::tokenizer
