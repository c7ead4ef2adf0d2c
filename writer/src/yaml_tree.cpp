#include "ggufkit/yaml_tree.h"

#include <sys/stat.h>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include <sstream>

#include "ggufkit/error.h"
#include "ggufkit/path.h"
#include "ggufkit/source.h"

namespace ggufkit {

namespace {

class Builder : public YAML::EventHandler {
 public:
  Builder(const std::string& name, const YamlLimits& limits) : name_(name), limits_(limits) {}

  YamlNode root;

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t a) override { add(m, a, YamlNode::null, ""); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override {
    fail(m, "aliases (*name) are not allowed: every value is written out where it is used");
  }
  // An explicit tag (!!binary, !!str, !mine) would change what the text means; it is
  // refused rather than stored as text. yaml-cpp gives "?" for a plain node, "!" for a quoted one.
  void no_tag(const YAML::Mark& m, const std::string& tag) {
    if (!tag.empty() && tag != "?" && tag != "!")
      fail(m, "YAML tags (" + (tag.rfind("tag:yaml.org,2002:", 0) == 0 ? "!!" + tag.substr(18) : tag) +
                  ") are not allowed; write the value plainly, raw bytes as {hex: \"...\"}");
  }
  void OnScalar(const YAML::Mark& m, const std::string& tag, YAML::anchor_t a, const std::string& v) override {
    no_tag(m, tag);
    if (v.size() > limits_.max_scalar)
      fail(m, "a value of " + std::to_string(v.size()) + " bytes is over the cap of " + std::to_string(limits_.max_scalar));
    add(m, a, YamlNode::scalar, v).quoted = tag == "!";  // yaml-cpp marks a quoted scalar so
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string& tag, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    no_tag(m, tag);
    open(m, a, YamlNode::seq);
  }
  void OnSequenceEnd() override { stack_.pop_back(); }
  void OnMapStart(const YAML::Mark& m, const std::string& tag, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    no_tag(m, tag);
    open(m, a, YamlNode::map);
  }
  void OnMapEnd() override { stack_.pop_back(); }
  void OnAnchor(const YAML::Mark& m, const std::string&) override {
    fail(m, "anchors (&name) are not allowed");
  }

 private:
  [[noreturn]] void fail(const YAML::Mark& m, const std::string& msg) const {
    throw Error(Error::Kind::format, yaml_where(name_, m.line, m.column), std::nullopt, "yaml", msg);
  }

  YamlNode& add(const YAML::Mark& m, YAML::anchor_t anchor, YamlNode::Kind k, const std::string& text) {
    if (anchor != YAML::NullAnchor) fail(m, "anchors (&name) are not allowed");
    if (++nodes_ > limits_.max_nodes) fail(m, "more than " + std::to_string(limits_.max_nodes) + " values");
    YamlNode n;
    n.kind = k;
    n.line = m.line;
    n.column = m.column;
    n.text = text;
    if (stack_.empty()) {
      root = std::move(n);
      return root;
    }
    stack_.back()->items.push_back(std::move(n));
    return stack_.back()->items.back();
  }

  void open(const YAML::Mark& m, YAML::anchor_t a, YamlNode::Kind k) {
    if (stack_.size() >= limits_.max_depth) fail(m, "nested deeper than " + std::to_string(limits_.max_depth));
    YamlNode& n = add(m, a, k, "");
    stack_.push_back(&n);  // children go into n.items; n itself does not move until closed
  }

  const std::string& name_;
  const YamlLimits& limits_;
  std::vector<YamlNode*> stack_;
  uint64_t nodes_ = 0;
};

const YamlNode kAbsent;

}  // namespace

const YamlNode& YamlNode::operator[](const std::string& key) const {
  if (kind != map) return kAbsent;
  for (size_t i = 0; i + 1 < items.size(); i += 2)
    if (items[i].kind == scalar && items[i].text == key) return items[i + 1];
  return kAbsent;
}

std::string yaml_where(const std::string& name, int line, int column) {
  if (line < 0) return name;
  return name + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1);
}

namespace {
void check_size(uint64_t size, const std::string& name, const YamlLimits& limits) {
  if (size > limits.max_bytes)
    throw Error(Error::Kind::format, name, std::nullopt, "yaml",
                "the document is " + std::to_string(size) + " bytes, over the cap of " + std::to_string(limits.max_bytes));
}
}  // namespace

std::string read_document(const std::string& path, const YamlLimits& limits) {
  struct stat st {};
  if (stat_path(path, st) == 0 && S_ISREG(st.st_mode)) check_size(static_cast<uint64_t>(st.st_size), path, limits);
  return read_small_file(path, limits.max_bytes);  // refused by its size before reading, where it has one
}

YamlNode load_yaml(const std::string& text, const std::string& name, const YamlLimits& limits) {
  check_size(text.size(), name, limits);
  std::istringstream in(text);
  Builder b(name, limits);
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(b);
    if (parser.HandleNextDocument(b))
      throw Error(Error::Kind::format, name, std::nullopt, "yaml", "expected one document, found more");
  } catch (const YAML::Exception& e) {
    throw Error(Error::Kind::format, yaml_where(name, e.mark.line, e.mark.column), std::nullopt, "yaml", e.msg);
  }
  return std::move(b.root);
}

}  // namespace ggufkit
