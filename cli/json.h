#pragma once

#include <string>
#include <string_view>

namespace ggufkit::cli {

// A JSON string literal, quotes included. Bytes that are not valid UTF-8 become U+FFFD,
// so the output always parses.
std::string json_string(std::string_view s);

}  // namespace ggufkit::cli
