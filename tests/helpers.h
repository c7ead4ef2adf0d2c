#pragma once

#include "paths.h"

#include <cstdint>
#include <string>
#include <vector>

#include "ggufkit/model.h"

namespace testing_helpers {

// Builds GGUF bytes by hand, field by field, little-endian (or big-endian with big set),
// for files the writer would never make and as an independent check of those it makes.
struct Bytes {
  std::vector<uint8_t> b;
  bool big = false;
  Bytes& raw(const std::string& s) { b.insert(b.end(), s.begin(), s.end()); return *this; }
  Bytes& u8(uint8_t v) { b.push_back(v); return *this; }
  Bytes& u16(uint16_t v) { return le(v, 2); }
  Bytes& u32(uint32_t v) { return le(v, 4); }
  Bytes& u64(uint64_t v) { return le(v, 8); }
  Bytes& str(const std::string& s) { u64(s.size()); return raw(s); }
  Bytes& head(uint32_t version, uint64_t n_tensors, uint64_t n_kv) { return raw("GGUF").u32(version).u64(n_tensors).u64(n_kv); }
  Bytes& zeros(size_t n) { b.insert(b.end(), n, 0); return *this; }
  Bytes& pad_to(size_t alignment) { return zeros((alignment - b.size() % alignment) % alignment); }
  size_t size() const { return b.size(); }

 private:
  Bytes& le(uint64_t v, int n) {  // n bytes of v in the chosen byte order
    for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * (big ? n - 1 - i : i))));
    return *this;
  }
};

// A fresh directory for this test process, removed at exit.
std::string temp_dir();
std::string temp_path(const std::string& name);
void write_file_bytes(const std::string& path, const std::vector<uint8_t>& bytes);
// Throws for a file that cannot be read, so two missing files never compare equal.
std::vector<uint8_t> read_file_bytes(const std::string& path);
std::string corpus(const std::string& name);  // ../shared/corpus/NAME
// A file's bytes as a string (throws when it cannot be read).
std::string slurp(const std::string& path);
// The files of `dir` whose names end in `ext` (".jinja"), sorted: a test's order is the same everywhere.
std::vector<std::string> sorted_files(const std::string& dir, const std::string& ext);

struct CliRun {
  int code;
  std::string out, err;
};
// Runs the built ggufkit program (or `bin`) with the given arguments (shell words), after
// the shell words in `prefix` (e.g. "ulimit -v 262144;"), under LC_ALL=C so that system
// messages read the same on every machine. A program killed by signal S gives 128 + S.
CliRun run_cli(const std::string& args, const std::string& prefix = "", const std::string& bin = GGUFKIT_BIN);

// The tiny llama of examples/tiny-llama.yaml (21 tensors in f32, f16 and q8_0, the
// llama-spm vocabulary of 32000 tokens), written once per test process.
const std::string& tiny_llama();
// The names in a folder, sorted.
std::vector<std::string> files_in(const std::string& dir);
// A folder of its own holding a copy of `model` as model.gguf: (folder, model path).
std::pair<std::string, std::string> fault_dir(const std::string& name, const std::string& model);

// Which part of a long differential this run takes. make test runs a quarter of the cases:
// part (commits on HEAD mod 4), so that four commits in a row run every case; make test-full
// (GGUFKIT_SAMPLE=all) runs them all, and GGUFKIT_SAMPLE=K (0 to 3) picks part K.
struct Sample {
  bool all = false;
  unsigned part = 0, parts = 4;
  bool takes(size_t index) const { return all || index % parts == part; }
  std::string said() const;  // "part 2 of 4 (GGUFKIT_SAMPLE=all runs every case)", or "every case"
};
const Sample& sample();

// The stored bytes of the model's tensor of that name (throws when it has none).
std::vector<uint8_t> tensor_bytes(const ggufkit::Model& m, const std::string& name);

// Little-endian f32 bytes of the values, for tensor sources.
std::vector<uint8_t> f32_bytes(const std::vector<float>& values);
// Overwrites 8 (or 4) bytes little-endian at an offset of a byte vector.
void poke_u64(std::vector<uint8_t>& b, uint64_t at, uint64_t v);
void poke_u32(std::vector<uint8_t>& b, uint64_t at, uint32_t v);

// A seeded random model: every value kind (nested arrays, any string bytes, NaNs, bool
// bytes of 2), alignments 1 to 4096, both byte orders, tensors of several types.
ggufkit::Model random_model(uint64_t seed);

}  // namespace testing_helpers
