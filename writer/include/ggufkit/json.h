#pragma once

#include <string>
#include <string_view>

namespace ggufkit {

// A double-quoted string literal that is both JSON and YAML: control characters, C1
// controls, U+2028/2029 and non-characters are \u-escaped. Bytes that are not valid
// UTF-8 become U+FFFD, so callers that must keep them check is_valid_utf8 first.
std::string json_string(std::string_view s);

bool is_valid_utf8(std::string_view s);

}  // namespace ggufkit
