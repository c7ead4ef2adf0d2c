// The vocabulary as llama.cpp's llama_vocab::impl::load makes it (src/llama-vocab.cpp), step
// by step in its order, and llama_tokenize's dispatch: the special-token partition
// (tokenizer_st_partition), then each vocabulary type's handling of the fragments. Pieces and
// detokenize as llama_token_to_piece and llama_detokenize.
#include <algorithm>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <system_error>

#include "impl.h"

namespace ggufkit::tokenizer {

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::none: return "none";
    case Kind::spm: return "spm";
    case Kind::bpe: return "bpe";
    case Kind::wpm: return "wpm";
    case Kind::ugm: return "ugm";
    case Kind::rwkv: return "rwkv";
    case Kind::plamo2: return "plamo2";
  }
  return "?";
}

Vocab::Vocab(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Vocab::Vocab(Vocab&&) noexcept = default;
Vocab& Vocab::operator=(Vocab&&) noexcept = default;
Vocab::~Vocab() = default;

Kind Vocab::kind() const { return impl_->type; }
std::string_view Vocab::model() const { return impl_->tokenizer_model; }
std::string_view Vocab::pre() const { return impl_->tokenizer_pre; }
std::string_view Vocab::pre_type() const { return impl_->pre_type_name; }
size_t Vocab::size() const { return std::max<size_t>(impl_->id_to_token.size(), impl_->n_dummy_tokens); }
namespace {
const TokenData* token_at(const Vocab::Impl& v, int32_t id) {
  return id >= 0 && static_cast<size_t>(id) < v.id_to_token.size() ? &v.id_to_token[static_cast<size_t>(id)] : nullptr;
}
}  // namespace
// A dummy token of a vocabulary without tokens (type none) has no text, score or attribute.
std::string_view Vocab::text(int32_t id) const {
  if (impl_->type == Kind::none && id >= 0 && static_cast<size_t>(id) < impl_->n_dummy_tokens) return {};
  return impl_->id_to_token.at(static_cast<size_t>(id)).text;
}
float Vocab::score(int32_t id) const {
  if (impl_->type == Kind::none && id >= 0 && static_cast<size_t>(id) < impl_->n_dummy_tokens) return 0.0f;
  return impl_->id_to_token.at(static_cast<size_t>(id)).score;
}
uint32_t Vocab::attr(int32_t id) const {
  if (impl_->type == Kind::none && id >= 0 && static_cast<size_t>(id) < impl_->n_dummy_tokens) return attr_undefined;
  return impl_->token_get_attr(id);
}
int32_t Vocab::find(std::string_view text) const { return impl_->text_to_token(text); }
const Loaded& Vocab::loaded() const { return impl_->loaded; }

const Merges::Ranks& Merges::ranks() const {
  std::call_once(once_, [&] {
    if (end_.empty() && count_ > 0) copy(source_);
    size_t n = 16;
    while (n < end_.size() + end_.size() / 3) n *= 2;
    big_vector<Ranks::Slot>& slots = ranks_.slots;
    slots.assign(n, {});
    // As TokenIndex::build: each merge's hash made kAhead merges early, its slot fetched meanwhile.
    constexpr size_t kAhead = 16;
    uint64_t ahead[kAhead];
    auto hash_of = [&](size_t rank) {
      const auto both = sides(rank);
      const uint64_t h = Ranks::hash(both.first, both.second);
      __builtin_prefetch(&slots[h & (n - 1)], 1);
      return h;
    };
    const size_t count = end_.size();
    for (size_t rank = 0; rank < std::min(count, kAhead); ++rank) ahead[rank] = hash_of(rank);
    for (size_t rank = 0; rank < count; ++rank) {
      const auto both = sides(rank);
      const uint64_t h = ahead[rank % kAhead];
      if (rank + kAhead < count) ahead[rank % kAhead] = hash_of(rank + kAhead);
      const auto tag = static_cast<uint32_t>(h >> 32);
      size_t i = h & (n - 1);
      // the first of a repeated merge keeps its rank, as llama.cpp's emplace does
      while (slots[i].rank >= 0 && !(slots[i].tag == tag && sides(static_cast<size_t>(slots[i].rank)) == both)) i = (i + 1) & (n - 1);
      if (slots[i].rank < 0) slots[i] = {tag, static_cast<int>(rank)};
    }
    ranked_.store(true, std::memory_order_release);
  });
  return ranks_;
}

const Algorithm& Vocab::Impl::algorithm() const {
  std::call_once(algorithm_once, [&] {
    switch (type) {
      case Kind::spm: algorithm_ = make_spm(*this); break;
      case Kind::bpe: algorithm_ = make_bpe(*this); break;
      case Kind::wpm: algorithm_ = make_wpm(*this); break;
      case Kind::ugm: algorithm_ = make_ugm(*this); break;
      case Kind::rwkv: algorithm_ = make_rwkv(*this); break;
      default: throw Error("tokenizer.ggml.model", "no tokenizer for vocabulary type " + std::string(kind_name(type)));
    }
  });
  return *algorithm_;
}

int32_t Vocab::Impl::byte_to_token(uint8_t ch) const {
  static const char* hex = "0123456789ABCDEF";
  switch (type) {
    case Kind::spm:
    case Kind::ugm: {
      const char buf[7] = {'<', '0', 'x', hex[ch >> 4], hex[ch & 15], '>', 0};
      int32_t id = text_to_token(buf);
      // llama.cpp falls back to the byte as a C string: for byte 0 that is "", never a token.
      return id >= 0 || ch == 0 ? id : text_to_token(std::string(1, static_cast<char>(ch)));
    }
    case Kind::wpm:
    case Kind::bpe: return text_to_token(byte_to_utf8(ch));
    case Kind::plamo2: {
      const char buf[7] = {'<', '0', 'x', hex[ch >> 4], hex[ch & 15], '>', 0};
      return text_to_token(buf);
    }
    default: return -1;
  }
}

namespace {

constexpr int32_t null_id = -1;
constexpr uint32_t attr_special = attr_unknown | attr_control;

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return {};
  if (static_cast<size_t>(n) < sizeof buf) return std::string(buf, static_cast<size_t>(n));
  std::string s(static_cast<size_t>(n) + 1, '\0');
  va_start(ap, fmt);
  std::vsnprintf(s.data(), s.size(), fmt, ap);
  va_end(ap);
  s.resize(static_cast<size_t>(n));
  return s;
}

const char* type_name(ValueType t) {  // gguf_type_name
  static const char* names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64"};
  auto i = static_cast<uint32_t>(t);
  return i < 13 ? names[i] : "unknown";
}

// llama.cpp reads every GGUF string through a C string: the text ends at its first NUL.
std::string_view c_str(std::string_view s) { return s.substr(0, s.find('\0')); }
std::string c_string(std::string_view s) { return std::string(c_str(s)); }

float f32_of(uint64_t bits) {
  uint32_t b = static_cast<uint32_t>(bits);
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// llama_model_loader::get_key: absent is false; present with another type is a refusal.
const KeyValue* typed(const VocabSpec& s, const std::string& key, ValueType want) {
  const KeyValue* kv = s.find(key);
  if (kv && kv->type != want)
    throw Error(key, format("key %s has wrong type %s but expected type %s", key.c_str(), type_name(kv->type), type_name(want)));
  return kv;
}
bool get_str(const VocabSpec& s, const std::string& key, std::string& out) {
  const KeyValue* kv = typed(s, key, ValueType::string);
  if (kv) out = c_string(kv->str);
  return kv != nullptr;
}
bool get_u32(const VocabSpec& s, const std::string& key, uint32_t& out) {
  const KeyValue* kv = typed(s, key, ValueType::u32);
  if (kv) out = static_cast<uint32_t>(kv->bits);
  return kv != nullptr;
}
bool get_bool(const VocabSpec& s, const std::string& key, bool& out) {
  const KeyValue* kv = typed(s, key, ValueType::boolean);
  if (kv) out = (kv->bits & 0xff) != 0;
  return kv != nullptr;
}
// An array key that must hold one of `elems` (llama.cpp: "invalid gguf type for KEY").
const KeyValue* array_of(const VocabSpec& s, const std::string& key, std::initializer_list<ValueType> elems) {
  const KeyValue* kv = s.find(key);
  if (!kv) return nullptr;
  if (kv->type != ValueType::array || std::find(elems.begin(), elems.end(), kv->elem) == elems.end())
    throw Error(key, "invalid gguf type for " + key);
  return kv;
}

}  // namespace

Merges::Merges(const Strings& merges) : count_(merges.size()) {
  if (merges.keep()) source_ = merges;  // read when first looked up
  else copy(merges);                    // the caller's bytes may not outlast the load
}

// The merges' texts, each cut at a NUL.
void Merges::copy(const Strings& merges) const {
  size_t bytes = 0;
  for (std::string_view w : merges) bytes += w.size();
  text_.reserve(bytes);
  end_.reserve(merges.size());
  for (std::string_view word : merges) {
    const std::string_view w = c_str(word);
    text_.insert(text_.end(), w.begin(), w.end());
    end_.push_back(text_.size());
  }
}

bool Merges::same_as(const Strings& merges) const {
  if (merges.size() != count_) return false;
  if (source_.keep()) {  // read in place: compared with the header's items, never with what ranks() may be making meanwhile
    if (merges.keep()) return source_.region() == merges.region();  // both in place: the bytes decide
    for (auto a = source_.begin(), b = merges.begin(); a != source_.end(); ++a, ++b)
      if (c_str(*a) != c_str(*b)) return false;
    return true;
  }
  auto item = merges.begin();  // copied when made: text_ and end_ no longer change
  for (size_t i = 0, at = 0; i < end_.size(); at = end_[i++], ++item) {
    const std::string_view word = c_str(*item);
    if (end_[i] - at != word.size() || std::string_view(text_.data() + at, word.size()) != word) return false;
  }
  return true;
}

namespace {

// The merges: those of `like` when they are the same.
void read_merges(Vocab::Impl& v, const KeyValue& merges, const Vocab::Impl* like) {
  if (like && like->merges && like->merges->same_as(merges.strings)) v.merges = like->merges;
  else v.merges = std::make_shared<Merges>(merges.strings);
}

// llama.cpp's token_to_id for the tokens' texts: that of `like` when its texts are the same.
// The tokens' texts are then views of its keys: one copy of them, kept once for an edit's
// before and after.
void index_tokens(Vocab::Impl& v, const Vocab::Impl* like) {
  const size_t n = v.id_to_token.size();
  bool same = like && like->token_to_id->size() == n;
  for (size_t i = 0; i < n && same; ++i) same = like->token_to_id->key(static_cast<int32_t>(i)) == v.id_to_token[i].text;
  if (same) {
    v.token_to_id = like->token_to_id;
  } else {
    auto index = std::make_shared<TokenIndex>();
    size_t bytes = 0;
    for (const TokenData& t : v.id_to_token) bytes += t.text.size();
    index->reserve(n, bytes);
    for (const TokenData& t : v.id_to_token) index->add(t.text);  // in id order, as llama.cpp fills it: so it iterates in the same order
    index->build();
    v.token_to_id = std::move(index);
  }
  for (size_t i = 0; i < n; ++i) v.id_to_token[i].text = v.token_to_id->key(static_cast<int32_t>(i));
}

bool is_c_space(char c) {  // isspace in the C locale
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string r;
  r.reserve(s.size());
  size_t at = 0;
  for (size_t hit; (hit = s.find(from, at)) != std::string::npos; at = hit + from.size()) r.append(s, at, hit - at).append(to);
  r.append(s, at, std::string::npos);
  s = std::move(r);
}
void escape_whitespace(std::string& s) { replace_all(s, " ", "\xe2\x96\x81"); }
void unescape_whitespace(std::string& s) { replace_all(s, "\xe2\x96\x81", " "); }

// llama_decode_text: GPT-2's byte-level text back to bytes; a code point that is none of the
// 256 is written as llama.cpp writes it ("[UNK_BYTE_0x" its hex, the whole text, "]"). Only
// the first `limit` bytes are made: n such code points make n copies of the text.
std::string decode_bpe_text(std::string_view text, size_t limit) {
  std::string out;
  auto add = [&](std::string_view s) { out.append(s.substr(0, limit - out.size())); };
  for (uint32_t cpt : cpts_from_utf8(text)) {
    if (out.size() >= limit) break;
    std::string utf8 = cpt_to_utf8(cpt);
    int byte = utf8_to_byte(utf8);
    if (byte >= 0) {
      out += static_cast<char>(byte);
    } else {
      add("[UNK_BYTE_0x");
      for (char c : utf8) add(format("%02x", static_cast<uint8_t>(c)));
      add(text);
      add("]");
    }
  }
  if (out.size() > limit) out.resize(limit);
  return out;
}


// token_to_byte: a byte token's "<0xHH>" read as strtol reads the two characters after "<0x".
char token_to_byte(const Vocab::Impl& v, int32_t id) {
  const std::string_view text = v.id_to_token[static_cast<size_t>(id)].text;
  if (v.type == Kind::wpm || v.type == Kind::rwkv || v.type == Kind::none)
    throw Error("tokenizer.ggml.token_type", format("a byte token (%d) in a vocabulary of type %s: llama.cpp aborts", id,
                                                    std::string(kind_name(v.type)).c_str()));
  if (text.size() < 3)
    throw Error("tokenizer.ggml.token_type",
                format("byte token %d '%s' is too short: llama.cpp's substr throws", id, std::string(text).c_str()));
  std::string hex(text.substr(3, 2));
  return static_cast<char>(std::strtol(hex.c_str(), nullptr, 16));
}

// token_to_piece without the cache (lstrip 0): what the cache is built from (its first
// `limit` bytes).
std::string piece_of(const Vocab::Impl& v, int32_t id, bool special, size_t limit = SIZE_MAX) {
  const TokenData* t = token_at(v, id);
  if (!t) return {};
  const uint32_t attr = t->attr;
  if (!special && (attr & attr_special)) return {};
  const std::string_view text = t->text;
  switch (v.type) {
    case Kind::wpm:
    case Kind::spm:
    case Kind::ugm:
      if (attr & (attr_special | attr_user_defined)) return std::string(text);
      if (attr & attr_normal) {
        std::string r(text);
        unescape_whitespace(r);
        return r;
      }
      if (attr & attr_byte) return std::string(1, token_to_byte(v, id));
      return {};
    case Kind::bpe:
      if (attr & (attr_special | attr_user_defined)) return std::string(text);
      if (attr & attr_normal) {
        if (v.escape_whitespaces) {  // SPM-style BPE (gemma4): "▁" for spaces
          std::string r(text);
          unescape_whitespace(r);
          return r;
        }
        return decode_bpe_text(text, limit);
      }
      if (attr & attr_byte) return std::string(1, token_to_byte(v, id));
      return {};
    case Kind::rwkv: return unescape_rwkv(text);
    case Kind::plamo2:
      if ((attr & attr_byte) && text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text.back() == '>' &&
          std::isxdigit(static_cast<unsigned char>(text[3])) && std::isxdigit(static_cast<unsigned char>(text[4])))
        return std::string(1, static_cast<char>(std::strtol(std::string(text.substr(3, 2)).c_str(), nullptr, 16)));
      return std::string(text);
    case Kind::none: return {};
  }
  return {};
}

}  // namespace

// The special tokens' texts by a rolling hash: each one's rank in cache_special_tokens, and
// the ranks of each length (they are contiguous: longest first).
const SpecialIndex& Vocab::Impl::special_index() const {
  std::call_once(special_index_once, [&] {
    SpecialIndex& x = special_index_;
    size_t n = 16;
    while (n < 2 * cache_special_tokens.size()) n *= 2;
    x.slots.assign(n, {0, -1});
    for (size_t rank = 0; rank < cache_special_tokens.size(); ++rank) {
      const std::string_view t = id_to_token[static_cast<size_t>(cache_special_tokens[rank])].text;
      if (x.lengths.empty() || x.lengths.back().first != t.size()) x.lengths.push_back({t.size(), rank});
      const uint64_t h = SpecialIndex::roll(0, t);
      size_t i = h & (n - 1);
      while (x.slots[i].rank >= 0) i = (i + 1) & (n - 1);
      x.slots[i] = {static_cast<uint32_t>(h >> 32), static_cast<int32_t>(rank)};
    }
    x.lengths.push_back({0, cache_special_tokens.size()});  // the end of the last length's ranks
  });
  return special_index_;
}

// tokenizer_st_partition: each special token in turn (longest text first) is cut out of every
// raw fragment left, leftmost first, control and unknown ones only when parsing specials;
// lstrip/rstrip attributes eat the C-locale whitespace next to the token. llama.cpp searches
// the text once for each special token (300,000 control tokens: 300,000 searches); here the
// tokens of one length are found together, by a rolling hash of each window of the text still
// raw, then taken in llama.cpp's order (by rank, then leftmost): a token is cut out where its
// window is still all raw, which is where llama.cpp's search of that fragment would find it.
// (Fragments are the maximal runs of raw bytes: they are only ever split where a token or
// the whitespace it strips is cut out.) A text costs its length times the distinct lengths
// of the special tokens no longer than it.
std::vector<Segment> partition(const Vocab::Impl& v, std::string_view text, bool parse_special) {
  const size_t n = text.size();
  if (v.cache_special_tokens.empty() || n == 0) return {{-1, 0, n}};
  const SpecialIndex& x = v.special_index();
  std::vector<uint8_t> raw(n, 1);
  std::vector<int32_t> token_at(n, -1);  // where a token was cut out: its id
  // How many bytes were cut out before each position (a Fenwick tree over `raw`).
  std::vector<uint32_t> cut(n + 1, 0);
  auto cut_out = [&](size_t i) {
    raw[i] = 0;
    for (size_t k = i + 1; k <= n; k += k & (~k + 1)) ++cut[k];
  };
  auto cut_before = [&](size_t i) {
    uint32_t c = 0;
    for (size_t k = i; k > 0; k -= k & (~k + 1)) c += cut[k];
    return c;
  };
  struct Found {
    size_t rank, at;
  };
  std::vector<Found> found;
  for (size_t l = 0; l + 1 < x.lengths.size(); ++l) {
    const size_t len = x.lengths[l].first, from = x.lengths[l].second, to = x.lengths[l + 1].second;
    if (len > n) continue;
    const uint64_t top = SpecialIndex::power(len);
    found.clear();
    // every window of `len` bytes inside a run of raw bytes: a token of this length there
    for (size_t run = 0; run < n;) {
      if (!raw[run]) {
        ++run;
        continue;
      }
      size_t end = run;
      while (end < n && raw[end]) ++end;
      uint64_t h = 0;
      for (size_t i = run; i < end; ++i) {
        h = SpecialIndex::roll(h, text.substr(i, 1));
        if (i >= run + len) h = SpecialIndex::unroll(h, static_cast<uint8_t>(text[i - len]), top);
        if (i + 1 < run + len) continue;
        const size_t at = i + 1 - len;
        const size_t mask = x.slots.size() - 1;
        for (size_t k = h & mask; x.slots[k].rank >= 0; k = (k + 1) & mask) {
          const SpecialIndex::Slot& slot = x.slots[k];
          const auto rank = static_cast<size_t>(slot.rank);
          if (slot.tag != static_cast<uint32_t>(h >> 32) || rank < from || rank >= to) continue;
          const TokenData& data = v.id_to_token[static_cast<size_t>(v.cache_special_tokens[rank])];
          if (text.compare(at, len, data.text) != 0) continue;
          if (parse_special || !(data.attr & attr_special)) found.push_back({rank, at});
          break;  // one token has this text
        }
      }
      run = end;
    }
    std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.rank != b.rank ? a.rank < b.rank : a.at < b.at; });
    for (const Found& f : found) {
      if (cut_before(f.at + len) != cut_before(f.at)) continue;  // part of it is gone
      const int32_t id = v.cache_special_tokens[f.rank];
      const uint32_t attr = v.id_to_token[static_cast<size_t>(id)].attr;
      token_at[f.at] = id;
      for (size_t i = f.at; i < f.at + len; ++i) cut_out(i);
      if (attr & attr_lstrip)
        for (size_t i = f.at; i > 0 && raw[i - 1] && is_c_space(text[i - 1]); --i) cut_out(i - 1);
      if (attr & attr_rstrip)
        for (size_t i = f.at + len; i < n && raw[i] && is_c_space(text[i]); ++i) cut_out(i);
    }
  }
  std::vector<Segment> frags;
  for (size_t i = 0; i < n;) {
    if (token_at[i] >= 0) {
      frags.push_back({token_at[i], 0, 0});
      i += v.id_to_token[static_cast<size_t>(token_at[i])].text.size();
    } else if (raw[i]) {
      size_t end = i;
      while (end < n && raw[end]) ++end;
      frags.push_back({-1, i, end - i});
      i = end;
    } else {
      ++i;
    }
  }
  return frags;
}

