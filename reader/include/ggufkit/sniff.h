#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ggufkit {

// What a file handed to a GGUF reader is when it is not one: most such files are a download
// gone wrong (an LFS pointer, a web page, a server's error), another format (safetensors, a
// PyTorch checkpoint, the GGML formats before GGUF) or parts of a file cut by bytes. Saying
// which, with what the bytes show, tells the user what to do instead of "bad magic".
struct NotGguf {
  // A stable snake_case id, for --json: empty, split_part, truncated_gguf, git_lfs_pointer,
  // legacy_ggml, safetensors, pytorch_zip, zip, pytorch_pickle, web_page, json, zeros, unknown.
  std::string kind;
  std::string what;    // one sentence: what the file is, with facts read from its bytes
  std::string remedy;  // one sentence: what to do; every kind has one
};

// How much of the file to pass: a web page's title or a safetensors header's first keys are
// in the first few KiB, and 64 KiB costs one read.
inline constexpr size_t kSniffBytes = 64 * 1024;

// The magic, version and two counts: a file shorter than this is no GGUF file.
inline constexpr size_t kGgufHeadBytes = 24;

// `head`: the file's first kSniffBytes bytes, fewer only when the file is shorter (so a
// shorter head is taken as the whole file); `size`: the whole file's size when known;
// `name`: its path as the user gave it, for the names of parts cut by bytes, which win over
// what the bytes look like (only part 1 starts like the file). Reads nothing beyond `head`
// and allocates nothing by a length found in it. Call it when the head does not start with
// "GGUF" or is shorter than kGgufHeadBytes. Quoted text is made safe for a terminal.
NotGguf sniff_not_gguf(std::span<const uint8_t> head, std::optional<uint64_t> size,
                       std::string_view name);

}  // namespace ggufkit
