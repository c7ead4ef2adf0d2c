#include "convert.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <utility>
#include <charconv>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "ggufkit/encode.h"
#include "ggufkit/error.h"
#include "ggufkit/format.h"
#include "ggufkit/numeric.h"
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

// ---- numpy arrays ----------------------------------------------------------------------

// An array as numpy's __array_interface__ describes it: found and read without importing
// numpy (which need not be installed), from numpy or any library that speaks the protocol.
struct ArrayArg {
  char kind = 0;     // 'f' float, 'i' signed, 'u' unsigned, 'b' bool
  size_t width = 0;  // bytes an element
  bool big = false;  // the elements' byte order
  std::vector<uint64_t> shape;
  uint64_t count = 1;
  const uint8_t* data = nullptr;
  std::string dtype;                   // numpy's name of it, for messages
  std::shared_ptr<Py_buffer> buffer;  // the export `data` is read through, released with the GIL
};

bool is_array(const py::handle& o) { return PyObject_HasAttrString(o.ptr(), "__array_interface__") == 1; }

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// The array behind `o`; a usage Error naming `what` for a dtype with no GGUF type (complex,
// object, datetime, str, structured, float128) and for a strided view, whose bytes are not
// its elements in order. The dtype comes from __array_interface__; the memory, its shape
// and its length from the buffer protocol, whose export the array holds while it lives (a
// numpy array cannot be resized or freed under it, and no pointer a foreign object claims
// is read).
ArrayArg array_arg(const py::handle& o, const std::string& what) {
  ArrayArg a;
  const py::dict ai = o.attr("__array_interface__");
  const std::string ts = py::str(ai["typestr"]);
  const py::object dt = py::getattr(o, "dtype", py::none());
  a.dtype = dt.is_none() ? ts : std::string(py::str(dt));
  if (ts.size() >= 3) {
    a.kind = ts[1];
    std::from_chars(ts.data() + 2, ts.data() + ts.size(), a.width);
  }
  const size_t w = a.width;
  const bool known = (a.kind == 'f' && (w == 2 || w == 4 || w == 8)) ||
                     ((a.kind == 'i' || a.kind == 'u') && (w == 1 || w == 2 || w == 4 || w == 8)) || (a.kind == 'b' && w == 1);
  if (!known)
    throw_usage(what + ": a numpy array of " + a.dtype + " has no GGUF type (float16, float32, float64, int8-int64, uint8-uint64, bool)");
  a.big = ts[0] == '>' || (ts[0] == '=' && PY_BIG_ENDIAN);
  auto view = std::shared_ptr<Py_buffer>(new Py_buffer{}, [](Py_buffer* b) {
    if (b->obj) {
      py::gil_scoped_acquire gil;
      PyBuffer_Release(b);
    }
    delete b;
  });
  if (PyObject_GetBuffer(o.ptr(), view.get(), PyBUF_C_CONTIGUOUS) != 0) {
    PyErr_Clear();
    throw_usage(what + ": the numpy array is not contiguous (a slice with a step, or a transpose): give numpy.ascontiguousarray(x)");
  }
  if (static_cast<size_t>(view->itemsize) != w || view->ndim < 0 || (view->ndim > 0 && !view->shape))
    throw_usage(what + ": the array's memory does not hold its " + a.dtype + " elements");
  for (int i = 0; i < view->ndim; ++i) {
    const auto d = static_cast<uint64_t>(view->shape[i]);
    if (d != 0 && a.count > UINT64_MAX / d) throw_usage(what + ": the array's shape holds more elements than can be counted");
    a.shape.push_back(d);
    a.count *= d;
  }
  if (a.count > UINT64_MAX / w || a.count * w != static_cast<uint64_t>(view->len))
    throw_usage(what + ": the array's memory (" + std::to_string(view->len) + " bytes) does not hold its " + std::to_string(a.count) +
                " elements");
  a.data = static_cast<const uint8_t*>(view->buf);
  a.buffer = std::move(view);
  return a;
}

[[noreturn]] void refuse_0d(const std::string& what) {
  throw_usage(what + ": a 0-d numpy array (a numpy scalar): give x.item() for one value, or an array of one dimension or more");
}

// Element i's bits, as a number in this machine's order.
uint64_t element_bits(const ArrayArg& a, uint64_t i) {
  const uint8_t* p = a.data + i * a.width;
  uint64_t v = 0;
  for (size_t b = 0; b < a.width; ++b) v |= static_cast<uint64_t>(p[b]) << (8 * (a.big ? a.width - 1 - b : b));
  return v;
}

