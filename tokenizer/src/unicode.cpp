// The UTF-8 and byte-map facts of llama.cpp's unicode.cpp that every algorithm needs, and
// the code point facts its pre-tokenizers ask (from ICU).
#include <unicode/uchar.h>

#include <array>

#include "impl.h"
#include "pretokenize.h"

namespace ggufkit::tokenizer {

size_t utf8_len(char first_byte) {
  static constexpr size_t lookup[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return lookup[static_cast<uint8_t>(first_byte) >> 4];
}

namespace {
// One code point at `at`, advancing it; throws nothing: an invalid sequence is one byte
// that decodes as U+FFFD, as llama.cpp's unicode_cpts_from_utf8 does (it accepts overlong
// forms and surrogates as they come).
uint32_t decode(std::string_view s, size_t& at) {
  auto b = [&](size_t i) { return static_cast<uint8_t>(s[at + i]); };
  auto cont = [&](size_t i) { return at + i < s.size() && (b(i) & 0xc0) == 0x80; };
  uint8_t c = b(0);
  if (!(c & 0x80)) return at += 1, c;
  if (!(c & 0x40)) return at += 1, 0xFFFD;
  if (!(c & 0x20)) {
    if (!cont(1)) return at += 1, 0xFFFD;
    uint32_t r = ((c & 0x1fu) << 6) | (b(1) & 0x3fu);
    return at += 2, r;
  }
  if (!(c & 0x10)) {
    if (!cont(1) || !cont(2)) return at += 1, 0xFFFD;
    uint32_t r = ((c & 0x0fu) << 12) | ((b(1) & 0x3fu) << 6) | (b(2) & 0x3fu);
    return at += 3, r;
  }
  if (!(c & 0x08)) {
    if (!cont(1) || !cont(2) || !cont(3)) return at += 1, 0xFFFD;
    uint32_t r = ((c & 0x07u) << 18) | ((b(1) & 0x3fu) << 12) | ((b(2) & 0x3fu) << 6) | (b(3) & 0x3fu);
    return at += 4, r;
  }
  return at += 1, 0xFFFD;
}

// GPT-2's bytes_to_unicode: printable bytes stand for themselves, the other 68 for 256 + n.
struct ByteMap {
  std::array<uint32_t, 256> cpt{};
  ByteMap() {
    uint32_t next = 256;
    for (unsigned b = 0; b < 256; ++b) {
      bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      cpt[b] = printable ? b : next++;
    }
  }
};
const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}
}  // namespace

std::vector<uint32_t> cpts_from_utf8(std::string_view text, bool* verbatim) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    if (static_cast<uint8_t>(text[at]) < 0x80) {  // ASCII, most of any text
      out.push_back(static_cast<uint8_t>(text[at++]));
      continue;
    }
    const size_t from = at;
    const uint32_t c = decode(text, at);
    out.push_back(c);
    if (verbatim && at - from != cpt_utf8_len(c)) *verbatim = false;
  }
  return out;
}

void append_utf8(std::string& r, uint32_t cpt) {
  if (cpt <= 0x7f) {
    r += static_cast<char>(cpt);
  } else if (cpt <= 0x7ff) {
    r += static_cast<char>(0xc0 | (cpt >> 6));
    r += static_cast<char>(0x80 | (cpt & 0x3f));
  } else if (cpt <= 0xffff) {
    r += static_cast<char>(0xe0 | (cpt >> 12));
    r += static_cast<char>(0x80 | ((cpt >> 6) & 0x3f));
    r += static_cast<char>(0x80 | (cpt & 0x3f));
  } else if (cpt <= 0x10ffff) {
    r += static_cast<char>(0xf0 | (cpt >> 18));
    r += static_cast<char>(0x80 | ((cpt >> 12) & 0x3f));
    r += static_cast<char>(0x80 | ((cpt >> 6) & 0x3f));
    r += static_cast<char>(0x80 | (cpt & 0x3f));
  }  // past U+10FFFF: nothing, where llama.cpp throws
}

std::string cpt_to_utf8(uint32_t cpt) {
  std::string r;
  append_utf8(r, cpt);
  return r;
}

std::string byte_to_utf8(uint8_t byte) { return cpt_to_utf8(byte_map().cpt[byte]); }

int utf8_to_byte(std::string_view utf8) {
  size_t at = 0;
  if (utf8.empty()) return -1;
  uint32_t c = decode(utf8, at);
  if (at != utf8.size()) return -1;
  static const auto inverse = [] {  // the 256 code points are all below U+0144
    std::array<int16_t, 0x144> m;
    m.fill(-1);
    for (unsigned b = 0; b < 256; ++b) m[byte_map().cpt[b]] = static_cast<int16_t>(b);
    return m;
  }();
  return c < inverse.size() ? inverse[c] : -1;
}

