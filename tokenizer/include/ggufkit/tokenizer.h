#pragma once

// Text to token ids exactly as llama.cpp tokenizes it (src/llama-vocab.cpp, src/unicode.cpp),
// and back. It knows nothing of GGUF files: it is fed the vocabulary's keys as plain values
// (check/'s vocab.h makes them from a model) and loads them as llama.cpp does: the special
// ids from the keys and, where unset, found by their text; the type overrides; the
// end-of-generation set; the add-BOS/EOS defaults of each vocabulary type; the
// pre-tokenizer by llama.cpp's table of names. Unicode comes from PCRE2 and ICU.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ggufkit/big_vector.h"

namespace ggufkit::tokenizer {

// What llama.cpp refuses at load ("unknown pre-tokenizer type: 'x'", "cannot find tokenizer
// merges in model file"), in its words; `key` names the key at fault when there is one.
struct Error : std::runtime_error {
  Error(std::string key, const std::string& what) : std::runtime_error(what), key(std::move(key)) {}
  std::string key;
};

// GGUF's value types by number (0 u8 ... 12 f64), which llama.cpp's key getters check.
enum class ValueType : uint32_t { u8, i8, u16, i16, u32, i32, f32, boolean, string, array, u64, i64, f64 };

// An array of strings: views the caller made, or the items as a GGUF file lays them out (each
// a u64 length, big-endian where `big`, then its bytes), read in order with no array of views
// made: a vocabulary's 150,000 tokens and as many merges are two such arrays, and a header
// job reads each once. Editing an item (a test's) first makes the views.
class Strings {
 public:
  Strings() = default;
  Strings(std::initializer_list<std::string_view> items) : items_(items) {}  // NOLINT: a list converts
  // `bytes` holds `count` items whose every length the caller has checked.
  // `keep`, when given, holds the bytes: what the vocabulary keeps of them is then read in
  // place when first needed, not copied at load.
  static Strings packed(std::string_view bytes, size_t count, bool big, std::shared_ptr<const void> keep = nullptr) {
    Strings s;
    s.bytes_ = bytes, s.count_ = count, s.big_ = big, s.packed_ = true, s.keep_ = std::move(keep);
    return s;
  }
  const std::shared_ptr<const void>& keep() const { return keep_; }
  std::string_view region() const { return packed_ ? bytes_ : std::string_view(); }

  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = std::string_view;
    iterator() = default;
    iterator(const char* p, bool big, const std::string_view* item) : p_(p), item_(item), big_(big) {}
    std::string_view operator*() const { return item_ ? *item_ : std::string_view(p_ + 8, static_cast<size_t>(length())); }
    iterator& operator++() {
      if (item_) ++item_;
      else p_ += 8 + length();
      return *this;
    }
    iterator operator++(int) {
      iterator t = *this;
      ++*this;
      return t;
    }
    bool operator==(const iterator& o) const { return p_ == o.p_ && item_ == o.item_; }

   private:
    uint64_t length() const {  // one load, not eight: it is read for every token of every load
      uint64_t n;
      std::memcpy(&n, p_, 8);
      return big_ ? __builtin_bswap64(n) : n;  // a little-endian host, as the reader's
    }
    const char* p_ = nullptr;
    const std::string_view* item_ = nullptr;
    bool big_ = false;
  };
  iterator begin() const { return packed_ ? iterator(bytes_.data(), big_, nullptr) : iterator(nullptr, false, items_.data()); }
  iterator end() const {
    return packed_ ? iterator(bytes_.data() + bytes_.size(), big_, nullptr) : iterator(nullptr, false, items_.data() + items_.size());
  }
  size_t size() const { return packed_ ? count_ : items_.size(); }
  bool empty() const { return size() == 0; }
  std::string_view& operator[](size_t i) { return unpacked()[i]; }
  void push_back(std::string_view s) { unpacked().push_back(s); }
  template <typename It>
  void assign(It from, It to) {
    packed_ = false;
    items_.assign(from, to);
  }

