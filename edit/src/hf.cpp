#include "hf.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "ggufkit/error.h"
#include "ggufkit/text.h"

namespace ggufkit::hf {

namespace {

// ---- Python's text rules, on UTF-8 ----

// The code point at i and its length, or length 0 where the bytes are not UTF-8 as
// Python's strict decoder has it (no overlong form, no surrogate, nothing past U+10FFFF).
size_t decode(std::string_view s, size_t i, uint32_t& cp) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  cp = n == 1 ? c : c & (0xFF >> (n + 1));
  for (size_t k = 1; k < n; ++k) {
    const unsigned char d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3F);
  }
  static constexpr uint32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kLeast[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

// The length of the line break at i as str.splitlines() counts breaks (\r\n is one), or 0.
size_t line_break(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c == '\r') return i + 1 < s.size() && s[i + 1] == '\n' ? 2 : 1;
  if (c == '\n' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e)) return 1;
  uint32_t cp = 0;
  if (c >= 0x80 && decode(s, i, cp) && (cp == 0x85 || cp == 0x2028 || cp == 0x2029)) return cp == 0x85 ? 2 : 3;
  return 0;
}

// The length of the whitespace character at i as str.split() has it, or 0.
size_t space_at(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f)) return 1;
  uint32_t cp = 0;
  size_t n = c >= 0x80 ? decode(s, i, cp) : 0;
  bool space = cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
               cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
  return n && space ? n : 0;
}

bool digit(char c) { return c >= '0' && c <= '9'; }
bool alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
char upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }
std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}
size_t digits_from(std::string_view s, size_t i) {
  size_t n = 0;
  while (i + n < s.size() && digit(s[i + n])) ++n;
  return n;
}

// ---- gguf-py's Metadata.get_model_id_components and id_to_title ----
// Letters are ASCII's: Hugging Face ids are ASCII. Elsewhere a byte past ASCII counts as
// a letter that has no case (its case is not changed).

// (v|iter)?\d+([.]\d+)*, ignoring case
bool is_version(std::string_view p) {
  const std::string l = lowered(p);
  size_t i = l.rfind("iter", 0) == 0 ? 4 : l.rfind('v', 0) == 0 ? 1 : 0;
  for (bool first = true;; first = false) {
    if (!first) {
      if (i == l.size()) return true;
      if (l[i++] != '.') return false;
    }
    size_t d = digits_from(l, i);
    if (d == 0) return false;
    i += d;
  }
}

// i?q\d(_\w)*|b?fp?(16|32), ignoring case
bool is_quant_type(std::string_view p) {
  const std::string l = lowered(p);
  auto word = [](char c) { return alpha(c) || digit(c) || c == '_'; };
  size_t i = l.rfind('i', 0) == 0 ? 1 : 0;
  if (i + 1 < l.size() && l[i] == 'q' && digit(l[i + 1])) {
    i += 2;
    while (i + 1 < l.size() && l[i] == '_' && word(l[i + 1])) i += 2;
    if (i == l.size()) return true;
  }
  i = l.rfind('b', 0) == 0 ? 1 : 0;
  if (i >= l.size() || l[i] != 'f') return false;
  ++i;
  if (i < l.size() && l[i] == 'p') ++i;
  return l.substr(i) == "16" || l.substr(i) == "32";
}

// (([A]|\d+[x])?\d+([._]\d+)?[KMBT][\d]?|small|mini|medium|large|x?xl), ignoring case
bool is_size(std::string_view p) {
  const std::string l = lowered(p);
  for (const char* w : {"small", "mini", "medium", "large", "xl", "xxl"})
    if (l == w) return true;
  size_t i = 0;
  if (!l.empty() && l[0] == 'a') i = 1;
  else if (size_t d = digits_from(l, 0); d && d < l.size() && l[d] == 'x') i = d + 1;
  size_t d = digits_from(l, i);
  if (d == 0) return false;
  i += d;
  if (i < l.size() && (l[i] == '.' || l[i] == '_')) {
    size_t e = digits_from(l, i + 1);
    if (e == 0) return false;
    i += 1 + e;
  }
  if (i >= l.size() || !std::strchr("kmbt", l[i])) return false;
  ++i;
  if (i < l.size() && digit(l[i])) ++i;
  return i == l.size();
}

