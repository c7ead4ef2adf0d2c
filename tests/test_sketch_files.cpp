// Sketches against files: raw overrides land where the reader's errors point, the
// broken examples each name their defect, dump -> write reproduces every file, and the
// tiny llama example has the shape llama.cpp needs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "ggufkit/error.h"
#include "ggufkit/numeric.h"
#include "ggufkit/scan.h"
#include "ggufkit/sketch.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

const std::string kExamples = std::string(GGUFKIT_SOURCE) + "/examples";

const char* kBase = R"(
metadata:
  - {key: general.architecture, type: string, value: base}
  - {key: tokens, type: array, items: string, value: [a, b, c]%s}
  - {key: general.alignment, type: u32, value: 32%s}
tensors:
  - {name: w, type: f32, dims: [8], fill: zeros%s}
  - {name: v, type: f32, dims: [8, 2], fill: ones%s}
%s
)";

std::string base_with(const std::string& tokens_raw, const std::string& align_raw, const std::string& w_raw,
                      const std::string& v_raw, const std::string& top_raw) {
  auto f = [](const std::string& r) { return r.empty() ? std::string() : ", raw: {" + r + "}"; };
  char buf[2048];
  std::snprintf(buf, sizeof buf, kBase, f(tokens_raw).c_str(), f(align_raw).c_str(), f(w_raw).c_str(),
                f(v_raw).c_str(), top_raw.empty() ? "" : ("raw: {" + top_raw + "}").c_str());
  return buf;
}

struct Landing {
  Error error;
  uint64_t planned;  // where plan() put the overridden field
};

// Writes the sketch and reads it back; the error and the planned offset of `field`.
Landing land(const std::string& yaml, const std::string& field) {
  Sketch s = parse_sketch(yaml, "s.yaml", temp_dir());
  FieldMarks marks;
  plan(s.model, marks);
  auto bytes = sketch_bytes(s);
  try {
    scan(from_bytes("o.gguf", bytes));
  } catch (const Error& e) {
    return {e, marks.count(field) ? marks.at(field) : UINT64_MAX};
  }
  ADD_FAILURE() << "accepted: " << yaml;
  return {Error(Error::Kind::format, "", std::nullopt, "", ""), 0};
}

}  // namespace

TEST(RawOverrides, EachLandsOnItsFieldAndTheReaderNamesThatOffset) {
  struct Case { std::string yaml, field, message; };
  std::vector<Case> cases = {
      {base_with("", "", "", "", "magic: GGML"), "head (magic)", "found 'GGML"},
      {base_with("", "", "", "", "version: 1"), "head (version)", "GGUF v1"},
      {base_with("", "", "", "", "tensor_count: 0x4000000000000000"), "head (tensor count)", "4611686018427387904 tensor info records"},
      {base_with("", "", "", "", "kv_count: 99"), "head (kv count)", "99 key-value pairs need at least 13 bytes each"},
      {base_with("key_length: 0x100000000", "", "", "", ""), "kv[1] (key length)", "a string of 4294967296 bytes"},
      {base_with("type: 13", "", "", "", ""), "kv[1] tokens (type)", "unknown value type 13"},
      {base_with("array_type: 99", "", "", "", ""), "kv[1] tokens (array type)", "unknown value type 99"},
      {base_with("array_count: 1000", "", "", "", ""), "kv[1] tokens (array count)", "an array of 1000 string needs at least 8000 bytes"},
      {base_with("", "value: 48", "", "", ""), "kv[2] general.alignment (value)", "alignment 48 is not a power of two"},
      {base_with("", "type: 5", "", "", ""), "kv[2] general.alignment (type)", "must be a u32, found i32"},
      {base_with("", "", "name_length: 100000", "", ""), "tensor[0] (name length)", "a string of 100000 bytes is longer than the"},
      {base_with("", "", "n_dims: 5", "", ""), "tensor[0] w (n_dims)", "n_dims 5 is more than the 4"},
      {base_with("", "", "", "offset: 48", ""), "tensor[1] v (offset)", "offset 48 is not a multiple of the alignment 32"},
      {base_with("", "", "", "offset: 0", ""), "tensor[1] v (offset)", "offset 0 overlaps tensor[0] w"},
      {base_with("", "", "", "offset: 8192", ""), "tensor[1] v (offset)", "run past the end of the file"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.field);
    Landing l = land(c.yaml, c.field);
    ASSERT_NE(l.planned, UINT64_MAX);
    EXPECT_EQ(l.error.field, c.field);
    EXPECT_EQ(l.error.offset, l.planned);
    EXPECT_NE(l.error.message.find(c.message), std::string::npos) << l.error.what();
  }
  // A string's length: the first string value is general.architecture's.
  Sketch s = parse_sketch("metadata:\n  - {key: k, type: string, value: abc, raw: {string_length: 4000}}\n", "s", ".");
  FieldMarks marks;
  plan(s.model, marks);
  EXPECT_EQ(marks.at("kv[0] k (string length)"), 24u + 8 + 1 + 4);
  try {
    scan(from_bytes("o", sketch_bytes(s)));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.offset, 37u);
    EXPECT_EQ(e.field, "kv[0] k (string length)");
  }
}

