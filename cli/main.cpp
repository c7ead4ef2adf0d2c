// ggufkit: parse options, call the library, print. Nothing here knows the format.
#include <sys/stat.h>

#include <boost/iostreams/device/file_descriptor.hpp>
#include <boost/iostreams/stream.hpp>
#include <boost/program_options.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ggufkit/error.h"
#include "ggufkit/scan.h"
#include "ggufkit/sketch.h"
#include "ggufkit/writer.h"
#include "ggufkit/text.h"

namespace po = boost::program_options;
using namespace ggufkit;
using ggufkit::json_string;

namespace {

const char* kUsage =
    "usage: ggufkit COMMAND [OPTIONS] FILE\n"
    "\n"
    "Read, check and rewrite GGUF files (the model format of llama.cpp).\n"
    "\n"
    "commands:\n"
    "  show FILE              summary: version, counts, alignment, data start, tensors by type\n"
    "  map FILE [--json]      every field of the file with its offset, size and name\n"
    "  rewrite FILE -o OUT    read FILE and write it again with ggufkit's writer\n"
    "  write SKETCH -o OUT    write the GGUF file a YAML sketch describes (-D NAME=VALUE fills [[NAME]])\n"
    "  dump FILE              print a sketch that 'write' turns back into the same bytes\n"
    "  example -o OUT         write the 408-byte walkthrough file (a demo and a fixture)\n"
    "\n"
    "FILE may be '-' for standard input where a command only reads the header.\n"
    "Run 'ggufkit COMMAND --help' for a command's options.\n"
    "\n"
    "exit status: 0 success, 1 bad input file, 2 usage error, 3 I/O error\n";

// Options common to the parse step; returns nullopt when --help was answered.
std::optional<po::variables_map> parse(const std::vector<std::string>& args, po::options_description& desc,
                                       const po::positional_options_description& pos, const std::string& help) {
  desc.add_options()("help,h", "show this help");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  if (vm.count("help")) {
    std::cout << help << "\n" << desc << "\n";
    return std::nullopt;
  }
  po::notify(vm);
  return vm;
}

Scanned load(const std::string& path) {
  if (path != "-") return scan_file(path);
  namespace io = boost::iostreams;
  io::stream<io::file_descriptor_source> in(io::file_descriptor_source(0, io::never_close_handle));
  return scan_stream(in, "<stdin>");
}

std::string string_value(const Model& m, const char* key) {
  const Value* v = m.find(key);
  return v && v->type == ValueType::string ? v->str : "";
}

// The shape every reading command shares: one FILE and --json.
struct ReadArgs {
  std::string file;
  bool json = false;
};
std::optional<ReadArgs> read_args(const std::vector<std::string>& args, const std::string& help,
                                  const char* json_help) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "the GGUF file ('-' for stdin)")(
      "json", po::bool_switch(), json_help);
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos, help);
  if (!vm) return std::nullopt;
  return ReadArgs{(*vm)["file"].as<std::string>(), (*vm)["json"].as<bool>()};
}

struct TypeTotal {
  uint64_t tensors = 0, bytes = 0;
};

