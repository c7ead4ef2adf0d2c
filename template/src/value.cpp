// Jinja's values as Python has them: printing (str and repr), equality, and JSON both ways
// (json.loads keeps an object's order; json.dumps with ensure_ascii=False).
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include "ggufkit/jinja_render.h"
#include "lexer.h"
#include "value.h"

namespace ggufkit::jinja {

namespace {
thread_local Sandbox* g_sandbox = nullptr;
std::atomic<uint64_t> g_renders{0};
}  // namespace

Sandbox::Sandbox(const RenderLimits& l) : limits(l), id(++g_renders), outer_(g_sandbox) { g_sandbox = this; }
Sandbox::~Sandbox() { g_sandbox = outer_; }
Sandbox* Sandbox::current() { return g_sandbox; }
void Sandbox::limit(int at, RenderErrorKind kind, const std::string& what) const { throw RenderError(kind, at, what); }
void Sandbox::check_time(int at) const {
  if (std::chrono::steady_clock::now() - start > limits.max_time)
    limit(at, RenderErrorKind::limit_time, "the render took longer than " + std::to_string(limits.max_time.count()) + " ms (the sandbox's time limit)");
}

void Charge::add(uint64_t n) {
  Sandbox* s = g_sandbox;
  if (!s || n == 0) return;
  if (bytes_ == 0) render_ = s->id;
  if (render_ != s->id) return;  // made by another render: not this one's to count
  s->reserve(n, s->line);
  s->held += n;
  bytes_ += n;
}
void Charge::release() {
  if (bytes_ && g_sandbox && g_sandbox->id == render_) g_sandbox->held -= bytes_;
  bytes_ = 0;
}

const std::string Str::empty_;
Str::Str(std::string s) {
  if (s.empty()) return;
  if (!g_sandbox) {  // not a render's: nothing to charge
    p_ = std::make_shared<const std::string>(std::move(s));
    return;
  }
  struct Held {
    Charge charge;
    std::string s;
  };
  const uint64_t bytes = kStringBytes + (s.capacity() > 15 ? s.capacity() : 0);
  auto h = std::make_shared<Held>();
  h->charge.add(bytes);
  h->s = std::move(s);
  p_ = std::shared_ptr<const std::string>(h, &h->s);
}

Value Value::none() {
  Value v;
  v.type = Type::none;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.type = Type::boolean;
  v.i = b;
  return v;
}
Value Value::integer(int64_t n) {
  Value v;
  v.type = Type::integer;
  v.i = n;
  return v;
}
Value Value::floating(double d) {
  Value v;
  v.type = Type::floating;
  v.f = d;
  return v;
}
Value Value::string(std::string s) {
  Value v;
  v.type = Type::string;
  v.s = std::move(s);
  return v;
}
Value Value::undefined(std::string what) {
  Value v;
  v.s = std::move(what);
  return v;
}
Value Value::new_list(List items) {
  Value v;
  v.type = Type::list;
  struct Held {
    Charge charge;
    List list;
  };
  auto h = std::make_shared<Held>();
  h->charge.add(kItemBytes * items.capacity());
  h->list = std::move(items);
  v.list = std::shared_ptr<List>(h, &h->list);
  return v;
}
Value Value::new_dict() {
  Value v;
  v.type = Type::dict;
  v.dict = std::make_shared<Dict>();
  return v;
}

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : items)
    if (equal(k, key)) return &v;
  return nullptr;
}
const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k.type == Value::Type::string && k.s == key) return &v;
  return nullptr;
}
void Dict::set(Value key, Value v) {
  for (auto& [k, old] : items)
    if (equal(k, key)) {
      old = std::move(v);
      return;
    }
  charge.add(2 * kItemBytes);
  items.emplace_back(std::move(key), std::move(v));
}

