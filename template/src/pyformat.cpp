// Python's printf-style formatting and str.format's mini-language, as CPython 3 formats str,
// int, bool and float, with the errors it raises; jinja2's cycler, joiner and lipsum; the
// clock of strftime_now.
#include "pyformat.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace ggufkit::jinja {

namespace {

using K = RenderErrorKind;

[[noreturn]] void fail(K kind, int line, const std::string& what) { throw RenderError(kind, line, what); }

// The first n code points of s.
std::string cp_prefix(const std::string& s, size_t n) {
  size_t i = 0;
  for (; i < s.size() && n; --n) {
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
  }
  return s.substr(0, i);
}

std::string utf8(uint32_t c) {
  std::string o;
  if (c < 0x80) o += static_cast<char>(c);
  else if (c < 0x800) o += {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
  else if (c < 0x10000)
    o += {static_cast<char>(0xE0 | (c >> 12)), static_cast<char>(0x80 | ((c >> 6) & 0x3F)), static_cast<char>(0x80 | (c & 0x3F))};
  else
    o += {static_cast<char>(0xF0 | (c >> 18)), static_cast<char>(0x80 | ((c >> 12) & 0x3F)), static_cast<char>(0x80 | ((c >> 6) & 0x3F)),
          static_cast<char>(0x80 | (c & 0x3F))};
  return o;
}

// Python's ascii(): repr with every non-ASCII code point escaped.
std::string ascii_of(const std::string& in) {
  std::string out;
  for (const std::string& c : code_points(in)) {
    if (static_cast<unsigned char>(c[0]) < 0x80) {
      out += c;
      continue;
    }
    uint32_t cp = static_cast<unsigned char>(c[0]) & (c.size() == 2 ? 0x1F : c.size() == 3 ? 0x0F : 0x07);
    for (size_t k = 1; k < c.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(c[k]) & 0x3F);
    char b[16];
    std::snprintf(b, sizeof b, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", cp);
    out += b;
  }
  return out;
}

// Pads s (already formatted) to `width` code points with `fill`, as align says: '<' '>' '^'.
std::string pad(Renderer& r, const std::string& s, int64_t width, const std::string& fill, char align, int line) {
  const int64_t n = static_cast<int64_t>(code_point_count(s));
  if (width <= n) return s;
  r.sized(static_cast<uint64_t>(width), line);  // '%999999999d' is refused before it is built
  r.sized(static_cast<uint64_t>(width) * fill.size(), line);
  const int64_t gap = width - n, left = align == '<' ? 0 : align == '^' ? gap / 2 : gap;
  std::string out;
  for (int64_t k = 0; k < left; ++k) out += fill;
  out += s;
  for (int64_t k = left; k < gap; ++k) out += fill;
  return out;
}

// A float in C's %e %f %g (and %E %F %G) with `alt` as '#': the digits of |x|, no sign.
std::string c_float(Renderer& r, double x, char conv, int64_t prec, bool alt, int line) {
  if (prec > 1'000'000) r.sized(static_cast<uint64_t>(prec), line);
  if (prec > INT32_MAX) fail(K::value_error, line, "precision too big");
  const char f[] = {'%', alt ? '#' : '%', '.', '*', conv, 0};
  const char* fmt = alt ? f : f + 1;  // "%#.*e" or "%.*e"
  std::string buf(64, '\0');
  const int p = static_cast<int>(prec);
  int n = std::snprintf(buf.data(), buf.size(), fmt, p, std::fabs(x));
  if (n >= static_cast<int>(buf.size())) {
    r.sized(static_cast<uint64_t>(n), line);
    buf.assign(static_cast<size_t>(n) + 1, '\0');
    std::snprintf(buf.data(), buf.size(), fmt, p, std::fabs(x));
  }
  buf.resize(static_cast<size_t>(n));
  return buf;
}

// Python's format of a float with no type and a precision: 'g', but with a digit after the
// point in fixed notation and the exponent from one place sooner ('{:.2}' of 100.0 is 1e+02).
std::string g_dot0(Renderer& r, double x, int64_t prec, bool alt, int line) {
  const int64_t p = prec == 0 ? 1 : prec;
  if (!std::isfinite(x)) return c_float(r, x, 'g', p, alt, line);
  std::string e = c_float(r, x, 'e', p - 1, false, line);
  const int exp = std::atoi(e.c_str() + e.find('e') + 1);
  auto strip_zeros = [&](std::string s) {
    if (alt || s.find('.') == std::string::npos) return s;
    size_t end = s.find('e');
    std::string tail = end == std::string::npos ? "" : s.substr(end);
    s = s.substr(0, end);
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s + tail;
  };
  if (exp < -4 || exp >= p - 1) return strip_zeros(c_float(r, x, 'e', p - 1, alt, line));
  std::string fixed = strip_zeros(c_float(r, x, 'f', p - 1 - exp, alt, line));
  if (fixed.find('.') == std::string::npos) fixed += ".0";
  return fixed;
}

// A number laid out: sign, prefix (0x), digits (grouped, zero-padded when asked), the rest.
struct Number {
  std::string sign, prefix, digits, rest;
};
std::string group(const std::string& digits, char sep, size_t every) {
  if (!sep) return digits;
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % every == 0) out += sep;
    out += digits[i];
  }
  return out;
}
// Python's layout: with fill '0' and align '=', zeros join the digits (and their grouping:
// '{:08,}' of 1234 is 0,001,234); otherwise the fill goes where align says.
std::string lay_out(Renderer& r, Number n, int64_t width, const std::string& fill, char align, char sep, size_t every, int line) {
  std::string digits = group(n.digits, sep, every);
  const int64_t fixed = static_cast<int64_t>(n.sign.size() + n.prefix.size() + n.rest.size());
  if (fill == "0" && align == '=') {
    r.sized(static_cast<uint64_t>(std::max<int64_t>(width, 0)), line);
    size_t d = n.digits.size();  // the fewest digits that, grouped, fill the width
    auto grouped = [&](size_t k) { return static_cast<int64_t>(k + (sep ? (k - 1) / every : 0)); };
    while (fixed + grouped(d) < width) ++d;
    return n.sign + n.prefix + group(std::string(d - n.digits.size(), '0') + n.digits, sep, every) + n.rest;
  }
  if (align == '=') {
    std::string body = digits + n.rest;
    return n.sign + n.prefix + pad(r, body, width - static_cast<int64_t>(n.sign.size() + n.prefix.size()), fill, '>', line);
  }
  return pad(r, n.sign + n.prefix + digits + n.rest, width, fill, align, line);
}

// The digits of |v| in base 2, 8, 10 or 16.
std::string int_digits(int64_t v, int base, bool upper) {
  uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  const char* d = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), d[u % static_cast<uint64_t>(base)]);
    u /= static_cast<uint64_t>(base);
  } while (u);
  return out;
}

