// The loader's tensor table against llama.cpp's loader itself: every tensor-level variant of
// the tiny llama gets from validate the verdict llama_model_load_from_file gives it, and a
// refusal names the tensor llama.cpp names.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "ggufkit/check.h"
#include "ggufkit/example.h"
#include "ggufkit/sketch.h"
#include "ggufkit/tensors.h"
#include "../helpers.h"
#include "llama_api.h"

using namespace ggufkit;
using namespace testing_helpers;

namespace {

struct Variant {
  std::string name, yaml;
};

struct Line {
  size_t start = 0, end = 0;  // the line's bytes in the example, without its newline
  std::string tensor;
  std::vector<uint64_t> dims;
  size_t dims_at = 0, dims_len = 0;  // "[64, 32]" in the line
};

std::vector<Line> tensor_lines(const std::string& text) {
  static const std::regex re(R"re(^  - \{name: "?([^,"]+)"?, type: [a-z0-9_]+, dims: (\[[0-9, ]+\]))re");
  std::vector<Line> out;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    std::smatch m;
    if (std::regex_search(line, m, re)) {
      Line l{at, end, m[1].str(), {}, at + static_cast<size_t>(m.position(2)), static_cast<size_t>(m.length(2))};
      std::stringstream dims(m[2].str().substr(1));
      for (uint64_t d; dims >> d;) {
        l.dims.push_back(d);
        dims.ignore(1);
      }
      out.push_back(std::move(l));
    }
    at = end + 1;
  }
  return out;
}

std::string dims_text(const std::vector<uint64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

// The variants the issue names: every tensor left out in turn, every tensor's outer
// dimension grown, each 2-D tensor's dimensions swapped, one tensor too many, a per-layer
// array one short.
std::vector<Variant> variants(const std::string& text) {
  std::vector<Variant> out;
  for (const Line& l : tensor_lines(text)) {
    out.push_back({"without " + l.tensor, text.substr(0, l.start) + text.substr(l.end + 1)});
    std::vector<uint64_t> grown = l.dims;
    grown.back() += 32;  // a whole q8_0 block, so the file stays writable
    std::string g = text;
    g.replace(l.dims_at, l.dims_len, dims_text(grown));
    out.push_back({l.tensor + " grown to " + dims_text(grown), g});
    if (l.dims.size() == 2 && l.dims[0] != l.dims[1]) {
      std::string s = text;
      s.replace(l.dims_at, l.dims_len, dims_text({l.dims[1], l.dims[0]}));
      out.push_back({l.tensor + " swapped", s});
    }
  }
  out.push_back({"one tensor too many", text + "  - {name: blk.0.attn_extra.weight, type: f32, dims: [64], fill: ones}\n"});
  static const std::regex head(R"re((\.attention\.head_count"?), type: u32, value: 4\})re");
  const std::string arr = std::regex_replace(text, head, "$1, type: array, items: u32, value: [4]}");
  EXPECT_NE(arr, text);
  out.push_back({"head_count per layer, one short", arr});
  return out;
}

// The example without each of its architecture's keys in turn (the loader's required keys,
// and those the tensors' shapes are made of).
std::vector<Variant> key_variants(const std::string& text, const std::string& arch) {
  std::vector<Variant> out;
  const std::string prefix = "  - {key: \"" + arch + ".";
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    const size_t end = text.find('\n', at);
    const size_t from = text.find('"', at) + 1;
    const std::string key = text.substr(from, text.find('"', from) - from);
    out.push_back({"without the key " + key, text.substr(0, at) + text.substr(end + 1)});
  }
  return out;
}

// The tensor llama.cpp's log names ("tensor 'blk.0.attn_k.weight' not found", "... has wrong shape").
std::string named_by_llama(const std::string& log) {
  static const std::regex re(R"(tensor '([^']+)')");
  std::smatch m;
  return std::regex_search(log, m, re) ? m[1].str() : "";
}

// Writes `yaml` and asks validate and llama.cpp of it; counts in `tally`.
struct Tally {
  size_t n = 0, agree = 0, refused = 0, named = 0;
};

