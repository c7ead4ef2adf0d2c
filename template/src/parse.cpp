// jinja2's parser (jinja2/parser.py), statement for statement and in its precedence, so
// that a template it refuses is refused here on the same line.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>

#include "ggufkit/jinja.h"
#include "lexer.h"

namespace ggufkit::jinja {

SyntaxError::SyntaxError(int l, int c, const std::string& what)
    : std::runtime_error("line " + std::to_string(l) + ", column " + std::to_string(c) + ": " + what),
      line(l), column(c), message(what) {}

namespace {

using detail::Tok;
using detail::Token;

std::string describe(const Token& t) {
  switch (t.type) {
    case Tok::eof: return "end of template";
    case Tok::block_begin: return "begin of statement block";
    case Tok::block_end: return "end of statement block";
    case Tok::var_begin: return "begin of print statement";
    case Tok::var_end: return "end of print statement";
    case Tok::data: return "template data";
    case Tok::string: return "string";
    default: return std::string(t.value);
  }
}

class Parser {
 public:
  Parser(detail::Lexed& lexed, const Options& o) : lx_(lexed), o_(o) {}

  Template run() {
    Template out;
    out.body = subparse({});
    return out;
  }

 private:
  // --- the token stream ---
  const Token& cur() const { return lx_.at(i_); }
  const Token& look() const { return lx_.at(i_ + 1); }
  const Token& next() {
    const Token& t = cur();
    if (t.type != Tok::eof) ++i_;
    return t;
  }
  bool is(Tok type) const { return cur().type == type; }
  bool is_op(const char* op) const { return cur().type == Tok::op && cur().value == op; }
  bool is_name(const char* name) const { return cur().type == Tok::name && cur().value == name; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }

  [[noreturn]] void fail(const std::string& what, const Token& at) const {
    throw SyntaxError(at.line, lx_.column(at.pos), what);
  }
  [[noreturn]] void fail(const std::string& what) const { fail(what, cur()); }

  [[noreturn]] void expected(const std::string& what) const {
    if (is(Tok::eof)) fail("unexpected end of template, expected '" + what + "'.");
    fail("expected token '" + what + "', got '" + describe(cur()) + "'");
  }
  const Token& expect(Tok type, const char* what) {
    if (!is(type)) expected(what);
    return next();
  }
  const Token& expect_op(const char* op) {
    if (!is_op(op)) expected(op);
    return next();
  }
  const Token& expect_name(const char* name) {
    if (!is_name(name)) expected(name);
    return next();
  }
  std::string expect_identifier() { return std::string(expect(Tok::name, "name").value); }

  // Depth of blocks and expressions, so no template exhausts the stack: the parser's own
  // recursion (Deeper), and the tree it builds (grown), which loops make deeper than the
  // recursion in a chain like `a + b + c ...`.
  [[noreturn]] void too_deep(const Token& at) const {
    fail("the template nests deeper than " + std::to_string(o_.max_depth) + " levels", at);
  }
  struct Deeper {
    Parser& p;
    explicit Deeper(Parser& parser) : p(parser) {
      if (++p.depth_ > p.o_.max_depth) p.too_deep(p.cur());
    }
    ~Deeper() { --p.depth_; }
  };

  // A node joins the tree, one level above its tallest child; refused at `at` when that,
  // under the depth it is parsed at, passes the cap: before the tree gets deeper than any
  // walk of it (or its destruction) can take.
  ExprPtr grown(ExprPtr e, const Token& at) {
    unsigned h = 0;
    auto see = [&h](const ExprPtr& k) {
      if (k) h = std::max(h, k->height);
    };
    for (const ExprPtr& k : e->kids) see(k);
    for (const ExprPtr& k : e->args.positional) see(k);
    for (const auto& kw : e->args.keywords) see(kw.second);
    see(e->args.star);
    see(e->args.double_star);
    e->height = h + 1;
    if (depth_ + e->height > o_.max_depth) too_deep(at);
    return e;
  }

