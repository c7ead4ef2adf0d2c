#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "ggufkit/context.h"

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
  // the file system, and an existing target must be a regular file or a symbolic link (never
  // a device, a pipe or a folder), replaced only with `replace` (a usage Error otherwise).
  // A new target gets `mode` less the umask, as open() and cp give it. A target that is
  // replaced keeps its owner, group, mode and extended attributes; what cannot be kept
  // (another user's file, attributes the folder's file system lacks) is said in a note to
  // the call's context, whose locks are this file's too (commit locks the file it replaces).
  // A symbolic link is replaced itself, as mv and sed -i replace it, by a file made as a new
  // one (the caller's, `mode` less the umask), and the file it names is left as it was (a
  // note says so): written through, the new bytes would reach every other name of that
  // file (a cache's blob), and a link planted in a shared folder would pass the file it
  // names to whoever planted it, with its owner's rights. A link to what is not a regular
  // file (a device, a pipe, a folder), or whose chain of links leads into /proc, /sys or
  // /dev/fd (-o /dev/stdout, /etc/mtab), is refused.
  PendingFile(std::string target, mode_t mode, bool replace = true, Context ctx = {});
  ~PendingFile();
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  int fd() const { return fd_; }
  const std::string& target() const { return target_; }
  // "/proc/self/fd/N": a path that opens the same file, for reading it back.
  std::string proc_path() const;
  void flush();   // the owner, mode and attributes, then fsync; throws an io Error
  // flush() if not done, then put in place; throws an io Error. Returns whether the folder
  // was flushed too (the new name is durable only then).
  bool commit();
  // The finished file's name in the folder until commit() renames it (an unnamed file is
  // given one now): what a set's journal records, so that recover can finish the renames.
  const std::string& hidden_name();
  // From now on the hidden name outlives a failure: a set's journal points to it.
  void keep_on_failure(bool keep = true) { keep_ = keep; }

 private:
  void keep_attributes();
  Context ctx_;
  std::string target_, dir_, base_;  // the target, its folder and its name in that folder
  std::string named_;                 // a name in the folder to remove on failure
  int folder_ = -1;
  mode_t mode_;
  std::optional<struct stat> replaced_;  // the target as it was, when it exists
  int fd_ = -1;
  bool flushed_ = false, replace_ = true, keep_ = false;
};

// When `file` lies in a content-addressed store, what the store is and how its names are
// made: a folder named blobs whose file names are the content's digest (a Hugging Face
// cache's blobs/<sha256> or, for a file kept in git, <sha1>; Ollama's blobs/sha256-<hex>).
// Such a file is shared by every link to it, and its name must stay its content's digest.
std::optional<std::string> content_store(const std::string& file);

// Refuses (a usage Error) an output that is the input under any name: the same inode.
void refuse_same_file(const std::string& input, const std::string& output, const std::string& advice);

// Writes `text` to `path` through a PendingFile: dump's sketches.
void write_text_file(const std::string& path, const std::string& text, bool replace, const Context& ctx = {});
// The same for text `make` gives a piece at a time, to the function it is passed.
void write_text_file(const std::string& path, bool replace,
                     const std::function<void(const std::function<void(std::string_view)>&)>& make, const Context& ctx = {});

// Removes the hidden temporary files that processes killed between naming and renaming
// them left in `dir` (those whose process no longer exists). Returns how many it removed.
// A folder that holds a journal (FILE.ggufkit-journal) is left alone: a set's journal
// names the files recover is to put in place.
int remove_stale_temporaries(const std::string& dir);
int remove_stale_temporaries(int folder);  // the same, by the folder's descriptor

}  // namespace ggufkit
