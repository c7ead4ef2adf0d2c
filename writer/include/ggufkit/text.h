#pragma once

#include <string>
#include <string_view>

#include "ggufkit/format.h"  // is_valid_utf8
#include "ggufkit/model.h"

namespace ggufkit {

// A double-quoted string literal that is both JSON and YAML: control characters, C1
// controls, U+2028/2029, non-characters and bidirectional controls are \u-escaped. Bytes
// that are not valid UTF-8 become U+FFFD, so callers that must keep them check
// is_valid_utf8 first.
std::string json_string(std::string_view s);
// Text from a file as a terminal may show it, its line breaks and tabs kept: other control
// characters, C1 controls, the bidirectional controls, U+2028/2029 and non-characters
// as \uXXXX, and bytes that are not UTF-8 as \xNN, so that a file cannot act on the
// user's terminal and a NUL shows. A backslash in the text stays as it is.
std::string terminal_text(std::string_view s);
// A name (a key, a tensor, a file) as terminal_text shows it, on one line: its line
// breaks and tabs escaped too, as \n and \t. Escaping it twice changes nothing.
std::string terminal_name(std::string_view s);
// A word for a command line one can paste into a POSIX shell: as it is when it is plain
// (letters, digits, _-./,+@%:=, not starting with '-'), in single quotes otherwise (a quote
// as '\''), and as $'...' with \xHH escapes when it holds a control byte, which a
// terminal would otherwise act on.
std::string shell_quoted(std::string_view s);

// Bytes as lowercase hex digits, two a byte.
std::string hex_text(std::string_view bytes);

// A number as the shortest text that reads back to the same bits ("0.1", "-0", "nan").
std::string number_text(const Value& v);

// A value in one short line: numbers in full, strings quoted and cut to about `max`
// bytes with their length, arrays as their first items and their count.
std::string brief_value(const Value& v, size_t max = 60);

}  // namespace ggufkit