TEST(RawOverrides, PaddingBytesTruncationAndPatchesChangeExactlyThoseBytes) {
  Sketch plain = parse_sketch(base_with("", "", "", "", ""), "s", temp_dir());
  Sketch padded = parse_sketch(base_with("", "", "", "", "padding_byte: 0xAA"), "s", temp_dir());
  auto a = sketch_bytes(plain), b = sketch_bytes(padded);
  ASSERT_EQ(a.size(), b.size());
  Layout L = plan(plain.model);
  size_t changed = 0, padding = 0;
  for (const auto& sp : L.spans) {
    bool pad = sp.kind == SpanKind::padding || sp.kind == SpanKind::tensor_padding;
    for (uint64_t i = sp.span.offset; i < sp.span.end(); ++i) {
      if (pad) {
        EXPECT_EQ(b[i], 0xAA) << i;
        ++padding;
      } else {
        EXPECT_EQ(b[i], a[i]) << i;
      }
      changed += a[i] != b[i];
    }
  }
  EXPECT_EQ(changed, padding);
  EXPECT_GT(padding, 0u);
  Scanned s = scan(from_bytes("padded", b));  // the format allows any padding bytes
  EXPECT_EQ(s.layout, L);

  Sketch cut = parse_sketch(base_with("", "", "", "", "truncate_at: 100"), "s", temp_dir());
  auto c = sketch_bytes(cut);
  ASSERT_EQ(c.size(), 100u);
  EXPECT_TRUE(std::equal(c.begin(), c.end(), a.begin()));

  Sketch patched = parse_sketch(base_with("", "", "", "", "patches: [{at: 10, hex: \"dead\"}]"), "s", temp_dir());
  auto p = sketch_bytes(patched);
  EXPECT_EQ(p[10], 0xde);
  EXPECT_EQ(p[11], 0xad);
  p[10] = a[10];
  p[11] = a[11];
  EXPECT_EQ(p, a);

  Sketch longer = parse_sketch(base_with("", "", "", "", "truncate_at: 1000"), "s", temp_dir());
  auto l = sketch_bytes(longer);
  ASSERT_EQ(l.size(), 1000u);  // extended with zeros: bytes after the last tensor
  EXPECT_TRUE(std::equal(a.begin(), a.end(), l.begin()));
  EXPECT_EQ(std::count(l.begin() + static_cast<long>(a.size()), l.end(), 0), static_cast<long>(1000 - a.size()));
  EXPECT_EQ(scan(from_bytes("longer", l)).source_size, 1000u);
}