namespace {

// The dispatch of llama_vocab::impl::tokenize over the fragments, for each vocabulary type.
std::vector<int32_t> tokenize_impl(const Vocab::Impl& v, std::string_view raw, bool add_special, bool parse_special,
                                   const Vocab::Progress& progress) {
  std::vector<int32_t> out;
  std::vector<Segment> frags;
  if (!raw.empty()) frags = partition(v, raw, parse_special);
  auto need = [](int32_t id, const char* what) {
    if (id == null_id)
      throw Error(std::string("tokenizer.ggml.") + what + "_token_id",
                  std::string("the vocabulary adds a ") + what + " token but has none (llama.cpp aborts)");
    return id;
  };
  auto fragment_text = [&](const Segment& f) { return std::string(raw.substr(f.off, f.len)); };
  // A raw fragment's ids; `progress` is told the bytes of `raw` done, within the fragment
  // as far as the algorithm tells (a fraction of its text, which escaping may lengthen).
  auto run = [&](const std::string& text, const Segment& f) {
    Tick tick;
    if (progress)
      tick = [&](double done) { progress(f.off + static_cast<uint64_t>(done * static_cast<double>(f.len)), raw.size()); };
    v.algorithm().tokenize(text, out, tick);
    if (progress) progress(f.off + f.len, raw.size());
  };
  switch (v.type) {
    case Kind::spm: {
      // Each raw fragment right after a special token (or at the start) gets the space prefix.
      bool prev_special = true;
      if (add_special && v.add_bos) out.push_back(need(v.special_bos_id, "bos"));
      for (const Segment& f : frags) {
        if (f.token != null_id) {
          out.push_back(f.token);
          prev_special = true;
          continue;
        }
        std::string text = v.add_space_prefix && prev_special ? " " : "";
        text += fragment_text(f);
        escape_whitespace(text);
        run(text, f);
        prev_special = false;
      }
      if (add_special && v.add_eos) out.push_back(need(v.special_eos_id, "eos"));
      break;
    }
    case Kind::bpe: {
      if (add_special && v.add_bos) out.push_back(need(v.special_bos_id, "bos"));
      for (const Segment& f : frags) {
        if (f.token != null_id) {
          out.push_back(f.token);
          continue;
        }
        std::string text = fragment_text(f);
        if (v.escape_whitespaces) escape_whitespace(text);
        run(text, f);
      }
      if (add_special && v.add_eos) out.push_back(need(v.special_eos_id, "eos"));
      break;
    }
    case Kind::wpm: {
      // BERT: [CLS] ... [SEP] whenever specials are added, whatever add_bos says.
      if (add_special) out.push_back(need(v.special_bos_id, "bos"));
      for (const Segment& f : frags) {
        if (f.token != null_id) out.push_back(f.token);
        else run(fragment_text(f), f);
      }
      if (add_special) out.push_back(need(v.special_sep_id, "seperator"));
      break;
    }
    case Kind::ugm: {
      if (add_special && v.add_bos) out.push_back(need(v.special_bos_id, "bos"));
      for (const Segment& f : frags) {
        if (f.token != null_id) out.push_back(f.token);
        else run(fragment_text(f), f);
      }
      if (add_special && v.add_eos) out.push_back(need(v.special_eos_id, "eos"));
      break;
    }
    case Kind::rwkv:
    case Kind::plamo2: {
      for (const Segment& f : frags) {
        if (f.token != null_id) out.push_back(f.token);
        else run(fragment_text(f), f);
      }
      break;
    }
    case Kind::none: throw Error("tokenizer.ggml.model", "a vocabulary of type none has no tokenizer (llama.cpp aborts)");
  }
  if (progress && (frags.empty() || frags.back().token != null_id)) progress(raw.size(), raw.size());  // else told by `run`
  return out;
}

}  // namespace

