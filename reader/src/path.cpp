#include "ggufkit/path.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include "ggufkit/error.h"

namespace ggufkit {

namespace {
constexpr size_t kStep = 1024;  // how much of a long path one openat() takes
}

PathAt::PathAt(const std::string& path) : dir_(AT_FDCWD), name_(path) {
  if (path.size() < PATH_MAX) return;
  size_t slash = path.find_last_of('/');
  std::string folder = path.substr(0, slash);
  name_ = path.substr(slash + 1);
  dir_ = ::open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  for (size_t at = folder.find_first_not_of('/'); dir_ >= 0 && at < folder.size();) {
    // Up to kStep bytes ending at a slash (or the folder's end); one component longer than
    // that cannot be (NAME_MAX is 255).
    size_t end = folder.size() - at <= kStep ? folder.size() : folder.rfind('/', at + kStep);
    if (end == std::string::npos || end <= at) end = folder.size();
    int next = ::openat(dir_, folder.substr(at, end - at).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    int saved = errno;
    ::close(dir_);
    errno = saved;
    dir_ = next;
    at = folder.find_first_not_of('/', end);
  }
  if (dir_ < 0) throw_io(path, "cannot reach the folder of the path");
}

PathAt::~PathAt() {
  if (dir_ >= 0) ::close(dir_);
}

int open_path(const std::string& path, int flags, mode_t mode) {
  if (path.size() < PATH_MAX) return ::open(path.c_str(), flags, mode);
  try {
    PathAt at(path);
    return ::openat(at.dir(), at.name(), flags, mode);
  } catch (const Error&) {
    return -1;  // errno is the walk's
  }
}

int stat_path(const std::string& path, struct stat& st, bool follow) {
  try {
    PathAt at(path);
    return ::fstatat(at.dir(), at.name(), &st, follow ? 0 : AT_SYMLINK_NOFOLLOW);
  } catch (const Error&) {
    return -1;
  }
}

std::string follow_links(const std::string& path) {
  std::string p = path;
  for (int hops = 0;; ++hops) {
    struct stat st {};
    if (stat_path(p, st, false) != 0 || !S_ISLNK(st.st_mode)) return p;
    if (hops == 40) {
      errno = ELOOP;
      throw_io(path, "cannot follow its symbolic links");
    }
    PathAt at(p);
    std::string target(static_cast<size_t>(st.st_size > 0 ? st.st_size : PATH_MAX), '\0');
    ssize_t n = ::readlinkat(at.dir(), at.name(), target.data(), target.size());
    if (n < 0) throw_io(path, "cannot read the symbolic link " + p);
    target.resize(static_cast<size_t>(n));
    size_t slash = p.find_last_of('/');
    p = target[0] == '/' || slash == std::string::npos ? target : p.substr(0, slash + 1) + target;
  }
}

}  // namespace ggufkit
