#pragma once
// Values between the library and Python: a metadata value as Python reads it, and Python
// values as the text (YAML flow, which JSON is) the library's patch and sketch readers and
// its JSON conversation reader take, so that a value from Python is typed exactly as the
// same value on the command line or in a patch file.
#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "ggufkit/model.h"

namespace ggufkit::python {

namespace py = pybind11;

// int for integers, float for f32/f64 (an f32 as the float of its shortest decimal text, as
// `meta --json` prints it, so 1e-05 == value), bool (a bool byte other than 0 or 1 as its
// int), str (bytes when not UTF-8), list for arrays (nested).
py::object to_python(const Value& v);

// A Python value as YAML flow text: None, bool, int, float (nan, inf, -inf), str (quoted: a
// string, never a number), bytes ({hex: ...}), list or tuple, dict with str keys, a 1-d
// numpy array (the list of its elements), and what sketch_arrays puts in. Anything
// else, a str that is not UTF-8 (a lone surrogate), or nesting past 64 levels is a usage
// Error naming `what`.
std::string to_text(const py::handle& value, const std::string& what);

// The bytes of a sketch's numpy tensors, for the library to read as a file: an anonymous
// file in memory (memfd), which the sketch names /proc/self/fd/N in a tensor's from:, made
// when first asked for and closed when this goes. (A sketch's text is capped at 64 MiB; a
// tensor's data is not.)
class ArrayBytes {
 public:
  ArrayBytes() = default;
  ArrayBytes(const ArrayBytes&) = delete;
  ArrayBytes& operator=(const ArrayBytes&) = delete;
  ~ArrayBytes();
  void append(const void* data, size_t n);  // lets the GIL go while it copies
  uint64_t size() const { return size_; }
  std::string path();

 private:
  int fd();
  int fd_ = -1;
  uint64_t size_ = 0;
};

// A sketch dict with its numpy arrays (anything with __array_interface__; numpy itself is
// never imported) made explicit, in a copy: a metadata entry's `value` array gets type
// array and items from its dtype; a tensor's `values` array gets type from its dtype and
// dims from its shape (reversed: ggml's innermost first), and its data goes into `bytes`
// (from:) when the type is the dtype's or one the library encodes numbers to. Entries that
// give type, items or dims keep them. A dtype with no GGUF type, a strided view, a 0-d
// array, a tensor of more than 4 dims, a metadata array of more than one dim are usage
// Errors naming the entry ("tensors[2] w: ..."). `bytes` must outlive the sketch's use.
py::object sketch_arrays(const py::object& sketch, ArrayBytes& bytes);

// A str, bytes or os.PathLike as a path (os.fspath); a usage Error naming `what` otherwise,
// or when it holds a NUL byte (the system would cut the name there).
std::string to_path(const py::handle& value, const char* what);

// Text from a file or the library as a str with nothing lost: bytes that are not UTF-8
// become surrogate escapes, as os.fsdecode makes them, and name_arg turns them back. For
// keys, tensor names, fields, paths and rendered prompts, which a caller may give back.
py::str text_str(std::string_view s);
// Text for people (an error's message): bytes that are not UTF-8 shown as \xNN.
py::str message_str(std::string_view s);
// A key or name given by Python: a str, surrogate escapes back to their bytes; a usage
// Error naming `what` for anything else (a bytes key is not silently its repr).
std::string name_arg(const py::handle& value, const std::string& what);
// The same bytes, or nothing for what is not a str or not UTF-8 (a lookup's "not there").
std::optional<std::string> name_bytes(const py::handle& value);

}  // namespace ggufkit::python
