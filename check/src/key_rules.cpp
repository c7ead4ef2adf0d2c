// The key rules: each standard key against what the key registry says llama.cpp reads it
// with, general.file_type against the tensors, the names against the metadata.
#include "key_rules.h"
#include "ggufkit/role.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>

#include "ggufkit/inspect.h"
#include "ggufkit/registry.h"
#include "ggufkit/text.h"

namespace ggufkit {

namespace {

// What the file is, as far as these rules care: a model llama.cpp loads, its vocabulary
// alone (no tensors: llama.cpp reads no hyperparameters of it), or another kind of file (a
// LoRA adapter, an imatrix, an mmproj), whose hyperparameter and file type rules differ.
// (role_of, with a model of no tensors taken as a vocabulary: no type mix to judge.)
enum class Kind { model, vocab_only, other };
Kind kind_of(const Model& m, Role role) {  // the file's role (role.h), and a model without tensors
  switch (role) {
    case Role::model:
    case Role::mtp: return m.tensors.empty() ? Kind::vocab_only : Kind::model;
    case Role::vocab: return Kind::vocab_only;
    default: return Kind::other;
  }
}

constexpr uint32_t kGuessed = 1024;  // LLAMA_FTYPE_GUESSED: set in memory by the loader, never written by quantize

// A file type llama.cpp knows today (a removed one is named for show only).
const FileType* known_file_type(uint64_t id) {
  const FileType* f = file_type(id);
  return f && !f->removed ? f : nullptr;
}

// The file type llama.cpp's loader guesses from the most common tensor type, when the file
// has no general.file_type (llama-model-loader.cpp): the K quants as their _M.
std::optional<uint32_t> guessed_file_type(uint32_t ggml) {
  static const std::map<uint32_t, uint32_t> guess = {
      {0, 0},   {1, 1},   {30, 32}, {2, 2},   {3, 3},   {6, 8},   {7, 9},   {8, 7},   {10, 10}, {11, 12},
      {12, 15}, {13, 17}, {14, 18}, {34, 36}, {35, 37}, {16, 19}, {17, 20}, {22, 28}, {18, 23}, {19, 24},
      {29, 31}, {20, 25}, {23, 30}, {21, 26}, {40, 39}, {41, 40}, {42, 41}};
  auto it = guess.find(ggml);
  return it == guess.end() ? std::nullopt : std::optional<uint32_t>(it->second);
}

std::string type_name(uint32_t ggml) {
  const GgmlType* t = ggml_type(ggml);
  return t ? t->name : "type " + std::to_string(ggml);
}

std::string ftype_text(uint64_t id) {  // "15 (Q4_K_M)"
  const FileType* f = file_type(id);
  return std::to_string(id) + (f ? " (" + std::string(f->name) + ")" : "");
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string bound_text(double d) {
  char b[64];
  return std::string(b, std::to_chars(b, b + sizeof b, d).ptr);
}
std::string range_text(const KeyRange& r) {  // "0 to 512", "1 or more"
  if (std::isinf(r.max)) return bound_text(r.min) + " or more";
  if (std::isinf(r.min)) return "at most " + bound_text(r.max);
  if (r.min == r.max) return bound_text(r.min);
  return bound_text(r.min) + " to " + bound_text(r.max);
}

// The block_count llama.cpp takes a per-layer array's length from, if the file has one.
std::optional<uint64_t> blocks_of(const Model& m, const std::string& arch) {
  const Value* v = arch.empty() ? nullptr : m.find(arch + ".block_count");
  return v && v->type == ValueType::u32 ? std::optional<uint64_t>(v->bits) : std::nullopt;
}

class KeyRules {
 public:
  KeyRules(const Model& m, const std::string* file, Role role) : m_(m), file_(file), kind_(kind_of(m, role)), arch_(architecture(m)) {}

  std::vector<Finding> run() {
    const Registry& r = Registry::builtin();
    for (size_t i = 0; i < m_.metadata.size(); ++i) {
      const std::string_view key = m_.metadata.key(i);
      const KeySpec* spec = r.find(key, arch_);
      // the vocabulary's keys are the vocabulary rules'; general.alignment the reader's; split.* the set's
      if (!spec || spec->read == KeyRead::vocab || spec->read == KeyRead::elsewhere) continue;
      const KV kv = m_.metadata[i];
      if (typed(kv, *spec) && kind_ == Kind::model) values(kv, *spec);
    }
    if (kind_ == Kind::model) file_type_rules();
    name_rules();
    if (file_ && kind_ == Kind::model) file_name_rules();
    return std::move(out_);
  }

 private:
  Finding& add(Code c, std::string key, std::string message, std::string item = "") {
    out_.push_back(finding(c, std::nullopt, std::move(message), Place::key(std::move(key), std::move(item))));
    return out_.back();
  }

  // key_type: the type against the registry's; true when the value is of a type llama.cpp takes.
  bool typed(const KV& kv, const KeySpec& spec) {
    const Value& v = kv.value;
    // an error only where llama.cpp reads the key from every file of this kind: a model's
    const bool refused = spec.read == KeyRead::model && kind_ == Kind::model;
    const Code code = refused ? Code::key_type : Code::key_type_unusual;
    const std::string is = key_type_text(v.type, v.elem);
    if (!spec.accepts(v.type, v.elem)) {
      Finding& f = add(code, kv.key,
                       refused ? kv.key + " is " + is + "; llama.cpp reads it as " + spec.wanted() +
                                     " and refuses to load the model (\"key " + kv.key + " has wrong type\")"
                               : kv.key + " is " + is + "; it is written as " + spec.wanted() +
                                     ", and llama.cpp, for the architectures that read it, takes only that");
      f.fix = retype_fix(kv, spec);
      return false;
    }
    if (spec.per_layer && v.type == ValueType::array) {  // get_key_or_arr: one item per block
      const std::optional<uint64_t> blocks = blocks_of(m_, arch_);
      if (blocks && v.size() != *blocks) {
        add(code, kv.key,
            kv.key + " is an array of " + std::to_string(v.size()) + " items, but " + arch_ + ".block_count is " +
                std::to_string(*blocks) + (refused ? "; llama.cpp wants one per block and refuses to load the model "
                                                     "(\"key " + kv.key + " has wrong array length\")"
                                                   : "; llama.cpp wants one per block"));
        return false;
      }
    }
    return true;
  }

  // The edit that gives a mistyped key its registry type, when its value converts exactly
  // (a u64 of 4096 to a u32; an f64 to an f32): remove it, then set it anew.
  static std::string retype_fix(const KV& kv, const KeySpec& spec) {
    const Value& v = kv.value;
    if (v.type == ValueType::array || v.type == ValueType::string || v.type == ValueType::boolean) return "";
    std::string text;
    if (spec.type == ValueType::f32 || spec.type == ValueType::f64) {
      text = number_text(v);
    } else if (v.is_integer() && spec.type != ValueType::boolean && spec.type != ValueType::string &&
               spec.type != ValueType::array) {
      const uint32_t w = value_type_width(spec.type);
      const bool neg = is_signed(v.type) && v.as_i64() < 0;
      if (neg && !is_signed(spec.type)) return "";
      const uint64_t mag = neg ? static_cast<uint64_t>(-(v.as_i64() + 1)) + 1 : v.as_u64();
      const unsigned bits = w * 8 - (is_signed(spec.type) ? 1 : 0);
      if (bits < 64 && mag > ((uint64_t{1} << bits) - (neg ? 0 : 1))) return "";
      text = number_text(v);
    } else {
      return "";
    }
    return "ggufkit edit FILE --remove " + shell_quoted(kv.key) + " --set " + shell_quoted(kv.key + "=" + text) + " --in-place";
  }

  // key_range and key_value_unusual: a number (or each of a per-layer array) against the
  // registry's range, expectation and sign; a string against its names.
  void values(const KV& kv, const KeySpec& spec) {
    const Value& v = kv.value;
    if (v.type == ValueType::string && !spec.values.empty()) {
      if (std::find(spec.values.begin(), spec.values.end(), v.str) == spec.values.end()) {
        std::string names;
        for (const std::string& s : spec.values) names += (names.empty() ? "" : ", ") + s;
        add(Code::key_range, kv.key, kv.key + " is " + json_string(v.str) + ", which llama.cpp does not know (it takes " + names +
                                         ") and aborts on load");
      }
      return;
    }
    if (!spec.range && !spec.expect && !spec.positive) return;
    const bool array = v.type == ValueType::array;
    const size_t n = array ? v.size() : 1;
    for (size_t k = 0; k < n; ++k) {
      const Value x = array ? v.at(k) : v;
      if (!x.is_integer() && !is_float(x.type)) return;
      const double d = x.as_f64();
      const std::string what = kv.key + (array ? "[" + std::to_string(k) + "]" : "") + " = " + number_text(x);
      if (spec.range && !spec.range->holds(d)) {
        add(Code::key_range, kv.key, what + ": llama.cpp takes " + range_text(*spec.range) + " and refuses to load the model");
        return;
      }
      if (spec.expect && !spec.expect->holds(d)) {
        add(Code::key_value_unusual, kv.key, what + ": " + range_text(*spec.expect) + " is expected");
        return;
      }
      if (spec.positive && !(d > 0)) {
        add(Code::key_value_unusual, kv.key, what + ": a value above 0 is expected");
        return;
      }
    }
  }

  // general.file_type: a file type llama.cpp knows, and one the tensors are of.
  void file_type_rules() {
    const Value* v = m_.find("general.file_type");
    if (!v || v->type != ValueType::u32) return;  // absent: llama.cpp guesses; mistyped: key_type's
    const uint64_t id = v->bits & ~uint64_t{kGuessed};
    const FileType* ft = known_file_type(id);
    if (v->bits & kGuessed)
      add(Code::key_value_unusual, "general.file_type",
          "general.file_type = " + std::to_string(v->bits) + " carries llama.cpp's \"guessed\" flag (1024), which its loader sets in "
          "memory for a file without the key and llama-quantize never writes; the type is " + ftype_text(id),
          "guessed");
    if (!ft) {
      add(Code::key_value_unusual, "general.file_type",
          "general.file_type = " + std::to_string(id) + " is no file type llama.cpp knows (it prints \"unknown, may not work\")");
      return;
    }
    std::optional<std::string> wrong = mix_mismatch(*ft);
    if (!wrong) return;
    // What llama.cpp's loader shows without the key: its guess, the fix when the weights agree with it.
    const std::optional<uint32_t> guess = llama_guess();
    const FileType* g = guess ? known_file_type(*guess) : nullptr;
    const bool fits = g && !mix_mismatch(*g);
    Finding& f = add(Code::file_type_mismatch, "general.file_type",
                     "general.file_type = " + ftype_text(id) + " names " + *wrong +
                         (g ? "; without the key llama.cpp would guess " + ftype_text(*guess) + " from them" : ""));
    if (fits) f.fix = "ggufkit edit FILE --set general.file_type=" + std::to_string(*guess) + " --in-place";
  }

  // Whether the weights contradict a file type: none of them is of its main type, or (a type
  // that quantizes every layer alike) most are of another. The weights are the tensors of two
  // dimensions or more (ggml_n_dims: trailing 1s not counted) whose rows hold whole blocks of
  // the main type (llama-quantize gives the others a fallback type). What they are, if so.
  std::optional<std::string> mix_mismatch(const FileType& ft) const {
    const GgmlType* main = ggml_type(ft.main);
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> by;  // type -> (tensors, elements)
    uint64_t weights = 0;
    for (const Tensor& t : m_.tensors) {
      size_t dims = t.dims.size();
      while (dims > 0 && t.dims[dims - 1] == 1) --dims;
      if (dims < 2 || t.dims[0] % main->block != 0) continue;
      auto& [count, elements] = by[t.type];
      ++count;
      elements += t.elements();
      ++weights;
    }
    if (weights == 0) return std::nullopt;
    std::vector<std::pair<uint32_t, std::pair<uint64_t, uint64_t>>> rows(by.begin(), by.end());
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    std::string mix;  // "13 q4_K, 3 q6_K", most first
    for (const auto& [type, n] : rows) mix += (mix.empty() ? "" : ", ") + std::to_string(n.first) + " " + type_name(type);
    const std::string of = std::string(main->name) + " weights, but ";
    const std::string them = " of the " + std::to_string(weights) + " weight tensors (2-D or more, of rows of whole " + main->name + " blocks)";
    const auto own = by.find(ft.main);
    if (own == by.end()) return of + "none" + them + " is " + main->name + ": they are " + mix;
    if (!ft.pure) return std::nullopt;
    // outnumbered by tensors and by weights alike (a small model's embeddings may outweigh
    // its layers; an RWKV's many small f32 tensors outnumber its large ones)
    const uint64_t n = own->second.first, e = own->second.second;  // no structured binding: clang 14 cannot capture one
    const bool outnumbered = std::any_of(by.begin(), by.end(), [&](const auto& r) { return r.second.first > n; });
    const bool outweighed = std::any_of(by.begin(), by.end(), [&](const auto& r) { return r.second.second > e; });
    if (outnumbered && outweighed) return of + "most" + them + " are " + type_name(rows[0].first) + ": they are " + mix;
    return std::nullopt;
  }

  // The file type llama.cpp's loader gives a file without general.file_type: that of the
  // most common type of all its tensors, the first to lead in name order.
  std::optional<uint32_t> llama_guess() const {
    std::map<std::string, uint32_t> by_name;
    for (size_t i = 0; i < m_.tensors.size(); ++i) by_name.emplace(std::string(m_.tensors.name(i)), m_.tensors[i].type);
    std::map<uint32_t, uint64_t> n;
    uint64_t most = 0;
    uint32_t type = 0;
    for (const auto& [name, t] : by_name)
      if (++n[t] > most) most = n[t], type = t;
    return guessed_file_type(type);
  }

  // general.name: a model's name, not a snapshot's hash or the path it was converted from.
  void name_rules() {
    const Value* v = m_.find("general.name");
    if (!v || v->type != ValueType::string) return;
    const std::string& name = v->str;
    size_t run = 0, longest = 0;  // hex digits in a row
    for (char c : name) longest = std::max(longest, run = std::isxdigit(static_cast<unsigned char>(c)) ? run + 1 : 0);
    const std::string low = lower(name);
    auto ends = [&](std::string_view s) { return low.size() >= s.size() && low.compare(low.size() - s.size(), s.size(), s) == 0; };
    const std::string fix = "ggufkit edit FILE --set general.name=NAME --in-place";
    if (longest >= 32) {
      add(Code::name_is_hash, "general.name",
          "general.name is " + json_string(name) + ", a hash of " + std::to_string(longest) +
              " hex digits (a snapshot or blob id the model was converted from), not the model's name; tools show it "
              "as the model's name").fix = fix;
    } else if (name.find('/') != std::string::npos || name.find('\\') != std::string::npos || name.starts_with('.') ||
               name.starts_with('~') || ends(".gguf") || ends(".safetensors") || ends(".bin")) {
      add(Code::name_is_path, "general.name",
          "general.name is " + json_string(name) + ", a path or a file name (the folder or file it was converted from), "
          "not the model's name; tools show it as the model's name").fix = fix;
    }
  }

  // The file's name under llama.cpp's naming convention (gguf.md, gguf-py's
  // naming_convention): <BaseName>-<SizeLabel>-<FineTune>-<Version>-<Encoding>-<Type>-<Shard>.gguf.
  // Judged only when it ends in an encoding llama-quantize names (Q4_K_M, F16, ...): any
  // other name is not held to the convention.
  void file_name_rules() {
    std::string stem = file_->substr(file_->find_last_of("/\\") + 1);
    if (stem.size() < 5 || lower(stem.substr(stem.size() - 5)) != ".gguf") return;
    stem.resize(stem.size() - 5);
    auto cut = [&](std::string_view tail) {  // a "-TAIL" at the end, case-insensitively
      if (stem.size() > tail.size() && lower(stem.substr(stem.size() - tail.size())) == lower(tail) &&
          stem[stem.size() - tail.size() - 1] == '-')
        stem.resize(stem.size() - tail.size() - 1);
    };
    auto digits = [&](size_t at) {
      return std::all_of(stem.begin() + at, stem.begin() + at + 5, [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    };
    if (const size_t n = stem.size(); n > 15 && stem[n - 15] == '-' && digits(n - 14) && stem.compare(n - 9, 4, "-of-") == 0 && digits(n - 5))
      stem.resize(n - 15);  // the shard, -00001-of-00003
    cut("LoRA");
    cut("vocab");
    const size_t dash = stem.rfind('-');
    if (dash == std::string::npos || dash == 0) return;
    const std::string encoding = stem.substr(dash + 1), base = stem.substr(0, dash);
    // the encodings and llama-quantize's aliases (Q4_K for Q4_K_M): a bare K quant names its family
    const std::string enc = lower(encoding);
    std::vector<uint32_t> named;
    for (const FileType& f : file_types()) {
      if (f.removed) continue;
      const std::string n = lower(f.name);
      if (n == enc || ((enc == "q3_k" || enc == "q4_k" || enc == "q5_k") && n.starts_with(enc + "_"))) named.push_back(f.id);
    }
    if (named.empty()) return;
    const std::string file_name = file_->substr(file_->find_last_of("/\\") + 1);
    if (const Value* ft = m_.find("general.file_type"); ft && ft->type == ValueType::u32 && known_file_type(ft->bits & ~uint64_t{kGuessed})) {
      const uint64_t id = ft->bits & ~uint64_t{kGuessed};
      if (std::find(named.begin(), named.end(), id) == named.end())
        add(Code::file_name_mismatch, "general.file_type",
            "the file is named " + json_string(file_name) + ", of encoding " + encoding + ", but general.file_type is " +
                ftype_text(id) + "; one of them is wrong",
            "file name");
    }
    const Value* sl = m_.find("general.size_label");
    if (!sl || sl->type != ValueType::string || sl->str.empty()) return;
    const std::string label = sl->str;
    if (("-" + lower(stem) + "-").find("-" + lower(label) + "-") != std::string::npos) return;  // the name says it
    const std::optional<double> says = parameters(label.substr(0, label.find('-')));
    if (!says) return;
    size_t at = 0;
    for (size_t next; at <= base.size(); at = next + 1) {  // the first part of the name that reads as a size label
      next = std::min(base.find('-', at), base.size());
      const std::string part = base.substr(at, next - at);
      if (const std::optional<double> p = part.empty() || std::tolower(static_cast<unsigned char>(part.back())) == 'k' ? std::nullopt : parameters(part)) {
        if (std::max(*p, *says) > 1.5 * std::min(*p, *says))
          add(Code::file_name_mismatch, "general.size_label",
              "the file is named " + json_string(file_name) + ", of size " + part + ", but general.size_label is " + json_string(label) +
                  "; one of them is wrong",
              "file name");
        return;
      }
    }
  }

  // The parameters a size label counts, <experts>x<count><Q|T|B|M|K>: "8x7B" is 56e9.
  static std::optional<double> parameters(std::string_view s) {
    auto number = [](std::string_view t) -> std::optional<double> {  // digits, at most one '.' between them
      double d = 0;
      if (t.empty() || !std::isdigit(static_cast<unsigned char>(t.front())) || !std::isdigit(static_cast<unsigned char>(t.back())))
        return std::nullopt;
      auto r = std::from_chars(t.data(), t.data() + t.size(), d, std::chars_format::fixed);
      return r.ec == std::errc() && r.ptr == t.data() + t.size() ? std::optional<double>(d) : std::nullopt;
    };
    double experts = 1;
    if (size_t x = s.find_first_of("xX"); x != std::string_view::npos) {
      const std::optional<double> e = number(s.substr(0, x));
      if (!e || s.substr(0, x).find('.') != std::string_view::npos) return std::nullopt;
      experts = *e;
      s.remove_prefix(x + 1);
    }
    static const std::map<char, double> scale = {{'q', 1e15}, {'t', 1e12}, {'b', 1e9}, {'m', 1e6}, {'k', 1e3}};
    auto it = s.empty() ? scale.end() : scale.find(static_cast<char>(std::tolower(static_cast<unsigned char>(s.back()))));
    const std::optional<double> count = it == scale.end() ? std::nullopt : number(s.substr(0, s.size() - 1));
    return count ? std::optional<double>(experts * *count * it->second) : std::nullopt;
  }

  const Model& m_;
  const std::string* file_;
  Kind kind_;
  std::string arch_;
  std::vector<Finding> out_;
};

}  // namespace

std::vector<Finding> key_rules(const Model& m, const std::string* file, Role role) { return KeyRules(m, file, role).run(); }

}  // namespace ggufkit
