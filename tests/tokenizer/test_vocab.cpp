// The vocabulary as llama.cpp loads it, its special-token partition, pieces and detokenize.
// Every expected value was printed by llama.cpp itself (libllama, vocabulary-only load:
// bench/llama_tokenize's "loaded" and "lines" modes, llama_token_to_piece and
// llama_detokenize), on the corpus vocabularies or on copies with one key changed.
#include <gtest/gtest.h>

#include "../paths.h"

#include <map>
#include <memory>
#include <unordered_map>

#include "../../tokenizer/src/impl.h"
#include "ggufkit/scan.h"
#include "ggufkit/tokenizer.h"
#include "ggufkit/vocab.h"

namespace tk = ggufkit::tokenizer;

namespace {

// A corpus vocabulary's scanned model, kept for the whole run: specs view its strings.
const ggufkit::Model& model(const std::string& name) {
  static std::map<std::string, std::unique_ptr<ggufkit::Scanned>> cache;
  auto& s = cache[name];
  if (!s) s = std::make_unique<ggufkit::Scanned>(ggufkit::scan_file(std::string(GGUFKIT_CORPUS) + "/vocab/" + name));
  return s->model;
}
tk::VocabSpec spec(const std::string& name) { return ggufkit::vocab_spec(model(name)); }
tk::Vocab load(const std::string& name) { return tk::Vocab::load(spec(name)); }

tk::KeyValue u32(uint32_t v) {
  tk::KeyValue kv;
  kv.type = tk::ValueType::u32;
  kv.bits = v;
  return kv;
}
tk::KeyValue str(std::string_view s) {
  tk::KeyValue kv;
  kv.type = tk::ValueType::string;
  kv.str = s;
  return kv;
}

std::string list(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : ", ") + std::to_string(id);
  return s;
}
// The loaded answers in the words of bench/llama_tokenize's "loaded" JSON.
std::string json(const tk::Vocab& v) {
  const tk::Loaded& l = v.loaded();
  std::string s = "{\"n_tokens\": " + std::to_string(v.size()) + ", \"type\": " + std::to_string(static_cast<int>(v.kind()));
  for (auto [name, id] : {std::pair{"bos", l.bos}, {"eos", l.eos}, {"eot", l.eot}, {"sep", l.sep}, {"nl", l.nl}, {"pad", l.pad},
                          {"fim_pre", l.fim_pre}, {"fim_suf", l.fim_suf}, {"fim_mid", l.fim_mid}, {"fim_pad", l.fim_pad},
                          {"fim_rep", l.fim_rep}, {"fim_sep", l.fim_sep}})
    s += std::string(", \"") + name + "\": " + std::to_string(id);
  s += std::string(", \"add_bos\": ") + (l.add_bos ? "true" : "false") + ", \"add_eos\": " + (l.add_eos ? "true" : "false");
  return s + ", \"eog\": [" + list(l.eog) + "], \"control\": [" + list(l.control) + "]}";
}

using Ids = std::vector<int32_t>;

// --- the loaded answers -------------------------------------------------------------------

