// The program: what it prints, its exit codes, and what it refuses.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "helpers.h"

using namespace testing_helpers;

namespace {
std::string example_file() {
  static std::string path = [] {
    std::string p = temp_path("cli-example.gguf");
    CliRun r = run_cli("example -o " + p);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, p + ": 408 bytes\n");
    return p;
  }();
  return path;
}
}  // namespace

TEST(Cli, ShowPrintsTheSummaryOfTheExample) {
  CliRun r = run_cli("show " + example_file());
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* line : {"version       3 (little-endian)\n", "tensors       1\n", "metadata      5 keys\n",
                           "alignment     64\n", "data start    384\n", "file size     408\n",
                           "architecture  counts\n", "name          Counts walkthrough file\n",
                           "f32               1              6               24  100.0% "
                           "\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588"
                           "\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\n",
                           "bits per weight 32.000\n"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
}

TEST(Cli, ShowJsonParsesAndCarriesTheNumbers) {
  CliRun r = run_cli("show --json " + example_file());
  ASSERT_EQ(r.code, 0) << r.err;
  YAML::Node j = YAML::Load(r.out);  // JSON is YAML
  EXPECT_EQ(j["version"].as<int>(), 3);
  EXPECT_EQ(j["alignment"].as<int>(), 64);
  EXPECT_EQ(j["data_offset"].as<int>(), 384);
  EXPECT_EQ(j["file_size"].as<int>(), 408);
  EXPECT_EQ(j["tensor_bytes"].as<int>(), 24);
  EXPECT_EQ(j["types"][0]["type"].as<std::string>(), "f32");
}

TEST(Cli, MapListsEverySpanAndEndsWithTheFileSize) {
  CliRun r = run_cli("map " + example_file());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("         327           57  padding"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("         384           24  tensor_data    tensor[0] blk.0.counts.weight"), std::string::npos);
  EXPECT_NE(r.out.find("total 408 bytes in 22 spans; file size 408\n"), std::string::npos) << r.out;
}

TEST(Cli, MapJsonSpansAreContiguousAndSumToTheFileSize) {
  CliRun r = run_cli("map --json " + example_file());
  ASSERT_EQ(r.code, 0) << r.err;
  YAML::Node j = YAML::Load(r.out);
  EXPECT_EQ(j["file_size"].as<uint64_t>(), 408u);
  EXPECT_EQ(j["alignment"].as<uint64_t>(), 64u);
  EXPECT_EQ(j["data_offset"].as<uint64_t>(), 384u);
  uint64_t at = 0;
  ASSERT_EQ(j["spans"].size(), 22u);
  for (const auto& s : j["spans"]) {
    EXPECT_EQ(s["offset"].as<uint64_t>(), at);
    at += s["size"].as<uint64_t>();
  }
  EXPECT_EQ(at, 408u);
  EXPECT_EQ(j["spans"][4]["kind"].as<std::string>(), "kv_key");
  EXPECT_EQ(j["spans"][4]["name"].as<std::string>(), "kv[0] general.architecture");
  EXPECT_EQ(j["spans"][21]["kind"].as<std::string>(), "tensor_data");
}

TEST(Cli, ShowReadsAHeaderFromStandardInput) {
  CliRun piped = run_cli("show - ", "cat " + example_file() + " | ");
  ASSERT_EQ(piped.code, 0) << piped.err;
  EXPECT_NE(piped.out.find("data start    384\n"), std::string::npos) << piped.out;
  EXPECT_NE(piped.out.find("file          -\n"), std::string::npos) << piped.out;
}

TEST(Cli, RewriteRefusesToWriteOverItsOwnInput) {
  std::string in = temp_path("own-input.gguf");
  std::filesystem::copy_file(example_file(), in, std::filesystem::copy_options::overwrite_existing);
  auto before = read_file_bytes(in);
  CliRun r = run_cli("rewrite " + in + " -o " + in);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("refusing to write over the input " + in + ": " + in + " is the same file; use --in-place"),
            std::string::npos) << r.err;
  std::string link = temp_path("own-input-link.gguf");
  std::filesystem::remove(link);
  std::filesystem::create_symlink(in, link);
  r = run_cli("rewrite " + in + " -o " + link);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(read_file_bytes(in), before);
  EXPECT_TRUE(std::filesystem::is_symlink(link));
}

TEST(Cli, RewriteWritesAFreshIdenticalFileAndLeavesNoTemporaryFiles) {
  std::string dir = temp_path("rewrite-dir");
  std::filesystem::create_directories(dir);
  CliRun r = run_cli("rewrite " + example_file() + " -o " + dir + "/out.gguf");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, dir + "/out.gguf: 408 bytes, 1 tensors, 5 keys, data start 384; 1 tensors verified\n");
  EXPECT_EQ(read_file_bytes(dir + "/out.gguf"), read_file_bytes(example_file()));
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(Cli, ExitCodesSayWhatKindOfFailureItWas) {
  CliRun missing = run_cli("show " + temp_path("no-such-file.gguf"));
  EXPECT_EQ(missing.code, 2);  // a file the command line names that is not there
  EXPECT_NE(missing.err.find("no-such-file.gguf: cannot open for reading: No such file or directory"),
            std::string::npos) << missing.err;
  CliRun dir = run_cli("show " + temp_dir());
  EXPECT_EQ(dir.code, 2);  // a folder where a file belongs is the caller's mistake
  EXPECT_NE(dir.err.find(temp_dir() + ": is a folder, not a regular file"), std::string::npos) << dir.err;
  EXPECT_EQ(run_cli("frobnicate x").code, 2);
  CliRun no_file = run_cli("show");
  EXPECT_EQ(no_file.code, 2);
  EXPECT_NE(no_file.err.find("see 'ggufkit show --help'"), std::string::npos) << no_file.err;
  EXPECT_EQ(run_cli("map a b c").code, 2);
  EXPECT_EQ(run_cli("").code, 2);
  CliRun help = run_cli("--help");
  EXPECT_EQ(help.code, 0);
  for (const char* rule : {"  1  an input is refused: a model, patch, sketch, template, conversation or\n",
                           "  2  usage: an unknown command or option, an option or argument missing or not of\n",
                           "  3  I/O: a read or write failed (permissions, a full disk, a signal), or memory ran\n"})
    EXPECT_NE(help.out.find(rule), std::string::npos) << help.out;
  CliRun map_help = run_cli("map --help");
  EXPECT_EQ(map_help.code, 0);
  EXPECT_NE(map_help.out.find("tensor_padding"), std::string::npos);
  CliRun rewrite_no_out = run_cli("rewrite " + example_file());
  EXPECT_EQ(rewrite_no_out.code, 2);
}