// The digits of a float's integer part, |trunc(x)|, as Python's int(x) has them.
std::string float_int_digits(double x, int line) {
  if (std::isnan(x)) fail(K::value_error, line, "cannot convert float NaN to integer");
  if (std::isinf(x)) fail(K::overflow, line, "cannot convert float infinity to integer");
  char buf[400];
  std::snprintf(buf, sizeof buf, "%.0f", std::fabs(std::trunc(x)));
  return buf;
}

// Python's name of v's type in its errors.
std::string py_type(const Value& v) {
  if (v.type == Value::Type::string && v.safe) return "Markup";
  return v.type == Value::Type::list && v.tuple && !v.generator ? "tuple" : type_name(v);
}
// repr, with markupsafe's for a Markup.
std::string py_repr(const Value& v) { return v.type == Value::Type::string && v.safe ? "Markup(" + repr(v) + ")" : repr(v); }

std::string sign_of(bool negative, char flag) { return negative ? "-" : flag == '+' ? "+" : flag == ' ' ? " " : ""; }

// ---- printf-style ----

struct PercentArgs {
  List items;            // the tuple's items, or the one value (after %(key), that key's value)
  bool tuple = false;    // several arguments
  bool mapping = false;  // %(key)s reads it; nothing is left unconverted
  bool markup = false;   // markupsafe wraps each argument in a helper that is no int
  size_t next = 0;
  const Value& take(int line) {
    if (next >= items.size()) fail(K::type_error, line, "not enough arguments for format string");
    return items[next++];
  }
};

int64_t star(PercentArgs& args, int line) {
  const Value& v = args.take(line);
  if (args.markup || (v.type != Value::Type::integer && v.type != Value::Type::boolean)) fail(K::type_error, line, "* wants int");
  return v.i;
}

// int(x) and float(x) of what markupsafe's helper wraps (for %d and %f): numbers, and strs
// that read as one.
double markup_number(Renderer& r, const Value& v, char conv, int line) {
  const bool integer = conv == 'd' || conv == 'i' || conv == 'u';
  if (v.type == Value::Type::undefined) r.undefined_error(v, line);
  if (is_number(v)) return integer && v.type == Value::Type::floating ? std::trunc(v.f) : as_double(v);
  if (v.type != Value::Type::string) {
    if (integer) fail(K::type_error, line, std::string("%") + conv + " format: a real number is required, not _MarkupEscapeHelper");
    fail(K::type_error, line, "float() argument must be a string or a real number, not '" + py_type(v) + "'");
  }
  const std::string s = strip(v.s, nullptr, true, true);
  char* end = nullptr;
  const double d = s.empty() ? 0 : integer ? static_cast<double>(std::strtoll(s.c_str(), &end, 10)) : std::strtod(s.c_str(), &end);
  const bool whole = !s.empty() && end && !*end && (!integer || s.find_first_not_of("+-0123456789") == std::string::npos);
  if (!whole) fail(K::value_error, line, integer ? "invalid literal for int() with base 10: " + py_repr(v) : "could not convert string to float: " + py_repr(v));
  return d;
}

