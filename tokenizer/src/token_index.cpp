#include "token_index.h"

#include "hash.h"

#include <algorithm>
#include <functional>
#include <span>
#include <utility>
#include <unordered_map>  // _Prime_rehash_policy

#ifndef __GLIBCXX__
#error "the order of llama.cpp's token_to_id is libstdc++'s: build with libstdc++"
#endif

namespace ggufkit::tokenizer {

namespace {
// x % n as a multiply where n is one of the bucket counts libstdc++'s policy grows through
// from an empty map (a division costs as much as the rest of a node's move), by division
// for any other.
template <size_t N>
size_t mod_by(size_t x) {
  return x % N;
}
size_t mod_any(size_t x, size_t n) { return x % n; }
using Mod = size_t (*)(size_t);
Mod mod_for(size_t n) {
  switch (n) {
#define GGUFKIT_MOD(N) \
  case N: return mod_by<N>;
    GGUFKIT_MOD(1) GGUFKIT_MOD(13) GGUFKIT_MOD(29) GGUFKIT_MOD(59) GGUFKIT_MOD(127) GGUFKIT_MOD(257) GGUFKIT_MOD(541)
    GGUFKIT_MOD(1109) GGUFKIT_MOD(2357) GGUFKIT_MOD(5087) GGUFKIT_MOD(10273) GGUFKIT_MOD(20753) GGUFKIT_MOD(42043)
    GGUFKIT_MOD(85229) GGUFKIT_MOD(172933) GGUFKIT_MOD(351061) GGUFKIT_MOD(712697) GGUFKIT_MOD(1447153)
    GGUFKIT_MOD(2938679) GGUFKIT_MOD(5967347) GGUFKIT_MOD(12117689)
#undef GGUFKIT_MOD
    default: return nullptr;
  }
}

// The iteration order of a std::unordered_map (libstdc++, unique keys, max_load_factor 1)
// into which keys with these std::hash codes were inserted one after another (`first_of[i]`:
// the index of the first insert of the same key, i itself when new; a repeat adds no node).
// The indices of the nodes, in order.
//
// libstdc++ keeps one list of nodes, each bucket's nodes a run of it. An insert into an empty
// bucket puts the node at the front of the list, into another bucket at the front of that
// bucket's run; a rehash reinserts the list's nodes in its order by those rules. So after a
// rehash the runs are in the reverse order of their buckets' first nodes, each run in the
// reverse order of its nodes, and the inserts since then come before their bucket's run, or
// at the front for a bucket of their own. Both are made here on arrays, in passes over them in
// order, where a replay of the linked list would jump through memory for every node moved.
class MapOrder {
 public:
  // Every table in one allocation: each of its pages is zeroed by the kernel when first
  // touched, and a huge page costs one such zeroing however little of it is used.
  MapOrder(const big_vector<size_t>& codes, size_t nodes, size_t max_buckets)
      : codes_(codes), arena_(6 * nodes + 2 * max_buckets, 0) {
    int32_t* at = arena_.data();
    auto take = [&](size_t n) { return std::span<int32_t>(std::exchange(at, at + n), n); };
    nodes_ = take(nodes), bucket_ = take(nodes), seq_ = take(nodes), seq_bucket_ = take(nodes), since_ = take(nodes);
    before_ = take(nodes), per_bucket_ = take(max_buckets), listed_ = take(max_buckets);
  }

  void insert(int32_t node) { since_[since_n_++] = node; }
  // _M_rehash_aux (unique keys): the list as it stands, reinserted into `buckets` buckets.
  void rehash(size_t buckets) {
    const size_t n = current();
    const Mod mod = mod_for(buckets);
    for (size_t i = 0; i < n; ++i) {
      const size_t code = codes_[static_cast<size_t>(seq_[i])];
      seq_bucket_[i] = static_cast<int32_t>(mod ? mod(code) : mod_any(code, buckets));
      per_bucket_[seq_bucket_[i]] = 0;
    }
    born_.clear();
    for (size_t i = 0; i < n; ++i)
      if (per_bucket_[seq_bucket_[i]]++ == 0) born_.push_back(seq_bucket_[i]);
    int32_t end = 0;  // each bucket's count, then where its run ends: the latest born first
    for (size_t k = born_.size(); k-- > 0;) per_bucket_[born_[k]] = end += per_bucket_[born_[k]];
    for (size_t i = 0; i < n; ++i) {
      const auto pos = static_cast<size_t>(--per_bucket_[seq_bucket_[i]]);
      nodes_[pos] = seq_[i], bucket_[pos] = seq_bucket_[i];
    }
    runs_ = n, buckets_ = buckets;
  }
  // The list as it stands, in order.
  big_vector<int32_t> list() {
    const size_t n = current();
    return big_vector<int32_t>(seq_.begin(), seq_.begin() + static_cast<std::ptrdiff_t>(n));
  }

