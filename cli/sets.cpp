// The shard-set commands: split and merge, through ggufkit::split and ggufkit::merge.
#include <cstdio>
#include <iostream>

#include "ggufkit/edit.h"
#include "ggufkit/text.h"
#include "commands.h"
#include "common.h"
#include "json.h"

namespace ggufkit::cli {

namespace {

void print_written(const std::vector<WrittenFile>& rs, bool json) {
  if (json) {
    JsonOut j(std::cout);
    j.object([&] {
      j.key("files").array([&] {
        for (const WrittenFile& f : rs)
          j.object([&] {
            j.key("file").str(f.path).key("tensors").num(f.tensors).key("file_size").num(f.file_size);
            j.key("tensors_verified").num(f.tensors_verified);
          });
      });
    });
    return;
  }
  for (size_t i = 0; i < rs.size(); ++i)
    std::printf("%s: %zu tensors, %llu bytes\n", rs[i].path.c_str(), rs[i].tensors,
                static_cast<unsigned long long>(rs[i].file_size));
}

}  // namespace

int cmd_split(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "the model (a file, or any shard of a set)")(
      "output,o", po::value<std::string>()->required(), "PREFIX: the shards are PREFIX-00001-of-0000N.gguf, ...")(
      "max-tensors", po::value<std::string>(), "start a new shard every N tensors")(
      "max-size", po::value<std::string>(), "start a new shard before its tensor bytes pass SIZE (M, G, MiB, GiB)")(
      "metadata-only-first", po::bool_switch(), "shard 1 holds the keys only, no tensor (a template fix then costs its size)")(
      "no-verify", po::bool_switch(), "skip re-reading the written tensor data (headers are still checked)")(
      "force", po::bool_switch(), "replace shard files that exist")("json", po::bool_switch(), "print the result as JSON");
  quiet_option(desc.add_options());
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit split MODEL -o PREFIX (--max-tensors N | --max-size SIZE) [--metadata-only-first]\n\n"
                  "Writes the model as a shard set, by llama.cpp's gguf-split convention: files\n"
                  "PREFIX-00001-of-0000N.gguf ..., shard 1 with every key of the model and the others\n"
                  "with split.no, split.tensors.count and split.count only. A new shard starts every\n"
                  "N tensors, or before the next tensor (padded to 32) would take a shard's tensor\n"
                  "bytes past SIZE (M = 10^6 and G = 10^9 bytes, as llama.cpp; also MiB, GiB). At\n"
                  "alignment 32 the files are byte for byte what llama-gguf-split writes; a model at\n"
                  "another alignment keeps it in every shard. Every shard is written and verified\n"
                  "before any is put in place: a failure leaves none of them.");
  if (!vm) return 0;
  apply_quiet(*vm);
  SplitRequest req;
  if (vm->count("max-tensors") == vm->count("max-size")) throw_usage("give one of --max-tensors N and --max-size SIZE");
  if (vm->count("max-tensors")) {
    std::string t = (*vm)["max-tensors"].as<std::string>();
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos || std::stoull(t) == 0)
      throw_usage("--max-tensors expects a number of tensors, at least 1; found '" + t + "'");
    req.max_tensors = std::stoull(t);
  } else {
    req.max_bytes = parse_size((*vm)["max-size"].as<std::string>());
    if (req.max_bytes == 0) throw_usage("--max-size must be more than 0 bytes");
  }
  req.metadata_only_first = (*vm)["metadata-only-first"].as<bool>();
  req.input = (*vm)["file"].as<std::string>();
  req.prefix = (*vm)["output"].as<std::string>();
  req.write = write_options(!(*vm)["no-verify"].as<bool>(), (*vm)["force"].as<bool>());
  req.context = cli_context();
  terminal_progress(req.context);
  print_written(split(req), (*vm)["json"].as<bool>());
  return 0;
}

int cmd_merge(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "any shard of the set")(
      "output,o", po::value<std::string>()->required(), "the single file to write")(
      "no-verify", po::bool_switch(), "skip re-reading the written tensor data (the header is still checked)")(
      "force", po::bool_switch(), "replace OUT if it exists")("json", po::bool_switch(), "print the result as JSON");
  quiet_option(desc.add_options());
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit merge SHARD -o OUT\n\n"
                  "Writes a shard set as one file: shard 1's keys without split.no, split.count and\n"
                  "split.tensors.count, and every shard's tensors in order, so that merging what\n"
                  "'ggufkit split' wrote gives back the file byte for byte. (llama.cpp's merge keeps\n"
                  "the three keys, with split.count 0.) The set is checked first: every shard there,\n"
                  "numbered and counted as its name says.");
  if (!vm) return 0;
  apply_quiet(*vm);
  MergeRequest req{(*vm)["file"].as<std::string>(), (*vm)["output"].as<std::string>(),
                   write_options(!(*vm)["no-verify"].as<bool>(), (*vm)["force"].as<bool>()), cli_context()};
  terminal_progress(req.context);
  print_written(merge(req), (*vm)["json"].as<bool>());
  return 0;
}


}  // namespace ggufkit::cli
