#include "ggufkit/registry.h"

#include "ggufkit/yaml_values.h"

namespace ggufkit {

extern const std::string_view kKeysYaml;  // schemas/keys.yaml, embedded by cmake/embed.cmake

namespace {
// Whether `key` matches `pattern`, where {arch} is the architecture and {name} is any
// non-empty rest.
bool matches(std::string_view pattern, std::string_view key, std::string_view arch) {
  constexpr std::string_view kArch = "{arch}", kName = "{name}";
  if (pattern.substr(0, kArch.size()) == kArch) {
    if (arch.empty() || key.substr(0, arch.size()) != arch) return false;
    pattern.remove_prefix(kArch.size());
    key.remove_prefix(arch.size());
  }
  size_t at = pattern.find(kName);
  if (at == std::string_view::npos) return pattern == key;
  return key.size() > at && key.substr(0, at) == pattern.substr(0, at) && pattern.size() == at + kName.size();
}
}  // namespace

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
  for (size_t i = 0; i + 1 < keys.items.size(); i += 2) {
    KeySpec spec;
    spec.pattern = y.scalar(keys.items[i], "keys");
    const YamlNode& v = keys.items[i + 1];
    y.fields(v, spec.pattern, {"type", "items", "check"});
    spec.type = y.value_type(v["type"], spec.pattern);
    if (v["items"]) spec.items = y.value_type(v["items"], spec.pattern);
    if (v["check"]) {
      const std::string check = y.scalar(v["check"], spec.pattern);
      const std::optional<KeyCheck> k = key_check_named(check);
      if (!k) y.fail(v["check"], spec.pattern, "unknown check '" + check + "'");
      spec.check = *k;
    }
    r.specs_.push_back(std::move(spec));
  }
  return r;
}

const KeySpec* Registry::find(std::string_view key, std::string_view arch) const {
  for (const KeySpec& s : specs_)
    if (matches(s.pattern, key, arch)) return &s;
  return nullptr;
}

}  // namespace ggufkit
