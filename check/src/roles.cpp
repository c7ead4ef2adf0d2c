// File roles (role.h) and the rules of each role that is not a model: an adapter as
// llama.cpp's llama_adapter_lora_init (src/llama-adapter.cpp) reads it, an importance
// matrix as common_imatrix_load and llama-quantize read it, a projector as mtmd's clip
// loader (tools/mtmd/clip.cpp) reads its keys. Messages say what llama.cpp says.
#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "ggufkit/check.h"
#include "ggufkit/format.h"
#include "ggufkit/inspect.h"
#include "ggufkit/role.h"

namespace ggufkit {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string str_of(const Model& m, const char* key) {
  const Value* v = m.find(key);
  return v && v->type == ValueType::string ? v->str : "";
}

// Every tensor's name ends in one of `suffixes` (and one at least is not `also`).
bool all_named(const Model& m, std::initializer_list<std::string_view> suffixes, std::string_view also = "") {
  if (m.tensors.empty()) return false;
  bool any = false;
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const std::string_view n = m.tensors.name(i);
    const bool ours = std::any_of(suffixes.begin(), suffixes.end(), [&](std::string_view s) { return ends_with(n, s); });
    if (ours) any = true;
    else if (also.empty() || !ends_with(n, also)) return false;
  }
  return any;
}

// llama.cpp's pairing of an adapter's tensors: the base name (every ".lora_a" / ".lora_b"
// taken out, as its replace_all does) -> tensor indexes of A and B. Sorted by name, the
// order llama.cpp's std::map walks them in.
struct Pair {
  std::optional<size_t> a, b;
};
std::map<std::string, Pair> lora_pairs(const Model& m) {
  auto strip = [](std::string name, std::string_view what) {
    for (size_t at; (at = name.find(what)) != std::string::npos;) name.erase(at, what.size());
    return name;
  };
  std::map<std::string, Pair> out;
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const std::string n(m.tensors.name(i));
    if (ends_with(n, ".lora_a")) out[strip(n, ".lora_a")].a = i;
    else if (ends_with(n, ".lora_b")) out[strip(n, ".lora_b")].b = i;
  }
  return out;
}

// An imatrix's entries: NAME -> the tensors NAME.in_sum2 and NAME.counts.
struct Entry {
  std::optional<size_t> sums, counts;
};
std::map<std::string, Entry> imatrix_entries(const Model& m) {
  std::map<std::string, Entry> out;
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const std::string_view n = m.tensors.name(i);
    if (ends_with(n, ".in_sum2")) out[std::string(n.substr(0, n.size() - 8))].sums = i;
    else if (ends_with(n, ".counts")) out[std::string(n.substr(0, n.size() - 7))].counts = i;
  }
  return out;
}

// "a u32", "an i32", "an f32": a type's name with its article.
std::string a_type(ValueType t) {
  const std::string n = value_type_name(t);
  return (n[0] == 'i' || n[0] == 'f' || n[0] == 'a' ? "an " : "a ") + n;
}

uint64_t ne(const Tensor& t, size_t k) { return k < t.dims.size() ? t.dims[k] : 1; }

// clip-impl.h's PROJECTOR_TYPE_NAMES (all 61, llama.cpp 80fb11a): a projector type it does not
// know fails the load.
constexpr std::array kProjectorTypes = {
    "mlp", "ldp", "ldpv2", "resampler", "adapter", "qwen2vl_merger", "qwen2.5vl_merger", "qwen3vl_merger",
    "step3vl", "gemma3", "gemma3nv", "gemma3na", "gemma4v", "gemma4a", "gemma4uv", "gemma4ua", "phi4",
    "idefics3", "pixtral", "ultravox", "internvl", "llama4", "qwen2a", "qwen3a", "glma", "qwen2.5o", "voxtral",
    "meralion", "musicflamingo", "lfm2", "kimivl", "paddleocr", "lightonocr", "cogvlm", "janus_pro", "dots_ocr",
    "dots3note_v", "dots3note_a", "deepseekocr", "deepseekocr2", "deepseek4v", "lfm2a", "glm4v", "youtuvl",
    "yasa2", "kimik25", "nemotron_v2_vl", "exaone4_5", "hunyuanvl", "minicpmv4_6", "granite_speech", "mimovl",
    "minimax_m3", "granite4_vision", "mimo_audio", "parakeet", "qwen3tts_spkenc", "qwen3tts_gen",
    "pockettts_spkenc", "pockettts_gen", "muse-glimmer",
};