  // Lets the tokens before the current one go: before each statement and each operand
  // (no function keeps a reference to a token across a parse: a copy, where it is still
  // wanted for an error's position), so that a million-item list keeps no tokens.
  void forget() { lx_.forget_before(i_); }

  // --- statements ---
  using Ends = std::initializer_list<const char*>;

  bool at_end(Ends ends) const {
    for (const char* e : ends)
      if (is_name(e)) return true;
    return false;
  }

  Body subparse(Ends ends) {
    Deeper d(*this);
    Body body;
    for (;;) {
      forget();
      if (is(Tok::eof)) break;
      const Token t = cur();
      if (t.type == Tok::data) {
        auto n = node(Node::Kind::text, t);
        n->text = t.value;
        body.push_back(std::move(n));
        next();
      } else if (t.type == Tok::var_begin) {
        next();
        auto n = node(Node::Kind::output, t);
        n->exprs.push_back(tuple(false, true, {}, false));
        body.push_back(std::move(n));
        expect(Tok::var_end, "end of print statement");
      } else if (t.type == Tok::block_begin) {
        next();
        if (ends.size() && at_end(ends)) return body;
        body.push_back(statement());
        expect(Tok::block_end, "end of statement block");
      } else {
        fail("unexpected '" + describe(t) + "'");
      }
    }
    return body;
  }

  // The body up to one of `ends` (left as the current token, or stepped over with `drop`).
  Body statements(Ends ends, bool drop) {
    skip_op(":");
    expect(Tok::block_end, "end of statement block");
    Body body = subparse(ends);
    if (is(Tok::eof)) {
      std::string want;
      for (const char* e : ends) want += std::string(want.empty() ? "" : " or ") + "'" + e + "'";
      fail("Unexpected end of template. Jinja was looking for the following tags: " + want + ".");
    }
    if (drop) next();
    return body;
  }

  NodePtr node(Node::Kind k, const Token& at) {
    auto n = std::make_unique<Node>();
    n->kind = k;
    n->line = at.line;
    return n;
  }

  NodePtr statement() {
    const Token t = cur();
    if (t.type != Tok::name) fail("tag name expected");
    std::string_view tag = t.value;
    if (tag == "for") return for_loop();
    if (tag == "if") return if_block();
    if (tag == "set") return set();
    if (tag == "macro") return macro();
    if (tag == "call") return call_block();
    if (tag == "filter") return filter_block();
    if (tag == "with") return with_block();
    if (tag == "print") return print();
    if (tag == "block") return block();
    if (tag == "autoescape") return autoescape();
    if (tag == "extends" || tag == "include") return include(tag == "extends" ? Node::Kind::extends : Node::Kind::include);
    if (tag == "import") return import();
    if (tag == "from") return from_import();
    if (tag == "break" || tag == "continue") {  // jinja2.ext.loopcontrols
      next();
      return node(tag == "break" ? Node::Kind::loop_break : Node::Kind::loop_continue, t);
    }
    if (tag == "generation") {  // transformers' tag: the body, marked
      auto n = node(Node::Kind::generation, next());
      n->bodies.push_back(statements({"endgeneration"}, true));
      return n;
    }
    fail("Encountered unknown tag '" + std::string(tag) + "'.");
  }

  NodePtr for_loop() {
    auto n = node(Node::Kind::for_loop, next());
    n->exprs.push_back(assign_target(true, false, {"in"}));
    expect_name("in");
    n->exprs.push_back(tuple(false, false, {"recursive"}, false));
    n->exprs.push_back(skip_name("if") ? expression(true) : nullptr);
    n->recursive = skip_name("recursive");
    n->bodies.push_back(statements({"endfor", "else"}, false));
    if (next().value == "endfor") {
      n->bodies.emplace_back();
    } else {
      n->bodies.push_back(statements({"endfor"}, true));
    }
    return n;
  }

