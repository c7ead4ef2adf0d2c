#pragma once

// Renders a parsed template as Hugging Face transformers' apply_chat_template does: jinja2
// in an immutable sandbox, with its values, scoping, filters, tests and methods, the
// globals raise_exception, strftime_now, cycler, joiner and lipsum, Python's % and
// str.format, and a tojson that keeps non-ASCII. Limits on loop iterations, call depth,
// output size and time make any template finish.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ggufkit/jinja.h"

namespace ggufkit::jinja {

struct Value;
using List = std::vector<Value>;
struct Dict;
struct Callable;

// A Jinja value: Python's None, bool, int, float, str, list, dict, plus jinja2's
// undefined (which prints as nothing and fails on use), a namespace() and a callable.
struct Value {
  enum class Type { undefined, none, boolean, integer, floating, string, list, dict, ns, callable };
  Type type = Type::undefined;
  int64_t i = 0;   // boolean and integer; for undefined, non-zero when it stands for an
                   // attribute the sandbox refuses (using it is a SecurityError)
  // string: a Markup (the safe and escape filters): what is added to it is escaped.
  // list: a generator (what map, select and their kin return): no len(), no JSON, no
  // indexing, always true.
  bool safe = false, generator = false;
  bool tuple = false;  // list: a tuple (a literal, a dict's item pair, varargs): printed (a, b)
  double f = 0;    // floating
  std::string s;   // string; for undefined, what was undefined ("'x' is undefined")
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;   // dict and namespace (and the loop object)
  std::shared_ptr<Callable> fn; // callable (and a loop object that can recurse)

  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t v);
  static Value floating(double v);
  static Value string(std::string v);
  static Value undefined(std::string what);
  static Value new_list(List items = {});
  static Value new_dict();
};

// An ordered dict (Python's keep insertion order; JSON objects keep theirs).
struct Dict {
  std::vector<std::pair<Value, Value>> items;
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value v);
};

// A failure while rendering, with the template line and jinja2's kind of error
// ("UndefinedError", "TypeError", "TemplateError" for raise_exception, "SecurityError",
// "LimitError" for a sandbox limit, ...).
struct RenderError : std::runtime_error {
  RenderError(std::string kind, int line, const std::string& message);
  std::string kind;
  int line;
  std::string message;
};

struct RenderLimits {
  uint64_t max_iterations = 200'000;  // loop iterations, all loops together
  unsigned max_depth = 100;             // macro and recursive-loop calls, nested
  uint64_t max_output = 16u << 20;      // bytes of output (and of any string built)
  std::chrono::milliseconds max_time{500};
};

struct RenderOptions {
  RenderLimits limits;
  // The clock strftime_now reads (seconds since the epoch, local time); when unset,
  // SOURCE_DATE_EPOCH (in UTC) if the environment has it, else now.
  std::optional<int64_t> now;
};

// Renders `t` with `context` (a dict: messages, add_generation_prompt, bos_token, ...).
// Throws RenderError.
std::string render(const Template& t, const Value& context, const RenderOptions& options = {});

// The variables apply_chat_template renders with, from a conversation as JSON holds it
// (`messages`, optionally `tools`, `documents`, `add_generation_prompt` and anything
// else): `tools` and `documents` are none when absent, as transformers passes them, and
// bos_token and eos_token are the model's (undefined when it has none, as transformers
// leaves them) unless the conversation sets them.
// Throws std::invalid_argument when `conversation` is not an object with a list of messages.
Value chat_context(const Value& conversation, const std::optional<std::string>& bos_token,
                   const std::optional<std::string>& eos_token);

// JSON text to a Value (objects keep their order); throws std::invalid_argument with the
// byte offset.
Value from_json(std::string_view text);
// A value as Python's json.dumps(x, ensure_ascii=False) writes it (the tojson filter).
std::string to_json(const Value& v, int indent = -1);

}  // namespace ggufkit::jinja
