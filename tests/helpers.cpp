#include "helpers.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace testing_helpers {

namespace fs = std::filesystem;

namespace {
std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

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

CliRun run_cli(const std::string& args, const std::string& prefix) {
  static int n = 0;
  std::string out = temp_path("cli-" + std::to_string(++n) + ".out");
  std::string err = out + ".err";
  std::string cmd = prefix + std::string(GGUFKIT_BIN) + " " + args + " >" + out + " 2>" + err;
  int status = std::system(cmd.c_str());
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return {code, slurp(out), slurp(err)};
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

}  // namespace testing_helpers
