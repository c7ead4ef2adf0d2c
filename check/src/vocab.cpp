#include "ggufkit/vocab.h"

#include <xxhash.h>

#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "ggufkit/error.h"
#include "ggufkit/format.h"

namespace ggufkit {

namespace {
bool wanted(std::string_view key) {
  return key.starts_with("tokenizer.") || key == "general.architecture" || key == "general.name" ||
         key.ends_with(".vocab_size");
}

// The tokenizer knows nothing of GGUF files, so it names the value types itself; both are
// GGUF's numbering, and the cast below holds only while every one agrees.
template <tokenizer::ValueType T, ValueType G>
constexpr bool agree = static_cast<uint32_t>(T) == static_cast<uint32_t>(G);
namespace tk = tokenizer;
static_assert(agree<tk::ValueType::u8, ValueType::u8> && agree<tk::ValueType::i8, ValueType::i8> &&
                  agree<tk::ValueType::u16, ValueType::u16> && agree<tk::ValueType::i16, ValueType::i16> &&
                  agree<tk::ValueType::u32, ValueType::u32> && agree<tk::ValueType::i32, ValueType::i32> &&
                  agree<tk::ValueType::f32, ValueType::f32> && agree<tk::ValueType::boolean, ValueType::boolean> &&
                  agree<tk::ValueType::string, ValueType::string> && agree<tk::ValueType::array, ValueType::array> &&
                  agree<tk::ValueType::u64, ValueType::u64> && agree<tk::ValueType::i64, ValueType::i64> &&
                  agree<tk::ValueType::f64, ValueType::f64> && static_cast<uint32_t>(tk::ValueType::f64) + 1 == kValueTypeCount,
              "tokenizer::ValueType must number GGUF's value types as ValueType does");
tokenizer::ValueType tokenizer_type(ValueType t) { return static_cast<tokenizer::ValueType>(t); }
}  // namespace

tokenizer::VocabSpec vocab_spec(const Model& m) {
  tokenizer::VocabSpec spec;
  const Metadata& md = m.metadata;
  for (size_t i = 0; i < md.size(); ++i) {
    std::string_view key = md.key(i);
    if (!wanted(key)) continue;
    const Value& v = md.ref(i).value;  // kept by the metadata: views of it stay valid
    tokenizer::KeyValue kv;
    kv.type = tokenizer_type(v.type);
    kv.bits = v.bits;
    if (v.type == ValueType::string) kv.str = v.str;
    if (v.type == ValueType::array) {
      kv.elem = tokenizer_type(v.elem);
      kv.count = v.size();
      if (v.elem == ValueType::string) {
        kv.strings = tokenizer::Strings::packed(v.strs.region(), v.strs.size(), v.strs.big(), v.strs.keep());  // read in place
      } else if (v.elem != ValueType::array) {
        kv.numbers = tokenizer::Numbers::packed(v.nums.region(), v.nums.size(), v.nums.width(), v.nums.big());  // read in place
      }
    }
    spec.keys.emplace(std::string(key), std::move(kv));  // the first of a repeated key, as ggml finds it
  }
  return spec;
}

std::string detokenize_ids(const tokenizer::Vocab& v, const std::string& file, std::span<const int64_t> ids, bool remove_special,
                           bool unparse_special) {
  std::vector<int32_t> in;
  in.reserve(ids.size());
  for (int64_t id : ids) {
    if (id < 0 || static_cast<uint64_t>(id) >= v.size())
      throw Error(Error::Kind::format, file, std::nullopt, "tokenizer.ggml.tokens",
                  "token id " + std::to_string(id) + " is not in the vocabulary (its " + std::to_string(v.size()) +
                      " tokens are ids 0 to " + std::to_string(static_cast<int64_t>(v.size()) - 1) + ")");
    in.push_back(static_cast<int32_t>(id));
  }
  try {
    return v.detokenize(in, remove_special, unparse_special, kDetokenizedCap);
  } catch (const tokenizer::Error& e) {  // the model's fault (a text past the cap): exit 1, naming the key
    throw Error(Error::Kind::format, file, std::nullopt, e.key, e.what());
  }
}

bool has_chat_template(const Model& m) {
  for (size_t i = 0; i < m.metadata.size(); ++i)
    if (is_template_key(m.metadata.key(i))) return true;
  return false;
}

std::optional<tokenizer::Vocab> load_vocab(const Model& m, const std::string& file, const tokenizer::Vocab* like, bool for_prompts) {
  if (!m.find("tokenizer.ggml.model")) return std::nullopt;
  try {
    return tokenizer::Vocab::load(vocab_spec(m), like, for_prompts);
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

namespace {
// A hash of every key the load reads: names, types and bytes as they lie in the model.
uint64_t vocab_key(const Model& m) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  auto add = [&](std::string_view s) {
    uint64_t n = s.size();
    XXH3_64bits_update(st, &n, sizeof n);
    XXH3_64bits_update(st, s.data(), s.size());
  };
  for (size_t i = 0; i < m.metadata.size(); ++i) {
    std::string_view key = m.metadata.key(i);
    if (!wanted(key)) continue;
    const Value& v = m.metadata.ref(i).value;
    add(key);
    uint64_t head[4] = {static_cast<uint64_t>(v.type), static_cast<uint64_t>(v.elem), v.bits, v.type == ValueType::array ? v.size() : 0};
    XXH3_64bits_update(st, head, sizeof head);
    add(v.str);
    add(v.strs.region());
    add(v.nums.region());
    add(v.items.region());
  }
  uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

}  // namespace

std::shared_ptr<const tokenizer::Vocab> VocabCache::rules_vocab(const Model& m) {
  if (!m.find("tokenizer.ggml.model")) return nullptr;
  const uint64_t key = vocab_key(m);
  std::lock_guard<std::mutex> lock(m_);  // held while loading: a second asker of the call waits for the first
  for (const Kept& r : kept_)
    if (r.key == key) {
      if (r.refused) throw *r.refused;
      return r.vocab;
    }
  Kept r{key, nullptr, std::nullopt};
  const tokenizer::Vocab* like = nullptr;  // the newest loaded: an edit's "before" for its "after"
  for (const Kept& older : kept_)
    if (older.vocab) {
      like = older.vocab.get();
      break;
    }
  try {
    if (std::optional<tokenizer::Vocab> v = load_vocab(m, "", like, for_prompts)) r.vocab = std::make_shared<const tokenizer::Vocab>(std::move(*v));
  } catch (const Error& e) {
    r.refused = e;
  }
  kept_.push_front(r);
  if (kept_.size() > 2) kept_.pop_back();
  if (r.refused) throw *r.refused;
  return r.vocab;
}

}  // namespace ggufkit
