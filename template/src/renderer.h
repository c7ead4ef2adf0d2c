#pragma once
// The evaluator's state and its helpers, shared by render.cpp (statements, expressions,
// methods) and filters.cpp (filters and tests).

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ggufkit/jinja_render.h"
#include "value.h"

namespace ggufkit::jinja {

struct Frame {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Frame> parent;
};
using FramePtr = std::shared_ptr<Frame>;

enum class Flow { normal, brk, cont };

// Python counts and slices strings by code point.
std::vector<std::string> code_points(const std::string& s);
size_t code_point_size(const std::string& s, size_t at);  // the bytes of the code point at `at`
// s[start:stop:step] by code point.
std::string slice_string(const std::string& s, const Value& start, const Value& stop, const Value& step, int line);
size_t code_point_count(const std::string& s);
bool is_space(char c);
// str.strip/lstrip/rstrip: whitespace, or the code points of `chars` when it is a string.
std::string strip(const std::string& s, const Value* chars, bool left, bool right);
std::string ascii_case(std::string s, bool upper);
std::string title_case(const std::string& s);
std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count);
Value callable(std::string name, std::function<Value(Renderer&, CallArgs&, int)> fn);
// A dict's item: the tuple (key, value).
inline Value pair(const Value& k, const Value& v) {
  Value p = Value::new_list({k, v});
  p.tuple = true;
  return p;
}
// The n-th positional argument or the keyword `name`, else `dflt`.
Value arg(const CallArgs& a, size_t n, std::string_view name, Value dflt = Value::none());
int64_t to_int(const Value& v, int line);

// The name tables of filters and tests (filters.cpp), as jinja2's environment.filters and
// environment.tests: each entry is called with the name it was found by (one function can
// serve upper and lower). A null function is a name jinja2 has and ggufkit does not: the
// template compiles, and reaching it fails as an unknown name does.
using FilterFn = Value (*)(Renderer&, const Value& v, CallArgs& args, int line, std::string_view name);
using TestFn = bool (*)(Renderer&, const Value& v, CallArgs& args, int line, std::string_view name);
struct FilterDef {
  std::string_view name;
  FilterFn fn;
  bool generator;  // jinja2 returns a generator (or an iterator): no len(), no JSON
};
struct TestDef {
  std::string_view name;
  TestFn fn;
};
const FilterDef* find_filter(std::string_view name);  // nullptr when jinja2 has no such filter
const TestDef* find_test(std::string_view name);

class Renderer {
 public:
  Renderer(const RenderOptions& o) : opt_(o), box_(o.limits) {}
  // A macro holds the frame it was defined in, which holds the macro; a namespace can hold
  // itself: the cycles are broken here, so nothing outlives the render.
  ~Renderer() {
    for (auto& f : frames_)
      if (auto live = f.lock()) live->vars.clear();
    for (auto& d : namespaces)
      if (auto live = d.lock()) live->items.clear();
  }
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;
  FramePtr new_frame() {
    auto f = std::make_shared<Frame>();
    frames_.push_back(f);
    return f;
  }
  std::vector<std::weak_ptr<Dict>> namespaces;

  std::string out;
  FramePtr scope;

