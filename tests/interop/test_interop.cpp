// Proof against the real world: llama.cpp (through node-llama-cpp) loads and runs what
// ggufkit writes and edits; @huggingface/gguf reads ggufkit's files as ggufkit does and
// writes headers ggufkit reads; and ggml's own C parser (libggml-base.so, through dlopen)
// gives the same verdict as ggufkit on every fixture, valid or broken, but for the listed
// differences, each with its reason.
#include <dlfcn.h>
#include <unistd.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "ggufkit/error.h"
#include "ggufkit/scan.h"
#include "ggufkit/sketch.h"
#include "../helpers.h"
#include "../malformed_cases.h"

using namespace ggufkit;
using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

const std::string kExamples = std::string(GGUFKIT_SOURCE) + "/examples";
const std::string kNpm = GGUFKIT_INTEROP_DIR;

// Runs the JavaScript side from the npm folder (so its packages resolve) and returns
// its JSON output; a missing node or package is a failure that says what to do.
YAML::Node js(const std::string& cmd, const std::string& file) {
  static bool ready = [] {
    if (std::system("command -v node >/dev/null") != 0) {
      ADD_FAILURE() << "node is not installed: the interop tests need Node.js (make interop-deps installs it)";
      return false;
    }
    for (const char* pkg : {"node-llama-cpp", "@node-llama-cpp/linux-x64", "@huggingface/gguf"})
      if (!fs::exists(kNpm + "/node_modules/" + pkg + "/package.json")) {
        ADD_FAILURE() << pkg << " is not installed in " << kNpm << ": the npm install failed or was not run (make interop-deps)";
        return false;
      }
    return true;
  }();
  if (!ready) throw std::runtime_error("interop tools missing");
  // The script must sit beside node_modules for its imports to resolve. Each test process
  // (ctest runs them side by side, and other checkouts may too) gets a copy of its own,
  // removed when the process ends, so no node ever loads a half-copied script.
  struct Script {
    std::string path = kNpm + "/.ggufkit-interop-" + std::to_string(::getpid()) + ".mjs";
    Script() { fs::copy_file(std::string(GGUFKIT_SOURCE) + "/tests/interop/interop.mjs", path, fs::copy_options::overwrite_existing); }
    ~Script() { std::error_code ec; fs::remove(path, ec); }
  };
  static Script script;
  std::string out = temp_path("js.out"), err = temp_path("js.err");
  std::string c = "cd " + kNpm + " && LC_ALL=C node " + script.path + " " + cmd + " " + file + " >" + out + " 2>" + err;
  int code = std::system(c.c_str());
  auto o = read_file_bytes(out), e = read_file_bytes(err);
  if (code != 0) throw std::runtime_error("node " + cmd + " " + file + " failed: " + std::string(e.begin(), e.end()));
  return YAML::Load(std::string(o.begin(), o.end()));
}

YAML::Node cli_json(const std::string& args) {
  CliRun r = run_cli(args);
  EXPECT_EQ(r.code, 0) << args << ": " << r.err;
  return YAML::Load(r.out);
}

std::string write_fixture(const std::string& name, const std::string& sketch, const Defines& d = {}) {
  std::string out = temp_path(name + ".gguf");
  write_sketch(read_sketch(sketch, d), out);
  return out;
}


const char* kTypeNames[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};

