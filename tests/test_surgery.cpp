// Tensor surgery (surgery.h) through the front door: every kept tensor's bytes are its
// source's, the keys that describe layers and experts are fixed, and what llama.cpp would
// not load is refused with nothing written.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "ggufkit/edit.h"
#include "ggufkit/example.h"
#include "ggufkit/scan.h"
#include "ggufkit/shards.h"
#include "ggufkit/sketch.h"
#include "ggufkit/surgery.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {


std::vector<std::string> names_of(const Model& m) {
  std::vector<std::string> out;
  for (const Tensor& t : m.tensors) out.push_back(t.name);
  return out;
}

uint64_t key_u64(const Model& m, const std::string& key) {
  const Value* v = m.find(key);
  if (!v) throw std::runtime_error("no key " + key);
  return v->as_u64();
}

// The smallest qwen3moe llama.cpp runs, with 4 experts of which 2 are used a token.
const std::string& tiny_moe(uint32_t seed = 1) {
  static std::map<uint32_t, std::string> made;
  auto it = made.find(seed);
  if (it != made.end()) return it->second;
  ArchExampleRequest req;
  req.arch = "qwen3moe";
  req.set = {{"expert_count", "4"}, {"expert_used_count", "2"}};
  req.seed = seed;
  std::string path = temp_path("moe-" + std::to_string(seed) + ".gguf");
  write_sketch(parse_sketch(arch_example_sketch(req), "qwen3moe", ".", {}), path);
  return made[seed] = path;
}

EditRequest surgery(const std::string& input, const std::string& output) {
  EditRequest req;
  req.input = input;
  req.output = output;
  req.write.force = true;
  return req;
}

}  // namespace

TEST(Surgery, KeepingLayerZeroOfTheTinyLlamaCountsOneBlockAndKeepsEveryTensorByte) {
  const std::string out = temp_path("keep0.gguf");
  EditRequest req = surgery(tiny_llama(), out);
  req.patch.tensors.keep_layers = "0";
  EditReport r = edit(req);
  const Model src = scan_file(tiny_llama()).model, res = scan_file(out).model;
  EXPECT_EQ(key_u64(res, "llama.block_count"), 1u);
  EXPECT_EQ(res.tensors.size(), 12u);  // 21 less layer 1's 9
  EXPECT_EQ(r.tensor_changes.size(), 9u);
  for (const std::string& name : names_of(res)) {
    EXPECT_EQ(name.rfind("blk.1.", 0), std::string::npos) << name;
    EXPECT_EQ(tensor_bytes(res, name), tensor_bytes(src, name)) << name;
  }
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].tensors_verified, 12u);
}

TEST(Surgery, RemovingLayerZeroMakesTheSourcesLayerOneTheNewLayerZero) {
  const std::string out = temp_path("remove0.gguf");
  EditRequest req = surgery(tiny_llama(), out);
  req.patch.tensors.remove_layers = "0";
  edit(req);
  const Model src = scan_file(tiny_llama()).model, res = scan_file(out).model;
  EXPECT_EQ(key_u64(res, "llama.block_count"), 1u);
  size_t layer = 0;
  for (const std::string& name : names_of(src)) {
    if (name.rfind("blk.1.", 0) != 0) continue;
    const std::string now = "blk.0." + name.substr(6);
    EXPECT_EQ(tensor_bytes(res, now), tensor_bytes(src, name)) << now;
    ++layer;
  }
  EXPECT_EQ(layer, 9u);
  EXPECT_NE(tensor_bytes(res, "blk.0.attn_q.weight"), tensor_bytes(src, "blk.0.attn_q.weight"));
}

