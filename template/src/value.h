#pragma once
// What the renderer knows of values beyond the public header: Python's str, repr,
// truthiness and equality, and json.dumps.

#include <chrono>
#include <stdexcept>
#include <string>

#include "ggufkit/jinja_render.h"

namespace ggufkit::jinja {

class Renderer;

// The limits of the render running on this thread, where values can reach them: what a
// Charge adds to, and what a string being built (a repr, a JSON text) is checked against
// as it grows. One per render, made by the Renderer.
struct Sandbox {
  explicit Sandbox(const RenderLimits& l);
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;
  static Sandbox* current();  // nullptr outside a render

  const RenderLimits& limits;
  const uint64_t id;  // what a Charge remembers, so that only this render is given back
  const std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  int line = 0;       // the line being rendered, for a limit met inside a value
  uint64_t held = 0;  // bytes of values made and not yet freed

  [[noreturn]] void limit(int at, RenderErrorKind kind, const std::string& what) const;
  void check_time(int at) const;
  // n more bytes of values are about to be made: refused past the budget.
  void reserve(uint64_t n, int at) const {
    if (n > limits.max_memory || held > limits.max_memory - n)
      limit(at, RenderErrorKind::limit_memory, "more than " + std::to_string(limits.max_memory) + " bytes of values held at once (the sandbox's memory limit)");
  }
  // A string of n bytes is about to be built (or has grown to n): refused past the
  // output limit or the budget; a long one is where time goes.
  void sized(uint64_t n, int at) const {
    capped(n, at);
    reserve(n, at);
  }
  void capped(uint64_t n, int at) const {  // the output limit alone (the output is no value)
    if (n > (64u << 10) && (++long_strings_ & 15) == 0) check_time(at);  // building long strings is where time goes
    if (n > limits.max_output)
      limit(at, RenderErrorKind::limit_output, "a string of " + std::to_string(n) + " bytes is longer than the sandbox's output limit of " +
                    std::to_string(limits.max_output) + " bytes");
  }

 private:
  Sandbox* outer_;
  mutable uint64_t long_strings_ = 0;
};
// A string being built outside the renderer (repr, JSON) has grown to n bytes.
inline void growing(uint64_t n) {
  if (Sandbox* s = Sandbox::current()) s->sized(n, s->line);
}
// What a list item costs (its slot), and a string value beyond its bytes (the shared block).
constexpr uint64_t kItemBytes = sizeof(Value), kStringBytes = 80;

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