// A float element's value (float16 and float32 widened exactly).
double float_value(const ArrayArg& a, uint64_t bits) {
  if (a.width == 2) return f16_to_f32(static_cast<uint16_t>(bits));
  if (a.width == 4) {
    float f;
    const auto u = static_cast<uint32_t>(bits);
    std::memcpy(&f, &u, 4);
    return f;
  }
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

// Any element's value as a double (what the library's encoder takes).
double element_value(const ArrayArg& a, uint64_t i) {
  const uint64_t v = element_bits(a, i);
  if (a.kind == 'f') return float_value(a, v);
  if (a.kind != 'i') return static_cast<double>(v);
  const int shift = static_cast<int>(64 - 8 * a.width);
  return static_cast<double>(static_cast<int64_t>(v << shift) >> shift);
}

// Element i as the sketch reads a number: what the same value in a Python list gives
// (a float keeps a ".0", so that an integer type refuses it as it refuses 1.0). A NaN is
// {bits: N} when `nan_bits` (the element type is the array's own, so its payload is kept).
void element_text(const ArrayArg& a, uint64_t i, bool nan_bits, std::string& out) {
  const uint64_t v = element_bits(a, i);
  char buf[64];
  std::to_chars_result r{buf, std::errc()};
  if (a.kind == 'b' && v <= 1) {
    out += v ? "true" : "false";
    return;
  }
  if (a.kind == 'i') {
    const int shift = static_cast<int>(64 - 8 * a.width);
    r = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(v << shift) >> shift);
  } else if (a.kind != 'f') {
    r = std::to_chars(buf, buf + sizeof buf, v);  // unsigned, or a bool byte other than 0 or 1
  } else {
    const double d = float_value(a, v);
    if (std::isnan(d)) {
      out += nan_bits ? "{\"bits\": " + std::to_string(v) + "}" : std::string("nan");
      return;
    }
    if (std::isinf(d)) {
      out += d < 0 ? "-inf" : "inf";
      return;
    }
    r = std::to_chars(buf, buf + sizeof buf, d);  // the shortest text that reads back the same
    if (std::string_view(buf, static_cast<size_t>(r.ptr - buf)).find_first_of(".e") == std::string_view::npos) {
      *r.ptr++ = '.';
      *r.ptr++ = '0';
    }
  }
  out.append(buf, r.ptr);
}

void list_text(const ArrayArg& a, bool nan_bits, std::string& out) {
  out += '[';
  for (uint64_t i = 0; i < a.count; ++i) {
    if (i) out += ", ";
    element_text(a, i, nan_bits, out);
  }
  out += ']';
}

// What sketch_arrays puts in a sketch in place of a metadata array or a tensor's values
// that go as a list: the array, which to_text writes as the flat list of its elements,
// held by a capsule no caller's value can be.
struct ArrayText {
  ArrayArg a;
  bool nan_bits = false;
};
constexpr const char* kArrayText = "ggufkit.array_text";

py::object array_text(ArrayText t) {
  return py::capsule(new ArrayText(std::move(t)), kArrayText,
                     [](PyObject* c) { delete static_cast<ArrayText*>(PyCapsule_GetPointer(c, kArrayText)); });
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
  } else if (PyCapsule_IsValid(o.ptr(), kArrayText)) {
    const auto* t = static_cast<const ArrayText*>(PyCapsule_GetPointer(o.ptr(), kArrayText));
    list_text(t->a, t->nan_bits, out);
  } else if (is_array(o)) {  // a value elsewhere (edit's set=): a 1-d array is the list of its elements
    const ArrayArg a = array_arg(o, what);
    if (a.shape.empty()) refuse_0d(what);
    if (a.shape.size() != 1) throw_usage(what + ": a numpy array of shape " + shape_text(a.shape) + " here: give a 1-d array (or a list)");
    list_text(a, false, out);
  } else {
    throw_usage(what + ": cannot be given a " + py::str(py::type::of(o).attr("__name__")).cast<std::string>() +
                " (None, bool, int, float, str, bytes, list, tuple, dict or a numpy array)");
  }
  return height;
}

}  // namespace

std::string to_text(const py::handle& value, const std::string& what) {
  std::string out;
  emit(value, what, 0, out);
  return out;
}

