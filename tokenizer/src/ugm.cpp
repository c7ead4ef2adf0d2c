// Unigram (tokenizer.ggml.model "t5") as llama.cpp's llm_tokenizer_ugm_session: the text
// normalized by SentencePiece's precompiled charsmap (a darts-clone XOR-compressed double
// array of byte prefixes, and the replacement strings they map to) and the whitespace
// flags, then the best-scoring segmentation (Viterbi) over a trie of the tokens. And RWKV
// ("rwkv"): its escaped token texts made bytes, then a greedy longest match.
#include <algorithm>
#include <cfloat>
#include <cstring>
#include <deque>

#include "impl.h"
#include "trie.h"

namespace ggufkit::tokenizer {

namespace {

constexpr const char* charsmap_key = "tokenizer.ggml.precompiled_charsmap";

// The precompiled charsmap: a u32 size, that many bytes of XCDA units, then the
// NUL-terminated replacement strings the units' values point into.
struct Charsmap {
  std::vector<uint32_t> xcda;
  std::string replacements;

  // Refuses what llama.cpp's load refuses; the rest is checked on each use, as it does.
  explicit Charsmap(const std::vector<char>& blob) {
    if (blob.empty()) return;
    if (blob.size() < 4) throw Error(charsmap_key, "precompiled_charsmap too small for xcda_blob_size header!");
    uint32_t xcda_size;
    std::memcpy(&xcda_size, blob.data(), 4);  // little-endian, as GGUF is (and this build)
    if (size_t{xcda_size} + 4 >= blob.size()) throw Error(charsmap_key, "Index out of array bounds in precompiled charsmap!");
    xcda.resize(xcda_size / 4);
    if (!xcda.empty()) std::memcpy(xcda.data(), blob.data() + 4, xcda.size() * 4);
    replacements.assign(blob.data() + 4 + xcda_size, blob.size() - 4 - xcda_size);
  }

  // A unit packs BASE in bits 10-30 (shifted by 8 more when bit 9 is set), LEAF in bit 8,
  // the label in bits 0-7; a value unit has bit 31 set (so no label matches it).
  uint32_t unit(size_t i) const {
    if (i >= xcda.size()) throw Error(charsmap_key, "Index out of array bounds in XCDA array!");
    return xcda[i];
  }
  uint32_t base(size_t i) const {
    const uint32_t u = unit(i);
    return (u >> 10) << ((u & (1u << 9)) >> 6);
  }
  uint32_t label(size_t i) const { return unit(i) & ((1u << 31) | 0xff); }
  bool leaf(size_t i) const { return (unit(i) >> 8) & 1; }
  uint32_t value(size_t i) const { return unit(i) & ((1u << 31) - 1); }

  // The longest key that input[at..] starts with: its replacement and length (0: none).
  // SentencePiece's keys are a few code points; a walk is cut at 256 bytes so that a
  // hostile array whose nodes loop cannot make each position walk the whole text.
  size_t longest(std::string_view input, size_t at, std::string_view& replacement) const {
    if (xcda.empty()) return 0;
    static constexpr size_t max_key = 256;
    size_t length = 0, offset = 0;
    uint32_t node = base(0);
    for (size_t i = at; i < input.size() && i - at < max_key; ++i) {
      const auto c = static_cast<uint8_t>(input[i]);
      if (c == 0) break;
      node ^= c;
      if (label(node) != c) break;
      const bool is_leaf = leaf(node);
      node ^= base(node);
      if (is_leaf) length = i - at + 1, offset = value(node);
    }
    if (length == 0) return 0;
    if (offset >= replacements.size()) throw Error(charsmap_key, "Index out of array bounds in precompiled charsmap!");
    const size_t end = replacements.find('\0', offset);
    if (end == std::string::npos) throw Error(charsmap_key, "Unterminated string in precompiled charsmap!");
    replacement = std::string_view(replacements).substr(offset, end - offset);
    return length;
  }
};

// The length of the valid UTF-8 sequence at `at` as llama.cpp's unicode_cpt_from_utf8
// takes it (by the lead byte, continuation bytes checked; overlong forms pass), 0 if none.
size_t utf8_sequence(std::string_view s, size_t at) {
  const auto c = static_cast<uint8_t>(s[at]);
  size_t n = c < 0x80 ? 1 : c < 0xc0 ? 0 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : c < 0xf8 ? 4 : 0;
  if (n == 0 || at + n > s.size()) return 0;
  for (size_t i = 1; i < n; ++i)
    if ((static_cast<uint8_t>(s[at + i]) & 0xc0) != 0x80) return 0;
  return n;
}

class Ugm final : public Algorithm {
 public:
  explicit Ugm(const Vocab::Impl& v) : v_(v), charsmap_(v.precompiled_charsmap), tokens_(keys(v, attr_normal | attr_user_defined | attr_unused)),
                                        user_defined_(keys(v, attr_user_defined)) {
    float min_score = FLT_MAX;
    for (const TokenData& t : v.id_to_token)
      if (t.attr & attr_normal) min_score = std::min(min_score, t.score);
    unknown_score_ = min_score - 10.0f;  // in float, as llama.cpp computes it
  }