  // ---- limits ----
  [[noreturn]] void limit(int line, RenderErrorKind kind, const std::string& what) { box_.limit(line, kind, what); }
  void tick(int line) {
    box_.line = line;
    if ((++steps_ & 15) == 0) check_time(line);
  }
  void check_time(int line) { box_.check_time(line); }
  void iteration(int line) {
    if (++iterations_ > opt_.limits.max_iterations)
      limit(line, RenderErrorKind::limit_iterations, "more than " + std::to_string(opt_.limits.max_iterations) + " loop iterations (the sandbox's limit)");
    tick(line);
  }
  // A string of n bytes is about to be built: the output limit and the memory budget.
  void sized(uint64_t n, int line) { box_.sized(n, line); }
  // n more list items (or a string's code points as items) are about to be made.
  void reserve_items(uint64_t n, int line, uint64_t each = kItemBytes) {
    box_.reserve(n > box_.limits.max_memory / each ? box_.limits.max_memory + 1 : n * each, line);
  }
  void reserve(uint64_t bytes, int line) { box_.reserve(bytes, line); }
  void emit(const std::string& s, int line) {
    box_.capped(out.size() + s.size(), line);
    out += s;
  }
  struct Nest {  // C++ depth of the walk: no template exhausts the stack
    Renderer& r;
    Nest(Renderer& x, int line) : r(x) {
      if (++r.nest_ > 1500) r.limit(line, RenderErrorKind::limit_nesting, "the template nests deeper than the sandbox allows (1500 levels of calls and expressions)");
    }
    ~Nest() { --r.nest_; }
  };
  struct Call {
    Renderer& r;
    Call(Renderer& x, int line) : r(x) {
      if (++r.depth_ > r.opt_.limits.max_depth)
        r.limit(line, RenderErrorKind::limit_depth, "calls nest deeper than " + std::to_string(r.opt_.limits.max_depth) + " (the sandbox's recursion limit)");
    }
    ~Call() { --r.depth_; }
  };

  // ---- names ----
  Value lookup(const std::string& name) const {
    for (const Frame* f = scope.get(); f; f = f->parent.get())
      if (auto it = f->vars.find(name); it != f->vars.end()) return it->second;
    return Value::undefined("'" + name + "' is undefined");
  }

  // An undefined value fails when used; one that stands for an unsafe attribute (i set)
  // fails as the sandbox's SecurityError.
  [[noreturn]] void undefined_error(const Value& v, int line) { throw RenderError(v.i ? RenderErrorKind::security : RenderErrorKind::undefined, line, v.s); }
  void must_be_defined(const Value& v, int line) {
    if (v.type == Value::Type::undefined) undefined_error(v, line);
  }

  // ---- attributes and items ----
  Value method(const Value& self, const std::string& name, int line);

  Value getattr(const Value& obj, const std::string& name, int line) {
    must_be_defined(obj, line);
    if (!name.empty() && name[0] == '_') {  // as jinja2's sandbox: nothing when printed, an error when used
      Value u = Value::undefined("access to attribute '" + name + "' of '" + type_name(obj) + "' object is unsafe.");
      u.i = 1;
      return u;
    }
    if (obj.type == Value::Type::ns || (obj.type == Value::Type::dict && obj.fn)) {  // a namespace, the loop
      if (const Value* v = obj.dict->find(name)) return *v;
      return Value::undefined("'" + std::string(obj.type == Value::Type::ns ? "Namespace" : "LoopContext") +
                              " object' has no attribute '" + name + "'");
    }
    Value m = method(obj, name, line);
    if (m.type != Value::Type::undefined) return m;
    if (obj.type == Value::Type::dict)
      if (const Value* v = obj.dict->find(name)) return *v;
    if (obj.type == Value::Type::none) return Value::undefined("'None' has no attribute '" + name + "'");
    return Value::undefined("'" + std::string(type_name(obj)) + " object' has no attribute '" + name + "'");
  }

  Value getitem(const Value& obj, const Value& key, int line) {
    must_be_defined(obj, line);
    if (obj.type == Value::Type::dict || obj.type == Value::Type::ns) {
      if (const Value* v = obj.dict->find(key)) return *v;
      if (key.type == Value::Type::string) return getattr(obj, key.s, line);
      return Value::undefined(std::string(type_name(obj)) + " object has no element " + repr(key));
    }
    if ((obj.type == Value::Type::list || obj.type == Value::Type::string) &&
        (key.type == Value::Type::integer || key.type == Value::Type::boolean)) {
      int64_t n = obj.type == Value::Type::list ? static_cast<int64_t>(obj.list->size()) : static_cast<int64_t>(code_point_count(obj.s));
      int64_t i = key.i < 0 ? key.i + n : key.i;
      if (i < 0 || i >= n) return Value::undefined(std::string(type_name(obj)) + " object has no element " + std::to_string(key.i));
      if (obj.type == Value::Type::list) return (*obj.list)[static_cast<size_t>(i)];
      size_t at = 0;  // the i-th code point, walked to
      for (int64_t k = 0; k < i; ++k) at += code_point_size(obj.s, at);
      return Value::string(obj.s.substr(at, code_point_size(obj.s, at)));
    }
    if (key.type == Value::Type::string) return getattr(obj, key.s, line);
    return Value::undefined(std::string(type_name(obj)) + " object has no element " + repr(key));
  }

