// validate_file: the strict reader's verdict, then what a reader lets through but a
// user or llama.cpp would trip on later. The rule book's rules (check.h's table), moved
// here from reader/ so the format's layer needs no template parser.
#include <algorithm>
#include <cctype>
#include <functional>
#include <istream>
#include <map>
#include <set>
#include <unordered_map>

#include "ggufkit/check.h"
#include "ggufkit/dialect.h"
#include "ggufkit/error.h"
#include "ggufkit/jinja.h"
#include "ggufkit/scan.h"
#include "ggufkit/vocab.h"
#include "ggufkit/tensors.h"
#include "ggufkit/text.h"
#include "ggufkit/writer.h"
#include "key_rules.h"
#include "tensor_rules.h"
#include "template_rules.h"

namespace ggufkit {

namespace {

// Hyperparameters llama.cpp needs for the architectures it runs most, where the tensor table
// (schemas/tensors.yaml, requires:) has no entry.
const std::map<std::string, std::vector<std::string>>& required_hparams() {
  static const std::vector<std::string> common = {"block_count", "context_length", "embedding_length",
                                                  "feed_forward_length", "attention.head_count"};
  static const std::map<std::string, std::vector<std::string>> m = {
      {"falcon", common}, {"gpt2", common}, {"starcoder2", common}, {"baichuan", common}, {"stablelm", common}, {"internlm2", common}};
  return m;
}

// The rules of what llama.cpp loads, over a model and its layout (metadata() and
// shapes(): also what an edit is checked against before it writes), and over the bytes
// of a file (data()).
class Validator {
 public:
  Validator(const Model& m, const Layout& L, uint64_t source_size, const ByteSource* src, bool model_rules = true,
            bool errors_only = false, const Model* base = nullptr, VocabCache* vocabs = nullptr)
      : m_(m), L_(L), size_(source_size), src_(src), model_rules_(model_rules), errors_only_(errors_only), base_(base),
        role_(base && role_of(m) != Role::mtp ? Role::adapter : role_of(m)), vocabs_(vocabs ? vocabs : &own_vocabs_) {
    for (const LabeledSpan& sp : L.spans)
      if (sp.kind == SpanKind::kv_value || sp.kind == SpanKind::kv_key) at_.emplace(sp.path + "/" + span_kind_name(sp.kind), sp.span.offset);
    own_vocabs_.for_prompts = !vocabs && model_rules && !errors_only && has_chat_template(m);  // run() tokenizes its templates' prompts
  }

  bool header_only = false;  // the file read is a header exemplar (Scanned::header_only)
  std::optional<uint64_t> cut_at;  // where the strict read told the first tensor past the end: the cut is told there

  std::vector<Finding> run() {
    if (src_) data();
    if (src_ || model_rules_) types();  // a file's told at their records; a set's by each shard (validate)
    if (model_rules_) {
      metadata();
      shapes();
      names();
      if (role_ == Role::model && !lone_shard()) loader_tensors();
      for (Finding& f : role_findings(m_, role_, base_)) {
        if (!f.offset && f.place.of == Place::Of::key) f.offset = key_at(f.place.name);
        out_.push_back(std::move(f));
      }
      end_tokens();
      std::shared_ptr<const tokenizer::Vocab> vocab = vocabulary();
      if (vocab) bos_ends(*vocab);
      if (!errors_only_)
        for (Finding& f : template_rules(m_, vocab.get())) {
          f.offset = key_at(f.place.name);
          out_.push_back(std::move(f));
        }
    }
    return std::move(out_);
  }

 private:
  void add(Code code, Place place, std::optional<uint64_t> offset, std::string msg) {
    out_.push_back(finding(code, offset, std::move(msg), std::move(place)));
  }

  std::optional<uint64_t> value_at(size_t i, const char* kind = "kv_value") const {
    if (at_.empty())  // a layout without a span for each pair (layout.h): the pairs as read
      return kind == std::string_view("kv_key") ? m_.metadata.offset(i) : m_.metadata.value_offset(i);
    auto it = at_.find("kv[" + std::to_string(i) + "] " + std::string(m_.metadata.key(i)) + "/" + kind);
    return it == at_.end() ? std::nullopt : std::optional<uint64_t>(it->second);
  }

  std::optional<uint64_t> key_at(std::string_view key) const {
    for (size_t i = 0; i < m_.metadata.size(); ++i)
      if (m_.metadata[i].key == key) return value_at(i);
    return std::nullopt;
  }

