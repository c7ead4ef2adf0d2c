// Runs a fuzz target's LLVMFuzzerTestOneInput over its kept inputs without libFuzzer, so
// that `make test` (and its sanitizer build) keeps every fixed crash fixed:
//   replay_TARGET [--gguf] PATH...
// Each PATH is a file or a folder of files. With --gguf (the targets that read GGUF bytes)
// a .yaml input is a sketch and is written to GGUF bytes first, as make fuzz seeds them.
// Prints the number of inputs run; a crash or sanitizer report fails the test.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ggufkit/sketch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  bool gguf = false;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--gguf") {
      gguf = true;
    } else if (fs::is_directory(a)) {
      for (const auto& e : fs::directory_iterator(a))
        if (e.is_regular_file()) inputs.push_back(e.path());
    } else if (fs::is_regular_file(a)) {
      inputs.push_back(a);
    } else {
      std::fprintf(stderr, "replay: no such input %s\n", a.c_str());
      return 2;
    }
  }
  std::sort(inputs.begin(), inputs.end());
  for (const auto& p : inputs) {
    std::vector<uint8_t> bytes;
    if (gguf && p.extension() == ".yaml") {
      bytes = ggufkit::sketch_bytes(ggufkit::read_sketch(p.string()));
    } else {
      std::ifstream f(p, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(f), {});
    }
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::printf("replay: %zu inputs run\n", inputs.size());
  return inputs.empty() ? 1 : 0;
}
