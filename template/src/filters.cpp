// jinja2's filters and tests, as the sandbox has them: two name tables, as jinja2's
// environment.filters and environment.tests dicts.
#include <algorithm>
#include <cmath>
#include <iterator>

#include "pyformat.h"
#include "renderer.h"

namespace ggufkit::jinja {

namespace {

Value attribute_of(Renderer& r, const Value& item, const std::string& path, int line) {
  Value v = item;
  size_t at = 0;
  while (at <= path.size()) {  // "a.b" and "a.0", as jinja2's make_attrgetter
    size_t dot = path.find('.', at);
    std::string part = path.substr(at, dot == std::string::npos ? std::string::npos : dot - at);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    v = digits ? r.getitem(v, Value::integer(std::stoll(part)), line) : r.getitem(v, Value::string(part), line);
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  return v;
}

// The sort key of dictsort, sort, min and max: strings lowered unless case-sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.type == Value::Type::string) return Value::string(ascii_case(v.s, false));
  return v;
}

std::string need_string(const Value& x) { return x.type == Value::Type::string ? x.s : str(x); }

using K = RenderErrorKind;

// ---- filters: each (renderer, value, arguments, line, the name it was called by) ----

Value f_safe(Renderer&, const Value& v, CallArgs&, int, std::string_view) {
  Value m = v.type == Value::Type::string ? v : Value::string(str(v));
  m.safe = true;
  return m;
}

Value f_string(Renderer&, const Value& v, CallArgs&, int, std::string_view) {
  return v.type == Value::Type::string ? v : Value::string(str(v));
}

Value f_length(Renderer&, const Value& v, CallArgs&, int line, std::string_view) {  // and count
  switch (v.type) {
    case Value::Type::undefined: return Value::integer(0);
    case Value::Type::string: return Value::integer(static_cast<int64_t>(code_point_count(v.s)));
    case Value::Type::list:
      if (v.generator) throw RenderError(K::type_error, line, "object of type 'generator' has no len()");
      return Value::integer(static_cast<int64_t>(v.list->size()));
    case Value::Type::dict:
    case Value::Type::ns: return Value::integer(static_cast<int64_t>(v.dict->items.size()));
    default: throw RenderError(K::type_error, line, std::string("object of type '") + type_name(v) + "' has no len()");
  }
}

Value f_default(Renderer&, const Value& v, CallArgs& a, int, std::string_view) {  // and d
  bool boolean = truthy(arg(a, 1, "boolean", Value::boolean(false)));
  if (v.type == Value::Type::undefined || (boolean && !truthy(v))) return arg(a, 0, "default_value", Value::string(""));
  return v;
}

Value f_trim(Renderer&, const Value& v, CallArgs& a, int, std::string_view) {
  Value chars = arg(a, 0, "chars");
  Value out = Value::string(strip(need_string(v), &chars, true, true));
  out.safe = v.safe;
  return out;
}

Value f_case(Renderer&, const Value& v, CallArgs&, int, std::string_view name) {  // upper, lower
  return Value::string(ascii_case(need_string(v), name == "upper"));
}

Value f_title(Renderer&, const Value& v, CallArgs&, int, std::string_view) { return Value::string(title_case(need_string(v))); }

Value f_capitalize(Renderer&, const Value& v, CallArgs&, int, std::string_view) {
  std::string t = ascii_case(need_string(v), false);
  if (!t.empty()) t[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(t[0])));
  return Value::string(t);
}

Value f_replace(Renderer& r, const Value& v, CallArgs& a, int line, std::string_view) {
  Value from = arg(a, 0, "old"), to = arg(a, 1, "new"), count = arg(a, 2, "count");
  std::string out = replace_all(need_string(v), str(from), str(to), count.type == Value::Type::none ? -1 : count.i);
  r.sized(out.size(), line);
  return Value::string(out);
}

Value f_join(Renderer& r, const Value& v, CallArgs& a, int line, std::string_view) {
  Value sep = arg(a, 0, "d", Value::string("")), attr = arg(a, 1, "attribute");
  std::string out;
  List items = r.items_of(v, line);
  const std::string between = str(sep);
  for (size_t i = 0; i < items.size(); ++i) {
    std::string item = str(attr.type == Value::Type::none ? items[i] : attribute_of(r, items[i], str(attr), line));
    r.sized(out.size() + (i ? between.size() : 0) + item.size(), line);  // before it is built
    r.tick(line);
    if (i) out += between;
    out += item;
  }
  return Value::string(out);
}

Value f_tojson(Renderer& r, const Value& v, CallArgs& a, int line, std::string_view) {
  JsonStyle style;
  Value indent = arg(a, 1, "indent"), seps = arg(a, 2, "separators"), sort = arg(a, 3, "sort_keys", Value::boolean(false));
  if (indent.type == Value::Type::integer) {
    style.pretty = true;
    r.sized(static_cast<uint64_t>(std::max<int64_t>(0, indent.i)), line);  // the indent itself
    style.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, indent.i)), ' ');
    style.item_sep = ",";
  } else if (indent.type == Value::Type::string) {
    style.pretty = true;
    style.indent = indent.s;
    style.item_sep = ",";
  }
  if (seps.type == Value::Type::list && seps.list->size() == 2) {
    style.item_sep = str((*seps.list)[0]);
    style.key_sep = str((*seps.list)[1]);
  }
  style.sort_keys = truthy(sort);
  std::string out;
  try {
    dump_json(out, v, style);
  } catch (const JsonError& e) {  // json.dumps: "Object of type Undefined is not JSON serializable"
    throw RenderError(K::type_error, line, e.what());
  }
  r.sized(out.size(), line);
  return Value::string(out);
}

