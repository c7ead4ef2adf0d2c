#pragma once
// What the renderer knows of values beyond the public header: Python's str, repr,
// truthiness and equality, and json.dumps.

#include <stdexcept>
#include <string>

#include "ggufkit/jinja_render.h"

namespace ggufkit::jinja {

class Renderer;

struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  const Value* keyword(std::string_view name) const {
    for (const auto& [k, v] : kw)
      if (k == name) return &v;
    return nullptr;
  }
};

struct Callable {
  std::string name;
  std::function<Value(Renderer&, CallArgs&, int line)> fn;
};

bool truthy(const Value& v);
std::string html_escape(const std::string& s);  // markupsafe's escape: & < > " '

bool is_number(const Value& v);
double as_double(const Value& v);
const char* type_name(const Value& v);  // Python's: "str", "dict", "NoneType", ...
bool equal(const Value& a, const Value& b);
std::string float_repr(double d);
std::string str(const Value& v);   // as {{ }} prints it (undefined: nothing)
std::string repr(const Value& v);  // as Python's repr, inside a printed list or dict

struct JsonError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct JsonStyle {
  std::string indent;  // with pretty: a newline and this per level
  bool pretty = false;
  std::string item_sep = ", ", key_sep = ": ";
  bool sort_keys = false;
};
void dump_json(std::string& out, const Value& v, const JsonStyle& style, int level = 0);

}  // namespace ggufkit::jinja