const char* render_error_name(RenderErrorKind kind) {
  switch (kind) {
    case RenderErrorKind::undefined: return "UndefinedError";
    case RenderErrorKind::security: return "SecurityError";
    case RenderErrorKind::type_error: return "TypeError";
    case RenderErrorKind::value_error: return "ValueError";
    case RenderErrorKind::key_error: return "KeyError";
    case RenderErrorKind::index_error: return "IndexError";
    case RenderErrorKind::zero_division: return "ZeroDivisionError";
    case RenderErrorKind::overflow: return "OverflowError";
    case RenderErrorKind::runtime_error: return "RuntimeError";
    case RenderErrorKind::filter_argument: return "FilterArgumentError";
    case RenderErrorKind::unknown_name: return "TemplateAssertionError";
    case RenderErrorKind::template_runtime_error: return "TemplateRuntimeError";
    case RenderErrorKind::raise_exception:
    case RenderErrorKind::template_error: return "TemplateError";
    case RenderErrorKind::limit_iterations:
    case RenderErrorKind::limit_depth:
    case RenderErrorKind::limit_nesting:
    case RenderErrorKind::limit_output:
    case RenderErrorKind::limit_memory:
    case RenderErrorKind::limit_time:
    case RenderErrorKind::limit_integer: return "LimitError";
  }
  return "TemplateError";
}

RenderError::RenderError(RenderErrorKind c, int l, const std::string& m)
    : std::runtime_error(std::string(render_error_name(c)) + " (line " + std::to_string(l) + "): " + m),
      code(c),
      kind(render_error_name(c)),
      line(l),
      message(m) {}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

bool truthy(const Value& v) {
  if (v.generator) return true;
  switch (v.type) {
    case Value::Type::undefined:
    case Value::Type::none: return false;
    case Value::Type::boolean:
    case Value::Type::integer: return v.i != 0;
    case Value::Type::floating: return v.f != 0;
    case Value::Type::string: return !v.s.empty();
    case Value::Type::list: return !v.list->empty();
    case Value::Type::dict: return !v.dict->items.empty();
    default: return true;
  }
}

bool is_number(const Value& v) {
  return v.type == Value::Type::boolean || v.type == Value::Type::integer || v.type == Value::Type::floating;
}
double as_double(const Value& v) { return v.type == Value::Type::floating ? v.f : static_cast<double>(v.i); }

const char* type_name(const Value& v) {
  switch (v.type) {
    case Value::Type::undefined: return "Undefined";
    case Value::Type::none: return "NoneType";
    case Value::Type::boolean: return "bool";
    case Value::Type::integer: return "int";
    case Value::Type::floating: return "float";
    case Value::Type::string: return "str";
    case Value::Type::list: return "list";
    case Value::Type::dict: return "dict";
    case Value::Type::ns: return "Namespace";
    default: return "function";
  }
}

bool equal(const Value& a, const Value& b) {
  if (is_number(a) && is_number(b)) {
    if (a.type == Value::Type::floating || b.type == Value::Type::floating) return as_double(a) == as_double(b);
    return a.i == b.i;
  }
  if (a.type != b.type) return false;
  switch (a.type) {
    case Value::Type::undefined:
    case Value::Type::none: return true;
    case Value::Type::string: return a.s == b.s;
    case Value::Type::list:
      if (a.generator || b.generator) return a.list == b.list;
      if (a.tuple != b.tuple) return false;  // (1, 2) != [1, 2]
      if (a.list->size() != b.list->size()) return false;
      for (size_t i = 0; i < a.list->size(); ++i)
        if (!equal((*a.list)[i], (*b.list)[i])) return false;
      return true;
    case Value::Type::dict:
    case Value::Type::ns:
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, v] : a.dict->items) {
        const Value* o = b.dict->find(k);
        if (!o || !equal(v, *o)) return false;
      }
      return true;
    default: return a.fn == b.fn;
  }
}

