// The Jinja parser against Python's jinja2 (Debian's python3-jinja2, set up as Hugging Face
// sets it up: tests/template/jinja_oracle.py): every real template parses in both, and
// every broken one is refused by both on the same line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <pthread.h>

#include "ggufkit/text.h"
#include "ggufkit/jinja.h"
#include "ggufkit/jinja_render.h"
#include "ggufkit/model.h"
#include "ggufkit/scan.h"
#include "ggufkit/writer.h"
#include "helpers.h"

using namespace testing_helpers;
namespace fs = std::filesystem;
namespace jj = ggufkit::jinja;

namespace {


// What a parser says of a template: "ok", or "error LINE".
std::string ours(const std::string& text) {
  try {
    jj::parse(text);
    return "ok";
  } catch (const jj::SyntaxError& e) {
    return "error " + std::to_string(e.line);
  }
}

// jinja2's verdict on each file, with its message after the line.
std::vector<std::string> oracle(const std::vector<std::string>& files) {
  std::string args;
  for (const auto& f : files) args += " '" + f + "'";
  CliRun r = run_cli(args, "", "python3 " + std::string(GGUFKIT_SOURCE) + "/tests/template/jinja_oracle.py");
  EXPECT_EQ(r.code, 0) << r.err;
  std::vector<std::string> lines;
  std::istringstream in(r.out);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  EXPECT_EQ(lines.size(), files.size()) << r.err;
  lines.resize(files.size());
  return lines;
}

std::string verdict(const std::string& oracle_line) {  // "error 3 message" -> "error 3"
  size_t sp = oracle_line.find(' ', 6);
  return oracle_line.rfind("error ", 0) == 0 ? oracle_line.substr(0, sp) : oracle_line;
}

// Templates jinja2 refuses, each for its own reason; the text before them moves the
// error's line.
const std::vector<std::string> kBroken = {
    "{% for m in messages %}\n{{ m.content }}\n",                  // an unclosed for
    "text\n{% endfor %}",                                          // a stray endfor
    "{{ x | }}",                                                   // a filter without a name
    "a\n{{ \"abc }}\nb",                                           // an unterminated string
    "{% if x %}\n{% else %}\n{% else %}\n{% endif %}",             // two elses
    "{% if %}{% endif %}",                                         // if without a test
    "line\n{{ }}",                                                 // an empty print
    "{% set %}",                                                   // set without a target
    "{% set x = %}",                                               // set without a value
    "{% for in xs %}{% endfor %}",                                 // for without a target
    "{% for x xs %}{% endfor %}",                                  // for without in
    "{{ x. }}",                                                    // an attribute without a name
    "{{ x[ }}",                                                    // an index never closed
    "{{ (1, 2 }}",                                                 // a tuple never closed
    "\n\n{{ [1, 2 }}",                                             // a list never closed
    "{{ {'a': 1 }}",                                               // a dict never closed
    "{{ x | default( }}",                                          // a filter call never closed
    "{% macro %}{% endmacro %}",                                   // a macro without a name
    "{% macro m(a, %}{% endmacro %}",                              // a signature cut short
    "{% macro m(a=1, b) %}{% endmacro %}",                         // a default before a non-default
    "x\n{% endmacro %}",                                           // a stray endmacro
    "{% if x %}\n{% endfor %}",                                    // the wrong end tag
    "{% raw %}\nabc",                                              // raw never closed
    "a\n{# comment",                                               // a comment never closed
    "{{ x",                                                        // a print never closed
    "{{ x is }}",                                                  // a test without a name
    "{{ 1 + }}",                                                   // an operator without its right side
    "{{ x if y else }}",                                           // else without a value
    "{% filter %}{% endfilter %}",                                 // a filter block without a filter
    "{% call %}{% endcall %}",                                     // a call block without a call
    "{% call x %}{% endcall %}",                                   // a call block not calling
    "{% frobnicate %}",                                            // an unknown tag
    "{{ x ! y }}",                                                 // a character jinja2 does not know
    "{% for x in xs %}{% endif %}{% endfor %}",                    // endif inside for
    "{{ 'a' ~ }}",                                                 // ~ without its right side
    "{% elif x %}",                                                // a stray elif
    "{{ a = 1 }}",                                                 // assignment in a print
    "{% set 'a' = 1 %}",                                           // assignment to a literal
    "{{ f(a=1, 2) }}",                                             // a positional after a keyword
    "{{ x ) }}",                                                   // a closing bracket without an opening
    "{% for x in xs %}\n{% generation %}\n{% endfor %}",           // generation never closed
    "{{ x is defined is defined }}",                               // chained tests
    "{% with a %}{% endwith %}",                                   // with without a value
    "{% block a-b %}{% endblock %}",                               // a block name with a hyphen
};

}  // namespace