TEST(Surgery, KeepingExpertsSlicesEachStackedTensorToTheSourcesSlabsOfThoseExperts) {
  const std::string out = temp_path("experts02.gguf");
  EditRequest req = surgery(tiny_moe(), out);
  req.patch.tensors.keep_experts = "0,2";  // two ranges: each tensor is copied in two pieces
  EditReport r = edit(req);
  const Model src = scan_file(tiny_moe()).model, res = scan_file(out).model;
  EXPECT_EQ(key_u64(res, "qwen3moe.expert_count"), 2u);
  EXPECT_EQ(key_u64(res, "qwen3moe.expert_used_count"), 2u);
  size_t sliced = 0;
  for (const Tensor& t : src.tensors) {
    const bool stacked = t.name.find("_exps.") != std::string::npos || t.name.find("ffn_gate_inp.") != std::string::npos;
    if (!stacked) {
      EXPECT_EQ(tensor_bytes(res, t.name), tensor_bytes(src, t.name)) << t.name;
      continue;
    }
    ASSERT_EQ(t.dims.back(), 4u) << t.name;
    const std::vector<uint8_t> whole = tensor_bytes(src, t.name);
    const size_t slab = whole.size() / 4;
    std::vector<uint8_t> want(whole.begin(), whole.begin() + slab);
    want.insert(want.end(), whole.begin() + 2 * slab, whole.begin() + 3 * slab);
    EXPECT_EQ(tensor_bytes(res, t.name), want) << t.name;
    ++sliced;
  }
  EXPECT_EQ(sliced, 8u);  // gate_inp, gate, up, down in each of 2 layers
  EXPECT_EQ(r.tensor_changes.size(), 8u);
  for (const Tensor& t : res.tensors)
    if (t.name.find("_exps.") != std::string::npos) {
      EXPECT_EQ(t.dims.back(), 2u) << t.name;
    }
}

TEST(Surgery, KeepingFewerExpertsThanAreUsedIsRefusedByTheRuleBook) {
  const std::string out = temp_path("experts1.gguf");
  EditRequest req = surgery(tiny_moe(), out);
  req.patch.tensors.keep_experts = "1";
  try {
    edit(req);
    FAIL() << "written";
  } catch (const EditRefused& e) {
    ASSERT_FALSE(e.findings.empty());
    EXPECT_EQ(e.findings[0].code, "hparam_condition");
    EXPECT_EQ(e.findings[0].place.name, "qwen3moe.expert_used_count");
  }
  EXPECT_FALSE(fs::exists(out));
}

TEST(Surgery, ARenameThereAndBackGivesTheSourceByteForByte) {
  const std::string there = temp_path("renamed.gguf"), back = temp_path("renamed-back.gguf");
  EditRequest req = surgery(tiny_llama(), there);
  req.patch.tensors.rename = {{"blk.*.attn_q.*", "blk.*.q.*"}};  // a glob: both wildcards carried across
  req.allow_broken = true;  // llama.cpp asks for attn_q
  EditReport r = edit(req);
  ASSERT_EQ(r.tensor_changes.size(), 2u);
  EXPECT_EQ(r.tensor_changes[0].name, "blk.0.attn_q.weight");
  EXPECT_EQ(r.tensor_changes[0].to, "blk.0.q.weight");
  EXPECT_EQ(r.tensor_changes[1].to, "blk.1.q.weight");
  EditRequest again = surgery(there, back);
  again.patch.tensors.rename = {{R"(blk\.(\d+)\.q\.(.*))", "blk.$1.attn_q.$2"}};  // a regular expression
  edit(again);
  EXPECT_EQ(read_file_bytes(back), read_file_bytes(tiny_llama()));
}

TEST(Surgery, TwoTensorsRenamedToOneNameAreRefused) {
  EditRequest req = surgery(tiny_llama(), temp_path("clash.gguf"));
  req.patch.tensors.rename = {{"blk.0.attn_q.weight", "blk.0.attn_k.weight"}};
  try {
    edit(req);
    FAIL() << "written";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind, Error::Kind::usage);
    EXPECT_NE(std::string(e.what()).find("blk.0.attn_q.weight and blk.0.attn_k.weight would both be named blk.0.attn_k.weight"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(temp_path("clash.gguf")));
}

TEST(Surgery, RemovingARequiredTensorIsRefusedNamingIt) {
  const std::string out = temp_path("no-q.gguf");
  EditRequest req = surgery(tiny_llama(), out);
  req.patch.tensors.remove = {"blk.1.attn_q.*"};
  try {
    edit(req);
    FAIL() << "written";
  } catch (const EditRefused& e) {
    ASSERT_EQ(e.findings.size(), 1u);
    EXPECT_EQ(e.findings[0].code, "tensor_missing");
    EXPECT_EQ(e.findings[0].place.name, "blk.1.attn_q.weight");
  }
  EXPECT_FALSE(fs::exists(out));
}

TEST(Surgery, AGlobThatMatchesNothingIsAUsageErrorNotASilentNoOp) {
  EditRequest req = surgery(tiny_llama(), temp_path("none.gguf"));
  req.patch.tensors.remove = {"blk.9.*"};
  try {
    edit(req);
    FAIL() << "written";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind, Error::Kind::usage);
    EXPECT_NE(std::string(e.what()).find("`remove_tensor` blk.9.* matches no tensor"), std::string::npos) << e.what();
  }
}

