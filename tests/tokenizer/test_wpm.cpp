// Tests of WordPiece, Unigram and RWKV: one fragment of raw text to ids, as llama.cpp's
// sessions give them. Every expected id list is llama.cpp's (bench/llama_tokenize ... lines,
// add_special 0, parse_special 0) on the same vocabulary written as a GGUF file: bert-bge of
// the corpus (and it with the normalizer keys set), and the small t5 and rwkv vocabularies
// built below (llama.cpp loads them vocabulary-only from just general.architecture and the
// tokenizer keys). None of the texts holds a whole user-defined token, which llama.cpp
// would split out before the algorithm.
#include <gtest/gtest.h>

#include "../paths.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "../../tokenizer/src/impl.h"
#include "ggufkit/scan.h"
#include "ggufkit/vocab.h"

namespace {

namespace tk = ggufkit::tokenizer;
using Ids = std::vector<int32_t>;

Ids run(const tk::Algorithm& a, std::string_view text) {
  Ids out;
  a.tokenize(std::string(text), out);
  return out;
}

// --- WordPiece, on bert-bge ---

const tk::Vocab& bge() {
  static const tk::Vocab v = [] {
    ggufkit::Scanned s = ggufkit::scan_file(std::string(GGUFKIT_CORPUS) + "/vocab/ggml-vocab-bert-bge.gguf");
    return std::move(*ggufkit::load_vocab(s.model, "bge"));
  }();
  return v;
}

// bge with the BERT normalizer options as tokenizer.ggml.normalizer.lowercase and
// .strip_accents set them (strip_accents defaults to lowercase).
std::unique_ptr<tk::Vocab::Impl> bge_with(bool lowercase, bool strip_accents) {
  auto v = std::make_unique<tk::Vocab::Impl>();
  v->type = tk::Kind::wpm;
  v->token_to_id = bge().impl().token_to_id;
  v->id_to_token = bge().impl().id_to_token;
  v->special_unk_id = 100;
  v->bert_lowercase = lowercase, v->bert_strip_accents = strip_accents;
  return v;
}

TEST(Wpm, AccentsAreStrippedAndLettersLowerCasedBeforeTheLongestMatch) {
  EXPECT_EQ(bge().tokenize("Caf\xc3\xa9 NA\xc3\x8fVE \xc3\x85ngstr\xc3\xb6m", false, false), (Ids{7668, 15743, 17076, 15687}));
  // U+0130 lower-cases to i (the simple mapping); U+01C5 (title case) to U+01C6, unknown.
  EXPECT_EQ(bge().tokenize("\xc4\xb0stanbul \xc7\x85""emal", false, false), (Ids{9960, 100}));
  // llama.cpp's NFD keeps the first code point only: a Hangul syllable is its leading jamo.
  EXPECT_EQ(bge().tokenize("\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4", false, false), (Ids{1469, 29991, 29999}));
}

// A four-byte sequence past U+10FFFF (F4 9E 8A BA is 0x11E2BA): llama.cpp's WordPiece
// throws "invalid codepoint" out of llama_tokenize, which ends the program (the differential
// test saw it abort); ggufkit refuses the text rather than invent ids.
TEST(Wpm, ACodePointPastTheLastIsRefusedWhereLlamaCppAborts) {
  try {
    bge().tokenize("x\xf4\x9e\x8a\xbay", false, false);
    ADD_FAILURE() << "no error";
  } catch (const tk::Error& e) {
    EXPECT_STREQ(e.what(), "invalid codepoint");
  }
  EXPECT_EQ(bge().tokenize("x\xf4\x8f\xbf\xbfy", false, false), (Ids{100}));  // U+10FFFF is a character: one unknown word, as llama.cpp gives
}

TEST(Wpm, PunctuationAsciiSymbolsAndCjkIdeographsAreWordsOfTheirOwn) {
  // "+", "=", "$" split (ASCII symbols); "€" does not (a symbol past 0x7F).
  EXPECT_EQ(bge().tokenize("a+b=c $5 \xe2\x82\xac""5 a\xe2\x82\xac""b", false, false),
            (Ids{1037, 1009, 1038, 1027, 1039, 1002, 1019, 1574, 2629, 1037, 30102, 2497}));
  // Each ideograph alone; kana stay one word.
  EXPECT_EQ(bge().tokenize("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xa8\xe3\x81\xab\xe3\x81\xbb\xe3\x82\x93\xe3\x81\x94", false, false),
            (Ids{1864, 1876, 1950, 1666, 30194, 30202, 30217, 30181}));
  EXPECT_EQ(bge().tokenize("don't stop...!", false, false), (Ids{2123, 1005, 1056, 2644, 1012, 1012, 1012, 999}));
}

TEST(Wpm, ControlAndFormatCharactersVanishAndEveryWhiteSpaceSplits) {
  // U+200B and U+00AD (Cf) and NUL vanish; TAB, U+3000 and U+0085 split.
  EXPECT_EQ(bge().tokenize(std::string("a\xe2\x80\x8b""b\xc2\xad""c\td\xe3\x80\x80""e\xc2\x85""f\0g", 20), false, false),
            (Ids{5925, 1040, 1041, 1042, 2290}));
  // An invalid byte decodes as U+FFFD, which vanishes too.
  EXPECT_EQ(bge().tokenize("ab\xff""cd", false, false), (Ids{5925, 2094}));
}

TEST(Wpm, AWordNoTokensCoverIsOneUnknownToken) {
  EXPECT_EQ(bge().tokenize("hello \xf0\x9d\x94\x98\xf0\x9d\x94\xab world", false, false), (Ids{7592, 100, 2088}));
  EXPECT_EQ(bge().tokenize("\xef\xac\x81ne \xef\xbc\x92\xef\xbc\x90\xef\xbc\x92\xef\xbc\x94", false, false), (Ids{1984, 2638, 100}));
}

TEST(Wpm, TheNormalizerKeysTurnLowerCaseAndAccentStrippingOff) {
  auto no_lower = bge_with(false, false), keep_accents = bge_with(true, false), strip_only = bge_with(false, true);
  auto a = tk::make_wpm(*no_lower), b = tk::make_wpm(*keep_accents), c = tk::make_wpm(*strip_only);
  EXPECT_EQ(run(*a, "Caf\xc3\xa9 na\xc3\xafve"), (Ids{100, 100}));
  EXPECT_EQ(run(*a, "Hello WORLD"), (Ids{100, 100}));
  EXPECT_EQ(run(*b, "Caf\xc3\xa9 na\xc3\xafve"), (Ids{100, 100}));
  EXPECT_EQ(run(*b, "Hello WORLD"), (Ids{7592, 2088}));
  EXPECT_EQ(run(*b, "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4"), (Ids{100}));
  EXPECT_EQ(run(*c, "Caf\xc3\xa9 na\xc3\xafve"), (Ids{100, 15743}));
  EXPECT_EQ(run(*c, "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4"), (Ids{1469, 29991, 29999}));
}

TEST(Wpm, AMegabyteOfOneCharacterIsCutAsLlamaCppCutsIt) {
  Ids a = bge().tokenize(std::string(1000000, 'a'), false, false);
  ASSERT_EQ(a.size(), 500000u);
  EXPECT_EQ(a.front(), 13360);
  EXPECT_EQ(a.back(), 2050);
  EXPECT_EQ(std::count(a.begin(), a.end(), 11057), 499998);
  Ids bang = bge().tokenize(std::string(1000000, '!'), false, false);
  EXPECT_EQ(bang, Ids(1000000, 999));
  std::string ri;
  for (int i = 0; i < 100000; ++i) ri += "\xe6\x97\xa5";
  EXPECT_EQ(bge().tokenize(ri, false, false), Ids(100000, 1864));
}

// --- Unigram, on a small t5 vocabulary ---

// (text, score, GGUF token type): 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused.
struct Tok {
  const char* text;
  float score;
  int type;
};
#define U2581 "\xe2\x96\x81"
const Tok t5_tokens[] = {
    {"<pad>", 0, 3}, {"</s>", 0, 3}, {"<unk>", 0, 2}, {U2581, -2.0f, 1}, {U2581 "the", -3.1f, 1}, {U2581 "a", -3.5f, 1},
    {U2581 "cat", -5.2f, 1}, {U2581 "c", -6.0f, 1}, {"at", -4.4f, 1}, {"a", -4.0f, 1}, {"t", -4.1f, 1}, {"h", -4.6f, 1},
    {"e", -3.9f, 1}, {"c", -4.8f, 1}, {U2581 "hello", -7.0f, 1}, {"hell", -6.5f, 1}, {"o", -4.2f, 1},
    {U2581 "world", -7.5f, 1}, {"wor", -6.9f, 1}, {"ld", -5.5f, 1}, {"l", -4.3f, 1}, {"d", -4.7f, 1}, {"r", -4.5f, 1},
    {"w", -5.0f, 1}, {"s", -4.05f, 1}, {U2581 "is", -4.9f, 1}, {"i", -4.15f, 1}, {"\xc3\xa9", -6.2f, 1},
    {"\xc3\xbc", -6.3f, 1}, {"\xe6\x97\xa5\xe6\x9c\xac", -8.0f, 1}, {"\xe6\x97\xa5", -7.1f, 1},
    {"\xe6\x9c\xac", -7.2f, 1}, {U2581 "\xe6\x97\xa5\xe6\x9c\xac", -8.5f, 1}, {"fi", -6.6f, 1}, {"n", -4.25f, 1},
    {U2581 "fi", -6.4f, 1}, {"<ud>", 0, 4}, {"zz", -9.0f, 5}, {"A", -5.9f, 1}, {"q", -5.8f, 1}, {"Q", -5.85f, 1},
    {"x", -6.1f, 1}, {"\xc3\x83", -9.5f, 1}, {"\xc3\xa9t", -6.0f, 1}, {".", -3.3f, 1}, {",", -3.4f, 1},
    {"1", -5.1f, 1}, {"12", -5.0f, 1}, {"\xef\xbf\xbd", -7.7f, 1}, {"tt", -6.8f, 1}, {"ea", -6.7f, 1},
    {U2581 U2581, -5.3f, 1},
};

uint32_t attr_of(int type) {
  switch (type) {
    case 1: return tk::attr_normal;
    case 2: return tk::attr_unknown;
    case 3: return tk::attr_control;
    case 4: return tk::attr_user_defined;
    case 5: return tk::attr_unused;
    default: return tk::attr_undefined;
  }
}

// A darts-clone XOR-compressed double array of the keys, as SentencePiece's precompiled
// charsmap holds it: each node with children or a value owns a block of 256 units, so its
// children sit at base ^ byte and its value unit at base ^ 0.
std::vector<char> charsmap(const std::vector<std::pair<std::string, std::string>>& rules) {
  struct Node {
    std::map<uint8_t, int> kids;
    int64_t value = -1;
  };
  std::vector<Node> nodes(1);
  std::string strings;
  for (const auto& [key, repl] : rules) {
    int n = 0;
    for (char ch : key) {
      auto c = static_cast<uint8_t>(ch);
      if (!nodes[n].kids.count(c)) nodes[n].kids[c] = static_cast<int>(nodes.size()), nodes.emplace_back();
      n = nodes[n].kids[c];
    }
    nodes[n].value = static_cast<int64_t>(strings.size());
    strings += repl, strings += '\0';
  }
  auto base = [](int n) { return 256u * static_cast<uint32_t>(n + 1); };  // node n's block
  std::vector<uint32_t> units(256 * (nodes.size() + 1), 0);
  units[0] = base(0) << 10;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const uint32_t b = base(static_cast<int>(n));
    if (nodes[n].value >= 0) units[b] = (1u << 31) | static_cast<uint32_t>(nodes[n].value);
    for (auto [c, k] : nodes[n].kids) {
      const uint32_t at = b ^ c;
      units[at] = ((at ^ base(k)) << 10) | (nodes[static_cast<size_t>(k)].value >= 0 ? 1u << 8 : 0) | c;
    }
  }
  std::vector<char> blob(4 + units.size() * 4);
  const auto size = static_cast<uint32_t>(units.size() * 4);
  std::memcpy(blob.data(), &size, 4);
  std::memcpy(blob.data() + 4, units.data(), size);
  blob.insert(blob.end(), strings.begin(), strings.end());
  return blob;
}

