#include "tensor_rules.h"

#include <type_traits>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

#include "ggufkit/error.h"
#include "ggufkit/inspect.h"
#include "ggufkit/tensors.h"
#include "ggufkit/yaml_values.h"

namespace ggufkit {

extern const std::string_view kTensorsYaml;  // schemas/tensors.yaml, embedded by cmake/embed.cmake

namespace {

constexpr const char* kTable = "schemas/tensors.yaml";

// An integer expression of the table: a number, a name, or an operator over its operands.
struct Expr {
  enum Op { num, var, add, sub, mul, div, mod, eq, ne, lt, le, gt, ge, both, either, negate, neg } op = num;
  int64_t n = 0;
  std::string name;
  std::vector<Expr> args;
};

using Env = std::map<std::string, int64_t, std::less<>>;

// Unknown (nullopt) when a name has no value or a division is by zero: the loader would
// refuse the hyperparameters first, and another rule says so.
std::optional<int64_t> eval(const Expr& e, const Env& env) {
  if (e.op == Expr::num) return e.n;
  if (e.op == Expr::var) {
    auto it = env.find(e.name);
    return it == env.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  std::optional<int64_t> a = eval(e.args[0], env);
  if (!a) return std::nullopt;
  // A header's values may be anything: what overflows int64 (or traps, INT64_MIN / -1) is unknown.
  int64_t r = 0;
  if (e.op == Expr::negate) return !*a;
  if (e.op == Expr::neg) return __builtin_sub_overflow(int64_t{0}, *a, &r) ? std::nullopt : std::optional<int64_t>(r);
  std::optional<int64_t> b = eval(e.args[1], env);
  if (!b) return std::nullopt;
  const bool traps = *b == 0 || (*b == -1 && *a == INT64_MIN);
  switch (e.op) {
    case Expr::add: return __builtin_add_overflow(*a, *b, &r) ? std::nullopt : std::optional<int64_t>(r);
    case Expr::sub: return __builtin_sub_overflow(*a, *b, &r) ? std::nullopt : std::optional<int64_t>(r);
    case Expr::mul: return __builtin_mul_overflow(*a, *b, &r) ? std::nullopt : std::optional<int64_t>(r);
    case Expr::div: return traps ? std::nullopt : std::optional<int64_t>(*a / *b);
    case Expr::mod: return traps ? std::nullopt : std::optional<int64_t>(*a % *b);
    case Expr::eq: return *a == *b;
    case Expr::ne: return *a != *b;
    case Expr::lt: return *a < *b;
    case Expr::le: return *a <= *b;
    case Expr::gt: return *a > *b;
    case Expr::ge: return *a >= *b;
    case Expr::both: return *a && *b;
    case Expr::either: return *a || *b;
    default: return std::nullopt;
  }
}

void names_in(const Expr& e, std::vector<std::string>& out) {
  if (e.op == Expr::var && e.name != "i" && std::find(out.begin(), out.end(), e.name) == out.end()) out.push_back(e.name);
  for (const Expr& a : e.args) names_in(a, out);
}

// Precedence climbing over || && comparisons + - * / % and unary ! -.
class Parser {
 public:
  Parser(std::string_view text, const std::string& where) : s_(text), where_(where) {}
  Expr parse() {
    Expr e = binary(0);
    skip();
    if (p_ != s_.size()) fail("unexpected '" + std::string(s_.substr(p_)) + "'");
    return e;
  }

 private:
  struct Level {
    std::string_view token;
    Expr::Op op;
    int prec;
  };
  static constexpr Level kOps[] = {{"||", Expr::either, 1}, {"&&", Expr::both, 2}, {"==", Expr::eq, 3}, {"!=", Expr::ne, 3},
                                   {"<=", Expr::le, 4},     {">=", Expr::ge, 4},   {"<", Expr::lt, 4},  {">", Expr::gt, 4},
                                   {"+", Expr::add, 5},     {"-", Expr::sub, 5},   {"*", Expr::mul, 6}, {"/", Expr::div, 6},
                                   {"%", Expr::mod, 6}};
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(Error::Kind::format, kTable, std::nullopt, where_, "the expression '" + std::string(s_) + "': " + why);
  }
  void skip() {
    while (p_ < s_.size() && s_[p_] == ' ') ++p_;
  }
  const Level* peek() {
    skip();
    for (const Level& l : kOps)
      if (s_.substr(p_, l.token.size()) == l.token) return &l;
    return nullptr;
  }
  Expr binary(int min_prec) {
    Expr left = unary();
    for (const Level* l = peek(); l && l->prec > min_prec; l = peek()) {
      p_ += l->token.size();
      Expr right = binary(l->prec);
      Expr e;
      e.op = l->op;
      e.args = {std::move(left), std::move(right)};
      left = std::move(e);
    }
    return left;
  }
  Expr unary() {
    skip();
    if (p_ < s_.size() && (s_[p_] == '!' || s_[p_] == '-')) {
      Expr e;
      e.op = s_[p_++] == '!' ? Expr::negate : Expr::neg;
      e.args = {unary()};
      return e;
    }
    if (p_ < s_.size() && s_[p_] == '(') {
      ++p_;
      Expr e = binary(0);
      skip();
      if (p_ >= s_.size() || s_[p_] != ')') fail("a '(' without its ')'");
      ++p_;
      return e;
    }
    Expr e;
    const size_t start = p_;
    if (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_]))) {
      while (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_]))) e.n = e.n * 10 + (s_[p_++] - '0');
      return e;
    }
    while (p_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[p_])) || s_[p_] == '_')) ++p_;
    if (p_ == start) fail(p_ < s_.size() ? "unexpected '" + std::string(1, s_[p_]) + "'" : "an operand is missing at the end");
    e.op = Expr::var;
    e.name = std::string(s_.substr(start, p_ - start));
    if (s_.substr(p_, 3) == "(i)") e.name += "(i)", p_ += 3;  // the layer's own value: hparams.X(i)
    return e;
  }

  std::string_view s_;
  std::string where_;
  size_t p_ = 0;
};

