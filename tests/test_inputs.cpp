// Inputs that hang, have no cap or are quoted whole (an audit's finding 13, and the
// inconsistencies of its finding 15): each is read as every small input of the program is
// read, capped, and quoted in a bounded line.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "ggufkit/edit.h"
#include "ggufkit/error.h"
#include "ggufkit/patch.h"
#include "ggufkit/scan.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {
std::string vocab() { return corpus("vocab/ggml-vocab-llama-spm.gguf"); }
}  // namespace

TEST(Inputs, ATextFileThatIsAFolderIsRefusedNamingIt) {
  const std::string dir = temp_path("tokenize-a-folder");
  fs::create_directories(dir);
  CliRun r = run_cli("tokenize " + vocab() + " -f " + dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "ggufkit: error: " + dir + ": is a folder, not a regular file\n");
  EXPECT_EQ(r.out, "");
}

TEST(Inputs, ANamedPipeIsReadOnceItsWriterWritesAsEverySmallInputIs) {
  const std::string fifo = temp_path("tokenize.fifo");
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The writer comes after the reader has opened: the text is what it wrote, to its end.
  CliRun t = run_cli("tokenize " + vocab() + " -f " + fifo + " --ids", "(printf Hello > " + fifo + " &); timeout 60 ");
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_EQ(t.out, "1 15043\n");
}

// The fourth audit: `hash --check FIFO` waited for ever. A manifest from a pipe is read as
// every small input is, once its writer writes, to its end; an endless one stops at the cap.
TEST(Inputs, AManifestFromANamedPipeIsCheckedOnceItsWriterWrites) {
  const std::string dir = temp_path("check-fifo");
  fs::create_directories(dir);
  const std::string manifest = dir + "/tiny.manifest", fifo = dir + "/manifest.fifo";
  CliRun w = run_cli("hash " + tiny_llama() + " --manifest --algo xxh64");
  ASSERT_EQ(w.code, 0) << w.err;
  write_file_bytes(manifest, {w.out.begin(), w.out.end()});
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  CliRun c = run_cli("hash " + tiny_llama() + " --check " + fifo, "(cat " + manifest + " > " + fifo + " &); timeout 60 ");
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.out.rfind("manifest  " + fifo + "  xxh64\n", 0), 0u) << c.out;
  EXPECT_NE(c.out.find("Verification results for " + fifo + " - Success\n"), std::string::npos) << c.out;
  CliRun zero = run_cli("hash " + tiny_llama() + " --check /dev/zero", "timeout 120 ");
  EXPECT_EQ(zero.code, 1);
  EXPECT_EQ(zero.err, "ggufkit: error: /dev/zero: is over the cap of 67108864 bytes\n");
}

TEST(Inputs, AnEndlessTextOrIdStreamIsRefusedAtTheCap) {
  CliRun zero = run_cli("tokenize " + vocab() + " -f /dev/zero --ids", "timeout 120 ");
  EXPECT_EQ(zero.code, 1);
  EXPECT_EQ(zero.err, "ggufkit: error: /dev/zero: is over the cap of 67108864 bytes\n");
  CliRun dz = run_cli("detokenize " + vocab() + " - < /dev/zero", "timeout 120 ");
  EXPECT_EQ(dz.code, 1);
  EXPECT_EQ(dz.err, "ggufkit: error: /dev/stdin: is over the cap of 67108864 bytes\n");
  CliRun yes = run_cli("detokenize " + vocab() + " -", "yes 1 | timeout 120 ");
  EXPECT_EQ(yes.code, 1);
  EXPECT_EQ(yes.err, "ggufkit: error: /dev/stdin: is over the cap of 67108864 bytes\n");
  // Under the cap, ids from standard input as before.
  CliRun ok = run_cli("detokenize " + vocab() + " -", "printf '15043\\n  3186 ' | ");
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(ok.out, "Hello world");
}

TEST(Inputs, TokenizeIdsWithJsonPrintsTheIdsAsJson) {
  CliRun r = run_cli("tokenize " + vocab() + " Hello --ids --json");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"ids\": [1, 15043]}\n");
}

TEST(Inputs, AManifestLineWithAHugeNameIsQuotedInABoundedLine) {
  // A line naming another file by a name of 4 MB: the check says it skipped it, in a line
  // (a name is quoted whole up to 4096 bytes, any path).
  const std::string manifest = temp_path("huge-name.manifest");
  {
    std::ofstream m(manifest, std::ios::binary);
    m << "xxh64  0123456789abcdef  " << std::string(4 << 20, 'n') << "\n";
  }
  CliRun r = run_cli("hash " + tiny_llama() + " --check " + manifest);
  EXPECT_LT(r.err.size() + r.out.size(), 10000u) << r.err.substr(0, 500);
  EXPECT_NE((r.err + r.out).find("(4194304 bytes)"), std::string::npos) << r.err.substr(0, 500);
  // A type word of 4 MB, refused in a line.
  {
    std::ofstream m(manifest, std::ios::binary);
    m << std::string(4 << 20, 't') << "  0123456789abcdef  x.gguf\n";
  }
  CliRun t = run_cli("hash " + tiny_llama() + " --check " + manifest);
  EXPECT_EQ(t.code, 1);
  EXPECT_LT(t.err.size(), 1000u);
  EXPECT_NE(t.err.find("line 1: '" + std::string(85, 't') + "..." + std::string(42, 't') + " (4194304 bytes)' is not a hash type"),
            std::string::npos) << t.err.substr(0, 500);
}