// Python's repr of a float: the shortest digits that read back, in fixed notation from
// 1e-4 up to 1e16, else with an exponent of at least two digits.
std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[40];
  int p = 1;
  for (; p < 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*e", p - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::snprintf(buf, sizeof buf, "%.*e", p - 1, d);
  std::string m = buf;
  size_t e = m.find('e');
  int exp = std::atoi(m.c_str() + e + 1);
  std::string sign = m[0] == '-' ? "-" : "";
  std::string digits;
  for (size_t i = sign.size(); i < e; ++i)
    if (m[i] != '.') digits += m[i];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  if (exp < -4 || exp >= 16) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return out + eb;
  }
  if (exp < 0) return sign + "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  size_t whole = static_cast<size_t>(exp) + 1;
  if (digits.size() <= whole) return sign + digits + std::string(whole - digits.size(), '0') + ".0";
  return sign + digits.substr(0, whole) + "." + digits.substr(whole);
}

namespace {

// Python's repr of a str: single quotes unless it holds one and no double quote.
std::string string_repr(const std::string& s) {
  char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, q);
  growing(s.size() + 2);
  size_t n = 0;
  for (unsigned char c : s) {
    if ((++n & 0xFFFF) == 0) growing(out.size());  // escapes grow it
    if (c == '\\') out += "\\\\";
    else if (c == static_cast<unsigned char>(q)) out += std::string("\\") + q;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else out += static_cast<char>(c);
  }
  return out + q;
}

}  // namespace

std::string repr(const Value& v) {
  switch (v.type) {
    case Value::Type::undefined: return "Undefined";  // jinja2's Undefined.__repr__: [Undefined] in a list
    case Value::Type::string: return string_repr(v.s);
    case Value::Type::list: {
      if (v.generator) return "<generator object at 0x" + std::to_string(reinterpret_cast<uintptr_t>(v.list.get())) + ">";
      std::string out = v.tuple ? "(" : "[";
      for (size_t i = 0; i < v.list->size(); ++i) {
        std::string item = repr((*v.list)[i]);
        growing(out.size() + (i ? 2 : 0) + item.size());  // refused as it grows, not once built
        out += (i ? ", " : "") + item;
      }
      return out + (v.tuple ? (v.list->size() == 1 ? ",)" : ")") : "]");
    }
    case Value::Type::dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : v.dict->items) {
        std::string item = repr(k) + ": " + repr(x);
        growing(out.size() + (first ? 0 : 2) + item.size());
        out += (first ? "" : ", ") + item;
        first = false;
      }
      return out + "}";
    }
    default: return str(v);
  }
}

std::string str(const Value& v) {
  switch (v.type) {
    case Value::Type::undefined: return "";
    case Value::Type::none: return "None";
    case Value::Type::boolean: return v.i ? "True" : "False";
    case Value::Type::integer: return std::to_string(v.i);
    case Value::Type::floating: return float_repr(v.f);
    case Value::Type::string: return v.s;
    case Value::Type::ns: {
      std::string out = "<Namespace {";
      bool first = true;
      for (const auto& [k, x] : v.dict->items) {
        std::string item = repr(k) + ": " + repr(x);
        growing(out.size() + (first ? 0 : 2) + item.size());
        out += (first ? "" : ", ") + item;
        first = false;
      }
      return out + "}>";
    }
    case Value::Type::callable: return "<function " + (v.fn ? v.fn->name : std::string("?")) + ">";
    default: return repr(v);
  }
}

// ---- JSON ----

namespace {

struct JsonReader {
  std::string_view t;
  uint64_t max_bytes;
  size_t p = 0;
  unsigned depth = 0;
  uint64_t bytes = 0;  // of the values made so far

