#include "ggufkit/yaml_values.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <filesystem>
#include <set>

#include "ggufkit/error.h"
#include "ggufkit/source.h"

namespace ggufkit {

namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxFileString = 64ull << 20;  // a string read from a file
constexpr int kMaxDepth = 32;                     // deeper than readers allow, for fixtures

// Decimal or 0x-hex with an optional sign: (negative, magnitude).
std::optional<std::pair<bool, uint64_t>> parse_integer(std::string_view s) {
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return std::make_pair(neg, v);
}

std::vector<uint8_t> parse_hex(std::string_view s, bool* ok) {
  std::vector<uint8_t> out;
  int high = -1;
  *ok = true;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    int v = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
            : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
            : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                        : -1;
    if (v < 0) *ok = false;
    if (high < 0) {
      high = v;
    } else {
      out.push_back(static_cast<uint8_t>(high << 4 | v));
      high = -1;
    }
  }
  if (high >= 0) *ok = false;
  return out;
}

}  // namespace

void YamlReader::fail(const YamlNode& n, const std::string& entry, const std::string& msg) const {
  throw Error(Error::Kind::format, yaml_where(name_, n.line, n.column), std::nullopt, entry, msg);
}

// Refuses fields not in `allowed`, and any field given twice.
void YamlReader::keys_once(const YamlNode& map, const std::string& entry) {
  if (!map.IsMap()) fail(map, entry, "expected a mapping");
  std::set<std::string> seen;
  for (size_t i = 0; i < map.items.size(); i += 2) {
    const YamlNode& key = map.items[i];
    if (!key.IsScalar()) fail(key, entry, "a field name must be a plain word");
    if (!seen.insert(key.Scalar()).second) fail(key, entry, "'" + key.Scalar() + "' is given twice");
  }
}

void YamlReader::fields(const YamlNode& map, const std::string& entry, std::initializer_list<const char*> allowed) {
  keys_once(map, entry);
  for (size_t i = 0; i < map.items.size(); i += 2) {
    const std::string& k = map.items[i].Scalar();
    bool ok = false;
    std::string list;
    for (const char* a : allowed) {
      ok = ok || k == a;
      list += std::string(list.empty() ? "" : ", ") + a;
    }
    if (!ok) fail(map.items[i], entry, "unknown field '" + k + "'; expected one of: " + list);
  }
}

std::string YamlReader::scalar(const YamlNode& n, const std::string& entry) {
  if (!n.IsScalar()) fail(n, entry, n.IsNull() ? "no value given" : "expected a single value, not a list or mapping");
  return n.Scalar();
}

uint64_t YamlReader::unsigned_of(const YamlNode& n, const std::string& entry, uint32_t width) {
  std::string t = scalar(n, entry);
  auto v = parse_integer(t);
  if (!v) fail(n, entry, "expected an integer, found '" + clipped(t) + "'");
  uint64_t max = width >= 8 ? UINT64_MAX : (1ull << (8 * width)) - 1;
  if ((v->first && v->second != 0) || v->second > max)
    fail(n, entry, "value " + clipped(t) + " is out of range for u" + std::to_string(8 * width) + " (0 to " +
                       std::to_string(max) + ")");
  return v->second;
}

int64_t YamlReader::signed_of(const YamlNode& n, const std::string& entry, uint32_t width) {
  std::string t = scalar(n, entry);
  auto v = parse_integer(t);
  if (!v) fail(n, entry, "expected an integer, found '" + clipped(t) + "'");
  uint64_t lim = 1ull << (8 * width - 1);  // |min|; max is lim - 1
  if (v->first ? v->second > lim : v->second >= lim)
    fail(n, entry, "value " + clipped(t) + " is out of range for i" + std::to_string(8 * width) + " (-" + std::to_string(lim) +
                       " to " + std::to_string(lim - 1) + ")");
  return v->first ? static_cast<int64_t>(0 - v->second) : static_cast<int64_t>(v->second);
}

// true/false, and YAML 1.1's yes/no, each in lower case, Capitalised or UPPER.
static std::optional<bool> bool_word(const std::string& t) {
  for (const char* w : {"true", "True", "TRUE", "yes", "Yes", "YES"})
    if (t == w) return true;
  for (const char* w : {"false", "False", "FALSE", "no", "No", "NO"})
    if (t == w) return false;
  return std::nullopt;
}

bool YamlReader::boolean(const YamlNode& n, const std::string& entry) {
  std::string t = scalar(n, entry);
  if (auto b = bool_word(t)) return *b;
  fail(n, entry, "expected true or false, found '" + clipped(t) + "'");
}

