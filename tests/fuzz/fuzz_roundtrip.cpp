// libFuzzer: any file the reader accepts must rewrite to bytes that read back to the same
// model, with the layout plan() promised. Anything else is a crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ggufkit/error.h"
#include "ggufkit/scan.h"
#include "ggufkit/writer.h"

static void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "round trip broken: %s\n", what);
    std::abort();
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ggufkit::Scanned s;
  try {
    s = ggufkit::scan(ggufkit::from_bytes("fuzz.gguf", std::vector<uint8_t>(data, data + size)));
  } catch (const ggufkit::Error&) {
    return 0;  // refused: fine
  }
  ggufkit::Layout planned = ggufkit::plan(s.model);  // an accepted model always has a layout
  ggufkit::check_layout(planned);
  // A header exemplar holds no data to copy, and a file too large to hold in memory is
  // checked as far as its plan: the bytes of both are the writer tests' business.
  if (s.header_only || planned.file_size > (64u << 20)) return 0;
  std::vector<uint8_t> bytes = ggufkit::to_bytes(s.model);
  check(bytes.size() == planned.file_size, "size");
  ggufkit::Scanned back = ggufkit::scan(ggufkit::from_bytes("again.gguf", bytes));
  check(back.layout == planned, "layout");
  check(back.model.metadata == s.model.metadata, "metadata");
  check(back.model.tensors.size() == s.model.tensors.size(), "tensor count");
  for (size_t i = 0; i < s.model.tensors.size(); ++i) {
    const auto &a = s.model.tensors[i], &b = back.model.tensors[i];
    check(a.name == b.name && a.dims == b.dims && a.type == b.type, "tensor record");
    std::vector<uint8_t> x(a.nbytes()), y(b.nbytes());  // at most the file's size
    a.source->read_at(a.source_offset, x.data(), x.size());
    b.source->read_at(b.source_offset, y.data(), y.size());
    check(x == y, "tensor bytes");
  }
  check(ggufkit::to_bytes(back.model) == bytes, "second rewrite");
  return 0;
}
