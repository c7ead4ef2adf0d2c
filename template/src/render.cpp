// The evaluator: walks the parser's tree with jinja2's semantics in Hugging Face's
// sandbox (ImmutableSandboxedEnvironment): Python's values and operators, jinja2's
// scoping (a for loop's assignments stay in the loop, a namespace's do not), its
// undefined, filters, tests and the methods a sandbox allows. Limits make it finish.
#include <algorithm>
#include <cmath>
#include <ctime>

#include "pyformat.h"
#include "renderer.h"

namespace ggufkit::jinja {

// ---- UTF-8: Python counts and slices strings by code point ----

size_t code_point_size(const std::string& s, size_t i) {
  size_t n = 1;
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c >= 0xF0) n = 4;
  else if (c >= 0xE0) n = 3;
  else if (c >= 0xC0) n = 2;
  return std::min(n, s.size() - i);
}

std::vector<std::string> code_points(const std::string& s) {
  if (Sandbox* box = Sandbox::current()) box->reserve(code_point_count(s) * sizeof(std::string), box->line);  // a copy of each
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = code_point_size(s, i);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

size_t code_point_count(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1f); }

std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
  if (!chars || chars->type == Value::Type::none) {
    size_t a = 0, b = s.size();
    if (left)
      while (a < b && is_space(s[a])) ++a;
    if (right)
      while (b > a && is_space(s[b - 1])) --b;
    return s.substr(a, b - a);
  }
  std::vector<std::string> set = code_points(chars->s);
  auto in = [&](size_t at, size_t n) { return std::find(set.begin(), set.end(), s.substr(at, n)) != set.end(); };
  size_t a = 0, b = s.size();  // walked by code point from each end, without a list of them
  if (left)
    while (a < b && in(a, code_point_size(s, a))) a += code_point_size(s, a);
  if (right)
    while (b > a) {
      size_t at = b - 1;
      while (at > a && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) --at;
      if (!in(at, b - at)) break;
      b = at;
    }
  return s.substr(a, b - a);
}

std::string ascii_case(std::string s, bool upper) {
  for (char& c : s) c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string title_case(const std::string& s) {
  std::string out = s;
  bool prev_letter = false;
  for (char& c : out) {
    unsigned char u = static_cast<unsigned char>(c);
    bool letter = std::isalpha(u) != 0;
    if (letter) c = static_cast<char>(prev_letter ? std::tolower(u) : std::toupper(u));
    prev_letter = letter || u >= 0x80;  // digits are not cased: "1st" is "1St", as Python has it
  }
  return out;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  if (from.empty()) {  // Python puts `to` between every code point
    int64_t done = 0;
    for (size_t i = 0;; i += code_point_size(s, i)) {
      if (count < 0 || done < count) {
        growing(out.size() + to.size());
        out += to;
        ++done;
      }
      if (i >= s.size()) break;
      out.append(s, i, code_point_size(s, i));
    }
    return out;
  }
  size_t at = 0;
  int64_t done = 0;
  for (;;) {
    size_t hit = s.find(from, at);
    if (hit == std::string::npos || (count >= 0 && done >= count)) break;
    growing(out.size() + (hit - at) + to.size());  // refused as it grows
    out.append(s, at, hit - at);
    out += to;
    at = hit + from.size();
    ++done;
  }
  out.append(s, at, std::string::npos);
  return out;
}

// Python's slice.indices(): the positions a[start:stop:step] takes.
std::vector<int64_t> slice_positions(int64_t len, const Value& start, const Value& stop, const Value& step_v, int line) {
  auto given = [](const Value& v) { return v.type != Value::Type::none && v.type != Value::Type::undefined; };
  int64_t step = given(step_v) ? step_v.i : 1;
  if (step == 0) throw RenderError(RenderErrorKind::value_error, line, "slice step cannot be zero");
  auto clamp = [&](const Value& v, int64_t dflt) {
    if (!given(v)) return dflt;
    int64_t x = v.i;
    if (x < 0) x += len;
    if (step > 0) return std::clamp<int64_t>(x, 0, len);
    return std::clamp<int64_t>(x, -1, len - 1);
  };
  int64_t a = clamp(start, step > 0 ? 0 : len - 1), b = clamp(stop, step > 0 ? len : -1);
  std::vector<int64_t> out;
  for (int64_t i = a; step > 0 ? i < b : i > b; i += step) out.push_back(i);
  return out;
}

// s[start:stop:step] by code point, walking the bytes once (no list of positions or of
// code points: a 16 MB string slices in 16 MB).
std::string slice_string(const std::string& s, const Value& start, const Value& stop, const Value& step_v, int line) {
  const int64_t len = static_cast<int64_t>(code_point_count(s));
  auto given = [](const Value& v) { return v.type != Value::Type::none && v.type != Value::Type::undefined; };
  const int64_t step = given(step_v) ? step_v.i : 1;
  if (step == 0) throw RenderError(RenderErrorKind::value_error, line, "slice step cannot be zero");
  auto clamp = [&](const Value& v, int64_t dflt) {  // as slice.indices()
    if (!given(v)) return dflt;
    int64_t x = v.i < 0 ? v.i + len : v.i;
    return step > 0 ? std::clamp<int64_t>(x, 0, len) : std::clamp<int64_t>(x, -1, len - 1);
  };
  const int64_t a = clamp(start, step > 0 ? 0 : len - 1), b = clamp(stop, step > 0 ? len : -1);
  std::string out;
  if (step > 0) {
    int64_t i = 0;
    for (size_t at = 0; at < s.size() && i < b; ++i) {
      const size_t n = code_point_size(s, at);
      if (i >= a && (i - a) % step == 0) out.append(s, at, n);
      at += n;
    }
  } else {  // from the end: a code point starts at a byte that does not continue one
    int64_t i = len - 1;
    for (size_t end = s.size(); end > 0 && i > b; --i) {
      size_t at = end - 1;
      while (at > 0 && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) --at;
      if (i <= a && (a - i) % -step == 0) out.append(s, at, end - at);
      end = at;
    }
  }
  return out;
}

namespace {
const std::vector<std::string> kUnsafeMethods = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse",
                                                  "update", "setdefault", "popitem", "__setitem__", "__delitem__"};
}  // namespace