 private:
  // Writes the list as it stands into seq_ (and each node's bucket into seq_bucket_): the runs
  // the last rehash left, and the inserts since. Returns its length.
  size_t current() {
    const Mod mod = mod_for(buckets_);
    for (size_t i = 0; i < runs_; ++i) listed_[bucket_[i]] = 1, per_bucket_[bucket_[i]] = -1;
    for (size_t j = 0; j < since_n_; ++j) per_bucket_[bucket_of(since_[j], mod)] = -1;  // then each bucket's latest insert
    born_.clear();
    for (size_t j = 0; j < since_n_; ++j) {
      const int32_t b = bucket_of(since_[j], mod);
      if (!listed_[b] && per_bucket_[b] < 0) born_.push_back(b);
      before_[j] = per_bucket_[b];
      per_bucket_[b] = static_cast<int32_t>(j);
    }
    size_t n = 0;
    auto inserts_of = [&](int32_t b) {
      for (int32_t j = per_bucket_[b]; j >= 0; j = before_[static_cast<size_t>(j)]) seq_[n] = since_[static_cast<size_t>(j)], seq_bucket_[n++] = b;
    };
    for (size_t k = born_.size(); k-- > 0;) inserts_of(born_[k]);
    for (size_t i = 0; i < runs_; ++i) {
      if (i == 0 || bucket_[i] != bucket_[i - 1]) inserts_of(bucket_[i]);
      seq_[n] = nodes_[i], seq_bucket_[n++] = bucket_[i];
    }
    for (size_t i = 0; i < runs_; ++i) listed_[bucket_[i]] = 0;
    since_n_ = 0;
    return n;
  }
  int32_t bucket_of(int32_t node, Mod mod) const {
    const size_t code = codes_[static_cast<size_t>(node)];
    return static_cast<int32_t>(mod ? mod(code) : mod_any(code, buckets_));
  }

