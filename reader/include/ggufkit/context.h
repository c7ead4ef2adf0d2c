#pragma once

// What one call of the library carries from its request down to the code that locks,
// reads, writes, renders and tells (as SQLite keeps its state per connection, never
// global): where its notes go, its cancel flag and progress, how long a lock waits, the
// template renderer's limits and clock, and which locks are the call's own. The library
// keeps none of it process-wide and reads no environment variable: the command line reads
// GGUFKIT_LOCK_TIMEOUT, GGUFKIT_RENDER_TIME_LIMIT and SOURCE_DATE_EPOCH once, into this.
//
// Copies share the call's locks (a thread the call starts, a file it reads, take a copy);
// two calls at once each build their own Context, so that they exclude each other as two
// processes do.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace ggufkit {

// Where notes go (an owner a replaced file could not keep, a file system without locks):
// FILE and the note. The library never prints.
using NoteSink = std::function<void(const std::string& file, const std::string& message)>;
// Progress of a long write: bytes written of the total.
using Progress = std::function<void(uint64_t written, uint64_t total)>;

// The files a call holds a lock on, by device and inode. The lock is the kernel's; this
// says it is the call's, so that the call reading a file it locked does not wait on itself.
class HeldLocks {
 public:
  bool has(dev_t dev, ino_t ino) const {
    std::lock_guard<std::mutex> g(m_);
    return held_.count({dev, ino}) > 0;
  }
  void add(dev_t dev, ino_t ino) {
    std::lock_guard<std::mutex> g(m_);
    held_.insert({dev, ino});
  }
  void remove(dev_t dev, ino_t ino) {
    std::lock_guard<std::mutex> g(m_);
    if (auto it = held_.find({dev, ino}); it != held_.end()) held_.erase(it);
  }

 private:
  mutable std::mutex m_;
  std::multiset<std::pair<dev_t, ino_t>> held_;
};

// Whose loader judges a model: mainline llama.cpp's, or ik_llama.cpp's (which loads its own
// tensor types too).
enum class Dialect { llama_cpp, ik_llama };

struct Context {
  NoteSink notes;                             // none: notes are dropped (a front door may keep them)
  const std::atomic<bool>* cancel = nullptr;  // set (by a signal handler): stop, change nothing
  // A front door's own look for a stop asked meanwhile, made by cancelled() before a job's
  // last steps (Python: a Ctrl-C its handler has only noted, seen nowhere else once the last
  // progress is told). True: stop.
  std::function<bool()> poll;
  Progress progress;
  std::chrono::milliseconds lock_timeout{10000};       // how long a lock waits for another holder
  std::chrono::milliseconds render_time_limit{500};    // a chat template's render, in the sandbox
  // strftime_now's clock: SOURCE_DATE_EPOCH's text (whole seconds, read as UTC), checked
  // when a template asks the time; none: the machine's clock.
  std::optional<std::string> source_date_epoch;
  std::shared_ptr<HeldLocks> held = std::make_shared<HeldLocks>();
  Dialect dialect = Dialect::llama_cpp;

  void note(const std::string& file, const std::string& message) const {
    if (notes) notes(file, message);
  }
  bool cancelled() const { return (poll && poll()) || (cancel && cancel->load()); }
};

}  // namespace ggufkit
