// What a file is (role.h) and the rules of its role: adapters, importance matrices and
// projectors written by an encoder independent of ggufkit's (tests/gguf_py_writer.py, by
// gguf-py's rules) are judged as llama.cpp's readers of each judge them, not as models.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <functional>

#include "ggufkit/check.h"
#include "ggufkit/role.h"
#include "ggufkit/scan.h"
#include "helpers.h"
#include "role_cases.h"

using namespace testing_helpers;
using namespace role_cases;
using namespace ggufkit;

namespace {

const std::string& base() { return tiny_llama(); }

// (errors, warnings) by code, in the order validate gives them.
std::pair<std::vector<std::string>, std::vector<std::string>> codes(const Verdict& v) {
  std::pair<std::vector<std::string>, std::vector<std::string>> out;
  for (const auto& [file, f] : v.findings) {
    if (f.severity == Severity::error) out.first.emplace_back(code_name(f.code));
    if (f.severity == Severity::warning) out.second.emplace_back(code_name(f.code));
  }
  return out;
}

YAML::Node show_json(const std::string& path) {
  const CliRun r = run_cli("show --json " + path);
  EXPECT_EQ(r.code, 0) << r.err;
  return YAML::Load(r.out);
}

Role role_of_file(const std::string& path) { return role_of(scan(open_file(path)).model); }

}  // namespace

TEST(Roles, AValidAdapterOfTheTinyLlamaValidatesWithNoFindingAndShowSaysWhatItIs) {
  const std::string a = write_by_gguf_py(tiny_llama_adapter(), "adapter");
  const Verdict alone = validate(a), against = validate(a, false, nullptr, base());
  EXPECT_EQ(alone.errors, 0u);
  EXPECT_EQ(alone.warnings, 0u);
  EXPECT_EQ(against.errors, 0u);
  EXPECT_EQ(against.warnings, 0u);
  const YAML::Node j = show_json(a);
  EXPECT_EQ(j["role"].as<std::string>(), "adapter");
  EXPECT_EQ(j["adapter"]["type"].as<std::string>(), "lora");
  EXPECT_EQ(j["adapter"]["alpha"].as<double>(), 8.0);
  EXPECT_EQ(j["adapter"]["rank"].as<int>(), 4);
  EXPECT_EQ(j["adapter"]["lora_pairs"].as<int>(), 7);  // token_embd and 3 in each of 2 blocks
  EXPECT_EQ(j["adapter"]["architecture"].as<std::string>(), "llama");
  EXPECT_EQ(j["adapter"]["alora_invocation_tokens"].as<int>(), 0);
  const CliRun text = run_cli("show " + a);
  EXPECT_NE(text.out.find("role          adapter (lora, alpha 8, rank 4, 7 lora_a/lora_b pairs, for llama)\n"), std::string::npos)
      << text.out;
}

TEST(Roles, EachAdapterDefectIsTheErrorLlamaCppRefusesItForAndAMissingAlphaAWarning) {
  for (const AdapterCase& c : adapter_cases()) {
    SCOPED_TRACE(c.name);
    const std::string a = write_by_gguf_py(c.spec, "adapter-" + c.name);
    EXPECT_EQ(role_of_file(a), Role::adapter);  // a mislabelled one too: its tensors say what it is
    const auto [errors, warnings] = codes(validate(a, false, nullptr, base()));
    EXPECT_EQ(errors, c.errors);
    EXPECT_EQ(warnings, c.warnings);
    const auto [alone, alone_warnings] = codes(validate(a));  // without the base: what the file alone shows
    EXPECT_EQ(alone, c.needs_base ? std::vector<std::string>{} : c.errors);
    EXPECT_EQ(alone_warnings, c.warnings);
  }
}

TEST(Roles, AnAdapterFindingSaysWhereAndWhat) {
  Spec s = tiny_llama_adapter();
  s.tensor("blk.0.attn_q.weight.lora_a").dims = {32, 4};
  s.drop_key("adapter.lora.alpha");
  const std::string a = write_by_gguf_py(s, "adapter-where");
  const Verdict v = validate(a, false, nullptr, base());
  EXPECT_EQ(v.errors, 1u);
  EXPECT_EQ(v.warnings, 1u);
  auto of = [&](const char* code) {
    for (const auto& [file, f] : v.findings)
      if (f.code == code) return f;
    ADD_FAILURE() << "no " << code;
    return Finding{};
  };
  const Finding shape = of("lora_shape");
  EXPECT_EQ(shape.code, "lora_shape");
  EXPECT_EQ(shape.place, Place::tensor("blk.0.attn_q.weight.lora_a"));
  // Where tensor 2's info record starts, as the reader found it.
  const Scanned sc = scan(open_file(a));
  EXPECT_EQ(shape.offset, sc.model.tensors.record(2));
  EXPECT_EQ(shape.message,
            "blk.0.attn_q.weight is 64x64 in the base model; its lora_a is 32x4 and lora_b 4x64 (wanted a.ne0 == w.ne0 = 64 "
            "and b.ne1 == w.ne1 = 64): llama.cpp refuses the adapter (\"has incorrect shape (hint: maybe wrong base model?)\")");
  const Finding alpha = of("adapter_alpha");
  EXPECT_EQ(alpha.code, "adapter_alpha");
  EXPECT_EQ(alpha.severity, Severity::warning);
  EXPECT_EQ(alpha.offset, std::nullopt);  // the key is not there
  EXPECT_EQ(alpha.fix, "ggufkit edit FILE --set adapter.lora.alpha=ALPHA");
}