TEST(Surgery, AGraftOfOneLayerFromASecondFileYieldsThoseBytes) {
  const std::string out = temp_path("grafted.gguf");
  EditRequest req = surgery(tiny_moe(1), out);
  req.patch.tensors.graft = {{tiny_moe(7), "blk.1.*"}};
  EditReport r = edit(req);
  const Model src = scan_file(tiny_moe(1)).model, donor = scan_file(tiny_moe(7)).model, res = scan_file(out).model;
  EXPECT_EQ(names_of(res), names_of(src));  // replaced where they stood
  size_t replaced = 0;
  for (const std::string& name : names_of(res)) {
    const bool grafted = name.rfind("blk.1.", 0) == 0;
    EXPECT_EQ(tensor_bytes(res, name), tensor_bytes(grafted ? donor : src, name)) << name;
    replaced += grafted;
  }
  EXPECT_EQ(replaced, 12u);
  EXPECT_EQ(r.tensor_changes.size(), 12u);
  EXPECT_NE(tensor_bytes(donor, "blk.1.attn_q.weight"), tensor_bytes(src, "blk.1.attn_q.weight"));  // the seeds differ
}

TEST(Surgery, AGraftOfAWronglyShapedTensorIsRefusedNamingBothShapesWithNothingWritten) {
  ArchExampleRequest wide;
  wide.arch = "qwen3moe";
  wide.set = {{"expert_count", "4"}, {"expert_used_count", "2"}, {"expert_feed_forward_length", "48"}};
  const std::string donor = temp_path("wide.gguf"), out = temp_path("bad-graft.gguf");
  write_sketch(parse_sketch(arch_example_sketch(wide), "wide", ".", {}), donor);
  EditRequest req = surgery(tiny_moe(), out);
  req.patch.tensors.graft = {{donor, "blk.0.ffn_up_exps.weight"}};
  try {
    edit(req);
    FAIL() << "written";
  } catch (const EditRefused& e) {
    ASSERT_FALSE(e.findings.empty());
    EXPECT_EQ(e.findings[0].place.name, "blk.0.ffn_up_exps.weight");
    EXPECT_NE(e.message.find("the donor's is [64, 48, 4]"), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("this model's [64, 32, 4]"), std::string::npos) << e.message;
  }
  EXPECT_FALSE(fs::exists(out));
}

TEST(Surgery, ExtractKeepsTheMetadataAndOnlyTheTensorsAGlobMatches) {
  const std::string out = temp_path("extract.gguf");
  EditRequest req = surgery(tiny_llama(), out);
  req.patch.tensors.keep = {"token_embd.*", "blk.1.*"};
  req.allow_broken = true;  // not a model llama.cpp loads
  edit(req);
  const Model src = scan_file(tiny_llama()).model, res = scan_file(out).model;
  EXPECT_EQ(res.tensors.size(), 10u);
  EXPECT_EQ(res.metadata.size(), src.metadata.size());
  for (const std::string& name : names_of(res)) EXPECT_EQ(tensor_bytes(res, name), tensor_bytes(src, name)) << name;
}

