// Tests of BPE and the pre-tokenizers: llama.cpp's table of tokenizer.ggml.pre names and what
// each sets, and for every name the gpt-2 corpus vocabulary relabelled with it tokenizing hard
// texts exactly as llama.cpp does. The expected ids come from llama.cpp itself (the libllama
// the interop tests use, through bench/llama_tokenize), with add_special = parse_special = false.
#include <gtest/gtest.h>

#include "../paths.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../../tokenizer/src/impl.h"
#include "ggufkit/scan.h"
#include "ggufkit/vocab.h"

namespace {

using ggufkit::tokenizer::Error;
using ggufkit::tokenizer::Vocab;

// The gpt-2 corpus vocabulary with tokenizer.ggml.pre set to `pre`.
Vocab gpt2_as(const std::string& pre) {
  static const ggufkit::Scanned scanned = ggufkit::scan_file(std::string(GGUFKIT_CORPUS) + "/vocab/ggml-vocab-gpt-2.gguf");
  static std::map<std::string, std::string> names;  // the spec's views point here
  ggufkit::tokenizer::VocabSpec spec = ggufkit::vocab_spec(scanned.model);
  const std::string& kept = names.emplace(pre, pre).first->second;
  spec.keys["tokenizer.ggml.pre"].type = ggufkit::tokenizer::ValueType::string;
  spec.keys["tokenizer.ggml.pre"].str = kept;
  return Vocab::load(spec);
}

std::string show(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += " " + std::to_string(id);
  return s;
}

// Every name llama.cpp accepts (its if-chain in llama_vocab::impl::load), in its order.
const std::vector<std::string> llama_cpp_names = {
  "default", "minicpm5", "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
  "jina-v5-nano", "deepseek-llm", "deepseek-coder", "deepseek-v3", "youtu", "falcon", "mpt", "starcoder", "gpt-2",
  "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert",
  "jais-2", "gemma4", "granite-embed-multi-311m", "sarvam-moe", "jina-v1-en", "jina-v2-code", "roberta-bpe",
  "whitespace", "refact", "command-r", "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "qwen35", "stablelm2",
  "olmo", "dbrx", "smaug-bpe", "poro-chat", "glm4", "chatglm-bpe", "viking", "jais", "tekken", "smollm",
  "codeshell", "bloom", "gpt3-finnish", "exaone", "exaone4", "exaone-moe", "chameleon", "minerva-7b", "megrez",
  "gpt-4o", "llama4", "kanana2", "talkie", "granite-embed-multi-97m", "tiny_aya", "cohere2moe", "superbpe",
  "trillion", "granite-docling", "bailingmoe", "bailingmoe2", "llada-moe", "seed-coder", "hunyuan", "hunyuan-dense",
  "joyai-llm", "kimi-k2", "grok-2", "afmoe", "laguna", "minimax-m2", "solar-open", "mellum2",
};

TEST(BpePreNames, KnownPreNamesAreLlamaCppsInItsOrder) { EXPECT_EQ(ggufkit::tokenizer::known_pre_names(), llama_cpp_names); }

// What each branch sets, read off llama.cpp's chain: the type's name and the flags, on top
// of what every BPE vocabulary starts from (clean_spaces, no escape, no prefix space).
struct Sets {
  const char* name;
  const char* type;
  bool clean_spaces, ignore_merges, add_bos, add_sep, escape_whitespaces, bos_none, lowercase;
};
const Sets llama_cpp_sets[] = {
    {"default", "default", true, false, false, false, false, false, true},
    {"minicpm5", "minicpm5", true, true, false, false, false, false, true},
    {"llama3", "llama3", true, true, true, false, false, false, true},
    {"llama-v3", "llama3", true, true, true, false, false, false, true},
    {"llama-bpe", "llama3", true, true, true, false, false, false, true},
    {"falcon3", "llama3", true, true, true, false, false, false, true},
    {"falcon-h1", "llama3", true, true, true, false, false, false, true},
    {"pixtral", "llama3", true, true, true, false, false, false, true},
    {"midm-2.0", "llama3", true, true, true, false, false, false, true},
    {"lfm2", "llama3", true, true, true, false, false, false, true},
    {"jina-v5-nano", "llama3", true, true, true, false, false, false, true},
    {"deepseek-llm", "deepseek_llm", false, false, false, false, false, false, true},
    {"deepseek-coder", "deepseek_coder", false, false, false, false, false, false, true},
    {"deepseek-v3", "deepseek3_llm", false, false, false, false, false, false, true},
    {"youtu", "youtu", false, true, false, false, false, false, true},
    {"falcon", "falcon", true, false, false, false, false, false, true},
    {"mpt", "mpt", true, false, false, false, false, false, true},
    {"starcoder", "starcoder", true, false, false, false, false, false, true},
    {"gpt-2", "gpt2", true, false, false, false, false, false, true},
    {"phi-2", "gpt2", true, false, false, false, false, false, true},
    {"jina-es", "gpt2", true, false, false, false, false, false, true},
    {"jina-de", "gpt2", true, false, false, false, false, false, true},
    {"gigachat", "gpt2", true, false, false, false, false, false, true},
    {"jina-v2-es", "gpt2", true, false, false, false, false, false, true},
    {"jina-v2-de", "gpt2", true, false, false, false, false, false, true},
    {"a.x-4.0", "gpt2", true, false, false, false, false, false, true},
    {"mellum", "gpt2", true, false, false, false, false, false, true},
    {"modern-bert", "gpt2", true, false, false, false, false, false, true},
    {"jais-2", "jais2", true, false, false, false, false, false, true},
    {"gemma4", "gemma4", true, false, false, false, true, false, true},
    {"granite-embed-multi-311m", "gemma4", true, false, false, false, true, false, true},
    {"sarvam-moe", "sarvam_moe", false, false, false, false, true, false, true},
    {"jina-v1-en", "gpt2", true, false, false, true, false, false, true},
    {"jina-v2-code", "gpt2", true, false, false, true, false, false, true},
    {"roberta-bpe", "gpt2", true, false, false, true, false, false, true},
    {"whitespace", "whitespace", true, false, false, false, false, false, false},
    {"refact", "refact", true, false, false, false, false, false, true},
    {"command-r", "command_r", false, false, false, false, false, false, true},
    {"qwen2", "qwen2", false, false, false, false, false, false, true},
    {"deepseek-r1-qwen", "qwen2", false, false, false, false, false, false, true},
    {"kormo", "qwen2", false, false, false, false, false, false, true},
    {"f2llmv2", "qwen2", false, false, false, false, false, false, true},
    {"qwen35", "qwen35", false, false, false, false, false, false, true},
    {"stablelm2", "stablelm2", true, false, false, false, false, false, true},
    {"olmo", "olmo", true, false, false, false, false, false, true},
    {"dbrx", "dbrx", true, false, false, false, false, false, true},
    {"smaug-bpe", "smaug", true, false, false, false, false, false, true},
    {"poro-chat", "poro", false, false, false, false, false, false, true},
    {"glm4", "chatglm4", true, false, false, false, false, true, true},
    {"chatglm-bpe", "chatglm4", true, false, false, false, false, true, true},
    {"viking", "viking", false, false, false, false, false, false, true},
    {"jais", "jais", true, false, false, false, false, false, true},
    {"tekken", "tekken", false, true, true, false, false, false, true},
    {"smollm", "smollm", false, false, false, false, false, false, true},
    {"codeshell", "codeshell", true, false, false, false, false, false, true},
    {"bloom", "bloom", true, false, false, false, false, false, true},
    {"gpt3-finnish", "gpt3_finnish", true, false, false, false, false, false, true},
    {"exaone", "exaone", true, false, false, false, false, false, true},
    {"exaone4", "gpt2", true, false, false, false, false, false, true},
    {"exaone-moe", "exaone_moe", true, false, false, false, false, false, true},
    {"chameleon", "chameleon", false, false, true, false, false, false, true},
    {"minerva-7b", "minerva", true, false, false, false, false, false, true},
    {"megrez", "qwen2", true, false, false, false, false, false, true},
    {"gpt-4o", "gpt4o", false, false, false, false, false, false, true},
    {"llama4", "gpt4o", false, false, false, false, false, false, true},
    {"kanana2", "gpt4o", false, false, false, false, false, false, true},
    {"talkie", "gpt4o", false, false, false, false, false, false, true},
    {"granite-embed-multi-97m", "granite_emb_multi", false, true, false, false, false, false, true},
    {"tiny_aya", "tiny_aya", false, false, false, false, false, false, true},
    {"cohere2moe", "tiny_aya", false, false, false, false, false, false, true},
    {"superbpe", "superbpe", false, false, false, false, false, false, true},
    {"trillion", "trillion", false, false, false, false, false, false, true},
    {"granite-docling", "granite_docling", false, false, false, false, false, false, true},
    {"bailingmoe", "bailingmoe", false, false, false, false, false, false, true},
    {"bailingmoe2", "bailingmoe", false, false, false, false, false, false, true},
    {"llada-moe", "bailingmoe", false, false, false, false, false, false, true},
    {"seed-coder", "seed_coder", false, false, false, false, false, false, true},
    {"hunyuan", "hunyuan", false, false, false, false, false, false, true},
    {"hunyuan-dense", "hunyuan_dense", false, false, false, false, false, false, true},
    {"joyai-llm", "joyai_llm", false, false, false, false, false, false, true},
    {"kimi-k2", "kimi_k2", false, false, false, false, false, false, true},
    {"grok-2", "grok_2", false, false, false, false, false, false, true},
    {"afmoe", "afmoe", false, false, false, false, false, false, true},
    {"laguna", "laguna", false, false, false, false, false, false, true},
    {"minimax-m2", "minimax_m2", false, false, false, false, false, false, true},
    {"solar-open", "solar_open", false, false, false, false, false, false, true},
    {"mellum2", "mellum2", true, false, false, false, false, false, true},
};

TEST(BpePreNames, EachNameSetsLlamaCppsTypeAndFlags) {
  for (const Sets& s : llama_cpp_sets) {
    Vocab::Impl v;
    v.tokenizer_pre = s.name;
    v.special_bos_id = 11;
    v.escape_whitespaces = true, v.add_space_prefix = true, v.clean_spaces = false;  // the branch resets these
    ggufkit::tokenizer::apply_pre_tokenizer(v);
    EXPECT_EQ(v.pre_type_name, s.type) << s.name;
    EXPECT_EQ(v.clean_spaces, s.clean_spaces) << s.name;
    EXPECT_EQ(v.ignore_merges, s.ignore_merges) << s.name;
    EXPECT_EQ(v.add_bos, s.add_bos) << s.name;
    EXPECT_EQ(v.add_sep, s.add_sep) << s.name;
    EXPECT_EQ(v.escape_whitespaces, s.escape_whitespaces) << s.name;
    EXPECT_EQ(v.special_bos_id, s.bos_none ? -1 : 11) << s.name;
    EXPECT_EQ(v.bert_lowercase, s.lowercase) << s.name;
    EXPECT_FALSE(v.add_space_prefix) << s.name;
    EXPECT_TRUE(v.loaded.warnings.empty()) << s.name;
  }
}

TEST(BpePreNames, AnUnknownNameIsRefusedInLlamaCppsWords) {
  try {
    gpt2_as("nonsense");
    FAIL() << "loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.key, "tokenizer.ggml.pre");
    EXPECT_STREQ(e.what(), "unknown pre-tokenizer type: 'nonsense'");
  }
}

// llama.cpp loads an empty name as "default" with its warning, and tokenizes as "default" does.
TEST(BpePreNames, AnEmptyNameIsDefaultWithLlamaCppsWarning) {
  Vocab v = gpt2_as("");
  EXPECT_EQ(v.pre_type(), "default");
  EXPECT_EQ(v.loaded().warnings.front(), "missing pre-tokenizer type, using: 'default'");
  EXPECT_EQ(v.tokenize("Hello  world 123", false, false), (std::vector<int32_t>{15496, 220, 995, 220, 10163}));
}

// Past U+10FFFF (F4 90 80 80 decodes to 0x110000) llama.cpp throws "invalid codepoint" out of
// llama_tokenize (the oracle program dies of it); so does this, as an Error.
TEST(BpeTokenize, ACodePointPastUnicodeFailsAsInLlamaCpp) {
  Vocab v = gpt2_as("gpt-2");
  try {
    v.tokenize("A\xf4\x90\x80\x80", false, false);
    FAIL() << "tokenized";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "invalid codepoint");
  }
}