Value callable(std::string name, std::function<Value(Renderer&, CallArgs&, int)> fn) {
  Value v;
  v.type = Value::Type::callable;
  v.fn = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

Value arg(const CallArgs& a, size_t n, std::string_view name, Value dflt) {
  if (n < a.pos.size()) return a.pos[n];
  if (const Value* v = a.keyword(name)) return *v;
  return dflt;
}

static void expect_string(const Value& v, int line, const char* what) {
  if (v.type != Value::Type::string)
    throw RenderError(RenderErrorKind::type_error, line, std::string(what) + " must be str, not " + type_name(v));
}

int64_t to_int(const Value& v, int line) {
  if (v.type == Value::Type::integer || v.type == Value::Type::boolean) return v.i;
  throw RenderError(RenderErrorKind::type_error, line, "'" + std::string(type_name(v)) + "' object cannot be interpreted as an integer");
}

namespace {

// ---- the methods of values: each (renderer, the value, arguments, line, the name it was called by) ----

using K = RenderErrorKind;

Value m_strip(Renderer&, const Value& s, CallArgs& a, int, std::string_view name) {  // strip, lstrip, rstrip
  Value chars = arg(a, 0, "chars");
  return Value::string(strip(s.s, &chars, name != "rstrip", name != "lstrip"));
}

Value m_case(Renderer&, const Value& s, CallArgs&, int, std::string_view name) {  // upper, lower
  return Value::string(ascii_case(s.s, name == "upper"));
}

Value m_title(Renderer&, const Value& s, CallArgs&, int, std::string_view) { return Value::string(title_case(s.s)); }

Value m_capitalize(Renderer&, const Value& s, CallArgs&, int, std::string_view) {
  std::string t = ascii_case(s.s, false);
  if (!t.empty()) t[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(t[0])));
  return Value::string(t);
}

Value m_startswith(Renderer&, const Value& s, CallArgs& a, int l, std::string_view name) {  // and endswith
  Value p = arg(a, 0, "prefix");
  List options = p.type == Value::Type::list ? *p.list : List{p};
  for (const Value& o : options) {
    expect_string(o, l, name == "startswith" ? "startswith first arg" : "endswith first arg");
    bool hit = name == "startswith" ? s.s.compare(0, o.s.size(), o.s) == 0 && s.s.size() >= o.s.size()
                                    : s.s.size() >= o.s.size() && s.s.compare(s.s.size() - o.s.size(), o.s.size(), o.s) == 0;
    if (hit) return Value::boolean(true);
  }
  return Value::boolean(false);
}

Value m_split(Renderer& r, const Value& s, CallArgs& a, int l, std::string_view name) {  // and rsplit
  Value sep = arg(a, 0, "sep");
  int64_t max = arg(a, 1, "maxsplit", Value::integer(-1)).i;
  List parts;
  uint64_t made = 0;  // what the pieces will hold, charged before each is made
  auto piece = [&](size_t bytes) {
    made += kItemBytes + kStringBytes + bytes;
    r.reserve(made, l);
    r.tick(l);
  };
  if (sep.type == Value::Type::none) {  // runs of whitespace, none at the ends
    std::vector<std::string> words;
    size_t i = 0;
    while (i < s.s.size()) {
      while (i < s.s.size() && is_space(s.s[i])) ++i;
      if (i >= s.s.size()) break;
      size_t j = i;
      while (j < s.s.size() && !is_space(s.s[j])) ++j;
      if (max >= 0 && static_cast<int64_t>(words.size()) == max) j = s.s.size();
      piece(j - i);
      std::string w = s.s.substr(i, j - i);
      if (max >= 0 && static_cast<int64_t>(words.size()) == max) w = strip(w, nullptr, false, true);
      words.push_back(w);
      i = j;
    }
    for (auto& w : words) parts.push_back(Value::string(std::move(w)));
    return Value::new_list(std::move(parts));
  }
  expect_string(sep, l, "must be str or None; sep");
  if (sep.s.empty()) throw RenderError(K::value_error, l, "empty separator");
  std::vector<std::string> pieces;
  if (name == "split") {
    size_t at = 0;
    for (;;) {
      size_t hit = s.s.find(sep.s, at);
      if (hit == std::string::npos || (max >= 0 && static_cast<int64_t>(pieces.size()) >= max)) break;
      piece(hit - at);
      pieces.push_back(s.s.substr(at, hit - at));
      at = hit + sep.s.size();
    }
    pieces.push_back(s.s.substr(at));
  } else {
    size_t end = s.s.size();
    for (;;) {
      size_t hit = end >= sep.s.size() ? s.s.rfind(sep.s, end - sep.s.size()) : std::string::npos;
      if (hit == std::string::npos || (max >= 0 && static_cast<int64_t>(pieces.size()) >= max)) break;
      piece(end - hit - sep.s.size());
      pieces.push_back(s.s.substr(hit + sep.s.size(), end - hit - sep.s.size()));
      end = hit;
    }
    pieces.push_back(s.s.substr(0, end));
    std::reverse(pieces.begin(), pieces.end());  // found from the end
  }
  for (auto& p : pieces) parts.push_back(Value::string(std::move(p)));
  return Value::new_list(std::move(parts));
}

Value m_replace(Renderer& r, const Value& s, CallArgs& a, int l, std::string_view) {
  Value from = arg(a, 0, "old"), to = arg(a, 1, "new");
  expect_string(from, l, "replace() argument 1");
  expect_string(to, l, "replace() argument 2");
  std::string out = replace_all(s.s, from.s, to.s, arg(a, 2, "count", Value::integer(-1)).i);
  r.sized(out.size(), l);
  return Value::string(out);
}

Value m_format(Renderer& r, const Value& s, CallArgs& a, int l, std::string_view name) {  // and format_map
  return str_format(r, s, a, name == "format_map", l);
}

Value m_join(Renderer& r, const Value& s, CallArgs& a, int l, std::string_view) {
  std::string out;
  List items = r.items_of(arg(a, 0, "iterable"), l);
  for (size_t i = 0; i < items.size(); ++i) {
    expect_string(items[i], l, ("sequence item " + std::to_string(i) + ": expected str instance,").c_str());
    r.sized(out.size() + (i ? s.s.size() : 0) + items[i].s.size(), l);  // before it is built
    r.tick(l);
    if (i) out += s.s;
    out += items[i].s;
  }
  return Value::string(out);
}

Value m_find(Renderer&, const Value& s, CallArgs& a, int l, std::string_view name) {  // find, rfind, index, count
  Value sub = arg(a, 0, "sub");
  expect_string(sub, l, "must be str");
  if (name == "count") {
    if (sub.s.empty()) return Value::integer(static_cast<int64_t>(code_point_count(s.s)) + 1);
    int64_t n = 0;
    for (size_t at = s.s.find(sub.s); at != std::string::npos; at = s.s.find(sub.s, at + sub.s.size())) ++n;
    return Value::integer(n);
  }
  size_t at = name == "rfind" ? s.s.rfind(sub.s) : s.s.find(sub.s);
  if (at == std::string::npos) {
    if (name == "index") throw RenderError(K::value_error, l, "substring not found");
    return Value::integer(-1);
  }
  return Value::integer(static_cast<int64_t>(code_point_count(s.s.substr(0, at))));
}

Value m_splitlines(Renderer& r, const Value& s, CallArgs&, int l, std::string_view) {
  List parts;
  size_t at = 0;
  while (at < s.s.size()) {
    r.reserve_items(parts.size() + 1, l, kItemBytes + kStringBytes);
    r.tick(l);
    size_t nl = s.s.find_first_of("\r\n", at);
    if (nl == std::string::npos) {
      parts.push_back(Value::string(s.s.substr(at)));
      break;
    }
    parts.push_back(Value::string(s.s.substr(at, nl - at)));
    at = nl + ((s.s[nl] == '\r' && nl + 1 < s.s.size() && s.s[nl + 1] == '\n') ? 2 : 1);
  }
  return Value::new_list(parts);
}

Value m_is(Renderer&, const Value& s, CallArgs&, int, std::string_view name) {  // isdigit, isalpha, ... islower
  if (s.s.empty()) return Value::boolean(false);
  bool cased = false;
  for (unsigned char c : s.s) {
    bool ok = name == "isdigit"   ? std::isdigit(c) != 0
              : name == "isalpha" ? std::isalpha(c) != 0
              : name == "isspace" ? is_space(static_cast<char>(c))
              : name == "isalnum" ? std::isalnum(c) != 0
              : name == "isupper" ? !std::islower(c)
                                  : !std::isupper(c);
    if (!ok) return Value::boolean(false);
    cased = cased || std::isalpha(c);
  }
  return Value::boolean(name == "isupper" || name == "islower" ? cased : true);
}

Value m_get(Renderer&, const Value& s, CallArgs& a, int, std::string_view) {
  const Value* v = s.dict->find(arg(a, 0, "key"));
  return v ? *v : arg(a, 1, "default");
}

Value m_items(Renderer& r, const Value& s, CallArgs&, int l, std::string_view name) {  // items, keys, values
  r.reserve_items(s.dict->items.size(), l, name == "items" ? 4 * kItemBytes : kItemBytes);
  List out;
  for (const auto& [k, v] : s.dict->items) out.push_back(name == "items" ? pair(k, v) : name == "keys" ? k : v);
  return Value::new_list(out);
}

Value m_copy(Renderer&, const Value& s, CallArgs&, int, std::string_view) {
  Value c = Value::new_dict();
  *c.dict = *s.dict;
  return c;
}

Value m_list_index(Renderer&, const Value& s, CallArgs& a, int l, std::string_view name) {  // index, count
  Value x = arg(a, 0, "value");
  int64_t n = 0;
  for (size_t i = 0; i < s.list->size(); ++i)
    if (equal((*s.list)[i], x)) {
      if (name == "index") return Value::integer(static_cast<int64_t>(i));
      ++n;
    }
  if (name == "index") throw RenderError(K::value_error, l, repr(x) + " is not in list");
  return Value::integer(n);
}

using MethodFn = Value (*)(Renderer&, const Value& self, CallArgs&, int line, std::string_view name);
struct MethodDef {
  Value::Type self;
  std::string_view name;
  MethodFn fn;
};
constexpr bool before(const MethodDef& a, Value::Type t, std::string_view n) { return a.self < t || (a.self == t && a.name < n); }

// The methods the sandbox allows, sorted by the type they belong to, then by name (what
// mutates a list or a dict is kUnsafeMethods' SecurityError instead).
constexpr MethodDef kMethods[] = {
    {Value::Type::string, "capitalize", m_capitalize},
    {Value::Type::string, "count", m_find},
    {Value::Type::string, "endswith", m_startswith},
    {Value::Type::string, "find", m_find},
    {Value::Type::string, "format", m_format},
    {Value::Type::string, "format_map", m_format},
    {Value::Type::string, "index", m_find},
    {Value::Type::string, "isalnum", m_is},
    {Value::Type::string, "isalpha", m_is},
    {Value::Type::string, "isdigit", m_is},
    {Value::Type::string, "islower", m_is},
    {Value::Type::string, "isspace", m_is},
    {Value::Type::string, "isupper", m_is},
    {Value::Type::string, "join", m_join},
    {Value::Type::string, "lower", m_case},
    {Value::Type::string, "lstrip", m_strip},
    {Value::Type::string, "replace", m_replace},
    {Value::Type::string, "rfind", m_find},
    {Value::Type::string, "rsplit", m_split},
    {Value::Type::string, "rstrip", m_strip},
    {Value::Type::string, "split", m_split},
    {Value::Type::string, "splitlines", m_splitlines},
    {Value::Type::string, "startswith", m_startswith},
    {Value::Type::string, "strip", m_strip},
    {Value::Type::string, "title", m_title},
    {Value::Type::string, "upper", m_case},
    {Value::Type::list, "count", m_list_index},
    {Value::Type::list, "index", m_list_index},
    {Value::Type::dict, "copy", m_copy},
    {Value::Type::dict, "get", m_get},
    {Value::Type::dict, "items", m_items},
    {Value::Type::dict, "keys", m_items},
    {Value::Type::dict, "values", m_items},
};
constexpr bool methods_in_order() {  // strictly sorted: a binary search finds each, none twice
  for (size_t i = 1; i < std::size(kMethods); ++i)
    if (!before(kMethods[i - 1], kMethods[i].self, kMethods[i].name)) return false;
  return true;
}
static_assert(methods_in_order(), "kMethods must be sorted by type and name, without duplicates");

const MethodDef* find_method(Value::Type self, std::string_view name) {
  auto it = std::lower_bound(std::begin(kMethods), std::end(kMethods), name,
                             [self](const MethodDef& d, std::string_view n) { return before(d, self, n); });
  return it != std::end(kMethods) && it->self == self && it->name == name ? it : nullptr;
}

}  // namespace