  NodePtr if_block() {
    auto n = node(Node::Kind::if_block, next());
    for (;;) {
      n->exprs.push_back(tuple(false, false, {}, false));
      n->bodies.push_back(statements({"elif", "else", "endif"}, false));
      const Token t = next();
      if (t.value == "elif") continue;
      n->bodies.push_back(t.value == "else" ? statements({"endif"}, true) : Body{});
      return n;
    }
  }

  NodePtr set() {
    auto n = node(Node::Kind::set, next());
    n->exprs.push_back(assign_target(true, false, {}, true));
    if (skip_op("=")) {
      n->exprs.push_back(tuple(false, true, {}, false));
      return n;
    }
    n->kind = Node::Kind::set_block;
    n->exprs.push_back(filter_chain(nullptr, false));
    n->bodies.push_back(statements({"endset"}, true));
    return n;
  }

  // (a, b=1, ...) of a macro or a call block.
  void signature(Node& n) {
    expect_op("(");
    while (!is_op(")")) {
      if (!n.params.empty()) expect_op(",");
      n.params.push_back(expect_identifier());
      if (skip_op("=")) n.defaults.push_back(expression(true));
      else if (!n.defaults.empty()) fail("non-default argument follows default argument");
    }
    expect_op(")");
  }

  NodePtr macro() {
    auto n = node(Node::Kind::macro, next());
    n->name = expect_identifier();
    signature(*n);
    n->bodies.push_back(statements({"endmacro"}, true));
    return n;
  }

  NodePtr call_block() {
    const Token tag = next();
    auto n = node(Node::Kind::call_block, tag);
    if (is_op("(")) signature(*n);
    ExprPtr call = expression(true);
    if (call->kind != Expr::Kind::call) fail("expected call", tag);
    n->exprs.push_back(std::move(call));
    n->bodies.push_back(statements({"endcall"}, true));
    return n;
  }

  NodePtr filter_block() {
    auto n = node(Node::Kind::filter_block, next());
    n->exprs.push_back(filter_chain(nullptr, true));
    n->bodies.push_back(statements({"endfilter"}, true));
    return n;
  }

  NodePtr with_block() {
    auto n = node(Node::Kind::with_block, next());
    while (!is(Tok::block_end)) {
      if (!n->exprs.empty()) expect_op(",");
      n->exprs.push_back(assign_target(true, false, {}));
      expect_op("=");
      n->defaults.push_back(expression(true));
    }
    n->bodies.push_back(statements({"endwith"}, true));
    return n;
  }

  NodePtr print() {
    auto n = node(Node::Kind::output, next());
    while (!is(Tok::block_end)) {
      if (!n->exprs.empty()) expect_op(",");
      n->exprs.push_back(expression(true));
    }
    return n;
  }

  NodePtr block() {
    auto n = node(Node::Kind::block, next());
    n->name = expect_identifier();
    skip_name("scoped");
    skip_name("required");
    if (is_op("-"))
      fail("Block names in Jinja have to be valid Python identifiers and may not contain hyphens, use an underscore instead.");
    n->bodies.push_back(statements({"endblock"}, true));
    skip_name(n->name.c_str());
    return n;
  }

  NodePtr autoescape() {
    auto n = node(Node::Kind::autoescape, next());
    n->exprs.push_back(expression(true));
    n->bodies.push_back(statements({"endautoescape"}, true));
    return n;
  }

  // Steps over two names, one of `first` then `second`, when they come next.
  bool skip_names(std::initializer_list<const char*> first, const char* second) {
    bool ok = std::any_of(first.begin(), first.end(), [&](const char* f) { return is_name(f); }) &&
              look().type == Tok::name && look().value == second;
    if (ok) {
      next();
      next();
    }
    return ok;
  }
  bool context_modifier() { return skip_names({"with", "without"}, "context"); }

  // extends, include, import and from start alike: the tag, then the template's name.
  NodePtr loading(Node::Kind k) {
    auto n = node(k, next());
    n->exprs.push_back(expression(true));
    return n;
  }