 private:
  std::vector<std::string_view>& unpacked() {
    if (packed_) items_.assign(begin(), end()), packed_ = false;
    return items_;
  }
  std::vector<std::string_view> items_;
  std::shared_ptr<const void> keep_;
  std::string_view bytes_;
  size_t count_ = 0;
  bool big_ = false, packed_ = false;
};

// An array of numbers, each item's bits zero-extended: the packed GGUF items read in place
// (`width` bytes each, big-endian when `big`: a vocabulary's 262,144 scores and types are
// read once each, not copied first), or items of its own.
class Numbers {
 public:
  Numbers() = default;
  Numbers(std::initializer_list<uint64_t> items) : items_(items) {}  // NOLINT: a list converts
  // `bytes` holds `count` items of `width` bytes (1, 2, 4 or 8).
  static Numbers packed(std::string_view bytes, size_t count, unsigned width, bool big) {
    Numbers n;
    n.bytes_ = bytes.data(), n.count_ = count, n.width_ = width, n.big_ = big, n.packed_ = true;
    return n;
  }
  size_t size() const { return packed_ ? count_ : items_.size(); }
  bool empty() const { return size() == 0; }
  uint64_t operator[](size_t i) const {
    if (!packed_) return items_[i];
    const char* p = bytes_ + i * width_;
    switch (width_) {
      case 1: return static_cast<uint8_t>(*p);
      case 2: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        return big_ ? __builtin_bswap16(v) : v;
      }
      case 4: {
        uint32_t v;
        std::memcpy(&v, p, 4);
        return big_ ? __builtin_bswap32(v) : v;
      }
      default: {
        uint64_t v;
        std::memcpy(&v, p, 8);
        return big_ ? __builtin_bswap64(v) : v;
      }
    }
  }

 private:
  std::vector<uint64_t> items_;
  const char* bytes_ = nullptr;
  size_t count_ = 0;
  unsigned width_ = 0;
  bool big_ = false, packed_ = false;
};

// One key's value, as the vocabulary is made of them. Views stay valid while the caller's
// model does; Vocab::load copies what it keeps.
struct KeyValue {
  ValueType type = ValueType::u8;
  uint64_t bits = 0;                       // scalars: the value's bits, zero-extended
  std::string_view str;                    // type string
  ValueType elem = ValueType::u8;          // type array: the element type
  size_t count = 0;                        // type array: the element count
  Strings strings;                         // an array of strings: its items
  Numbers numbers;                         // an array of numbers: each item's bits, zero-extended
};

// The keys llama.cpp reads for the vocabulary, by name: every tokenizer.* key and
// general.architecture (for {arch}.vocab_size, which is there too when the model has it).
// general.name too: llama.cpp sets per-token attributes by it (phi-3's rstrip).
struct VocabSpec {
  std::map<std::string, KeyValue, std::less<>> keys;
  const KeyValue* find(std::string_view key) const {
    auto it = keys.find(key);
    return it == keys.end() ? nullptr : &it->second;
  }
};

// llama.cpp's vocabulary types (llama_vocab_type) and token attributes (llama_token_attr).
enum class Kind { none, spm, bpe, wpm, ugm, rwkv, plamo2 };
std::string_view kind_name(Kind k);  // "none", "spm", "bpe", "wpm", "ugm", "rwkv", "plamo2"
enum Attr : uint32_t {
  attr_undefined = 0,
  attr_unknown = 1 << 0,
  attr_unused = 1 << 1,
  attr_normal = 1 << 2,
  attr_control = 1 << 3,
  attr_user_defined = 1 << 4,
  attr_byte = 1 << 5,
  attr_normalized = 1 << 6,
  attr_lstrip = 1 << 7,
  attr_rstrip = 1 << 8,
  attr_single_word = 1 << 9,
};

