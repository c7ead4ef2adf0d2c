#pragma once
// The vocabulary as loaded, shared by the algorithms (internal). Field names follow
// llama.cpp's llama_vocab::impl so a reader can check one against the other.

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ggufkit/tokenizer.h"
#include "hash.h"
#include "token_index.h"

namespace ggufkit::tokenizer {

// llama.cpp's llama_vocab_pre_type, in its order.
enum class PreType {
  default_, llama3, deepseek_llm, deepseek_coder, falcon, mpt, starcoder, gpt2, refact, command_r, stablelm2, qwen2,
  olmo, dbrx, smaug, poro, chatglm3, chatglm4, viking, jais, tekken, smollm, codeshell, bloom, gpt3_finnish, exaone,
  chameleon, minerva, deepseek3_llm, gpt4o, superbpe, trillion, bailingmoe, llama4, pixtral, seed_coder, hunyuan,
  kimi_k2, hunyuan_dense, grok_2, granite_docling, minimax_m2, afmoe, solar_open, youtu, exaone_moe, qwen35,
  tiny_aya, joyai_llm, jais2, gemma4, sarvam_moe, minicpm5, whitespace, granite_emb_multi, mellum2, laguna,
};

struct TokenData {
  std::string_view text;  // in token_to_id's keys (one copy of the texts for both)
  float score = 0.0f;
  uint32_t attr = attr_normal;
};

// One fragment of raw text (no special token in it) to ids, as llama.cpp's session for the
// vocabulary type does it. Built once per Vocab, on first use (a regex compiled, a trie
// built), and used from any thread.
// `tick`, where it is set, is told the fraction of `text` done as the algorithm goes (those
// that work word by word tell it; the others leave it to the caller's per-fragment count).
using Tick = std::function<void(double done)>;
struct Algorithm {
  virtual ~Algorithm() = default;
  virtual void tokenize(const std::string& text, std::vector<int32_t>& out, const Tick& tick) const = 0;
  void tokenize(const std::string& text, std::vector<int32_t>& out) const { tokenize(text, out, Tick()); }
};

// The merges as read (each "first second", cut at a NUL as llama.cpp reads a C string),
// made into ranks when a merge is first looked up: loading a vocabulary to answer what
// llama.cpp makes of it (show, validate, every edit's check) hashes no 150,000 pairs, and
// when the header's bytes are kept alive for it (Strings::keep) copies none of them either.
class Merges {
 public:
  Merges() = default;
  explicit Merges(const Strings& merges);
  // Whether these are `merges`, byte for byte as read (an edit's before and after share them).
  bool same_as(const Strings& merges) const;
  size_t size() const { return count_; }
  // llama.cpp's bpe_ranks: a merge's rank by the texts of its two sides. Open addressing on a
  // hash of the two texts, each slot that hash and the rank, the merge's own text confirming
  // a match: built by reading the merges in order (no token looked up, no node a merge).
  struct Ranks {
    struct Slot {
      uint32_t tag = 0;  // the hash's high half
      int rank = -1;     // -1: empty
    };
    big_vector<Slot> slots;  // a power of two, at most three quarters full: 2 MB for 150,000 merges
    static uint64_t hash(std::string_view left, std::string_view right) { return text_hash(left, right); }
  };
  const Ranks& ranks() const;  // made on the first call, from any thread
  bool ranked() const { return ranked_.load(std::memory_order_acquire); }  // whether ranks() has been made
  // Merge `rank`'s two sides as llama.cpp reads them: cut at the first space after the first
  // byte (none: both empty).
  // Valid once ranks() has been called.
  std::pair<std::string_view, std::string_view> sides(size_t rank) const {
    const size_t from = rank == 0 ? 0 : end_[rank - 1];
    const std::string_view word(text_.data() + from, end_[rank] - from);
    const size_t pos = word.find(' ', 1);
    if (pos == std::string_view::npos) return {};
    return {word.substr(0, pos), word.substr(pos + 1)};
  }