Value Renderer::method(const Value& self, const std::string& name, int line) {
  if (self.type == Value::Type::callable && self.dict)  // cycler, joiner: their attributes
    if (const Value* v = self.dict->find(std::string_view(name))) return *v;
  if (std::find(kUnsafeMethods.begin(), kUnsafeMethods.end(), name) != kUnsafeMethods.end() &&
      (self.type == Value::Type::list || self.type == Value::Type::dict))
    throw RenderError(K::security, line, "access to attribute '" + name + "' of '" + type_name(self) + "' object is unsafe.");
  if (self.type == Value::Type::dict && self.fn) return Value::undefined("");  // the loop object has no dict methods
  const MethodDef* m = find_method(self.type, name);
  if (!m) return Value::undefined("");
  return callable(name, [s = self, fn = m->fn, n = m->name](Renderer& r, CallArgs& a, int l) { return fn(r, s, a, l, n); });
}

CallArgs Renderer::eval_args(const Args& a) {
  CallArgs out;
  for (const ExprPtr& p : a.positional) out.pos.push_back(eval(*p));
  if (a.star) {
    Value s = eval(*a.star);
    for (Value& v : items_of(s, a.star->line)) out.pos.push_back(std::move(v));
  }
  for (const auto& [k, v] : a.keywords) out.kw.emplace_back(k, eval(*v));
  if (a.double_star) {
    Value d = eval(*a.double_star);
    if (d.type == Value::Type::dict)
      for (const auto& [k, v] : d.dict->items) out.kw.emplace_back(str(k), v);
  }
  return out;
}

