// jinja2's filters and tests, as the sandbox has them (the renderer's part that is a table).
#include <algorithm>
#include <cmath>

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

}  // namespace

Value Renderer::filter(const std::string& name, const Value& v, CallArgs& a, int line) {
  Value out = filter_value(name, v, a, line);
  // What jinja2's filters give as a generator (or an iterator): no len(), no JSON.
  static const std::vector<std::string> generators = {"map", "select", "reject", "selectattr", "rejectattr", "items", "unique", "batch"};
  if (out.type == Value::Type::list &&
      (std::find(generators.begin(), generators.end(), name) != generators.end() || (name == "reverse" && v.type != Value::Type::string)))
    out.generator = true;
  return out;
}

Value Renderer::filter_value(const std::string& name, const Value& v, CallArgs& a, int line) {
  auto need_string = [&](const Value& x) {
    return x.type == Value::Type::string ? x.s : str(x);
  };
  if (name == "safe") {
    Value m = v.type == Value::Type::string ? v : Value::string(str(v));
    m.safe = true;
    return m;
  }
  if (name == "string") return v.type == Value::Type::string ? v : Value::string(str(v));
  if (name == "length" || name == "count") {
    switch (v.type) {
      case Value::Type::undefined: return Value::integer(0);
      case Value::Type::string: return Value::integer(static_cast<int64_t>(code_point_count(v.s)));
      case Value::Type::list:
        if (v.generator) throw RenderError("TypeError", line, "object of type 'generator' has no len()");
        return Value::integer(static_cast<int64_t>(v.list->size()));
      case Value::Type::dict:
      case Value::Type::ns: return Value::integer(static_cast<int64_t>(v.dict->items.size()));
      default: throw RenderError("TypeError", line, std::string("object of type '") + type_name(v) + "' has no len()");
    }
  }
  if (name == "default" || name == "d") {
    bool boolean = truthy(arg(a, 1, "boolean", Value::boolean(false)));
    if (v.type == Value::Type::undefined || (boolean && !truthy(v))) return arg(a, 0, "default_value", Value::string(""));
    return v;
  }
  if (name == "trim") {
    Value chars = arg(a, 0, "chars");
    Value out = Value::string(strip(need_string(v), &chars, true, true));
    out.safe = v.safe;
    return out;
  }
  if (name == "upper" || name == "lower") return Value::string(ascii_case(need_string(v), name == "upper"));
  if (name == "title") return Value::string(title_case(need_string(v)));
  if (name == "capitalize") {
    std::string t = ascii_case(need_string(v), false);
    if (!t.empty()) t[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(t[0])));
    return Value::string(t);
  }
  if (name == "replace") {
    Value from = arg(a, 0, "old"), to = arg(a, 1, "new"), count = arg(a, 2, "count");
    std::string out = replace_all(need_string(v), str(from), str(to), count.type == Value::Type::none ? -1 : count.i);
    sized(out.size(), line);
    return Value::string(out);
  }
  if (name == "join") {
    Value sep = arg(a, 0, "d", Value::string("")), attr = arg(a, 1, "attribute");
    std::string out;
    List items = items_of(v, line);
    const std::string between = str(sep);
    for (size_t i = 0; i < items.size(); ++i) {
      std::string item = str(attr.type == Value::Type::none ? items[i] : attribute_of(*this, items[i], str(attr), line));
      sized(out.size() + (i ? between.size() : 0) + item.size(), line);  // before it is built
      tick(line);
      if (i) out += between;
      out += item;
    }
    return Value::string(out);
  }
  if (name == "tojson") {
    JsonStyle style;
    Value indent = arg(a, 1, "indent"), seps = arg(a, 2, "separators"), sort = arg(a, 3, "sort_keys", Value::boolean(false));
    if (indent.type == Value::Type::integer) {
      style.pretty = true;
      sized(static_cast<uint64_t>(std::max<int64_t>(0, indent.i)), line);  // the indent itself
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
      throw RenderError("TypeError", line, e.what());
    }
    sized(out.size(), line);
    return Value::string(out);
  }
  if (name == "items") {
    if (v.type == Value::Type::undefined) return Value::new_list();
    if (v.type != Value::Type::dict) throw RenderError("TypeError", line, "Can only get item pairs from a mapping.");
    reserve_items(v.dict->items.size(), line, 4 * kItemBytes);  // a slot and a pair of two
    List out;
    for (const auto& [k, x] : v.dict->items) out.push_back(pair(k, x));
    return Value::new_list(out);
  }
  if (name == "dictsort") {
    if (v.type != Value::Type::dict) throw RenderError("TypeError", line, "dictsort needs a mapping");
    bool cs = truthy(arg(a, 0, "case_sensitive", Value::boolean(false)));
    bool by_value = str(arg(a, 1, "by", Value::string("key"))) == "value";
    bool rev = truthy(arg(a, 2, "reverse", Value::boolean(false)));
    reserve_items(v.dict->items.size(), line, 4 * kItemBytes);
    List out;
    for (const auto& [k, x] : v.dict->items) out.push_back(pair(k, x));
    std::stable_sort(out.begin(), out.end(), [&](const Value& p, const Value& q) {
      tick(line);
      const Value& x = (*p.list)[by_value], &y = (*q.list)[by_value];
      return rev ? less(sort_key(y, cs), sort_key(x, cs), line) : less(sort_key(x, cs), sort_key(y, cs), line);
    });
    return Value::new_list(out);
  }
  if (name == "list") return Value::new_list(items_of(v, line));
  if (name == "first" || name == "last") {
    List items = items_of(v, line);
    if (items.empty()) return Value::undefined(std::string("No ") + name + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "reverse") {
    if (v.type == Value::Type::string) return Value::string(slice_string(v.s, Value::none(), Value::none(), Value::integer(-1), line));
    List items = items_of(v, line);
    std::reverse(items.begin(), items.end());
    return Value::new_list(items);
  }
  if (name == "sort" || name == "min" || name == "max" || name == "unique") {
    bool rev = name == "sort" && truthy(arg(a, 0, "reverse", Value::boolean(false)));
    bool cs = truthy(arg(a, name == "sort" ? 1 : 0, "case_sensitive", Value::boolean(false)));
    Value attr = arg(a, name == "sort" ? 2 : 1, "attribute");
    List items = items_of(v, line);
    auto key = [&](const Value& x) {
      return sort_key(attr.type == Value::Type::none ? x : attribute_of(*this, x, str(attr), line), cs);
    };
    if (name == "unique") {
      List out, keys;
      for (const Value& x : items) {
        Value k = key(x);
        if (std::none_of(keys.begin(), keys.end(), [&](const Value& y) {
              tick(line);  // each item against those kept: long
              return equal(y, k);
            })) {
          keys.push_back(k);
          out.push_back(x);
        }
      }
      return Value::new_list(out);
    }
    std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
      tick(line);
      return rev ? less(key(y), key(x), line) : less(key(x), key(y), line);
    });
    if (name == "sort") return Value::new_list(items);
    if (items.empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
    return name == "min" ? items.front() : items.back();
  }
  if (name == "map") {
    List items = truthy(v) ? items_of(v, line) : List{}, out;  // jinja2: `if value: for item in value`
    if (const Value* attr = a.keyword("attribute")) {
      const Value* dflt = a.keyword("default");
      for (const Value& x : items) {
        tick(line);
        Value got = attribute_of(*this, x, str(*attr), line);
        out.push_back(got.type == Value::Type::undefined && dflt ? *dflt : got);
      }
      return Value::new_list(out);
    }
    if (a.pos.empty()) throw RenderError("FilterArgumentError", line, "map requires a filter argument");
    CallArgs rest;
    rest.pos.assign(a.pos.begin() + 1, a.pos.end());
    rest.kw = a.kw;
    for (const Value& x : items) {
      tick(line);
      out.push_back(filter(str(a.pos[0]), x, rest, line));
    }
    return Value::new_list(out);
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    const bool attr = name.size() > 6, keep = name[0] == 's';
    size_t first = attr ? 1 : 0;
    List items = truthy(v) ? items_of(v, line) : List{}, out;
    for (const Value& x : items) {
      tick(line);
      Value subject = attr ? attribute_of(*this, x, str(arg(a, 0, "attribute")), line) : x;
      bool hit;
      if (a.pos.size() > first) {
        CallArgs rest;
        rest.pos.assign(a.pos.begin() + static_cast<long>(first) + 1, a.pos.end());
        hit = test(str(a.pos[first]), subject, rest, line);
      } else {
        hit = truthy(subject);
      }
      if (hit == keep) out.push_back(x);
    }
    return Value::new_list(out);
  }
  if (name == "indent") {
    Value width = arg(a, 0, "width", Value::integer(4));
    bool first = truthy(arg(a, 1, "first", Value::boolean(false))), blank = truthy(arg(a, 2, "blank", Value::boolean(false)));
    if (width.type != Value::Type::string) sized(static_cast<uint64_t>(std::max<int64_t>(0, width.i)), line);  // the pad itself
    std::string pad = width.type == Value::Type::string ? width.s : std::string(static_cast<size_t>(std::max<int64_t>(0, width.i)), ' ');
    std::string s = need_string(v) + "\n";
    std::string out = first ? pad : "";
    // Each line after the first padded (a blank one only with `blank`), refused as it grows.
    for (size_t at = 0, i = 0; at < s.size(); ++i) {
      size_t nl = s.find('\n', at);
      const bool padded = i > 0 && (blank || nl > at);
      sized(out.size() + (i > 0) + (padded ? pad.size() : 0) + (nl - at), line);
      tick(line);
      if (i > 0) out += '\n';
      if (padded) out += pad;
      out.append(s, at, nl - at);
      at = nl + 1;
    }
    return Value::string(std::move(out));
  }
  if (name == "int") {
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
  if (name == "float") {
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
  if (name == "abs") {
    if (v.type == Value::Type::floating) return Value::floating(std::fabs(v.f));
    if (is_number(v)) return Value::integer(v.i < 0 ? -v.i : v.i);
    throw RenderError("TypeError", line, std::string("bad operand type for abs(): '") + type_name(v) + "'");
  }
  if (name == "round") {
    int64_t precision = arg(a, 0, "precision", Value::integer(0)).i;
    std::string method = str(arg(a, 1, "method", Value::string("common")));
    if (!is_number(v)) throw RenderError("TypeError", line, std::string("type ") + type_name(v) + " doesn't define __round__ method");
    double scale = std::pow(10.0, static_cast<double>(precision)), x = as_double(v) * scale;
    double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);  // Python's round: half to even
    return Value::floating(r / scale);
  }
  if (name == "sum") {
    Value attr = arg(a, 0, "attribute"), total = arg(a, 1, "start", Value::integer(0));
    for (const Value& x : items_of(v, line)) {
      tick(line);
      total = binary("+", total, attr.type == Value::Type::none ? x : attribute_of(*this, x, str(attr), line), line);
    }
    return total;
  }
  if (name == "attr") return getattr(v, str(arg(a, 0, "name")), line);
  if (name == "format") return format_filter(*this, v, a, line);
  if (name == "escape" || name == "e" || name == "forceescape") {
    Value m = Value::string(v.safe && name != "forceescape" ? v.s : html_escape(str(v)));
    m.safe = true;
    return m;
  }
  if (name == "wordcount") {
    int64_t n = 0;
    bool in = false;
    for (char c : need_string(v)) {
      bool w = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
      if (w && !in) ++n;
      in = w;
    }
    return Value::integer(n);
  }
  if (name == "batch") {
    int64_t n = to_int(arg(a, 0, "linecount"), line);
    if (n <= 0) throw RenderError("ValueError", line, "batch size must be positive");
    Value fill = arg(a, 1, "fill_with");
    List items = items_of(v, line), out, cur;
    for (const Value& x : items) {
      tick(line);
      cur.push_back(x);
      if (static_cast<int64_t>(cur.size()) == n) {
        out.push_back(Value::new_list(cur));
        cur.clear();
      }
    }
    if (!cur.empty()) {
      if (fill.type != Value::Type::none) {
        reserve_items(static_cast<uint64_t>(n), line);  // batch(10**9, 0) fills a billion
        while (static_cast<int64_t>(cur.size()) < n) cur.push_back(fill);
      }
      out.push_back(Value::new_list(cur));
    }
    return Value::new_list(out);
  }
  throw RenderError("TemplateAssertionError", line, "No filter named '" + name + "'.");
}