// "n_head_kv(i)": a layer's own value (hparams.X(i)), set in the layer loop only.
bool per_layer_name(std::string_view name) { return name.size() > 3 && name.ends_with("(i)"); }

struct Hparam {
  std::string name;     // "(i)" at the end: one value per layer (the layer loop's)
  std::string key;      // with "{arch}" for the architecture
  bool tokens = false;  // the vocabulary's token count, before the key
  std::optional<Expr> value;  // derived: always this
  std::string value_text;     // as the table writes it, to explain a shape
  std::optional<Expr> fallback;  // the key's default
  bool per_layer() const { return per_layer_name(name); }
};

struct Entry {
  std::string name;  // "{i}" for the layer
  bool layered = false, optional = false, once = false;
  bool in_example = false;  // optional to the loader, but the graph uses it: the example writes it
  std::vector<Expr> shape;
  std::optional<Expr> when;
  std::string with, without;
};

// An architecture's optional_layers: item: in a layer where `when` holds and the file has no
// tensor `without` ("{i}" the layer), every tensor of the layer loop is optional (the loader
// probes the file and makes its per-layer flags TENSOR_NOT_REQUIRED).
struct Relax {
  Expr when;
  std::string without;
};

// One architecture's part of the table.
struct Arch {
  std::vector<Entry> tensors;
  std::vector<Relax> relax;
  std::vector<ExampleKey> example;
  std::vector<std::string> requires_keys;
};

// The table: what every architecture shares, read at once, and each architecture's part,
// read when first asked for. The whole table is 128 KB of YAML, 15 ms to parse, and a job
// asks for one architecture: show and an edit of a header cost as much as ggml's whole
// header parse before. (Every architecture's part is read by the tests, which make each
// one's example.)
struct Table {
  std::vector<Hparam> hparams;
  std::vector<ExampleKey> example;  // every architecture's smallest model's keys, "{arch}" in them
  std::vector<std::string> requires_all;  // every architecture's required keys, "{arch}" in them
  std::set<std::string, std::less<>> known;  // every architecture llama.cpp knows
  std::set<std::string, std::less<>> hparam_names;  // what an expression may name

  struct Part {
    std::string_view text;  // from its "  name:" line up to the next architecture's
    size_t line = 0;        // of that line, 1-based
    mutable std::once_flag once;
    mutable Arch arch;
  };
  std::map<std::string, Part, std::less<>> archs;  // by name, in place (a once_flag does not move)
  const Arch* arch(std::string_view name) const;   // nullptr: the table has no such architecture
};

