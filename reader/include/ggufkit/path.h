#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

namespace ggufkit {

// A path reached through a descriptor of its folder. The kernel refuses a path of PATH_MAX
// (4096) bytes or more in one call; a longer one is walked a few components at a time, so
// that every command works on a path of any length. A short path costs nothing: the folder
// is then AT_FDCWD and the name the path itself.
class PathAt {
 public:
  explicit PathAt(const std::string& path);  // throws an io Error when the folder cannot be reached
  ~PathAt();
  PathAt(const PathAt&) = delete;
  PathAt& operator=(const PathAt&) = delete;
  int dir() const { return dir_; }
  const char* name() const { return name_.c_str(); }

 private:
  int dir_;
  std::string name_;
};

// open() and stat() (lstat() with follow = false) for a path of any length; -1 and errno as they.
int open_path(const std::string& path, int flags, mode_t mode = 0);
int stat_path(const std::string& path, struct stat& st, bool follow = true);

// The file a path names once the symbolic links of its last component are followed: the
// path itself when it is no link. Throws an io Error for a loop or a link it cannot read.
std::string follow_links(const std::string& path);

}  // namespace ggufkit
