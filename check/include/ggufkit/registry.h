#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ggufkit/check.h"
#include "ggufkit/format.h"

namespace ggufkit {

// One standard key (schemas/keys.yaml): its type and the check a patch must pass.
struct KeySpec {
  std::string pattern;             // "general.name", "{arch}.context_length"
  ValueType type = ValueType::u8;
  ValueType items = ValueType::u8; // arrays: the element type
  KeyCheck check = KeyCheck::none; // check: in keys.yaml; which rules enforce it: check.h's enforces()
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
  uint64_t template_bytes_ = 1 << 20;
};

}  // namespace ggufkit