  NodePtr include(Node::Kind k) {
    auto n = loading(k);
    if (k == Node::Kind::include) {
      skip_names({"ignore"}, "missing");
      context_modifier();
    }
    return n;
  }

  NodePtr import() {
    auto n = loading(Node::Kind::import);
    expect_name("as");
    n->name = expect_identifier();
    context_modifier();
    return n;
  }

  NodePtr from_import() {
    auto n = loading(Node::Kind::from_import);
    expect_name("import");
    for (;;) {
      if (!n->params.empty()) expect_op(",");
      if (is(Tok::name)) {
        if (context_modifier()) break;
        if (cur().value.rfind('_', 0) == 0) fail("names starting with an underline can not be imported");
        std::string name(next().value);
        if (skip_name("as")) name += "=" + expect_identifier();
        n->params.push_back(name);
        if (!is_op(",")) break;
      } else if (!n->params.empty()) {
        break;
      } else {
        expected("name");
      }
    }
    return n;
  }

  // --- expressions ---
  ExprPtr make(Expr::Kind k, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line;
    return e;
  }

  static bool assignable(const Expr& e) {
    if (e.kind == Expr::Kind::name)
      return e.name != "true" && e.name != "false" && e.name != "none" && e.name != "True" && e.name != "False" &&
             e.name != "None";
    if (e.kind == Expr::Kind::tuple)
      return std::all_of(e.kids.begin(), e.kids.end(), [](const ExprPtr& k) { return assignable(*k); });
    return false;
  }

  ExprPtr assign_target(bool with_tuple, bool name_only, Ends extra, bool with_namespace = false) {
    if (with_namespace && is(Tok::name) && look().type == Tok::op && look().value == ".") {
      const Token t = next();
      auto e = make(Expr::Kind::attr, t.line);
      auto base = make(Expr::Kind::name, t.line);
      base->name = t.value;
      next();
      e->name = expect_identifier();
      e->kids.push_back(std::move(base));
      return grown(std::move(e), t);
    }
    const Token at = cur();
    ExprPtr target;
    if (name_only) {
      target = make(Expr::Kind::name, at.line);
      target->name = expect_identifier();
    } else {
      target = with_tuple ? tuple(true, true, extra, false) : primary();
    }
    if (!assignable(*target)) fail("can't assign to '" + kind_name(*target) + "'", at);
    return target;
  }

  static std::string kind_name(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::literal: return "const";
      case Expr::Kind::list: return "list";
      case Expr::Kind::dict: return "dict";
      case Expr::Kind::attr: return "getattr";
      case Expr::Kind::item: return "getitem";
      case Expr::Kind::call: return "call";
      default: return "expression";
    }
  }

  bool tuple_end(Ends extra) const {
    return is(Tok::var_end) || is(Tok::block_end) || is_op(")") || (extra.size() && at_end(extra));
  }

  // jinja2's parse_tuple: one expression, or several separated by commas as a tuple.
  ExprPtr tuple(bool simplified, bool with_condexpr, Ends extra, bool explicit_parens) {
    const Token start = cur();
    int line = start.line;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    for (;;) {
      if (!items.empty()) expect_op(",");
      if (tuple_end(extra)) break;
      items.push_back(simplified ? primary() : expression(with_condexpr));
      if (is_op(",")) is_tuple = true;
      else break;
      line = cur().line;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parens) fail("Expected an expression, got '" + describe(cur()) + "'");
    }
    auto e = make(Expr::Kind::tuple, line);
    e->kids = std::move(items);
    return grown(std::move(e), start);
  }

  ExprPtr expression(bool with_condexpr) {
    Deeper d(*this);
    if (!with_condexpr) return or_expr();
    int line = cur().line;
    ExprPtr e = or_expr();
    while (is_name("if")) {
      const Token at = next();
      auto c = make(Expr::Kind::cond, line);
      ExprPtr test = or_expr();
      ExprPtr other = skip_name("else") ? expression(true) : nullptr;
      c->kids.push_back(std::move(e));
      c->kids.push_back(std::move(test));
      c->kids.push_back(std::move(other));
      e = grown(std::move(c), at);
      line = cur().line;
    }
    return e;
  }

