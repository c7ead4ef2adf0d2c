// The chat path's ids, the standard conversations, and the template rules: a template read
// against the vocabulary it is stored with, at the token level.
#include "ggufkit/chat.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <unordered_set>

#include "ggufkit/check.h"
#include "ggufkit/error.h"
#include "ggufkit/inspect.h"
#include "ggufkit/jinja.h"
#include "ggufkit/prompt.h"
#include "ggufkit/text.h"
#include "template_rules.h"

namespace ggufkit {

std::string_view chat_text(const tokenizer::Vocab& v, std::string_view prompt) {
  const tokenizer::Loaded& l = v.loaded();
  // common/chat.cpp compares with the pieces of llama_vocab_bos/eos ("" where there is none,
  // which every prompt starts and ends with)
  // (no more of each than the prompt holds: a piece can be far longer than its token's text)
  const size_t most = prompt.size() + 1;
  const std::string bos = l.bos >= 0 ? v.piece(l.bos, true, most) : "", eos = l.eos >= 0 ? v.piece(l.eos, true, most) : "";
  if (l.add_bos && prompt.starts_with(bos)) prompt.remove_prefix(bos.size());
  if (l.add_eos && prompt.ends_with(eos)) prompt.remove_suffix(eos.size());
  return prompt;
}

std::vector<int32_t> chat_ids(const tokenizer::Vocab& v, std::string_view prompt) { return v.tokenize(chat_text(v, prompt), true, true); }

std::vector<ChatToken> chat_tokens(const tokenizer::Vocab& v, std::string_view prompt) {
  std::vector<ChatToken> out;
  for (int32_t id : chat_ids(v, prompt)) {
    const uint32_t a = v.attr(id);
    bool cut = false;
    std::string piece = v.shown_piece(id, cut);
    out.push_back({id, std::move(piece),
                   a & tokenizer::attr_control        ? "control"
                   : a & tokenizer::attr_user_defined ? "user_defined"
                   : a & tokenizer::attr_unknown      ? "unknown"
                                                      : "",
                   cut});
  }
  return out;
}

const std::vector<StandardConversation>& standard_conversations() {
  static const std::vector<StandardConversation> all = [] {
    const std::string several = R"({"messages": [{"role": "user", "content": "What is the capital of France?"},
      {"role": "assistant", "content": ")" + std::string(kAssistantWords) + R"("},
      {"role": "user", "content": ")" + std::string(kNextUserWords) + R"("}]})";
    const std::pair<const char*, std::string> texts[] = {
        {"system and user", R"({"messages": [{"role": "system", "content": "You are a helpful assistant."},
           {"role": "user", "content": "What is the capital of France?"}]})"},
        {"user only", R"({"messages": [{"role": "user", "content": "Hello!"}]})"},
        {"several turns", several},
        {"with the generation prompt", R"({"messages": [{"role": "user", "content": "Hello!"}], "add_generation_prompt": true})"},
        {"with a tool call", R"({"messages": [{"role": "user", "content": "What is the weather in Paris?"},
           {"role": "assistant", "content": "", "tool_calls": [{"id": "call0", "type": "function",
             "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
           {"role": "tool", "tool_call_id": "call0", "name": "get_weather", "content": "{\"temperature\": 18}"}],
          "tools": [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
          "add_generation_prompt": true})"},
    };
    std::vector<StandardConversation> out;
    for (const auto& [name, text] : texts) out.push_back({name, jinja::from_json(text), std::string_view(name) == "with a tool call"});
    return out;
  }();
  return all;
}

