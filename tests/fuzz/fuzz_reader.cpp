// libFuzzer: the header reader on any bytes, and what reads the header afterwards
// (accounting, the stack, decoding the first tensor). Only ggufkit::Error may come out.
#include <cstdint>
#include <vector>

#include "ggufkit/error.h"
#include "ggufkit/inspect.h"
#include "ggufkit/scan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ggufkit::Scanned s = ggufkit::scan(ggufkit::from_bytes("fuzz.gguf", std::vector<uint8_t>(data, data + size)));
    ggufkit::account_of(s);
    ggufkit::stack_of(s.model);
    ggufkit::quant_mix(s.model);
    for (const auto& t : s.model.tensors) {
      if (t.nbytes() <= (1u << 20)) ggufkit::hash_tensor(t, ggufkit::HashAlgo::sha256);
      try {
        if (t.nbytes() <= (1u << 20)) ggufkit::tensor_stats(t);
      } catch (const ggufkit::Error&) {  // a type it does not decode
      }
    }
  } catch (const ggufkit::Error&) {
  }
  return 0;
}
