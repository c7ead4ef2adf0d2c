#include "ggufkit/vocab.h"

#include "ggufkit/error.h"

namespace ggufkit {

namespace {
bool wanted(std::string_view key) {
  return key.starts_with("tokenizer.") || key == "general.architecture" || key == "general.name" ||
         key.ends_with(".vocab_size");
}
}  // namespace

tokenizer::VocabSpec vocab_spec(const Model& m) {
  tokenizer::VocabSpec spec;
  const Metadata& md = m.metadata;
  for (size_t i = 0; i < md.size(); ++i) {
    std::string_view key = md.key(i);
    if (!wanted(key)) continue;
    const Value& v = md.ref(i).value;  // kept by the metadata: views of it stay valid
    tokenizer::KeyValue kv;
    kv.type = static_cast<tokenizer::ValueType>(v.type);
    kv.bits = v.bits;
    if (v.type == ValueType::string) kv.str = v.str;
    if (v.type == ValueType::array) {
      kv.elem = static_cast<tokenizer::ValueType>(v.elem);
      kv.count = v.size();
      if (v.elem == ValueType::string) {
        kv.strings.reserve(v.strs.size());
        for (size_t k = 0; k < v.strs.size(); ++k) kv.strings.push_back(v.strs[k]);
      } else if (v.elem != ValueType::array) {
        kv.numbers.reserve(v.nums.size());
        for (size_t k = 0; k < v.nums.size(); ++k) kv.numbers.push_back(v.nums[k]);
      }
    }
    spec.keys.emplace(std::string(key), std::move(kv));  // the first of a repeated key, as ggml finds it
  }
  return spec;
}

std::optional<tokenizer::Vocab> load_vocab(const Model& m, const std::string& file) {
  if (!m.find("tokenizer.ggml.model")) return std::nullopt;
  try {
    return tokenizer::Vocab::load(vocab_spec(m));
  } catch (const tokenizer::Error& e) {
    std::optional<uint64_t> at;
    std::string field = e.key;
    for (size_t i = 0; !e.key.empty() && i < m.metadata.size(); ++i)
      if (m.metadata.key(i) == e.key) {
        at = m.metadata.value_offset(i);
        field = "kv[" + std::to_string(i) + "] " + e.key;
        break;
      }
    throw Error(Error::Kind::format, file, at, field, std::string("llama.cpp refuses the vocabulary: ") + e.what());
  }
}

}  // namespace ggufkit