// llama.cpp's bpe_ranks is filled by emplace: a merge that comes again keeps its first rank.
// Here "b c" (rank 0) comes again at rank 2: were the later rank kept, "a b" (rank 1) would
// merge first and "ab c" after it, one token; kept first, "b c" merges first and "a bc" is no
// merge, two.
TEST(BpeTokenize, ARepeatedMergeKeepsItsFirstRankAsInLlamaCpp) {
  using ggufkit::tokenizer::KeyValue;
  using ggufkit::tokenizer::ValueType;
  auto strings = [](std::vector<std::string_view> items) {
    KeyValue kv;
    kv.type = ValueType::array, kv.elem = ValueType::string, kv.count = items.size(), kv.strings.assign(items.begin(), items.end());
    return kv;
  };
  auto str = [](std::string_view s) {
    KeyValue kv;
    kv.type = ValueType::string, kv.str = s;
    return kv;
  };
  ggufkit::tokenizer::VocabSpec spec;
  spec.keys["tokenizer.ggml.model"] = str("gpt2");
  spec.keys["tokenizer.ggml.pre"] = str("gpt-2");
  spec.keys["tokenizer.ggml.tokens"] = strings({"a", "b", "c", "ab", "bc", "abc"});
  spec.keys["tokenizer.ggml.merges"] = strings({"b c", "a b", "b c", "ab c"});
  const Vocab v = Vocab::load(spec);
  EXPECT_EQ(v.tokenize("abc", false, false), (std::vector<int32_t>{0, 4}));
  EXPECT_EQ(v.tokenize("ab", false, false), (std::vector<int32_t>{3}));
}

