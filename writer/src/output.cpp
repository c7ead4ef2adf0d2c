#include "ggufkit/output.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "ggufkit/error.h"
#include "ggufkit/fault.h"
#include "ggufkit/lock.h"
#include "ggufkit/path.h"

namespace ggufkit {

namespace {
namespace fs = std::filesystem;

constexpr char kTempPrefix[] = ".ggufkit-";

// Short and independent of the target's name, so any name the file system takes works.
std::string temp_name() {
  std::random_device rd;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s%d-%08x.tmp", kTempPrefix, static_cast<int>(::getpid()), rd());
  return buf;
}

// The PID in ".ggufkit-PID-XXXXXXXX.tmp", or 0 for any other name.
pid_t temp_owner(const char* name) {
  unsigned pid = 0, rnd = 0;
  int end = 0;
  if (std::sscanf(name, ".ggufkit-%u-%8x.tmp%n", &pid, &rnd, &end) != 2 || name[end] != '\0') return 0;
  char canon[48];
  std::snprintf(canon, sizeof canon, "%s%u-%08x.tmp", kTempPrefix, pid, rnd);
  return std::strcmp(canon, name) == 0 ? static_cast<pid_t>(pid) : 0;
}

}  // namespace

std::optional<std::string> content_store(const std::string& file) {
  const fs::path p(file);
  if (p.parent_path().filename() != "blobs") return std::nullopt;
  const std::string name = p.filename().string();
  auto hex = [](std::string_view s, size_t n) {
    return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
  };
  if (hex(name, 64)) return std::string("a blob of a Hugging Face cache (its name is its content's SHA-256)");
  if (hex(name, 40)) return std::string("a blob of a Hugging Face cache (its name is its content's git SHA-1)");
  if ((name.rfind("sha256-", 0) == 0 || name.rfind("sha256:", 0) == 0) && hex(std::string_view(name).substr(7), 64))
    return std::string("an Ollama blob (its name is its content's SHA-256)");
  return std::nullopt;
}

void refuse_same_file(const std::string& input, const std::string& output, const std::string& advice) {
  struct stat a {}, b {};
  if (stat_path(input, a) == 0 && stat_path(output, b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
    throw_usage("refusing to write over the input " + input + ": " + output + " is the same file" + advice);
}

void write_text_file(const std::string& path, const std::string& text, bool replace, const Context& ctx) {
  write_text_file(path, replace, [&](const std::function<void(std::string_view)>& put) { put(text); }, ctx);
}

void write_text_file(const std::string& path, bool replace,
                     const std::function<void(const std::function<void(std::string_view)>&)>& make, const Context& ctx) {
  PendingFile out(path, 0666, replace, ctx);
  std::string buf;  // pieces gathered into writes of about 1 MiB
  uint64_t written = 0;
  auto drain = [&] {
    for (size_t done = 0; done < buf.size();) {
      ssize_t w = ::write(out.fd(), buf.data() + done, buf.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) throw_io(path, "write failed at byte " + std::to_string(written + done));
      done += static_cast<size_t>(w);
    }
    written += buf.size();
    buf.clear();
  };
  make([&](std::string_view piece) {
    buf += piece;
    if (buf.size() >= (1u << 20)) drain();
  });
  drain();
  out.commit();
}

int remove_stale_temporaries(const std::string& dir) {
  int fd = open_path(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  return fd < 0 ? 0 : remove_stale_temporaries(fd);
}

int remove_stale_temporaries(int folder) {
  int own = ::fcntl(folder, F_DUPFD_CLOEXEC, 0);  // closedir() closes it, not the caller's
  DIR* d = own < 0 ? nullptr : ::fdopendir(own);
  if (!d) {
    if (own >= 0) ::close(own);
    return 0;
  }
  ::rewinddir(d);
  int removed = 0;
  std::vector<std::string> stale;
  constexpr std::string_view kJournal = ".ggufkit-journal";
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name.size() > kJournal.size() && name.substr(name.size() - kJournal.size()) == kJournal) {
      ::closedir(d);
      return 0;
    }
    pid_t pid = temp_owner(e->d_name);
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    stale.push_back(e->d_name);
  }
  for (const std::string& name : stale)
    if (::unlinkat(::dirfd(d), name.c_str(), 0) == 0) ++removed;
  ::closedir(d);
  return removed;
}

// -o /dev/stdout, /etc/mtab: a link to a process's descriptor, /proc or /sys, a device, a
// pipe or a folder is no file to replace (as root, replacing it would break it for every
// process). The chain of links is followed by their texts, as far as 40 links: /dev/fd/1
// resolved would be wherever standard output goes, a regular file perhaps.
namespace {
template <class Refuse>
void refuse_link_to_no_file(const std::string& target, int folder, const std::string& base, const Refuse& refuse) {
  std::error_code ec;
  fs::path at = fs::absolute(target, ec).lexically_normal();
  const fs::path first = fs::read_symlink(at, ec);
  for (int hops = 0; hops < 40 && !ec; ++hops) {
    const fs::path to = fs::read_symlink(at, ec);
    if (ec) break;
    at = (to.is_absolute() ? to : at.parent_path() / to).lexically_normal();
    const std::string p = at.string();
    for (const char* system : {"/proc/", "/sys/", "/dev/fd/"})
      if (p.rfind(system, 0) == 0 || p + "/" == system)
        refuse("is a symbolic link to " + first.string() + ", which leads to " + p + ", not to a file: ggufkit writes only files; give a file name");
  }
  struct stat named {};
  if (::fstatat(folder, base.c_str(), &named, 0) == 0 && !S_ISREG(named.st_mode))
    refuse("is a symbolic link to " + first.string() + ", which is not a regular file (a device, a pipe or a folder): " +
           "ggufkit writes only files; give a file name");
}
}  // namespace

PendingFile::PendingFile(std::string target, mode_t mode, bool replace, Context ctx)
    : ctx_(std::move(ctx)), target_(std::move(target)), mode_(mode), replace_(replace) {
  dir_ = fs::path(target_).parent_path().string();
  if (dir_.empty()) dir_ = target_[0] == '/' ? "/" : ".";
  base_ = fs::path(target_).filename().string();
  struct stat st {};
  // sys_errno: the system's reason, for callers that type errors by it (Python's).
  auto refuse = [&](const std::string& why, int sys_errno = 0) {
    Error e(Error::Kind::usage, target_, std::nullopt, "", why);
    e.sys_errno = sys_errno;
    throw e;
  };
  if (base_.empty() || base_ == "." || base_ == "..") refuse("names a folder, not a file", EISDIR);
  if (base_.size() > NAME_MAX)
    refuse("the name is " + std::to_string(base_.size()) + " bytes, longer than the " + std::to_string(NAME_MAX) +
           " a file name may have");
  // Everything from here is done relative to the folder's descriptor: a path of any length works.
  folder_ = open_path(dir_, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder_ < 0 && (errno == ENOENT || errno == ENOTDIR)) refuse("there is no folder " + dir_, errno);
  if (folder_ < 0) throw_io(dir_, "cannot open the folder to write " + target_ + " in");
  const bool exists = ::fstatat(folder_, base_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (exists) {
    if (S_ISDIR(st.st_mode)) refuse("is a folder; give a file name", EISDIR);
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
      refuse("exists and is not a regular file (a device, pipe or socket); ggufkit replaces only regular files");
    if (S_ISLNK(st.st_mode)) refuse_link_to_no_file(target_, folder_, base_, refuse);  // before `force` is suggested
    if (!replace_) refuse("exists; give `force` to replace it");
  }
  if (exists && S_ISREG(st.st_mode)) {
    replaced_ = st;
  } else {  // a new file, or a new file in place of a link (see the header)
    if (exists) {
      std::string to(PATH_MAX, '\0');
      ssize_t n = ::readlinkat(folder_, base_.c_str(), to.data(), to.size());
      to.resize(n > 0 ? static_cast<size_t>(n) : 0);
      ctx_.note(target_, "is a symbolic link (to " + to + "): it is replaced by the new file, and the file it names is left as it was");
    }
    mode_t mask = ::umask(0);  // reading the umask means setting it: put it straight back
    ::umask(mask);
    mode_ = mode_ & 0777 & ~mask;
  }
  remove_stale_temporaries(folder_);
  int injected = fault_point("tmpfile");
  fd_ = injected ? -1 : ::openat(folder_, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, mode_);
  if (fd_ < 0) {  // no O_TMPFILE here: a hidden named file, removed on failure
    named_ = temp_name();
    fd_ = ::openat(folder_, named_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode_);
    if (fd_ < 0) {
      named_.clear();
      throw_io(target_, "cannot create a temporary file in " + dir_);
    }
  }
}

PendingFile::~PendingFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!named_.empty() && !keep_) ::unlinkat(folder_, named_.c_str(), 0);
  if (folder_ >= 0) ::close(folder_);
}

const std::string& PendingFile::hidden_name() {
  if (named_.empty()) {
    if (!flushed_) flush();
    std::string name = temp_name();
    if (::linkat(AT_FDCWD, proc_path().c_str(), folder_, name.c_str(), AT_SYMLINK_FOLLOW) != 0)
      throw_io(target_, "cannot give the finished file a name in " + dir_);
    named_ = name;
    fault_point("linked");
  }
  return named_;
}

std::string PendingFile::proc_path() const { return "/proc/self/fd/" + std::to_string(fd_); }

// The replaced file's owner, group, mode and extended attributes (ACLs and SELinux labels
// among them), in that order: a change of owner clears the set-user-ID bits, and an ACL
// sets the group bits of the mode.
void PendingFile::keep_attributes() {
  const struct stat& was = *replaced_;
  if (::fchown(fd_, was.st_uid, was.st_gid) != 0)
    ctx_.note(target_, "the owner " + std::to_string(was.st_uid) + ":" + std::to_string(was.st_gid) +
                      " could not be kept (" + std::strerror(errno) + "); the file is now owned by " +
                      std::to_string(::geteuid()) + ":" + std::to_string(::getegid()));
  if (::fchmod(fd_, was.st_mode & 07777) != 0) throw_io(target_, "cannot set the file mode");
  int old = ::openat(folder_, base_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (old < 0) {
    if (errno != ENOENT) ctx_.note(target_, std::string("its extended attributes could not be read (") + std::strerror(errno) + ")");
    return;
  }
  ssize_t n = ::flistxattr(old, nullptr, 0);
  std::vector<char> names(n > 0 ? static_cast<size_t>(n) : 0);
  if (n > 0) n = ::flistxattr(old, names.data(), names.size());
  for (ssize_t at = 0; at < n; at += static_cast<ssize_t>(std::strlen(names.data() + at)) + 1) {
    const char* name = names.data() + at;
    ssize_t size = ::fgetxattr(old, name, nullptr, 0);
    std::vector<char> value(size > 0 ? static_cast<size_t>(size) : 0);
    if (size < 0 || (size = ::fgetxattr(old, name, value.data(), value.size())) < 0 ||
        ::fsetxattr(fd_, name, value.data(), static_cast<size_t>(size), 0) != 0)
      ctx_.note(target_, std::string("the extended attribute ") + name + " could not be kept (" + std::strerror(errno) + ")");
  }
  ::close(old);
}

void PendingFile::flush() {
  if (replaced_) keep_attributes();
  else if (::fchmod(fd_, mode_) != 0) throw_io(target_, "cannot set the file mode");
  int injected = fault_point("fsync");
  if (injected || ::fsync(fd_) != 0) {
    if (injected) errno = injected;
    throw_io(target_, "fsync failed");
  }
  flushed_ = true;
  fault_point("flushed", {fd_});
}

bool PendingFile::commit() {
  if (!flushed_) flush();
  if (named_.empty()) {  // an O_TMPFILE gets a name only now
    // A new target: link it straight to its name, atomically, and the job is done.
    if (::linkat(AT_FDCWD, proc_path().c_str(), folder_, base_.c_str(), AT_SYMLINK_FOLLOW) == 0) {
      fault_point("renamed");
    } else {
      if (errno != EEXIST) throw_io(target_, "cannot give the finished file a name in " + dir_);
      if (!replace_)
        throw Error(Error::Kind::usage, target_, std::nullopt, "", "appeared while it was being written; give `force` to replace it");
      std::string name = temp_name();
      if (::linkat(AT_FDCWD, proc_path().c_str(), folder_, name.c_str(), AT_SYMLINK_FOLLOW) != 0)
        throw_io(target_, "cannot give the finished file a name in " + dir_);
      named_ = name;
      fault_point("linked");
    }
  }
  if (!named_.empty()) {
    struct stat st {};  // the fallback's file was named from the start: the same checks here
    if (!replace_ && ::fstatat(folder_, base_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
      throw Error(Error::Kind::usage, target_, std::nullopt, "", "exists; give `force` to replace it");
    // The file replaced is locked while it is (no in-place edit of it is lost under the
    // rename); nothing when this process holds its lock already, as a rewrite does.
    FileLock lock;
    int old = ::openat(folder_, base_.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    struct stat os {};
    if (old >= 0 && ::fstat(old, &os) == 0 && S_ISREG(os.st_mode)) {
      try {
        lock = FileLock(old, target_, FileLock::Mode::exclusive, ctx_);
      } catch (...) {
        ::close(old);
        throw;
      }
    }
    fault_point("before-rename");
    int renamed = ::renameat(folder_, named_.c_str(), folder_, base_.c_str());
    int saved = errno;
    lock = FileLock();
    if (old >= 0) ::close(old);
    errno = saved;
    if (renamed != 0) throw_io(target_, "cannot rename the finished file into place");
    named_.clear();  // it is the target now
    fault_point("renamed");
  }
  return ::fsync(folder_) == 0;  // the new name itself is durable once the folder is
}

}  // namespace ggufkit
