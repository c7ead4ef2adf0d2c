#include "lexer.h"

#include <algorithm>
#include <cstring>

namespace ggufkit::jinja::detail {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || static_cast<unsigned char>(c) >= 0x80; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

std::string normalise(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\r') {
      out += '\n';
      if (i + 1 < in.size() && in[i + 1] == '\n') ++i;
    } else {
      out += in[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
  return out;
}


// A string literal's body as Python's unicode-escape reads it. False for a \x, \u or \U
// without its digits, which Python refuses.
bool unescape(std::string_view body, std::string& out) {
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\' || i + 1 == body.size()) {
      out += c;
      continue;
    }
    char e = body[++i];
    switch (e) {
      case '\n': break;  // a line continuation
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x': case 'u': case 'U': {
        size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (size_t k = 0; k < n; ++k) {
          int h = i + 1 + k < body.size() ? hex_value(body[i + 1 + k]) : -1;
          if (h < 0) return false;
          cp = cp * 16 + static_cast<uint32_t>(h);
        }
        if (cp > 0x10FFFF) return false;
        i += n;
        append_utf8(out, cp);
        break;
      }
      default:
        if (e >= '0' && e <= '7') {  // up to three octal digits
          uint32_t cp = 0;
          size_t k = 0;
          for (; k < 3 && i + k < body.size() && body[i + k] >= '0' && body[i + k] <= '7'; ++k) cp = cp * 8 + (body[i + k] - '0');
          i += k - 1;
          append_utf8(out, cp);
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return true;
}

}  // namespace

class Lexer {
 public:
  Lexer(Lexed& out, const Options& o) : out_(out), s_(out.source), o_(o) {}

  // The next piece of the template: its data up to the next tag, and that tag's tokens;
  // at the end, the eof token. False once that is out.
  bool step() {
    if (done_) return false;
    if (pos_ >= s_.size()) {
      push_token({Tok::eof, last_line_, s_.size(), {}});  // on the line of the last token, as jinja2's
      done_ = true;
      return true;
    }
    size_t at = next_tag(pos_);
    if (at == std::string::npos) {
      emit_data(std::string_view(s_).substr(pos_), pos_);
      advance_to(s_.size());
      return true;
    }
    char kind = s_[at + 1];
    char sign = at + 2 < s_.size() && (s_[at + 2] == '-' || s_[at + 2] == '+') ? s_[at + 2] : 0;
    size_t raw_end = kind == '%' ? raw_begin(at) : 0;
    std::string_view text = std::string_view(s_).substr(pos_, at - pos_);
    strip_before(text, sign, kind != '{');
    emit_data(text, pos_);
    advance_to(at);
    if (raw_end) {
      line_starting_ = s_[raw_end - 1] == '\n';
      advance_to(raw_end);
      raw();
    } else if (kind == '#') {
      comment(at + 2 + (sign ? 1 : 0));
    } else {
      tag(kind, at, at + 2 + (sign ? 1 : 0));
    }
    return true;
  }

 private:
  [[noreturn]] void fail(size_t at, int line, const std::string& what) const {
    throw SyntaxError(line, out_.column(at), what);
  }

  void push_token(Token t) {
    last_line_ = t.line;
    out_.tokens.push_back(t);
  }

  void advance_to(size_t to) {
    line_ += static_cast<int>(std::count(s_.begin() + static_cast<std::ptrdiff_t>(pos_), s_.begin() + static_cast<std::ptrdiff_t>(to), '\n'));
    pos_ = to;
  }

  size_t next_tag(size_t from) const {
    for (size_t i = s_.find('{', from); i != std::string::npos; i = s_.find('{', i + 1))
      if (i + 1 < s_.size() && (s_[i + 1] == '{' || s_[i + 1] == '%' || s_[i + 1] == '#')) return i;
    return std::string::npos;
  }

  // Whitespace control on the data before a tag: `-` strips all of it; otherwise, for a
  // block or comment tag, lstrip_blocks strips spaces from the start of the line.
  void strip_before(std::string_view& text, char sign, bool lstrip_kind) const {
    if (sign == '-') {
      while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    } else if (sign != '+' && o_.lstrip_blocks && lstrip_kind) {
      size_t l = text.rfind('\n');
      l = l == std::string::npos ? 0 : l + 1;
      if ((l > 0 || line_starting_) && l < text.size() &&
          std::all_of(text.begin() + static_cast<std::ptrdiff_t>(l), text.end(), is_space))
        text = text.substr(0, l);
    }
  }

  void emit_data(std::string_view text, size_t at) {
    if (!text.empty()) push_token({Tok::data, line_, at, text});
  }

  size_t skip_spaces(size_t i) const {
    while (i < s_.size() && is_space(s_[i])) ++i;
    return i;
  }

