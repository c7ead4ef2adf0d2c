#pragma once
// The key registry (schemas/keys.yaml): the standard keys, the type llama.cpp reads each
// with, the values it takes. Read by the patch applier (the type a new key gets) and by the
// rule book's key rules (key_type, key_range, ...), so it lives in check/, below both.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ggufkit/check.h"
#include "ggufkit/format.h"

namespace ggufkit {

// Who reads a key strictly typed (llama.cpp's get_key throws "key K has wrong type").
enum class KeyRead : uint8_t {
  some,       // some architectures, or none: another type is surprising, not refused
  model,      // llama.cpp's model load, from every model: another type is refused
  vocab,      // the vocabulary load: judged by the vocabulary's rules (vocab_refused)
  elsewhere,  // the strict reader or the shard set rules judge its type (general.alignment, split.*)
};

// A closed range of numbers; either end may be infinite.
struct KeyRange {
  double min, max;
  bool holds(double v) const { return v >= min && v <= max; }
};

// One standard key (schemas/keys.yaml): its type and the check a patch must pass.
struct KeySpec {
  std::string pattern;             // "general.name", "{arch}.context_length"
  ValueType type = ValueType::u8;
  ValueType items = ValueType::u8; // arrays: the element type
  KeyCheck check = KeyCheck::none; // check: in keys.yaml; which rules enforce it: check.h's enforces()
  KeyRead read = KeyRead::some;
  std::vector<ValueType> also;     // arrays: other element types llama.cpp takes (scores of i32)
  // llama.cpp's get_key_or_arr: the scalar, or an array of one item per block (block_count
  // items) of u32, i32 or bool (a u32 or i32 key) or of f32 (an f32 key).
  bool per_layer = false;
  std::optional<KeyRange> range;   // llama.cpp refuses a number outside it (key_range)
  std::optional<KeyRange> expect;  // a number outside it is surprising (key_value_unusual)
  bool positive = false;           // a number not above 0 is surprising (key_value_unusual)
  std::vector<std::string> values; // the only strings llama.cpp takes (key_range)

  // Whether llama.cpp takes a value of this type (the per-layer array's length aside).
  bool accepts(ValueType t, ValueType elem) const;
  // "u32", "array of f32 or i32", "u32, or an array of u32, i32 or bool": what llama.cpp takes.
  std::string wanted() const;
};

class Registry {
 public:
  // The registry built into the program (schemas/keys.yaml).
  static const Registry& builtin();
  // A registry from YAML text in the same format; an unknown check: value is an error.
  static Registry parse(const std::string& text, const std::string& name);

  // The spec of `key` in a file of architecture `arch`, or nullptr.
  const KeySpec* find(std::string_view key, std::string_view arch) const;
  uint64_t template_bytes() const { return template_bytes_; }
  size_t size() const { return specs_.size(); }

 private:
  std::vector<KeySpec> specs_;
  // Where find looks, so a header of a million keys is not matched against every pattern:
  // whole names, {arch} patterns by what follows the architecture, and the {name} patterns.
  std::unordered_map<std::string, size_t> exact_, after_arch_;
  std::vector<size_t> named_;
  uint64_t template_bytes_ = 1 << 20;
};

// "u32", "array of i32": a type as the messages write it.
std::string key_type_text(ValueType t, ValueType elem);

}  // namespace ggufkit
