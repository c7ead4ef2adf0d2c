// Google Benchmark: parsing a model's header in-process, ggufkit beside ggml's own parser
// (gguf_init_from_file with no_alloc, from the libggml-base.so that node-llama-cpp
// ships), in one run, on the same file:
//   bench_parse FILE.gguf [LIBGGML_BASE.so] [benchmark flags]
// Both read the file from the page cache; neither reads tensor data.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdio>
#include <string>

#include "ggufkit/check.h"
#include "ggufkit/fixture.h"
#include "ggufkit/tensors.h"
#include "ggufkit/vocab.h"
#include "ggufkit/scan.h"
#include "../check/src/tensor_rules.h"  // the rules' own entry, internal to the check library

namespace {
std::string g_file;

struct GgufInitParams {
  bool no_alloc;
  void** ctx;
};
void* (*g_ggml_init)(const char*, GgufInitParams) = nullptr;
void (*g_ggml_free)(void*) = nullptr;

void BM_GgufkitParseHeader(benchmark::State& state) {
  size_t kvs = 0;
  uint64_t header = 0;
  for (auto _ : state) {
    ggufkit::Scanned s = ggufkit::scan_file(g_file);
    kvs += s.model.metadata.size();
    header = s.layout.header_size;
    benchmark::DoNotOptimize(s);
  }
  benchmark::DoNotOptimize(kvs);
  state.counters["header_MB"] = static_cast<double>(header) / 1e6;
}
BENCHMARK(BM_GgufkitParseHeader)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_GgmlParseHeader(benchmark::State& state) {
  if (!g_ggml_init) {
    state.SkipWithError("no libggml-base.so given");
    return;
  }
  for (auto _ : state) {
    void* ctx = g_ggml_init(g_file.c_str(), GgufInitParams{true, nullptr});
    if (!ctx) {
      state.SkipWithError("ggml refused the file");
      return;
    }
    g_ggml_free(ctx);
  }
}
BENCHMARK(BM_GgmlParseHeader)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// The loader's tensor table (issue 43's goal: under 1 ms more for validate of the 339-tensor
// Qwen-shaped model): the walk that tensor_missing/tensor_shape/tensor_unexpected make,
// beside the whole rule book's check of the same model, both on a header read once.
void BM_LoaderTensorTable(benchmark::State& state) {
  const ggufkit::Scanned s = ggufkit::scan_file(g_file);
  size_t n = 0;
  for (auto _ : state) {
    auto t = ggufkit::loader_tensors(s.model);
    n = t ? t->size() : 0;
    benchmark::DoNotOptimize(t);
  }
  state.counters["tensors"] = static_cast<double>(n);
}
BENCHMARK(BM_LoaderTensorTable)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// The tensor rules themselves (what validate gained): the walk, the name index, the shape
// checks and the findings, as check_model runs them.
void BM_TensorRules(benchmark::State& state) {
  const ggufkit::Scanned s = ggufkit::scan_file(g_file);
  size_t findings = 0;
  for (auto _ : state) {
    auto f = ggufkit::tensor_rules(s.model);
    findings = f.size();
    benchmark::DoNotOptimize(f);
  }
  state.counters["findings"] = static_cast<double>(findings);
}
BENCHMARK(BM_TensorRules)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_RuleBookCheckModel(benchmark::State& state) {
  const ggufkit::Scanned s = ggufkit::scan_file(g_file);
  ggufkit::VocabCache vocabs;  // the vocabulary loaded once, as an edit's plan does
  for (auto _ : state) benchmark::DoNotOptimize(ggufkit::check_model(s.model, s.layout, false, &vocabs));
}
BENCHMARK(BM_RuleBookCheckModel)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// The fixture factory, in O(header) (goal: at most 3x ggml's header read above): the
// sparse replica (header copied and checked, the rest a hole), the header exemplar, and
// the vocabulary-only extract, each written next to the model and replaced every run.
void fixture_run(benchmark::State& state, const char* name, ggufkit::ReplicaData d, bool vocab) {
  const std::string out = g_file + "." + name + ".gguf";
  for (auto _ : state) {
    if (vocab) {
      ggufkit::ExtractRequest r;
      r.input = g_file, r.output = out, r.write.force = true;
      benchmark::DoNotOptimize(ggufkit::extract_vocab(r));
    } else {
      ggufkit::ReplicaRequest r;
      r.input = g_file, r.output = out, r.data = d, r.write.force = true;
      benchmark::DoNotOptimize(ggufkit::replica(r));
    }
  }
  std::remove(out.c_str());
}
void BM_ReplicaSparse(benchmark::State& state) { fixture_run(state, "replica", ggufkit::ReplicaData::sparse, false); }
void BM_ReplicaHeaderOnly(benchmark::State& state) { fixture_run(state, "exemplar", ggufkit::ReplicaData::none, false); }
void BM_ExtractVocabOnly(benchmark::State& state) { fixture_run(state, "vocab", ggufkit::ReplicaData::none, true); }
BENCHMARK(BM_ReplicaSparse)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_ReplicaHeaderOnly)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_ExtractVocabOnly)->Unit(benchmark::kMillisecond)->MinTime(2.0);
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_parse FILE.gguf [LIBGGML_BASE.so] [benchmark flags]\n");
    return 2;
  }
  g_file = argv[1];
  int skip = 1;
  if (argc > 2 && argv[2][0] != '-') {
    void* lib = ::dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      std::fprintf(stderr, "bench_parse: cannot dlopen %s: %s\n", argv[2], ::dlerror());
      return 2;
    }
    g_ggml_init = reinterpret_cast<decltype(g_ggml_init)>(::dlsym(lib, "gguf_init_from_file"));
    g_ggml_free = reinterpret_cast<decltype(g_ggml_free)>(::dlsym(lib, "gguf_free"));
    skip = 2;
  }
  argv[skip] = argv[0];
  argc -= skip;
  argv += skip;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