Expr table_expr(YamlReader& y, const YamlNode& n, const std::string& where, const std::set<std::string, std::less<>>& known) {
  Expr e = Parser(y.scalar(n, where), where).parse();
  std::vector<std::string> used;
  names_in(e, used);
  for (const std::string& u : used)
    if (!known.count(u)) y.fail(n, where, "'" + u + "' is not a hyperparameter of the table (or not yet one)");
  return e;
}

void example_list(YamlReader& y, const YamlNode& list, const std::string& where, std::vector<ExampleKey>& out) {
  for (const YamlNode& n : list) {
    y.fields(n, where, {"key", "type", "items", "value"});
    out.push_back({y.scalar(n["key"], where), y.scalar(n["type"], where), y.scalar(n["value"], where),
                   n["items"] ? y.scalar(n["items"], where) : ""});
  }
}

Table parse_table() {
  const std::string_view text = kTensorsYaml;
  // The architectures: section's entries start at lines "  name:" (two spaces in).
  const std::string_view marker = "\narchitectures:\n";
  const size_t section = text.find(marker);
  YamlReader y(kTable, ".");
  if (section == std::string_view::npos) throw Error(Error::Kind::format, kTable, std::nullopt, "architectures", "no architectures: section");
  YamlNode root = load_yaml(std::string(text.substr(0, section + 1)), kTable);
  y.fields(root, "table", {"hparams", "known", "example", "requires"});
  Table t;
  example_list(y, root["example"], "example", t.example);
  t.hparam_names = {"i"};
  for (const YamlNode& h : root["hparams"]) {
    y.fields(h, "hparams", {"name", "key", "tokens", "default", "expr"});
    Hparam p;
    p.name = y.scalar(h["name"], "hparams");
    if (h["key"]) p.key = y.scalar(h["key"], p.name);
    if (h["tokens"]) p.tokens = y.boolean(h["tokens"], p.name);
    if (h["expr"]) p.value = table_expr(y, h["expr"], p.name, t.hparam_names), p.value_text = y.scalar(h["expr"], p.name);
    if (h["default"]) p.fallback = table_expr(y, h["default"], p.name, t.hparam_names);
    t.hparam_names.insert(p.name);
    t.hparams.push_back(std::move(p));
  }
  for (const YamlNode& n : root["known"]) t.known.insert(y.scalar(n, "known"));
  for (const YamlNode& n : root["requires"]) t.requires_all.push_back(y.scalar(n, "requires"));

  size_t line = static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(section + marker.size()), '\n')) + 1;
  Table::Part* last = nullptr;
  size_t last_from = 0;
  for (size_t at = section + marker.size(); at < text.size(); ++line) {
    size_t eol = text.find('\n', at);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view l = text.substr(at, eol - at);
    const size_t colon = l.find(':');
    if (l.size() > 2 && l.starts_with("  ") && l[2] != ' ' && l[2] != '#' && colon != std::string_view::npos) {
      const std::string name(l.substr(2, colon - 2));
      auto bad = [&](const std::string& why) { return Error(Error::Kind::format, kTable, std::nullopt, name, "line " + std::to_string(line) + ": " + why); };
      if (!t.known.count(name)) throw bad("not in known:, the architectures llama.cpp knows");
      if (t.archs.count(name)) throw bad("a second entry for the architecture");
      if (last) last->text = text.substr(last_from, at - last_from);
      last = &t.archs[name];
      last->text = text.substr(at);
      last->line = line;
      last_from = at;
    }
    at = eol + 1;
  }
  return t;
}

