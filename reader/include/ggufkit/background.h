#pragma once

#include <locale.h>

#include <future>
#include <system_error>
#include <utility>

#include "ggufkit/error.h"
#include "ggufkit/lock.h"

namespace ggufkit {

// f() on a thread of its own, or, when no thread can be started, on the caller's at get():
// under a tight address-space limit (ulimit -v) a thread's 8 MiB stack is refused, and the
// work is the same either way. The thread works in its caller's locale (uselocale), so
// that a caller who set the C locale for its thread alone (the Python module, in a program
// that called setlocale) gets numbers read and printed the same on either thread. It is
// part of its caller's call: its notes go where the caller's go, and the locks the caller
// holds are its own (it reads the file its caller locked).
template <typename F>
auto in_background(F f) {
  auto g = [f = std::move(f), loc = ::uselocale(nullptr), notes = note_handler(), owner = lock_owner()]() mutable {
    locale_t before = ::uselocale(loc);
    NoteScope scope(std::move(notes));
    LockOwnerScope mine(owner);
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