bool Renderer::less(const Value& a, const Value& b, int line) {
  must_be_defined(a, line);
  must_be_defined(b, line);
  if (is_number(a) && is_number(b)) {
    if (a.type == Value::Type::floating || b.type == Value::Type::floating) return as_double(a) < as_double(b);
    return a.i < b.i;
  }
  if (a.type == Value::Type::string && b.type == Value::Type::string) return a.s < b.s;
  if (a.type == Value::Type::list && b.type == Value::Type::list) {
    for (size_t i = 0; i < a.list->size() && i < b.list->size(); ++i) {
      if (less((*a.list)[i], (*b.list)[i], line)) return true;
      if (less((*b.list)[i], (*a.list)[i], line)) return false;
    }
    return a.list->size() < b.list->size();
  }
  throw RenderError(RenderErrorKind::type_error, line,
                    std::string("'<' not supported between instances of '") + type_name(a) + "' and '" + type_name(b) + "'");
}

bool Renderer::compare(const std::string& op, const Value& a, const Value& b, int line) {
  if (op == "==") return equal(a, b);
  if (op == "!=") return !equal(a, b);
  if (op == "<") return less(a, b, line);
  if (op == ">") return less(b, a, line);
  if (op == "<=") return !less(b, a, line);
  if (op == ">=") return !less(a, b, line);
  if (op == "in" || op == "notin") {
    bool in = false;
    if (b.type == Value::Type::string) {
      if (a.type != Value::Type::string)
        throw RenderError(RenderErrorKind::type_error, line, std::string("'in <string>' requires string as left operand, not ") + type_name(a));
      in = b.s.find(a.s) != std::string::npos;
    } else if (b.type == Value::Type::list) {
      in = std::any_of(b.list->begin(), b.list->end(), [&](const Value& x) { return equal(x, a); });
    } else if (b.type == Value::Type::dict || b.type == Value::Type::ns) {
      in = b.dict->find(a) != nullptr;
    } else if (b.type != Value::Type::undefined) {
      throw RenderError(RenderErrorKind::type_error, line, std::string("argument of type '") + type_name(b) + "' is not iterable");
    }
    return op == "in" ? in : !in;
  }
  throw RenderError(RenderErrorKind::template_error, line, "unknown comparison " + op);
}

