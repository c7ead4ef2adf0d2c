// `import ggufkit`: the library's front door for Python. Every function fills the request
// the command fills and calls the same entry point (edit, write_sketch, validate, replica,
// ...), with the GIL released while the library works; this file only converts.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <locale.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "convert.h"
#include "ggufkit/check.h"
#include "ggufkit/dialect.h"
#include "ggufkit/corrupt.h"
#include "ggufkit/edit.h"
#include "ggufkit/error.h"
#include "ggufkit/fault.h"
#include "ggufkit/fixture.h"
#include "ggufkit/inspect.h"
#include "ggufkit/numeric.h"
#include "ggufkit/prompt.h"
#include "ggufkit/shards.h"
#include "ggufkit/vocab.h"

namespace py = pybind11;

namespace ggufkit::python {

namespace {

// For the module's tests: a Ctrl-C (PyErr_SetInterrupt, as Python's handler notes one) at
// the library's fault point `point`, once: a stop at an exact step of a write, not a race.
std::atomic<const char*> g_interrupt_at{nullptr};
int interrupt_hook(const char* point, const FaultSite&) {
  const char* at = g_interrupt_at.load();
  if (at && std::strcmp(at, point) == 0 && g_interrupt_at.compare_exchange_strong(at, nullptr)) PyErr_SetInterrupt();
  return 0;
}

// ---- records ------------------------------------------------------------------------

struct TensorRecord {
  std::string name, type;
  std::vector<uint64_t> dims;
  uint64_t offset = 0, nbytes = 0;
  std::optional<uint32_t> shard;  // a set's: the tensor's shard, from 1
};

struct SpanRecord {
  std::string kind, field;
  uint64_t offset = 0, size = 0;
};

// ---- an open file -----------------------------------------------------------------------

// What an open file holds: the model its header describes (copied into memory when read:
// nothing another process writes later shows in it) and its indexes, made at open so that
// no call builds them with the GIL let go. What changes after open (the vocabulary, and
// the model's cache of the pairs the library made while loading it) changes only with the
// GIL held; calls that let it go read only the tensors and the vocabulary.
struct Opened {
  std::string path, where;  // as given; made absolute, for the calls that read the file again
  bool shard_only = false;
  ModelView view;
  std::vector<uint64_t> by_key, by_name;
  std::shared_ptr<const tokenizer::Vocab> vocab;  // loaded by the first tokenize
  const Model& model() const { return view.s.model; }
};

// A File and its mappings share one State. Every call takes its own reference to the
// Opened, with the GIL held, before it lets the GIL go: close() on another thread drops
// the File's reference, never the one a running call works on.
struct State {
  std::shared_ptr<Opened> open;  // null once closed
  std::shared_ptr<Opened> get() const {
    if (!open) throw py::value_error("I/O operation on a closed ggufkit.File");
    return open;
  }
};

// KeyError(key), the key itself as dict's has it (not a text made of it).
[[noreturn]] void key_error(const py::handle& key) {
  PyErr_SetObject(PyExc_KeyError, py::make_tuple(key).ptr());
  throw py::error_already_set();
}

// f.metadata (values) and f.types (type names): read-only mappings in file order, each
// value made from the header when it is asked for.
class KeyMap {
 public:
  KeyMap(std::shared_ptr<State> st, bool types) : st_(std::move(st)), types_(types) {}
  size_t size() const { return st_->get()->model().metadata.size(); }
  py::object get(const py::handle& key) const {
    auto o = st_->get();
    auto i = index(*o, key);
    if (!i) key_error(key);
    return item(*o, *i);
  }
  py::object get_or(const py::handle& key, py::object dflt) const {
    auto o = st_->get();
    auto i = index(*o, key);
    return i ? item(*o, *i) : dflt;
  }
  bool contains(const py::handle& key) const { return index(*st_->get(), key).has_value(); }
  py::list keys() const {
    auto o = st_->get();
    const Metadata& md = o->model().metadata;
    py::list out;
    for (size_t i = 0; i < md.size(); ++i) out.append(text_str(md.key(i)));
    return out;
  }
  py::list values() const {
    auto o = st_->get();
    py::list out;
    for (size_t i = 0; i < o->model().metadata.size(); ++i) out.append(item(*o, i));
    return out;
  }
  py::list items() const {
    auto o = st_->get();
    const Metadata& md = o->model().metadata;
    py::list out;
    for (size_t i = 0; i < md.size(); ++i) out.append(py::make_tuple(text_str(md.key(i)), item(*o, i)));
    return out;
  }
  // A Mapping equals another with the same items (order aside), as dict's == has it.
  bool equals(const py::handle& other) const {
    if (!py::isinstance(other, py::module_::import("collections.abc").attr("Mapping"))) return false;
    return py::dict(py::cast(*this)).equal(py::dict(py::reinterpret_borrow<py::object>(other)));
  }
  // Where a pair lies in the file (its key's length field) and where its value starts.
  py::object offset_of(const py::handle& key, bool value) const {
    auto o = st_->get();
    auto i = index(*o, key);
    if (!i) key_error(key);
    auto at = value ? o->model().metadata.value_offset(*i) : o->model().metadata.offset(*i);
    return at ? py::object(py::int_(*at)) : py::object(py::none());
  }