// Full-width A, the fi ligature, TAB and U+3000, e + combining acute, Q and QQ (nested
// keys), DEL to nothing, two spaces to one, Å to A + combining ring.
std::vector<char> t5_charsmap() {
  return charsmap({{"\xef\xbc\xa1", "A"},
                   {"\xef\xac\x81", "fi"},
                   {"\t", " "},
                   {"\xe3\x80\x80", " "},
                   {"e\xcc\x81", "\xc3\xa9"},
                   {"Q", "q"},
                   {"QQ", "Q"},
                   {"\x7f", ""},
                   {"  ", " "},
                   {"\xc3\x85", "A\xcc\x8a"}});
}

// The t5 vocabulary with tokenizer.ggml.add_space_prefix and .remove_extra_whitespaces as
// given, and the charsmap or none.
std::unique_ptr<tk::Vocab::Impl> t5(bool space_prefix, bool remove_extra, bool with_charsmap) {
  auto v = std::make_unique<tk::Vocab::Impl>();
  v->type = tk::Kind::ugm;
  v->special_unk_id = 2;
  auto index = std::make_shared<tk::TokenIndex>();
  for (const Tok& t : t5_tokens) {
    index->add(t.text);
    v->id_to_token.push_back({t.text, t.score, attr_of(t.type)});
  }
  index->build();
  v->token_to_id = index;
  v->add_space_prefix = space_prefix, v->remove_extra_whitespaces = remove_extra;
  if (with_charsmap) v->precompiled_charsmap = t5_charsmap();
  return v;
}