int64_t digits_of(const std::string& fmt, size_t& i, const char* what, int line) {
  int64_t n = 0;
  for (; i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i])); ++i) {
    if (n > (INT64_MAX - 9) / 10) fail(K::value_error, line, std::string(what) + " too big");
    n = n * 10 + (fmt[i] - '0');
  }
  return n;
}

}  // namespace

Value percent_format(Renderer& r, const Value& fmtv, const Value& right, int line) {
  const std::string& fmt = fmtv.s;
  const bool markup = fmtv.safe;
  PercentArgs args;
  args.markup = markup;
  if (right.type == Value::Type::list && right.tuple && !right.generator) {
    args.items = *right.list;
    args.tuple = true;
  } else {
    args.items = {right};
    // Python takes anything with __getitem__ but a str for a mapping: a dict, a list, and
    // jinja2's Undefined.
    args.mapping = right.type == Value::Type::dict || right.type == Value::Type::undefined ||
                   (right.type == Value::Type::list && !right.generator);
  }
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) fail(K::value_error, line, "incomplete format");
    if (fmt[i] == '%') {
      out += '%';
      continue;
    }
    if (fmt[i] == '(') {
      if (!args.mapping || args.tuple) fail(K::type_error, line, "format requires a mapping");
      size_t depth = 1, k = i + 1;  // keys may hold parentheses, nested
      for (; k < fmt.size() && depth; ++k) {
        if (fmt[k] == '(') ++depth;
        else if (fmt[k] == ')') --depth;
      }
      if (depth) fail(K::value_error, line, "incomplete format key");
      const std::string key = fmt.substr(i + 1, k - i - 2);
      i = k;
      if (right.type == Value::Type::undefined) r.undefined_error(right, line);
      if (right.type == Value::Type::list) fail(K::type_error, line, "list indices must be integers or slices, not str");
      const Value* v = right.dict->find(std::string_view(key));
      if (!v) fail(K::key_error, line, repr(Value::string(key)));
      args.items = {*v};  // as CPython: the key's value is what this spec (a '*' too) reads next
      args.next = 0;
    }
    char flag_sign = 0;
    bool left = false, alt = false, zero = false;
    for (; i < fmt.size(); ++i) {
      const char c = fmt[i];
      if (c == '-') left = true;
      else if (c == '+') flag_sign = '+';
      else if (c == ' ') flag_sign = flag_sign ? flag_sign : ' ';
      else if (c == '#') alt = true;
      else if (c == '0') zero = true;
      else break;
    }
    int64_t width = -1, prec = -1;
    if (i < fmt.size() && fmt[i] == '*') {
      width = star(args, line);
      if (width < 0) {
        left = true;
        width = -width;
      }
      ++i;
    } else if (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) {
      width = digits_of(fmt, i, "width", line);
    }
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      if (i < fmt.size() && fmt[i] == '*') {
        prec = std::max<int64_t>(star(args, line), 0);
        ++i;
      } else {
        prec = digits_of(fmt, i, "precision", line);
      }
    }
    while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;  // length modifiers: ignored
    if (i >= fmt.size()) fail(K::value_error, line, "incomplete format");
    const char conv = fmt[i];
    const Value v = args.take(line);
    auto escaped = [&](std::string s, bool safe) { return markup && !safe ? html_escape(s) : s; };
    std::string piece;
    switch (conv) {
      case 's':
      case 'r':
      case 'a': {
        std::string s = conv == 's' ? escaped(str(v), v.safe) : escaped(conv == 'r' ? py_repr(v) : ascii_of(py_repr(v)), false);
        if (prec >= 0) s = cp_prefix(s, static_cast<size_t>(prec));
        piece = pad(r, s, width, " ", left ? '<' : '>', line);
        break;
      }
      case 'c': {
        std::string s;
        if (markup) {
          fail(K::type_error, line, "%c requires int or char");
        } else if (v.type == Value::Type::integer || v.type == Value::Type::boolean) {
          if (v.i < 0 || v.i > 0x10FFFF) fail(K::overflow, line, "%c arg not in range(0x110000)");
          s = utf8(static_cast<uint32_t>(v.i));
        } else if (v.type == Value::Type::string && code_point_count(v.s) == 1) {
          s = v.s;
        } else {
          fail(K::type_error, line, "%c requires int or char");
        }
        piece = pad(r, s, width, " ", left ? '<' : '>', line);
        break;
      }
      case 'd':
      case 'i':
      case 'u':
      case 'o':
      case 'x':
      case 'X': {
        const bool decimal = conv == 'd' || conv == 'i' || conv == 'u';
        if (markup && !decimal) fail(K::type_error, line, std::string("%") + conv + " format: an integer is required, not _MarkupEscapeHelper");
        if (markup) {
          const double d = markup_number(r, v, conv, line);
          Number n;
          n.digits = float_int_digits(d, line);
          if (prec > static_cast<int64_t>(n.digits.size())) {
            r.sized(static_cast<uint64_t>(prec), line);
            n.digits.insert(0, static_cast<size_t>(prec) - n.digits.size(), '0');
          }
          n.sign = sign_of(d < 0, flag_sign);
          piece = lay_out(r, n, width, left ? " " : zero ? "0" : " ", left ? '<' : zero ? '=' : '>', 0, 3, line);
          break;
        }
        if (v.type == Value::Type::undefined && decimal) r.undefined_error(v, line);  // int(x) fails; %x asks for __index__
        if (!is_number(v) || (!decimal && v.type == Value::Type::floating))
          fail(K::type_error, line,
               std::string("%") + conv + " format: " + (decimal ? "a real number" : "an integer") + " is required, not " + py_type(v));
        Number n;
        const bool negative = v.type == Value::Type::floating ? std::trunc(v.f) < 0 : v.i < 0;
        n.digits = v.type == Value::Type::floating ? float_int_digits(v.f, line)
                                                   : int_digits(v.i, decimal ? 10 : conv == 'o' ? 8 : 16, conv == 'X');
        if (prec > static_cast<int64_t>(n.digits.size())) {
          r.sized(static_cast<uint64_t>(prec), line);
          n.digits.insert(0, static_cast<size_t>(prec) - n.digits.size(), '0');
        }
        n.sign = sign_of(negative, flag_sign);
        if (alt && !decimal) n.prefix = conv == 'o' ? "0o" : conv == 'x' ? "0x" : "0X";
        piece = lay_out(r, n, width, left ? " " : zero ? "0" : " ", left ? '<' : zero ? '=' : '>', 0, 3, line);
        break;
      }
      case 'e':
      case 'E':
      case 'f':
      case 'F':
      case 'g':
      case 'G': {
        if (v.type == Value::Type::undefined) r.undefined_error(v, line);
        if (!markup && !is_number(v)) fail(K::type_error, line, "must be real number, not " + py_type(v));
        const double x = markup ? markup_number(r, v, conv, line) : as_double(v);
        Number n;
        n.sign = sign_of(std::signbit(x) && !std::isnan(x), flag_sign);
        std::string body = c_float(r, x, conv, prec < 0 ? 6 : prec, alt, line);
        n.digits = body;  // not grouped: the zeros of '%08.2f' go in front of it all
        piece = lay_out(r, n, width, left ? " " : zero ? "0" : " ", left ? '<' : zero ? '=' : '>', 0, 3, line);
        break;
      }
      default: {
        char b[96];
        std::snprintf(b, sizeof b, "unsupported format character '%c' (0x%x) at index %zu", conv, static_cast<unsigned char>(conv),
                      code_point_count(fmt.substr(0, i)));
        fail(K::value_error, line, b);
      }
    }
    out += piece;
    r.sized(out.size(), line);
  }
  if (!args.mapping && args.next < args.items.size()) fail(K::type_error, line, "not all arguments converted during string formatting");
  Value s = Value::string(std::move(out));
  s.safe = markup;
  return s;
}