TEST(Cli, AMissingOrBadArgumentIsNamedAsTheUsageLineNamesIt) {
  struct Case {
    std::string args, err;
  };
  std::string f = example_file();
  for (const Case& c : {Case{"edit", "ggufkit edit: FILE is missing (see 'ggufkit edit --help')\n"},
                        Case{"diff " + f, "ggufkit diff: B is missing (see 'ggufkit diff --help')\n"},
                        Case{"tensor " + f, "ggufkit tensor: NAME is missing (see 'ggufkit tensor --help')\n"},
                        Case{"tensor " + f + " x --head abc",
                             "ggufkit tensor: the argument ('abc') for option '--head' is invalid (see 'ggufkit tensor --help')\n"},
                        Case{"realign " + f + " -o x.gguf",
                             "ggufkit realign: the option '--alignment' is required but missing (see 'ggufkit realign --help')\n"}}) {
    SCOPED_TRACE(c.args);
    CliRun r = run_cli(c.args);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, c.err);
    EXPECT_EQ(r.err.find("'--file'"), std::string::npos);
  }
}

// The rule --help and the README state, case by case: 2 for the command line (a bad value,
// a file it names that is not there), 1 for an input's content, 3 for I/O and memory.
TEST(Cli, ExitCodesFollowOneRuleStatedInTheHelp) {
  const std::string f = example_file(), out = temp_path("rule-out.gguf"), gone = temp_path("rule-no-such");
  std::filesystem::remove(gone);
  struct Case {
    std::string args, prefix;
    int code;
    std::string err;
  };
  const std::string bad_conv = temp_path("rule-bad-conv.json");
  std::ofstream(bad_conv) << "{\"m\": [}";
  for (const Case& c : {
           Case{"realign " + f + " -a notanumber -o " + out, "", 2,
                "ggufkit: error: --alignment: expected an integer, found 'notanumber'\n"},
           Case{"realign " + f + " -a 48 -o " + out, "", 2, "ggufkit: error: --alignment: alignment 48 is not a power of two\n"},
           Case{"edit " + f + " --chat-template-file " + gone + " -o " + out, "", 2,
                "ggufkit: error: " + gone + ": cannot open for reading: No such file or directory\n"},
           Case{"edit " + f + " --patch " + gone + " -o " + out, "", 2,
                "ggufkit: error: " + gone + ": cannot open for reading: No such file or directory\n"},
           Case{"edit " + f + " --patch=" + gone + " -o " + out, "", 2,
                "ggufkit: error: " + gone + ": cannot open for reading: No such file or directory\n"},
           Case{"edit " + f + " --set general.name=x --dry-run --render " + gone, "", 2,
                "ggufkit: error: " + gone + ": cannot open for reading: No such file or directory\n"},
           Case{"write " + gone + " -o " + out, "", 2, "ggufkit: error: " + gone + ": cannot open for reading: No such file or directory\n"},
           Case{"edit " + f + " --set general.name=x --dry-run --render " + bad_conv, "", 1,
                "ggufkit: error: " + bad_conv + ": is not a conversation: JSON at byte 7: unexpected '}'\n"},
           Case{"edit " + f + " --set general.name=x --dry-run --render -", "head -c 70000000 /dev/zero | ", 1,
                "ggufkit: error: /dev/stdin: is over the cap of 67108864 bytes\n"},
           Case{"layer " + f + " 7", "", 1, "ggufkit: error: " + f + ": layer: there is no block 7 (the file has 1 blocks)\n"},
           Case{"tensor " + f + " nosuch", "", 1, "ggufkit: error: " + f + ": tensor: there is no tensor named 'nosuch'\n"},
           Case{"tensor " + f + " blk.0.counts.weight --rows 5:9", "", 1,
                "ggufkit: error: " + f + ": tensor blk.0.counts.weight: --rows 5:9 holds no row of the 2 the tensor has\n"},
           Case{"tensor " + f + " blk.0.counts.weight --rows 5:", "", 1,
                "ggufkit: error: " + f + ": tensor blk.0.counts.weight: --rows 5: holds no row of the 2 the tensor has\n"},
           Case{"tensor " + f + " blk.0.counts.weight --rows 1:1", "", 2, "ggufkit: error: --rows 1:1 is an empty range\n"},
       }) {
    SCOPED_TRACE(c.args);
    CliRun r = run_cli(c.args, c.prefix);
    EXPECT_EQ(r.code, c.code);
    EXPECT_EQ(r.err, c.err);
    EXPECT_FALSE(std::filesystem::exists(out));
  }
}

TEST(Cli, RunningOutOfMemoryIsAnIOErrorNotACrash) {
#ifdef GGUFKIT_SANITIZED
  GTEST_SKIP() << "the sanitizers reserve terabytes of address space; ulimit -v cannot apply";
#endif
  // A conversation of 64 MiB (under its cap) from a pipe, read under 56 MiB of address space
  // (the program and its 18 shared libraries take some 50 MiB of it before main).
  CliRun r = run_cli("edit " + example_file() + " --set general.name=x --dry-run --render -",
                     "ulimit -v 57344; head -c 67000000 /dev/zero | ");
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, "ggufkit: error: out of memory\n");
}