TEST(Inputs, ANumberOfAHundredThousandDigitsIsQuotedByItsEndsAndLength) {
  const std::string digits = "1" + std::string(99999, '7');
  CliRun r = run_cli("edit " + tiny_llama() + " --set llama.context_length=" + digits + " --dry-run");
  EXPECT_EQ(r.code, 1);
  EXPECT_LT(r.err.size(), 600u) << r.err.substr(0, 600);
  EXPECT_NE(r.err.find("set llama.context_length: expected an integer, found '17777777777777777777777777777777...7777777777777777 "
                       "(100000 bytes)'"),
            std::string::npos) << r.err.substr(0, 600);
  EXPECT_EQ(clipped("short"), "short");
  EXPECT_EQ(clipped(std::string(48, 'x')), std::string(48, 'x'));
  // never half a character: a 3-byte character across the cut stays whole or goes whole
  EXPECT_EQ(clipped(std::string(31, 'a') + "\xe2\x82\xac" + std::string(30, 'b') + "\xe2\x82\xac" + std::string(15, 'c')),
            std::string(31, 'a') + "..." + std::string(15, 'c') + " (82 bytes)");
}

TEST(Inputs, FromHfGivenAFileThatIsNoTokenizerConfigSaysAFolderIsNeeded) {
  CliRun r = run_cli("edit " + tiny_llama() + " --from-hf " + vocab() + " --dry-run");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "ggufkit: error: " + vocab() +
                       ": --from-hf: is not a folder: give the Hugging Face model folder (or its tokenizer_config.json)\n");
}

TEST(Inputs, AJsonInputsSyntaxErrorSaysJson) {
  const std::string dir = temp_path("hf-bad-json");
  fs::create_directories(dir);
  std::ofstream(dir + "/tokenizer_config.json") << "{\"eos_token\": [}";
  CliRun r = run_cli("edit " + tiny_llama() + " --from-hf " + dir + " --dry-run");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(dir + "/tokenizer_config.json:1:16: json: "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("yaml"), std::string::npos) << r.err;
}

TEST(Inputs, AReplicaOfASetNamedLikeAFileIsNamedAsGgufSplitNamesShards) {
  const std::string dir = temp_path("replica-set-names");
  fs::remove_all(dir);
  fs::create_directories(dir + "/out");
  CliRun s = run_cli("split " + tiny_llama() + " -o " + dir + "/m --max-tensors 8");
  ASSERT_EQ(s.code, 0) << s.err;
  CliRun r = run_cli("replica " + dir + "/m-00002-of-00003.gguf -o " + dir + "/out/rep.gguf");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(files_in(dir + "/out"),
            (std::vector<std::string>{"rep-00001-of-00003.gguf", "rep-00002-of-00003.gguf", "rep-00003-of-00003.gguf"}));
}

TEST(Inputs, RecoverSaysWhatItDidAsJson) {
  const std::string f = temp_path("recover-json.gguf");
  fs::copy_file(tiny_llama(), f, fs::copy_options::overwrite_existing);
  CliRun r = run_cli("recover " + f + " --json");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"file\": \"" + f + "\", \"recovery\": \"none\"}\n");
}

// Finding 9: the keys a card or a patch adds cost a lookup each, not a walk over every key
// given before (refuse_twice) and every key of the file (the applier's find): 20,000 base
// models (100,000 keys) took minutes; the test's TIMEOUT is the default ctest one.
TEST(Scale, ACardOfTwentyThousandBaseModelsIsTakenWhole) {
  const std::string dir = temp_path("hf-20k");
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream card(dir + "/README.md");
    card << "---\nbase_model:\n";
    for (int i = 0; i < 20000; ++i) card << "- org" << i << "/Model-" << i << "\n";
    card << "---\n";
  }
  EditRequest req;
  req.input = tiny_llama();
  req.output = temp_path("hf-20k.gguf");
  req.write.force = true;
  req.patch.add_from_hf(dir);
  EditReport r = edit(req);
  size_t added = 0;
  for (const Change& c : r.changes) added += c.kind == Change::add;
  EXPECT_EQ(added, 1 + 20000 * 4u);  // the count; each model's name, version (its number), organization and repo_url
  const Model m = scan_file(req.output).model;
  EXPECT_EQ(m.find("general.base_model.count")->bits, 20000u);
  EXPECT_EQ(m.find("general.base_model.19999.name")->str, "Model 19999");
  EXPECT_EQ(m.find("general.base_model.19999.organization")->str, "Org19999");
  EXPECT_EQ(m.find("general.base_model.19999.repo_url")->str, "https://huggingface.co/org19999/Model-19999");
}

TEST(Scale, APatchOfSixtyThousandNewKeysIsApplied) {
  const std::string patch = temp_path("60k.yaml");
  {
    std::ofstream p(patch);
    p << "set:\n";
    for (int i = 0; i < 60000; ++i) p << "  x.k" << i << ": {type: u32, value: " << i << "}\n";
  }
  EditRequest req;
  req.input = tiny_llama();
  req.output = temp_path("60k.gguf");
  req.write.force = true;
  req.patch = read_patch(patch);
  EditReport r = edit(req);
  EXPECT_EQ(r.changes.size(), 60000u);
  const Model m = scan_file(req.output).model;
  EXPECT_EQ(m.find("x.k59999")->bits, 59999u);
  EXPECT_EQ(m.metadata.size(), scan_file(tiny_llama()).model.metadata.size() + 60000);
}