// One value of ggufkit's meta --json against @huggingface/gguf's (numbers as text there).
void same_value(const std::string& type, const YAML::Node& ours, const YAML::Node& theirs, const std::string& where) {
  if (type == "array") {  // elements carry the array's items type, passed in `type` by the caller
    FAIL() << where << ": arrays are compared element by element";
  }
  if (type == "f32" || type == "f64") {
    std::string a = ours.Scalar(), b = theirs.Scalar();
    if (a == "nan" || b == "nan") {
      EXPECT_EQ(a, b) << where;
    } else if (type == "f32") {
      EXPECT_EQ(std::strtof(a.c_str(), nullptr), static_cast<float>(std::strtod(b.c_str(), nullptr))) << where;
    } else {
      EXPECT_EQ(std::strtod(a.c_str(), nullptr), std::strtod(b.c_str(), nullptr)) << where;
    }
  } else if (type == "bool") {
    EXPECT_EQ(ours.Scalar() != "false", theirs.Scalar() == "true") << where;  // a raw byte 2 reads as true there
  } else if (type == "string" && ours.IsMap()) {
    // Bytes that are not UTF-8: ours are {"hex": ...}, exact; TextDecoder there replaces them.
    EXPECT_TRUE(theirs.IsScalar()) << where;
  } else if (type == "string" && ours.Scalar().rfind("\xEF\xBB\xBF", 0) == 0) {
    // @huggingface/gguf decodes with TextDecoder, which drops a leading U+FEFF (the BOM):
    // the llama-spm and phi-3 vocabularies have a token that is a lone U+FEFF. Ours keeps its bytes.
    EXPECT_EQ(ours.Scalar().substr(3), theirs.Scalar()) << where;
  } else {
    EXPECT_EQ(ours.Scalar(), theirs.Scalar()) << where;
  }
}

// ggufkit's meta/tensors --json against @huggingface/gguf's reading of the same file.
void expect_same_reading(const std::string& file) {
  SCOPED_TRACE(file);
  YAML::Node meta = cli_json("meta --json " + file), tensors = cli_json("tensors --json " + file);
  YAML::Node hf = js("hf-read", file);
  EXPECT_EQ(meta["version"].as<int>(), hf["version"].as<int>());
  ASSERT_EQ(meta["metadata"].size(), hf["metadata"].size());
  for (size_t i = 0; i < meta["metadata"].size(); ++i) {
    YAML::Node a = meta["metadata"][i], b = hf["metadata"][i];
    std::string key = a["key"].as<std::string>(), type = a["type"].as<std::string>();
    ASSERT_EQ(key, b["key"].as<std::string>());
    ASSERT_EQ(type, kTypeNames[b["type"].as<int>()]) << key;
    if (type != "array") {
      same_value(type, a["value"], b["value"], key);
      continue;
    }
    std::string items = a["items"].as<std::string>();
    ASSERT_EQ(items, kTypeNames[b["subType"].as<int>()]) << key;
    ASSERT_EQ(a["value"].size(), b["value"].size()) << key;
    if (items == "array") continue;  // nested: element types are not in either JSON
    for (size_t k = 0; k < a["value"].size(); ++k) same_value(items, a["value"][k], b["value"][k], key + "[" + std::to_string(k) + "]");
  }
  ASSERT_EQ(tensors["tensors"].size(), hf["tensors"].size());
  for (size_t i = 0; i < tensors["tensors"].size(); ++i) {
    YAML::Node a = tensors["tensors"][i], b = hf["tensors"][i];
    EXPECT_EQ(a["name"].as<std::string>(), b["name"].as<std::string>());
    ASSERT_EQ(a["dims"].size(), b["shape"].size());
    for (size_t d = 0; d < a["dims"].size(); ++d) EXPECT_EQ(a["dims"][d].as<std::string>(), b["shape"][d].as<std::string>());
    EXPECT_EQ(ggml_type_by_name(a["type"].as<std::string>())->id, b["dtype"].as<uint32_t>());
    EXPECT_EQ(a["offset"].as<std::string>(), b["offset"].as<std::string>());
  }
  if (tensors["tensors"].size() > 0) {
    EXPECT_EQ(tensors["data_offset"].as<std::string>(), hf["tensorDataOffset"].as<std::string>());
  }
}

}  // namespace

TEST(LlamaCpp, TheTinyLlamaLoadsAndGenerates) {
  YAML::Node r = js("llama-run", tiny_llama());
  ASSERT_EQ(r["tokens"].size(), 8u);
  EXPECT_EQ(r["eos"].as<int>(), 2);
  EXPECT_EQ(r["name"].as<std::string>(), "ggufkit tiny llama");
  EXPECT_NE(r["chat_template"].as<std::string>().find("add_generation_prompt"), std::string::npos);
}