Value Renderer::binary(const std::string& op, const Value& a, const Value& b, int line) {
  if (op == "~") {
    std::string s = str(a) + str(b);
    sized(s.size(), line);
    return Value::string(std::move(s));
  }
  must_be_defined(a, line);
  if (op == "%" && a.type == Value::Type::string) return percent_format(*this, a, b, line);  // '%s' % undefined is ''
  must_be_defined(b, line);
  auto unsupported = [&]() -> Value {
    throw RenderError(RenderErrorKind::type_error, line,
                      "unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
  };
  auto overflow = [&]() -> Value { limit(line, RenderErrorKind::limit_integer, "integer overflow (ggufkit's integers are 64-bit)"); };
  if (is_number(a) && is_number(b)) {
    bool real = a.type == Value::Type::floating || b.type == Value::Type::floating;
    double x = as_double(a), y = as_double(b);
    int64_t r = 0;
    if (op == "+") return real ? Value::floating(x + y) : __builtin_add_overflow(a.i, b.i, &r) ? overflow() : Value::integer(r);
    if (op == "-") return real ? Value::floating(x - y) : __builtin_sub_overflow(a.i, b.i, &r) ? overflow() : Value::integer(r);
    if (op == "*") return real ? Value::floating(x * y) : __builtin_mul_overflow(a.i, b.i, &r) ? overflow() : Value::integer(r);
    if (op == "/") {
      if (y == 0) throw RenderError(RenderErrorKind::zero_division, line, "division by zero");
      return Value::floating(x / y);
    }
    if (op == "//" || op == "%") {
      if (y == 0) throw RenderError(RenderErrorKind::zero_division, line, op == "%" ? "integer modulo by zero" : "integer division or modulo by zero");
      if (real) {
        double m = std::fmod(x, y);
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return op == "%" ? Value::floating(m) : Value::floating(std::floor(x / y));
      }
      if (a.i == INT64_MIN && b.i == -1) return overflow();
      int64_t q = a.i / b.i, m = a.i % b.i;
      if (m != 0 && ((m < 0) != (b.i < 0))) {
        --q;
        m += b.i;
      }
      return op == "%" ? Value::integer(m) : Value::integer(q);
    }
    if (op == "**") {
      if (!real && b.i >= 0) {
        int64_t acc = 1;
        for (int64_t k = 0; k < b.i; ++k) {
          if (__builtin_mul_overflow(acc, a.i, &acc)) return overflow();
          if (acc == 0 || acc == 1) break;
        }
        return Value::integer(acc);
      }
      return Value::floating(std::pow(x, y));
    }
    return unsupported();
  }
  if (op == "+") {
    if (a.type == Value::Type::string && b.type == Value::Type::string) {
      sized(a.s.size() + b.s.size(), line);
      if (!a.safe && !b.safe) return Value::string(a.s + b.s);
      Value m = Value::string((a.safe ? a.s : html_escape(a.s)) + (b.safe ? b.s : html_escape(b.s)));  // Markup escapes the other side
      m.safe = true;
      return m;
    }
    if (a.type == Value::Type::list && b.type == Value::Type::list) {
      reserve_items(a.list->size() + b.list->size(), line);
      List l = *a.list;
      l.insert(l.end(), b.list->begin(), b.list->end());
      return Value::new_list(std::move(l));
    }
    if (a.type == Value::Type::string)
      throw RenderError(RenderErrorKind::type_error, line, std::string("can only concatenate str (not \"") + type_name(b) + "\") to str");
    return unsupported();
  }
  if (op == "*") {
    const Value* seq = a.type == Value::Type::string || a.type == Value::Type::list ? &a : &b;
    const Value* n = seq == &a ? &b : &a;
    if ((seq->type == Value::Type::string || seq->type == Value::Type::list) &&
        (n->type == Value::Type::integer || n->type == Value::Type::boolean)) {
      uint64_t times = n->i > 0 ? static_cast<uint64_t>(n->i) : 0;
      uint64_t unit = seq->type == Value::Type::string ? seq->s.size() : seq->list->size() * 16;
      if (unit && times > opt_.limits.max_output / unit + 1)
        sized(opt_.limits.max_output + 1, line);  // refused before anything is built
      sized(unit * times, line);
      if (seq->type == Value::Type::list) reserve_items(seq->list->size() * times, line);
      if (seq->type == Value::Type::string) {
        std::string out;
        for (uint64_t k = 0; k < times; ++k) out += seq->s;
        return Value::string(std::move(out));
      }
      List out;
      for (uint64_t k = 0; k < times; ++k) out.insert(out.end(), seq->list->begin(), seq->list->end());
      return Value::new_list(std::move(out));
    }
    return unsupported();
  }
  return unsupported();
}

Value Renderer::eval(const Expr& e) {
  Nest nest(*this, e.line);
  tick(e.line);
  switch (e.kind) {
    case Expr::Kind::literal:
      return std::visit(
          [](const auto& x) -> Value {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, None>) return Value::none();
            else if constexpr (std::is_same_v<T, bool>) return Value::boolean(x);
            else if constexpr (std::is_same_v<T, int64_t>) return Value::integer(x);
            else if constexpr (std::is_same_v<T, double>) return Value::floating(x);
            else return Value::string(x);
          },
          e.value);
    case Expr::Kind::name: return lookup(e.name);
    case Expr::Kind::list:
    case Expr::Kind::tuple: {
      List items;
      for (const ExprPtr& k : e.kids) items.push_back(eval(*k));
      Value l = Value::new_list(std::move(items));
      l.tuple = e.kind == Expr::Kind::tuple;
      return l;
    }
    case Expr::Kind::dict: {
      Value d = Value::new_dict();
      for (size_t i = 0; i < e.pairs(); ++i) {
        Value k = eval(e.key(i));
        d.dict->set(std::move(k), eval(e.val(i)));
      }
      return d;
    }
    case Expr::Kind::attr: return getattr(eval(e.operand()), e.name, e.line);
    case Expr::Kind::item: {
      Value obj = eval(e.operand());
      const Expr& idx = e.index();
      if (idx.kind == Expr::Kind::slice) {
        must_be_defined(obj, e.line);
        Value none = Value::none();
        Value a = idx.start() ? eval(*idx.start()) : none;
        Value b = idx.stop() ? eval(*idx.stop()) : none;
        Value c = idx.step() ? eval(*idx.step()) : none;
        if (obj.type == Value::Type::list) {
          reserve_items(obj.list->size(), e.line);
          List out;
          for (int64_t i : slice_positions(static_cast<int64_t>(obj.list->size()), a, b, c, e.line)) out.push_back((*obj.list)[static_cast<size_t>(i)]);
          return Value::new_list(std::move(out));
        }
        if (obj.type == Value::Type::string) return Value::string(slice_string(obj.s, a, b, c, e.line));
        throw RenderError(RenderErrorKind::type_error, e.line, std::string("'") + type_name(obj) + "' object is not subscriptable");
      }
      return getitem(obj, eval(idx), e.line);
    }
    case Expr::Kind::slice: throw RenderError(RenderErrorKind::template_error, e.line, "a slice outside of brackets");
    case Expr::Kind::call: return eval_call(e);
    case Expr::Kind::filter: {
      Value in = e.filtered() ? eval(*e.filtered()) : Value::string(out);
      CallArgs a = eval_args(e.args);
      return filter(e.name, in, a, e.line);
    }
    case Expr::Kind::test: {
      Value in = eval(e.operand());
      CallArgs a = eval_args(e.args);
      return Value::boolean(test(e.name, in, a, e.line) != e.negated);
    }
    case Expr::Kind::unary: {
      Value v = eval(e.operand());
      if (e.name == "not") return Value::boolean(!truthy(v));
      must_be_defined(v, e.line);
      if (!is_number(v)) throw RenderError(RenderErrorKind::type_error, e.line, "bad operand type for unary " + e.name + ": '" + type_name(v) + "'");
      if (e.name == "+") return v.type == Value::Type::boolean ? Value::integer(v.i) : v;
      if (v.type == Value::Type::floating) return Value::floating(-v.f);
      if (v.i == INT64_MIN) limit(e.line, RenderErrorKind::limit_integer, "integer overflow (ggufkit's integers are 64-bit)");
      return Value::integer(-v.i);
    }
    case Expr::Kind::binary: {
      Value a = eval(e.left());
      if (e.name == "and") return truthy(a) ? eval(e.right()) : a;
      if (e.name == "or") return truthy(a) ? a : eval(e.right());
      return binary(e.name, a, eval(e.right()), e.line);
    }
    case Expr::Kind::compare: {
      Value a = eval(e.term(0));
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value b = eval(e.term(i + 1));
        if (!compare(e.ops[i], a, b, e.line)) return Value::boolean(false);
        a = std::move(b);
      }
      return Value::boolean(true);
    }
    case Expr::Kind::cond: {
      if (truthy(eval(e.cond()))) return eval(e.then());
      if (e.else_()) return eval(*e.else_());
      return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
    }
  }
  return Value::undefined("");
}