TEST(VocabLoaded, LlamaSpmAnswersAsLlamaCpp) {
  EXPECT_EQ(json(load("ggml-vocab-llama-spm.gguf")),
            R"({"n_tokens": 32000, "type": 1, "bos": 1, "eos": 2, "eot": -1, "sep": -1, "nl": 13, "pad": -1, "fim_pre": -1, "fim_suf": -1, "fim_mid": -1, "fim_pad": -1, "fim_rep": -1, "fim_sep": -1, "add_bos": true, "add_eos": false, "eog": [2], "control": [1, 2]})");
}
TEST(VocabLoaded, Phi3AnswersAsLlamaCpp) {
  EXPECT_EQ(json(load("ggml-vocab-phi-3.gguf")),
            R"({"n_tokens": 32064, "type": 1, "bos": 1, "eos": 32000, "eot": 32007, "sep": -1, "nl": 13, "pad": 32000, "fim_pre": -1, "fim_suf": -1, "fim_mid": -1, "fim_pad": -1, "fim_rep": -1, "fim_sep": -1, "add_bos": true, "add_eos": false, "eog": [2, 32000, 32007], "control": [0, 1, 2, 32000, 32001, 32002, 32003, 32004, 32005, 32006, 32007, 32008, 32009, 32010]})");
}
TEST(VocabLoaded, BaichuanAnswersAsLlamaCpp) {
  EXPECT_EQ(json(load("ggml-vocab-baichuan.gguf")),
            R"({"n_tokens": 64000, "type": 1, "bos": 1, "eos": 2, "eot": -1, "sep": -1, "nl": 403, "pad": 0, "fim_pre": -1, "fim_suf": -1, "fim_mid": -1, "fim_pad": -1, "fim_rep": -1, "fim_sep": -1, "add_bos": true, "add_eos": false, "eog": [2], "control": [1, 2]})");
}
TEST(VocabLoaded, BertBgeAnswersAsLlamaCpp) {
  tk::Vocab v = load("ggml-vocab-bert-bge.gguf");
  EXPECT_EQ(json(v),
            R"({"n_tokens": 30522, "type": 3, "bos": 101, "eos": -1, "eot": -1, "sep": 102, "nl": 0, "pad": 0, "fim_pre": -1, "fim_suf": -1, "fim_mid": -1, "fim_pad": 0, "fim_rep": -1, "fim_sep": -1, "add_bos": true, "add_eos": false, "eog": [0], "control": [0, 100, 101, 102, 103]})");
  // [PAD] is taken for the FIM pad token by its text, and so ends generation.
  EXPECT_EQ(v.loaded().found_by_text, (std::map<std::string, int32_t>{{"fim_pad", 0}}));
}
TEST(VocabLoaded, Gpt2AnswersAsLlamaCpp) {
  EXPECT_EQ(json(load("ggml-vocab-gpt-2.gguf")),
            R"({"n_tokens": 50257, "type": 2, "bos": 50256, "eos": 50256, "eot": 50256, "sep": -1, "nl": 198, "pad": -1, "fim_pre": -1, "fim_suf": -1, "fim_mid": -1, "fim_pad": -1, "fim_rep": -1, "fim_sep": -1, "add_bos": false, "add_eos": false, "eog": [50256], "control": [50256]})");
}
TEST(VocabLoaded, FalconAnswersAsLlamaCpp) {
  EXPECT_EQ(json(load("ggml-vocab-falcon.gguf")),
            R"({"n_tokens": 65024, "type": 2, "bos": 11, "eos": 11, "eot": 11, "sep": -1, "nl": 193, "pad": -1, "fim_pre": -1, "fim_suf": -1, "fim_mid": -1, "fim_pad": -1, "fim_rep": -1, "fim_sep": -1, "add_bos": false, "add_eos": false, "eog": [11], "control": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]})");
}

TEST(VocabLoaded, Phi3FindsItsEotByTextWhileTheKeyIsUnset) {
  tk::VocabSpec s = spec("ggml-vocab-phi-3.gguf");
  ASSERT_EQ(s.find("tokenizer.ggml.eot_token_id"), nullptr);
  tk::Vocab v = tk::Vocab::load(s);
  // Both "<|end|>" and "<|endoftext|>" are eot names: llama.cpp's hash-map order finds 32007 first.
  EXPECT_EQ(v.loaded().eot, 32007);
  EXPECT_EQ(v.loaded().found_by_text, (std::map<std::string, int32_t>{{"eot", 32007}}));
  EXPECT_EQ(v.loaded().eog, (Ids{2, 32000, 32007}));
  // "</s>" is user-defined in the file; as an end-of-generation name it is made control too.
  EXPECT_EQ(v.attr(2), tk::attr_user_defined | tk::attr_control | tk::attr_rstrip);
  EXPECT_EQ(v.loaded().warnings,
            (std::vector<std::string>{"control-looking token:      2 '</s>' was not control-type; this is probably a bug in "
                                      "the model. its type will be overridden"}));
}