Value f_items(Renderer& r, const Value& v, CallArgs&, int line, std::string_view) {
  if (v.type == Value::Type::undefined) return Value::new_list();
  if (v.type != Value::Type::dict) throw RenderError(K::type_error, line, "Can only get item pairs from a mapping.");
  r.reserve_items(v.dict->items.size(), line, 4 * kItemBytes);  // a slot and a pair of two
  List out;
  for (const auto& [k, x] : v.dict->items) out.push_back(pair(k, x));
  return Value::new_list(out);
}

Value f_dictsort(Renderer& r, const Value& v, CallArgs& a, int line, std::string_view) {
  if (v.type != Value::Type::dict) throw RenderError(K::type_error, line, "dictsort needs a mapping");
  bool cs = truthy(arg(a, 0, "case_sensitive", Value::boolean(false)));
  bool by_value = str(arg(a, 1, "by", Value::string("key"))) == "value";
  bool rev = truthy(arg(a, 2, "reverse", Value::boolean(false)));
  r.reserve_items(v.dict->items.size(), line, 4 * kItemBytes);
  List out;
  for (const auto& [k, x] : v.dict->items) out.push_back(pair(k, x));
  std::stable_sort(out.begin(), out.end(), [&](const Value& p, const Value& q) {
    r.tick(line);
    const Value& x = (*p.list)[by_value], &y = (*q.list)[by_value];
    return rev ? r.less(sort_key(y, cs), sort_key(x, cs), line) : r.less(sort_key(x, cs), sort_key(y, cs), line);
  });
  return Value::new_list(out);
}

Value f_list(Renderer& r, const Value& v, CallArgs&, int line, std::string_view) { return Value::new_list(r.items_of(v, line)); }

Value f_first_last(Renderer& r, const Value& v, CallArgs&, int line, std::string_view name) {
  List items = r.items_of(v, line);
  if (items.empty()) return Value::undefined("No " + std::string(name) + " item, sequence was empty.");
  return name == "first" ? items.front() : items.back();
}

Value f_reverse(Renderer& r, const Value& v, CallArgs&, int line, std::string_view) {
  if (v.type == Value::Type::string) return Value::string(slice_string(v.s, Value::none(), Value::none(), Value::integer(-1), line));
  List items = r.items_of(v, line);
  std::reverse(items.begin(), items.end());
  Value out = Value::new_list(items);
  out.generator = true;  // jinja2's reversed(): an iterator (a string's reverse stays a string)
  return out;
}