  void data() {
    const Model& m = m_;
    const Layout& L = L_;
    uint64_t size = size_;
    size_t cut = 0;
    if (header_only)  // what it is, not a fault: its tensors are past its end by design
      add(Code::header_only, {}, size,
          "the file ends at its data start (byte " + std::to_string(size) + "): a header exemplar of a " +
              std::to_string(L.file_size) + "-byte model, or a download cut exactly there; it holds no tensor bytes");
    for (size_t i = 0; i < m.tensors.size() && !header_only; ++i) {
      const Tensor& t = m.tensors[i];
      uint64_t end = t.source_offset + t.nbytes();
      if (end <= size) continue;
      if (cut++ == 0)
        add(Code::truncated, Place::tensor(t.name), cut_at.value_or(t.source_offset),
            "tensor[" + std::to_string(i) + "] " + t.name + ": its data runs to byte " + std::to_string(end) +
                ", past the end of the file at " + std::to_string(size) + "; the file is cut short (" +
                std::to_string(L.file_size - size) + " bytes missing, a download that stopped?)");
    }
    if (cut > 1) add(Code::truncated, {}, std::nullopt, std::to_string(cut) + " tensors in all lie past the end of the file");
    for (const LabeledSpan& sp : L.spans)
      if (sp.kind == SpanKind::trailing)
        add(Code::trailing_bytes, {}, sp.span.offset,
            std::to_string(sp.span.size) + " bytes after the end of the " + (m.tensors.empty() ? "header" : "last tensor") +
                "; readers ignore them, and a rewrite keeps them");
    bool nonzero = false;
    each_span(L, m.tensors, [&](const LabeledSpan& sp) {  // padding should be zeros
      if (nonzero || (sp.kind != SpanKind::padding && sp.kind != SpanKind::tensor_padding)) return;
      if (sp.span.offset >= size) return;
      uint64_t n = std::min(sp.span.size, size - sp.span.offset);
      std::vector<uint8_t> b(static_cast<size_t>(n));
      src_->read_at(sp.span.offset, b.data(), b.size());
      auto nz = std::find_if(b.begin(), b.end(), [](uint8_t x) { return x != 0; });
      if (nz != b.end()) {
        uint64_t at = sp.span.offset + static_cast<uint64_t>(nz - b.begin());
        add(Code::nonzero_padding, {}, at, "padding byte " + std::to_string(*nz) + " where 0 is written" +
                                                  (sp.path.empty() ? "" : " (after " + sp.path + ")"));
        nonzero = true;
      }
    });
    // llama.cpp wants each tensor right after the one before, padded; anything else it refuses.
    uint64_t expected = 0;
    for (size_t i = 0; i < m.tensors.size(); ++i) {
      if (L.tensor_offsets[i] != expected) {
        add(Code::offset_gap, Place::tensor(m.tensors[i].name), L.data_offset + L.tensor_offsets[i],
            "tensor[" + std::to_string(i) + "] " + m.tensors[i].name + " starts at data offset " +
                std::to_string(L.tensor_offsets[i]) + "; llama.cpp expects " + std::to_string(expected) +
                " (right after the tensor before it, padded)");
        break;
      }
      expected = packed_next(expected, m.tensors[i].nbytes(), L.alignment).value_or(0);
    }
    if (!m.tensors.empty() && !m.find(kAlignmentKey)) {
      uint64_t actual = 1ull << 20;  // the largest power of two every data start divides
      for (const Tensor& t : m.tensors)
        while (actual > 1 && t.source_offset % actual != 0) actual >>= 1;
      if (actual > L.alignment)
        add(Code::alignment, Place::key(kAlignmentKey), std::nullopt,
            "no general.alignment, so readers use 32; the data happens to be aligned to " + std::to_string(actual));
    }
  }

  // The vocabulary as llama.cpp loads it, when the keys hold one to load and no rule above
  // found its arrays broken; vocab_refused where llama.cpp refuses it.
  std::shared_ptr<const tokenizer::Vocab> vocabulary() {
    for (const Finding& f : out_)
      if (f.code == Code::missing_vocab || f.code == Code::empty_vocab || f.code == Code::vocab_length) return nullptr;
    const Value* tokens = m_.find("tokenizer.ggml.tokens");
    if (!tokens || tokens->type != ValueType::array || tokens->size() == 0) return nullptr;
    try {
      return vocabs_->rules_vocab(m_);
    } catch (const Error& e) {
      const std::string key = e.field.substr(e.field.find(' ') + 1);
      if (key == "tokenizer.ggml.pre") {  // the one refusal a one-key edit fixes: say which names would do
        std::string names;
        for (const std::string& n : tokenizer::known_pre_names()) names += (names.empty() ? "" : ", ") + n;
        const Value* pre = m_.find(key);
        add(Code::unknown_pre_tokenizer, Place::key(key), e.offset ? e.offset : key_at(key),
            "tokenizer.ggml.pre is " + json_string(pre && pre->type == ValueType::string ? pre->str : "") +
                ", a pre-tokenizer llama.cpp does not know: it refuses to load the model. Set it to the one the model was "
                "converted with (convert_hf_to_gguf.py names it by its tokenizer's hash); llama.cpp knows " + names);
        out_.back().fix = "ggufkit edit FILE --set tokenizer.ggml.pre=NAME --in-place";
        return nullptr;
      }
      add(Code::vocab_refused, Place::key(key.empty() ? "tokenizer.ggml.model" : key), e.offset ? e.offset : key_at(key), e.message);
      return nullptr;
    }
  }

