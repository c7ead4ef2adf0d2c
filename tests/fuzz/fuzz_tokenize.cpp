// libFuzzer: the tokenizer, text to ids and back, on real and made vocabularies. The input's
// first byte picks the vocabulary (the corpus's vocab/*.gguf, then a small t5 and a small
// rwkv one made here), the second the flags (bit 0 add_special, 1 parse_special, 2
// remove_special, 3 unparse_special), the rest is the text. The text is tokenized, the ids
// detokenized, and the text read as 24-bit ids (some out of range) is detokenized too.
// A tokenizer::Error (llama.cpp's refusals) is an answer; an id outside [-1, size) (-1 is
// llama.cpp's null token, which rwkv gives for a byte it has no token for), a crash, a
// sanitizer report, an escaped exception or a hang past libFuzzer's timeout is a finding.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ggufkit/error.h"
#include "ggufkit/scan.h"
#include "ggufkit/tokenizer.h"
#include "ggufkit/vocab.h"
#include "check_ids.h"

namespace {

namespace tk = ggufkit::tokenizer;
using ggufkit::Value;
using ggufkit::ValueType;

struct Loaded {
  std::shared_ptr<ggufkit::Model> model;  // the vocabulary's views point into it
  std::unique_ptr<tk::Vocab> vocab;
};

Loaded load(ggufkit::Model m, const std::string& name) {
  auto model = std::make_shared<ggufkit::Model>(std::move(m));
  auto v = ggufkit::load_vocab(*model, name);
  return {model, std::make_unique<tk::Vocab>(std::move(*v))};
}

// A vocabulary of `kind` with these tokens (text, llama.cpp's token type), scores falling
// with the id.
ggufkit::Model made(const std::string& kind, const std::vector<std::pair<std::string, int32_t>>& tokens) {
  ggufkit::Model m;
  std::vector<std::string> texts;
  std::vector<Value> scores, types;
  for (const auto& [text, type] : tokens) {
    texts.push_back(text);
    scores.push_back(Value::of_f32(-static_cast<float>(texts.size())));
    types.push_back(Value::scalar(ValueType::i32, static_cast<uint32_t>(type)));
  }
  m.metadata.push_back({"general.architecture", Value::of_string(kind)});
  m.metadata.push_back({"tokenizer.ggml.model", Value::of_string(kind)});
  m.metadata.push_back({"tokenizer.ggml.tokens", Value::strings(texts)});
  m.metadata.push_back({"tokenizer.ggml.scores", Value::array(ValueType::f32, scores)});
  m.metadata.push_back({"tokenizer.ggml.token_type", Value::array(ValueType::i32, types)});
  return m;
}

const std::vector<Loaded>& vocabularies() {
  static const std::vector<Loaded> all = [] {
    std::vector<Loaded> v;
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(GGUFKIT_CORPUS "/vocab", ec))
      if (e.path().extension() == ".gguf") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) v.push_back(load(ggufkit::scan_file(f.string()).model, f.string()));
    const std::string long_a(64, 'a');
    // t5 (unigram): pad, eos, unk as t5's, a user-defined token, and a long token for the trie walks.
    v.push_back(load(made("t5", {{"<pad>", 3}, {"</s>", 3}, {"<unk>", 2}, {"<extra_id_0>", 4}, {"\xe2\x96\x81", 1},
                                 {"\xe2\x96\x81" "a", 1}, {"a", 1}, {"b", 1}, {"ab", 1}, {"\xe2\x96\x81" "ab", 1},
                                 {"aaaa", 1}, {long_a + "b", 1}, {"\xe4\xb8\xad", 1}, {"\n", 1}}),
                     "t5"));
    // rwkv: escaped texts, every byte but 0xff a token (so that one gives the null id).
    std::vector<std::pair<std::string, int32_t>> rwkv = {{"<s>", 3}};
    for (int b = 0; b < 255; ++b) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", b);
      rwkv.push_back({hex, 1});
    }
    for (const char* t : {"ab", "aaaa", "\\n\\n", "\\t", "the", "\xe4\xb8\xad\xe6\x96\x87"}) rwkv.push_back({t, 1});
    rwkv.push_back({long_a + "b", 1});
    v.push_back(load(made("rwkv", rwkv), "rwkv"));
    return v;
  }();
  return all;
}

}  // namespace

// Loaded before the first input, so that the loads do not count against -timeout.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  vocabularies();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& all = vocabularies();
  if (size < 2 || all.empty()) return 0;
  const tk::Vocab& v = *all[data[0] % all.size()].vocab;
  const uint8_t flags = data[1];
  std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  try {
    std::vector<int32_t> ids = v.tokenize(text, flags & 1, flags & 2);
    check_ids(ids, v);
    v.detokenize(ids, flags & 4, flags & 8);
  } catch (const tk::Error&) {
  }
  std::vector<int32_t> raw;  // the text as ids: -1, every id, and some past the end
  for (size_t i = 0; i + 2 < text.size(); i += 3) {
    const uint32_t n = static_cast<uint8_t>(text[i]) | static_cast<uint8_t>(text[i + 1]) << 8 | static_cast<uint8_t>(text[i + 2]) << 16;
    raw.push_back(static_cast<int32_t>(n % (v.size() + 8)) - 1);
  }
  v.detokenize(raw, flags & 4, flags & 8);
  for (size_t i = 0; i < raw.size() && i < 16; ++i) v.piece(raw[i], flags & 8);
  return 0;
}
