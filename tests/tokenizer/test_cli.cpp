// Tests of ggufkit tokenize, detokenize and show's loaded vocabulary: the commands print what
// the library gives, in the forms their help promises. The ids are llama.cpp's own (its
// llama_tokenize on a vocabulary-only load, bench/llama_tokenize).
#include <gtest/gtest.h>

#include "../paths.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct Ran {
  int code = -1;
  std::string out;
};

// The program with `args` (shell words), standard error joined to standard output.
Ran run(const std::string& args, const std::string& input = "") {
  std::string cmd = std::string(GGUFKIT_BIN) + " " + args + " 2>&1";
  if (!input.empty()) cmd = "printf '%s' '" + input + "' | " + cmd;
  Ran r;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

const std::string kSpm = std::string(GGUFKIT_CORPUS) + "/vocab/ggml-vocab-llama-spm.gguf";
const std::string kPhi3 = std::string(GGUFKIT_CORPUS) + "/vocab/ggml-vocab-phi-3.gguf";

TEST(TokenizeCommand, PrintsOneTokenALineWithItsIdAndThePieceGenerationPrints) {
  Ran r = run("tokenize " + kSpm + " 'Hello world'");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "       1 -> \"<s>\"\n   15043 -> \" Hello\"\n    3186 -> \" world\"\n");
}

TEST(TokenizeCommand, AddsAndParsesSpecialTokensAsLlamaTokenizeDoesUnlessTold) {
  EXPECT_EQ(run("tokenize " + kSpm + " '<s>Hi</s>' --ids").out, "1 1 6324 2\n");
  EXPECT_EQ(run("tokenize " + kSpm + " '<s>Hi</s>' --ids --no-parse-special").out, "1 529 29879 29958 18567 829 29879 29958\n");
  EXPECT_EQ(run("tokenize " + kSpm + " '<s>Hi</s>' --ids --no-add-special").out, "1 6324 2\n");
  EXPECT_EQ(run("tokenize " + kSpm + " '' --ids").out, "1\n");  // an empty text still gets its BOS
}

TEST(TokenizeCommand, JsonHoldsEachTokensIdAndTextAndHexWhereThePieceIsHalfACharacter) {
  Ran r = run("tokenize " + kSpm + " '<s>Hi' --json --no-add-special");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "{\"tokens\": [\n  {\"id\": 1, \"text\": \"<s>\"},\n  {\"id\": 6324, \"text\": \" Hi\"}\n]}\n");
  // U+1F642 is no token of llama-spm: four byte tokens, each half a character.
  const std::string text = ::testing::TempDir() + "/tok-emoji.txt";
  std::FILE* f = std::fopen(text.c_str(), "wb");
  std::fputs("\xf0\x9f\x99\x82", f);
  std::fclose(f);
  Ran bytes = run("tokenize " + kSpm + " -f " + text + " --json --no-add-special");
  EXPECT_EQ(bytes.out, "{\"tokens\": [\n  {\"id\": 29871, \"text\": \" \"},\n  {\"id\": 243, \"text\": {\"hex\": \"f0\"}},\n"
                       "  {\"id\": 162, \"text\": {\"hex\": \"9f\"}},\n  {\"id\": 156, \"text\": {\"hex\": \"99\"}},\n"
                       "  {\"id\": 133, \"text\": {\"hex\": \"82\"}}\n]}\n");
}

TEST(TokenizeCommand, ReadsTheTextFromAFileOrStandardInput) {
  EXPECT_EQ(run("tokenize " + kSpm + " -f - --ids", "Hello world").out, "1 15043 3186\n");
  Ran missing = run("tokenize " + kSpm + " -f /nonexistent/text --ids");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.out.find("/nonexistent/text: cannot open for reading: No such file or directory"), std::string::npos) << missing.out;
  Ran none = run("tokenize " + kSpm);
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.out.find("tokenize needs the text"), std::string::npos) << none.out;
}

TEST(TokenizeCommand, AFileWithoutAVocabularyIsRefusedNamingTheKey) {
  const std::string ex = ::testing::TempDir() + "/tok-example.gguf";
  std::remove(ex.c_str());
  ASSERT_EQ(run("example -o " + ex).code, 0);
  Ran r = run("tokenize " + ex + " hi");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "ggufkit: error: " + ex + ": tokenizer.ggml.model: the file has no vocabulary to tokenize with\n");
}

