// libFuzzer: the Jinja parser on any text, then the walks validate makes over the tree. A
// syntax error is an answer; anything else (a crash, a sanitizer report, an escaped
// exception, a stack overflow) is a finding.
#include <cstdint>
#include <string_view>

#include "ggufkit/jinja.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ggufkit::jinja::Template t = ggufkit::jinja::parse(std::string_view(reinterpret_cast<const char*>(data), size));
    size_t n = 0;
    for (std::string_view lit : ggufkit::jinja::literals(t)) n += lit.size();
    if (ggufkit::jinja::mentions(t, "bos_token") && n == SIZE_MAX) __builtin_trap();  // keeps the walks
  } catch (const ggufkit::jinja::SyntaxError&) {
  }
  return 0;
}
