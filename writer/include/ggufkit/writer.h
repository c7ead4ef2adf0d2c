#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ggufkit/layout.h"
#include "ggufkit/model.h"
#include "ggufkit/sink.h"

namespace ggufkit {

// Every span of the file the model makes: a pure function, and the only code that
// decides offsets. Each tensor's offset is the running sum of the padded sizes before
// it, or its own Tensor::offset (a gap); padding is counted from the start of the file. Throws a format Error for a model
// that has no layout (an alignment that is not a u32 power of two, a tensor that cannot
// be sized, an array item of the wrong type).
Layout plan(const Model& model);

// Whether the writer copies the model's source tail (Model::tail) back: while the
// alignment and every tensor's place in the data section are those of the source.
bool keeps_tail(const Model& model, const Layout& layout);

// The byte offset of every field a raw override can change, named as the reader names
// it in its errors: "head (kv count)", "kv[3] (key length)", "kv[3] k (array count)",
// "tensor[0] w (n_dims)", "tensor[0] w (offset)".
using FieldMarks = std::map<std::string, uint64_t>;
Layout plan(const Model& model, FieldMarks& marks);

// Writes the model as planned, checking at the start of every span that the sink is
// where the plan says. Tensor data is streamed from each tensor's source.
void emit(const Model& model, const Layout& layout, Sink& sink);

// plan + emit into memory.
std::vector<uint8_t> to_bytes(const Model& model);

// plan + emit into a PendingFile (output.h) that becomes `path` when complete. On any
// failure `path` is left as it was and nothing else is left behind. An existing `path` is
// replaced only with `replace`.
Layout write_file(const Model& model, const std::string& path, bool replace = true);
// The same with a layout already planned; `finish` may edit the written file through
// its descriptor before it is flushed and renamed.
void write_file(const Model& model, const Layout& layout, const std::string& path,
                const std::function<void(int fd)>& finish, bool replace = true, const Context& ctx = {});

}  // namespace ggufkit