TEST(DetokenizeCommand, GivesBackTheTextOfTheIdsAsLlamaDetokenizeDoes) {
  EXPECT_EQ(run("detokenize " + kSpm + " 1 15043 3186").out, "<s> Hello world");
  EXPECT_EQ(run("detokenize " + kSpm + " 1 15043 3186 --remove-special").out, " Hello world");
  EXPECT_EQ(run("detokenize " + kSpm + " -", "1 15043\n3186").out, "<s> Hello world");
  EXPECT_EQ(run("detokenize " + kSpm + " 1 15043 --json").out, "{\"text\": \"<s> Hello\"}\n");
}

TEST(DetokenizeCommand, AnIdOutsideTheVocabularyOrNotANumberIsRefused) {
  Ran far = run("detokenize " + kSpm + " 32000");
  EXPECT_EQ(far.code, 1);
  EXPECT_NE(far.out.find("token id 32000 is not in the vocabulary (its 32000 tokens are ids 0 to 31999)"), std::string::npos) << far.out;
  Ran word = run("detokenize " + kSpm + " x1");
  EXPECT_EQ(word.code, 2);
  EXPECT_NE(word.out.find("not a token id: 'x1'"), std::string::npos) << word.out;
}

// phi-3 sets no eot key; llama.cpp takes <|end|> (32007) as end of turn by its text.
TEST(ShowLoaded, SaysWhatLlamaCppMakesOfTheVocabularyAtLoad) {
  Ran r = run("show --json " + kPhi3);
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("\"loaded\": {\"bos\": 1, \"eos\": 32000, \"eot\": 32007, \"sep\": -1, \"nl\": 13, \"pad\": 32000, "
                       "\"fim_pre\": -1, \"fim_suf\": -1, \"fim_mid\": -1, \"fim_pad\": -1, \"fim_rep\": -1, \"fim_sep\": -1, "
                       "\"add_bos\": true, \"add_eos\": false, \"eog\": [2, 32000, 32007], \"control\": [0, 1, 2, 32000, "
                       "32001, 32002, 32003, 32004, 32005, 32006, 32007, 32008, 32009, 32010], \"found_by_text\": {\"eot\": 32007}"),
            std::string::npos)
      << r.out;
  Ran text = run("show " + kPhi3);
  EXPECT_NE(text.out.find("  eot           32007  \"<|end|>\"                found by its text, as llama.cpp finds it (no "
                          "tokenizer.ggml.eot_token_id key)\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("tokenizer     spm; adds BOS; generation stops at 2, 32000, 32007\n"), std::string::npos) << text.out;
}

}  // namespace

// A text of more than 4 MiB (a second or so of tokenizing) shows how far it is on a terminal
// (run under script(1)), nothing on a pipe; a smaller one shows nothing either way.
TEST(TokenizeCommand, ShowsProgressOnATerminalForALargeTextAndNowhereElse) {
  const std::string vocab = std::string(GGUFKIT_CORPUS) + "/vocab/ggml-vocab-gpt-2.gguf";
  char dir[] = "/tmp/ggufkit-tokprogress-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string d = dir, big = d + "/big.txt", small = d + "/small.txt";
  ASSERT_EQ(std::system(("yes 'words and more words' | head -c 5000000 > " + big + " && head -c 3000000 " + big + " > " + small).c_str()), 0);
  auto on_terminal = [&](const std::string& text) {
    const std::string transcript = d + "/transcript";
    const std::string cmd = "script -qec '" + std::string(GGUFKIT_BIN) + " tokenize " + vocab + " -f " + text + " --ids > /dev/null' " +
                            transcript + " < /dev/null > /dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    std::string out;
    if (FILE* f = std::fopen(transcript.c_str(), "rb")) {
      char buf[4096];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
      std::fclose(f);
    }
    return out;
  };
  const std::string shown = on_terminal(big);
  EXPECT_NE(shown.find("\rggufkit: tokenizing 0.0 MB of 5.0 MB (0%)"), std::string::npos) << shown.substr(0, 300);
  EXPECT_NE(shown.find("\rggufkit: tokenizing 2.5 MB of 5.0 MB (50%)"), std::string::npos) << shown.substr(0, 300);
  EXPECT_NE(shown.find("\rggufkit: tokenizing 5.0 MB of 5.0 MB (100%)\r\n"), std::string::npos) << shown.substr(0, 300);
  EXPECT_EQ(on_terminal(small).find("tokenizing"), std::string::npos);
  // piped: the ids alone, no line on standard error
  const Ran piped = run("tokenize " + vocab + " -f " + big + " --ids 2>" + d + "/err | wc -w; wc -c < " + d + "/err");
  EXPECT_EQ(piped.code, 0);
  EXPECT_EQ(piped.out, "1190476\n0\n");  // 238,095 lines of 5 tokens and a cut one; no byte on stderr
  std::system(("rm -rf " + d).c_str());
}