  // An end of generation (eos, eot, eom) that is a byte or an unused token: llama.cpp stops
  // wherever the model writes it, a newline byte's at every line. No fix is offered: which
  // token the model ends its answers with is the model's, not the vocabulary's, to say.
  void end_tokens() {
    const Value* tokens = m_.find("tokenizer.ggml.tokens");
    const Value* types = m_.find("tokenizer.ggml.token_type");
    if (!tokens || tokens->type != ValueType::array || tokens->elem != ValueType::string) return;
    if (!types || types->type != ValueType::array || types->elem == ValueType::string || types->elem == ValueType::array) return;
    for (const char* name : {"eos", "eot", "eom"}) {
      const std::string key = special_token_key(name);
      const Value* v = m_.find(key);
      if (!v || !v->is_integer() || v->as_u64() >= tokens->size() || v->as_u64() >= types->size()) continue;
      const size_t id = static_cast<size_t>(v->as_u64());
      const int64_t type = static_cast<int32_t>(static_cast<uint32_t>(types->nums[id]));
      if (type != 5 && type != 6) continue;
      const std::string text(tokens->strs[id]);
      std::string what = type == 5 ? "an unused token" : "a byte token";
      if (type == 6 && text.size() == 6 && text.starts_with("<0x") && text.ends_with(">"))
        what += " (the byte " + text.substr(1, 4) + (text == "<0x0A>" ? ", a newline" : "") + ")";
      add(Code::eog_byte_token, Place::key(key), key_at(key),
          key + " = " + std::to_string(id) + " is " + json_string(text) + ", " + what + ": llama.cpp stops generating at " +
              name + ", so generation would stop wherever the model writes it" +
              (text == "<0x0A>" ? ", at every newline" : "") +
              "; it must be the token the model ends its answers with (a control token, as \"</s>\" or \"<|im_end|>\")");
    }
  }

  // BOS as an end of generation where llama.cpp adds it to every prompt: the token that
  // opens a prompt is one it stops at (a turn's opening is the template rules' to find).
  void bos_ends(const tokenizer::Vocab& v) {
    const tokenizer::Loaded& l = v.loaded();
    // (eos = BOS is GPT-2's convention, <|endoftext|> both: an end of turn naming BOS is not)
    if (!l.add_bos || l.bos < 0) return;
    std::string key;
    for (const char* name : {"eot", "eom"}) {
      const Value* x = m_.find(special_token_key(name));
      if (x && x->is_integer() && x->as_u64() == static_cast<uint64_t>(l.bos)) {
        key = special_token_key(name);
        break;
      }
    }
    if (key.empty()) return;
    add(Code::eog_at_start, Place::key(key, "bos"), key_at(key),
        key + ": BOS " + json_string(v.text(l.bos)) + " (id " + std::to_string(l.bos) +
            ") is a token llama.cpp stops generating at, and it adds BOS at the start of every prompt: "
            "a model that writes it to open a new text or turn ends its answer there");
  }

