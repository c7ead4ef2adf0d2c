// Tensor surgery (surgery.h): whole tensors and whole slabs of the outermost dimension
// moved, never a byte re-quantized; the keys that describe layers and experts fixed.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "ggufkit/surgery.h"

#include <fnmatch.h>
#include <pcre2.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "ggufkit/error.h"
#include "ggufkit/format.h"
#include "ggufkit/inspect.h"
#include "ggufkit/patch.h"
#include "ggufkit/scan.h"
#include "ggufkit/shards.h"

namespace ggufkit {

std::vector<uint32_t> parse_ranges(const std::string& text, uint64_t count, const std::string& what) {
  std::set<uint32_t> out;
  auto bad = [&](const std::string& why) { throw_usage("`" + what + "` '" + text + "': " + why); };
  auto number = [&](const std::string& s) -> uint64_t {
    if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos)
      bad("'" + s + "' is not a number (give ranges as 0-3,10)");
    uint64_t v = std::stoull(s);
    if (v >= count) bad(std::to_string(v) + " is past the last (" + std::to_string(count) + " in all, from 0)");
    return v;
  };
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t dash = part.find('-');
    uint64_t a = number(dash == std::string::npos ? part : part.substr(0, dash));
    uint64_t b = dash == std::string::npos ? a : number(part.substr(dash + 1));
    if (b < a) bad("the range " + part + " runs backwards");
    for (uint64_t i = a; i <= b; ++i) out.insert(static_cast<uint32_t>(i));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return {out.begin(), out.end()};
}

namespace {

std::string dims_text(const std::vector<uint64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

bool glob_matches(const std::string& glob, const std::string& name) { return ::fnmatch(glob.c_str(), name.c_str(), 0) == 0; }

// A rename rule as a PCRE2 substitution over the whole name: a regular expression with $1
// as given, a glob made one (each * and ? a group, carried to NEW's wildcards in order), or
// one name.
class Renamer {
 public:
  Renamer(const std::string& from, const std::string& to, const std::string& where) : from_(from), to_(to) {
    std::string pattern, repl;
    const bool regex = dollar_group(to);
    if (regex) {
      pattern = from, repl = to;
    } else if (from.find_first_of("*?") != std::string::npos) {
      size_t groups = 0, used = 0;
      for (char c : from) {
        if (c == '*' || c == '?') pattern += c == '*' ? "(.*)" : "(.)", ++groups;
        else pattern += quote(c);
      }
      for (char c : to) {
        if (c == '*' || c == '?') repl += "${" + std::to_string(++used) + "}";
        else repl += c == '$' ? std::string("$$") : std::string(1, c);
      }
      if (used != groups)
        throw_usage(where + ": `rename_tensor` " + from + "=" + to + ": NEW has " + std::to_string(used) + " wildcards, OLD " +
                    std::to_string(groups) + " (each of OLD's * and ? is carried to NEW's, in order)");
    } else {
      exact_ = true;
      return;
    }
    int err = 0;
    PCRE2_SIZE at = 0;
    code_.reset(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_ANCHORED | PCRE2_ENDANCHORED, &err,
                              &at, nullptr));
    if (!code_) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      throw_usage(where + ": `rename_tensor` " + from + ": not a regular expression: " + reinterpret_cast<const char*>(msg) +
                  " at character " + std::to_string(at));
    }
    repl_ = repl;
    mc_.reset(pcre2_match_context_create(nullptr));
    if (!mc_) throw std::bad_alloc();
  }
  bool exact() const { return exact_; }

  // The match steps one edit's rules may take over all its names (PCRE2's match limit,
  // each try counted at the limit it was given): a name's try starts at kFirstTry and grows
  // tenfold up to PCRE2's own limit for one match while the budget lasts.
  struct Budget {
    uint64_t total = 0, left = 0;
    size_t names = 0, tried = 0;  // how many names there are, and have been tried
    const Renamer* spender = nullptr;  // the rule that has spent the most so far
    uint64_t most = 0;
  };
  static constexpr uint64_t kFirstTry = 1000, kOneMatch = 10'000'000, kBudget = 50'000'000;

