#pragma once

// Renders a parsed template as Hugging Face transformers' apply_chat_template does: jinja2
// in an immutable sandbox, with its values, scoping, filters, tests and methods, the
// globals raise_exception, strftime_now, cycler, joiner and lipsum, Python's % and
// str.format, and a tojson that keeps non-ASCII. Limits on loop iterations, call depth,
// output size, memory and time make any template finish.

#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ggufkit/jinja.h"

namespace ggufkit::jinja {

// Bytes of values charged to the render on this thread that made them (its memory budget,
// RenderLimits::max_memory), given back when they are freed; nothing outside a render.
// Adding past the budget is a LimitError.
class Charge {
 public:
  Charge() = default;
  explicit Charge(uint64_t n) { add(n); }
  Charge(const Charge& o) { add(o.bytes_); }  // a copy is held as well: charged again
  Charge& operator=(const Charge& o) {
    if (this != &o) {
      release();
      add(o.bytes_);
    }
    return *this;
  }
  ~Charge() { release(); }
  void add(uint64_t n);

 private:
  void release();
  uint64_t render_ = 0, bytes_ = 0;
};

// A str, immutable as Python's: the copies of a value share one string, so a message's
// content is held once however often a template reads it.
class Str {
 public:
  Str() = default;
  explicit Str(std::string s);
  Str(const char* s) : Str(std::string(s)) {}
  Str& operator=(std::string s) { return *this = Str(std::move(s)); }
  Str& operator=(const char* s) { return *this = Str(std::string(s)); }
  const std::string& str() const { return p_ ? *p_ : empty_; }
  operator const std::string&() const { return str(); }
  size_t size() const { return str().size(); }
  size_t length() const { return str().size(); }
  bool empty() const { return str().empty(); }
  const char* c_str() const { return str().c_str(); }
  const char* data() const { return str().data(); }
  char operator[](size_t i) const { return str()[i]; }
  char at(size_t i) const { return str().at(i); }
  char front() const { return str().front(); }
  char back() const { return str().back(); }
  std::string::const_iterator begin() const { return str().begin(); }
  std::string::const_iterator end() const { return str().end(); }
  std::string::const_reverse_iterator rbegin() const { return str().rbegin(); }
  std::string::const_reverse_iterator rend() const { return str().rend(); }
  std::string substr(size_t at = 0, size_t n = std::string::npos) const { return str().substr(at, n); }
  template <class... A> size_t find(const A&... a) const { return str().find(a...); }
  template <class... A> size_t rfind(const A&... a) const { return str().rfind(a...); }
  template <class... A> size_t find_first_of(const A&... a) const { return str().find_first_of(a...); }
  template <class... A> size_t find_first_not_of(const A&... a) const { return str().find_first_not_of(a...); }
  template <class... A> size_t find_last_of(const A&... a) const { return str().find_last_of(a...); }
  template <class... A> size_t find_last_not_of(const A&... a) const { return str().find_last_not_of(a...); }
  bool starts_with(std::string_view p) const { return str().starts_with(p); }
  bool ends_with(std::string_view p) const { return str().ends_with(p); }
  template <class... A> int compare(const A&... a) const { return str().compare(a...); }

 private:
  static const std::string empty_;
  std::shared_ptr<const std::string> p_;
};
inline bool operator==(const Str& a, const Str& b) { return a.str() == b.str(); }
inline bool operator==(const Str& a, const std::string& b) { return a.str() == b; }
inline bool operator==(const Str& a, std::string_view b) { return a.str() == b; }
inline bool operator==(const Str& a, const char* b) { return a.str() == b; }
inline std::strong_ordering operator<=>(const Str& a, const Str& b) { return a.str() <=> b.str(); }
inline std::string operator+(const Str& a, const Str& b) { return a.str() + b.str(); }
inline std::string operator+(const Str& a, const std::string& b) { return a.str() + b; }
inline std::string operator+(const std::string& a, const Str& b) { return a + b.str(); }
inline std::string operator+(std::string&& a, const Str& b) { return std::move(a) + b.str(); }
inline std::string operator+(const Str& a, const char* b) { return a.str() + b; }
inline std::string operator+(const char* a, const Str& b) { return a + b.str(); }
inline std::string operator+(const Str& a, char b) { return a.str() + b; }
inline std::string operator+(char a, const Str& b) { return a + b.str(); }
inline std::ostream& operator<<(std::ostream& o, const Str& s) { return o << s.str(); }

struct Value;
using List = std::vector<Value>;
struct Dict;
struct Callable;

// A Jinja value: Python's None, bool, int, float, str, list, dict, plus jinja2's
// undefined (which prints as nothing and fails on use), a namespace() and a callable.
struct Value {
  enum class Type : uint8_t { undefined, none, boolean, integer, floating, string, list, dict, ns, callable };
  Type type = Type::undefined;
  // string: a Markup (the safe and escape filters): what is added to it is escaped.
  // list: a generator (what map, select and their kin return): no len(), no JSON, no
  // indexing, always true.
  bool safe = false, generator = false;
  bool tuple = false;  // list: a tuple (a literal, a dict's item pair, varargs): printed (a, b)
  int64_t i = 0;   // boolean and integer; for undefined, non-zero when it stands for an
                   // attribute the sandbox refuses (using it is a SecurityError)
  double f = 0;    // floating
  Str s;           // string; for undefined, what was undefined ("'x' is undefined")
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
  Charge charge;  // its items, when a render made them
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value v);
};

