// ggufkit: the table of commands and main(). Each command parses its options into a
// request for the library and prints what it returns.
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <algorithm>
#include <cstdio>
#include <future>
#include <optional>
#include <sstream>
#include <iostream>
#include <string>
#include <vector>

#include "ggufkit/error.h"
#include "ggufkit/path.h"
#include "ggufkit/registry.h"
#include "ggufkit/text.h"
#include "commands.h"
#include "common.h"
#include "json.h"

using namespace ggufkit;
using namespace ggufkit::cli;

const std::vector<Command>& ggufkit::cli::commands() {
  static const std::vector<Command> table = {
      {"show", "reading", "show FILE", "the summary: counts, alignment, architecture, hyperparameters,\nvocabulary, quant mix and bits per weight", cmd_show},
      {"meta", "reading", "meta FILE", "every metadata entry: index, key, type, value (--full)", cmd_meta},
      {"get", "reading", "get FILE KEY", "one value, for scripts: a string raw, an array one item per line", cmd_get},
      {"template", "reading", "template FILE", "a chat template byte for byte (--name NAME, --list)", cmd_template},
      {"tensors", "reading", "tensors FILE", "every tensor: name, dims, type, offset, bytes", cmd_tensors},
      {"stack", "reading", "stack FILE", "the repeated blocks: tensor names, shapes, types, bytes", cmd_stack},
      {"layer", "reading", "layer FILE N", "block N tensor by tensor, and which blocks match it", cmd_layer},
      {"account", "reading", "account FILE", "the header in pieces and the tensor bytes against the file size", cmd_account},
      {"tensor", "reading", "tensor FILE NAME", "a tensor's values: count, min, max, mean, NaN and inf (--head N)", cmd_tensor},
      {"diff", "reading", "diff A B", "metadata, tensor records and tensor bytes that differ", cmd_diff},
      {"hash", "reading", "hash FILE", "checksums of each tensor and all tensor data; --file: sha256sum's; --check MANIFEST", cmd_hash},
      {"validate", "reading", "validate FILE", "everything wrong with the file, with codes and offsets (--strict)", cmd_validate},
      {"tokenize", "reading", "tokenize FILE TEXT", "token ids exactly as llama.cpp gives them (--ids, --no-add-special, -f FILE)", cmd_tokenize},
      {"detokenize", "reading", "detokenize FILE ID...", "the text token ids stand for, as llama.cpp's llama_detokenize", cmd_detokenize},
      {"map", "reading", "map FILE", "every field of the file with its offset, size and name", cmd_map},
      {"rewrite", "writing", "rewrite FILE -o OUT", "read FILE and write it again with ggufkit's writer", cmd_rewrite},
      {"edit", "writing", "edit FILE -o OUT", "change metadata (--patch, --set, ...) and tensors (--keep-layers, ...)", cmd_edit},
      {"realign", "writing", "realign FILE -a N -o OUT", "re-lay the data at a new alignment", cmd_realign},
      {"convert", "writing", "convert FILE --byte-order big|little -o OUT", "the same model in the other byte order", cmd_convert},
      {"split", "writing", "split MODEL -o PREFIX", "write a shard set, as llama.cpp's gguf-split (--max-tensors N | --max-size SIZE)", cmd_split},
      {"merge", "writing", "merge SHARD -o OUT", "write a shard set as one file", cmd_merge},
      {"write", "writing", "write SKETCH -o OUT", "write the GGUF file a YAML sketch describes (-D NAME=VALUE fills [[NAME]])", cmd_write},
      {"dump", "writing", "dump FILE", "print a sketch that 'write' turns back into the same bytes", cmd_dump},
      {"example", "writing", "example -o OUT", "write the 408-byte walkthrough file (a demo and a fixture)", cmd_example},
      {"replica", "writing", "replica FILE -o OUT", "FILE without its weights: sparse, zeros or the header alone (--data)", cmd_replica},
      {"extract", "writing", "extract FILE -o OUT", "-t GLOB: FILE's keys and those tensors; --vocab-only: the vocabulary-only file", cmd_extract},
      {"corrupt", "writing", "corrupt FILE -o DIR", "broken variants of FILE from its span map, with a manifest of verdicts", cmd_corrupt},
      {"recover", "writing", "recover FILE", "finish an interrupted in-place edit (its journal beside FILE); --discard", cmd_recover},
  };
  return table;
}