TEST(LlamaCpp, EditedAndRealignedModelsGenerateTheSameTokens) {
  YAML::Node base = js("llama-run", tiny_llama());
  std::vector<int> tokens;
  for (const auto& t : base["tokens"]) tokens.push_back(t.as<int>());
  std::string tmpl = temp_path("interop.jinja"), edited = temp_path("interop-edited.gguf");
  std::string text = "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}";
  write_file_bytes(tmpl, std::vector<uint8_t>(text.begin(), text.end()));
  // Token 1 (<s>) is the vocabulary's other control token, so llama.cpp accepts it as the end.
  CliRun e = run_cli("edit " + tiny_llama() + " --chat-template-file " + tmpl + " --eos-token-id 1 -o " + edited);
  ASSERT_EQ(e.code, 0) << e.err;
  YAML::Node r = js("llama-run", edited);
  EXPECT_EQ(r["eos"].as<int>(), 1);  // llama.cpp's own llama_vocab_eos reports the new id
  EXPECT_EQ(r["chat_template"].as<std::string>(), text);
  for (uint32_t a : {64u, 4096u}) {
    SCOPED_TRACE(a);
    std::string out = temp_path("interop-realigned-" + std::to_string(a) + ".gguf");
    CliRun rr = run_cli("realign " + edited + " -a " + std::to_string(a) + " -o " + out);
    ASSERT_EQ(rr.code, 0) << rr.err;
    YAML::Node ra = js("llama-run", out);
    EXPECT_EQ(ra["alignment"].as<uint32_t>(), a);
    EXPECT_EQ(ra["eos"].as<int>(), 1);
    std::vector<int> got;
    for (const auto& t : ra["tokens"]) got.push_back(t.as<int>());
    EXPECT_EQ(got, tokens);  // greedy: the same weights give the same tokens
  }
  std::vector<int> edited_tokens;
  for (const auto& t : r["tokens"]) edited_tokens.push_back(t.as<int>());
  EXPECT_EQ(edited_tokens, tokens);
}

TEST(HuggingFace, ReadsEveryFileTheTestsWriteAndTheCorpusAsGgufkitDoes) {
  std::vector<std::string> files = {
      write_fixture("interop-408", kExamples + "/sketch-408.yaml"),
      tiny_llama(),
      write_fixture("interop-padding", kExamples + "/broken/nonzero-padding.yaml"),
  };
  files.push_back(write_fixture("interop-every-type", kExamples + "/every-type.yaml"));
  for (uint32_t a : {64u, 4096u}) {
    std::string out = temp_path("interop-hf-realign-" + std::to_string(a) + ".gguf");
    ASSERT_EQ(run_cli("realign " + tiny_llama() + " -a " + std::to_string(a) + " -o " + out).code, 0);
    files.push_back(out);
  }
  for (const char* f : {"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-phi-3.gguf",
                        "vocab/ggml-vocab-bert-bge.gguf", "vocab/ggml-vocab-falcon.gguf",
                        "vocab/ggml-vocab-baichuan.gguf", "history/ggml-vocab-falcon.v2.gguf"})
    files.push_back(corpus(f));
  for (const auto& f : files) expect_same_reading(f);
}

TEST(HuggingFace, AHeaderItSerializesReadsInGgufkitWithTheSameValues) {
  std::string out = temp_path("hf-built.gguf");
  YAML::Node built = js("hf-build", out);
  Scanned s = scan_file(out);
  EXPECT_EQ(s.model.tensors.size(), 0u);
  YAML::Node meta = cli_json("meta --json " + out);
  ASSERT_EQ(meta["metadata"].size(), built["metadata"].size());
  for (size_t i = 0; i < meta["metadata"].size(); ++i) {
    YAML::Node a = meta["metadata"][i], b = built["metadata"][i];
    std::string key = a["key"].as<std::string>(), type = a["type"].as<std::string>();
    ASSERT_EQ(key, b["key"].as<std::string>());
    ASSERT_EQ(type, kTypeNames[b["type"].as<int>()]) << key;
    if (type == "array") {
      ASSERT_EQ(a["value"].size(), b["value"].size()) << key;
      for (size_t k = 0; k < a["value"].size(); ++k) same_value(a["items"].as<std::string>(), a["value"][k], b["value"][k], key);
    } else {
      same_value(type, a["value"], b["value"], key);
    }
  }
  EXPECT_EQ(s.model.find("general.name")->str, "built by @huggingface/gguf — ünïcödé");
  EXPECT_EQ(s.model.find("test.u64")->bits, UINT64_MAX);
  EXPECT_EQ(s.model.find("test.i64")->as_i64(), INT64_MIN);
  // And ggufkit rewrites it byte for byte.
  EXPECT_EQ(to_bytes(s.model), read_file_bytes(out));
}