TEST(JinjaParser, EveryCorpusTemplateParsesInBothParsers) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(corpus("templates")))
    if (e.path().extension() == ".jinja") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 42u);
  std::vector<std::string> theirs = oracle(files);
  for (size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE(files[i]);
    EXPECT_EQ(theirs[i], "ok");
    std::string text = slurp(files[i]);
    try {
      jj::Template t = jj::parse(text);
      EXPECT_FALSE(t.body.empty());
    } catch (const jj::SyntaxError& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

TEST(JinjaParser, BrokenTemplatesAreRefusedByBothOnTheSameLine) {
  // The hand-made ones, then each corpus template with its last end tag taken out and
  // cut off inside its last tag: whatever jinja2 says of those, so must we.
  std::vector<std::string> texts = kBroken;
  for (const auto& e : fs::directory_iterator(corpus("templates"))) {
    if (e.path().extension() != ".jinja") continue;
    std::string t = slurp(e.path().string());
    for (const char* end : {"endfor", "endif", "endmacro"})
      if (size_t at = t.rfind(end); at != std::string::npos) {
        size_t open = t.rfind("{%", at), close = t.find("%}", at);
        if (open != std::string::npos && close != std::string::npos) texts.push_back(t.substr(0, open) + t.substr(close + 2));
      }
    if (size_t at = t.rfind("{{"); at != std::string::npos) texts.push_back(t.substr(0, at + 4));
  }
  std::vector<std::string> files;
  std::string dir = temp_path("jinja-broken");
  fs::create_directories(dir);
  for (size_t i = 0; i < texts.size(); ++i) {
    files.push_back(dir + "/" + std::to_string(i) + ".jinja");
    std::ofstream(files.back(), std::ios::binary) << texts[i];
  }
  std::vector<std::string> theirs = oracle(files);
  size_t refused = 0, agreed = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    SCOPED_TRACE(texts[i].substr(0, 200));
    std::string mine = ours(texts[i]);
    EXPECT_EQ(mine, verdict(theirs[i])) << "jinja2: " << theirs[i];
    agreed += mine == verdict(theirs[i]);
    if (i < kBroken.size()) {
      EXPECT_NE(theirs[i], "ok") << "case " << i << " is not broken for jinja2";
    }
    refused += theirs[i] != "ok";
  }
  std::printf("[ jinja2 ] %zu templates (%zu hand-made), %zu refused by jinja2, %zu verdicts agree\n", texts.size(),
              kBroken.size(), refused, agreed);
  EXPECT_GE(refused, 30u);
}

TEST(JinjaParser, AnErrorGivesLineColumnAndWhatWasExpected) {
  try {
    jj::parse("hello\n{% for x in %}\n{% endfor %}");
    FAIL() << "parsed";
  } catch (const jj::SyntaxError& e) {
    EXPECT_EQ(e.line, 2);
    EXPECT_EQ(e.column, 13);  // the %} where the iterable should be
    EXPECT_EQ(e.message, "Expected an expression, got 'end of statement block'");
    EXPECT_EQ(std::string(e.what()), "line 2, column 13: Expected an expression, got 'end of statement block'");
  }
  try {
    jj::parse("{% set x = [1, 2 %}");
    FAIL() << "parsed";
  } catch (const jj::SyntaxError& e) {
    EXPECT_EQ(e.line, 1);
    EXPECT_EQ(e.column, 19);  // inside the open '[', '%}' is no end of tag: '%' is an operator, '}' a stray
    EXPECT_EQ(e.message, "unexpected '}', expected ']'");  // jinja2's words
  }
}

TEST(JinjaParser, WhitespaceControlIsAppliedAsHuggingFaceSetsItUp) {
  // lstrip_blocks takes the indent before a block tag, trim_blocks the newline after it;
  // `-` strips all whitespace on its side, `+` keeps the indent.
  jj::Template t = jj::parse("  {% if x %}\nA\n  {% endif %}\nB {{- y -}} \n C\n  {%+ if z %}{% endif %}");
  ASSERT_EQ(t.body.size(), 5u);
  EXPECT_EQ(t.body[0]->kind, jj::Node::Kind::if_block);
  ASSERT_EQ(t.body[0]->bodies[0].size(), 1u);
  EXPECT_EQ(t.body[0]->bodies[0][0]->text, "A\n");
  EXPECT_EQ(t.body[1]->text, "B");
  EXPECT_EQ(t.body[2]->kind, jj::Node::Kind::output);
  EXPECT_EQ(t.body[3]->text, "C\n  ");
  EXPECT_EQ(t.body[4]->kind, jj::Node::Kind::if_block);
  // Newlines are normalised and one trailing newline dropped, as jinja2 does.
  jj::Template r = jj::parse("a\r\nb\r\n");
  ASSERT_EQ(r.body.size(), 1u);
  EXPECT_EQ(r.body[0]->text, "a\nb");
  // Raw text is kept as written.
  jj::Template raw = jj::parse("{% raw %}{{ x }}{% endraw %}");
  ASSERT_EQ(raw.body.size(), 1u);
  EXPECT_EQ(raw.body[0]->text, "{{ x }}");
}

TEST(JinjaParser, ExpressionsKeepJinjaPrecedence) {
  jj::Template t = jj::parse("{{ a + b * c ~ d | upper if not e is defined else f[1:2] }}");
  const jj::Expr& cond = *t.body[0]->exprs[0];
  ASSERT_EQ(cond.kind, jj::Expr::Kind::cond);
  const jj::Expr& concat = *cond.kids[0];
  ASSERT_EQ(concat.kind, jj::Expr::Kind::binary);
  EXPECT_EQ(concat.name, "+");  // + binds looser than ~, and ~ looser than *
  EXPECT_EQ(concat.kids[1]->name, "~");
  EXPECT_EQ(concat.kids[1]->kids[0]->name, "*");
  EXPECT_EQ(concat.kids[1]->kids[1]->kind, jj::Expr::Kind::filter);  // the filter takes d alone
  EXPECT_EQ(cond.kids[1]->kind, jj::Expr::Kind::unary);              // not (e is defined)
  EXPECT_EQ(cond.kids[1]->kids[0]->kind, jj::Expr::Kind::test);
  EXPECT_EQ(cond.kids[2]->kind, jj::Expr::Kind::item);
  EXPECT_EQ(cond.kids[2]->kids[1]->kind, jj::Expr::Kind::slice);
}

TEST(JinjaParser, HostileTemplatesStopAtTheLimitsWithAnError) {
  // Deep nesting of brackets, of operators and of blocks: an error, never a stack overflow.
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if x %}";
  const std::string parens = "{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}";
  for (const std::string& t : {parens, "{{ " + std::string(100000, '-') + "1 }}", "{{ " + std::string(300, '[') + " }}", ifs}) {
    try {
      jj::parse(t);
      ADD_FAILURE() << "parsed " << t.substr(0, 40);
    } catch (const jj::SyntaxError& e) {
      EXPECT_EQ(e.line, 1);
      EXPECT_NE(e.message.find("deeper than 200"), std::string::npos) << e.message;
    }
  }
  // Width is not depth: a long name and a long flat list parse.
  EXPECT_NO_THROW(jj::parse("{{ " + std::string(20000, 'n') + " }}"));
  std::string flat = "{{ [";
  for (int i = 0; i < 10000; ++i) flat += "1, ";
  EXPECT_NO_THROW(jj::parse(flat + "] }}"));
  jj::Options small;
  small.max_size = 1000;
  EXPECT_THROW(jj::parse(std::string(1001, 'x'), small), jj::SyntaxError);
  EXPECT_NO_THROW(jj::parse(std::string(1000, 'x'), small));
}