  // `n` more bytes of values are about to be made (or have just been: a string's).
  void hold(uint64_t n) {
    bytes += n;
    if (bytes > max_bytes) fail("the values take more than " + std::to_string(max_bytes) + " bytes (ggufkit's limit for a JSON text)");
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("JSON at byte " + std::to_string(p) + ": " + what);
  }
  void ws() {
    while (p < t.size() && (t[p] == ' ' || t[p] == '\n' || t[p] == '\r' || t[p] == '\t')) ++p;
  }
  bool lit(std::string_view w) {
    if (t.substr(p, w.size()) != w) return false;
    p += w.size();
    return true;
  }
  uint32_t hex4() {
    if (p + 4 > t.size()) fail("a \\u escape is cut short");
    uint32_t c = 0;
    for (int k = 0; k < 4; ++k) {
      int h = detail::hex_value(t[p++]);
      if (h < 0) fail("a \\u escape needs four hex digits");
      c = (c << 4) | static_cast<uint32_t>(h);
    }
    return c;
  }
  std::string string() {
    ++p;  // the opening quote
    std::string out;
    for (;;) {
      if (p >= t.size()) fail("a string is not closed");
      char c = t[p++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character inside a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p >= t.size()) fail("a string is not closed");
      char e = t[p++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          const size_t at = p - 2;
          uint32_t c1 = hex4();
          if (c1 >= 0xD800 && c1 < 0xDC00 && t.substr(p, 2) == "\\u") {  // a pair, as json.dump writes an emoji
            size_t back = p;
            p += 2;
            uint32_t c2 = hex4();
            if (c2 >= 0xDC00 && c2 < 0xE000) c1 = 0x10000 + ((c1 - 0xD800) << 10) + (c2 - 0xDC00);
            else p = back;
          }
          if (c1 >= 0xD800 && c1 < 0xE000) {  // json.loads keeps it, but no UTF-8 text can hold it
            p = at;
            fail(std::string(t.substr(at, 6)) + " is half a surrogate pair, without its other half");
          }
          detail::append_utf8(out, c1);
          break;
        }
        default: fail(std::string("an unknown escape \\") + e);
      }
    }
  }
  Value value() {
    ws();
    if (p >= t.size()) fail("a value is missing");
    if (++depth > 200) fail("nested more than 200 deep");
    hold(sizeof(Value));
    Value v;
    char c = t[p];
    if (c == '{') {
      ++p;
      v = Value::new_dict();
      std::unordered_map<std::string, size_t> at;  // each key's item: a repeated key keeps its place, with the last value
      ws();
      if (p < t.size() && t[p] == '}') ++p;
      else
        for (;;) {
          ws();
          if (p >= t.size() || t[p] != '"') fail("an object key must be a string");
          std::string k = string();
          hold(sizeof(Value) + k.size());  // the key
          ws();
          if (p >= t.size() || t[p] != ':') fail("':' expected");
          ++p;
          Value x = value();
          auto [it, fresh] = at.emplace(k, v.dict->items.size());
          if (fresh) v.dict->items.emplace_back(Value::string(std::move(k)), std::move(x));
          else v.dict->items[it->second].second = std::move(x);
          ws();
          if (p < t.size() && t[p] == ',') {
            ++p;
            continue;
          }
          if (p < t.size() && t[p] == '}') {
            ++p;
            break;
          }
          fail("',' or '}' expected");
        }
      v.dict->items.shrink_to_fit();
    } else if (c == '[') {
      ++p;
      v = Value::new_list();
      ws();
      if (p < t.size() && t[p] == ']') ++p;
      else
        for (;;) {
          v.list->push_back(value());
          ws();
          if (p < t.size() && t[p] == ',') {
            ++p;
            continue;
          }
          if (p < t.size() && t[p] == ']') {
            ++p;
            break;
          }
          fail("',' or ']' expected");
        }
      v.list->shrink_to_fit();  // what was counted
    } else if (c == '"') {
      std::string text = string();
      hold(text.size());
      v = Value::string(std::move(text));
    } else if (lit("true")) {
      v = Value::boolean(true);
    } else if (lit("false")) {
      v = Value::boolean(false);
    } else if (lit("null")) {
      v = Value::none();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      size_t start = p;
      if (t[p] == '-') ++p;
      bool real = false;
      while (p < t.size() && ((t[p] >= '0' && t[p] <= '9') || t[p] == '.' || t[p] == 'e' || t[p] == 'E' || t[p] == '+' || t[p] == '-')) {
        real = real || t[p] == '.' || t[p] == 'e' || t[p] == 'E';
        ++p;
      }
      std::string num(t.substr(start, p - start));
      char* end = nullptr;
      errno = 0;
      if (!real) {
        long long n = std::strtoll(num.c_str(), &end, 10);
        if (*end || errno) fail("the number " + num + " is not one ggufkit can hold");
        v = Value::integer(n);
      } else {
        double d = std::strtod(num.c_str(), &end);
        if (*end) fail("the number " + num + " is malformed");
        v = Value::floating(d);
      }
    } else {
      fail(std::string("unexpected '") + c + "'");
    }
    --depth;
    return v;
  }
};