Value f_sorted(Renderer& r, const Value& v, CallArgs& a, int line, std::string_view name) {  // sort, min, max, unique
  bool rev = name == "sort" && truthy(arg(a, 0, "reverse", Value::boolean(false)));
  bool cs = truthy(arg(a, name == "sort" ? 1 : 0, "case_sensitive", Value::boolean(false)));
  Value attr = arg(a, name == "sort" ? 2 : 1, "attribute");
  List items = r.items_of(v, line);
  auto key = [&](const Value& x) { return sort_key(attr.type == Value::Type::none ? x : attribute_of(r, x, str(attr), line), cs); };
  if (name == "unique") {
    List out, keys;
    for (const Value& x : items) {
      Value k = key(x);
      if (std::none_of(keys.begin(), keys.end(), [&](const Value& y) {
            r.tick(line);  // each item against those kept: long
            return equal(y, k);
          })) {
        keys.push_back(k);
        out.push_back(x);
      }
    }
    return Value::new_list(out);
  }
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    r.tick(line);
    return rev ? r.less(key(y), key(x), line) : r.less(key(x), key(y), line);
  });
  if (name == "sort") return Value::new_list(items);
  if (items.empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
  return name == "min" ? items.front() : items.back();
}

Value f_map(Renderer& r, const Value& v, CallArgs& a, int line, std::string_view) {
  List items = truthy(v) ? r.items_of(v, line) : List{}, out;  // jinja2: `if value: for item in value`
  if (const Value* attr = a.keyword("attribute")) {
    const Value* dflt = a.keyword("default");
    for (const Value& x : items) {
      r.tick(line);
      Value got = attribute_of(r, x, str(*attr), line);
      out.push_back(got.type == Value::Type::undefined && dflt ? *dflt : got);
    }
    return Value::new_list(out);
  }
  if (a.pos.empty()) throw RenderError(K::filter_argument, line, "map requires a filter argument");
  CallArgs rest;
  rest.pos.assign(a.pos.begin() + 1, a.pos.end());
  rest.kw = a.kw;
  for (const Value& x : items) {
    r.tick(line);
    out.push_back(r.filter(str(a.pos[0]), x, rest, line));
  }
  return Value::new_list(out);
}

Value f_select(Renderer& r, const Value& v, CallArgs& a, int line, std::string_view name) {  // select, reject, *attr
  const bool attr = name.size() > 6, keep = name[0] == 's';
  size_t first = attr ? 1 : 0;
  List items = truthy(v) ? r.items_of(v, line) : List{}, out;
  for (const Value& x : items) {
    r.tick(line);
    Value subject = attr ? attribute_of(r, x, str(arg(a, 0, "attribute")), line) : x;
    bool hit;
    if (a.pos.size() > first) {
      CallArgs rest;
      rest.pos.assign(a.pos.begin() + static_cast<long>(first) + 1, a.pos.end());
      hit = r.test(str(a.pos[first]), subject, rest, line);
    } else {
      hit = truthy(subject);
    }
    if (hit == keep) out.push_back(x);
  }
  return Value::new_list(out);
}

Value f_indent(Renderer& r, const Value& v, CallArgs& a, int line, std::string_view) {
  Value width = arg(a, 0, "width", Value::integer(4));
  bool first = truthy(arg(a, 1, "first", Value::boolean(false))), blank = truthy(arg(a, 2, "blank", Value::boolean(false)));
  if (width.type != Value::Type::string) r.sized(static_cast<uint64_t>(std::max<int64_t>(0, width.i)), line);  // the pad itself
  std::string pad = width.type == Value::Type::string ? width.s : std::string(static_cast<size_t>(std::max<int64_t>(0, width.i)), ' ');
  std::string s = need_string(v) + "\n";
  std::string out = first ? pad : "";
  // Each line after the first padded (a blank one only with `blank`), refused as it grows.
  for (size_t at = 0, i = 0; at < s.size(); ++i) {
    size_t nl = s.find('\n', at);
    const bool padded = i > 0 && (blank || nl > at);
    r.sized(out.size() + (i > 0) + (padded ? pad.size() : 0) + (nl - at), line);
    r.tick(line);
    if (i > 0) out += '\n';
    if (padded) out += pad;
    out.append(s, at, nl - at);
    at = nl + 1;
  }
  return Value::string(std::move(out));
}

Value f_int(Renderer&, const Value& v, CallArgs& a, int, std::string_view) {
  Value dflt = arg(a, 0, "default", Value::integer(0));
  if (v.type == Value::Type::integer || v.type == Value::Type::boolean) return Value::integer(v.i);
  if (v.type == Value::Type::floating) return std::isfinite(v.f) ? Value::integer(static_cast<int64_t>(v.f)) : dflt;
  if (v.type == Value::Type::string) {
    std::string t = strip(v.s, nullptr, true, true);
    char* end = nullptr;
    long long n = std::strtoll(t.c_str(), &end, 10);
    if (!t.empty() && !*end) return Value::integer(n);
    double d = std::strtod(t.c_str(), &end);
    if (!t.empty() && !*end && std::isfinite(d)) return Value::integer(static_cast<int64_t>(d));
  }
  return dflt;
}

