// Tensor types the reader cannot size (an id no table here knows, a removed one) are read
// as opaque bytes measured from the offsets: every header job works on such a file as on
// the same file with a known type, except for the type's name; only what needs the type's
// layout is refused, by name. ik_llama.cpp's types are known by name and size.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>

#include "ggufkit/check.h"
#include "ggufkit/corrupt.h"
#include "ggufkit/error.h"
#include "ggufkit/format.h"
#include "ggufkit/scan.h"
#include "ggufkit/sketch.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;

namespace {

// A small llama-like sketch: a.weight (1024 bytes) and c.weight (the last, 256 bytes) are
// of `type_a` and `type_c` (a name, or an id with size:), b.weight (64 bytes) is f16.
std::string sketch_text(const std::string& type_a, const std::string& type_c) {
  return "version: 3\n"
         "metadata:\n"
         "  - {key: general.architecture, type: string, value: llama}\n"
         "  - {key: general.name, type: string, value: opaque test}\n"
         "  - {key: llama.block_count, type: u32, value: 1}\n"
         "tensors:\n"
         "  - {name: a.weight, type: " + type_a + ", dims: [64, 4], fill: {random_bytes: {seed: 1}}}\n"
         "  - {name: b.weight, type: f16, dims: [32], fill: {random_bytes: {seed: 2}}}\n"
         "  - {name: c.weight, type: " + type_c + ", dims: [32, 2], fill: {random_bytes: {seed: 3}}}\n";
}

std::string write_text(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  write_sketch(parse_sketch(text, name, ".", {}), path);
  return path;
}

// The same model twice: with f32 tensors, and with type 1000 (the same bytes) in their place.
const std::string& known_file() {
  static const std::string p = write_text("known.gguf", sketch_text("f32", "f32"));
  return p;
}
const std::string& opaque_file() {
  static const std::string p = write_text("opaque.gguf", sketch_text("1000, size: 1024", "1000, size: 256"));
  return p;
}

// The same model with ik_llama.cpp's iq4_ks (256 elements in 136 bytes, 4 bytes of row
// scale a row: 1120 bytes for 8 rows) and with type 1000 of as many bytes.
std::string ik_text(const std::string& type) {
  return "version: 3\n"
         "metadata:\n"
         "  - {key: general.architecture, type: string, value: llama}\n"
         "  - {key: general.name, type: string, value: ik test}\n"
         "tensors:\n"
         "  - {name: a.weight, type: " + type + ", dims: [256, 8], fill: {random_bytes: {seed: 1}}}\n"
         "  - {name: b.weight, type: f32, dims: [16], fill: {random_bytes: {seed: 2}}}\n"
         "  - {name: c.weight, type: " + type + ", dims: [256, 8], fill: {random_bytes: {seed: 3}}}\n";
}
const std::string& ik_file() {
  static const std::string p = write_text("ik.gguf", ik_text("iq4_ks"));
  return p;
}
const std::string& ik_opaque_file() {
  static const std::string p = write_text("ik-opaque.gguf", ik_text("1000, size: 1120"));
  return p;
}

// A command's output with the file's name and the type's name made the same, and runs of
// spaces (column padding) made one.
std::string normal(std::string s, const std::string& file, const std::string& type) {
  for (size_t at; (at = s.find(file)) != std::string::npos;) s.replace(at, file.size(), "FILE");
  for (size_t at; !type.empty() && (at = s.find(type)) != std::string::npos;) s.replace(at, type.size(), "TYPE");
  return std::regex_replace(s, std::regex(" +"), " ");
}

uint64_t type_field_at(const std::string& path, size_t i) {
  Scanned s = scan_file(path);
  const Tensor t = s.model.tensors[i];
  return *s.model.tensors.record(i) + 8 + t.name.size() + 4 + 8 * t.dims.size();
}

}  // namespace