// The command table makes the command line humane.
TEST(CliTable, AMistypedCommandGetsTheNearestOneAndExit2) {
  CliRun r = run_cli("shwo x.gguf");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "ggufkit: unknown command 'shwo'; did you mean 'show'?\nRun 'ggufkit --help' for the list of commands.\n");
  r = run_cli("tensos x.gguf");  // two commands one edit away: both
  EXPECT_EQ(r.err, "ggufkit: unknown command 'tensos'; did you mean 'tensors' or 'tensor'?\nRun 'ggufkit --help' for the list of commands.\n");
  r = run_cli("vali x.gguf");  // the start of one
  EXPECT_EQ(r.err, "ggufkit: unknown command 'vali'; did you mean 'validate'?\nRun 'ggufkit --help' for the list of commands.\n");
  r = run_cli("frobnicate x.gguf");  // nothing near: no guess
  EXPECT_EQ(r.err, "ggufkit: unknown command 'frobnicate'\nRun 'ggufkit --help' for the list of commands.\n");
}

TEST(CliTable, AnOptionPrefixIsRefusedNotGuessedButNamed) {
  struct Case {
    const char *args, *err;
  };
  for (const Case& c : {Case{"edit %s --dry --set general.name=x", "ggufkit edit: unrecognised option '--dry'; did you mean '--dry-run'? (see 'ggufkit edit --help')\n"},
                        Case{"show %s --js", "ggufkit show: unrecognised option '--js'; did you mean '--json'? (see 'ggufkit show --help')\n"},
                        Case{"tensor %s token_embd.weight --he 2", "ggufkit tensor: unrecognised option '--he'; did you mean '--head' or '--help'? (see 'ggufkit tensor --help')\n"},
                        Case{"tokenize %s --id 1", "ggufkit tokenize: unrecognised option '--id'; did you mean '--ids'? (see 'ggufkit tokenize --help')\n"},
                        // three edits from anything: no guess
                        Case{"show %s --nope", "ggufkit show: unrecognised option '--nope' (see 'ggufkit show --help')\n"},
                        // --file is FILE's internal name: never offered
                        Case{"show %s --fil", "ggufkit show: unrecognised option '--fil' (see 'ggufkit show --help')\n"},
                        Case{"edit %s --sett=a.b=c --dry-run", "ggufkit edit: unrecognised option '--sett=a.b=c'; did you mean '--set'? (see 'ggufkit edit --help')\n"}}) {
    char line[512];
    std::snprintf(line, sizeof line, c.args, tiny_llama().c_str());
    CliRun r = run_cli(line);
    EXPECT_EQ(r.code, 2) << line;
    EXPECT_EQ(r.err, c.err) << line;
    EXPECT_EQ(r.out, "") << line;
  }
}

// gguf-py's scripts take `--special-token eos '</s>'` and gguf_set_metadata.py `FILE KEY VALUE`;
// the answer is our form, shell-quoted, and the form it gives works.
TEST(CliTable, GgufPyFormsAreAnsweredWithOursAndTheAnswerWorks) {
  const std::string f = tiny_llama();
  struct Case {
    std::string args, err, ours;
  };
  for (const Case& c : {
           Case{"edit " + f + " --special-token eos '</s>' --dry-run",
                "ggufkit edit: too many positional options have been specified on the command line; write it --special-token eos='</s>' (see "
                "'ggufkit edit --help')\n",
                "edit " + f + " --special-token eos='</s>' --dry-run"},
           Case{"edit " + f + " --special-token-id eos 2 --dry-run",
                "ggufkit edit: too many positional options have been specified on the command line; write it --special-token-id eos=2 (see "
                "'ggufkit edit --help')\n",
                "edit " + f + " --special-token-id eos=2 --dry-run"},
           Case{"edit " + f + " general.name 'Tiny one' --dry-run",
                "ggufkit edit: too many positional options have been specified on the command line; write it --set 'general.name=Tiny one' "
                "(see 'ggufkit edit --help')\n",
                "edit " + f + " --set 'general.name=Tiny one' --dry-run"},
           Case{"realign " + f + " 64 --dry-run",
                "ggufkit realign: too many positional options have been specified on the command line; write it --alignment 64 (see "
                "'ggufkit realign --help')\n",
                "realign " + f + " --alignment 64 --dry-run"},
       }) {
    SCOPED_TRACE(c.args);
    CliRun r = run_cli(c.args);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err, c.err);
    CliRun ours = run_cli(c.ours);
    EXPECT_EQ(ours.code, 0) << ours.err;
    EXPECT_NE(ours.out.find("dry run, nothing written"), std::string::npos) << ours.out;
  }
  // the answer changes what was asked: eos by its text, to the token </s> is not
  CliRun unk = run_cli("edit " + f + " --special-token eos '<unk>' --dry-run");
  EXPECT_EQ(unk.err, "ggufkit edit: too many positional options have been specified on the command line; write it --special-token eos='<unk>' "
                     "(see 'ggufkit edit --help')\n");
  EXPECT_NE(run_cli("edit " + f + " --special-token eos='<unk>' --dry-run").out.find("\n  set     tokenizer.ggml.eos_token_id: 2 -> 0\n"),
            std::string::npos);
  // Where the meaning is not plain, no form is offered: words would be dropped, a file
  // taken for an alignment, another command's --set given keys.
  for (const std::string& args : std::vector<std::string>{"edit " + f + " --set general.name My Tiny Model --dry-run", "edit " + f + " --special-token eos a b --dry-run",
                                  "example --arch llama a b", "edit " + f + " a=b c --dry-run"}) {
    SCOPED_TRACE(args);
    CliRun r = run_cli(args);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.err.find("write it"), std::string::npos) << r.err;
  }
  CliRun out = run_cli("realign " + f + " out.gguf -a 64");
  EXPECT_EQ(out.err, "ggufkit realign: too many positional options have been specified on the command line; write it -o out.gguf (see "
                     "'ggufkit realign --help')\n");
}

