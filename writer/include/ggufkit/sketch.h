#pragma once

#include <cstdint>
#include <map>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ggufkit/layout.h"
#include "ggufkit/model.h"
#include "ggufkit/writer.h"

namespace ggufkit {

// A raw override: after the layout is made, write `value` (`width` bytes, in the file's
// byte order) over the field the reader would call `field` ("kv[3] k (array count)").
struct Override {
  std::string field;
  uint64_t value = 0;
  uint32_t width = 0;
};

struct BytePatch {
  uint64_t at = 0;
  std::vector<uint8_t> bytes;
};

// A sketch file read into a model plus the raw overrides that break it on purpose.
// The format is documented in schemas/sketch.md.
struct Sketch {
  Model model;
  std::vector<Override> overrides;
  std::optional<std::string> magic;      // four bytes in place of "GGUF"
  std::optional<uint8_t> padding_byte;   // every padding byte
  std::optional<uint64_t> truncate_at;   // the file ends here (cut, or extended with zeros)
  std::vector<BytePatch> patches;        // anything else, at absolute offsets
};

using Defines = std::map<std::string, std::string>;

// Reads a sketch (YAML, or JSON, which is YAML). [[NAME]] placeholders are filled from
// `defines` first; `file:` and `from:` paths are relative to `base_dir`. Errors name the
// sketch, the line and column, and the entry ("metadata[3] counts.tokens").
Sketch parse_sketch(const std::string& text, const std::string& name, const std::string& base_dir,
                    const Defines& defines = {});
Sketch read_sketch(const std::string& path, const Defines& defines = {});

// The byte edits the overrides make at the offsets plan() gives, in order.
struct Edits {
  std::vector<BytePatch> patches;
  std::optional<uint64_t> truncate_at;
};
Edits sketch_edits(const Sketch& sketch, const Layout& layout, const FieldMarks& marks);

// The sketch's file in memory, or written to `path` (safely, as write_file does).
std::vector<uint8_t> sketch_bytes(const Sketch& sketch);
Layout write_sketch(const Sketch& sketch, const std::string& path, bool replace = true, const Context& ctx = {});
// The bytes write_sketch would write, readable without writing them: the header and its
// raw edits in memory, tensor data read from the tensors' sources only when asked for (a
// check that reads the header and the padding costs no more than the header).
std::shared_ptr<const ByteSource> sketch_source(const Sketch& sketch);

// A sketch that write turns back into the same bytes: tensor data by reference to the
// file it came from (`from`), or inline as hex. Never emits overrides.
struct DumpOptions {
  bool json = false;
  bool inline_data = false;
  // The folder the sketch will be written to: each from: file is then relative to it (as
  // write resolves it). Without one, from: files are absolute.
  std::optional<std::string> sketch_dir;
};
std::string dump_sketch(const Model& model, const DumpOptions& options = {});
// The same, given to `put` a piece at a time (a pair, a tensor, an array's item): the
// document is never whole in memory.
using DumpPut = std::function<void(std::string_view)>;
void dump_sketch(const Model& model, const DumpOptions& options, const DumpPut& put);

}  // namespace ggufkit
