#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ggufkit/context.h"
#include "ggufkit/layout.h"
#include "ggufkit/model.h"

namespace ggufkit {

struct RewriteOptions {
  bool in_place = false;  // replace `source` itself (by rename, never by writing into it)
  // With in_place, a `source` that is a symbolic link: the link itself is replaced by the new
  // file, and the file it names is left as it is (else that file is replaced, the link kept).
  bool break_link = false;
  bool verify = true;     // re-read the written tensor data and compare checksums
  bool replace = true;    // an existing `dest` may be replaced (the program: only with --force)
  Context ctx;  // the call's: its cancel flag, progress, notes and locks
};

struct RewriteResult {
  Layout layout;
  std::string path;                // where the file now is
  uint64_t tensors_verified = 0;   // tensors whose bytes were re-read and matched
  uint64_t bytes_verified = 0;
};

// Writes the model to `dest` (or over `source` with in_place) so that nothing is ever
// lost: the file is made in the destination's folder as an unnamed O_TMPFILE (a named
// temporary where the file system lacks it), flushed, checked, and only then renamed into
// place, and the folder flushed. The check re-reads the header with the strict reader and
// compares it with the plan, and with verify reads every copied piece of the output back
// (in a second thread, while writing and flushing go on) and compares it with its source,
// byte for byte, or with an xxHash64 taken in memory when the data was converted. Writing
// over the source any other way (the same inode by another name or a link) is refused. A
// replaced file keeps its owner, group, mode and extended attributes; a new one gets the
// source's mode less the umask (PendingFile). On any failure the temporary file is gone, `source` and any existing `dest` are
// untouched, and the Error says so.
RewriteResult safe_rewrite(const Model& model, const std::string& source, const std::string& dest,
                           const RewriteOptions& options = {});

// Several files that stand or fall together (the shards of a set): each written and
// verified as safe_rewrite does, and put in place only once every one of them is. A failure
// before that leaves none of them, and the sources as they were; the renames at the end
// follow one another (a crash among them leaves the first ones new, the rest as they were).
// New files get the first source's mode less the umask; an output that is one of the
// sources is refused. An output path that is a symbolic link is replaced itself, never
// written through (in place: once checked to still name the file its model was read from).
struct Output {
  const Model* model;
  std::string path;
};
std::vector<RewriteResult> safe_write_all(const std::vector<Output>& outputs, const std::vector<std::string>& sources,
                                          const RewriteOptions& options = {});

}  // namespace ggufkit