  const big_vector<size_t>& codes_;
  big_vector<int32_t> arena_;
  std::span<int32_t> nodes_;       // the list as the last rehash left it: runs_ nodes
  std::span<int32_t> bucket_;      // and each one's bucket
  std::span<int32_t> seq_;         // the list as it stands
  std::span<int32_t> seq_bucket_;
  std::span<int32_t> since_;       // inserted since the last rehash, in order: since_n_ of them
  std::span<int32_t> before_;      // for each of those, the one before it in its bucket (-1: none)
  std::span<int32_t> per_bucket_;  // a bucket's latest insert; in a rehash its count, then its run's end
  std::span<int32_t> listed_;      // 1: a bucket the runs hold nodes of
  std::vector<int32_t> born_;      // buckets in the order their first node came
  size_t since_n_ = 0;
  size_t runs_ = 0, buckets_ = 1;
};

// The bucket counts libstdc++'s policy grows through as `count` keys are inserted into an
// empty map, and the insert before which each rehash comes: level j holds the inserts from
// start[j] on, in buckets[j] buckets (level 0: the single bucket of an empty map).
struct Levels {
  std::vector<size_t> start{0}, buckets{1};
};
Levels levels_of(size_t count) {
  std::__detail::_Prime_rehash_policy policy;
  Levels l;
  for (size_t node = 0; node < count; ++node)
    if (auto [grow, n] = policy._M_need_rehash(l.buckets.back(), node, 1); grow) l.start.push_back(node), l.buckets.push_back(n);
  return l;
}

// `want` (distinct nodes, each inserted before level j ended) in the order of the map's list
// as level j left it. That list holds, front to back: the buckets first filled in level j,
// the latest first, each its nodes latest first; then the runs the rehash into level j made,
// in the reverse of the order in which their buckets' nodes first came in the list before it,
// each its level-j nodes latest first and then its older nodes in the reverse of that list's
// order. So the nodes of `want`'s buckets are ordered by the list before, for those buckets'
// older nodes alone: one level down, a set about as small.
std::vector<int32_t> sorted_at(const big_vector<size_t>& codes, const Levels& l, size_t j, const std::vector<int32_t>& want, size_t count) {
  if (want.size() < 2) return want;
  const size_t from = l.start[j], to = j + 1 < l.start.size() ? l.start[j + 1] : count, buckets = l.buckets[j];
  const Mod mod = mod_for(buckets);
  auto bucket_of = [&](size_t node) { return mod ? mod(codes[node]) : mod_any(codes[node], buckets); };
  std::vector<bool> asked(buckets);
  for (int32_t node : want) asked[bucket_of(static_cast<size_t>(node))] = true;
  std::vector<int32_t> older;                          // the asked buckets' nodes from before level j
  std::vector<std::pair<int32_t, size_t>> newer;       // and from level j, by insert, with their bucket
  for (size_t node = 0; node < to; ++node)
    if (const size_t b = bucket_of(node); asked[b]) {
      if (node < from) older.push_back(static_cast<int32_t>(node));
      else newer.emplace_back(static_cast<int32_t>(node), b);
    }
  if (j > 0) older = sorted_at(codes, l, j - 1, older, count);
  // Each asked bucket: its nodes of level j (by insert) and its older ones (by the list before).
  struct Bucket {
    std::vector<int32_t> newer, older;
  };
  std::unordered_map<size_t, Bucket> of;
  std::vector<size_t> runs, born;  // buckets in the order of their first older node; of their first newer node
  for (int32_t node : older) {
    Bucket& b = of[bucket_of(static_cast<size_t>(node))];
    if (b.older.empty()) runs.push_back(bucket_of(static_cast<size_t>(node)));
    b.older.push_back(node);
  }
  for (const auto& [node, bucket] : newer) {
    Bucket& b = of[bucket];
    if (b.older.empty() && b.newer.empty()) born.push_back(bucket);
    b.newer.push_back(node);
  }
  std::vector<int32_t> list;
  for (size_t k = born.size(); k-- > 0;) list.insert(list.end(), of[born[k]].newer.rbegin(), of[born[k]].newer.rend());
  for (size_t k = runs.size(); k-- > 0;) {
    const Bucket& b = of[runs[k]];
    list.insert(list.end(), b.newer.rbegin(), b.newer.rend());
    list.insert(list.end(), b.older.rbegin(), b.older.rend());
  }
  std::vector<int32_t> wanted = want;
  std::sort(wanted.begin(), wanted.end());
  std::erase_if(list, [&](int32_t node) { return !std::binary_search(wanted.begin(), wanted.end(), node); });
  return list;
}

template <typename FirstOf>
big_vector<int32_t> unordered_map_order(const big_vector<size_t>& codes, FirstOf first_of) {
  // The policy's bucket counts, first, for the size of the tables.
  std::__detail::_Prime_rehash_policy policy;
  size_t buckets = 1, count = 0;  // _M_single_bucket
  std::vector<std::pair<size_t, size_t>> grows;  // at which insert, to how many buckets
  for (size_t node = 0; node < codes.size(); ++node) {
    if (first_of(node) != static_cast<int32_t>(node)) continue;  // found: operator[] assigns, adds nothing
    // _M_insert_unique_node: grow first when the policy says so
    if (auto [grow, n] = policy._M_need_rehash(buckets, count, 1); grow) grows.push_back({node, buckets = n});
    ++count;
  }
  MapOrder map(codes, count, buckets);
  size_t next = 0;
  for (size_t node = 0; node < codes.size(); ++node) {
    if (first_of(node) != static_cast<int32_t>(node)) continue;
    if (next < grows.size() && grows[next].first == node) map.rehash(grows[next++].second);
    map.insert(static_cast<int32_t>(node));
  }
  return map.list();
}
}  // namespace

void TokenIndex::add(std::string_view key) {
  bytes_.insert(bytes_.end(), key.begin(), key.end());
  ends_.push_back(bytes_.size());
}

int32_t TokenIndex::find(std::string_view text) const {
  if (slots_.empty()) return -1;
  const size_t mask = slots_.size() - 1;
  const uint64_t h = text_hash(text);
  const auto tag = static_cast<uint32_t>(h >> 32);
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    if (slots_[i].id < 0) return -1;
    if (slots_[i].tag == tag && key(slots_[i].id) == text) return slots_[i].id;
  }
}

