// BPE as llama.cpp does it (llm_tokenizer_bpe and its sessions): llama.cpp's table of
// pre-tokenizer names, the expressions of each pre-tokenizer, and the merge loop by rank.
#include <algorithm>
#include <queue>
#include <unordered_map>

#include "impl.h"
#include "pretokenize.h"

namespace ggufkit::tokenizer {

namespace {

// What a branch of llama.cpp's name table sets besides the type.
enum PreSets : unsigned {
  keep_clean_spaces = 1,  // clean_spaces = false
  set_ignore_merges = 2,
  set_add_bos = 4,
  set_add_sep = 8,
  set_escape_whitespaces = 16,
  no_bos = 32,         // special_bos_id = none
  keep_case = 64,      // the normalizer's lowercase = false
};

struct PreName {
  const char* name;
  PreType type;
  unsigned sets;
};

using P = PreType;
// In llama.cpp's order (impl::load); several names share one branch.
constexpr PreName pre_names[] = {
    {"default", P::default_, 0},
    {"minicpm5", P::minicpm5, set_ignore_merges},
    {"llama3", P::llama3, set_ignore_merges | set_add_bos},
    {"llama-v3", P::llama3, set_ignore_merges | set_add_bos},
    {"llama-bpe", P::llama3, set_ignore_merges | set_add_bos},
    {"falcon3", P::llama3, set_ignore_merges | set_add_bos},
    {"falcon-h1", P::llama3, set_ignore_merges | set_add_bos},
    {"pixtral", P::llama3, set_ignore_merges | set_add_bos},
    {"midm-2.0", P::llama3, set_ignore_merges | set_add_bos},
    {"lfm2", P::llama3, set_ignore_merges | set_add_bos},
    {"jina-v5-nano", P::llama3, set_ignore_merges | set_add_bos},
    {"deepseek-llm", P::deepseek_llm, keep_clean_spaces},
    {"deepseek-coder", P::deepseek_coder, keep_clean_spaces},
    {"deepseek-v3", P::deepseek3_llm, keep_clean_spaces},
    {"youtu", P::youtu, keep_clean_spaces | set_ignore_merges},
    {"falcon", P::falcon, 0},
    {"mpt", P::mpt, 0},
    {"starcoder", P::starcoder, 0},
    {"gpt-2", P::gpt2, 0},
    {"phi-2", P::gpt2, 0},
    {"jina-es", P::gpt2, 0},
    {"jina-de", P::gpt2, 0},
    {"gigachat", P::gpt2, 0},
    {"jina-v2-es", P::gpt2, 0},
    {"jina-v2-de", P::gpt2, 0},
    {"a.x-4.0", P::gpt2, 0},
    {"mellum", P::gpt2, 0},
    {"modern-bert", P::gpt2, 0},
    {"jais-2", P::jais2, 0},
    {"gemma4", P::gemma4, set_escape_whitespaces},
    {"granite-embed-multi-311m", P::gemma4, set_escape_whitespaces},
    {"sarvam-moe", P::sarvam_moe, set_escape_whitespaces | keep_clean_spaces},
    {"jina-v1-en", P::gpt2, set_add_sep},
    {"jina-v2-code", P::gpt2, set_add_sep},
    {"roberta-bpe", P::gpt2, set_add_sep},
    {"whitespace", P::whitespace, keep_case},
    {"refact", P::refact, 0},
    {"command-r", P::command_r, keep_clean_spaces},
    {"qwen2", P::qwen2, keep_clean_spaces},
    {"deepseek-r1-qwen", P::qwen2, keep_clean_spaces},
    {"kormo", P::qwen2, keep_clean_spaces},
    {"f2llmv2", P::qwen2, keep_clean_spaces},
    {"qwen35", P::qwen35, keep_clean_spaces},
    {"stablelm2", P::stablelm2, 0},
    {"olmo", P::olmo, 0},
    {"dbrx", P::dbrx, 0},
    {"smaug-bpe", P::smaug, 0},
    {"poro-chat", P::poro, keep_clean_spaces},
    {"glm4", P::chatglm4, no_bos},
    {"chatglm-bpe", P::chatglm4, no_bos},
    {"viking", P::viking, keep_clean_spaces},
    {"jais", P::jais, 0},
    {"tekken", P::tekken, keep_clean_spaces | set_ignore_merges | set_add_bos},
    {"smollm", P::smollm, keep_clean_spaces},
    {"codeshell", P::codeshell, 0},
    {"bloom", P::bloom, 0},
    {"gpt3-finnish", P::gpt3_finnish, 0},
    {"exaone", P::exaone, 0},
    {"exaone4", P::gpt2, 0},
    {"exaone-moe", P::exaone_moe, 0},
    {"chameleon", P::chameleon, set_add_bos | keep_clean_spaces},
    {"minerva-7b", P::minerva, 0},
    {"megrez", P::qwen2, 0},
    {"gpt-4o", P::gpt4o, keep_clean_spaces},
    {"llama4", P::gpt4o, keep_clean_spaces},
    {"kanana2", P::gpt4o, keep_clean_spaces},
    {"talkie", P::gpt4o, keep_clean_spaces},
    {"granite-embed-multi-97m", P::granite_emb_multi, keep_clean_spaces | set_ignore_merges},
    {"tiny_aya", P::tiny_aya, keep_clean_spaces},
    {"cohere2moe", P::tiny_aya, keep_clean_spaces},
    {"superbpe", P::superbpe, keep_clean_spaces},
    {"trillion", P::trillion, keep_clean_spaces},
    {"granite-docling", P::granite_docling, keep_clean_spaces},
    {"bailingmoe", P::bailingmoe, keep_clean_spaces},
    {"bailingmoe2", P::bailingmoe, keep_clean_spaces},
    {"llada-moe", P::bailingmoe, keep_clean_spaces},
    {"seed-coder", P::seed_coder, keep_clean_spaces},
    {"hunyuan", P::hunyuan, keep_clean_spaces},
    {"hunyuan-dense", P::hunyuan_dense, keep_clean_spaces},
    {"joyai-llm", P::joyai_llm, keep_clean_spaces},
    {"kimi-k2", P::kimi_k2, keep_clean_spaces},
    {"grok-2", P::grok_2, keep_clean_spaces},
    {"afmoe", P::afmoe, keep_clean_spaces},
    {"laguna", P::laguna, keep_clean_spaces},
    {"minimax-m2", P::minimax_m2, keep_clean_spaces},
    {"solar-open", P::solar_open, keep_clean_spaces},
    {"mellum2", P::mellum2, 0},
};

// llama_vocab_pre_type's names, lower case, in the enum's order (PreType's).
constexpr const char* pre_type_names[] = {
    "default", "llama3", "deepseek_llm", "deepseek_coder", "falcon", "mpt", "starcoder", "gpt2", "refact",
    "command_r", "stablelm2", "qwen2", "olmo", "dbrx", "smaug", "poro", "chatglm3", "chatglm4", "viking", "jais",
    "tekken", "smollm", "codeshell", "bloom", "gpt3_finnish", "exaone", "chameleon", "minerva", "deepseek3_llm",
    "gpt4o", "superbpe", "trillion", "bailingmoe", "llama4", "pixtral", "seed_coder", "hunyuan", "kimi_k2",
    "hunyuan_dense", "grok_2", "granite_docling", "minimax_m2", "afmoe", "solar_open", "youtu", "exaone_moe",
    "qwen35", "tiny_aya", "joyai_llm", "jais2", "gemma4", "sarvam_moe", "minicpm5", "whitespace",
    "granite_emb_multi", "mellum2", "laguna",
};
static_assert(sizeof pre_type_names / sizeof *pre_type_names == static_cast<size_t>(PreType::laguna) + 1);

// The expressions of llm_tokenizer_bpe for each pre-tokenizer type; they are the models'
// tokenizer.json ones, as llama.cpp adapted them (no (?i:...), no possessive quantifiers).
std::vector<std::string> bpe_exprs(PreType t, bool& byte_encode) {
  // The shapes several types share.
  static const std::string gpt2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
  static const std::string contractions = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
  static const std::string llama3 = contractions +
      "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  static const std::string qwen2 = contractions +
      "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  static const std::string deepseek3 =
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";
  static const std::string upper_lower =  // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] by lookahead on \p{L}
      "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+";
  static const std::string finnish = " ?[^(\\s|.,!?…。，、।۔،)]+";
  byte_encode = true;
  switch (t) {
    case P::llama3:
    case P::dbrx:
    case P::smaug:
    case P::chatglm4: return {llama3};
    case P::jais2:
      return {contractions +
              "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|"
              "\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}"};
    case P::deepseek_llm:
      return {
          "[\r\n]",
          // written as escapes: some of these code points are not NFC and an editor may change them
          "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF"
          "\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5"
          "\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA"
          "\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45"
          "\u1F48-\u1F4D\u1F50-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-"
          "\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107"
          "\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139\u213C-\u213F"
          "\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3\uA640-\uA66D"
          "\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06\uFB13-\uFB17"
          "\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3\U000104D8-\U000104FB"
          "\U00010C80-\U00010CB2\U00010CC0-\U00010CF2\U000118A0-\U000118DF\U0001E900-\U0001E943]+",
          "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
          "\\s+$",
          "[一-龥ࠀ-一가-퟿]+",
          "\\p{N}+",
      };
    case P::deepseek3_llm:
    case P::hunyuan_dense:
    case P::joyai_llm: return {"\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", deepseek3};
    case P::youtu:
      return {
          "[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+",
          "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+" + contractions +
              "?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*" + contractions +
              "?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      };
    case P::deepseek_coder: return {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}"};
    case P::falcon: return {"[\\p{P}\\$\\+<=>\\^~\\|`]+", gpt2, "[0-9][0-9][0-9]"};
    case P::starcoder:
    case P::refact:
    case P::command_r:
    case P::smollm:
    case P::codeshell:
    case P::exaone:
    case P::minerva:
    case P::mellum2: return {"\\p{N}", gpt2};
    case P::gpt2:
    case P::mpt:
    case P::olmo:
    case P::jais:
    case P::trillion:
    case P::granite_docling: return {gpt2};
    case P::stablelm2:
    case P::qwen2:
    case P::hunyuan:
    case P::solar_open: return {qwen2};
    case P::qwen35:
      return {contractions +
              "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};
    case P::poro:
    case P::bloom:
    case P::gpt3_finnish: return {finnish};
    case P::viking: return {finnish, "\\p{N}"};
    case P::tekken:
      return {"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|"
              "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};
    case P::chameleon:
      return {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}", "[\\p{P}!-/:-@\\[-`{-~]",
              gpt2};
    case P::gpt4o:
    case P::minimax_m2:
      return {upper_lower + contractions + "?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*" + contractions +
              "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};
    case P::granite_emb_multi:
      return {"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+" + contractions +
              "?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*" + contractions +
              "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};
    case P::tiny_aya:
      return {"\\d{1,3}(?=(?:\\d{3})*\\b)",
              "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+" + contractions +
                  "?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*" + contractions +
                  "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};
    case P::kimi_k2: return {"\\p{Han}+"};  // the name of llama.cpp's hand-written Kimi-K2 splitter
    case P::superbpe: return {"\\p{N}+", "(?=(\\d{3})+(?!\\d))"};
    case P::bailingmoe:
      return {"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"};
    case P::seed_coder:
      return {contractions + "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};
    case P::grok_2: return {qwen2};
    case P::afmoe:
      return {"\\p{AFMoE_digits}",  // the name of llama.cpp's hand-written digit grouping
              "[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+", deepseek3};
    case P::laguna: return {"[^\\n]+|[\\n]+", qwen2};
    case P::exaone_moe:
      return {contractions +
              "|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"};
    case P::gemma4:
    case P::sarvam_moe:  // SPM-style BPE: merges over whole lines of raw UTF-8
      byte_encode = false;
      return {"[^\\n]+|[\\n]+"};
    case P::minicpm5:
      return {"\\p{N}{1,3}", contractions +
                                 "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};
    case P::whitespace:
      byte_encode = false;
      return {"\\S+"};
    default:
      return {"[\\p{P}\\$\\+<=>\\^~\\|]+", gpt2, "\\p{N}+", "[0-9][0-9][0-9]"};
  }
}

struct Symbol {
  int prev, next;
  size_t at, n;  // bytes of the word
};

struct Bigram {
  int left, right;
  size_t size;  // bytes of the pair when it was queued
  int rank;
};
struct BigramAfter {  // the lowest rank first, then the leftmost
  bool operator()(const Bigram& l, const Bigram& r) const { return l.rank > r.rank || (l.rank == r.rank && l.left > r.left); }
};

class Bpe : public Algorithm {
 public:
  explicit Bpe(const Vocab::Impl& v) : v_(v) {
    std::vector<std::string> exprs = bpe_exprs(v.pre_type, byte_encode_);
    pre_ = std::make_unique<PreTokenizer>(exprs, byte_encode_);
  }

  void tokenize(const std::string& raw, std::vector<int32_t>& out, const Tick& tick) const override {
    std::string text = raw;
    if (v_.escape_whitespaces) escape(text);  // as llama.cpp's dispatch does; twice is once
    if (v_.tokenizer_model == "hybriddna") return hybriddna(text, out);
    if (v_.tokenizer_model == "whitespace") return whitespace(text, out);
    session(text, out, tick);
  }

 private:
  static void escape(std::string& s) {
    std::string r;
    for (char c : s) {
      if (c == ' ')
        r += "\xe2\x96\x81";
      else
        r += c;
    }
    s = std::move(r);
  }

  // llm_tokenizer_bpe_session::tokenize: every word merged by rank, the pieces to ids.
  // Real text repeats its words: each word of a text is merged once (its ids depend on it
  // alone), which is most of the time saved against llama.cpp.
  void session(const std::string& text, std::vector<int32_t>& out, const Tick& tick = {}) const {
    const PreTokenizer::Words words = pre_->split(text);
    // a word seen before: where its ids are in `out` (the words are views of `words`)
    std::unordered_map<std::string_view, std::pair<size_t, size_t>, SeededHash> seen;
    for (size_t w = 0; w < words.size(); ++w) {
      if (tick && w % 4096 == 0) tick(static_cast<double>(w) / static_cast<double>(words.size()));
      const std::string_view word = words[w];
      if (auto it = seen.find(word); it != seen.end()) {
        for (size_t k = it->second.first; k < it->second.second; ++k) out.push_back(out[k]);
        continue;
      }
      const size_t from = out.size();
      word_ids(word, out);
      seen.emplace(word, std::make_pair(from, out.size()));
    }
  }

  void word_ids(std::string_view word, std::vector<int32_t>& out) const {
    {
      std::vector<Symbol> sym;
      size_t offset = 0;
      if (v_.ignore_merges && v_.text_to_token(word) >= 0) {
        sym.push_back({-1, -1, 0, word.size()});
        offset = word.size();
      } else if (v_.pre_type == P::gemma4 && word.find_first_not_of('\n') == std::string_view::npos && v_.text_to_token(word) >= 0) {
        // a run of newlines that is a token stays one (llama.cpp's Gemma 4 fix)
        sym.push_back({-1, -1, 0, word.size()});
        offset = word.size();
      }
      while (offset < word.size()) {
        size_t n = std::min(word.size() - offset, utf8_len(word[offset]));
        int i = static_cast<int>(sym.size());
        sym.push_back({i - 1, offset + n == word.size() ? -1 : i + 1, offset, n});
        offset += n;
      }
      merge(word, sym);
      for (const Symbol& s : sym) {
        if (s.n == 0) continue;
        std::string_view piece = word.substr(s.at, s.n);
        int32_t id = v_.text_to_token(piece);
        if (id >= 0) {
          out.push_back(id);
          continue;
        }
        // Not a token: its bytes, each as a one-byte token text (GPT-2 style: the raw byte,
        // which llama.cpp looks up as is) or as <0xXX>, where the vocabulary has them.
        static const char* hex = "0123456789ABCDEF";
        for (unsigned char ch : piece) {
          int32_t b = byte_encode_ ? v_.text_to_token(std::string(1, static_cast<char>(ch)))
                                   : v_.text_to_token(std::string{'<', '0', 'x', hex[ch >> 4], hex[ch & 15], '>'});
          if (b >= 0) out.push_back(b);
        }
      }
    }
  }

  void merge(std::string_view word, std::vector<Symbol>& sym) const {
    std::priority_queue<Bigram, std::vector<Bigram>, BigramAfter> queue;
    auto text = [&](int i) { return word.substr(sym[i].at, sym[i].n); };
    auto add = [&](int left, int right) {
      if (left < 0 || right < 0) return;
      int rank = v_.find_bpe_rank(text(left), text(right));
      if (rank < 0) return;
      queue.push({left, right, sym[left].n + sym[right].n, rank});
    };
    for (int i = 1; i < static_cast<int>(sym.size()); ++i) add(i - 1, i);
    while (!queue.empty()) {
      Bigram b = queue.top();
      queue.pop();
      Symbol& l = sym[b.left];
      Symbol& r = sym[b.right];
      if (l.n == 0 || r.n == 0) continue;
      // Stale when either side has grown since: a symbol keeps its start and only grows (or is
      // merged away), so the same two with the same size are the same text.
      if (l.n + r.n != b.size) continue;
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) sym[r.next].prev = b.left;
      add(l.prev, b.left);
      add(b.left, l.next);
    }
  }

  // llm_tokenizer_hybriddna_session: <dna>...</dna> spans as 6-mers (padded with A), the rest BPE.
  void hybriddna(const std::string& text, std::vector<int32_t>& out) const {
    static const std::string open = "<dna>", close = "</dna>", marker = "\xee\x80\x80";
    int32_t begin_id = v_.text_to_token(open), end_id = v_.text_to_token(close), oov = v_.text_to_token("<oov>");
    if (begin_id < 0 || end_id < 0 || oov < 0) return session(text, out);
    const size_t k = 6;
    for (size_t pos = 0; pos < text.size();) {
      size_t start = text.find(open, pos);
      if (start == std::string::npos) {
        session(text.substr(pos), out);
        break;
      }
      if (start > pos) session(text.substr(pos, start - pos), out);
      out.push_back(begin_id);
      size_t from = start + open.size(), end = text.find(close, from);
      std::string seq = text.substr(from, (end == std::string::npos ? text.size() : end) - from);
      for (char& c : seq)
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
      auto kmer = [&](std::string s) {
        int32_t id = v_.text_to_token(s + marker);
        return id >= 0 ? id : oov;
      };
      size_t i = 0;
      for (; i + k <= seq.size(); i += k) out.push_back(kmer(seq.substr(i, k)));
      if (i < seq.size()) {
        std::string last = seq.substr(i);
        last.append(k - last.size(), 'A');
        out.push_back(kmer(last));
      }
      if (end == std::string::npos) break;
      out.push_back(end_id);
      pos = end + close.size();
    }
  }

  // llm_tokenizer_whitespace_session: whitespace cuts and is dropped, the rest lower-cased
  // unless the normalizer says not.
  void whitespace(const std::string& text, std::vector<int32_t>& out) const {
    std::string segment;
    for (uint32_t c : cpts_from_utf8(text)) {
      if (cpt_flags(c) & cpt_whitespace) {
        if (!segment.empty()) session(segment, out);
        segment.clear();
      } else {
        segment += cpt_to_utf8_strict(v_.bert_lowercase ? cpt_tolower(c) : c);
      }
    }
    if (!segment.empty()) session(segment, out);
  }

  const Vocab::Impl& v_;
  bool byte_encode_ = true;
  std::unique_ptr<PreTokenizer> pre_;
};

}  // namespace

std::unique_ptr<Algorithm> make_bpe(const Vocab::Impl& v) { return std::make_unique<Bpe>(v); }

void apply_pre_tokenizer(Vocab::Impl& v) {
  // what every BPE vocabulary starts from, before its name's branch
  v.add_space_prefix = false;
  v.escape_whitespaces = false;
  v.clean_spaces = true;
  const std::string& name = v.tokenizer_pre;
  const PreName* found = nullptr;
  if (name.empty()) {
    found = &pre_names[0];
    for (const char* line : {"missing pre-tokenizer type, using: 'default'", "************************************",
                             "GENERATION QUALITY WILL BE DEGRADED!", "CONSIDER REGENERATING THE MODEL",
                             "************************************"})
      v.loaded.warnings.emplace_back(line);
  } else {
    for (const PreName& p : pre_names)
      if (name == p.name) {
        found = &p;
        break;
      }
    if (!found) throw Error("tokenizer.ggml.pre", "unknown pre-tokenizer type: '" + name + "'");
  }
  v.pre_type = found->type;
  v.pre_type_name = pre_type_names[static_cast<size_t>(found->type)];
  if (found->sets & keep_clean_spaces) v.clean_spaces = false;
  if (found->sets & set_ignore_merges) v.ignore_merges = true;
  if (found->sets & set_add_bos) v.add_bos = true;
  if (found->sets & set_add_sep) v.add_sep = true;
  if (found->sets & set_escape_whitespaces) v.escape_whitespaces = true;
  if (found->sets & no_bos) v.special_bos_id = -1;
  if (found->sets & keep_case) v.bert_lowercase = false;
}

const std::vector<std::string>& known_pre_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> r;
    for (const PreName& p : pre_names) r.emplace_back(p.name);
    return r;
  }();
  return names;
}

}  // namespace ggufkit::tokenizer