  void metadata() {
    const Model& m = m_;
    if (const Value* a = m.find(kAlignmentKey); a && a->type == ValueType::u32) {
      if (a->bits < kMinAlignment)
        add(Code::alignment_too_small, Place::key(kAlignmentKey), key_at(kAlignmentKey),
            "general.alignment = " + std::to_string(a->bits) + ": llama.cpp needs at least " +
                std::to_string(kMinAlignment) + " (its TENSOR_ALIGNMENT) and aborts on load");
      if (a->bits > kMaxAlignment)
        add(Code::alignment_too_large, Place::key(kAlignmentKey), key_at(kAlignmentKey),
            "general.alignment = " + std::to_string(a->bits) + " is over ggufkit's limit of " +
                std::to_string(kMaxAlignment) + " (1 MiB): every tensor would be padded to it");
    }
    // An adapter's architecture, an imatrix's none and a projector's keys are their roles' rules.
    const bool model = role_ == Role::model || role_ == Role::vocab;
    std::string arch = model ? architecture(m) : "";
    if (arch.empty() && model) add(Code::missing_architecture, Place::key("general.architecture"), std::nullopt, "no general.architecture (a string): llama.cpp cannot load the file");
    bool quantized = std::any_of(m.tensors.begin(), m.tensors.end(), [](const Tensor& t) { const GgmlType* g = ggml_type(t.type); return g && g->block > 1; });
    if (quantized && !m.find("general.quantization_version"))
      add(Code::missing_quantization_version, Place::key("general.quantization_version"), std::nullopt, "quantized tensors but no general.quantization_version");
    // The keys the loader cannot do without: the tensor table's, for the architectures it
    // covers (a key the shapes need, such as feed_forward_length, is the tensor rules' to
    // judge: deepseek2 without dense layers loads without it), else the short list below.
    std::optional<std::vector<std::string>> required = required_keys(arch);
    if (!required) {
      required.emplace();
      if (auto req = required_hparams().find(arch); req != required_hparams().end())
        for (const std::string& k : req->second) required->push_back(arch + "." + k);
    }
    for (const std::string& k : *required)
      if (!m.find(k)) add(Code::missing_hparam, Place::key(k), std::nullopt, k + " is missing; llama.cpp needs it for " + arch);
    for (const char* k : {"attention.head_count", "embedding_length", "block_count"}) {
      const Value* v = arch.empty() ? nullptr : m.find(arch + "." + k);
      if (v && v->is_integer() && v->as_u64() == 0)
        add(Code::zero_hparam, Place::key(arch + "." + k), key_at(arch + "." + k), arch + "." + k + " is 0; llama.cpp cannot build a model from it");
    }
    if (!arch.empty()) loader_conditions(arch);

    uint64_t vocab = vocabulary_size(m);
    std::string first;
    uint64_t first_n = 0;
    for (size_t i = 0; i < m.metadata.size(); ++i) {
      const KV& kv = m.metadata[i];
      const Value& v = kv.value;
      if (!rule::utf8_ok(kv.key)) add(Code::invalid_utf8, Place::key(kv.key, "name"), value_at(i, "kv_key"), "key kv[" + std::to_string(i) + "] is not valid UTF-8");
      if (v.type == ValueType::string && !rule::utf8_ok(v.str))
        add(Code::invalid_utf8, Place::key(kv.key), value_at(i), kv.key + ": the string is not valid UTF-8");
      if (auto z = v.type == ValueType::string && is_template_key(kv.key) ? rule::template_nul(v.str) : std::nullopt)
        add(Code::template_nul, Place::key(kv.key), value_at(i),
            kv.key + ": the template has a NUL byte at byte " + std::to_string(*z) + "; llama.cpp cuts it there");
      if (v.type == ValueType::boolean && !rule::bool_byte_ok(v.bits))
        add(Code::bool_value, Place::key(kv.key), value_at(i), kv.key + ": a bool byte of " + std::to_string(v.bits) + "; writers give 0 or 1, and readers differ on the rest");
      if (v.type == ValueType::array && v.elem == ValueType::array)
        add(Code::nested_array, Place::key(kv.key), value_at(i), kv.key + ": an array of arrays; the format allows it, llama.cpp refuses it");
      if (v.type == ValueType::array && v.elem == ValueType::string && !errors_only_) {  // a warning: megabytes to scan
        size_t bad = std::count_if(v.strs.begin(), v.strs.end(), [](std::string_view x) { return !rule::utf8_ok(x); });
        if (bad) add(Code::invalid_utf8, Place::key(kv.key), value_at(i), kv.key + ": " + std::to_string(bad) + " of " + std::to_string(v.size()) + " strings are not valid UTF-8");
      }
      if (vocab && kv.key.rfind("tokenizer.ggml.", 0) == 0 && kv.key.size() > 9 &&
          kv.key.compare(kv.key.size() - 9, 9, "_token_id") == 0 && v.is_integer() && !rule::token_id_ok(v.as_u64(), vocab))
        add(Code::token_id, Place::key(kv.key), value_at(i), kv.key + " = " + std::to_string(v.as_u64()) + " is not below the vocabulary size " + std::to_string(vocab));
      if (kv.key == "tokenizer.ggml.tokens" || kv.key == "tokenizer.ggml.scores" || kv.key == "tokenizer.ggml.token_type") {
        uint64_t n = v.size();
        if (first.empty()) {
          first = kv.key;
          first_n = n;
        } else if (n != first_n) {
          add(Code::vocab_length, Place::key(kv.key), value_at(i), kv.key + " has " + std::to_string(n) + " items, " + first + " has " + std::to_string(first_n));
        }
      }
    }
    for (Finding& f : key_rules(m, src_ ? &src_->name() : nullptr, role_)) {  // the registry's types and values, the names
      f.offset = key_at(f.place.name);
      out_.push_back(std::move(f));
    }
  }

