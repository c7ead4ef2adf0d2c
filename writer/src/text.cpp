#include "ggufkit/text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace ggufkit {

namespace {
// Length of the valid UTF-8 sequence starting at s[i], or 0; its code point in *cp.
size_t utf8_len(std::string_view s, size_t i, uint32_t* cp) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  uint32_t v = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    v = (v << 6) | (b(i + k) & 0x3F);
  }
  static const uint32_t min_for_len[] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < min_for_len[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;  // overlong, too big, surrogate
  *cp = v;
  return n;
}

// Control characters, C1 controls, line and paragraph separators, non-characters, and the
// bidirectional controls (U+202E would turn the rest of a printed line around).
bool needs_escape(uint32_t cp) {
  return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0xFEFF || cp == 0xFFFE || cp == 0xFFFF || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200E || cp == 0x200F || cp == 0x061C;
}
}  // namespace

std::string shell_quoted(std::string_view s) {
  static const std::string_view plain = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./,+@%:=";
  if (!s.empty() && s[0] != '-' && s.find_first_not_of(plain) == std::string_view::npos) return std::string(s);
  const bool control = std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
  if (!control) {
    std::string r = "'";
    for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return r + "'";
  }
  static const char* hex = "0123456789abcdef";
  std::string r = "$'";
  for (unsigned char c : s) {
    if (c == '\'' || c == '\\') r += '\\', r += static_cast<char>(c);
    else if (c < 0x20 || c == 0x7f) r += "\\x", r += hex[c >> 4], r += hex[c & 15];
    else r += static_cast<char>(c);
  }
  return r + "'";
}

std::string json_string(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    size_t n = utf8_len(s, i, &cp);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (cp == '"') {
      out += "\\\"";
    } else if (cp == '\\') {
      out += "\\\\";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (needs_escape(cp)) {
      char buf[16];  // "\\uXXXX" and its NUL; the compiler cannot see cp <= 0xFFFF here
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  out += '"';
  return out;
}

namespace {
// terminal_text, and with `one_line` terminal_name.
std::string terminal(std::string_view s, bool one_line) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    size_t n = utf8_len(s, i, &cp);
    char buf[16];
    if (n == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(s[i])));
      out += buf;
      ++i;
      continue;
    }
    if (one_line && (cp == '\n' || cp == '\t')) {
      out += cp == '\n' ? "\\n" : "\\t";
    } else if (cp != '\n' && cp != '\t' && needs_escape(cp)) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}
}  // namespace

std::string terminal_text(std::string_view s) { return terminal(s, false); }
std::string terminal_name(std::string_view s) { return terminal(s, true); }

std::string hex_text(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string h;
  h.reserve(2 * bytes.size());
  for (unsigned char c : bytes) {
    h += digits[c >> 4];
    h += digits[c & 15];
  }
  return h;
}

std::string number_text(const Value& v) {
  if (v.type == ValueType::boolean) return v.bits == 0 ? "false" : v.bits == 1 ? "true" : std::to_string(v.bits);
  if (!is_float(v.type)) return is_signed(v.type) ? std::to_string(v.as_i64()) : std::to_string(v.bits);
  double d = v.as_f64();
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = v.type == ValueType::f32 ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(d))
                                    : std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

std::string brief_value(const Value& v, size_t max) {
  if (v.type == ValueType::string) {
    if (v.str.size() <= max) return json_string(v.str);
    size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(v.str[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
    return json_string(v.str.substr(0, cut)) + "... (" + std::to_string(v.str.size()) + " bytes)";
  }
  if (v.type != ValueType::array) return number_text(v);
  std::string s = "[";
  size_t shown = 0;
  v.each([&](const Value& item) {
    if (s.size() >= max) return false;
    s += (shown++ ? ", " : "") + brief_value(item, max / 3);
    return true;
  });
  if (shown < v.size()) s += ", ...";
  return s + "] (" + std::to_string(v.size()) + " " + value_type_name(v.elem) + ")";
}

}  // namespace ggufkit