namespace {

// ggml's public GGUF C API, the few calls the differential test needs.
struct GgufInitParams {
  bool no_alloc;
  void** ctx;
};
struct Ggml {
  void* lib = nullptr;
  void* (*init)(const char*, GgufInitParams) = nullptr;
  int64_t (*n_kv)(const void*) = nullptr;
  const char* (*key)(const void*, int64_t) = nullptr;
  int64_t (*n_tensors)(const void*) = nullptr;
  const char* (*tensor_name)(const void*, int64_t) = nullptr;
  size_t (*tensor_offset)(const void*, int64_t) = nullptr;
  size_t (*data_offset)(const void*) = nullptr;
  void (*free)(void*) = nullptr;
};

const Ggml& ggml() {
  static Ggml g = [] {
    Ggml x;
    std::string path = kNpm + "/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so";
    x.lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!x.lib) return x;
    auto sym = [&](auto& fn, const char* name) { fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(x.lib, name)); };
    sym(x.init, "gguf_init_from_file");
    sym(x.n_kv, "gguf_get_n_kv");
    sym(x.key, "gguf_get_key");
    sym(x.n_tensors, "gguf_get_n_tensors");
    sym(x.tensor_name, "gguf_get_tensor_name");
    sym(x.tensor_offset, "gguf_get_tensor_offset");
    sym(x.data_offset, "gguf_get_data_offset");
    sym(x.free, "gguf_free");
    return x;
  }();
  return g;
}

struct Fixture {
  std::string name, path;
};

// Where ggufkit and ggml knowingly differ, and why ggufkit is right.
const std::map<std::string, std::string>& known_differences() {
  static const std::map<std::string, std::string> d = {
      {"CutInsideTheTensorData",
       "ggml with no_alloc never looks at tensor data, so a download cut inside it loads until the data is used; "
       "ggufkit refuses a file whose tensors are not all there, since it could not copy or verify them"},
      {"truncated-data", "the same: the file is cut inside tensor b's data"},
      {"cut-200", "the same: the file is cut 200 bytes into its tensor data"},
      {"offset-gap",
       "the GGUF format lets tensor data sit anywhere aligned and in order; ggml insists on each tensor right after "
       "the one before. ggufkit reads such a file (and rewrites it packed); validate reports offset_gap as an error "
       "for llama.cpp"},
      {"nested-array",
       "the format allows arrays of arrays and ggufkit reads them; ggml refuses them. validate reports nested_array"},
  };
  return d;
}

std::vector<Fixture> differential_fixtures() {
  std::vector<Fixture> f;
  for (const auto& c : malformed_cases()) {
    std::string p = temp_path(std::string("diff-") + c.name + ".gguf");
    write_file_bytes(p, c.build());
    f.push_back({c.name, p});
  }
  for (auto& e : fs::directory_iterator(kExamples + "/broken")) {
    std::string name = e.path().stem().string();
    f.push_back({name, write_fixture("diff-broken-" + name, e.path().string())});
  }
  f.push_back({"sketch-408", write_fixture("diff-408", kExamples + "/sketch-408.yaml")});
  f.push_back({"tiny-llama", tiny_llama()});
  for (const char* c : {"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-phi-3.gguf",
                        "vocab/ggml-vocab-bert-bge.gguf", "vocab/ggml-vocab-falcon.gguf", "vocab/ggml-vocab-baichuan.gguf",
                        "history/ggml-vocab-falcon.v2.gguf", "history/ggml-vocab-llama.v1.gguf"})
    f.push_back({c, corpus(c)});
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Model m = random_model(seed);
    if (m.order == ByteOrder::big) continue;  // ggml reads only its host's byte order
    std::string p = temp_path("diff-random-" + std::to_string(seed) + ".gguf");
    write_file(m, p);
    f.push_back({"random-" + std::to_string(seed), p});
  }
  // What readers let through: a gap between tensors, nested arrays, a file cut 200 bytes into its data.
  std::string gap = temp_path("diff-gap.yaml");
  std::string g = "metadata:\n  - {key: general.architecture, type: string, value: x}\ntensors:\n"
                  "  - {name: a, type: f32, dims: [8], fill: zeros}\n  - {name: b, type: f32, dims: [4], fill: zeros, raw: {offset: 64}}\n"
                  "raw: {truncate_at: 512}\n";
  write_file_bytes(gap, std::vector<uint8_t>(g.begin(), g.end()));
  f.push_back({"offset-gap", write_fixture("diff-gap", gap)});
  std::string nested = temp_path("diff-nested.yaml");
  std::string n = "metadata:\n  - {key: n, type: array, items: array, value: [{items: u8, value: [1]}]}\n";
  write_file_bytes(nested, std::vector<uint8_t>(n.begin(), n.end()));
  f.push_back({"nested-array", write_fixture("diff-nested", nested)});
  auto bytes = read_file_bytes(tiny_llama());
  bytes.resize(scan_file(tiny_llama()).layout.data_offset + 200);
  std::string cut = temp_path("diff-cut-200.gguf");
  write_file_bytes(cut, bytes);
  f.push_back({"cut-200", cut});
  return f;
}

}  // namespace

