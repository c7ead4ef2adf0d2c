// Sketch files: every value type and its extremes, the sketch format's errors, the
// walkthrough sketch, quantization against ggml's reference rounding, raw overrides,
// and dump -> write reproducing files byte for byte.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ggufkit/check.h"
#include "ggufkit/edit.h"
#include "ggufkit/encode.h"
#include "ggufkit/error.h"
#include "ggufkit/numeric.h"
#include "ggufkit/scan.h"
#include "ggufkit/sketch.h"
#include "ggufkit/text.h"
#include "helpers.h"
#include "walkthrough.h"

using namespace ggufkit;
using namespace testing_helpers;

namespace {

const std::string kExamples = std::string(GGUFKIT_SOURCE) + "/examples";

Scanned read_sketch_text(const std::string& yaml, const Defines& d = {}) {
  Sketch s = parse_sketch(yaml, "s.yaml", temp_dir(), d);
  return scan(from_bytes("s.gguf", sketch_bytes(s)));
}

Error sketch_error(const std::string& yaml, const Defines& d = {}) {
  try {
    parse_sketch(yaml, "s.yaml", temp_dir(), d);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "accepted:\n" << yaml;
  return Error(Error::Kind::format, "", std::nullopt, "", "");
}

uint64_t bits_of(const Model& m, const char* key) { return m.find(key)->bits; }

std::string hex(const std::vector<uint8_t>& b) {
  return hex_text(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
}

// The fixed vector the reference bytes below were computed for (by an independent
// float32 re-implementation of ggml's quantize_row_q8_0_ref / _q4_0_ref).
std::vector<double> fixed_vector() {
  std::vector<double> v;
  for (int j = 0; j < 32; ++j)
    v.push_back(static_cast<float>(((j * 37) % 32 - 15.5) / 8.0 + (j % 3 == 0 ? 0.013 : -0.007)));
  return v;
}

}  // namespace

TEST(SketchValues, EveryValueTypeAndItsExtremesReadBackExactly) {
  Scanned s = scan(from_bytes("every-type", sketch_bytes(read_sketch(kExamples + "/every-type.yaml"))));
  const Model& m = s.model;
  ASSERT_EQ(m.metadata.size(), 27u);
  EXPECT_EQ(m.find("u8")->type, ValueType::u8);
  EXPECT_EQ(bits_of(m, "u8"), 255u);
  EXPECT_EQ(m.find("i8")->as_i64(), -128);
  EXPECT_EQ(bits_of(m, "u16"), 65535u);
  EXPECT_EQ(m.find("i16")->as_i64(), -32768);
  EXPECT_EQ(bits_of(m, "u32"), 4294967295u);
  EXPECT_EQ(m.find("i32")->as_i64(), -2147483648ll);
  EXPECT_EQ(bits_of(m, "u64"), UINT64_MAX);
  EXPECT_EQ(m.find("i64")->as_i64(), INT64_MIN);
  EXPECT_EQ(m.find("i64.max")->as_i64(), INT64_MAX);
  EXPECT_EQ(bits_of(m, "f32.negzero"), 0x80000000u);
  EXPECT_EQ(bits_of(m, "f32.nan"), 0x7fc00000u);
  EXPECT_EQ(bits_of(m, "f32.payload"), 0x7fc00001u);
  EXPECT_EQ(bits_of(m, "f32.tiny"), 1u);  // the smallest subnormal
  EXPECT_EQ(bits_of(m, "f32.inf"), 0x7f800000u);
  EXPECT_EQ(bits_of(m, "f64.max"), 0x7fefffffffffffffull);
  EXPECT_EQ(bits_of(m, "f64.neginf"), 0xfff0000000000000ull);
  EXPECT_EQ(m.find("f64.third")->as_f64(), 1.0 / 3.0);
  EXPECT_EQ(bits_of(m, "bool.true"), 1u);
  EXPECT_EQ(bits_of(m, "bool.false"), 0u);
  EXPECT_EQ(bits_of(m, "bool.two"), 2u);
  EXPECT_EQ(m.find("string.text")->str, std::string("h\xc3\xa9llo\n\t\"q\" \0 end", 17));
  EXPECT_EQ(m.find("string.bytes")->str, std::string("\xff\x00\xfe", 3));
  EXPECT_EQ(m.find("string.empty")->str, "");
  const Value* a = m.find("array.i16");
  EXPECT_EQ(a->elem, ValueType::i16);
  ASSERT_EQ(a->size(), 3u);
  EXPECT_EQ(a->at(0).as_i64(), -1);
  EXPECT_EQ(a->at(2).as_i64(), 32767);
  EXPECT_EQ(m.find("array.empty")->elem, ValueType::f64);
  EXPECT_TRUE(m.find("array.empty")->size() == 0);
  const Value* n = m.find("array.nested");
  ASSERT_EQ(n->size(), 2u);
  EXPECT_EQ(n->items[0].elem, ValueType::u8);
  EXPECT_EQ(n->items[0].nums[1], 2u);
  EXPECT_EQ(n->items[1].strs[0], "x");

  // And the dump of that file writes the same bytes again, through YAML and JSON.
  std::string path = temp_path("values.gguf");
  write_file_bytes(path, to_bytes(m));
  for (bool json : {false, true}) {
    Scanned back = scan_file(path);
    std::string text = dump_sketch(back.model, {json, false, std::nullopt});
    EXPECT_EQ(sketch_bytes(parse_sketch(text, "dump", temp_dir())), read_file_bytes(path)) << text;
  }
}

TEST(SketchErrors, AValueOutOfRangeNamesTheLineColumnAndEntry) {
  Error e = sketch_error("metadata:\n  - {key: a, type: u8, value: 1}\n  - {key: counts.n, type: u16, value: 70000}\n");
  EXPECT_EQ(e.file, "s.yaml:3:39");
  EXPECT_EQ(e.field, "metadata[1] counts.n");
  EXPECT_EQ(e.message, "value 70000 is out of range for u16 (0 to 65535)");
  EXPECT_EQ(std::string(e.what()), "s.yaml:3:39: metadata[1] counts.n: value 70000 is out of range for u16 (0 to 65535)");

  e = sketch_error("metadata:\n  - {key: x, type: i8, value: -129}\n");
  EXPECT_EQ(e.message, "value -129 is out of range for i8 (-128 to 127)");
  e = sketch_error("metadata:\n  - {key: x, type: u64, value: 18446744073709551616}\n");
  EXPECT_EQ(e.message, "expected an integer, found '18446744073709551616'");
  e = sketch_error("metadata:\n  - {key: x, type: f32, value: 1e39}\n");
  EXPECT_EQ(e.message, "value 1e39 is out of range for f32");
}

TEST(SketchErrors, UnknownAndRepeatedFieldsAndMissingPartsAreRefused) {
  Error e = sketch_error("metadata:\n  - {key: x, type: u8, vlaue: 1}\n");
  EXPECT_EQ(e.file, "s.yaml:2:24");
  EXPECT_EQ(e.message, "unknown field 'vlaue'; expected one of: key, type, items, value, file, raw");
  e = sketch_error("tensors: []\nverison: 3\n");
  EXPECT_EQ(e.file, "s.yaml:2:1");
  e = sketch_error("metadata:\n  - {key: x, type: u8, value: 1, value: 2}\n");
  EXPECT_EQ(e.message, "'value' is given twice");
  e = sketch_error("metadata:\n  - {key: x, value: 1}\n");
  EXPECT_NE(e.message.find("an entry needs type:"), std::string::npos);
  e = sketch_error("metadata:\n  - {key: x, type: float, value: 1}\n");
  EXPECT_NE(e.message.find("unknown type 'float'"), std::string::npos);
  e = sketch_error("metadata:\n  - {key: x, type: array, value: [1]}\n");
  EXPECT_EQ(e.message, "an array needs items: (its element type)");
  e = sketch_error("tensors:\n  - {name: w, type: q4_K, dims: [100], fill: zeros}\n");
  EXPECT_EQ(e.field, "tensors[0] w");
  EXPECT_EQ(e.message, "ne0 = 100 is not a multiple of the q4_K block of 256");
  e = sketch_error("tensors:\n  - {name: w, type: f32, dims: [4], values: [1, 2, 3]}\n");
  EXPECT_EQ(e.message, "values: needs a list of 4 numbers, found 3");
  e = sketch_error("tensors:\n  - {name: w, type: q4_K, dims: [256], values: [1]}\n");
  EXPECT_NE(e.message.find("values for q4_K cannot be encoded"), std::string::npos);
  e = sketch_error("tensors:\n  - {name: w, type: f32, dims: [4], bytes: \"00 11\"}\n");
  EXPECT_EQ(e.message, "bytes: 2 bytes given; a f32 tensor of this shape has 16");
  e = sketch_error("tensors:\n  - {name: w, type: f32, dims: [4]}\n");
  EXPECT_EQ(e.message, "give the data as one of values:, fill:, bytes: or from:");
  e = sketch_error("metadata: [unclosed\n");
  EXPECT_EQ(e.field, "yaml");
  EXPECT_EQ(e.file.rfind("s.yaml:", 0), 0u);
}

TEST(SketchDefines, PlaceholdersAreFilledAndAMissingOneIsNamed) {
  std::string yaml = "metadata:\n  - {key: general.name, type: string, value: \"[[NAME]]\"}\n"
                     "  - {key: n, type: u32, value: [[N]]}\n  - {key: l, type: array, items: array, value: [[[X]]]}\n";
  Error e = sketch_error(yaml, {{"NAME", "tiny"}, {"N", "7"}});
  EXPECT_EQ(e.file, "s.yaml:4:49");
  EXPECT_EQ(e.field, "[[X]]");
  EXPECT_EQ(e.message, "this placeholder has no value; pass -D X=VALUE");
  Scanned s = read_sketch_text(yaml, {{"NAME", "tiny"}, {"N", "7"}, {"X", "{items: u8, value: [3]}"}});
  EXPECT_EQ(s.model.find("general.name")->str, "tiny");
  EXPECT_EQ(s.model.find("n")->bits, 7u);
  EXPECT_EQ(s.model.find("l")->items[0].nums[0], 3u);
}

TEST(SketchExamples, TheWalkthroughSketchIsThe408ByteFile) {
  Sketch sk = read_sketch(kExamples + "/sketch-408.yaml");
  auto bytes = sketch_bytes(sk);
  ASSERT_EQ(bytes.size(), 408u);
  EXPECT_EQ(bytes, to_bytes(walkthrough_model()));
  Scanned s = scan(from_bytes("408", bytes));
  EXPECT_EQ(s.layout.header_size, 327u);
  EXPECT_EQ(s.layout.data_offset, 384u);
  EXPECT_EQ(s.layout.find(SpanKind::tensor_info, "tensor[0] blk.0.counts.weight")->span, (Span{268, 59}));
  EXPECT_EQ(tensor_values(s.model.tensors[0]), (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f}));

  std::string out = temp_path("408-cli.gguf");
  CliRun r = run_cli("write " + kExamples + "/sketch-408.yaml -o " + out + " --map");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("total 408 bytes in 22 spans; file size 408"), std::string::npos) << r.out;
  EXPECT_EQ(read_file_bytes(out), bytes);
  // Over the existing file: refused without --force, nothing changed; with it, quiet.
  CliRun refused = run_cli("write " + kExamples + "/sketch-408.yaml -o " + out);
  EXPECT_EQ(refused.code, 2);
  EXPECT_EQ(refused.err, "ggufkit: error: " + out + ": exists; give --force to replace it\n");
  CliRun quiet = run_cli("write " + kExamples + "/sketch-408.yaml --force -o " + out);
  EXPECT_EQ(quiet.code, 0);
  EXPECT_EQ(quiet.out, "");
}