// What llama.cpp makes of the vocabulary at load (its llama_vocab_* answers). -1: none.
struct Loaded {
  int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, sep = -1, nl = -1, pad = -1, mask = -1;
  int32_t fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1;
  bool add_bos = false, add_eos = false, add_sep = false;
  std::vector<int32_t> eog;      // the end-of-generation set, ascending
  std::vector<int32_t> control;  // every token with the control attribute, ascending
  // The special ids llama.cpp found by their text because their key was unset (or out of
  // range), by llama.cpp's name ("eot", "fim_pre", ...), ascending by name.
  std::map<std::string, int32_t> found_by_text;
  // What llama.cpp warns of while loading, in its words (one line each).
  std::vector<std::string> warnings;
};

class Vocab {
 public:
  // Loads as llama.cpp's llama_vocab::load does; an Error where llama.cpp refuses the model.
  // `like`: a vocabulary loaded before, whose tables of token texts and merges are shared
  // where the spec's are the same (an edit's check loads a vocabulary before and after a
  // change of a special id: the second load builds neither); the result is the same.
  // `for_prompts`: the caller tokenizes next (a template's prompts), so BPE's merge ranks
  // are built on a second thread while the tokens load, not on the first tokenize.
  static Vocab load(const VocabSpec& spec, const Vocab* like = nullptr, bool for_prompts = false);
  Vocab(Vocab&&) noexcept;
  Vocab& operator=(Vocab&&) noexcept;
  ~Vocab();

  Kind kind() const;
  std::string_view model() const;     // tokenizer.ggml.model as read
  std::string_view pre() const;       // tokenizer.ggml.pre as read ("" when unset)
  std::string_view pre_type() const;  // the pre-tokenizer llama.cpp took it for: "default", "llama3", ...
  size_t size() const;                // tokens
  std::string_view text(int32_t id) const;  // as loaded
  float score(int32_t id) const;
  uint32_t attr(int32_t id) const;    // Attr bits
  // The id llama.cpp's text lookup (token_to_id) gives a text: of tokens sharing a text, the
  // last. -1: no token has it.
  int32_t find(std::string_view text) const;
  const Loaded& loaded() const;

  // llama_tokenize: `add_special` adds BOS/EOS/SEP as the vocabulary says, `parse_special`
  // takes control tokens in the text as themselves (user-defined ones always are).
  // `progress`, where set, is told the bytes of `text` done of its size as the work goes: after
  // each fragment between special tokens, and within one every few thousand words for BPE
  // and WordPiece (SentencePiece and Unigram take a fragment whole); last, size of size.
  using Progress = std::function<void(uint64_t done, uint64_t total)>;
  std::vector<int32_t> tokenize(std::string_view text, bool add_special = true, bool parse_special = true,
                                const Progress& progress = {}) const;
  // llama_token_to_piece (lstrip 0): a token's text as generation prints it; `special`
  // prints control tokens' text too. An id out of range gives "" (llama.cpp throws).
  // `limit`: its first `limit` bytes only, made in time bounded by the token's text and the
  // limit (a GPT-2 token of n code points outside the byte map has a piece of n times its
  // text, as llama.cpp writes it: a caller comparing it with a text asks for no more).
  std::string piece(int32_t id, bool special = true, size_t limit = SIZE_MAX) const;
  // A piece as a list of tokens shows it (tokenize, a prompt's tokens): at most kShownPiece
  // bytes, `cut` set where there were more. (A GPT-2 token outside the byte map has a piece of
  // its whole text once per character: 2.7 GB for one of 30,000 characters.)
  static constexpr size_t kShownPiece = 65536;
  std::string shown_piece(int32_t id, bool& cut) const;
  // llama_detokenize. A text of more than `limit` bytes throws Error (tokenizer.ggml.tokens)
  // naming the id it passed the limit at: no more than that is made.
  std::string detokenize(std::span<const int32_t> ids, bool remove_special = false, bool unparse_special = true,
                         size_t limit = SIZE_MAX) const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit Vocab(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The pre-tokenizer names llama.cpp knows (tokenizer.ggml.pre), in its table's order.
const std::vector<std::string>& known_pre_names();

}  // namespace ggufkit::tokenizer