Value Renderer::eval_call(const Expr& e) {
  Value f = eval(e.operand());
  CallArgs a = eval_args(e.args);
  return call(f, a, e.line);
}

void Renderer::assign(const Expr& target, const Value& v, Frame& into) {
  if (target.kind == Expr::Kind::name) {
    into.vars[target.name] = v;
    return;
  }
  if (target.kind == Expr::Kind::tuple || target.kind == Expr::Kind::list) {
    List items = items_of(v, target.line);
    if (items.size() != target.kids.size())
      throw RenderError(RenderErrorKind::value_error, target.line,
                        items.size() > target.kids.size()
                            ? "too many values to unpack (expected " + std::to_string(target.kids.size()) + ")"
                            : "not enough values to unpack (expected " + std::to_string(target.kids.size()) + ", got " +
                                  std::to_string(items.size()) + ")");
    for (size_t i = 0; i < items.size(); ++i) assign(*target.kids[i], items[i], into);
    return;
  }
  if (target.kind == Expr::Kind::attr) {  // ns.attr = v
    Value ns = eval(target.operand());
    if (ns.type != Value::Type::ns) throw RenderError(RenderErrorKind::template_runtime_error, target.line, "cannot assign attribute on non-namespace object");
    ns.dict->set(Value::string(target.name), v);
    return;
  }
  throw RenderError(RenderErrorKind::template_error, target.line, "cannot assign to this expression");
}

Value Renderer::macro(const Node& n, FramePtr closure, const std::string& name) {
  const Node* node = &n;
  return callable(name, [node, closure, name](Renderer& r, CallArgs& a, int line) {
    Call depth(r, line);
    auto frame = r.new_frame();
    frame->parent = closure;
    const size_t first_default = node->params.size() - node->defaults.size();
    List varargs;
    for (size_t i = 0; i < a.pos.size(); ++i) {
      if (i < node->params.size()) frame->vars[node->params[i]] = a.pos[i];
      else varargs.push_back(a.pos[i]);
    }
    Value kwargs = Value::new_dict();
    for (auto& [k, v] : a.kw) {
      auto it = std::find(node->params.begin(), node->params.end(), k);
      if (k == "caller") frame->vars["caller"] = v;
      else if (it != node->params.end()) frame->vars[k] = v;
      else kwargs.dict->set(Value::string(k), v);
    }
    FramePtr saved = r.scope;
    r.scope = frame;
    for (size_t i = 0; i < node->params.size(); ++i) {
      if (frame->vars.count(node->params[i])) continue;
      frame->vars[node->params[i]] = i >= first_default ? r.eval(*node->defaults[i - first_default])
                                                        : Value::undefined("parameter '" + node->params[i] + "' was not provided");
    }
    frame->vars["varargs"] = Value::new_list(std::move(varargs));
    frame->vars["varargs"].tuple = true;
    frame->vars["kwargs"] = kwargs;
    std::string got;
    try {
      got = r.capture(node->body());
    } catch (...) {
      r.scope = saved;
      throw;
    }
    r.scope = saved;
    return Value::string(std::move(got));
  });
}