// The texts each configuration is asked, in order.
const std::string t5_texts[] = {
    "the cat", " hello  world ", "QQQ Q", "\xef\xbc\xa1\xef\xbc\xa1 \xef\xac\x81ne", "e\xcc\x81t", "\t\xe3\x80\x80x",
    "a\x7f""b", "<u <ud", "cat\xc3\xa9 12.1,", "\xe6\x97\xa5\xe6\x9c\xac \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
    "\xff\xfe""ab\xc3", "zz", "\xc3\x85", "", "   ", U2581 "the  " U2581, "tthee",
};

void expect_t5(const tk::Vocab::Impl& v, const std::vector<Ids>& want) {
  auto ugm = tk::make_ugm(v);
  ASSERT_EQ(want.size(), std::size(t5_texts));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(run(*ugm, t5_texts[i]), want[i]) << "text " << i << ": " << t5_texts[i];
}

TEST(Ugm, WithoutCharsmapOrFlagsTheTextIsSegmentedAsItIs) {
  // Unknown runs are one <unk> (2); invalid bytes are U+FFFD (48); the unused "zz" is a
  // token; "<u" walks the user-defined trie and is kept as it is.
  expect_t5(*t5(false, false, false),
            {{10, 11, 12, 6}, {14, 3, 17, 3}, {40, 40, 40, 3, 40}, {2, 3, 2, 34, 12}, {12, 2, 10}, {2, 41}, {9, 2},
             {2, 3, 2, 21}, {13, 8, 27, 3, 47, 44, 46, 45}, {29, 32, 2}, {48, 48, 9, 2, 48}, {37}, {2}, {}, {3, 3, 3},
             {4, 3, 3, 3}, {49, 11, 12, 12}});
}