  ExprPtr binary(ExprPtr left, const std::string& op, ExprPtr right, int line) {
    auto e = make(Expr::Kind::binary, line);
    e->name = op;
    e->kids.push_back(std::move(left));
    e->kids.push_back(std::move(right));
    return e;
  }

  // One left-associative level of binary operators: operand (op operand)*; the operators
  // are names (and, or) or symbols.
  ExprPtr level(ExprPtr (Parser::*operand)(), std::initializer_list<const char*> ops, bool names) {
    int line = cur().line;
    ExprPtr e = (this->*operand)();
    for (;;) {
      const char* hit = nullptr;
      for (const char* op : ops)
        if (names ? is_name(op) : is_op(op)) hit = op;
      if (!hit) return e;
      const Token at = next();
      e = grown(binary(std::move(e), hit, (this->*operand)(), line), at);
      line = cur().line;
    }
  }

  ExprPtr or_expr() { return level(&Parser::and_expr, {"or"}, true); }
  ExprPtr and_expr() { return level(&Parser::not_expr, {"and"}, true); }
  ExprPtr not_expr() {
    if (is_name("not")) {
      Deeper d(*this);
      const Token at = next();
      auto e = make(Expr::Kind::unary, at.line);
      e->name = "not";
      e->kids.push_back(not_expr());
      return grown(std::move(e), at);
    }
    return compare();
  }

  ExprPtr compare() {
    int line = cur().line;
    ExprPtr first = math1();
    auto e = make(Expr::Kind::compare, line);
    const Token at = cur();
    for (;;) {
      if (cur().type == Tok::op && (cur().value == "==" || cur().value == "!=" || cur().value == "<" ||
                                    cur().value == "<=" || cur().value == ">" || cur().value == ">=")) {
        e->ops.emplace_back(next().value);
      } else if (skip_name("in")) {
        e->ops.push_back("in");
      } else if (is_name("not") && look().type == Tok::name && look().value == "in") {
        next();
        next();
        e->ops.push_back("notin");
      } else {
        break;
      }
      e->kids.push_back(math1());
      e->line = cur().line;
    }
    if (e->ops.empty()) return first;
    e->kids.insert(e->kids.begin(), std::move(first));
    return grown(std::move(e), at);
  }

  ExprPtr math1() { return level(&Parser::concat, {"+", "-"}, false); }
  ExprPtr concat() { return level(&Parser::math2, {"~"}, false); }
  ExprPtr math2() { return level(&Parser::pow, {"*", "/", "//", "%"}, false); }
  ExprPtr pow() { return level(&Parser::filtered, {"**"}, false); }
  ExprPtr filtered() { return unary(true); }

  ExprPtr unary(bool with_filter) {
    Deeper d(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const Token t = next();
      e = make(Expr::Kind::unary, t.line);
      e->name = t.value;
      e->kids.push_back(unary(false));
      e = grown(std::move(e), t);
    } else {
      e = primary();
    }
    e = postfix(std::move(e));
    if (with_filter) e = filter_expr(std::move(e));
    return e;
  }

  ExprPtr primary() {
    forget();
    Deeper d(*this);
    const Token t = cur();
    if (t.type == Tok::name) {
      next();
      if (t.value == "true" || t.value == "True" || t.value == "false" || t.value == "False") {
        auto e = make(Expr::Kind::literal, t.line);
        e->value = t.value == "true" || t.value == "True";
        return e;
      }
      if (t.value == "none" || t.value == "None") return make(Expr::Kind::literal, t.line);
      auto e = make(Expr::Kind::name, t.line);
      e->name = t.value;
      return e;
    }
    if (t.type == Tok::string) {
      auto e = make(Expr::Kind::literal, t.line);
      std::string s;
      while (is(Tok::string)) s += next().value;  // adjacent strings join
      e->value = std::move(s);
      return e;
    }
    if (t.type == Tok::integer || t.type == Tok::floating) {
      next();
      return number(t);
    }
    if (t.type == Tok::op && t.value == "(") {
      next();
      ExprPtr e = tuple(false, true, {}, true);
      expect_op(")");
      return e;
    }
    if (t.type == Tok::op && t.value == "[") return display(Expr::Kind::list, "[", "]");
    if (t.type == Tok::op && t.value == "{") return display(Expr::Kind::dict, "{", "}");
    fail("unexpected '" + describe(t) + "'");
  }

