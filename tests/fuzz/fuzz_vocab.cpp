// libFuzzer: loading a vocabulary from a GGUF header whose tokenizer.* keys the input makes,
// then tokenizing with it, printing its special tokens, and validating the file (the rule
// book loads the vocabulary again). The input is lines:
//   @model NAME | @pre NAME | @name NAME      tokenizer.ggml.model, .pre, general.name
//   @u32 KEY N | @bool KEY 0/1                tokenizer.ggml.KEY (bos_token_id, add_bos_token, ...)
//   @merge A B                                a tokenizer.ggml.merges item
//   @charsmap HEX                             tokenizer.ggml.precompiled_charsmap
//   @noscores | @notypes                      leave tokenizer.ggml.scores / .token_type out
//   @many N T PREFIX                          N tokens PREFIX0, PREFIX1, ... of type T
//   @text[*N] TEXT                            a text to tokenize (TEXT N times)
//   T[*N ]TEXT                                a token of type digit T (TEXT N times)
//   TEXT                                      a normal token
// with \n, \xHH and \\ escapes in TEXT. Repetition reaches the audit's hot spots (huge
// tokens, many specials, long trie walks) within libFuzzer's input sizes; sizes are capped
// so that a linear tokenizer takes well under libFuzzer's -timeout on anything here.
// A ggufkit::Error or tokenizer::Error (a refusal) is an answer; an id outside [-1, size),
// a crash, a sanitizer report, an escaped exception or a hang past -timeout is a finding.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ggufkit/check.h"
#include "ggufkit/error.h"
#include "ggufkit/scan.h"
#include "ggufkit/tokenizer.h"
#include "ggufkit/vocab.h"
#include "check_ids.h"
#include "ggufkit/writer.h"

namespace {

namespace tk = ggufkit::tokenizer;
using ggufkit::Value;
using ggufkit::ValueType;

constexpr size_t kMaxTokenBytes = 8u << 20, kMaxTokens = 400000, kMaxTextBytes = 1u << 20, kMaxRepeat = 1u << 20;

std::string unescape(std::string_view s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      r += s[i];
    } else if (s[i + 1] == 'n') {
      r += '\n', ++i;
    } else if (s[i + 1] == '\\') {
      r += '\\', ++i;
    } else if (s[i + 1] == 'x' && i + 3 < s.size() && std::isxdigit(static_cast<uint8_t>(s[i + 2])) &&
               std::isxdigit(static_cast<uint8_t>(s[i + 3]))) {
      r += static_cast<char>(std::stoi(std::string(s.substr(i + 2, 2)), nullptr, 16)), i += 3;
    } else {
      r += s[i];
    }
  }
  return r;
}

// "*N REST" at the start of s: N (capped) and REST; else 1 and s.
std::pair<size_t, std::string_view> repeat(std::string_view s) {
  if (s.size() < 2 || s[0] != '*' || !std::isdigit(static_cast<uint8_t>(s[1]))) return {1, s};
  size_t n = 0, i = 1;
  while (i < s.size() && std::isdigit(static_cast<uint8_t>(s[i]))) n = std::min(n * 10 + (s[i++] - '0'), kMaxRepeat);
  if (i < s.size() && s[i] == ' ') ++i;
  return {n, s.substr(i)};
}

std::string times(std::string_view s, size_t n) {
  std::string r;
  r.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) r += s;
  return r;
}

// The word after `s`'s first space, and the rest.
std::pair<std::string_view, std::string_view> word(std::string_view s) {
  const size_t sp = s.find(' ');
  if (sp == std::string_view::npos) return {s, {}};
  return {s.substr(0, sp), s.substr(sp + 1)};
}

struct Input {
  ggufkit::Model model;
  std::vector<std::string> texts;
};

