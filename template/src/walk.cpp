// Walks over a parsed template for what checks need: its literal text, the names it uses.
#include <functional>

#include "ggufkit/jinja.h"

namespace ggufkit::jinja {

namespace {

struct Walk {
  std::function<void(const Expr&)> on_expr;
  std::function<void(const Node&)> on_node;

  void expr(const Expr* e) {
    if (!e) return;
    on_expr(*e);
    for (const ExprPtr& k : e->kids) expr(k.get());
    for (const ExprPtr& a : e->args.positional) expr(a.get());
    for (const auto& [name, a] : e->args.keywords) expr(a.get());
    expr(e->args.star.get());
    expr(e->args.double_star.get());
  }
  void body(const Body& b) {
    for (const NodePtr& n : b) {
      on_node(*n);
      for (const ExprPtr& e : n->exprs) expr(e.get());
      for (const ExprPtr& e : n->defaults) expr(e.get());
      for (const Body& inner : n->bodies) body(inner);
    }
  }
};

}  // namespace

std::vector<std::string_view> literals(const Template& t) {
  std::vector<std::string_view> out;
  Walk w{[&](const Expr& e) {
           if (const std::string* s = std::get_if<std::string>(&e.value); s && e.kind == Expr::Kind::literal) out.push_back(*s);
         },
         [&](const Node& n) {
           if (n.kind == Node::Kind::text) out.push_back(n.text);
         }};
  w.body(t.body);
  return out;
}

bool mentions(const Template& t, std::string_view name) {
  bool found = false;
  Walk w{[&](const Expr& e) { found = found || (e.kind == Expr::Kind::name && e.name == name); }, [](const Node&) {}};
  w.body(t.body);
  return found;
}

}  // namespace ggufkit::jinja