  ExprPtr number(const Token& t) {
    auto e = make(Expr::Kind::literal, t.line);
    std::string digits;
    for (char c : t.value)
      if (c != '_') digits += c;
    if (t.type == Tok::floating) {
      e->value = std::strtod(digits.c_str(), nullptr);  // the lexer let only a float's characters through
      return e;
    }
    int base = 10;
    size_t at = 0;
    if (digits.size() > 1 && digits[0] == '0' && std::isalpha(static_cast<unsigned char>(digits[1]))) {
      char b = static_cast<char>(digits[1] | 0x20);
      base = b == 'x' ? 16 : b == 'o' ? 8 : 2;
      at = 2;
    }
    // Python's integers have no bound; past int64 a constant is kept as a float.
    uint64_t v = 0;
    double big = 0;
    bool overflow = false;
    for (; at < digits.size(); ++at) {
      char c = static_cast<char>(digits[at] | 0x20);
      unsigned d = c >= 'a' ? static_cast<unsigned>(c - 'a' + 10) : static_cast<unsigned>(c - '0');
      big = big * base + d;
      overflow = overflow || v > (static_cast<uint64_t>(INT64_MAX) - d) / static_cast<uint64_t>(base);
      v = v * static_cast<uint64_t>(base) + d;
    }
    if (overflow) e->value = big;
    else e->value = static_cast<int64_t>(v);
    return e;
  }

  // [a, b, ...] or {k: v, ...}, a trailing comma allowed.
  ExprPtr display(Expr::Kind kind, const char* open, const char* close) {
    const Token at = expect_op(open);
    auto e = make(kind, at.line);
    while (!is_op(close)) {
      if (!e->kids.empty()) expect_op(",");
      if (is_op(close)) break;
      e->kids.push_back(expression(true));
      if (kind == Expr::Kind::dict) {
        expect_op(":");
        e->kids.push_back(expression(true));
      }
    }
    expect_op(close);
    return grown(std::move(e), at);
  }

  ExprPtr postfix(ExprPtr e) {
    for (;;) {
      if (is_op(".") || is_op("[")) e = subscript(std::move(e));
      else if (is_op("(")) e = call(std::move(e));
      else return e;
    }
  }

  ExprPtr filter_expr(ExprPtr e) {
    for (;;) {
      if (is_op("|")) e = filter_chain(std::move(e), false);
      else if (is_name("is")) e = test(std::move(e));
      else if (is_op("(")) e = call(std::move(e));
      else return e;
    }
  }

  ExprPtr subscript(ExprPtr obj) {
    Deeper d(*this);
    const Token t = next();
    if (t.value == ".") {
      const Token a = next();
      if (a.type == Tok::name) {
        auto e = make(Expr::Kind::attr, t.line);
        e->name = a.value;
        e->kids.push_back(std::move(obj));
        return grown(std::move(e), t);
      }
      if (a.type != Tok::integer) fail("expected name or number", a);
      auto e = make(Expr::Kind::item, t.line);
      e->kids.push_back(std::move(obj));
      e->kids.push_back(number(a));
      return grown(std::move(e), t);
    }
    std::vector<ExprPtr> args;
    while (!is_op("]")) {
      if (!args.empty()) expect_op(",");
      args.push_back(subscribed());
    }
    expect_op("]");
    auto e = make(Expr::Kind::item, t.line);
    e->kids.push_back(std::move(obj));
    if (args.size() == 1) {
      e->kids.push_back(std::move(args[0]));
    } else {
      auto tup = make(Expr::Kind::tuple, t.line);
      tup->kids = std::move(args);
      e->kids.push_back(grown(std::move(tup), t));
    }
    return grown(std::move(e), t);
  }