  void tokenize(const std::string& text, std::vector<int32_t>& out, const Tick&) const override {
    const std::string s = normalize(text);
    const size_t n = s.size();
    if (n == 0) return;
    const int32_t unk = v_.special_unk_id;
    // best[i]: the best segmentation of s[0..i): its last token, where that starts, its score.
    struct Best {
      int32_t id;
      size_t from;
      double score;
    };
    std::vector<Best> best(n + 1, {unk, 0, -DBL_MAX});
    best[0] = {unk, 0, 0.0};
    // every token that s[at..] starts with, as llama.cpp's trie walk finds them: those of up
    // to KeyTrie::kWalk bytes by a walk, the longer ones from one pass over the text
    const std::vector<KeyTrie::Long> longs = tokens_.long_keys(s);
    size_t next_long = 0;
    for (size_t at = 0; at < n;) {
      const size_t cpt_len = std::min(utf8_len(s[at]), n - at);
      const double here = best[at].score;
      bool whole_cpt = false;  // a token covers exactly this code point
      auto token = [&](size_t length, int32_t id) {
        const size_t end = at + length;
        if (length == cpt_len) whole_cpt = true;
        // User-defined tokens score 0, above every log probability; sums in double as HF's.
        const double score = here + (v_.id_to_token[static_cast<size_t>(id)].attr & attr_user_defined
                                         ? 0.0
                                         : static_cast<double>(v_.id_to_token[static_cast<size_t>(id)].score));
        if (score > best[end].score) best[end] = {id, at, score};
      };
      tokens_.walk(std::string_view(s).substr(at), token);
      while (next_long < longs.size() && longs[next_long].at < at) ++next_long;
      for (size_t k = next_long; k < longs.size() && longs[k].at == at; ++k) token(longs[k].length, longs[k].value);
      if (!whole_cpt) {
        const double score = here + static_cast<double>(unknown_score_);
        if (score > best[at + cpt_len].score) best[at + cpt_len] = {unk, at, score};
      }
      at += cpt_len;
    }
    // Back from the end; a run of unknown tokens is one.
    const size_t first = out.size();
    bool prev_unknown = false;
    for (size_t i = n;;) {
      const Best& b = best[i];
      const bool unknown = b.id == unk;
      if (!(prev_unknown && unknown)) out.push_back(b.id);
      if (b.from == 0) break;
      prev_unknown = unknown;
      i = b.from;  // always before i: the loop ends
    }
    std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
  }

 private:
  // The charsmap's replacements, spaces escaped (U+2581) or kept, merged, and a space put
  // before (or after) as the flags say.
  std::string normalize(const std::string& input) const {
    std::string r;
    r.reserve(input.size() * 3);
    const std::string space = v_.escape_whitespaces ? "\xe2\x96\x81" : " ";
    const bool prepend = !v_.treat_whitespace_as_suffix && v_.add_space_prefix;
    const bool append = v_.treat_whitespace_as_suffix && v_.add_space_prefix;
    const bool merge = v_.remove_extra_whitespaces;
    bool prepended = false, in_word = false;
    for (size_t at = 0; at < input.size();) {
      std::string_view piece;
      const size_t used = normalize_prefix(input, at, piece);
      for (char c : piece) {
        if (c != ' ') {
          if (!in_word) {
            in_word = true;
            if ((prepend && !prepended) || merge) r += space, prepended = true;
          }
          r += c;
        } else {
          in_word = false;
          if (!merge) r += space;
        }
      }
      at += used;
    }
    if (append) r += space;
    return r;
  }

  // What input[at..] normalizes to, and how many bytes of it that consumes (at least 1).
  size_t normalize_prefix(std::string_view input, size_t at, std::string_view& piece) const {
    // A user-defined token's text is kept as it is. llama.cpp takes as far as its trie of
    // them walks, whether or not a whole token ends there.
    // (As far as it walks: the text moves on past what is walked, so the walks add up to it.)
    const size_t user = user_defined_.walk(input.substr(at), [](size_t, int32_t) {}, SIZE_MAX);
    if (user > 0) return piece = input.substr(at, user), user;
    if (size_t n = charsmap_.longest(input, at, piece)) return n;
    if (size_t n = utf8_sequence(input, at)) return piece = input.substr(at, n), n;
    piece = "\xef\xbf\xbd";  // an invalid byte: U+FFFD
    return 1;
  }

