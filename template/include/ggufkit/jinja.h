#pragma once

// A parser for the Jinja that chat templates are written in, with jinja2's syntax and its
// line numbers, as Hugging Face configures it (trim_blocks, lstrip_blocks, loop controls,
// the `generation` tag). It knows nothing of GGUF: it turns template text into a tree, or
// into a SyntaxError with the line, the column and what was expected.

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ggufkit::jinja {

struct SyntaxError : std::runtime_error {
  SyntaxError(int line, int column, const std::string& what);
  int line, column;     // from 1, as jinja2 counts lines (after its newline normalisation)
  std::string message;  // without the position
};

struct Options {
  bool trim_blocks = true;    // drop the first newline after a block tag
  bool lstrip_blocks = true;  // drop spaces and tabs before a block tag at the start of a line
  size_t max_size = 4u << 20;   // bytes of template text
  // Depth of the tree: blocks, and the expressions in them, down to the deepest leaf (a chain
  // `a + b + c` is as deep as it is long). Every walk of the tree recurses (parse, render,
  // destruction); at 200 levels the deepest, the render, needs under 2 MiB of stack even in
  // a Debug build under ASan (tests: a 4 MiB thread). The deepest real template needs 29.
  unsigned max_depth = 200;
};

struct None {};
using Literal = std::variant<None, bool, int64_t, double, std::string>;

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// Arguments of a call, a filter or a test.
struct Args {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  ExprPtr star, double_star;  // *args, **kwargs
};

struct Expr {
  enum class Kind {
    literal,  // value
    name,     // name
    list,     // kids: items
    tuple,    // kids: items
    dict,     // kids: key, value, key, value, ...
    attr,     // kids[0].name
    item,     // kids[0][kids[1]]
    slice,    // kids: start, stop, step (each may be null); only as an item's index
    call,     // kids[0](args)
    filter,   // kids[0] | name(args); kids[0] null in a filter block
    test,     // kids[0] is [not] name(args)
    unary,    // name ("not", "-", "+") kids[0]
    binary,   // kids[0] name kids[1]; name one of + - * / // % ** ~ and or
    compare,  // kids[0] ops[0] kids[1] ops[1] kids[2] ...; ops == != < <= > >= in notin
    cond,     // kids[0] if kids[1] else kids[2] (may be null)
  };
  Kind kind;
  int line = 0;
  std::string name;
  Literal value;
  std::vector<ExprPtr> kids;
  std::vector<std::string> ops;
  Args args;
  bool negated = false;  // test: `is not`
  unsigned height = 1;   // levels of the tree from here down: 1 for a leaf

  // The kids by their part (jinja2's nodes.py names), for the kinds above; a pointer where
  // the part may be absent.
  const Expr& operand() const { return *kids[0]; }  // attr, item, call, test, unary: what it applies to
  const Expr* filtered() const { return kids.empty() ? nullptr : kids[0].get(); }  // filter: null in a filter block
  const Expr& index() const { return *kids[1]; }    // item
  const Expr& left() const { return *kids[0]; }     // binary
  const Expr& right() const { return *kids[1]; }    // binary
  const Expr& term(size_t i) const { return *kids[i]; }  // compare: term(0) ops[0] term(1) ...
  const Expr& key(size_t i) const { return *kids[2 * i]; }      // dict: the i-th pair's key
  const Expr& val(size_t i) const { return *kids[2 * i + 1]; }  // dict: and its value
  size_t pairs() const { return kids.size() / 2; }              // dict
  const Expr& then() const { return *kids[0]; }  // cond: then() if cond() else else_()
  const Expr& cond() const { return *kids[1]; }
  const Expr* else_() const { return part(2); }
  const Expr* start() const { return part(0); }  // slice
  const Expr* stop() const { return part(1); }
  const Expr* step() const { return part(2); }

 private:
  const Expr* part(size_t i) const { return i < kids.size() ? kids[i].get() : nullptr; }
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    text,          // text: template data, whitespace control applied
    output,        // exprs: the expressions printed ({{ }} or {% print %})
    for_loop,      // exprs: target, iterable, filter (may be null); bodies: body, else; recursive
    if_block,      // exprs: one test per branch; bodies: one per branch, then else
    set,           // exprs: target, value
    set_block,     // exprs: target, filter (may be null); bodies: body
    macro,         // name; params; defaults (for the last params); bodies: body
    call_block,    // exprs: the call; params; defaults; bodies: body
    filter_block,  // exprs: the filter chain; bodies: body
    with_block,    // params/defaults: targets and values as exprs (exprs); bodies: body
    generation,    // bodies: body (Hugging Face's tag; renders its body)
    loop_break,
    loop_continue,
    block,         // name; bodies: body
    extends,       // exprs: template
    include,       // exprs: template
    import,        // exprs: template; name: the alias
    from_import,   // exprs: template; params: names imported (alias after '=')
    autoescape,    // exprs: setting; bodies: body
  };
  Kind kind;
  int line = 0;
  std::string text, name;
  std::vector<ExprPtr> exprs;
  std::vector<Body> bodies;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;
  bool recursive = false;

  // The parts by name (jinja2's nodes.py), for the kinds above; a pointer where the part
  // may be absent.
  const Expr& target() const { return *exprs[0]; }  // for_loop, set, set_block
  const Expr& iter() const { return *exprs[1]; }    // for_loop
  const Expr* test() const { return exprs[2].get(); }  // for_loop: `for x in xs if test`
  const Expr& value() const { return *exprs[1]; }   // set
  const Expr& call() const { return *exprs[0]; }    // call_block
  // set_block's filter (may be null), filter_block's filter chain.
  const Expr* filter() const {
    const size_t i = kind == Kind::set_block ? 1 : 0;
    return i < exprs.size() ? exprs[i].get() : nullptr;
  }
  const Body& body(size_t i = 0) const { return bodies[i]; }  // the body; if_block: the i-th branch's
  const std::vector<ExprPtr>& tests() const { return exprs; }  // if_block: one per branch
  const std::vector<ExprPtr>& targets() const { return exprs; }   // with_block
  const std::vector<ExprPtr>& values() const { return defaults; }  // with_block: one per target
  const Body* else_() const {  // for_loop, if_block (may be absent)
    if (kind == Kind::if_block) return bodies.size() > exprs.size() ? &bodies.back() : nullptr;
    return bodies.size() > 1 ? &bodies[1] : nullptr;
  }
};

struct Template {
  Body body;
};

// Every piece of text the template can print as written, in order: its data and its
// string constants (views into the tree).
std::vector<std::string_view> literals(const Template& t);
// Whether the template refers to the variable `name` anywhere.
bool mentions(const Template& t, std::string_view name);

// Throws SyntaxError for anything jinja2 would refuse when parsing (not when rendering:
// an unknown filter or an undefined name is a render-time matter).
Template parse(std::string_view source, const Options& options = {});

}  // namespace ggufkit::jinja