// A word is its bytes in the text unless a code point was decoded from other bytes than it
// encodes to: an overlong form (C0 80 is U+0000, E0 80 80 and F0 80 80 80 too, C1 BF is U+007F)
// is encoded again, shorter, beside an invalid byte (U+FFFD). The ids are llama.cpp's
// (llama_tokenize, node-llama-cpp 3.21.1) on the gpt-2 vocabulary.
TEST(BpeTokenize, OverlongFormsAndInvalidBytesAreEncodedAgainAsInLlamaCpp) {
  Vocab v = gpt2_as("gpt-2");
  EXPECT_EQ(v.tokenize("a\xc0\x80" "b \xff" "c \xe0\x80\x80" "d"), (std::vector<int32_t>{64, 188, 65, 20543, 66, 220, 188, 67}));
  EXPECT_EQ(v.tokenize("x\xf0\x80\x80\x80 y\xc1\xbf"), (std::vector<int32_t>{87, 188, 331, 221}));
  // the same words with no overlong form: the bytes as they are
  EXPECT_EQ(v.tokenize(std::string("a\0b", 3)), (std::vector<int32_t>{64, 188, 65}));
}

// The hard texts: whitespace runs, digits, contractions, CJK, emoji, accents, newlines,
// invalid UTF-8, the patterns some pre-tokenizers name, and non-ASCII whitespace.
const char* const hard_texts[] = {
    "  Hello   world \t\t x  ",
    "1234567 89 1,234.5 \xd9\xa3\xd9\xa4\xd9\xa5 ",
    "I'm don't WE'LL they'Re it's 'S",
    "\xe4\xb8\xad\xe6\x96\x87\xe5\xad\x97\xe7\xac\xa6 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88 \xed\x95\x9c\xea\xb5\xad\xec\x96\xb4",
    "\xf0\x9f\x98\x80\xf0\x9f\xa6\x99 \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd \xf0\x9d\x94\x98\xf0\x9d\x94\xab!",
    "na\xc3\xafve caf\xc3\xa9 e\xcc\x81 \xc3\x85ngstr\xc3\xb6m",
    "line1\nline2\r\n\n\n  \n\tend",
    "bad \xff\xfe bytes \xc3 \xed\xa0\x80 end",
    "<sentinel:12> IMGIMGABZ <dna>acgt</dna> x=y+1;",
    "\xc2\xa0\xe2\x80\x80x\xe3\x80\x80y\xc2\x85z \xe2\x80\x8bw",
};