namespace {
// A chain of one operator (or one suffix), `first` then `each` again and again: a tree as
// deep as the chain is long.
struct Chain {
  const char* name;
  std::string first, each;
  int column;  // where 100,000 terms of it, printed on line 2, pass the depth cap
};
// An operator's k-th node is k + 1 deep, under 2 levels (the block, the print); the
// 198th passes 200 and is refused at its operator. A filter, an attribute or an index
// stands under 4 levels (and the parse of its operand): the 196th is refused.
const std::vector<Chain> kChains = {
    {"+", "1", "+1", 5 + 2 * 197},      {"~", "'a'", "~'a'", 7 + 4 * 197}, {"and", "x", " and x", 6 + 6 * 197},
    {"or", "x", " or x", 6 + 5 * 197},  {"*", "1", "*1", 5 + 2 * 197},     {"|string", "x", "|string", 5 + 7 * 195},
    {".a", "x", ".a", 5 + 2 * 195},     {"[0]", "x", "[0]", 5 + 3 * 195},
};
std::string chain(const Chain& c, size_t terms) {
  std::string s = "{{ " + c.first;
  s.reserve(s.size() + c.each.size() * terms + 3);
  for (size_t i = 1; i < terms; ++i) s += c.each;
  return s + " }}";
}
}  // namespace