TEST(Ugm, TheCharsmapNormalizesAndT5sFlagsPrefixAndMergeSpaces) {
  // As t5's own files: add_space_prefix and remove_extra_whitespaces, with the charsmap.
  expect_t5(*t5(true, true, true),
            {{4, 6}, {14, 17}, {3, 40, 39, 3, 39}, {3, 38, 38, 35, 34, 12}, {3, 43}, {3, 41}, {5, 2}, {3, 2, 3, 2, 21},
             {6, 27, 3, 47, 44, 46, 45}, {32, 32, 2}, {3, 48, 48, 9, 2, 48}, {3, 37}, {3, 38, 2}, {}, {}, {3, 4, 3, 3},
             {3, 49, 11, 12, 12}});
}

TEST(Ugm, ASpacePrefixWithoutMergingKeepsEverySpace) {
  expect_t5(*t5(true, false, true),
            {{4, 6}, {3, 14, 17, 3}, {3, 40, 39, 3, 39}, {3, 38, 38, 35, 34, 12}, {3, 43}, {3, 3, 3, 41}, {5, 2},
             {3, 2, 3, 2, 21}, {6, 27, 3, 47, 44, 46, 45}, {32, 32, 2}, {3, 48, 48, 9, 2, 48}, {3, 37}, {3, 38, 2}, {},
             {3, 3}, {3, 4, 3, 3}, {3, 49, 11, 12, 12}});
}