  // The new name, or nullopt when the rule does not match `name`. It is built into 64
  // bytes: a name that does not fit is refused (ggml's names are shorter), never built.
  std::optional<std::string> apply(const std::string& name, const std::string& where, Budget& budget) const {
    if (exact_) return name == from_ ? std::optional<std::string>(to_) : std::nullopt;
    auto rule = [&where](const Renamer& r) { return where + ": `rename_tensor` " + clipped(r.from_) + "=" + clipped(r.to_); };
    std::string out(kMaxTensorName + 1, '\0');
    for (uint64_t limit = kFirstTry;; limit *= 10) {
      const uint64_t give = std::min({limit, kOneMatch, budget.left});
      budget.left -= give;
      if ((spent_ += give) > budget.most) budget.most = spent_, budget.spender = this;
      pcre2_set_match_limit(mc_.get(), static_cast<uint32_t>(give));
      PCRE2_SIZE len = out.size();
      int rc = pcre2_substitute(code_.get(), reinterpret_cast<PCRE2_SPTR>(name.data()), name.size(), 0, 0, nullptr, mc_.get(),
                                reinterpret_cast<PCRE2_SPTR>(repl_.data()), repl_.size(), reinterpret_cast<PCRE2_UCHAR*>(out.data()),
                                &len);
      if (rc == PCRE2_ERROR_MATCHLIMIT && give == limit && limit < kOneMatch) continue;
      if (rc == PCRE2_ERROR_MATCHLIMIT && give < limit)  // (named: the rule that spent the most)
        throw_usage(rule(*budget.spender) + ": its regular expression spent the edit's budget of " + std::to_string(budget.total) +
                    " match steps on " + std::to_string(budget.tried + 1) + " of the " + std::to_string(budget.names) +
                    " tensor names (it backtracks over every name, and the time grows with their count): simplify it");
      if (rc == 0) return std::nullopt;
      if (rc == PCRE2_ERROR_NOMEMORY)
        throw_usage(rule(*this) + ": would name " + name + " a name of more than " + std::to_string(kMaxTensorName) +
                    " bytes: ggml tensor names are shorter than 64 bytes");
      if (rc < 0) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(rc, msg, sizeof msg);
        throw_usage(rule(*this) + ": " + reinterpret_cast<const char*>(msg));
      }
      out.resize(len);
      return out;
    }
  }

 private:
  static bool dollar_group(const std::string& s) {
    for (size_t i = 0; i + 1 < s.size(); ++i)
      if (s[i] == '$' && (std::isdigit(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '{')) return true;
    return false;
  }
  static std::string quote(char c) {
    return std::string("\\^$.|()[]{}+*?").find(c) != std::string::npos ? std::string("\\") + c : std::string(1, c);
  }
  struct Free {
    void operator()(pcre2_code* c) const { pcre2_code_free(c); }
    void operator()(pcre2_match_context* c) const { pcre2_match_context_free(c); }
  };
  std::string from_, to_, repl_;
  bool exact_ = false;
  std::unique_ptr<pcre2_code, Free> code_;
  std::unique_ptr<pcre2_match_context, Free> mc_;  // its match limit, set before each try
  mutable uint64_t spent_ = 0;                     // (apply's own tally of the budget)
};

