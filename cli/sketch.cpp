// The sketch commands: write a sketch, dump a file as one, and the walkthrough example.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "ggufkit/output.h"
#include "ggufkit/sketch.h"
#include "ggufkit/writer.h"
#include "commands.h"
#include "common.h"

namespace ggufkit {
extern const std::string_view kExampleSketch;
}

namespace ggufkit::cli {

int cmd_write(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("sketch", po::value<std::string>()->required(), "the sketch (YAML or JSON)")(
      "output,o", po::value<std::string>()->required(), "the GGUF file to write")(
      "define,D", po::value<std::vector<std::string>>()->composing(), "NAME=VALUE: fill [[NAME]] in the sketch")(
      "force", po::bool_switch(), "replace OUT if it exists")(
      "map", po::bool_switch(), "print the span map of what was written")(
      "json", po::bool_switch(), "with --map: print it as JSON");
  po::positional_options_description pos;
  pos.add("sketch", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit write SKETCH.yaml -o OUT.gguf [-D NAME=VALUE]... [--map [--json]]\n\n"
                  "Writes the GGUF file a sketch describes: metadata entries in order with their\n"
                  "types, tensors with their data (values, fill, bytes or from), and raw overrides\n"
                  "that break the file on purpose. The format is in schemas/sketch.md; examples are\n"
                  "in examples/. Prints nothing on success unless --map is given.");
  if (!vm) return 0;
  Defines defines;
  if (vm->count("define"))
    for (const auto& d : (*vm)["define"].as<std::vector<std::string>>()) {
      auto eq = d.find('=');
      if (eq == std::string::npos || eq == 0) throw_usage("-D expects NAME=VALUE, found '" + d + "'");
      defines[d.substr(0, eq)] = d.substr(eq + 1);
    }
  std::string out = (*vm)["output"].as<std::string>();
  refuse_same_file((*vm)["sketch"].as<std::string>(), out, "");
  Sketch sketch = read_sketch((*vm)["sketch"].as<std::string>(), defines);
  Layout L = write_sketch(sketch, out, (*vm)["force"].as<bool>());
  if ((*vm)["map"].as<bool>()) print_map(L, sketch.truncate_at.value_or(L.file_size), (*vm)["json"].as<bool>());
  return 0;
}

int cmd_dump(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "the GGUF file")(
      "format", po::value<std::string>()->default_value("yaml"), "yaml or json")(
      "inline-data", po::bool_switch(), "tensor data inline as hex instead of by reference (small tensors only)")(
      "output,o", po::value<std::string>(), "write the sketch here instead of standard output")(
      "force", po::bool_switch(), "with -o: replace OUT if it exists");
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit dump FILE [--format yaml|json] [--inline-data] [-o OUT]\n\n"
                  "Prints a complete sketch of FILE that 'ggufkit write' turns back into the same\n"
                  "bytes: every entry in full, and each tensor's data by reference (from: the\n"
                  "file and the byte offset) unless --inline-data. With -o the file is named\n"
                  "relative to OUT's folder, as write reads it; on standard output, absolute.");
  if (!vm) return 0;
  std::string format = (*vm)["format"].as<std::string>();
  if (format != "yaml" && format != "json") throw_usage("--format must be yaml or json, found '" + format + "'");
  Scanned s = scan_file((*vm)["file"].as<std::string>());
  DumpOptions opt{format == "json", (*vm)["inline-data"].as<bool>(), std::nullopt};
  if (!vm->count("output")) {  // printed as it is made: a sketch may be larger than memory allows
    dump_sketch(s.model, opt, [](std::string_view piece) { std::fwrite(piece.data(), 1, piece.size(), stdout); });
    return 0;
  }
  std::string out = (*vm)["output"].as<std::string>();
  opt.sketch_dir = std::filesystem::path(out).parent_path().string();
  refuse_same_file((*vm)["file"].as<std::string>(), out, "");
  write_text_file(out, (*vm)["force"].as<bool>(),
                  [&](const std::function<void(std::string_view)>& put) { dump_sketch(s.model, opt, put); });
  return 0;
}

int cmd_example(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("output,o", po::value<std::string>()->required(), "where to write it")(
      "force", po::bool_switch(), "replace OUT if it exists");
  po::positional_options_description pos;
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit example -o OUT\n\n"
                  "Writes the walkthrough's 408-byte file: general.architecture 'counts', a name,\n"
                  "general.alignment 64, counts.block_count 1, three tokens, and one 3 x 2 f32\n"
                  "tensor holding 0.5 ... 5.5 at byte 384, its data not padded at the end.");
  if (!vm) return 0;
  std::string out = (*vm)["output"].as<std::string>();
  // The walkthrough's file, from the sketch the program carries (examples/sketch-408.yaml).
  const Sketch sketch = parse_sketch(std::string(kExampleSketch), "the walkthrough sketch", ".");
  Layout L = write_sketch(sketch, out, (*vm)["force"].as<bool>());
  std::printf("%s: %llu bytes\n", out.c_str(), static_cast<unsigned long long>(L.file_size));
  return 0;
}

}  // namespace ggufkit::cli