TEST(BrokenExamples, EachNamesItsDefectAtTheOffsetWhereItLanded) {
  struct Case { const char* file; const char* field; const char* message; };
  const Case cases[] = {
      {"bad-magic", "head (magic)", "found 'GGML"},
      {"version-1", "head (version)", "this is GGUF v1"},
      {"tensor-count-huge", "head (tensor count)", "tensor info records need at least 24 bytes each"},
      {"kv-count-huge", "head (kv count)", "key-value pairs need at least 13 bytes each"},
      {"key-length-past-end", "kv[1] (key length)", "a string of 1000000 bytes is longer than the"},
      {"unknown-value-type", "kv[0] general.architecture (type)", "unknown value type 13"},
      {"string-length-past-end", "kv[0] general.architecture (string length)", "a string of 1000000 bytes"},
      {"array-count-past-end", "kv[1] tokenizer.ggml.tokens (array count)", "an array of 1000000 string"},
      {"unknown-array-type", "kv[1] tokenizer.ggml.tokens (array type)", "unknown value type 99"},
      {"alignment-48", "kv[2] general.alignment (value)", "alignment 48 is not a power of two"},
      {"alignment-wrong-type", "kv[2] general.alignment (type)", "must be a u32, found i32"},
      {"n-dims-5", "tensor[0] a (n_dims)", "n_dims 5 is more than the 4 ggml allows"},
      {"part-block", "tensor[0] a (dims)", "ne0 = 8 is not a multiple of the q4_0 block of 32"},
      {"misaligned-offset", "tensor[1] b (offset)", "offset 16 is not a multiple of the alignment 32"},
      {"overlapping-offsets", "tensor[1] b (offset)", "offset 0 overlaps tensor[0] a"},
      {"out-of-order-offsets", "tensor[1] b (offset)", "offset 0 comes before tensor[0]'s offset 32"},
      {"offset-past-end", "tensor[1] b (offset)", "run past the end of the file at 352"},
      {"duplicate-key", "kv[1] (key)", "duplicate key 'general.architecture', first at kv[0]"},
      {"duplicate-tensor-name", "tensor[1] (name)", "duplicate tensor name 'a', first at tensor[0]"},
      {"tensor-name-64", "tensor[0] (name)", "a name of 64 bytes"},
      {"nested-array-bomb", "kv[0] bomb (array type #0)", "arrays nested deeper than 8"},
      {"truncated-data", "tensor[1] b (data)", "run past the end of the file at 200"},  // cut: told at the data
      {"truncated-infos", "tensor[1] b (dim #0)", "needs 8 bytes, but the file ends at byte 120"},
  };
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(kExamples + "/broken")) files += e.path().extension() == ".yaml";
  // and nonzero-padding, which readers accept, and the two tensor types read as opaque bytes
  EXPECT_EQ(files, std::size(cases) + 3);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    Sketch s = read_sketch(kExamples + "/broken/" + c.file + ".yaml");
    FieldMarks marks;
    const Layout planned = plan(s.model, marks);
    std::string path = temp_path(std::string("broken-") + c.file + ".gguf");
    write_sketch(s, path);
    try {
      scan_file(path);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.field, c.field);
      EXPECT_NE(e.message.find(c.message), std::string::npos) << e.what();
      // Where the reader stopped is the field the sketch broke (names and keys: their length).
      std::string mark = c.field;
      if (mark == "kv[1] (key)") mark = "kv[1] (key length)";
      if (mark == "tensor[1] (name)" || mark == "tensor[0] (name)") mark = mark.substr(0, 9) + " (name length)";
      if (mark == "kv[0] bomb (array type #0)") continue;  // deep inside the value: offset checked below
      if (mark == "tensor[1] b (dim #0)") mark = "tensor[1] b (dims)";
      if (mark == "tensor[1] b (data)") {  // a file cut short: where the missing data starts
        const LabeledSpan* d = planned.find(SpanKind::tensor_data, "tensor[1] b");
        ASSERT_TRUE(d);
        EXPECT_EQ(e.offset, d->span.offset);
        continue;
      }
      ASSERT_TRUE(marks.count(mark)) << mark;
      EXPECT_EQ(e.offset, marks.at(mark));
    }
  }
  // The bomb: 7 levels of 12 bytes (element type + count) into the value.
  Sketch bomb = read_sketch(kExamples + "/broken/nested-array-bomb.yaml");
  FieldMarks marks;
  plan(bomb.model, marks);
  try {
    scan(from_bytes("bomb", sketch_bytes(bomb)));
    ADD_FAILURE() << "the nesting bomb was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.offset, marks.at("kv[0] bomb (array type)") + 7 * 12);
  }
  Scanned padding = scan(from_bytes("pad", sketch_bytes(read_sketch(kExamples + "/broken/nonzero-padding.yaml"))));
  EXPECT_EQ(padding.model.tensors.size(), 2u);
}