void json_string(std::string& out, const std::string& s) {
  growing(out.size() + s.size() + 2);
  out += '"';
  size_t n = 0;
  for (unsigned char c : s) {
    if ((++n & 0xFFFF) == 0) growing(out.size());  // escapes grow it
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

}  // namespace

Value from_json(std::string_view text, uint64_t max_bytes) {
  JsonReader r{text, max_bytes};
  Value v = r.value();
  r.ws();
  if (r.p != text.size()) r.fail("text after the value");
  return v;
}

void dump_json(std::string& out, const Value& v, const JsonStyle& style, int level) {
  auto newline = [&](int l) {
    if (style.indent.empty() && !style.pretty) return;
    growing(out.size() + 1 + style.indent.size() * static_cast<size_t>(l));
    out += '\n';
    for (int k = 0; k < l; ++k) out += style.indent;
  };
  switch (v.type) {
    case Value::Type::none: out += "null"; return;
    case Value::Type::boolean: out += v.i ? "true" : "false"; return;
    case Value::Type::integer: out += std::to_string(v.i); return;
    case Value::Type::floating:
      out += std::isnan(v.f) ? "NaN" : std::isinf(v.f) ? (v.f > 0 ? "Infinity" : "-Infinity") : float_repr(v.f);
      return;
    case Value::Type::string: json_string(out, v.s); return;
    case Value::Type::list: {
      if (v.generator) throw JsonError("Object of type generator is not JSON serializable");
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < v.list->size(); ++i) {
        if (i) out += style.item_sep;
        newline(level + 1);
        dump_json(out, (*v.list)[i], style, level + 1);
      }
      newline(level);
      out += ']';
      return;
    }
    case Value::Type::dict: {
      if (v.dict->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<Value, Value>*> items;
      for (const auto& kv : v.dict->items) items.push_back(&kv);
      if (style.sort_keys)
        std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return str(a->first) < str(b->first); });
      out += '{';
      bool first = true;
      for (const auto* kv : items) {
        if (!first) out += style.item_sep;
        first = false;
        newline(level + 1);
        const Value& k = kv->first;
        if (k.type == Value::Type::string) json_string(out, k.s);
        else if (k.type == Value::Type::none) out += "\"null\"";
        else if (k.type == Value::Type::boolean) out += k.i ? "\"true\"" : "\"false\"";
        else if (is_number(k)) json_string(out, str(k));
        else throw JsonError(std::string("keys must be str, int, float, bool or None, not ") + type_name(k));
        out += style.key_sep;
        dump_json(out, kv->second, style, level + 1);
      }
      newline(level);
      out += '}';
      return;
    }
    default: throw JsonError(std::string("Object of type ") + type_name(v) + " is not JSON serializable");
  }
}

std::string to_json(const Value& v, int indent) {
  JsonStyle style;
  if (indent >= 0) {
    style.indent = std::string(static_cast<size_t>(indent), ' ');
    style.pretty = true;
    style.item_sep = ",";
  }
  std::string out;
  dump_json(out, v, style, 0);
  return out;
}

}  // namespace ggufkit::jinja