Value format_filter(Renderer& r, const Value& value, const CallArgs& a, int line) {
  if (!a.pos.empty() && !a.kw.empty()) fail(K::filter_argument, line, "can't handle positional and keyword arguments at the same time");
  Value fmt = value.type == Value::Type::string ? value : Value::string(str(value));
  Value right;
  if (!a.kw.empty()) {
    right = Value::new_dict();
    for (const auto& [k, v] : a.kw) right.dict->set(Value::string(k), v);
  } else {
    right = Value::new_list(a.pos);
    right.tuple = true;
  }
  return percent_format(r, fmt, right, line);
}

// ---- str.format ----

namespace {

struct Spec {
  std::string fill = " ";
  char align = 0, sign = 0, sep = 0, type = 0;
  bool fill_given = false, z = false, alt = false;
  int64_t width = -1, prec = -1;
};

int64_t spec_int(const std::string& s, size_t& i, int line) {
  int64_t n = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
    if (n > (INT64_MAX - 9) / 10) fail(K::value_error, line, "Too many decimal digits in format string");
    n = n * 10 + (s[i] - '0');
  }
  return n;
}

// [[fill]align][sign][z][#][0][width][grouping][.precision][type], as CPython parses it.
Spec parse_spec(const std::string& s, char default_type, char default_align, const char* type, int line) {
  Spec f;
  f.type = default_type;
  size_t i = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '=' || c == '^'; };
  const size_t first = s.empty() ? 0 : cp_prefix(s, 1).size();
  if (first < s.size() && is_align(s[first])) {
    f.fill = s.substr(0, first);
    f.fill_given = true;
    f.align = s[first];
    i = first + 1;
  } else if (!s.empty() && is_align(s[0])) {
    f.align = s[0];
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) f.sign = s[i++];
  if (i < s.size() && s[i] == 'z') f.z = true, ++i;
  if (i < s.size() && s[i] == '#') f.alt = true, ++i;
  if (!f.fill_given && i < s.size() && s[i] == '0') {
    f.fill = "0";
    if (!f.align && default_align == '>') f.align = '=';
    ++i;
  }
  const size_t w = i;
  f.width = spec_int(s, i, line);
  if (i == w) f.width = -1;
  if (i < s.size() && s[i] == ',') f.sep = ',', ++i;
  if (i < s.size() && s[i] == '_') {
    if (f.sep) fail(K::value_error, line, "Cannot specify both ',' and '_'.");
    f.sep = '_', ++i;
  }
  if (i < s.size() && s[i] == ',' && f.sep == '_') fail(K::value_error, line, "Cannot specify both ',' and '_'.");
  if (i < s.size() && s[i] == '.') {
    const size_t p = ++i;
    f.prec = spec_int(s, i, line);
    if (i == p) fail(K::value_error, line, "Format specifier missing precision");
  }
  if (s.size() - i > 1) fail(K::value_error, line, "Invalid format specifier '" + s + "' for object of type '" + type + "'");
  if (i < s.size()) f.type = s[i];
  if (f.sep && !std::strchr("defgEG%F", f.type)) {
    if (f.sep == '_' && std::strchr("boxX", f.type)) return f;
    fail(K::value_error, line, std::string("Cannot specify '") + f.sep + "' with '" + f.type + "'.");
  }
  return f;
}