 private:
  // A key that is not a str, or not one the file has, is not there (a str's surrogate
  // escapes stand for the bytes of a key that is not UTF-8, as keys() gives them).
  static std::optional<size_t> index(const Opened& o, const py::handle& key) {
    const std::optional<std::string> k = name_bytes(key);
    return k ? o.model().metadata.index_of(*k, o.by_key) : std::nullopt;
  }
  py::object item(const Opened& o, size_t i) const {
    const KV kv = o.model().metadata[i];
    if (!types_) return to_python(kv.value);
    if (kv.value.type != ValueType::array) return py::str(value_type_name(kv.value.type));
    return py::str(std::string("array[") + value_type_name(kv.value.elem) + "]");
  }
  std::shared_ptr<State> st_;
  bool types_;
};

// A tensor's bytes mapped read-only from its file: what f.tensor_bytes gives a memoryview of.
struct MappedBytes {
  std::shared_ptr<const void> keep;  // the map (or the source holding the bytes)
  const uint8_t* data = nullptr;
  size_t size = 0;
};

// The calls on an open file. Each works on the Opened it is given, which its caller took
// from the State with the GIL held, so that it can run without the GIL.
size_t tensor_index(const Opened& o, const std::string& name) {
  const TensorList& ts = o.model().tensors;
  auto it = std::lower_bound(o.by_name.begin(), o.by_name.end(), name, [&](uint64_t i, const std::string& n) { return ts.name(i) < n; });
  if (it == o.by_name.end() || ts.name(*it) != name) {
    std::vector<std::string> names;
    for (size_t i = 0; i < ts.size(); ++i) names.emplace_back(ts.name(i));
    const std::string hint = did_you_mean(nearest_names(name, names, std::max<size_t>(2, name.size() / 4)));
    throw Error(Error::Kind::usage, o.path, std::nullopt, "", "no tensor named '" + name + "'" + (hint.empty() ? "" : "; " + hint));
  }
  return *it;
}

TensorRecord tensor_record(const Opened& o, size_t i) {
  const Tensor t = o.model().tensors[i];
  TensorRecord r{t.name, ggml_type_name(t.type), t.dims, o.view.s.layout.tensor_offsets[i], t.nbytes(), std::nullopt};
  if (o.view.files > 1) r.shard = o.view.shard[i];
  return r;
}

MappedBytes tensor_bytes(const Opened& o, const std::string& name) {
  const size_t i = tensor_index(o, name);
  const Tensor t = o.model().tensors[i];
  const std::string field = "tensor[" + std::to_string(i) + "] " + t.name;
  if (o.view.s.header_only || !t.source)
    throw Error(Error::Kind::usage, o.path, std::nullopt, field, "the file holds the header alone (a header exemplar): it has no tensor bytes to read");
  const uint64_t n = t.nbytes();
  MappedBytes out;
  out.keep = t.source;
  out.size = static_cast<size_t>(n);
  if (n == 0) return out;
  if (const uint8_t* d = t.source->data()) {
    out.data = d + t.source_offset;
    return out;
  }
  const auto file = t.source->file();  // open while it is mapped: the map needs it no longer
  const int fd = file ? *file : -1;
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) throw_io(t.source->name(), "cannot map the tensor's bytes");
  if (static_cast<uint64_t>(st.st_size) < t.source_offset + n)
    throw Error(Error::Kind::io, t.source->name(), t.source_offset, field,
                "the file is shorter now than when it was opened (" + std::to_string(st.st_size) + " bytes): it changed");
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = t.source_offset / page * page, len = n + (t.source_offset - start);
  void* p = ::mmap(nullptr, static_cast<size_t>(len), PROT_READ, MAP_SHARED, fd, static_cast<off_t>(start));
  if (p == MAP_FAILED) throw_io(t.source->name(), "cannot map the tensor's bytes");
  out.keep = std::shared_ptr<const void>(p, [len](const void* q) { ::munmap(const_cast<void*>(q), static_cast<size_t>(len)); });
  out.data = static_cast<const uint8_t*>(p) + (t.source_offset - start);
  return out;
}

// A tensor's decoded values and their numpy shape: ggml's dims reversed (outermost first),
// as gguf-py shapes them.
struct Values {
  std::vector<float> v;
  std::vector<py::ssize_t> shape;
};

Values tensor_values(const Opened& o, const std::string& name) {
  const Tensor t = o.model().tensors[tensor_index(o, name)];
  if (o.view.s.header_only) tensor_bytes(o, name);  // says why there are no values
  Values out{ggufkit::tensor_values(t, o.model().data_order.value_or(o.model().order)), {}};
  for (size_t i = t.dims.size(); i-- > 0;) out.shape.push_back(static_cast<py::ssize_t>(t.dims[i]));
  return out;
}

// The values as nested lists of that shape (what ndarray.tolist() gives), for a Python
// without numpy.
py::object nested_list(const float* p, const std::vector<py::ssize_t>& shape, size_t d) {
  if (d == shape.size()) return py::float_(*p);  // a tensor of no dims: one value
  py::ssize_t stride = 1;
  for (size_t k = d + 1; k < shape.size(); ++k) stride *= shape[k];
  py::list out(static_cast<size_t>(shape[d]));
  for (py::ssize_t i = 0; i < shape[d]; ++i) {
    PyObject* x = d + 1 == shape.size() ? PyFloat_FromDouble(p[i]) : nested_list(p + i * stride, shape, d + 1).release().ptr();
    if (!x) throw py::error_already_set();
    PyList_SET_ITEM(out.ptr(), i, x);
  }
  return out;
}

class File {
 public:
  explicit File(std::shared_ptr<State> st) : st_(std::move(st)) {}
  std::shared_ptr<Opened> get() const { return st_->get(); }
  const std::shared_ptr<State>& state() const { return st_; }
  void close() { st_->open.reset(); }
  bool closed() const { return !st_->open; }