namespace {

// Element types of the array's own dtype: a metadata array's items and a tensor's type
// ("" when GGUF or ggml has none: float16 metadata; unsigned and bool tensors).
std::string metadata_type(const ArrayArg& a) {
  if (a.kind == 'b') return "bool";
  if (a.kind == 'f') return a.width == 2 ? "" : "f" + std::to_string(8 * a.width);
  return std::string(1, a.kind) + std::to_string(8 * a.width);
}
std::string tensor_type(const ArrayArg& a) {
  if (a.kind == 'f') return "f" + std::to_string(8 * a.width);
  return a.kind == 'i' ? "i" + std::to_string(8 * a.width) : "";
}

py::dict copy_dict(const py::dict& d) {
  PyObject* c = PyDict_Copy(d.ptr());
  if (!c) throw py::error_already_set();
  return py::reinterpret_steal<py::dict>(c);
}

// A str field of an entry, or "" when it has none (or one that is not a str).
std::string str_field(const py::dict& e, const char* name) {
  if (!e.contains(name)) return "";
  const py::object v = e[name];
  return PyUnicode_Check(v.ptr()) ? name_bytes(v).value_or("") : "";
}

// - {key: K, value: ARRAY}: type array, items from the dtype unless given.
py::object metadata_entry(const py::dict& e, const std::string& at) {
  const ArrayArg a = array_arg(e["value"], at);
  if (a.shape.empty()) refuse_0d(at);
  if (a.shape.size() != 1)
    throw_usage(at + ": a metadata array is flat, and this numpy array has shape " + shape_text(a.shape) + ": give x.reshape(-1)");
  py::dict c = copy_dict(e);
  const std::string type = e.contains("type") ? str_field(e, "type") : "array";
  if (type != "array") throw_usage(at + ": type " + type + " takes one value, not a numpy array: give type array, or x.item()");
  c["type"] = "array";
  std::string items = str_field(e, "items");
  if (!e.contains("items")) {
    items = metadata_type(a);
    if (items.empty()) throw_usage(at + ": a numpy array of " + a.dtype + " has no GGUF metadata type: give items (f32, f64), or x.astype(numpy.float32)");
    c["items"] = items;
  }
  c["value"] = array_text({a, items == metadata_type(a)});
  return c;
}

// dims given beside an array: a list or tuple of ints (numpy's too), as a list of Python ints
// and the elements it holds; a usage Error naming `at` for anything else, since the bytes
// taken for the tensor are its dims' worth.
std::pair<py::list, uint64_t> given_dims(const py::object& dims, const std::string& at) {
  const auto refuse = [&] { throw_usage(at + ": dims " + repr_text(dims) + ": expected a list of ints (innermost first)"); };
  if (!PyList_Check(dims.ptr()) && !PyTuple_Check(dims.ptr())) refuse();
  py::list out;
  uint64_t n = 1;
  for (const py::handle d : dims) {
    if (PyBool_Check(d.ptr())) refuse();
    py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(d.ptr()));  // int, numpy.int64, ...
    if (!i) {
      PyErr_Clear();
      refuse();
    }
    const unsigned long long x = PyLong_AsUnsignedLongLong(i.ptr());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      refuse();
    }
    if (x != 0 && n > UINT64_MAX / x) refuse();
    n *= x;
    out.append(i);
  }
  return {out, n};
}

// The array's bytes with each element in the file's byte order.
void append_raw(ArrayBytes& out, const ArrayArg& a, bool big_file) {
  const size_t n = a.count * a.width;
  if (a.width == 1 || a.big == big_file) return out.append(a.data, n);
  std::vector<uint8_t> buf(std::min<size_t>(n, 1 << 20));  // a whole number of elements
  for (size_t at = 0; at < n; at += buf.size()) {
    const size_t m = std::min(buf.size(), n - at);
    for (size_t i = 0; i < m; ++i) buf[i] = a.data[at + i - i % a.width + (a.width - 1 - i % a.width)];
    out.append(buf.data(), m);
  }
}

// The array's elements encoded to `type` by the library's encoder, a piece at a time: the
// bytes a values list of the same numbers gives.
void append_encoded(ArrayBytes& out, const ArrayArg& a, const GgmlType& type, bool big_file) {
  const uint64_t piece = uint64_t{type.block} * 8192;
  std::vector<double> values;
  std::vector<uint8_t> bytes;
  for (uint64_t at = 0; at < a.count; at += piece) {
    const uint64_t n = std::min(piece, a.count - at);
    values.resize(n);
    for (uint64_t i = 0; i < n; ++i) values[i] = element_value(a, at + i);
    bytes.resize(n / type.block * type.size);
    encode(type, values.data(), n, bytes.data(), big_file);
    out.append(bytes.data(), bytes.size());
  }
}