class RoleRules {
 public:
  RoleRules(const Model& m, const Model* base) : m_(m), base_(base) {}

  // An MTP drafter against the model it drafts for: the same architecture and width, and
  // the same vocabulary (its token texts, or the rows of its vocabulary-sized tensors).
  void drafter() {
    if (!base_) return;
    const std::string arch = str_of(m_, "general.architecture"), base_arch = str_of(*base_, "general.architecture");
    if (arch != base_arch) {
      add(Code::mtp_base, Place::key("general.architecture"),
          "the drafter is " + (arch.empty() ? std::string("of no architecture") : arch) + ", its model " +
              (base_arch.empty() ? std::string("of none") : base_arch) + ": a drafter runs on the hidden states of the model it was trained with");
      return;
    }
    const std::string width = arch + ".embedding_length";
    const Value *w = m_.find(width), *bw = base_->find(width);
    if (w && bw && w->is_integer() && bw->is_integer() && w->as_u64() != bw->as_u64())
      add(Code::mtp_base, Place::key(width),
          width + " is " + std::to_string(w->as_u64()) + " in the drafter, " + std::to_string(bw->as_u64()) + " in its model");
    const Value *tok = m_.find("tokenizer.ggml.tokens"), *btok = base_->find("tokenizer.ggml.tokens");
    auto strings = [](const Value* v) { return v && v->type == ValueType::array && v->elem == ValueType::string; };
    if (!strings(btok)) return;
    if (strings(tok)) {
      if (tok->size() != btok->size()) {
        add(Code::mtp_base, Place::key("tokenizer.ggml.tokens"),
            "the drafter's vocabulary has " + std::to_string(tok->size()) + " tokens, its model's " + std::to_string(btok->size()));
        return;
      }
      // both lists in step, in order (a read by number walks from an index mark)
      size_t i = 0;
      for (auto a = tok->strs.begin(), b = btok->strs.begin(); a != tok->strs.end(); ++a, ++b, ++i)
        if (*a != *b) {
          add(Code::mtp_base, Place::key("tokenizer.ggml.tokens"),
              "token " + std::to_string(i) + " is '" + std::string(*a) + "' in the drafter, '" + std::string(*b) +
                  "' in its model: the two vocabularies differ");
          return;
        }
      return;
    }
    for (size_t i = 0; i < m_.tensors.size(); ++i) {  // no vocabulary of its own: its vocabulary-sized tensors
      const std::string_view n = m_.tensors.name(i);
      if (!ends_with(n, "nextn.embed_tokens.weight") && !ends_with(n, "nextn.shared_head_head.weight") && n != "token_embd.weight" &&
          n != "output.weight")
        continue;
      const Tensor t = m_.tensors[i];
      if (t.dims.size() >= 2 && t.dims[1] != btok->size())
        add_tensor(Code::mtp_base, i, t.name + " has " + std::to_string(t.dims[1]) + " rows, but the model's vocabulary has " +
                                          std::to_string(btok->size()) + " tokens");
    }
  }

