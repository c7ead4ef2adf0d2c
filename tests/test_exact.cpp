// Whatever the reader accepts, a rewrite and dump -> write give back byte for byte: bytes
// after the end, gaps between tensors, non-zero padding, padding to another alignment
// than the declared one. validate still reports them, and an edit keeps them unless it
// must re-lay the data, and then says so. A realign can be undone.
#include <gtest/gtest.h>

#include <filesystem>

#include "ggufkit/scan.h"
#include "ggufkit/sketch.h"
#include "ggufkit/writer.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

std::string text_of(const std::string& path) {
  auto b = read_file_bytes(path);
  return {b.begin(), b.end()};
}

// rewrite through the program, and dump -> write through the program with inline data.
void expect_exact_both_ways(const std::string& name, const std::string& path) {
  SCOPED_TRACE(name);
  auto original = read_file_bytes(path);
  std::string out = temp_path(name + "-rewritten.gguf");
  CliRun r = run_cli("rewrite " + path + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(read_file_bytes(out) == original);
  std::string sk = temp_path(name + ".yaml"), again = temp_path(name + "-again.gguf");
  CliRun d = run_cli("dump " + path + " --inline-data -o " + sk);
  ASSERT_EQ(d.code, 0) << d.err;
  CliRun w = run_cli("write " + sk + " -o " + again);
  ASSERT_EQ(w.code, 0) << w.err;
  EXPECT_TRUE(read_file_bytes(again) == original) << text_of(sk).substr(0, 3000);
}

// ggml's own C writer, as llama.cpp uses it: a header with general.alignment 256 and no
// tensors, padded to 32 (ggml pads to the alignment its context had, not the declared one).
std::vector<uint8_t> ggml_style_no_tensors() {
  Bytes b;
  b.head(3, 0, 2).str("general.architecture").u32(8).str("llama").str("general.alignment").u32(4).u32(256);
  b.pad_to(32);
  return b.b;
}

// Two f32 tensors with a 64-byte gap between them (a: 8 floats at 0, b at 96 not 32).
std::string with_gap() {
  static std::string p = [] {
    std::string out = temp_path("gap.gguf");
    write_sketch(parse_sketch("metadata: [{key: general.architecture, type: string, value: x}]\n"
                              "tensors:\n"
                              "  - {name: a, type: f32, dims: [8], fill: {ramp: {start: 1, step: 1}}}\n"
                              "  - {name: b, type: f32, dims: [4], offset: 96, fill: {ramp: {start: 9, step: 1}}}\n",
                              "gap", temp_dir()),
                 out);
    return out;
  }();
  return p;
}

}  // namespace

TEST(Exact, AHeaderPaddedToThirtyTwoWhileDeclaring256ComesBack) {
  auto bytes = ggml_style_no_tensors();
  ASSERT_EQ(bytes.size() % 32, 0u);
  ASSERT_NE(bytes.size() % 256, 0u);
  std::string p = temp_path("ggml-256.gguf");
  write_file_bytes(p, bytes);
  Scanned s = scan_file(p);
  EXPECT_EQ(s.layout.file_size, bytes.size());
  const LabeledSpan& last = s.layout.spans.back();
  EXPECT_EQ(last.kind, SpanKind::padding);
  EXPECT_EQ(last.span.end(), bytes.size());
  expect_exact_both_ways("ggml-256", p);
}