void TokenIndex::build() {
  const size_t n = ends_.size();
  size_t cap = 16;
  while (cap < n + n / 3) cap *= 2;  // at most three quarters full (a tag settles nearly every probe)
  slots_.assign(cap, {-1, 0});
  distinct_ = 0, longest_probe_ = 0;
  // The slots are 4 MB for 262,144 texts, so nearly every insert would wait on memory: each
  // text's hash is made kAhead texts early and its slot fetched meanwhile.
  constexpr size_t kAhead = 16;
  uint64_t ahead[kAhead];
  auto hash_of = [&](size_t id) {
    const uint64_t h = text_hash(key(static_cast<int32_t>(id)));
    __builtin_prefetch(&slots_[h & (cap - 1)], 1);
    return h;
  };
  for (size_t id = 0; id < std::min(n, kAhead); ++id) ahead[id] = hash_of(id);
  for (size_t id = 0; id < n; ++id) {
    const std::string_view k = key(static_cast<int32_t>(id));
    const uint64_t h = ahead[id % kAhead];
    if (id + kAhead < n) ahead[id % kAhead] = hash_of(id + kAhead);
    const auto tag = static_cast<uint32_t>(h >> 32);
    size_t i = h & (cap - 1), probes = 1;
    while (slots_[i].id >= 0 && !(slots_[i].tag == tag && key(slots_[i].id) == k)) i = (i + 1) & (cap - 1), ++probes;
    longest_probe_ = std::max(longest_probe_, probes);
    distinct_ += slots_[i].id < 0;
    slots_[i] = {static_cast<int32_t>(id), tag};  // a repeat: the later id, as operator[] assigns it
  }
}

std::vector<int32_t> TokenIndex::in_order(std::vector<int32_t> ids) const {
  if (ids.size() < 2) return ids;
  const size_t n = ends_.size();
  // From the whole order: for repeated keys (refused at load), and for many ids (a vocabulary
  // of thousands of control tokens named "unused"), where a replay of every insert is cheaper.
  if (distinct_ != n || ids.size() > n / 8) {
    std::vector<bool> asked(n);
    for (int32_t id : ids) asked[static_cast<size_t>(id)] = true;
    ids.clear();
    for (int32_t id : order())
      if (asked[static_cast<size_t>(id)]) ids.push_back(id);
    return ids;
  }
  std::lock_guard<std::mutex> lock(in_order_m_);  // a second asker of the same waits for the first's answer
  for (const auto& [asked, answer] : in_order_kept_)
    if (asked == ids) return answer;
  big_vector<size_t> codes(n);
  for (size_t id = 0; id < n; ++id) codes[id] = std::hash<std::string_view>{}(key(static_cast<int32_t>(id)));  // std::hash<std::string>'s value
  const Levels levels = levels_of(n);
  std::vector<int32_t> answer = sorted_at(codes, levels, levels.start.size() - 1, ids, n);
  if (in_order_kept_.size() == 2) in_order_kept_.erase(in_order_kept_.begin());
  in_order_kept_.emplace_back(std::move(ids), answer);
  return answer;
}

const big_vector<int32_t>& TokenIndex::order() const {
  std::call_once(order_once_, [&] {
    const size_t n = ends_.size();
    big_vector<size_t> codes(n);
    for (size_t id = 0; id < n; ++id) codes[id] = std::hash<std::string_view>{}(key(static_cast<int32_t>(id)));  // std::hash<std::string>'s value
    if (distinct_ == n) {
      order_ = unordered_map_order(codes, [](size_t id) { return static_cast<int32_t>(id); });
      return;
    }
    // A repeated key's first id (repeats are refused at load: this is for the tests' random
    // vocabularies and the refusal). A node holds the last id given its key.
    std::unordered_map<std::string_view, int32_t> first;
    big_vector<int32_t> first_of(n);
    for (size_t id = 0; id < n; ++id) first_of[id] = first.emplace(key(static_cast<int32_t>(id)), static_cast<int32_t>(id)).first->second;
    order_ = unordered_map_order(codes, [&](size_t id) { return first_of[id]; });
    for (int32_t& id : order_) id = find(key(id));
  });
  return order_;
}

}  // namespace ggufkit::tokenizer
