#include "ggufkit/yaml_tree.h"

#include <sys/stat.h>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <utility>

#include "ggufkit/error.h"
#include "ggufkit/path.h"
#include "ggufkit/source.h"

namespace ggufkit {

namespace {

// JSON writes a character past U+FFFF as a UTF-16 pair, "\ud83d\ude00" (Python's json.dump
// does so for every emoji); YAML has no such escape and yaml-cpp refuses either half. In a
// document that is JSON (it starts with { or [), each pair inside a double-quoted string
// becomes YAML's \U0001f600, two bytes shorter: `shifts` says where (line, and the column
// just after it in the new text), so that later positions on its line are told as in the
// original. The text is copied only when it has a pair.
using Shift = std::pair<int, int>;

int hex4(const std::string& t, size_t i) {  // the 4 hex digits at i, or -1
  if (i + 4 > t.size()) return -1;
  int v = 0;
  for (size_t k = i; k < i + 4; ++k) {
    char c = t[k];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

// The code point of the escaped pair "\uD8xx\uDCxx" at i, or 0.
uint32_t pair_at(const std::string& t, size_t i) {
  if (t.compare(i, 2, "\\u") != 0 || t.compare(i + 6, 2, "\\u") != 0) return 0;
  int hi = hex4(t, i + 2), lo = hex4(t, i + 8);
  if (hi < 0xD800 || hi > 0xDBFF || lo < 0xDC00 || lo > 0xDFFF) return 0;
  return 0x10000 + ((static_cast<uint32_t>(hi) - 0xD800) << 10) + (static_cast<uint32_t>(lo) - 0xDC00);
}

std::optional<std::string> join_surrogates(const std::string& text, std::vector<Shift>& shifts) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || (text[first] != '{' && text[first] != '[') || text.find("\\u") == std::string::npos)
    return std::nullopt;
  std::string out;
  enum { plain, dq, sq, comment } state = plain;
  int line = 0, column = 0;  // in `out`, counted in bytes as yaml-cpp counts them
  size_t copied = 0;         // text[copied, i) is still to be appended to out
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    size_t n = 1;
    if (state == dq && c == '\\') {
      if (uint32_t cp = pair_at(text, i)) {
        char esc[16];
        std::snprintf(esc, sizeof esc, "\\U%08x", static_cast<unsigned>(cp));
        out.append(text, copied, i - copied).append(esc);
        copied = i + 12;
        i += 12;
        column += 10;
        shifts.push_back({line, column});
        continue;
      }
      n = i + 1 < text.size() && text[i + 1] != '\n' ? 2 : 1;  // an escape's second byte is never a quote
    } else if (state == dq && c == '"') {
      state = plain;
    } else if (state == sq && c == '\'') {
      state = plain;  // '' inside is a close and an open
    } else if (state == plain && (c == '"' || c == '\'') && (i == 0 || std::strchr(" \t\r\n[{,:", text[i - 1]))) {
      state = c == '"' ? dq : sq;  // a quote that opens a scalar, not one inside a plain word (it's)
    } else if (state == plain && c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\n')) {
      state = comment;
    } else if (state == comment && c == '\n') {
      state = plain;
    }
    for (size_t k = i; k < i + n; ++k) {
      if (text[k] == '\n') line++, column = 0;
      else column++;
    }
    i += n;
  }
  if (shifts.empty()) return std::nullopt;
  out.append(text, copied, std::string::npos);
  return out;
}

// A position in the rewritten text as it was in the original.
YAML::Mark original(YAML::Mark m, const std::vector<Shift>& shifts) {
  auto from = std::lower_bound(shifts.begin(), shifts.end(), Shift{m.line, -1});
  auto to = std::upper_bound(shifts.begin(), shifts.end(), Shift{m.line, m.column});
  m.column += 2 * static_cast<int>(to - from);
  return m;
}

class Builder : public YAML::EventHandler {
 public:
  Builder(const std::string& name, const YamlLimits& limits, const std::vector<Shift>& shifts)
      : name_(name), limits_(limits), shifts_(shifts) {}

