#pragma once

// jinja2's lexer, rule for rule: template data with whitespace control applied, tags, and
// the tokens inside them, each with the line jinja2 gives it.

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ggufkit/jinja.h"

namespace ggufkit::jinja::detail {

enum class Tok : uint8_t { data, var_begin, var_end, block_begin, block_end, name, string, integer, floating, op, eof };

// 32 bytes: a template of dense prints has a token for every two bytes or so.
struct Token {
  Tok type;
  int line = 1;
  size_t pos = 0;          // byte offset in the normalised source
  std::string_view value;  // data: the text; string: unescaped; name, number, op: as written (views
                           // into the Lexed: its source, or its unescaped strings)
};

class Lexer;

// The tokens of a template, lexed as the parser asks for them (jinja2's lexer is lazy
// too), so that only the few since the last statement or operand are kept.
struct Lexed {
  // Throws SyntaxError for a template over options.max_size.
  Lexed(std::string_view text, const Options& options);
  ~Lexed();
  Lexed(const Lexed&) = delete;  // the tokens are views into it
  Lexed& operator=(const Lexed&) = delete;

  // The i-th token (from 0, those let go of counted), lexed when first asked for; past
  // the end, eof. Throws SyntaxError as jinja2's lexer does when it gets to the text at
  // fault: an unexpected character, an unbalanced bracket, a comment or raw block without
  // its end.
  const Token& at(size_t i);
  // Lets go of the tokens before the i-th, which the parser is done with.
  void forget_before(size_t i);
  int column(size_t pos) const;  // from 1, in characters

  std::string source;  // newlines normalised to \n, one trailing newline dropped (as jinja2)
  std::deque<std::string> unescaped;  // string literals with escapes, as they read

 private:
  friend class Lexer;
  std::deque<Token> tokens;  // from the first_-th on
  size_t first_ = 0;
  std::unique_ptr<Lexer> lexer_;
};

// A code point as UTF-8, and a hex digit's value (-1 for none): Python's escapes and JSON's.
void append_utf8(std::string& out, uint32_t cp);
int hex_value(char c);

}  // namespace ggufkit::jinja::detail
