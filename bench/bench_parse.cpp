// Google Benchmark: parsing a header from memory, without the program's start-up or the
// file system. bench_parse FILE [benchmark flags]: the header of FILE is read once.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>

#include "ggufkit/scan.h"

namespace {
std::shared_ptr<const ggufkit::ByteSource> g_header;

void BM_ParseHeader(benchmark::State& state) {
  ggufkit::ScanOptions o;
  o.data_in_file = false;  // only the header is in memory
  size_t kvs = 0;
  for (auto _ : state) {
    ggufkit::Scanned s = ggufkit::scan(g_header, o);
    kvs += s.model.metadata.size();
    benchmark::DoNotOptimize(s);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * g_header->size()));
  state.counters["header_MB"] = static_cast<double>(g_header->size()) / 1e6;
  benchmark::DoNotOptimize(kvs);
}
BENCHMARK(BM_ParseHeader)->Unit(benchmark::kMillisecond)->MinTime(2.0);
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_parse FILE.gguf [benchmark flags]\n");
    return 2;
  }
  ggufkit::Scanned file = ggufkit::scan_file(argv[1]);
  std::vector<uint8_t> header(file.layout.header_size);
  auto src = ggufkit::open_file(argv[1]);
  src->read_at(0, header.data(), header.size());
  g_header = ggufkit::from_bytes("header", std::move(header));
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