TEST(OpaqueType, TheReaderMeasuresEachTensorToTheNextOffsetOrTheEndOfTheData) {
  Scanned s = scan_file(opaque_file());
  ASSERT_EQ(s.model.tensors.size(), 3u);
  EXPECT_EQ(s.model.tensors[0].type, 1000u);
  EXPECT_EQ(s.model.tensors[0].opaque_bytes, std::optional<uint64_t>(1024));
  EXPECT_EQ(s.model.tensors[1].opaque_bytes, std::nullopt);
  EXPECT_EQ(s.model.tensors[2].nbytes(), 256u);
  EXPECT_EQ(s.layout.tensor_offsets, (std::vector<uint64_t>{0, 1024, 1088}));
  EXPECT_EQ(ggml_type_name(1000), "type 1000");
  // The same bytes, tensor for tensor, as the file whose tensors are f32.
  Scanned k = scan_file(known_file());
  for (const char* name : {"a.weight", "b.weight", "c.weight"}) EXPECT_EQ(tensor_bytes(s.model, name), tensor_bytes(k.model, name)) << name;
  EXPECT_EQ(read_file_bytes(opaque_file()).size(), read_file_bytes(known_file()).size());
}

TEST(OpaqueType, EveryHeaderCommandSaysWhatItSaysOfTheKnownTypeButTheName) {
  for (const std::string cmd : {"show", "meta", "tensors", "map", "stack", "account", "hash", "get %s general.name",
                                "show --json", "tensors --json", "map --json", "hash --json", "hash --manifest"}) {
    auto line = [&](const std::string& file) {
      std::string c = cmd.find("%s") != std::string::npos ? std::regex_replace(cmd, std::regex("%s"), file) : cmd + " " + file;
      if (cmd.find("%s") == std::string::npos) c = cmd.substr(0, cmd.find(' ')) + " " + file + (cmd.find(' ') == std::string::npos ? "" : cmd.substr(cmd.find(' ')));
      return c;
    };
    CliRun k = run_cli(line(known_file())), o = run_cli(line(opaque_file()));
    EXPECT_EQ(k.code, 0) << cmd << k.err;
    EXPECT_EQ(o.code, 0) << cmd << o.err;
    EXPECT_EQ(normal(o.out, opaque_file(), "type 1000"), normal(k.out, known_file(), "f32")) << cmd;
  }
}

TEST(OpaqueType, DiffOfTheTwoFilesIsTheTwoTypeChangesAlone) {
  CliRun d = run_cli("diff " + known_file() + " " + opaque_file());
  EXPECT_NE(d.out.find("a.weight"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("type 1000"), std::string::npos) << d.out;
  EXPECT_EQ(d.out.find("b.weight"), std::string::npos) << d.out;
  EXPECT_EQ(d.out.find("general.name"), std::string::npos) << d.out;
  EXPECT_EQ(d.out.find("bytes differ"), std::string::npos) << d.out;
}

TEST(OpaqueType, DumpAndWriteGiveBackTheSameBytes) {
  for (const char* inline_data : {"", " --inline-data"}) {
    const std::string sk = temp_path(std::string("opaque-dump") + (*inline_data ? "-inline" : "") + ".yaml");
    const std::string out = temp_path(std::string("opaque-dump") + (*inline_data ? "-inline" : "") + ".gguf");
    CliRun d = run_cli("dump " + opaque_file() + inline_data + " -o " + sk);
    ASSERT_EQ(d.code, 0) << d.err;
    EXPECT_NE(slurp(sk).find("type: 1000"), std::string::npos) << slurp(sk);
    CliRun w = run_cli("write " + sk + " -o " + out + " --force");
    ASSERT_EQ(w.code, 0) << w.err;
    EXPECT_TRUE(read_file_bytes(out) == read_file_bytes(opaque_file())) << inline_data;
  }
}

TEST(OpaqueType, AnInPlaceNameEditAndAWholeFileTemplateEditKeepEveryTensorByte) {
  const std::string manifest = run_cli("hash " + opaque_file() + " --manifest").out;
  ASSERT_FALSE(manifest.empty());
  const std::string copy = temp_path("opaque-inplace.gguf");
  write_file_bytes(copy, read_file_bytes(opaque_file()));
  CliRun e = run_cli("edit " + copy + " --set general.name=renamed --in-place --json");
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("\"written\": \"header\""), std::string::npos) << e.out;
  Scanned a = scan_file(copy), src = scan_file(opaque_file());
  EXPECT_EQ(a.model.find("general.name")->str, "renamed");
  for (const char* name : {"a.weight", "b.weight", "c.weight"}) EXPECT_EQ(tensor_bytes(a.model, name), tensor_bytes(src.model, name)) << name;

  // A template of 8 KiB moves the data: every tensor moves as its bytes.
  const std::string out = temp_path("opaque-template.gguf");
  CliRun t = run_cli("edit " + opaque_file() + " --set tokenizer.chat_template=" + std::string(8192, 'x') + " -o " + out + " --force");
  ASSERT_EQ(t.code, 0) << t.err;
  Scanned b = scan_file(out);
  EXPECT_GT(b.layout.data_offset, src.layout.data_offset + 8192);
  EXPECT_EQ(b.model.tensors[0].type, 1000u);
  EXPECT_EQ(b.model.tensors[2].opaque_bytes, std::optional<uint64_t>(256));
  for (const char* name : {"a.weight", "b.weight", "c.weight"}) EXPECT_EQ(tensor_bytes(b.model, name), tensor_bytes(src.model, name)) << name;
  // llama-gguf-hash's manifest of the source holds for the edited file, tensor by tensor.
  const std::string mf = temp_path("opaque.manifest");
  const std::string renamed = std::regex_replace(manifest, std::regex(opaque_file()), out);
  write_file_bytes(mf, std::vector<uint8_t>(renamed.begin(), renamed.end()));
  CliRun c = run_cli("hash " + out + " --check " + mf);
  EXPECT_EQ(c.code, 0) << c.out << c.err;
  EXPECT_NE(c.out.find("c.weight"), std::string::npos) << c.out;
}