  // A LoRA adapter, in llama_adapter_lora_init's order: its keys, its tensors' names,
  // then each pair (against the base model's tensors when one is given).
  void adapter() {
    for (const char* k : {"general.type", "general.architecture", "adapter.type"})
      if (const Value* v = m_.find(k); v && v->type != ValueType::string)
        add(Code::role_key_type, Place::key(k),
            std::string(k) + " is " + a_type(v->type) + "; llama.cpp reads it as a string and aborts on any other type",
            retype_fix(k, std::string_view(k) == "general.type" ? "adapter" : std::string_view(k) == "adapter.type" ? "lora" : "ARCH"));
    const std::string type = string_key("general.type");
    if (type != "adapter")
      add(Code::not_an_adapter, Place::key("general.type"),
          "general.type is " + said(type) + ": llama.cpp loads an adapter only when it is 'adapter' (\"expect general.type to "
          "be 'adapter'\")",
          "ggufkit edit FILE --set general.type=adapter");
    const std::string arch = string_key("general.architecture");
    if (base_) {
      const std::string want = str_of(*base_, "general.architecture");
      if (arch != want)
        add(Code::adapter_architecture, Place::key("general.architecture"),
            "general.architecture is " + said(arch) + ", the base model's is " + said(want) +
                ": llama.cpp refuses the adapter (\"model arch and LoRA arch mismatch\")");
    } else if (arch.empty()) {
      add(Code::adapter_architecture, Place::key("general.architecture"),
          "no general.architecture: llama.cpp refuses the adapter for every base model (\"model arch and LoRA arch mismatch\")");
    }
    const std::string atype = string_key("adapter.type");
    if (atype != "lora")
      add(Code::adapter_not_lora, Place::key("adapter.type"),
          "adapter.type is " + said(atype) + ": llama.cpp loads only 'lora' adapters (\"expect adapter.type to be 'lora'\")");
    if (const Value* alpha = m_.find("adapter.lora.alpha"); !alpha) {
      add(Code::adapter_alpha, Place::key("adapter.lora.alpha"),
          "no adapter.lora.alpha: llama.cpp then applies the adapter at its scale alone, not scaled by alpha/rank as it was "
          "trained (convert_lora_to_gguf.py writes the alpha of adapter_config.json)",
          "ggufkit edit FILE --set adapter.lora.alpha=ALPHA");
    } else if (alpha->type != ValueType::f32) {
      add(Code::role_key_type, Place::key("adapter.lora.alpha"),
          "adapter.lora.alpha is " + a_type(alpha->type) + "; llama.cpp reads it as an f32 and aborts on any other type",
          retype_fix("adapter.lora.alpha", "ALPHA"));
    }
    if (const Value* t = m_.find("adapter.alora.invocation_tokens"); t && (t->type != ValueType::array || t->elem != ValueType::u32))
      add(Code::role_key_type, Place::key("adapter.alora.invocation_tokens"),
          std::string("adapter.alora.invocation_tokens is ") +
              (t->type == ValueType::array ? std::string("an array of ") + value_type_name(t->elem) : a_type(t->type)) +
              ": llama.cpp refuses the adapter unless it is an array of u32 (\"invalid gguf " +
              (t->type == ValueType::array ? "element type" : "type") + " for adapter.alora.invocation_tokens\")");

    for (size_t i = 0; i < m_.tensors.size(); ++i) {
      const std::string_view n = m_.tensors.name(i);
      if (!ends_with(n, ".lora_a") && !ends_with(n, ".lora_b") && !ends_with(n, "_norm.weight")) {
        add_tensor(Code::lora_suffix, i,
                   "tensor[" + std::to_string(i) + "] " + std::string(n) +
                       ": an adapter's tensors are NAME.lora_a and NAME.lora_b (and *_norm.weight, which llama.cpp skips); it refuses "
                       "the adapter (\"has unexpected suffix\")");
        return;  // llama.cpp stops at the first
      }
    }
    for (const auto& [name, p] : lora_pairs(m_)) {
      if (!p.a || !p.b) {
        const size_t have = p.a ? *p.a : *p.b;
        add_tensor(Code::lora_pair, have,
                   name + " has a " + (p.a ? "lora_a" : "lora_b") + " but no " + (p.a ? "lora_b" : "lora_a") +
                       ": llama.cpp refuses the adapter (\"LoRA tensor pair for '" + name + "' is missing one component\")");
        continue;
      }
      const Tensor a = m_.tensors[*p.a], b = m_.tensors[*p.b];
      const bool embd = ends_with(name, "token_embd.weight");
      if (base_) {
        const auto at = base_index().find(name);
        const std::optional<Tensor> w = at == base_index().end() ? std::nullopt : std::optional<Tensor>(base_->tensors[at->second]);
        if (!w) {
          add_tensor(Code::lora_base_tensor, *p.a,
                     name + " is not a tensor of the base model: llama.cpp refuses the adapter (\"does not exist in base model "
                            "(hint: maybe wrong base model?)\")");
          continue;
        }
        // token_embd's pair is the other way round: llama.cpp's input embedding reads B as is.
        const bool ok = embd ? ne(*w, 0) == ne(b, 1) && ne(*w, 1) == ne(a, 1) : ne(*w, 0) == ne(a, 0) && ne(*w, 1) == ne(b, 1);
        if (!ok) {
          add_tensor(Code::lora_shape, *p.a,
                     name + " is " + shape_of(*w) + " in the base model; its lora_a is " + shape_of(a) + " and lora_b " + shape_of(b) +
                         (embd ? " (token_embd's pair is read the other way round: wanted b.ne1 == w.ne0 = " + std::to_string(ne(*w, 0)) +
                                     " and a.ne1 == w.ne1 = " + std::to_string(ne(*w, 1)) + ")"
                               : " (wanted a.ne0 == w.ne0 = " + std::to_string(ne(*w, 0)) + " and b.ne1 == w.ne1 = " + std::to_string(ne(*w, 1)) + ")") +
                         ": llama.cpp refuses the adapter (\"has incorrect shape (hint: maybe wrong base model?)\")");
          continue;
        }
      }
      if (!embd && ne(a, 1) != ne(b, 0))
        add_tensor(Code::lora_shape, *p.a,
                   name + ": lora_a is " + shape_of(a) + " and lora_b " + shape_of(b) + ", so a.ne1 (" + std::to_string(ne(a, 1)) +
                       ") is not b.ne0 (" + std::to_string(ne(b, 0)) + "), the rank: llama.cpp refuses the adapter (\"lora_a tensor is not "
                       "transposed\")");
    }
  }