// A string key's value is the text typed, colons, brackets and braces included; another
// key's is YAML, and an error says it was read so.
TEST(Cli, SetTakesAStringKeysValueAsTypedAndOthersAsYaml) {
  const std::string out = temp_path("set-text.gguf");
  std::filesystem::remove(out);
  const std::string tmpl = "{% for m in messages %}{{ m.content }}{% endfor %}";
  CliRun r = run_cli("edit " + tiny_llama() + " --set 'general.name=Llama: the tiny one' --set 'general.description=[draft] tiny' "
                     "--set llama.context_length=1024 --chat-template '" + tmpl + "' -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(run_cli("get " + out + " general.name").out, "Llama: the tiny one\n");
  EXPECT_EQ(run_cli("get " + out + " general.description").out, "[draft] tiny\n");
  EXPECT_EQ(run_cli("get " + out + " tokenizer.chat_template").out, tmpl + "\n");
  EXPECT_EQ(run_cli("get " + out + " llama.context_length --json").out, "{\"key\": \"llama.context_length\", \"type\": \"u32\", \"value\": 1024}\n");
  // quotes typed are kept, and a note says so
  r = run_cli("edit " + tiny_llama() + " --set 'general.name=\"My Model\"' --dry-run");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("-> \"\\\"My Model\\\"\""), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("the value is stored as given, quotes and all"), std::string::npos) << r.err;
  // a u32 key reads YAML: the error names the value and why
  r = run_cli("edit " + tiny_llama() + " --set llama.block_count=two --dry-run");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "ggufkit: error: command line:1:1: set llama.block_count: expected an integer, found 'two' (llama.block_count is u32 "
                   "in the file, so the value \"two\" was read as YAML)\n");
  // a key new to the file and the registry: YAML, and the text form offered works
  r = run_cli("edit " + tiny_llama() + " --set 'my.note=Llama: tiny' --dry-run");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "ggufkit: error: command line:1:1: set my.note: my.note is a new key whose type its value does not tell; give its type: "
                   "--set-typed my.note=f32:VALUE on the command line, {type: f32, value: ...} in a patch (my.note is a new key, so the "
                   "value \"Llama: tiny\" was read as YAML; as text: --set-typed 'my.note=string:Llama: tiny')\n");
  // a typo of a key the file has: no offer to add the typo as text
  r = run_cli("edit " + tiny_llama() + " --set 'genral.name=Llama: tiny' --dry-run");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("(did you mean general.name?)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("as text"), std::string::npos) << r.err;
  r = run_cli("edit " + tiny_llama() + " --set-typed 'my.note=string:Llama: tiny' --dry-run");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("add     my.note (string): \"Llama: tiny\""), std::string::npos) << r.out;
}

// ggufkit's value forms keep their meaning under --set: {hex:} for bytes (as the UTF-8
// error advises), {file:} for a template; a template's own braces stay text.
TEST(Cli, SetReadsTheValueFormsOfAPatchForAStringKey) {
  const std::string dir = temp_path("set-forms"), out = dir + "/o.gguf", tmpl = dir + "/t.jinja";
  std::filesystem::create_directories(dir);
  std::ofstream(tmpl) << "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}";
  CliRun r = run_cli("edit " + tiny_llama() + " --set 'general.name={hex: \"6869\"}' --set 'tokenizer.chat_template={file: " + tmpl +
                     "}' --set 'general.description={{ not a form }}' -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(run_cli("get " + out + " general.name").out, "hi\n");
  EXPECT_EQ(run_cli("get " + out + " tokenizer.chat_template").out, "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}\n");
  EXPECT_EQ(run_cli("get " + out + " general.description").out, "{{ not a form }}\n");
}

TEST(Cli, SetYamlReadsYamlAndItsErrorsSayHowToQuote) {
  const std::string out = temp_path("set-yaml.gguf");
  std::filesystem::remove(out);
  CliRun r = run_cli("edit " + tiny_llama() + " --set-yaml 'general.name=\"My Model\"' --set-yaml 'general.tags=[a, b]' -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(run_cli("get " + out + " general.name").out, "My Model\n");
  EXPECT_EQ(run_cli("get " + out + " general.tags").out, "a\nb\n");
  std::filesystem::remove(out);
  r = run_cli("edit " + tiny_llama() + " --set-yaml 'general.description=[draft] tiny' -o " + out);
  EXPECT_EQ(r.code, 1);
  const std::string advice = "--set-yaml 'general.description=\"[draft] tiny\"'";
  EXPECT_EQ(r.err, "ggufkit: error: command line (general.description): yaml: expected one document, found more (the value \"[draft] "
                   "tiny\" is read as YAML; to give text, quote it: " + advice + ", or give it with --set, which takes a string key's value as it is)\n");
  EXPECT_FALSE(std::filesystem::exists(out));
  r = run_cli("edit " + tiny_llama() + " " + advice + " -o " + out);  // the advice, pasted
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(run_cli("get " + out + " general.description").out, "[draft] tiny\n");
  r = run_cli("edit " + tiny_llama() + " --set-yaml 'general.name=Llama: the tiny one' --dry-run");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "ggufkit: error: command line:1:1: set general.name: unknown field 'Llama'; expected one of: file, hex (the value \"Llama: "
                   "the tiny one\" is read as YAML; to give text, quote it: --set-yaml 'general.name=\"Llama: the tiny one\"', or give it with "
                   "--set, which takes a string key's value as it is)\n");
  // A line break and two spaces survive the pasted advice (YAML would fold a raw one).
  std::filesystem::remove(out);
  r = run_cli("edit " + tiny_llama() + " --set-yaml \"$(printf 'general.description=[a]\\n  b')\" --dry-run");
  EXPECT_EQ(r.code, 1);
  const std::string broken = "--set-yaml 'general.description=\"[a]\\n  b\"'";
  EXPECT_NE(r.err.find("quote it: " + broken + ", or"), std::string::npos) << r.err;
  ASSERT_EQ(run_cli("edit " + tiny_llama() + " " + broken + " -o " + out).code, 0);
  EXPECT_EQ(run_cli("get " + out + " general.description").out, "[a]\n  b\n");
  // a number that is no number: not a quoting matter
  r = run_cli("edit " + tiny_llama() + " --set-yaml llama.block_count=two --dry-run");
  EXPECT_EQ(r.err, "ggufkit: error: command line:1:1: set llama.block_count: expected an integer, found 'two'\n");
}

TEST(Cli, ATensorNameCutShortGetsTheNamesItBegins) {
  CliRun r = run_cli("tensor " + tiny_llama() + " blk.0.attn_q");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "ggufkit: error: " + tiny_llama() + ": tensor: there is no tensor named 'blk.0.attn_q'; did you mean 'blk.0.attn_q.weight'?\n");
  r = run_cli("tensor " + tiny_llama() + " blk.0.attn");
  EXPECT_EQ(r.err, "ggufkit: error: " + tiny_llama() + ": tensor: there is no tensor named 'blk.0.attn'; did you mean 'blk.0.attn_norm.weight', "
                   "'blk.0.attn_q.weight', 'blk.0.attn_k.weight', 'blk.0.attn_v.weight' or 1 more?\n");
  r = run_cli("tensor " + tiny_llama() + " blk.0.ffn_gate.wieght");  // a swap is one edit
  EXPECT_EQ(r.err, "ggufkit: error: " + tiny_llama() + ": tensor: there is no tensor named 'blk.0.ffn_gate.wieght'; did you mean 'blk.0.ffn_gate.weight'?\n");
}

