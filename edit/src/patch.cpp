#include "ggufkit/patch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <climits>
#include <cctype>
#include <cerrno>
#include <deque>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>

#include "ggufkit/check.h"
#include "ggufkit/error.h"
#include "ggufkit/source.h"
#include "ggufkit/inspect.h"
#include "ggufkit/text.h"
#include "ggufkit/yaml_values.h"
#include "hf.h"

namespace ggufkit {

namespace {

YamlNode scalar_node(const std::string& text) {
  YamlNode n;
  n.kind = YamlNode::scalar;
  n.text = text;
  return n;
}

}  // namespace

namespace {
// Where add_*'s values came from, as errors name it, and the phrase that says it.
std::string origin(const Patch& p) { return p.caller == Patch::Caller::python ? "arguments" : "command line"; }
std::string given_there(const Patch& p) { return p.caller == Patch::Caller::python ? "in the arguments" : "on the command line"; }

[[noreturn]] void refuse_twice(const Patch& p, const Patch::Set& s, const std::string& key) {
  throw Error(Error::Kind::format, origin(p), std::nullopt, "set " + key,
              key + " is set twice: at " + s.from + " and " + given_there(p) + "; give it once");
}
void refuse_twice(const Patch& p, const std::string& key) {
  for (const Patch::Set& s : p.set)
    if (s.key == key) refuse_twice(p, s, key);
}

// The text of --set VALUE read as a patch reads it: "My Model" loses its quotes, [1, 2] is
// a list, {type: f32, value: 1} names a type. An empty VALUE is the empty string.
YamlNode yaml_value(const Patch& p, const std::string& key, const std::string& text) {
  if (text.empty()) return scalar_node("");
  YamlNode n = load_yaml(text, p.caller == Patch::Caller::python ? "arguments (set['" + key + "'])" : "command line (" + key + ")");
  if (n.IsNull()) return scalar_node(text);  // "#..." or "~": the text itself
  return n;
}
}  // namespace

void Patch::add_set(const std::string& key, const std::string& text, const std::string& advice) {
  refuse_twice(*this, key);
  try {
    set.push_back({key, yaml_value(*this, key, text), origin(*this), std::nullopt, std::nullopt, advice});
  } catch (const Error& e) {
    throw e.with_note(advice);
  }
}

void Patch::add_set_text(const std::string& key, const std::string& text) {
  refuse_twice(*this, key);
  set.push_back({key, scalar_node(text), origin(*this), std::nullopt, text});
}

void Patch::add_set_typed(const std::string& key, const std::string& type, const std::string& text) {
  refuse_twice(*this, key);
  YamlNode m;
  m.kind = YamlNode::map;
  if (type.rfind("array[", 0) == 0 && type.back() == ']')
    m.items = {scalar_node("type"), scalar_node("array"), scalar_node("items"), scalar_node(type.substr(6, type.size() - 7))};
  else
    m.items = {scalar_node("type"), scalar_node(type)};
  m.items.push_back(scalar_node("value"));
  if (type == "string") {  // the text itself: a string needs no YAML
    m.items.push_back(scalar_node(text));
    m.items.back().quoted = true;
  } else {
    m.items.push_back(yaml_value(*this, key, text));
  }
  set.push_back({key, std::move(m), origin(*this)});
}

void Patch::add_set_file(const std::string& key, const std::string& path) {
  refuse_twice(*this, key);
  YamlNode m;
  m.kind = YamlNode::map;
  // The caller's path, from the current folder: file: values of a patch are read from the
  // patch's folder, which this is not.
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path abs = fs::path(path).is_relative() ? fs::absolute(path, ec) : fs::path(path);
  m.items = {scalar_node("file"), scalar_node(ec ? path : abs.string())};
  set.push_back({key, std::move(m), origin(*this)});
}

void Patch::add_special(const std::string& name, const std::string& value, bool by_id) {
  for (const Special& s : special)
    if (s.name == name)
      throw Error(Error::Kind::format, origin(*this), std::nullopt, "special token " + name,
                  name + " is given twice: at " + s.from + " and " + given_there(*this) + "; give it once");
  special.push_back({name, scalar_node(value), by_id, origin(*this)});
}

std::optional<int32_t> token_type_of(const std::string& name) {
  for (int32_t t = 1; t <= 6; ++t)  // 0 (undefined) is no type to set
    if (token_type_name(t) == name) return t;
  return std::nullopt;
}

namespace {
const char* kTokenTypeNames = "normal, unknown, control, user_defined, unused, byte";
}  // namespace

void Patch::add_token_type(const std::string& text, const std::string& type) {
  const std::string entry = "token type \"" + text + "\"";
  for (const TokenType& t : token_types)
    if (t.text == text)
      throw Error(Error::Kind::format, origin(*this), std::nullopt, entry,
                  "\"" + text + "\" is retyped twice: at " + t.from + " and " + given_there(*this) + "; give it once");
  auto t = token_type_of(type);
  if (!t)
    throw Error(Error::Kind::format, origin(*this), std::nullopt, entry,
                "'" + type + "' is not a token type; the types are " + kTokenTypeNames);
  token_types.push_back({text, *t, origin(*this)});
}

namespace {
// A file of a Hugging Face folder, read only when it is a regular file that resolves inside
// the folder: a cloned repository may carry a link to /etc/shadow, or a named pipe that
// would block a read forever. A link to a file inside the folder is fine, and so is one
// into the blobs/ of a hub cache (DIR is models--X/snapshots/REV, its files link to
// models--X/blobs/). Opened without blocking and checked by its descriptor. `named`: the
// file is the one the command line names, not one found in the folder (a usage error then).
std::string read_hf_file(const std::string& file, const std::string& dir, bool named) {
  namespace fs = std::filesystem;
  auto refuse = [&](const std::string& why) {
    throw Error(named ? Error::Kind::usage : Error::Kind::format, file, std::nullopt, "`from_hf`",
                why + "; only regular files inside the folder are read");
  };
  int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 && (errno == ENOENT || errno == ELOOP)) refuse("is a link that leads nowhere");  // it is there as a name
  if (fd < 0 && errno == ENXIO) refuse("is a socket");
  if (fd < 0) throw_io(file, "cannot open for reading");
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_io(file, "cannot stat");
  if (!S_ISREG(st.st_mode))
    refuse(S_ISDIR(st.st_mode)    ? "is a folder"
           : S_ISFIFO(st.st_mode) ? "is a named pipe"
           : S_ISSOCK(st.st_mode) ? "is a socket"
                                  : "is a device");
  std::error_code ec;
  const fs::path real = fs::read_symlink("/proc/self/fd/" + std::to_string(fd), ec);  // what was opened, links followed
  const fs::path root = fs::canonical(dir, ec);
  if (real.empty() || root.empty()) throw_io(file, "cannot resolve the path");
  auto inside = [&](const fs::path& folder) {
    auto [f, r] = std::mismatch(folder.begin(), folder.end(), real.begin(), real.end());
    return f == folder.end() && r != real.end();
  };
  const fs::path repo = root.parent_path().parent_path();
  const bool hub = root.parent_path().filename() == "snapshots" && repo.filename().string().rfind("models--", 0) == 0;
  if (!inside(root) && !(hub && inside(repo / "blobs"))) refuse("leads to " + real.string() + ", outside " + root.string());
  if (static_cast<uint64_t>(st.st_size) > YamlLimits{}.max_bytes)
    throw Error(Error::Kind::format, file, std::nullopt, "`from_hf`",
                "is " + std::to_string(st.st_size) + " bytes, over the cap of " + std::to_string(YamlLimits{}.max_bytes));
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::string text(static_cast<size_t>(st.st_size), '\0');
  pread_all(fd, file, text.data(), text.size(), 0);
  return text;
}
}  // namespace