TEST(DumpWrite, EveryCorpusFileComesBackByteForByte) {
  for (const char* f : {"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-phi-3.gguf",
                        "vocab/ggml-vocab-bert-bge.gguf", "vocab/ggml-vocab-falcon.gguf",
                        "vocab/ggml-vocab-baichuan.gguf", "history/ggml-vocab-falcon.v2.gguf"}) {
    SCOPED_TRACE(f);
    auto original = read_file_bytes(corpus(f));
    Scanned s = scan_file(corpus(f));
    for (bool json : {false, true}) {
      std::string text = dump_sketch(s.model, {json, false, std::nullopt});
      auto bytes = sketch_bytes(parse_sketch(text, "dump", temp_dir()));
      ASSERT_EQ(bytes.size(), original.size()) << (json ? "json" : "yaml");
      EXPECT_TRUE(bytes == original) << (json ? "json" : "yaml");
    }
  }
}

TEST(DumpWrite, EveryFileTheTestsWriteComesBackByteForByte) {
  int with_tensors = 0;
  for (uint64_t seed = 1; seed <= 120; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::string path = temp_path("dump-" + std::to_string(seed) + ".gguf");
    write_file(random_model(seed), path);
    auto original = read_file_bytes(path);
    Scanned s = scan_file(path);
    with_tensors += !s.model.tensors.empty();
    for (bool inline_data : {false, true}) {
      std::string text = dump_sketch(s.model, {seed % 2 == 0, inline_data, std::nullopt});
      EXPECT_EQ(sketch_bytes(parse_sketch(text, "dump", temp_dir())), original) << text.substr(0, 2000);
    }
  }
  EXPECT_GT(with_tensors, 50);
  // Through the program: dump to a file, write it back, compare.
  std::string path = temp_path("dump-1.gguf"), sk = temp_path("dump-1.yaml"), out = temp_path("dump-1-again.gguf");
  CliRun d = run_cli("dump " + path + " -o " + sk);
  ASSERT_EQ(d.code, 0) << d.err;
  CliRun w = run_cli("write " + sk + " -o " + out);
  ASSERT_EQ(w.code, 0) << w.err;
  EXPECT_EQ(read_file_bytes(out), read_file_bytes(path));
  EXPECT_EQ(run_cli("dump " + path + " --format xml").code, 2);
}