  ExprPtr subscribed() {
    forget();
    const Token at = cur();
    auto s = make(Expr::Kind::slice, at.line);
    s->kids.reserve(3);
    if (skip_op(":")) {
      s->kids.push_back(nullptr);
    } else {
      ExprPtr e = expression(true);
      if (!is_op(":")) return e;
      next();
      s->kids.push_back(std::move(e));
    }
    auto part = [&]() -> ExprPtr { return is_op("]") || is_op(",") ? nullptr : expression(true); };
    if (is_op(":")) s->kids.push_back(nullptr);
    else s->kids.push_back(part());
    if (skip_op(":")) s->kids.push_back(part());
    else s->kids.push_back(nullptr);
    return grown(std::move(s), at);
  }

  Args call_args() {
    const Token open = expect_op("(");
    Args a;
    bool need_comma = false;
    auto ensure = [&](bool ok) {
      if (!ok) fail("invalid syntax for function call expression", open);
    };
    while (!is_op(")")) {
      if (need_comma) {
        expect_op(",");
        if (is_op(")")) break;
      }
      if (is_op("*")) {
        ensure(!a.star && !a.double_star);
        next();
        a.star = expression(true);
      } else if (is_op("**")) {
        ensure(!a.double_star);
        next();
        a.double_star = expression(true);
      } else if (is(Tok::name) && look().type == Tok::op && look().value == "=") {
        ensure(!a.double_star);
        std::string key(next().value);
        next();
        a.keywords.emplace_back(std::move(key), expression(true));
      } else {
        ensure(!a.star && !a.double_star && a.keywords.empty());
        a.positional.push_back(expression(true));
      }
      need_comma = true;
    }
    expect_op(")");
    return a;
  }

  ExprPtr call(ExprPtr callee) {
    Deeper d(*this);
    const Token at = cur();
    auto e = make(Expr::Kind::call, at.line);
    e->args = call_args();
    e->kids.push_back(std::move(callee));
    return grown(std::move(e), at);
  }

  std::string dotted_name() {
    std::string name = expect_identifier();
    while (skip_op(".")) name += "." + expect_identifier();
    return name;
  }

  // `| name(args) | ...`; in a filter block or a set block the first `|` is implied.
  ExprPtr filter_chain(ExprPtr subject, bool start_inline) {
    while (is_op("|") || start_inline) {
      Deeper d(*this);
      const Token at = cur();
      if (!start_inline) next();
      int line = cur().line;
      auto e = make(Expr::Kind::filter, line);
      e->name = dotted_name();
      if (is_op("(")) e->args = call_args();
      e->kids.push_back(std::move(subject));
      subject = grown(std::move(e), at);
      start_inline = false;
    }
    return subject;
  }

  ExprPtr test(ExprPtr subject) {
    Deeper d(*this);
    const Token is_tok = next();
    auto e = make(Expr::Kind::test, is_tok.line);
    e->negated = skip_name("not");
    e->name = dotted_name();
    if (is_op("(")) {
      e->args = call_args();
    } else if ((is(Tok::name) || is(Tok::string) || is(Tok::integer) || is(Tok::floating) || is_op("(") || is_op("[") ||
                is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail("You cannot chain multiple tests with is");
      e->args.positional.push_back(postfix(primary()));
    }
    e->kids.push_back(std::move(subject));
    return grown(std::move(e), is_tok);
  }

  detail::Lexed& lx_;
  const Options& o_;
  size_t i_ = 0;
  unsigned depth_ = 0;
};

}  // namespace

Template parse(std::string_view source, const Options& options) {
  detail::Lexed lexed(source, options);
  return Parser(lexed, options).run();
}

}  // namespace ggufkit::jinja