 private:
  void copy(const Strings& merges) const;
  Strings source_;  // the header's array, while its bytes are kept alive; else empty
  size_t count_ = 0;
  mutable big_vector<char> text_;
  mutable big_vector<size_t> end_;  // where each merge's text ends in `text_`
  mutable Ranks ranks_;
  mutable std::once_flag once_;
  mutable std::atomic<bool> ranked_{false};
};

// The special tokens by their texts, for the partition (vocab.cpp): a polynomial hash mod
// 2^61 - 1 that rolls over a text's windows; a slot holds a token's rank in
// cache_special_tokens and its hash's high bits. `lengths`: each text length (longest first)
// and the first rank of that length, then {0, the number of ranks}.
struct SpecialIndex {
  struct Slot {
    uint32_t tag;
    int32_t rank;  // -1: empty
  };
  std::vector<Slot> slots;
  std::vector<std::pair<size_t, size_t>> lengths;

  static constexpr uint64_t prime = (1ull << 61) - 1, base = 0x1f3d5b79a3c1e7ull % prime;
  static uint64_t mul(uint64_t a, uint64_t b) {
    __extension__ using u128 = unsigned __int128;
    const u128 p = static_cast<u128>(a) * b;
    const uint64_t r = static_cast<uint64_t>(p & prime) + static_cast<uint64_t>(p >> 61);
    return r >= prime ? r - prime : r;
  }
  static uint64_t roll(uint64_t h, std::string_view more) {  // the hash of (text of h) + more
    for (char c : more) {
      h = mul(h, base) + static_cast<uint8_t>(c) + 1;
      if (h >= prime) h -= prime;
    }
    return h;
  }
  static uint64_t power(size_t n) {  // base^n
    uint64_t r = 1, b = base;
    for (; n; n >>= 1, b = mul(b, b))
      if (n & 1) r = mul(r, b);
    return r;
  }
  // the hash without the first byte `c` of a text of n bytes (top = base^(n - 1))
  static uint64_t unroll(uint64_t h, uint8_t c, uint64_t top) {
    const uint64_t drop = mul(static_cast<uint64_t>(c) + 1, top);
    return h >= drop ? h - drop : h + prime - drop;
  }
};

// One fragment of the text being tokenized (llama.cpp's fragment_buffer_variant): raw text
// [off, off + len) or a special token.
struct Segment {
  int32_t token;  // -1: raw text
  size_t off, len;
  bool operator==(const Segment&) const = default;
};

struct Vocab::Impl {
  std::string tokenizer_model, tokenizer_pre;
  Kind type = Kind::spm;
  PreType pre_type = PreType::default_;
  std::string pre_type_name = "default";
  uint32_t n_token_types = 0;
  int max_token_len = 0;

  int32_t special_bos_id = 1, special_eos_id = 2, special_eot_id = -1, special_eom_id = -1, special_unk_id = 0,
          special_sep_id = -1, special_pad_id = -1, special_mask_id = -1, linefeed_id = 13;
  int32_t special_fim_pre_id = -1, special_fim_suf_id = -1, special_fim_mid_id = -1, special_fim_pad_id = -1,
          special_fim_rep_id = -1, special_fim_sep_id = -1;

  bool add_space_prefix = false, add_bos = false, add_eos = false, add_sep = false, ignore_merges = false,
       clean_spaces = false, remove_extra_whitespaces = false, escape_whitespaces = true,
       treat_whitespace_as_suffix = false;
  // BERT normalizer options (llama.cpp's normalizer_options), where the keys set them.
  bool bert_lowercase = true, bert_strip_accents = true, bert_handle_chinese_chars = true;

  // llama.cpp's map (by text, and in its iteration order) and the merges: each shared with a
  // vocabulary loaded before that has the same tokens, or merges, so two vocabularies that
  // differ in a special id or a name (an edit's check, before and after) build them once.
  std::shared_ptr<const TokenIndex> token_to_id = std::make_shared<TokenIndex>();
  std::shared_ptr<const Merges> merges = std::make_shared<Merges>();
  big_vector<TokenData> id_to_token;
  std::vector<int32_t> cache_special_tokens;  // longest text first, as llama.cpp sorts them
  const SpecialIndex& special_index() const;   // made on first use, after the load
  mutable std::once_flag special_index_once;
  mutable SpecialIndex special_index_;
  std::set<int32_t> special_eog_ids;
  std::vector<char> precompiled_charsmap;
  Loaded loaded;