Value f_float(Renderer&, const Value& v, CallArgs& a, int, std::string_view) {
  Value dflt = arg(a, 0, "default", Value::floating(0));
  if (is_number(v)) return Value::floating(as_double(v));
  if (v.type == Value::Type::string) {
    std::string t = strip(v.s, nullptr, true, true);
    char* end = nullptr;
    double d = std::strtod(t.c_str(), &end);
    if (!t.empty() && !*end) return Value::floating(d);
  }
  return dflt;
}

Value f_abs(Renderer&, const Value& v, CallArgs&, int line, std::string_view) {
  if (v.type == Value::Type::floating) return Value::floating(std::fabs(v.f));
  if (is_number(v)) return Value::integer(v.i < 0 ? -v.i : v.i);
  throw RenderError(K::type_error, line, std::string("bad operand type for abs(): '") + type_name(v) + "'");
}

Value f_round(Renderer&, const Value& v, CallArgs& a, int line, std::string_view) {
  int64_t precision = arg(a, 0, "precision", Value::integer(0)).i;
  std::string method = str(arg(a, 1, "method", Value::string("common")));
  if (!is_number(v)) throw RenderError(K::type_error, line, std::string("type ") + type_name(v) + " doesn't define __round__ method");
  double scale = std::pow(10.0, static_cast<double>(precision)), x = as_double(v) * scale;
  double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);  // Python's round: half to even
  return Value::floating(r / scale);
}

Value f_sum(Renderer& r, const Value& v, CallArgs& a, int line, std::string_view) {
  Value attr = arg(a, 0, "attribute"), total = arg(a, 1, "start", Value::integer(0));
  for (const Value& x : r.items_of(v, line)) {
    r.tick(line);
    total = r.binary("+", total, attr.type == Value::Type::none ? x : attribute_of(r, x, str(attr), line), line);
  }
  return total;
}

Value f_attr(Renderer& r, const Value& v, CallArgs& a, int line, std::string_view) { return r.getattr(v, str(arg(a, 0, "name")), line); }

Value f_format(Renderer& r, const Value& v, CallArgs& a, int line, std::string_view) { return format_filter(r, v, a, line); }

Value f_escape(Renderer&, const Value& v, CallArgs&, int, std::string_view name) {  // escape, e, forceescape
  Value m = Value::string(v.safe && name != "forceescape" ? v.s : html_escape(str(v)));
  m.safe = true;
  return m;
}

Value f_wordcount(Renderer&, const Value& v, CallArgs&, int, std::string_view) {
  int64_t n = 0;
  bool in = false;
  for (char c : need_string(v)) {
    bool w = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
    if (w && !in) ++n;
    in = w;
  }
  return Value::integer(n);
}