// Item 8: the nesting cap counted the parser's recursion, not the tree's depth, so a
// chain of 100,000 terms parsed into a tree 100,000 deep, whose walks and destruction
// overflowed the stack.
TEST(JinjaParser, AChainOfAHundredThousandTermsOfEachKindIsRefusedWithItsLineAndColumn) {
  for (const Chain& c : kChains) {
    SCOPED_TRACE(c.name);
    try {
      jj::parse("a chain\n" + chain(c, 100000));
      ADD_FAILURE() << "parsed";
    } catch (const jj::SyntaxError& e) {
      EXPECT_EQ(std::string(e.what()), "line 2, column " + std::to_string(c.column) + ": the template nests deeper than 200 levels");
    }
  }
}

TEST(JinjaParser, AChainJustUnderTheDepthCapParsesAndRendersAndOneTermMoreIsRefused) {
  // {{ 1+1+...+1 }}: 198 terms make a tree 199 deep (under the print and its block: 201).
  jj::Template t = jj::parse(chain(kChains[0], 198));
  EXPECT_EQ(t.body[0]->exprs[0]->height, 198u);
  EXPECT_EQ(jj::render(t, jj::Value::new_dict()), "198");
  EXPECT_THROW(jj::parse(chain(kChains[0], 199)), jj::SyntaxError);
  // {{ 7|string|string... }}: 195 filters, the most a chain of them may have, and 196.
  const Chain filters{"7|string", "7", "|string", 0};
  EXPECT_EQ(jj::render(jj::parse(chain(filters, 196)), jj::Value::new_dict()), "7");
  EXPECT_THROW(jj::parse(chain(filters, 197)), jj::SyntaxError);
}

namespace {
// Runs `f` on a thread with a 4 MiB stack, as the command's helper threads have.
void on_small_stack(void (*f)()) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, 4u << 20), 0);
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, &attr, [](void* p) -> void* { reinterpret_cast<void (*)()>(p)(); return nullptr; },
                           reinterpret_cast<void*>(f)),
            0);
  pthread_attr_destroy(&attr);
  pthread_join(th, nullptr);
}
}  // namespace

TEST(JinjaParser, TheDeepestTreesAllowedAreParsedWalkedRenderedAndFreedOnAFourMiBStack) {
  static std::string outcomes;
  on_small_stack([] {
    // Each kind of node as deep as the cap lets it, in a loop in a macro: x is at the bottom.
    for (const std::string k : {"+", "~", "and", "|string", ".a", "[0]", "call", "not", "-", "if"}) {
      auto wrap = [&](const std::string& e) {
        return k == "call" ? e + "()" : k == "not" ? "not " + e : k == "-" ? "-" + e
             : k == ".a" || k == "[0]" || k == "|string" ? e + k : e + " " + k + " 1";
      };
      auto text = [](const std::string& e) {
        return "{% macro f(x) %}{% for i in [1] %}{{ " + e + " }}{% endfor %}{% endmacro %}{{ f(1) }}";
      };
      std::string e = "x";
      int levels = 0;
      for (; levels < 1000; ++levels) {  // refused within the cap, long before 1000
        try {
          jj::parse(text(wrap(e)));
        } catch (const jj::SyntaxError&) {
          break;
        }
        e = wrap(e);
      }
      ASSERT_LT(levels, 1000) << k;
      jj::Template t = jj::parse(text(e));
      outcomes += k + " " + std::to_string(levels) + (jj::mentions(t, "x") ? " x" : " no x");
      try {
        outcomes += ": " + jj::render(t, jj::Value::new_dict()).substr(0, 8) + "\n";
      } catch (const jj::RenderError& err) {  // 1.a.a, 1[0]: an error, never a crash
        outcomes += ": " + err.kind + "\n";
      }
    }
  });
  // How many levels each may have in this place, and what jinja2 makes of them (as far as 8 bytes).
  EXPECT_EQ(outcomes,
            "+ 195 x: 196\n~ 195 x: 11111111\nand 195 x: 1\n|string 193 x: 1\n.a 193 x: UndefinedError\n"
            "[0] 193 x: UndefinedError\ncall 193 x: TypeError\nnot 194 x: True\n- 194 x: 1\nif 195 x: 1\n");
}

TEST(JinjaParser, EveryCorpusTemplateParsesUnderAQuarterOfTheDepthCap) {
  jj::Options o;
  o.max_depth = 50;
  unsigned deepest = 0;
  for (const auto& e : fs::directory_iterator(corpus("templates"))) {
    if (e.path().extension() != ".jinja") continue;
    SCOPED_TRACE(e.path().string());
    std::string text = slurp(e.path().string());
    EXPECT_NO_THROW(jj::parse(text, o));
    unsigned cap = 1;  // the least cap it parses under
    for (;; ++cap) {
      jj::Options c;
      c.max_depth = cap;
      try {
        jj::parse(text, c);
        break;
      } catch (const jj::SyntaxError&) {
      }
    }
    deepest = std::max(deepest, cap);
  }
  EXPECT_EQ(deepest, 29u);  // the cap of 200 leaves real templates a margin of 7x
}