// An edit's check loads the vocabulary before and after: with the one before as `like`, a
// vocabulary that differs in a special id shares its tables of texts and merges and loads to
// the same answers as alone; one whose tokens differ builds its own.
TEST(VocabLoaded, ALoadLikeAnotherSharesItsTablesWhereTheTokensAreTheSame) {
  const tk::Vocab before = load("ggml-vocab-gpt-2.gguf");
  tk::VocabSpec s = spec("ggml-vocab-gpt-2.gguf");
  s.keys["tokenizer.ggml.eos_token_id"] = u32(198);
  const tk::Vocab alone = tk::Vocab::load(s), shared = tk::Vocab::load(s, &before);
  EXPECT_EQ(shared.impl().token_to_id.get(), before.impl().token_to_id.get());
  EXPECT_EQ(shared.impl().merges.get(), before.impl().merges.get());
  EXPECT_NE(alone.impl().token_to_id.get(), before.impl().token_to_id.get());
  EXPECT_EQ(json(shared), json(alone));
  EXPECT_EQ(shared.loaded().eos, 198);
  EXPECT_EQ(shared.loaded().eog, (Ids{198, 50256}));
  EXPECT_EQ(shared.tokenize("Hello world<|endoftext|>"), alone.tokenize("Hello world<|endoftext|>"));
  EXPECT_EQ(shared.tokenize("Hello world<|endoftext|>"), (Ids{15496, 995, 50256}));

  // One token's text changed (995, " world", is "Xworld"): nothing of `before` is taken but
  // the merges, and the answers are those of the vocabulary loaded alone.
  s.keys["tokenizer.ggml.tokens"].strings[995] = "Xworld";
  const tk::Vocab other = tk::Vocab::load(s, &before), other_alone = tk::Vocab::load(s);
  EXPECT_NE(other.impl().token_to_id.get(), before.impl().token_to_id.get());
  EXPECT_EQ(other.impl().merges.get(), before.impl().merges.get());
  EXPECT_EQ(json(other), json(other_alone));
  for (const char* text : {"Hello Xworld", "Hello world"}) EXPECT_EQ(other.tokenize(text), other_alone.tokenize(text)) << text;
  EXPECT_NE(other.tokenize("Hello world"), before.tokenize("Hello world"));  // " world" is no longer 995
}

