#pragma once
// A model's vocabulary as llama.cpp loads it: the tokenizer library fed from the reader's
// model. What llama.cpp refuses at load comes back as a format Error naming the key and
// where its value starts.

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "ggufkit/error.h"
#include "ggufkit/model.h"
#include "ggufkit/tokenizer.h"

namespace ggufkit {

// The keys the tokenizer reads, as views of `m` (valid while `m` is).
tokenizer::VocabSpec vocab_spec(const Model& m);
// Loaded as llama.cpp loads it; `file` names the model in errors. nullopt when the model has
// no tokenizer.ggml.model (no vocabulary at all: llama.cpp refuses such a model). `like`: as
// for tokenizer::Vocab::load, a vocabulary whose tables are shared where they are the same;
// `for_prompts` too.
std::optional<tokenizer::Vocab> load_vocab(const Model& m, const std::string& file = "", const tokenizer::Vocab* like = nullptr,
                                           bool for_prompts = false);

// The longest text detokenize_ids makes: ids whose text is longer (a GPT-2 token outside the
// byte map repeats its whole text once per character) are refused rather than made.
inline constexpr size_t kDetokenizedCap = 256u << 20;
// llama_detokenize of ids a caller gave (`ggufkit detokenize`, Python's detokenize()): an id
// that is not one of the vocabulary's is a format Error naming `file`, tokenizer.ggml.tokens
// and the id (llama.cpp would read past its table), and so is what the tokenizer refuses.
std::string detokenize_ids(const tokenizer::Vocab& v, const std::string& file, std::span<const int64_t> ids, bool remove_special,
                           bool unparse_special);

// Whether `m` has a chat template (a key is_template_key names): one the template rules
// render and tokenize.
bool has_chat_template(const Model& m);

// The same for the rule book, remembered by one call: validate, the template rules and an
// edit's check of the model before and after ask for the vocabulary up to four times, and a
// 150,000-token one is worth loading once. The last two vocabularies asked for are kept (by
// a hash of every key the load reads), and so is a refusal (rethrown); a new one shares the
// newest's tables of token texts and merges where they are the same. nullptr: no
// vocabulary. A call's own (an edit's plan holds one, a validate its own), never the
// process's: calls at once neither wait for each other's loads nor keep each other's.
class VocabCache {
 public:
  std::shared_ptr<const tokenizer::Vocab> rules_vocab(const Model& m);
  // Whether this cache's owner tokenizes the chat templates' prompts with what it loads
  // (validate, an edit's gate: has_chat_template): BPE's merge ranks are then built
  // alongside each load.
  bool for_prompts = false;

 private:
  struct Kept {
    uint64_t key;
    std::shared_ptr<const tokenizer::Vocab> vocab;
    std::optional<Error> refused;
  };
  std::mutex m_;
  std::deque<Kept> kept_;  // the newest first
};

}  // namespace ggufkit