// Through the command line: a model carrying a chain of 100,000 `+` is validated, edited,
// rewritten and rendered with the error, where each died of SIGSEGV.
TEST(JinjaParser, AModelCarryingAHundredThousandTermChainIsRefusedByEveryCommandWithTheLineAndColumn) {
  const std::string text = "a chain\n" + chain(kChains[0], 100000);
  const std::string where = "tokenizer.chat_template: line 2, column 399: the template nests deeper than 200 levels";
  ggufkit::Model m;
  m.metadata.push_back({"general.architecture", ggufkit::Value::of_string("llama")});
  m.metadata.push_back({"tokenizer.chat_template", ggufkit::Value::of_string(text)});
  const std::string model = temp_path("deep-chain.gguf"), tmpl = temp_path("deep-chain.jinja"), out = temp_path("deep-out.gguf");
  write_file_bytes(model, ggufkit::to_bytes(m));
  write_file_bytes(tmpl, std::vector<uint8_t>(text.begin(), text.end()));
  CliRun v = run_cli("validate --strict " + model);
  EXPECT_EQ(v.code, 1) << v.err;
  EXPECT_NE(v.out.find("template_syntax"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find(where + " (jinja2 refuses it"), std::string::npos) << v.out;
  CliRun r = run_cli("template " + model + " --render " + std::string(GGUFKIT_SOURCE) +
                     "/tests/template/conversations/02-system-and-user.json");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("the template does not parse: line 2, column 399: the template nests deeper than 200 levels"),
            std::string::npos) << r.err;
  CliRun set = run_cli("edit " + tiny_llama() + " --chat-template-file " + tmpl + " -o " + out);
  EXPECT_EQ(set.code, 1) << set.err;
  EXPECT_NE(set.err.find("[template_syntax] " + where), std::string::npos) << set.err;
  EXPECT_FALSE(fs::exists(out));
  // An edit of another key keeps the template the file had, and a rewrite copies it byte
  // for byte: the file's own warning is not the edit's to refuse.
  const std::string copy = temp_path("deep-copy.gguf");
  CliRun rewrite = run_cli("rewrite " + model + " -o " + copy);
  EXPECT_EQ(rewrite.code, 0) << rewrite.err;
  CliRun other = run_cli("edit " + model + " --set general.name=deep -o " + out);
  ASSERT_EQ(other.code, 0) << other.err;
  EXPECT_EQ(read_file_bytes(copy), read_file_bytes(model));
  EXPECT_EQ(ggufkit::scan_file(out).model.find("tokenizer.chat_template")->str, text);
}

TEST(JinjaParser, AnEditRefusesATemplateThatDoesNotParseUnlessTold) {
  std::string dir = temp_path("jinja-edit");
  fs::create_directories(dir);
  const std::string bad = dir + "/bad.jinja", good = dir + "/good.jinja", out = dir + "/out.gguf";
  std::ofstream(bad, std::ios::binary) << "{% for m in messages %}\n{{ m.content }\n{% endfor %}";
  std::ofstream(good, std::ios::binary) << "{% for m in messages %}{{ m.content }}{% endfor %}";
  CliRun r = run_cli("edit " + tiny_llama() + " --chat-template-file " + bad + " -o " + out);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("refusing to write a chat template that does not parse as Jinja:\n  [template_syntax] "
                       "tokenizer.chat_template: line 2, column 14: unexpected '}'"),
            std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  // A named template is checked too, whichever way it is set.
  CliRun named = run_cli("edit " + tiny_llama() + " --set 'tokenizer.chat_template.tool_use={% if x %}' -o " + out);
  EXPECT_EQ(named.code, 1);
  EXPECT_NE(named.err.find("[template_syntax] tokenizer.chat_template.tool_use: line 1, column 11: Unexpected end of template."),
            std::string::npos) << named.err;
  EXPECT_FALSE(fs::exists(out));
  // --no-template-check writes it, with a note; a template that parses goes through.
  CliRun forced = run_cli("edit " + tiny_llama() + " --chat-template-file " + bad + " --no-template-check -o " + out);
  EXPECT_EQ(forced.code, 0) << forced.err;
  EXPECT_NE(forced.err.find("written anyway (--no-template-check): tokenizer.chat_template: line 2"), std::string::npos);
  CliRun get = run_cli("meta " + out + " --json");
  EXPECT_NE(get.out.find("{{ m.content }\\n"), std::string::npos);
  fs::remove(out);
  CliRun ok = run_cli("edit " + tiny_llama() + " --chat-template-file " + good + " -o " + out);
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(ok.err, "");
}