namespace {

// A literal that looks like a chat token. Strong: <|NAME|> (and DeepSeek's <｜NAME｜>, with
// fullwidth bars), <start_of_turn> and <end_of_turn>: special whether or not the vocabulary
// has them. [NAME] and [/NAME] in capitals (Mistral's [INST]) likewise, but only in a
// vocabulary with control tokens of that form (Mistral v3's): Llama 2's [INST] was never a
// token, it is text by design. Weak: any other <...> without spaces (<think>, <｜User｜>, </s>),
// special only where it is a token (a template's prose writes <tools> as text).
struct Candidate {
  std::string text;
  bool strong;
  bool bracket = false;  // [NAME]: special only in a vocabulary with control tokens of that form
};

// At most kMaxCandidates, each once (`seen`): real templates write a few dozen; a hostile one
// could write a million.
constexpr size_t kMaxCandidates = 256;
void special_looking(std::string_view text, std::vector<Candidate>& out, std::unordered_set<std::string>& seen) {
  auto add = [&](std::string_view s, bool strong) {
    if (out.size() < kMaxCandidates && seen.emplace(s).second) out.push_back({std::string(s), strong, s.starts_with('[')});
  };
  auto name_byte = [](char c) { return c != '<' && c != '>' && c != '|' && !std::isspace(static_cast<unsigned char>(c)); };
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '<') {
      const bool bar = text.compare(i, 2, "<|") == 0;
      size_t j = i + 1 + bar;
      while (j < text.size() && j - i < 66 && (name_byte(text[j]) || (!bar && text[j] == '|'))) ++j;
      if (j == i + 1 + bar) continue;
      if (bar && text.compare(j, 2, "|>") == 0) add(text.substr(i, j + 2 - i), true);
      else if (!bar && j < text.size() && text[j] == '>') {
        std::string_view s = text.substr(i, j + 1 - i);
        add(s, s == "<start_of_turn>" || s == "<end_of_turn>" || (s.starts_with("<\uFF5C") && s.ends_with("\uFF5C>") && s.size() > 8));
      }
    } else if (text[i] == '[') {
      size_t j = i + 1 + (i + 1 < text.size() && text[i + 1] == '/');
      size_t k = j;
      while (k < text.size() && ((text[k] >= 'A' && text[k] <= 'Z') || text[k] == '_')) ++k;
      if (k - j >= 3 && k < text.size() && text[k] == ']') add(text.substr(i, k + 1 - i), true);
    }
  }
}

std::string ids_text(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
  return s;
}

std::string in_quotes(std::string_view s) { return json_string(s); }

// A standard conversation's prompt: as rendered (transformers' text), and `text`, the part
// of it llama.cpp's chat path tokenizes (chat_text).
struct Rendered {
  std::string_view conversation;
  std::string prompt;
  std::string_view text;
};

