#pragma once
// What every command shares: option parsing with --help, loading a file, JSON values.
#include <boost/program_options.hpp>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ggufkit/edit.h"
#include "ggufkit/prompt.h"
#include "ggufkit/scan.h"
#include "ggufkit/shards.h"

namespace ggufkit::cli {

namespace po = boost::program_options;

// Parses a command's options; prints the help and returns nullopt for --help.
std::optional<po::variables_map> parse(const std::vector<std::string>& args, po::options_description& desc,
                                       const po::positional_options_description& pos, const std::string& help);

// A file, or "-" for a header read from standard input.
Scanned load(const std::string& path);

// What a reading command reads (open_model), "-" from standard input.
using Loaded = ModelView;
ModelView load_model(const std::string& path, bool shard_only);

std::string string_value(const Model& m, const char* key);

// The shape every reading command shares: one FILE and --json.
struct ReadArgs {
  std::string file;
  bool json = false;
  bool shard_only = false;  // --shard-only: the named shard alone, not its set
};
std::optional<ReadArgs> read_args(const std::vector<std::string>& args, const std::string& help, const char* json_help);

// map --html: a self-contained page drawing each file's spans to scale (map_html.cpp).
struct MapFile {
  std::string name;
  Layout layout;
  uint64_t file_size = 0;
};
std::string map_html(const std::vector<MapFile>& files);

// A value as JSON, in full: numbers as numbers (nan and inf as strings), strings that
// are not UTF-8 as {"hex": ...}, arrays as lists.
std::string value_json(const Value& v);
void value_json(std::ostream& out, const Value& v);  // written as it is made: arrays may be large

// "ggufkit: note: FILE: MESSAGE" on standard error: the library's notes, and the command line's.
void print_note(const std::string& file, const std::string& message);
// A library message as the command line says it: the request fields it names (`force`,
// `allow_broken`) as the flags that set them (--force, --allow-broken).
std::string cli_words(std::string_view text);
// A finding's fix as one can paste it: the rule book writes FILE for the model, here the
// path, quoted for a shell where it needs it. Empty when it has none.
std::string fix_text(const Finding& f, const std::string& file);
class JsonOut;
// A token's piece quoted for a terminal: JSON's escapes, and \xNN for bytes that are not
// UTF-8 (a byte token's piece is often half a character).
std::string piece_quoted(const std::string& piece);
// The same for a piece a list shows cut (Vocab::shown_piece): "... (cut at N bytes)" after it.
std::string shown_quoted(const std::string& piece, bool cut);
// In JSON: a string, or {"hex": "..."} when it is not UTF-8.
void piece_json(JsonOut& j, const std::string& piece);
// Tokens one a line, as tokenize prints them, llama.cpp's special ones marked:
//    32010 -> "<|user|>"  (control)
std::string token_lines(const std::vector<ChatToken>& tokens);
// A finding's token ids and fix in JSON ("ids": [...], "fix": "..."), where it has them.
void finding_extras_json(JsonOut& j, const Finding& f, const std::string& file);

// The options of every command that writes a model. Once the library starts writing,
// signals that would kill a write half-way instead stop it cleanly.
WriteOptions write_options(bool verify, bool force);
// --shard-only, declared once for every command that reads a model: appended to a chain
// of add_options() where it falls in --help; `help` says it in the command's terms.
inline constexpr const char* kShardOnlyHelp = "a shard alone, not the model its set holds";
po::options_description_easy_init shard_only_option(po::options_description_easy_init options, const char* help = kShardOnlyHelp);
bool shard_only(const po::variables_map& vm);

// -q/--quiet, declared once for every command that writes: appended to a chain of
// add_options(); apply_quiet, after parsing, makes it so.
po::options_description_easy_init quiet_option(po::options_description_easy_init options);
// With --quiet: no progress line, and (unless --json, whose answer is the point) standard
// output goes to /dev/null. Notes and errors still go to standard error (a note may say
// what became of a link or an owner); the exit code is the same. With --dry-run or --map,
// which only print, it is a usage error.
void apply_quiet(const po::variables_map& vm);

// A command's context: Ctrl-C cancels, notes go to standard error, and the lock timeout,
// the render time limit and the template clock come from GGUFKIT_LOCK_TIMEOUT,
// GGUFKIT_RENDER_TIME_LIMIT and SOURCE_DATE_EPOCH.
Context cli_context();

// On a terminal, a line on standard error saying how far a job of more than `at_least` bytes
// is ("ggufkit: DOING 1.20 GB of 4.70 GB (25%)", MB below a GB); nothing (an empty function)
// elsewhere. 64 MiB is about a second of reading; slower jobs (tokenizing) give less.
std::function<void(uint64_t, uint64_t)> progress_line(const char* doing, uint64_t at_least = 64u << 20);
// progress_line("writing") as the writing jobs' progress: each file of more than 64 MiB written.
void terminal_progress(Context& ctx);

// The span map: text with a closing total, or the documented JSON.
void print_map(const Layout& L, uint64_t file_size, bool json, bool header_only = false);
void map_json(JsonOut& j, const Layout& L, uint64_t file_size);  // the JSON map as one value

// SIZE as llama.cpp's splitter takes it: N, or N followed by M, G (10^6, 10^9), MiB or GiB.
uint64_t parse_size(const std::string& text);

}  // namespace ggufkit::cli