 private:
  std::shared_ptr<State> st_;
};

File open_job(const py::handle& path_obj, bool shard_only) {
  auto o = std::make_shared<Opened>();
  o->path = to_path(path_obj, "path");
  o->shard_only = shard_only;
  {
    InLibrary nogil;
    o->view = open_model(o->path, shard_only);
    std::error_code ec;
    const auto abs = std::filesystem::absolute(o->path, ec);
    o->where = ec ? o->path : abs.string();
    o->by_key = o->model().metadata.sorted_by_key();
    o->by_name = o->model().tensors.sorted_by_name();
  }
  auto st = std::make_shared<State>();
  st->open = std::move(o);
  return File(std::move(st));
}

// ---- jobs -------------------------------------------------------------------------------

py::list change_list(const std::vector<Change>& changes) {
  static const char* kinds[] = {"set", "add", "remove", "rename", "alignment", "retype"};
  py::list out;
  for (const Change& c : changes) {
    py::dict d;
    d["change"] = kinds[c.kind];
    d["key"] = text_str(c.key);
    if (c.kind == Change::rename) d["to"] = text_str(c.to);
    if (c.kind == Change::retype) {
      d["token"] = text_str(c.token);
      d["id"] = c.id;
      d["before"] = token_type_name(c.before->as_i64());
      d["after"] = token_type_name(c.after->as_i64());
    } else {
      d["before"] = c.before ? to_python(*c.before) : py::object(py::none());
      d["after"] = c.after ? to_python(*c.after) : py::object(py::none());
    }
    out.append(d);
  }
  return out;
}

// Python's keys and values into the patch, as the command's options build it.
void add_to_patch(Patch& p, const py::object& set_arg, const py::object& remove, const py::object& rename_arg,
                  const py::object& chat_template, const py::object& special_arg) {
  const py::object set = as_dict(set_arg), rename = as_dict(rename_arg), special_tokens = as_dict(special_arg);
  if (!set.is_none()) {
    if (!PyDict_Check(set.ptr())) throw_usage("set: expected a dict of key -> value");
    for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(set)) {
      const std::string key = name_arg(k, "set: a key");
      if (v.is_none()) throw_usage("set[" + key + "]: None is no GGUF value (remove=[\"" + key + "\"] removes a key)");
      p.add_set(key, to_text(v, "set[" + key + "]"));
    }
  }
  if (!remove.is_none()) {
    // One key (a str) or an iterable of keys; bytes would be an iterable of numbers.
    if (PyUnicode_Check(remove.ptr())) p.add_remove(name_arg(remove, "remove"));
    else if (PyBytes_Check(remove.ptr()) || PyByteArray_Check(remove.ptr()) || !py::isinstance<py::iterable>(remove))
      throw_usage("remove: expected a key (str) or a list of keys");
    else
      for (const py::handle k : remove) p.add_remove(name_arg(k, "remove: a key"));
  }
  if (!rename.is_none()) {
    if (!PyDict_Check(rename.ptr())) throw_usage("rename: expected a dict of old key -> new key");
    for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(rename)) {
      const std::string from = name_arg(k, "rename: a key");
      p.add_rename(from, name_arg(v, "rename[" + from + "]"));
    }
  }
  if (!chat_template.is_none()) {
    if (!PyUnicode_Check(chat_template.ptr())) throw_usage("chat_template: expected the template's text (a str)");
    p.add_set("tokenizer.chat_template", to_text(chat_template, "chat_template"));
  }
  if (!special_tokens.is_none()) {
    if (!PyDict_Check(special_tokens.ptr())) throw_usage("special_tokens: expected a dict of name -> text (str) or id (int)");
    for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(special_tokens)) {
      const std::string name = name_arg(k, "special_tokens: a name");
      const bool by_id = PyLong_Check(v.ptr()) && !PyBool_Check(v.ptr());
      if (!by_id && !PyUnicode_Check(v.ptr())) throw_usage("special_tokens[" + name + "]: expected the token's text (str) or its id (int)");
      p.add_special(name, by_id ? to_text(v, "special_tokens[" + name + "]") : name_arg(v, "special_tokens[" + name + "]"), by_id);
    }
  }
}

// Tensor surgery's arguments into the patch's TensorOps: globs as a str or a list of them,
// ranges as "0-3,10", an int or a list of ints, grafts as "FROM[:GLOB]" or (FROM, GLOB).
void add_surgery(TensorOps& t, const py::object& remove_tensors, const py::object& rename_tensors, const py::object& keep_tensors,
                 const py::object& keep_layers, const py::object& remove_layers, const py::object& keep_experts,
                 const py::object& remove_experts, const py::object& graft) {
  auto globs = [](const py::object& o, const char* what, std::vector<std::string>& out) {
    if (o.is_none()) return;
    if (PyUnicode_Check(o.ptr())) return out.push_back(name_arg(o, what));
    for (const py::handle g : o) out.push_back(name_arg(g, std::string(what) + ": a glob"));
  };
  globs(remove_tensors, "remove_tensors", t.remove);
  globs(keep_tensors, "keep_tensors", t.keep);
  if (!rename_tensors.is_none()) {
    if (!PyDict_Check(rename_tensors.ptr())) throw_usage("rename_tensors: expected a dict of old name -> new name");
    for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(rename_tensors)) {
      const std::string from = name_arg(k, "rename_tensors: a name");
      t.rename.push_back({from, name_arg(v, "rename_tensors[" + from + "]")});
    }
  }
  auto ranges = [](const py::object& o, const char* what, std::optional<std::string>& out) {
    if (o.is_none()) return;
    if (out) throw_usage(std::string(what) + ": the patch gives it too; give it once");
    if (PyUnicode_Check(o.ptr())) return void(out = name_arg(o, what));
    if (PyLong_Check(o.ptr()) && !PyBool_Check(o.ptr())) return void(out = to_text(o, what));
    std::string text;
    for (const py::handle i : o) {
      if (!PyLong_Check(i.ptr()) || PyBool_Check(i.ptr())) throw_usage(std::string(what) + ": expected \"0-3,10\", an int or a list of ints");
      text += (text.empty() ? "" : ",") + to_text(py::reinterpret_borrow<py::object>(i), what);
    }
    out = text;
  };
  ranges(keep_layers, "keep_layers", t.keep_layers);
  ranges(remove_layers, "remove_layers", t.remove_layers);
  ranges(keep_experts, "keep_experts", t.keep_experts);
  ranges(remove_experts, "remove_experts", t.remove_experts);
  if (!graft.is_none()) {
    std::vector<py::object> items;
    // One donor (a str, bytes, a path, a (FROM, GLOB) pair) or a list of them: bytes are a path, not numbers.
    if (PyUnicode_Check(graft.ptr()) || PyBytes_Check(graft.ptr()) || PyByteArray_Check(graft.ptr()) || PyTuple_Check(graft.ptr()) ||
        !PySequence_Check(graft.ptr()))
      items.push_back(graft);
    else
      for (const py::handle g : graft) items.push_back(py::reinterpret_borrow<py::object>(g));
    for (const py::object& g : items) {
      if (PyTuple_Check(g.ptr()) && py::len(g) == 2) {
        t.graft.push_back({to_path(g[py::int_(0)], "graft"), name_arg(g[py::int_(1)], "graft: a glob")});
        continue;
      }
      const std::string text = to_path(g, "graft");
      const auto colon = text.rfind(':');
      struct stat st {};
      if (colon != std::string::npos && colon > 0 && ::stat(text.c_str(), &st) != 0) {
        if (colon + 1 == text.size()) throw_usage("graft: " + text + ": nothing after the colon; give FROM alone to take every tensor of it");
        t.graft.push_back({text.substr(0, colon), text.substr(colon + 1)});
      } else {
        t.graft.push_back({text, ""});
      }
    }
  }
}

