// ggufkit corrupt: fills a CorruptRequest, writes the report as DIR/manifest.json and
// prints a summary (or, with --json, the manifest).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "ggufkit/corrupt.h"
#include "ggufkit/output.h"
#include "commands.h"
#include "common.h"
#include "json.h"

namespace ggufkit::cli {

namespace {

std::string manifest_json(const CorruptReport& r) {
  std::ostringstream text;
  JsonOut j(text);
  j.object([&] {
    // How many of each, for a reader of the manifest who wants the mix without counting.
    std::map<std::string, size_t> mutations, kinds;
    for (const CorruptEntry& e : r.files) mutations[e.mutation]++, kinds[e.span_kind]++;
    j.key("source").str(r.source).key("seed").num(r.seed);
    for (const auto& counts : {std::pair{"mutations", &mutations}, std::pair{"span_kinds", &kinds}})
      j.key(counts.first).object([&] {
        for (const auto& [k, n] : *counts.second) j.key(k).num(n);
      });
    j.key("files").array(
        [&] {
          for (const CorruptEntry& e : r.files)
            j.object([&] {
              j.key("file").str(e.file).key("span_kind").str(e.span_kind).key("field").str(e.field);
              j.key("offset").num(e.offset).key("mutation").str(e.mutation);
              j.key("gguf").str(e.gguf_accepts ? "accepts" : "refuses").key("llama").str(e.llama_loads ? "loads" : "refuses");
              j.key("error_offset");
              if (e.error_offset) j.num(*e.error_offset);
              else j.null();
              j.key("error").str(e.error).key("findings").array([&] {
                for (const std::string& c : e.findings) j.str(c);
              });
            });
        },
        JsonOut::lines);
  });
  return text.str();
}

// One line per span kind: how many variants, and what each reader makes of them.
void print_summary(const CorruptReport& r, const std::string& dir) {
  struct Row {
    size_t files = 0, ggml_accepts = 0, llama_loads = 0, reader_reads = 0;
  };
  std::map<std::string, Row> by_kind;
  std::map<std::string, size_t> by_mutation;
  Row total;
  for (const CorruptEntry& e : r.files) {
    for (Row* row : {&by_kind[e.span_kind], &total}) {
      row->files++;
      row->ggml_accepts += e.gguf_accepts;
      row->llama_loads += e.llama_loads;
      row->reader_reads += e.error.empty();
    }
    by_mutation[e.mutation]++;
  }
  std::printf("%-16s %6s %13s %12s %13s\n", "span kind", "files", "ggml accepts", "llama loads", "ggufkit reads");
  auto line = [](const std::string& name, const Row& x) {
    std::printf("%-16s %6zu %13zu %12zu %13zu\n", name.c_str(), x.files, x.ggml_accepts, x.llama_loads, x.reader_reads);
  };
  for (const auto& [kind, row] : by_kind) line(kind, row);
  line("total", total);
  std::printf("\n%zu mutations:", by_mutation.size());
  for (const auto& [name, n] : by_mutation) std::printf(" %s %zu", name.c_str(), n);
  std::printf("\nwrote %zu files and %s\n", r.files.size(), (std::filesystem::path(dir) / "manifest.json").string().c_str());
  std::printf("on disk: %.1f MB for a source of %.1f MB (the tensor data a variant does not change is a hole)\n",
              static_cast<double>(r.disk_bytes) / 1e6, static_cast<double>(r.source_bytes) / 1e6);
}

}  // namespace

int cmd_corrupt(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "the model to break; it must read")(
      "output,o", po::value<std::string>()->required(), "the folder for the variants and manifest.json (made if missing)")(
      "seed", po::value<uint64_t>()->default_value(1), "which spans, which offsets inside them and which values")(
      "count", po::value<size_t>(), "this many variants: fewer than the default samples it across mutations and span kinds, more draws on")(
      "force", po::bool_switch(), "write into a folder that holds files, replacing only the variants and the manifest")(
      "json", po::bool_switch(), "print the manifest");
  quiet_option(desc.add_options());
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit corrupt FILE -o DIR [--seed N] [--count N] [--force] [--json]\n\n"
                  "Writes broken variants of FILE, one file each (DIR/0001.gguf, ...), made from its span\n"
                  "map (ggufkit map), and DIR/manifest.json. Every kind of span the file has is broken at\n"
                  "least once, stage by stage as llama.cpp's test-gguf.cpp breaks files: cuts at span\n"
                  "boundaries and inside spans; lengths and counts past the end of the file; a bad magic\n"
                  "and versions 0, 1, future and of the other byte order; unknown value and element\n"
                  "types, nested arrays, empty and duplicate keys; general.alignment 0, 3 and of the\n"
                  "wrong type; a block count off the tensors, zero hyperparameters, token ids past the\n"
                  "vocabulary, bool bytes other than 0 and 1; n_dims 0 and 5, unknown and removed ggml\n"
                  "types, rows not whole blocks, misaligned, overlapping and gapped tensor offsets,\n"
                  "duplicate tensor names, a dimension whose data runs past the file; non-zero padding,\n"
                  "bytes after the end, NaN and inf in f32 and f16 data.\n\n"
                  "Each manifest entry names the file, the span kind, the field, the offset and the\n"
                  "mutation, and says what readers make of the file written: \"gguf\" what ggml's\n"
                  "gguf_init_from_file (no_alloc) does, as ggufkit predicts it (its reader without the\n"
                  "data bounds, plus ggml's stricter rules); \"llama\" whether llama.cpp loads it (the\n"
                  "rule book of validate: an error finding refuses; \"findings\" lists their codes);\n"
                  "\"error_offset\" and \"error\" where and why ggufkit's reader fails (null and empty\n"
                  "when it reads the file). The manifest also counts the files of each mutation and span\n"
                  "kind. The same seed gives the same files, byte for byte.\n\n"
                  "Files are numbered one mutation at a time, in an order the seed picks, each taking a\n"
                  "span kind not yet broken where it can: --count N (below the default) is the first N,\n"
                  "so --count 5 breaks the file in 5 different ways. A variant's tensor data is zeros\n"
                  "left as a hole in the file (a sparse file), but for the tensor a mutation changes, so\n"
                  "a corpus takes about its headers on disk, not a copy of the model per file; the room\n"
                  "it needs is checked against the free space first: a shortfall writes nothing.\n\n"
                  "DIR is made if missing (its parent must exist). A DIR that holds anything is refused\n"
                  "unless --force, which replaces only the files corrupt writes and leaves the others.");
  if (!vm) return 0;
  apply_quiet(*vm);
  CorruptRequest q;
  q.source = (*vm)["file"].as<std::string>();
  q.dir = (*vm)["output"].as<std::string>();
  q.seed = (*vm)["seed"].as<uint64_t>();
  if (vm->count("count")) q.count = (*vm)["count"].as<size_t>();
  q.force = (*vm)["force"].as<bool>();
  q.context = cli_context();
  CorruptReport r = corrupt(q);
  const std::string manifest = manifest_json(r);
  write_text_file((std::filesystem::path(q.dir) / "manifest.json").string(), manifest, true, q.context);
  if ((*vm)["json"].as<bool>()) std::cout << manifest;
  else print_summary(r, q.dir);
  return 0;
}

}  // namespace ggufkit::cli