// nullopt: past the caps.
std::optional<Input> parse(std::string_view in) {
  Input r;
  std::string kind = "llama";
  std::vector<std::string> tokens, merges;
  std::vector<Value> types;
  std::vector<std::pair<std::string, Value>> keys;
  bool scores = true, typed = true;
  size_t token_bytes = 0, text_bytes = 0;
  auto add = [&](std::string text, int32_t type) {
    token_bytes += text.size();
    tokens.push_back(std::move(text));
    types.push_back(Value::scalar(ValueType::i32, static_cast<uint32_t>(type)));
  };
  while (!in.empty()) {
    const size_t nl = in.find('\n');
    std::string_view line = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
    if (line.empty()) continue;
    if (line[0] == '@') {
      auto [cmd, rest] = word(line.substr(1));
      if (cmd == "model") {
        kind = unescape(rest);
      } else if (cmd == "pre") {
        keys.push_back({"tokenizer.ggml.pre", Value::of_string(unescape(rest))});
      } else if (cmd == "name") {
        keys.push_back({"general.name", Value::of_string(unescape(rest))});
      } else if (cmd == "u32" || cmd == "bool") {
        auto [key, n] = word(rest);
        const uint32_t v = static_cast<uint32_t>(std::strtoul(std::string(n).c_str(), nullptr, 10));
        keys.push_back({"tokenizer.ggml." + std::string(key), cmd == "u32" ? Value::of_u32(v) : Value::of_bool(v != 0)});
      } else if (cmd == "merge") {
        merges.push_back(unescape(rest));
      } else if (cmd == "charsmap") {
        std::vector<Value> bytes;
        for (size_t i = 0; i + 1 < rest.size(); i += 2)
          bytes.push_back(Value::scalar(ValueType::u8, std::strtoul(std::string(rest.substr(i, 2)).c_str(), nullptr, 16) & 0xff));
        keys.push_back({"tokenizer.ggml.precompiled_charsmap", Value::array(ValueType::u8, bytes)});
      } else if (cmd == "noscores") {
        scores = false;
      } else if (cmd == "notypes") {
        typed = false;
      } else if (cmd == "many") {
        auto [n, more] = word(rest);
        auto [type, prefix] = word(more);
        const size_t count = std::min<size_t>(std::strtoul(std::string(n).c_str(), nullptr, 10), kMaxTokens);
        const std::string p = unescape(prefix);
        const int32_t t = static_cast<int32_t>(std::strtol(std::string(type).c_str(), nullptr, 10));
        for (size_t i = 0; i < count && tokens.size() < kMaxTokens; ++i) add(p + std::to_string(i), t);
      } else if (cmd.substr(0, 4) == "text") {
        auto [n, text] = repeat(line.substr(5));
        if (!text.empty() && text[0] == ' ') text.remove_prefix(1);
        const std::string t = unescape(text);
        if ((text_bytes += t.size() * n) > kMaxTextBytes) return std::nullopt;
        r.texts.push_back(times(t, n));
      }
    } else if (std::isdigit(static_cast<uint8_t>(line[0]))) {
      auto [n, text] = repeat(line.substr(1));
      const std::string t = unescape(text);
      if (token_bytes + t.size() * n > kMaxTokenBytes) return std::nullopt;
      add(times(t, n), line[0] - '0');
    } else {
      add(unescape(line), 1);
    }
    if (tokens.size() > kMaxTokens || token_bytes > kMaxTokenBytes) return std::nullopt;
  }
  ggufkit::Metadata& md = r.model.metadata;
  md.push_back({"general.architecture", Value::of_string("llama")});
  md.push_back({"tokenizer.ggml.model", Value::of_string(kind)});
  md.push_back({"tokenizer.ggml.tokens", Value::strings(tokens)});
  if (scores) {
    std::vector<Value> s;
    s.reserve(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) s.push_back(Value::of_f32(-static_cast<float>(i % 1000) / 10));
    md.push_back({"tokenizer.ggml.scores", Value::array(ValueType::f32, s)});
  }
  if (typed) md.push_back({"tokenizer.ggml.token_type", Value::array(ValueType::i32, types)});
  if (!merges.empty()) md.push_back({"tokenizer.ggml.merges", Value::strings(merges)});
  for (auto& [k, v] : keys) {
    if (!r.model.find(k)) md.push_back({k, std::move(v)});
  }
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<Input> in = parse(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!in) return 0;
  std::vector<uint8_t> bytes;
  try {
    bytes = ggufkit::to_bytes(in->model);
    ggufkit::Scanned s = ggufkit::scan(ggufkit::from_bytes("fuzz.gguf", bytes));
    std::optional<tk::Vocab> v = ggufkit::load_vocab(s.model, "fuzz.gguf");
    if (v && v->kind() != tk::Kind::none) {
      for (const std::string& text : in->texts) {
        for (bool special : {true, false}) {
          std::vector<int32_t> ids = v->tokenize(text, special, special);
          check_ids(ids, *v);
          v->detokenize(ids, !special, special);
        }
      }
      const tk::Loaded& l = v->loaded();
      for (int32_t id : {l.bos, l.eos, l.eot, l.eom, l.unk, l.sep, l.nl, l.pad, l.mask, l.fim_pre, l.fim_suf, l.fim_mid}) {
        v->piece(id);
        v->detokenize(std::vector<int32_t>{id});
      }
      check_ids(l.eog, *v);
      check_ids(l.control, *v);
    }
  } catch (const ggufkit::Error&) {
  } catch (const tk::Error&) {
  }
  if (bytes.empty()) return 0;  // not written
  try {
    ggufkit::validate_source(ggufkit::from_bytes("fuzz.gguf", std::move(bytes)));
  } catch (const ggufkit::Error&) {
  }
  return 0;
}