void Renderer::for_loop(const Node& n, std::shared_ptr<const List> all, int depth) {
  const Expr& target = n.target();
  // The body's frame: cleared each iteration, so what the body sets lasts one iteration
  // (jinja2: `{% set c = c + 1 %}` in a loop reads the outer c every time).
  auto frame = new_frame();
  frame->parent = scope;
  FramePtr saved = scope;
  scope = frame;
  if (n.test()) {  // `for x in xs if cond`: filtered before the loop counts
    auto kept = std::make_shared<List>();
    for (const Value& v : *all) {
      iteration(n.line);
      assign(target, v, *frame);
      if (truthy(eval(*n.test()))) kept->push_back(v);
    }
    all = kept;
  }
  const List& items = *all;
  Value loop = Value::new_dict();
  loop.fn = std::make_shared<Callable>(Callable{"loop", nullptr});
  if (n.recursive) {
    const Node* node = &n;
    loop.fn->fn = [node, depth](Renderer& r, CallArgs& a, int line) {
      Call guard(r, line);
      auto inner = r.iterate(arg(a, 0, "iterable"), line);
      std::string saved_out = std::move(r.out);
      r.out.clear();
      r.for_loop(*node, inner, depth + 1);
      std::string got = std::move(r.out);
      r.out = std::move(saved_out);
      return Value::string(std::move(got));
    };
  }
  const int64_t len = static_cast<int64_t>(items.size());
  // The loop object's fields, made once and updated in place each iteration.
  auto at = std::make_shared<int64_t>(0);
  for (const char* k : {"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth", "depth0", "previtem",
                        "nextitem"})
    loop.dict->items.emplace_back(Value::string(k), Value::none());
  loop.dict->items.emplace_back(Value::string("cycle"), callable("cycle", [at](Renderer&, CallArgs& a, int line) {
                                  if (a.pos.empty()) throw RenderError(RenderErrorKind::type_error, line, "no items for cycling given");
                                  return a.pos[static_cast<size_t>(*at) % a.pos.size()];
                                }));
  try {
    for (int64_t i = 0; i < len; ++i) {
      iteration(n.line);
      *at = i;
      frame->vars.clear();
      frame->vars["loop"] = loop;  // one object, its fields updated in place
      auto& f = loop.dict->items;
      f[0].second = Value::integer(i + 1);
      f[1].second = Value::integer(i);
      f[2].second = Value::integer(len - i);
      f[3].second = Value::integer(len - i - 1);
      f[4].second = Value::boolean(i == 0);
      f[5].second = Value::boolean(i == len - 1);
      f[6].second = Value::integer(len);
      f[7].second = Value::integer(depth);
      f[8].second = Value::integer(depth - 1);
      f[9].second = i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item");
      f[10].second = i + 1 < len ? items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item");
      assign(target, items[static_cast<size_t>(i)], *frame);
      if (exec(n.body()) == Flow::brk) break;
    }
    if (len == 0 && n.else_()) {
      scope = saved;
      exec(*n.else_());
    }
  } catch (...) {
    scope = saved;
    throw;
  }
  scope = saved;
}

Flow Renderer::exec(const Node& n) {
  Nest nest(*this, n.line);
  tick(n.line);
  switch (n.kind) {
    case Node::Kind::text: emit(n.text, n.line); return Flow::normal;
    case Node::Kind::output:
      for (const ExprPtr& e : n.exprs) emit(str(eval(*e)), n.line);
      return Flow::normal;
    case Node::Kind::if_block:
      for (size_t i = 0; i < n.tests().size(); ++i)
        if (truthy(eval(*n.tests()[i]))) return exec(n.body(i));
      return n.else_() ? exec(*n.else_()) : Flow::normal;
    case Node::Kind::for_loop: for_loop(n, iterate(eval(n.iter()), n.line), 1); return Flow::normal;
    case Node::Kind::set: assign(n.target(), eval(n.value()), *scope); return Flow::normal;
    case Node::Kind::set_block: {
      Value body = Value::string(capture(n.body()));
      if (n.filter()) {
        std::string saved = std::move(out);
        out = body.s;  // the filter chain's input
        try {
          body = eval(*n.filter());
        } catch (...) {
          out = std::move(saved);
          throw;
        }
        out = std::move(saved);
      }
      assign(n.target(), body, *scope);
      return Flow::normal;
    }
    case Node::Kind::macro: scope->vars[n.name] = macro(n, scope, n.name); return Flow::normal;
    case Node::Kind::call_block: {
      const Expr& c = n.call();
      Value f = eval(c.operand());
      CallArgs a = eval_args(c.args);
      a.kw.emplace_back("caller", macro(n, scope, "caller"));
      emit(str(call(f, a, n.line)), n.line);
      return Flow::normal;
    }
    case Node::Kind::filter_block: {
      std::string body = capture(n.body());
      std::string saved = std::move(out);
      out = body;
      Value v;
      try {
        v = eval(*n.filter());
      } catch (...) {
        out = std::move(saved);
        throw;
      }
      out = std::move(saved);
      emit(str(v), n.line);
      return Flow::normal;
    }
    case Node::Kind::with_block: {
      auto frame = new_frame();
      frame->parent = scope;
      for (size_t i = 0; i < n.targets().size(); ++i) assign(*n.targets()[i], eval(*n.values()[i]), *frame);
      FramePtr saved = scope;
      scope = frame;
      Flow f;
      try {
        f = exec(n.body());
      } catch (...) {
        scope = saved;
        throw;
      }
      scope = saved;
      return f;
    }
    case Node::Kind::generation:
    case Node::Kind::block:
    case Node::Kind::autoescape: return exec(n.body());
    case Node::Kind::loop_break: return Flow::brk;
    case Node::Kind::loop_continue: return Flow::cont;
    case Node::Kind::extends:
    case Node::Kind::include:
    case Node::Kind::import:
    case Node::Kind::from_import:
      throw RenderError(RenderErrorKind::type_error, n.line, "no loader for this environment specified (a chat template cannot load others)");
  }
  return Flow::normal;
}