TEST(OpaqueType, DecodingConvertingAndRealigningAreRefusedNamingTheType) {
  CliRun v = run_cli("tensor " + opaque_file() + " a.weight");
  EXPECT_EQ(v.code, 1);
  EXPECT_NE(v.err.find("decoding type 1000 is not supported: ggufkit does not know the type's layout"), std::string::npos) << v.err;
  CliRun c = run_cli("convert " + opaque_file() + " --byte-order big -o " + temp_path("opaque-big.gguf") + " --force");
  EXPECT_EQ(c.code, 1);
  EXPECT_NE(c.err.find("tensor[0] a.weight: cannot change the byte order of type 1000 data"), std::string::npos) << c.err;
  const std::string re = temp_path("opaque-64.gguf");
  CliRun r = run_cli("realign " + opaque_file() + " -a 64 -o " + re + " --force");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cannot realign: type 1000 is a type ggufkit cannot size"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(re));
}

TEST(OpaqueType, ValidateNamesTheTypeAtItsRecordsTypeField) {
  const std::vector<Finding> fs = validate_file(opaque_file());
  std::vector<const Finding*> typed;
  for (const Finding& f : fs)
    if (f.code == Code::tensor_type_unknown) typed.push_back(&f);
  ASSERT_EQ(typed.size(), 2u);
  EXPECT_EQ(typed[0]->severity, Severity::error);
  EXPECT_EQ(typed[0]->offset, std::optional<uint64_t>(type_field_at(opaque_file(), 0)));
  EXPECT_EQ(typed[1]->offset, std::optional<uint64_t>(type_field_at(opaque_file(), 2)));
  EXPECT_NE(typed[0]->message.find("tensor[0] a.weight is type 1000, a type ggml does not know: llama.cpp refuses to load the file"),
            std::string::npos) << typed[0]->message;
  // The bytes at that offset are the id.
  const std::vector<uint8_t> b = read_file_bytes(opaque_file());
  EXPECT_EQ(b[*typed[0]->offset] | b[*typed[0]->offset + 1] << 8, 1000);
  CliRun cli = run_cli("validate " + opaque_file());
  EXPECT_EQ(cli.code, 1);
  EXPECT_NE(cli.out.find("error tensor_type_unknown at byte " + std::to_string(*typed[0]->offset)), std::string::npos) << cli.out;
}