  // What the tensors' shapes say: as many blocks as block_count, as many embedding rows
  // as tokens.
  void shapes() {
    const Model& m = m_;
    std::string arch = role_ == Role::model ? architecture(m) : "";
    if (const Value* bc = arch.empty() ? nullptr : m.find(arch + ".block_count"); bc && bc->is_integer() && !(is_signed(bc->type) && bc->as_i64() < 0)) {
      uint64_t blocks = 0;
      bool any = false;
      for (const Tensor& t : m.tensors) {
        const auto block = block_of(t.name);  // blk.N.REST, as stack and layer read it
        if (!block) continue;
        any = true;
        blocks = std::max(blocks, block->first + 1);
      }
      // with nextn_predict_layers MTP blocks at the end, a file may hold the trunk alone (the
      // loaders of deepseek2 and glm4moe then make every MTP tensor optional)
      const Value* nextn = m.find(arch + ".nextn_predict_layers");
      const uint64_t n_nextn = nextn && nextn->is_integer() && nextn->as_i64() > 0 ? nextn->as_u64() : 0;
      const bool trunk_only = n_nextn > 0 && n_nextn < bc->as_u64() && blocks == bc->as_u64() - n_nextn;
      if (any && bc->as_u64() != blocks && !trunk_only)
        add(Code::block_count, Place::key(arch + ".block_count"), key_at(arch + ".block_count"),
            arch + ".block_count = " + std::to_string(bc->as_u64()) + " but the tensors are of " + std::to_string(blocks) +
                " blocks (blk.0 to blk." + std::to_string(blocks - 1) + "); llama.cpp looks for tensors that are not there, or misses some");
    }
    const Value* tokens = m.find("tokenizer.ggml.tokens");
    bool has_model = m.find("tokenizer.ggml.model") != nullptr;
    if (has_model && !tokens)
      add(Code::missing_vocab, Place::key("tokenizer.ggml.tokens"), key_at("tokenizer.ggml.model"),
          "tokenizer.ggml.model is set but there is no tokenizer.ggml.tokens; llama.cpp cannot load the vocabulary");
    if (tokens && tokens->size() == 0)
      add(Code::empty_vocab, Place::key("tokenizer.ggml.tokens"), key_at("tokenizer.ggml.tokens"), "tokenizer.ggml.tokens is empty; llama.cpp cannot load a vocabulary of 0 tokens");
    uint64_t vocab = tokens ? tokens->size() : 0;
    for (const Tensor& t : m.tensors)
      if ((t.name == "token_embd.weight" || t.name == "output.weight") && t.dims.size() >= 2 && vocab && t.dims[1] != vocab)
        add(Code::vocab_rows, Place::key("tokenizer.ggml.tokens", t.name), key_at("tokenizer.ggml.tokens"),
            t.name + " has " + std::to_string(t.dims[1]) + " rows but the vocabulary has " + std::to_string(vocab) +
                " tokens; llama.cpp refuses the shape");
  }

  // An opaque tensor whose bytes run to the end of the file (no tensor after it sets its end).
  bool measured_to_end(size_t i, const Tensor& t) const {
    return t.opaque_bytes && src_ && size_ > L_.data_offset && L_.tensor_offsets[i] + *t.opaque_bytes == size_ - L_.data_offset;
  }

  // Tensor types mainline llama.cpp cannot load: one no table here knows or sizes (read as
  // opaque bytes), and ik_llama.cpp's own. Told at the record's type field.
  void types() {
    for (size_t i = 0; i < m_.tensors.size(); ++i) {
      const Tensor t = m_.tensors[i];
      const GgmlType* g = ggml_type(t.type);
      if (g && !g->removed && !g->ik) continue;
      std::optional<uint64_t> at;
      if (auto r = m_.tensors.record(i)) at = *r + 8 + t.name.size() + 4 + 8 * t.dims.size();
      const std::string label = "tensor[" + std::to_string(i) + "] " + t.name;
      if (g && g->ik)
        add(Code::tensor_type_ik, Place::tensor(t.name), at,
            label + " is " + g->name + ", an ik_llama.cpp type: mainline llama.cpp cannot load it (ik_llama.cpp can)");
      else
        add(Code::tensor_type_unknown, Place::tensor(t.name), at,
            label + " is " + (g ? std::string(g->name) + " (type " + std::to_string(t.type) + "), removed from ggml"
                                : ggml_type_name(t.type) + ", a type ggml does not know") +
                ": llama.cpp refuses to load the file (ggufkit reads its " + std::to_string(t.nbytes()) + " bytes as they are)" +
                (measured_to_end(i, t) ? "; the last tensor's " + std::to_string(t.nbytes()) +
                                             " bytes are measured to the end of the file: bytes after it, or a file cut "
                                             "short, cannot be told from its own"
                                       : ""));
    }
  }