namespace {

// Vocab::load's steps, in llama.cpp's order (llama_vocab::impl::load). Each adds its warnings
// to v.loaded.warnings as llama.cpp logs them.
void warn(Vocab::Impl& v, std::string w) { v.loaded.warnings.push_back(std::move(w)); }

// The vocabulary type and its defaults (BPE's merges, UGM's charsmap are read here, as llama.cpp
// does). False for a vocabulary with no tokens ("no_vocab"), which is then complete.
bool read_type(Vocab::Impl& v, const VocabSpec& spec, const Vocab::Impl* base) {
  Loaded& L = v.loaded;
  if (!get_str(spec, "tokenizer.ggml.model", v.tokenizer_model))
    throw Error("tokenizer.ggml.model", "key not found in model: tokenizer.ggml.model");
  get_str(spec, "tokenizer.ggml.pre", v.tokenizer_pre);
  get_u32(spec, "tokenizer.ggml.token_type_count", v.n_token_types);
  std::string arch;
  get_str(spec, "general.architecture", arch);
  const std::string& tm = v.tokenizer_model;

  if (tm == "no_vocab" || tm == "none") {
    v.type = Kind::none;
    v.special_bos_id = v.special_eos_id = v.special_unk_id = v.special_sep_id = v.special_pad_id = v.special_mask_id =
        v.linefeed_id = null_id;
    uint32_t n = 0;
    if (get_u32(spec, arch + ".vocab_size", n)) {
      warn(v, format("adding %u dummy tokens", n));
      v.n_dummy_tokens = n;  // kept as a count: llama.cpp's dummies have no text, score or attribute
    }
    L.bos = L.eos = L.unk = L.sep = L.pad = L.mask = L.nl = null_id;
    return false;
  }

  if (tm == "llama") {
    v.type = Kind::spm;
    v.special_bos_id = 1, v.special_eos_id = 2, v.special_unk_id = 0;
    v.special_sep_id = v.special_pad_id = v.special_mask_id = null_id;
  } else if (tm == "bert") {
    v.type = Kind::wpm;
    v.special_bos_id = 101, v.special_eos_id = null_id, v.special_unk_id = 100, v.special_sep_id = 102;
    v.special_pad_id = 0, v.special_mask_id = 103;
    v.add_sep = true;
  } else if (tm == "gpt2" || tm == "hybriddna" || tm == "whitespace" || tm == "gemma4") {
    v.type = Kind::bpe;
    const KeyValue* merges = spec.find("tokenizer.ggml.merges");
    // Kimi-K2 tokenizes without merges; every other BPE vocabulary needs them.
    if (!merges && !(tm != "gemma4" && v.tokenizer_pre == "kimi-k2"))
      throw Error("tokenizer.ggml.merges", "cannot find tokenizer merges in model file");
    if (merges) read_merges(v, *array_of(spec, "tokenizer.ggml.merges", {ValueType::string}), base);
    if (tm == "gemma4") {
      v.special_bos_id = v.special_eos_id = null_id;
      v.tokenizer_pre = "gemma4";
    } else {
      v.special_bos_id = 11, v.special_eos_id = 11;
    }
    v.special_unk_id = v.special_sep_id = v.special_pad_id = v.special_mask_id = null_id;
  } else if (tm == "t5") {
    v.type = Kind::ugm;
    v.special_bos_id = null_id, v.special_eos_id = 1, v.special_unk_id = 2, v.special_sep_id = null_id;
    v.special_pad_id = 0, v.special_mask_id = null_id;
    if (const KeyValue* pc = array_of(spec, "tokenizer.ggml.precompiled_charsmap", {ValueType::i8, ValueType::u8})) {
      v.precompiled_charsmap.reserve(pc->numbers.size());
      for (size_t i = 0; i < pc->numbers.size(); ++i) v.precompiled_charsmap.push_back(static_cast<char>(pc->numbers[i]));
      if (v.precompiled_charsmap.size() < 4)
        throw Error("tokenizer.ggml.precompiled_charsmap", "precompiled_charsmap too small for xcda_blob_size header!");
      uint32_t blob = 0;
      std::memcpy(&blob, v.precompiled_charsmap.data(), 4);  // little-endian, as GGUF is
      if (uint64_t{blob} + 4 >= v.precompiled_charsmap.size())
        throw Error("tokenizer.ggml.precompiled_charsmap", "Index out of array bounds in precompiled charsmap!");
    }
  } else if (tm == "rwkv") {
    v.type = Kind::rwkv;
    v.special_bos_id = v.special_eos_id = v.special_unk_id = v.special_sep_id = v.special_pad_id = null_id;
  } else if (tm == "plamo2") {
    v.type = Kind::plamo2;
    v.special_bos_id = 1, v.special_eos_id = 2, v.special_unk_id = 0, v.special_sep_id = null_id;
    v.special_pad_id = 3, v.special_mask_id = null_id;
  } else {
    throw Error("tokenizer.ggml.model", format("unknown tokenizer: '%s'", tm.c_str()));
  }

  return true;
}

// The pre-tokenizer (BPE only, by llama.cpp's table of names) and each type's defaults.
void read_pre_tokenizer(Vocab::Impl& v, const VocabSpec& spec) {
  Loaded& L = v.loaded;
  if (v.type == Kind::bpe) {
    // Only BPE vocabularies have pre-tokenizers: their defaults, then llama.cpp's table.
    v.add_space_prefix = false, v.escape_whitespaces = false, v.clean_spaces = true;
    apply_pre_tokenizer(v);
    if (v.tokenizer_pre.empty() &&
        std::none_of(L.warnings.begin(), L.warnings.end(), [](const std::string& w) { return w.find("missing pre-tokenizer") != std::string::npos; }))
      warn(v, "missing pre-tokenizer type, using: 'default'");
  } else {
    v.pre_type = PreType::default_, v.pre_type_name = "default";
    switch (v.type) {
      case Kind::spm: v.add_space_prefix = true, v.clean_spaces = false, v.add_bos = true, v.add_eos = false; break;
      case Kind::wpm: v.add_space_prefix = false, v.clean_spaces = true, v.add_bos = true, v.add_eos = false, v.add_sep = true; break;
      case Kind::ugm: v.add_bos = false, v.add_eos = true; break;
      case Kind::rwkv: v.add_space_prefix = false, v.clean_spaces = false, v.add_bos = false, v.add_eos = false; break;
      default: break;
    }
  }
  get_bool(spec, "tokenizer.ggml.add_space_prefix", v.add_space_prefix);
  get_bool(spec, "tokenizer.ggml.remove_extra_whitespaces", v.remove_extra_whitespaces);
}

// The tokens, their scores and types, indexed by text.
void read_tokens(Vocab::Impl& v, const VocabSpec& spec, const Vocab::Impl* base) {
  const KeyValue* tokens = spec.find("tokenizer.ggml.tokens");
  if (!tokens) throw Error("tokenizer.ggml.tokens", "cannot find tokenizer vocab in model file");
  array_of(spec, "tokenizer.ggml.tokens", {ValueType::string});
  // llama.cpp's ids are int32_t: a count past that is refused, where llama.cpp would wrap.
  if (tokens->strings.size() > static_cast<size_t>(INT32_MAX))
    throw Error("tokenizer.ggml.tokens", format("%zu tokens: more than a token id (int32_t) can name", tokens->strings.size()));
  const size_t n_tokens = tokens->strings.size();
  const KeyValue* scores = nullptr;
  if (const KeyValue* s = spec.find("tokenizer.ggml.scores")) {
    if (s->type != ValueType::array || (s->elem != ValueType::i32 && s->elem != ValueType::f32))
      throw Error("tokenizer.ggml.scores", "invalid gguf type for tokenizer.ggml.scores");
    if (s->numbers.size() < n_tokens)
      throw Error("tokenizer.ggml.scores", format("Index out of array bounds for scores (%zu < %zu)", s->numbers.size(), n_tokens));
    scores = s;
  }
  const KeyValue* types = array_of(spec, "tokenizer.ggml.token_type", {ValueType::i32});
  if (types && types->numbers.size() < n_tokens)
    throw Error("tokenizer.ggml.token_type",
                format("Index out of array bounds for toktypes (%zu < %zu)", types->numbers.size(), n_tokens));

  v.id_to_token.resize(n_tokens);
  std::deque<std::string> named;  // the empty tokens' names ([EMPTY_i]), until indexed
  auto item = tokens->strings.begin();
  for (size_t i = 0; i < n_tokens; ++i, ++item) {
    std::string_view word = c_str(*item);
    if (word.empty()) {
      warn(v, format("empty token at index %zu", i));
      word = named.emplace_back("[EMPTY_" + std::to_string(i) + "]");
    }
    v.max_token_len = std::max(v.max_token_len, static_cast<int>(std::min<size_t>(word.size(), INT32_MAX)));
    TokenData& t = v.id_to_token[i];
    t.text = word;  // a view of the file's text (or of `named`) until indexed
    if (scores)
      t.score = scores->elem == ValueType::f32 ? f32_of(scores->numbers[i])
                                               : static_cast<float>(static_cast<int32_t>(scores->numbers[i]));
    t.attr = attr_normal;
    if (types) {
      switch (static_cast<int32_t>(types->numbers[i])) {
        case 2: t.attr = attr_unknown; break;
        case 5: t.attr = attr_unused; break;
        case 1: t.attr = attr_normal; break;
        case 3: t.attr = attr_control; break;
        case 4: t.attr = attr_user_defined; break;
        case 6: t.attr = attr_byte; break;
        default: t.attr = attr_undefined; break;
      }
    }
  }
  index_tokens(v, base);
  // llama.cpp asserts one id per text: a repeated text aborts it.
  if (v.token_to_id->distinct() != v.id_to_token.size())
    throw Error("tokenizer.ggml.tokens", format("%zu tokens but %zu distinct texts: llama.cpp's load asserts they are equal",
                                                v.id_to_token.size(), v.token_to_id->distinct()));

  // hybriddna: the k-mers after <oov> carry a marker that keeps their texts distinct; their
  // pieces are the bare sequence.
  if (v.tokenizer_model == "hybriddna") {
    static const std::string marker = "\xee\x80\x80";
    if (const int32_t oov = v.token_to_id->find("<oov>"); oov >= 0)
      for (size_t i = static_cast<size_t>(oov) + 1; i < v.id_to_token.size(); ++i) {
        std::string_view& text = v.id_to_token[i].text;
        if (text.size() > marker.size() && text.ends_with(marker)) text.remove_suffix(marker.size());
      }
  }
}

// The newline token (before the special ids are read, and with no special tokens cached yet).
void find_linefeed(Vocab::Impl& v) {
  if (v.type == Kind::spm) {
    v.linefeed_id = v.byte_to_token('\n');
    if (v.linefeed_id == null_id) {
      warn(v, "SPM vocabulary, but newline token not found: _Map_base::at! Using special_pad_id instead.");
      v.linefeed_id = v.special_pad_id;
    }
  } else if (v.type == Kind::wpm) {
    v.linefeed_id = v.special_pad_id;
  } else if (v.type == Kind::plamo2) {
    // Not built here: its tokenizer (and so its newline token) is left out.
    warn(v, "plamo2 tokenizer is not implemented by ggufkit: newline token unknown");
    v.linefeed_id = null_id;
  } else {
    std::vector<int32_t> ids = tokenize_impl(v, "\n", false, false, {});
    if (ids.empty()) {
      if (v.type == Kind::rwkv) throw Error("tokenizer.ggml.tokens", "model vocab missing newline token (llama.cpp asserts)");
      warn(v, "model vocab missing newline token, using special_pad_id instead");
      v.linefeed_id = v.special_pad_id;
    } else {
      v.linefeed_id = ids[0];
    }
  }
}

// The special ids from their keys; a default out of range is disabled, a key out of range
// ignored. Then the add-BOS/EOS/SEP flags and the BERT normalizer.
void read_special_ids(Vocab::Impl& v, const VocabSpec& spec) {
  const size_t n_tokens = v.id_to_token.size();
  struct Special {
    const char* key;
    int32_t& id;
  };
  const Special specials[] = {
      {"tokenizer.ggml.bos_token_id", v.special_bos_id},         {"tokenizer.ggml.eos_token_id", v.special_eos_id},
      {"tokenizer.ggml.eot_token_id", v.special_eot_id},         {"tokenizer.ggml.eom_token_id", v.special_eom_id},
      {"tokenizer.ggml.unknown_token_id", v.special_unk_id},     {"tokenizer.ggml.seperator_token_id", v.special_sep_id},
      {"tokenizer.ggml.padding_token_id", v.special_pad_id},     {"tokenizer.ggml.mask_token_id", v.special_mask_id},
      {"tokenizer.ggml.fim_pre_token_id", v.special_fim_pre_id}, {"tokenizer.ggml.fim_suf_token_id", v.special_fim_suf_id},
      {"tokenizer.ggml.fim_mid_token_id", v.special_fim_mid_id}, {"tokenizer.ggml.fim_pad_token_id", v.special_fim_pad_id},
      {"tokenizer.ggml.fim_rep_token_id", v.special_fim_rep_id}, {"tokenizer.ggml.fim_sep_token_id", v.special_fim_sep_id},
      // deprecated names of the first three FIM ids, read after them
      {"tokenizer.ggml.prefix_token_id", v.special_fim_pre_id},  {"tokenizer.ggml.suffix_token_id", v.special_fim_suf_id},
      {"tokenizer.ggml.middle_token_id", v.special_fim_mid_id},
  };
  for (const Special& s : specials) {
    if (s.id >= 0 && static_cast<size_t>(s.id) >= n_tokens) {
      warn(v, format("default special token '%s' = %d out of vocab range, disabling", s.key, s.id));
      s.id = null_id;
    }
    uint32_t new_id = 0;
    if (!get_u32(spec, s.key, new_id)) continue;
    if (new_id >= n_tokens) warn(v, format("bad special token: '%s' = %u, using default id %d", s.key, new_id, s.id));
    else s.id = static_cast<int32_t>(new_id);
  }

  get_bool(spec, "tokenizer.ggml.add_bos_token", v.add_bos);
  get_bool(spec, "tokenizer.ggml.add_eos_token", v.add_eos);
  get_bool(spec, "tokenizer.ggml.add_sep_token", v.add_sep);
  if (v.pre_type == PreType::gemma4 && !v.add_bos) {
    v.add_bos = true;  // llama.cpp's workaround for Gemma 4
    warn(v, "override 'tokenizer.ggml.add_bos_token' to 'true' for Gemma4");
  }

  get_bool(spec, "tokenizer.ggml.normalizer.lowercase", v.bert_lowercase);
  v.bert_strip_accents = v.bert_lowercase;
  get_bool(spec, "tokenizer.ggml.normalizer.strip_accents", v.bert_strip_accents);

  // suppress_tokens: only checked (the tokenizer does not use them).
  array_of(spec, "tokenizer.ggml.suppress_tokens", {ValueType::i32});
}

// Special ids still unset are found by their text, in token_to_id's iteration order (the
// first match wins), and made control if they were not. Returns the tokens named as ending a
// generation, in that order.
std::vector<int32_t> walk_named_tokens(Vocab::Impl& v) {
  Loaded& L = v.loaded;
  struct ByText {
    const char* name;
    int32_t& id;
    std::vector<std::string_view> texts;
  };
  const ByText by_text[] = {
      {"eot", v.special_eot_id,
       {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
        "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", "<end_of_utterance>"}},
      {"eom", v.special_eom_id, {"<|eom_id|>"}},
      {"fim_pre", v.special_fim_pre_id,
       {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>", "<PRE>",
        "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"}},
      {"fim_suf", v.special_fim_suf_id,
       {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81hole\xef\xbd\x9c>", "<SUF>",
        "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"}},
      {"fim_mid", v.special_fim_mid_id,
       {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>", "<MID>",
        "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"}},
      {"fim_pad", v.special_fim_pad_id, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}},
      {"fim_rep", v.special_fim_rep_id, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
      {"fim_sep", v.special_fim_sep_id, {"<|file_sep|>"}},
  };
  // Every text those lists (and the end-of-generation list below) hold starts with one of
  // these bytes, ends with '>', ']' or '[' and is at most 63 bytes long: the other tokens,
  // nearly all, are passed over at once (a SentencePiece vocabulary's pieces start with
  // "\xe2\x96\x81" too, but end otherwise).
  auto gpt_oss = [](std::string_view text) {  // gpt-oss's tokens printed always
    return text == "<|channel|>" || text == "<|message|>" || text == "<|start|>" || text == "<|constrain|>";
  };
  auto may_be_listed = [](std::string_view text) {
    if (text.size() < 3 || text.size() > 63) return false;
    const char first = text.front(), last = text.back();
    return (first == '<' || first == '[' || first == '_' || first == '\xe2') && (last == '>' || last == ']' || last == '[');
  };
  static const std::vector<std::string_view> eog_texts = {
      "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
      "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>",
      "<eos>", "<turn|>", "<|tool_response>", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", "[e~[",
  };
  // llama.cpp walks token_to_id four times, in its iteration order: the special ids found by
  // their text (the first match wins), control tokens named "unused" made unused, the
  // end-of-generation set (every token named as one), gpt-oss's always-printed tokens. Each
  // step changes only the token it is at, so one walk doing all four at each token ends the
  // same (a 150,000-token map walked once, not four times); the warnings are kept apart and
  // told in llama.cpp's order.
  std::vector<std::string> warn_by_text, warn_eog, warn_gpt_oss;
  auto make_control = [&](int32_t id, std::string_view text, std::vector<std::string>& warnings) {
    uint32_t& attr = v.id_to_token[static_cast<size_t>(id)].attr;
    if ((attr & attr_control) == 0) {
      warnings.push_back(format("control-looking token: %6d '%.*s' was not control-type; this is probably a bug in the model. its type will be overridden",
                                id, static_cast<int>(text.size()), text.data()));
      attr |= attr_control;
    }
  };
  // The walk acts on few tokens: the listed ones and control tokens named "unused". Their
  // order in the map decides the outcome only when a special id has two texts to be found by,
  // or when two of them would be warned of (the warnings keep the walk's order); then their
  // order alone is worked out (TokenIndex::in_order), otherwise they are taken by id.
  std::vector<int32_t> acted;  // by id
  bool ordered = false;
  {
    std::vector<int> candidates(std::size(by_text), 0);
    int warned = 0;
    for (size_t id = 0; id < v.id_to_token.size(); ++id) {
      const std::string_view text = v.token_to_id->key(static_cast<int32_t>(id));
      const uint32_t attr = v.id_to_token[id].attr;
      if (may_be_listed(text)) {
        acted.push_back(static_cast<int32_t>(id));
        bool named = false;
        for (size_t b = 0; b < std::size(by_text); ++b)
          if (by_text[b].id == null_id && std::find(by_text[b].texts.begin(), by_text[b].texts.end(), text) != by_text[b].texts.end())
            named = true, ++candidates[b];
        const bool eog = std::find(eog_texts.begin(), eog_texts.end(), text) != eog_texts.end();
        warned += gpt_oss(text) || ((named || eog) && !(attr & attr_control));
      } else if ((attr & attr_control) && text.find("unused") != std::string_view::npos) {
        acted.push_back(static_cast<int32_t>(id));
      }
    }
    ordered = warned >= 2 || std::any_of(candidates.begin(), candidates.end(), [](int c) { return c >= 2; });
  }
  if (ordered) acted = v.token_to_id->in_order(std::move(acted));  // the same tokens in the map's order
  std::vector<int32_t> eog_found;
  for (const int32_t id : acted) {
    const std::string_view text = v.token_to_id->key(id);
    const bool listed = may_be_listed(text);
    if (listed)
      for (const ByText& b : by_text)
        if (b.id == null_id && std::find(b.texts.begin(), b.texts.end(), text) != b.texts.end()) {
          b.id = id;
          L.found_by_text[b.name] = id;
          make_control(id, text, warn_by_text);
        }
    if (uint32_t& attr = v.id_to_token[static_cast<size_t>(id)].attr;
        (attr & attr_control) && !(attr & attr_unused) && text.find("unused") != std::string::npos)
      attr |= attr_unused;
    if (!listed) continue;
    if (std::find(eog_texts.begin(), eog_texts.end(), text) != eog_texts.end()) {
      eog_found.push_back(id);
      make_control(id, text, warn_eog);
    }
    if (gpt_oss(text)) {
      uint32_t& attr = v.id_to_token[static_cast<size_t>(id)].attr;
      warn_gpt_oss.push_back(format("setting token '%.*s' (%d) attribute to USER_DEFINED (%u), old attributes: %u", static_cast<int>(text.size()), text.data(), id,
                                    static_cast<unsigned>(attr_user_defined), static_cast<unsigned>(attr)));
      attr = attr_user_defined;
    }
  }
  for (auto* w : {&warn_by_text, &warn_eog, &warn_gpt_oss})
    for (std::string& line : *w) warn(v, std::move(line));

  return eog_found;
}

// The end-of-generation set: the FIM pad/rep/sep ids, then every token named as one.
void build_eog(Vocab::Impl& v, const std::vector<int32_t>& eog_found) {
  const size_t n_tokens = v.id_to_token.size();
  v.special_eog_ids.clear();
  for (int32_t id : {v.special_fim_pad_id, v.special_fim_rep_id, v.special_fim_sep_id})
    if (id != null_id) v.special_eog_ids.insert(id);
  v.special_eog_ids.insert(eog_found.begin(), eog_found.end());

  for (auto [id, name] : {std::pair{v.special_eos_id, "eos"}, {v.special_eot_id, "eot"}, {v.special_eom_id, "eom"}})
    if (id != null_id && v.special_eog_ids.insert(id).second)
      warn(v, format("special_%s_id is not in special_eog_ids - the tokenizer config may be incorrect", name));

  // o200k_harmony and solar-open: "<|end|>" ends no generation when the return/call
  // (or calls/flush) tokens are there.
  {
    bool has_return = false, has_call = false, has_end = false, has_flush = false;
    int32_t end_id = null_id;
    for (int32_t tid : v.special_eog_ids) {
      const TokenData* t = token_at(v, tid);
      if (!t) {
        warn(v, format("EOG token id %d is out of range (vocab size %zu), skipping", tid, n_tokens));
        continue;
      }
      if (t->text == "<|return|>") has_return = true;
      else if (t->text == "<|call|>" || t->text == "<|calls|>") has_call = true;
      else if (t->text == "<|flush|>") has_flush = true;
      else if (t->text == "<|end|>") has_end = true, end_id = tid;
    }
    if ((has_return && has_call && has_end) || (has_call && has_flush && has_end)) {
      v.special_eog_ids.erase(end_id);
      v.id_to_token[static_cast<size_t>(end_id)].attr = attr_user_defined;
      warn(v, "special_eog_ids contains both '<|return|>' and '<|call|>', or '<|calls|>' and '<|flush|>' tokens, removing '<|end|>' token from EOG list");
    }
  }
  // gemma4 and paddleocr: "</s>" ends no generation when "<|tool_response>" does.
  {
    bool has_tool_response = false;
    int32_t s_id = null_id;
    for (int32_t tid : v.special_eog_ids) {
      const TokenData* t = token_at(v, tid);
      if (!t) continue;
      if (t->text == "<|tool_response>") has_tool_response = true;
      else if (t->text == "</s>") s_id = tid;
    }
    if (has_tool_response && s_id != null_id) {
      v.special_eog_ids.erase(s_id);
      v.id_to_token[static_cast<size_t>(s_id)].attr = attr_normal;
      warn(v, "special_eog_ids contains '<|tool_response>', removing '</s>' token from EOG list");
    }
  }
}

// The special tokens the partition cuts out, longest text first (std::sort, as llama.cpp:
// ties keep whatever order that sort leaves).
void cache_special_tokens(Vocab::Impl& v) {
  const size_t n_tokens = v.id_to_token.size();
  for (size_t id = 0; id < n_tokens; ++id)
    if (v.id_to_token[id].attr & (attr_control | attr_user_defined | attr_unknown))
      v.cache_special_tokens.push_back(static_cast<int32_t>(id));
  std::sort(v.cache_special_tokens.begin(), v.cache_special_tokens.end(), [&](int32_t a, int32_t b) {
    return v.id_to_token[static_cast<size_t>(a)].text.size() > v.id_to_token[static_cast<size_t>(b)].text.size();
  });
}

// Per-token attributes llama.cpp sets by model, pre-tokenizer or architecture name.
void set_named_attributes(Vocab::Impl& v, const VocabSpec& spec) {
  std::string model_name, pre_name, general_arch;
  get_str(spec, "general.name", model_name);
  get_str(spec, "tokenizer.ggml.pre", pre_name);
  get_str(spec, "general.architecture", general_arch);
  for (char& c : model_name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto contains_any = [](const std::string& s, std::initializer_list<std::string_view> subs) {
    return std::any_of(subs.begin(), subs.end(), [&](std::string_view sub) { return s.find(sub) != std::string::npos; });
  };
  auto set_attr = [&](int32_t id, uint32_t attr, bool on) {
    uint32_t& a = v.id_to_token[static_cast<size_t>(id)].attr;
    a = on ? (a | attr) : (a & ~attr);
  };
  auto set_named = [&](const char* text, uint32_t attr, bool on) {
    const int32_t id = v.token_to_id->find(text);
    if (id < 0)  // llama.cpp's token_to_id.at throws: the load fails
      throw Error("general.name", format("the vocabulary has no token '%s' (llama.cpp: _Map_base::at)", text));
    set_attr(id, attr, on);
  };
  if (contains_any(pre_name, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
      contains_any(general_arch, {"nomic-bert-moe", "jina-bert-v3"})) {
    if (v.token_to_id->find("<mask>") < 0) warn(v, "Mask token is missing in vocab, please reconvert model!");
    else set_named("<mask>", attr_lstrip, true);
  } else if (contains_any(model_name, {"phi-3", "phi3"})) {
    for (int32_t id : v.cache_special_tokens) set_attr(id, attr_rstrip, true);
    set_named("</s>", attr_rstrip, true);
    for (const char* t : {"<unk>", "<s>", "<|endoftext|>"}) set_named(t, attr_rstrip, false);
  } else if (contains_any(model_name, {"modern-bert"})) {
    if (v.token_to_id->find("[MASK]") < 0) warn(v, "Mask token missing in vocab!");
    else set_named("[MASK]", attr_lstrip, true);
  }
}

// What the load made, as llama.cpp's llama_vocab_* calls answer it; a byte token whose piece
// llama.cpp could not build fails the load here, as llama.cpp's piece cache does.
void report_loaded(Vocab::Impl& v) {
  Loaded& L = v.loaded;
  const size_t n_tokens = v.id_to_token.size();
  L.bos = v.special_bos_id, L.eos = v.special_eos_id, L.eot = v.special_eot_id, L.eom = v.special_eom_id;
  L.unk = v.special_unk_id, L.sep = v.special_sep_id, L.nl = v.linefeed_id, L.pad = v.special_pad_id;
  L.mask = v.special_mask_id;
  L.fim_pre = v.special_fim_pre_id, L.fim_suf = v.special_fim_suf_id, L.fim_mid = v.special_fim_mid_id;
  L.fim_pad = v.special_fim_pad_id, L.fim_rep = v.special_fim_rep_id, L.fim_sep = v.special_fim_sep_id;
  L.add_bos = v.add_bos, L.add_eos = v.add_eos, L.add_sep = v.add_sep;
  L.eog.assign(v.special_eog_ids.begin(), v.special_eog_ids.end());
  for (size_t id = 0; id < n_tokens; ++id) {
    const uint32_t attr = v.id_to_token[id].attr;
    if (attr & attr_control) L.control.push_back(static_cast<int32_t>(id));
    // llama.cpp builds every token's piece at load: a byte token's is read from its "<0xHH>"
    // text, and one too short for that (or of a type with no byte tokens) fails the load.
    if ((attr & attr_byte) && !(attr & (attr_special | attr_user_defined | attr_normal)) &&
        (v.type == Kind::spm || v.type == Kind::ugm || v.type == Kind::bpe || v.type == Kind::wpm))
      token_to_byte(v, static_cast<int32_t>(id));
  }
}

}  // namespace

Vocab Vocab::load(const VocabSpec& spec, const Vocab* like, bool for_prompts) {
  const Impl* base = like ? like->impl_.get() : nullptr;
  auto vp = std::make_unique<Impl>();
  Impl& v = *vp;
  if (!read_type(v, spec, base)) return Vocab(std::move(vp));
  // (Merges reads only its own bytes; the future joins before the load returns or throws.)
  // A head start only: what fails here is tried again by the first tokenize.
  std::future<void> ranked;
  if (for_prompts && v.merges && v.merges->size() > 0 && !v.merges->ranked()) try {
      ranked = std::async(std::launch::async, [m = v.merges] { m->ranks(); });
    } catch (const std::exception&) {  // no thread to be had
    }
  read_pre_tokenizer(v, spec);
  read_tokens(v, spec, base);
  find_linefeed(v);
  read_special_ids(v, spec);
  build_eog(v, walk_named_tokens(v));
  cache_special_tokens(v);
  // llama.cpp caches every token's piece here (its cache_token_to_piece); a piece is made when
  // asked for instead (the same text: it depends on the token and its type bits, which
  // nothing below changes), so a load to answer what llama.cpp makes of a 150,000-token
  // vocabulary makes no 150,000 strings.
  set_named_attributes(v, spec);
  report_loaded(v);
  if (ranked.valid()) try {
      ranked.get();
    } catch (const std::exception&) {  // (call_once is left unset: the first tokenize builds them)
    }
  return Vocab(std::move(vp));
}

std::vector<int32_t> Vocab::tokenize(std::string_view text, bool add_special, bool parse_special, const Progress& progress) const {
  return tokenize_impl(*impl_, text, add_special, parse_special, progress);
}

std::string Vocab::piece(int32_t id, bool special, size_t limit) const {
  const Impl& v = *impl_;
  const TokenData* t = token_at(v, id);
  if (!t) return {};  // llama.cpp throws (std::out_of_range) for an id out of range
  if (!special && (t->attr & attr_special)) return {};
  std::string p = piece_of(v, id, special, limit);
  if (p.size() > limit) p.resize(limit);  // the other kinds' pieces are the size of their text
  return p;
}

std::string Vocab::shown_piece(int32_t id, bool& cut) const {
  std::string p = piece(id, true, kShownPiece + 1);
  cut = p.size() > kShownPiece;
  if (cut) p.resize(kShownPiece);
  return p;
}

std::string Vocab::detokenize(std::span<const int32_t> ids, bool remove_special, bool unparse_special, size_t limit) const {
  const Impl& v = *impl_;
  if (v.type == Kind::none) return {};
  // The first piece loses one leading space when the vocabulary adds a space prefix, unless a
  // removed BOS came first.
  bool remove_space = v.add_space_prefix;
  if (remove_special && v.add_bos && !ids.empty() && ids.front() == v.special_bos_id) {
    remove_space = false;
    ids = ids.subspan(1);
  }
  if (remove_special && v.add_eos && !ids.empty() && ids.back() == v.special_eos_id) ids = ids.subspan(0, ids.size() - 1);
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    // (one byte more than the room, and the space it may skip: enough to tell it went past)
    const std::string p = piece(ids[i], unparse_special, std::min(limit - text.size(), SIZE_MAX - 2) + 2);
    size_t skip = remove_space && !p.empty() && p[0] == ' ' ? 1 : 0;
    if (p.size() - skip > limit - text.size())
      throw Error("tokenizer.ggml.tokens", format("the text would be more than %zu bytes: id %d (number %zu of the ids) takes it past that",
                                                  limit, ids[i], i + 1));
    text.append(p, skip, std::string::npos);
    remove_space = false;
  }
  if (!v.clean_spaces) return text;

  // llama.cpp's three in-place passes, kept as they are (the second writes a NUL where it
  // drops a space, which the third then reads).
  char* s = text.data();
  size_t total = text.size();
  {  // " ?", " !", " .", " ,": the space goes
    const size_t n = total;
    total = n ? 1 : 0;
    for (size_t i = 1; i < n; ++i) {
      const char x = s[i];
      if (s[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
      s[total++] = x;
    }
  }
  {  // " ' ": both spaces go
    const size_t n = total;
    total = n ? 1 : 0;
    for (size_t i = 1; i < n; ++i) {
      const char x = s[i];
      if (x == '\'' && i + 1 < n && s[i - 1] == ' ' && s[i + 1] == ' ') {
        --total;
        s[++i] = '\0';
      }
      s[total++] = x;
    }
  }
  {  // " 's", " 'm", " 're", " 've": the space goes
    const size_t n = total;
    total = n ? 1 : 0;
    for (size_t i = 1; i < n; ++i) {
      const char x = s[i];
      if (s[i - 1] == ' ' && x == '\'' && i + 1 < n) {
        const char x1 = s[i + 1];
        if (x1 == 's' || x1 == 'm') --total;
        else if (i + 2 < n && ((x1 == 'r' && s[i + 2] == 'e') || (x1 == 'v' && s[i + 2] == 'e'))) --total;
      }
      s[total++] = x;
    }
  }
  text.resize(total);
  return text;
}

}  // namespace ggufkit::tokenizer
