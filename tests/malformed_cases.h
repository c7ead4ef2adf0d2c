#pragma once
// Handcrafted malformed files, grouped by the stage they break, each with the byte offset,
// the field and a part of the message the reader must give. Shared by the reader's tests
// and the differential test against llama.cpp's parser.
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace testing_helpers {

struct Case {
  const char* name;
  const char* stage;
  std::function<std::vector<uint8_t>()> build;
  uint64_t offset;
  std::string field;
  std::string message;  // a part of the message
};

// gtest prints a parameter with this; the name says it all.
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

const std::vector<Case>& malformed_cases();
// The valid file the cases break (two KVs, two f32 tensors).
std::vector<uint8_t> malformed_base();

}  // namespace testing_helpers
