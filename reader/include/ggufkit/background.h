#pragma once

#include <locale.h>

#include <future>
#include <system_error>
#include <utility>


namespace ggufkit {

// f() on a thread of its own, or, when no thread can be started, on the caller's at get():
// under a tight address-space limit (ulimit -v) a thread's 8 MiB stack is refused, and the
// work is the same either way. The thread works in its caller's locale (uselocale), so
// that a caller who set the C locale for its thread alone (the Python module, in a program
// that called setlocale) gets numbers read and printed the same on either thread. It is
// part of its caller's call through the Context f uses (its notes and locks).
template <typename F>
auto in_background(F f) {
  auto g = [f = std::move(f), loc = ::uselocale(nullptr)]() mutable {
    locale_t before = ::uselocale(loc);
    struct Restore {
      locale_t l;
      ~Restore() { ::uselocale(l); }
    } restore{before};  // run at get() on the caller's own thread, it leaves it as it was
    return f();
  };
  try {
    return std::async(std::launch::async, g);
  } catch (const std::system_error&) {
    return std::async(std::launch::deferred, std::move(g));
  }
}

}  // namespace ggufkit