  // The end of a block tag at i (`+%}`, `-%}` and the whitespace after it, or `%}` and,
  // with trim_blocks, one newline), or 0.
  size_t block_end(size_t i, bool trim) const {
    if (s_.compare(i, 3, "+%}") == 0) return i + 3;
    if (s_.compare(i, 3, "-%}") == 0) return skip_spaces(i + 3);
    if (s_.compare(i, 2, "%}") == 0) return i + 2 + (trim && o_.trim_blocks && i + 2 < s_.size() && s_[i + 2] == '\n' ? 1 : 0);
    return 0;
  }

  // `{% raw %}` at `at`: where its tag ends (its `-%}` takes the whitespace after), or 0.
  size_t raw_begin(size_t at) const {
    size_t i = at + 2;
    if (i < s_.size() && (s_[i] == '-' || s_[i] == '+')) ++i;
    i = skip_spaces(i);
    if (s_.compare(i, 3, "raw") != 0) return 0;
    i = skip_spaces(i + 3);
    if (s_.compare(i, 3, "-%}") == 0) return skip_spaces(i + 3);
    if (s_.compare(i, 2, "%}") == 0) return i + 2;
    return 0;
  }

  void raw() {
    for (size_t at = s_.find("{%", pos_); at != std::string::npos; at = s_.find("{%", at + 1)) {
      size_t i = at + 2;
      char sign = i < s_.size() && (s_[i] == '-' || s_[i] == '+') ? s_[i] : 0;
      if (sign) ++i;
      i = skip_spaces(i);
      if (s_.compare(i, 6, "endraw") != 0) continue;
      size_t end = block_end(skip_spaces(i + 6), true);
      if (!end) continue;
      std::string_view text = std::string_view(s_).substr(pos_, at - pos_);
      strip_before(text, sign, true);
      emit_data(text, pos_);
      advance_to(end);
      line_starting_ = s_[end - 1] == '\n';
      return;
    }
    fail(pos_, line_, "Missing end of raw directive");
  }

  void comment(size_t body) {
    size_t start = pos_;
    if (size_t j = s_.find("#}", body); j != std::string::npos) {  // the first end: `-#}` and `+#}` included
      size_t end;
      if (j > body && s_[j - 1] == '-') end = skip_spaces(j + 2);
      else if (j > body && s_[j - 1] == '+') end = j + 2;
      else end = j + 2 + (o_.trim_blocks && j + 2 < s_.size() && s_[j + 2] == '\n' ? 1 : 0);
      advance_to(end);
      line_starting_ = s_[end - 1] == '\n';
      return;
    }
    fail(start, line_, "Missing end of comment tag");
  }

  void tag(char kind, size_t at, size_t i) {
    const bool block = kind == '%';
    push_token({block ? Tok::block_begin : Tok::var_begin, line_, at, {}});
    advance_to(i);
    std::vector<char> balance;
    while (pos_ < s_.size()) {
      size_t p = pos_;
      if (balance.empty()) {
        size_t end = 0;
        if (block) {
          end = block_end(p, true);
        } else if (s_.compare(p, 3, "-}}") == 0) {
          end = skip_spaces(p + 3);
        } else if (s_.compare(p, 2, "}}") == 0) {
          end = p + 2;
        }
        if (end) {
          push_token({block ? Tok::block_end : Tok::var_end, line_, p, {}});
          advance_to(end);
          line_starting_ = s_[end - 1] == '\n';
          return;
        }
      }
      char c = s_[p];
      if (is_space(c)) {
        advance_to(skip_spaces(p));
        continue;
      }
      if (size_t n = number(p, true)) {
        push(Tok::floating, p, n);
      } else if (size_t m = number(p, false)) {
        push(Tok::integer, p, m);
      } else if (is_name_start(c)) {
        size_t e = p;
        while (e < s_.size() && is_name_char(s_[e])) ++e;
        push(Tok::name, p, e);
      } else if (c == '\'' || c == '"') {
        size_t e = p + 1;
        while (e < s_.size() && s_[e] != c) e += s_[e] == '\\' ? 2 : 1;
        if (e >= s_.size()) fail(p, line_, std::string("unexpected char '") + c + "' at " + std::to_string(p));
        std::string_view body = std::string_view(s_).substr(p + 1, e - p - 1);
        if (body.find('\\') != std::string_view::npos) {  // with escapes, kept as it reads; else a view of the source
          std::string value;
          if (!unescape(body, value)) fail(p, line_, "a string with a broken \\x, \\u or \\U escape");
          body = out_.unescaped.emplace_back(std::move(value));
        }
        push_token({Tok::string, line_, p, body});
        advance_to(e + 1);
      } else {
        operator_at(p, balance);
      }
    }
  }