// A number: decimal, nan, inf, -inf. `wide` parses as double, else as float.
double YamlReader::number(const YamlNode& n, const std::string& entry, bool wide) {
  std::string t = scalar(n, entry);
  std::string l = t;
  for (auto& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "nan" || l == ".nan") return std::nan("");
  if (l == "inf" || l == ".inf" || l == "+inf" || l == "+.inf") return INFINITY;
  if (l == "-inf" || l == "-.inf") return -INFINITY;
  const char* b = t.data() + (t[0] == '+' ? 1 : 0);
  std::from_chars_result r;
  double d = 0;
  if (wide) {
    r = std::from_chars(b, t.data() + t.size(), d);
  } else {
    float f = 0;
    r = std::from_chars(b, t.data() + t.size(), f);
    d = f;
  }
  if (r.ec == std::errc::result_out_of_range) fail(n, entry, "value " + clipped(t) + " is out of range for " + (wide ? "f64" : "f32"));
  if (r.ec != std::errc() || r.ptr != t.data() + t.size()) fail(n, entry, "expected a number, found '" + clipped(t) + "'");
  return d;
}

ValueType YamlReader::value_type(const YamlNode& n, const std::string& entry) {
  std::string t = scalar(n, entry);
  auto vt = value_type_from_name(t);
  if (!vt) fail(n, entry, "unknown type '" + t + "'; expected u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool string array");
  return *vt;
}

std::string YamlReader::resolve(const std::string& path) const {
  return fs::path(path).is_absolute() ? path : (fs::path(base_) / path).string();
}

std::string YamlReader::read_text_file(const YamlNode& n, const std::string& entry) {
  std::string p = resolve(scalar(n, entry));
  try {
    return read_small_file(p, kMaxFileString);  // pipes and /proc files whole, under the cap
  } catch (const Error& e) {
    fail(n, entry, e.what());
  }
}

// A string: plain text, {file: PATH} or {hex: "..."} for bytes that are not UTF-8.
std::string YamlReader::string_of(const YamlNode& n, const std::string& entry) {
  if (n.IsMap()) {
    fields(n, entry, {"file", "hex"});
    if (n.size() != 1) fail(n, entry, "give one of file: or hex:");
    if (n["file"]) return read_text_file(n["file"], entry);
    auto bytes = hex_of(n["hex"], entry);
    return std::string(bytes.begin(), bytes.end());
  }
  return scalar(n, entry);
}

// Float bits: a number, or {bits: N} for an exact pattern (a NaN payload, say).
std::vector<uint8_t> YamlReader::hex_of(const YamlNode& n, const std::string& entry) {
  bool ok;
  auto bytes = parse_hex(scalar(n, entry), &ok);
  if (!ok) fail(n, entry, "expected pairs of hex digits");
  return bytes;
}

uint64_t YamlReader::float_bits(const YamlNode& n, const std::string& entry, ValueType t) {
  uint32_t w = value_type_width(t);
  if (n.IsMap()) {
    fields(n, entry, {"bits"});
    return unsigned_of(n["bits"], entry, w);
  }
  double d = number(n, entry, t == ValueType::f64);
  if (t == ValueType::f64) return Value::of_f64(d).bits;
  return Value::of_f32(static_cast<float>(d)).bits;
}

Value YamlReader::value(ValueType t, const YamlNode& n, const YamlNode& holder, const std::string& entry, int depth) {
  if (!n) fail(holder, entry, "no value: given");
  switch (t) {
    case ValueType::string: return Value::of_string(string_of(n, entry));
    case ValueType::boolean: {
      if (n.IsScalar())
        if (auto b = bool_word(n.Scalar())) return Value::of_bool(*b);
      if (!raw_bools) boolean(n, entry);  // says what was expected
      return Value::scalar(t, unsigned_of(n, entry, 1));  // a raw byte such as 2
    }
    case ValueType::f32: case ValueType::f64: return Value::scalar(t, float_bits(n, entry, t));
    case ValueType::array: {
      if (depth >= kMaxDepth) fail(n, entry, "arrays nested deeper than " + std::to_string(kMaxDepth));
      if (!holder["items"]) fail(holder, entry, "an array needs items: (its element type)");
      ValueType elem = value_type(holder["items"], entry);
      if (!n.IsSequence()) fail(n, entry, "expected a list of values");
      std::vector<Value> items;
      items.reserve(n.size());
      for (size_t i = 0; i < n.size(); ++i) {
        const YamlNode& item = n[i];
        if (elem == ValueType::array) {
          std::string sub = entry + "[" + std::to_string(i) + "]";
          fields(item, sub, {"items", "value"});
          items.push_back(value(elem, item["value"], item, sub, depth + 1));
        } else {
          items.push_back(value(elem, item, holder, entry, depth + 1));
        }
      }
      return Value::array(elem, std::move(items));
    }
    default: {
      uint32_t w = value_type_width(t);
      if (is_signed(t)) {
        uint64_t bits = static_cast<uint64_t>(signed_of(n, entry, w));
        return Value::scalar(t, w == 8 ? bits : bits & ((1ull << (8 * w)) - 1));
      }
      return Value::scalar(t, unsigned_of(n, entry, w));
    }
  }
}


}  // namespace ggufkit