// The keys that describe layers, on a model made in memory: counts, per-layer arrays,
// the first and last layers' counts, and a period that no longer fits.
TEST(Surgery, TheKeysThatDescribeLayersAreFixedAndAPeriodThatBreaksIsNamed) {
  Model m;
  auto u32 = [](uint32_t v) { return Value::of_u32(v); };
  m.metadata.push_back({"general.architecture", Value::of_string("deepseek2")});
  m.metadata.push_back({"deepseek2.block_count", u32(4)});
  m.metadata.push_back({"deepseek2.leading_dense_block_count", u32(2)});
  m.metadata.push_back({"deepseek2.nextn_predict_layers", u32(1)});
  m.metadata.push_back({"deepseek2.feed_forward_length", Value::array(ValueType::u32, {u32(10), u32(11), u32(12), u32(13)})});
  m.metadata.push_back({"deepseek2.rope.dimension_sections", Value::array(ValueType::u32, {u32(1), u32(2), u32(3), u32(4)})});
  m.metadata.push_back({"deepseek2.attention.sliding_window_pattern", u32(2)});
  m.metadata.push_back({"deepseek2.classifier.output_labels", Value::strings({"a", "b", "c", "d"})});  // 4, as the layers
  auto src = from_bytes("mem", std::vector<uint8_t>(4 * 16));
  for (uint32_t i = 0; i < 4; ++i) {
    Tensor t;
    t.name = "blk." + std::to_string(i) + ".attn_norm.weight";
    t.dims = {4};
    t.type = 0;
    t.source = src;
    t.source_offset = 16 * i;
    m.tensors.push_back(t);
  }
  TensorOps ops;
  ops.keep_layers = "0,2-3";
  SurgeryResult r = apply_tensor_ops(m, ops);
  EXPECT_EQ(m.find("deepseek2.block_count")->as_u64(), 3u);
  EXPECT_EQ(m.find("deepseek2.leading_dense_block_count")->as_u64(), 1u);  // of layers 0 and 1, 0 is kept
  EXPECT_EQ(m.find("deepseek2.nextn_predict_layers")->as_u64(), 1u);       // layer 3, still the last
  const Value* ff = m.find("deepseek2.feed_forward_length");
  ASSERT_EQ(ff->size(), 3u);
  EXPECT_EQ(ff->at(0).as_u64(), 10u);
  EXPECT_EQ(ff->at(1).as_u64(), 12u);
  EXPECT_EQ(ff->at(2).as_u64(), 13u);
  EXPECT_EQ(m.find("deepseek2.rope.dimension_sections")->size(), 4u);  // not per layer
  EXPECT_EQ(m.find("deepseek2.classifier.output_labels")->size(), 4u);  // nor a list of strings
  ASSERT_EQ(r.keys.size(), 3u);  // block_count, leading_dense_block_count, feed_forward_length
  ASSERT_EQ(r.unfixed.size(), 1u);
  EXPECT_EQ(r.unfixed[0].code, "surgery_key");
  EXPECT_EQ(r.unfixed[0].place.name, "deepseek2.attention.sliding_window_pattern");
  EXPECT_EQ(names_of(m), (std::vector<std::string>{"blk.0.attn_norm.weight", "blk.1.attn_norm.weight", "blk.2.attn_norm.weight"}));
  EXPECT_EQ(m.tensors[1].source_offset, 32u);  // the source's layer 2
}

TEST(Surgery, RangesAreCheckedAgainstTheCount) {
  EXPECT_EQ(parse_ranges("0-3,10,2", 11, "keep_layers"), (std::vector<uint32_t>{0, 1, 2, 3, 10}));
  for (const char* bad : {"3-1", "x", "11", "1,,2", "-1", ""}) {
    try {
      parse_ranges(bad, 11, "keep_layers");
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind, Error::Kind::usage) << bad;
      EXPECT_NE(std::string(e.what()).find("`keep_layers`"), std::string::npos) << e.what();
    }
  }
}

// A set in, a set out: split as the input was (each tensor in the shard its bytes come
// from, split.tensors.count made anew), or anew with max_tensors.
TEST(Surgery, ASetStaysInItsShardsOrIsSplitAnew) {
  const std::string dir = temp_path("surgery-set");
  fs::create_directories(dir);
  SplitRequest s;
  s.input = tiny_llama();
  s.prefix = dir + "/tiny";
  s.max_tensors = 8;  // 21 tensors: 3 shards
  split(s);
  EditRequest req = surgery(dir + "/tiny-00001-of-00003.gguf", dir + "/kept");
  req.patch.tensors.keep_layers = "1";
  EditReport r = edit(req);
  ASSERT_EQ(r.files.size(), 3u);
  ShardSet out = open_shard_set(dir + "/kept-00001-of-00003.gguf");
  const Model whole = out.model(), src = scan_file(tiny_llama()).model;
  EXPECT_EQ(whole.tensors.size(), 12u);
  EXPECT_EQ(key_u64(out.shards[0].file.model, "split.tensors.count"), 12u);
  for (const std::string& name : names_of(whole)) {
    const std::string was = name.rfind("blk.0.", 0) == 0 ? "blk.1." + name.substr(6) : name;
    EXPECT_EQ(tensor_bytes(whole, name), tensor_bytes(src, was)) << name;
  }
  // Shard 1 held token_embd, output_norm, output and layer 0's first 5: now the first 3 alone.
  EXPECT_EQ(out.shards[0].file.model.tensors.size(), 3u);
  req.output = dir + "/resplit";
  req.max_tensors = 6;
  r = edit(req);
  EXPECT_EQ(r.files.size(), 2u);
  EXPECT_EQ(open_shard_set(dir + "/resplit-00002-of-00002.gguf").model().tensors.size(), 12u);
}

