#pragma once

#include <sys/types.h>

#include <string>

namespace ggufkit {

// A file being written so that nothing is ever lost: an unnamed O_TMPFILE in the
// destination's folder (a hidden named file where the file system has no O_TMPFILE),
// which becomes `target` only by commit(): flushed, given its mode, linked and renamed
// into place, and the folder flushed. Destroyed before that, it leaves nothing behind,
// and an unnamed one leaves nothing even after kill -9.
class PendingFile {
 public:
  PendingFile(std::string target, mode_t mode);
  ~PendingFile();
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  int fd() const { return fd_; }
  const std::string& target() const { return target_; }
  // "/proc/self/fd/N": a path that opens the same file, for reading it back.
  std::string proc_path() const;
  void commit();  // throws an io Error; then the file is the target

 private:
  std::string target_, dir_, named_;  // named_: a name to remove on failure
  mode_t mode_;
  int fd_ = -1;
};

}  // namespace ggufkit