TEST(Quantization, Q8_0AndQ4_0BytesEqualGgmlsReferenceQuantizer) {
  auto v = fixed_vector();
  const char* q8_ref = "c82381a9d2fd254e7899c2ec143d6888b1dc042d577fa1cbf31c476f91bbe30c365e";
  const char* q4_ref = "b9b38f5d3b08e6b3906f4c19f7c4a17f5d2a";
  std::vector<uint8_t> q8(34), q4(18);
  encode(*ggml_type_by_name("q8_0"), v.data(), 32, q8.data());
  encode(*ggml_type_by_name("q4_0"), v.data(), 32, q4.data());
  EXPECT_EQ(hex(q8), q8_ref);
  EXPECT_EQ(hex(q4), q4_ref);
}

TEST(Quantization, ValuesDecodeWithinHalfAStep) {
  std::vector<double> v = fixed_vector();
  for (int block = 1; block < 8; ++block)  // more blocks, other scales
    for (int j = 0; j < 32; ++j) v.push_back(std::sin(block * 7.0 + j) * block);
  int clamps = 0;
  for (const char* type : {"q8_0", "q4_0"}) {
    SCOPED_TRACE(type);
    const GgmlType& gt = *ggml_type_by_name(type);
    std::vector<uint8_t> bytes(v.size() / 32 * gt.size);
    encode(gt, v.data(), v.size(), bytes.data());
    std::vector<float> back = *decode(gt, bytes.data(), v.size());
    for (size_t b = 0; b < v.size() / 32; ++b) {
      float d = std::fabs(f16_to_f32(static_cast<uint16_t>(bytes[b * gt.size] | bytes[b * gt.size + 1] << 8)));
      for (size_t j = b * 32; j < b * 32 + 32; ++j) {
        // Within half a step, except where q4_0 clamps the far side of its range to
        // 15 (its scale maps the largest magnitude to -8, so +8 does not exist).
        bool clamped = gt.size == 18 && ((j % 32 < 16 ? bytes[b * 18 + 2 + j % 32] & 15 : bytes[b * 18 + 2 + j % 16] >> 4) == 15);
        float bound = clamped ? d : d / 2;
        EXPECT_LE(std::fabs(back[j] - static_cast<float>(v[j])), bound * 1.0001f + 1e-7f) << j;
        clamps += clamped;
      }
    }
  }
  EXPECT_GT(clamps, 0);  // the clamp was met, so the exception above is exercised
}