namespace {
// The codes of validate's findings for a file.
std::vector<std::string> template_codes(const std::string& file) {
  CliRun r = run_cli("validate --json " + file);
  std::vector<std::string> out;
  for (size_t at = r.out.find("\"code\": \""); at != std::string::npos; at = r.out.find("\"code\": \"", at + 1))
    out.push_back(r.out.substr(at + 9, r.out.find('"', at + 9) - at - 9));
  return out;
}

bool has(const std::vector<std::string>& codes, const std::string& code) {
  return std::find(codes.begin(), codes.end(), code) != codes.end();
}

// validate --json's finding of `code` (its line), or "".
std::string finding_line(const std::string& file, const std::string& code) {
  CliRun r = run_cli("validate --json " + file);
  size_t at = r.out.find("\"code\": \"" + code + "\"");
  if (at == std::string::npos) return "";
  size_t start = r.out.rfind('\n', at) + 1;
  return r.out.substr(start, r.out.find('\n', at) - start);
}

std::string edited_copy(const std::string& source, const std::string& name, const std::string& args) {
  std::string out = temp_path("tw-" + name + ".gguf");
  CliRun r = run_cli("edit " + source + " " + args + " -o " + out + " --force");
  EXPECT_EQ(r.code, 0) << r.err;
  return out;
}

std::string with_template(const std::string& source, const std::string& name, const std::string& text) {
  std::string t = temp_path("tw-" + name + ".jinja");
  std::ofstream(t, std::ios::binary) << text;
  return edited_copy(source, name, "--chat-template-file " + t);
}
}  // namespace

// Issue 29, turn ends at the token level: phi-3's vocabulary as published has eos
// <|endoftext|> while its template ends turns with <|end|> (no key names it; llama.cpp takes
// it as end of turn by its text and stops there): no finding. Turns that end in
// <|placeholder1|>, a control token llama.cpp does not stop at, are found, with the id.
TEST(TemplateTokens, ATurnEndIsJudgedByWhatLlamaCppStopsAt) {
  const std::string phi3 = corpus("vocab/ggml-vocab-phi-3.gguf");
  const auto original = template_codes(phi3);
  EXPECT_FALSE(has(original, "turn_end_not_eog"));
  std::string own = run_cli("template " + phi3).out;
  ASSERT_NE(own.find("<|end|>"), std::string::npos);
  for (size_t at; (at = own.find("<|end|>")) != std::string::npos;) own.replace(at, 7, "<|placeholder1|>");
  const std::string ph = with_template(phi3, "placeholder", own);
  const std::string line = finding_line(ph, "turn_end_not_eog");
  // several turns: "<s>" stripped; <|user|>\nWhat is the capital of France?<|placeholder1|>\n<|assistant|>\n then the words
  EXPECT_NE(line.find("\"message\": \"an assistant turn ends in \\\"<|placeholder1|>\\\" (id 32002) in the prompt of \\\"several turns\\\" at byte 104, "
                      "but llama.cpp stops generating only at \\\"</s>\\\" (2), \\\"<|endoftext|>\\\" (32000), \\\"<|end|>\\\" (32007)"),
            std::string::npos) << line;
  EXPECT_NE(line.find("\"ids\": [32002]"), std::string::npos) << line;
  EXPECT_NE(line.find("\"fix\": \"ggufkit edit " + ph + " --special-token 'eot=<|placeholder1|>' --in-place\"}"), std::string::npos) << line;
  // A turn end typed user_defined is as special to llama.cpp (it splits it out of the text
  // just the same): still the turn's end, still not where generation stops.
  const std::string ud = edited_copy(ph, "placeholder-ud", "--token-type '<|placeholder1|>=user_defined'");
  EXPECT_NE(finding_line(ud, "turn_end_not_eog").find("\"ids\": [32002]"), std::string::npos) << finding_line(ud, "turn_end_not_eog");
  // The fix as told: with eot set to it, llama.cpp stops there and the finding is gone.
  EXPECT_FALSE(has(template_codes(edited_copy(ph, "placeholder-eot", "--special-token 'eot=<|placeholder1|>'")), "turn_end_not_eog"));
}