TEST(Surgery, APatchsTensorsSectionDoesWhatTheRequestDoes) {
  const std::string dir = temp_path("surgery-patch");
  fs::create_directories(dir);
  write_file_bytes(dir + "/p.yaml", std::vector<uint8_t>{});
  const std::string yaml = "tensors:\n  keep_layers: '0'\n  rename: {output_norm.weight: output_norm.weight}\n";
  Patch p = parse_patch(yaml, "p.yaml", dir);
  EXPECT_EQ(p.tensors.keep_layers, std::optional<std::string>("0"));
  ASSERT_EQ(p.tensors.rename.size(), 1u);
  EditRequest a = surgery(tiny_llama(), dir + "/a.gguf"), b = surgery(tiny_llama(), dir + "/b.gguf");
  a.patch = parse_patch("tensors:\n  keep_layers: '0'\n", "p.yaml", dir);
  b.patch.tensors.keep_layers = "0";
  edit(a);
  edit(b);
  EXPECT_EQ(read_file_bytes(dir + "/a.gguf"), read_file_bytes(dir + "/b.gguf"));
  try {
    parse_patch("tensors:\n  keep_layer: '0'\n", "p.yaml", dir);
    FAIL() << "a misspelt field was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("keep_layer"), std::string::npos) << e.what();
  }
}

TEST(Surgery, ARenameToANameGgmlCannotHoldAndAnAbsurdLayerCountAreRefusedBeforeAnythingIsWritten) {
  EditRequest req = surgery(tiny_llama(), temp_path("long.gguf"));
  req.patch.tensors.rename = {{"output.weight", std::string(64, 'x')}};
  try {
    edit(req);
    FAIL() << "written";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind, Error::Kind::usage);
    EXPECT_NE(std::string(e.what()).find("64 bytes: ggml tensor names are shorter than 64 bytes"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(temp_path("long.gguf")));
  Model m;
  m.metadata.push_back({"general.architecture", Value::of_string("llama")});
  m.metadata.push_back({"llama.block_count", Value::of_u64(1ull << 40)});
  TensorOps ops;
  ops.remove_layers = "0";  // counting the other 2^40 - 1 would never end
  try {
    apply_tensor_ops(m, ops);
    FAIL() << "counted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("llama.block_count is 1099511627776, past the 1048576"), std::string::npos) << e.what();
  }
}

TEST(Surgery, InPlaceTheWholeFileIsReplacedAndAHeaderOnlyEditIsRefusedWithTheFileAsItWas) {
  const std::string path = temp_path("in-place-surgery.gguf");
  write_file_bytes(path, read_file_bytes(tiny_llama()));
  EditRequest only;
  only.input = path;
  only.in_place = true;
  only.header_only = true;
  only.patch.tensors.keep_layers = "0";
  try {
    edit(only);
    FAIL() << "written";
  } catch (const EditRefused& e) {
    EXPECT_EQ(e.reason, EditRefused::Reason::header_only);
    EXPECT_NE(e.message.find("tensors change: the data is laid out anew"), std::string::npos) << e.message;
  }
  EXPECT_EQ(read_file_bytes(path), read_file_bytes(tiny_llama()));
  only.header_only = false;
  EditReport r = edit(only);
  EXPECT_EQ(r.written, Written::whole_file);
  EXPECT_EQ(r.why_whole, "tensors change: the data is laid out anew");
  const Model res = scan_file(path).model;
  EXPECT_EQ(res.tensors.size(), 12u);
  EXPECT_EQ(key_u64(res, "llama.block_count"), 1u);
}

// Found by review: a stacked tensor of no bytes (a dimension of 0) took the first of no
// pieces; one whose bytes do not split into equal slabs was written short.
TEST(Surgery, AnExpertTensorOfNoBytesIsSlicedByItsShapeAndOneThatDoesNotSplitEvenlyIsRefused) {
  auto model = [](std::vector<uint64_t> dims, uint32_t type, uint64_t experts) {
    Model m;
    m.metadata.push_back({"general.architecture", Value::of_string("qwen3moe")});
    m.metadata.push_back({"qwen3moe.expert_count", Value::of_u32(static_cast<uint32_t>(experts))});
    Tensor t;
    t.name = "blk.0.ffn_up_exps.weight";
    t.dims = std::move(dims);
    t.type = type;
    t.source = from_bytes("mem", std::vector<uint8_t>(256));
    m.tensors.push_back(t);
    return m;
  };
  TensorOps ops;
  ops.keep_experts = "1-2";
  Model empty = model({4, 0, 4}, 0, 4);
  SurgeryResult r = apply_tensor_ops(empty, ops);
  ASSERT_EQ(r.tensors.size(), 1u);
  EXPECT_EQ(empty.tensors[0].dims, (std::vector<uint64_t>{4, 0, 2}));
  EXPECT_TRUE(empty.tensors[0].pieces.empty());
  EXPECT_EQ(empty.tensors[0].nbytes(), 0u);
  Model odd = model({64}, 8, 64);  // q8_0: two blocks of 34 bytes, 68 in all, over 64 experts
  ops.keep_experts = "0-31";
  try {
    apply_tensor_ops(odd, ops);
    FAIL() << "sliced";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("its 68 bytes do not split into 64 experts' equal slabs"), std::string::npos) << e.what();
  }
}