// An alignment that happens to be larger is info: shown with --verbose; --quiet shows what
// fails the file; the exit code never changes.
TEST(Cli, ValidateShowsInfoWithVerboseAndOnlyFailuresWithQuiet) {
  const std::string info = "info alignment: no general.alignment, so readers use 32; the data happens to be aligned to 128\n";
  CliRun plain = run_cli("validate " + tiny_llama()), verbose = run_cli("validate " + tiny_llama() + " --verbose"),
         quiet = run_cli("validate " + tiny_llama() + " -q");
  EXPECT_EQ(plain.code, 0);
  EXPECT_EQ(verbose.code, 0);
  EXPECT_EQ(quiet.code, 0);
  EXPECT_EQ(plain.out.find("info "), std::string::npos) << plain.out;
  EXPECT_EQ(verbose.out.rfind(info, 0), 0u) << verbose.out;
  EXPECT_EQ(verbose.out.substr(info.size()), plain.out);
  EXPECT_EQ(quiet.out, "");
  const std::string shard = std::string(GGUFKIT_CORPUS) + "/splits/by-count-00002-of-00003.gguf";
  CliRun failing = run_cli("validate " + shard + " --shard-only -q"), strict = run_cli("validate " + shard + " --shard-only -q --strict");
  EXPECT_EQ(failing.code, 1);
  EXPECT_EQ(failing.out, "error missing_architecture: no general.architecture (a string): llama.cpp cannot load the file\n");
  EXPECT_EQ(strict.code, 1);
  EXPECT_EQ(strict.out, failing.out + "warning missing_quantization_version: quantized tensors but no general.quantization_version\n");
  // info that is news about this file is printed without asking: a file cut at its data start
  const std::string cut = temp_path("cut-at-data.gguf");
  {
    std::ifstream in(tiny_llama(), std::ios::binary);
    std::string head(725376, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(cut, std::ios::binary) << head;
  }
  CliRun header = run_cli("validate " + cut);
  EXPECT_EQ(header.code, 0);
  EXPECT_NE(header.out.find("info header_only at byte 725376: "), std::string::npos) << header.out;
  CliRun both = run_cli("validate " + tiny_llama() + " -q -v");
  EXPECT_EQ(both.code, 2);
  EXPECT_EQ(both.err, "ggufkit: error: give one of --quiet and --verbose\n");
}

TEST(CliTable, HelpTopicsPrintTheDocumentsTheProgramCarries) {
  CliRun r = run_cli("help patch");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("# The patch format\n", 0), 0u) << r.out.substr(0, 80);
  r = run_cli("help sketch");
  EXPECT_EQ(r.out.rfind("# ", 0), 0u);
  EXPECT_NE(r.out.find("truncate"), std::string::npos);
  r = run_cli("help json");
  EXPECT_NE(r.out.find("token_id"), std::string::npos);
  r = run_cli("help templates");
  EXPECT_EQ(r.out.rfind("filters: abs attr batch", 0), 0u) << r.out;
  r = run_cli("help validate");  // a command: its own help
  EXPECT_EQ(r.out.rfind("usage: ggufkit validate FILE", 0), 0u);
  r = run_cli("help pach");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "ggufkit help: no command or topic 'pach'; did you mean 'patch'? (see 'ggufkit help --help')\n");
}

TEST(CliTable, TheManPageAndCompletionNameEveryCommand) {
  CliRun man = run_cli("help --man"), comp = run_cli("help --completion");
  ASSERT_EQ(man.code, 0);
  ASSERT_EQ(comp.code, 0);
  EXPECT_EQ(man.out.rfind(".TH GGUFKIT 1 ", 0), 0u);
  std::string names;
  for (const char* c : {"show", "meta", "get", "template", "tensors", "stack", "layer", "account", "tensor", "diff", "hash",
                        "validate", "tokenize", "detokenize", "map", "rewrite", "edit", "realign", "convert", "split", "merge", "write", "dump", "example",
                        "replica", "extract", "corrupt", "recover"}) {
    EXPECT_NE(man.out.find(std::string(".SS ") + c), std::string::npos) << c;
    EXPECT_NE(man.out.find(std::string("usage: ggufkit ") + c), std::string::npos) << c;
    names += (names.empty() ? "" : " ") + std::string(c);
  }
  EXPECT_NE(comp.out.find("compgen -W \"" + names + " help --help --version\""), std::string::npos) << comp.out;
  EXPECT_NE(comp.out.find("complete -o filenames -F _ggufkit ggufkit"), std::string::npos);
}

