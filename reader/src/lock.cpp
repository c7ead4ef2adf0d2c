#include "ggufkit/lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>

#include "ggufkit/error.h"
#include "ggufkit/fault.h"
#include "ggufkit/path.h"

namespace ggufkit {

namespace {

// "process 1234 (ggufkit)" for the holder of a flock on the file, from /proc/locks, "another
// thread of this process" for another call of this one, or "".
std::string holder(dev_t dev, ino_t ino) {
  std::ifstream in("/proc/locks");
  std::string line;
  while (std::getline(in, line)) {
    // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
    std::istringstream w(line);
    std::string n, kind, adv, rw, id;
    long pid = 0;
    if (!(w >> n >> kind) || kind != "FLOCK") continue;
    if (!(w >> adv >> rw >> pid >> id)) continue;
    unsigned maj = 0, min = 0;
    unsigned long long inode = 0;
    if (std::sscanf(id.c_str(), "%x:%x:%llu", &maj, &min, &inode) != 3) continue;
    if (inode != static_cast<unsigned long long>(ino) || makedev(maj, min) != dev) continue;
    if (pid == ::getpid()) return "another thread of this process";
    std::string comm;
    std::ifstream c("/proc/" + std::to_string(pid) + "/comm");
    std::getline(c, comm);
    return "process " + std::to_string(pid) + (comm.empty() ? "" : " (" + comm + ")");
  }
  return "";
}

}  // namespace

FileLock::FileLock(int fd, const std::string& name, Mode mode, const Context& ctx) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_io(name, "cannot stat to lock it");
  if (ctx.held->has(st.st_dev, st.st_ino)) return;
  const int op = (mode == Mode::exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;
  const auto deadline = std::chrono::steady_clock::now() + ctx.lock_timeout;
  // A bounded wait: flock has no timeout of its own, so it is tried again, less often the
  // longer it waits (1 ms up to 50 ms between tries).
  for (auto pause = std::chrono::milliseconds(1);; pause = std::min(pause * 2, std::chrono::milliseconds(50))) {
    if (const int injected = fault_point("flock")) {
      errno = injected;
    } else if (::flock(fd, op) == 0) {
      break;
    }
    if (errno == EINTR) continue;
    if (errno == ENOLCK || errno == EOPNOTSUPP || errno == ENOSYS || errno == EBADF) {
      // A file system without flock (NFS without a lock daemon, some FUSE): on without it,
      // told to every call that does (one note a file), not only to a process's first.
      ctx.note(name, std::string("its file system has no locks (") + std::strerror(errno) +
                     "): ggufkit goes on without them; keep other programs from writing it meanwhile");
      return;
    }
    if (errno != EWOULDBLOCK) throw_io(name, "cannot lock");
    if (std::chrono::steady_clock::now() >= deadline) {
      const std::string who = holder(st.st_dev, st.st_ino);
      // No holder listed: it let go after the last try (a thread's lock too ends so), or it
      // is not to be told apart; one more try, then a word that covers both.
      if (who.empty() && ::flock(fd, op) == 0) break;
      errno = 0;
      throw_io(name, std::string("is locked by ") + (who.empty() ? "another process or thread" : who) + " " +
                         (mode == Mode::exclusive ? "reading or writing it" : "writing it") + "; waited " +
                         std::to_string(ctx.lock_timeout.count()) + " ms (GGUFKIT_LOCK_TIMEOUT), nothing was done");
    }
    std::this_thread::sleep_for(pause);
  }
  fd_ = fd;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  held_ = ctx.held;
  held_->add(dev_, ino_);
}

void FileLock::release() {
  if (fd_ < 0) return;
  held_->remove(dev_, ino_);
  ::flock(fd_, LOCK_UN);
  fd_ = -1;
}

FileLock::~FileLock() { release(); }

FileLock::FileLock(FileLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)), dev_(o.dev_), ino_(o.ino_), held_(std::move(o.held_)) {}

FileLock& FileLock::operator=(FileLock&& o) noexcept {
  if (this != &o) {
    release();
    fd_ = std::exchange(o.fd_, -1);
    dev_ = o.dev_;
    ino_ = o.ino_;
    held_ = std::move(o.held_);
  }
  return *this;
}

PathLock::PathLock(const std::string& path, FileLock::Mode mode, const Context& ctx) {
  for (int tries = 0;; ++tries) {
    // Looked at before it is opened (O_PATH opens nothing): a link to a device, whose mere
    // opening can act (a tape, a watchdog), is refused unopened. Then the inode looked at is
    // opened, writable where it can be (an exclusive flock over NFS needs a file open for
    // writing), through /proc; without /proc, by its path again.
    struct stat st {}, now {};
    const int at = open_path(path, O_PATH | O_CLOEXEC);
    if (at < 0) throw_io(path, "cannot open to lock it");
    const bool regular = ::fstat(at, &st) == 0 && S_ISREG(st.st_mode);
    const std::string self = "/proc/self/fd/" + std::to_string(at);
    if (regular) {
      fd_ = mode == FileLock::Mode::exclusive ? ::open(self.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC) : -1;
      if (fd_ < 0) fd_ = ::open(self.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd_ < 0 && errno == ENOENT) fd_ = open_path(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    }
    ::close(at);
    if (!regular) throw Error(Error::Kind::usage, path, std::nullopt, "", "is not a regular file");
    if (fd_ < 0) throw_io(path, "cannot open to lock it");
    if (struct stat opened {}; ::fstat(fd_, &opened) != 0 || opened.st_dev != st.st_dev || opened.st_ino != st.st_ino) {
      ::close(fd_);
      fd_ = -1;
      if (tries == 100) {  // (only without /proc: the path names another file now)
        errno = 0;
        throw_io(path, "was replaced again and again while it was being locked");
      }
      continue;
    }
    try {
      lock_ = FileLock(fd_, path, mode, ctx);
    } catch (...) {
      ::close(fd_);
      fd_ = -1;
      throw;
    }
    // Locked: the file must still be the one the path names (not one renamed away meanwhile).
    if (stat_path(path, now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino) {
      dev_ = st.st_dev;
      ino_ = st.st_ino;
      return;
    }
    lock_ = FileLock();
    ::close(fd_);
    fd_ = -1;
    if (tries == 100) {
      errno = 0;
      throw_io(path, "was replaced again and again while it was being locked");
    }
  }
}

PathLock::~PathLock() {
  lock_ = FileLock();
  if (fd_ >= 0) ::close(fd_);
}

std::vector<std::unique_ptr<PathLock>> lock_all(const std::vector<std::string>& paths, const Context& ctx) {
  std::vector<std::pair<std::pair<dev_t, ino_t>, std::string>> order;
  for (const std::string& p : paths) {
    struct stat st {};
    if (stat_path(p, st) != 0) throw_io(p, "cannot stat to lock it");
    order.push_back({{st.st_dev, st.st_ino}, p});
  }
  std::sort(order.begin(), order.end());
  std::vector<std::unique_ptr<PathLock>> out;
  for (const auto& o : order) out.push_back(std::make_unique<PathLock>(o.second, FileLock::Mode::exclusive, ctx));
  return out;
}

}  // namespace ggufkit