// Python's float() of the texts a size label can leave: digits with one optional fraction.
std::optional<double> plain_decimal(std::string_view s) {
  size_t d = digits_from(s, 0);
  if (d == 0) return std::nullopt;
  if (d < s.size()) {
    const size_t f = digits_from(s, d + 1);
    if (s[d] != '.' || f == 0 || d + 1 + f != s.size()) return std::nullopt;
  }
  return std::strtod(std::string(s).c_str(), nullptr);
}

enum : unsigned { kVersion = 1, kType = 2, kSize = 4, kFinetune = 8, kBasename = 16 };

struct IdParts {
  std::optional<std::string> name, org, version;
};

IdParts id_components(const std::string& id, int64_t total) {
  IdParts out;
  if (id.find(' ') != std::string::npos) {  // a sentence: a name only
    out.name = id;
    return out;
  }
  std::string full = id;
  if (size_t slash = id.find('/'); slash != std::string::npos) {
    out.org = id.substr(0, slash);
    full = id.substr(slash + 1);
  }
  if (out.org && !out.org->empty() && (*out.org)[0] == '.') out.org.reset();  // ./ or ../, a path
  out.name = full;
  std::vector<std::string> parts;
  for (size_t at = 0; at <= full.size();) {
    size_t dash = std::min(full.find('-', at), full.size());
    if (dash > at) parts.push_back(full.substr(at, dash - at));
    at = dash + 1;
  }
  std::vector<unsigned> types(parts.size(), 0);
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string& part = parts[i];
    if (is_version(part)) {
      types[i] |= kVersion;
    } else if (is_quant_type(part)) {
      types[i] |= kType;
      for (char& c : part) c = upper(c);
    } else if (i > 0 && is_size(part)) {
      std::replace(part.begin(), part.end(), '_', '.');
      if (digit(part.back()))  // bloom-7b1: 7.1B
        part = part.substr(0, part.size() - 2) + "." + part.back() + part[part.size() - 2];
      if (part.size() > 1 && digit(part[part.size() - 2]) && std::strchr("kmbt", part.back())) part.back() = upper(part.back());
      if (total != 0) {
        if (std::optional<double> n = plain_decimal(std::string_view(part).substr(0, part.size() - 1))) {
          const size_t unit = std::string_view(" KMBT").find(part.back());
          const double label = *n * (unit == std::string_view::npos ? 0.001 : std::pow(1000.0, static_cast<double>(unit)));
          const int64_t abs_total = total < 0 ? -total : total;
          // Far from the model's size, a label is a context length, a finetune ("128k").
          if ((total < 0 && label < static_cast<double>(abs_total / 8)) ||
              (total > 0 && std::fabs(label - static_cast<double>(total)) > static_cast<double>(7 * (total / 8) + (7 * (total % 8)) / 8))) {
            types[i] |= kFinetune;
            part.back() = lower(part.back());
          }
        }
      }
      if (types[i] == 0) types[i] |= kSize;
    } else if (i > 0 && (lowered(part) == "chat" || lowered(part) == "instruct" || lowered(part) == "vision" || lowered(part) == "lora")) {
      types[i] |= total < 0 && lowered(part) == "lora" ? kType : kFinetune;
    }
  }
  // A word for a size ("mini") is no size label beside a number for one.
  bool numeric_size = false;
  for (size_t i = 0; i < parts.size(); ++i)
    if (types[i] & kSize) numeric_size = numeric_size || std::any_of(parts[i].begin(), parts[i].end(), digit);
  if (numeric_size)
    for (size_t i = 0; i < parts.size(); ++i)
      if ((types[i] & kSize) && std::all_of(parts[i].begin(), parts[i].end(), alpha)) types[i] &= ~kSize;
  bool at_start = true;
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool letter = alpha(parts[i][0]) || static_cast<unsigned char>(parts[i][0]) >= 0x80;
    if (at_start && ((types[i] == 0 && letter) || (types[i] & kVersion))) {
      types[i] |= kBasename;
    } else {
      at_start = false;
      if (types[i] == 0) types[i] |= kFinetune;
    }
  }
  for (size_t i = parts.size(); i-- > 0;) {  // a trailing version is no part of the basename
    if ((types[i] & kBasename) && std::popcount(types[i]) > 1) types[i] &= ~kBasename;
    else break;
  }
  std::string version;
  for (size_t i = 0; i < parts.size(); ++i)
    if ((types[i] & kVersion) && !(types[i] & kBasename)) version += (version.empty() ? "" : "-") + parts[i];
  if (!version.empty()) out.version = version;
  return out;
}

