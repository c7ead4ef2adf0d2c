// The alignment comes from the file's own general.alignment, or is 32.
#include <gtest/gtest.h>

#include <cstring>

#include "ggufkit/error.h"
#include "ggufkit/scan.h"
#include "ggufkit/writer.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;

namespace {
// A hand-made file: optional alignment KV, two f32 tensors of 3 and 5 values, padded by
// hand to `align` (not by ggufkit's writer).
std::vector<uint8_t> handmade(std::optional<uint32_t> alignment_kv, uint32_t align) {
  Bytes b;
  b.head(3, 2, alignment_kv ? 1 : 0);
  if (alignment_kv) b.str("general.alignment").u32(4).u32(*alignment_kv);
  uint64_t second = (12 + align - 1) / align * align;
  b.str("a").u32(1).u64(3).u32(0).u64(0);
  b.str("b").u32(1).u64(5).u32(0).u64(second);
  b.pad_to(align);
  for (int i = 0; i < 3; ++i) b.u32(0x3f800000);  // 1.0f
  b.pad_to(align);
  for (int i = 0; i < 5; ++i) b.u32(0x40000000);  // 2.0f
  b.pad_to(align);
  return b.b;
}
}  // namespace

TEST(Alignment, TheAlignmentComesOutOfTheFilesOwnMetadata) {
  for (uint32_t a : {16u, 64u, 4096u}) {
    auto bytes = handmade(a, a);
    Scanned s = scan(from_bytes("handmade", bytes));
    EXPECT_EQ(s.layout.alignment, a);
    EXPECT_EQ(s.layout.data_offset % a, 0u) << a;
    EXPECT_EQ(s.layout.data_offset, (s.layout.header_size + a - 1) / a * a) << a;
    EXPECT_EQ(s.model.tensors[1].source_offset, s.layout.data_offset + (12 + a - 1) / a * a) << a;
    EXPECT_EQ(s.layout.file_size, bytes.size()) << a;
    EXPECT_TRUE(s.model.pad_end);
    uint32_t first;
    std::memcpy(&first, bytes.data() + s.model.tensors[1].source_offset, 4);
    EXPECT_EQ(first, 0x40000000u) << a;
    // And ggufkit's writer makes the same bytes from what was read.
    EXPECT_EQ(to_bytes(s.model), bytes) << a;
  }
}

TEST(Alignment, AnAbsentAlignmentReadsAs32) {
  auto bytes = handmade(std::nullopt, 32);
  Scanned s = scan(from_bytes("handmade", bytes));
  EXPECT_EQ(s.layout.alignment, 32u);
  EXPECT_EQ(s.layout.header_size, 24u + 2 * (8 + 1 + 4 + 8 + 4 + 8));
  EXPECT_EQ(s.layout.data_offset, 96u);
  EXPECT_EQ(s.layout.tensor_offsets, (std::vector<uint64_t>{0, 32}));
  EXPECT_EQ(to_bytes(s.model), bytes);
}

TEST(Alignment, TheWriterPadsEveryTensorToTheModelsAlignment) {
  for (uint32_t a : {16u, 64u, 4096u}) {
    Model m;
    m.metadata.push_back({"general.alignment", Value::of_u32(a)});
    for (int i = 0; i < 3; ++i) {
      Tensor t;
      t.name = "t" + std::to_string(i);
      t.dims = {static_cast<uint64_t>(1 + i)};  // 4, 8 and 12 bytes: each padded to a
      t.source = from_bytes("t", f32_bytes(std::vector<float>(1 + i, 1.0f)));
      m.tensors.push_back(t);
    }
    Layout L = plan(m);
    check_layout(L);
    EXPECT_EQ(L.tensor_offsets, (std::vector<uint64_t>{0, a, 2 * static_cast<uint64_t>(a)})) << a;
    EXPECT_EQ(L.file_size, L.data_offset + 3 * static_cast<uint64_t>(a)) << a;
    Scanned s = scan(from_bytes("w", to_bytes(m)));
    EXPECT_EQ(s.layout, L) << a;
  }
}

TEST(Alignment, TheWriterRefusesAnAlignmentThatIsNotAU32PowerOfTwo) {
  Model m;
  m.metadata.push_back({"general.alignment", Value::of_u32(48)});
  try {
    plan(m);
    FAIL() << "alignment 48 was planned";
  } catch (const Error& e) {
    EXPECT_EQ(e.field, "general.alignment");
    EXPECT_EQ(e.message, "48 is not a power of two");
  }
  m.metadata.edit(0).value = Value::of_u64(64);
  EXPECT_THROW(plan(m), Error);
}
