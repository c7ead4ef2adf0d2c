#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "ggufkit/format.h"
#include "ggufkit/model.h"
#include "ggufkit/yaml_tree.h"

namespace ggufkit {

// Typed values out of a YAML tree, shared by sketches and patches. Every error is a
// format Error naming the document, the line and column, and the entry it was reading.
class YamlReader {
 public:
  YamlReader(std::string name, std::string base_dir) : name_(std::move(name)), base_(std::move(base_dir)) {}

  [[noreturn]] void fail(const YamlNode& n, const std::string& entry, const std::string& msg) const;
  // Refuses fields not in `allowed`, and any field given twice.
  void fields(const YamlNode& map, const std::string& entry, std::initializer_list<const char*> allowed);
  // A mapping whose keys are free (patch keys) but each given once.
  void keys_once(const YamlNode& map, const std::string& entry);
  std::string scalar(const YamlNode& n, const std::string& entry);
  uint64_t unsigned_of(const YamlNode& n, const std::string& entry, uint32_t width);  // width in bytes
  int64_t signed_of(const YamlNode& n, const std::string& entry, uint32_t width);
  bool boolean(const YamlNode& n, const std::string& entry);
  // A number: decimal, nan, inf, -inf; `wide` parses as a double, else as a float.
  double number(const YamlNode& n, const std::string& entry, bool wide = true);
  ValueType value_type(const YamlNode& n, const std::string& entry);
  // A path relative to the document's folder.
  std::string resolve(const std::string& path) const;
  std::string read_text_file(const YamlNode& n, const std::string& entry);
  // A string: plain text, {file: PATH} or {hex: "..."} for bytes that are not UTF-8.
  std::string string_of(const YamlNode& n, const std::string& entry);
  std::vector<uint8_t> hex_of(const YamlNode& n, const std::string& entry);
  // Float bits: a number, or {bits: N} for an exact pattern (a NaN payload, say).
  uint64_t float_bits(const YamlNode& n, const std::string& entry, ValueType t);
  // A value of type t; arrays take their element type from holder's `items:`.
  Value value(ValueType t, const YamlNode& n, const YamlNode& holder, const std::string& entry, int depth = 0);

  const std::string& name() const { return name_; }
  // Whether a bool may be given as a raw byte (2, 255): sketches make broken fixtures; a
  // patch takes true/false only (unless --allow-broken).
  bool raw_bools = true;

 protected:
  std::string name_, base_;
};

}  // namespace ggufkit
