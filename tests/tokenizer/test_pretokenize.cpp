// Tests of the pre-tokenizer's one-pass splitters for expressions llama.cpp runs on std::regex
// (tekken's, GPT-4o's, granite-embed-multi's, superbpe's digit lookahead): they split every
// text as the expression does on PCRE2 (the same expression written inside (?:...), which the
// pre-tokenizer does not recognise and so matches with PCRE2), and the texts a backtracking
// matcher refuses or takes quadratic time on are split in bounded memory and time.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "../../tokenizer/src/pretokenize.h"

namespace {

using ggufkit::tokenizer::PreTokenizer;

// The expressions as bpe.cpp lists them for each tokenizer.ggml.pre.
const std::string contractions = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
const std::string tekken =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const std::string gpt4o = "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+" + contractions +
                          "?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*" + contractions +
                          "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const std::string granite_emb =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+" + contractions +
    "?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*" + contractions +
    "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const std::string exaone_moe = contractions +
    "|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+";
const std::vector<std::string> superbpe = {"\\p{N}+", "(?=(\\d{3})+(?!\\d))"};

std::vector<std::string> words(const PreTokenizer& p, const std::string& text) {
  PreTokenizer::Words w = p.split(text);
  std::vector<std::string> out;
  for (size_t i = 0; i < w.size(); ++i) out.emplace_back(w[i]);
  return out;
}

// Random texts of pieces that meet each class of the expressions and their edges: ASCII and
// other upper, lower, title, modifier and other letters, marks, ASCII and other digits, the
// contractions' letters in both cases, CR, LF, /, ASCII and other whitespace, punctuation,
// symbols, an invalid byte, an emoji.
const char* const pieces[] = {
    "A", "Z", "a", "z", "\xc3\x89", "\xc3\xa9", "\xc7\x85", "\xca\xb0", "\xe4\xb8\xad", "\xcc\x81", "\xe0\xa4\xbf",
    "'", "'", "s", "S", "t", "T", "r", "R", "e", "E", "v", "V", "m", "l", "L", "d", "D",
    " ", " ", "  ", "\n", "\r", "\t", "\x0b", "\x0c", "\xc2\xa0", "\xe2\x80\xa8", "\xc2\x85",
    "/", "1", "7", "0", "\xd9\xa3", "\xe2\x85\xab", "!", "_", ".", "$", "<", "\xc2\xa7", "\xe2\x82\xac", "\x1c",
    "\xff", "\xf0\x9f\x98\x80",
};
const char* const digit_pieces[] = {"1", "2", "0", "9", "12", "345", "\xd9\xa3", "\xe2\x85\xab", "a", " ", "\n", ".", "\xc3\xa9"};

template <size_t N>
std::string random_text(std::mt19937& rng, const char* const (&from)[N], size_t most) {
  std::string t;
  for (size_t n = rng() % (most + 1); n > 0; --n) t += from[rng() % N];
  return t;
}

// Splits of `texts` by `exprs` with the one-pass splitter and with PCRE2: the texts that differ.
std::vector<std::string> differences(const std::vector<std::string>& exprs, const std::vector<std::string>& texts) {
  std::vector<std::string> on_pcre2;
  for (const std::string& e : exprs) on_pcre2.push_back("(?:" + e + ")");
  PreTokenizer direct(exprs, false), reference(on_pcre2, false);
  std::vector<std::string> differ;
  for (const std::string& t : texts)
    if (words(direct, t) != words(reference, t)) differ.push_back(t);
  return differ;
}

std::vector<std::string> random_texts(unsigned seed, bool digits) {
  std::mt19937 rng(seed);
  std::vector<std::string> texts = {"", "AAAA", "AAAa", "aAAA", "\xc3\x89\xc3\x89" "A'S", " \xc3\x89\xc3\xa9" "a'LL", "A\xcc\x81\xcc\x81.",
                                    "\xcc\x81" "A.", " \xcc\x81\n", "ABC'rEd", "a'", "A'v", "  \n  x", "123456", "1234567/\n/"};
  for (int i = 0; i < 20000; ++i) texts.push_back(digits ? random_text(rng, digit_pieces, 16) : random_text(rng, pieces, 24));
  return texts;
}

TEST(PreTokenizeCaseWords, TekkenSplitsEveryTextAsItsExpressionOnPcre2) {
  EXPECT_EQ(differences({tekken}, random_texts(1, false)), std::vector<std::string>{});
}

TEST(PreTokenizeCaseWords, Gpt4oSplitsEveryTextAsItsExpressionOnPcre2) {
  EXPECT_EQ(differences({gpt4o}, random_texts(2, false)), std::vector<std::string>{});
}

TEST(PreTokenizeCaseWords, GraniteEmbedMultiSplitsEveryTextAsItsExpressionOnPcre2) {
  EXPECT_EQ(differences({granite_emb}, random_texts(3, false)), std::vector<std::string>{});
}

TEST(PreTokenizeCaseWords, ExaoneMoeSplitsEveryTextAsItsExpressionOnPcre2) {
  EXPECT_EQ(differences({exaone_moe}, random_texts(7, false)), std::vector<std::string>{});
}

TEST(PreTokenizeDigitTriples, SuperbpeSplitsEveryTextAsItsExpressionsOnPcre2) {
  EXPECT_EQ(differences(superbpe, random_texts(4, true)), std::vector<std::string>{});
  EXPECT_EQ(differences(superbpe, random_texts(5, false)), std::vector<std::string>{});
  // the lookahead alone, on pieces that hold more than digits
  EXPECT_EQ(differences({superbpe[1]}, random_texts(6, true)), std::vector<std::string>{});
}

TEST(PreTokenizeCaseWords, TheSplitsOfAFewTextsAreTheseWords) {
  PreTokenizer g(std::vector<std::string>{gpt4o}, false), t(std::vector<std::string>{tekken}, false);
  using W = std::vector<std::string>;
  EXPECT_EQ(words(g, "HTMLParser's XMLHttp 12345 ..//\n\n  x"),
            (W{"HTMLParser's", " XMLHttp", " ", "123", "45", " ..//\n\n", " ", " x"}));
  EXPECT_EQ(words(t, "HTMLParser's XMLHttp 12345"), (W{"HTMLParser", "'s", " XMLHttp", " ", "1", "2", "3", "4", "5"}));
  // \xc3\x89 (E acute) is upper and lower to the collapsed text: U* gives it back to L+
  EXPECT_EQ(words(g, "AB\xc3\x89" "CD."), (W{"AB\xc3\x89", "CD", "."}));
}

// The bound a child process splits a large text under: 256 MiB of address space more than it
// has (the old matcher took 1.3 GB for 1 MB of capitals) and 60 s of CPU (the old superbpe
// lookahead took 20 s for 100k digits and grows with their square: 1M digits, half an hour).
#if defined(__SANITIZE_ADDRESS__)
#define GGUFKIT_NO_RLIMIT_AS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define GGUFKIT_NO_RLIMIT_AS 1
#endif
#endif

void bound_this_process() {
  rlimit cpu{60, 60};
  setrlimit(RLIMIT_CPU, &cpu);
#ifndef GGUFKIT_NO_RLIMIT_AS  // the sanitizers reserve terabytes of address space
  unsigned long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  rlim_t most = pages * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (rlim_t{256} << 20);
  rlimit as{most, most};
  setrlimit(RLIMIT_AS, &as);
#endif
}

// In a child under the bound: the number of words of `text` and the size of the largest, or
// what was thrown; exit 0 when they are `count` and `largest`.
void split_bounded(const std::vector<std::string>& exprs, const std::string& text, size_t count, size_t largest) {
  bound_this_process();
  try {
    PreTokenizer p(exprs, false);
    PreTokenizer::Words w = p.split(text);
    size_t big = 0, total = 0;
    for (size_t i = 0; i < w.size(); ++i) big = std::max(big, w[i].size()), total += w[i].size();
    std::fprintf(stderr, "%zu words, the largest %zu bytes, %zu in all\n", w.size(), big, total);
    std::_Exit(w.size() == count && big == largest && total == text.size() ? 0 : 1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "refused: %s\n", e.what());
    std::_Exit(2);
  }
}

TEST(PreTokenizeCaseWords, AMegabyteOfCapitalsIsOneWordForTekkenGpt4oAndGraniteEmbed) {
  const std::string capitals(1 << 20, 'A');
  for (const std::string& e : {tekken, gpt4o, granite_emb})
    EXPECT_EXIT(split_bounded({e}, capitals, 1, capitals.size()), testing::ExitedWithCode(0), "") << e;
  // capitals with a combining mark each: to granite-embed a mark is upper and lower, and a
  // word; to the others it is a prefix of the next capital
  std::string marked;
  for (int i = 0; i < (1 << 20) / 3; ++i) marked += "A\xcc\x81";
  EXPECT_EXIT(split_bounded({granite_emb}, marked, 1, marked.size()), testing::ExitedWithCode(0), "");
  // "A", then each mark with the capital after it, then the last mark
  EXPECT_EXIT(split_bounded({gpt4o}, marked, (1 << 20) / 3 + 1, 3), testing::ExitedWithCode(0), "");
}

TEST(PreTokenizeDigitTriples, AMillionDigitsAreGroupsOfThreeFromTheRightForSuperbpe) {
  const std::string digits(1000000, '7');  // 1,000,000 = 1 + 3 x 333,333
  EXPECT_EXIT(split_bounded(superbpe, digits, 333334, 3), testing::ExitedWithCode(0), "");
  PreTokenizer p(superbpe, false);
  using W = std::vector<std::string>;
  EXPECT_EQ(words(p, "x1234567 123\xd9\xa3" "4567."), (W{"x", "1", "234", "567", " ", "123\xd9\xa3" "4", "567", "."}));
}

TEST(PreTokenizeCaseWords, FourMegabytesOfLettersAndSpacesAreOneWordForExaoneMoe) {
  std::string words;  // "Ab c\xcc\x81 " ...: letters, marks and single spaces before letters
  while (words.size() < (4 << 20)) words += "Ab c\xcc\x81 ";
  words += "d";
  EXPECT_EXIT(split_bounded({exaone_moe}, words, 1, words.size()), testing::ExitedWithCode(0), "");
}

}  // namespace
