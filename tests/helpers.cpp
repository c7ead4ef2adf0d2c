#include "helpers.h"
#include "edit_rule_cases.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "ggufkit/sketch.h"

namespace testing_helpers {

namespace fs = std::filesystem;
using namespace ggufkit;

const Sample& sample() {
  static const Sample s = [] {
    Sample out;
    const char* env = std::getenv("GGUFKIT_SAMPLE");
    const std::string asked = env ? env : "";
    if (asked == "all") {
      out.all = true;
    } else if (asked.size() == 1 && asked[0] >= '0' && asked[0] < '0' + static_cast<int>(out.parts)) {
      out.part = static_cast<unsigned>(asked[0] - '0');
    } else {
      // The commit's number on its branch, not its hash: consecutive commits rotate.
      FILE* p = ::popen(("git -C '" + std::string(GGUFKIT_SOURCE) + "' rev-list --count HEAD 2>/dev/null").c_str(), "r");
      unsigned long n = 0;
      if (p) {
        if (std::fscanf(p, "%lu", &n) != 1) n = 0;
        ::pclose(p);
      }
      out.part = static_cast<unsigned>(n % out.parts);
    }
    return out;
  }();
  return s;
}

std::string Sample::said() const {
  if (all) return "every case";
  return "part " + std::to_string(part) + " of " + std::to_string(parts) + " (GGUFKIT_SAMPLE=all runs every case)";
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> sorted_files(const std::string& dir, const std::string& ext) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ext) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ggufkit-test-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
}  // namespace

std::string temp_dir() {
  static TempDir dir;
  return dir.path;
}

std::string temp_path(const std::string& name) { return temp_dir() + "/" + name; }

void write_file_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::string s = slurp(path);
  return {s.begin(), s.end()};
}

std::string corpus(const std::string& name) { return std::string(GGUFKIT_CORPUS) + "/" + name; }

CliRun run_cli(const std::string& args, const std::string& prefix, const std::string& bin) {
  static int n = 0;
  std::string out = temp_path("cli-" + std::to_string(++n) + ".out");
  std::string err = out + ".err";
  std::string cmd = "export LC_ALL=C; " + prefix + bin + " " + args + " >" + out + " 2>" + err;
  int status = std::system(cmd.c_str());
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return {code, slurp(out), slurp(err)};
}

std::vector<uint8_t> tensor_bytes(const ggufkit::Model& m, const std::string& name) {
  for (const ggufkit::Tensor& t : m.tensors)
    if (t.name == name) {
      std::vector<uint8_t> b(t.nbytes());
      t.source->read_at(t.source_offset, b.data(), b.size());
      return b;
    }
  throw std::runtime_error("no tensor " + name);
}

const std::string& tiny_llama() {
  static std::string path = [] {
    std::string p = temp_path("tiny-llama.gguf");
    write_sketch(read_sketch(std::string(GGUFKIT_SOURCE) + "/examples/tiny-llama.yaml",
                             {{"VOCAB", corpus("vocab/ggml-vocab-llama-spm.gguf")}}),
                 p);
    return p;
  }();
  return path;
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::pair<std::string, std::string> fault_dir(const std::string& name, const std::string& model) {
  std::string dir = temp_path(name);
  fs::create_directories(dir);
  std::string src = dir + "/model.gguf";
  fs::copy_file(model, src, fs::copy_options::overwrite_existing);
  return {dir, src};
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& values) {
  std::vector<uint8_t> out(values.size() * 4);
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

void poke_u64(std::vector<uint8_t>& b, uint64_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b.at(at + i) = static_cast<uint8_t>(v >> (8 * i));
}

void poke_u32(std::vector<uint8_t>& b, uint64_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.at(at + i) = static_cast<uint8_t>(v >> (8 * i));
}

namespace {
Value random_value(std::mt19937_64& rng, ValueType t, int depth) {
  switch (t) {
    case ValueType::string: {
      std::string s(rng() % 20, '\0');
      for (auto& ch : s) ch = static_cast<char>(rng());  // any bytes, not only UTF-8
      return Value::of_string(s);
    }
    case ValueType::array: {
      ValueType elem = static_cast<ValueType>(rng() % kValueTypeCount);
      if (elem == ValueType::array && depth >= 2) elem = ValueType::u16;
      std::vector<Value> items;
      for (uint64_t i = rng() % 6; i > 0; --i) items.push_back(random_value(rng, elem, depth + 1));
      return Value::array(elem, std::move(items));
    }
    default: {
      uint32_t w = value_type_width(t);
      uint64_t bits = rng();
      if (w < 8) bits &= (1ull << (8 * w)) - 1;  // raw bits: NaNs, -0.0, bool bytes of 2 all allowed
      return Value::scalar(t, bits);
    }
  }
}

}  // namespace

ggufkit::Model random_model(uint64_t seed) {
  std::mt19937_64 rng(seed);
  Model m;
  m.version = rng() % 2 ? 3 : 2;
  m.order = rng() % 3 == 0 ? ByteOrder::big : ByteOrder::little;
  m.pad_end = rng() % 2;
  const uint32_t alignments[] = {1, 8, 16, 32, 64, 256, 4096};
  uint32_t a = alignments[rng() % 7];
  if (a != 32 || rng() % 2) m.metadata.push_back({"general.alignment", Value::of_u32(a)});
  for (uint64_t i = rng() % 12; i > 0; --i) {
    ValueType t = static_cast<ValueType>(rng() % kValueTypeCount);
    m.metadata.push_back({"key." + std::to_string(m.metadata.size()), random_value(rng, t, 0)});
  }
  const char* types[] = {"f32", "f16", "q8_0", "q4_K", "i8", "bf16", "mxfp4", "q6_K"};
  for (uint64_t i = rng() % 5; i > 0; --i) {
    const GgmlType* gt = ggml_type_by_name(types[rng() % 8]);
    Tensor t;
    t.name = "blk." + std::to_string(m.tensors.size()) + ".weight";
    t.type = gt->id;
    t.dims = {gt->block * (1 + rng() % 3)};
    if (rng() % 2) t.dims.push_back(1 + rng() % 3);
    std::vector<uint8_t> bytes(t.nbytes());
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    t.source = from_bytes(t.name, std::move(bytes));
    m.tensors.push_back(std::move(t));
  }
  return m;
}

std::string fill(std::string args, const std::string& file, const std::string& patch) {
  if (size_t f = args.find("FILE"); f != std::string::npos) args.replace(f, 4, file);
  if (size_t p = args.find("PATCH"); p != std::string::npos) args.replace(p, 5, patch);
  return args;
}

}  // namespace testing_helpers