// Each word in title case unless it has a capital already, is a version (v1.2) or starts
// with a digit; the words split at '-' and white space, joined by one space.
std::string id_to_title(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '-') {
      ++i;
      continue;
    }
    if (size_t n = space_at(s, i)) {
      i += n;
      continue;
    }
    size_t end = i;
    while (end < s.size() && s[end] != '-' && !space_at(s, end)) ++end;
    std::string w(s.substr(i, end - i));
    i = end;
    bool has_lower = false, has_upper = false;
    for (char c : w) has_lower = has_lower || (c >= 'a' && c <= 'z'), has_upper = has_upper || (c >= 'A' && c <= 'Z');
    const bool version_word = digit(w[0]) || (w[0] == 'v' && is_version(w));  // ^(v\d+(\.\d+)*|\d.*)$
    if (has_lower && !has_upper && !version_word) {
      bool cased_before = false;
      for (char& c : w) {
        const bool letter = alpha(c);
        if (letter) c = cased_before ? lower(c) : upper(c);
        cased_before = letter || static_cast<unsigned char>(c) >= 0x80;
      }
    }
    out += (out.empty() ? "" : " ") + w;
  }
  return out;
}

// ---- PyYAML (YAML 1.1): what a plain scalar is read as ----

// (:[0-5]?[0-9])+ from i, each group followed by ':' or by `until` (0: the end); where it
// stops, or npos.
size_t sexagesimal(std::string_view s, size_t i, char until) {
  auto stop = [&](size_t at) { return at == s.size() ? until == 0 : s[at] == ':' || s[at] == until; };
  bool any = false;  // each group is one way or none: a digit after it would be no ':'
  while (i < s.size() && s[i] == ':') {
    if (i + 2 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '5' && digit(s[i + 2]) && stop(i + 3))
      i += 3;
    else if (i + 1 < s.size() && digit(s[i + 1]) && stop(i + 2))
      i += 2;
    else
      return std::string_view::npos;
    any = true;
  }
  return any ? i : std::string_view::npos;
}

size_t sign(std::string_view s) { return !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0; }

bool all_in(std::string_view s, const char* set) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) { return c && std::strchr(set, c); });
}

bool yaml11_int(std::string_view t) {
  std::string_view r = t.substr(sign(t));
  if (r.rfind("0b", 0) == 0) return all_in(r.substr(2), "01_");
  if (r.rfind("0x", 0) == 0) return all_in(r.substr(2), "0123456789abcdefABCDEF_");
  if (r == "0") return true;
  if (r.size() > 1 && r[0] == '0') return all_in(r.substr(1), "01234567_");
  if (r.empty() || r[0] < '1' || r[0] > '9') return false;
  size_t i = 1;
  while (i < r.size() && (digit(r[i]) || r[i] == '_')) ++i;
  return i == r.size() || sexagesimal(r, i, 0) == r.size();
}

// [eE][-+][0-9]+ from i to the end, or nothing there
bool exponent_to_end(std::string_view s, size_t i) {
  if (i == s.size()) return true;
  return (s[i] == 'e' || s[i] == 'E') && i + 1 < s.size() && (s[i + 1] == '-' || s[i + 1] == '+') &&
         digits_from(s, i + 2) > 0 && i + 2 + digits_from(s, i + 2) == s.size();
}