  YamlNode root;

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t a) override { add(m, a, YamlNode::null, ""); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override {
    fail(m, "aliases (*name) are not allowed: every value is written out where it is used");
  }
  // An explicit tag (!!binary, !!str, !mine) would change what the text means; it is
  // refused rather than stored as text. yaml-cpp gives "?" for a plain node, "!" for a quoted one.
  void no_tag(const YAML::Mark& m, const std::string& tag) {
    if (!tag.empty() && tag != "?" && tag != "!")
      fail(m, "YAML tags (" + (tag.rfind("tag:yaml.org,2002:", 0) == 0 ? "!!" + tag.substr(18) : tag) +
                  ") are not allowed; write the value plainly, raw bytes as {hex: \"...\"}");
  }
  void OnScalar(const YAML::Mark& m, const std::string& tag, YAML::anchor_t a, const std::string& v) override {
    no_tag(m, tag);
    if (v.size() > limits_.max_scalar)
      fail(m, "a value of " + std::to_string(v.size()) + " bytes is over the cap of " + std::to_string(limits_.max_scalar));
    add(m, a, YamlNode::scalar, v).quoted = tag == "!";  // yaml-cpp marks a quoted scalar so
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string& tag, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    no_tag(m, tag);
    open(m, a, YamlNode::seq);
  }
  void OnSequenceEnd() override { stack_.pop_back(); }
  void OnMapStart(const YAML::Mark& m, const std::string& tag, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    no_tag(m, tag);
    open(m, a, YamlNode::map);
  }
  void OnMapEnd() override {
    once(*stack_.back());
    stack_.pop_back();
  }
  void OnAnchor(const YAML::Mark& m, const std::string&) override {
    fail(m, "anchors (&name) are not allowed");
  }

 private:
  [[noreturn]] void fail(const YAML::Mark& at, const std::string& msg) const {
    const YAML::Mark m = original(at, shifts_);
    fail_at(m.line, m.column, msg);
  }
  [[noreturn]] void fail_at(int line, int column, const std::string& msg) const {
    throw Error(Error::Kind::format, yaml_where(name_, line, column), std::nullopt, syntax_of(name_), msg);
  }

  // A key given twice in one mapping is refused where it is given again, in every
  // document (Python's json would keep the last, yaml-cpp the first): one rule, no guess.
  void once(const YamlNode& map) const {
    std::vector<std::pair<const std::string*, size_t>> keys;  // sorted by text, then place
    for (size_t i = 0; i < map.items.size(); i += 2)
      if (map.items[i].kind == YamlNode::scalar) keys.push_back({&map.items[i].text, i});
    if (keys.size() < 2) return;
    std::sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
      return *a.first != *b.first ? *a.first < *b.first : a.second < b.second;
    });
    size_t again = map.items.size();
    for (size_t k = 1; k < keys.size(); ++k)
      if (*keys[k].first == *keys[k - 1].first && (k < 2 || *keys[k - 2].first != *keys[k].first))
        again = std::min(again, keys[k].second);
    if (again == map.items.size()) return;
    const YamlNode& key = map.items[again];
    fail_at(key.line, key.column, "'" + key.text + "' is given twice");
  }

  YamlNode& add(const YAML::Mark& at, YAML::anchor_t anchor, YamlNode::Kind k, const std::string& text) {
    if (anchor != YAML::NullAnchor) fail(at, "anchors (&name) are not allowed");
    if (++nodes_ > limits_.max_nodes) fail(at, "more than " + std::to_string(limits_.max_nodes) + " values");
    const YAML::Mark m = original(at, shifts_);
    YamlNode n;
    n.kind = k;
    n.line = m.line;
    n.column = m.column;
    n.text = text;
    if (stack_.empty()) {
      root = std::move(n);
      return root;
    }
    stack_.back()->items.push_back(std::move(n));
    return stack_.back()->items.back();
  }

  void open(const YAML::Mark& m, YAML::anchor_t a, YamlNode::Kind k) {
    if (stack_.size() >= limits_.max_depth) fail(m, "nested deeper than " + std::to_string(limits_.max_depth));
    YamlNode& n = add(m, a, k, "");
    stack_.push_back(&n);  // children go into n.items; n itself does not move until closed
  }

  const std::string& name_;
  const YamlLimits& limits_;
  const std::vector<Shift>& shifts_;
  std::vector<YamlNode*> stack_;
  uint64_t nodes_ = 0;
};

const YamlNode kAbsent;

}  // namespace

const YamlNode& YamlNode::operator[](const std::string& key) const {
  if (kind != map) return kAbsent;
  for (size_t i = 0; i + 1 < items.size(); i += 2)
    if (items[i].kind == scalar && items[i].text == key) return items[i + 1];
  return kAbsent;
}

std::string syntax_of(const std::string& name) {
  return name.size() >= 5 && name.compare(name.size() - 5, 5, ".json") == 0 ? "json" : "yaml";
}

std::string yaml_where(const std::string& name, int line, int column) {
  if (line < 0) return name;
  return name + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1);
}

namespace {
void check_size(uint64_t size, const std::string& name, const YamlLimits& limits) {
  if (size > limits.max_bytes)
    throw Error(Error::Kind::format, name, std::nullopt, syntax_of(name),
                "the document is " + std::to_string(size) + " bytes, over the cap of " + std::to_string(limits.max_bytes));
}
}  // namespace

std::string read_document(const std::string& path, const YamlLimits& limits) {
  struct stat st {};
  if (stat_path(path, st) == 0 && S_ISREG(st.st_mode)) check_size(static_cast<uint64_t>(st.st_size), path, limits);
  return read_small_file(path, limits.max_bytes);  // refused by its size before reading, where it has one
}

YamlNode load_yaml(const std::string& text, const std::string& name, const YamlLimits& limits) {
  check_size(text.size(), name, limits);
  std::vector<Shift> shifts;
  const std::optional<std::string> joined = join_surrogates(text, shifts);
  std::istringstream in(joined ? *joined : text);
  Builder b(name, limits, shifts);
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(b);
    if (parser.HandleNextDocument(b))
      throw Error(Error::Kind::format, name, std::nullopt, syntax_of(name), "expected one document, found more");
  } catch (const YAML::Exception& e) {
    const YAML::Mark m = original(e.mark, shifts);
    std::string msg = e.msg;
    // yaml-cpp's "invalid unicode: 55357" for half a pair: say what it is.
    if (unsigned long cp = msg.rfind("invalid unicode: ", 0) == 0 ? std::strtoul(msg.c_str() + 17, nullptr, 10) : 0;
        cp >= 0xD800 && cp <= 0xDFFF) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04lx", cp);
      msg = std::string(esc) + " is half of a UTF-16 surrogate pair, without its other half; a character past U+FFFF "
                               "is written as a pair, as \\ud83d\\ude00 for U+1F600";
    }
    throw Error(Error::Kind::format, yaml_where(name, m.line, m.column), std::nullopt, syntax_of(name), msg);
  }
  return std::move(b.root);
}

}  // namespace ggufkit