  // The algorithm for `type`, made on first use.
  const Algorithm& algorithm() const;
  mutable std::once_flag algorithm_once;
  mutable std::unique_ptr<Algorithm> algorithm_;

  // llama.cpp's helpers the algorithms call.
  int32_t text_to_token(std::string_view text) const { return token_to_id->find(text); }  // -1: none
  int32_t byte_to_token(uint8_t ch) const;  // -1: the vocabulary has no token for it
  int find_bpe_rank(std::string_view left, std::string_view right) const {
    // llama.cpp asserts that neither side holds a space (GGML_ASSERT: the process aborts), as
    // happens when a pre-tokenizer leaves spaces unescaped (the 'whitespace' name on a gpt2
    // vocabulary): refused here, since any ids would be invented.
    if (left.find(' ') != std::string_view::npos || right.find(' ') != std::string_view::npos) refuse_spaced_merge();
    const Merges::Ranks& m = merges->ranks();
    const uint64_t h = Merges::Ranks::hash(left, right);
    const auto tag = static_cast<uint32_t>(h >> 32);
    const size_t mask = m.slots.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const Merges::Ranks::Slot& slot = m.slots[i];
      if (slot.rank < 0) return -1;
      if (slot.tag == tag && merges->sides(static_cast<size_t>(slot.rank)) == std::pair{left, right}) return slot.rank;
    }
  }
  [[noreturn]] static void refuse_spaced_merge() {
    throw Error("tokenizer.ggml.pre", "llama.cpp aborts on this text: a merge of pieces with a space in them (GGML_ASSERT in find_bpe_rank)");
  }
  uint32_t token_get_attr(int32_t id) const { return id_to_token.at(static_cast<size_t>(id)).attr; }

  // vocab (vocab.cpp): a vocabulary of type none has {arch}.vocab_size dummy tokens, kept as
  // a count (a hostile size allocates nothing).
  size_t n_dummy_tokens = 0;
};

// vocab.cpp: llama.cpp's tokenizer_st_partition of a text by the special tokens.
std::vector<Segment> partition(const Vocab::Impl& v, std::string_view text, bool parse_special);

// bpe.cpp: llama.cpp's table of pre-tokenizer names (tokenizer.ggml.pre, in v.tokenizer_pre)
// for a BPE vocabulary: sets v.pre_type, v.pre_type_name and the flags the table sets with
// it (ignore_merges, clean_spaces, add_bos, ...); an Error for a name llama.cpp refuses.
void apply_pre_tokenizer(Vocab::Impl& v);

// Each made from the loaded vocabulary (which outlives it).
std::unique_ptr<Algorithm> make_spm(const Vocab::Impl& v);   // spm.cpp
std::unique_ptr<Algorithm> make_bpe(const Vocab::Impl& v);   // bpe.cpp: with the pre-tokenizer of v.pre_type
std::unique_ptr<Algorithm> make_wpm(const Vocab::Impl& v);   // wpm.cpp
std::unique_ptr<Algorithm> make_ugm(const Vocab::Impl& v);   // ugm.cpp
std::unique_ptr<Algorithm> make_rwkv(const Vocab::Impl& v);  // ugm.cpp (a trie too)

// unicode.cpp: llama.cpp's unicode.cpp on PCRE2 and ICU.
// UTF-8 to code points as llama.cpp decodes them (an invalid byte becomes U+FFFD).
// `verbatim`, when given, is cleared unless every code point came from the bytes it encodes to.
std::vector<uint32_t> cpts_from_utf8(std::string_view text, bool* verbatim = nullptr);
std::string cpt_to_utf8(uint32_t cpt);
void append_utf8(std::string& out, uint32_t cpt);  // the same, appended in place
inline size_t cpt_utf8_len(uint32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }
size_t utf8_len(char first_byte);  // 1 to 4, by the first byte, as llama.cpp's unicode_len_utf8
// GPT-2's byte-to-unicode map: a byte as the code point's UTF-8, and back.
std::string byte_to_utf8(uint8_t byte);
int utf8_to_byte(std::string_view utf8);  // -1 when it is not one of the 256
// llama_unescape_rwkv_token: RWKV's texts escape bytes as \t \n \r \xHH and \c.
std::string unescape_rwkv(std::string_view escaped);

}  // namespace ggufkit::tokenizer