void Patch::add_from_hf(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool folder = fs::is_directory(path, ec);
  // A file is taken only as the folder's tokenizer_config.json: a model, a card or anything
  // else named here is no folder, and is not read as JSON to say so.
  if (struct stat st {}; !folder && ::lstat(path.c_str(), &st) == 0 && fs::path(path).filename() != "tokenizer_config.json")
    throw Error(Error::Kind::usage, path, std::nullopt, "`from_hf`",
                "is not a folder: give the Hugging Face model folder (or its tokenizer_config.json)");
  const std::string config = folder ? (fs::path(path) / "tokenizer_config.json").string() : path;
  const std::string parent = fs::path(path).parent_path().string();
  const std::string dir = folder ? path : parent.empty() ? "." : parent;
  const std::string jinja = (fs::path(dir) / "chat_template.jinja").string();
  const std::string readme = (fs::path(dir) / "README.md").string();
  const std::string generation = (fs::path(dir) / "generation_config.json").string();
  // There, as a name: a link that leads nowhere is refused when read, not taken for absent.
  auto there = [](const std::string& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0;
  };
  const bool has_config = there(config), has_jinja = there(jinja), has_readme = there(readme), has_generation = there(generation);
  if (!has_config && !has_jinja && !has_readme && !has_generation)
    throw Error(Error::Kind::usage, path, std::nullopt, "`from_hf`",
                "none of tokenizer_config.json, chat_template.jinja, README.md and generation_config.json is there");
  YamlNode root;
  if (has_config) {
    root = load_yaml(read_hf_file(config, dir, !folder), config);
    if (!root.IsMap()) throw Error(Error::Kind::format, config, std::nullopt, "", "expected a JSON object");
  }
  auto where = [&](const YamlNode& n) { return yaml_where(config, n.line, n.column); };
  auto bad = [&](const YamlNode& n, const std::string& what) {
    return Error(Error::Kind::format, where(n), std::nullopt, "`from_hf`", what);
  };
  auto set_text = [&](const std::string& key, const YamlNode& n) {
    refuse_twice(*this, key);
    set.push_back({key, scalar_node(n.text), where(n)});
  };
  if (has_jinja) {
    refuse_twice(*this, "tokenizer.chat_template");
    set.push_back({"tokenizer.chat_template", scalar_node(read_hf_file(jinja, dir, false)), jinja});
  } else if (const YamlNode& t = root["chat_template"]; t && !t.IsNull()) {
    if (t.IsScalar() && t.quoted) {
      set_text("tokenizer.chat_template", t);
    } else if (t.IsSequence()) {
      for (const YamlNode& item : t) {
        const YamlNode &name = item["name"], &text = item["template"];
        if (!item.IsMap() || !name.IsScalar() || !text.IsScalar() || !name.quoted || !text.quoted)
          throw bad(item, "chat_template: expected {\"name\": ..., \"template\": ...} in the list");
        set_text(name.text == "default" ? "tokenizer.chat_template" : "tokenizer.chat_template." + name.text, text);
      }
    } else {
      throw bad(t, "chat_template: expected a string or a list of {name, template}");
    }
  }
  for (const auto& [name, field] : {std::pair{"bos", "bos_token"}, {"eos", "eos_token"}, {"padding", "pad_token"},
                                    {"unknown", "unk_token"}}) {
    const YamlNode& v = root[field];
    if (!v || v.IsNull()) continue;
    const YamlNode& text = v.IsMap() ? v["content"] : v;
    // JSON's strings are quoted: "eos_token": 5 is a number, no token's text.
    if (!text.IsScalar() || !text.quoted) throw bad(v, std::string(field) + ": expected a string or {\"content\": ...}");
    add_special(name, text.text, false);
    special.back().value = text;
    special.back().from = where(text);
  }
  for (const char* flag : {"add_bos_token", "add_eos_token"}) {
    const YamlNode& v = root[flag];
    if (!v || v.IsNull()) continue;
    if (!v.IsScalar() || v.quoted || (v.text != "true" && v.text != "false"))  // "false" is a string, which Python takes as true
      throw bad(v, std::string(flag) + ": expected true or false");
    refuse_twice(*this, std::string("tokenizer.ggml.") + flag);
    set.push_back({std::string("tokenizer.ggml.") + flag, v, where(v)});
  }
  // What the converter takes beside the tokenizer, in the order it writes it: the sampling
  // defaults, then the model card's keys.
  std::vector<hf::Entry> taken;
  if (has_generation) taken = hf::generation_config(read_hf_file(generation, dir, false), generation);
  if (has_readme) {
    hf::Taken card = hf::model_card(read_hf_file(readme, dir, false), readme);
    taken.insert(taken.end(), card.sets.begin(), card.sets.end());
    replaced_groups = card.groups;
  }
  // A card gives thousands of keys (base_model lists): the keys set so far, indexed once.
  std::unordered_map<std::string, size_t> given;
  for (size_t i = 0; i < set.size(); ++i) given.emplace(set[i].key, i);
  for (hf::Entry& e : taken) {
    if (auto it = given.find(e.key); it != given.end()) refuse_twice(*this, set[it->second], e.key);
    given.emplace(e.key, set.size());
    set.push_back({e.key, std::move(e.value), e.from, e.version_of});
  }
}