bool yaml11_float(std::string_view t) {
  for (const char* w : {".nan", ".NaN", ".NAN"})
    if (t == w) return true;
  std::string_view r = t.substr(sign(t));
  for (const char* w : {".inf", ".Inf", ".INF"})
    if (r == w) return true;
  auto digits_us = [&](size_t i) {
    while (i < r.size() && (digit(r[i]) || r[i] == '_')) ++i;
    return i;
  };
  if (!r.empty() && r[0] == '.' && sign(t) == 0 && r.size() > 1 && digit(r[1])) return exponent_to_end(r, digits_us(1));
  if (r.empty() || !digit(r[0])) return false;
  size_t i = digits_us(1);
  if (i < r.size() && r[i] == '.') return exponent_to_end(r, digits_us(i + 1));
  size_t j = sexagesimal(r, i, '.');  // 1:30.5
  return j != std::string_view::npos && j < r.size() && r[j] == '.' && digits_us(j + 1) == r.size();
}

bool yaml11_timestamp(std::string_view t) {
  auto n_digits = [&](size_t i, size_t lo, size_t hi) -> size_t {  // lo to hi digits at i: how many, or 0
    size_t d = std::min(digits_from(t, i), hi);
    return d >= lo ? d : 0;
  };
  if (t.size() == 10 && n_digits(0, 4, 4) && t[4] == '-' && n_digits(5, 2, 2) && t[7] == '-' && n_digits(8, 2, 2))
    return true;  // 2024-01-31
  if (n_digits(0, 4, 4) != 4 || t.size() < 5 || t[4] != '-') return false;
  size_t i = 5, d = n_digits(i, 1, 2);
  if (!d || (i += d) >= t.size() || t[i++] != '-') return false;
  if (!(d = n_digits(i, 1, 2))) return false;
  i += d;
  if (i < t.size() && (t[i] == 'T' || t[i] == 't')) {
    ++i;
  } else {
    const size_t blanks = i;
    while (i < t.size() && (t[i] == ' ' || t[i] == '\t')) ++i;
    if (i == blanks) return false;
  }
  if (!(d = n_digits(i, 1, 2))) return false;
  i += d;
  for (int k = 0; k < 2; ++k) {
    if (i >= t.size() || t[i++] != ':' || n_digits(i, 2, 2) != 2) return false;
    i += 2;
  }
  if (i < t.size() && t[i] == '.') i += 1 + digits_from(t, i + 1);
  while (i < t.size() && (t[i] == ' ' || t[i] == '\t')) ++i;
  if (i == t.size()) return true;
  if (t[i] == 'Z') return i + 1 == t.size();
  if (t[i] != '-' && t[i] != '+') return false;
  if (!(d = n_digits(++i, 1, 2))) return false;
  i += d;
  if (i == t.size()) return true;
  return t[i] == ':' && n_digits(i + 1, 2, 2) == 2 && i + 3 == t.size();
}

// What PyYAML's safe_load makes of a plain scalar that is not null: "" for a string, or
// what else it is.
std::string yaml11_kind(const std::string& t) {
  for (const char* w : {"yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE", "on", "On",
                        "ON", "off", "Off", "OFF"})
    if (t == w) return "a bool";
  if (yaml11_int(t)) return "an integer";
  if (yaml11_float(t)) return "a number";
  if (yaml11_timestamp(t)) return "a date";
  if (t == "=" || t == "<<") return "no value";
  return "";
}

// ---- README.md ----

class Card {
 public:
  Card(const std::string& name, std::vector<std::string> lines) : name_(name), lines_(std::move(lines)) {}

  // Where a node is in README.md: its line, and its column in the line before tabs became
  // two spaces each.
  std::string where(const YamlNode& n) const {
    if (n.line < 0 || static_cast<size_t>(n.line) >= lines_.size()) return yaml_where(name_, n.line, n.column);
    const std::string& line = lines_[n.line];
    int col = 0, shown = 0;
    while (static_cast<size_t>(col) < line.size() && shown < n.column) shown += line[col++] == '\t' ? 2 : 1;
    return yaml_where(name_, n.line, col);
  }
  [[noreturn]] void fail(const YamlNode& n, const std::string& field, const std::string& msg) const {
    throw Error(Error::Kind::format, where(n), std::nullopt, "`from_hf`", field + ": " + msg);
  }

