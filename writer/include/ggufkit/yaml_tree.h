#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ggufkit {

// A YAML document read with limits, for sketches and patches that come from strangers.
// Anchors and aliases are refused (no billion laughs), and so are documents over the
// size, depth, node or scalar caps. The tree is small: a node is a kind, a position and
// its text or children.
struct YamlLimits {
  uint64_t max_bytes = 64ull << 20;    // the whole document
  uint32_t max_depth = 64;             // nested lists and mappings
  uint64_t max_nodes = 16ull << 20;    // scalars, lists and mappings
  uint64_t max_scalar = 32ull << 20;   // one scalar's bytes
};

class YamlNode {
 public:
  enum Kind { absent, null, scalar, seq, map };

  Kind kind = absent;
  int line = -1, column = -1;  // 0-based, as yaml-cpp counts; -1 for an absent node
  std::string text;            // scalar
  bool quoted = false;         // a scalar written in quotes: text, never a number or a bool
  std::vector<YamlNode> items; // seq: the items; map: key, value, key, value, ...

  explicit operator bool() const { return kind != absent; }
  bool IsNull() const { return kind == null; }
  bool IsScalar() const { return kind == scalar; }
  bool IsSequence() const { return kind == seq; }
  bool IsMap() const { return kind == map; }
  const std::string& Scalar() const { return text; }
  size_t size() const { return kind == map ? items.size() / 2 : items.size(); }
  // A mapping's value for `key` (the first, if given twice), or an absent node.
  const YamlNode& operator[](const std::string& key) const;
  // A list's item.
  const YamlNode& operator[](size_t i) const { return items.at(i); }
  std::vector<YamlNode>::const_iterator begin() const { return items.begin(); }
  std::vector<YamlNode>::const_iterator end() const { return items.end(); }
};

// Parses one document; errors are format Errors naming `name`, the line and the column.
YamlNode load_yaml(const std::string& text, const std::string& name, const YamlLimits& limits = {});

// A document's text from a regular file, refused by its size before it is read.
std::string read_document(const std::string& path, const YamlLimits& limits = {});

// The field a document's errors name: "json" for a .json file (read by the same parser,
// JSON being YAML), "yaml" for anything else.
std::string syntax_of(const std::string& name);
// "name:line:col" (1-based), or the name alone for a node without a position.
std::string yaml_where(const std::string& name, int line, int column);

}  // namespace ggufkit
