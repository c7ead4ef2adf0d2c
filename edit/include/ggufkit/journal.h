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

// The header `model` would have in the place of `source`'s, as bytes up to the data start:
// when the new header, padded to the alignment, ends exactly where the data starts now and
// every tensor stays where it is. Otherwise nullopt, and `why` says by how much it misses.
std::optional<std::vector<uint8_t>> header_in_place(const Model& model, const Scanned& source, std::string& why);

// Writes `header` over the start of the model at `path`: (a) a journal (journal_path) with
// the old and the new header, their checksums and the model's device, inode and size,
// flushed with its folder; (b) the new header over the old, flushed; (c) the file re-read:
// its first bytes must be `header`, and the strict reader must find `planned`'s data start
// and tensor offsets in it; (d) the journal removed and the folder flushed. The tensor
// data is neither read nor written. A failure puts the old header back; a crash leaves the
// journal, which recover() (and every command, by refusing until then) sees.
// A model read from this file holds views of its header: they are stale once this returns.
void write_header_in_place(const std::string& path, const Layout& planned, const std::vector<uint8_t>& header);

enum class Recovery { none, rolled_back, kept_new };
// Finishes what an interrupted in-place edit left: the new header is kept when it is all
// there, else the old one is put back; the file is flushed and the journal removed. A
// journal that does not match the file (another inode or size, cut short, a bad checksum)
// is an Error and neither the file nor the journal is touched.
Recovery recover(const std::string& path);

}  // namespace ggufkit