  // A string as gguf-py's add_string takes one: text in quotes, or plain text YAML 1.1 reads
  // as a string. Null is no value.
  std::optional<std::string> text(const YamlNode& n, const std::string& field) const {
    if (n.IsNull() || !n) return std::nullopt;
    if (n.IsSequence()) fail(n, field, "expected a string, found a list");
    if (n.IsMap()) fail(n, field, "expected a string, found a mapping");
    if (!n.quoted)
      if (std::string kind = yaml11_kind(n.text); !kind.empty())
        fail(n, field, "expected a string; '" + n.text + "' is " + kind + " to YAML 1.1 (as the converter reads the card): write it in quotes");
    return n.text;
  }

  // A string or a list of strings, as a list; null is none.
  std::vector<YamlNode> texts(const YamlNode& n, const std::string& field) const {
    std::vector<YamlNode> out;
    if (n.IsNull() || !n) return out;
    if (n.IsMap()) fail(n, field, "expected a string or a list of strings, found a mapping");
    if (!n.IsSequence()) {
      out.push_back(scalar(*text(n, field), true));
      return out;
    }
    for (const YamlNode& item : n) {
      if (item.IsNull()) fail(item, field, "expected a string in the list, found null");
      out.push_back(scalar(*text(item, field), true));
    }
    return out;
  }

  // A value without a place: the patch's errors about it name the Entry's `from`.
  static YamlNode scalar(const std::string& s, bool quoted) {
    YamlNode n;
    n.kind = YamlNode::scalar;
    n.text = s;
    n.quoted = quoted;
    return n;
  }

  void set(const std::string& key, const std::string& value, const YamlNode& at) {
    if (value.empty()) return;  // gguf-py's add_string writes no empty string
    taken.sets.push_back({key, scalar(value, true), where(at), std::nullopt});
  }

  // The first of `fields` the card gives (not null), as gguf-py's use_model_card_metadata.
  void first_text(const YamlNode& card, const std::string& key, std::initializer_list<const char*> fields) {
    for (const char* f : fields) {
      const YamlNode& n = card[f];
      if (std::optional<std::string> t = text(n, f)) return set(key, *t, n);
    }
  }

  // base_model or datasets: a list of ids (a Hugging Face ORG/NAME, a URL) or of mappings,
  // as general.base_model.count and general.base_model.N.*.
  void sources(const YamlNode& card, const std::string& group, std::initializer_list<const char*> fields) {
    const YamlNode* value = nullptr;
    const char* field = nullptr;
    for (const char* f : fields)
      if (card[f]) {
        value = &card[f];
        field = f;
        break;
      }
    if (!value) return;
    if (value->IsMap()) fail(*value, field, "expected an id or a list of them, found a mapping");
    std::vector<const YamlNode*> items;
    if (value->IsSequence())
      for (const YamlNode& item : *value) items.push_back(&item);
    else if (!value->IsNull())
      items.push_back(value);
    const std::string prefix = "general." + group + ".";
    taken.groups.push_back(prefix);
    taken.sets.push_back({prefix + "count", scalar(std::to_string(items.size()), false), where(*value), std::nullopt});
    for (size_t i = 0; i < items.size(); ++i) {
      const YamlNode& item = *items[i];
      const std::string key = prefix + std::to_string(i) + ".";
      if (item.IsMap()) {  // written as given
        for (const char* f : {"name", "author", "version", "organization", "description", "url", "doi", "uuid", "repo_url"})
          if (std::optional<std::string> t = text(item[f], std::string(field) + "." + f)) set(key + f, *t, item[f]);
        continue;
      }
      if (item.IsNull() || item.IsSequence()) fail(item, field, "expected an id or a mapping in the list");
      const std::string id = *text(item, field);
      std::optional<std::string> hf_id = id;  // ORG/NAME, whose parts name the source
      bool url = false;
      for (const char* scheme : {"http://", "https://", "ssh://"}) url = url || id.rfind(scheme, 0) == 0;
      if (url) {
        hf_id.reset();
        // https?://huggingface.co/([^/]+/[^/]+)$ (the dot any character but a newline)
        size_t at = id.rfind("https://", 0) == 0 ? 8 : id.rfind("http://", 0) == 0 ? 7 : std::string::npos;
        if (id.find("huggingface.co") != std::string::npos && at != std::string::npos && id.compare(at, 11, "huggingface") == 0 &&
            at + 15 <= id.size() && id[at + 11] != '\n' && id.compare(at + 12, 3, "co/") == 0) {
          const std::string rest = id.substr(at + 15);
          const size_t slash = rest.find('/');
          if (slash != std::string::npos && slash > 0 && slash + 1 < rest.size() && rest.find('/', slash + 1) == std::string::npos)
            hf_id = rest;
        }
      }
      IdParts parts;
      if (hf_id) parts = id_components(*hf_id, 0);  // the version waits for the model's size
      if (parts.name) set(key + "name", id_to_title(*parts.name), item);
      if (hf_id) taken.sets.push_back({key + "version", {}, where(item), *hf_id});
      if (parts.org) set(key + "organization", id_to_title(*parts.org), item);
      if (url) set(key + "repo_url", id, item);
      else if (parts.org && parts.name) set(key + "repo_url", "https://huggingface.co/" + *parts.org + "/" + *parts.name, item);
    }
  }