// Each shell's completion, run in that shell: a command from its first letters, the
// options its help names, a help topic, and files elsewhere. zsh's compadd and _files are
// stood in for by functions that print what they are given (they work only inside zsh's
// completion system); fish answers `complete -C` itself.
TEST(CliTable, CompletionWorksInBashZshAndFish) {
  const std::string bin = GGUFKIT_BIN, dir = bin.substr(0, bin.rfind('/'));
  auto script = [](const std::string& shell) {
    CliRun r = run_cli("help --completion " + shell);
    EXPECT_EQ(r.code, 0) << shell;
    std::string path = temp_path("completion." + shell);
    write_file_bytes(path, std::vector<uint8_t>(r.out.begin(), r.out.end()));
    return path;
  };
  auto lines_of = [](const std::string& cmd) {
    CliRun r = run_cli(cmd, "", "");  // a shell command line of its own
    EXPECT_EQ(r.code, 0) << cmd << "\n" << r.err;
    std::vector<std::string> out;
    std::istringstream in(r.out);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  };
  auto has = [](const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); };
  const std::string bash = script("bash"), zsh = script("zsh"), fish = script("fish"), home = temp_path("fish-home");

  auto in_bash = [&](const std::string& words, int cword) {
    return lines_of("bash -c 'source " + bash + "; COMP_WORDS=(" + bin + " " + words + "); COMP_CWORD=" + std::to_string(cword) +
                    "; _ggufkit; printf \"%s\\n\" \"${COMPREPLY[@]}\"'");
  };
  EXPECT_EQ(in_bash("val", 1), std::vector<std::string>{"validate"});
  EXPECT_EQ(in_bash("help pa", 2), std::vector<std::string>{"patch"});
  std::vector<std::string> opts = in_bash("validate --q", 2);
  EXPECT_EQ(opts, std::vector<std::string>{"--quiet"});

  auto in_zsh = [&](const std::string& words, int current) {
    return lines_of("zsh -f -c 'compadd() { [[ $1 == -- ]] && shift; print -l -- \"$@\"; }; _files() { print FILES; }; "
                    "compdef() { print compdef \"$@\"; }; source " + zsh + "; words=(" + bin + " " + words +
                    "); CURRENT=" + std::to_string(current) + "; _ggufkit'");
  };
  std::vector<std::string> z = in_zsh("val", 2);  // all commands offered; zsh narrows them to the prefix
  EXPECT_EQ(z.at(0), "compdef _ggufkit ggufkit");  // sourced, it registers itself
  EXPECT_TRUE(has(z, "validate") && has(z, "corrupt") && has(z, "help")) << z.size();
  z = in_zsh("validate --q", 3);
  EXPECT_TRUE(has(z, "--quiet") && has(z, "--verbose") && has(z, "--json")) << z.size();
  for (size_t i = 1; i < z.size(); ++i) EXPECT_EQ(z[i].rfind("--", 0), 0u) << z[i];
  EXPECT_TRUE(has(in_zsh("help pa", 3), "patch"));
  EXPECT_TRUE(has(in_zsh("validate mo", 3), "FILES"));

  auto in_fish = [&](const std::string& line) {
    // fish keeps its state under HOME: a folder of the test's own.
    return lines_of("mkdir -p " + home + " && HOME=" + home + " XDG_CONFIG_HOME= XDG_DATA_HOME= PATH=" + dir +
                    ":$PATH fish --no-config -c 'source " + fish + "; complete -C\"" + line + "\"'");
  };
  EXPECT_EQ(in_fish("ggufkit vali"), std::vector<std::string>{"validate"});
  EXPECT_EQ(in_fish("ggufkit validate --qu"), std::vector<std::string>{"--quiet"});
  EXPECT_EQ(in_fish("ggufkit help pat"), std::vector<std::string>{"patch"});
  std::vector<std::string> files = in_fish("ggufkit validate " + dir + "/ggufk");
  EXPECT_TRUE(has(files, dir + "/ggufkit")) << files.size();

  CliRun bad = run_cli("help --completion tcsh");
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err, "ggufkit help: no completion for 'tcsh': give bash, zsh or fish\n");
}

// The issue's case: help pointed at schemas/*.md and examples/, which an installed user does
// not have. Every command's help (the man page holds them all) and every topic names what
// the program carries instead, and the patch topic tells of the header-only path.
TEST(CliTable, HelpNamesWhatIsInstalledNotTheSourceTree) {
  std::vector<std::string> texts = {run_cli("help --man").out, run_cli("help --help").out};
  for (const char* t : {"patch", "sketch", "json"}) texts.push_back(run_cli(std::string("help ") + t).out);
  for (const std::string& text : texts) {
    ASSERT_GT(text.size(), 100u);
    for (const char* path : {"schemas/", "examples/", "tests/", "the README", "(README,"})  // README.md is a model card
      EXPECT_EQ(text.find(path), std::string::npos) << path << " in " << text.substr(0, 60);
  }
  const std::string& patch = texts[2];
  EXPECT_EQ(patch.find("by rewriting the whole file"), std::string::npos);
  EXPECT_NE(patch.find("writes the header alone"), std::string::npos);
  EXPECT_NE(patch.find("`--header-only`\nrefuses rather than rewrite"), std::string::npos);
  EXPECT_NE(texts[1].find("'ggufkit help --completion [bash|zsh|fish]'"), std::string::npos) << texts[1];
}

TEST(CliTable, ValidateReadsAHeaderFromStandardInput) {
  CliRun r = run_cli("validate - < " + corpus("vocab/ggml-vocab-llama-spm.gguf"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1), "-: 0 errors, 0 warnings\n") << r.out;
  r = run_cli("validate - --json < " + corpus("history/ggml-vocab-llama.v1.gguf"));
  EXPECT_EQ(r.code, 1);
  YAML::Node j = YAML::Load(r.out);
  EXPECT_EQ(j["errors"].as<int>(), 1);
  EXPECT_EQ(j["findings"][0]["code"].as<std::string>(), "read");
}