namespace {

const char* kExitStatus =
    "exit status:\n"
    "  0  success\n"
    "  1  an input is refused: a model, patch, sketch, template, conversation or\n"
    "     tokenizer_config.json that is malformed or over a cap; a key, block, tensor or\n"
    "     template the command names that the file lacks; an edit the model cannot take\n"
    "     (--set, --special-token and the other edit values are patch entries, refused as\n"
    "     a patch file's are); also diff --exit-code or --quiet: they differ; validate:\n"
    "     errors found\n"
    "  2  usage: an unknown command or option, an option or argument missing or not of\n"
    "     its form (-a notanumber), a file the command line names that is not there or\n"
    "     is not a regular file\n"
    "  3  I/O: a read or write failed (permissions, a full disk, a signal), or memory ran\n"
    "     out (inputs that would need absurd memory are refused by their caps: 1)\n";

// One family's lines: the synopsis in a column of 23, a longer one followed by two spaces.
std::string family_lines(const char* family) {
  std::string out;
  for (const Command& c : commands()) {
    if (std::string(c.family) != family) continue;
    std::string left = c.synopsis;
    left += left.size() <= 22 ? std::string(23 - left.size(), ' ') : "  ";
    std::string summary = c.summary;
    for (size_t nl = 0; (nl = summary.find('\n', nl)) != std::string::npos; nl += 26) summary.insert(nl + 1, 25, ' ');
    out += "  " + left + summary + "\n";
  }
  return out;
}

}  // namespace

std::string ggufkit::cli::usage() {
  return "usage: ggufkit COMMAND [OPTIONS] FILE\n\n"
         "Read, check and rewrite GGUF files (the model format of llama.cpp).\n\n"
         "reading (each with --json):\n" +
         family_lines("reading") + "\nwriting:\n" + family_lines("writing") +
         "\nFILE may be '-' for standard input where a command only reads the header.\n"
         "Run 'ggufkit COMMAND --help' for a command's options, 'ggufkit help TOPIC' for the\n"
         "patch, sketch and JSON formats (topics: patch, sketch, json, templates).\n\n" +
         kExitStatus + "'ggufkit --version' prints the version.\n";
}

std::string ggufkit::cli::command_help(const Command& c) {
  std::ostringstream text;
  std::streambuf* was = std::cout.rdbuf(text.rdbuf());
  try {
    c.run({"--help"});
  } catch (...) {
    std::cout.rdbuf(was);
    throw;
  }
  std::cout.rdbuf(was);
  return text.str();
}

namespace {

// Under --json an error is JSON too, on standard output where the answer would have been.
bool wants_json(const std::vector<std::string>& args) {
  return std::find(args.begin(), args.end(), "--json") != args.end();
}

void print_error_json(const char* kind, int code, const std::string& file, const std::optional<uint64_t>& offset,
                      const std::string& field, const std::string& message, const std::optional<NotGguf>& not_gguf = {}) {
  JsonOut j(std::cout);
  auto text_or_null = [&](const std::string& s) {
    if (s.empty()) j.null();
    else j.str(s);
  };
  j.object([&] {
    j.key("error").object([&] {
      j.key("kind").str(kind).key("exit").num(code).key("file");
      text_or_null(file);
      j.key("offset");
      if (offset) j.num(*offset);
      else j.null();
      j.key("field");
      text_or_null(field);
      j.key("message").str(message);
      if (not_gguf)  // what the file is instead
        j.key("not_gguf").object([&] { j.key("kind").str(not_gguf->kind).key("what").str(not_gguf->what).key("remedy").str(not_gguf->remedy); });
    });
  });
}

// The exit status of an error: its kind, except that an input the command line names
// (FILE, --patch P, --render=C) which is not there is a usage error like a bad value, not
// an I/O error: the caller's mistake, found on opening it for reading. (An output that a
// failed write took away again is no input: it stays an I/O error.)
int exit_code(const Error& e, const std::vector<std::string>& args) {
  if (e.kind != Error::Kind::io || e.file.empty() || e.message.rfind("cannot open for reading", 0) != 0) return e.exit_code();
  struct stat st {};
  if (stat_path(e.file, st) == 0 || (errno != ENOENT && errno != ENOTDIR)) return e.exit_code();
  for (const std::string& a : args) {
    size_t eq = a.size() > e.file.size() ? a.size() - e.file.size() - 1 : std::string::npos;
    if (a == e.file || (eq != std::string::npos && a[0] == '-' && a[eq] == '=' && a.compare(eq + 1, std::string::npos, e.file) == 0))
      return 2;
  }
  return e.exit_code();
}

}  // namespace

