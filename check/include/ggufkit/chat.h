#pragma once
// A prompt as llama.cpp's chat path feeds it to the model, and the standard conversations
// the rule book renders and tokenizes to check a template against its vocabulary.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ggufkit/jinja_render.h"
#include "ggufkit/tokenizer.h"

namespace ggufkit {

// The text llama.cpp's chat path tokenizes, of a prompt rendered as transformers renders
// it: common/chat.cpp drops a leading BOS text when the vocabulary adds BOS, and a trailing
// EOS text when it adds EOS (the texts of llama_vocab_bos/eos as pieces).
std::string_view chat_text(const tokenizer::Vocab& v, std::string_view prompt);
// Its ids: chat_text tokenized with special tokens added and parsed, as the server does.
std::vector<int32_t> chat_ids(const tokenizer::Vocab& v, std::string_view prompt);
// The same with each token's piece (as generation prints it, special tokens' text too) and
// its kind where llama.cpp parses it as special: "control", "user_defined", "unknown", or "".
struct ChatToken {
  int32_t id;
  std::string piece;  // at most Vocab::kShownPiece bytes
  std::string_view special;
  bool cut = false;   // the piece is longer than that
};
std::vector<ChatToken> chat_tokens(const tokenizer::Vocab& v, std::string_view prompt);

// One of the conversations validate and the edit checks render.
struct StandardConversation {
  std::string_view name;  // "system and user", ...
  jinja::Value value;     // messages, and add_generation_prompt or tools
  bool tools = false;     // rendered only where the template reads `tools`
};
const std::vector<StandardConversation>& standard_conversations();
// The assistant's words in "several turns": what ends its turn is found after them.
inline constexpr std::string_view kAssistantWords = "Paris is the capital of France.";
// The user's words after them, where that turn end is looked for up to.
inline constexpr std::string_view kNextUserWords = "And the capital of Italy?";

}  // namespace ggufkit
