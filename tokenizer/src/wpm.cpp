// WordPiece (tokenizer.ggml.model "bert"), as llama.cpp's llm_tokenizer_wpm_session: the
// BERT normalization (llama.cpp's one-code-point "NFD", lower case, accents dropped), words
// split at whitespace and around punctuation and CJK ideographs, then each word, with the
// phantom space U+2581 in front, cut greedily into the longest tokens of the vocabulary.
// There is no "##" continuation: llama.cpp's converter turns BERT's "##x" into "x" and
// word-initial "x" into "▁x", so a plain longest-match over the text does it.
#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/utf16.h>

#include "impl.h"
#include "pretokenize.h"
#include "trie.h"

namespace ggufkit::tokenizer {

namespace {

// llama.cpp's code point flags (unicode-data.cpp, made from UnicodeData.txt's general
// categories and PropList's White_Space), from ICU. Past U+10FFFF llama.cpp has no flags.
struct Flags {
  bool whitespace = false, control = false, accent_mark = false, punctuation = false, symbol = false;
};
Flags flags_of(uint32_t cpt) {
  Flags f;
  if (cpt > 0x10FFFF) return f;
  const auto c = static_cast<UChar32>(cpt);
  const uint32_t gc = U_GET_GC_MASK(c);
  f.whitespace = u_hasBinaryProperty(c, UCHAR_WHITE_SPACE);
  // llama.cpp's "control" is all of \p{C} but Cn (unassigned code points have no flag).
  f.control = gc & (U_GC_CC_MASK | U_GC_CF_MASK | U_GC_CO_MASK | U_GC_CS_MASK);
  f.accent_mark = gc & U_GC_M_MASK;
  f.punctuation = gc & U_GC_P_MASK;
  f.symbol = gc & U_GC_S_MASK;
  return f;
}

// llama.cpp's unicode_cpts_normalize_nfd maps each code point alone to the first code point
// of its canonical decomposition (so "é" becomes "e" and its accent is gone, a Hangul
// syllable its leading jamo): not a full NFD, no reordering.
uint32_t nfd_first(uint32_t cpt) {
  if (cpt > 0x10FFFF) return cpt;
  UErrorCode err = U_ZERO_ERROR;
  static const UNormalizer2* nfd = unorm2_getNFDInstance(&err);
  if (!nfd) return cpt;
  UChar buf[32];
  err = U_ZERO_ERROR;
  const int32_t n = unorm2_getDecomposition(nfd, static_cast<UChar32>(cpt), buf, 32, &err);
  if (U_FAILURE(err) || n <= 0) return cpt;
  UChar32 first;
  int32_t at = 0;
  U16_NEXT(buf, at, n, first);
  return static_cast<uint32_t>(first);
}

// The simple lower-case mapping (UnicodeData's field 13), as unicode_tolower.
uint32_t to_lower(uint32_t cpt) {
  return cpt > 0x10FFFF ? cpt : static_cast<uint32_t>(u_tolower(static_cast<UChar32>(cpt)));
}

// BERT's "Chinese character" ranges as llama.cpp lists them (its is_chinese_char, which
// keeps HF's 0x2B920 for 0x2B820): a rule of BERT's, not a Unicode property.
bool is_chinese_char(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

class Wpm final : public Algorithm {
 public:
  explicit Wpm(const Vocab::Impl& v) : v_(v), trie_(keys(v)) {}

  void tokenize(const std::string& text, std::vector<int32_t>& out, const Tick& tick) const override {
    const std::vector<std::string> words = preprocess(text);
    for (size_t n = 0; n < words.size(); ++n) {
      if (tick && n % 4096 == 0) tick(static_cast<double>(n) / static_cast<double>(words.size()));
      const std::string& word = words[n];
      const std::string w = "\xe2\x96\x81" + word;
      const size_t before = out.size();
      const std::vector<KeyTrie::Long> longs = trie_.long_keys(w);
      size_t next_long = 0;
      for (size_t i = 0; i < w.size();) {
        while (next_long < longs.size() && longs[next_long].at < i) ++next_long;
        const size_t len = next_long < longs.size() && longs[next_long].at == i ? (out.push_back(longs[next_long].value), longs[next_long].length)
                                                                                : longest_token(w, i, out);
        if (len == 0) {  // a part no token covers: the whole word is unknown
          out.resize(before);
          break;
        }
        i += len;
      }
      if (out.size() == before) out.push_back(v_.special_unk_id);
    }
  }

 private:
  // The longest token w[i..] starts with: its id appended, its length returned (0: none).
  // (Of at most KeyTrie::kWalk bytes: a longer one is in long_keys.)
  size_t longest_token(const std::string& w, size_t i, std::vector<int32_t>& out) const {
    int32_t id = -1;
    size_t len = 0;
    trie_.walk(std::string_view(w).substr(i), [&](size_t length, int32_t value) { id = value, len = length; });
    if (len) out.push_back(id);
    return len;
  }

  // Every text text_to_token knows, with the id it gives.
  static std::vector<std::pair<std::string_view, int32_t>> keys(const Vocab::Impl& v) {
    std::vector<std::pair<std::string_view, int32_t>> r;
    r.reserve(v.token_to_id->order().size());
    for (const int32_t id : v.token_to_id->order()) r.push_back({v.token_to_id->key(id), id});
    return r;
  }

  // The words of the text after BERT's normalization, none empty.
  std::vector<std::string> preprocess(const std::string& text) const {
    const bool strip_accents = v_.bert_strip_accents, lowercase = v_.bert_lowercase;
    std::vector<std::string> words(1);
    for (uint32_t cpt : cpts_from_utf8(text)) {
      if (strip_accents) cpt = nfd_first(cpt);
      const Flags f = flags_of(cpt);
      if (f.whitespace) {
        if (!words.back().empty()) words.emplace_back();
        continue;
      }
      if (cpt == 0 || cpt == 0xFFFD || f.control) continue;
      if (strip_accents && f.accent_mark) continue;
      // Past U+10FFFF llama.cpp throws here (unicode_cpt_to_utf8) out of llama_tokenize,
      // which ends the program: refused, as any ids would be invented.
      const std::string s = cpt_to_utf8_strict(lowercase ? to_lower(cpt) : cpt);
      if (f.punctuation || (cpt < 0x7F && f.symbol) || is_chinese_char(cpt)) {
        if (!words.back().empty()) words.emplace_back();
        words.back() = s;  // a word of its own
        words.emplace_back();
      } else {
        words.back() += s;
      }
    }
    if (words.back().empty()) words.pop_back();
    return words;
  }

  const Vocab::Impl& v_;
  KeyTrie trie_;
};

}  // namespace

std::unique_ptr<Algorithm> make_wpm(const Vocab::Impl& v) { return std::make_unique<Wpm>(v); }

}  // namespace ggufkit::tokenizer