bool Renderer::test(const std::string& name, const Value& v, CallArgs& a, int line) {
  using T = Value::Type;
  if (name == "defined") return v.type != T::undefined;
  if (name == "undefined") return v.type == T::undefined;
  if (name == "none") return v.type == T::none;
  if (name == "boolean") return v.type == T::boolean;
  if (name == "true") return v.type == T::boolean && v.i;
  if (name == "false") return v.type == T::boolean && !v.i;
  if (name == "integer") return v.type == T::integer;
  if (name == "float") return v.type == T::floating;
  if (name == "number") return is_number(v);
  if (name == "string") return v.type == T::string;
  if (name == "mapping") return v.type == T::dict && !v.fn;
  if (name == "iterable") return v.type == T::string || v.type == T::list || v.type == T::dict || v.type == T::undefined;
  if (name == "sequence") return v.type == T::string || v.type == T::list || (v.type == T::dict && !v.fn) || v.type == T::undefined;
  if (name == "callable") return v.type == T::callable || (v.fn && v.fn->fn);
  if (name == "lower" || name == "upper") {
    std::string s = str(v);
    return s == ascii_case(s, name == "upper");
  }
  if (name == "escaped") return false;
  if (name == "odd" || name == "even" || name == "divisibleby") {
    must_be_defined(v, line);
    int64_t n = to_int(v, line), by = name == "divisibleby" ? to_int(arg(a, 0, "num"), line) : 2;
    if (by == 0) throw RenderError("ZeroDivisionError", line, "integer modulo by zero");
    int64_t m = ((n % by) + by) % by;
    return name == "odd" ? m == 1 : m == 0;
  }
  static const std::vector<std::pair<std::vector<std::string>, std::string>> comparisons = {
      {{"eq", "equalto", "=="}, "=="}, {{"ne", "!="}, "!="}, {{"lt", "lessthan", "<"}, "<"}, {{"le", "<="}, "<="},
      {{"gt", "greaterthan", ">"}, ">"}, {{"ge", ">="}, ">="}, {{"in"}, "in"}};
  for (const auto& [names, op] : comparisons)
    if (std::find(names.begin(), names.end(), name) != names.end()) return compare(op, v, arg(a, 0, "other"), line);
  if (name == "sameas") {
    Value o = arg(a, 0, "other");
    if (v.type != o.type) return false;
    if (v.type == T::list) return v.list == o.list;
    if (v.type == T::dict || v.type == T::ns) return v.dict == o.dict;
    return equal(v, o);
  }
  throw RenderError("TemplateAssertionError", line, "No test named '" + name + "'.");
}

}  // namespace ggufkit::jinja
