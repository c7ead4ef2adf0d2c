// SentencePiece-style tokenization of one fragment, as llama.cpp's llm_tokenizer_spm_session:
// the text (already space-prefixed and with spaces escaped to U+2581) is split into UTF-8
// characters, then the adjacent pair whose concatenation is the best-scoring token is merged,
// again and again; each final symbol is its token, or its bytes as byte tokens.
#include <climits>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "impl.h"

namespace ggufkit::tokenizer {

namespace {

struct Symbol {
  int prev, next;
  size_t at, n;  // bytes [at, at + n) of the text; n == 0: merged into its left neighbour
};

struct Bigram {
  int left, right;
  float score;
  size_t size;
};

// The queue's top is the highest score, the leftmost pair among equal scores.
struct Lower {
  bool operator()(const Bigram& l, const Bigram& r) const {
    return l.score < r.score || (l.score == r.score && l.left > r.left);
  }
};

// A character's bytes as one number (at most 4 bytes), for the set of adjacent pairs.
uint64_t char_key(std::string_view s, size_t at, size_t n) {
  uint64_t k = n;
  for (size_t i = 0; i < n; ++i) k = k << 8 | static_cast<uint8_t>(s[at + i]);
  return k;
}

class Spm final : public Algorithm {
 public:
  // Every pair of adjacent characters inside some token: a merge makes a token of two
  // neighbours, so it joins a pair of this set; between two characters that are no such pair
  // no merge ever happens, and the text falls apart there into pieces that are tokenized
  // alone, each as the whole text would tokenize it (the queue's order within a piece is
  // the same). Repeated pieces (words) are then tokenized once. The set is made for the first
  // long text: a short one (a chat template's prompts, checked by every edit) is merged whole,
  // as llama.cpp does, for less than a set of every token's pairs costs (10 ms for 262,144).
  explicit Spm(const Vocab::Impl& v) : v_(v) {}

  void tokenize(const std::string& text, std::vector<int32_t>& out, const Tick&) const override {
    if (text.size() > static_cast<size_t>(INT32_MAX)) throw Error("", "a text of more than 2 GiB (llama.cpp's symbol index overflows)");
    if (text.size() <= kShort) return merge(text, out);
    std::call_once(pairs_once_, [&] { make_pairs(); });
    std::unordered_map<std::string, std::vector<int32_t>, SeededHash, std::equal_to<>> seen;
    size_t start = 0;
    uint64_t prev = 0;
    std::string piece;
    auto flush = [&](size_t end) {
      if (end == start) return;
      piece.assign(text, start, end - start);
      if (piece.size() > 64) {
        merge(piece, out);
      } else if (auto it = seen.find(piece); it != seen.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
      } else {
        std::vector<int32_t> ids;
        merge(piece, ids);
        out.insert(out.end(), ids.begin(), ids.end());
        seen.emplace(piece, std::move(ids));
      }
      start = end;
    };
    for (size_t at = 0; at < text.size();) {
      size_t n = std::min(utf8_len(text[at]), text.size() - at);
      uint64_t k = char_key(text, at, n);
      if (at && !pairs_.count(prev * 0x9E3779B97F4A7C15ull ^ k)) flush(at);
      prev = k;
      at += n;
    }
    flush(text.size());
  }

 private:
  static constexpr size_t kShort = 4096;
  void make_pairs() const {
    for (const TokenData& t : v_.id_to_token) {
      const std::string_view s = t.text;
      uint64_t prev = 0;
      for (size_t at = 0; at < s.size();) {
        size_t n = std::min(utf8_len(s[at]), s.size() - at);
        uint64_t k = char_key(s, at, n);
        if (at) pairs_.insert(prev * 0x9E3779B97F4A7C15ull ^ k);
        prev = k;
        at += n;
      }
    }
  }

  void merge(const std::string& text, std::vector<int32_t>& out) const {
    std::vector<Symbol> symbols;
    symbols.reserve(text.size());
    // A character is cut by its first byte's length, truncated at the end of the text.
    for (size_t offs = 0; offs < text.size();) {
      size_t n = std::min(utf8_len(text[offs]), text.size() - offs);
      int index = static_cast<int>(symbols.size());
      offs += n;
      symbols.push_back({index - 1, offs == text.size() ? -1 : index + 1, offs - n, n});
    }
    if (symbols.empty()) return;

    std::priority_queue<Bigram, std::vector<Bigram>, Lower> queue;
    auto try_add = [&](int left, int right) {
      if (left == -1 || right == -1) return;
      const size_t size = symbols[left].n + symbols[right].n;
      int32_t id = v_.text_to_token(text.substr(symbols[left].at, size));
      if (id < 0 || static_cast<size_t>(id) >= v_.id_to_token.size()) return;
      queue.push({left, right, v_.id_to_token[static_cast<size_t>(id)].score, size});
    };
    for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

    while (!queue.empty()) {
      Bigram b = queue.top();
      queue.pop();
      Symbol& left = symbols[b.left];
      Symbol& right = symbols[b.right];
      // Stale: one side was merged since (gone, or grown).
      if (left.n == 0 || right.n == 0 || left.n + right.n != b.size) continue;
      left.n += right.n;
      right.n = 0;
      left.next = right.next;
      if (right.next >= 0) symbols[right.next].prev = b.left;
      try_add(left.prev, b.left);
      try_add(b.left, left.next);
    }

    // Every merged symbol is a token (a pair is only merged when it is one), so llama.cpp's
    // resegment by reverse merges never runs: a symbol is its token or, a single character
    // that is none, its bytes.
    for (int i = 0; i != -1; i = symbols[i].next) {
      const Symbol& s = symbols[i];
      int32_t id = v_.text_to_token(text.substr(s.at, s.n));
      if (id >= 0) {
        out.push_back(id);
        continue;
      }
      for (size_t j = 0; j < s.n; ++j) {
        int32_t b = v_.byte_to_token(static_cast<uint8_t>(text[s.at + j]));
        if (b < 0)  // llama.cpp's byte_to_token throws std::out_of_range out of llama_tokenize
          throw Error("tokenizer.ggml.tokens", "the vocabulary has no token for byte " + std::to_string(static_cast<uint8_t>(text[s.at + j])) +
                                                   " (llama.cpp: _Map_base::at)");
        out.push_back(b);
      }
    }
  }

  const Vocab::Impl& v_;
  mutable std::unordered_set<uint64_t> pairs_;
  mutable std::once_flag pairs_once_;
};

}  // namespace

std::unique_ptr<Algorithm> make_spm(const Vocab::Impl& v) { return std::make_unique<Spm>(v); }

}  // namespace ggufkit::tokenizer