  // ---- iteration ----
  List items_of(const Value& v, int line) { return *iterate(v, line); }
  // What `for x in v` goes over (a list's own items, not a copy).
  std::shared_ptr<const List> iterate(const Value& v, int line) {
    if (v.type == Value::Type::list) return v.list;
    return std::make_shared<const List>(listed(v, line));
  }
  // A copy, charged before it is made.
  List listed(const Value& v, int line) {
    switch (v.type) {
      case Value::Type::undefined: return {};
      case Value::Type::list: reserve_items(v.list->size(), line); return *v.list;
      case Value::Type::dict: {
        reserve_items(v.dict->items.size(), line);
        List keys;
        for (const auto& kv : v.dict->items) keys.push_back(kv.first);
        return keys;
      }
      case Value::Type::string: {  // each code point a string of its own
        const size_t n = code_point_count(v.s);
        reserve_items(n, line, kItemBytes + kStringBytes);
        List cps;
        cps.reserve(n);
        for (size_t i = 0; i < v.s.size();) {
          const size_t k = code_point_size(v.s, i);
          cps.push_back(Value::string(v.s.substr(i, k)));
          i += k;
          tick(line);
        }
        return cps;
      }
      default: throw RenderError(RenderErrorKind::type_error, line, "'" + std::string(type_name(v)) + "' object is not iterable");
    }
  }

  // ---- expressions ----
  Value eval(const Expr& e);
  Value eval_call(const Expr& e);
  CallArgs eval_args(const Args& a);
  Value binary(const std::string& op, const Value& a, const Value& b, int line);
  bool compare(const std::string& op, const Value& a, const Value& b, int line);
  bool less(const Value& a, const Value& b, int line);
  Value call(const Value& f, CallArgs& args, int line) {
    must_be_defined(f, line);
    if (!f.fn || !f.fn->fn)
      throw RenderError(RenderErrorKind::type_error, line, f.fn ? "Tried to call non recursive loop.  Maybe you forgot the 'recursive' modifier."
                                                : "'" + std::string(type_name(f)) + "' object is not callable");
    tick(line);
    return f.fn->fn(*this, args, line);
  }
  // Through the name tables (filters.cpp); an unknown name is jinja2's TemplateAssertionError.
  Value filter(const std::string& name, const Value& v, CallArgs& args, int line);
  bool test(const std::string& name, const Value& v, CallArgs& args, int line);

  // ---- statements ----
  Flow exec(const Body& body) {
    for (const NodePtr& n : body) {
      Flow f = exec(*n);
      if (f != Flow::normal) return f;
    }
    return Flow::normal;
  }
  Flow exec(const Node& n);
  void assign(const Expr& target, const Value& v, Frame& into);
  void for_loop(const Node& n, std::shared_ptr<const List> all, int depth);
  std::string capture(const Body& body) {
    std::string saved = std::move(out);
    out.clear();
    exec(body);
    std::string got = std::move(out);
    out = std::move(saved);
    return got;
  }
  Value macro(const Node& n, FramePtr closure, const std::string& name);

  const RenderOptions& opt_;

 private:
  Sandbox box_;
  std::vector<std::weak_ptr<Frame>> frames_;
  uint64_t steps_ = 0, iterations_ = 0;
  unsigned depth_ = 0, nest_ = 0;
};


}  // namespace ggufkit::jinja
