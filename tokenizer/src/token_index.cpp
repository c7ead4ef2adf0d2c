#include "token_index.h"

#include "hash.h"

#include <algorithm>
#include <functional>
#include <unordered_map>  // _Prime_rehash_policy

#ifndef __GLIBCXX__
#error "the order of llama.cpp's token_to_id is libstdc++'s: build with libstdc++"
#endif

namespace ggufkit::tokenizer {

namespace {
// The iteration order of a std::unordered_map (libstdc++, unique keys, max_load_factor 1)
// into which keys with these std::hash codes were inserted one after another (`first_of[i]`:
// the index of the first insert of the same key, i itself when new; a repeat adds no node).
// The indices of the nodes, in order.
std::vector<int32_t> unordered_map_order(const std::vector<size_t>& codes, const std::vector<int32_t>& first_of) {
  // Nodes are indices; `before` stands for _M_before_begin. next[x]: the node after x (-1:
  // none); buckets[b]: the node before bucket b's first (-1: empty), as _Hashtable keeps them.
  const int32_t before = static_cast<int32_t>(codes.size());
  std::vector<int32_t> next(codes.size() + 1, -1);
  std::vector<int32_t> buckets(1, -1);  // _M_single_bucket
  std::__detail::_Prime_rehash_policy policy;
  size_t count = 0;
  for (int32_t node = 0; node < before; ++node) {
    if (first_of[static_cast<size_t>(node)] != node) continue;  // found: operator[] assigns, adds nothing
    // _M_insert_unique_node: grow first when the policy says so (_M_rehash_aux, unique keys)
    if (auto [grow, n] = policy._M_need_rehash(buckets.size(), count, 1); grow) {
      std::vector<int32_t> fresh(n, -1);
      int32_t p = next[before];
      next[before] = -1;
      size_t bbegin = 0;
      while (p >= 0) {
        const int32_t after = next[p];
        const size_t b = codes[static_cast<size_t>(p)] % n;
        if (fresh[b] < 0) {
          next[p] = next[before];
          next[before] = p;
          fresh[b] = before;
          if (next[p] >= 0) fresh[bbegin] = p;
          bbegin = b;
        } else {
          next[p] = next[fresh[b]];
          next[fresh[b]] = p;
        }
        p = after;
      }
      buckets = std::move(fresh);
    }
    // _M_insert_bucket_begin
    const size_t b = codes[static_cast<size_t>(node)] % buckets.size();
    if (buckets[b] >= 0) {
      next[node] = next[buckets[b]];
      next[buckets[b]] = node;
    } else {
      next[node] = next[before];
      next[before] = node;
      if (next[node] >= 0) buckets[codes[static_cast<size_t>(next[node])] % buckets.size()] = node;
      buckets[b] = before;
    }
    ++count;
  }
  std::vector<int32_t> order;
  order.reserve(count);
  for (int32_t p = next[before]; p >= 0; p = next[p]) order.push_back(p);
  return order;
}
}  // namespace

void TokenIndex::add(std::string_view key) {
  bytes_.append(key);
  ends_.push_back(bytes_.size());
}

int32_t TokenIndex::find(std::string_view text) const {
  if (slots_.empty()) return -1;
  const size_t mask = slots_.size() - 1;
  for (size_t i = text_hash(text) & mask;; i = (i + 1) & mask) {
    if (slots_[i] < 0) return -1;
    if (key(slots_[i]) == text) return slots_[i];
  }
}

void TokenIndex::build() {
  const size_t n = ends_.size();
  std::vector<size_t> codes(n);
  std::vector<int32_t> first_of(n);
  size_t cap = 16;
  while (cap < 2 * n) cap *= 2;  // at most half full
  slots_.assign(cap, -1);
  distinct_ = 0, longest_probe_ = 0;
  for (size_t id = 0; id < n; ++id) {
    const std::string_view k = key(static_cast<int32_t>(id));
    codes[id] = std::hash<std::string_view>{}(k);  // std::hash<std::string>'s value, for the order
    size_t i = text_hash(k) & (cap - 1), probes = 1;
    while (slots_[i] >= 0 && key(slots_[i]) != k) i = (i + 1) & (cap - 1), ++probes;
    longest_probe_ = std::max(longest_probe_, probes);
    if (slots_[i] < 0) {
      first_of[id] = static_cast<int32_t>(id);
      ++distinct_;
    } else {
      first_of[id] = first_of[static_cast<size_t>(slots_[i])];
    }
    slots_[i] = static_cast<int32_t>(id);  // a repeat: the later id, as operator[] assigns it
  }
  order_ = unordered_map_order(codes, first_of);
  if (distinct_ != n)
    for (int32_t& id : order_) id = find(key(id));  // a node holds the last id given its key
}

}  // namespace ggufkit::tokenizer