  // Tensor names as ggml takes them: a C string, cut at the first NUL, unique.
  void names() {
    auto cut = [&](uint64_t i) {
      std::string_view name = m_.tensors.name(i);
      return name.substr(0, name.find('\0'));
    };
    // Repeats found by sorting (8 bytes a tensor), not in a map of every name.
    const std::vector<uint64_t> order = detail::sorted_by(m_.tensors.size(), cut);
    std::unordered_map<uint64_t, uint64_t> first;  // a repeat -> the first tensor with its name
    for (size_t k = 1, f = 0; k < order.size(); ++k) {
      if (cut(order[k]) != cut(order[f])) f = k;
      else first[order[k]] = order[f];
    }
    for (size_t i = 0; i < m_.tensors.size(); ++i) {
      const std::string name(m_.tensors.name(i));
      std::string label = "tensor[" + std::to_string(i) + "]";
      const std::string cut_name(cut(i));
      if (cut_name.size() != name.size())
        add(Code::tensor_name, Place::tensor(name), std::nullopt, label + ": the name has a NUL byte at byte " + std::to_string(cut_name.size()) +
                                                      "; ggml cuts it there, to '" + cut_name + "'");
      if (!rule::utf8_ok(name)) add(Code::invalid_utf8, Place::tensor(name), std::nullopt, label + ": the name is not valid UTF-8");
      if (auto it = first.find(i); it != first.end())
        add(Code::duplicate_tensor_name, Place::tensor(name), std::nullopt,
            label + " and tensor[" + std::to_string(it->second) + "] are both '" + cut_name + "' to ggml (names are cut at a NUL); it refuses the file");
    }
  }

  // A shard read alone holds part of the tensors: the set, judged as one model, is what the
  // loader takes.
  bool lone_shard() const {
    const Value* count = m_.find("split.count");
    const Value* tensors = m_.find("split.tensors.count");
    return count && count->is_integer() && count->as_u64() > 1 &&
           !(tensors && tensors->is_integer() && tensors->as_u64() == m_.tensors.size());
  }

  // The conditions llama.cpp's load_hparams puts on the keys every architecture shares
  // (llama-model.cpp; a GGML_ASSERT there aborts the program that loads the file).
  void loader_conditions(const std::string& arch) {
    // A key's count (a per-layer array's largest); none for a negative one: llama.cpp reads
    // these as u32 and refuses another type, which the key rules say.
    auto count = [](const Value& x) -> std::optional<uint64_t> {
      if (!x.is_integer() || (x.as_i64() < 0 && is_signed(x.type))) return std::nullopt;
      return x.as_u64();
    };
    auto number = [&](const std::string& k, bool largest = false) -> std::optional<uint64_t> {
      const Value* v = m_.find(arch + "." + k);
      if (!v) return std::nullopt;
      if (v->type != ValueType::array) return count(*v);
      if (!largest) return std::nullopt;
      std::optional<uint64_t> most;
      v->each([&](const Value& x) {
        if (auto n = count(x)) most = std::max(most.value_or(0), *n);
        return true;
      });
      return most;
    };
    auto tell = [&](const std::string& k, const std::string& msg, std::string fix = "") {
      Finding f = finding(Code::hparam_condition, key_at(arch + "." + k), arch + "." + k + msg, Place::key(arch + "." + k));
      f.fix = std::move(fix);
      out_.push_back(std::move(f));
    };
    constexpr uint64_t kMaxLayers = 512, kMaxExperts = 1024;  // LLAMA_MAX_LAYERS, LLAMA_MAX_EXPERTS
    const uint64_t layers = number("block_count").value_or(0), experts = number("expert_count").value_or(0);
    const uint64_t used = number("expert_used_count", true).value_or(0), groups = number("expert_group_count").value_or(0);
    const uint64_t groups_used = number("expert_group_used_count").value_or(0);
    // Over LLAMA_MAX_LAYERS or LLAMA_MAX_EXPERTS is key_range's (schemas/keys.yaml), and llama.cpp
    // stops there before it asks the rest.
    if (layers > kMaxLayers || experts > kMaxExperts) return;
    if (auto nextn = number("nextn_predict_layers"); nextn && *nextn > layers && layers > 0)
      tell("nextn_predict_layers", " is " + std::to_string(*nextn) + ", more than the " + std::to_string(layers) + " layers; llama.cpp aborts");
    if (used > experts)
      tell("expert_used_count", std::string(" is ") + std::to_string(used) + (experts ? ", more than the " + std::to_string(experts) + " experts" : " but the model has no experts (no expert_count)") +
               "; llama.cpp aborts",
           // A dense model's stray key: its removal changes nothing llama.cpp computes.
           experts == 0 && !has_expert_tensors() ? "ggufkit edit FILE --remove " + shell_quoted(arch + ".expert_used_count") : "");
    if (experts > 0 && used == 0) tell("expert_used_count", " is 0 or missing with " + std::to_string(experts) + " experts; llama.cpp aborts");
    if (experts > 0 && groups >= experts && groups > 0)
      tell("expert_group_count", " is " + std::to_string(groups) + ", not fewer than the " + std::to_string(experts) + " experts; llama.cpp aborts");
    else if (experts > 0 && groups > 1 && (experts % groups != 0 || groups_used == 0 || groups_used >= groups))
      tell("expert_group_count", " is " + std::to_string(groups) + " with " + std::to_string(experts) + " experts and expert_group_used_count " +
               std::to_string(groups_used) + "; llama.cpp needs the experts split evenly and between 1 and " + std::to_string(groups - 1) +
               " groups used, or aborts");
    if (experts == 0 && groups > 0) tell("expert_group_count", " is " + std::to_string(groups) + " but the model has no experts; llama.cpp aborts");
    // llama, deci, falcon and llama-embed rotate the whole head: llama.cpp refuses another width.
    static const std::set<std::string, std::less<>> whole_head = {"llama", "deci", "falcon", "llama-embed"};
    const std::optional<uint64_t> heads = number("attention.head_count"), embd = number("embedding_length");
    if (const uint64_t head = head_size(m_); whole_head.count(arch) && heads && *heads > 0 && embd && head > 0) {
      if (auto rot = number("rope.dimension_count"); rot && *rot != head)
        tell("rope.dimension_count", " is " + std::to_string(*rot) + "; llama.cpp's " + arch + " loader needs the head size, " + std::to_string(head) +
                 (m_.find(arch + ".attention.key_length") ? " (attention.key_length)" : " (embedding_length " + std::to_string(*embd) + " / head_count " + std::to_string(*heads) + ")") +
                 ", and refuses (\"invalid n_rot\")");
    }
  }

