// Byte-order conversion: every value type and every tensor type whose block layout ggml
// publishes, each multi-byte field turned over and byte arrays left alone; little -> big
// -> little gives back the file; values decode the same in both orders.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "ggufkit/byteorder.h"
#include "ggufkit/inspect.h"
#include "ggufkit/numeric.h"
#include "ggufkit/scan.h"
#include "ggufkit/sketch.h"
#include "ggufkit/writer.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;

namespace {

std::string convert(const std::string& in, const char* order, const std::string& name) {
  std::string out = temp_path(name);
  CliRun r = run_cli("convert " + in + " --byte-order " + order + " -o " + out);
  EXPECT_EQ(r.code, 0) << r.err;
  return out;
}

// Every live ggml type, one tensor each of two blocks of seeded random bytes.
std::string every_tensor_type() {
  static std::string p = [] {
    std::string yaml = "metadata: [{key: general.architecture, type: string, value: x}]\ntensors:\n";
    for (uint32_t id = 0; id < kGgmlTypeCount; ++id) {
      const GgmlType* t = ggml_type(id);
      if (t->removed) continue;
      yaml += "  - {name: t" + std::to_string(id) + ", type: " + t->name + ", dims: [" + std::to_string(2 * t->block) +
              "], fill: {random_bytes: {seed: " + std::to_string(id + 1) + "}}}\n";
    }
    std::string out = temp_path("every-tensor-type.gguf");
    write_sketch(parse_sketch(yaml, "types", temp_dir()), out);
    return out;
  }();
  return p;
}

std::vector<uint8_t> data_of(const Scanned& s, size_t i) {
  const Tensor& t = s.model.tensors[i];
  std::vector<uint8_t> b(t.nbytes());
  t.source->read_at(t.source_offset, b.data(), b.size());
  return b;
}

}  // namespace

TEST(Convert, EveryLiveTypeHasABlockLayoutInsideItsBlock) {
  for (uint32_t id = 0; id < kGgmlTypeCount; ++id) {
    const GgmlType* t = ggml_type(id);
    SCOPED_TRACE(t->name);
    EXPECT_EQ(can_swap(*t), !t->removed);
    if (t->removed) continue;
    // Turning a block over twice gives it back, and touches only bytes of that block.
    std::vector<uint8_t> b(t->size * 2 + 8), orig;
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 37 + 11);
    orig = b;
    swap_blocks(*t, b.data(), 2);
    EXPECT_TRUE(std::equal(b.end() - 8, b.end(), orig.end() - 8));
    swap_blocks(*t, b.data(), 2);
    EXPECT_EQ(b, orig);
  }
}

TEST(Convert, LittleToBigToLittleGivesBackTheFile) {
  std::string every = temp_path("conv-every-type.gguf");
  write_sketch(read_sketch(std::string(GGUFKIT_SOURCE) + "/examples/every-type.yaml"), every);
  std::vector<std::pair<std::string, std::string>> files = {
      {"tiny-llama", tiny_llama()}, {"every-type", every}, {"every-tensor-type", every_tensor_type()}};
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    Model m = random_model(seed);
    m.order = ByteOrder::little;
    std::string p = temp_path("conv-random-" + std::to_string(seed) + ".gguf");
    write_file(m, p);
    files.push_back({"random-" + std::to_string(seed), p});
  }
  for (const auto& [name, path] : files) {
    SCOPED_TRACE(name);
    std::string big = convert(path, "big", name + "-be.gguf");
    Scanned b = scan_file(big), l = scan_file(path);
    EXPECT_EQ(b.model.order, ByteOrder::big);
    EXPECT_EQ(b.model.metadata, l.model.metadata);  // the same values, read in the other order
    EXPECT_EQ(b.layout.tensor_offsets, l.layout.tensor_offsets);
    EXPECT_EQ(b.source_size, l.source_size);
    std::string back = convert(big, "little", name + "-le.gguf");
    EXPECT_TRUE(read_file_bytes(back) == read_file_bytes(path));
  }
}

