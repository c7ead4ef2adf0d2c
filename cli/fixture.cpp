// replica and extract: fixtures made from a model's header (the library's fixture.h).
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "common.h"
#include "ggufkit/fixture.h"
#include "ggufkit/text.h"
#include "json.h"

namespace ggufkit::cli {

int cmd_replica(const std::vector<std::string>& args) {
  po::options_description desc("options");
  shard_only_option(desc.add_options()("file", po::value<std::string>()->required(), "the model, a header exemplar, or any shard of a set")(
      "output,o", po::value<std::string>()->required(), "the replica (for a set: PREFIX, as split's -o)")(
      "data", po::value<std::string>()->default_value("sparse"), "sparse | zeros | none (see above)"), "the named shard alone, not its whole set")(
      "force", po::bool_switch(), "replace OUT if it exists")("json", po::bool_switch(), "print the result as JSON");
  quiet_option(desc.add_options());
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit replica FILE -o OUT [--data sparse|zeros|none]\n\n"
                  "Writes FILE without its weights, in time that goes with its header, never its data:\n"
                  "  sparse  FILE's size and FILE's header byte for byte; every byte after the data\n"
                  "          start is zero and a hole, so the file takes its header's room on disk.\n"
                  "          Zero is a valid value of every ggml type: llama.cpp loads and runs it.\n"
                  "  zeros   the same with the zeros written (file systems without holes, archives)\n"
                  "  none    the header alone, ending at the data start: a header exemplar. show, meta,\n"
                  "          get, tensors, stack, layer, account, map and validate read it as the\n"
                  "          model, and an edit in place that fits its header edits it; what needs\n"
                  "          tensor bytes refuses it. 'replica EXEMPLAR -o OUT'\n"
                  "          makes the full-size sparse file again, the header identical.\n"
                  "A file that ends exactly at its data start is an exemplar to every command: a\n"
                  "download cut exactly there cannot be told from one (neither holds a tensor byte).\n"
                  "Given a shard, the whole set: PREFIX-00001-of-0000N.gguf, ...");
  if (!vm) return 0;
  apply_quiet(*vm);
  ReplicaRequest req;
  req.input = (*vm)["file"].as<std::string>();
  req.output = (*vm)["output"].as<std::string>();
  const std::string data = (*vm)["data"].as<std::string>();
  if (data == "sparse") req.data = ReplicaData::sparse;
  else if (data == "zeros") req.data = ReplicaData::zeros;
  else if (data == "none") req.data = ReplicaData::none;
  else throw_usage("--data " + data + ": expected sparse, zeros or none");
  req.shard_only = shard_only(*vm);
  req.write = write_options(false, (*vm)["force"].as<bool>());
  req.context = cli_context();
  terminal_progress(req.context);
  ReplicaReport r = replica(req);
  if ((*vm)["json"].as<bool>()) {
    JsonOut j(std::cout);
    j.object([&] {
      j.key("data").str(replica_data_name(req.data)).key("from_exemplar").boolean(r.from_exemplar);
      j.key("files").array([&] {
        for (const ReplicaFile& f : r.files)
          j.object([&] {
            j.key("file").str(f.file.path).key("source").str(f.source).key("file_size").num(f.file.file_size);
            j.key("data_offset").num(f.file.data_offset).key("header_bytes").num(f.header_bytes);
            j.key("tensors").num(f.file.tensors).key("keys").num(f.file.keys).key("disk_bytes").num(f.disk_bytes);
          });
      });
    });
    std::cout << "\n";
    return 0;
  }
  for (const ReplicaFile& f : r.files)
    std::printf("%s: %llu bytes (%s), header %llu bytes copied, %zu tensors, %llu bytes on disk\n", terminal_name(f.file.path).c_str(),
                static_cast<unsigned long long>(f.file.file_size),
                req.data == ReplicaData::none ? "a header exemplar" : req.data == ReplicaData::sparse ? "data a hole" : "data zeros",
                static_cast<unsigned long long>(f.header_bytes), f.file.tensors, static_cast<unsigned long long>(f.disk_bytes));
  return 0;
}

int cmd_extract(const std::vector<std::string>& args) {
  if (std::find(args.begin(), args.end(), "--vocab-only") == args.end()) return cmd_extract_tensors(args);
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "the model (or any shard of a set)")(
      "vocab-only", po::bool_switch(), "the vocabulary-only file (the one kind of extract there is)")(
      "output,o", po::value<std::string>()->required(), "the file to write")(
      "force", po::bool_switch(), "replace OUT if it exists")("json", po::bool_switch(), "print the result as JSON");
  quiet_option(desc.add_options());
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit extract FILE --vocab-only -o OUT\n\n"
                  "Writes the vocabulary-only file llama.cpp loads with vocab_only (as its\n"
                  "models/ggml-vocab-*.gguf): general.architecture and general.name, the\n"
                  "architecture's keys (ARCH.*: the hyperparameters llama.cpp reads before the\n"
                  "vocabulary, some of them required) and every tokenizer.* key, byte for byte and\n"
                  "in FILE's order; no tensors. llama.cpp tokenizes with it exactly as with FILE.");
  if (!vm) return 0;
  apply_quiet(*vm);
  if (!(*vm)["vocab-only"].as<bool>()) throw_usage("extract: say what to extract: --vocab-only");
  ExtractRequest req;
  req.input = (*vm)["file"].as<std::string>();
  req.output = (*vm)["output"].as<std::string>();
  req.write = write_options(true, (*vm)["force"].as<bool>());
  req.context = cli_context();
  ExtractReport r = extract_vocab(req);
  if ((*vm)["json"].as<bool>()) {
    JsonOut j(std::cout);
    j.object([&] {
      j.key("file").str(r.file.path).key("file_size").num(r.file.file_size).key("keys").num(r.keys_kept);
      j.key("tensors_dropped").num(r.tensors_dropped);
      j.key("dropped").array([&] {
        for (const std::string& k : r.dropped) j.str(k);
      });
    });
    std::cout << "\n";
    return 0;
  }
  std::printf("%s: %llu bytes, %zu keys kept, %zu keys and %zu tensors left out\n", terminal_name(r.file.path).c_str(),
              static_cast<unsigned long long>(r.file.file_size), r.keys_kept, r.keys_dropped, r.tensors_dropped);
  for (const std::string& k : r.dropped) std::printf("  left out: %s\n", terminal_name(k).c_str());
  return 0;
}

}  // namespace ggufkit::cli