  bool has_expert_tensors() const {
    return std::any_of(m_.tensors.begin(), m_.tensors.end(), [](const Tensor& t) { return t.name.find("_exps.") != std::string::npos; });
  }

  // What llama.cpp's loader takes (tensor_rules.h): a missing tensor told at the tensor
  // directory, a wrong or unexpected one at its info record.
  void loader_tensors() {
    std::optional<uint64_t> directory;
    std::vector<uint64_t> records;  // by tensor, when the layout lists each
    for (const LabeledSpan& sp : L_.spans)
      if (sp.kind == SpanKind::tensor_info || sp.kind == SpanKind::infos) {
        if (!directory) directory = sp.span.offset;
        if (sp.kind == SpanKind::tensor_info) records.push_back(sp.span.offset);
      }
    if (!directory && !L_.spans.empty()) directory = L_.header_size;  // no tensors: where they would start
    auto record = [&](std::optional<size_t> i) -> std::optional<uint64_t> {
      if (!i) return directory;
      if (std::optional<uint64_t> r = m_.tensors.record(*i)) return r;
      return *i < records.size() ? std::optional<uint64_t>(records[*i]) : directory;
    };
    for (TensorFinding& tf : tensor_rules(m_)) {  // not a structured binding: clang 14 cannot capture one
      Finding& f = tf.finding;
      if (f.code == Code::tensor_shape &&
          std::any_of(out_.begin(), out_.end(), [&](const Finding& o) { return o.code == Code::vocab_rows && o.place.item == f.place.name; }))
        continue;  // the rows against the vocabulary: vocab_rows told it
      f.offset = f.code == Code::tensors_unchecked ? std::nullopt : record(tf.tensor);
      out_.push_back(std::move(f));
    }
  }