  // An importance matrix as llama-quantize loads it: the chunk keys (it exits without
  // them), and each NAME.in_sum2 with its NAME.counts, f32, the counts one per matrix.
  void imatrix() {
    if (m_.tensors.empty())
      add(Code::imatrix_entries, Place{}, "an importance matrix of no tensors: llama.cpp's loader refuses it (\"no data in file\")");
    const bool datasets = m_.find("imatrix.datasets") != nullptr;
    for (const char* k : {"imatrix.chunk_count", "imatrix.chunk_size"}) {
      const Value* v = m_.find(k);
      if (v && v->type != ValueType::u32)
        add(Code::role_key_type, Place::key(k),
            std::string(k) + " is " + a_type(v->type) + "; llama.cpp reads it as a u32 and aborts on any other type",
            retype_fix(k, v->is_integer() ? std::to_string(v->as_i64()) : "N"));
    }
    std::string missing;
    for (const char* k : {"imatrix.datasets", "imatrix.chunk_count", "imatrix.chunk_size"})
      if (!m_.find(k)) missing += (missing.empty() ? "" : ", ") + std::string(k);
    if (!missing.empty())
      add(Code::imatrix_metadata, Place::key(datasets ? "imatrix.chunk_count" : "imatrix.datasets"),
          "no " + missing + ": llama-quantize refuses the importance matrix (\"missing imatrix metadata\"); llama-imatrix writes all three");
    for (const auto& [name, e] : imatrix_entries(m_)) {
      if (!e.sums || !e.counts) {
        add_tensor(Code::imatrix_pair, e.sums ? *e.sums : *e.counts,
                   name + " has " + (e.sums ? "in_sum2" : "counts") + " but no " + (e.sums ? "counts" : "in_sum2") +
                       ": llama.cpp's loader refuses the importance matrix (\"mismatched sums and counts for " + name + "\")");
        continue;
      }
      const Tensor s = m_.tensors[*e.sums], c = m_.tensors[*e.counts];
      if (s.type != 0 || c.type != 0) {
        add_tensor(Code::imatrix_type, s.type != 0 ? *e.sums : *e.counts,
                   name + ": in_sum2 is " + type_of(s) + " and counts " + type_of(c) +
                       "; llama.cpp's loader refuses the importance matrix (\"sums and counts for " + name + " must be F32\")");
        continue;
      }
      // llama-quantize reads the counts as one per matrix (per expert): the sums are
      // ncounts rows of nelements(sums) / ncounts, each divided by its count. Only element
      // counts matter (llama-imatrix writes {n, n_mat} and {1, n_mat}); rows that do not
      // divide leave sums unread, and no count divides by zero.
      if (c.elements() == 0 || s.elements() % c.elements() != 0)
        add_tensor(Code::imatrix_shape, *e.counts,
                   name + ": in_sum2 is " + shape_of(s) + " (" + std::to_string(s.elements()) + " values) and counts " + shape_of(c) +
                       " (" + std::to_string(c.elements()) + "); llama-quantize divides the sums into one row a count, so the counts "
                       "must divide them (llama-imatrix writes counts of 1x" + std::to_string(ne(s, 1)) + " for this in_sum2)");
    }
  }