TEST(CliTable, ValidateShardOnlyJudgesTheNamedShardAlone) {
  const std::string shard = corpus("splits/by-count-00002-of-00003.gguf");
  CliRun whole = run_cli("validate --json " + shard), alone = run_cli("validate --json --shard-only " + shard);
  YAML::Node w = YAML::Load(whole.out), a = YAML::Load(alone.out);
  EXPECT_EQ(w["files"].as<int>(), 3);
  EXPECT_EQ(a["files"].as<int>(), 1);
  EXPECT_EQ(alone.code, 1);  // shard 2 alone has no architecture
  bool missing_architecture = false;
  for (const auto& f : a["findings"]) missing_architecture |= f["code"].as<std::string>() == "missing_architecture";
  EXPECT_TRUE(missing_architecture) << alone.out;
}

TEST(CliTable, UnderJsonAnErrorIsJsonWithItsPlace) {
  CliRun r = run_cli("show --json " + corpus("history/ggml-vocab-llama.v1.gguf"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "");
  YAML::Node j = YAML::Load(r.out);
  EXPECT_EQ(j["error"]["kind"].as<std::string>(), "format");
  EXPECT_EQ(j["error"]["exit"].as<int>(), 1);
  EXPECT_EQ(j["error"]["offset"].as<int>(), 4);
  EXPECT_EQ(j["error"]["field"].as<std::string>(), "head (version)");
  r = run_cli("show --json --nope x");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(YAML::Load(r.out)["error"]["kind"].as<std::string>(), "usage");
}

// Every option the README names for a command ("ggufkit CMD ... --OPT") is one the command
// takes: its --help lists it.
TEST(CliTable, EveryOptionTheReadmeNamesExists) {
  std::ifstream in(std::string(GGUFKIT_SOURCE) + "/README.md");
  ASSERT_TRUE(in) << "README.md";
  std::set<std::string> commands;
  for (const char* c : {"show", "meta", "get", "template", "tensors", "stack", "layer", "account", "tensor", "diff", "hash",
                        "validate", "tokenize", "detokenize", "map", "rewrite", "edit", "realign", "convert", "split", "merge", "write", "dump", "example",
                        "corrupt", "recover"})
    commands.insert(c);
  std::set<std::pair<std::string, std::string>> named;
  const std::regex command(R"(ggufkit (\w+)([^`\n]*))"), option(R"((^|[^\w-])(--[a-z][a-z-]*))");
  std::string line, current;  // a code block's continuation lines belong to the command above
  bool block = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      block = !block, current.clear();
      continue;
    }
    std::smatch m;
    std::string rest;
    if (std::regex_search(line, m, command) && commands.count(m[1])) {
      current = m[1];
      rest = m[2];
      if (size_t next = rest.find("ggufkit "); next != std::string::npos) rest.resize(next);
    } else if (block && !current.empty() && !line.empty() && line[0] == ' ') {
      rest = line;
    } else {
      current.clear();
      continue;
    }
    for (auto it = std::sregex_iterator(rest.begin(), rest.end(), option); it != std::sregex_iterator(); ++it)
      named.insert({current, (*it)[2]});
  }
  EXPECT_GE(named.size(), 28u);
  for (const auto& [c, o] : named) {
    const std::string help = run_cli(c + " --help").out;
    const std::regex listed(o + "(?![a-z-])");
    EXPECT_TRUE(std::regex_search(help, listed)) << "the README names " << c << " " << o << ", which its --help does not list";
  }
}

// A dry run lists only what would change: a key set to the value it has is no change
// (it was listed as "set tokenizer.ggml.bos_token_id: 1 -> 1"), though it is written as
// asked (-o makes OUT) and judged as a set (a broken value set again is refused).
TEST(CliEdit, ADryRunListsOnlyRealChanges) {
  const std::string f = tiny_llama();
  CliRun same = run_cli("edit " + f + " --set llama.block_count=2 --special-token-id bos=1 --dry-run");
  EXPECT_EQ(same.code, 0) << same.err;
  EXPECT_EQ(same.out, f + ": dry run, nothing written\n  no changes: the output would be a byte-for-byte rewrite\n"
                          "data start  725376 -> 725376\nfile size   5180032 -> 5180032\n");
  CliRun one = run_cli("edit " + f + " --set llama.block_count=2 --special-token-id bos=1 --special-token-id eos=0 --dry-run");
  EXPECT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("\n  set     tokenizer.ggml.eos_token_id: 2 -> 0\n"), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("block_count"), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("bos_token_id"), std::string::npos) << one.out;
  const std::string out = temp_path("same-set.gguf");
  CliRun written = run_cli("edit " + f + " --set llama.block_count=2 -o " + out);
  EXPECT_EQ(written.code, 0) << written.err;
  EXPECT_TRUE(read_file_bytes(out) == read_file_bytes(f));
}