// llama.cpp's ids for each hard text, for names that tokenize all of them alike; an empty
// optional where llama.cpp aborts (GGML_ASSERT in find_bpe_rank: the 'whitespace' pre-tokenizer
// on a gpt2 model leaves runs of spaces in a word, which llama.cpp's merge lookup refuses).
struct Expected {
  std::vector<const char*> names;
  std::vector<std::optional<std::vector<int32_t>>> ids;
};
const std::vector<Expected> llama_cpp_ids = {
    {{"default"},
     {
         std::vector<int32_t>{220, 18435, 220, 220, 995, 220, 197, 197, 2124, 220, 220},
         std::vector<int32_t>{10163, 29228, 22, 220, 4531, 220, 16, 11, 24409, 13, 20, 220, 149, 96, 149, 97, 149, 98, 220},
         std::vector<int32_t>{40, 6, 76, 836, 6, 83, 12887, 6, 3069, 484, 6, 3041, 340, 6, 82, 220, 6, 50},
         std::vector<int32_t>{40792, 23877, 229, 27764, 245, 163, 105, 99, 10545, 245, 98, 17312, 105, 45739, 252, 5641, 24336, 25084, 43302, 220, 47991, 250, 166, 113, 255, 168, 244, 112},
         std::vector<int32_t>{47249, 222, 8582, 99, 247, 50169, 235, 8582, 237, 121, 220, 47728, 242, 246, 47728, 242, 104, 0},
         std::vector<int32_t>{2616, 38776, 40304, 304, 136, 223, 6184, 227, 782, 2536, 9101, 76},
         std::vector<int32_t>{1370, 16, 198, 1370, 17, 201, 628, 198, 220, 220, 198, 197, 437},
         std::vector<int32_t>{14774, 220, 6353, 9881, 20543, 220, 169, 254, 222, 886},
         std::vector<int32_t>{27, 34086, 20538, 25, 1065, 29, 8959, 38, 3955, 38, 6242, 57, 220, 27, 67, 2616, 29, 330, 13655, 3556, 67, 2616, 29, 2124, 28, 88, 10, 16, 26},
         std::vector<int32_t>{1849, 447, 222, 87, 5099, 222, 88, 126, 227, 89, 20126, 86},
     }},
    {{"minicpm5", "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano", "jais-2", "dbrx", "smaug-bpe", "glm4", "chatglm-bpe", "gpt-4o", "llama4", "kanana2", "talkie", "granite-embed-multi-97m", "minimax-m2"},
     {
         std::vector<int32_t>{220, 18435, 220, 220, 995, 220, 197, 197, 2124, 220, 220},
         std::vector<int32_t>{10163, 29228, 22, 220, 4531, 220, 16, 11, 24409, 13, 20, 220, 149, 96, 149, 97, 149, 98, 220},
         std::vector<int32_t>{40, 1101, 836, 470, 12887, 6, 3069, 484, 6, 3041, 340, 338, 705, 50},
         std::vector<int32_t>{40792, 23877, 229, 27764, 245, 163, 105, 99, 10545, 245, 98, 17312, 105, 45739, 252, 5641, 24336, 25084, 43302, 220, 47991, 250, 166, 113, 255, 168, 244, 112},
         std::vector<int32_t>{47249, 222, 8582, 99, 247, 50169, 235, 8582, 237, 121, 220, 47728, 242, 246, 47728, 242, 104, 0},
         std::vector<int32_t>{2616, 38776, 40304, 304, 136, 223, 6184, 227, 782, 2536, 9101, 76},
         std::vector<int32_t>{1370, 16, 198, 1370, 17, 201, 628, 198, 220, 220, 198, 197, 437},
         std::vector<int32_t>{14774, 220, 6353, 9881, 20543, 220, 169, 254, 222, 886},
         std::vector<int32_t>{27, 34086, 20538, 25, 1065, 29, 8959, 38, 3955, 38, 6242, 57, 1279, 67, 2616, 29, 330, 13655, 3556, 67, 2616, 29, 2124, 28, 88, 10, 16, 26},
         std::vector<int32_t>{1849, 447, 222, 87, 5099, 222, 88, 126, 227, 89, 20126, 86},
     }},
    {{"deepseek-llm"},
     {
         std::vector<int32_t>{220, 18435, 220, 220, 995, 220, 197, 197, 2124, 220, 220},
         std::vector<int32_t>{10163, 2231, 3134, 220, 4531, 220, 16, 11, 24409, 13, 20, 220, 149, 96, 149, 97, 149, 98, 220},
         std::vector<int32_t>{40, 6, 76, 836, 6, 83, 12887, 6, 3069, 484, 6, 3041, 340, 6, 82, 705, 50},
         std::vector<int32_t>{40792, 23877, 229, 27764, 245, 163, 105, 99, 220, 33768, 98, 17312, 105, 45739, 252, 5641, 24336, 25084, 43302, 220, 47991, 250, 166, 113, 255, 168, 244, 112},
         std::vector<int32_t>{47249, 222, 8582, 99, 247, 50169, 235, 8582, 237, 121, 220, 47728, 242, 246, 47728, 242, 104, 0},
         std::vector<int32_t>{2616, 26884, 303, 19945, 2634, 304, 136, 223, 6184, 227, 782, 2536, 9101, 76},
         std::vector<int32_t>{1370, 16, 198, 1370, 17, 201, 198, 198, 198, 220, 220, 198, 197, 437},
         std::vector<int32_t>{14774, 220, 6353, 9881, 20543, 220, 169, 254, 222, 886},
         std::vector<int32_t>{27, 34086, 20538, 25, 1065, 29, 8959, 38, 3955, 38, 6242, 57, 1279, 67, 2616, 29, 330, 13655, 3556, 67, 2616, 29, 2124, 28, 88, 10, 16, 26},
         std::vector<int32_t>{1849, 447, 222, 87, 5099, 222, 88, 126, 227, 89, 220, 9525, 86},
     }},
    {{"deepseek-coder"},
     {
         std::vector<int32_t>{220, 18435, 220, 220, 995, 220, 197, 197, 2124, 220, 220},
         std::vector<int32_t>{16, 17, 18, 19, 20, 21, 22, 220, 23, 24, 220, 16, 11, 17, 18, 19, 13, 20, 220, 149, 96, 149, 97, 149, 98, 220},
         std::vector<int32_t>{40, 6, 76, 836, 6, 83, 12887, 6, 3069, 484, 6, 3041, 340, 6, 82, 705, 50},
         std::vector<int32_t>{40792, 23877, 229, 27764, 245, 163, 105, 99, 220, 33768, 98, 17312, 105, 45739, 252, 5641, 24336, 25084, 43302, 220, 47991, 250, 166, 113, 255, 168, 244, 112},
         std::vector<int32_t>{47249, 222, 8582, 99, 247, 50169, 235, 8582, 237, 121, 220, 47728, 242, 246, 47728, 242, 104, 0},
         std::vector<int32_t>{2616, 38776, 40304, 304, 136, 223, 6184, 227, 782, 2536, 9101, 76},
         std::vector<int32_t>{1370, 16, 198, 1370, 17, 201, 198, 198, 198, 220, 220, 198, 197, 437},
         std::vector<int32_t>{14774, 220, 6353, 9881, 20543, 220, 169, 254, 222, 886},
         std::vector<int32_t>{27, 34086, 20538, 25, 16, 17, 29, 8959, 38, 3955, 38, 6242, 57, 1279, 67, 2616, 29, 330, 13655, 27, 14, 67, 2616, 29, 2124, 28, 88, 10, 16, 26},
         std::vector<int32_t>{1849, 447, 222, 87, 5099, 222, 88, 126, 227, 89, 220, 9525, 86},
     }},
    {{"deepseek-v3", "hunyuan-dense", "joyai-llm"},
     {
         std::vector<int32_t>{220, 18435, 220, 220, 995, 220, 197, 197, 2124, 220, 220},
         std::vector<int32_t>{10163, 29228, 22, 220, 4531, 220, 16, 11, 24409, 13, 20, 220, 149, 96, 149, 97, 149, 98, 220},
         std::vector<int32_t>{40, 1101, 836, 470, 12887, 6, 3069, 484, 6, 3041, 340, 338, 705, 50},
         std::vector<int32_t>{40792, 23877, 229, 27764, 245, 163, 105, 99, 220, 33768, 98, 17312, 105, 45739, 252, 5641, 24336, 25084, 43302, 220, 47991, 250, 166, 113, 255, 168, 244, 112},
         std::vector<int32_t>{47249, 222, 8582, 99, 247, 50169, 235, 8582, 237, 121, 220, 47728, 242, 246, 47728, 242, 104, 0},
         std::vector<int32_t>{2616, 38776, 40304, 304, 136, 223, 6184, 227, 782, 2536, 9101, 76},
         std::vector<int32_t>{1370, 16, 198, 1370, 17, 201, 628, 198, 220, 220, 198, 197, 437},
         std::vector<int32_t>{14774, 220, 6353, 9881, 20543, 220, 169, 254, 222, 886},
         std::vector<int32_t>{27, 34086, 20538, 25, 1065, 29, 8959, 38, 3955, 38, 6242, 57, 1279, 67, 2616, 29, 330, 13655, 3556, 67, 2616, 29, 2124, 28, 88, 10, 16, 26},
         std::vector<int32_t>{1849, 447, 222, 87, 5099, 222, 88, 126, 227, 89, 220, 9525, 86},
     }},
    {{"youtu"},
     {
         std::vector<int32_t>{220, 18435, 220, 220, 995, 220, 197, 197, 2124, 220, 220},
         std::vector<int32_t>{16, 17, 18, 19, 20, 21, 22, 220, 23, 24, 220, 16, 11, 17, 18, 19, 13, 20, 220, 149, 96, 149, 97, 149, 98, 220},
         std::vector<int32_t>{40, 1101, 836, 470, 12887, 6, 3069, 484, 6, 3041, 340, 338, 705, 50},
         std::vector<int32_t>{40792, 23877, 229, 27764, 245, 163, 105, 99, 220, 33768, 98, 17312, 105, 45739, 252, 5641, 24336, 25084, 43302, 220, 47991, 250, 166, 113, 255, 168, 244, 112},
         std::vector<int32_t>{47249, 222, 8582, 99, 247, 50169, 235, 8582, 237, 121, 220, 47728, 242, 246, 47728, 242, 104, 0},
         std::vector<int32_t>{2616, 38776, 40304, 304, 136, 223, 6184, 227, 782, 2536, 9101, 76},
         std::vector<int32_t>{1370, 16, 198, 1370, 17, 201, 628, 198, 220, 220, 198, 197, 437},
         std::vector<int32_t>{14774, 220, 6353, 9881, 20543, 220, 169, 254, 222, 886},
         std::vector<int32_t>{27, 34086, 20538, 25, 16, 17, 29, 8959, 38, 3955, 38, 6242, 57, 1279, 67, 2616, 29, 330, 13655, 3556, 67, 2616, 29, 2124, 28, 88, 10, 16, 26},
         std::vector<int32_t>{1849, 447, 222, 87, 5099, 222, 88, 126, 227, 89, 20126, 86},
     }},
    {{"falcon"},
     {
         std::vector<int32_t>{220, 18435, 220, 220, 995, 220, 197, 197, 2124, 220, 220},
         std::vector<int32_t>{10163, 29228, 22, 9919, 352, 11, 24409, 13, 20, 18923, 96, 149, 97, 149, 98, 220},
         std::vector<int32_t>{40, 6, 76, 836, 6, 83, 12887, 6, 3069, 484, 6, 3041, 340, 6, 82, 220, 6, 50},
         std::vector<int32_t>{40792, 23877, 229, 27764, 245, 163, 105, 99, 10545, 245, 98, 17312, 105, 45739, 252, 5641, 24336, 25084, 43302, 220, 47991, 250, 166, 113, 255, 168, 244, 112},
         std::vector<int32_t>{47249, 222, 8582, 99, 247, 50169, 235, 8582, 237, 121, 220, 47728, 242, 246, 47728, 242, 104, 0},
         std::vector<int32_t>{2616, 38776, 40304, 304, 136, 223, 6184, 227, 782, 2536, 9101, 76},
         std::vector<int32_t>{1370, 16, 198, 1370, 17, 201, 628, 198, 220, 220, 198, 197, 437},
         std::vector<int32_t>{14774, 220, 6353, 9881, 20543, 220, 169, 254, 222, 886},
         std::vector<int32_t>{27, 34086, 20538, 25, 1065, 29, 8959, 38, 3955, 38, 6242, 57, 220, 27, 67, 2616, 29, 330, 13655, 3556, 67, 2616, 29, 2124, 28, 88, 10, 16, 26},
         std::vector<int32_t>{1849, 447, 222, 87, 5099, 222, 88, 126, 227, 89, 20126, 86},
     }},
    {{"mpt", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "jina-v1-en", "jina-v2-code", "roberta-bpe", "olmo", "poro-chat", "jais", "bloom", "gpt3-finnish", "exaone4", "trillion", "granite-docling"},
     {
         std::vector<int32_t>{220, 18435, 220, 220, 995, 220, 197, 197, 2124, 220, 220},
         std::vector<int32_t>{10163, 2231, 3134, 9919, 352, 11, 24409, 13, 20, 18923, 96, 149, 97, 149, 98, 220},
         std::vector<int32_t>{40, 1101, 836, 470, 12887, 6, 3069, 484, 6, 3041, 340, 338, 705, 50},
         std::vector<int32_t>{40792, 23877, 229, 27764, 245, 163, 105, 99, 10545, 245, 98, 17312, 105, 45739, 252, 5641, 24336, 25084, 43302, 220, 47991, 250, 166, 113, 255, 168, 244, 112},
         std::vector<int32_t>{47249, 222, 8582, 99, 247, 50169, 235, 8582, 237, 121, 220, 47728, 242, 246, 47728, 242, 104, 0},
         std::vector<int32_t>{2616, 38776, 40304, 304, 136, 223, 6184, 227, 782, 2536, 9101, 76},
         std::vector<int32_t>{1370, 16, 198, 1370, 17, 201, 628, 198, 220, 220, 198, 197, 437},
         std::vector<int32_t>{14774, 220, 6353, 9881, 20543, 220, 169, 254, 222, 886},
         std::vector<int32_t>{27, 34086, 20538, 25, 1065, 29, 8959, 38, 3955, 38, 6242, 57, 1279, 67, 2616, 29, 330, 13655, 3556, 67, 2616, 29, 2124, 28, 88, 10, 16, 26},
         std::vector<int32_t>{1849, 447, 222, 87, 5099, 222, 88, 126, 227, 89, 20126, 86},
     }},
    {{"starcoder", "refact", "command-r", "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "qwen35", "stablelm2", "viking", "tekken", "smollm", "codeshell", "exaone", "exaone-moe", "minerva-7b", "megrez", "bailingmoe", "bailingmoe2", "llada-moe", "seed-coder", "hunyuan", "grok-2", "laguna", "solar-open", "mellum2"},
     {
         std::vector<int32_t>{220, 18435, 220, 220, 995, 220, 197, 197, 2124, 220, 220},
         std::vector<int32_t>{16, 17, 18, 19, 20, 21, 22, 220, 23, 24, 220, 16, 11, 17, 18, 19, 13, 20, 220, 149, 96, 149, 97, 149, 98, 220},
         std::vector<int32_t>{40, 1101, 836, 470, 12887, 6, 3069, 484, 6, 3041, 340, 338, 705, 50},
         std::vector<int32_t>{40792, 23877, 229, 27764, 245, 163, 105, 99, 10545, 245, 98, 17312, 105, 45739, 252, 5641, 24336, 25084, 43302, 220, 47991, 250, 166, 113, 255, 168, 244, 112},
         std::vector<int32_t>{47249, 222, 8582, 99, 247, 50169, 235, 8582, 237, 121, 220, 47728, 242, 246, 47728, 242, 104, 0},
         std::vector<int32_t>{2616, 38776, 40304, 304, 136, 223, 6184, 227, 782, 2536, 9101, 76},
         std::vector<int32_t>{1370, 16, 198, 1370, 17, 201, 628, 198, 220, 220, 198, 197, 437},
         std::vector<int32_t>{14774, 220, 6353, 9881, 20543, 220, 169, 254, 222, 886},
         std::vector<int32_t>{27, 34086, 20538, 25, 16, 17, 29, 8959, 38, 3955, 38, 6242, 57, 1279, 67, 2616, 29, 330, 13655, 3556, 67, 2616, 29, 2124, 28, 88, 10, 16, 26},
         std::vector<int32_t>{1849, 447, 222, 87, 5099, 222, 88, 126, 227, 89, 20126, 86},
     }},
    {{"gemma4", "granite-embed-multi-311m", "sarvam-moe"},
     {
         std::vector<int32_t>{15496, 6894, 87},
         std::vector<int32_t>{10163, 2231, 3134, 4531, 16, 11, 24409, 13, 20},
         std::vector<int32_t>{40, 1101, 9099, 470, 8845, 6, 3069, 9930, 6, 3041, 270, 338, 6, 50},
         std::vector<int32_t>{},
         std::vector<int32_t>{0},
         std::vector<int32_t>{2616, 171, 303, 66, 1878, 165, 68, 129, 782, 2536, 178, 76},
         std::vector<int32_t>{1370, 16, 1370, 17, 437},
         std::vector<int32_t>{14774, 33661, 437},
         std::vector<int32_t>{27, 34086, 20538, 25, 1065, 29, 3955, 38, 3955, 38, 6242, 57, 27, 67, 2616, 29, 330, 13655, 3556, 67, 2616, 29, 87, 28, 88, 10, 16, 26},
         std::vector<int32_t>{87, 88, 89, 86},
     }},
    {{"whitespace"},
     {
         std::nullopt,
         std::vector<int32_t>{10163, 2231, 3134, 4531, 16, 11, 24409, 13, 20},
         std::vector<int32_t>{40, 1101, 9099, 470, 8845, 6, 3069, 9930, 6, 3041, 270, 338, 6, 50},
         std::vector<int32_t>{},
         std::vector<int32_t>{0},
         std::vector<int32_t>{2616, 171, 303, 66, 1878, 165, 68, 129, 782, 2536, 178, 76},
         std::nullopt,
         std::vector<int32_t>{14774, 33661, 437},
         std::vector<int32_t>{27, 34086, 20538, 25, 1065, 29, 3955, 38, 3955, 38, 6242, 57, 27, 67, 2616, 29, 330, 13655, 3556, 67, 2616, 29, 87, 28, 88, 10, 16, 26},
         std::vector<int32_t>{87, 88, 89, 86},
     }},
    {{"chameleon"},
     {
         std::vector<int32_t>{220, 220, 15496, 220, 220, 995, 220, 197, 197, 2124, 220, 220},
         std::vector<int32_t>{16, 17, 18, 19, 20, 21, 22, 220, 23, 24, 220, 16, 11, 17, 18, 19, 13, 20, 220, 149, 96, 149, 97, 149, 98, 220},
         std::vector<int32_t>{40, 6, 76, 836, 6, 83, 12887, 6, 3069, 484, 6, 3041, 340, 6, 82, 220, 6, 50},
         std::vector<int32_t>{40792, 23877, 229, 27764, 245, 163, 105, 99, 10545, 245, 98, 17312, 105, 45739, 252, 5641, 24336, 25084, 43302, 220, 47991, 250, 166, 113, 255, 168, 244, 112},
         std::vector<int32_t>{47249, 222, 8582, 99, 247, 50169, 235, 8582, 237, 121, 220, 47728, 242, 246, 47728, 242, 104, 0},
         std::vector<int32_t>{2616, 38776, 40304, 304, 136, 223, 6184, 227, 782, 2536, 9101, 76},
         std::vector<int32_t>{1370, 16, 198, 1370, 17, 201, 198, 198, 198, 220, 220, 198, 197, 437},
         std::vector<int32_t>{14774, 220, 6353, 9881, 20543, 220, 169, 254, 222, 886},
         std::vector<int32_t>{27, 34086, 20538, 25, 16, 17, 29, 220, 3955, 38, 3955, 38, 6242, 57, 220, 27, 67, 2616, 29, 330, 13655, 27, 14, 67, 2616, 29, 2124, 28, 88, 10, 16, 26},
         std::vector<int32_t>{1849, 447, 222, 87, 5099, 222, 88, 126, 227, 89, 20126, 86},
     }},
    {{"tiny_aya", "cohere2moe", "superbpe"},
     {
         std::vector<int32_t>{220, 18435, 220, 220, 995, 220, 197, 197, 2124, 220, 220},
         std::vector<int32_t>{16, 24409, 20, 3134, 220, 4531, 220, 16, 11, 24409, 13, 20, 220, 149, 96, 149, 97, 149, 98, 220},
         std::vector<int32_t>{40, 1101, 836, 470, 12887, 6, 3069, 484, 6, 3041, 340, 338, 705, 50},
         std::vector<int32_t>{40792, 23877, 229, 27764, 245, 163, 105, 99, 10545, 245, 98, 17312, 105, 45739, 252, 5641, 24336, 25084, 43302, 220, 47991, 250, 166, 113, 255, 168, 244, 112},
         std::vector<int32_t>{47249, 222, 8582, 99, 247, 50169, 235, 8582, 237, 121, 220, 47728, 242, 246, 47728, 242, 104, 0},
         std::vector<int32_t>{2616, 38776, 40304, 304, 136, 223, 6184, 227, 782, 2536, 9101, 76},
         std::vector<int32_t>{1370, 16, 198, 1370, 17, 201, 628, 198, 220, 220, 198, 197, 437},
         std::vector<int32_t>{14774, 220, 6353, 9881, 20543, 220, 169, 254, 222, 886},
         std::vector<int32_t>{27, 34086, 20538, 25, 1065, 29, 8959, 38, 3955, 38, 6242, 57, 1279, 67, 2616, 29, 330, 13655, 3556, 67, 2616, 29, 2124, 28, 88, 10, 16, 26},
         std::vector<int32_t>{1849, 447, 222, 87, 5099, 222, 88, 126, 227, 89, 20126, 86},
     }},
    {{"kimi-k2"},
     {
         std::vector<int32_t>{220, 18435, 220, 220, 995, 220, 197, 197, 2124, 220, 220},
         std::vector<int32_t>{10163, 29228, 22, 220, 4531, 220, 16, 11, 24409, 13, 20, 220, 149, 96, 149, 97, 149, 98, 220},
         std::vector<int32_t>{40, 1101, 836, 470, 12887, 6, 3069, 484, 6, 3041, 340, 338, 705, 50},
         std::vector<int32_t>{40792, 23877, 229, 27764, 245, 163, 105, 99, 220, 33768, 98, 17312, 105, 45739, 252, 5641, 24336, 25084, 43302, 220, 47991, 250, 166, 113, 255, 168, 244, 112},
         std::vector<int32_t>{47249, 222, 8582, 99, 247, 50169, 235, 8582, 237, 121, 220, 47728, 242, 246, 47728, 242, 104, 0},
         std::vector<int32_t>{2616, 38776, 40304, 304, 136, 223, 6184, 227, 782, 2536, 9101, 76},
         std::vector<int32_t>{1370, 16, 198, 1370, 17, 201, 628, 198, 220, 220, 198, 197, 437},
         std::vector<int32_t>{14774, 220, 6353, 9881, 20543, 220, 169, 254, 222, 886},
         std::vector<int32_t>{27, 34086, 20538, 25, 1065, 29, 8959, 38, 3955, 38, 6242, 57, 1279, 67, 2616, 29, 330, 13655, 3556, 67, 2616, 29, 2124, 28, 88, 10, 16, 26},
         std::vector<int32_t>{1849, 447, 222, 87, 5099, 222, 88, 126, 227, 89, 20126, 86},
     }},
    {{"afmoe"},
     {
         std::vector<int32_t>{220, 18435, 220, 220, 995, 220, 197, 197, 2124, 220, 220},
         std::vector<int32_t>{16, 24409, 20, 3134, 220, 4531, 220, 16, 11, 24409, 13, 20, 220, 149, 96, 149, 97, 149, 98, 220},
         std::vector<int32_t>{40, 1101, 836, 470, 12887, 6, 3069, 484, 6, 3041, 340, 338, 705, 50},
         std::vector<int32_t>{40792, 23877, 229, 27764, 245, 163, 105, 99, 220, 33768, 98, 17312, 105, 45739, 252, 5641, 24336, 25084, 43302, 220, 47991, 250, 166, 113, 255, 168, 244, 112},
         std::vector<int32_t>{47249, 222, 8582, 99, 247, 50169, 235, 8582, 237, 121, 220, 47728, 242, 246, 47728, 242, 104, 0},
         std::vector<int32_t>{2616, 38776, 40304, 304, 136, 223, 6184, 227, 782, 2536, 9101, 76},
         std::vector<int32_t>{1370, 16, 198, 1370, 17, 201, 628, 198, 220, 220, 198, 197, 437},
         std::vector<int32_t>{14774, 220, 6353, 9881, 20543, 220, 169, 254, 222, 886},
         std::vector<int32_t>{27, 34086, 20538, 25, 1065, 29, 8959, 38, 3955, 38, 6242, 57, 1279, 67, 2616, 29, 330, 13655, 3556, 67, 2616, 29, 2124, 28, 88, 10, 16, 26},
         std::vector<int32_t>{1849, 447, 222, 87, 5099, 222, 88, 126, 227, 89, 220, 9525, 86},
     }},
};

// The gpt-2 vocabulary loaded once, relabelled with `pre` as llama.cpp's table labels it: the
// BPE algorithm reads the labels (the type, ignore_merges, escape) when it tokenizes.
const Vocab::Impl& gpt2_relabelled(const std::string& pre) {
  static const Vocab base = gpt2_as("gpt-2");
  static Vocab::Impl v;
  if (v.id_to_token.empty()) {
    v.type = base.impl().type, v.tokenizer_model = base.impl().tokenizer_model;
    v.id_to_token = base.impl().id_to_token, v.token_to_id = base.impl().token_to_id, v.merges = base.impl().merges;
  }
  v.tokenizer_pre = pre;
  v.ignore_merges = v.add_bos = v.add_sep = false, v.bert_lowercase = true;
  ggufkit::tokenizer::apply_pre_tokenizer(v);
  return v;
}

TEST(BpeTokenize, EveryPreNameSplitsTheHardTextsAsLlamaCpp) {
  size_t names = 0;
  for (const Expected& e : llama_cpp_ids) {
    for (const char* name : e.names) {
      ++names;
      const Vocab::Impl& v = gpt2_relabelled(name);
      std::unique_ptr<ggufkit::tokenizer::Algorithm> bpe = ggufkit::tokenizer::make_bpe(v);
      for (size_t i = 0; i < std::size(hard_texts); ++i) {
        if (!e.ids[i]) continue;
        std::vector<int32_t> got;
        bpe->tokenize(hard_texts[i], got);
        EXPECT_EQ(show(got), show(*e.ids[i])) << name << ", text " << i;
      }
    }
  }
  EXPECT_EQ(names, llama_cpp_names.size());
}

// The same through the public load and tokenize, for three names of different shapes.
TEST(BpeTokenize, ALoadedVocabularyTokenizesWithItsPreTokenizer) {
  for (const Expected& e : llama_cpp_ids) {
    for (const char* name : e.names) {
      if (std::string(name) != "llama3" && std::string(name) != "deepseek-llm" && std::string(name) != "gemma4") continue;
      Vocab v = gpt2_as(name);
      for (size_t i = 0; i < std::size(hard_texts); ++i) {
        if (e.ids[i]) {
          EXPECT_EQ(show(v.tokenize(hard_texts[i], false, false)), show(*e.ids[i])) << name << ", text " << i;
        }
      }
    }
  }
}


}  // namespace