// Issue 29, double BOS after llama.cpp's own stripping: the tiny llama adds BOS; a template
// printing bos_token once is stripped of it (one BOS: only a note that a runtime which does
// not strip gets two), one printing it twice feeds two.
TEST(TemplateTokens, DoubleBosIsWhatTheChatPathFeedsAfterItsStripping) {
  const std::string tiny = tiny_llama();
  const std::string once = with_template(tiny, "bos-once", "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}");
  const std::string twice = with_template(tiny, "bos-twice", "{{ bos_token }}{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}");
  const std::string none = with_template(tiny, "bos-none", "{% for m in messages %}{{ m.content }}{% endfor %}");
  EXPECT_FALSE(has(template_codes(once), "double_bos"));
  EXPECT_TRUE(has(template_codes(once), "double_bos_unstripped"));
  EXPECT_NE(finding_line(once, "double_bos_unstripped").find("\"severity\": \"info\""), std::string::npos);
  const std::string line = finding_line(twice, "double_bos");
  EXPECT_NE(line.find("\"severity\": \"warning\""), std::string::npos) << line;
  EXPECT_NE(line.find("start with two BOS (\\\"<s>\\\", id 1)"), std::string::npos) << line;
  EXPECT_NE(line.find("\"ids\": [1, 1]"), std::string::npos) << line;
  EXPECT_FALSE(has(template_codes(none), "double_bos"));
  EXPECT_FALSE(has(template_codes(none), "double_bos_unstripped"));
  // The ids themselves: once gives one BOS, twice two.
  const std::string conv = std::string(GGUFKIT_SOURCE) + "/tests/template/conversations/01-one-user-turn.json";
  EXPECT_EQ(run_cli("template " + once + " --render " + conv + " --tokens --ids").out.substr(0, 2), "1 ");
  EXPECT_EQ(run_cli("template " + twice + " --render " + conv + " --tokens --ids").out.substr(0, 4), "1 1 ");
  // Without add_bos_token the template's BOS is the only one: nothing to say.
  const std::string no_add = edited_copy(once, "bos-once-noadd", "--set tokenizer.ggml.add_bos_token=false");
  EXPECT_FALSE(has(template_codes(no_add), "double_bos"));
  EXPECT_FALSE(has(template_codes(no_add), "double_bos_unstripped"));
}

// Issue 29: a special-looking literal the rendered prompts contain that tokenizes into
// several tokens (here no token of phi-3's vocabulary), with its ids and where it shows;
// a literal that is one token is not, nor [INST] where no token has that form.
TEST(TemplateTokens, ASplitLiteralIsFoundWithItsIdsAndWhereItShows) {
  const std::string phi3 = corpus("vocab/ggml-vocab-phi-3.gguf");
  EXPECT_FALSE(has(template_codes(phi3), "template_literal_split"));
  const std::string chatml = with_template(phi3, "chatml", "{% for m in messages %}<|im_start|>{{ m.content }}<|end|>{% endfor %}");
  const std::string line = finding_line(chatml, "template_literal_split");
  EXPECT_NE(line.find("\\\"<|im_start|>\\\" tokenizes into 7 tokens (529 29989 326 29918 2962 29989 29958) in the prompt of \\\"system and user\\\" at byte 0: "
                      "it is no token of the vocabulary"), std::string::npos) << line;
  EXPECT_NE(line.find("\"ids\": [529, 29989, 326, 29918, 2962, 29989, 29958]"), std::string::npos) << line;
  CliRun v = run_cli("validate " + chatml);
  EXPECT_EQ(v.out.find("\"<|end|>\" tokenizes"), std::string::npos) << v.out;  // one token, control
  // [INST] is text by design where the vocabulary has no control token of that form (Llama 2's,
  // phi-3's): no finding (issue 41; bert's [CLS] vocabulary is test_advice's case).
  EXPECT_FALSE(has(template_codes(with_template(phi3, "inst", "[INST] {{ messages[0].content }} [/INST]")), "template_literal_split"));
  EXPECT_FALSE(has(template_codes(with_template(phi3, "plain", "<|user|>{{ messages[0].content }}<|end|>[note]")), "template_literal_split"));
}

// Issue 29: a token the template writes typed normal, where llama.cpp overrides the type by
// the token's text at load (phi-3's <|end|>, an end of turn by its text): it is one token to
// llama.cpp, so nothing splits, and the finding says it is other runtimes that split it.
TEST(TemplateTokens, ANormalTokenLlamaCppOverridesToControlIsSaidToBeOverridden) {
  const std::string phi3 = corpus("vocab/ggml-vocab-phi-3.gguf");
  const std::string f = edited_copy(phi3, "end-normal", "--token-type '<|end|>=normal'");
  const std::string line = finding_line(f, "special_not_control");
  EXPECT_NE(line.find("\\\"<|end|>\\\" (id 32007) is typed normal; llama.cpp overrides it to control by its text at load"), std::string::npos) << line;
  EXPECT_NE(line.find("\"ids\": [32007]"), std::string::npos) << line;
  EXPECT_FALSE(has(template_codes(f), "template_literal_split"));
  EXPECT_FALSE(has(template_codes(f), "turn_end_not_eog"));
  EXPECT_EQ(run_cli("tokenize " + f + " '<|end|>' --no-add-special --ids").out, "32007\n");
}