  // tags and pipeline_tag, language and languages: one list.
  void list(const YamlNode& card, const std::string& key, std::initializer_list<const char*> fields) {
    YamlNode all;
    all.kind = YamlNode::seq;
    const YamlNode* first = nullptr;
    for (const char* f : fields) {
      for (YamlNode& n : texts(card[f], f)) all.items.push_back(std::move(n));
      if (!first && card[f]) first = &card[f];
    }
    if (!all.items.empty()) taken.sets.push_back({key, std::move(all), where(*first), std::nullopt});  // no empty array
  }

  Taken taken;

 private:
  const std::string& name_;
  std::vector<std::string> lines_;
};

}  // namespace

Taken model_card(const std::string& text, const std::string& name) {
  // Read as Python reads it: UTF-8 throughout, lines as str.splitlines() splits them.
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    size_t n = decode(text, i, cp);
    if (!n)
      throw Error(Error::Kind::format, name, i, "`from_hf`", "the model card is not UTF-8 (the converter reads it as UTF-8)");
    i += n;
  }
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    size_t end = at, brk = 0;
    while (end < text.size() && !(brk = line_break(text, end))) ++end;
    lines.push_back(text.substr(at, end - at));
    at = end + brk;
  }
  // Front matter: from a first line of exactly "---" to the next such line (or the end).
  if (lines.empty() || lines[0] != "---") return {};
  size_t end = 1;
  while (end < lines.size() && lines[end] != "---") ++end;
  lines.resize(end);
  lines[0].clear();  // the YAML's lines are the card's lines
  std::string yaml;
  for (const std::string& l : lines) yaml += l + "\n";
  // The converter's two repairs: "- no" is the language, not YAML 1.1's false; a tab
  // indents as two spaces.
  for (size_t at = 0; (at = yaml.find("- no\n", at)) != std::string::npos; at += 7) yaml.replace(at, 5, "- \"no\"\n");
  for (size_t at = 0; (at = yaml.find('\t', at)) != std::string::npos; at += 2) yaml.replace(at, 1, "  ");
  Card card(name, lines);
  // Characters YAML does not allow (PyYAML refuses them): C0 and C1 controls but tab and
  // newline, DEL, U+FFFE and U+FFFF.
  for (size_t i = 0, line = 0, col = 0; i < yaml.size();) {
    uint32_t cp = 0;
    size_t n = decode(yaml, i, cp);
    if ((cp < 0x20 && cp != '\t' && cp != '\n') || (cp >= 0x7F && cp <= 0x9F && cp != 0x85) || cp == 0xFFFE || cp == 0xFFFF) {
      YamlNode at;
      at.line = static_cast<int>(line);
      at.column = static_cast<int>(col);
      char u[16];
      std::snprintf(u, sizeof u, "U+%04X", static_cast<unsigned>(cp));
      throw Error(Error::Kind::format, card.where(at), std::nullopt, "yaml", std::string("the front matter has the control character ") + u + ", which YAML does not allow");
    }
    n = std::max<size_t>(n, 1);
    if (cp == '\n') ++line, col = 0;
    else col += n;
    i += n;
  }
  YamlNode root;
  try {
    root = load_yaml(yaml, name);
  } catch (const Error& e) {  // its column in the card, as it was before the tabs became spaces
    int line = 0, col = 0;
    if (e.file.size() > name.size() && std::sscanf(e.file.c_str() + name.size(), ":%d:%d", &line, &col) == 2) {
      YamlNode at;
      at.line = line - 1;
      at.column = col - 1;
      throw Error(e.kind, card.where(at), e.offset, e.field, e.message);
    }
    throw;
  }
  if (root.IsNull() || !root) return {};  // front matter with nothing in it
  if (!root.IsMap()) card.fail(root, "front matter", "expected a mapping of fields (license:, tags:, base_model: ...)");
  // In the order gguf-py's set_gguf_meta_model writes them.
  card.first_text(root, "general.name", {"name", "model_name"});
  card.first_text(root, "general.author", {"author", "model_author", "model_creator"});
  card.first_text(root, "general.version", {"version", "model_version"});
  card.first_text(root, "general.organization", {"organization", "model_organization"});
  card.first_text(root, "general.finetune", {"finetune", "model_finetune"});
  card.first_text(root, "general.basename", {"basename", "model_basename", "model_type"});
  card.first_text(root, "general.description", {"description", "model_description"});
  card.first_text(root, "general.size_label", {"size_label", "model_size_label"});
  if (const YamlNode& l = root["license"]; l.IsSequence()) {  // a list of licenses, joined by commas
    std::string joined;
    for (size_t i = 0; i < l.items.size(); ++i) {
      if (l.items[i].IsNull()) card.fail(l.items[i], "license", "expected a string in the list, found null");
      joined += (i ? "," : "") + *card.text(l.items[i], "license");
    }
    card.set("general.license", joined, l);
  } else {
    card.first_text(root, "general.license", {"license"});
  }
  card.first_text(root, "general.license.name", {"license_name"});
  card.first_text(root, "general.license.link", {"license_link"});
  card.first_text(root, "general.source.url", {"url", "model_url"});
  card.first_text(root, "general.source.doi", {"doi", "model_doi"});
  card.first_text(root, "general.source.uuid", {"uuid", "model_uuid"});
  card.first_text(root, "general.source.repo_url", {"repo_url", "model_repo_url"});
  card.sources(root, "base_model", {"base_model", "base_models", "base_model_sources"});
  card.sources(root, "dataset", {"datasets", "dataset", "dataset_sources"});
  card.list(root, "general.tags", {"tags", "pipeline_tag"});
  card.list(root, "general.languages", {"languages", "language"});
  return std::move(card.taken);
}

