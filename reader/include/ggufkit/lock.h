#pragma once

// Locks between processes on one model file, as SQLite locks its database: whatever
// writes into a file or replaces it (an in-place edit, recover, the rename of a rewrite)
// holds an exclusive lock on it, and a reader holds a shared one while it reads the
// header. They are flock() locks, so a file opened read-only can be locked too, and the
// kernel drops them when a process dies. Threads exclude each other as processes do (flock
// locks belong to open files, not processes). A lock the calling thread's call already
// holds on a file (the edit that then reads the model it is about to write, a set that
// names one file twice) is not taken again: its two open files would wait on each other.
// A call is its Context (context.h): the threads and files it hands a copy to are the call's.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ggufkit/context.h"

namespace ggufkit {

class FileLock {
 public:
  enum class Mode { shared, exclusive };
  FileLock() = default;
  // Locks the file open as `fd` (named `name` in messages), waiting up to the context's
  // lock_timeout for another process or call to let go; then an io Error naming the lock
  // and, where /proc/locks tells, the process that holds it. Takes nothing when the call
  // holds a lock on the file already. The descriptor stays the caller's.
  FileLock(int fd, const std::string& name, Mode mode, const Context& ctx);
  ~FileLock();
  FileLock(FileLock&& o) noexcept;
  FileLock& operator=(FileLock&& o) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  bool held() const { return fd_ >= 0; }  // false when the call held it already

 private:
  void release();
  int fd_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  std::shared_ptr<HeldLocks> held_;
};

// The file `path` names (its links followed), opened read-only and locked, with the check
// that the path still names the locked file once the lock is held (a file renamed over it
// while this process waited is locked again): an edit holds this before it reads the file.
class PathLock {
 public:
  PathLock(const std::string& path, FileLock::Mode mode, const Context& ctx);
  ~PathLock();
  PathLock(const PathLock&) = delete;
  PathLock& operator=(const PathLock&) = delete;
  int fd() const { return fd_; }
  dev_t device() const { return dev_; }
  ino_t inode() const { return ino_; }

 private:
  int fd_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  FileLock lock_;
};

// Exclusive locks on several files at once, taken in the order of their device and inode
// so that two processes locking the same files never wait on each other.
std::vector<std::unique_ptr<PathLock>> lock_all(const std::vector<std::string>& paths, const Context& ctx);

}  // namespace ggufkit
