#pragma once
// Named fault points: the places in the safe write path where a crash, a signal or a
// failing system call matters. Production code calls fault_point() at each; it does
// nothing unless a hook was installed, which only the test build of the program
// (ggufkit_faulty) and the tests do. The points, in the order a write passes them:
//   tmpfile        before the unnamed temporary file is opened (fail: take the named fallback)
//   write          before each write() of the output (fail: that write fails with the errno)
//   copied         a piece of copied data (tensor data, kept bytes) is in the output and not yet
//                  handed to the verifier (the site: the output and the piece's range)
//   written        every byte of the output is written
//   fsync          before the output is flushed (fail: fsync fails with the errno)
//   flushed        the output is flushed and has its mode
//   verified       the header and every tensor re-read and matched
//   linked         the finished file has a temporary name in the destination's folder
//   before-rename  just before the rename over the destination
//   renamed        the destination is the new file; the folder is not yet flushed
//   set-journal    one journal of a shard set's renames is named, the next not yet
//   set-renamed    one file of several (a shard set) is in place, the next not yet
//   set-exchange   before a set's file is exchanged with its shard (fail: the exchange fails)
//   set-rename     before a set's file is renamed over its shard, where it cannot be exchanged (fail: so does the rename)
//   set-undo       before an exchange of a set that cannot all go in is undone (fail: the undo fails)
//   set-trusted    recover trusted a set's journal's owner; the set's files are not yet looked at
//   flock          before each try to lock a file (fail: flock fails with the errno; ENOLCK: no locks)
// and, in an in-place header edit (edit/journal.h):
//   in-place         the header was read and the edit planned; the file is not yet opened to write
//   statvfs          the room for the journal is asked for (fail: no room at all)
//   journal-written  the journal is complete, flushed and named; the file is untouched
//   header-half      the first half of the new header is over the old one
//   header-written   all of the new header is written and flushed
//   header-verified  the header was re-read and matched; the journal is still there
// and in recover:
//   recover-locked   the file's lock is held; its journal not yet read
//   recover-journal  the journal is open and its kind known; the file not yet opened
//   recover-trusted  a file's own journal is trusted (its owner, its format); the file not yet checked
//   recover-checked  the file and the journal agree; nothing is written yet
#include <cstddef>

namespace ggufkit {

// What a point can hand to a hook: the output's descriptor, and at `copied` the range of
// it just written, [offset, offset + size).
struct FaultSite {
  int fd = -1;
  unsigned long long offset = 0, size = 0;
};

// Returns 0 to go on, or an errno the step at this point is to fail with.
using FaultHook = int (*)(const char* point, const FaultSite& site);
void set_fault_hook(FaultHook hook);
int fault_point(const char* point, const FaultSite& site = {});

}  // namespace ggufkit