py::list tensor_change_list(const std::vector<TensorChange>& changes) {
  static const char* kinds[] = {"removed", "renamed", "sliced", "added", "replaced"};
  py::list out;
  for (const TensorChange& c : changes) {
    py::dict d;
    d["change"] = kinds[c.kind];
    d["tensor"] = text_str(c.name);
    if (c.kind == TensorChange::renamed) d["to"] = text_str(c.to);
    if (c.kind != TensorChange::added) d["dims_before"] = py::tuple(py::cast(c.dims_before));
    if (c.kind != TensorChange::removed) d["dims_after"] = py::tuple(py::cast(c.dims_after));
    if (!c.from.empty()) d["from"] = text_str(c.from);
    out.append(d);
  }
  return out;
}

py::dict edit_job(const py::handle& path, py::object set, py::object remove, py::object rename, py::object chat_template,
                  py::object special_tokens, py::object patch, py::object out, bool in_place, bool dry_run, bool force,
                  bool allow_broken, bool header_only, bool whole_file, bool verify, py::object progress, bool break_link,
                  py::object remove_tensors, py::object rename_tensors, py::object keep_tensors, py::object keep_layers,
                  py::object remove_layers, py::object keep_experts, py::object remove_experts, py::object graft,
                  uint64_t max_tensors, uint64_t max_bytes) {
  EditRequest req;
  req.input = to_path(path, "path");
  patch = as_dict(patch);
  if (!patch.is_none()) {
    if (PyDict_Check(patch.ptr())) req.patch = parse_patch(to_text(patch, "patch"), "patch", ".");
    else req.patch = read_patch(to_path(patch, "patch"));
  }
  req.patch.caller = Patch::Caller::python;  // its errors name keywords, not flags
  if (patch.is_none()) req.patch.name = req.patch.tensors.from = "arguments";
  add_to_patch(req.patch, set, remove, rename, chat_template, special_tokens);
  add_surgery(req.patch.tensors, remove_tensors, rename_tensors, keep_tensors, keep_layers, remove_layers, keep_experts,
              remove_experts, graft);
  req.max_tensors = max_tensors;
  req.max_bytes = max_bytes;
  if (!out.is_none()) req.output = to_path(out, "out");
  if (in_place && !out.is_none()) throw_usage("give one of out= and in_place=True");
  if (!in_place && out.is_none() && !dry_run) throw_usage("say where the result goes: out=PATH or in_place=True (or dry_run=True)");
  if ((header_only || whole_file) && !in_place) throw_usage("header_only and whole_file are for edits in place: give in_place=True");
  req.in_place = in_place;
  req.dry_run = dry_run;
  req.allow_broken = allow_broken;
  req.patch.allow_broken = allow_broken;
  req.header_only = header_only;
  req.whole_file = whole_file;
  if (break_link && !in_place) throw_usage("break_link is for edits in place: give in_place=True");
  req.break_link = break_link;
  req.write.force = force;
  req.write.verify = verify;
  Interrupts irq(progress);
  irq.attach(req.context);
  const EditReport r = irq.run([&] { return ggufkit::edit(req); });
  static const char* written[] = {"nothing", "header", "whole_file"};
  py::dict d;
  d["file"] = text_str(req.input);
  d["dry_run"] = dry_run;
  d["unchanged"] = r.unchanged;
  d["written"] = written[static_cast<int>(r.written)];
  d["changes"] = change_list(r.changes);
  d["tensor_changes"] = tensor_change_list(r.tensor_changes);
  d["data_offset"] = py::make_tuple(r.data_offset_before, r.data_offset_after);
  d["file_size"] = py::make_tuple(r.file_size_before, r.file_size_after);
  d["header_fits"] = r.header_fits;
  if (r.written == Written::header) {
    d["header_size"] = r.header_size;
    d["bytes_written"] = r.header_bytes;
    d["at"] = r.header_at;
  }
  d["why_whole"] = message_str(r.why_whole);
  py::list files;
  for (const WrittenFile& f : r.files) files.append(file_dict(f));
  d["files"] = files;
  d["findings"] = findings_list(r.findings_new, req.input);
  py::list notes;
  for (const auto& [file, msg] : r.notes) notes.append(py::make_tuple(text_str(file), message_str(py_words(msg))));
  d["notes"] = notes;
  return d;
}

py::dict write_job(const py::object& sketch_arg, const py::handle& out, bool force, bool check, py::object defines_arg) {
  const py::object sketch = as_dict(sketch_arg), defines = as_dict(defines_arg);
  WriteSketchRequest req;
  ArrayBytes arrays;  // the numpy tensors' data, which the library reads while it writes
  if (PyDict_Check(sketch.ptr())) {
    req.sketch = "sketch";
    req.text = to_text(sketch_arrays(sketch, arrays), "sketch");  // numpy arrays made explicit
  } else {
    req.sketch = to_path(sketch, "sketch");
  }
  req.output = to_path(out, "out");
  req.force = force;
  req.check = check;
  if (!defines.is_none()) {
    if (!PyDict_Check(defines.ptr())) throw_usage("defines: expected a dict of NAME -> value");
    for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(defines)) {
      const std::string name = name_arg(k, "defines: a name");
      // The text [[NAME]] becomes: a str as it is, a number as its digits.
      if (PyUnicode_Check(v.ptr())) req.defines[name] = name_arg(v, "defines[" + name + "]");
      else if ((PyLong_Check(v.ptr()) && !PyBool_Check(v.ptr())) || PyFloat_Check(v.ptr())) req.defines[name] = to_text(v, "defines[" + name + "]");
      else throw_usage("defines[" + name + "]: expected a str or a number");
    }
  }
  WriteSketchReport r;
  {
    InLibrary nogil;
    r = write_sketch(req);
  }
  py::dict d = file_dict(r.file);
  d["findings"] = findings_list(r.findings, req.output);
  return d;
}

py::object dump_job(const py::handle& path, bool inline_data) {
  const std::string p = to_path(path, "path");
  std::string text;
  {
    InLibrary nogil;
    ModelView v = open_model(p, true);  // the file itself, as `ggufkit dump` dumps a shard
    DumpOptions o;
    o.json = true;
    o.inline_data = inline_data;
    text = dump_sketch(v.s.model, o);
  }
  // A float's -0 is the text "-0", which json reads as the int 0 and write() would then
  // give back as +0: it stays the float -0.0 (no integer is ever printed as -0).
  py::cpp_function parse_int([](const py::str& t) -> py::object {
    if (t.equal(py::str("-0"))) return py::float_(-0.0);
    PyObject* n = PyLong_FromUnicodeObject(t.ptr(), 10);
    if (!n) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(n);
  });
  return py::module_::import("json").attr("loads")(py::bytes(text), py::arg("parse_int") = parse_int);
}