std::string format_float(Renderer& r, double x, Spec f, int line) {
  Number n;
  char type = f.type;
  bool percent = false;
  if (type == 'n') type = 'g';
  if (type == '%') {
    type = 'f';
    x *= 100;
    percent = true;
  }
  std::string body;
  if (type == 0) body = f.prec < 0 ? float_repr(std::fabs(x)) : g_dot0(r, x, f.prec, f.alt, line);
  else body = c_float(r, x, type, f.prec < 0 ? 6 : f.prec, f.alt, line);
  bool negative = std::signbit(x) && !std::isnan(x);
  if (negative && f.z && body.find_first_of("123456789") == std::string::npos) negative = false;  // 'z': no -0
  n.sign = sign_of(negative, f.sign);
  size_t int_end = body.find_first_not_of("0123456789");
  if (!std::isfinite(x)) int_end = 0;
  n.digits = body.substr(0, int_end == std::string::npos ? body.size() : int_end);
  n.rest = (int_end == std::string::npos ? "" : body.substr(int_end)) + (percent ? "%" : "");
  if (n.digits.empty()) std::swap(n.digits, n.rest);  // inf, nan: not grouped
  return lay_out(r, n, f.width, f.fill, f.align ? f.align : '>', f.sep, 3, line);
}

// Python's format(v, spec).
std::string format_field(Renderer& r, const Value& v, const std::string& spec, int line) {
  if (spec.empty()) return str(v);
  if (v.type == Value::Type::string) {
    const std::string tn = py_type(v);
    Spec f = parse_spec(spec, 's', '<', tn.c_str(), line);
    if (f.type != 's') fail(K::value_error, line, std::string("Unknown format code '") + f.type + "' for object of type '" + tn + "'");
    if (f.sign) fail(K::value_error, line, f.sign == ' ' ? "Space not allowed in string format specifier" : "Sign not allowed in string format specifier");
    if (f.z) fail(K::value_error, line, "Negative zero coercion (z) not allowed in string format specifier");
    if (f.alt) fail(K::value_error, line, "Alternate form (#) not allowed in string format specifier");
    if (f.align == '=') fail(K::value_error, line, "'=' alignment not allowed in string format specifier");
    std::string s = f.prec >= 0 ? cp_prefix(v.s, static_cast<size_t>(f.prec)) : v.s;
    return pad(r, s, f.width, f.fill, f.align ? f.align : '<', line);
  }
  if (v.type == Value::Type::integer || v.type == Value::Type::boolean) {
    const char* tn = type_name(v);
    Spec f = parse_spec(spec, 'd', '>', tn, line);
    if (std::strchr("eEfFgG%", f.type)) return format_float(r, static_cast<double>(v.i), f, line);
    if (!std::strchr("bcdoxXn", f.type))
      fail(K::value_error, line, std::string("Unknown format code '") + f.type + "' for object of type '" + tn + "'");
    if (f.prec >= 0) fail(K::value_error, line, "Precision not allowed in integer format specifier");
    if (f.z) fail(K::value_error, line, "Negative zero coercion (z) not allowed in integer format specifier");
    Number n;
    if (f.type == 'c') {
      if (f.sign) fail(K::value_error, line, "Sign not allowed with integer format specifier 'c'");
      if (f.alt) fail(K::value_error, line, "Alternate form (#) not allowed with integer format specifier 'c'");
      if (v.i < 0 || v.i > 0x10FFFF) fail(K::overflow, line, "%c arg not in range(0x110000)");
      return pad(r, utf8(static_cast<uint32_t>(v.i)), f.width, f.fill, f.align ? f.align : '>', line);
    }
    const int base = f.type == 'b' ? 2 : f.type == 'o' ? 8 : f.type == 'x' || f.type == 'X' ? 16 : 10;
    n.digits = int_digits(v.i, base, f.type == 'X');
    n.sign = sign_of(v.i < 0, f.sign);
    if (f.alt && base != 10) n.prefix = std::string("0") + (f.type == 'b' ? "b" : f.type == 'o' ? "o" : f.type == 'X' ? "X" : "x");
    return lay_out(r, n, f.width, f.fill, f.align ? f.align : '>', f.sep, base == 10 ? 3 : 4, line);
  }
  if (v.type == Value::Type::floating) {
    Spec f = parse_spec(spec, 0, '>', "float", line);
    if (f.type && !std::strchr("eEfFgGn%", f.type))
      fail(K::value_error, line, std::string("Unknown format code '") + f.type + "' for object of type 'float'");
    return format_float(r, v.f, f, line);
  }
  // None, lists, dicts, Undefined: object.__format__ takes only an empty spec.
  fail(K::type_error, line, "unsupported format string passed to " + py_type(v) + ".__format__");
}

