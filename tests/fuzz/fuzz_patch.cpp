// libFuzzer: the patch reader on any YAML text, applied to the walkthrough model and planned.
#include <cstdint>
#include <string>

#include "ggufkit/error.h"
#include "ggufkit/patch.h"
#include "ggufkit/writer.h"
#include "../walkthrough.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ggufkit::Patch p = ggufkit::parse_patch(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml", "/nonexistent");
    ggufkit::Model m = ggufkit::walkthrough_model();
    ggufkit::apply_patch(m, p);
    ggufkit::plan(m);
  } catch (const ggufkit::Error&) {
  }
  return 0;
}