void judge(const std::string& name, const std::string& yaml_text, const std::string& dir, Tally& tally, bool named = true) {
  SCOPED_TRACE(name);
  std::string why;
  const std::string yaml = dir + "/v.yaml", gguf = dir + "/v" + std::to_string(tally.n++) + ".gguf";
  std::ofstream(yaml) << yaml_text;
  write_sketch(read_sketch(yaml, {{"VOCAB", corpus("vocab/ggml-vocab-llama-spm.gguf")}}), gguf);
  std::string log;
  const bool loads = llama_api::loads(gguf, why, log);
  const std::vector<Finding> fs = validate_file(gguf);
  const Finding* first = nullptr;
  for (const Finding& f : fs)
    if (f.severity == Severity::error && !first) first = &f;
  EXPECT_EQ(loads, first == nullptr) << (first ? first->message : "no error") << "\nllama.cpp: " << why << "\n" << log.substr(0, 2000);
  tally.agree += loads == (first == nullptr);
  tally.refused += !loads;
  if (!loads && first) {
    // The first error about a tensor: a tensor rule's, or vocab_rows (rows against the
    // vocabulary, under tokenizer.ggml.tokens, the tensor its item).
    std::string ours;
    for (const Finding& f : fs)
      if (f.severity == Severity::error && ours.empty())
        ours = f.place.of == Place::Of::tensor ? f.place.name : f.code == Code::vocab_rows ? f.place.item : "";
    const std::string tensor = named ? named_by_llama(log) : "";
    if (!tensor.empty()) {
      EXPECT_EQ(ours, tensor) << first->message;
      tally.named += ours == tensor;
    }
  }
  std::filesystem::remove(gguf);
}

}  // namespace

TEST(LlamaCpp, EveryTensorVariantOfTheTinyLlamaGetsLlamaCppsVerdict) {
  std::string why;
  ASSERT_TRUE(llama_api::available(why)) << why;
  const std::string dir = temp_path("tensor-variants");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Tally t;
  for (const Variant& v : variants(slurp(std::string(GGUFKIT_SOURCE) + "/examples/tiny-llama.yaml"))) judge(v.name, v.yaml, dir, t);
  EXPECT_EQ(t.n, 21u * 2 + 12 + 2);  // 21 left out, 21 grown, 12 two-dimensional of two sizes swapped, 2 more
  EXPECT_EQ(t.agree, t.n);
  EXPECT_EQ(t.refused, t.n - 1);  // only output.weight may be left out: token_embd stands in for it
  std::printf("tiny llama: %zu tensor variants, %zu agree with llama.cpp's loader, %zu refused, %zu refusals name llama.cpp's tensor\n",
              t.n, t.agree, t.refused, t.named);
}

// One test per architecture the tensor table covers, so that ctest spreads them over the
// cores; make test runs a quarter of them, by the commit (sample()), make test-full all.
class EachArchitecture : public ::testing::TestWithParam<size_t> {};

TEST_P(EachArchitecture, ItsExampleRunsAndEachOfItsVariantsGetsLlamaCppsVerdict) {
  const std::vector<std::string> archs = tensor_table_architectures();
  ASSERT_LT(GetParam(), archs.size());
  const std::string arch = archs[GetParam()];
  if (!sample().takes(GetParam())) GTEST_SKIP() << arch << ": not in this run's sample, " << sample().said();
  if (!sample().all) std::printf("[ sampled  ] %s\n", sample().said().c_str());
  std::string why;
  ASSERT_TRUE(llama_api::available(why)) << why;
  const std::string dir = temp_path("arch-variants-" + arch);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    // The example itself, and with experts where the table has them: llama.cpp loads and generates.
    std::vector<ArchExampleRequest> examples = {{arch, {}, 1}, {arch, {{"expert_count", "4"}, {"expert_used_count", "2"}}, 1}};
    // Encoders (bert, nomic-bert): libllama builds no token-generating graph for them, so
    // their example only has to load.
    const bool encoder = arch == "bert" || arch == "nomic-bert";
    for (const ArchExampleRequest& req : examples) {
      const std::string out = dir + "/" + arch + "-example.gguf";
      std::ofstream(dir + "/e.yaml") << arch_example_sketch(req);
      write_sketch(read_sketch(dir + "/e.yaml"), out);
      if (encoder) {
        EXPECT_TRUE(llama_api::loads(out, why)) << why;
      } else {
        std::optional<llama_api::Run> r = llama_api::run(out, why);
        ASSERT_TRUE(r.has_value()) << why;
        EXPECT_EQ(r->tokens.size(), 8u);
        EXPECT_EQ(r->n_vocab, 259);
      }
      std::vector<Finding> fs = validate_file(out);
      EXPECT_EQ(std::count_if(fs.begin(), fs.end(), [](const Finding& f) { return f.severity != Severity::info; }), 0);
    }
    Tally t;
    for (const Variant& v : variants(arch_example_sketch({arch, {}, 1}))) judge(v.name, v.yaml, dir, t);
    EXPECT_EQ(t.agree, t.n);
    EXPECT_GT(t.refused, t.n / 2);
    // A key left out is a missing_hparam where the loader reads it without a default, and
    // else whatever the tensors then say (llama.cpp may name a tensor: our first error is the key).
    Tally k;
    for (const Variant& v : key_variants(arch_example_sketch({arch, {}, 1}), arch)) judge(v.name, v.yaml, dir, k, false);
    EXPECT_EQ(k.agree, k.n);
    EXPECT_GE(k.n, 5u);
    std::printf("%s: %zu tensor variants, %zu agree with llama.cpp's loader, %zu refused, %zu refusals name llama.cpp's tensor; "
                "%zu keys left out in turn, %zu agree, %zu refused\n",
                arch.c_str(), t.n, t.agree, t.refused, t.named, k.n, k.agree, k.refused);
  }
}