namespace {
uint16_t icu_flags(uint32_t cpt);
}

// The flags of the first 2048 code points (ASCII, Latin, Greek, Cyrillic, Hebrew, Arabic: most
// of any text) from a table made once, the rest from ICU each time.
namespace {
const std::array<uint16_t, 0x800>& flags_table() {
  static const auto table = [] {
    std::array<uint16_t, 0x800> t{};
    for (uint32_t c = 0; c < t.size(); ++c) t[c] = icu_flags(c);
    return t;
  }();
  return table;
}
}  // namespace

uint16_t cpt_flags(uint32_t cpt) {
  const auto& table = flags_table();
  return cpt < table.size() ? table[cpt] : icu_flags(cpt);
}

std::vector<uint16_t> cpts_flags(const std::vector<uint32_t>& cpts) {
  const auto& table = flags_table();
  std::vector<uint16_t> out(cpts.size());
  for (size_t i = 0; i < cpts.size(); ++i) out[i] = cpts[i] < table.size() ? table[cpts[i]] : icu_flags(cpts[i]);
  return out;
}

namespace {
uint16_t icu_flags(uint32_t cpt) {
  if (cpt > 0x10ffff) return cpt_undefined;
  uint16_t f = 0;
  switch (u_charType(static_cast<UChar32>(cpt))) {
    case U_UNASSIGNED: f = cpt_undefined; break;
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_PRIVATE_USE_CHAR:
    case U_SURROGATE: f = cpt_control; break;
    case U_UPPERCASE_LETTER:
    case U_LOWERCASE_LETTER:
    case U_TITLECASE_LETTER:
    case U_MODIFIER_LETTER:
    case U_OTHER_LETTER: f = cpt_letter; break;
    case U_NON_SPACING_MARK:
    case U_ENCLOSING_MARK:
    case U_COMBINING_SPACING_MARK: f = cpt_mark; break;
    case U_DECIMAL_DIGIT_NUMBER:
    case U_LETTER_NUMBER:
    case U_OTHER_NUMBER: f = cpt_number; break;
    case U_SPACE_SEPARATOR:
    case U_LINE_SEPARATOR:
    case U_PARAGRAPH_SEPARATOR: f = cpt_separator; break;
    case U_DASH_PUNCTUATION:
    case U_START_PUNCTUATION:
    case U_END_PUNCTUATION:
    case U_CONNECTOR_PUNCTUATION:
    case U_OTHER_PUNCTUATION:
    case U_INITIAL_PUNCTUATION:
    case U_FINAL_PUNCTUATION: f = cpt_punctuation; break;
    default: f = cpt_symbol; break;  // Sm Sc Sk So
  }
  if (u_isUWhiteSpace(static_cast<UChar32>(cpt))) f |= cpt_whitespace;
  return f;
}
}  // namespace

uint32_t cpt_tolower(uint32_t cpt) {
  return cpt > 0x10ffff ? cpt : static_cast<uint32_t>(u_tolower(static_cast<UChar32>(cpt)));
}

bool cpt_is_han(uint32_t cpt) {
  if (cpt > 0x10ffff) return false;
  switch (ublock_getCode(static_cast<UChar32>(cpt))) {
    case UBLOCK_CJK_UNIFIED_IDEOGRAPHS:
    case UBLOCK_CJK_UNIFIED_IDEOGRAPHS_EXTENSION_A:
    case UBLOCK_CJK_UNIFIED_IDEOGRAPHS_EXTENSION_B:
    case UBLOCK_CJK_UNIFIED_IDEOGRAPHS_EXTENSION_C:
    case UBLOCK_CJK_UNIFIED_IDEOGRAPHS_EXTENSION_D:
    case UBLOCK_CJK_UNIFIED_IDEOGRAPHS_EXTENSION_E:
    case UBLOCK_CJK_UNIFIED_IDEOGRAPHS_EXTENSION_F:
    case UBLOCK_CJK_COMPATIBILITY_IDEOGRAPHS:
    case UBLOCK_CJK_COMPATIBILITY_IDEOGRAPHS_SUPPLEMENT: return true;
    default: return false;
  }
}

std::string cpt_to_utf8_strict(uint32_t cpt) {
  if (cpt > 0x10ffff) throw Error("", "invalid codepoint");
  return cpt_to_utf8(cpt);
}

}  // namespace ggufkit::tokenizer