// The rule of llama.cpp's gguf_convert_endian.py, stated byte by byte: f32 elements
// reversed, f16/bf16 halves swapped, q8_0/q4_0/q1_0 the f16 scale at the block's start,
// q4_K the two f16 at 0 and 2, q6_K the f16 at 208, tq2_0 the f16 at 64; mxfp4 and nvfp4
// unchanged. Everything else in a block stays where it was.
TEST(Convert, TheBlocksChangeExactlyWhereGgufConvertEndianChangesThem) {
  std::string big = convert(every_tensor_type(), "big", "rule-be.gguf");
  Scanned l = scan_file(every_tensor_type()), b = scan_file(big);
  struct Rule {
    const char* type;
    std::vector<std::pair<uint32_t, uint32_t>> fields;  // (offset, width) in each block
  };
  for (const Rule& r : {Rule{"f32", {{0, 4}}}, Rule{"f16", {{0, 2}}}, Rule{"bf16", {{0, 2}}}, Rule{"q8_0", {{0, 2}}},
                        Rule{"q4_0", {{0, 2}}}, Rule{"q1_0", {{0, 2}}}, Rule{"q4_K", {{0, 2}, {2, 2}}},
                        Rule{"q6_K", {{208, 2}}}, Rule{"tq2_0", {{64, 2}}}, Rule{"mxfp4", {}}, Rule{"nvfp4", {}}}) {
    SCOPED_TRACE(r.type);
    const GgmlType& t = *ggml_type_by_name(r.type);
    size_t i = 0;
    while (l.model.tensors[i].type != t.id) ++i;
    std::vector<uint8_t> want = data_of(l, i), got = data_of(b, i);
    for (size_t blk = 0; blk < want.size() / t.size; ++blk)
      for (auto [off, w] : r.fields) std::reverse(want.begin() + blk * t.size + off, want.begin() + blk * t.size + off + w);
    EXPECT_EQ(got, want);
  }
}

TEST(Convert, EveryDecodableTypeReadsTheSameValuesInBothOrders) {
  std::string big = convert(every_tensor_type(), "big", "values-be.gguf");
  Scanned l = scan_file(every_tensor_type()), b = scan_file(big);
  int compared = 0;
  for (size_t i = 0; i < l.model.tensors.size(); ++i) {
    const GgmlType& t = *ggml_type(l.model.tensors[i].type);
    if (!can_decode(t)) continue;
    SCOPED_TRACE(t.name);
    std::vector<float> a = tensor_values(l.model.tensors[i]), c = tensor_values(b.model.tensors[i], ByteOrder::big);
    ASSERT_EQ(a.size(), c.size());
    EXPECT_EQ(std::memcmp(a.data(), c.data(), a.size() * sizeof(float)), 0);  // bit for bit, NaNs too
    ++compared;
  }
  EXPECT_EQ(compared, 13);
  // Through the program: the big-endian tiny llama prints the little-endian one's numbers.
  std::string tl = convert(tiny_llama(), "big", "tl-be.gguf");
  for (const char* name : {"blk.0.attn_norm.weight", "blk.0.attn_q.weight", "token_embd.weight"}) {
    CliRun x = run_cli(std::string("tensor ") + tiny_llama() + " " + name), y = run_cli("tensor " + tl + " " + name);
    ASSERT_EQ(x.code, 0) << x.err;
    EXPECT_EQ(x.out, y.out);
  }
  CliRun norm = run_cli("tensor " + tl + " blk.0.attn_norm.weight");
  EXPECT_NE(norm.out.find("count 64  min 1  max 1  mean 1  std 0"), std::string::npos) << norm.out;
}

TEST(Convert, ConvertingToTheOrderAFileHasWritesNothingAndSaysSo) {
  std::string out = temp_path("conv-same.gguf");
  CliRun r = run_cli("convert " + tiny_llama() + " --byte-order little -o " + out);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, tiny_llama() + ": no changes (already little-endian); nothing written (nor " + out + ": the file already is as asked)\n");
  EXPECT_FALSE(std::filesystem::exists(out));
  CliRun bad = run_cli("convert " + tiny_llama() + " --byte-order middle -o " + out);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--byte-order must be big or little, found 'middle'"), std::string::npos) << bad.err;
}