const Arch* Table::arch(std::string_view name) const {
  auto it = archs.find(name);
  if (it == archs.end()) return nullptr;
  const Part& part = it->second;
  std::call_once(part.once, [&] {
    // Parsed where it lies: blank lines before it, so that an error names the table's line.
    std::string text(part.line - 2, '\n');
    text += "architectures:\n";
    text += part.text;
    YamlNode root = load_yaml(text, kTable);
    YamlReader y(kTable, ".");
    const std::string arch(name);
    const YamlNode& spec = root["architectures"][arch];
    Arch& out = part.arch;
    y.fields(spec, arch, {"requires", "tensors", "example", "optional_layers"});
    for (const YamlNode& n : spec["optional_layers"]) {
      const std::string where = arch + " optional_layers";
      y.fields(n, where, {"when", "without"});
      out.relax.push_back({table_expr(y, n["when"], where, hparam_names), y.scalar(n["without"], where)});
    }
    example_list(y, spec["example"], arch + " example", out.example);
    for (const YamlNode& n : spec["requires"]) out.requires_keys.push_back(y.scalar(n, arch + " requires"));
    for (const YamlNode& n : spec["tensors"]) {
      y.fields(n, arch, {"name", "shape", "optional", "when", "with", "without", "once", "in_example"});
      Entry e;
      e.name = y.scalar(n["name"], arch);
      const std::string where = arch + " " + e.name;
      e.layered = e.name.find("{i}") != std::string::npos;
      if (n["optional"]) e.optional = y.boolean(n["optional"], where);
      if (n["once"]) e.once = y.boolean(n["once"], where);
      if (n["in_example"]) e.in_example = y.boolean(n["in_example"], where);
      if (e.in_example && !e.optional) y.fail(n, where, "in_example: is for an optional tensor (the example writes every required one)");
      if (e.once && e.layered) y.fail(n, where, "once: is for a tensor without {i}");
      if (!n["shape"].IsSequence()) y.fail(n, where, "shape: is a list of dimensions");
      for (const YamlNode& d : n["shape"]) e.shape.push_back(table_expr(y, d, where, hparam_names));
      if (n["when"]) e.when = table_expr(y, n["when"], where, hparam_names);
      if (n["with"]) e.with = y.scalar(n["with"], where);
      if (n["without"]) e.without = y.scalar(n["without"], where);
      out.tensors.push_back(std::move(e));
    }
  });
  return &part.arch;
}

const Table& table() {
  static const Table t = parse_table();
  return t;
}

std::string replaced(std::string s, std::string_view what, const std::string& with) {
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + with.size())) s.replace(at, what.size(), with);
  return s;
}

// A key's integer (a bool as 0 or 1), or a per-layer array's item `layer`: layer 0 for the
// names LLAMA_LOAD_LOCALS reads, the layer's own for a name(i). An array too short has none.
std::optional<int64_t> key_value(const Value* v, size_t layer) {
  if (!v || (v->type == ValueType::array && v->elem == ValueType::array)) return std::nullopt;  // an array of arrays: none
  auto number = [](const Value& x) -> std::optional<int64_t> {
    if (x.is_integer()) return x.as_i64();
    if (x.type == ValueType::boolean) return static_cast<int64_t>(x.as_u64());
    return std::nullopt;
  };
  if (v->type == ValueType::array) return layer < v->size() ? number(v->at(layer)) : std::nullopt;
  return number(*v);
}

// The model's value of each hyperparameter's key (nullptr: none), looked up once: a layer
// loop over a million layers asks them a million times.
std::vector<const Value*> hparam_keys(const Model& m, const std::string& arch) {
  std::vector<const Value*> out;
  for (const Hparam& h : table().hparams) out.push_back(h.key.empty() ? nullptr : m.find(replaced(h.key, "{arch}", arch)));
  return out;
}

// The hyperparameters in the table's order: the model-wide ones when `layer` is empty, else
// the per-layer ones (name(i)) of that layer, over the model-wide ones already in `env`.
void hparams_of(const Model& m, const std::vector<const Value*>& keys, Env& env, std::optional<int64_t> layer = std::nullopt) {
  const std::vector<Hparam>& all = table().hparams;
  for (size_t k = 0; k < all.size(); ++k) {
    const Hparam& h = all[k];
    if (h.per_layer() != layer.has_value()) continue;
    std::optional<int64_t> v;
    if (h.value) v = eval(*h.value, env);
    if (!v && h.tokens)
      if (const Value* t = m.find("tokenizer.ggml.tokens"); t && t->type == ValueType::array) v = static_cast<int64_t>(t->size());
    if (!v) v = key_value(keys[k], static_cast<size_t>(layer.value_or(0)));
    if (!v && h.fallback) v = eval(*h.fallback, env);
    if (v) env[h.name] = *v;
    else env.erase(h.name);  // not the layer before's
  }
}

std::string dims_text(const std::vector<uint64_t>& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "x" : "") + std::to_string(d[i]);
  return s.empty() ? "a scalar" : s;
}

// The tensor's dimensions with trailing 1s dropped: ggml's shape, which check_tensor_dims compares.
std::vector<uint64_t> trimmed(std::vector<uint64_t> d) {
  while (!d.empty() && d.back() == 1) d.pop_back();
  return d;
}

