// libFuzzer: the sketch reader on any YAML text, and writing what it accepts (small files).
#include <cstdint>
#include <string>

#include "ggufkit/error.h"
#include "ggufkit/sketch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ggufkit::Sketch s = ggufkit::parse_sketch(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml",
                                              "/nonexistent", {{"N", "1"}});
    if (ggufkit::plan(s.model).file_size <= (1u << 22) && s.truncate_at.value_or(0) <= (1u << 22))
      ggufkit::sketch_bytes(s);
  } catch (const ggufkit::Error&) {
  }
  return 0;
}