// Found by review: in place, the file a model was read from was taken from its first
// tensor's source, which a graft had made the donor's: refused as changed, after the write.
TEST(Surgery, AGraftInPlaceOfTheFirstTensorReplacesTheFileItWasReadFrom) {
  const std::string path = temp_path("graft-in-place.gguf");
  write_file_bytes(path, read_file_bytes(tiny_moe(1)));
  EditRequest req;
  req.input = path;
  req.in_place = true;
  req.patch.tensors.graft = {{tiny_moe(7), "token_embd.weight"}};
  EditReport r = edit(req);
  EXPECT_EQ(r.written, Written::whole_file);
  const Model res = scan_file(path).model, donor = scan_file(tiny_moe(7)).model, src = scan_file(tiny_moe(1)).model;
  EXPECT_EQ(res.tensors[0].name, "token_embd.weight");
  EXPECT_EQ(tensor_bytes(res, "token_embd.weight"), tensor_bytes(donor, "token_embd.weight"));
  EXPECT_EQ(tensor_bytes(res, "output_norm.weight"), tensor_bytes(src, "output_norm.weight"));
}

TEST(Surgery, AnOutputThatIsTheDonorIsRefusedAndANewSplitIsAlwaysNamedAsAShard) {
  const std::string donor = temp_path("donor-out.gguf");
  write_file_bytes(donor, read_file_bytes(tiny_moe(7)));
  EditRequest req = surgery(tiny_moe(1), donor);
  req.patch.tensors.graft = {{donor, "blk.0.*"}};
  try {
    edit(req);
    FAIL() << "written over the donor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is the `graft` donor"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_file_bytes(donor), read_file_bytes(tiny_moe(7)));
  EditRequest one = surgery(tiny_moe(1), temp_path("one-shard"));
  one.patch.tensors.keep_layers = "0";
  one.max_tensors = 100;  // every tensor in one shard: still a set's name and keys
  EditReport r = edit(one);
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].path, temp_path("one-shard") + "-00001-of-00001.gguf");
}