// "n_embd 64", or for a derived name its derivation: "n_embd_k_gqa 32 = n_embd_head_k 16 * n_head_kv 2";
// a layer's own value with its layer: "n_head_kv(3) 0".
std::string explained(const std::string& name, const Env& env) {
  auto value = [&](const std::string& n) {
    auto it = env.find(n);
    std::string shown = n;
    if (auto layer = env.find("i"); layer != env.end() && per_layer_name(shown))
      shown.replace(shown.size() - 2, 1, std::to_string(layer->second));
    return shown + " " + (it == env.end() ? std::string("?") : std::to_string(it->second));
  };
  std::string out = value(name);
  for (const Hparam& h : table().hparams) {
    if (h.name != name || h.value_text.empty()) continue;
    out += " =";
    std::string word;
    auto flush = [&] {
      if (word.empty()) return;
      const bool is_name = std::isalpha(static_cast<unsigned char>(word[0])) || word[0] == '_';
      out += " " + (is_name ? value(word) : word);
      word.clear();
    };
    for (size_t k = 0; k < h.value_text.size(); ++k) {
      const char c = h.value_text[k];
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') word += c;
      else if (!word.empty() && h.value_text.compare(k, 3, "(i)") == 0) word += "(i)", k += 2;
      else {
        flush();
        if (c != ' ') out += " " + std::string(1, c);
      }
    }
    flush();
  }
  return out;
}

// The loader's walk over `m`'s table entries: for each tensor it creates from a file whose
// tensors `present` tells (its when, with and without holding), in its order, f(entry, name)
// with env["i"] the layer and the layer's own hyperparameters set, and whether it is optional
// there (its own or its layer's, `relax`). The layer loop stops at `max_layers`.
template <typename Present, typename F>
void walk(const Model& m, const std::vector<const Value*>& keys, const std::vector<Entry>& entries, const std::vector<Relax>& relax,
          Env& env, int64_t max_layers, Present present, F f) {
  bool relaxed = false;  // the layer the loop is at is one the loader made optional
  auto each = [&](const Entry& e, const std::string& layer) {
    if (e.when) {
      std::optional<int64_t> w = eval(*e.when, env);
      if (!w || !*w) return false;  // not created here (or unknown: not judged)
    }
    if (!e.with.empty() && !present(replaced(e.with, "{i}", layer))) return false;
    if (!e.without.empty() && present(replaced(e.without, "{i}", layer))) return false;
    f(e, replaced(e.name, "{i}", layer), e.optional || (!layer.empty() && relaxed));
    return true;
  };
  const auto layers = env.find("n_layer");
  const int64_t n_layers = layers == env.end() ? 0 : std::min(layers->second, max_layers);
  for (size_t k = 0; k < entries.size();) {
    if (!entries[k].layered && !entries[k].once) {
      each(entries[k++], "");
      continue;
    }
    size_t end = k;  // a run of the layer loop's entries
    while (end < entries.size() && (entries[end].layered || entries[end].once)) ++end;
    // A once entry is created at the first layer whose when holds (gemma4's rope_freqs: the
    // first full-attention layer); the later layers' are TENSOR_DUPLICATED.
    std::vector<bool> made(end - k, false);
    for (int64_t i = 0; i < n_layers; ++i) {
      env["i"] = i;  // a layer's own value may be derived from i (qwen3next's is_recr(i))
      hparams_of(m, keys, env, i);
      const std::string layer = std::to_string(i);
      relaxed = std::any_of(relax.begin(), relax.end(), [&](const Relax& r) {
        std::optional<int64_t> w = eval(r.when, env);
        return w && *w && !present(replaced(r.without, "{i}", layer));
      });
      for (size_t j = k; j < end; ++j)
        if (entries[j].layered) each(entries[j], layer);
        else if (!made[j - k]) made[j - k] = each(entries[j], "");
    }
    // after the loop, no layer: a later entry must not see the last one's values
    env.erase("i");
    for (const Hparam& h : table().hparams)
      if (h.per_layer()) env.erase(h.name);
    k = end;
  }
}