int cmd_show(const std::vector<std::string>& args) {
  auto a = read_args(args,
                     "usage: ggufkit show FILE [--json]\n\n"
                     "Reads the header (never the tensor data) and prints the version, counts,\n"
                     "alignment, data start, architecture and name, and tensors and bytes by type.",
                     "print JSON instead of text");
  if (!a) return 0;
  const std::string& path = a->file;
  Scanned s = load(path);
  const Model& m = s.model;
  std::map<std::string, TypeTotal> by_type;
  uint64_t total = 0;
  for (const Tensor& t : m.tensors) {
    auto& row = by_type[ggml_type(t.type)->name];
    row.tensors++;
    row.bytes += t.nbytes();
    total += t.nbytes();
  }
  const char* order = m.order == ByteOrder::little ? "little" : "big";
  if (a->json) {
    std::cout << "{\"file\": " << json_string(path) << ", \"version\": " << m.version << ", \"byte_order\": \""
              << order << "\", \"tensor_count\": " << m.tensors.size() << ", \"kv_count\": " << m.metadata.size()
              << ", \"alignment\": " << s.layout.alignment << ", \"data_offset\": " << s.layout.data_offset
              << ", \"file_size\": " << s.source_size
              << ", \"architecture\": " << json_string(string_value(m, "general.architecture"))
              << ", \"name\": " << json_string(string_value(m, "general.name")) << ", \"tensor_bytes\": " << total
              << ", \"types\": [";
    bool first = true;
    for (const auto& [name, row] : by_type) {
      std::cout << (first ? "" : ", ") << "{\"type\": " << json_string(name) << ", \"tensors\": " << row.tensors
                << ", \"bytes\": " << row.bytes << "}";
      first = false;
    }
    std::cout << "]}\n";
    return 0;
  }
  std::printf("file          %s\n", path.c_str());
  std::printf("version       %u (%s-endian)\n", m.version, order);
  std::printf("tensors       %zu\n", m.tensors.size());
  std::printf("metadata      %zu keys\n", m.metadata.size());
  std::printf("alignment     %u\n", s.layout.alignment);
  std::printf("data start    %llu\n", static_cast<unsigned long long>(s.layout.data_offset));
  std::printf("file size     %llu\n", static_cast<unsigned long long>(s.source_size));
  std::printf("architecture  %s\n", string_value(m, "general.architecture").c_str());
  std::printf("name          %s\n", string_value(m, "general.name").c_str());
  if (!m.tensors.empty()) {
    std::printf("\n%-10s %8s %16s\n", "type", "tensors", "bytes");
    for (const auto& [name, row] : by_type)
      std::printf("%-10s %8llu %16llu\n", name.c_str(), static_cast<unsigned long long>(row.tensors),
                  static_cast<unsigned long long>(row.bytes));
    std::printf("%-10s %8zu %16llu\n", "total", m.tensors.size(), static_cast<unsigned long long>(total));
  }
  return 0;
}

// The span map: text with a closing total, or the documented JSON.
void print_map(const Layout& L, uint64_t file_size, bool json) {
  if (json) {
    std::cout << "{\"file_size\": " << file_size << ", \"alignment\": " << L.alignment
              << ", \"data_offset\": " << L.data_offset << ", \"spans\": [";
    for (size_t i = 0; i < L.spans.size(); ++i) {
      const auto& sp = L.spans[i];
      std::cout << (i ? ",\n  " : "\n  ") << "{\"offset\": " << sp.span.offset << ", \"size\": " << sp.span.size
                << ", \"kind\": \"" << span_kind_name(sp.kind) << "\", \"name\": " << json_string(sp.path) << "}";
    }
    std::cout << "\n]}\n";
    return;
  }
  std::printf("%12s %12s  %-14s %s\n", "offset", "size", "kind", "name");
  for (const auto& sp : L.spans)
    std::printf("%12llu %12llu  %-14s %s\n", static_cast<unsigned long long>(sp.span.offset),
                static_cast<unsigned long long>(sp.span.size), span_kind_name(sp.kind), sp.path.c_str());
  std::printf("total %llu bytes in %zu spans; file size %llu", static_cast<unsigned long long>(L.file_size),
              L.spans.size(), static_cast<unsigned long long>(file_size));
  if (file_size > L.file_size)
    std::printf(" (%llu bytes after the last span)", static_cast<unsigned long long>(file_size - L.file_size));
  if (file_size < L.file_size)
    std::printf(" (cut %llu bytes short)", static_cast<unsigned long long>(L.file_size - file_size));
  std::printf("\n");
}

int cmd_map(const std::vector<std::string>& args) {
  auto a = read_args(args,
                     "usage: ggufkit map FILE [--json]\n\n"
                     "Prints every field of the file in order: offset, size, kind and name. Kinds:\n"
                     "magic version tensor_count kv_count kv_key kv_type kv_value tensor_info\n"
                     "padding tensor_data tensor_padding. The spans cover the file with no gaps;\n"
                     "the text form ends with their total, which equals the file size.",
                     "print {\"file_size\", \"alignment\", \"data_offset\", \"spans\": [...]}");
  if (!a) return 0;
  Scanned s = load(a->file);
  print_map(s.layout, s.source_size, a->json);
  return 0;
}

