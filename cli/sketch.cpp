// The sketch commands: write a sketch, dump a file as one, and the walkthrough example.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "ggufkit/edit.h"
#include "ggufkit/example.h"
#include "ggufkit/output.h"
#include "ggufkit/sketch.h"
#include "ggufkit/tensors.h"
#include "ggufkit/writer.h"
#include "commands.h"
#include "common.h"
#include "json.h"

namespace ggufkit {
extern const std::string_view kExampleSketch;
}

namespace ggufkit::cli {

namespace {

// " at byte N" when the finding has an offset.
std::string at_byte(const Finding& f) { return f.offset ? " at byte " + std::to_string(*f.offset) : ""; }

}  // namespace

int cmd_write(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("sketch", po::value<std::string>()->required(), "the sketch (YAML or JSON)")(
      "output,o", po::value<std::string>()->required(), "the GGUF file to write")(
      "define,D", po::value<std::vector<std::string>>()->composing(), "NAME=VALUE: fill [[NAME]] in the sketch")(
      "force", po::bool_switch(), "replace OUT if it exists")(
      "check", po::bool_switch(),
      "write nothing when validate finds an error in the file (exit 1); warnings do not stop it")(
      "map", po::bool_switch(), "print the span map of what was written")(
      "json", po::bool_switch(), "print what was written and the findings as JSON (with --map, the map too)");
  quiet_option(desc.add_options());
  po::positional_options_description pos;
  pos.add("sketch", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit write SKETCH.yaml -o OUT.gguf [-D NAME=VALUE]... [--check] [--map] [--json]\n\n"
                  "Writes the GGUF file a sketch describes: metadata entries in order with their\n"
                  "types, tensors with their data (values, fill, bytes or from), and raw overrides\n"
                  "that break the file on purpose. The format is 'ggufkit help sketch'; to start from\n"
                  "an example, 'ggufkit example -o E.gguf' (or --arch NAME) then 'ggufkit dump E.gguf'.\n"
                  "The file is judged with validate's rules before it is written, and\n"
                  "what they find (a duplicate key an include: brings in, a token id past the\n"
                  "vocabulary, ...) is printed on standard error with its code and byte offset:\n"
                  "a sketch may be broken on purpose, so it is written all the same (exit 0).\n"
                  "--check refuses instead when a finding is an error (exit 1, nothing written,\n"
                  "an existing OUT untouched); warnings are printed and the file written.\n"
                  "Prints nothing else on success unless --map or --json is given.");
  if (!vm) return 0;
  apply_quiet(*vm);
  WriteSketchRequest req;
  if (vm->count("define"))
    for (const auto& d : (*vm)["define"].as<std::vector<std::string>>()) {
      auto eq = d.find('=');
      if (eq == std::string::npos || eq == 0) throw_usage("-D expects NAME=VALUE, found '" + d + "'");
      req.defines[d.substr(0, eq)] = d.substr(eq + 1);
    }
  req.sketch = (*vm)["sketch"].as<std::string>();
  req.output = (*vm)["output"].as<std::string>();
  req.force = (*vm)["force"].as<bool>();
  req.context = cli_context();
  req.check = (*vm)["check"].as<bool>();
  refuse_same_file(req.sketch, req.output, "");
  const bool json = (*vm)["json"].as<bool>(), map = (*vm)["map"].as<bool>();
  WriteSketchReport r;
  try {
    r = write_sketch(req);
  } catch (const EditRefused& e) {
    for (const Finding& f : e.findings)  // the errors are in the message
      if (f.severity != Severity::error && !json)
        print_note(req.output, std::string(severity_name(f.severity)) + " [" + std::string(code_name(f.code)) + "]" + at_byte(f) + ": " + f.message);
    throw Error(e.kind, e.file, e.offset, e.field, e.message + "; without --check it is written anyway (a broken fixture on purpose)");
  }
  if (json) {
    JsonOut j(std::cout);
    j.object([&] {
      j.key("path").str(r.file.path).key("file_size").num(r.file.file_size).key("data_offset").num(r.file.data_offset);
      j.key("tensors").num(r.file.tensors).key("keys").num(r.file.keys);
      j.key("findings").array([&] {
        for (const Finding& f : r.findings)
          j.object([&] {
            j.key("code").str(code_name(f.code)).key("severity").str(severity_name(f.severity)).key("offset");
            if (f.offset) j.num(*f.offset);
            else j.null();
            j.key("message").str(f.message);
          });
      }, JsonOut::lines);
      if (map) map_json(j.key("map"), r.layout, r.file.file_size);
    });
    return 0;
  }
  for (const Finding& f : r.findings) {
    const std::string what = "[" + std::string(code_name(f.code)) + "]" + at_byte(f) + ": " + f.message;
    print_note(req.output, f.severity == Severity::error ? "written anyway (without --check): " + what
                                                        : std::string(severity_name(f.severity)) + " " + what);
  }
  if (map) print_map(r.layout, r.file.file_size, false);
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
  Scanned s = scan_file((*vm)["file"].as<std::string>(), {}, cli_context());
  DumpOptions opt{format == "json", (*vm)["inline-data"].as<bool>(), std::nullopt};
  if (!vm->count("output")) {  // printed as it is made: a sketch may be larger than memory allows
    dump_sketch(s.model, opt, [](std::string_view piece) { std::fwrite(piece.data(), 1, piece.size(), stdout); });
    return 0;
  }
  std::string out = (*vm)["output"].as<std::string>();
  opt.sketch_dir = std::filesystem::path(out).parent_path().string();
  refuse_same_file((*vm)["file"].as<std::string>(), out, "");
  write_text_file(out, (*vm)["force"].as<bool>(),
                  [&](const std::function<void(std::string_view)>& put) { dump_sketch(s.model, opt, put); }, cli_context());
  return 0;
}

int cmd_example(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("output,o", po::value<std::string>()->required(), "where to write it")(
      "arch", po::value<std::string>(), "the smallest model of this architecture llama.cpp loads and runs")(
      "set", po::value<std::vector<std::string>>()->composing(), "KEY=VALUE: one of its hyperparameters (block_count=4, expert_count=4); repeatable")(
      "force", po::bool_switch(), "replace OUT if it exists");
  quiet_option(desc.add_options());
  po::positional_options_description pos;
  std::string covered;
  for (const std::string& a : tensor_table_architectures()) covered += (covered.empty() ? "" : ", ") + a;
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit example -o OUT\n"
                  "       ggufkit example --arch NAME [--set KEY=VALUE]... -o OUT\n\n"
                  "Writes the walkthrough's 408-byte file: general.architecture 'counts', a name,\n"
                  "general.alignment 64, counts.block_count 1, three tokens, and one 3 x 2 f32\n"
                  "tensor holding 0.5 ... 5.5 at byte 384, its data not padded at the end.\n\n"
                  "With --arch, the smallest model of that architecture llama.cpp loads and runs:\n"
                  "2 blocks 64 wide, 4 heads of 16 (2 for keys and values), every tensor its loader\n"
                  "asks for in f32 with seeded small values, and 259 SentencePiece tokens (the 256\n"
                  "bytes and <unk> <s> </s>). `ggufkit dump OUT` gives its sketch to start from.\n"
                  "Architectures: " + covered + ".\n\n"
                  "  ggufkit example --arch llama --set block_count=4 -o tiny.gguf");
  if (!vm) return 0;
  apply_quiet(*vm);
  std::string out = (*vm)["output"].as<std::string>();
  if (vm->count("arch")) {
    ArchExampleRequest req;
    req.arch = (*vm)["arch"].as<std::string>();
    if (vm->count("set"))
      for (const std::string& kv : (*vm)["set"].as<std::vector<std::string>>()) {
        const size_t eq = kv.find('=');
        if (eq == std::string::npos || eq == 0)
          throw Error(Error::Kind::usage, kv, std::nullopt, "--set", "expected KEY=VALUE (block_count=4)");
        req.set.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
      }
    WriteSketchRequest w;
    w.text = arch_example_sketch(req);
    w.sketch = "the example of " + req.arch;
    w.output = out;
    w.force = (*vm)["force"].as<bool>();
    w.check = true;  // a --set that breaks the model is refused, as write --check does
    w.context = cli_context();
    const WriteSketchReport r = write_sketch(w);
    std::printf("%s: %llu bytes, %zu tensors\n", out.c_str(), static_cast<unsigned long long>(r.file.file_size), r.file.tensors);
    return 0;
  }
  // The walkthrough's file, from the sketch the program carries (examples/sketch-408.yaml).
  const Sketch sketch = parse_sketch(std::string(kExampleSketch), "the walkthrough sketch", ".");
  Layout L = write_sketch(sketch, out, (*vm)["force"].as<bool>());
  std::printf("%s: %llu bytes\n", out.c_str(), static_cast<unsigned long long>(L.file_size));
  return 0;
}

}  // namespace ggufkit::cli