// ---- generation_config.json ----

std::vector<Entry> generation_config(const std::string& text, const std::string& name) {
  const YamlNode root = load_yaml(text, name);
  if (!root.IsMap()) throw Error(Error::Kind::format, yaml_where(name, root.line, root.column), std::nullopt, "`from_hf`", "expected a JSON object");
  std::vector<Entry> out;
  auto fail = [&](const YamlNode& n, const std::string& field, const std::string& msg) {
    throw Error(Error::Kind::format, yaml_where(name, n.line, n.column), std::nullopt, "`from_hf`", field + ": " + msg);
  };
  // JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?, the integer part alone an int.
  auto json_number = [](const std::string& t, bool& integer) {
    size_t i = t.size() && t[0] == '-' ? 1 : 0, d = digits_from(t, i);
    if (d == 0 || (d > 1 && t[i] == '0')) return false;
    i += d;
    integer = i == t.size();
    if (i < t.size() && t[i] == '.') {
      if (!(d = digits_from(t, i + 1))) return false;
      i += 1 + d;
    }
    if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
      ++i;
      if (i < t.size() && (t[i] == '-' || t[i] == '+')) ++i;
      if (!(d = digits_from(t, i))) return false;
      i += d;
    }
    return i == t.size();
  };
  enum Kind { text_, int32, float32 };
  struct Field {
    const char* key;
    std::initializer_list<const char*> from;  // the first present, even as null, as gguf-py's get
    Kind kind;
  };
  static const Field kFields[] = {
      {"sequence", {"sequence"}, text_},
      {"top_k", {"top_k"}, int32},
      {"top_p", {"top_p"}, float32},
      {"min_p", {"min_p"}, float32},
      {"xtc_probability", {"xtc_probability"}, float32},
      {"xtc_threshold", {"xtc_threshold"}, float32},
      {"temp", {"temperature"}, float32},
      {"penalty_last_n", {"penalty_last_n"}, int32},
      {"penalty_repeat", {"penalty_repeat", "repetition_penalty"}, float32},
      {"mirostat", {"mirostat"}, int32},
      {"mirostat_tau", {"mirostat_tau"}, float32},
      {"mirostat_eta", {"mirostat_eta"}, float32},
  };
  for (const Field& f : kFields) {
    const char* field = nullptr;
    for (const char* k : f.from)
      if (root[k]) {
        field = k;
        break;
      }
    if (!field || root[field].IsNull()) continue;  // missing or null: not written
    const YamlNode& n = root[field];
    const std::string key = std::string("general.sampling.") + f.key;
    YamlNode v;
    v.kind = YamlNode::scalar;
    bool integer = false;
    const bool number = n.IsScalar() && !n.quoted && json_number(n.text, integer);
    if (f.kind == text_) {
      if (!n.IsScalar() || !n.quoted) fail(n, field, "expected a string");
      if (n.text.empty()) continue;  // no empty string is written
      v.text = n.text;
      v.quoted = true;
    } else if (f.kind == int32) {
      if (!number || !integer) fail(n, field, "expected an integer (written as an i32)");
      errno = 0;
      long long x = std::strtoll(n.text.c_str(), nullptr, 10);
      if (errno == ERANGE || x < INT32_MIN || x > INT32_MAX) fail(n, field, n.text + " does not fit an i32");
      v.text = n.text;
    } else {
      const bool special = n.IsScalar() && !n.quoted && (n.text == "NaN" || n.text == "Infinity" || n.text == "-Infinity");
      if (!number && !special) fail(n, field, "expected a number (written as an f32)");
      // As Python: the text to the nearest double, that to the nearest float.
      const double d = n.text == "NaN" ? std::nan("") : n.text == "Infinity" ? INFINITY : n.text == "-Infinity" ? -INFINITY
                                                                                      : std::strtod(n.text.c_str(), nullptr);
      const float x = static_cast<float>(d);
      if (std::isinf(x) && !std::isinf(d)) fail(n, field, n.text + " is past the largest f32");
      v.text = number_text(Value::of_f32(x));
    }
    out.push_back({key, v, yaml_where(name, n.line, n.column), std::nullopt});
  }
  return out;
}