TEST(OpaqueType, ASetOfShardsHoldingOpaqueTensorsReadsAndValidatesShardByShard) {
  const std::string prefix = temp_path("opaque-set"), kprefix = temp_path("known-set");
  ASSERT_EQ(run_cli("split " + opaque_file() + " --max-tensors 1 -o " + prefix + " --force").code, 0);
  ASSERT_EQ(run_cli("split " + known_file() + " --max-tensors 1 -o " + kprefix + " --force").code, 0);
  const std::string first = prefix + "-00001-of-00003.gguf", kfirst = kprefix + "-00001-of-00003.gguf";
  for (const std::string cmd : {"show", "tensors", "map", "stack"}) {
    CliRun o = run_cli(cmd + " " + first), k = run_cli(cmd + " " + kfirst);
    EXPECT_EQ(o.code, 0) << cmd << o.err;
    EXPECT_EQ(normal(o.out, prefix, "type 1000"), normal(k.out, kprefix, "f32")) << cmd;
  }
  CliRun v = run_cli("validate " + first + " --json");
  EXPECT_NE(v.out.find("\"code\": \"tensor_type_unknown\""), std::string::npos) << v.out;
  Verdict vd = validate(first);
  std::vector<std::string> told;  // told once, by the shard that holds it, at its record
  for (const auto& [file, f] : vd.findings)
    if (f.code == Code::tensor_type_unknown) {
      told.push_back(file);
      EXPECT_EQ(f.offset, std::optional<uint64_t>(type_field_at(file, 0))) << file;
    }
  EXPECT_EQ(told, (std::vector<std::string>{first, prefix + "-00003-of-00003.gguf"}));
}

TEST(OpaqueType, TheSketchWriterNeedsASizeForATypeItCannotSize) {
  try {
    parse_sketch(sketch_text("1000", "f32"), "s", ".", {});
    ADD_FAILURE() << "no size refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("type 1000 cannot be sized from its shape: give size: (bytes)"), std::string::npos) << e.what();
  }
  try {
    parse_sketch("tensors:\n  - {name: a, type: 1000, size: 4, dims: [1], fill: ones}\n", "s", ".", {});
    ADD_FAILURE() << "fill ones refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("type 1000 has no layout here to encode values"), std::string::npos) << e.what();
  }
}

TEST(IkLlamaType, TheTableSizesIq4KsWithItsRowScaleAndNamesIq3KsAt156) {
  const GgmlType* t = ggml_type_by_name("iq4_ks");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->id, 144u);
  EXPECT_TRUE(t->ik);
  const std::vector<uint64_t> dims{256, 8};
  EXPECT_EQ(tensor_nbytes(*t, dims), std::optional<uint64_t>(8 * (136 + 4)));
  EXPECT_EQ(ggml_type_name(156), "iq3_ks");
  EXPECT_EQ(ggml_type(156)->row_meta, 2u);
  // ids mainline gives a meaning keep it: 41 is q1_0, 36 a removed one.
  EXPECT_EQ(ggml_type_name(41), "q1_0");
  EXPECT_FALSE(ggml_type(41)->ik);
  EXPECT_TRUE(ggml_type(36)->removed);
  for (const GgmlType& k : ik_llama_types()) EXPECT_GE(k.id, kGgmlTypeCount) << k.name;
  Scanned s = scan_file(ik_file());
  EXPECT_EQ(s.model.tensors[0].nbytes(), 1120u);
  EXPECT_EQ(s.model.tensors[0].opaque_bytes, std::nullopt);
  EXPECT_EQ(s.layout.tensor_offsets, (std::vector<uint64_t>{0, 1120, 1184}));
}

TEST(IkLlamaType, HeaderCommandsNameTheTypeAndOtherwiseSayWhatTheyDoOfOpaqueBytes) {
  for (const std::string cmd : {"show", "meta", "tensors", "map", "stack", "account", "hash", "show --json", "tensors --json"}) {
    auto line = [&](const std::string& file) {
      return cmd.substr(0, cmd.find(' ')) + " " + file + (cmd.find(' ') == std::string::npos ? "" : cmd.substr(cmd.find(' ')));
    };
    CliRun k = run_cli(line(ik_file())), o = run_cli(line(ik_opaque_file()));
    EXPECT_EQ(k.code, 0) << cmd << k.err;
    EXPECT_EQ(normal(o.out, ik_opaque_file(), "type 1000"), normal(k.out, ik_file(), "iq4_ks")) << cmd;
  }
  CliRun t = run_cli("tensors " + ik_file());
  EXPECT_NE(t.out.find("iq4_ks"), std::string::npos) << t.out;
}