  // A projector as mtmd's clip loader reads its keys: an encoder, and for each modality
  // it loads its projector type (a name clip.cpp knows) and the hyperparameters it requires.
  void mmproj() {
    for (const char* k : {"clip.has_vision_encoder", "clip.has_audio_encoder", "clip.has_gen_audio_encoder"})
      if (const Value* v = m_.find(k); v && v->type != ValueType::boolean)
        add(Code::role_key_type, Place::key(k), std::string(k) + " is " + a_type(v->type) + "; mtmd reads it as a bool and aborts on any other type",
            retype_fix(k, "true"));
    for (const char* k : {"clip.projector_type", "clip.vision.projector_type", "clip.audio.projector_type", "clip.gen.audio.projector_type"})
      if (const Value* v = m_.find(k); v && v->type != ValueType::string)
        add(Code::role_key_type, Place::key(k), std::string(k) + " is " + a_type(v->type) + "; mtmd reads it as a string and aborts on any other type");
    const bool vision = bool_key("clip.has_vision_encoder"), audio = bool_key("clip.has_audio_encoder");
    const bool gen_audio = bool_key("clip.has_gen_audio_encoder");
    if (!vision && !audio && !gen_audio)
      add(Code::mmproj_encoder, Place::key("clip.has_vision_encoder"),
          "none of clip.has_vision_encoder, clip.has_audio_encoder, clip.has_gen_audio_encoder is true: mtmd loads no encoder "
          "from the projector (projectors converted before they were written, with the old llava scripts, fail to load)");
    const std::string common = string_key("clip.projector_type");
    // The type a modality loads with: the common key, else its own (as clip.cpp reads it).
    auto type_of_modality = [&](const char* own) { return common.empty() ? string_key(own) : common; };
    auto modality = [&](const std::string& prefix, const char* own) {
      const std::string type = type_of_modality(own);
      const std::string key = common.empty() ? own : "clip.projector_type";
      if (std::find(kProjectorTypes.begin(), kProjectorTypes.end(), type) == kProjectorTypes.end())
        add(Code::mmproj_projector, Place::key(key),
            (type.empty() ? "no clip.projector_type (nor " + std::string(own) + ")" : key + " is " + said(type)) +
                ": mtmd refuses the " + prefix + " projector (\"unknown projector type\")");
      std::vector<std::string> need;
      for (const char* k : {"embedding_length", "attention.head_count", "feed_forward_length", "block_count", "projection_dim",
                            "attention.layer_norm_epsilon"})
        need.push_back("clip." + prefix + "." + k);
      if (prefix == "vision") need.insert(need.end(), {"clip.vision.image_size", "clip.vision.patch_size"});
      if (prefix == "audio") need.push_back("clip.audio.num_mel_bins");
      for (const std::string& k : need)
        if (!m_.find(k))
          add(Code::missing_hparam, Place::key(k), k + " is missing; mtmd's clip loader needs it (\"Key not found\")",
              "ggufkit edit FILE --set " + k + "=N");
    };
    if (vision) modality("vision", "clip.vision.projector_type");
    // mtmd loads no audio encoder beside Gemma 3n's vision one (clip_init's skip_audio).
    if (audio && !(vision && type_of_modality("clip.vision.projector_type") == "gemma3nv")) modality("audio", "clip.audio.projector_type");
    if (gen_audio) modality("gen.audio", "clip.gen.audio.projector_type");
  }