  static std::vector<std::pair<std::string_view, int32_t>> keys(const Vocab::Impl& v, uint32_t attrs) {
    std::vector<std::pair<std::string_view, int32_t>> r;
    for (size_t id = 0; id < v.id_to_token.size(); ++id)
      if (v.id_to_token[id].attr & attrs) r.push_back({v.id_to_token[id].text, static_cast<int32_t>(id)});
    return r;
  }

  const Vocab::Impl& v_;
  Charsmap charsmap_;
  KeyTrie tokens_, user_defined_;
  float unknown_score_;
};


class Rwkv final : public Algorithm {
 public:
  explicit Rwkv(const Vocab::Impl& v) : v_(v), tokens_(keys(v, unescaped_)) {}

  void tokenize(const std::string& text, std::vector<int32_t>& out, const Tick&) const override {
    const std::vector<KeyTrie::Long> longs = tokens_.long_keys(text);
    size_t next_long = 0;
    for (size_t at = 0; at < text.size();) {
      // The longest token text[at..] starts with (a long one is longer than any walked).
      int32_t id = 0;
      size_t end = 0;
      tokens_.walk(std::string_view(text).substr(at), [&](size_t length, int32_t value) { id = value, end = at + length; });
      while (next_long < longs.size() && longs[next_long].at < at) ++next_long;
      if (next_long < longs.size() && longs[next_long].at == at) id = longs[next_long].value, end = at + longs[next_long].length;
      if (end == 0) {
        // No token: the unknown id for one byte. (Where the byte starts tokens but is none
        // itself, llama.cpp pushes id 0 without moving, forever; real RWKV vocabularies
        // have every byte.)
        out.push_back(v_.special_unk_id);
        ++at;
        continue;
      }
      out.push_back(id);
      at = end;
    }
  }

 private:
  // The unescaped texts, token i's the i-th: a text with no escape is its token's own (a view of
  // the vocabulary's); the others are unescaped into `unescaped`.
  static std::vector<std::pair<std::string_view, int32_t>> keys(const Vocab::Impl& v, std::deque<std::string>& unescaped) {
    std::vector<std::pair<std::string_view, int32_t>> r;
    r.reserve(v.id_to_token.size());
    for (size_t id = 0; id < v.id_to_token.size(); ++id) {
      const std::string_view text = v.id_to_token[id].text;
      r.push_back({text.find('\\') == std::string_view::npos ? text : unescaped.emplace_back(unescape_rwkv(text)), static_cast<int32_t>(id)});
    }
    return r;
  }

  const Vocab::Impl& v_;
  std::deque<std::string> unescaped_;  // before tokens_, whose keys view it
  KeyTrie tokens_;
};

}  // namespace

// llama_unescape_rwkv_token: "\t", "\n", "\r", "\xHH" and "\c" for c; any other byte as is.
// A hex digit is read as llama.cpp reads it (c >= 'a' ? c - 'a' + 10 : c - '0', in a byte),
// so a malformed escape gives the same byte it does.
std::string unescape_rwkv(std::string_view escaped) {
  std::string r;
  bool escaping = false;
  int hex_left = 0;
  uint8_t acc = 0;
  for (char ch : escaped) {
    const auto c = static_cast<uint8_t>(ch);
    if (hex_left) {
      // (char is signed here, as in llama.cpp's build: a byte past 0x7f counts as below 'a')
      const auto digit = static_cast<uint8_t>(ch >= 'a' ? ch - 'a' + 10 : ch - '0');
      acc = static_cast<uint8_t>((acc << 4) + digit);
      if (--hex_left == 0) r += static_cast<char>(acc), acc = 0;
    } else if (escaping) {
      escaping = false;
      if (c == 't') r += '\t';
      else if (c == 'n') r += '\n';
      else if (c == 'r') r += '\r';
      else if (c == 'x') hex_left = 2;
      else r += ch;
    } else if (c == '\\') {
      escaping = true;
    } else {
      r += ch;
    }
  }
  return r;
}

std::unique_ptr<Algorithm> make_ugm(const Vocab::Impl& v) { return std::make_unique<Ugm>(v); }
std::unique_ptr<Algorithm> make_rwkv(const Vocab::Impl& v) { return std::make_unique<Rwkv>(v); }

}  // namespace ggufkit::tokenizer
