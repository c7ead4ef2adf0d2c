#include "convert.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "ggufkit/error.h"
#include "ggufkit/format.h"
#include "ggufkit/text.h"

namespace ggufkit::python {

namespace {

py::object string_object(std::string_view s) {
  if (is_valid_utf8(s)) {
    PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "strict");
    if (o) return py::reinterpret_steal<py::object>(o);
    PyErr_Clear();  // what Python's decoder refuses and ours took: bytes, as any other non-UTF-8 text
  }
  return py::bytes(s.data(), s.size());
}

py::object float_object(const Value& v) {
  if (v.type == ValueType::f64) return py::float_(v.as_f64());
  // The f32's shortest text, read as a double: what `meta --json` prints and json.loads reads.
  const std::string t = number_text(v);
  if (t == "nan") return py::float_(std::nan(""));
  if (t == "inf" || t == "-inf") return py::float_(t[0] == '-' ? -HUGE_VAL : HUGE_VAL);
  double d = 0;  // from_chars, not strtod: a caller's locale.setlocale must not make 0.1 read as 0
  std::from_chars(t.data(), t.data() + t.size(), d);
  return py::float_(d);
}

}  // namespace

py::object to_python(const Value& v) {
  switch (v.type) {
    case ValueType::string:
      return string_object(v.str);
    case ValueType::boolean:
      if (v.bits <= 1) return py::bool_(v.bits == 1);
      return py::int_(v.bits);  // a broken bool byte, as the file has it
    case ValueType::f32:
    case ValueType::f64:
      return float_object(v);
    case ValueType::array: {
      py::list out(static_cast<py::ssize_t>(v.size()));
      py::ssize_t i = 0;
      if (v.elem == ValueType::string) {
        for (std::string_view s : v.strs) PyList_SET_ITEM(out.ptr(), i++, string_object(s).release().ptr());
      } else if (v.elem == ValueType::array) {
        for (const Value item : v.items) PyList_SET_ITEM(out.ptr(), i++, to_python(item).release().ptr());
      } else {
        const bool is_signed = v.elem == ValueType::i8 || v.elem == ValueType::i16 || v.elem == ValueType::i32 || v.elem == ValueType::i64;
        const bool plain = !is_float(v.elem) && v.elem != ValueType::boolean;
        for (size_t k = 0, n = v.nums.size(); k < n; ++k) {
          PyObject* o;
          if (plain && is_signed) o = PyLong_FromLongLong(Value::scalar(v.elem, v.nums[k]).as_i64());
          else if (plain) o = PyLong_FromUnsignedLongLong(v.nums[k]);
          else o = to_python(Value::scalar(v.elem, v.nums[k])).release().ptr();
          if (!o) throw py::error_already_set();
          PyList_SET_ITEM(out.ptr(), i++, o);
        }
      }
      return out;
    }
    default:
      if (v.type == ValueType::i8 || v.type == ValueType::i16 || v.type == ValueType::i32 || v.type == ValueType::i64)
        return py::int_(v.as_i64());
      return py::int_(v.bits);
  }
}

namespace {

// An object's repr for a message, its bytes that are not UTF-8 as \xNN.
std::string repr_text(const py::handle& o) {
  py::object r = py::reinterpret_steal<py::object>(PyObject_Repr(o.ptr()));
  if (!r) throw py::error_already_set();
  py::object b = py::reinterpret_steal<py::object>(PyUnicode_AsEncodedString(r.ptr(), "utf-8", "backslashreplace"));
  if (!b) throw py::error_already_set();
  return std::string(PyBytes_AS_STRING(b.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(b.ptr())));
}

// A value's text. A list or dict met again (a list holding one list twice, that one
// another twice, 40 deep, is 2^40 items) is its text written before, copied, not walked
// again; the text so repeated is bounded. The walk asks Python for its signals as it goes
// (Ctrl-C), its GIL held.
constexpr size_t kMaxRepeated = 64 << 20;

struct Walk {
  Walk(const std::string& w, std::string& o) : what(w), out(o) {}
  const std::string& what;
  std::string& out;
  struct Done {
    size_t at, n;  // its text in `out`
    int height;    // how much deeper than it its deepest item lies
  };
  std::unordered_map<PyObject*, Done> done;  // the lists, tuples and dicts written
  std::vector<py::object> keep;              // ... held, so that none is freed and its address reused
  size_t repeated = 0;
  size_t steps = 0;