void Patch::add_remove(const std::string& key) { remove.push_back({key, "", {}}); }
void Patch::add_rename(const std::string& from, const std::string& to) { rename.push_back({from, to, {}}); }

namespace {
// N, or "default" (0): the alignment readers use when the file declares none.
uint64_t alignment_of(YamlReader& y, const YamlNode& n) {
  if (n.IsScalar() && n.Scalar() == "default") return 0;
  uint64_t a = y.unsigned_of(n, "alignment", 4);
  if (a == 0) y.fail(n, "alignment", "alignment 0 is not a power of two (say 'default' for the default, 32)");
  return a;
}
}  // namespace

void Patch::set_alignment(const std::string& text) {
  if (alignment)
    throw Error(Error::Kind::format, origin(*this), std::nullopt, "alignment",
                "the alignment is given twice: " + (*alignment ? std::to_string(*alignment) : std::string("default")) +
                    " at " + alignment_from + " and " + text + " " + given_there(*this) + "; give it once");
  alignment_from = origin(*this);
  alignment_at = scalar_node(text);
  YamlReader y(name, base_dir);
  try {
    alignment = alignment_of(y, alignment_at);
  } catch (const Error& e) {  // an option's value not of its form: a usage error, as any option's
    throw Error(Error::Kind::usage, "", std::nullopt, "`alignment`", e.message);
  }
  if (*alignment != 0 && !is_power_of_two(*alignment))
    throw Error(Error::Kind::usage, "", std::nullopt, "`alignment`", "alignment " + text + " is not a power of two");
}

Patch parse_patch(const std::string& text, const std::string& name, const std::string& base_dir) {
  YamlNode root = load_yaml(text, name);
  YamlReader y(name, base_dir);
  if (!root.IsMap()) y.fail(root, "patch", "expected a mapping with set:, remove:, rename: or alignment:");
  y.fields(root, "patch", {"set", "remove", "rename", "alignment", "special_tokens", "token_types", "tensors"});
  Patch p;
  p.name = name;
  p.base_dir = base_dir;
  if (const YamlNode& s = root["set"]; s) {
    if (!s.IsMap()) y.fail(s, "set", "expected a mapping of KEY: VALUE");
    y.keys_once(s, "set");
    for (size_t i = 0; i + 1 < s.items.size(); i += 2)
      p.set.push_back({y.scalar(s.items[i], "set"), s.items[i + 1], yaml_where(name, s.items[i].line, s.items[i].column)});
  }
  if (const YamlNode& r = root["remove"]; r) {
    if (!r.IsSequence()) y.fail(r, "remove", "expected a list of keys");
    for (const YamlNode& k : r) p.remove.push_back({y.scalar(k, "remove"), "", k});
  }
  if (const YamlNode& r = root["rename"]; r) {
    if (!r.IsMap()) y.fail(r, "rename", "expected a mapping of OLD: NEW");
    y.keys_once(r, "rename");
    for (size_t i = 0; i + 1 < r.items.size(); i += 2)
      p.rename.push_back({y.scalar(r.items[i], "rename"), y.scalar(r.items[i + 1], "rename"), r.items[i]});
  }
  if (const YamlNode& sp = root["special_tokens"]; sp) {
    if (!sp.IsMap()) y.fail(sp, "special_tokens", "expected a mapping of NAME: TEXT or NAME: {id: ID}");
    y.keys_once(sp, "special_tokens");
    for (size_t i = 0; i + 1 < sp.items.size(); i += 2) {
      const YamlNode& v = sp.items[i + 1];
      bool by_id = v.IsMap();
      if (by_id) y.fields(v, "special_tokens", {"id"});
      p.special.push_back({y.scalar(sp.items[i], "special_tokens"), by_id ? v["id"] : v, by_id,
                           yaml_where(name, sp.items[i].line, sp.items[i].column)});
    }
  }
  if (const YamlNode& tt = root["token_types"]; tt) {
    if (!tt.IsMap()) y.fail(tt, "token_types", "expected a mapping of TEXT: TYPE");
    y.keys_once(tt, "token_types");  // a text twice is refused, as a key twice is
    for (size_t i = 0; i + 1 < tt.items.size(); i += 2) {
      const std::string text = y.scalar(tt.items[i], "token_types");
      const std::string entry = "token type \"" + text + "\"";
      const YamlNode& v = tt.items[i + 1];
      auto t = token_type_of(y.scalar(v, entry));
      if (!t) y.fail(v, entry, "'" + v.Scalar() + "' is not a token type; the types are " + kTokenTypeNames);
      p.token_types.push_back({text, *t, yaml_where(name, tt.items[i].line, tt.items[i].column)});
    }
  }
  if (const YamlNode& t = root["tensors"]; t) {  // tensor surgery (surgery.h)
    if (!t.IsMap()) y.fail(t, "tensors", "expected a mapping of keep:, remove:, rename:, keep_layers:, ... or graft:");
    y.fields(t, "tensors", {"keep", "remove", "rename", "keep_layers", "remove_layers", "keep_experts", "remove_experts", "graft"});
    p.tensors.from = yaml_where(name, t.line, t.column);
    auto globs = [&](const char* field, std::vector<std::string>& out) {
      const YamlNode& g = t[field];
      if (!g) return;
      if (g.IsScalar()) out.push_back(y.scalar(g, field));
      else if (!g.IsSequence()) y.fail(g, field, "expected a glob or a list of globs");
      else for (const YamlNode& k : g) out.push_back(y.scalar(k, field));
    };
    globs("keep", p.tensors.keep);
    globs("remove", p.tensors.remove);
    if (const YamlNode& r = t["rename"]; r) {
      if (!r.IsMap()) y.fail(r, "rename", "expected a mapping of OLD: NEW (names, globs, or a regular expression: $1)");
      y.keys_once(r, "rename");
      for (size_t i = 0; i + 1 < r.items.size(); i += 2)
        p.tensors.rename.push_back({y.scalar(r.items[i], "rename"), y.scalar(r.items[i + 1], "rename")});
    }
    for (auto [field, out] : {std::pair{"keep_layers", &p.tensors.keep_layers}, {"remove_layers", &p.tensors.remove_layers},
                              {"keep_experts", &p.tensors.keep_experts}, {"remove_experts", &p.tensors.remove_experts}})
      if (const YamlNode& r = t[field]; r) *out = y.scalar(r, field);
    if (const YamlNode& g = t["graft"]; g) {
      if (!g.IsSequence()) y.fail(g, "graft", "expected a list of {from: FILE, tensors: GLOB}");
      for (const YamlNode& e : g) {
        if (!e.IsMap()) y.fail(e, "graft", "expected {from: FILE, tensors: GLOB}");
        y.fields(e, "graft", {"from", "tensors"});
        if (!e["from"]) y.fail(e, "graft", "from: names the donor file");
        std::string from = y.scalar(e["from"], "graft");
        if (!from.empty() && from[0] != '/') from = (std::filesystem::path(base_dir) / from).string();
        const std::string glob = e["tensors"] ? y.scalar(e["tensors"], "graft") : std::string();
        if (e["tensors"] && glob.empty()) y.fail(e["tensors"], "graft", "an empty glob; leave tensors: out to take every tensor");
        p.tensors.graft.push_back({from, glob});
      }
    }
  }
  if (const YamlNode& a = root["alignment"]; a) {
    p.alignment = alignment_of(y, a);
    p.alignment_at = a;
    p.alignment_from = yaml_where(name, a.line, a.column);
  }
  return p;
}