struct Formatter {
  Renderer& r;
  const List& pos;
  const Value& named;  // a dict
  bool markup;
  int line;
  int64_t auto_index = 0;  // -1: fields are numbered by hand

  Value value_of(const std::string& field) {
    size_t i = field.find_first_of(".[");
    const std::string first = field.substr(0, i);
    Value v;
    if (!first.empty() && std::all_of(first.begin(), first.end(), ::isdigit)) {
      if (first.size() > 18 || std::stoull(first) >= pos.size()) fail(K::index_error, line, "tuple index out of range");
      v = pos[std::stoull(first)];
    } else {
      const Value* k = named.dict->find(std::string_view(first));
      if (!k) fail(K::key_error, line, repr(Value::string(first)));
      v = *k;
    }
    while (i < field.size()) {  // .name and [key], each through the sandbox
      if (field[i] == '.') {
        size_t end = field.find_first_of(".[", i + 1);
        std::string name = field.substr(i + 1, end == std::string::npos ? std::string::npos : end - i - 1);
        if (name.empty()) fail(K::value_error, line, "Empty attribute in format string");
        v = r.getattr(v, name, line);
        i = end == std::string::npos ? field.size() : end;
      } else if (field[i] == '[') {
        size_t end = field.find(']', i);
        if (end == std::string::npos) fail(K::value_error, line, "Missing ']' in format string");
        std::string key = field.substr(i + 1, end - i - 1);
        if (key.empty()) fail(K::value_error, line, "Empty attribute in format string");
        bool digits = key.size() < 19 && std::all_of(key.begin(), key.end(), ::isdigit);
        v = r.getitem(v, digits ? Value::integer(std::stoll(key)) : Value::string(key), line);
        i = end + 1;
        if (i < field.size() && field[i] != '.' && field[i] != '[')
          fail(K::value_error, line, "Only '.' or '[' may follow ']' in format field specifier");
      } else {
        fail(K::value_error, line, "Only '.' or '[' may follow ']' in format field specifier");
      }
    }
    return v;
  }

  // Python's Formatter._vformat: a spec is formatted in turn, two levels down at most.
  std::string run(const std::string& fmt, int depth) {
    if (depth < 0) fail(K::value_error, line, "Max string recursion exceeded");
    std::string out;
    for (size_t i = 0; i < fmt.size(); ++i) {
      const char c = fmt[i];
      if (c == '}') {
        if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
          out += '}';
          ++i;
          continue;
        }
        fail(K::value_error, line, "Single '}' encountered in format string");
      }
      if (c != '{') {
        out += c;
        continue;
      }
      if (i + 1 >= fmt.size()) fail(K::value_error, line, "Single '{' encountered in format string");
      if (fmt[i + 1] == '{') {
        out += '{';
        ++i;
        continue;
      }
      // The field: a name (with [keys], where braces do not count), !conversion, :spec.
      size_t k = i + 1;
      while (k < fmt.size() && fmt[k] != '}' && fmt[k] != '!' && fmt[k] != ':') {
        if (fmt[k] == '{') fail(K::value_error, line, "unexpected '{' in field name");
        if (fmt[k] == '[') {
          while (k < fmt.size() && fmt[k] != ']') ++k;
          if (k >= fmt.size()) break;
        }
        ++k;
      }
      if (k >= fmt.size()) fail(K::value_error, line, "expected '}' before end of string");
      std::string field = fmt.substr(i + 1, k - i - 1), spec;
      char conv = 0;
      if (fmt[k] == '!') {
        if (k + 1 >= fmt.size()) fail(K::value_error, line, "end of string while looking for conversion specifier");
        conv = fmt[k + 1];
        k += 2;
        if (k >= fmt.size()) fail(K::value_error, line, "expected '}' before end of string");
        if (fmt[k] != ':' && fmt[k] != '}') fail(K::value_error, line, "expected ':' after conversion specifier");
      }
      if (fmt[k] == ':') {
        size_t depth_in = 0, s = ++k;
        for (; k < fmt.size(); ++k) {
          if (fmt[k] == '{') ++depth_in;
          else if (fmt[k] == '}' && depth_in-- == 0) break;
        }
        if (k >= fmt.size()) fail(K::value_error, line, "expected '}' before end of string");
        spec = fmt.substr(s, k - s);
      }
      i = k;  // the closing brace
      if (field.empty()) {
        if (auto_index < 0) fail(K::value_error, line, "cannot switch from manual field specification to automatic field numbering");
        field = std::to_string(auto_index++);
      } else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
        if (auto_index > 0) fail(K::value_error, line, "cannot switch from manual field specification to automatic field numbering");
        auto_index = -1;
      }
      Value v = value_of(field);
      if (conv == 's') v = Value::string(str(v));
      else if (conv == 'r') v = Value::string(py_repr(v));
      else if (conv == 'a') v = Value::string(ascii_of(py_repr(v)));
      else if (conv) fail(K::value_error, line, std::string("Unknown conversion specifier ") + conv);
      spec = run(spec, depth - 1);
      if (markup && v.safe && v.type == Value::Type::string && !spec.empty())  // Markup.__html_format__
        fail(K::value_error, line, "Unsupported format specification for Markup.");
      std::string got = format_field(r, v, spec, line);
      out += markup && !v.safe ? html_escape(got) : got;
      r.sized(out.size(), line);
    }
    return out;
  }
};

}  // namespace

