#include "ggufkit/output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <random>

#include "ggufkit/error.h"

namespace ggufkit {

namespace {
namespace fs = std::filesystem;

std::string hidden_name(const std::string& dir, const std::string& base) {
  std::random_device rd;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", rd());
  return (fs::path(dir) / ("." + base + ".ggufkit-" + std::to_string(::getpid()) + "-" + buf)).string();
}
}  // namespace

PendingFile::PendingFile(std::string target, mode_t mode) : target_(std::move(target)), mode_(mode) {
  dir_ = fs::path(target_).parent_path().string();
  if (dir_.empty()) dir_ = ".";
  fd_ = ::open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, mode_);
  if (fd_ < 0) {  // no O_TMPFILE here: a hidden named file, removed on failure
    named_ = hidden_name(dir_, fs::path(target_).filename().string());
    fd_ = ::open(named_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode_);
    if (fd_ < 0) {
      named_.clear();
      throw_io(target_, "cannot create a temporary file in " + dir_);
    }
  }
}

PendingFile::~PendingFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!named_.empty()) ::unlink(named_.c_str());
}

std::string PendingFile::proc_path() const { return "/proc/self/fd/" + std::to_string(fd_); }

void PendingFile::commit() {
  if (::fsync(fd_) != 0) throw_io(target_, "fsync failed");
  if (::fchmod(fd_, mode_) != 0) throw_io(target_, "cannot set the file mode");
  if (named_.empty()) {  // an O_TMPFILE gets a name only now, and only to be renamed
    std::string name = hidden_name(dir_, fs::path(target_).filename().string());
    if (::linkat(AT_FDCWD, proc_path().c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) != 0)
      throw_io(target_, "cannot give the finished file a name in " + dir_);
    named_ = name;
  }
  if (::rename(named_.c_str(), target_.c_str()) != 0) throw_io(target_, "cannot rename the finished file into place");
  named_.clear();  // it is the target now
  int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {  // the rename itself is durable once the folder is
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace ggufkit