// The file's tensors by name: 8 bytes a tensor (a hash of a million names would take tens).
class ByName {
 public:
  explicit ByName(const Model& m) : m_(m), sorted_(m.tensors.sorted_by_name()) {}
  std::optional<size_t> find(std::string_view name) const {
    auto it = std::lower_bound(sorted_.begin(), sorted_.end(), name, [&](uint64_t i, std::string_view n) { return m_.tensors.name(i) < n; });
    if (it == sorted_.end() || m_.tensors.name(*it) != name) return std::nullopt;
    return *it;
  }
  bool has(std::string_view name) const { return find(name).has_value(); }

 private:
  const Model& m_;
  std::vector<uint64_t> sorted_;
};

const std::vector<Relax>& relax_of(const std::string& arch) {
  static const std::vector<Relax> none;
  const Arch* a = table().arch(arch);
  return a ? a->relax : none;
}

std::optional<std::vector<uint64_t>> shape_of(const Entry& e, const Env& env) {
  std::vector<uint64_t> want;
  for (const Expr& d : e.shape) {
    std::optional<int64_t> v = eval(d, env);
    if (!v || *v < 0) return std::nullopt;  // a hyperparameter missing or absurd: the hparam rules tell it
    want.push_back(static_cast<uint64_t>(*v));
  }
  return want;
}

}  // namespace

