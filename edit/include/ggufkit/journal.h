#pragma once

// Header-only edits in place, crash-safe by a journal beside the model: most fixes (a token
// id, a flag, a name, a template that stays within the padding) move no tensor byte, so
// only the header is written, and no crash at any instant leaves anything but the old
// file or the edited one.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ggufkit/model.h"
#include "ggufkit/scan.h"

namespace ggufkit {

// What an edit changes in a header that stays where it is: the bytes of [offset, offset +
// bytes.size()) of the first `header_size` bytes (the header and its padding, up to the
// data start). Everything else in the file stays as it is.
// A file that holds no tensor data (a split set's shard 1, a vocabulary) is all header, and
// its header may grow or shrink: `new_header_size` is then its new length and size, and the
// range runs to the end of both (its old bytes: [offset, header_size)).
struct HeaderEdit {
  uint64_t header_size = 0;
  uint64_t new_header_size = 0;
  uint64_t offset = 0;
  std::vector<uint8_t> bytes;
  // The file as it was read (its map is reused for the checksums and the re-read).
  std::shared_ptr<const ByteSource> file;
};

// The header `model` (planned as `planned`) would have in the place of the one it was read
// from (model.tail: the file, `source` its layout as read, `source_size` its size): when
// the new header, padded to the alignment, ends exactly where the data starts now and
// every tensor stays where it is, or when neither file holds a tensor (and the old one
// nothing past its header), the one range of bytes that differs (empty when none does).
// Otherwise nullopt, and `why` says by how much it misses. Tensor data is not read.
// The byte order must be the file's (a conversion moves every byte).
std::optional<HeaderEdit> header_in_place(const Model& model, const Layout& planned, const Layout& source,
                                          uint64_t source_size, std::string& why);

// Writes `edit` into the model at `path`: (a) a journal (journal_path) with the old and the
// new bytes of the range, checksums of the whole old and new header, and the model's
// device, inode and old and new sizes, flushed with its folder; (b) the new bytes over the
// old, the file cut to its new size when its header shrinks, flushed; (c) the file re-read: the range must read back as written, and the strict
// reader must find `planned`'s data start and tensor offsets in it; (d) the journal
// removed and the folder flushed. The tensor data is neither read nor written. A failure
// puts the old bytes back; a crash leaves the journal, which recover() (and every
// command, by refusing until then) sees.
// A model read from this file holds views of its header: they are stale once this returns.
// Its locks and reads are the call's (ctx).
void write_header_in_place(const std::string& path, const Layout& planned, const HeaderEdit& edit, const Context& ctx);

enum class Recovery { none, rolled_back, kept_new, set_finished, discarded };
// Finishes what an interrupted in-place edit left, its journal beside `path`, holding the
// file's lock meanwhile. A header edit: the new header is kept when it is all there, else
// the old bytes are put back; either way the file must then read clean with its header
// ending where the journal says, or it is put back as it was. A set's renames: each new
// file not yet in place is renamed over its shard (set_finished); `path` may be any shard
// of the set, the journal beside another one found. A set's journal may name only shards
// of the set it lies beside, in its own folder, each of them and each new file a regular
// file owned as that shard (or the journal) is (an old file it replaces may be a link,
// renamed over or removed, never followed); the shard beside the journal must be the file
// whose owner the journal was trusted for; anything else is refused, naming it, and
// nothing is renamed. The journal is removed.
// A journal is trusted only when it is a regular file (a link is not followed) owned by
// root, by the file's owner or by the user running this; its size must be what its own
// head says, read a piece at a time; its range must lie inside the header. Any other
// journal (another inode or size, cut short, a bad checksum, a header that is neither the
// old nor the new one outside the range) is an Error, and neither the file nor the
// journal is touched. `discard`: the journal is removed without being applied, only when
// the file (every file of a set) reads clean with the strict reader.
Recovery recover(const std::string& path, bool discard = false, const Context& ctx = {});

// The renames that put the new files of a set in place: each target (a shard's name, all in
// one folder), the name in that folder its new file has until then, the new file's inode
// and the inode of the file it replaces as it was read (0: a new name).
struct SetRename {
  std::string target, hidden;
  uint64_t inode = 0, old_inode = 0;
};
// Puts a set's new files in place, all or none. The renames are recorded first beside every
// target (TARGET.ggufkit-journal, made in the set's folder and never through a link, its
// names relative to the folder), so that a crash among them is finished by recover() of
// any shard, wherever the folder is by then, and every command refuses each file of the
// set until then. Each new file is exchanged with its target, and the file it displaced
// must be the one read (old_inode; a link, when the link itself is what is replaced, and
// never followed): another file put there since, or a link, is put back with every shard
// already exchanged, and the Error names it, the set as it was. Where a shard was already
// renamed over (the file system cannot exchange: its old file is gone) or an exchange
// cannot be undone, nothing more is undone: every journal and new file stays, the Error
// says so, and recover() finishes the set forward. `replace`: a target that was not there
// may be one now. The old files go once every new one is in.
void put_set_in_place(const std::vector<SetRename>& set, bool replace);

}  // namespace ggufkit
