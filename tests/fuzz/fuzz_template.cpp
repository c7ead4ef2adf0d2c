// libFuzzer: the Jinja parser on any text. A syntax error is an answer; anything else
// (a crash, a sanitizer report, an escaped exception, a stack overflow) is a finding.
#include <cstdint>
#include <string_view>

#include "ggufkit/jinja.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ggufkit::jinja::parse(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const ggufkit::jinja::SyntaxError&) {
  }
  return 0;
}
