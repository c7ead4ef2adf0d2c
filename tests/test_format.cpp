// The format vocabulary: value kinds, ggml's type table, tensor sizes.
#include <gtest/gtest.h>

#include "ggufkit/format.h"

using namespace ggufkit;

TEST(TypeTable, ARowOfEveryBlockFamilyHasThePublishedSize) {
  struct Row { const char* name; uint32_t id, block, size; };
  for (Row r : {Row{"f16", 1, 1, 2}, Row{"q8_0", 8, 32, 34}, Row{"q4_K", 12, 256, 144},
                Row{"q6_K", 14, 256, 210}, Row{"iq4_xs", 23, 256, 136}, Row{"q4_0", 2, 32, 18},
                Row{"bf16", 30, 1, 2}, Row{"tq1_0", 34, 256, 54}, Row{"mxfp4", 39, 32, 17},
                Row{"f32", 0, 1, 4}, Row{"iq1_m", 29, 256, 56}, Row{"q2_K", 10, 256, 84},
                Row{"nvfp4", 40, 64, 36}, Row{"q1_0", 41, 128, 18}, Row{"q2_0", 42, 64, 18}}) {
    const GgmlType* t = ggml_type(r.id);
    ASSERT_NE(t, nullptr) << r.name;
    EXPECT_STREQ(t->name, r.name);
    EXPECT_EQ(t->block, r.block) << r.name;
    EXPECT_EQ(t->size, r.size) << r.name;
    EXPECT_FALSE(t->removed) << r.name;
    EXPECT_EQ(ggml_type_by_name(r.name), t);
  }
}

TEST(TypeTable, RemovedIdsAreKnownAsRemovedNotUnknown) {
  for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u}) {
    const GgmlType* t = ggml_type(id);
    ASSERT_NE(t, nullptr) << id;
    EXPECT_TRUE(t->removed) << id;
  }
  EXPECT_STREQ(ggml_type(4)->name, "q4_2");
  EXPECT_EQ(ggml_type(43), nullptr);  // past Q2_0: unknown
  EXPECT_EQ(ggml_type(0xFFFFFFFF), nullptr);
  int live = 0;
  for (uint32_t id = 0; id < kGgmlTypeCount; ++id) live += !ggml_type(id)->removed;
  EXPECT_EQ(live, 35);
}

TEST(TypeTable, NamesAreFoundWhateverTheCase) {
  EXPECT_EQ(ggml_type_by_name("Q4_K")->id, 12u);
  EXPECT_EQ(ggml_type_by_name("Q8_0")->id, 8u);
  EXPECT_EQ(ggml_type_by_name("nonsense"), nullptr);
}

TEST(TensorSize, BytesComeFromShapeAndTypeAlone) {
  std::vector<uint64_t> dims{4096, 32};
  EXPECT_EQ(*tensor_nbytes(*ggml_type_by_name("f32"), dims), 4096u * 32 * 4);
  EXPECT_EQ(*tensor_nbytes(*ggml_type_by_name("q4_K"), dims), 4096u / 256 * 144 * 32);
  EXPECT_EQ(*tensor_nbytes(*ggml_type_by_name("q8_0"), dims), 4096u / 32 * 34 * 32);
  std::vector<uint64_t> scalar{};
  EXPECT_EQ(*tensor_nbytes(*ggml_type_by_name("f32"), scalar), 4u);
  std::vector<uint64_t> empty{0, 7};
  EXPECT_EQ(*tensor_nbytes(*ggml_type_by_name("f16"), empty), 0u);
}

TEST(TensorSize, APartBlockIsRefusedWithTheReason) {
  std::string why;
  std::vector<uint64_t> dims{100, 2};
  EXPECT_FALSE(tensor_nbytes(*ggml_type_by_name("q4_K"), dims, &why));
  EXPECT_EQ(why, "ne0 = 100 is not a multiple of the q4_K block of 256");
}

TEST(TensorSize, OverflowingShapesAndRemovedTypesAreRefused) {
  std::string why;
  std::vector<uint64_t> huge{1ull << 32, 1ull << 32};
  EXPECT_FALSE(tensor_nbytes(*ggml_type_by_name("f32"), huge, &why));
  EXPECT_EQ(why, "the element count overflows 63 bits");
  std::vector<uint64_t> big_bytes{1ull << 61};  // fits as a count, not as f32 bytes
  EXPECT_FALSE(tensor_nbytes(*ggml_type_by_name("f32"), big_bytes, &why));
  EXPECT_EQ(why, "the size in bytes overflows 63 bits");
  std::vector<uint64_t> negative{1ull << 63, 0};
  EXPECT_FALSE(tensor_nbytes(*ggml_type_by_name("f32"), negative, &why));
  EXPECT_FALSE(tensor_nbytes(*ggml_type(4), huge, &why));
  EXPECT_EQ(why, "type q4_2 was removed from ggml and has no size");
}

TEST(Arithmetic, AlignUpRoundsToTheNextMultipleAndRefusesOverflow) {
  EXPECT_EQ(*align_up(327, 64), 384u);
  EXPECT_EQ(*align_up(384, 64), 384u);
  EXPECT_EQ(*align_up(0, 32), 0u);
  EXPECT_EQ(*align_up(1, 4096), 4096u);
  EXPECT_FALSE(align_up(UINT64_MAX - 3, 32));
  EXPECT_FALSE(align_up(5, 0));
  EXPECT_FALSE(checked_mul(1ull << 32, 1ull << 32));
  EXPECT_EQ(*checked_mul(1ull << 31, 1ull << 32), 1ull << 63);
}

TEST(ValueKinds, ThirteenKindsWithTheirWireNumbersAndWidths) {
  EXPECT_EQ(kValueTypeCount, 13u);
  EXPECT_EQ(static_cast<uint32_t>(ValueType::string), 8u);
  EXPECT_EQ(static_cast<uint32_t>(ValueType::array), 9u);
  EXPECT_EQ(static_cast<uint32_t>(ValueType::f64), 12u);
  EXPECT_EQ(value_type_width(ValueType::boolean), 1u);
  EXPECT_EQ(value_type_width(ValueType::u64), 8u);
  EXPECT_EQ(value_type_width(ValueType::string), 0u);
  EXPECT_EQ(*value_type_from_name("bool"), ValueType::boolean);
  EXPECT_STREQ(value_type_name(ValueType::i16), "i16");
  EXPECT_FALSE(value_type_from_name("float"));
}