// What failed in a render, for callers to tell apart (each maps to the name of jinja2's or
// Python's exception: render_error_name).
enum class RenderErrorKind : uint8_t {
  undefined,               // UndefinedError: an undefined value used
  security,                // SecurityError: an attribute or method the sandbox refuses
  type_error,              // TypeError
  value_error,             // ValueError
  key_error,               // KeyError
  index_error,             // IndexError
  zero_division,           // ZeroDivisionError
  overflow,                // OverflowError
  runtime_error,           // RuntimeError (cycler() without items)
  filter_argument,         // FilterArgumentError
  unknown_name,            // TemplateAssertionError: no filter or test of that name
  template_runtime_error,  // TemplateRuntimeError (an attribute set on what is no namespace)
  raise_exception,         // TemplateError: the template's own raise_exception(...)
  template_error,          // TemplateError otherwise (a slice outside brackets, ...)
  // LimitError: a sandbox limit (RenderLimits, and what ggufkit adds)
  limit_iterations,  // max_iterations
  limit_depth,       // max_depth: macro and recursive-loop calls
  limit_nesting,     // the C++ depth of the walk (1500 levels of calls and expressions)
  limit_output,      // max_output: the output, or a string being built
  limit_memory,      // max_memory
  limit_time,        // max_time
  limit_integer,     // a 64-bit integer overflow
};
// jinja2's (or Python's) name of the error: "UndefinedError", "TemplateError", "LimitError", ...
const char* render_error_name(RenderErrorKind kind);

// A failure while rendering, with the template line, its kind, and jinja2's name for it.
struct RenderError : std::runtime_error {
  RenderError(RenderErrorKind code, int line, const std::string& message);
  RenderErrorKind code;
  std::string kind;  // render_error_name(code): what jinja2 would raise
  int line;
  std::string message;
};

// The filters and tests a template can use, sorted by name (what jinja2 also has but
// ggufkit does not, such as center or truncate, is not listed: a template using one fails
// with "No filter named ...").
std::vector<std::string_view> filter_names();
std::vector<std::string_view> test_names();

struct RenderLimits {
  uint64_t max_iterations = 200'000;  // loop iterations, all loops together
  unsigned max_depth = 100;             // macro and recursive-loop calls, nested
  uint64_t max_output = 16u << 20;      // bytes of output (and of any string built)
  uint64_t max_memory = 64u << 20;      // bytes of values held at once (strings, list and dict items)
  std::chrono::milliseconds max_time{500};
};

struct RenderOptions {
  RenderLimits limits;
  // The clock strftime_now reads (seconds since the epoch, local time); when unset,
  // source_date_epoch (the text of reproducible builds' SOURCE_DATE_EPOCH, whole seconds
  // read as UTC, checked only when a template asks the time), else now. The renderer reads
  // no environment variable: a program passes what it read.
  std::optional<int64_t> now;
  std::optional<std::string> source_date_epoch;
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

// JSON text to a Value (objects keep their order; a repeated key keeps its place and takes
// the last value, as Python's json.loads). A surrogate pair is one code point; a lone
// surrogate is refused (no UTF-8 text can hold it). Throws std::invalid_argument with the
// byte offset, also when the values would take more than `max_bytes` (a value is 88 bytes:
// 60 MB of small numbers would take 2.6 GB).
Value from_json(std::string_view text, uint64_t max_bytes = 256u << 20);
// A value as Python's json.dumps(x, ensure_ascii=False) writes it (the tojson filter).
std::string to_json(const Value& v, int indent = -1);

// markupsafe's escape (& < > " '): Jinja's |escape, and text put in a page (map --html).
std::string html_escape(const std::string& s);

}  // namespace ggufkit::jinja