TEST(Quantization, TheWalkthroughsQ4_0BlockDecodesByHand) {
  // Scale 0.01 (as f16), first byte 0x4B: element 0 is (0xB - 8) * 0.01, element 16 is (0x4 - 8) * 0.01.
  std::vector<uint8_t> block(18, 0x88);
  uint16_t d = f32_to_f16(0.01f);
  block[0] = static_cast<uint8_t>(d);
  block[1] = static_cast<uint8_t>(d >> 8);
  block[2] = 0x4B;
  std::vector<float> v = *decode(*ggml_type_by_name("q4_0"), block.data(), 32);
  EXPECT_NEAR(v[0], 0.03, 1e-5);
  EXPECT_NEAR(v[16], -0.04, 1e-5);
  EXPECT_EQ(v[1], 0.0f);
}

TEST(HalfFloats, ConversionsRoundToNearestEven) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);           // rounds up to infinity
  EXPECT_EQ(f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);  // a tie rounds to even
  EXPECT_EQ(f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);
  EXPECT_EQ(f32_to_f16(5.9604645e-8f), 0x0001);       // the smallest subnormal
  EXPECT_EQ(f32_to_f16(0.01f), 0x211f);
  EXPECT_EQ(f16_to_f32(0x0001), 5.9604645e-8f);
  EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(NAN))));
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(3.14159265f), 0x4049);
  EXPECT_EQ(bf16_to_f32(0x4049), 3.140625f);
}