// -q/--quiet on every writing command: the same bytes written, nothing on standard output
// (no list of changes, no summary) and no progress; notes (what became of a link, advice)
// and errors still printed with the same exit code, and --json's answer too. With
// --dry-run or --map, which only print, a usage error. diff --quiet is git's: no output,
// exit 1 when the files differ.
TEST(CliQuiet, EveryWritingCommandWritesTheSameBytesAndPrintsOnlyErrors) {
  const std::string tiny = tiny_llama(), d = temp_path("quiet");
  ASSERT_EQ(run_cli("mkdir -p " + d, "", "").code, 0);
  const std::string sketch = d + "/ex.yaml";
  ASSERT_EQ(run_cli("example -o " + d + "/ex.gguf").code, 0);
  ASSERT_EQ(run_cli("dump " + d + "/ex.gguf -o " + sketch).code, 0);
  struct Case {
    std::string args, out;  // OUT where the command writes; the file compared
    bool says = true;       // it prints what it wrote (write prints only its findings)
  };
  const std::vector<Case> cases = {
      {"example -o OUT", "OUT"},
      {"write " + sketch + " -o OUT", "OUT", false},
      {"edit " + tiny + " --set general.name=quiet -o OUT", "OUT"},
      {"rewrite " + tiny + " -o OUT", "OUT"},
      {"realign " + tiny + " -a 64 -o OUT", "OUT"},
      {"convert " + tiny + " --byte-order big -o OUT", "OUT"},
      {"replica " + tiny + " -o OUT", "OUT"},
      {"extract " + tiny + " --vocab-only -o OUT", "OUT"},
      {"extract " + tiny + " -t 'token_embd*' --allow-broken -o OUT", "OUT"},
      {"split " + tiny + " --max-tensors 8 -o OUT", "OUT-00002-of-00003.gguf"},
      {"merge " + corpus("splits/by-count-00001-of-00003.gguf") + " -o OUT", "OUT"},
      {"corrupt " + tiny + " --count 3 -o OUT", "OUT/manifest.json"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(c.args);
    auto with = [&](const std::string& s, const std::string& out) {
      std::string r = s;
      for (size_t at; (at = r.find("OUT")) != std::string::npos;) r.replace(at, 3, out);
      return r;
    };
    const std::string loud = d + "/loud" + std::to_string(i), quiet = d + "/quiet" + std::to_string(i);
    const CliRun a = run_cli(with(c.args, loud));
    ASSERT_EQ(a.code, 0) << a.err;
    EXPECT_EQ(a.out != "", c.says) << a.out;  // it says what it wrote unless told not to
    const CliRun b = run_cli(with(c.args, quiet) + " -q");
    ASSERT_EQ(b.code, 0) << b.err;
    EXPECT_EQ(b.out, "");
    EXPECT_EQ(b.err, a.err);  // notes only: extract --allow-broken's, of what it wrote anyway
    EXPECT_EQ(slurp(with(c.out, quiet)), slurp(with(c.out, loud)));
  }
  // a note still prints: realign's advice on -a 32, and a link replaced by the output
  const std::string r64 = d + "/r64.gguf";
  ASSERT_EQ(run_cli("realign " + tiny + " -a 64 -o " + r64).code, 0);
  const CliRun noted = run_cli("realign " + r64 + " -a 32 --quiet -o " + d + "/r32.gguf");
  EXPECT_EQ(noted.code, 0);
  EXPECT_EQ(noted.out, "");
  EXPECT_EQ(noted.err.rfind("ggufkit: note: command line: alignment 32 is written as the key", 0), 0u) << noted.err;
  ASSERT_EQ(run_cli("ln -s elsewhere.gguf " + d + "/link.gguf", "", "").code, 0);
  const CliRun linked = run_cli("rewrite " + tiny + " -q --force -o " + d + "/link.gguf");
  EXPECT_EQ(linked.code, 0);
  EXPECT_EQ(linked.out, "");
  EXPECT_NE(linked.err.find("is a symbolic link (to elsewhere.gguf): it is replaced by the new file"), std::string::npos) << linked.err;
  // a broken sketch written anyway says so (write -q without --check)
  {
    const std::string bare_yaml = "tensors:\n  - {name: w, type: f32, dims: [2], values: [1, 2]}\n";
    write_file_bytes(d + "/bare.yaml", std::vector<uint8_t>(bare_yaml.begin(), bare_yaml.end()));
  }
  const CliRun bare = run_cli("write " + d + "/bare.yaml -q -o " + d + "/bare.gguf");
  EXPECT_EQ(bare.code, 0);
  EXPECT_EQ(bare.out, "");
  EXPECT_NE(bare.err.find("written anyway (without --check)"), std::string::npos) << bare.err;
  // standard input closed (/dev/null then opens as descriptor 0): still nothing printed;
  // standard output closed: /dev/null holds descriptor 1, and the file is written whole
  const CliRun no_input = run_cli("rewrite " + tiny + " -q -o " + d + "/closed-in.gguf <&-");
  EXPECT_EQ(no_input.code, 0) << no_input.err;
  EXPECT_EQ(no_input.out + no_input.err, "");
  EXPECT_EQ(slurp(d + "/closed-in.gguf"), slurp(d + "/loud3"));
  const CliRun no_output = run_cli("sh -c '" + std::string(GGUFKIT_BIN) + " rewrite " + tiny + " -q -o " + d + "/closed-out.gguf >&-'", "", "");
  EXPECT_EQ(no_output.code, 0) << no_output.err;
  EXPECT_EQ(no_output.err, "");
  EXPECT_EQ(slurp(d + "/closed-out.gguf"), slurp(d + "/loud3"));
  // what only prints cannot be quiet
  const CliRun dry = run_cli("edit " + tiny + " --set general.name=x --dry-run -q");
  EXPECT_EQ(dry.code, 2);
  EXPECT_NE(dry.err.find("give one of --dry-run and --quiet"), std::string::npos) << dry.err;
  EXPECT_EQ(run_cli("write " + sketch + " --map -q -o " + d + "/map.gguf").code, 2);
  // an error is still printed, with its exit code, and nothing written
  const CliRun refused = run_cli("edit " + tiny + " --set general.alignment=3 -q -o " + d + "/refused.gguf");
  EXPECT_EQ(refused.code, 1);
  EXPECT_EQ(refused.out, "");
  EXPECT_NE(refused.err.find("ggufkit: error: command line:1:1: set general.alignment: set the alignment with alignment: N"), std::string::npos)
      << refused.err;
  EXPECT_NE(run_cli("ls " + d + "/refused.gguf", "", "").code, 0);
  // --json's answer is printed whatever --quiet says
  const CliRun json = run_cli("edit " + tiny + " --set general.name=j -q --json -o " + d + "/json.gguf");
  EXPECT_EQ(json.code, 0);
  EXPECT_EQ(json.out.rfind("{", 0), 0u) << json.out;
  EXPECT_NE(json.out.find("\"changes\""), std::string::npos) << json.out;
  // diff --quiet
  const CliRun same = run_cli("diff -q " + tiny + " " + d + "/loud3");
  EXPECT_EQ(same.code, 0);
  EXPECT_EQ(same.out + same.err, "");
  const CliRun differ = run_cli("diff --quiet " + tiny + " " + d + "/loud2");
  EXPECT_EQ(differ.code, 1);
  EXPECT_EQ(differ.out + differ.err, "");
  const CliRun both = run_cli("diff --quiet --json " + tiny + " " + d + "/loud2");
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.out.find("give one of --quiet and --json"), std::string::npos) << both.out;
}
