// The module's shared pieces (common.h).
#include "common.h"

#include <cerrno>

#include <pybind11/stl.h>

#include "convert.h"
#include "ggufkit/edit.h"
#include "ggufkit/vocab.h"

namespace ggufkit::python {

namespace {
const char* kind_name(Error::Kind k) { return k == Error::Kind::format ? "format" : k == Error::Kind::usage ? "usage" : "io"; }
}  // namespace

PyObject* g_error = nullptr;  // ggufkit.Error, a ValueError




// A library message as Python says it: the request fields it names (`force`) as the
// keyword arguments that set them (force=True).
std::string py_words(std::string_view text) {
  return reworded(text, [](std::string_view name) {
    if (name == "per_file") return std::string("manifest=True");
    if (name == "rename_tensor" || name == "remove_tensor") return std::string(name) + "s";  // the keywords' names
    for (const char* flag : {"force", "allow_broken", "in_place", "discard", "file", "tensors"})
      if (name == flag) return std::string(name) + "=True";
    return std::string(name);
  });
}

// Raises ggufkit.Error with the command's message and where: file, offset, field, code
// (a refusing rule's code, else the error's kind: format, usage, io), findings. An error
// the system gave (a missing file, a folder, no permission, a full disk) is Python's own
// OSError for its errno instead (FileNotFoundError, IsADirectoryError, PermissionError,
// ...: OSError(errno, ...) picks the subclass), with .filename and the same attributes.
void raise_error(const Error& library) {
  // what() is made from the fields as they stand (a refused edit names its field and
  // offset after it is made), as the command prints it, in Python's words.
  const Error e(library.kind, library.file, library.offset, py_words(library.field), py_words(library.message));
  const bool system = library.sys_errno != 0;
  py::object err = system ? py::reinterpret_borrow<py::object>(PyExc_OSError)(
                                library.sys_errno, message_str(e.message),
                                e.file.empty() ? py::object(py::none()) : py::object(text_str(e.file)))
                          : py::reinterpret_borrow<py::object>(g_error)(message_str(e.what()));
  err.attr("file") = e.file.empty() ? py::object(py::none()) : py::object(text_str(e.file));
  err.attr("offset") = e.offset ? py::object(py::int_(*e.offset)) : py::object(py::none());
  err.attr("field") = text_str(e.field);
  err.attr("kind") = py::str(kind_name(e.kind));
  // As the command's exit status: an input the caller named that is not there is a usage
  // error (2), like a bad value; every path a Python caller gives is one it named.
  const bool missing_input = (library.sys_errno == ENOENT || library.sys_errno == ENOTDIR) &&
                             e.message.rfind("cannot open for reading", 0) == 0;
  err.attr("exit_code") = py::int_(missing_input ? 2 : e.exit_code());
  err.attr("message") = message_str(e.message);
  py::list findings;
  std::string code = kind_name(e.kind);
  if (const auto* r = dynamic_cast<const EditRefused*>(&library)) {
    for (const Finding& f : r->findings) {
      if (f.severity == Severity::error && code == kind_name(e.kind)) code = code_name(f.code);
      findings.append(finding_object(f, e.file));
    }
    if (r->reason == EditRefused::Reason::template_syntax && code == kind_name(e.kind)) code = "template_syntax";
    if (r->reason == EditRefused::Reason::header_only || r->reason == EditRefused::Reason::header_only_every_shard) code = "header_only";
    if (r->reason == EditRefused::Reason::content_store) code = "content_store";
  }
  err.attr("code") = py::str(code);
  err.attr("findings") = findings;
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(err.ptr())), err.ptr());
}

// ---- records ------------------------------------------------------------------------


py::object finding_object(const Finding& f, const std::string& file) {
  return py::cast(FindingRecord{file, std::string(code_name(f.code)), std::string(severity_name(f.severity)), f.place.name, f.place.item,
                                f.message, f.fix, f.offset, f.ids});
}

py::dict file_dict(const WrittenFile& f) {
  py::dict d;
  d["path"] = text_str(f.path);
  d["file_size"] = f.file_size;
  d["data_offset"] = f.data_offset;
  d["tensors"] = f.tensors;
  d["keys"] = f.keys;
  d["tensors_verified"] = f.tensors_verified;
  d["bytes_verified"] = f.bytes_verified;
  return d;
}

py::list findings_list(const std::vector<Finding>& fs, const std::string& file) {
  py::list out;
  for (const Finding& f : fs) out.append(finding_object(f, file));
  return out;
}


// A Mapping that is not a dict (a MappingProxyType, a KeyMap) as a dict; anything else as it is.
py::object as_dict(const py::object& o) {
  if (o.is_none() || PyDict_Check(o.ptr())) return o;
  if (py::isinstance(o, py::module_::import("collections.abc").attr("Mapping"))) return py::dict(o);
  return o;
}


std::shared_ptr<const tokenizer::Vocab> vocab_of(const std::string& file, const Model& m) {
  try {
    std::optional<tokenizer::Vocab> v = load_vocab(m, file);
    if (!v) throw Error(Error::Kind::format, file, std::nullopt, "tokenizer.ggml.model", "the file has no vocabulary to tokenize with");
    return std::make_shared<const tokenizer::Vocab>(std::move(*v));
  } catch (const tokenizer::Error& e) {
    throw Error(Error::Kind::format, file, std::nullopt, e.key, e.what());
  }
}

std::vector<int32_t> tokenize_with(const std::string& file, const tokenizer::Vocab& v, const std::string& text, bool add_special,
                                   bool parse_special) {
  try {
    return v.tokenize(text, add_special, parse_special);
  } catch (const tokenizer::Error& e) {
    throw Error(Error::Kind::format, file, std::nullopt, e.key, e.what());
  }
}

std::string text_arg(const py::handle& text) {
  if (PyBytes_Check(text.ptr())) return text.cast<std::string>();
  Py_ssize_t n = 0;
  const char* s = PyUnicode_Check(text.ptr()) ? PyUnicode_AsUTF8AndSize(text.ptr(), &n) : nullptr;
  if (!s) {
    PyErr_Clear();
    throw_usage("text: expected a str (UTF-8) or bytes");
  }
  return std::string(s, static_cast<size_t>(n));
}
}  // namespace ggufkit::python