TEST(IkLlamaType, ValidateSaysMainlineCannotLoadItAnErrorUnlessTheDialectIsIkLlama) {
  CliRun v = run_cli("validate " + ik_file());
  EXPECT_EQ(v.code, 1);
  const std::string want = "tensor[0] a.weight is iq4_ks, an ik_llama.cpp type: mainline llama.cpp cannot load it";
  EXPECT_NE(v.out.find("error tensor_type_ik at byte " + std::to_string(type_field_at(ik_file(), 0)) + ": " + want), std::string::npos) << v.out;
  CliRun ik = run_cli("validate " + ik_file() + " --dialect ik_llama --json");
  EXPECT_NE(ik.out.find("\"code\": \"tensor_type_ik\", \"severity\": \"warning\""), std::string::npos) << ik.out;
  EXPECT_EQ(ik.out.find("\"code\": \"tensor_type_ik\", \"severity\": \"error\""), std::string::npos) << ik.out;
  CliRun bad = run_cli("validate " + ik_file() + " --dialect ollama");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("dialect: 'ollama' is not one: give llama.cpp (mainline, the default) or ik_llama"), std::string::npos) << bad.err;
}

// What a file that is not GGUF is, as every command that reads one says it (the kinds
// themselves: test_sniff.cpp).
TEST(NotGgufFile, ShowOfAGitLfsPointerSaysSoWithItsOidAndTheRemedyAndJsonGivesTheKind) {
  const std::string oid = "4d7a2164bb1a0a4bd9a8b4c4cbe5b5c0ae6e0b8c7e1b8e4b1a6b2c1b3d2e6f70";
  const std::string text = "version https://git-lfs.github.com/spec/v1\noid sha256:" + oid + "\nsize 4683073952\n";
  const std::string path = temp_path("pointer.gguf");
  write_file_bytes(path, std::vector<uint8_t>(text.begin(), text.end()));
  CliRun s = run_cli("show " + path);
  EXPECT_EQ(s.code, 1);
  EXPECT_NE(s.err.find(path + ": at byte 0, head (magic): not a GGUF file: a Git LFS pointer"), std::string::npos) << s.err;
  EXPECT_NE(s.err.find(oid), std::string::npos) << s.err;
  EXPECT_NE(s.err.find("git lfs pull"), std::string::npos) << s.err;
  CliRun j = run_cli("show " + path + " --json");
  EXPECT_EQ(j.code, 1);
  EXPECT_NE(j.out.find("\"not_gguf\": {\"kind\": \"git_lfs_pointer\""), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"kind\": \"format\""), std::string::npos) << j.out;
}

TEST(NotGgufFile, AnEditOfAWebPageIsRefusedSayingWhatItIsAndLeavesIt) {
  const std::string html = "<!DOCTYPE html>\n<html><head><title>Llama-3-8B.Q4_K_M.gguf · Hugging Face</title></head><body></body></html>\n";
  const std::string path = temp_path("page.gguf");
  write_file_bytes(path, std::vector<uint8_t>(html.begin(), html.end()));
  CliRun e = run_cli("edit " + path + " --set general.name=x --in-place");
  EXPECT_EQ(e.code, 1);
  EXPECT_NE(e.err.find("not a GGUF file: a web page"), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("Llama-3-8B.Q4_K_M.gguf"), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("/resolve/"), std::string::npos) << e.err;
  EXPECT_EQ(slurp(path), html);
}