std::vector<FindingRecord> validate_job(const std::string& path, bool shard_only, const std::string& base, const std::string& dialect) {
  Verdict v;
  Context ctx;
  ctx.dialect = dialect_named(dialect);
  {
    InLibrary nogil;
    v = validate(path, shard_only, nullptr, base, ctx);
  }
  std::vector<FindingRecord> out;
  for (const auto& [file, f] : v.findings)
    out.push_back({file, std::string(code_name(f.code)), std::string(severity_name(f.severity)), f.place.name, f.place.item, f.message,
                   f.fix, f.offset, f.ids});
  return out;
}

// The spans of the file itself (a shard's own, not its set's).
std::vector<SpanRecord> map_job(const std::string& path) {
  std::vector<SpanRecord> out;
  InLibrary nogil;
  ModelView v = open_model(path, true);
  for (const LabeledSpan& sp : v.s.layout.spans) out.push_back({span_kind_name(sp.kind), sp.path, sp.span.offset, sp.span.size});
  return out;
}

py::str render_job(const py::handle& path, const py::object& conversation_arg, const py::object& name_obj, bool shard_only,
                   std::optional<bool> add_generation_prompt) {
  const std::string file = to_path(path, "path"), name = name_arg(name_obj, "name");
  const py::object conversation = as_dict(conversation_arg);
  if (!PyDict_Check(conversation.ptr())) throw_usage("conversation: expected a dict with \"messages\"");
  const std::string json = to_text(conversation, "conversation");
  std::string prompt;
  {
    InLibrary nogil;
    jinja::Value conv;
    try {
      conv = jinja::from_json(json);
      jinja::chat_context(conv, std::nullopt, std::nullopt);  // its shape checked first, as the command does
    } catch (const std::invalid_argument& e) {
      throw Error(Error::Kind::usage, "", std::nullopt, "conversation", std::string("is not a conversation: ") + e.what());
    }
    if (add_generation_prompt) conv.dict->set(jinja::Value::string("add_generation_prompt"), jinja::Value::boolean(*add_generation_prompt));
    ModelView v = open_model(file, shard_only);
    const std::string key = name == "default" ? "tokenizer.chat_template" : "tokenizer.chat_template." + name;
    const Value* t = v.s.model.find(key);
    if (!t || t->type != ValueType::string)
      throw Error(Error::Kind::format, file, std::nullopt, key, t ? "is not a string" : "the file has no such template");
    prompt = render_prompt(file, key, t->str, v.s.model, conv);
  }
  return text_str(prompt);
}

py::dict replica_job(const py::handle& path, const py::handle& out, const std::string& data, bool force, bool shard_only,
                     py::object progress) {
  ReplicaRequest req;
  req.input = to_path(path, "path");
  req.output = to_path(out, "out");
  if (data == "sparse") req.data = ReplicaData::sparse;
  else if (data == "zeros") req.data = ReplicaData::zeros;
  else if (data == "none") req.data = ReplicaData::none;
  else throw_usage("data: expected 'sparse', 'zeros' or 'none', got '" + data + "'");
  req.shard_only = shard_only;
  req.write.force = force;
  Interrupts irq(std::move(progress));
  irq.attach(req.context);
  const ReplicaReport r = irq.run([&] { return replica(req); });
  py::list files;
  for (const ReplicaFile& f : r.files) {
    py::dict d = file_dict(f.file);
    d["source"] = text_str(f.source);
    d["header_bytes"] = f.header_bytes;
    d["disk_bytes"] = f.disk_bytes;
    files.append(d);
  }
  py::dict d;
  d["files"] = files;
  d["from_exemplar"] = r.from_exemplar;
  return d;
}

py::dict extract_job(const py::handle& path, const py::handle& out, bool force) {
  ExtractRequest req;
  req.input = to_path(path, "path");
  req.output = to_path(out, "out");
  req.write.force = force;  // a header alone: nothing long enough to interrupt
  ExtractReport r;
  {
    InLibrary nogil;
    r = extract_vocab(req);
  }
  py::dict d = file_dict(r.file);
  d["keys_kept"] = r.keys_kept;
  d["keys_dropped"] = r.keys_dropped;
  d["tensors_dropped"] = r.tensors_dropped;
  py::list dropped;
  for (const std::string& k : r.dropped) dropped.append(text_str(k));
  d["dropped"] = dropped;
  return d;
}

py::list corrupt_job(const py::handle& path, const py::handle& dir, uint64_t seed, std::optional<size_t> count, bool force) {
  CorruptRequest req;
  req.source = to_path(path, "path");
  req.dir = to_path(dir, "dir");
  req.seed = seed;
  req.count = count;
  req.force = force;
  CorruptReport r;
  {
    InLibrary nogil;
    r = corrupt(req);
  }
  py::list out;
  for (const CorruptEntry& e : r.files) {
    py::dict d;
    d["file"] = text_str(e.file);
    d["span_kind"] = e.span_kind;
    d["field"] = text_str(e.field);
    d["offset"] = e.offset;
    d["mutation"] = e.mutation;
    d["gguf"] = e.gguf_accepts ? "accepts" : "refuses";  // the manifest's words
    d["llama"] = e.llama_loads ? "loads" : "refuses";
    d["error_offset"] = e.error_offset ? py::object(py::int_(*e.error_offset)) : py::object(py::none());
    d["error"] = message_str(e.error);
    d["findings"] = e.findings;
    out.append(d);
  }
  return out;
}

template <typename T>
std::string fields_repr(const char* name, const T& self, std::initializer_list<const char*> attrs) {
  py::object o = py::cast(self);
  std::string s = std::string("ggufkit.") + name + "(";
  bool first = true;
  for (const char* a : attrs) {
    s += (first ? "" : ", ") + std::string(a) + "=" + py::repr(o.attr(a)).cast<std::string>();
    first = false;
  }
  return s + ")";
}

}  // namespace

}  // namespace ggufkit::python