TEST(Roles, AnEditOfAnAdapterIsCheckedByTheAdaptersRulesNotAModels) {
  const std::string a = write_by_gguf_py(tiny_llama_adapter(), "adapter-edit");
  const std::string named = temp_path("adapter-named.gguf"), broken = temp_path("adapter-broken.gguf");
  const CliRun ok = run_cli("edit " + a + " --set general.name=Renamed -o " + named);
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(validate(named).errors, 0u);
  const CliRun refused = run_cli("edit " + a + " --set adapter.type=ia3 -o " + broken);
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.err.find("[adapter_not_lora] adapter.type is 'ia3': llama.cpp loads only 'lora' adapters"), std::string::npos)
      << refused.err;
}

TEST(Roles, TheFixAMissingAlphaSuggestsWritesTheF32LlamaCppReads) {
  Spec s = tiny_llama_adapter();
  s.drop_key("adapter.lora.alpha");
  const std::string a = write_by_gguf_py(s, "adapter-no-alpha"), fixed = temp_path("adapter-alpha.gguf");
  ASSERT_EQ(codes(validate(a)).second, std::vector<std::string>{"adapter_alpha"});
  // The fix as validate prints it, the value filled in: the registry types the key f32.
  const CliRun r = run_cli("edit " + a + " --set adapter.lora.alpha=16 -o " + fixed);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("add     adapter.lora.alpha (f32): 16"), std::string::npos) << r.out;
  const Verdict v = validate(fixed);
  EXPECT_EQ(v.errors + v.warnings, 0u);
  const Scanned out = scan(open_file(fixed));
  const Value* alpha = out.model.find("adapter.lora.alpha");
  ASSERT_NE(alpha, nullptr);
  EXPECT_EQ(alpha->type, ValueType::f32);
  EXPECT_EQ(alpha->as_f64(), 16.0);
}

TEST(Roles, AnImportanceMatrixValidatesWithNoFindingAndShowSaysWhatItCovers) {
  const std::string m = write_by_gguf_py(tiny_llama_imatrix(), "imatrix");
  const Verdict v = validate(m);
  EXPECT_EQ(v.errors, 0u);
  EXPECT_EQ(v.warnings, 0u);  // no missing_architecture: an imatrix has none
  const YAML::Node j = show_json(m);
  EXPECT_EQ(j["role"].as<std::string>(), "imatrix");
  EXPECT_EQ(j["imatrix"]["chunk_count"].as<int>(), 10);
  EXPECT_EQ(j["imatrix"]["chunk_size"].as<int>(), 512);
  ASSERT_EQ(j["imatrix"]["datasets"].size(), 1u);
  EXPECT_EQ(j["imatrix"]["datasets"][0].as<std::string>(), "wiki.train.raw");
  EXPECT_EQ(j["imatrix"]["tensors_covered"].as<int>(), 4);
}