Value f_batch(Renderer& r, const Value& v, CallArgs& a, int line, std::string_view) {
  int64_t n = to_int(arg(a, 0, "linecount"), line);
  if (n <= 0) throw RenderError(K::value_error, line, "batch size must be positive");
  Value fill = arg(a, 1, "fill_with");
  List items = r.items_of(v, line), out, cur;
  for (const Value& x : items) {
    r.tick(line);
    cur.push_back(x);
    if (static_cast<int64_t>(cur.size()) == n) {
      out.push_back(Value::new_list(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    if (fill.type != Value::Type::none) {
      r.reserve_items(static_cast<uint64_t>(n), line);  // batch(10**9, 0) fills a billion
      while (static_cast<int64_t>(cur.size()) < n) cur.push_back(fill);
    }
    out.push_back(Value::new_list(cur));
  }
  return Value::new_list(out);
}

// jinja2's filters, sorted by name. A null function is one jinja2 has and ggufkit does not:
// known when the template compiles, refused when reached. `generator`: jinja2 returns a
// generator (or an iterator): no len(), no JSON.
constexpr FilterDef kFilters[] = {
    {"abs", f_abs, false},
    {"attr", f_attr, false},
    {"batch", f_batch, true},
    {"capitalize", f_capitalize, false},
    {"center", nullptr, false},
    {"count", f_length, false},
    {"d", f_default, false},
    {"default", f_default, false},
    {"dictsort", f_dictsort, false},
    {"e", f_escape, false},
    {"escape", f_escape, false},
    {"filesizeformat", nullptr, false},
    {"first", f_first_last, false},
    {"float", f_float, false},
    {"forceescape", f_escape, false},
    {"format", f_format, false},
    {"groupby", nullptr, false},
    {"indent", f_indent, false},
    {"int", f_int, false},
    {"items", f_items, true},
    {"join", f_join, false},
    {"last", f_first_last, false},
    {"length", f_length, false},
    {"list", f_list, false},
    {"lower", f_case, false},
    {"map", f_map, true},
    {"max", f_sorted, false},
    {"min", f_sorted, false},
    {"pprint", nullptr, false},
    {"random", nullptr, false},
    {"reject", f_select, true},
    {"rejectattr", f_select, true},
    {"replace", f_replace, false},
    {"reverse", f_reverse, false},  // an iterator unless given a string: f_reverse marks it
    {"round", f_round, false},
    {"safe", f_safe, false},
    {"select", f_select, true},
    {"selectattr", f_select, true},
    {"slice", nullptr, false},
    {"sort", f_sorted, false},
    {"string", f_string, false},
    {"striptags", nullptr, false},
    {"sum", f_sum, false},
    {"title", f_title, false},
    {"tojson", f_tojson, false},
    {"trim", f_trim, false},
    {"truncate", nullptr, false},
    {"unique", f_sorted, true},
    {"upper", f_case, false},
    {"urlencode", nullptr, false},
    {"urlize", nullptr, false},
    {"wordcount", f_wordcount, false},
    {"wordwrap", nullptr, false},
    {"xmlattr", nullptr, false},
};

// ---- tests: each (renderer, value, arguments, line, the name it was called by) ----

using T = Value::Type;

bool t_defined(Renderer&, const Value& v, CallArgs&, int, std::string_view) { return v.type != T::undefined; }
bool t_undefined(Renderer&, const Value& v, CallArgs&, int, std::string_view) { return v.type == T::undefined; }
bool t_none(Renderer&, const Value& v, CallArgs&, int, std::string_view) { return v.type == T::none; }
bool t_boolean(Renderer&, const Value& v, CallArgs&, int, std::string_view) { return v.type == T::boolean; }
bool t_true(Renderer&, const Value& v, CallArgs&, int, std::string_view) { return v.type == T::boolean && v.i; }
bool t_false(Renderer&, const Value& v, CallArgs&, int, std::string_view) { return v.type == T::boolean && !v.i; }
bool t_integer(Renderer&, const Value& v, CallArgs&, int, std::string_view) { return v.type == T::integer; }
bool t_float(Renderer&, const Value& v, CallArgs&, int, std::string_view) { return v.type == T::floating; }
bool t_number(Renderer&, const Value& v, CallArgs&, int, std::string_view) { return is_number(v); }
bool t_string(Renderer&, const Value& v, CallArgs&, int, std::string_view) { return v.type == T::string; }
bool t_mapping(Renderer&, const Value& v, CallArgs&, int, std::string_view) { return v.type == T::dict && !v.fn; }
bool t_iterable(Renderer&, const Value& v, CallArgs&, int, std::string_view) {
  return v.type == T::string || v.type == T::list || v.type == T::dict || v.type == T::undefined;
}
bool t_sequence(Renderer&, const Value& v, CallArgs&, int, std::string_view) {
  return v.type == T::string || v.type == T::list || (v.type == T::dict && !v.fn) || v.type == T::undefined;
}
bool t_callable(Renderer&, const Value& v, CallArgs&, int, std::string_view) { return v.type == T::callable || (v.fn && v.fn->fn); }
bool t_case(Renderer&, const Value& v, CallArgs&, int, std::string_view name) {  // lower, upper
  std::string s = str(v);
  return s == ascii_case(s, name == "upper");
}
bool t_escaped(Renderer&, const Value&, CallArgs&, int, std::string_view) { return false; }
bool t_parity(Renderer& r, const Value& v, CallArgs& a, int line, std::string_view name) {  // odd, even, divisibleby
  r.must_be_defined(v, line);
  int64_t n = to_int(v, line), by = name == "divisibleby" ? to_int(arg(a, 0, "num"), line) : 2;
  if (by == 0) throw RenderError(K::zero_division, line, "integer modulo by zero");
  int64_t m = ((n % by) + by) % by;
  return name == "odd" ? m == 1 : m == 0;
}
template <const char* op>
bool t_compare(Renderer& r, const Value& v, CallArgs& a, int line, std::string_view) {
  return r.compare(op, v, arg(a, 0, "other"), line);
}
constexpr char kEq[] = "==", kNe[] = "!=", kLt[] = "<", kLe[] = "<=", kGt[] = ">", kGe[] = ">=", kIn[] = "in";
bool t_sameas(Renderer&, const Value& v, CallArgs& a, int, std::string_view) {
  Value o = arg(a, 0, "other");
  if (v.type != o.type) return false;
  if (v.type == T::list) return v.list == o.list;
  if (v.type == T::dict || v.type == T::ns) return v.dict == o.dict;
  return equal(v, o);
}

// jinja2's tests, sorted by name (byte order: the operators first); a null function as in kFilters.
constexpr TestDef kTests[] = {
    {"!=", t_compare<kNe>},
    {"<", t_compare<kLt>},
    {"<=", t_compare<kLe>},
    {"==", t_compare<kEq>},
    {">", t_compare<kGt>},
    {">=", t_compare<kGe>},
    {"boolean", t_boolean},
    {"callable", t_callable},
    {"defined", t_defined},
    {"divisibleby", t_parity},
    {"eq", t_compare<kEq>},
    {"equalto", t_compare<kEq>},
    {"escaped", t_escaped},
    {"even", t_parity},
    {"false", t_false},
    {"filter", nullptr},
    {"float", t_float},
    {"ge", t_compare<kGe>},
    {"greaterthan", t_compare<kGt>},
    {"gt", t_compare<kGt>},
    {"in", t_compare<kIn>},
    {"integer", t_integer},
    {"iterable", t_iterable},
    {"le", t_compare<kLe>},
    {"lessthan", t_compare<kLt>},
    {"lower", t_case},
    {"lt", t_compare<kLt>},
    {"mapping", t_mapping},
    {"ne", t_compare<kNe>},
    {"none", t_none},
    {"number", t_number},
    {"odd", t_parity},
    {"sameas", t_sameas},
    {"sequence", t_sequence},
    {"string", t_string},
    {"test", nullptr},
    {"true", t_true},
    {"undefined", t_undefined},
    {"upper", t_case},
};

template <class Def, size_t N>
constexpr bool names_in_order(const Def (&table)[N]) {  // strictly sorted: a binary search finds each, none twice
  for (size_t i = 1; i < N; ++i)
    if (!(table[i - 1].name < table[i].name)) return false;
  return true;
}
static_assert(names_in_order(kFilters), "kFilters must be sorted by name, without duplicates");
static_assert(names_in_order(kTests), "kTests must be sorted by name, without duplicates");

template <class Def, size_t N>
const Def* find_in(const Def (&table)[N], std::string_view name) {
  auto it = std::lower_bound(std::begin(table), std::end(table), name, [](const Def& d, std::string_view n) { return d.name < n; });
  return it != std::end(table) && it->name == name ? it : nullptr;
}

template <class Def, size_t N>
std::vector<std::string_view> implemented(const Def (&table)[N]) {
  std::vector<std::string_view> out;
  for (const Def& d : table)
    if (d.fn) out.push_back(d.name);
  return out;
}

}  // namespace

const FilterDef* find_filter(std::string_view name) { return find_in(kFilters, name); }
const TestDef* find_test(std::string_view name) { return find_in(kTests, name); }
std::vector<std::string_view> filter_names() { return implemented(kFilters); }
std::vector<std::string_view> test_names() { return implemented(kTests); }

Value Renderer::filter(const std::string& name, const Value& v, CallArgs& a, int line) {
  const FilterDef* f = find_filter(name);
  if (!f || !f->fn) throw RenderError(K::unknown_name, line, "No filter named '" + name + "'.");
  Value out = f->fn(*this, v, a, line, f->name);
  if (f->generator && out.type == Value::Type::list) out.generator = true;
  return out;
}

bool Renderer::test(const std::string& name, const Value& v, CallArgs& a, int line) {
  const TestDef* t = find_test(name);
  if (!t || !t->fn) throw RenderError(K::unknown_name, line, "No test named '" + name + "'.");
  return t->fn(*this, v, a, line, t->name);
}

}  // namespace ggufkit::jinja