  // A float (`floating`) or an integer as jinja2's patterns take them: the end, or 0.
  size_t number(size_t p, bool floating) const {
    auto digits = [&](size_t i) {  // (\d+_)*\d+ : the end, or i when none
      size_t e = i;
      while (e < s_.size() && is_digit(s_[e])) {
        while (e < s_.size() && is_digit(s_[e])) ++e;
        if (e + 1 < s_.size() && s_[e] == '_' && is_digit(s_[e + 1])) ++e;
      }
      return e;
    };
    if (!is_digit(s_[p])) return 0;
    if (floating) {
      if (p > 0 && s_[p - 1] == '.') return 0;
      size_t e = digits(p);
      size_t frac = 0;
      if (e + 1 < s_.size() && s_[e] == '.' && is_digit(s_[e + 1])) frac = digits(e + 1);
      size_t after = frac ? frac : e;
      if (after < s_.size() && (s_[after] == 'e' || s_[after] == 'E')) {
        size_t x = after + 1;
        if (x < s_.size() && (s_[x] == '+' || s_[x] == '-')) ++x;
        if (x < s_.size() && is_digit(s_[x])) return digits(x);
      }
      return frac;
    }
    if (s_[p] == '0' && p + 1 < s_.size()) {
      char b = static_cast<char>(s_[p + 1] | 0x20);
      auto ok = [&](char c) {
        return b == 'x' ? hex_value(c) >= 0 : b == 'o' ? (c >= '0' && c <= '7') : (c == '0' || c == '1');
      };
      if (b == 'x' || b == 'o' || b == 'b') {
        size_t e = p + 2;
        while (e < s_.size()) {
          if (s_[e] == '_' && e + 1 < s_.size() && ok(s_[e + 1])) e += 2;
          else if (ok(s_[e])) ++e;
          else break;
        }
        if (e > p + 2) return e;
      }
    }
    if (s_[p] == '0') {  // 0(_?0)*
      size_t e = p + 1;
      while (e < s_.size()) {
        if (s_[e] == '0') ++e;
        else if (s_[e] == '_' && e + 1 < s_.size() && s_[e + 1] == '0') e += 2;
        else break;
      }
      return e;
    }
    return digits(p);
  }

  void push(Tok t, size_t p, size_t e) {
    push_token({t, line_, p, std::string_view(s_).substr(p, e - p)});
    advance_to(e);
  }

  void operator_at(size_t p, std::vector<char>& balance) {
    static const char* const two[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : two)
      if (s_.compare(p, 2, op) == 0) return push(Tok::op, p, p + 2);
    char c = s_[p];
    if (!std::strchr("+-/*%~[](){}><=.:|,;", c))
      fail(p, line_, std::string("unexpected char '") + c + "' at " + std::to_string(p));
    if (c == '(' || c == '[' || c == '{') {
      balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
      if (balance.size() > o_.max_depth) fail(p, line_, "brackets nested deeper than " + std::to_string(o_.max_depth));
    } else if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) fail(p, line_, std::string("unexpected '") + c + "'");
      if (balance.back() != c) fail(p, line_, std::string("unexpected '") + c + "', expected '" + balance.back() + "'");
      balance.pop_back();
    }
    push(Tok::op, p, p + 1);
  }

  Lexed& out_;
  const std::string& s_;
  const Options& o_;
  size_t pos_ = 0;
  int line_ = 1, last_line_ = 1;
  bool line_starting_ = true, done_ = false;
};

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int Lexed::column(size_t pos) const {
  size_t start = pos == 0 ? 0 : source.rfind('\n', pos - 1);
  start = start == std::string::npos ? 0 : (pos == 0 ? 0 : start + 1);
  int col = 1;
  for (size_t i = start; i < pos && i < source.size(); ++i) col += (static_cast<unsigned char>(source[i]) & 0xC0) != 0x80;
  return col;
}

Lexed::Lexed(std::string_view text, const Options& options) {
  if (text.size() > options.max_size)
    throw SyntaxError(1, 1, "the template is " + std::to_string(text.size()) + " bytes, over the " +
                                std::to_string(options.max_size) + "-byte limit");
  source = normalise(text);
  lexer_ = std::make_unique<Lexer>(*this, options);
}

Lexed::~Lexed() = default;

const Token& Lexed::at(size_t i) {
  while (i - first_ >= tokens.size() && lexer_->step()) {
  }
  return i - first_ < tokens.size() ? tokens[i - first_] : tokens.back();
}

void Lexed::forget_before(size_t i) {
  for (; first_ < i && tokens.size() > 1; ++first_) tokens.pop_front();
}

}  // namespace ggufkit::jinja::detail