TEST(NotGgufFile, ValidateOfAFileOfZerosReportsAReadFindingSayingWhatItIs) {
  const std::string path = temp_path("zeros.gguf");
  write_file_bytes(path, std::vector<uint8_t>(8192, 0));
  CliRun v = run_cli("validate " + path);
  EXPECT_EQ(v.code, 1);
  EXPECT_NE(v.out.find("error read at byte 0"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("all zero"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("download the file again"), std::string::npos) << v.out;
}

namespace {
// The file offset of tensor i's data-offset field, the record's last eight bytes.
uint64_t offset_field_at(const std::string& path, size_t i) { return type_field_at(path, i) + 4; }
void put_u64(std::vector<uint8_t>& b, uint64_t at, uint64_t v) {
  for (int k = 0; k < 8; ++k) b[at + k] = static_cast<uint8_t>(v >> (8 * k));
}
// A sketch of one opaque tensor (`size` bytes) then f32 tensors `rest` (name: dims).
std::string opaque_then(uint64_t size, const std::string& rest) {
  return "version: 3\nmetadata:\n  - {key: general.architecture, type: string, value: llama}\ntensors:\n"
         "  - {name: a.weight, type: 1000, size: " + std::to_string(size) + ", dims: [" + std::to_string(size) +
         "], fill: {random_bytes: {seed: 1}}}\n" + rest;
}
}  // namespace

TEST(OpaqueType, AZeroSizeTensorAtTheSameOffsetIsNoEndSoTheFileIsRefusedAsItsKnownTwinIs) {
  // z.weight (no bytes) listed after a.weight but placed at a.weight's own offset: with a
  // known type the reader refuses the overlap. Measured to z's offset, a.weight would be
  // zero bytes and its data a gap nobody keeps; measured past z it overlaps as its twin does.
  const std::string rest = "  - {name: z.weight, type: f32, dims: [0], fill: zeros}\n"
                           "  - {name: b.weight, type: f32, dims: [8], fill: {random_bytes: {seed: 2}}}\n";
  for (const std::string type : {"1000, size: 256", "f32"}) {
    std::string text = opaque_then(256, rest);
    text.replace(text.find("1000, size: 256"), 15, type);
    text.replace(text.find("dims: [256]"), 11, type == "f32" ? "dims: [64]" : "dims: [256]");
    const std::string path = write_text("zero-next-" + type.substr(0, 3) + ".gguf", text);
    std::vector<uint8_t> b = read_file_bytes(path);
    put_u64(b, offset_field_at(path, 1), 0);
    write_file_bytes(path, b);
    try {
      scan_file(path);
      ADD_FAILURE() << type << ": read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("tensor[1] z.weight"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("overlaps tensor[0] a.weight, which ends at offset 256"), std::string::npos) << e.what();
    }
  }
}

TEST(OpaqueType, ASizeThatIsNoMultipleOfTheAlignmentTakesItsPaddingAlongAndARewriteKeepsTheBytes) {
  // 100 bytes, then 28 of padding to the next tensor at 128: no shape tells the two apart.
  const std::string path = write_text("opaque-100.gguf", opaque_then(100, "  - {name: b.weight, type: f32, dims: [8], fill: {random_bytes: {seed: 2}}}\n"));
  Scanned s = scan_file(path);
  EXPECT_EQ(s.layout.tensor_offsets, (std::vector<uint64_t>{0, 128}));
  EXPECT_EQ(s.model.tensors[0].opaque_bytes, std::optional<uint64_t>(128));
  const std::vector<uint8_t> a = tensor_bytes(s.model, "a.weight");
  EXPECT_TRUE(std::all_of(a.begin() + 100, a.end(), [](uint8_t x) { return x == 0; }));
  const std::string out = temp_path("opaque-100-edit.gguf");
  ASSERT_EQ(run_cli("edit " + path + " --set general.name=x -o " + out + " --force").code, 0);
  Scanned e = scan_file(out);
  EXPECT_EQ(tensor_bytes(e.model, "a.weight"), a);
  EXPECT_EQ(tensor_bytes(e.model, "b.weight"), tensor_bytes(s.model, "b.weight"));
  EXPECT_EQ(e.layout.file_size - e.layout.data_offset, s.layout.file_size - s.layout.data_offset);
}

TEST(OpaqueType, BytesAfterTheLastOpaqueTensorAreItsOwnAndValidateSaysItCannotTellThemApart) {
  const std::string path = temp_path("opaque-trailing.gguf");
  std::vector<uint8_t> b = read_file_bytes(opaque_file());
  b.insert(b.end(), 100, 0x5a);
  write_file_bytes(path, b);
  EXPECT_EQ(scan_file(path).model.tensors[2].opaque_bytes, std::optional<uint64_t>(356));
  CliRun v = run_cli("validate " + path);
  EXPECT_NE(v.out.find("tensor[2] c.weight is type 1000, a type ggml does not know"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("the last tensor's 356 bytes are measured to the end of the file: bytes after it, or a file cut short, "
                       "cannot be told from its own"), std::string::npos) << v.out;
  // The tensor before it is measured by the next offset and says nothing of the kind.
  EXPECT_EQ(v.out.find("tensor[0] a.weight is type 1000, a type ggml does not know: llama.cpp refuses to load the file "
                       "(ggufkit reads its 1024 bytes as they are); the last"), std::string::npos) << v.out;
}

TEST(OpaqueType, AHeaderExemplarIsRefusedWhenTheLastTensorIsOpaqueAndKeepsTheOthersSizes) {
  // The exemplar ends at the data start: a last opaque tensor would read back as no bytes.
  const std::string ex = temp_path("opaque-exemplar.gguf");
  CliRun r = run_cli("replica " + opaque_file() + " --data none -o " + ex + " --force");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("tensor[2] c.weight: type 1000 is measured to the end of the data: a header exemplar, which ends "
                       "at the data start, cannot keep its size; make a sparse replica instead"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(ex));
  // With a sized last tensor the exemplar keeps a.weight's 1024 bytes, measured by offsets.
  const std::string path = write_text("opaque-first.gguf", opaque_then(1024, "  - {name: b.weight, type: f32, dims: [8], fill: {random_bytes: {seed: 2}}}\n"));
  ASSERT_EQ(run_cli("replica " + path + " --data none -o " + ex + " --force").code, 0);
  Scanned s = scan_file(ex);
  EXPECT_TRUE(s.header_only);
  EXPECT_EQ(s.model.tensors[0].opaque_bytes, std::optional<uint64_t>(1024));
  EXPECT_EQ(s.model_size, scan_file(path).source_size);
}

TEST(OpaqueType, InlineDataOfAnExemplarsHugeOpaqueTensorIsRefusedWithoutAllocatingIt) {
  // b.weight's offset moved to 2^62 in an exemplar: a.weight measures 2^62 bytes, which
  // nothing is there to hold. dump --inline-data refuses it rather than allocating.
  const std::string path = write_text("opaque-huge-src.gguf", opaque_then(1024, "  - {name: b.weight, type: f32, dims: [8], fill: {random_bytes: {seed: 2}}}\n"));
  const std::string ex = temp_path("opaque-huge.gguf");
  ASSERT_EQ(run_cli("replica " + path + " --data none -o " + ex + " --force").code, 0);
  std::vector<uint8_t> b = read_file_bytes(ex);
  put_u64(b, offset_field_at(ex, 1), uint64_t{1} << 62);
  write_file_bytes(ex, b);
  Scanned s = scan_file(ex);
  EXPECT_EQ(s.model.tensors[0].opaque_bytes, std::optional<uint64_t>(uint64_t{1} << 62));
#ifdef GGUFKIT_SANITIZED
  const std::string limit;  // the sanitizers reserve terabytes of address space: no ulimit -v there
#else
  const std::string limit = "ulimit -v 2097152;";  // 2 GiB: an allocation of the tensor would fail
#endif
  CliRun d = run_cli("dump " + ex + " --inline-data", limit);
  EXPECT_EQ(d.code, 2) << d.err;
  EXPECT_NE(d.err.find(ex + ": at byte " + std::to_string(s.layout.data_offset) + ", tensor data: the file is a header exemplar"),
            std::string::npos) << d.err;
  // Past 2^63 - 1, ggml's largest tensor, the measure itself is refused at the next offset.
  put_u64(b, offset_field_at(ex, 1), uint64_t{1} << 63);
  write_file_bytes(ex, b);
  try {
    scan_file(ex);
    ADD_FAILURE() << "read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor[0] a.weight (type): type 1000 measures 9223372036854775808 bytes to the next "
                                         "tensor, more than ggml's largest tensor"), std::string::npos) << e.what();
  }
}

TEST(OpaqueType, AStreamCannotSizeALastOpaqueTensorAndSaysToReadTheFile) {
  CliRun s = run_cli("show - < " + opaque_file());
  EXPECT_EQ(s.code, 1);
  EXPECT_NE(s.err.find("type 1000 is a type this reader cannot size, and the last tensor's bytes run to the end of the data, "
                       "which a stream does not give: read the file itself"), std::string::npos) << s.err;
}

TEST(OpaqueType, ASplitSetMergesBackToTheSameBytes) {
  const std::string prefix = temp_path("opaque-merge");
  ASSERT_EQ(run_cli("split " + opaque_file() + " --max-tensors 1 -o " + prefix + " --force").code, 0);
  const std::string out = temp_path("opaque-merged.gguf");
  CliRun m = run_cli("merge " + prefix + "-00001-of-00003.gguf -o " + out + " --force");
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_TRUE(read_file_bytes(out) == read_file_bytes(opaque_file()));
}

TEST(OpaqueType, CorruptsOracleSaysGgmlRefusesAnIkType) {
  EXPECT_FALSE(ggml_accepts(ik_file()));
  EXPECT_FALSE(ggml_accepts(opaque_file()));
  EXPECT_TRUE(ggml_accepts(known_file()));
}

TEST(OpaqueType, TensorRowsOfATensorWithNoColumnsIsRefusedNotADivisionByZero) {
  const std::string path = write_text("zero-cols.gguf", "version: 3\ntensors:\n  - {name: e.weight, type: f32, dims: [0, 4], fill: zeros}\n");
  CliRun t = run_cli("tensor " + path + " e.weight --rows 0:1");
  EXPECT_EQ(t.code, 2) << t.err;
  EXPECT_NE(t.err.find("--rows 0:1: e.weight has 0 columns, so no rows to take"), std::string::npos) << t.err;
}

TEST(NotGgufFile, AnEmptyStreamIsToldAsEmptyNotAsAShortRead) {
  CliRun s = run_cli("show - --json < /dev/null");
  EXPECT_EQ(s.code, 1);
  EXPECT_NE(s.out.find("\"not_gguf\": {\"kind\": \"empty\""), std::string::npos) << s.out << s.err;
  CliRun t = run_cli("show -", "printf 'GGUF' |");
  EXPECT_NE(t.err.find("not a GGUF file"), std::string::npos) << t.err;
  EXPECT_EQ(t.err.find("needs 4 bytes"), std::string::npos) << t.err;
}

// Found by the audit: a graft of the donor's last tensor of an unknown type (measured to the
// end of the data, padding and all) was written, then failed its re-read as "verification
// failed" (exit 3). It is refused before anything is written, naming it (exit 1); an opaque
// tensor measured to the next one's offset is grafted with its bytes.
TEST(OpaqueType, AGraftOfTheLastTensorOfATypeGgufkitCannotSizeIsRefusedUpFront) {
  const std::string out = temp_path("opaque-graft.gguf");
  CliRun r = run_cli("edit " + known_file() + " --graft " + opaque_file() + ":c.weight -o " + out);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err, "ggufkit: error: " + opaque_file() + ": tensor[2] c.weight: type 1000 is a type ggufkit cannot size, measured to "
                   "the end of the donor's data, its padding included: where the tensor ends is not known, so it cannot be "
                   "grafted; nothing was written\n");
  EXPECT_FALSE(std::filesystem::exists(out));
  CliRun a = run_cli("edit " + known_file() + " --graft " + opaque_file() + ":a.weight --allow-broken -o " + out);
  ASSERT_EQ(a.code, 0) << a.err;
  const Model res = scan_file(out).model, donor = scan_file(opaque_file()).model;
  EXPECT_EQ(res.tensors[0].opaque_bytes, std::optional<uint64_t>(1024));
  EXPECT_EQ(tensor_bytes(res, "a.weight"), tensor_bytes(donor, "a.weight"));
}