// Through the program, with every tensor's bytes inline and the original moved away
// before writing, so that equal bytes cannot come from a reference into the original.
TEST(DumpWrite, ThroughTheProgramWithInlineDataAndTheOriginalMovedAway) {
  std::vector<std::pair<std::string, std::string>> files = {{"tiny-llama", tiny_llama()}};
  std::string every = temp_path("every-type.gguf");
  write_sketch(read_sketch(kExamples + "/every-type.yaml"), every);
  files.push_back({"every-type", every});
  int broken_read = 0, broken_refused = 0;
  for (auto& e : fs::directory_iterator(kExamples + "/broken")) {
    std::string p = temp_path("dw-broken-" + e.path().stem().string() + ".gguf");
    write_sketch(read_sketch(e.path().string()), p);
    try {
      scan_file(p);
      ++broken_read;
      files.push_back({e.path().stem().string(), p});
    } catch (const Error&) {
      ++broken_refused;  // dump reads only what the reader accepts
    }
  }
  EXPECT_EQ(broken_read, 3);  // non-zero padding: readers let it through; unknown and removed types: opaque bytes
  EXPECT_EQ(broken_read + broken_refused, 26);
  for (const auto& [name, path] : files) {
    SCOPED_TRACE(name);
    std::string copy = temp_path("dw-" + name + ".gguf"), sk = temp_path("dw-" + name + ".yaml");
    fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
    CliRun d = run_cli("dump " + copy + " --inline-data -o " + sk);
    ASSERT_EQ(d.code, 0) << d.err;
    auto text = read_file_bytes(sk);
    EXPECT_EQ(std::string(text.begin(), text.end()).find("from:"), std::string::npos);
    fs::rename(copy, copy + ".moved");
    std::string out = temp_path("dw-" + name + "-again.gguf");
    CliRun w = run_cli("write " + sk + " -o " + out);
    ASSERT_EQ(w.code, 0) << w.err;
    EXPECT_TRUE(read_file_bytes(out) == read_file_bytes(copy + ".moved"));
  }
}

TEST(TinyLlama, TheExampleHasTheShapeLlamaCppLoads) {
  Sketch s = read_sketch(kExamples + "/tiny-llama.yaml", {{"VOCAB", corpus("vocab/ggml-vocab-llama-spm.gguf")}});
  std::string path = temp_path("tiny-llama.gguf");
  Layout L = write_sketch(s, path);
  Scanned r = scan_file(path);
  EXPECT_EQ(r.layout, L);
  EXPECT_EQ(r.model.find("general.architecture")->str, "llama");
  EXPECT_EQ(r.model.find("llama.block_count")->bits, 2u);
  EXPECT_EQ(r.model.find("llama.embedding_length")->bits, 64u);
  EXPECT_EQ(r.model.find("llama.attention.head_count_kv")->bits, 2u);
  EXPECT_EQ(r.model.find("tokenizer.ggml.tokens")->size(), 32000u);
  EXPECT_EQ(r.model.find("tokenizer.ggml.model")->str, "llama");
  EXPECT_NE(r.model.find("tokenizer.chat_template")->str.find("add_generation_prompt"), std::string::npos);
  ASSERT_EQ(r.model.tensors.size(), 21u);
  std::map<std::string, int> types;
  for (const auto& t : r.model.tensors) types[ggml_type(t.type)->name]++;
  EXPECT_EQ(types, (std::map<std::string, int>{{"f16", 8}, {"f32", 5}, {"q8_0", 8}}));
  auto q = tensor_values(r.model.tensors[4]);  // blk.0.attn_q.weight, f16 normal(0, 0.02)
  EXPECT_EQ(r.model.tensors[4].name, "blk.0.attn_q.weight");
  double sq = 0;
  for (float x : q) sq += x * x;
  EXPECT_NEAR(std::sqrt(sq / q.size()), 0.02, 0.002);
  EXPECT_EQ(tensor_values(r.model.tensors[1]), std::vector<float>(64, 1.0f));
  EXPECT_EQ(r.source_size, L.file_size);
}

TEST(Examples, WriteModelBuildsWritesAndReadsBack) {
  std::string out = temp_path("write_model.gguf");
  int code = std::system((std::string(GGUFKIT_EXAMPLES_BIN) + "/write_model " + out + " > " + out + ".txt").c_str());
  ASSERT_EQ(code, 0);
  auto printed = read_file_bytes(out + ".txt");
  std::string p(printed.begin(), printed.end());
  EXPECT_NE(p.find("wrote " + out + ": 384 bytes, data at 256"), std::string::npos) << p;
  EXPECT_NE(p.find("weights at byte 256: 1 2 3 4 5 6 7 8"), std::string::npos) << p;
  Scanned s = scan_file(out);
  EXPECT_EQ(s.layout.alignment, 64u);
  EXPECT_EQ(tensor_values(s.model.tensors[0]), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
}
