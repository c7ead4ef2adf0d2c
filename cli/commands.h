#pragma once
// The table of commands, as git's builtin/ has: dispatch, `ggufkit --help`, the man page
// and the shell completion all come from it. One file per family of commands.
#include <string>
#include <vector>

namespace ggufkit::cli {

using Run = int (*)(const std::vector<std::string>& args);

struct Command {
  const char* name;
  const char* family;    // "reading" or "writing": the usage's two lists
  const char* synopsis;  // "show FILE": the usage's left column
  const char* summary;   // one line (a longer one wraps with "\n" as the usage shows it)
  Run run;
};
const std::vector<Command>& commands();

// `ggufkit --help`, from the table.
std::string usage();
// What `ggufkit COMMAND --help` prints.
std::string command_help(const Command& c);
// The commands (and help topics) at the fewest edits from `word`, two at most, or that
// `word` begins: "did you mean show?".
std::vector<std::string> similar_names(const std::string& word, bool with_topics = false);
// ggufkit help [COMMAND | TOPIC | --man | --completion] (cli/help.cpp).
int cmd_help(const std::vector<std::string>& args);

// Reading (cli/inspect.cpp, cli/template.cpp).
int cmd_show(const std::vector<std::string>& args);
int cmd_meta(const std::vector<std::string>& args);
int cmd_get(const std::vector<std::string>& args);
int cmd_template(const std::vector<std::string>& args);
int cmd_tensors(const std::vector<std::string>& args);
int cmd_stack(const std::vector<std::string>& args);
int cmd_layer(const std::vector<std::string>& args);
int cmd_account(const std::vector<std::string>& args);
int cmd_tensor(const std::vector<std::string>& args);
int cmd_diff(const std::vector<std::string>& args);
int cmd_hash(const std::vector<std::string>& args);
int cmd_validate(const std::vector<std::string>& args);
int cmd_map(const std::vector<std::string>& args);
// Tokens (cli/tokenize.cpp).
int cmd_tokenize(const std::vector<std::string>& args);
int cmd_detokenize(const std::vector<std::string>& args);
// Editing (cli/edit.cpp).
int cmd_rewrite(const std::vector<std::string>& args);
int cmd_edit(const std::vector<std::string>& args);
int cmd_extract_tensors(const std::vector<std::string>& args);  // extract without --vocab-only
int cmd_realign(const std::vector<std::string>& args);
int cmd_convert(const std::vector<std::string>& args);
int cmd_recover(const std::vector<std::string>& args);
// Sets (cli/sets.cpp).
int cmd_split(const std::vector<std::string>& args);
int cmd_merge(const std::vector<std::string>& args);
// Sketches (cli/sketch.cpp).
int cmd_write(const std::vector<std::string>& args);
int cmd_dump(const std::vector<std::string>& args);
int cmd_example(const std::vector<std::string>& args);
// Fixtures (cli/fixture.cpp, cli/corrupt.cpp).
int cmd_replica(const std::vector<std::string>& args);
int cmd_extract(const std::vector<std::string>& args);
int cmd_corrupt(const std::vector<std::string>& args);

}  // namespace ggufkit::cli
