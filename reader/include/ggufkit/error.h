#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "ggufkit/sniff.h"

namespace ggufkit {

// The one error type of the library. It says where (file, byte offset, field path) and
// what was found against what was expected. The kind is also the program's exit status.
class Error : public std::runtime_error {
 public:
  enum class Kind { format = 1, usage = 2, io = 3 };

  Error(Kind kind, std::string file, std::optional<uint64_t> offset, std::string field,
        std::string message);

  Kind kind;
  std::string file;                 // may be empty (an error in a model, not a file)
  std::optional<uint64_t> offset;   // byte offset in the file, when there is one
  std::string field;                // "kv[4] counts.tokens (value)", "tensor[2] x (offset)"
  std::string message;
  // A file that is not GGUF at all: what it is instead and what to do (sniff.h); the
  // message says the same in words.
  std::optional<NotGguf> not_gguf;
  // The system's reason, for callers that type errors by it (Python's FileNotFoundError,
  // PermissionError, IsADirectoryError): errno as throw_io found it, EISDIR for a folder
  // given as a file; 0 when the error is not the system's.
  int sys_errno = 0;

  int exit_code() const { return static_cast<int>(kind); }

  // The same error (its errno and what the file is instead kept) with `note` added to its
  // message, and `file` as its file when it names none: what a step that adds context throws.
  Error with_note(const std::string& note, const std::string& file = "") const;

  // "FILE: at byte N, FIELD: MESSAGE", made from the fields as they stand when asked: a
  // caller that sets the offset or field after the error is made changes the message too.
  const char* what() const noexcept override;

 private:
  mutable std::string what_;
};

// Shorthands for errors that have no byte offset.
[[noreturn]] void throw_usage(const std::string& message);
[[noreturn]] void throw_io(const std::string& file, const std::string& message);  // adds errno text

// A message names a request's field that would let it through, or that it is about, as
// `force` (backquoted): never a command-line flag, which a Python user has not got. Each
// front end words them its own way: `word` is given each such name (force, allow_broken,
// in_place, ...) and returns its text (--force, force=True); other text is kept.
std::string reworded(std::string_view text, const std::function<std::string(std::string_view name)>& word);

// A piece of input as a message quotes it: whole when it is at most `max` bytes, else its
// first and last bytes around "..." with its length, "12345678901234...67890 (100000 bytes)",
// so that a value of a million digits or a name of 200 MB costs a line, not the input again.
std::string clipped(std::string_view text, size_t max = 48);

}  // namespace ggufkit
