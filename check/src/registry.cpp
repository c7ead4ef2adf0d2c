#include "ggufkit/registry.h"

#include <algorithm>
#include <cmath>

#include "ggufkit/yaml_values.h"

namespace ggufkit {

extern const std::string_view kKeysYaml;  // schemas/keys.yaml, embedded by cmake/embed.cmake

namespace {
// Whether `key` matches `pattern`, where {arch} (at the start) is the architecture, {id}
// a number as gguf-py writes an index (0, 1, ..., no leading zero) and {name} (at the end)
// any non-empty rest.
bool matches(std::string_view pattern, std::string_view key, std::string_view arch) {
  constexpr std::string_view kArch = "{arch}", kId = "{id}", kName = "{name}";
  if (pattern.substr(0, kArch.size()) == kArch) {
    if (arch.empty() || key.substr(0, arch.size()) != arch) return false;
    pattern.remove_prefix(kArch.size());
    key.remove_prefix(arch.size());
  }
  for (;;) {
    size_t at = pattern.find('{');
    if (at == std::string_view::npos) return pattern == key;
    if (key.substr(0, at) != pattern.substr(0, at)) return false;
    pattern.remove_prefix(at);
    key.remove_prefix(at);
    if (pattern == kName) return !key.empty();
    if (pattern.substr(0, kId.size()) != kId) return false;
    size_t digits = 0;
    while (digits < key.size() && key[digits] >= '0' && key[digits] <= '9') ++digits;
    if (digits == 0 || (digits > 1 && key[0] == '0')) return false;
    pattern.remove_prefix(kId.size());
    key.remove_prefix(digits);
  }
}

// The element types llama.cpp's get_arr takes for a per-layer key of type t.
std::vector<ValueType> layer_items(ValueType t) {
  if (t == ValueType::f32) return {ValueType::f32};
  return {ValueType::u32, ValueType::i32, ValueType::boolean};
}

std::string either(const std::vector<ValueType>& ts) {  // "u32, i32 or bool"
  std::string s;
  for (size_t i = 0; i < ts.size(); ++i) s += (i == 0 ? "" : i + 1 == ts.size() ? " or " : ", ") + std::string(value_type_name(ts[i]));
  return s;
}
}  // namespace

std::string key_type_text(ValueType t, ValueType elem) {
  return t == ValueType::array ? std::string("array of ") + value_type_name(elem) : value_type_name(t);
}

bool KeySpec::accepts(ValueType t, ValueType elem) const {
  if (type == ValueType::array)
    return t == ValueType::array && (elem == items || std::find(also.begin(), also.end(), elem) != also.end());
  if (t == type) return true;
  if (!per_layer || t != ValueType::array) return false;
  const std::vector<ValueType> ok = layer_items(type);
  return std::find(ok.begin(), ok.end(), elem) != ok.end();
}

std::string KeySpec::wanted() const {
  if (type == ValueType::array) {
    std::vector<ValueType> all = {items};
    all.insert(all.end(), also.begin(), also.end());
    return "array of " + either(all);
  }
  if (per_layer) return std::string(value_type_name(type)) + ", or an array of " + either(layer_items(type)) + " (one per block)";
  return value_type_name(type);
}

const Registry& Registry::builtin() {
  static const Registry r = parse(std::string(kKeysYaml), "schemas/keys.yaml");
  return r;
}

Registry Registry::parse(const std::string& text, const std::string& name) {
  YamlNode root = load_yaml(text, name);
  YamlReader y(name, ".");
  y.fields(root, "registry", {"limits", "keys"});
  Registry r;
  if (const YamlNode& limits = root["limits"]; limits) {
    y.fields(limits, "limits", {"template_bytes"});
    if (limits["template_bytes"]) r.template_bytes_ = y.unsigned_of(limits["template_bytes"], "limits", 8);
  }
  const YamlNode& keys = root["keys"];
  if (!keys.IsMap()) y.fail(keys, "keys", "expected a mapping of key: {type: ...}");
  auto range_of = [&](const YamlNode& n, const std::string& entry) {  // [min, max]
    if (!n.IsSequence() || n.size() != 2) y.fail(n, entry, "expected [min, max]");
    KeyRange k{y.number(n[0], entry), y.number(n[1], entry)};
    if (std::isnan(k.min) || std::isnan(k.max) || k.min > k.max) y.fail(n, entry, "expected [min, max] with min <= max");
    return k;
  };
  for (size_t i = 0; i + 1 < keys.items.size(); i += 2) {
    KeySpec spec;
    spec.pattern = y.scalar(keys.items[i], "keys");
    const YamlNode& v = keys.items[i + 1];
    const std::string& p = spec.pattern;
    y.fields(v, p, {"type", "items", "check", "read", "also", "per_layer", "range", "expect", "positive", "values"});
    spec.type = y.value_type(v["type"], p);
    if (v["items"]) spec.items = y.value_type(v["items"], p);
    if (v["check"]) {
      const std::string check = y.scalar(v["check"], p);
      const std::optional<KeyCheck> k = key_check_named(check);
      if (!k) y.fail(v["check"], p, "unknown check '" + check + "'");
      spec.check = *k;
    }
    if (v["read"]) {
      const std::string read = y.scalar(v["read"], p);
      if (read == "model") spec.read = KeyRead::model;
      else if (read == "vocab") spec.read = KeyRead::vocab;
      else if (read == "elsewhere") spec.read = KeyRead::elsewhere;
      else y.fail(v["read"], p, "unknown read '" + read + "' (model, vocab or elsewhere)");
    }
    if (const YamlNode& also = v["also"]; also) {
      if (!also.IsSequence() || spec.type != ValueType::array) y.fail(also, p, "also: is a list of element types, for an array");
      for (const YamlNode& t : also) spec.also.push_back(y.value_type(t, p));
    }
    if (v["per_layer"]) spec.per_layer = y.boolean(v["per_layer"], p);
    if (spec.per_layer && spec.type != ValueType::u32 && spec.type != ValueType::i32 && spec.type != ValueType::f32)
      y.fail(v["per_layer"], p, "per_layer: is for a u32, i32 or f32 key");
    if (v["range"]) spec.range = range_of(v["range"], p);
    if (v["expect"]) spec.expect = range_of(v["expect"], p);
    if (v["positive"]) spec.positive = y.boolean(v["positive"], p);
    if (const YamlNode& values = v["values"]; values) {
      if (!values.IsSequence() || spec.type != ValueType::string) y.fail(values, p, "values: is a list of strings, for a string key");
      for (const YamlNode& s : values) spec.values.push_back(y.scalar(s, p));
    }
    const size_t at = r.specs_.size();
    constexpr std::string_view kArch = "{arch}";
    if (p.find("{name}") != std::string::npos || p.find("{id}") != std::string::npos) r.named_.push_back(at);
    else if (p.starts_with(kArch)) r.after_arch_.emplace(p.substr(kArch.size()), at);  // the first of a pattern given twice
    else r.exact_.emplace(p, at);
    r.specs_.push_back(std::move(spec));
  }
  return r;
}

// The first spec in the registry's order whose pattern matches.
const KeySpec* Registry::find(std::string_view key, std::string_view arch) const {
  size_t best = specs_.size();
  if (auto it = exact_.find(std::string(key)); it != exact_.end()) best = it->second;
  if (!arch.empty() && key.starts_with(arch))
    if (auto it = after_arch_.find(std::string(key.substr(arch.size()))); it != after_arch_.end()) best = std::min(best, it->second);
  for (size_t i : named_)
    if (i < best && matches(specs_[i].pattern, key, arch)) best = i;
  return best < specs_.size() ? &specs_[best] : nullptr;
}

}  // namespace ggufkit