// A load for prompts (validate's, an edit's gate, where the templates' prompts are tokenized
// next) has BPE's merge ranks made while its tokens load; a plain one leaves them to the
// first tokenize. Both load and tokenize alike.
TEST(VocabLoaded, ALoadForPromptsRanksTheMergesAndAnswersAsAPlainOne) {
  for (const char* name : {"ggml-vocab-gpt-2.gguf", "ggml-vocab-falcon.gguf"}) {
    const tk::Vocab plain = tk::Vocab::load(spec(name)), for_prompts = tk::Vocab::load(spec(name), nullptr, true);
    ASSERT_GT(plain.impl().merges->size(), 0u) << name;
    EXPECT_FALSE(plain.impl().merges->ranked()) << name;
    EXPECT_TRUE(for_prompts.impl().merges->ranked()) << name;
    EXPECT_EQ(json(for_prompts), json(plain)) << name;
    for (const char* text : {"Hello world<|endoftext|>", " multiple   spaces\n\ttabs", "ünïcödé 123456 tokens!"})
      EXPECT_EQ(for_prompts.tokenize(text), plain.tokenize(text)) << name << ": " << text;
    EXPECT_TRUE(plain.impl().merges->ranked()) << name;  // made by its first tokenize
  }
  // SentencePiece has no merges to rank: no thread is started for them, and it loads for
  // prompts as it always does.
  const tk::Vocab spm = tk::Vocab::load(spec("ggml-vocab-llama-spm.gguf"), nullptr, true), spm_plain = load("ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(spm.impl().merges->size(), 0u);
  EXPECT_FALSE(spm.impl().merges->ranked());
  EXPECT_EQ(json(spm), json(spm_plain));
  EXPECT_EQ(spm.tokenize("Hello world</s>"), spm_plain.tokenize("Hello world</s>"));
}

TEST(VocabLoaded, Phi3GivesEveryControlTokenRstripButUnkBosAndEndoftext) {
  tk::Vocab v = load("ggml-vocab-phi-3.gguf");
  EXPECT_EQ(v.attr(32007) & (tk::attr_rstrip | tk::attr_lstrip), tk::attr_rstrip);
  EXPECT_EQ(v.attr(32011) & tk::attr_rstrip, tk::attr_rstrip);  // [PAD32011], unknown-type
  for (int32_t id : {0, 1, 32000}) EXPECT_EQ(v.attr(id) & tk::attr_rstrip, 0u) << id;
}

// llama-spm with normal tokens 1000..1009 renamed (llama.cpp loaded the same file):
// <|return|> <|call|> <|end|> <|channel|> <|fim_pad|> <|eom_id|> <|im_end|> <|file_sep|> <PRE> <|endoftext|>
tk::VocabSpec renamed_spec() {
  tk::VocabSpec s = spec("ggml-vocab-llama-spm.gguf");
  static const char* names[] = {"<|return|>", "<|call|>", "<|end|>", "<|channel|>", "<|fim_pad|>",
                                "<|eom_id|>", "<|im_end|>", "<|file_sep|>", "<PRE>", "<|endoftext|>"};
  for (int i = 0; i < 10; ++i) s.keys["tokenizer.ggml.tokens"].strings[1000 + i] = names[i];
  return s;
}

TEST(VocabLoaded, NamedTokensBecomeSpecialIdsEogAndControlAsLlamaCppOverridesThem) {
  tk::Vocab v = tk::Vocab::load(renamed_spec());
  EXPECT_EQ(json(v),
            R"({"n_tokens": 32000, "type": 1, "bos": 1, "eos": 2, "eot": 1006, "sep": -1, "nl": 13, "pad": -1, "fim_pre": 1008, "fim_suf": -1, "fim_mid": -1, "fim_pad": 1004, "fim_rep": -1, "fim_sep": 1007, "add_bos": true, "add_eos": false, "eog": [2, 1000, 1001, 1004, 1005, 1006, 1007, 1009], "control": [1, 2, 1000, 1001, 1004, 1005, 1006, 1007, 1008, 1009]})");
  EXPECT_EQ(v.loaded().found_by_text,
            (std::map<std::string, int32_t>{{"eom", 1005}, {"eot", 1006}, {"fim_pad", 1004}, {"fim_pre", 1008}, {"fim_sep", 1007}}));
  // gpt-oss: <|channel|> is always printed; with <|return|> and <|call|>, <|end|> ends nothing
  EXPECT_EQ(v.attr(1003), tk::attr_user_defined);
  EXPECT_EQ(v.attr(1002), tk::attr_user_defined);
  EXPECT_EQ(v.loaded().warnings.back(),
            "special_eog_ids contains both '<|return|>' and '<|call|>', or '<|calls|>' and '<|flush|>' tokens, removing "
            "'<|end|>' token from EOG list");
  // user-defined tokens are cut out without parse_special too; a control one only with it
  EXPECT_EQ(v.tokenize("a<|channel|>b<|end|>c<|im_end|>", false, false),
            (Ids{263, 1003, 289, 1002, 274, 29966, 29989, 326, 29918, 355, 29989, 29958}));
  EXPECT_EQ(v.tokenize("a<|channel|>b<|end|>c<|im_end|>", false, true), (Ids{263, 1003, 289, 1002, 274, 1006}));
}

// The load walks the named tokens in the order of llama.cpp's token_to_id (an unordered_map)
// only where that order decides something: here two tokens each found by its text for a
// different id, both made control with a warning, so the warnings come in the map's order.
// The order is that of a real std::unordered_map filled as llama.cpp fills it; with one such
// token the walk goes by id and ends the same.
TEST(VocabLoaded, NamedTokensAreWarnedOfInTheOrderOfLlamaCppsMapWhereTheOrderShows) {
  tk::VocabSpec s = spec("ggml-vocab-llama-spm.gguf");
  auto& texts = s.keys["tokenizer.ggml.tokens"].strings;
  texts[1000] = "<|eom_id|>", texts[1001] = "<|file_sep|>";
  std::unordered_map<std::string, int32_t> map;
  for (size_t i = 0; i < texts.size(); ++i) map[std::string(texts[i])] = static_cast<int32_t>(i);
  std::vector<int32_t> want;
  for (const auto& [text, id] : map)
    if (id == 1000 || id == 1001) want.push_back(id);
  auto warned = [](const tk::Vocab& v) {
    std::vector<int32_t> ids;
    for (const std::string& w : v.loaded().warnings)
      if (w.starts_with("control-looking token: ")) ids.push_back(std::stoi(w.substr(23)));
    return ids;
  };
  const tk::Vocab both = tk::Vocab::load(s);
  ASSERT_EQ(want, (Ids{1001, 1000}));  // against id order: a walk by id would fail
  EXPECT_EQ(warned(both), want);
  EXPECT_EQ(both.loaded().found_by_text, (std::map<std::string, int32_t>{{"eom", 1000}, {"fim_sep", 1001}}));
  EXPECT_EQ(both.loaded().eog, (Ids{2, 1000, 1001}));

  texts[1001] = "\xe2\x96\x81unused";  // one named token left: taken by id
  const tk::Vocab one = tk::Vocab::load(s);
  EXPECT_EQ(warned(one), (Ids{1000}));
  EXPECT_EQ(one.loaded().found_by_text, (std::map<std::string, int32_t>{{"eom", 1000}}));
  EXPECT_EQ(one.loaded().eog, (Ids{2, 1000}));
  EXPECT_EQ(one.attr(1001), tk::attr_normal);  // "unused" in a normal token's text changes nothing
}

// --- the special-token partition ------------------------------------------------------------

struct Case {
  std::string text;
  Ids plain, parse, add, add_parse;  // (add_special, parse_special) = 00, 01, 10, 11
};
void expect_cases(const std::string& name, const std::vector<Case>& cases) {
  tk::Vocab v = load(name);
  for (const Case& c : cases) {
    EXPECT_EQ(v.tokenize(c.text, false, false), c.plain) << name << " \"" << c.text << "\" 00";
    EXPECT_EQ(v.tokenize(c.text, false, true), c.parse) << name << " \"" << c.text << "\" 01";
    EXPECT_EQ(v.tokenize(c.text, true, false), c.add) << name << " \"" << c.text << "\" 10";
    EXPECT_EQ(v.tokenize(c.text, true, true), c.add_parse) << name << " \"" << c.text << "\" 11";
  }
}

TEST(VocabPartition, Phi3CutsControlTokensOnlyWhenParsingAndRstripEatsTheSpacesAfter) {
  expect_cases("ggml-vocab-phi-3.gguf",
               {
                   // </s> (made control) with rstrip: "  world" loses its spaces, then gets the prefix back
                   {"Hello</s>  world", {15043, 829, 29879, 29958, 29871, 3186}, {15043, 2, 3186},
                    {1, 15043, 829, 29879, 29958, 29871, 3186}, {1, 15043, 2, 3186}},
                   {"<|user|>\nHi there<|end|>\n<|assistant|>",
                    {529, 29989, 1792, 29989, 29958, 13, 18567, 727, 29966, 29989, 355, 29989, 29958, 13, 29966, 29989, 465,
                     22137, 29989, 29958},
                    {32010, 6324, 727, 32007, 32001},
                    {1, 529, 29989, 1792, 29989, 29958, 13, 18567, 727, 29966, 29989, 355, 29989, 29958, 13, 29966, 29989, 465,
                     22137, 29989, 29958},
                    {1, 32010, 6324, 727, 32007, 32001}},
                   // an unknown-type token is special too
                   {"a [PAD32011] b", {263, 518, 29925, 3035, 29941, 29906, 29900, 29896, 29896, 29962, 289}, {263, 29871, 32011, 289},
                    {1, 263, 518, 29925, 3035, 29941, 29906, 29900, 29896, 29896, 29962, 289}, {1, 263, 29871, 32011, 289}},
                   {"x <|end|>   y", {921, 529, 29989, 355, 29989, 29958, 259, 343}, {921, 29871, 32007, 343},
                    {1, 921, 529, 29989, 355, 29989, 29958, 259, 343}, {1, 921, 29871, 32007, 343}},
                   {"", {}, {}, {1}, {1}},
                   {" ", {259}, {259}, {1, 259}, {1, 259}},
               });
}

TEST(VocabPartition, LlamaSpmTakesBosAndEosLiterallyWhenParsingAndPrefixesTheTextAfterThem) {
  expect_cases("ggml-vocab-llama-spm.gguf",
               {
                   {"<s>Hello</s> world", {529, 29879, 29958, 10994, 829, 29879, 29958, 3186}, {1, 15043, 2, 29871, 3186},
                    {1, 529, 29879, 29958, 10994, 829, 29879, 29958, 3186}, {1, 1, 15043, 2, 29871, 3186}},
                   {"Hi <s> there", {6324, 529, 29879, 29958, 727}, {6324, 29871, 1, 29871, 727},
                    {1, 6324, 529, 29879, 29958, 727}, {1, 6324, 29871, 1, 29871, 727}},
                   // <unk> is of the unknown type: special when parsing
                   {"<unk>x", {529, 2960, 29958, 29916}, {0, 921}, {1, 529, 2960, 29958, 29916}, {1, 0, 921}},
                   {"", {}, {}, {1}, {1}},
               });
}

// --- pieces and detokenize ------------------------------------------------------------------

TEST(VocabPiece, Phi3PiecesAsLlamaTokenToPiece) {
  tk::Vocab v = load("ggml-vocab-phi-3.gguf");
  EXPECT_EQ(v.piece(1, true), "<s>");
  EXPECT_EQ(v.piece(1, false), "");  // control: printed only with special
  EXPECT_EQ(v.piece(13, true), "\n");  // <0x0A>, a byte token
  EXPECT_EQ(v.piece(3186, true), " world");
  EXPECT_EQ(v.piece(0, true), "<unk>");
  EXPECT_EQ(v.piece(0, false), "");
  EXPECT_EQ(v.piece(2, true), "</s>");
  EXPECT_EQ(v.piece(2, false), "");
  EXPECT_EQ(v.piece(-1), "");  // out of range: nothing (llama.cpp throws)
  EXPECT_EQ(v.piece(32064), "");
}

TEST(VocabPiece, Phi3DetokenizesAsLlamaDetokenize) {
  tk::Vocab v = load("ggml-vocab-phi-3.gguf");
  Ids ids{1, 15043, 2, 3186};
  EXPECT_EQ(v.detokenize(ids, false, true), "<s> Hello</s> world");
  EXPECT_EQ(v.detokenize(ids, true, true), " Hello</s> world");  // the BOS removed, its space kept
  EXPECT_EQ(v.detokenize(ids, true, false), " Hello world");
  EXPECT_EQ(v.detokenize(Ids{15043, 3186}, false, false), "Hello world");  // the space prefix removed
  EXPECT_EQ(v.detokenize(Ids{259}, false, true), " ");                    // "▁▁" loses one space
}

TEST(VocabPiece, LlamaSpmRoundTripsTextThroughTokenizeAndDetokenize) {
  tk::Vocab v = load("ggml-vocab-llama-spm.gguf");
  struct Trip {
    std::string text, with_bos, parsed;  // detokenize(tokenize(text, 1, 0), 1, 0), (tokenize(text, 0, 1), 0, 1)
  };
  for (const Trip& t : std::vector<Trip>{
           // a removed BOS keeps the space prefix in the text
           {"Hello world", " Hello world", "Hello world"},
           {"  two leading spaces", "   two leading spaces", "  two leading spaces"},
           {"tabs\tand\nnewlines\n", " tabs\tand\nnewlines\n", "tabs\tand\nnewlines\n"},
           {"bytes \xf0\x9f\xa6\x99 and \xe2\x80\x94", " bytes \xf0\x9f\xa6\x99 and \xe2\x80\x94",
            "bytes \xf0\x9f\xa6\x99 and \xe2\x80\x94"},
           // a parsed <s> is followed by the prefix space of the text after it
           {"<s> literal", " <s> literal", "<s>  literal"},
       }) {
    EXPECT_EQ(v.detokenize(v.tokenize(t.text, true, false), true, false), t.with_bos) << t.text;
    EXPECT_EQ(v.detokenize(v.tokenize(t.text, false, true), false, true), t.parsed) << t.text;
  }
}

TEST(VocabPiece, Gpt2DetokenizesWithItsCleanSpacesRules) {
  tk::Vocab v = load("ggml-vocab-gpt-2.gguf");
  EXPECT_EQ(v.detokenize(Ids{50256, 15496, 995}, false, true), "<|endoftext|>Hello world");
  EXPECT_EQ(v.detokenize(Ids{15496, 764, 995, 338, 257}, false, false), "Hello. world's a");
}

// --- what llama.cpp refuses -----------------------------------------------------------------

std::string refusal(const tk::VocabSpec& s, std::string* key = nullptr) {
  try {
    tk::Vocab::load(s);
  } catch (const tk::Error& e) {
    if (key) *key = e.key;
    return e.what();
  }
  return "loaded";
}

TEST(VocabRefused, Gpt2WithoutMergesIsRefusedInLlamaCppsWords) {
  tk::VocabSpec s = spec("ggml-vocab-gpt-2.gguf");
  s.keys.erase("tokenizer.ggml.merges");
  std::string key;
  EXPECT_EQ(refusal(s, &key), "cannot find tokenizer merges in model file");
  EXPECT_EQ(key, "tokenizer.ggml.merges");
}
TEST(VocabRefused, AnUnknownTokenizerModelIsRefusedInLlamaCppsWords) {
  tk::VocabSpec s = spec("ggml-vocab-llama-spm.gguf");
  s.keys["tokenizer.ggml.model"] = str("foo");
  EXPECT_EQ(refusal(s), "unknown tokenizer: 'foo'");
}
TEST(VocabRefused, AKeyOfTheWrongTypeIsRefusedAsLlamaCppsGetterRefusesIt) {
  tk::VocabSpec s = spec("ggml-vocab-llama-spm.gguf");
  s.keys["tokenizer.ggml.add_bos_token"] = u32(1);
  EXPECT_EQ(refusal(s), "key tokenizer.ggml.add_bos_token has wrong type u32 but expected type bool");
  s = spec("ggml-vocab-llama-spm.gguf");
  s.keys["tokenizer.ggml.scores"] = str("x");
  EXPECT_EQ(refusal(s), "invalid gguf type for tokenizer.ggml.scores");
}

// --- hostile input --------------------------------------------------------------------------

TEST(VocabHostile, ASpecialIdFarOutOfRangeIsIgnoredWithLlamaCppsWarning) {
  tk::VocabSpec s = spec("ggml-vocab-llama-spm.gguf");
  s.keys["tokenizer.ggml.bos_token_id"] = u32(4000000000u);
  tk::Vocab v = tk::Vocab::load(s);
  EXPECT_EQ(v.loaded().bos, 1);  // the default kept
  EXPECT_EQ(v.loaded().warnings,
            (std::vector<std::string>{"bad special token: 'tokenizer.ggml.bos_token_id' = 4000000000, using default id 1"}));
  // phi-3's eot key out of range: the default (none) kept, then found by its text
  s = spec("ggml-vocab-phi-3.gguf");
  s.keys["tokenizer.ggml.eot_token_id"] = u32(4000000000u);
  tk::Vocab p = tk::Vocab::load(s);
  EXPECT_EQ(p.loaded().eot, 32007);
  EXPECT_EQ(p.loaded().warnings.at(0), "bad special token: 'tokenizer.ggml.eot_token_id' = 4000000000, using default id -1");
}

TEST(VocabHostile, EmptyTokensAreNamedByTheirIndex) {
  tk::VocabSpec s = spec("ggml-vocab-llama-spm.gguf");
  s.keys["tokenizer.ggml.tokens"].strings[5] = "";
  s.keys["tokenizer.ggml.tokens"].strings[6] = "";
  tk::Vocab v = tk::Vocab::load(s);
  EXPECT_EQ(v.text(5), "[EMPTY_5]");
  EXPECT_EQ(v.text(6), "[EMPTY_6]");
  EXPECT_EQ(v.loaded().warnings, (std::vector<std::string>{"empty token at index 5", "empty token at index 6"}));
  EXPECT_EQ(json(v), json(load("ggml-vocab-llama-spm.gguf")));  // as llama.cpp: nothing else changes
}

TEST(VocabHostile, AMegabyteOfOneCharacterTokenizesAsLlamaCpp) {
  tk::Vocab v = load("ggml-vocab-llama-spm.gguf");
  Ids ids = v.tokenize(std::string(1 << 20, 'a'), false, false);
  // llama.cpp: "▁a", then "aaaa" 262143 times, then "aa", "a"
  Ids want{263};
  want.insert(want.end(), 262143, 27137);
  want.push_back(7340);
  want.push_back(29874);
  EXPECT_EQ(ids, want);
}

TEST(VocabHostile, InvalidUtf8FallsBackToByteTokensAsLlamaCpp) {
  tk::Vocab v = load("ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(v.tokenize("\xff\xfe abc \xc3", false, false), (Ids{29871, 258, 257, 229, 153, 132, 10736, 29871, 198}));
  EXPECT_EQ(v.tokenize("<s>\x80\xe2\x96", true, true), (Ids{1, 1, 29871, 131, 229, 153}));
  tk::Vocab p = load("ggml-vocab-phi-3.gguf");
  EXPECT_EQ(p.tokenize("\xff\xfe abc \xc3", false, false), (Ids{29871, 258, 257, 229, 153, 132, 10736, 29871, 198}));
}

TEST(VocabHostile, ANoneVocabularyKeepsItsDummyTokensAsACount) {
  tk::VocabSpec s;
  s.keys["tokenizer.ggml.model"] = str("none");
  s.keys["general.architecture"] = str("llama");
  s.keys["llama.vocab_size"] = u32(4000000000u);
  tk::Vocab v = tk::Vocab::load(s);
  EXPECT_EQ(v.kind(), tk::Kind::none);
  EXPECT_EQ(v.size(), 4000000000u);
  EXPECT_EQ(v.loaded().warnings, (std::vector<std::string>{"adding 4000000000 dummy tokens"}));
  EXPECT_EQ(v.detokenize(Ids{1, 2}), "");
  EXPECT_THROW(v.tokenize("x"), tk::Error);  // llama.cpp aborts
}

}  // namespace

// A packed array of numbers reads each item's bits at its width, in its byte order, and as
// items of its own: what a vocabulary reads its scores (f32), types (i32) and charsmap (u8) by.
TEST(VocabNumbers, PackedItemsReadAtTheirWidthInEitherByteOrder) {
  const std::string little("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10", 16);
  const auto at = [&](unsigned width, bool big) {
    std::vector<uint64_t> got;
    const tk::Numbers n = tk::Numbers::packed(little, 16 / width, width, big);
    for (size_t i = 0; i < n.size(); ++i) got.push_back(n[i]);
    return got;
  };
  EXPECT_EQ(at(1, false).size(), 16u);
  EXPECT_EQ(at(1, false)[15], 0x10u);
  EXPECT_EQ(at(2, false), (std::vector<uint64_t>{0x0201, 0x0403, 0x0605, 0x0807, 0x0a09, 0x0c0b, 0x0e0d, 0x100f}));
  EXPECT_EQ(at(2, true), (std::vector<uint64_t>{0x0102, 0x0304, 0x0506, 0x0708, 0x090a, 0x0b0c, 0x0d0e, 0x0f10}));
  EXPECT_EQ(at(4, false), (std::vector<uint64_t>{0x04030201, 0x08070605, 0x0c0b0a09, 0x100f0e0d}));
  EXPECT_EQ(at(4, true), (std::vector<uint64_t>{0x01020304, 0x05060708, 0x090a0b0c, 0x0d0e0f10}));
  EXPECT_EQ(at(8, false), (std::vector<uint64_t>{0x0807060504030201, 0x100f0e0d0c0b0a09}));
  EXPECT_EQ(at(8, true), (std::vector<uint64_t>{0x0102030405060708, 0x090a0b0c0d0e0f10}));
  const tk::Numbers own{7, 0xffffffffffffffff};
  EXPECT_EQ(own.size(), 2u);
  EXPECT_EQ(own[1], 0xffffffffffffffffu);
}


// Tokenize's progress: told bytes of the text done, never backwards, within one fragment for
// BPE and WordPiece (every 4096 words) and at the end of each fragment for all, ending once
// at size of size; the ids are those of a call without it.
TEST(VocabProgress, TellsTheBytesDoneWithinAFragmentAndAtEachSpecialToken) {
  std::string words;
  for (int i = 0; i < 30000; ++i) words += "word" + std::to_string(i % 977) + " ";
  struct Told {
    std::vector<std::pair<uint64_t, uint64_t>> calls;
    tk::Vocab::Progress fn() {
      return [this](uint64_t done, uint64_t total) { calls.push_back({done, total}); };
    }
    bool forwards() const {
      for (size_t i = 1; i < calls.size(); ++i)
        if (calls[i].first < calls[i - 1].first) return false;
      return true;
    }
  };
  // 30,000 items of "word" and a number: GPT-2's regex makes two words of each (" word",
  // "977"), told at words 4096 to 57,344: 14 points inside; BERT's one (30,000): 7 points
  for (const auto& [name, points] : {std::pair<const char*, size_t>{"ggml-vocab-gpt-2.gguf", 14}, {"ggml-vocab-bert-bge.gguf", 7}}) {
    SCOPED_TRACE(name);
    const tk::Vocab v = load(name);
    Told t;
    EXPECT_EQ(v.tokenize(words, true, true, t.fn()), v.tokenize(words, true, true));
    ASSERT_FALSE(t.calls.empty());
    const std::pair<uint64_t, uint64_t> end{words.size(), words.size()};
    EXPECT_EQ(t.calls.back(), end);
    EXPECT_TRUE(t.forwards());
    size_t inside = 0;
    for (const auto& c : t.calls) inside += c.first > 0 && c.first < c.second;
    EXPECT_EQ(inside, points);
    for (const auto& c : t.calls) EXPECT_EQ(c.second, words.size());
  }
  // SentencePiece takes a fragment whole: told where each ends (after "a</s>" and "b</s>")
  const tk::Vocab spm = load("ggml-vocab-llama-spm.gguf");
  Told t;
  const std::string text = "a</s>b</s>c";
  EXPECT_EQ(spm.tokenize(text, false, true, t.fn()), spm.tokenize(text, false, true));
  std::vector<uint64_t> done;
  for (const auto& c : t.calls) done.push_back(c.first);
  EXPECT_EQ(done, (std::vector<uint64_t>{1, 6, 11}));
  // ending in a special token, the end is told after it, once
  t.calls.clear();
  spm.tokenize("a</s>", false, true, t.fn());
  done.clear();
  for (const auto& c : t.calls) done.push_back(c.first);
  EXPECT_EQ(done, (std::vector<uint64_t>{1, 5}));
}
