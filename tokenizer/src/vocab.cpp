// The vocabulary as llama.cpp's llama_vocab::impl::load makes it, and llama_tokenize's
// dispatch over fragments. (Skeleton: the full load lands with the tokenizer issue.)
#include <algorithm>
#include <cstring>

#include "impl.h"

namespace ggufkit::tokenizer {

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::none: return "none";
    case Kind::spm: return "spm";
    case Kind::bpe: return "bpe";
    case Kind::wpm: return "wpm";
    case Kind::ugm: return "ugm";
    case Kind::rwkv: return "rwkv";
    case Kind::plamo2: return "plamo2";
  }
  return "?";
}

Vocab::Vocab(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Vocab::Vocab(Vocab&&) noexcept = default;
Vocab& Vocab::operator=(Vocab&&) noexcept = default;
Vocab::~Vocab() = default;

Kind Vocab::kind() const { return impl_->type; }
std::string_view Vocab::model() const { return impl_->tokenizer_model; }
std::string_view Vocab::pre() const { return impl_->tokenizer_pre; }
std::string_view Vocab::pre_type() const { return impl_->pre_type_name; }
size_t Vocab::size() const { return impl_->id_to_token.size(); }
std::string_view Vocab::text(int32_t id) const { return impl_->id_to_token.at(static_cast<size_t>(id)).text; }
float Vocab::score(int32_t id) const { return impl_->id_to_token.at(static_cast<size_t>(id)).score; }
uint32_t Vocab::attr(int32_t id) const { return impl_->token_get_attr(id); }
const Loaded& Vocab::loaded() const { return impl_->loaded; }

const Algorithm& Vocab::Impl::algorithm() const {
  std::call_once(algorithm_once, [&] {
    switch (type) {
      case Kind::spm: algorithm_ = make_spm(*this); break;
      case Kind::bpe: algorithm_ = make_bpe(*this); break;
      case Kind::wpm: algorithm_ = make_wpm(*this); break;
      case Kind::ugm: algorithm_ = make_ugm(*this); break;
      case Kind::rwkv: algorithm_ = make_rwkv(*this); break;
      default: throw Error("tokenizer.ggml.model", "no tokenizer for vocabulary type " + std::string(kind_name(type)));
    }
  });
  return *algorithm_;
}

int32_t Vocab::Impl::byte_to_token(uint8_t ch) const {
  static const char* hex = "0123456789ABCDEF";
  switch (type) {
    case Kind::spm:
    case Kind::ugm: {
      const char buf[7] = {'<', '0', 'x', hex[ch >> 4], hex[ch & 15], '>', 0};
      int32_t id = text_to_token(buf);
      return id >= 0 ? id : text_to_token(std::string(1, static_cast<char>(ch)));
    }
    case Kind::wpm:
    case Kind::bpe: return text_to_token(byte_to_utf8(ch));
    case Kind::plamo2: {
      const char buf[7] = {'<', '0', 'x', hex[ch >> 4], hex[ch & 15], '>', 0};
      return text_to_token(buf);
    }
    default: return -1;
  }
}

namespace {
const KeyValue* array_of(const VocabSpec& s, const char* key, std::initializer_list<ValueType> elems) {
  const KeyValue* kv = s.find(key);
  if (!kv) return nullptr;
  if (kv->type != ValueType::array || std::find(elems.begin(), elems.end(), kv->elem) == elems.end())
    throw Error(key, std::string("invalid gguf type for ") + key);
  return kv;
}
float f32_of(uint64_t bits) {
  uint32_t b = static_cast<uint32_t>(bits);
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
}  // namespace

Vocab Vocab::load(const VocabSpec& spec) {
  auto v = std::make_unique<Impl>();
  const KeyValue* model = spec.find("tokenizer.ggml.model");
  if (!model || model->type != ValueType::string) throw Error("tokenizer.ggml.model", "key not found in model: tokenizer.ggml.model");
  v->tokenizer_model = std::string(model->str);
  if (const KeyValue* pre = spec.find("tokenizer.ggml.pre"); pre && pre->type == ValueType::string)
    v->tokenizer_pre = std::string(pre->str);
  const std::string& tm = v->tokenizer_model;
  if (tm == "llama") {
    v->type = Kind::spm;
    v->add_space_prefix = true;
    v->add_bos = true;
  } else if (tm == "bert") {
    v->type = Kind::wpm;
    v->special_bos_id = 101, v->special_eos_id = -1, v->special_unk_id = 100, v->special_sep_id = 102;
    v->special_pad_id = 0, v->special_mask_id = 103;
    v->add_sep = true, v->add_bos = true, v->clean_spaces = true;
  } else if (tm == "gpt2") {
    v->type = Kind::bpe;
    if (const KeyValue* merges = array_of(spec, "tokenizer.ggml.merges", {ValueType::string})) {
      for (size_t i = 0; i < merges->strings.size(); ++i) {
        std::string_view w = merges->strings[i];
        std::string first, second;
        size_t pos = w.find(' ', 1);
        if (pos != std::string_view::npos) first = std::string(w.substr(0, pos)), second = std::string(w.substr(pos + 1));
        v->bpe_ranks.emplace(std::make_pair(std::move(first), std::move(second)), static_cast<int>(i));
      }
    } else {
      throw Error("tokenizer.ggml.merges", "cannot find tokenizer merges in model file");
    }
    v->special_bos_id = 11, v->special_eos_id = 11, v->special_unk_id = -1;
    v->escape_whitespaces = false, v->clean_spaces = true;
    apply_pre_tokenizer(*v);
  } else if (tm == "t5") {
    v->type = Kind::ugm;
    v->special_bos_id = -1, v->special_eos_id = 1, v->special_unk_id = 2, v->special_pad_id = 0;
    v->add_eos = true;
  } else {
    throw Error("tokenizer.ggml.model", "unknown tokenizer: '" + tm + "'");
  }
  const KeyValue* tokens = array_of(spec, "tokenizer.ggml.tokens", {ValueType::string});
  if (!tokens) throw Error("tokenizer.ggml.tokens", "cannot find tokenizer vocab in model file");
  const KeyValue* scores = array_of(spec, "tokenizer.ggml.scores", {ValueType::f32, ValueType::i32});
  const KeyValue* types = array_of(spec, "tokenizer.ggml.token_type", {ValueType::i32});
  size_t n = tokens->strings.size();
  v->id_to_token.resize(n);
  for (size_t i = 0; i < n; ++i) {
    std::string word(tokens->strings[i]);
    if (word.empty()) word = "[EMPTY_" + std::to_string(i) + "]";
    v->token_to_id[word] = static_cast<int32_t>(i);
    v->max_token_len = std::max(v->max_token_len, static_cast<int>(word.size()));
    TokenData& t = v->id_to_token[i];
    t.text = std::move(word);
    if (scores && i < scores->numbers.size())
      t.score = scores->elem == ValueType::f32 ? f32_of(scores->numbers[i])
                                               : static_cast<float>(static_cast<int32_t>(scores->numbers[i]));
    if (types && i < types->numbers.size()) {
      switch (static_cast<int32_t>(types->numbers[i])) {
        case 2: t.attr = attr_unknown; break;
        case 5: t.attr = attr_unused; break;
        case 1: t.attr = attr_normal; break;
        case 3: t.attr = attr_control; break;
        case 4: t.attr = attr_user_defined; break;
        case 6: t.attr = attr_byte; break;
        default: t.attr = attr_undefined; break;
      }
    }
  }
  return Vocab(std::move(v));
}

std::vector<int32_t> Vocab::tokenize(std::string_view text, bool add_special, bool parse_special) const {
  (void)parse_special;  // skeleton: no special-token partition yet
  const Impl& v = *impl_;
  std::vector<int32_t> out;
  if (v.type == Kind::spm) {
    if (add_special && v.add_bos) out.push_back(v.special_bos_id);
    if (!text.empty()) {
      std::string t = v.add_space_prefix ? " " : "";
      t += text;
      std::string esc;
      for (char c : t) esc += c == ' ' ? std::string("\xe2\x96\x81") : std::string(1, c);
      v.algorithm().tokenize(esc, out);
    }
    if (add_special && v.add_eos) out.push_back(v.special_eos_id);
    return out;
  }
  if (!text.empty()) v.algorithm().tokenize(std::string(text), out);
  return out;
}

std::string Vocab::piece(int32_t id, bool) const { return std::string(text(id)); }
std::string Vocab::detokenize(std::span<const int32_t> ids, bool, bool) const {
  std::string r;
  for (int32_t id : ids) r += piece(id);
  return r;
}

}  // namespace ggufkit::tokenizer
