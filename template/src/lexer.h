#pragma once

// jinja2's lexer, rule for rule: template data with whitespace control applied, tags, and
// the tokens inside them, each with the line jinja2 gives it.

#include <string>
#include <string_view>
#include <vector>

#include "ggufkit/jinja.h"

namespace ggufkit::jinja::detail {

enum class Tok { data, var_begin, var_end, block_begin, block_end, name, string, integer, floating, op, eof };

struct Token {
  Tok type;
  std::string value;  // data: the text; string: unescaped; name, number, op: as written
  int line = 1;
  size_t pos = 0;     // byte offset in the normalised source
};

struct Lexed {
  std::string source;  // newlines normalised to \n, one trailing newline dropped (as jinja2)
  std::vector<Token> tokens;  // ends with eof
  int column(size_t pos) const;  // from 1, in characters
};

// A code point as UTF-8, and a hex digit's value (-1 for none): Python's escapes and JSON's.
void append_utf8(std::string& out, uint32_t cp);
int hex_value(char c);

// Throws SyntaxError as jinja2's lexer does: an unexpected character, an unbalanced
// bracket, a comment or raw block without its end.
Lexed lex(std::string_view source, const Options& options);

}  // namespace ggufkit::jinja::detail