namespace {

// jinja2's compiler refuses a filter or test it does not know (not in the name tables),
// unless the name sits in an if statement or an inline if (a "soft" frame), where only
// reaching it fails.
void compile_expr(const Expr* e, bool soft) {
  if (!e) return;
  if (e->kind == Expr::Kind::cond) soft = true;
  if (!soft && e->kind == Expr::Kind::filter && !find_filter(e->name))
    throw RenderError(RenderErrorKind::unknown_name, e->line, "No filter named '" + e->name + "'.");
  if (!soft && e->kind == Expr::Kind::test && !find_test(e->name))
    throw RenderError(RenderErrorKind::unknown_name, e->line, "No test named '" + e->name + "'.");
  for (const ExprPtr& k : e->kids) compile_expr(k.get(), soft);
  for (const ExprPtr& a : e->args.positional) compile_expr(a.get(), soft);
  for (const auto& [name, a] : e->args.keywords) compile_expr(a.get(), soft);
  compile_expr(e->args.star.get(), soft);
  compile_expr(e->args.double_star.get(), soft);
}

void compile_body(const Body& body, bool soft) {
  for (const NodePtr& n : body) {
    const bool here = soft || n->kind == Node::Kind::if_block;  // an if's tests and bodies are soft
    for (const ExprPtr& e : n->exprs)  // a loop's filter is in the loop's own frame
      compile_expr(e.get(), n->kind == Node::Kind::for_loop && e.get() == n->test() ? false : here);
    for (const ExprPtr& d : n->defaults) compile_expr(d.get(), false);
    for (const Body& inner : n->bodies) compile_body(inner, n->kind == Node::Kind::if_block ? here : false);
  }
}

}  // namespace

Value chat_context(const Value& conversation, const std::optional<std::string>& bos_token,
                   const std::optional<std::string>& eos_token) {
  if (conversation.type != Value::Type::dict) throw std::invalid_argument("a conversation is a JSON object with \"messages\"");
  const Value* messages = conversation.dict->find("messages");
  if (!messages || messages->type != Value::Type::list)
    throw std::invalid_argument("a conversation needs \"messages\": a list of {\"role\", \"content\"} objects");
  Value c = Value::new_dict();
  c.dict->set(Value::string("messages"), *messages);
  for (const char* k : {"tools", "documents"}) {
    const Value* v = conversation.dict->find(k);
    c.dict->set(Value::string(k), v ? *v : Value::none());
  }
  const Value* gen = conversation.dict->find("add_generation_prompt");
  c.dict->set(Value::string("add_generation_prompt"), gen ? *gen : Value::boolean(false));
  if (bos_token) c.dict->set(Value::string("bos_token"), Value::string(*bos_token));
  if (eos_token) c.dict->set(Value::string("eos_token"), Value::string(*eos_token));
  for (const auto& [k, v] : conversation.dict->items) c.dict->set(k, v);  // anything else, and the tokens if given
  return c;
}

std::string render(const Template& t, const Value& context, const RenderOptions& options) {
  compile_body(t.body, false);  // what jinja2 refuses when it compiles, before a byte is rendered
  Renderer r(options);
  auto globals = r.new_frame();
  globals->vars["range"] = callable("range", [](Renderer&, CallArgs& a, int line) {
    int64_t start = 0, stop, step = 1;
    if (a.pos.empty()) throw RenderError(RenderErrorKind::type_error, line, "range expected at least 1 argument, got 0");
    if (a.pos.size() == 1) stop = to_int(a.pos[0], line);
    else {
      start = to_int(a.pos[0], line);
      stop = to_int(a.pos[1], line);
      if (a.pos.size() > 2) step = to_int(a.pos[2], line);
    }
    if (step == 0) throw RenderError(RenderErrorKind::value_error, line, "range() arg 3 must not be zero");
    // How many items, without overflow: the unsigned distance over the step.
    uint64_t n = 0;
    if (step > 0 && stop > start) n = (static_cast<uint64_t>(stop) - static_cast<uint64_t>(start) - 1) / static_cast<uint64_t>(step) + 1;
    if (step < 0 && start > stop)
      n = (static_cast<uint64_t>(start) - static_cast<uint64_t>(stop) - 1) / (0 - static_cast<uint64_t>(step)) + 1;
    if (n > 100000)
      throw RenderError(RenderErrorKind::overflow, line, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    List out;
    out.reserve(n);
    for (uint64_t k = 0; k < n; ++k) out.push_back(Value::integer(start + static_cast<int64_t>(k) * step));
    return Value::new_list(std::move(out));
  });
  globals->vars["dict"] = callable("dict", [](Renderer&, CallArgs& a, int) {
    Value d = Value::new_dict();
    if (!a.pos.empty() && a.pos[0].type == Value::Type::dict) *d.dict = *a.pos[0].dict;
    for (auto& [k, v] : a.kw) d.dict->set(Value::string(k), v);
    return d;
  });
  globals->vars["namespace"] = callable("namespace", [](Renderer& r, CallArgs& a, int) {
    Value ns = Value::new_dict();
    ns.type = Value::Type::ns;
    r.namespaces.push_back(ns.dict);
    if (!a.pos.empty() && a.pos[0].type == Value::Type::dict) *ns.dict = *a.pos[0].dict;
    for (auto& [k, v] : a.kw) ns.dict->set(Value::string(k), v);
    return ns;
  });
  globals->vars["raise_exception"] = callable("raise_exception", [](Renderer&, CallArgs& a, int line) -> Value {
    throw RenderError(RenderErrorKind::raise_exception, line, a.pos.empty() ? "" : str(a.pos[0]));
  });
  globals->vars["strftime_now"] = callable("strftime_now", [](Renderer& r, CallArgs& a, int line) {
    Value f = arg(a, 0, "format");
    expect_string(f, line, "strftime() argument 1");
    std::tm tm = strftime_clock(r.opt_, line);
    char buf[256];
    size_t n = f.s.empty() ? 0 : std::strftime(buf, sizeof buf, f.s.c_str(), &tm);
    return Value::string(std::string(buf, n));
  });
  add_helper_globals(*globals);
  auto top = r.new_frame();
  top->parent = globals;
  if (context.type == Value::Type::dict)
    for (const auto& [k, v] : context.dict->items) top->vars[str(k)] = v;
  r.scope = top;
  r.exec(t.body);
  return std::move(r.out);
}

}  // namespace ggufkit::jinja