  std::vector<Finding> out;

 private:
  std::string said(const std::string& s) const { return s.empty() ? "not set (or not a string)" : "'" + s + "'"; }
  // A key of the wrong type is replaced, not set: --set keeps a key's type in the file.
  static std::string retype_fix(std::string_view key, std::string_view value) {
    return "ggufkit edit FILE --remove " + std::string(key) + " --set " + std::string(key) + "=" + std::string(value);
  }
  std::string string_key(const char* key) const { return str_of(m_, key); }
  bool bool_key(const char* key) const {
    const Value* v = m_.find(key);
    return v && v->type == ValueType::boolean && v->bits != 0;
  }
  static std::string shape_of(const Tensor& t) {
    std::string s;
    for (uint64_t d : t.dims) s += (s.empty() ? "" : "x") + std::to_string(d);
    return s.empty() ? "a scalar" : s;
  }
  static std::string type_of(const Tensor& t) { return ggml_type_name(t.type); }
  void add(Code c, Place p, std::string msg, std::string fix = "") {
    out.push_back(finding(c, std::nullopt, std::move(msg), std::move(p)));
    out.back().fix = std::move(fix);
  }
  void add_tensor(Code c, size_t i, std::string msg) {
    out.push_back(finding(c, m_.tensors.record(i), std::move(msg), Place::tensor(std::string(m_.tensors.name(i)))));
  }

  // The base model's tensors by name, made once: an adapter of N pairs looks each up.
  const std::map<std::string_view, size_t>& base_index() {
    if (base_ && base_names_.empty())
      for (size_t i = 0; i < base_->tensors.size(); ++i) base_names_.emplace(base_->tensors.name(i), i);
    return base_names_;
  }

  const Model& m_;
  const Model* base_;
  std::map<std::string_view, size_t> base_names_;
};

}  // namespace

std::string_view role_name(Role r) {
  static constexpr std::array<std::string_view, 6> names = {"model", "vocab", "adapter", "imatrix", "mmproj", "mtp"};
  return names[static_cast<size_t>(r)];
}

std::string_view mtp_state_name(MtpFacts::State s) {
  static constexpr std::array<std::string_view, 4> names = {"none", "embedded", "absent", "drafter"};
  return names[static_cast<size_t>(s)];
}