// The token-level rules of one template, its standard prompts rendered.
void token_rules(const Model& m, const tokenizer::Vocab& v, const std::string& key, const jinja::Template& t,
                 const std::vector<Rendered>& prompts, std::vector<Finding>& out) {
  auto add = [&](Code code, std::string item, std::string message, std::vector<int32_t> ids, std::string fix) {
    Finding f = finding(code, std::nullopt, std::move(message), Place::key(key, std::move(item)));
    f.ids = std::move(ids);
    f.fix = std::move(fix);
    out.push_back(std::move(f));
  };
  // Where a text first shows: in which prompt, at which byte; or in the template's text.
  auto where = [&](std::string_view text) -> std::string {
    for (const Rendered& r : prompts)
      if (size_t at = r.text.find(text); at != std::string::npos)
        return "in the prompt of \"" + std::string(r.conversation) + "\" at byte " + std::to_string(r.text.data() - r.prompt.data() + at);
    return "in the template's text";
  };
  // The type as stored (llama.cpp reads the array's integers as types; without one, every
  // token is normal to it, and no retype can help: the array is not there to change).
  const Value* types = m.find("tokenizer.ggml.token_type");
  const bool typed = types && types->type == ValueType::array && types->elem != ValueType::string && types->elem != ValueType::array;
  auto stored_type = [&](int32_t id) -> int64_t {
    if (!typed || static_cast<uint64_t>(id) >= types->size()) return 1;
    return static_cast<int32_t>(static_cast<uint32_t>(types->nums[static_cast<size_t>(id)]));
  };
  auto type_text = [&](int32_t id) {
    return typed ? "typed " + token_type_name(stored_type(id)) : std::string("untyped (no tokenizer.ggml.token_type: normal to llama.cpp)");
  };
  // The candidates: what the prompts show first (where a split costs tokens), then the
  // template's literals (branches no standard conversation reaches).
  std::vector<Candidate> shown;
  std::unordered_set<std::string> seen;
  for (const Rendered& r : prompts) special_looking(r.text, shown, seen);  // a BOS text llama.cpp strips is not split
  const size_t n_shown = shown.size();
  for (std::string_view lit : jinja::literals(t)) special_looking(lit, shown, seen);
  const uint32_t parsed = tokenizer::attr_control | tokenizer::attr_user_defined | tokenizer::attr_unknown;
  const tokenizer::Loaded& l = v.loaded();
  // [NAME] is special only where the vocabulary has control tokens of that form.
  const bool bracket_vocab = std::any_of(l.control.begin(), l.control.end(), [&](int32_t id) {
    const std::string_view t = v.text(id);
    return t.size() > 2 && t.front() == '[' && t.back() == ']';
  });
  for (size_t k = 0; k < shown.size(); ++k) {
    const Candidate& c = shown[k];
    const int32_t id = v.find(c.text);
    if (id < 0 && (!c.strong || (c.bracket && !bracket_vocab))) continue;
    const std::vector<int32_t> pieces = v.tokenize(c.text, false, true);
    const bool split = pieces.size() != 1 || pieces[0] != id;
    // The retype that makes llama.cpp (and every runtime) parse the token out of the text and
    // still print it as its text: user_defined, for a token typed normal. A byte or unused
    // token is never retyped (its bytes would print as its name): no fix is offered for it.
    const std::string fix_type = typed && id >= 0 && stored_type(id) == 1
                                     ? "ggufkit edit FILE --token-type " + shell_quoted(c.text + "=user_defined") + " --in-place"
                                     : "";
    if (id >= 0) {
      const int64_t stored = stored_type(id);
      const uint32_t attr = v.attr(id);
      if (!(attr & parsed))
        add(Code::special_not_control, c.text,
            in_quotes(c.text) + " (id " + std::to_string(id) + ") is " + type_text(id) +
                ", so llama.cpp takes the text as text, not as the token: " + where(c.text) + " it becomes " +
                std::to_string(pieces.size()) + " token" + (pieces.size() == 1 ? "" : "s") + " (" + ids_text(pieces) + ")",
            {id}, fix_type);
      else if (stored == 1 && (attr & tokenizer::attr_control))
        add(Code::special_not_control, c.text,
            in_quotes(c.text) + " (id " + std::to_string(id) + ") is " + type_text(id) +
                "; llama.cpp overrides it to control by its text at load (\"control-looking token\"), but a "
                "runtime that reads the type splits it",
            {id}, fix_type);
    }
    if (split && k < n_shown)
      add(Code::template_literal_split, c.text,
          in_quotes(c.text) + (pieces.empty() ? " tokenizes into no token at all (the vocabulary has none of its bytes) "
                                           : " tokenizes into " + std::to_string(pieces.size()) + " tokens (" + ids_text(pieces) + ") ") +
              where(c.text) +
              (id >= 0 ? ": it is token " + std::to_string(id) + ", " + type_text(id)
                       : ": it is no token of the vocabulary, so the model never sees it as one"),
          pieces,
          id >= 0 ? fix_type
                  : "use the template the model was trained with: this one is written for another vocabulary");
  }
  for (const Rendered& r : prompts) {
    if (l.bos < 0) break;
    const std::vector<int32_t> ids = chat_ids(v, r.prompt);
    const std::string bos = v.piece(l.bos, true, r.prompt.size() + 1);
    if (ids.size() >= 2 && ids[0] == l.bos && ids[1] == l.bos) {
      add(Code::double_bos, "",
          "the ids llama.cpp's chat path feeds the model for \"" + std::string(r.conversation) + "\" start with two BOS (" +
              in_quotes(bos) + ", id " + std::to_string(l.bos) + "): the template writes it " +
              (l.add_bos ? "after the one llama.cpp strips, and the vocabulary adds one" : "twice"),
          {l.bos, l.bos}, "print bos_token once at the template's start, or not at all");
      break;
    }
    if (l.add_bos && !bos.empty() && r.prompt.starts_with(bos)) {
      add(Code::double_bos_unstripped, "",
          "the template prints " + in_quotes(bos) + " first and the vocabulary adds BOS: llama.cpp's chat path strips the "
              "template's, but a runtime that tokenizes the rendered prompt with add_special (a plain llama_tokenize) "
              "feeds two BOS",
          {l.bos}, "");
      break;
    }
  }
  // The tokens that open a turn: the first of a prompt's ids after the BOS llama.cpp adds
  // (BOS itself is the validator's to judge), and the first special token the generation
  // prompt adds for the assistant's turn. None may be one llama.cpp stops generating at.
  auto is_eog = [&](int32_t id) { return std::binary_search(l.eog.begin(), l.eog.end(), id); };
  std::vector<std::pair<int32_t, std::string>> openers;  // (id, where)
  auto opener = [&](int32_t id, std::string at) {
    if (id == l.bos || !(v.attr(id) & parsed)) return;
    if (std::none_of(openers.begin(), openers.end(), [&](const auto& o) { return o.first == id; })) openers.push_back({id, std::move(at)});
  };
  const Rendered* user_only = nullptr;
  for (const Rendered& r : prompts) {
    const std::vector<int32_t> ids = chat_ids(v, r.prompt);
    const size_t first = !ids.empty() && ids[0] == l.bos ? 1 : 0;
    if (first < ids.size()) opener(ids[first], "the first token of the prompt of \"" + std::string(r.conversation) + "\"");
    if (r.conversation == "user only") user_only = &r;
    if (r.conversation == "with the generation prompt" && user_only && r.prompt.size() > user_only->prompt.size() &&
        r.prompt.starts_with(user_only->prompt))
      for (int32_t id : v.tokenize(std::string_view(r.prompt).substr(user_only->prompt.size(), 4096), false, true))
        if (v.attr(id) & parsed) {
          opener(id, "the first token of the assistant's turn the generation prompt opens");
          break;
        }
  }
  for (const auto& [id, at] : openers)
    if (is_eog(id))
      add(Code::eog_at_start, std::string(v.text(id)),
          in_quotes(v.text(id)) + " (id " + std::to_string(id) + ") is " + at +
              ", and llama.cpp stops generating at it: a model that opens a turn with it ends its answer there",
          {id}, "");
  auto opens = [&](int32_t id) {
    return id == l.bos || std::any_of(openers.begin(), openers.end(), [&](const auto& o) { return o.first == id; });
  };
  // What ends the assistant's turn: the first token llama.cpp parses as special after its
  // words, before the next user's.
  for (const Rendered& r : prompts) {
    if (r.conversation != "several turns") continue;
    const size_t from = r.prompt.find(kAssistantWords);
    if (from == std::string::npos) break;
    const size_t start = from + kAssistantWords.size();
    const size_t stop = std::min(r.prompt.find(kNextUserWords, start), r.prompt.size());
    // (the first 4 KiB of it: a turn's end and the next opening are a few tokens)
    const std::string_view segment = std::string_view(r.prompt).substr(start, std::min<size_t>(stop - start, 4096));
    // the first token llama.cpp parses as special, as it splits them out of the text
    int32_t best = -1;
    for (int32_t id : v.tokenize(segment, false, true))
      if (v.attr(id) & parsed) {
        best = id;
        break;
      }
    if (best < 0) break;
    const size_t found = segment.find(v.text(best)), best_at = found == std::string_view::npos ? 0 : found;
    if (is_eog(best)) break;
    // eot may name it only where it opens no turn and is not BOS or unknown.
    const bool safe = !opens(best) && !(v.attr(best) & tokenizer::attr_unknown);
    std::string stops;
    for (int32_t id : l.eog) stops += (stops.empty() ? "" : ", ") + in_quotes(v.text(id)) + " (" + std::to_string(id) + ")";
    add(Code::turn_end_not_eog, std::string(v.text(best)),
        "an assistant turn ends in " + in_quotes(v.text(best)) + " (id " + std::to_string(best) + ") in the prompt of \"several turns\" at byte " +
            std::to_string(start + best_at) + ", but llama.cpp stops generating only at " + (stops.empty() ? "no token" : stops) +
            ": the model's answer will run on past its turn" +
            (safe ? " (llama.cpp stops at eot: make it the eot token)"
                  : "; it is BOS, unknown or a turn's opening too, so no fix makes it an end of generation"),
        {best}, safe ? "ggufkit edit FILE --special-token " + shell_quoted("eot=" + std::string(v.text(best))) + " --in-place" : "");
    break;
  }
}

}  // namespace