// A rename rule whose NEW is $1 a million times (a 2 MB patch) built every tensor's whole new
// name, some 20 MB each, before the 63-byte check: 620 MB for a small MoE. A new name is now
// built into 64 bytes at most, and refused when it does not fit, under a quarter GiB of
// address space (the old way ran out of it on the tiny llama's 21 names).
TEST(Surgery, ARenameWhoseNewNamesWouldRunLongIsRefusedWithoutBuildingThem) {
#ifdef GGUFKIT_SANITIZED
  GTEST_SKIP() << "the sanitizers reserve terabytes of address space; ulimit -v cannot apply";
#endif
  const std::string dir = temp_path("rename-long");
  fs::create_directories(dir);
  std::string many;
  for (int i = 0; i < 1000000; ++i) many += "$1";
  write_file_bytes(dir + "/p.yaml", [&] {
    const std::string y = "tensors:\n  rename: {'(.*)': '" + many + "'}\n";
    return std::vector<uint8_t>(y.begin(), y.end());
  }());
  CliRun r = run_cli("edit " + tiny_llama() + " --patch " + dir + "/p.yaml -o " + dir + "/out.gguf", "ulimit -v 262144;");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("p.yaml:2:3: --rename-tensor (.*)=$1$1$1"), std::string::npos) << r.err.substr(0, 400);
  EXPECT_NE(r.err.find("would name token_embd.weight a name of more than 63 bytes: ggml tensor names are shorter than 64 bytes"),
            std::string::npos) << r.err.substr(0, 400);
  EXPECT_LT(r.err.size(), 1000u);  // NEW is shown clipped, not 2 MB of it
  EXPECT_FALSE(fs::exists(dir + "/out.gguf"));
}

// A pattern just under PCRE2's limit for one match cost a third of a second a name: minutes
// over a large model. The rules share one budget of match steps over the whole edit (each
// name's try counted at the limit it was given), told as a usage error when it is spent:
// 50,000,000 and 1,000 for each of the 21 names; PCRE2 counts deterministically, and the
// tiny llama's names of 19 bytes or more cost some 10 million steps each (it stops on the 8th).
TEST(Surgery, ARenamePatternThatBacktracksSpendsTheEditsBudgetAndIsRefused) {
  EditRequest req = surgery(tiny_llama(), temp_path("rename-budget.gguf"));
  req.patch.tensors.rename = {{"(?:.|.){0,19}.*\\d{6}", "x$1"}};
  try {
    edit(req);
    FAIL() << "written";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind, Error::Kind::usage);
    EXPECT_NE(std::string(e.what()).find("`rename_tensor` (?:.|.){0,19}.*\\d{6}=x$1: its regular expression spent the edit's "
                                         "budget of 50021000 match steps on 8 of the 21 tensor names"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(temp_path("rename-budget.gguf")));
  // With a cheap rule after it, the costly one is still named: the rule that spent the most.
  req.patch.tensors.rename.push_back({"blk\\.0\\.(.*)", "blk.0.$1"});
  try {
    edit(req);
    FAIL() << "written";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("`rename_tensor` (?:.|.){0,19}.*\\d{6}=x$1: its regular expression spent the edit's "
                                         "budget of 50042000 match steps on 7 of the 21 tensor names"),
              std::string::npos)
        << e.what();
  }
  // A plain pattern costs its few steps a name: the tiny llama's 21 names, well inside it.
  EditRequest ok = surgery(tiny_llama(), temp_path("rename-plain.gguf"));
  ok.patch.tensors.rename = {{"blk\\.(\\d+)\\.attn_(.*)", "blk.$1.self_$2"}};
  ok.allow_broken = true;  // (llama.cpp's loader knows no self_* tensors)
  edit(ok);
  size_t renamed = 0;
  for (const Tensor& t : scan_file(temp_path("rename-plain.gguf")).model.tensors) renamed += t.name.find(".self_") != std::string::npos;
  EXPECT_EQ(renamed, 10u);
}

// Found by the audit: -o onto the donor's shard 2 with --force was taken (only the file the
// graft names, shard 1, was compared), and the write broke the donor set it was reading.
TEST(Surgery, AnOutputThatIsAnyShardOfTheDonorsSetIsRefused) {
  const std::string dir = temp_path("donor-set");
  fs::create_directories(dir);
  ASSERT_EQ(run_cli("split " + tiny_moe(7) + " --max-tensors 6 -o " + dir + "/d").code, 0);
  const std::vector<std::string> shards = files_in(dir);
  ASSERT_GE(shards.size(), 3u);
  const std::string first = dir + "/" + shards[0], second = dir + "/" + shards[1];
  const auto before = read_file_bytes(second);
  CliRun r = run_cli("edit " + tiny_moe(1) + " --graft " + first + ":'blk.0.*' -o " + second + " --force");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(second + " is a shard of the --graft donor " + first + ": write the result to another file"), std::string::npos)
      << r.err;
  EXPECT_TRUE(read_file_bytes(second) == before);
  EXPECT_EQ(files_in(dir), shards);
}
