#pragma once
// llama.cpp's unicode_regex_split (internal): a text to the words a BPE vocabulary merges,
// by a list of expressions applied one after the other, each splitting the pieces the one
// before left. The code point facts come from ICU, the matching from PCRE2.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ggufkit::tokenizer {

// llama.cpp's unicode_cpt_flags bits: one general category per code point (every code point
// has one, so a position inside the text never has 0) and the White_Space property.
enum CptFlag : uint16_t {
  cpt_undefined = 1 << 0,    // Cn, and every value past U+10FFFF
  cpt_number = 1 << 1,       // N*
  cpt_letter = 1 << 2,       // L*
  cpt_separator = 1 << 3,    // Z*
  cpt_mark = 1 << 4,         // M*
  cpt_punctuation = 1 << 5,  // P*
  cpt_symbol = 1 << 6,       // S*
  cpt_control = 1 << 7,      // Cc Cf Co Cs
  cpt_categories = 0xff,
  cpt_whitespace = 1 << 8,
};

// unicode.cpp, from ICU.
uint16_t cpt_flags(uint32_t cpt);
std::vector<uint16_t> cpts_flags(const std::vector<uint32_t>& cpts);  // each one's, in one call
uint32_t cpt_tolower(uint32_t cpt);  // the simple lowercase mapping, as UnicodeData gives it
// llama.cpp's "Han": the CJK Unified Ideographs blocks (the base block, extensions A to F)
// and the two CJK Compatibility Ideographs blocks, not the Script property.
bool cpt_is_han(uint32_t cpt);
// A code point's UTF-8; past U+10FFFF an Error, where llama.cpp throws "invalid codepoint".
std::string cpt_to_utf8_strict(uint32_t cpt);

class PreTokenizer {
 public:
  // `exprs` as llama.cpp's llm_tokenizer_bpe lists them; `byte_encode`: each word's bytes
  // mapped by GPT-2's byte-to-unicode table (false: the words as UTF-8).
  PreTokenizer(const std::vector<std::string>& exprs, bool byte_encode);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // The words of a text, one after another in `bytes` (no string a word).
  struct Words {
    std::string bytes;
    std::vector<size_t> ends;  // where each word ends in `bytes`
    size_t size() const { return ends.size(); }
    std::string_view operator[](size_t i) const {
      size_t from = i == 0 ? 0 : ends[i - 1];
      return std::string_view(bytes).substr(from, ends[i] - from);
    }
  };
  Words split(std::string_view text) const;

  struct Step;

 private:
  std::vector<std::unique_ptr<Step>> steps_;
  bool byte_encode_ = true;
  bool collapse_ = false;  // some step matches on the collapsed text
};

}  // namespace ggufkit::tokenizer