// A BOS text the template prints first is stripped by llama.cpp's chat path before it
// tokenizes: <s> typed normal there splits nothing, and is no finding. A vocabulary without
// tokenizer.ggml.token_type is untyped (normal to llama.cpp): said so, and no retype is
// offered (there is no array to change).
TEST(TemplateTokens, WhatTheChatPathStripsIsNotJudgedAndAnUntypedVocabularyIsSaidToBe) {
  const std::string phi3 = corpus("vocab/ggml-vocab-phi-3.gguf");
  const std::string bos_normal = edited_copy(phi3, "bos-normal", "--token-type '<s>=normal'");
  CliRun v = run_cli("validate " + bos_normal);
  EXPECT_EQ(v.out.find("\"<s>\""), v.out.find("\"<s>\" first")) << v.out;  // only in the double_bos_unstripped note
  EXPECT_FALSE(has(template_codes(bos_normal), "template_literal_split"));
  EXPECT_FALSE(has(template_codes(bos_normal), "special_not_control"));
  const std::string untyped = edited_copy(phi3, "untyped", "--remove tokenizer.ggml.token_type");
  const std::string line = finding_line(untyped, "special_not_control");
  EXPECT_NE(line.find("is untyped (no tokenizer.ggml.token_type: normal to llama.cpp)"), std::string::npos) << line;
  EXPECT_EQ(line.find("\"fix\""), std::string::npos) << line;
}

// A fix is a command one can paste: plain words as they are, the rest quoted, and control
// bytes (a hostile token's text) as $'\xHH', never raw on the terminal.
TEST(TemplateTokens, AFixIsQuotedForAShell) {
  EXPECT_EQ(ggufkit::shell_quoted("model.gguf"), "model.gguf");
  EXPECT_EQ(ggufkit::shell_quoted("<|user|>=control"), "'<|user|>=control'");
  EXPECT_EQ(ggufkit::shell_quoted("my model.gguf"), "'my model.gguf'");
  EXPECT_EQ(ggufkit::shell_quoted("it's"), "'it'\\''s'");
  EXPECT_EQ(ggufkit::shell_quoted("$(rm -rf x)"), "'$(rm -rf x)'");
  EXPECT_EQ(ggufkit::shell_quoted("-x"), "'-x'");
  EXPECT_EQ(ggufkit::shell_quoted(""), "''");
  EXPECT_EQ(ggufkit::shell_quoted("<\x1b]0;T\x07>=control"), "$'<\\x1b]0;T\\x07>=control'");
  EXPECT_EQ(ggufkit::shell_quoted("a'\n"), "$'a\\'\\x0a'");
}

// The template rules that need no vocabulary, and what an edit says of the ones it brings in.
TEST(TemplateWarnings, EachIsRaisedWhereItAppliesAndNotWhereItDoesNot) {
  const std::string phi3 = corpus("vocab/ggml-vocab-phi-3.gguf");
  const auto original = template_codes(phi3);
  // named templates without a default.
  EXPECT_FALSE(has(original, "template_no_default"));
  EXPECT_TRUE(has(template_codes(edited_copy(phi3, "named", "--rename tokenizer.chat_template=tokenizer.chat_template.main")),
                  "template_no_default"));
  // validate on a template that does not parse (written with --no-template-check).
  EXPECT_FALSE(has(original, "template_syntax"));
  std::string broken = temp_path("tw-broken.jinja");
  std::ofstream(broken) << "{% if x %}";
  EXPECT_TRUE(has(template_codes(edited_copy(phi3, "broken", "--chat-template-file " + broken + " --no-template-check")), "template_syntax"));
  // An edit says which findings it brings in, and not the ones the file already had.
  with_template(phi3, "chatml", "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m.content }}<|end|>{% endfor %}");
  CliRun bring = run_cli("edit " + phi3 + " --chat-template-file " + temp_path("tw-chatml.jinja") + " --dry-run");
  EXPECT_NE(bring.err.find("warning [template_literal_split] \"<|im_start|>\" tokenizes into 7 tokens"), std::string::npos) << bring.err;
  EXPECT_EQ(bring.err.find("double_bos_unstripped"), std::string::npos) << bring.err;  // the original had it
  CliRun quiet = run_cli("edit " + phi3 + " --set general.name=x --dry-run");
  EXPECT_EQ(quiet.err, "");
}