TEST(SketchFills, EachFillMakesTheValuesItNames) {
  std::string other = temp_path("fill-source.bin");
  write_file_bytes(other, {9, 9, 9, 9, 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40});
  Scanned s = read_sketch_text(R"(
tensors:
  - {name: zeros, type: q4_K, dims: [256], fill: zeros}
  - {name: ones, type: f16, dims: [4], fill: ones}
  - {name: ramp, type: f32, dims: [5], fill: {ramp: {start: 1, step: 0.5}}}
  - {name: normal, type: f32, dims: [4096], fill: {normal: {seed: 3, mean: 2, std: 0.5}}}
  - {name: uniform, type: bf16, dims: [1000], fill: {uniform: {seed: 4, min: -3, max: -1}}}
  - {name: rnd, type: q6_K, dims: [256, 3], fill: {random_bytes: {seed: 9}}}
  - {name: hex, type: i8, dims: [3], bytes: "ff 00 7f"}
  - {name: from, type: f32, dims: [2], from: {file: fill-source.bin, offset: 4}}
)");
  const auto& t = s.model.tensors;
  std::vector<uint8_t> z(t[0].nbytes());
  t[0].source->read_at(t[0].source_offset, z.data(), z.size());
  EXPECT_EQ(z, std::vector<uint8_t>(144, 0));
  EXPECT_EQ(tensor_values(t[1]), std::vector<float>(4, 1.0f));
  EXPECT_EQ(tensor_values(t[2]), (std::vector<float>{1, 1.5, 2, 2.5, 3}));
  auto normal = tensor_values(t[3]);
  double mean = 0, var = 0;
  for (float x : normal) mean += x / 4096.0;
  for (float x : normal) var += (x - mean) * (x - mean) / 4096.0;
  EXPECT_NEAR(mean, 2.0, 0.03);
  EXPECT_NEAR(std::sqrt(var), 0.5, 0.03);
  for (float x : tensor_values(t[4])) EXPECT_TRUE(x >= -3.01f && x <= -0.99f) << x;
  std::vector<uint8_t> r1(630), r2(630);
  t[5].source->read_at(t[5].source_offset, r1.data(), 630);
  t[5].source->read_at(t[5].source_offset + 5, r2.data() + 5, 625);  // any offset, the same bytes
  r2[0] = r1[0], r2[1] = r1[1], r2[2] = r1[2], r2[3] = r1[3], r2[4] = r1[4];
  EXPECT_EQ(r1, r2);
  EXPECT_NE(r1, std::vector<uint8_t>(630, 0));
  std::vector<uint8_t> h(3);
  t[6].source->read_at(t[6].source_offset, h.data(), 3);
  EXPECT_EQ(h, (std::vector<uint8_t>{0xff, 0x00, 0x7f}));
  std::vector<uint8_t> f(8);
  t[7].source->read_at(t[7].source_offset, f.data(), 8);
  EXPECT_EQ(f, (std::vector<uint8_t>{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40}));
  EXPECT_EQ(tensor_values(t[7]), (std::vector<float>{1.0f, 2.0f}));
  // The same sketch twice gives the same bytes: seeds, not clocks.
  EXPECT_EQ(to_bytes(s.model), to_bytes(read_sketch_text(R"(
tensors:
  - {name: zeros, type: q4_K, dims: [256], fill: zeros}
  - {name: ones, type: f16, dims: [4], fill: ones}
  - {name: ramp, type: f32, dims: [5], fill: {ramp: {start: 1, step: 0.5}}}
  - {name: normal, type: f32, dims: [4096], fill: {normal: {seed: 3, mean: 2, std: 0.5}}}
  - {name: uniform, type: bf16, dims: [1000], fill: {uniform: {seed: 4, min: -3, max: -1}}}
  - {name: rnd, type: q6_K, dims: [256, 3], fill: {random_bytes: {seed: 9}}}
  - {name: hex, type: i8, dims: [3], bytes: "ff 00 7f"}
  - {name: from, type: f32, dims: [2], from: {file: fill-source.bin, offset: 4}}
)").model));
}

TEST(HostileYaml, AnchorsAliasesAndDeepNestingAreRefusedWithTheirPosition) {
  Error e = sketch_error("metadata:\n  - &a {key: x, type: u8, value: 1}\n  - *a\n");
  EXPECT_EQ(e.file, "s.yaml:2:5");
  EXPECT_EQ(e.message, "anchors (&name) are not allowed");
  // A billion laughs needs anchors; it stops at the first one, before anything grows.
  std::string laughs = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n";
  for (char c = 'b'; c <= 'j'; ++c)
    laughs += std::string(1, c) + ": &" + c + " [*" + static_cast<char>(c - 1) + ",*" + static_cast<char>(c - 1) + ",*" +
              static_cast<char>(c - 1) + ",*" + static_cast<char>(c - 1) + ",*" + static_cast<char>(c - 1) + "]\n";
  e = sketch_error(laughs);
  EXPECT_EQ(e.file, "s.yaml:1:4");
  std::string deep(100, '[');
  deep = "metadata: " + deep + std::string(100, ']') + "\n";
  e = sketch_error(deep);
  EXPECT_EQ(e.message, "nested deeper than 64");
  e = sketch_error("a: 1\n---\nb: 2\n");
  EXPECT_EQ(e.message, "expected one document, found more");
}

TEST(HostileYaml, A100MBScalarIsRefusedByTheDocumentsSizeBeforeItIsRead) {
  std::string path = temp_path("huge-scalar.yaml");
  {
    std::ofstream f(path, std::ios::binary);
    f << "metadata:\n  - {key: x, type: string, value: \"";
    std::string mb(1 << 20, 'a');
    for (int i = 0; i < 100; ++i) f << mb;
    f << "\"}\n";
  }
  try {
    read_sketch(path);
    FAIL() << "a 100 MB document was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.file, path);  // no line: refused by its size, before parsing
    EXPECT_EQ(e.message, "the document is 104857648 bytes, over the cap of 67108864");
  }
  std::filesystem::remove(path);
  // Inside the document cap, one scalar over its own cap of 32 MiB.
  Error e = sketch_error("metadata:\n  - {key: x, type: string, value: \"" + std::string(33 << 20, 'b') + "\"}\n");
  EXPECT_EQ(e.file, "s.yaml:2:35");
  EXPECT_EQ(e.message, "a value of 34603008 bytes is over the cap of 33554432");
}

TEST(HostileYaml, DuplicateKeysAreRefusedWithTheirPosition) {
  Error e = sketch_error("version: 3\nversion: 3\n");
  EXPECT_EQ(e.file, "s.yaml:2:1");
  EXPECT_EQ(e.message, "'version' is given twice");
  e = sketch_error("tensors:\n  - {name: a, type: f32, dims: [1], fill: zeros, raw: {offset: 0, offset: 32}}\n");
  EXPECT_EQ(e.message, "'offset' is given twice");
}

namespace {
// One value type: the YAML values written and the bits (or text) each must read back as.
struct TypeCase {
  const char* type;
  std::vector<std::pair<std::string, uint64_t>> values;  // YAML text, expected bits
};
void PrintTo(const TypeCase& c, std::ostream* os) { *os << c.type; }

const std::vector<TypeCase>& type_cases() {
  static const std::vector<TypeCase> all = {
      {"u8", {{"0", 0}, {"255", 255}, {"0x7f", 127}}},
      {"i8", {{"-128", 0x80}, {"127", 127}, {"-1", 0xff}}},
      {"u16", {{"65535", 65535}, {"0", 0}}},
      {"i16", {{"-32768", 0x8000}, {"32767", 0x7fff}}},
      {"u32", {{"4294967295", 0xffffffffu}, {"1", 1}}},
      {"i32", {{"-2147483648", 0x80000000u}, {"2147483647", 0x7fffffffu}}},
      {"u64", {{"18446744073709551615", UINT64_MAX}, {"0", 0}}},
      {"i64", {{"-9223372036854775808", 1ull << 63}, {"9223372036854775807", INT64_MAX}}},
      {"f32", {{"-0.0", 0x80000000u}, {"nan", 0x7fc00000u}, {"{bits: 0x7f800001}", 0x7f800001u}, {"inf", 0x7f800000u},
               {"3.4028234663852886e38", 0x7f7fffffu}, {"1.4e-45", 1}}},
      {"f64", {{"-0.0", 1ull << 63}, {"-inf", 0xfff0000000000000ull}, {"5e-324", 1}, {"{bits: 0x7ff0000000000001}", 0x7ff0000000000001ull}}},
      {"bool", {{"true", 1}, {"false", 0}, {"2", 2}, {"255", 255}}},
  };
  return all;
}
}  // namespace

class EachValueType : public ::testing::TestWithParam<TypeCase> {};

TEST_P(EachValueType, WrittenBySketchReadsBackExactly) {
  const TypeCase& c = GetParam();
  std::string yaml = "metadata:\n";
  for (size_t i = 0; i < c.values.size(); ++i)
    yaml += "  - {key: v" + std::to_string(i) + ", type: " + c.type + ", value: " + c.values[i].first + "}\n";
  yaml += std::string("  - {key: list, type: array, items: ") + c.type + ", value: [";
  for (size_t i = 0; i < c.values.size(); ++i) yaml += (i ? ", " : "") + c.values[i].first;
  yaml += "]}\n";
  Scanned s = read_sketch_text(yaml);
  ASSERT_EQ(s.model.metadata.size(), c.values.size() + 1);
  for (size_t i = 0; i < c.values.size(); ++i) {
    const Value& v = s.model.metadata[i].value;
    EXPECT_STREQ(value_type_name(v.type), c.type);
    EXPECT_EQ(v.bits, c.values[i].second) << c.values[i].first;
    EXPECT_EQ(s.model.metadata.back().value.nums.at(i), c.values[i].second) << c.values[i].first << " in an array";
  }
  // And the dump of it is the same sketch again, to the byte.
  auto bytes = to_bytes(s.model);
  EXPECT_EQ(sketch_bytes(parse_sketch(dump_sketch(s.model), "dump", temp_dir())), bytes);
}

INSTANTIATE_TEST_SUITE_P(Types, EachValueType, ::testing::ValuesIn(type_cases()),
                         [](const auto& info) { return std::string(info.param.type); });

TEST(EachValueType, StringsAndNestedArraysReadBackExactly) {
  Scanned s = read_sketch_text(R"(
metadata:
  - {key: plain, type: string, value: "tabs\tand \"quotes\" and \u2603"}
  - {key: nul, type: string, value: "a\u0000b"}
  - {key: bytes, type: string, value: {hex: "c0ff"}}
  - {key: empty, type: string, value: ""}
  - {key: strings, type: array, items: string, value: ["", "x", {hex: "80"}]}
  - {key: nested, type: array, items: array, value: [{items: array, value: [{items: i8, value: [-1]}]}, {items: string, value: []}]}
)");
  const Model& m = s.model;
  EXPECT_EQ(m.find("plain")->str, "tabs\tand \"quotes\" and \xe2\x98\x83");
  EXPECT_EQ(m.find("nul")->str, std::string("a\0b", 3));
  EXPECT_EQ(m.find("bytes")->str, "\xc0\xff");
  EXPECT_EQ(m.find("empty")->str, "");
  EXPECT_EQ(m.find("strings")->strs, (std::vector<std::string>{"", "x", "\x80"}));
  const Value* n = m.find("nested");
  ASSERT_EQ(n->items.size(), 2u);
  EXPECT_EQ(n->items[0].elem, ValueType::array);
  EXPECT_EQ(n->items[0].items[0].elem, ValueType::i8);
  EXPECT_EQ(n->items[0].items[0].nums, (std::vector<uint64_t>{0xff}));
  EXPECT_EQ(n->items[1].elem, ValueType::string);
  EXPECT_EQ(n->items[1].size(), 0u);
  EXPECT_EQ(sketch_bytes(parse_sketch(dump_sketch(m), "dump", temp_dir())), to_bytes(m));
}

// Found by fuzz_sketch: a ramp past the range of an integer tensor type converted a
// double too large for int64 (undefined behaviour, caught by UBSan). Fills now saturate
// at the type's range and values: lists are read as exact integers.
TEST(SketchFills, IntegerTypesSaturateAndValuesMustFitTheirType) {
  Scanned s = read_sketch_text(R"(
tensors:
  - {name: a, type: i32, dims: [2], fill: {ramp: {start: 0, step: 555555555555555555555555555555555555555555555555555555555555555555555555555555555555551}}}
  - {name: b, type: i8, dims: [4], fill: {ramp: {start: -200, step: 100}}}
  - {name: c, type: i16, dims: [3], fill: {uniform: {seed: 1, min: nan, max: nan}}}
  - {name: d, type: i64, dims: [2], values: [-9223372036854775808, 9223372036854775807]}
  - {name: e, type: f16, dims: [2], values: [1e300, -1e300]}
  - {name: f, type: q8_0, dims: [32], fill: {ramp: {start: 1e300, step: 1e300}}}
)");
  auto bytes_of = [&](size_t i) {
    const Tensor& t = s.model.tensors[i];
    std::vector<uint8_t> b(t.nbytes());
    t.source->read_at(t.source_offset, b.data(), b.size());
    return b;
  };
  auto a = bytes_of(0);
  int32_t a1;
  std::memcpy(&a1, a.data() + 4, 4);
  EXPECT_EQ(a1, INT32_MAX);
  auto b = bytes_of(1);
  EXPECT_EQ(std::vector<int8_t>(b.begin(), b.end()), (std::vector<int8_t>{-128, -100, 0, 100}));
  EXPECT_EQ(bytes_of(2), std::vector<uint8_t>(6, 0));  // NaN becomes 0
  auto d = bytes_of(3);
  int64_t d0, d1;
  std::memcpy(&d0, d.data(), 8);
  std::memcpy(&d1, d.data() + 8, 8);
  EXPECT_EQ(d0, INT64_MIN);  // exact, not through a double
  EXPECT_EQ(d1, INT64_MAX);
  EXPECT_EQ(bytes_of(4), (std::vector<uint8_t>{0x00, 0x7c, 0x00, 0xfc}));  // +inf, -inf
  // q8_0 of values past f32's range: each is +inf, so the scale is +inf (f16 0x7c00) and
  // every quant is 0 (inf times the inverse scale 0 is NaN, which saturates to 0), where
  // a plain cast of NaN to int8 would be undefined.
  auto f = bytes_of(5);
  ASSERT_EQ(f.size(), 34u);
  EXPECT_EQ(f[0], 0x00);
  EXPECT_EQ(f[1], 0x7c);
  EXPECT_EQ(std::vector<uint8_t>(f.begin() + 2, f.end()), std::vector<uint8_t>(32, 0));

  Error e = sketch_error("tensors:\n  - {name: x, type: i16, dims: [2], values: [1, 40000]}\n");
  EXPECT_EQ(e.field, "tensors[0] x");
  EXPECT_EQ(e.message, "value 40000 is out of range for i16 (-32768 to 32767)");
  e = sketch_error("tensors:\n  - {name: x, type: i8, dims: [1], values: [1.5]}\n");
  EXPECT_EQ(e.message, "expected an integer, found '1.5'");
}

// ggufkit write says what validate finds in the file it writes, and --check refuses an error.
namespace {

std::string finding_text(const Finding& f) {
  return std::string(severity_name(f.severity)) + " " + std::string(code_name(f.code)) + " " +
         (f.offset ? std::to_string(*f.offset) : "-") + " " + f.message;
}
std::vector<std::string> texts(const std::vector<Finding>& fs) {
  std::vector<std::string> out;
  for (const Finding& f : fs) out.push_back(finding_text(f));
  return out;
}

// A folder of its own, to see that a refused write leaves nothing in it.
std::string fresh_dir(const std::string& name) {
  std::string d = temp_path(name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// An include: of phi-3's vocabulary, chat template and all, then a chat template of its own.
std::string duplicate_template_sketch(const std::string& dir) {
  std::string path = dir + "/dup.yaml";
  std::ofstream(path) << "metadata:\n"
                         "  - {key: general.architecture, type: string, value: llama}\n"
                         "  - include: " << corpus("vocab/ggml-vocab-phi-3.gguf") << "\n"
                         "    prefix: tokenizer.\n"
                         "  - {key: tokenizer.chat_template, type: string, value: \"{{ messages }}\"}\n";
  return path;
}

}  // namespace

TEST(WriteSays, AChatTemplateSetOverAnIncludedOneIsWrittenAndTheDuplicateKeyNamedAtItsByte) {
  std::string dir = fresh_dir("write-dup");
  std::string sketch = duplicate_template_sketch(dir), out = dir + "/dup.gguf";
  // Where the second tokenizer.chat_template starts, by the plan: its key's span.
  Layout L = plan(read_sketch(sketch).model);
  const LabeledSpan* second = L.find(SpanKind::kv_key, "kv[13] tokenizer.chat_template");
  ASSERT_NE(second, nullptr);
  ASSERT_EQ(second->span.offset, 725492u);

  WriteSketchRequest req;
  req.sketch = sketch;
  req.output = out;
  WriteSketchReport r = write_sketch(req);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].code, Code::read);
  EXPECT_EQ(r.findings[0].severity, Severity::error);
  EXPECT_EQ(r.findings[0].offset, 725492u);
  EXPECT_EQ(r.findings[0].message, "kv[13] (key): duplicate key 'tokenizer.chat_template', first at kv[12]");
  EXPECT_EQ(texts(r.findings), texts(validate_file(out)));  // judged before writing, the same as after
  EXPECT_EQ(r.file.file_size, 725568u);
  EXPECT_EQ(r.file.keys, 14u);
  EXPECT_EQ(std::filesystem::file_size(out), 725568u);

  // The command: written, exit 0, the finding on standard error.
  std::string out2 = dir + "/dup2.gguf";
  CliRun w = run_cli("write " + sketch + " -o " + out2);
  EXPECT_EQ(w.code, 0);
  EXPECT_EQ(w.out, "");
  EXPECT_EQ(w.err, "ggufkit: note: " + out2 + ": written anyway (without --check): [read] at byte 725492: kv[13] (key): "
                   "duplicate key 'tokenizer.chat_template', first at kv[12]\n");
  EXPECT_EQ(read_file_bytes(out2), read_file_bytes(out));
  CliRun j = run_cli("write " + sketch + " -o " + dir + "/dup3.gguf --json");
  EXPECT_EQ(j.code, 0);
  EXPECT_EQ(j.err, "");
  EXPECT_EQ(j.out, "{\"path\": \"" + dir + "/dup3.gguf\", \"file_size\": 725568, \"data_offset\": 725568, \"tensors\": 0, "
                   "\"keys\": 14, \"findings\": [\n  {\"code\": \"read\", \"severity\": \"error\", \"offset\": 725492, "
                   "\"message\": \"kv[13] (key): duplicate key 'tokenizer.chat_template', first at kv[12]\"}\n]}\n");
}

TEST(WriteSays, CheckRefusesAnErrorAndLeavesTheOutputAsItWasWithNothingBesideIt) {
  std::string dir = fresh_dir("write-check");
  std::string sketch = duplicate_template_sketch(dir), out = dir + "/out.gguf";
  std::ofstream(out) << "the bytes that were here";
  const auto before = read_file_bytes(out);
  const auto files_before = files_in(dir);

  WriteSketchRequest req;
  req.sketch = sketch;
  req.output = out;
  req.force = true;
  req.check = true;
  try {
    write_sketch(req);
    FAIL() << "not refused";
  } catch (const EditRefused& e) {
    EXPECT_EQ(e.reason, EditRefused::Reason::rules);
    EXPECT_EQ(e.file, sketch);
    ASSERT_EQ(e.findings.size(), 1u);
    EXPECT_EQ(e.findings[0].code, Code::read);
    EXPECT_EQ(e.findings[0].offset, 725492u);
  }
  EXPECT_EQ(read_file_bytes(out), before);
  EXPECT_EQ(files_in(dir), files_before);

  CliRun c = run_cli("write " + sketch + " -o " + out + " --force --check");
  EXPECT_EQ(c.code, 1);
  EXPECT_EQ(c.out, "");
  EXPECT_EQ(c.err, "ggufkit: error: " + sketch + ": refusing to write " + out + ", which validate finds errors in:\n"
                   "  [read] at byte 725492: kv[13] (key): duplicate key 'tokenizer.chat_template', first at kv[12]\n"
                   "nothing was written; without --check it is written anyway (a broken fixture on purpose)\n");
  EXPECT_EQ(read_file_bytes(out), before);
  EXPECT_EQ(files_in(dir), files_before);
  // Under --json the refusal is the JSON error, exit 1 the same.
  CliRun j = run_cli("write " + sketch + " -o " + out + " --force --check --json");
  EXPECT_EQ(j.code, 1);
  EXPECT_NE(j.out.find("\"exit\": 1"), std::string::npos) << j.out;
  EXPECT_EQ(read_file_bytes(out), before);
}

TEST(WriteSays, ACleanSketchPrintsNoWarningAndCheckWritesIt) {
  std::string dir = fresh_dir("write-clean");
  WriteSketchRequest req;
  req.sketch = kExamples + "/sketch-408.yaml";
  req.output = dir + "/a.gguf";
  req.check = true;
  WriteSketchReport r = write_sketch(req);
  EXPECT_TRUE(r.findings.empty()) << texts(r.findings)[0];
  EXPECT_EQ(r.file.file_size, 408u);
  EXPECT_EQ(r.file.data_offset, 384u);
  EXPECT_EQ(r.file.tensors, 1u);
  EXPECT_EQ(r.file.keys, 5u);
  CliRun c = run_cli("write " + kExamples + "/sketch-408.yaml -o " + dir + "/b.gguf --check");
  EXPECT_EQ(c.code, 0);
  EXPECT_EQ(c.out, "");
  EXPECT_EQ(c.err, "");
  EXPECT_EQ(read_file_bytes(dir + "/b.gguf"), read_file_bytes(dir + "/a.gguf"));
}

TEST(WriteSays, EveryBrokenExampleIsWrittenWithItsFindingsAndCheckRefusesAllButTheWarning) {
  std::string dir = fresh_dir("write-broken");
  int refused = 0, warned = 0, files = 0;
  for (const auto& e : std::filesystem::directory_iterator(kExamples + "/broken")) {
    const std::string name = e.path().stem().string(), out = dir + "/" + name + ".gguf";
    SCOPED_TRACE(name);
    ++files;
    // What is judged before writing is the written file, byte for byte.
    const Sketch sk = read_sketch(e.path().string());
    const auto src = sketch_source(sk);
    std::vector<uint8_t> virt(src->size());
    src->read_at(0, virt.data(), virt.size());
    EXPECT_EQ(virt, sketch_bytes(sk));

    WriteSketchRequest req;
    req.sketch = e.path().string();
    req.output = out;
    WriteSketchReport r = write_sketch(req);
    ASSERT_FALSE(r.findings.empty());
    EXPECT_EQ(texts(r.findings), texts(validate_file(out)));
    EXPECT_EQ(read_file_bytes(out), virt);

    CliRun w = run_cli("write " + e.path().string() + " -o " + dir + "/" + name + "-cli.gguf");
    EXPECT_EQ(w.code, 0);
    EXPECT_EQ(std::count(w.err.begin(), w.err.end(), '\n'), static_cast<long>(r.findings.size())) << w.err;
    EXPECT_EQ(w.err.rfind("ggufkit: note: " + dir + "/" + name + "-cli.gguf: ", 0), 0u) << w.err;
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + name + "-cli.gguf"));

    const bool error = std::any_of(r.findings.begin(), r.findings.end(), [](const Finding& f) { return f.severity == Severity::error; });
    CliRun c = run_cli("write " + e.path().string() + " -o " + dir + "/" + name + "-check.gguf --check");
    if (error) {
      ++refused;
      EXPECT_EQ(c.code, 1);
      EXPECT_FALSE(std::filesystem::exists(dir + "/" + name + "-check.gguf"));
    } else {
      ++warned;
      EXPECT_EQ(c.code, 0);
      EXPECT_EQ(c.err, "ggufkit: note: " + dir + "/" + name + "-check.gguf: warning [nonzero_padding] at byte 249: "
                       "padding byte 170 where 0 is written\n");
    }
  }
  EXPECT_EQ(files, 26);
  EXPECT_EQ(refused, 25);
  EXPECT_EQ(warned, 1);  // non-zero padding
}