  const Model& m_;
  const Layout& L_;
  uint64_t size_;
  const ByteSource* src_;  // null: the model is checked, not a file's bytes
  bool model_rules_;
  bool errors_only_;  // the edit's gate: warnings that cost a scan of the vocabulary are skipped
  const Model* base_;  // an adapter's base model, when validate was given one
  Role role_;
  VocabCache own_vocabs_;  // when the call gave none
  VocabCache* vocabs_;
  std::map<std::string, uint64_t> at_;
  std::vector<Finding> out_;
};

}  // namespace

namespace {
// set_journals: the journals beside the other shards of its set too (a set's shards are
// validated after its reader looked for them once).
std::vector<Finding> validate_one(const std::string& path, bool model_rules, const Model* base, const Context& ctx, bool set_journals) {
  auto src = open_file(path, ctx);
  const auto hold = src->read_lock();
  refuse_journal(path, ctx, set_journals);  // a file half-way through an edit is not judged: recover finishes it
  return validate_source(src, model_rules, base);
}
}  // namespace

std::vector<Finding> validate_file(const std::string& path, bool model_rules, const Model* base, const Context& ctx) {
  return validate_one(path, model_rules, base, ctx, true);
}

std::vector<Finding> validate_source(const std::shared_ptr<const ByteSource>& src, bool model_rules, const Model* base) {
  std::optional<Scanned> s;
  try {
    s = scan(src);  // the strict verdict first; when it passes, the lenient read is the same
  } catch (const Error& e) {
    ScanOptions lenient;
    lenient.data_in_file = false;
    try {
      Scanned s = scan(src, lenient);  // only the data bounds failed: say how, where the reader said
      Validator v(s.model, s.layout, s.source_size, src.get(), model_rules, false, base);
      v.cut_at = e.offset;
      return v.run();
    } catch (const Error&) {
      return {finding(Code::read, e.offset, e.field + ": " + e.message)};
    }
  }
  Validator v(s->model, s->layout, s->source_size, src.get(), model_rules, false, base);
  v.header_only = s->header_only;
  return v.run();
}

Verdict validate(const std::string& path, bool shard_only, std::istream* in, const std::string& base_path, const Context& ctx) {
  Verdict v;
  v.files = {path};
  std::optional<Model> base;  // read before the adapter: a base that does not read is the caller's error
  if (!base_path.empty()) {
    base = open_model(base_path, false, nullptr, ctx).s.model;
    if (const Role r = role_of(*base); r != Role::model)
      throw Error(Error::Kind::usage, base_path, std::nullopt, "`base`",
                  "the base is " + std::string(r == Role::adapter || r == Role::imatrix ? "an " : "a ") + std::string(role_name(r)) +
                      ", not a model: give the model the adapter was trained for");
  }
  if (path == "-") {  // a header alone: what the model says, not what the bytes after it hold
    if (!in) throw_usage("validate -: no input stream was given");
    try {
      Scanned s = scan_stream(*in, "<stdin>");
      for (Finding& f : Validator(s.model, s.layout, s.source_size, nullptr, true, false, base ? &*base : nullptr).run())
        v.findings.push_back({path, std::move(f)});
    } catch (const Error& e) {
      if (e.kind == Error::Kind::io) throw;
      v.findings.push_back({path, finding(Code::read, e.offset, e.field + ": " + e.message)});
    }
  } else {
    // A shard of a set: each shard is validated (shards 2..N carry no model keys, which is
    // no fault there), then the set as a whole.
    std::vector<SetFault> faults;
    std::optional<ShardSet> set;
    if (!shard_only) try {
        set = check_shard_set(path, faults, ctx);
      } catch (const Error& e) {
        // The file itself does not read: validate_file says where. Another shard that does
        // not (or cannot be opened) leaves the set unjudged: judging the file alone would
        // pass a broken set.
        if (e.file != path) throw;
      }
    if (set && set->is_set()) {
      v.files.clear();
      for (const Shard& sh : set->shards) v.files.push_back(sh.path);
    } else {
      set.reset();  // a lone file is read again by validate_file: not held twice
    }
    // A set's progress: the bytes of the shards judged so far, told after each (v.files
    // is set->shards' paths, in order)
    uint64_t set_bytes = 0, judged = 0;
    if (set)
      for (const Shard& sh : set->shards) set_bytes += sh.file.source_size;
    for (size_t i = 0; i < v.files.size(); ++i) {
      for (Finding& x : validate_one(v.files[i], v.files.size() == 1, base ? &*base : nullptr, ctx, v.files.size() == 1))
        v.findings.push_back({v.files[i], std::move(x)});
      if (set && ctx.progress) ctx.progress(judged += set->shards[i].file.source_size, set_bytes);
    }
    if (v.files.size() > 1) {  // the model's rules over the set as one model, told against shard 1
      Model whole = set->model();
      for (Finding& x : Validator(whole, plan(whole), 0, nullptr, true, false, base ? &*base : nullptr).run()) {
        if (x.code == Code::tensor_type_unknown || x.code == Code::tensor_type_ik) continue;  // each shard told its own
        x.offset.reset();  // an offset in no file
        v.findings.push_back({v.files[0], std::move(x)});
      }
    }
    for (const SetFault& f : faults) v.findings.push_back({f.file, set_finding(f)});  // severities from the rule table
    v.per_file = v.files.size() > 1 || !faults.empty();
  }
  for (auto& [where, f] : v.findings) {
    if (f.code == Code::tensor_type_ik && ctx.dialect == Dialect::ik_llama) f.severity = Severity::warning;  // its own loader's
    v.errors += f.severity == Severity::error, v.warnings += f.severity == Severity::warning;
  }
  return v;
}

std::vector<Finding> check_model(const Model& model, const Layout& layout, bool errors_only, VocabCache* vocabs) {
  return Validator(model, layout, layout.file_size, nullptr, true, errors_only, nullptr, vocabs).run();
}

}  // namespace ggufkit

namespace ggufkit {

std::vector<Finding> template_findings(const Model& model, VocabCache* vocabs) {
  std::shared_ptr<const tokenizer::Vocab> vocab;
  VocabCache own;
  try {
    vocab = (vocabs ? *vocabs : own).rules_vocab(model);
  } catch (const Error&) {  // validate reports it (vocab_refused); the template rules go by the keys
  }
  return template_rules(model, vocab.get());
}

Dialect dialect_named(const std::string& name) {
  if (name == "ik_llama" || name == "ik_llama.cpp") return Dialect::ik_llama;
  if (name == "llama.cpp" || name == "llama_cpp") return Dialect::llama_cpp;
  throw Error(Error::Kind::usage, "", std::nullopt, "dialect", "'" + name + "' is not one: give llama.cpp (mainline, the default) or ik_llama");
}

}  // namespace ggufkit