TEST(GgmlParser, GivesTheSameVerdictsKeysAndOffsetsButForTheListedDifferences) {
  const Ggml& g = ggml();
  ASSERT_TRUE(g.lib) << "cannot dlopen libggml-base.so from " << kNpm << ": " << ::dlerror();
  ASSERT_TRUE(g.init && g.n_kv && g.key && g.n_tensors && g.tensor_name && g.tensor_offset && g.data_offset && g.free);
  int both_accept = 0, both_refuse = 0, listed = 0;
  std::set<std::string> listed_seen;
  for (const Fixture& f : differential_fixtures()) {
    SCOPED_TRACE(f.name);
    std::optional<Scanned> ours;
    std::string why;
    try {
      ours = scan_file(f.path);
    } catch (const Error& e) {
      why = e.what();
    }
    void* theirs = g.init(f.path.c_str(), GgufInitParams{true, nullptr});
    auto known = known_differences().find(f.name);
    if (static_cast<bool>(ours) != (theirs != nullptr)) {
      EXPECT_NE(known, known_differences().end())
          << "ggufkit " << (ours ? "accepts" : "refuses (" + why + ")") << ", ggml " << (theirs ? "accepts" : "refuses");
      listed++;
      listed_seen.insert(f.name);
    } else if (ours) {
      both_accept++;
      EXPECT_EQ(known, known_differences().end()) << "listed as a difference, but both accept";
      const Model& m = ours->model;
      ASSERT_EQ(g.n_kv(theirs), static_cast<int64_t>(m.metadata.size()));
      for (size_t i = 0; i < m.metadata.size(); ++i) EXPECT_EQ(g.key(theirs, static_cast<int64_t>(i)), m.metadata[i].key);
      ASSERT_EQ(g.n_tensors(theirs), static_cast<int64_t>(m.tensors.size()));
      for (size_t i = 0; i < m.tensors.size(); ++i) {
        EXPECT_EQ(g.tensor_name(theirs, static_cast<int64_t>(i)), m.tensors[i].name);
        EXPECT_EQ(g.tensor_offset(theirs, static_cast<int64_t>(i)), ours->layout.tensor_offsets[i]);
      }
      // With no tensors ggml puts the data start at the end of the header, unpadded;
      // ggufkit's is rounded up to the alignment, where data would start. Compared with tensors.
      if (!m.tensors.empty()) {
        EXPECT_EQ(g.data_offset(theirs), ours->layout.data_offset);
      }
    } else {
      both_refuse++;
      EXPECT_EQ(known, known_differences().end()) << "listed as a difference, but both refuse";
    }
    if (theirs) g.free(theirs);
  }
  EXPECT_EQ(listed_seen.size(), known_differences().size());  // every listed difference still happens
  EXPECT_GT(both_accept, 30);
  EXPECT_GT(both_refuse, 40);
  std::printf("ggml differential: %d both accept, %d both refuse, %d listed differences\n", both_accept, both_refuse, listed);
}