TEST(Ugm, MergingSpacesPutsOneBeforeEveryWordEvenWithoutThePrefixFlag) {
  expect_t5(*t5(false, true, false),
            {{4, 6}, {14, 17}, {3, 40, 40, 40, 3, 40}, {3, 2, 3, 2, 34, 12}, {3, 12, 2, 10}, {3, 2, 41}, {5, 2},
             {3, 2, 3, 2, 21}, {6, 27, 3, 47, 44, 46, 45}, {32, 32, 2}, {3, 48, 48, 9, 2, 48}, {3, 37}, {3, 2}, {}, {},
             {3, 4, 3, 3}, {3, 49, 11, 12, 12}});
}

TEST(Ugm, AMegabyteOfOneCharacterIsSegmentedAsLlamaCppSegmentsIt) {
  auto real = t5(true, true, true), plain = t5(false, false, false);
  auto r = tk::make_ugm(*real), p = tk::make_ugm(*plain);
  Ids a = run(*r, std::string(1000000, 'a'));
  ASSERT_EQ(a.size(), 1000000u);
  EXPECT_EQ(a[0], 5);
  EXPECT_EQ(std::count(a.begin(), a.end(), 9), 999999);
  Ids q = run(*r, std::string(1000001, 'Q'));  // QQ -> Q each, the last Q -> q
  ASSERT_EQ(q.size(), 500002u);
  EXPECT_EQ(q.front(), 3);
  EXPECT_EQ(q.back(), 39);
  EXPECT_EQ(std::count(q.begin(), q.end(), 40), 500000);
  Ids bad = run(*r, std::string(1000000, '\xff'));
  ASSERT_EQ(bad.size(), 1000001u);
  EXPECT_EQ(bad[0], 3);
  EXPECT_EQ(std::count(bad.begin(), bad.end(), 48), 1000000);
  EXPECT_EQ(run(*r, std::string(1000000, ' ')), Ids{});
  EXPECT_EQ(run(*p, std::string(1000000, ' ')), Ids(1000000, 3));
}

TEST(Ugm, OnlySpecialTokensGiveOneUnknownForEachRun) {
  // <pad> </s> <unk> and nothing else: llama.cpp's "abc de" and "x\ny" are one <unk> each.
  auto v = std::make_unique<tk::Vocab::Impl>();
  v->special_unk_id = 2;
  v->id_to_token = {{"<pad>", 0, tk::attr_control}, {"</s>", 0, tk::attr_control}, {"<unk>", 0, tk::attr_unknown}};
  auto ugm = tk::make_ugm(*v);
  EXPECT_EQ(run(*ugm, "abc de"), Ids{2});
  EXPECT_EQ(run(*ugm, "x\ny"), Ids{2});
  EXPECT_EQ(run(*ugm, ""), Ids{});
}

TEST(Ugm, ACharsmapWhoseSizesLieIsRefusedAsLlamaCppRefusesIt) {
  auto v = t5(false, false, false);
  v->precompiled_charsmap = {1, 0, 0};
  EXPECT_THROW(tk::make_ugm(*v), tk::Error);  // too small for its size header
  std::vector<char> blob = t5_charsmap();
  const auto claims = static_cast<uint32_t>(blob.size() - 4);  // XCDA to the end: no strings
  std::memcpy(blob.data(), &claims, 4);
  v->precompiled_charsmap = blob;
  try {
    tk::make_ugm(*v);
    ADD_FAILURE() << "no error";
  } catch (const tk::Error& e) {
    EXPECT_EQ(e.key, "tokenizer.ggml.precompiled_charsmap");
    EXPECT_STREQ(e.what(), "Index out of array bounds in precompiled charsmap!");
  }
}