Value str_format(Renderer& r, const Value& fmt, const CallArgs& a, bool format_map, int line) {
  Value named = Value::new_dict();
  List none;
  if (format_map) {
    if (!a.kw.empty()) fail(K::type_error, line, "format_map() takes no keyword arguments");
    if (a.pos.size() != 1) fail(K::type_error, line, "format_map() takes exactly one argument (" + std::to_string(a.pos.size()) + " given)");
    if (a.pos[0].type == Value::Type::dict || a.pos[0].type == Value::Type::ns) named = a.pos[0];
  } else {
    for (const auto& [k, v] : a.kw) named.dict->set(Value::string(k), v);
  }
  Formatter f{r, format_map ? none : a.pos, named, fmt.safe, line};
  Value s = Value::string(f.run(fmt.s, 2));
  s.safe = fmt.safe;
  return s;
}

// ---- cycler, joiner, lipsum ----

namespace {

// An object with attributes (a dict) and a call: what jinja2's helper classes are here.
Value object(const std::string& cls, std::function<Value(Renderer&, CallArgs&, int)> call) {
  Value o = callable(cls, std::move(call));
  o.dict = std::make_shared<Dict>();  // its methods hold it weakly: no cycle
  return o;
}

// jinja2's lorem ipsum vocabulary (jinja2/constants.py).
const char* const kLorem =
    "a ac accumsan ad adipiscing aenean aliquam aliquet amet ante aptent arcu at auctor augue bibendum blandit class commodo "
    "condimentum congue consectetuer consequat conubia convallis cras cubilia cum curabitur curae cursus dapibus diam dictum "
    "dictumst dignissim dis dolor donec dui duis egestas eget eleifend elementum elit enim erat eros est et etiam eu euismod "
    "facilisi facilisis fames faucibus felis fermentum feugiat fringilla fusce gravida habitant habitasse hac hendrerit "
    "hymenaeos iaculis id imperdiet in inceptos integer interdum ipsum justo lacinia lacus laoreet lectus leo libero ligula "
    "litora lobortis lorem luctus maecenas magna magnis malesuada massa mattis mauris metus mi molestie mollis montes morbi "
    "mus nam nascetur natoque nec neque netus nibh nisi nisl non nonummy nostra nulla nullam nunc odio orci ornare parturient "
    "pede pellentesque penatibus per pharetra phasellus placerat platea porta porttitor posuere potenti praesent pretium "
    "primis proin pulvinar purus quam quis quisque rhoncus ridiculus risus rutrum sagittis sapien scelerisque sed sem semper "
    "senectus sit sociis sociosqu sodales sollicitudin suscipit suspendisse taciti tellus tempor tempus tincidunt torquent "
    "tortor tristique turpis ullamcorper ultrices ultricies urna ut varius vehicula vel velit venenatis vestibulum vitae "
    "vivamus viverra volutpat vulputate";

// splitmix64 from a fixed seed: jinja2's text is random, ours is the same on every render.
struct Random {
  uint64_t s = 0x9E3779B97F4A7C15u;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
  }
  int64_t range(int64_t lo, int64_t hi) {  // [lo, hi)
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + next() % span);
  }
};

}  // namespace