// "blk.N." names layer N; the rest of the name follows.
std::optional<uint64_t> layer_of(const std::string& name, size_t* rest = nullptr) {
  if (name.rfind("blk.", 0) != 0) return std::nullopt;
  size_t dot = name.find('.', 4);
  if (dot == std::string::npos || dot == 4 || dot - 4 > 9) return std::nullopt;
  for (size_t i = 4; i < dot; ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return std::nullopt;
  if (rest) *rest = dot + 1;
  return std::stoull(name.substr(4, dot - 4));
}

// The ranges of the source a tensor's bytes [from, from + n) lie in.
std::vector<std::pair<uint64_t, uint64_t>> ranges_of(const Tensor& t, uint64_t from, uint64_t n) {
  std::vector<std::pair<uint64_t, uint64_t>> whole = t.pieces;
  if (whole.empty()) whole.push_back({t.source_offset, t.nbytes()});
  std::vector<std::pair<uint64_t, uint64_t>> out;
  uint64_t at = 0;  // where the piece starts in the tensor's bytes
  for (const auto& [off, len] : whole) {
    uint64_t a = std::max(at, from), b = std::min(at + len, from + n);
    if (a < b) {
      if (!out.empty() && out.back().first + out.back().second == off + (a - at)) out.back().second += b - a;
      else out.push_back({off + (a - at), b - a});
    }
    at += len;
  }
  return out;
}

class Surgeon {
 public:
  Surgeon(Model& m, const TensorOps& ops, const Context& ctx) : m_(m), ops_(ops), ctx_(ctx), arch_(architecture(m)) {
    ts_.reserve(m.tensors.size());
    for (const Tensor& t : m.tensors) ts_.push_back(t);
  }

  SurgeryResult run() {
    if (!ops_.keep.empty()) keep();
    for (const std::string& g : ops_.remove) remove(g);
    if (!ops_.rename.empty()) rename();
    if (ops_.keep_layers && ops_.remove_layers) throw_usage("give one of `keep_layers` and `remove_layers`");
    if (ops_.keep_experts && ops_.remove_experts) throw_usage("give one of `keep_experts` and `remove_experts`");
    if (ops_.keep_layers || ops_.remove_layers) layers();
    if (ops_.keep_experts || ops_.remove_experts) experts();
    for (const TensorOps::Graft& g : ops_.graft) graft(g);
    m_.tensors.clear();
    for (Tensor& t : ts_) m_.tensors.push_back(std::move(t));
    if (r_.moved) {
      m_.tensors.pack();
      if (m_.tail) m_.tail->relaid = true;  // its gaps and trailing bytes belong to a layout that is gone
    }
    return std::move(r_);
  }

 private:
  void drop(size_t i) {
    r_.tensors.push_back({TensorChange::removed, ts_[i].name, "", ts_[i].dims, {}, ts_[i].type, ts_[i].type, ""});
    r_.moved = true;
  }

  void keep() {
    std::vector<Tensor> kept;
    for (size_t i = 0; i < ts_.size(); ++i) {
      bool any = std::any_of(ops_.keep.begin(), ops_.keep.end(), [&](const std::string& g) { return glob_matches(g, ts_[i].name); });
      if (any) kept.push_back(std::move(ts_[i]));
      else drop(i);
    }
    if (kept.empty()) throw_usage(ops_.from + ": no tensor matches the globs of the tensors to keep: " + join(ops_.keep));
    ts_ = std::move(kept);
  }

  void remove(const std::string& glob) {
    std::vector<Tensor> kept;
    for (size_t i = 0; i < ts_.size(); ++i)
      if (glob_matches(glob, ts_[i].name)) drop(i);
      else kept.push_back(std::move(ts_[i]));
    if (kept.size() == ts_.size()) throw_usage(ops_.from + ": `remove_tensor` " + glob + " matches no tensor");
    ts_ = std::move(kept);
  }

  void rename() {
    std::vector<Renamer> rules;
    for (const auto& [from, to] : ops_.rename) rules.emplace_back(from, to, ops_.from);
    std::vector<size_t> hits(rules.size());
    std::vector<std::string> names;
    Renamer::Budget budget;
    budget.names = ts_.size();
    budget.total = budget.left = Renamer::kBudget + Renamer::kFirstTry * ts_.size() * rules.size();
    for (Tensor& t : ts_) {
      std::string name = t.name;
      for (size_t k = 0; k < rules.size(); ++k)  // the first rule that matches a name renames it
        if (std::optional<std::string> to = rules[k].apply(t.name, ops_.from, budget)) {
          ++hits[k];
          name = *to;
          break;
        }
      names.push_back(std::move(name));
      ++budget.tried;
    }
    for (size_t k = 0; k < rules.size(); ++k)
      if (!hits[k])
        throw_usage(ops_.from + ": `rename_tensor` " + clipped(ops_.rename[k].first) + "=" + clipped(ops_.rename[k].second) + ": " +
                    (rules[k].exact() ? "there is no tensor " + ops_.rename[k].first : "the pattern matches no tensor"));
    std::map<std::string, size_t> seen;
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i].empty()) throw_usage(ops_.from + ": `rename_tensor` would give " + ts_[i].name + " an empty name");
      if (names[i].size() > kMaxTensorName)
        throw_usage(ops_.from + ": `rename_tensor` would name " + ts_[i].name + " " + clipped(names[i]) + ", " +
                    std::to_string(names[i].size()) + " bytes: ggml tensor names are shorter than 64 bytes");
      auto [it, fresh] = seen.emplace(names[i], i);
      if (!fresh)
        throw_usage(ops_.from + ": `rename_tensor`: " + ts_[it->second].name + " and " + ts_[i].name + " would both be named " +
                    names[i]);
    }
    for (size_t i = 0; i < ts_.size(); ++i)
      if (names[i] != ts_[i].name) {
        r_.tensors.push_back({TensorChange::renamed, ts_[i].name, names[i], ts_[i].dims, ts_[i].dims, ts_[i].type, ts_[i].type, ""});
        ts_[i].name = names[i];
      }
  }

  // An integer key of the architecture's, and its value.
  Value* arch_key(const std::string& suffix) {
    Value* v = m_.find(arch_ + "." + suffix);
    return v && v->is_integer() ? v : nullptr;
  }
  uint64_t required_count(const std::string& suffix, const char* op) {
    Value* v = arch_key(suffix);
    if (arch_.empty() || !v)
      throw_usage(std::string("`") + op + "`: the model has no integer " + (arch_.empty() ? "{arch}" : arch_) + "." + suffix +
                  ", so its " + (suffix == "block_count" ? "layers" : "experts") + " cannot be counted");
    if (v->as_u64() > kMaxCount)  // key_range holds real models to 512 layers and 1,024 experts
      throw_usage(std::string("`") + op + "`: " + arch_ + "." + suffix + " is " + std::to_string(v->as_u64()) +
                  ", past the " + std::to_string(kMaxCount) + " an edit counts through");
    return v->as_u64();
  }
  static constexpr uint64_t kMaxCount = 1 << 20;
  void set_key(const std::string& key, Value after) {
    Value* v = m_.find(key);
    if (*v == after) return;
    r_.keys.emplace_back(Change::set, key, "", *v, after);
    *v = std::move(after);
  }
  void unfixed(const std::string& key, const std::string& why) {
    r_.unfixed.push_back(finding(Code::surgery_key, std::nullopt, key + ": " + why, Place::key(key)));
  }

  // The layers (experts) kept, in order, of the `count` the key says there are: the ranges
  // `keep` gives, or all but those `remove` gives.
  std::vector<uint32_t> kept_of(const std::optional<std::string>& keep, const std::optional<std::string>& remove,
                                const std::string& key, const std::string& what, uint64_t& count) {
    const std::string op = (keep ? "keep_" : "remove_") + what;
    count = required_count(key, op.c_str());
    const std::vector<uint32_t> listed = parse_ranges(keep ? *keep : *remove, count, op);
    if (keep) return listed;
    std::vector<uint32_t> kept;
    for (uint32_t i = 0, j = 0; i < count; ++i)
      if (j < listed.size() && listed[j] == i) ++j;
      else kept.push_back(i);
    if (kept.empty()) throw_usage("`" + op + "` would remove every one of the " + std::to_string(count) + " " + what);
    return kept;
  }

  void layers() {
    uint64_t n = 0;
    const std::vector<uint32_t> kept = kept_of(ops_.keep_layers, ops_.remove_layers, "block_count", "layers", n);
    std::map<uint64_t, uint64_t> renumber;
    for (size_t k = 0; k < kept.size(); ++k) renumber[kept[k]] = k;
    std::vector<Tensor> out;
    for (size_t i = 0; i < ts_.size(); ++i) {
      size_t rest = 0;
      std::optional<uint64_t> layer = layer_of(ts_[i].name, &rest);
      if (!layer) {
        out.push_back(std::move(ts_[i]));
        continue;
      }
      if (*layer >= n)
        throw_usage(ts_[i].name + " is of layer " + std::to_string(*layer) + ", past block_count " + std::to_string(n) +
                    ": keep or remove it by name");
      auto it = renumber.find(*layer);
      if (it == renumber.end()) {
        drop(i);
        continue;
      }
      std::string to = "blk." + std::to_string(it->second) + "." + ts_[i].name.substr(rest);
      if (to != ts_[i].name) {
        r_.tensors.push_back({TensorChange::renamed, ts_[i].name, to, ts_[i].dims, ts_[i].dims, ts_[i].type, ts_[i].type, ""});
        ts_[i].name = to;
      }
      out.push_back(std::move(ts_[i]));
    }
    ts_ = std::move(out);
    layer_keys(n, kept);
  }

  // The keys that describe layers: counts, per-layer arrays (their kept items), counts of
  // the first or last layers, and periods (which must give each kept layer its old kind).
  void layer_keys(uint64_t n, const std::vector<uint32_t>& kept) {
    const std::string pre = arch_ + ".";
    auto count_if = [&](auto pred) { return static_cast<uint64_t>(std::count_if(kept.begin(), kept.end(), pred)); };
    std::vector<std::string> keys;
    for (size_t i = 0; i < m_.metadata.size(); ++i)
      if (m_.metadata.key(i).starts_with(pre)) keys.emplace_back(m_.metadata.key(i));
    for (const std::string& key : keys) {
      Value* v = m_.find(key);
      const std::string s = key.substr(pre.size());
      if (s == "block_count") {
        set_key(key, Value::scalar(v->type, kept.size()));
      } else if (v->is_integer() && s == "leading_dense_block_count") {
        const uint64_t d = v->as_u64();
        set_key(key, Value::scalar(v->type, count_if([&](uint32_t k) { return k < d; })));
      } else if (v->is_integer() && (s == "nextn_predict_layers" || s == "attention.shared_kv_layers")) {
        const uint64_t last = std::min(v->as_u64(), n);  // the last layers: MTP's, or gemma3n's that share KV
        set_key(key, Value::scalar(v->type, count_if([&](uint32_t k) { return k >= n - last; })));
      } else if (v->is_integer() && (s == "attention.sliding_window_pattern" || s == "full_attention_interval" ||
                                      s == "moe_every_n_layers")) {
        const uint64_t p = v->as_u64();
        auto kind = [&](uint64_t i) -> int {
          if (s == "attention.sliding_window_pattern") return p == 0 || i % p < p - 1;  // llama.cpp's set_swa_pattern
          if (s == "full_attention_interval") return p == 0 ? 0 : (i + 1) % p != 0;  // recurrent layers
          return p != 0 && i % p == 1;                                               // nomic-bert's expert layers
        };
        for (size_t k = 0; k < kept.size(); ++k)
          if (kind(kept[k]) != kind(k)) {
            unfixed(key, "a period of " + std::to_string(p) + " makes kept layer " + std::to_string(kept[k]) + " (now " +
                             std::to_string(k) + ") another kind of layer than it was; keep whole periods of " +
                             std::to_string(p) + " layers from a multiple of " + std::to_string(p));
            break;
          }
      } else if (v->type == ValueType::array && v->elem != ValueType::string && v->size() == n &&
                 s != "rope.dimension_sections") {  // a string list (classifier.output_labels) is no per-layer value
        if (v->elem == ValueType::array) {
          unfixed(key, "an array of arrays of one item per layer: its items are not sliced");
          continue;
        }
        std::vector<Value> items;
        for (uint32_t k : kept) items.push_back(v->at(k));
        set_key(key, Value::array(v->elem, std::move(items)));
      }
    }
  }

  // A stacked expert tensor's name past "blk.N.", or the router's.
  static bool expert_tensor(const std::string& rest) {
    return rest.find("_exps.") != std::string::npos || rest.rfind("ffn_gate_inp.", 0) == 0 || rest.rfind("exp_probs_b.", 0) == 0;
  }

  void experts() {
    uint64_t e = 0;
    const std::vector<uint32_t> kept = kept_of(ops_.keep_experts, ops_.remove_experts, "expert_count", "experts", e);
    for (Tensor& t : ts_) {
      size_t rest = 0;
      if (!layer_of(t.name, &rest) || !expert_tensor(t.name.substr(rest))) continue;
      if (t.dims.empty() || t.dims.back() != e)
        throw_usage(t.name + " " + dims_text(t.dims) + ": its outermost dimension is not expert_count " + std::to_string(e) +
                    ", so its experts cannot be sliced");
      if (t.opaque_bytes)  // measured with the padding after it: where each expert ends is not known
        throw_usage(t.name + " is " + ggml_type_name(t.type) + ", a type ggufkit cannot size, so its experts cannot be sliced");
      const uint64_t bytes = t.nbytes(), slab = bytes / e;
      if (bytes % e != 0)
        throw_usage(t.name + " " + dims_text(t.dims) + ": its " + std::to_string(bytes) + " bytes do not split into " +
                    std::to_string(e) + " experts' equal slabs, so its experts cannot be sliced");
      std::vector<std::pair<uint64_t, uint64_t>> pieces;  // taken while the tensor is still whole
      for (uint32_t x : kept)
        for (const auto& r : ranges_of(t, x * slab, slab)) {
          if (!pieces.empty() && pieces.back().first + pieces.back().second == r.first) pieces.back().second += r.second;
          else pieces.push_back(r);
        }
      std::vector<uint64_t> before = t.dims;
      t.dims.back() = kept.size();
      t.offset.reset();
      r_.tensors.push_back({TensorChange::sliced, t.name, "", before, t.dims, t.type, t.type, ""});
      r_.moved = true;
      if (pieces.empty()) continue;  // a dimension of 0: no bytes to take
      t.source_offset = pieces.front().first;
      t.pieces = pieces.size() == 1 ? std::vector<std::pair<uint64_t, uint64_t>>{} : std::move(pieces);
    }
    const uint64_t left = kept.size();
    set_key(arch_ + ".expert_count", Value::scalar(arch_key("expert_count")->type, left));
    // expert_used_count past what is left: the rule book's hparam_condition says so.
    if (Value* groups = arch_key("expert_group_count"); groups && groups->as_u64() > 1) {
      const uint64_t g = groups->as_u64(), size = e / g;
      std::set<uint64_t> whole;
      bool ok = e % g == 0;
      for (uint64_t k = 0; ok && k < g; ++k) {
        uint64_t in = count_if_between(kept, k * size, (k + 1) * size);
        if (in == size) whole.insert(k);
        else if (in != 0) ok = false;
      }
      if (!ok) {
        unfixed(arch_ + ".expert_group_count", "experts are routed in " + std::to_string(g) + " groups of " + std::to_string(size) +
                                                   ": keep whole groups");
      } else {
        set_key(arch_ + ".expert_group_count", Value::scalar(groups->type, whole.size()));
        if (Value* used = arch_key("expert_group_used_count"); used && used->as_u64() > whole.size())
          unfixed(arch_ + ".expert_group_used_count", "more groups are used than the " + std::to_string(whole.size()) + " kept");
      }
    }
  }
  static uint64_t count_if_between(const std::vector<uint32_t>& v, uint64_t a, uint64_t b) {
    return static_cast<uint64_t>(std::count_if(v.begin(), v.end(), [&](uint32_t x) { return x >= a && x < b; }));
  }

  void graft(const TensorOps::Graft& g) {
    // A tensor of a type ggufkit cannot size that a reader measured to the end of its file's
    // data (the last one) holds the file's end padding too: where it ends is not known.
    std::map<std::string, uint64_t> to_end;  // its name, and its index in its file
    auto measured = [&](const Scanned& s) {
      if (s.opaque_to_end) to_end.emplace(std::string(s.model.tensors.name(*s.opaque_to_end)), *s.opaque_to_end);
    };
    Model donor;
    if (parse_shard_name(g.from)) {
      const ShardSet set = open_shard_set(g.from, ctx_);
      for (const Shard& s : set.shards) measured(s.file);
      donor = set.model();
    } else {
      Scanned s = scan_file(g.from, {}, ctx_);
      measured(s);
      donor = std::move(s.model);
    }
    if (donor.order != m_.order)
      throw_usage("`graft` " + g.from + ": its byte order is not the model's; convert it first (ggufkit convert)");
    std::map<std::string, size_t> at;
    for (size_t i = 0; i < ts_.size(); ++i) at[ts_[i].name] = i;
    size_t matched = 0;
    for (Tensor t : donor.tensors) {
      if (!g.glob.empty() && !glob_matches(g.glob, t.name)) continue;
      if (const auto end = to_end.find(t.name); end != to_end.end())
        throw Error(Error::Kind::format, g.from, std::nullopt, "tensor[" + std::to_string(end->second) + "] " + t.name,
                    ggml_type_name(t.type) + " is a type ggufkit cannot size, measured to the end of the donor's data, its "
                    "padding included: where the tensor ends is not known, so it cannot be grafted; nothing was written");
      ++matched;
      t.offset.reset();
      auto it = at.find(t.name);
      if (it == at.end()) {
        r_.tensors.push_back({TensorChange::added, t.name, "", {}, t.dims, t.type, t.type, g.from});
        at[t.name] = ts_.size();
        ts_.push_back(std::move(t));
      } else {
        Tensor& here = ts_[it->second];
        if (here.dims != t.dims)
          r_.unfixed.push_back(finding(Code::tensor_shape, std::nullopt,
                                       t.name + ": the donor's is " + dims_text(t.dims) + " (" + g.from + "), this model's " +
                                           dims_text(here.dims),
                                       Place::tensor(t.name)));
        r_.tensors.push_back({TensorChange::replaced, t.name, "", here.dims, t.dims, here.type, t.type, g.from});
        here = std::move(t);
      }
      r_.moved = true;
    }
    if (!matched) throw_usage("`graft` " + g.from + (g.glob.empty() ? ": it has no tensor" : ": no tensor matches " + g.glob));
  }

  static std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : " ") + x;
    return s;
  }

  Model& m_;
  const TensorOps& ops_;
  const Context& ctx_;
  const std::string arch_;
  std::vector<Tensor> ts_;
  SurgeryResult r_;
};

}  // namespace

SurgeryResult apply_tensor_ops(Model& model, const TensorOps& ops, const Context& ctx) {
  if (ops.empty()) return {};
  return Surgeon(model, ops, ctx).run();
}

}  // namespace ggufkit