// A charsmap of the given units and strings.
std::vector<char> raw_charsmap(const std::vector<uint32_t>& units, std::string_view strings) {
  std::vector<char> blob(4 + units.size() * 4);
  const auto size = static_cast<uint32_t>(units.size() * 4);
  std::memcpy(blob.data(), &size, 4);
  std::memcpy(blob.data() + 4, units.data(), size);
  blob.insert(blob.end(), strings.begin(), strings.end());
  return blob;
}

std::string error_of(const tk::Algorithm& a, std::string_view text) {
  try {
    run(a, text);
  } catch (const tk::Error& e) {
    return e.what();
  }
  return "";
}

TEST(Ugm, ACharsmapThatPointsOutsideItselfIsAnErrorNotARead) {
  auto v = t5(false, false, false);
  // The root's children are at 1000 ^ byte: past the 2 units. (llama.cpp refuses such a
  // file at load already, when it tokenizes "\n" for the newline id.)
  v->precompiled_charsmap = raw_charsmap({1000u << 10, 0}, std::string("x\0", 2));
  EXPECT_EQ(error_of(*tk::make_ugm(*v), "\n"), "Index out of array bounds in XCDA array!");
  // "a" matches (root base 256, unit 256^'a' a leaf whose value unit is at 256^'a'^1):
  // first with a value past the strings, then with a string that is not terminated
  // (llama.cpp throws the same two errors, out of llama_tokenize).
  std::vector<uint32_t> units(512, 0);
  units[0] = 256u << 10;
  units[256 ^ 'a'] = (1u << 10) | (1u << 8) | 'a';
  units[(256 ^ 'a') ^ 1] = (1u << 31) | 7;
  v->precompiled_charsmap = raw_charsmap(units, std::string("x\0", 2));
  EXPECT_EQ(error_of(*tk::make_ugm(*v), "a"), "Index out of array bounds in precompiled charsmap!");
  units[(256 ^ 'a') ^ 1] = (1u << 31) | 0;
  v->precompiled_charsmap = raw_charsmap(units, "xy");
  EXPECT_EQ(error_of(*tk::make_ugm(*v), "a"), "Unterminated string in precompiled charsmap!");
  // A valid one: "a" becomes "x".
  v->precompiled_charsmap = raw_charsmap(units, std::string("x\0", 2));
  EXPECT_EQ(run(*tk::make_ugm(*v), "aa"), (Ids{41, 41}));
}

TEST(Ugm, ACharsmapWhoseNodesLoopEndsEachWalkAfterAFewHundredBytes) {
  // Unit 256 ^ 'a' is its own child by 'a' and never a leaf: llama.cpp walks the rest of
  // the text from every position (quadratic); the walk here stops at 256 bytes. Nothing
  // matches, so the text is as without a charsmap.
  std::vector<uint32_t> units(512, 0);
  units[0] = 256u << 10;
  units[256 ^ 'a'] = (static_cast<uint32_t>('a') << 10) | 'a';
  auto v = t5(false, false, false);
  v->precompiled_charsmap = raw_charsmap(units, std::string("x\0", 2));
  EXPECT_EQ(run(*tk::make_ugm(*v), std::string(100000, 'a')), Ids(100000, 9));
}

// --- RWKV ---

// Escaped texts as the converter writes them, then every byte not among them as \xHH (as
// real RWKV vocabularies have every byte). Where two texts unescape to the same bytes
// ("a" and "\x61") the later id wins, as in llama.cpp's trie.
std::unique_ptr<tk::Vocab::Impl> rwkv() {
  static const char* first[] = {
      "\\x00", "a", "b", "c", " ", "\\n", "\\t", "ab", "abc", " the", "the", "th", "\\x80", "\\xe6\\x97",
      "\\xe6\\x97\\xa5", "\\\\", "\\\"", "he", "hello", " hello", "wor", "world", "o", "l", "d", "r", "w", "e", "h",
      "t", "\\r\\n", "\\'", "ff", "\\xc3\\xa9", "x\\x41", "\\x4", "abcd", "1", "12", "123"};
  auto v = std::make_unique<tk::Vocab::Impl>();
  v->type = tk::Kind::rwkv;
  v->special_unk_id = -1;
  std::set<std::string> added;
  auto index = std::make_shared<tk::TokenIndex>();
  auto add = [&](const std::string& t) {
    if (!added.insert(t).second) return;
    index->add(t);
    v->id_to_token.push_back({{}, 0, tk::attr_normal});
  };
  for (const char* t : first) add(t);
  for (int b = 0; b < 256; ++b) {
    char esc[8];
    std::snprintf(esc, sizeof esc, "\\x%02x", b);
    add(esc);
  }
  index->build();
  // a token's text is a view of the index's copy, as in a loaded vocabulary
  for (size_t id = 0; id < v->id_to_token.size(); ++id) v->id_to_token[id].text = index->key(static_cast<int32_t>(id));
  v->token_to_id = index;
  return v;
}

