#include "ggufkit/byteorder.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace ggufkit {

namespace {

// A run of `count` fields of `width` bytes from `offset` in a block.
struct Fields {
  uint32_t offset, width, count = 1;
};
struct Layout {
  const char* type;
  std::vector<Fields> fields;  // empty: only bytes, nothing to swap
};

// From ggml-common.h's block structs: where each multi-byte field sits.
const std::vector<Layout>& layouts() {
  static const std::vector<Layout> t = {
      {"f32", {{0, 4}}},        {"f16", {{0, 2}}},        {"bf16", {{0, 2}}},       {"f64", {{0, 8}}},
      {"i8", {}},               {"i16", {{0, 2}}},        {"i32", {{0, 4}}},        {"i64", {{0, 8}}},
      {"q4_0", {{0, 2}}},       {"q4_1", {{0, 2, 2}}},    {"q5_0", {{0, 2}}},       {"q5_1", {{0, 2, 2}}},
      {"q8_0", {{0, 2}}},       {"q8_1", {{0, 2, 2}}},    {"q2_K", {{80, 2, 2}}},   {"q3_K", {{108, 2}}},
      {"q4_K", {{0, 2, 2}}},    {"q5_K", {{0, 2, 2}}},    {"q6_K", {{208, 2}}},
      {"q8_K", {{0, 4}, {260, 2, 16}}},                   // f32 d, int8 qs[256], int16 bsums[16]
      {"iq2_xxs", {{0, 2, 33}}},                          // f16 d, u16 qs[32]
      {"iq2_xs", {{0, 2, 33}}},                           // f16 d, u16 qs[32], u8 scales[8]
      {"iq3_xxs", {{0, 2}}},    {"iq1_s", {{0, 2}, {34, 2, 8}}},  // f16 d, u8 qs[32], u16 qh[8]
      {"iq4_nl", {{0, 2}}},     {"iq3_s", {{0, 2}}},      {"iq2_s", {{0, 2}}},
      {"iq4_xs", {{0, 2, 2}}},  // f16 d, u16 scales_h
      {"iq1_m", {}},            // its scale is packed in u8 scales[8]
      {"tq1_0", {{52, 2}}},     {"tq2_0", {{64, 2}}},     {"mxfp4", {}},            {"nvfp4", {}},
      {"q1_0", {{0, 2}}},       {"q2_0", {{0, 2}}},
  };
  return t;
}

const Layout* layout_of(const GgmlType& type) {
  for (const Layout& l : layouts())
    if (std::strcmp(l.type, type.name) == 0) return &l;
  return nullptr;
}

}  // namespace

bool can_swap(const GgmlType& type) { return !type.removed && layout_of(type) != nullptr; }

void swap_blocks(const GgmlType& type, uint8_t* data, uint64_t n_blocks) {
  const Layout* l = layout_of(type);
  if (!l) return;
  for (uint64_t b = 0; b < n_blocks; ++b, data += type.size)
    for (const Fields& f : l->fields)
      for (uint32_t k = 0; k < f.count; ++k) std::reverse(data + f.offset + k * f.width, data + f.offset + (k + 1) * f.width);
}

void SwappedSource::read_at(uint64_t offset, void* dst, size_t n) const {
  if (n == 0) return;
  uint64_t first = (offset - base_) / type_.size, last = (offset - base_ + n - 1) / type_.size;  // whole blocks
  std::vector<uint8_t> buf((last - first + 1) * type_.size);
  inner_.read_at(base_ + first * type_.size, buf.data(), buf.size());
  swap_blocks(type_, buf.data(), last - first + 1);
  std::memcpy(dst, buf.data() + (offset - base_ - first * type_.size), n);
}

ByteSource::Extent SwappedSource::extent(uint64_t offset, uint64_t limit) const {
  Extent e = inner_.extent(offset, limit);
  if (!e.hole || offset < base_) return {e.end, false};
  uint64_t first = base_ + (offset - base_ + type_.size - 1) / type_.size * type_.size;  // the first whole block
  uint64_t last = base_ + (e.end - base_) / type_.size * type_.size;                     // where the whole blocks end
  if (first > offset) return {std::min(first, e.end), false};  // the rest of a block that began in data
  if (last <= offset) return {e.end, false};                    // less than a block of hole
  return {last, true};
}

std::string swappable_types() {
  std::string s;
  for (const Layout& l : layouts()) s += (s.empty() ? "" : ", ") + std::string(l.type);
  return s;
}

}  // namespace ggufkit
