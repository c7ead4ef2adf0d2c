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
// string, never a number), bytes ({hex: ...}), list or tuple, dict with str keys. Anything
// else, a str that is not UTF-8 (a lone surrogate), or nesting past 64 levels is a usage
// Error naming `what`.
std::string to_text(const py::handle& value, const std::string& what);

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