MtpFacts mtp_facts(const Model& m) {
  MtpFacts f;
  const std::string arch = str_of(m, "general.architecture");
  const Value* n = arch.empty() ? nullptr : m.find(arch + ".nextn_predict_layers");
  if (n && n->is_integer() && n->as_i64() > 0) f.claimed = n->as_u64();
  std::set<uint64_t> blocks, layers;
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const std::string_view name = m.tensors.name(i);
    if (!name.starts_with("blk.")) continue;
    const auto b = block_of(std::string(name));
    if (!b) continue;
    blocks.insert(b->first);
    if (b->second.starts_with("nextn.")) layers.insert(b->first);
  }
  f.layers.assign(layers.begin(), layers.end());
  f.blocks = blocks.empty() ? 0 : *blocks.rbegin() + 1;
  // The first MTP layer: the key's count from the end of block_count, else the first held.
  const Value* bc = arch.empty() ? nullptr : m.find(arch + ".block_count");
  uint64_t first = UINT64_MAX;
  if (f.claimed && bc && bc->is_integer() && bc->as_u64() >= f.claimed) first = bc->as_u64() - f.claimed;
  else if (!f.layers.empty()) first = f.layers.front();
  f.trunk_blocks = static_cast<uint64_t>(std::distance(blocks.begin(), blocks.lower_bound(first)));
  if (!f.layers.empty()) f.state = f.trunk_blocks ? MtpFacts::State::embedded : MtpFacts::State::drafter;
  else if (f.claimed) f.state = MtpFacts::State::absent;
  return f;
}

namespace {
// nextn_predict_layers against the blk.N.nextn.* tensors held, both ways.
std::vector<Finding> mtp_findings(const Model& m) {
  std::vector<Finding> out;
  const MtpFacts f = mtp_facts(m);
  const std::string arch = str_of(m, "general.architecture");
  if (arch.empty() || (f.claimed == 0 && f.layers.empty())) return out;
  const std::string key = arch + ".nextn_predict_layers";
  const Value* bc = m.find(arch + ".block_count");
  const std::optional<uint64_t> count = bc && bc->is_integer() ? std::optional<uint64_t>(bc->as_u64()) : std::nullopt;
  auto range = [](uint64_t a, uint64_t b) { return a + 1 == b ? "blk." + std::to_string(a) : "blk." + std::to_string(a) + " to blk." + std::to_string(b - 1); };
  auto held = [&] {
    std::string s;
    for (uint64_t l : f.layers) s += (s.empty() ? "blk." : ", blk.") + std::to_string(l);
    return s;
  };
  auto add = [&](std::string msg, std::string fix) {
    out.push_back(finding(Code::mtp_layers, std::nullopt, std::move(msg), Place::key(key)));
    out.back().fix = std::move(fix);
  };
  if (f.layers.empty()) {
    // The trunk alone (its blocks stop where the MTP layers would start) is a form llama.cpp
    // loads; MTP blocks held without their nextn.* tensors are not.
    if (count && *count >= f.claimed && f.blocks > *count - f.claimed)
      add(key + " = " + std::to_string(f.claimed) + " says " + range(*count - f.claimed, *count) +
              (f.claimed == 1 ? " is an MTP layer" : " are MTP layers") +
              ", but the file holds no blk.N.nextn.* tensor: it claims MTP layers it does not have",
          *count > f.claimed ? "ggufkit edit FILE --keep-layers 0-" + std::to_string(*count - f.claimed - 1) +
                                   " -o OUT   (the trunk alone; block_count and nextn_predict_layers follow)"
                             : "");
    return out;
  }
  if (f.claimed == 0) {
    const bool last = count && f.layers.back() + 1 == *count && f.layers.front() + f.layers.size() == *count;
    add(held() + " hold" + (f.layers.size() == 1 ? "s" : "") + " MTP tensors (nextn.*), but " + key +
            (m.find(key) ? " is 0" : " is not set") + ": llama.cpp builds " + (f.layers.size() == 1 ? "it" : "them") +
            " as trunk blocks and finds tensors it does not take",
        last ? "ggufkit edit FILE --set " + key + "=" + std::to_string(f.layers.size()) + " -o OUT" : "");
    return out;
  }
  if (count && *count >= f.claimed) {
    std::vector<uint64_t> want;
    for (uint64_t l = *count - f.claimed; l < *count; ++l) want.push_back(l);
    if (want != f.layers)
      add(key + " = " + std::to_string(f.claimed) + " says " + range(*count - f.claimed, *count) +
              (f.claimed == 1 ? " is an MTP layer" : " are MTP layers") + ", but the nextn.* tensors are in " + held(),
          "");
  }
  return out;
}
}  // namespace

