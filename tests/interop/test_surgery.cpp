// Tensor surgery against llama.cpp itself (libllama): what ggufkit writes loads and
// generates, and what it refuses llama.cpp refuses too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ggufkit/edit.h"
#include "ggufkit/example.h"
#include "ggufkit/hash.h"
#include "ggufkit/scan.h"
#include "ggufkit/shards.h"
#include "ggufkit/sketch.h"
#include "../helpers.h"
#include "llama_api.h"

using namespace ggufkit;
using namespace testing_helpers;

namespace {

std::string hash_of(const Model& m, const std::string& name) {
  for (const Tensor& t : m.tensors)
    if (t.name == name) return hash_tensor(t, HashAlgo::sha256);
  return "no tensor " + name;
}


std::string edited(const std::string& input, const std::string& name, const std::function<void(EditRequest&)>& fill) {
  EditRequest req;
  req.input = input;
  req.output = temp_path(name);
  req.write.force = true;
  fill(req);
  edit(req);
  return req.output;
}

}  // namespace

TEST(SurgeryInterop, TheTinyLlamaKeptToLayerZeroLoadsGeneratesAndKeepsEveryTensorsHash) {
  std::string why;
  const std::string out = edited(tiny_llama(), "keep0.gguf", [](EditRequest& r) { r.patch.tensors.keep_layers = "0"; });
  std::optional<llama_api::Run> run = llama_api::run(out, why);
  ASSERT_TRUE(run.has_value()) << why;
  EXPECT_EQ(run->tokens.size(), 8u);
  EXPECT_EQ(llama_api::meta(out, "llama.block_count"), std::optional<std::string>("1"));
  const Model src = scan_file(tiny_llama()).model, res = scan_file(out).model;
  ASSERT_EQ(res.tensors.size(), 12u);
  for (const Tensor& t : res.tensors) EXPECT_EQ(hash_tensor(t, HashAlgo::sha256), hash_of(src, t.name)) << t.name;
}

TEST(SurgeryInterop, TheTinyLlamaWithoutLayerZeroLoadsAndItsLayerZeroIsTheSourcesLayerOne) {
  std::string why;
  const std::string out = edited(tiny_llama(), "remove0.gguf", [](EditRequest& r) { r.patch.tensors.remove_layers = "0"; });
  std::optional<llama_api::Run> run = llama_api::run(out, why);
  ASSERT_TRUE(run.has_value()) << why;
  EXPECT_EQ(run->tokens.size(), 8u);
  const Model src = scan_file(tiny_llama()).model, res = scan_file(out).model;
  for (const char* part : {"attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight",
                           "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"})
    EXPECT_EQ(hash_of(res, std::string("blk.0.") + part), hash_of(src, std::string("blk.1.") + part)) << part;
}

TEST(SurgeryInterop, ATinyMoeKeptToTwoOfItsFourExpertsLoadsRunsAndHoldsThoseExpertsBytes) {
  std::string why;
  ArchExampleRequest moe;
  moe.arch = "qwen3moe";
  moe.set = {{"expert_count", "4"}, {"expert_used_count", "2"}};
  const std::string src_path = temp_path("moe4.gguf");
  write_sketch(parse_sketch(arch_example_sketch(moe), "qwen3moe", ".", {}), src_path);
  ASSERT_TRUE(llama_api::run(src_path, why).has_value()) << why;
  const std::string out = edited(src_path, "moe01.gguf", [](EditRequest& r) { r.patch.tensors.keep_experts = "0-1"; });
  std::optional<llama_api::Run> run = llama_api::run(out, why);
  ASSERT_TRUE(run.has_value()) << why;
  EXPECT_EQ(run->tokens.size(), 8u);
  EXPECT_EQ(llama_api::meta(out, "qwen3moe.expert_count"), std::optional<std::string>("2"));
  const Model src = scan_file(src_path).model, res = scan_file(out).model;
  size_t sliced = 0;
  for (const Tensor& t : src.tensors) {
    std::vector<uint8_t> whole = tensor_bytes(src, t.name);
    if (t.dims.back() == 4) {  // stacked: experts 0 and 1 are the first half
      whole.resize(whole.size() / 2);
      ++sliced;
    }
    EXPECT_EQ(tensor_bytes(res, t.name), whole) << t.name;
  }
  EXPECT_EQ(sliced, 8u);
}

// Shards of 8, 8 and 5 tensors; layer 1 is the last 13, so the third shard is left with none.
TEST(SurgeryInterop, ASetKeptToOneLayerLoadsFromItsFirstShardEvenWithAShardLeftEmpty) {
  std::string why;
  const std::string dir = temp_path("surgery-set-interop");
  std::filesystem::create_directories(dir);
  SplitRequest s;
  s.input = tiny_llama();
  s.prefix = dir + "/tiny";
  s.max_tensors = 8;
  split(s);
  EditRequest req;
  req.input = dir + "/tiny-00002-of-00003.gguf";  // any shard names the set
  req.output = dir + "/kept";
  req.patch.tensors.keep_layers = "0";
  EditReport r = edit(req);
  ASSERT_EQ(r.files.size(), 3u);
  EXPECT_EQ(r.files[2].tensors, 0u);
  std::optional<llama_api::Run> run = llama_api::run(dir + "/kept-00001-of-00003.gguf", why);
  ASSERT_TRUE(run.has_value()) << why;
  EXPECT_EQ(run->tokens.size(), 8u);
}

// The refusal is llama.cpp's too: the file written anyway (allow_broken) does not load.
TEST(SurgeryInterop, ATensorTheEditRefusesToRemoveIsOneLlamaCppCannotLoadWithout) {
  std::string why, log;
  EditRequest req;
  req.input = tiny_llama();
  req.output = temp_path("no-q.gguf");
  req.write.force = true;
  req.patch.tensors.remove = {"blk.1.attn_q.weight"};
  EXPECT_THROW(edit(req), EditRefused);
  req.allow_broken = true;
  edit(req);
  EXPECT_FALSE(llama_api::loads(req.output, why, log));
  EXPECT_NE(log.find("blk.1.attn_q.weight"), std::string::npos) << log;
}