// The architectures' names as the tests' (llama, nomic_bert): known before main, as the
// table is built in.
INSTANTIATE_TEST_SUITE_P(LlamaCpp, EachArchitecture, ::testing::Range<size_t>(0, tensor_table_architectures().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           std::string name = tensor_table_architectures()[info.param];
                           std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
                           return name;
                         });

// The loader's conditions on the keys every architecture shares (load_hparams: layer and
// expert limits, expert counts, expert groups, llama's whole-head rope): where llama.cpp
// refuses or aborts, validate's first error is hparam_condition; where it loads, no error.
TEST(LlamaCpp, TheLoadersConditionsOnHyperparametersGetLlamaCppsVerdict) {
  std::string why;
  ASSERT_TRUE(llama_api::available(why)) << why;
  const std::string dir = temp_path("hparam-conditions");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  struct Case {
    std::string name;
    std::vector<std::pair<std::string, std::string>> set;  // the example's --set
    std::string extra;                                      // metadata lines added
    bool loads;
  };
  const std::vector<Case> cases = {
      {"5 experts used of 4", {{"expert_count", "4"}, {"expert_used_count", "5"}}, "", false},
      {"4 experts, none used", {{"expert_count", "4"}, {"expert_used_count", "0"}}, "", false},
      {"4 experts, 2 used", {{"expert_count", "4"}, {"expert_used_count", "2"}}, "", true},
      {"a dense model with expert_used_count 2", {{"expert_used_count", "2"}}, "", false},
      {"4 expert groups of 4 experts", {{"expert_count", "4"}, {"expert_used_count", "2"}},
       "  - {key: llama.expert_group_count, type: u32, value: 4}\n  - {key: llama.expert_group_used_count, type: u32, value: 1}\n", false},
      {"3 expert groups of 4 experts", {{"expert_count", "4"}, {"expert_used_count", "2"}},
       "  - {key: llama.expert_group_count, type: u32, value: 3}\n  - {key: llama.expert_group_used_count, type: u32, value: 1}\n", false},
      {"2 expert groups of 4 experts, 2 used", {{"expert_count", "4"}, {"expert_used_count", "2"}},
       "  - {key: llama.expert_group_count, type: u32, value: 2}\n  - {key: llama.expert_group_used_count, type: u32, value: 2}\n", false},
      {"2 expert groups of 4 experts, 1 used", {{"expert_count", "4"}, {"expert_used_count", "2"}},
       "  - {key: llama.expert_group_count, type: u32, value: 2}\n  - {key: llama.expert_group_used_count, type: u32, value: 1}\n", true},
      {"a dense model with expert_group_count 2", {}, "  - {key: llama.expert_group_count, type: u32, value: 2}\n", false},
      {"3 next-token layers of 2", {}, "  - {key: llama.nextn_predict_layers, type: u32, value: 3}\n", false},
      {"rope over half the head", {{"rope.dimension_count", "8"}}, "", false},
      {"5 heads of 64", {{"attention.head_count", "5"}, {"attention.head_count_kv", "5"}}, "", false},
      {"key_length 16 given, rope 16", {}, "  - {key: llama.attention.key_length, type: u32, value: 16}\n", true},
  };
  size_t n = 0, agree = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string text = arch_example_sketch({"llama", c.set, 1});
    const size_t after = text.find('\n', text.find("general.architecture")) + 1;
    text.insert(after, c.extra);
    const std::string yaml = dir + "/c.yaml", gguf = dir + "/c" + std::to_string(n++) + ".gguf";
    std::ofstream(yaml) << text;
    write_sketch(read_sketch(yaml), gguf);
    std::string log;
    const bool loads = llama_api::loads(gguf, why, log);
    EXPECT_EQ(loads, c.loads) << why;
    const std::vector<Finding> fs = validate_file(gguf);
    auto first = std::find_if(fs.begin(), fs.end(), [](const Finding& f) { return f.severity == Severity::error; });
    EXPECT_EQ(first == fs.end(), loads) << (first == fs.end() ? "no error" : first->message) << "\nllama.cpp: " << why;
    if (!loads && first != fs.end()) {
      EXPECT_EQ(first->code, Code::hparam_condition) << first->message;
    }
    agree += loads == (first == fs.end());
  }
  EXPECT_EQ(agree, cases.size());
  std::printf("hyperparameter conditions: %zu cases, %zu agree with llama.cpp's loader\n", n, agree);
}

