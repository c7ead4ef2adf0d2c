#pragma once
// The walkthrough's 408-byte file built by hand, value by value: five KVs, one 3 x 2 f32
// tensor holding 0.5 ... 5.5, alignment 64, the last tensor not padded. The program writes
// the same file from examples/sketch-408.yaml (`ggufkit example`); the tests pin its spans
// and hold the sketch to this independent build of it.
#include <cstring>
#include <vector>

#include "ggufkit/model.h"
#include "ggufkit/source.h"

namespace ggufkit {

inline Model walkthrough_model() {
  Model m;
  m.metadata = {
      {"general.architecture", Value::of_string("counts")},
      {"general.name", Value::of_string("Counts walkthrough file")},
      {"general.alignment", Value::of_u32(64)},
      {"counts.block_count", Value::of_u32(1)},
      {"counts.tokens", Value::strings({"alpha", "bravo", "delta"})},
  };
  std::vector<uint8_t> data;
  for (float f : {0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f}) {
    uint8_t b[4];
    std::memcpy(b, &f, 4);  // little-endian host, as the file
    data.insert(data.end(), b, b + 4);
  }
  Tensor t;
  t.name = "blk.0.counts.weight";
  t.dims = {3, 2};
  t.type = 0;  // f32
  t.source = from_bytes("walkthrough tensor", std::move(data));
  m.tensors.push_back(std::move(t));
  m.pad_end = false;
  return m;
}

}  // namespace ggufkit