// True when both paths name the same file (following links); false if `out` is absent.
bool same_file(const std::string& a, const std::string& out) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(out.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

int cmd_rewrite(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "the GGUF file to read")(
      "output,o", po::value<std::string>()->required(), "where to write (never the input itself)");
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit rewrite FILE -o OUT\n\n"
                  "Reads FILE, plans a fresh layout and writes it with ggufkit's writer, streaming\n"
                  "the tensor data. A file ggufkit reads without complaint comes out byte for byte\n"
                  "the same. OUT is written beside itself and renamed into place when complete.");
  if (!vm) return 0;
  std::string in = (*vm)["file"].as<std::string>(), out = (*vm)["output"].as<std::string>();
  if (same_file(in, out)) throw_usage("refusing to write over the input " + in + " (it is the same file as " + out + ")");
  Scanned s = scan_file(in);
  Layout L = write_file(s.model, out);
  std::printf("%s: %llu bytes, %zu tensors, %zu keys\n", out.c_str(), static_cast<unsigned long long>(L.file_size),
              s.model.tensors.size(), s.model.metadata.size());
  return 0;
}

int cmd_write(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("sketch", po::value<std::string>()->required(), "the sketch (YAML or JSON)")(
      "output,o", po::value<std::string>()->required(), "the GGUF file to write")(
      "define,D", po::value<std::vector<std::string>>()->composing(), "NAME=VALUE: fill [[NAME]] in the sketch")(
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
  Sketch sketch = read_sketch((*vm)["sketch"].as<std::string>(), defines);
  Layout L = write_sketch(sketch, out);
  if ((*vm)["map"].as<bool>()) print_map(L, sketch.truncate_at.value_or(L.file_size), (*vm)["json"].as<bool>());
  return 0;
}

int cmd_dump(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "the GGUF file")(
      "format", po::value<std::string>()->default_value("yaml"), "yaml or json")(
      "inline-data", po::bool_switch(), "tensor data inline as hex instead of by reference (small tensors only)")(
      "output,o", po::value<std::string>(), "write the sketch here instead of standard output");
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit dump FILE [--format yaml|json] [--inline-data] [-o OUT]\n\n"
                  "Prints a complete sketch of FILE that 'ggufkit write' turns back into the same\n"
                  "bytes: every entry in full, and each tensor's data by reference (from: the\n"
                  "file's absolute path and the byte offset) unless --inline-data.");
  if (!vm) return 0;
  std::string format = (*vm)["format"].as<std::string>();
  if (format != "yaml" && format != "json") throw_usage("--format must be yaml or json, found '" + format + "'");
  Scanned s = scan_file((*vm)["file"].as<std::string>());
  std::string text = dump_sketch(s.model, {format == "json", (*vm)["inline-data"].as<bool>()});
  if (!vm->count("output")) {
    std::cout << text;
    return 0;
  }
  std::string out = (*vm)["output"].as<std::string>();
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) throw_io(out, "cannot write the sketch");
  return 0;
}

int cmd_example(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("output,o", po::value<std::string>()->required(), "where to write it");
  po::positional_options_description pos;
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit example -o OUT\n\n"
                  "Writes the walkthrough's 408-byte file: general.architecture 'counts', a name,\n"
                  "general.alignment 64, counts.block_count 1, three tokens, and one 3 x 2 f32\n"
                  "tensor holding 0.5 ... 5.5 at byte 384, its data not padded at the end.");
  if (!vm) return 0;
  std::string out = (*vm)["output"].as<std::string>();
  Layout L = write_file(walkthrough_model(), out);
  std::printf("%s: %llu bytes\n", out.c_str(), static_cast<unsigned long long>(L.file_size));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  std::string cmd = args[0];
  args.erase(args.begin());
  try {
    if (cmd == "show") return cmd_show(args);
    if (cmd == "map") return cmd_map(args);
    if (cmd == "rewrite") return cmd_rewrite(args);
    if (cmd == "write") return cmd_write(args);
    if (cmd == "dump") return cmd_dump(args);
    if (cmd == "example") return cmd_example(args);
    std::cerr << "ggufkit: unknown command '" << cmd << "'\n\n" << kUsage;
    return 2;
  } catch (const Error& e) {
    std::cerr << "ggufkit: error: " << e.what() << "\n";
    return e.exit_code();
  } catch (const po::error& e) {
    std::cerr << "ggufkit " << cmd << ": " << e.what() << " (see 'ggufkit " << cmd << " --help')\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "ggufkit: error: out of memory\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "ggufkit: internal error: " << e.what() << "\n";
    return 1;
  }
}
