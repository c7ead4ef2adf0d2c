#pragma once

#include <future>
#include <system_error>

namespace ggufkit {

// f() on a thread of its own, or, when no thread can be started, on the caller's at get():
// under a tight address-space limit (ulimit -v) a thread's 8 MiB stack is refused, and the
// work is the same either way.
template <typename F>
auto in_background(F f) {
  try {
    return std::async(std::launch::async, f);
  } catch (const std::system_error&) {
    return std::async(std::launch::deferred, f);
  }
}

}  // namespace ggufkit
