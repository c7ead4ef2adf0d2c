#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <optional>
#include <string>

#include <sys/types.h>

#include "ggufkit/layout.h"
#include "ggufkit/model.h"
#include "ggufkit/source.h"

namespace ggufkit {

struct ScanOptions {
  uint64_t max_string = 64ull << 20;  // longest key or string value accepted
  uint32_t max_depth = 8;             // deepest nesting of arrays accepted
  bool data_in_file = true;           // refuse tensor data past the end of the file
                                      // (validate turns it off to report a cut file)
  uint64_t header_size = 0;           // when known (a file just written): mapped at once
};

struct Scanned {
  Model model;
  Layout layout;            // what was found, span by span
  uint64_t source_size = 0; // bytes in the source; more than layout.file_size when
                            // there are bytes after the last span
  // The source ends exactly at its data start, with tensor bytes to hold: a header exemplar
  // (`replica --data none`), or a download cut exactly there, which reads the same. The
  // layout is the model's, to its padded end (layout.file_size, past source_size); reading a
  // tensor's bytes throws a usage Error that says so.
  bool header_only = false;
  // The model's file size: source_size, or for an exemplar the size its header describes.
  uint64_t model_size = 0;
  // The tensor of a type no table sizes whose bytes were measured to the end of the data
  // (no tensor after it): bytes after it, or a file cut short, cannot be told from its own.
  std::optional<uint64_t> opaque_to_end;
};

// Reads a GGUF header in one forward pass and checks it against the format's rules
// (see format.h). Tensor data is not read: each tensor points at its byte range of the
// source. Throws a format Error naming the file, the byte offset and the field.
Scanned scan(std::shared_ptr<const ByteSource> source, const ScanOptions& options = {});
// A model file. Refused while an interrupted in-place edit's journal lies beside it
// (journal_path): `ggufkit recover FILE` first puts the file back.
Scanned scan_file(const std::string& path, const ScanOptions& options = {}, const Context& ctx = {});
// Where the journal of an in-place header edit of the model at `path` lies: beside the
// file (a symbolic link's target), named FILE.ggufkit-journal.
std::string journal_path(const std::string& path);
// Whom a journal may come from (its owner, `journal_uid`): root, the owner of the file it
// would change, or the user running. Anyone else who can write the folder could have
// planted it: recover refuses it, and reads go on as if it were not there.
bool journal_trusted(uid_t journal_uid, uid_t file_uid);
// Throws the format Error that tells to run recover while a trusted journal lies beside `path`
// or (set_too) beside another shard of its set. A set's reader looks at the set once, with
// the shard it was given, and at each other shard's own journal alone: not N shards N times.
void refuse_journal(const std::string& path, const Context& ctx, bool set_too = true);
// The shard of `path`'s set (`path` named as a shard) that has a journal when `path` has
// none: a set's journals come and go one at a time, and every shard leads to them.
std::optional<std::string> set_shard_with_journal(const std::string& path);
// From a stream (a pipe, a decompressor): the header only. The size is unknown, so the
// checks that need it (data inside the file) are skipped and tensors have no source.
Scanned scan_stream(std::istream& in, const std::string& name, const ScanOptions& options = {});

}  // namespace ggufkit