using namespace ggufkit;
using namespace ggufkit::python;

PYBIND11_MODULE(_ggufkit, m) {
  m.doc() =
      "ggufkit: read, check, write and safely edit GGUF files (llama.cpp's model format).\n\n"
      "  f = ggufkit.open('model.gguf')          # a shard opens its whole set\n"
      "  f.metadata['general.architecture']      # values made from the header as asked for\n"
      "  f.tensors[0].name, f.tensors[0].type    # 'token_embd.weight', 'q4_K'\n"
      "  ggufkit.edit('model.gguf', set={'tokenizer.ggml.eos_token_id': 2}, in_place=True)\n\n"
      "Errors are ggufkit.Error (a ValueError) with .file, .offset, .field, .code and the\n"
      "message the command line prints. Every write goes through the library's safe output\n"
      "path: a file is replaced whole or not at all, a header edited in place under a journal.";

  g_error = PyErr_NewExceptionWithDoc(
      "ggufkit.Error",
      "What ggufkit refuses, with where: .file, .offset (a byte offset or None), .field (\"kv[4] "
      "tokenizer.ggml.tokens (value)\"), .code (the rule that refused, as validate names it, or the error's kind: "
      "format, usage, io), .kind, .exit_code (the command's), .message, and .findings (a refused edit's).",
      PyExc_ValueError, nullptr);
  m.attr("Error") = py::handle(g_error);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      raise_error(e);
    } catch (const tokenizer::Error& e) {
      raise_error(Error(Error::Kind::format, "", std::nullopt, e.key, e.what()));
    }
  });

  py::class_<TensorRecord>(m, "Tensor", "One tensor's info record: name, dims (innermost first, as ggml orders them), "
                                        "type (ggml's name: 'q8_0'), offset (from the data start), nbytes, shard (a set's, from 1, or None).")
      .def_property_readonly("name", [](const TensorRecord& t) { return text_str(t.name); })
      .def_readonly("dims", &TensorRecord::dims)
      .def_readonly("type", &TensorRecord::type)
      .def_readonly("offset", &TensorRecord::offset)
      .def_readonly("nbytes", &TensorRecord::nbytes)
      .def_readonly("shard", &TensorRecord::shard)
      .def("__repr__", [](const TensorRecord& t) { return fields_repr("Tensor", t, {"name", "dims", "type", "offset", "nbytes"}); });

  py::class_<SpanRecord>(m, "Span", "A byte range of the file: kind (magic, kv_key, tensor_data, padding, ...), offset, size, field.")
      .def_readonly("kind", &SpanRecord::kind)
      .def_readonly("offset", &SpanRecord::offset)
      .def_readonly("size", &SpanRecord::size)
      .def_property_readonly("field", [](const SpanRecord& s) { return text_str(s.field); })
      .def_property_readonly("end", [](const SpanRecord& s) { return s.offset + s.size; })
      .def("__repr__", [](const SpanRecord& s) { return fields_repr("Span", s, {"kind", "offset", "size", "field"}); });

  py::class_<FindingRecord>(m, "Finding", "What validate finds: code (as validate prints it), severity (error, warning, info), "
                                          "offset (or None), field (the key or tensor), item, message, fix (a command, or ''), ids, file.")
      .def_property_readonly("file", [](const FindingRecord& f) { return text_str(f.file); })
      .def_readonly("code", &FindingRecord::code)
      .def_readonly("severity", &FindingRecord::severity)
      .def_readonly("offset", &FindingRecord::offset)
      .def_property_readonly("field", [](const FindingRecord& f) { return text_str(f.field); })
      .def_property_readonly("item", [](const FindingRecord& f) { return text_str(f.item); })
      .def_property_readonly("message", [](const FindingRecord& f) { return message_str(f.message); })
      .def_property_readonly("fix", [](const FindingRecord& f) { return text_str(f.fix); })
      .def_readonly("ids", &FindingRecord::ids)
      .def("__repr__", [](const FindingRecord& f) { return fields_repr("Finding", f, {"code", "severity", "offset", "field", "message"}); });

  py::class_<Values>(m, "_TensorValues", py::buffer_protocol())
      .def_buffer([](Values& v) {
        return py::buffer_info(v.v.data(), static_cast<py::ssize_t>(sizeof(float)), py::format_descriptor<float>::format(), 1,
                               {static_cast<py::ssize_t>(v.v.size())}, {static_cast<py::ssize_t>(sizeof(float))}, false);
      });

  py::class_<MappedBytes>(m, "_TensorBuffer", py::buffer_protocol())
      .def_buffer([](MappedBytes& b) {
        return py::buffer_info(const_cast<uint8_t*>(b.data), 1, "B", 1, {static_cast<py::ssize_t>(b.size)}, {1}, true);
      });

  py::class_<KeyMap> keymap(m, "KeyMap", "A read-only mapping of metadata keys, in file order (f.metadata: values; f.types: type names).");
  keymap.def("__getitem__", &KeyMap::get)
      .def("__len__", &KeyMap::size)
      .def("__contains__", &KeyMap::contains)
      .def("__iter__", [](const KeyMap& k) { return py::iter(k.keys()); })
      .def("keys", &KeyMap::keys, "The keys, in file order.")
      .def("values", &KeyMap::values)
      .def("items", &KeyMap::items, "(key, value) pairs, in file order.")
      .def("get", &KeyMap::get_or, py::arg("key"), py::arg("default") = py::none())
      .def("offset", [](const KeyMap& k, const py::object& key) { return k.offset_of(key, false); }, py::arg("key"),
           "Where the pair starts in the file (its key's length), or None once the model was changed.")
      .def("value_offset", [](const KeyMap& k, const py::object& key) { return k.offset_of(key, true); }, py::arg("key"),
           "Where the pair's value starts in the file.")
      .def("__eq__", &KeyMap::equals)
      .def("__ne__", [](const KeyMap& k, const py::object& other) { return !k.equals(other); })
      .attr("__hash__") = py::none();
  keymap
      .def("__repr__", [](const KeyMap& k) { return "<ggufkit.KeyMap of " + std::to_string(k.size()) + " keys>"; });
  py::module_::import("collections.abc").attr("Mapping").attr("register")(keymap);

  py::class_<File>(m, "File", "An open GGUF file (ggufkit.open): its header read and checked, its tensor data left on disk.")
      .def_property_readonly("path", [](const File& f) { return text_str(f.get()->path); })
      .def_property_readonly("version", [](const File& f) { return f.get()->model().version; })
      .def_property_readonly("byte_order", [](const File& f) { return f.get()->model().order == ByteOrder::big ? "big" : "little"; })
      .def_property_readonly("alignment", [](const File& f) { return f.get()->view.s.layout.alignment; })
      .def_property_readonly("data_offset", [](const File& f) { return f.get()->view.s.layout.data_offset; })
      .def_property_readonly("file_size", [](const File& f) { return f.get()->view.s.model_size; },
                             "The file's size (a set: every shard's added up; a header exemplar: the model's).")
      .def_property_readonly("files", [](const File& f) { return f.get()->view.files; }, "The files of its shard set (1 for a lone file).")
      .def_property_readonly("header_only", [](const File& f) { return f.get()->view.s.header_only; }, "A header exemplar: no tensor bytes.")
      .def_property_readonly("metadata", [](const File& f) {
                               f.get();  // refused once closed
                               return KeyMap(f.state(), false);
                             },
                             "key -> value, in file order: int, float, bool, str (bytes when not UTF-8), list for arrays.")
      .def_property_readonly("types", [](const File& f) {
                               f.get();
                               return KeyMap(f.state(), true);
                             },
                             "key -> type name: 'u32', 'string', 'array[string]', ...")
      .def_property_readonly(
          "tensors",
          [](const File& f) {
            auto o = f.get();
            std::vector<TensorRecord> out;
            out.reserve(o->model().tensors.size());
            for (size_t i = 0; i < o->model().tensors.size(); ++i) out.push_back(tensor_record(*o, i));
            return out;
          },
          "Every tensor's record, in file order (ggufkit.Tensor).")
      .def(
          "tensor",
          [](const File& f, const py::object& name) {
            auto o = f.get();
            return tensor_record(*o, tensor_index(*o, name_arg(name, "name")));
          },
          py::arg("name"), "One tensor's record by name; ggufkit.Error (usage) when there is none.")
      .def(
          "tensor_bytes",
          [](const File& f, const py::object& name) {
            auto o = f.get();
            const std::string n = name_arg(name, "name");
            MappedBytes b;
            {
              InLibrary nogil;
              b = tensor_bytes(*o, n);
            }
            return py::memoryview(py::cast(std::move(b)));
          },
          py::arg("name"),
          "The tensor's bytes as stored: a read-only memoryview of the file mapped, no copy. (A file cut short "
          "by another program while a view lives faults on access, as any map does: copy what you keep.)")
      .def(
          "tensor_values",
          [](const File& f, const py::object& name) -> py::object {
            auto o = f.get();
            const std::string n = name_arg(name, "name");
            Values v;
            {
              InLibrary nogil;
              v = tensor_values(*o, n);
            }
            py::module_ np;
            try {
              np = py::module_::import("numpy");
            } catch (const py::error_already_set& e) {
              if (!e.matches(PyExc_ImportError)) throw;
              return nested_list(v.v.data(), v.shape, 0);
            }
            // numpy reads the vector's memory in place (no copy), the array keeping it.
            const std::vector<py::ssize_t> shape = std::move(v.shape);
            if (v.v.empty()) return np.attr("zeros")(py::tuple(py::cast(shape)), np.attr("float32"));
            py::object flat = np.attr("frombuffer")(py::cast(std::move(v)), np.attr("float32"));
            return flat.attr("reshape")(py::tuple(py::cast(shape)));
          },
          py::arg("name"),
          "The tensor's values decoded (f32, f16, bf16, q8_0, q4_K, ...) to float32, shaped as numpy shapes it: "
          "outermost first (ggml's dims reversed, as gguf-py's tensor.data: dims [4096, 64] give (64, 4096)). A "
          "numpy array, or nested lists of that shape without numpy.")
      .def(
          "validate",
          [](const File& f, const py::object& base, const std::string& dialect) {
            auto o = f.get();
            return validate_job(o->where, o->shard_only, base.is_none() ? "" : to_path(base, "base"), dialect);
          },
          py::arg("base") = py::none(), py::kw_only(), py::arg("dialect") = "llama.cpp",
          "What `ggufkit validate` finds (ggufkit.Finding list), read again from the file (a set's over the shards "
          "it was opened with); base: the model an adapter or MTP drafter is for; dialect: 'llama.cpp' or 'ik_llama' "
          "(whose own tensor types are then warnings).")
      .def("map", [](const File& f) { return map_job(f.get()->where); }, "Every span of the file in order (ggufkit.Span list); a shard's own.")
      .def(
          "tokenize",
          [](const File& f, const py::object& text, bool add_special, bool parse_special) {
            auto o = f.get();
            const std::string t = text_arg(text);
            // The load reads keys as the library reads a model it may change (Metadata::ref,
            // which caches what it made in the model): with the GIL held, as every reader
            // of the metadata (KeyMap) holds it, never beside one. Once per File.
            if (!o->vocab) {
              CLocale c;
              o->vocab = vocab_of(o->path, o->model());
            }
            const std::shared_ptr<const tokenizer::Vocab> v = o->vocab;
            InLibrary nogil;
            return tokenize_with(o->path, *v, t, add_special, parse_special);
          },
          py::arg("text"), py::arg("add_special") = true, py::arg("parse_special") = true,
          "Token ids exactly as llama.cpp's llama_tokenize gives them (the vocabulary loaded once per File).")
      .def("close", &File::close, "Let the header and the files go; calls running on other threads finish first with what they hold.")
      .def_property_readonly("closed", &File::closed)
      .def("__enter__", [](File& f) -> File& { return f; }, py::return_value_policy::reference)
      .def("__exit__", [](File& f, py::args) { f.close(); })
      .def("__repr__", [](const File& f) -> py::str {
        if (f.closed()) return py::str("<ggufkit.File closed>");
        auto o = f.get();
        return py::str("<ggufkit.File {}: v{}, {} keys, {} tensors>")
            .format(text_str(o->path), o->model().version, o->model().metadata.size(), o->model().tensors.size());
      });

  m.def("open", &open_job, py::arg("path"), py::arg("shard_only") = false,
        "Open a GGUF file: its header read and checked as `ggufkit show` reads it. A file named as a shard "
        "(NAME-00001-of-00003.gguf) opens its whole set, unless shard_only.");

  m.def("edit", &edit_job, py::arg("path"), py::kw_only(), py::arg("set") = py::none(), py::arg("remove") = py::none(),
        py::arg("rename") = py::none(), py::arg("chat_template") = py::none(), py::arg("special_tokens") = py::none(),
        py::arg("patch") = py::none(), py::arg("out") = py::none(), py::arg("in_place") = false, py::arg("dry_run") = false,
        py::arg("force") = false, py::arg("allow_broken") = false, py::arg("header_only") = false, py::arg("whole_file") = false,
        py::arg("verify") = true, py::arg("progress") = py::none(), py::arg("break_link") = false,
        py::arg("remove_tensors") = py::none(), py::arg("rename_tensors") = py::none(), py::arg("keep_tensors") = py::none(),
        py::arg("keep_layers") = py::none(), py::arg("remove_layers") = py::none(), py::arg("keep_experts") = py::none(),
        py::arg("remove_experts") = py::none(), py::arg("graft") = py::none(), py::arg("max_tensors") = 0,
        py::arg("max_bytes") = 0,
        "`ggufkit edit`: set (key -> value, typed as --set types it: an existing key keeps its type, a new one the "
        "registry's), remove (keys), rename (old -> new), chat_template (text), special_tokens (name -> text or id), "
        "patch (a patch file or its dict); then out=PATH or in_place=True (or dry_run=True). A result llama.cpp would "
        "refuse raises ggufkit.Error (code: the rule) and writes nothing. Returns the report: written ('nothing', "
        "'header', 'whole_file'), changes, files, findings, notes. In place through a symbolic link, the file it names is "
        "edited, one in a Hugging Face or Ollama cache's blobs/ refused (code content_store); break_link=True puts the edited "
        "file in place of the link instead. Tensor surgery, as `ggufkit edit` does it (after the keys): "
        "keep_tensors (globs: `ggufkit extract`), remove_tensors (globs), rename_tensors (old -> new: names, globs, or a "
        "regular expression with $1), keep_layers / remove_layers and keep_experts / remove_experts (\"0-3,10\", an int or "
        "a list of ints), graft (\"FROM[:GLOB]\", (FROM, GLOB) or a list of them); max_tensors / max_bytes split the output "
        "anew. The report's tensor_changes list each tensor removed, renamed, sliced, added or replaced.");

  m.def("write", &write_job, py::arg("sketch"), py::arg("out"), py::kw_only(), py::arg("force") = false, py::arg("check") = false,
        py::arg("defines") = py::none(),
        "`ggufkit write`: the file a sketch describes (a dict in the JSON sketch format, or a sketch file's path). "
        "A tensor's values and a metadata array may be numpy arrays: the dtype gives the type (float32 f32, float64 f64, "
        "float16 f16, int8-int64 i8-i64; for metadata also uint8-uint64 and bool) and a tensor's shape its dims, reversed, unless "
        "the entry gives them (type: bf16, q8_0, ... encodes the values). "
        "Broken sketches are written as asked unless check=True. Returns the file written and validate's findings.");

  m.def("dump", &dump_job, py::arg("path"), py::kw_only(), py::arg("inline_data") = false,
        "`ggufkit dump --json`: the sketch dict that write() turns back into the same bytes (tensor data by "
        "reference to the file, or inline as hex).");

  m.def(
      "validate",
      [](const py::handle& path, bool shard_only, const py::object& base, const std::string& dialect) {
        return validate_job(to_path(path, "path"), shard_only, base.is_none() ? "" : to_path(base, "base"), dialect);
      },
      py::arg("path"), py::kw_only(), py::arg("shard_only") = false, py::arg("base") = py::none(), py::arg("dialect") = "llama.cpp",
      "`ggufkit validate`: every finding (ggufkit.Finding), a set's over every shard.");

  m.def("render", &render_job, py::arg("path"), py::arg("conversation"), py::kw_only(), py::arg("name") = "default",
        py::arg("shard_only") = false, py::arg("add_generation_prompt") = py::none(),
        "The prompt the file's chat template gives the conversation ({'messages': [...], ...}), rendered as "
        "Hugging Face's apply_chat_template renders it, with the file's bos and eos tokens.");

  m.def(
      "tokenize",
      [](const py::handle& path, const py::object& text, bool add_special, bool parse_special) {
        const std::string file = to_path(path, "path"), t = text_arg(text);
        InLibrary nogil;
        ModelView v = open_model(file);
        return tokenize_with(file, *vocab_of(file, v.s.model), t, add_special, parse_special);
      },
      py::arg("path"), py::arg("text"), py::kw_only(), py::arg("add_special") = true, py::arg("parse_special") = true,
      "Token ids of text exactly as llama.cpp's llama_tokenize gives them on the file's vocabulary.");

  m.def("replica", &replica_job, py::arg("path"), py::arg("out"), py::kw_only(), py::arg("data") = "sparse", py::arg("force") = false,
        py::arg("shard_only") = false, py::arg("progress") = py::none(),
        "`ggufkit replica`: the model with every tensor byte zero (data='sparse': holes; 'zeros'; 'none': the header alone).");
  m.def("extract_vocab", &extract_job, py::arg("path"), py::arg("out"), py::kw_only(), py::arg("force") = false,
        "`ggufkit extract --vocab-only`: the vocabulary-only file llama.cpp loads with vocab_only.");
  m.def("corrupt", &corrupt_job, py::arg("path"), py::arg("dir"), py::kw_only(), py::arg("seed") = 1, py::arg("count") = py::none(),
        py::arg("force") = false,
        "`ggufkit corrupt`: broken variants of the file into dir, each with what ggml, llama.cpp and ggufkit make of it.");

  m.def(
      "_interrupt_at",
      [](const std::optional<std::string>& point) {
        static std::string kept;  // the point's name, alive while the hook may read it
        g_interrupt_at = nullptr;
        if (!point) return set_fault_hook(nullptr);
        kept = *point;
        g_interrupt_at = kept.c_str();
        set_fault_hook(interrupt_hook);
      },
      py::arg("point"), "For tests: a Ctrl-C at the named fault point of the next write (ggufkit/fault.h), once; None: none.");

  m.attr("__version__") = GGUFKIT_VERSION;
  def_jobs(m);
}
