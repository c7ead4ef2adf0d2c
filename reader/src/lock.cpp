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

// The files this process holds a lock on, by device, inode and the call (lock_owner) that
// holds it. (The lock itself is the kernel's; this says which call's it is.)
using Held = std::tuple<dev_t, ino_t, uint64_t>;
std::mutex g_mutex;
std::multiset<Held> g_held;

bool held_by(dev_t dev, ino_t ino, uint64_t owner) {
  std::lock_guard<std::mutex> g(g_mutex);
  return g_held.count({dev, ino, owner}) > 0;
}

bool held_by_another(dev_t dev, ino_t ino, uint64_t owner) {
  std::lock_guard<std::mutex> g(g_mutex);
  for (auto it = g_held.lower_bound({dev, ino, 0}); it != g_held.end() && std::get<0>(*it) == dev && std::get<1>(*it) == ino; ++it)
    if (std::get<2>(*it) != owner) return true;
  return false;
}

thread_local uint64_t t_owner = 0;
std::atomic<uint64_t> g_next_owner{1};

// "process 1234 (ggufkit)" for the holder of a flock on the file, from /proc/locks, or "".
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
    if (inode != static_cast<unsigned long long>(ino) || makedev(maj, min) != dev || pid == ::getpid()) continue;
    std::string comm;
    std::ifstream c("/proc/" + std::to_string(pid) + "/comm");
    std::getline(c, comm);
    return "process " + std::to_string(pid) + (comm.empty() ? "" : " (" + comm + ")");
  }
  return "";
}

}  // namespace

uint64_t lock_owner() {
  if (t_owner == 0) t_owner = g_next_owner++;
  return t_owner;
}

LockOwnerScope::LockOwnerScope(uint64_t owner) : before_(std::exchange(t_owner, owner)) {}
LockOwnerScope::~LockOwnerScope() { t_owner = before_; }

int64_t lock_timeout_ms() {
  const char* env = std::getenv("GGUFKIT_LOCK_TIMEOUT");
  if (env && *env) {
    char* end = nullptr;
    double s = std::strtod(env, &end);
    if (end && *end == '\0' && s >= 0 && s < 1e6) return static_cast<int64_t>(s * 1000);
  }
  return 10000;
}

FileLock::FileLock(int fd, const std::string& name, Mode mode) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_io(name, "cannot stat to lock it");
  const uint64_t owner = lock_owner();
  if (held_by(st.st_dev, st.st_ino, owner)) return;
  const int op = (mode == Mode::exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(lock_timeout_ms());
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
      note(name, std::string("its file system has no locks (") + std::strerror(errno) +
                     "): ggufkit goes on without them; keep other programs from writing it meanwhile");
      return;
    }
    if (errno != EWOULDBLOCK) throw_io(name, "cannot lock");
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string who = held_by_another(st.st_dev, st.st_ino, owner) ? "another thread of this process" : holder(st.st_dev, st.st_ino);
      errno = 0;
      throw_io(name, std::string("is locked by ") + (who.empty() ? "another process" : who) + " " +
                         (mode == Mode::exclusive ? "reading or writing it" : "writing it") + "; waited " +
                         std::to_string(lock_timeout_ms()) + " ms (GGUFKIT_LOCK_TIMEOUT), nothing was done");
    }
    std::this_thread::sleep_for(pause);
  }
  fd_ = fd;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  owner_ = owner;
  std::lock_guard<std::mutex> g(g_mutex);
  g_held.insert({dev_, ino_, owner_});
}

void FileLock::release() {
  if (fd_ < 0) return;
  {
    std::lock_guard<std::mutex> g(g_mutex);
    if (auto it = g_held.find({dev_, ino_, owner_}); it != g_held.end()) g_held.erase(it);
  }
  ::flock(fd_, LOCK_UN);
  fd_ = -1;
}

FileLock::~FileLock() { release(); }

FileLock::FileLock(FileLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)), dev_(o.dev_), ino_(o.ino_), owner_(o.owner_) {}

FileLock& FileLock::operator=(FileLock&& o) noexcept {
  if (this != &o) {
    release();
    fd_ = std::exchange(o.fd_, -1);
    dev_ = o.dev_;
    ino_ = o.ino_;
    owner_ = o.owner_;
  }
  return *this;
}

PathLock::PathLock(const std::string& path, FileLock::Mode mode) {
  for (int tries = 0;; ++tries) {
    // Writable where it can be: an exclusive flock over NFS needs a file open for writing.
    fd_ = mode == FileLock::Mode::exclusive ? open_path(path, O_RDWR | O_NONBLOCK | O_CLOEXEC) : -1;
    if (fd_ < 0) fd_ = open_path(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) throw_io(path, "cannot open to lock it");
    struct stat st {}, now {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      fd_ = -1;
      throw Error(Error::Kind::usage, path, std::nullopt, "", "is not a regular file");
    }
    try {
      lock_ = FileLock(fd_, path, mode);
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

std::vector<std::unique_ptr<PathLock>> lock_all(const std::vector<std::string>& paths) {
  std::vector<std::pair<std::pair<dev_t, ino_t>, std::string>> order;
  for (const std::string& p : paths) {
    struct stat st {};
    if (stat_path(p, st) != 0) throw_io(p, "cannot stat to lock it");
    order.push_back({{st.st_dev, st.st_ino}, p});
  }
  std::sort(order.begin(), order.end());
  std::vector<std::unique_ptr<PathLock>> out;
  for (const auto& o : order) out.push_back(std::make_unique<PathLock>(o.second, FileLock::Mode::exclusive));
  return out;
}

}  // namespace ggufkit