// - {name: N, values: ARRAY}: type from the dtype and dims from the shape unless given. Its
// data goes to the library as bytes (from: the arrays' file) when the type is its dtype's,
// or one the library encodes numbers to (f16, bf16, q8_0, ...: encoded here as a values
// list would be); else as a values list (integer types, whose range the library checks).
py::object tensor_entry(const py::dict& e, const std::string& at, bool big_file, ArrayBytes& bytes) {
  const ArrayArg a = array_arg(e["values"], at);
  if (a.shape.empty()) refuse_0d(at);
  if (a.shape.size() > 4) throw_usage(at + ": a numpy array of shape " + shape_text(a.shape) + " has " + std::to_string(a.shape.size()) + " dims; ggml allows 4");
  py::dict c = copy_dict(e);
  const std::string own = tensor_type(a);
  if (!e.contains("type")) {
    if (own.empty())
      throw_usage(at + ": a numpy array of " + a.dtype + " has no ggml type of its own (float16, float32, float64, int8-int64): give type (f32, bf16, q8_0, ...)");
    c["type"] = own;
  }
  if (!e.contains("dims")) {
    py::list dims;
    for (size_t i = a.shape.size(); i-- > 0;) dims.append(a.shape[i]);  // ggml's order: innermost first
    c["dims"] = dims;
  } else {
    // dims of its own (a flat array as a matrix) must hold its elements exactly: the
    // tensor's bytes are its dims' worth, taken from the arrays' shared store.
    auto [dims, n] = given_dims(e["dims"], at);
    if (n != a.count)
      throw_usage(at + ": dims " + repr_text(e["dims"]) + " hold " + std::to_string(n) + " elements; the numpy array has " +
                  std::to_string(a.count));
    c["dims"] = dims;
  }
  const std::string type = str_field(c, "type");
  const GgmlType* gt = type.empty() ? nullptr : ggml_type_by_name(type);
  const bool other = e.contains("fill") || e.contains("bytes") || e.contains("from");  // the library says to give one
  const bool raw = gt && !own.empty() && gt == ggml_type_by_name(own);
  const bool encoded = gt && !raw && can_encode(*gt) && !(gt->block == 1 && gt->name[0] == 'i') && !(big_file && gt->block > 1) && a.count % gt->block == 0;
  if (other || (!raw && !encoded)) {
    c["values"] = array_text({a, false});
    return c;
  }
  const uint64_t offset = bytes.size();
  if (raw) append_raw(bytes, a, big_file);
  else append_encoded(bytes, a, *gt, big_file);
  PyDict_DelItemString(c.ptr(), "values");
  py::dict from;
  from["file"] = bytes.path();
  from["offset"] = offset;
  c["from"] = from;
  return c;
}

}  // namespace

ArrayBytes::~ArrayBytes() {
  if (fd_ >= 0) ::close(fd_);
}

int ArrayBytes::fd() {
  if (fd_ < 0) fd_ = ::memfd_create("ggufkit-arrays", MFD_CLOEXEC);
  if (fd_ < 0) throw_io("memfd", "cannot make a file in memory for the arrays' bytes");
  return fd_;
}

std::string ArrayBytes::path() { return "/proc/self/fd/" + std::to_string(fd()); }

void ArrayBytes::append(const void* data, size_t n) {
  const int to = fd();
  py::gil_scoped_release nogil;  // a copy as long as the arrays: other threads run meanwhile
  for (auto p = static_cast<const char*>(data); n > 0;) {
    const ssize_t w = ::write(to, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) throw_io(path(), "cannot hold the arrays' bytes in memory");
    p += w;
    n -= static_cast<size_t>(w);
    size_ += static_cast<uint64_t>(w);
  }
}

py::object sketch_arrays(const py::object& sketch, ArrayBytes& bytes) {
  if (!PyDict_Check(sketch.ptr())) return sketch;
  const py::dict s = py::reinterpret_borrow<py::dict>(sketch);
  const bool big_file = str_field(s, "byte_order") == "big";
  py::dict out = copy_dict(s);
  // Each list of entries copied, an entry given an array replaced by a copy made explicit:
  // the caller's dicts are left as they were.
  auto entries = [&](const char* list, const char* name_key, const char* array_key, auto&& fix) {
    if (!s.contains(list) || !PyList_Check(py::object(s[list]).ptr())) return;
    // A copy to walk: the GIL is let go while an array's bytes are copied.
    const auto given = py::reinterpret_steal<py::list>(PySequence_List(py::object(s[list]).ptr()));
    if (!given) throw py::error_already_set();
    py::list copy;
    size_t i = 0;
    for (const py::handle e : given) {
      if (PyDict_Check(e.ptr())) {
        const py::dict d = py::reinterpret_borrow<py::dict>(e);
        if (d.contains(array_key) && is_array(d[array_key])) {
          const std::string name = str_field(d, name_key);
          copy.append(fix(d, std::string(list) + "[" + std::to_string(i++) + "]" + (name.empty() ? "" : " " + name)));
          continue;
        }
      }
      copy.append(e);
      ++i;
    }
    out[list] = copy;
  };
  entries("metadata", "key", "value", [&](const py::dict& e, const std::string& at) { return metadata_entry(e, at); });
  entries("tensors", "name", "values", [&](const py::dict& e, const std::string& at) { return tensor_entry(e, at, big_file, bytes); });
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
