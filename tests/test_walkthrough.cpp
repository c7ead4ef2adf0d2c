// The walkthrough's 408-byte file, span by span, and the pitfall it was made to show.
#include <gtest/gtest.h>

#include <cstring>

#include "ggufkit/scan.h"
#include "ggufkit/writer.h"
#include "helpers.h"
#include "walkthrough.h"

using namespace ggufkit;
using namespace testing_helpers;

namespace {
std::vector<float> floats_at(const std::vector<uint8_t>& file, uint64_t at, size_t n) {
  std::vector<float> v(n);
  std::memcpy(v.data(), file.data() + at, n * 4);
  return v;
}
}  // namespace

TEST(Walkthrough, TheWrittenFileHasEverySpanWhereTheWalkthroughSays) {
  std::string path = temp_path("walkthrough.gguf");
  Layout L = write_file(walkthrough_model(), path);
  auto file = read_file_bytes(path);
  ASSERT_EQ(file.size(), 408u);
  EXPECT_EQ(L.file_size, 408u);

  // The head: 24 bytes in four fields.
  ASSERT_GE(L.spans.size(), 4u);
  EXPECT_EQ(L.spans[0], (LabeledSpan{SpanKind::magic, {0, 4}, ""}));
  EXPECT_EQ(L.spans[1], (LabeledSpan{SpanKind::version, {4, 4}, ""}));
  EXPECT_EQ(L.spans[2], (LabeledSpan{SpanKind::tensor_count, {8, 8}, ""}));
  EXPECT_EQ(L.spans[3], (LabeledSpan{SpanKind::kv_count, {16, 8}, ""}));

  // Each KV is key + type + value; their totals are 46, 55, 33, 34 and 76 bytes.
  const uint64_t kv_sizes[] = {46, 55, 33, 34, 76};
  const char* keys[] = {"general.architecture", "general.name", "general.alignment", "counts.block_count",
                        "counts.tokens"};
  uint64_t at = 24;
  for (int i = 0; i < 5; ++i) {
    std::string path_i = "kv[" + std::to_string(i) + "] " + keys[i];
    const LabeledSpan* k = L.find(SpanKind::kv_key, path_i);
    const LabeledSpan* t = L.find(SpanKind::kv_type, path_i);
    const LabeledSpan* v = L.find(SpanKind::kv_value, path_i);
    ASSERT_TRUE(k && t && v) << path_i;
    EXPECT_EQ(k->span.offset, at) << path_i;
    EXPECT_EQ(k->span.size, 8 + std::strlen(keys[i])) << path_i;
    EXPECT_EQ(t->span, (Span{k->span.end(), 4})) << path_i;
    EXPECT_EQ(v->span.offset, t->span.end()) << path_i;
    EXPECT_EQ(v->span.end() - at, kv_sizes[i]) << path_i;
    at = v->span.end();
  }
  EXPECT_EQ(at, 268u);

  const LabeledSpan* info = L.find(SpanKind::tensor_info, "tensor[0] blk.0.counts.weight");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->span, (Span{268, 59}));
  EXPECT_EQ(L.header_size, 327u);
  EXPECT_EQ(L.spans[L.spans.size() - 2], (LabeledSpan{SpanKind::padding, {327, 57}, ""}));
  EXPECT_EQ(L.spans.back(), (LabeledSpan{SpanKind::tensor_data, {384, 24}, "tensor[0] blk.0.counts.weight"}));
  EXPECT_EQ(L.data_offset, 384u);
  EXPECT_EQ(L.spans.size(), 4u + 15u + 1u + 2u);
  check_layout(L);

  // The padding is zeros and the data is the six floats.
  for (uint64_t i = 327; i < 384; ++i) ASSERT_EQ(file[i], 0) << i;
  EXPECT_EQ(floats_at(file, 384, 6), (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f}));
}

TEST(Walkthrough, ASketchWrittenAndReadIsTheSameNumbers) {
  std::string path = temp_path("walkthrough-read.gguf");
  Layout planned = write_file(walkthrough_model(), path);
  Scanned s = scan_file(path);
  EXPECT_EQ(s.layout, planned);  // the round trip is span equality
  EXPECT_EQ(s.layout.alignment, 64u);
  EXPECT_EQ(s.layout.data_offset, 384u);
  EXPECT_FALSE(s.model.pad_end);
  ASSERT_EQ(s.model.tensors.size(), 1u);
  const Tensor& t = s.model.tensors[0];
  EXPECT_EQ(t.dims, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(t.source_offset, 384u);
  std::vector<float> values(6);
  t.source->read_at(t.source_offset, values.data(), 24);
  EXPECT_EQ(values, (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f}));
  EXPECT_EQ(s.model.find("counts.tokens")->size(), 3u);
  EXPECT_EQ(s.model.find("counts.tokens")->strs[2], "delta");
}

TEST(Walkthrough, ATensorReadWhereTheInfoRecordsEndedIsNotTheTensor) {
  std::string path = temp_path("walkthrough-pitfall.gguf");
  write_file(walkthrough_model(), path);
  auto file = read_file_bytes(path);
  Scanned s = scan_file(path);
  // The mistake: take the data from the end of the info records (327), not the aligned
  // data start (384). It reads six numbers without any error, and all six are wrong.
  uint64_t wrong_start = s.layout.header_size + s.layout.tensor_offsets[0];
  ASSERT_EQ(wrong_start, 327u);
  std::vector<float> wrong = floats_at(file, wrong_start, 6);
  std::vector<float> right{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f};
  for (int i = 0; i < 6; ++i) EXPECT_NE(wrong[i], right[i]) << i;
  EXPECT_EQ(wrong, std::vector<float>(6, 0.0f));  // they are the padding's zeros
  EXPECT_EQ(floats_at(file, s.layout.data_offset + s.layout.tensor_offsets[0], 6), right);
}