std::vector<std::string> tensor_table_architectures() {
  std::vector<std::string> out;
  for (const auto& [arch, entries] : table().archs) out.push_back(arch);
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::vector<std::string>> required_keys(const std::string& arch) {
  const Table& t = table();
  const Arch* a = t.arch(arch);
  if (!a) return std::nullopt;
  std::vector<std::string> out;
  for (const std::string& k : t.requires_all) out.push_back(replaced(k, "{arch}", arch));
  for (const std::string& k : a->requires_keys) out.push_back(replaced(k, "{arch}", arch));
  return out;
}

std::vector<ExampleKey> example_keys(const std::string& arch) {
  const Table& t = table();
  const Arch* a = t.arch(arch);
  if (!a) return {};
  std::vector<ExampleKey> out;
  for (ExampleKey k : t.example) {
    k.key = replaced(k.key, "{arch}", arch);
    out.push_back(std::move(k));
  }
  for (ExampleKey k : a->example) {
      k.key = replaced(k.key, "{arch}", arch);
      auto same = std::find_if(out.begin(), out.end(), [&](const ExampleKey& o) { return o.key == k.key; });
      if (same != out.end()) *same = std::move(k);
      else out.push_back(std::move(k));
    }
  return out;
}

namespace {

// The tensors the loader creates for `m`; with `probe`, as it probes this file's tensors
// (optional_layers:), else the whole model's (the example of a model with MTP blocks, made
// from keys alone, would otherwise have none of them).
std::optional<std::vector<LoaderTensor>> loader_walk(const Model& m, const ByName& by_name, bool probe) {
  const std::string arch = architecture(m);
  const Arch* found = table().arch(arch);
  if (!found) return std::nullopt;
  const std::vector<const Value*> keys = hparam_keys(m, arch);
  Env env;
  hparams_of(m, keys, env);
  auto present = [&](const std::string& name) { return by_name.has(name); };
  std::vector<LoaderTensor> out;
  walk(m, keys, found->tensors, probe ? relax_of(arch) : std::vector<Relax>{}, env, static_cast<int64_t>(kMaxExampleLayers), present,
       [&](const Entry& e, const std::string& name, bool optional) {
    std::optional<std::vector<uint64_t>> dims = shape_of(e, env);
    out.push_back({name, dims.value_or(std::vector<uint64_t>{}), optional, dims.has_value(), !e.without.empty(), e.in_example});
  });
  return out;
}

}  // namespace

std::optional<std::vector<LoaderTensor>> loader_tensors(const Model& m) { return loader_walk(m, ByName(m), false); }

std::optional<LoaderSummary> loader_summary(const Model& m) {
  const ByName by_name(m);
  std::optional<std::vector<LoaderTensor>> all = loader_walk(m, by_name, true);
  if (!all) return std::nullopt;
  LoaderSummary out;
  for (const LoaderTensor& t : *all) {
    const bool here = by_name.has(t.name);
    out.expected += !t.optional || here;
    if (here || !t.optional) continue;
    if (t.name == "output.weight") out.tied_output = true;
    // blk.7.attn_q.bias -> blk.N.attn_q.bias: one kind for every layer
    std::string kind = t.name;
    if (kind.starts_with("blk."))
      if (size_t dot = kind.find('.', 4); dot != std::string::npos) kind.replace(4, dot - 4, "N");
    if (std::find(out.left_out.begin(), out.left_out.end(), kind) == out.left_out.end()) out.left_out.push_back(std::move(kind));
  }
  return out;
}

std::vector<TensorFinding> tensor_rules(const Model& m) {
  std::vector<TensorFinding> out;
  auto tell = [&](Finding f, std::optional<size_t> tensor = std::nullopt) { out.push_back({std::move(f), tensor}); };
  const std::string arch = architecture(m);
  if (arch.empty()) return out;
  const Table& t = table();
  const Arch* found = t.arch(arch);
  if (!found) {
    if (!t.known.count(arch)) return out;  // llama.cpp knows no such architecture: not the tensors' business
    tell(Finding{Code::tensors_unchecked, Severity::info, std::nullopt,
                   "tensors not checked for architecture " + arch + ": ggufkit has no table of what llama.cpp's loader takes for it",
                   Place{}, {}, ""});
    return out;
  }
  const ByName by_name(m);
  const std::vector<const Value*> keys = hparam_keys(m, arch);
  Env env;
  hparams_of(m, keys, env);
  const bool layered = env.count("n_layer");
  std::vector<bool> taken(m.tensors.size(), false);
  size_t expected = 0;  // the tensors the loader creates from this file

  // Missing and unexpected tensors are told up to kMaxMissing each, then counted: a file of a
  // million stray tensors makes 33 findings, not a million. The layers walked are those the
  // file can hold (each takes a tensor at least): past them, every tensor is missing.
  size_t missing = 0;
  constexpr size_t kMaxMissing = 32;
  auto present = [&](const std::string& name) { return by_name.has(name); };
  walk(m, keys, found->tensors, relax_of(arch), env, static_cast<int64_t>(m.tensors.size()) + 1, present,
       [&](const Entry& e, const std::string& name, bool optional) {
    const std::optional<size_t> at = by_name.find(name);
    if (!at) {
      if (!optional && ++missing <= kMaxMissing)
        tell(Finding{Code::tensor_missing, Severity::error, std::nullopt,
                     name + ": llama.cpp's " + arch + " loader asks for it and the file has no tensor of that name", Place::tensor(name),
                     {}, "the file lacks weights: re-convert the model"});
      return;
    }
    ++expected;
    taken[*at] = true;
    const std::optional<std::vector<uint64_t>> want = shape_of(e, env);
    if (!want) return;
    const Tensor tensor = m.tensors[*at];
    if (trimmed(tensor.dims) == trimmed(*want)) return;
    std::vector<std::string> used;
    for (const Expr& d : e.shape) names_in(d, used);
    std::string why;
    for (const std::string& u : used) why += (why.empty() ? "" : ", ") + explained(u, env);
    tell(Finding{Code::tensor_shape, Severity::error, std::nullopt,
                 name + " is " + dims_text(tensor.dims) + "; llama.cpp expects " + dims_text(*want) + " (" + why + ")",
                 Place::tensor(name), {}, ""},
         *at);
  });
  if (missing > kMaxMissing)
    tell(Finding{Code::tensor_missing, Severity::error, std::nullopt,
                   std::to_string(missing - kMaxMissing) + " more tensors llama.cpp's " + arch + " loader asks for are not in the file",
                   Place::tensor("..."), {}, "the file lacks weights: re-convert the model"});
  if (!layered) return out;  // no block count: the hparam rules tell it, the layers are not judged
  size_t unexpected = 0;
  for (size_t i = 0; i < m.tensors.size(); ++i)
    if (!taken[i] && ++unexpected <= kMaxMissing) {
      const std::string name(m.tensors.name(i));
      tell(Finding{Code::tensor_unexpected, Severity::error, std::nullopt,
                     name + ": llama.cpp's " + arch + " loader takes no tensor of this name, so its count check fails (" +
                         std::to_string(m.tensors.size()) + " tensors in the file, " + std::to_string(expected) + " taken)",
                     Place::tensor(name), {}, ""}, i);
    }
  if (unexpected > kMaxMissing)
    tell(Finding{Code::tensor_unexpected, Severity::error, std::nullopt,
                   std::to_string(unexpected - kMaxMissing) + " more tensors llama.cpp's " + arch + " loader does not take",
                   Place::tensor("..."), {}, ""});
  return out;
}

}  // namespace ggufkit