TEST(Roles, EachImportanceMatrixDefectIsTheErrorLlamaQuantizeStopsAt) {
  struct Case {
    const char* name;
    std::function<void(Spec&)> change;
    std::vector<std::string> errors;
  };
  const std::vector<Case> cases = {
      {"counts_missing", [](Spec& s) { s.drop_tensor("blk.1.ffn_down.weight.counts"); }, {"imatrix_pair"}},
      {"sums_f16", [](Spec& s) { s.tensor("blk.0.attn_q.weight.in_sum2").type = "f16"; }, {"imatrix_type"}},
      {"counts_of_three", [](Spec& s) { s.tensor("blk.0.attn_q.weight.counts").dims = {1, 3}; }, {"imatrix_shape"}},  // 64 % 3
      {"counts_of_none", [](Spec& s) { s.tensor("blk.0.attn_q.weight.counts").dims = {1, 0}; }, {"imatrix_shape"}},
      {"no_chunk_size", [](Spec& s) { s.drop_key("imatrix.chunk_size"); }, {"imatrix_metadata"}},
      {"chunk_count_i32", [](Spec& s) { s.set_key("imatrix.chunk_count", "i32", "10"); }, {"role_key_type"}},
      {"no_tensors", [](Spec& s) { s.tensors.clear(); }, {"imatrix_entries"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Spec s = tiny_llama_imatrix();
    c.change(s);
    const std::string m = write_by_gguf_py(s, std::string("imatrix-") + c.name);
    EXPECT_EQ(role_of_file(m), Role::imatrix);
    EXPECT_EQ(codes(validate(m)).first, c.errors);
  }
}

TEST(Roles, AnImportanceMatrixOfExpertsAndOneOfFlatCountsAreValid) {
  // A MoE model's: one count per expert ({1, n_expert}), the sums a row each; and counts
  // written flat ({n}): llama-quantize reads element counts alone.
  Spec s = tiny_llama_imatrix();
  s.tensors.push_back({"blk.0.ffn_up_exps.weight.in_sum2", "f32", {64, 8}});
  s.tensors.push_back({"blk.0.ffn_up_exps.weight.counts", "f32", {1, 8}});
  s.tensors.push_back({"blk.1.ffn_up_exps.weight.in_sum2", "f32", {64, 8}});
  s.tensors.push_back({"blk.1.ffn_up_exps.weight.counts", "f32", {8}});
  const std::string m = write_by_gguf_py(s, "imatrix-moe");
  EXPECT_EQ(codes(validate(m)).first, std::vector<std::string>{});
  EXPECT_EQ(show_json(m)["imatrix"]["tensors_covered"].as<int>(), 6);
}

TEST(Roles, AKeyOfTheWrongTypeGetsAFixThatReplacesItAndTheFixWorks) {
  Spec s = tiny_llama_imatrix();
  s.set_key("imatrix.chunk_count", "i32", "10");
  const std::string m = write_by_gguf_py(s, "imatrix-i32"), fixed = temp_path("imatrix-u32.gguf");
  const Verdict v = validate(m);
  ASSERT_EQ(codes(v).first, std::vector<std::string>{"role_key_type"});
  const Finding& f = v.findings.back().second;
  EXPECT_EQ(f.message, "imatrix.chunk_count is an i32; llama.cpp reads it as a u32 and aborts on any other type");
  // --set alone keeps the file's type: the key is removed and set anew, as the registry types it.
  EXPECT_EQ(f.fix, "ggufkit edit FILE --remove imatrix.chunk_count --set imatrix.chunk_count=10");
  const CliRun r = run_cli("edit " + m + " --remove imatrix.chunk_count --set imatrix.chunk_count=10 -o " + fixed);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(validate(fixed).errors, 0u);
  const Scanned out = scan(open_file(fixed));
  EXPECT_EQ(out.model.find("imatrix.chunk_count")->type, ValueType::u32);
}

TEST(Roles, TheBaseOfAnAdapterMustBeAModel) {
  const std::string a = write_by_gguf_py(tiny_llama_adapter(), "adapter-self");
  const CliRun r = run_cli("validate " + a + " --base " + a);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--base: the base is an adapter, not a model"), std::string::npos) << r.err;
}

TEST(Roles, AProjectorIsJudgedByTheKeysMtmdReads) {
  Spec s;
  s.kv = {{"general.architecture", "string", "\"clip\""},
          {"clip.has_vision_encoder", "bool", "true"},
          {"clip.projector_type", "string", "\"mlp\""},
          {"clip.vision.embedding_length", "u32", "64"},
          {"clip.vision.attention.head_count", "u32", "4"},
          {"clip.vision.feed_forward_length", "u32", "128"},
          {"clip.vision.block_count", "u32", "2"},
          {"clip.vision.projection_dim", "u32", "64"},
          {"clip.vision.attention.layer_norm_epsilon", "f32", "1e-06"},
          {"clip.vision.image_size", "u32", "224"},
          {"clip.vision.patch_size", "u32", "14"}};
  s.tensors = {{"v.patch_embd.weight", "f32", {14, 14, 3, 64}}};
  const std::string ok = write_by_gguf_py(s, "mmproj");
  EXPECT_EQ(validate(ok).errors, 0u);
  const YAML::Node j = show_json(ok);
  EXPECT_EQ(j["role"].as<std::string>(), "mmproj");
  EXPECT_EQ(j["mmproj"]["projector_type"].as<std::string>(), "mlp");
  EXPECT_TRUE(j["mmproj"]["vision"].as<bool>());
  EXPECT_FALSE(j["mmproj"]["audio"].as<bool>());

  Spec old = s;  // converted before the encoder flags and the projector type were written
  old.drop_key("clip.has_vision_encoder");
  old.drop_key("clip.projector_type");
  EXPECT_EQ(codes(validate(write_by_gguf_py(old, "mmproj-old"))).first, std::vector<std::string>{"mmproj_encoder"});
  Spec unknown = s;
  unknown.set_key("clip.projector_type", "string", "\"llava_next_old\"");
  EXPECT_EQ(codes(validate(write_by_gguf_py(unknown, "mmproj-unknown"))).first, std::vector<std::string>{"mmproj_projector"});
  Spec qwen = s;  // a name with a dot, as clip-impl.h spells it
  qwen.set_key("clip.projector_type", "string", "\"qwen2.5vl_merger\"");
  EXPECT_EQ(codes(validate(write_by_gguf_py(qwen, "mmproj-qwen"))).first, std::vector<std::string>{});
  Spec no_size = s;
  no_size.drop_key("clip.vision.image_size");
  const Verdict v = validate(write_by_gguf_py(no_size, "mmproj-size"));
  ASSERT_EQ(codes(v).first, std::vector<std::string>{"missing_hparam"});
  EXPECT_EQ(v.findings.back().second.place, Place::key("clip.vision.image_size"));

  // Audio alone (ultravox): its own projector key, and the mel bins it reads.
  Spec ultravox;
  ultravox.kv = {{"general.architecture", "string", "\"clip\""}, {"clip.has_audio_encoder", "bool", "true"},
                 {"clip.audio.projector_type", "string", "\"ultravox\""}};
  for (const char* k : {"embedding_length", "attention.head_count", "feed_forward_length", "block_count", "projection_dim"})
    ultravox.kv.push_back({std::string("clip.audio.") + k, "u32", "64"});
  ultravox.kv.push_back({"clip.audio.attention.layer_norm_epsilon", "f32", "1e-05"});
  ultravox.tensors = {{"a.conv1d.1.weight", "f32", {3, 128, 64}}};
  EXPECT_EQ(codes(validate(write_by_gguf_py(ultravox, "mmproj-ultravox"))).first, std::vector<std::string>{"missing_hparam"});
  ultravox.kv.push_back({"clip.audio.num_mel_bins", "u32", "128"});
  const std::string audio = write_by_gguf_py(ultravox, "mmproj-ultravox-mel");
  EXPECT_EQ(codes(validate(audio)).first, std::vector<std::string>{});
  EXPECT_EQ(show_json(audio)["mmproj"]["projector_type"].as<std::string>(), "ultravox");
  EXPECT_TRUE(show_json(audio)["mmproj"]["audio"].as<bool>());
}

TEST(Roles, TheCorpusVocabulariesAreVocabulariesTheTinyLlamaAModelAndAShardItsSets) {
  std::vector<std::string> vocabs = sorted_files(corpus("vocab"), ".gguf");
  vocabs.push_back(corpus("history/ggml-vocab-falcon.v2.gguf"));  // GGUF v2 (v1 is not read at all)
  ASSERT_GE(vocabs.size(), 7u);
  for (const std::string& v : vocabs) EXPECT_EQ(role_of_file(v), Role::vocab) << v;
  EXPECT_EQ(show_json(vocabs[0])["role"].as<std::string>(), "vocab");
  EXPECT_EQ(show_json(corpus("splits/tiny-llama.gguf"))["role"].as<std::string>(), "model");
  EXPECT_EQ(show_json(base())["role"].as<std::string>(), "model");
  // A shard after the first holds tensors and the split keys alone: the set's first
  // shard says what it is. A projector split in two is a projector in either shard.
  Spec p;
  p.kv = {{"general.architecture", "string", "\"clip\""}, {"clip.has_vision_encoder", "bool", "true"}};
  p.tensors = {{"v.patch_embd.weight", "f32", {14, 14, 3, 8}}, {"v.position_embd.weight", "f32", {8, 16}}};
  const std::string mm = write_by_gguf_py(p, "mmproj-to-split"), prefix = temp_path("mmproj-set");
  const CliRun split = run_cli("split " + mm + " -o " + prefix + " --max-tensors 1");
  ASSERT_EQ(split.code, 0) << split.err;
  const std::string second = prefix + "-00002-of-00002.gguf";
  const YAML::Node shard = show_json(second);
  EXPECT_EQ(shard["files"].as<int>(), 2);
  EXPECT_EQ(shard["role"].as<std::string>(), "mmproj");
  EXPECT_EQ(YAML::Load(run_cli("show --json --shard-only " + second).out)["role"].as<std::string>(), "model");
}