Role role_of(const Model& m) {
  const std::string type = str_of(m, "general.type");
  const bool untold = type.empty() || type == "model";  // gguf-py writes "model" for every model
  if (type == "adapter" || (untold && all_named(m, {".lora_a", ".lora_b"}, "_norm.weight"))) return Role::adapter;
  if (type == "imatrix" || (untold && all_named(m, {".in_sum2", ".counts"}))) return Role::imatrix;
  if (type == "mmproj" || str_of(m, "general.architecture") == "clip") return Role::mmproj;
  if (m.tensors.empty() && m.find("tokenizer.ggml.tokens")) return Role::vocab;
  if (untold && mtp_facts(m).state == MtpFacts::State::drafter) return Role::mtp;
  return Role::model;
}

RoleFacts role_facts(const Model& m) {
  RoleFacts f;
  f.role = role_of(m);
  switch (f.role) {
    case Role::adapter: {
      f.adapter_type = str_of(m, "adapter.type");
      if (const Value* a = m.find("adapter.lora.alpha"); a && a->type == ValueType::f32) f.alpha = a->as_f64();
      f.base_architecture = str_of(m, "general.architecture");
      if (const Value* t = m.find("adapter.alora.invocation_tokens"); t && t->type == ValueType::array) f.alora_tokens = t->size();
      bool agree = true;
      for (const auto& [name, p] : lora_pairs(m)) {
        if (!p.a || !p.b) continue;
        ++f.lora_pairs;
        const uint64_t r = ne(m.tensors[*p.b], 0);  // llama.cpp's get_scale: rank = b->ne[0]
        if (f.rank && *f.rank != r) agree = false;
        f.rank = r;
      }
      if (!agree) f.rank.reset();
      break;
    }
    case Role::imatrix:
      if (const Value* v = m.find("imatrix.chunk_count"); v && v->is_integer()) f.chunk_count = v->as_u64();
      if (const Value* v = m.find("imatrix.chunk_size"); v && v->is_integer()) f.chunk_size = v->as_u64();
      if (const Value* v = m.find("imatrix.datasets"); v && v->type == ValueType::array && v->elem == ValueType::string)
        for (std::string_view d : v->strs) f.datasets.emplace_back(d);
      for (const auto& [name, e] : imatrix_entries(m)) f.covered += e.sums && e.counts;
      break;
    case Role::mmproj: {
      auto flag = [&](const char* k) {
        const Value* v = m.find(k);
        return v && v->type == ValueType::boolean && v->bits != 0;
      };
      f.vision = flag("clip.has_vision_encoder");
      f.audio = flag("clip.has_audio_encoder");
      f.projector_type = str_of(m, "clip.projector_type");
      if (f.projector_type.empty()) f.projector_type = str_of(m, f.vision ? "clip.vision.projector_type" : "clip.audio.projector_type");
      break;
    }
    case Role::vocab:
    case Role::model:
    case Role::mtp:
      f.tokenizer = str_of(m, "tokenizer.ggml.model");
      if (const Value* t = m.find("tokenizer.ggml.tokens"); t && t->type == ValueType::array) f.tokens = t->size();
      if (f.role != Role::vocab) f.mtp = mtp_facts(m);
      break;
  }
  return f;
}

std::vector<Finding> role_findings(const Model& m, Role role, const Model* base) {
  RoleRules r(m, base);
  if (role == Role::adapter) r.adapter();
  if (role == Role::imatrix) r.imatrix();
  if (role == Role::mmproj) r.mmproj();
  if (role == Role::mtp) r.drafter();
  std::vector<Finding> out = std::move(r.out);
  if (role == Role::model || role == Role::mtp)
    for (Finding& f : mtp_findings(m)) out.push_back(std::move(f));
  return out;
}

}  // namespace ggufkit