Patch read_patch(const std::string& path) {
  std::string base = std::filesystem::path(path).parent_path().string();
  return parse_patch(read_document(path), path, base.empty() ? "." : base);
}

namespace {

// A key as it can be shown: control bytes (a NUL would cut a message short) as \xNN.
std::string printable(const std::string& key) {
  std::string out;
  for (unsigned char c : key) {
    if (c >= 0x20 && c != 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

class Applier : YamlReader {
 public:
  Applier(Model& m, const Patch& p, const Registry& r, const Context& ctx) : YamlReader(p.name, p.base_dir), m_(m), p_(p), r_(r), ctx_(ctx) {
    raw_bools = p.allow_broken;
  }

  std::vector<Change> run() {
    uint32_t alignment_before = m_.alignment();
    for (const auto& rn : p_.rename) {
      KV* kv = find(rn.key);
      if (!kv) fail(rn.at, "rename " + rn.key, "there is no key " + rn.key + " to rename");
      if (find(rn.to)) fail(rn.at, "rename " + rn.key, "cannot rename onto " + rn.to + ", which is already there");
      if (rn.key == kAlignmentKey || rn.to == kAlignmentKey) fail(rn.at, "rename " + rn.key, "general.alignment is changed with alignment:, not rename");
      check_key(rn.to, rn.at, "rename " + printable(rn.key));
      kv->key = rn.to;
      erased();  // the old key may name a later pair now
      touched_.push_back(rn.to);
      fresh_.insert(rn.to);
      changes_.push_back({Change::rename, rn.key, rn.to, std::nullopt, std::nullopt});
    }
    // Every removal looked up in one index and made in one pass (one at a time, each was a
    // pass and a new index: 30,000 removals were 30,000 of each). A key named again removes
    // its next pair, as removing them one at a time did.
    std::vector<size_t> gone;
    std::map<std::string, size_t> last;  // a removed key: the index of its pair removed last
    for (const auto& rm : p_.remove) {
      std::optional<size_t> i;
      if (auto it = last.find(rm.key); it == last.end()) {
        i = index_of(rm.key);
      } else {
        for (size_t k = it->second + 1; k < m_.metadata.size() && !i; ++k)
          if (m_.metadata.key(k) == rm.key) i = k;
      }
      if (!i) fail(rm.at, "remove " + rm.key, "there is no key " + rm.key + " to remove");
      if (rm.key == kAlignmentKey && p_.alignment)
        fail(rm.at, "remove " + rm.key, "the patch also sets the alignment; say alignment: default to remove the key");
      changes_.push_back({rm.key == kAlignmentKey ? Change::alignment : Change::remove, rm.key, "", m_.metadata[*i].value, std::nullopt});
      last[rm.key] = *i;
      gone.push_back(*i);
      touched_.push_back(rm.key);
    }
    if (!gone.empty()) {
      std::sort(gone.begin(), gone.end());
      m_.metadata.erase_sorted(gone);
      erased();
    }
    // --from-hf's versions, from the model's parameter count as the converter counts it.
    std::vector<const Patch::Set*> sets;
    std::optional<int64_t> params;
    for (const Patch::Set& s : p_.set) {
      if (!s.version_of) {
        sets.push_back(&s);
        continue;
      }
      if (!params) params = hf::parameter_count(m_);
      if (std::optional<std::string> v = hf::id_version(*s.version_of, *params)) {
        Patch::Set found = s;
        found.value = scalar_node(*v);
        found.value.quoted = true;
        found.version_of.reset();
        derived_.push_back(std::move(found));
        sets.push_back(&derived_.back());
      }
    }
    for (const std::string& group : p_.replaced_groups) drop_group(group, sets);
    for (const Patch::Set* s : sets) set(*s);
    for (const auto& sp : p_.special) special(sp);
    for (const auto& t : p_.token_types) retype(t);
    if (p_.alignment) align(*p_.alignment);
    check();
    // A new alignment re-lays the data section: gaps the source had are closed.
    if (m_.alignment() != alignment_before)
      m_.tensors.pack();
    return changes_;
  }

 private:
  // What --allow-broken lets through: refused without it, written with a note with it.
  void broken(const YamlNode& at, const std::string& entry, const std::string& msg) {
    if (!p_.allow_broken) fail(at, entry, msg);
    ctx_.note(yaml_where(name(), at.line, at.column), entry + ": written anyway (`allow_broken`): " + msg);
  }

  // GGUF keys have 1 to 65,535 bytes; a NUL cuts a key short in C readers. By convention
  // they are ASCII lower-case words with dots (general.name), which other keys are not refused for.
  void check_key(const std::string& key, const YamlNode& at, const std::string& entry) {
    auto shown = [&] { return printable(key.size() > 60 ? key.substr(0, 60) + "..." : key); };
    if (key.empty())  // not even --allow-broken: the strict reader that checks every write refuses it
      fail(at, entry, "an empty key; a GGUF key has 1 to 65,535 bytes (a fixture with one: a sketch's raw patches)");
    if (key.size() > 65535)
      return broken(at, entry, "the key is " + std::to_string(key.size()) + " bytes, over the format's 65,535");
    if (size_t z = key.find('\0'); z != std::string::npos)
      return broken(at, entry, "the key has a NUL byte at byte " + std::to_string(z) + "; C readers cut it there");
    bool plain = key.front() != '.' && key.back() != '.' && key.find("..") == std::string::npos &&
                 std::all_of(key.begin(), key.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.'; });
    if (!plain)
      ctx_.note(yaml_where(name(), at.line, at.column),
           entry + ": the key '" + shown() + "' is not ASCII lower-case words with dots (as general.name); readers look keys up exactly");
  }

  // The first pair with the key. A few lookups walk the keys (an index of a million-key
  // header would cost more memory than the header); past that, an index of the keys made
  // once and kept as pairs are added and renamed (a removal makes it again): a card's or
  // a patch's n keys cost n lookups, not n walks over the file's keys.
  std::optional<size_t> index_of(const std::string& key) const {
    if (!indexed_ && ++walks_ <= kWalks) {
      for (size_t i = 0; i < m_.metadata.size(); ++i)
        if (m_.metadata.key(i) == key) return i;
      return std::nullopt;
    }
    if (!indexed_) {
      index_.clear();
      for (size_t i = 0; i < m_.metadata.size(); ++i) index_.emplace(std::string(m_.metadata.key(i)), i);  // the first stays
      indexed_ = true;
    }
    auto it = index_.find(key);
    return it == index_.end() ? std::nullopt : std::optional<size_t>(it->second);
  }
  void appended() {
    if (indexed_) index_.emplace(std::string(m_.metadata.key(m_.metadata.size() - 1)), m_.metadata.size() - 1);
  }
  void erased() { indexed_ = false; }
  // The pair, kept by the metadata as a KV to be changed in place; nullptr when absent.
  KV* find(const std::string& key) {
    auto i = index_of(key);
    return i ? &m_.metadata.edit(*i) : nullptr;
  }

  std::string arch() {
    KV* a = find("general.architecture");
    return a && a->value.type == ValueType::string ? a->value.str : "";
  }

  // A group's keys in the file that none of `sets` sets, removed: what replaces the group
  // says all there is of it (a base model fewer, a version no longer there).
  void drop_group(const std::string& prefix, const std::vector<const Patch::Set*>& sets) {
    std::set<std::string> kept;
    for (const Patch::Set* s : sets) kept.insert(s->key);
    std::vector<size_t> dropped;
    for (size_t i = 0; i < m_.metadata.size(); ++i) {
      const std::string key(m_.metadata.key(i));
      if (key.rfind(prefix, 0) != 0 || kept.count(key)) continue;
      changes_.push_back({Change::remove, key, "", m_.metadata[i].value, std::nullopt});
      touched_.push_back(key);
      dropped.push_back(i);
    }
    if (!dropped.empty()) m_.metadata.erase_sorted(dropped), erased();
  }

  // A value with no place of its own (--from-hf's, a shortcut's): its errors name where it was given.
  void set(const Patch::Set& s) {
    if (s.text) return set_text(s);
    if (s.value.line >= 0 && s.advice.empty()) return set_value(s);
    try {
      set_value(s);
    } catch (const Error& e) {
      // (the advice on quoting is for a value YAML made a list or a map, not a bad number)
      const std::string advice = s.value.IsMap() || s.value.IsSequence() ? s.advice : "";
      if (e.file == name() && s.value.line < 0) throw Error(e.kind, s.from, e.offset, e.field, e.message + advice);
      if (advice.empty()) throw;
      throw e.with_note(advice);
    }
  }

  // --set KEY=VALUE: a string key takes the text as it is (but ggufkit's value forms, {file:},
  // {hex:}, {type:, value:}, read as a patch reads them); another key reads it as YAML, and
  // an error says so.
  void set_text(const Patch::Set& s) {
    Patch::Set given = s;
    given.text.reset();
    const std::string& t = *s.text;
    const KV* kv = find(s.key);
    const KeySpec* spec = kv ? nullptr : r_.find(s.key, arch());
    if (kv ? kv->value.type == ValueType::string : spec && spec->type == ValueType::string) {
      if (std::optional<YamlNode> form = value_form(t)) {
        given.value = std::move(*form);
        return set(given);
      }
      given.value.quoted = true;
      if (t.size() >= 2 && (t[0] == '"' || t[0] == '\'') && t.back() == t[0])
        ctx_.note(s.from, "set " + printable(s.key) + ": the value is stored as given, quotes and all (--set-yaml reads quotes as YAML's)");
      return set(given);
    }
    const std::string why = kv ? s.key + " is " + type_text(kv->value.type, kv->value.elem) + " in the file"
                               : spec ? "the key registry has " + s.key + " as " + spec->wanted() : s.key + " is a new key";
    try {
      given.value = yaml_value(p_, s.key, t);
      set(given);
    } catch (const Error& e) {
      // A new key's text form, unless the error names a key it may be a typo of.
      const bool offer_text = !kv && !spec && t.size() <= 200 && e.message.find("did you mean") == std::string::npos;
      throw e.with_note(" (" + why + ", so the value " + brief_value(Value::of_string(t)) + " was read as YAML" +
                        (offer_text ? "; as text: --set-typed " + shell_quoted(s.key + "=string:" + t) : "") + ")");
    }
  }

  // {file: P}, {hex: ...} or {type: ..., value: ...}: a map of only the fields a patch's
  // value takes; nullopt for any other text (a template's "{{ x }}" is no such map).
  std::optional<YamlNode> value_form(const std::string& text) const {
    if (text.empty() || text[0] != '{') return std::nullopt;
    YamlNode n;
    try {
      n = load_yaml(text, name());
    } catch (const Error&) {
      return std::nullopt;
    }
    if (!n.IsMap() || n.items.empty()) return std::nullopt;
    for (size_t i = 0; i < n.items.size(); i += 2)
      if (!n.items[i].IsScalar() || (n.items[i].text != "file" && n.items[i].text != "hex" && n.items[i].text != "type" &&
                                     n.items[i].text != "value" && n.items[i].text != "items"))
        return std::nullopt;
    return n;
  }

  void set_value(const Patch::Set& s) {
    std::string entry = "set " + printable(s.key);
    const YamlNode& n = s.value;
    if (s.key == kAlignmentKey) fail(n, entry, "set the alignment with alignment: N (it re-lays the data), not set:");
    // {type: T, items: T, value: V | file: P} names the type; anything else is just a value.
    std::optional<ValueType> type, items;
    const YamlNode* value = &n;
    YamlNode file_value;
    if (n.IsMap() && n["type"]) {
      fields(n, entry, {"type", "items", "value", "file"});
      if (n["value"] && n["file"]) fail(n["file"], entry, "give the value as one of value: or file:, not both");
      type = value_type(n["type"], entry);
      if (n["items"]) items = value_type(n["items"], entry);
      if (n["file"]) {
        if (*type != ValueType::string) fail(n["file"], entry, "file: gives a string; the type here is " + std::string(value_type_name(*type)));
        file_value.kind = YamlNode::map;
        file_value.items = {n.items[0], n["file"]};
        file_value.items[0].text = "file";
        value = &file_value;
      } else {
        value = &n["value"];
      }
    }
    KV* kv = find(s.key);
    const KeySpec* spec = r_.find(s.key, arch());
    if (kv) {
      const Value& old = kv->value;
      bool same = !type || (*type == old.type && (!items || *items == old.elem || old.type != ValueType::array));
      if (!same)
        fail(n, entry, std::string("would change the type from ") + type_text(old.type, old.elem) + " to " +
                           type_text(*type, items.value_or(ValueType::u8)) + "; remove the key and set it again to do that");
      Value v = convert(old.type, old.elem, *value, n, entry);
      changes_.push_back({Change::set, s.key, "", old, v});
      kv->value = std::move(v);
    } else {
      if (!type && !spec) {  // a key new to the file and the registry: typed as its value reads
        const std::string how = p_.caller == Patch::Caller::python
                                    ? "give its type: set={'" + s.key + "': {'type': 'f32', 'value': ...}}"
                                    : "give its type: --set-typed " + s.key + "=f32:VALUE on the command line, {type: f32, value: ...} in a patch";
        // (not one this patch adds: two new keys alike are no typo)
        if (std::string near = nearest_key(m_, s.key, [&](const std::string& k) { return fresh_.count(k) > 0; }); !near.empty())
          fail(n, entry, s.key + " is not in the file nor in the key registry (did you mean " + near + "?); to add it, " + how);
        auto inferred = infer_type(*value);
        if (!inferred) fail(n, entry, s.key + " is a new key whose type its value does not tell; " + how);
        type = inferred->first;
        if (*type == ValueType::array) items = inferred->second;
        ctx_.note(yaml_where(name(), n.line, n.column),
             entry + ": a new key, stored as " + type_text(*type, items.value_or(ValueType::u8)) +
                 " as its value reads (" + (p_.caller == Patch::Caller::python ? "set={'" + s.key + "': {'type': ..., 'value': ...}}" : std::string("--set-typed or {type: ...}")) +
                 " chooses another)");
      }
      check_key(s.key, n, entry);
      ValueType t = type.value_or(spec ? spec->type : ValueType::u8);
      ValueType e = items.value_or(spec ? spec->items : ValueType::u8);
      if (type && spec && !spec->accepts(t, e))  // the types llama.cpp reads it with (key_type)
        fail(n, entry, "the key registry has " + s.key + " as " + spec->wanted() + ", not " + type_text(t, e));
      if (t == ValueType::array && !items && !spec) fail(n, entry, "an array needs items: (its element type)");
      Value v = convert(t, e, *value, n, entry);
      changes_.push_back({Change::add, s.key, "", std::nullopt, v});
      fresh_.insert(s.key);
      m_.metadata.push_back({s.key, std::move(v)});
      appended();
    }
    check_value(*find(s.key), *value, n, entry);
    touched_.push_back(s.key);
    where_[s.key] = &n;
  }

  // Strings from a patch are UTF-8 (raw bytes come as {hex:}); a bool is 0 or 1: the rule
  // book's invalid_utf8 and bool_value, refused here where the patch gives the value.
  void check_value(const KV& kv, const YamlNode& given, const YamlNode& at, const std::string& entry) {
    const Value& v = kv.value;
    bool hex = given.IsMap() && given["hex"];
    if (v.type == ValueType::string && !hex && !rule::utf8_ok(v.str))
      broken(at, entry, "the string is not valid UTF-8; give raw bytes as {hex: \"...\"}");
    if (v.type == ValueType::boolean && !rule::bool_byte_ok(v.bits))
      broken(at, entry, "a bool is written as 0 or 1; " + std::to_string(v.bits) + " is what readers may take either way");
  }

  Value convert(ValueType t, ValueType elem, const YamlNode& value, const YamlNode& at, const std::string& entry) {
    if (!value) fail(at, entry, "no value given");
    if (t != ValueType::array) return YamlReader::value(t, value, value, entry);
    YamlNode holder;  // the element type comes from the key, not from the patch
    holder.kind = YamlNode::map;
    holder.items.resize(2);
    holder.items[0].kind = holder.items[1].kind = YamlNode::scalar;
    holder.items[0].text = "items";
    holder.items[1].text = value_type_name(elem);
    return YamlReader::value(t, value, holder, entry);
  }

  // A special token by its text or id becomes a set of its key to the id, checked against
  // the vocabulary: a text must be exactly one token; an id must be in the vocabulary.
  void special(const Patch::Special& sp) {
    const std::string entry = "special token " + sp.name;
    auto refuse = [&](const std::string& msg) { throw Error(Error::Kind::format, sp.from, std::nullopt, entry, msg); };
    const std::string key = special_token_key(sp.name);
    if (key.empty()) {
      std::string names;
      for (const std::string& n : special_token_names()) names += (names.empty() ? "" : ", ") + n;
      refuse("'" + sp.name + "' is not a special token llama.cpp reads; the names are " + names +
                                " (also sep, pad, unk)");
    }
    for (const Patch::Set& s : p_.set)
      if (s.key == key) refuse(key + " is also set by set: at " + s.from + "; give it once");
    const KV* tokens = find("tokenizer.ggml.tokens");
    if (!tokens || tokens->value.type != ValueType::array || tokens->value.elem != ValueType::string)
      refuse("the file has no vocabulary (tokenizer.ggml.tokens) to find the token in");
    const StringList& vocab = tokens->value.strs;
    uint64_t id = 0;
    if (sp.by_id) {
      id = unsigned_of(sp.value, entry, 4);
      if (!rule::token_id_ok(id, vocab.size()))
        refuse("token id " + std::to_string(id) + " is past the vocabulary of " + std::to_string(vocab.size()) +
                                  " tokens (ids 0 to " + std::to_string(vocab.size() - 1) + ")");
    } else {
      const std::string text = scalar(sp.value, entry);
      std::vector<uint64_t> hits;
      uint64_t i = 0;
      for (std::string_view t : vocab) {
        if (t == text) hits.push_back(i);
        ++i;
      }
      if (hits.empty()) refuse("no token is exactly \"" + printable(text) + "\"; nearest: " + nearest_tokens(vocab, text));
      if (hits.size() > 1) {
        std::string ids;
        for (uint64_t h : hits) ids += (ids.empty() ? "" : ", ") + std::to_string(h);
        refuse("\"" + printable(text) + "\" is more than one token (ids " + ids +
               "); give the one meant by id: " +
               (p_.caller == Patch::Caller::python ? "special_tokens={'" + sp.name + "': ID}"
                                                   : "--special-token-id " + sp.name + "=ID, or {id: ID} in a patch"));
      }
      id = hits[0];
    }
    const KV* types = find("tokenizer.ggml.token_type");
    if (types && types->value.type == ValueType::array && id < types->value.nums.size()) {
      int64_t type = Value::scalar(types->value.elem, types->value.nums[id]).as_i64();
      if (type != 3)
        ctx_.note(sp.from,
             entry + ": token " + std::to_string(id) + " \"" + printable(std::string(vocab[id])) + "\" is a " +
                 token_type_name(type) + " token, not a control token");
    }
    specials_.push_back({key, scalar_node(std::to_string(id)), sp.from});
    set(specials_.back());
  }

  // A token's type set in tokenizer.ggml.token_type, the token found by its exact text.
  // Where tokens share the text, the last: llama.cpp's token_to_id is filled in id order,
  // so the last id is the one its text lookup finds. The array is changed, never created
  // or resized, so the header keeps its size.
  void retype(const Patch::TokenType& t) {
    const std::string key = "tokenizer.ggml.token_type";
    const std::string entry = "token type \"" + printable(t.text) + "\"";
    auto refuse = [&](const std::string& msg) { throw Error(Error::Kind::format, t.from, std::nullopt, entry, msg); };
    const KV* tokens = find("tokenizer.ggml.tokens");
    if (!tokens || tokens->value.type != ValueType::array || tokens->value.elem != ValueType::string)
      refuse("the file has no vocabulary (tokenizer.ggml.tokens) to find the token in");
    const StringList& vocab = tokens->value.strs;
    KV* types = find(key);
    if (!types) refuse("the file has no " + key + " array to set the type in (it is not created: that would change the header's size)");
    Value& v = types->value;
    if (v.type != ValueType::array || v.elem != ValueType::i32)
      refuse(key + " is " + type_text(v.type, v.elem) + ", not an array of i32");
    if (v.nums.size() != vocab.size())
      refuse(key + " has " + std::to_string(v.nums.size()) + " items and tokenizer.ggml.tokens " + std::to_string(vocab.size()) +
             "; they must be one per token");
    std::optional<uint64_t> id;
    uint64_t i = 0;
    for (std::string_view s : vocab) {
      if (s == t.text) id = i;  // the last one wins, as in llama.cpp
      ++i;
    }
    if (!id) refuse("no token in tokenizer.ggml.tokens is exactly \"" + printable(t.text) + "\"" + alike_tokens(vocab, t.text));
    const int32_t before = static_cast<int32_t>(static_cast<uint32_t>(v.nums[*id]));
    if (before == t.type) {  // no change: nothing to write for it
      ctx_.note(t.from, entry + ": token " + std::to_string(*id) + " is already " + token_type_name(t.type));
      return;
    }
    NumberList nums(4);  // the list may be a view of the mapped file: rebuilt with the one item changed
    nums.reserve(v.nums.size());
    for (size_t k = 0; k < v.nums.size(); ++k) nums.push_back(k == *id ? static_cast<uint32_t>(t.type) : v.nums[k]);
    v.nums = std::move(nums);
    changes_.push_back({Change::retype, key, "", Value::scalar(ValueType::i32, static_cast<uint32_t>(before)),
                        Value::scalar(ValueType::i32, static_cast<uint32_t>(t.type)), t.text, *id});
  }

  // Tokens whose text differs from `text` only by surrounding whitespace (SentencePiece's
  // U+2581 too) or by case, as "; did you mean ...?", or "" for none.
  static std::string alike_tokens(const StringList& vocab, const std::string& text) {
    auto plain = [](std::string_view s) {
      auto space_at = [&](size_t at) -> size_t {  // the length of a space at `at`, or 0
        if (at < s.size() && std::isspace(static_cast<unsigned char>(s[at]))) return 1;
        return s.substr(at, 3) == "\u2581" ? 3 : 0;
      };
      size_t b = 0, e = s.size();
      auto space_before = [&](size_t end) -> size_t {  // the same, of a space ending at `end`, after b
        if (end > b && std::isspace(static_cast<unsigned char>(s[end - 1]))) return 1;
        return end >= b + 3 && s.substr(end - 3, 3) == "\u2581" ? 3 : 0;
      };
      while (size_t n = space_at(b)) b += n;
      while (size_t n = space_before(e)) e -= n;
      std::string out(s.substr(b, e - b));
      for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return out;
    };
    const std::string want = plain(text);
    std::string out;
    size_t n = 0;
    uint64_t i = 0;
    for (std::string_view s : vocab) {
      if (s != text && plain(s) == want && n++ < 3)
        out += (out.empty() ? "" : ", ") + ("\"" + printable(std::string(s)) + "\" (" + std::to_string(i) + ")");
      ++i;
    }
    return out.empty() ? "" : "; did you mean " + out + (n > 3 ? " (and " + std::to_string(n - 3) + " more)" : "") + "?";
  }

  // The three tokens nearest to `text` by edit distance, with their ids.
  static std::string nearest_tokens(const StringList& vocab, const std::string& text) {
    std::vector<std::pair<size_t, uint64_t>> best;  // distance, id
    uint64_t i = 0;
    for (std::string_view t : vocab) {
      best.emplace_back(edit_distance(text, t), i++);
      std::sort(best.begin(), best.end());
      if (best.size() > 3) best.pop_back();
    }
    std::string out;
    for (const auto& [d, id] : best) out += (out.empty() ? "" : ", ") + ("\"" + printable(std::string(vocab[id])) + "\" (" + std::to_string(id) + ")");
    return out;
  }

  // The type a value given without one reads as: true/false a bool, an integer an i32 (an
  // i64 past its range), another number an f32, anything else (or in quotes) a string; a
  // list of them an array of the widest.
  static std::optional<std::pair<ValueType, ValueType>> infer_type(const YamlNode& n) {
    auto scalar_type = [](const YamlNode& x) -> std::optional<ValueType> {
      if (!x.IsScalar()) return std::nullopt;
      const std::string& t = x.text;
      if (x.quoted || t.empty()) return ValueType::string;
      if (t == "true" || t == "false") return ValueType::boolean;
      size_t digits = t[0] == '+' || t[0] == '-' ? 1 : 0;
      if (digits < t.size() && t.find_first_not_of("0123456789", digits) == std::string::npos) {
        errno = 0;
        long long v = std::strtoll(t.c_str(), nullptr, 10);
        if (errno == ERANGE) return std::nullopt;
        return v >= INT32_MIN && v <= INT32_MAX ? ValueType::i32 : ValueType::i64;
      }
      char* end = nullptr;
      std::strtod(t.c_str(), &end);
      return end == t.c_str() + t.size() && !std::isspace(static_cast<unsigned char>(t[0])) ? ValueType::f32 : ValueType::string;
    };
    if (!n.IsSequence()) {
      auto t = scalar_type(n);
      return t ? std::optional(std::pair(*t, ValueType::u8)) : std::nullopt;
    }
    std::optional<ValueType> elem;
    auto is_int = [](ValueType t) { return t == ValueType::i32 || t == ValueType::i64; };
    for (const YamlNode& item : n) {
      auto t = scalar_type(item);
      if (!t) return std::nullopt;
      if (!elem || *elem == *t) elem = t;
      else if (is_int(*elem) && is_int(*t)) elem = ValueType::i64;
      else if ((is_int(*elem) || *elem == ValueType::f32) && (is_int(*t) || *t == ValueType::f32)) elem = ValueType::f32;
      else return std::nullopt;
    }
    return elem ? std::optional(std::pair(ValueType::array, *elem)) : std::nullopt;
  }

  static std::string type_text(ValueType t, ValueType items) { return key_type_text(t, items); }

  void align(uint64_t a) {
    const YamlNode& at = p_.alignment_at;
    if (a != 0 && !is_power_of_two(a)) fail(at, "alignment", "alignment " + std::to_string(a) + " is not a power of two");
    KV* kv = find(kAlignmentKey);
    if (kv && kv->value.type != ValueType::u32)
      fail(at, "alignment", std::string("the file's general.alignment is a ") + value_type_name(kv->value.type) + ", not a u32");
    uint32_t before = kv ? static_cast<uint32_t>(kv->value.bits) : kDefaultAlignment;
    if (a == 0) {  // the default: no key at all
      if (kv) {
        changes_.push_back({Change::alignment, kAlignmentKey, "", kv->value, std::nullopt});
        m_.metadata.erase(*index_of(kAlignmentKey)), erased();
      }
      return;
    }
    // 32 written as a key is not the file that declared none: realigning back to where a
    // file began is 'default', and the user may have meant that. Said in the form the
    // alignment was given in; nothing to say when the key already holds 32.
    if (a == kDefaultAlignment && !(kv && before == kDefaultAlignment)) {
      const std::string& from = p_.alignment_from;
      const std::string how = from == "command line" ? "-a default" : from == "arguments" ? "the alignment 'default'" : "alignment: default";
      ctx_.note(from, "alignment 32 is written as the key general.alignment = 32; " + how +
                          " removes the key instead, as a file was before its first realign: 32 is what no key means");
    }
    if (kv) kv->value = Value::of_u32(static_cast<uint32_t>(a));
    else m_.metadata.push_back({kAlignmentKey, Value::of_u32(static_cast<uint32_t>(a))}), appended();  // declared from now on
    changes_.push_back({Change::alignment, kAlignmentKey, "", Value::of_u32(before), Value::of_u32(static_cast<uint32_t>(a))});
  }

  // The registry's checks on every key the patch touched, against the patched model: types
  // and templates. What the model must satisfy as a whole (token ids below the vocabulary
  // size, arrays of one length) is the rule book's, checked on the result before it is
  // written, where a touched key is held to the rules its check names (new_findings).
  void check() {
    std::string a = arch();
    for (const std::string& key : touched_) {
      const KV* kv = find(key);
      const KeySpec* spec = r_.find(key, a);
      if (!kv || !spec) continue;
      const YamlNode& at = where_.count(key) ? *where_[key] : p_.alignment_at;
      std::string entry = "set " + key;
      bool wrong_type = !spec->accepts(kv->value.type, kv->value.elem);
      if (fresh_.count(key) && wrong_type) {  // an existing key keeps its type, whatever the registry says
        if (where_.count(key))  // a renamed key that lands on a registered name must have its type too
          fail(at, entry, "the key registry has " + key + " as " + spec->wanted());
        fail(at, "rename " + key, "the key registry has " + key + " as " + spec->wanted() +
                                      ", the renamed value is " + type_text(kv->value.type, kv->value.elem));
      }
      switch (spec->check) {
        case KeyCheck::template_:  // also template_nul on the result
          if (!rule::utf8_ok(kv->value.str)) fail(at, entry, "the chat template is not valid UTF-8");
          if (auto z = rule::template_nul(kv->value.str))
            broken(at, entry, "the chat template has a NUL byte at byte " + std::to_string(*z) + "; C readers (llama.cpp) cut it there");
          if (kv->value.str.size() > r_.template_bytes())
            fail(at, entry, "the chat template is " + std::to_string(kv->value.str.size()) + " bytes, over the cap of " +
                                std::to_string(r_.template_bytes()));
          break;
        case KeyCheck::token_id:   // the token_id rule, on the result
        case KeyCheck::vocab:      // vocab_length, empty_vocab, missing_vocab, vocab_rows, on the result
        case KeyCheck::alignment:  // alignment_too_small and _too_large, on the result (set by alignment:)
        case KeyCheck::none:
          break;
      }
    }
  }

  Model& m_;
  const Patch& p_;
  const Registry& r_;
  const Context& ctx_;
  std::vector<Change> changes_;
  std::vector<std::string> touched_;
  std::map<std::string, const YamlNode*> where_;
  mutable std::unordered_map<std::string, size_t> index_;  // index_of's: key -> its first pair
  mutable bool indexed_ = false;
  static constexpr size_t kWalks = 64;
  mutable size_t walks_ = 0;  // lookups made by walking, before the index pays
  std::set<std::string> fresh_;  // keys the patch added or renamed to
  std::deque<Patch::Set> specials_;  // the sets special tokens became (where_ points into them)
  std::deque<Patch::Set> derived_;   // --from-hf's versions, found
};

}  // namespace

std::vector<Change> apply_patch(Model& model, const Patch& patch, const Registry& registry, const Context& ctx) {
  return Applier(model, patch, registry, ctx).run();
}

}  // namespace ggufkit
