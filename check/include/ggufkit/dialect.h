#pragma once
// The dialect a caller names (the command line's --dialect, Python's dialect=): one parser.
#include <string>

#include "ggufkit/context.h"

namespace ggufkit {

// "llama.cpp" (or "llama_cpp", the default), "ik_llama" (or "ik_llama.cpp"); anything else
// throws a usage Error naming the choices.
Dialect dialect_named(const std::string& name);

}  // namespace ggufkit