int main(int argc, char** argv) {
  // One malloc arena for every thread: glibc reserves 64 MiB of address space for each
  // extra one, which the few small buffers of the helper threads never need and which
  // would count against a memory limit (ulimit -v) the header's size sets.
  mallopt(M_ARENA_MAX, 1);
  // Helper threads (the verifier, the header's re-read) get 4 MiB stacks, not the 8 MiB of
  // RLIMIT_STACK (32 when unlimited): their address space counts against that limit too.
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) == 0) {
    pthread_attr_setstacksize(&attr, 4u << 20);
    pthread_setattr_default_np(&attr);
    pthread_attr_destroy(&attr);
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "--version" || args[0] == "version")) {
    std::cout << "ggufkit " << GGUFKIT_VERSION << "\n";
    return 0;
  }
  if (!args.empty() && args[0] == "help") return cmd_help({args.begin() + 1, args.end()});
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << usage();
    return args.empty() ? 2 : 0;
  }
  std::string cmd = args[0];
  args.erase(args.begin());
  ::signal(SIGXFSZ, SIG_IGN);  // past a file size limit, write() fails with EFBIG and we clean up
  // The key registry (2 ms of YAML) is parsed while the command reads its file: nearly
  // every command's rules ask for it, and the first to ask would wait for the whole parse.
  // (Its failure is the asker's to report; the future waits for it at the end of main.)
  std::future<void> registry;
  try {
    registry = std::async(std::launch::async, [] { (void)Registry::builtin(); });
  } catch (const std::exception&) {  // no thread: the first asker parses it
  }
  try {
    for (const Command& c : commands())
      if (cmd == c.name) return c.run(args);
    std::string hint;
    for (const std::string& n : similar_names(cmd)) hint += (hint.empty() ? "; did you mean " : " or ") + ("'" + n + "'");
    std::cerr << "ggufkit: unknown command '" << terminal_name(cmd) << "'" << (hint.empty() ? "" : hint + "?")
              << "\nRun 'ggufkit --help' for the list of commands.\n";
    return 2;
  } catch (const Error& library) {
    Error e(library.kind, library.file, library.offset, cli_words(library.field), cli_words(library.message));
    e.not_gguf = library.not_gguf;
    const int code = exit_code(e, args);
    if (wants_json(args)) {
      static const char* kinds[] = {"", "format", "usage", "io"};
      print_error_json(kinds[static_cast<int>(e.kind)], code, e.file, e.offset, e.field, e.message, e.not_gguf);
      return code;
    }
    // The message names files, keys and tensors as they are: nothing in it may act on a terminal.
    std::cerr << "ggufkit: error: " << terminal_text(e.what()) << "\n";
    return code;
  } catch (const po::error& e) {
    if (wants_json(args)) {
      print_error_json("usage", 2, "", std::nullopt, "", e.what());
      return 2;
    }
    std::cerr << terminal_text("ggufkit " + cmd + ": " + e.what() + " (see 'ggufkit " + cmd + " --help')") << "\n";
    return 2;
  } catch (const std::bad_alloc&) {  // the machine's limit (sizes an input claims are capped before they are allocated)
    std::cerr << "ggufkit: error: out of memory\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "ggufkit: internal error: " << terminal_text(e.what()) << "\n";
    return 1;
  }
}