std::optional<std::string> id_version(const std::string& id, int64_t total_params) {
  return id_components(id, total_params).version;
}

int64_t parameter_count(const Model& model) {
  int64_t total = 0;
  std::optional<Tensor> lora_a;
  auto add = [](int64_t a, uint64_t b) {
    int64_t sum = 0;
    return b > static_cast<uint64_t>(INT64_MAX) || __builtin_add_overflow(a, static_cast<int64_t>(b), &sum) ? INT64_MAX : sum;
  };
  for (const Tensor& t : model.tensors) {
    const std::string_view name = t.name;
    auto ends = [&](std::string_view s) { return name.size() >= s.size() && name.substr(name.size() - s.size()) == s; };
    std::vector<uint64_t> dims = t.dims;
    if (ends(".lora_a")) {  // counted with its lora_b, as its rank
      lora_a = t;
      continue;
    }
    if (ends(".lora_b")) {
      if (!lora_a || lora_a->name != std::string(name.substr(0, name.size() - 1)) + "a" || dims.empty() || lora_a->dims.empty())
        return 0;  // a pair gguf-py cannot find: it counts nothing
      dims[0] = lora_a->dims[0];
    }
    uint64_t n = 1;
    for (uint64_t d : dims) n = d && n > UINT64_MAX / d ? UINT64_MAX : n * d;
    total = add(total, n);
  }
  return lora_a ? -total : total;  // negative: an adapter's, not exact
}

}  // namespace ggufkit::hf