  int emit(const py::handle& o, int depth);  // returns the height
  int emit_value(const py::handle& o, int depth);
  [[noreturn]] void too_deep() { throw_usage(what + ": nested deeper than 64 levels"); }
};

void emit(const py::handle& o, const std::string& what, int depth, std::string& out) {
  Walk w(what, out);
  w.emit(o, depth);
}

int Walk::emit(const py::handle& o, int depth) {
  if (++steps % 65536 == 0 && PyErr_CheckSignals() != 0) throw py::error_already_set();
  if (depth > 64) too_deep();
  const bool container = PyList_Check(o.ptr()) || PyTuple_Check(o.ptr()) || PyDict_Check(o.ptr());
  if (!container) return emit_value(o, depth);
  if (auto it = done.find(o.ptr()); it != done.end()) {
    const Done d = it->second;
    if (depth + d.height > 64) too_deep();
    if (d.n > kMaxRepeated - repeated)
      throw_usage(what + ": a list or dict that is in it many times over (a list holding one list twice, that one "
                         "another twice, ...) makes more than " + std::to_string(kMaxRepeated >> 20) +
                  " MiB of repeated text; give a value that repeats less");
    repeated += d.n;
    out.reserve(out.size() + d.n);  // no reallocation while it copies from itself
    out.append(out.data() + d.at, d.n);
    return d.height;
  }
  keep.push_back(py::reinterpret_borrow<py::object>(o));
  const size_t at = out.size();
  const int height = emit_value(o, depth);  // one that holds itself is walked again, to the depth bound
  done.emplace(o.ptr(), Done{at, out.size() - at, height});
  return height;
}

int Walk::emit_value(const py::handle& o, int depth) {
  int height = 0;  // a list's or dict's: 1 + its deepest item's
  auto item = [&](const py::handle& x) { height = std::max(height, 1 + emit(x, depth + 1)); };
  if (o.is_none()) {
    out += "null";
  } else if (PyBool_Check(o.ptr())) {
    out += o.ptr() == Py_True ? "true" : "false";
  } else if (PyLong_Check(o.ptr())) {
    // The number's digits, never a subclass's own __str__ (an IntEnum's name, or text
    // that would put YAML of its choosing in the patch).
    py::object exact = py::reinterpret_steal<py::object>(PyNumber_Long(o.ptr()));
    if (!exact) throw py::error_already_set();
    out += py::reinterpret_steal<py::str>(PyLong_Type.tp_repr(exact.ptr())).cast<std::string>();
  } else if (PyFloat_Check(o.ptr())) {
    const double d = PyFloat_AsDouble(o.ptr());
    if (std::isnan(d)) out += "nan";
    else if (std::isinf(d)) out += d < 0 ? "-inf" : "inf";
    else {  // the shortest text that reads back the same, as float's repr (not a subclass's)
      char* t = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, nullptr);
      if (!t) throw py::error_already_set();
      out += t;
      PyMem_Free(t);
    }
  } else if (PyUnicode_Check(o.ptr())) {
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(o.ptr(), &n);
    if (!s) {
      PyErr_Clear();
      throw_usage(what + ": a str that is not UTF-8 (a lone surrogate); give bytes for bytes");
    }
    out += json_string(std::string_view(s, static_cast<size_t>(n)));
  } else if (PyBytes_Check(o.ptr()) || PyByteArray_Check(o.ptr())) {
    const bool b = PyBytes_Check(o.ptr());
    const std::string_view v(b ? PyBytes_AS_STRING(o.ptr()) : PyByteArray_AS_STRING(o.ptr()),
                             static_cast<size_t>(b ? PyBytes_GET_SIZE(o.ptr()) : PyByteArray_GET_SIZE(o.ptr())));
    out += "{\"hex\": \"" + hex_text(v) + "\"}";
  } else if (PyList_Check(o.ptr()) || PyTuple_Check(o.ptr())) {
    out += '[';
    bool first = true;
    for (const py::handle x : o) {
      if (!first) out += ", ";
      first = false;
      item(x);
    }
    out += ']';
  } else if (PyDict_Check(o.ptr())) {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(o)) {
      if (!PyUnicode_Check(k.ptr())) throw_usage(what + ": a dict key that is not a str: " + repr_text(k));
      if (!first) out += ", ";
      first = false;
      item(k);
      out += ": ";
      item(v);
    }
    out += '}';
  } else {
    throw_usage(what + ": cannot be given a " + py::str(py::type::of(o).attr("__name__")).cast<std::string>() +
                " (None, bool, int, float, str, bytes, list, tuple or dict)");
  }
  return height;
}

}  // namespace

std::string to_text(const py::handle& value, const std::string& what) {
  std::string out;
  emit(value, what, 0, out);
  return out;
}

std::string to_path(const py::handle& value, const char* what) {
  if (!PyUnicode_Check(value.ptr()) && !PyBytes_Check(value.ptr()) && !PyObject_HasAttrString(value.ptr(), "__fspath__"))
    throw_usage(std::string(what) + ": expected a path (str, bytes or os.PathLike), got " +
                py::str(py::type::of(value).attr("__name__")).cast<std::string>());
  // os.fsencode: the name's bytes as given, a name that is not UTF-8 included.
  const std::string path = py::bytes(py::module_::import("os").attr("fsencode")(value)).cast<std::string>();
  if (path.find('\0') != std::string::npos) throw_usage(std::string(what) + ": a path with a NUL byte");
  return path;
}

py::str text_str(std::string_view s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

py::str message_str(std::string_view s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "backslashreplace");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

std::optional<std::string> name_bytes(const py::handle& value) {
  if (!PyUnicode_Check(value.ptr())) return std::nullopt;
  PyObject* b = PyUnicode_AsEncodedString(value.ptr(), "utf-8", "surrogateescape");
  if (!b) {
    PyErr_Clear();
    return std::nullopt;
  }
  std::string out(PyBytes_AS_STRING(b), static_cast<size_t>(PyBytes_GET_SIZE(b)));
  Py_DECREF(b);
  return out;
}

std::string name_arg(const py::handle& value, const std::string& what) {
  if (!PyUnicode_Check(value.ptr()))
    throw_usage(what + ": expected a str, got " + py::str(py::type::of(value).attr("__name__")).cast<std::string>());
  std::optional<std::string> out = name_bytes(value);
  if (!out) throw_usage(what + ": a str that is not UTF-8 (a lone surrogate)");
  return std::move(*out);
}

}  // namespace ggufkit::python