// No new errors on the files people have: every corpus file (llama.cpp's own tools wrote
// them) and every README example that llama.cpp loads as a model gets no error from
// validate; the ones it does not load are vocabularies, headers and shards read alone.
TEST(LlamaCpp, EveryCorpusFileAndExampleLlamaCppLoadsHasNoValidateError) {
  std::string why;
  ASSERT_TRUE(llama_api::available(why)) << why;
  const std::string dir = temp_path("corpus-verdicts");
  std::filesystem::create_directories(dir);
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(corpus("")))
    if (e.path().extension() == ".gguf") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const char* name : {"tiny-llama", "every-type", "sketch-408"}) {
    const std::string out = dir + "/" + name + ".gguf";
    write_sketch(read_sketch(std::string(GGUFKIT_SOURCE) + "/examples/" + name + ".yaml",
                             {{"VOCAB", corpus("vocab/ggml-vocab-llama-spm.gguf")}}),
                 out);
    files.push_back(out);
  }
  for (const std::string& a : tensor_table_architectures()) {  // and each covered architecture's example
    const std::string out = dir + "/example-" + a + ".gguf";
    std::ofstream(dir + "/e.yaml") << arch_example_sketch({a, {}, 1});
    write_sketch(read_sketch(dir + "/e.yaml"), out);
    files.push_back(out);
  }
  size_t loaded = 0, refused = 0;
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    if (!llama_api::loads(f, why)) {
      ++refused;
      continue;
    }
    ++loaded;
    // as `ggufkit validate` judges it: a shard with its set, the one model llama.cpp loads
    for (const auto& [file, finding] : validate(f).findings) EXPECT_NE(finding.severity, Severity::error) << file << ": " << finding.message;
  }
  EXPECT_GE(loaded, 28u + 3);  // the examples of the table, the tiny llama and the corpus' whole models
  std::printf("corpus and examples: %zu files, %zu load in llama.cpp (none with a validate error), %zu do not load as models\n",
              files.size(), loaded, refused);
}

// The MTP forms of a model whose last block is an MTP layer (qwen35 and qwen3next), made
// with the command line: each gets from validate (no errors, or errors) the verdict
// llama.cpp's loader gives it. The drafter alone (role mtp) among them.
TEST(LlamaCpp, TheMtpFormsOfAModelGetLlamaCppsVerdict) {
  std::string why;
  ASSERT_TRUE(llama_api::available(why)) << why;
  for (const std::string arch : {"qwen35", "qwen3next"}) {
    const std::string full = temp_path("mtp-" + arch + ".gguf");
    ASSERT_EQ(run_cli("example --arch " + arch + " --set nextn_predict_layers=1 -o " + full + " --force").code, 0);
    for (const auto& [form, edit] : std::vector<std::pair<std::string, std::string>>{
             {"embedded", ""}, {"drafter", "--remove-tensor 'blk.0.*'"}, {"no-nextn", "--remove-tensor 'blk.1.nextn.*'"},
             {"trunk-only", "--remove-tensor 'blk.1.*'"}}) {
      std::string path = full;
      if (!edit.empty()) {
        path = temp_path("mtp-" + arch + "-" + form + ".gguf");
        ASSERT_EQ(run_cli("edit " + full + " " + edit + " --allow-broken -o " + path + " --force").code, 0) << form;
      }
      std::string log;
      const bool loads = llama_api::loads(path, why, log);
      const Verdict v = validate(path);
      EXPECT_EQ(loads, v.errors == 0) << arch << " " << form << ": llama.cpp " << (loads ? "loads" : "refuses: " + why)
                                      << "; validate has " << v.errors << " errors";
    }
  }
}