void add_helper_globals(Frame& globals) {
  globals.vars["cycler"] = callable("cycler", [](Renderer&, CallArgs& a, int line) {
    if (a.pos.empty()) fail(K::runtime_error, line, "at least one item has to be provided");
    Value c = object("Cycler", [](Renderer&, CallArgs&, int l) -> Value { fail(K::type_error, l, "'Cycler' object is not callable"); });
    auto at = std::make_shared<size_t>(0);
    Value items = Value::new_list(a.pos);
    items.tuple = true;
    std::weak_ptr<Dict> self = c.dict;
    c.dict->set(Value::string("items"), items);
    c.dict->set(Value::string("current"), a.pos[0]);
    c.dict->set(Value::string("next"), callable("next", [self, items, at](Renderer&, CallArgs&, int) {
      const Value got = (*items.list)[*at];
      *at = (*at + 1) % items.list->size();
      if (auto d = self.lock()) d->set(Value::string("current"), (*items.list)[*at]);
      return got;
    }));
    c.dict->set(Value::string("reset"), callable("reset", [self, items, at](Renderer&, CallArgs&, int) {
      *at = 0;
      if (auto d = self.lock()) d->set(Value::string("current"), (*items.list)[0]);
      return Value::none();
    }));
    return c;
  });
  globals.vars["joiner"] = callable("joiner", [](Renderer&, CallArgs& a, int) {
    Value sep = arg(a, 0, "sep", Value::string(", "));
    auto used = std::make_shared<bool>(false);
    Value j = object("Joiner", [sep, used](Renderer&, CallArgs&, int) {
      if (!*used) {
        *used = true;
        return Value::string("");
      }
      return sep;
    });
    j.dict->set(Value::string("sep"), sep);
    return j;
  });
  auto random = std::make_shared<Random>();
  globals.vars["lipsum"] = callable("lipsum", [random](Renderer& r, CallArgs& a, int line) {
    const int64_t n = to_int(arg(a, 0, "n", Value::integer(5)), line);
    const bool html = truthy(arg(a, 1, "html", Value::boolean(true)));
    const int64_t lo = to_int(arg(a, 2, "min", Value::integer(20)), line), hi = to_int(arg(a, 3, "max", Value::integer(100)), line);
    if (lo >= hi && n > 0)
      fail(K::value_error, line, "empty range for randrange() (" + std::to_string(lo) + ", " + std::to_string(hi) + ", " + std::to_string(hi - lo) + ")");
    static const std::vector<std::string> words = [] {
      std::vector<std::string> w;
      for (const char* p = kLorem; *p;) {
        const char* e = std::strchr(p, ' ');
        if (!e) e = p + std::strlen(p);
        w.emplace_back(p, e);
        p = *e ? e + 1 : e;
      }
      return w;
    }();
    std::string out;
    for (int64_t k = 0; k < n; ++k) {
      r.tick(line);
      // As jinja2: a capital after each full stop, a comma every 3 to 8 words, a full stop
      // every 10 to 20, and a full stop at the end.
      bool capital = true;
      int64_t last_comma = 0, last_stop = 0;
      std::string p, last;
      const int64_t count = random->range(lo, hi);
      for (int64_t idx = 0; idx < count; ++idx) {
        std::string w;
        do w = words[random->next() % words.size()];
        while (w == last);
        last = w;
        if (capital) {
          w[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])));
          capital = false;
        }
        if (idx - random->range(3, 8) > last_comma) {
          last_comma = idx;
          last_stop += 2;
          w += ',';
        }
        if (idx - random->range(10, 20) > last_stop) {
          last_comma = last_stop = idx;
          w += '.';
          capital = true;
        }
        p += (idx ? " " : "") + w;
        r.sized(out.size() + p.size(), line);
      }
      if (!p.empty() && p.back() == ',') p.back() = '.';
      else if (p.empty() || p.back() != '.') p += '.';
      out += k ? (html ? "\n" : "\n\n") : "";
      out += html ? "<p>" + html_escape(p) + "</p>" : p;
      r.sized(out.size(), line);
    }
    Value s = Value::string(std::move(out));
    s.safe = html;
    return s;
  });
}

std::tm strftime_clock(const RenderOptions& o, int line) {
  std::tm tm{};
  if (o.now) {
    const std::time_t t = static_cast<std::time_t>(*o.now);
    localtime_r(&t, &tm);
    return tm;
  }
  if (o.source_date_epoch && !o.source_date_epoch->empty()) {
    const char* epoch = o.source_date_epoch->c_str();
    char* end = nullptr;
    errno = 0;
    const long long t = std::strtoll(epoch, &end, 10);
    if (*end || errno || !std::isdigit(static_cast<unsigned char>(epoch[0])))
      fail(K::value_error, line, std::string("SOURCE_DATE_EPOCH is not a count of seconds: '") + epoch + "'");
    const std::time_t tt = static_cast<std::time_t>(t);
    if (!gmtime_r(&tt, &tm)) fail(K::value_error, line, std::string("SOURCE_DATE_EPOCH is out of range: '") + epoch + "'");
    return tm;
  }
  const std::time_t t = std::time(nullptr);
  localtime_r(&t, &tm);
  return tm;
}

}  // namespace ggufkit::jinja