// A standard conversation's prompt is a few hundred bytes; one of over 64 KiB (a template
// that pads, or is hostile) is not tokenized. And all templates together are rendered for 2 s
// at most (each render has the sandbox's 500 ms): a file of many slow templates cannot hold
// validate or an edit for long; what is past the budget is left unchecked at the token level.
constexpr size_t kMaxPrompt = 64u << 10;
constexpr std::chrono::seconds kRenderBudget{2};

std::vector<Finding> template_rules(const Model& m, const tokenizer::Vocab* vocab) {
  std::vector<Finding> out;
  auto add = [&](const std::string& key, Code code, std::string message) {
    out.push_back(finding(code, std::nullopt, std::move(message), Place::key(key)));
  };
  bool named = false, plain = false;
  std::optional<std::string> first_key;
  std::unordered_set<std::string> checked;
  const auto deadline = std::chrono::steady_clock::now() + kRenderBudget;
  for (const KV& kv : m.metadata) {
    if (!is_template_key(kv.key) || kv.value.type != ValueType::string) continue;
    (kv.key == "tokenizer.chat_template" ? plain : named) = true;
    if (!first_key) first_key = kv.key;
    std::optional<jinja::Template> t;
    try {
      t = jinja::parse(kv.value.str);
    } catch (const jinja::SyntaxError& e) {
      add(kv.key, Code::template_syntax, kv.key + ": " + e.what() + " (jinja2 refuses it, so do llama.cpp and Hugging Face)");
      continue;
    }
    if (!vocab || !checked.insert(kv.value.str).second) continue;  // a copy of a template checked already says the same
    std::vector<Rendered> prompts;
    const bool takes_tools = jinja::mentions(*t, "tools");
    for (const StandardConversation& c : standard_conversations()) {
      if (c.tools && !takes_tools) continue;
      if (std::chrono::steady_clock::now() > deadline) break;
      try {
        std::string prompt = render_parsed(*t, m, c.value);
        if (prompt.size() <= kMaxPrompt) prompts.push_back({c.name, std::move(prompt), {}});
      } catch (const jinja::RenderError& e) {  // a conversation the template refuses (no system role, ...) is no fault of it
        if (e.code >= jinja::RenderErrorKind::limit_iterations) break;  // a sandbox limit: the next would cost as much
      }
    }
    for (Rendered& r : prompts) r.text = chat_text(*vocab, r.prompt);  // views of the prompts, now that none moves
    try {
      token_rules(m, *vocab, kv.key, *t, prompts, out);
    } catch (const tokenizer::Error&) {  // a vocabulary type llama.cpp cannot tokenize with: nothing to say at the token level
    }
  }
  if (first_key && named && !plain)
    add(*first_key, Code::template_no_default, "named chat templates but no tokenizer.chat_template: readers that use the default find none");
  return out;
}

}  // namespace ggufkit