TEST(Rwkv, EscapedTokensAreBytesAndTheLongestMatchWinsGreedily) {
  auto v = rwkv();
  ASSERT_EQ(v->id_to_token.size(), 294u);
  auto a = tk::make_rwkv(*v);
  EXPECT_EQ(run(*a, "abcd abc ab a"), (Ids{36, 71, 8, 71, 7, 71, 136}));
  EXPECT_EQ(run(*a, " the hello world"), (Ids{9, 19, 71, 21}));
  EXPECT_EQ(run(*a, "hello\r\n\\\"x"), (Ids{18, 30, 131, 73, 159}));
  // "\xe6\x97" is a token; "\xe6\x97\xa5" longer; "x\x41" is "xA".
  EXPECT_EQ(run(*a, "\xe6\x97\xa5\xe6\x97x"), (Ids{14, 13, 159}));
  EXPECT_EQ(run(*a, std::string("xA\0\x80\xff", 5)), (Ids{34, 0, 12, 293}));
  EXPECT_EQ(run(*a, "12312"), (Ids{39, 38}));
  EXPECT_EQ(run(*a, "it's"), (Ids{144, 155, 78, 154}));
  EXPECT_EQ(run(*a, "ff f"), (Ids{32, 71, 141}));
}

TEST(Rwkv, AMegabyteOfOneByteIsThatBytesToken) {
  auto v = rwkv();
  auto a = tk::make_rwkv(*v);
  EXPECT_EQ(run(*a, std::string(1000000, 'a')), Ids(1000000, 136));
  EXPECT_EQ(run(*a, std::string(1000000, '\xff')), Ids(1000000, 293));
}

TEST(Rwkv, ABytesNoTokenStartsIsTheUnknownIdMinusOne) {
  // Only "\n": llama.cpp gives -1 (no unknown token) for every other byte.
  auto v = std::make_unique<tk::Vocab::Impl>();
  v->special_unk_id = -1;
  v->id_to_token = {{"\\n", 0, tk::attr_normal}};
  auto a = tk::make_rwkv(*v);
  EXPECT_EQ(run(*a, "abc de"), Ids(6, -1));
  EXPECT_EQ(run(*a, "x\ny"), (Ids{-1, 0, -1}));
}

TEST(Rwkv, AByteThatOnlyStartsLongerTokensIsUnknownInsteadOfLlamaCppsEndlessLoop) {
  // "ab" but no "a": llama.cpp pushes 0 and restarts at the text's start, forever; here
  // the byte is unknown and the match goes on.
  auto v = std::make_unique<tk::Vocab::Impl>();
  v->special_unk_id = -1;
  v->id_to_token = {{"ab", 0, tk::attr_normal}, {"c", 0, tk::attr_normal}};
  EXPECT_EQ(run(*tk::make_rwkv(*v), "acab"), (Ids{-1, 1, 0}));
}

// --- Every algorithm on an empty vocabulary (which llama.cpp's load refuses) ---

TEST(EmptyVocabulary, EveryAlgorithmGivesTheUnknownIdAndNeverReadsATokenThatIsNotThere) {
  tk::Vocab::Impl v;
  v.special_unk_id = 7;
  EXPECT_EQ(run(*tk::make_wpm(v), "hello, world"), (Ids{7, 7, 7}));
  EXPECT_EQ(run(*tk::make_ugm(v), "hello, world"), Ids{7});
  EXPECT_EQ(run(*tk::make_rwkv(v), "hey"), (Ids{7, 7, 7}));
  EXPECT_EQ(run(*tk::make_ugm(v), ""), Ids{});
}

}  // namespace