TEST(Exact, BytesAfterTheEndComeBackAndSurviveAnEditThatGrowsTheHeader) {
  auto bytes = read_file_bytes(tiny_llama());
  size_t size = bytes.size();
  for (int i = 0; i < 100; ++i) bytes.push_back(static_cast<uint8_t>(i + 1));
  std::string p = temp_path("trailing.gguf");
  write_file_bytes(p, bytes);
  Scanned s = scan_file(p);
  ASSERT_EQ(s.layout.spans.back().kind, SpanKind::trailing);
  EXPECT_EQ(s.layout.spans.back().span, (Span{size, 100}));
  expect_exact_both_ways("trailing", p);
  CliRun v = run_cli("validate " + p);
  EXPECT_NE(v.out.find("trailing_bytes"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("100 bytes after the end of the last tensor"), std::string::npos) << v.out;
  // A name 1000 bytes longer moves the data section; the 100 bytes move with it.
  std::string out = temp_path("trailing-edited.gguf");
  CliRun e = run_cli("edit " + p + " --set general.name=" + std::string(1000, 'n') + " -o " + out);
  ASSERT_EQ(e.code, 0) << e.err;
  auto after = read_file_bytes(out);
  ASSERT_GE(after.size(), 100u);
  EXPECT_TRUE(std::vector<uint8_t>(after.end() - 100, after.end()) == std::vector<uint8_t>(bytes.end() - 100, bytes.end()));
  EXPECT_EQ(scan_file(out).layout.spans.back().span.size, 100u);
}

TEST(Exact, AGapBetweenTensorsComesBackIsReportedAndClosesOnlyWhenTheDataIsReLaid) {
  Scanned s = scan_file(with_gap());
  ASSERT_EQ(s.layout.tensor_offsets, (std::vector<uint64_t>{0, 96}));
  EXPECT_EQ(s.model.tensors[1].offset, std::optional<uint64_t>(96));
  const LabeledSpan* gap = nullptr;
  for (const auto& sp : s.layout.spans)
    if (sp.kind == SpanKind::gap) gap = &sp;
  ASSERT_TRUE(gap);
  EXPECT_EQ(gap->span, (Span{s.layout.data_offset + 32, 64}));
  expect_exact_both_ways("gap", with_gap());
  CliRun v = run_cli("validate " + with_gap());
  EXPECT_NE(v.out.find("offset_gap"), std::string::npos) << v.out;
  // An edit that leaves the data where it is keeps the gap.
  std::string kept = temp_path("gap-kept.gguf");
  ASSERT_EQ(run_cli("edit " + with_gap() + " --set general.architecture=y -o " + kept).code, 0);
  EXPECT_EQ(scan_file(kept).layout.tensor_offsets, (std::vector<uint64_t>{0, 96}));
  // A realign re-lays the data: the gap closes, and the program says so.
  std::string relaid = temp_path("gap-relaid.gguf");
  CliRun r = run_cli("realign " + with_gap() + " -a 64 -o " + relaid);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(scan_file(relaid).layout.tensor_offsets, (std::vector<uint64_t>{0, 64}));
  EXPECT_NE(r.out.find("not carried over"), std::string::npos) << r.out;
}

// The fuzzed round trip's find: the reader kept a gap before the first tensor (data offset
// 64, not 0), but the writer and the layout only knew gaps between tensors, so the plan
// threw "writer drift at tensor[0]". The gap is a span of its own and comes back.
TEST(Exact, AGapBeforeTheFirstTensorComesBackAsASpanOfItsOwn) {
  std::string p = temp_path("gap-first.gguf");
  write_sketch(parse_sketch("metadata: [{key: general.architecture, type: string, value: x}]\n"
                            "tensors:\n"
                            "  - {name: a, type: f32, dims: [8], offset: 64, fill: {ramp: {start: 1, step: 1}}}\n"
                            "  - {name: b, type: f32, dims: [4], fill: {ramp: {start: 9, step: 1}}}\n",
                            "gap-first", temp_dir()),
               p);
  Scanned s = scan_file(p);
  ASSERT_EQ(s.layout.tensor_offsets, (std::vector<uint64_t>{64, 96}));
  check_layout(s.layout);
  std::vector<Span> gaps;
  for (const auto& sp : s.layout.spans)
    if (sp.kind == SpanKind::gap) gaps.push_back(sp.span);
  EXPECT_EQ(gaps, (std::vector<Span>{{s.layout.data_offset, 64}}));
  EXPECT_EQ(s.layout.file_size, s.layout.data_offset + 96 + 32);
  expect_exact_both_ways("gap-first", p);
  CliRun v = run_cli("validate " + p + " --json");
  EXPECT_NE(v.out.find("\"offset_gap\""), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("starts at data offset 64; llama.cpp expects 0"), std::string::npos) << v.out;
}

TEST(Exact, NonZeroPaddingComesBackAndIsStillReported) {
  std::string p = temp_path("nonzero.gguf");
  write_sketch(read_sketch(std::string(GGUFKIT_SOURCE) + "/examples/broken/nonzero-padding.yaml"), p);
  expect_exact_both_ways("nonzero", p);
  CliRun v = run_cli("validate " + p);
  EXPECT_NE(v.out.find("nonzero_padding"), std::string::npos) << v.out;
}

TEST(Realign, AFileThatDeclaredNoAlignmentComesBackWithDashADefault) {
  auto original = read_file_bytes(tiny_llama());
  ASSERT_FALSE(scan_file(tiny_llama()).model.find("general.alignment"));
  std::string a64 = temp_path("undo-64.gguf"), a32 = temp_path("undo-32.gguf"), back = temp_path("undo-back.gguf");
  ASSERT_EQ(run_cli("realign " + tiny_llama() + " -a 64 -o " + a64).code, 0);
  ASSERT_EQ(run_cli("realign " + a64 + " -a 32 -o " + a32).code, 0);
  EXPECT_EQ(scan_file(a32).model.find("general.alignment")->bits, 32u);  // declared now, so not the original
  CliRun d = run_cli("realign " + a64 + " -a default -o " + back);
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_NE(d.out.find("align   64 -> default (32: general.alignment removed)"), std::string::npos) << d.out;
  EXPECT_TRUE(read_file_bytes(back) == original);
  // Removing the key is the same thing.
  std::string removed = temp_path("undo-removed.gguf");
  CliRun rm = run_cli("edit " + a64 + " --remove general.alignment -o " + removed);
  ASSERT_EQ(rm.code, 0) << rm.err;
  EXPECT_TRUE(read_file_bytes(removed) == original);
  // And a file that declared its alignment comes back from any other by realigning to it.
  std::string b = temp_path("undo-4096.gguf"), again = temp_path("undo-64-again.gguf");
  ASSERT_EQ(run_cli("realign " + a64 + " -a 4096 -o " + b).code, 0);
  ASSERT_EQ(run_cli("realign " + b + " -a 64 -o " + again).code, 0);
  EXPECT_TRUE(read_file_bytes(again) == read_file_bytes(a64));
}
