#pragma once
// What every command shares: option parsing with --help, loading a file, JSON values.
#include <boost/program_options.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ggufkit/jinja_render.h"
#include "ggufkit/scan.h"
#include "ggufkit/shards.h"

namespace ggufkit::cli {

namespace po = boost::program_options;

// Parses a command's options; prints the help and returns nullopt for --help.
std::optional<po::variables_map> parse(const std::vector<std::string>& args, po::options_description& desc,
                                       const po::positional_options_description& pos, const std::string& help);

// A file, or "-" for a header read from standard input.
Scanned load(const std::string& path);

// What a reading command reads: the model FILE holds, or the whole set FILE is a shard
// of (unless shard_only). For a set: the set's model, shard 1's layout with each tensor's
// offset in its own shard's data section, the files' sizes added up.
struct Loaded {
  Scanned s;
  size_t files = 1;
  std::vector<uint32_t> shard;  // each tensor's shard, from 1 (a set only)
};
Loaded load_model(const std::string& path, bool shard_only);

// The set FILE is a shard of, when FILE is named as a shard (and not shard_only).
std::optional<ShardSet> set_of(const std::string& path, bool shard_only);

std::string string_value(const Model& m, const char* key);

// The shape every reading command shares: one FILE and --json.
struct ReadArgs {
  std::string file;
  bool json = false;
  bool shard_only = false;  // --shard-only: the named shard alone, not its set
};
std::optional<ReadArgs> read_args(const std::vector<std::string>& args, const std::string& help, const char* json_help);

// A value as JSON, in full: numbers as numbers (nan and inf as strings), strings that
// are not UTF-8 as {"hex": ...}, arrays as lists.
std::string value_json(const Value& v);
void value_json(std::ostream& out, const Value& v);  // written as it is made: arrays may be large

// A conversation to render a template with, from a JSON file (or - for standard input):
// messages, optionally tools, documents, add_generation_prompt and other variables. A
// format Error (exit 1) names the file and the byte when it is not.
jinja::Value read_conversation(const std::string& path);
// The prompt the template `text` (stored under `key` of `file`) gives for `conversation`,
// with the model's bos and eos tokens, rendered as transformers' apply_chat_template does.
// A template that does not parse, that raises or that hits a sandbox limit is a format
// Error naming the file, the key and the template's line.
std::string render_prompt(const std::string& file, const std::string& key, const std::string& text, const Model& m,
                          const jinja::Value& conversation);

// A unified diff of two texts by lines (3 lines of context), as `diff -u` writes it;
// empty when they are the same.
std::string unified_diff(const std::string& a, const std::string& b, const std::string& name_a, const std::string& name_b);

// The reading commands (cli/inspect.cpp).
int cmd_show(const std::vector<std::string>& args);
int cmd_meta(const std::vector<std::string>& args);
int cmd_tensors(const std::vector<std::string>& args);
int cmd_stack(const std::vector<std::string>& args);
int cmd_layer(const std::vector<std::string>& args);
int cmd_account(const std::vector<std::string>& args);
int cmd_tensor(const std::vector<std::string>& args);
int cmd_diff(const std::vector<std::string>& args);
int cmd_hash(const std::vector<std::string>& args);
int cmd_validate(const std::vector<std::string>& args);
int cmd_get(const std::vector<std::string>& args);
int cmd_template(const std::vector<std::string>& args);

}  // namespace ggufkit::cli
