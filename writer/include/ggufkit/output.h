#pragma once

#include <sys/types.h>

#include <string>

namespace ggufkit {

// A file being written so that nothing is ever lost: an unnamed O_TMPFILE in the
// destination's folder (a hidden named file, .ggufkit-PID-XXXXXXXX.tmp, where the file
// system has no O_TMPFILE), which becomes `target` only by commit(). Destroyed before
// that, it leaves nothing behind, and an unnamed one leaves nothing even after kill -9.
// A new target is made by linking the finished file straight to its name (no window at
// all); an existing one is replaced by linking under a hidden name and renaming over it,
// and a kill -9 in that short window leaves the hidden file, which the next PendingFile
// in that folder removes once its process is gone.
class PendingFile {
 public:
  // Checks the destination before anything is written: its folder must exist, its name fit
  // the file system, and an existing target must be a regular file (never a device, a pipe
  // or a folder), replaced only with `replace` (a usage Error otherwise).
  PendingFile(std::string target, mode_t mode, bool replace = true);
  ~PendingFile();
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  int fd() const { return fd_; }
  const std::string& target() const { return target_; }
  // "/proc/self/fd/N": a path that opens the same file, for reading it back.
  std::string proc_path() const;
  void flush();   // fsync and the final mode; throws an io Error
  void commit();  // flush() if not done, then put in place; throws an io Error

 private:
  std::string target_, dir_, named_;  // named_: a name to remove on failure
  mode_t mode_;
  int fd_ = -1;
  bool flushed_ = false, replace_ = true;
};

// Refuses (a usage Error) an output that is the input under any name: the same inode.
void refuse_same_file(const std::string& input, const std::string& output, const std::string& advice);

// Writes `text` to `path` through a PendingFile: dump's sketches.
void write_text_file(const std::string& path, const std::string& text, bool replace);

// Removes the hidden temporary files that processes killed between naming and renaming
// them left in `dir` (those whose process no longer exists). Returns how many it removed.
int remove_stale_temporaries(const std::string& dir);

}  // namespace ggufkit
