// The UTF-8 and byte-map facts of llama.cpp's unicode.cpp that every algorithm needs.
#include <array>

#include "impl.h"

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

std::vector<uint32_t> cpts_from_utf8(std::string_view text) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) out.push_back(decode(text, at));
  return out;
}

std::string cpt_to_utf8(uint32_t cpt) {
  std::string r;
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
  }
  return r;  // past U+10FFFF: nothing, where llama.cpp throws
}

std::string byte_to_utf8(uint8_t byte) { return cpt_to_utf8(byte_map().cpt[byte]); }

int utf8_to_byte(std::string_view utf8) {
  size_t at = 0;
  if (utf8.empty()) return -1;
  uint32_t c = decode(utf8, at);
  if (at != utf8.size()) return -1;
  static const auto inverse = [] {
    std::unordered_map<uint32_t, int> m;
    for (unsigned b = 0; b < 256; ++b) m[byte_map().cpt[b]] = static_cast<int>(b);
    return m;
  }();
  auto it = inverse.find(c);
  return it == inverse.end() ? -1 : it->second;
}

}  // namespace ggufkit::tokenizer
