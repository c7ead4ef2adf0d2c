// `import ggufkit`: the library's front door for Python. Every function fills the request
// the command fills and calls the same entry point (edit, write_sketch, validate, replica,
// ...), with the GIL released while the library works; this file only converts.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "convert.h"
#include "ggufkit/check.h"
#include "ggufkit/corrupt.h"
#include "ggufkit/edit.h"
#include "ggufkit/error.h"
#include "ggufkit/fixture.h"
#include "ggufkit/inspect.h"
#include "ggufkit/numeric.h"
#include "ggufkit/prompt.h"
#include "ggufkit/shards.h"
#include "ggufkit/vocab.h"

namespace py = pybind11;

namespace ggufkit::python {

namespace {

PyObject* g_error = nullptr;  // ggufkit.Error, a ValueError

const char* kind_name(Error::Kind k) { return k == Error::Kind::format ? "format" : k == Error::Kind::usage ? "usage" : "io"; }

py::object finding_object(const Finding& f, const std::string& file);

// Raises ggufkit.Error with the command's message and where: file, offset, field, code
// (a refusing rule's code, else the error's kind: format, usage, io), findings.
void raise_error(const Error& e) {
  py::object err = py::reinterpret_borrow<py::object>(g_error)(py::str(e.what()));
  err.attr("file") = e.file.empty() ? py::object(py::none()) : py::object(py::str(e.file));
  err.attr("offset") = e.offset ? py::object(py::int_(*e.offset)) : py::object(py::none());
  err.attr("field") = py::str(e.field);
  err.attr("kind") = py::str(kind_name(e.kind));
  err.attr("exit_code") = py::int_(e.exit_code());
  err.attr("message") = py::str(e.message);
  py::list findings;
  std::string code = kind_name(e.kind);
  if (const auto* r = dynamic_cast<const EditRefused*>(&e)) {
    for (const Finding& f : r->findings) {
      if (f.severity == Severity::error && code == kind_name(e.kind)) code = code_name(f.code);
      findings.append(finding_object(f, e.file));
    }
    if (r->reason == EditRefused::Reason::template_syntax && code == kind_name(e.kind)) code = "template_syntax";
    if (r->reason == EditRefused::Reason::header_only || r->reason == EditRefused::Reason::header_only_every_shard) code = "header_only";
  }
  err.attr("code") = py::str(code);
  err.attr("findings") = findings;
  PyErr_SetObject(g_error, err.ptr());
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

struct FindingRecord {
  std::string file, code, severity, field, item, message, fix;
  std::optional<uint64_t> offset;
  std::vector<int32_t> ids;
};

py::object finding_object(const Finding& f, const std::string& file) {
  return py::cast(FindingRecord{file, std::string(code_name(f.code)), std::string(severity_name(f.severity)), f.place.name, f.place.item,
                                f.message, f.fix, f.offset, f.ids});
}

// ---- an open file -----------------------------------------------------------------------

// What an open file holds: the model its header describes (copied into memory when read:
// nothing another process writes later shows in it) and the indexes made on first use.
struct State {
  std::string path;
  ModelView view;
  std::optional<std::vector<uint64_t>> by_key, by_name;
  std::shared_ptr<const tokenizer::Vocab> vocab;
  bool closed = false;  // close(): the header and the files let go, for every view of it too
};

class File;

// f.metadata (values) and f.types (type names): read-only mappings in file order, each
// value made from the header when it is asked for.
class KeyMap {
 public:
  KeyMap(std::shared_ptr<State> st, bool types) : st_(std::move(st)), types_(types) {}
  size_t size() const { return model().metadata.size(); }
  py::object get(const std::string& key) const {
    auto i = index(key);
    if (!i) throw py::key_error(key);
    return item(*i);
  }
  py::object get_or(const std::string& key, py::object dflt) const {
    auto i = index(key);
    return i ? item(*i) : dflt;
  }
  bool contains(const py::handle& key) const { return PyUnicode_Check(key.ptr()) && index(key.cast<std::string>()).has_value(); }
  py::list keys() const {
    const Metadata& md = model().metadata;
    py::list out;
    for (size_t i = 0; i < md.size(); ++i) out.append(py::str(std::string(md.key(i))));
    return out;
  }
  py::list values() const {
    py::list out;
    for (size_t i = 0; i < size(); ++i) out.append(item(i));
    return out;
  }
  py::list items() const {
    const Metadata& md = model().metadata;
    py::list out;
    for (size_t i = 0; i < md.size(); ++i) out.append(py::make_tuple(py::str(std::string(md.key(i))), item(i)));
    return out;
  }
  // Where a pair lies in the file (its key's length field) and where its value starts.
  py::object offset_of(const std::string& key, bool value) const {
    auto i = index(key);
    if (!i) throw py::key_error(key);
    auto o = value ? model().metadata.value_offset(*i) : model().metadata.offset(*i);
    return o ? py::object(py::int_(*o)) : py::object(py::none());
  }

 private:
  const Model& model() const;
  std::optional<size_t> index(const std::string& key) const;
  py::object item(size_t i) const {
    const KV kv = model().metadata[i];
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

void check_open(const std::shared_ptr<State>& st) {
  if (!st || st->closed) throw py::value_error("I/O operation on a closed ggufkit.File");
}

class File {
 public:
  explicit File(std::shared_ptr<State> st) : st_(std::move(st)) {}
  const std::shared_ptr<State>& state() const {
    check_open(st_);
    return st_;
  }
  const Scanned& s() const { return state()->view.s; }
  const Model& m() const { return s().model; }
  void close() {
    st_->closed = true;
    st_->view = ModelView{};
    st_->by_key.reset();
    st_->by_name.reset();
    st_->vocab.reset();
  }
  bool closed() const { return st_->closed; }

  size_t tensor_index(const std::string& name) const {
    auto& st = *state();
    const TensorList& ts = st.view.s.model.tensors;
    if (!st.by_name) st.by_name = ts.sorted_by_name();
    auto it = std::lower_bound(st.by_name->begin(), st.by_name->end(), name,
                               [&](uint64_t i, const std::string& n) { return ts.name(i) < n; });
    if (it == st.by_name->end() || ts.name(*it) != name) {
      std::string msg = "no tensor named '" + name + "'";
      throw Error(Error::Kind::usage, st.path, std::nullopt, "", msg);
    }
    return *it;
  }

  TensorRecord record(size_t i) const {
    const Tensor t = m().tensors[i];
    const GgmlType* g = ggml_type(t.type);
    TensorRecord r{t.name, g ? g->name : std::to_string(t.type), t.dims, s().layout.tensor_offsets[i], t.nbytes(), std::nullopt};
    if (state()->view.files > 1) r.shard = state()->view.shard[i];
    return r;
  }

  std::vector<TensorRecord> tensors() const {
    std::vector<TensorRecord> out;
    out.reserve(m().tensors.size());
    for (size_t i = 0; i < m().tensors.size(); ++i) out.push_back(record(i));
    return out;
  }

  MappedBytes tensor_bytes(const std::string& name) const {
    const size_t i = tensor_index(name);
    const Tensor t = m().tensors[i];
    const std::string field = "tensor[" + std::to_string(i) + "] " + t.name;
    if (s().header_only || !t.source)
      throw Error(Error::Kind::usage, state()->path, std::nullopt, field,
                  "the file holds the header alone (a header exemplar): it has no tensor bytes to read");
    const uint64_t n = t.nbytes();
    MappedBytes out;
    out.keep = t.source;
    out.size = static_cast<size_t>(n);
    if (n == 0) return out;
    if (const uint8_t* d = t.source->data()) {
      out.data = d + t.source_offset;
      return out;
    }
    const int fd = t.source->fd();
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

  std::vector<float> tensor_values(const std::string& name) const {
    const Tensor t = m().tensors[tensor_index(name)];
    if (s().header_only) tensor_bytes(name);  // says why there are no values
    return ggufkit::tensor_values(t, m().data_order.value_or(m().order));
  }

 private:
  std::shared_ptr<State> st_;
};

const Model& KeyMap::model() const {
  check_open(st_);
  return st_->view.s.model;
}

std::optional<size_t> KeyMap::index(const std::string& key) const {
  check_open(st_);
  const Metadata& md = st_->view.s.model.metadata;
  if (!st_->by_key) st_->by_key = md.sorted_by_key();
  return md.index_of(key, *st_->by_key);
}

File open_job(const py::handle& path_obj, bool shard_only) {
  const std::string path = to_path(path_obj, "path");
  auto st = std::make_shared<State>();
  st->path = path;
  {
    py::gil_scoped_release nogil;
    st->view = open_model(path, shard_only);
  }
  return File(std::move(st));
}

// ---- jobs -------------------------------------------------------------------------------

py::list change_list(const std::vector<Change>& changes) {
  static const char* kinds[] = {"set", "add", "remove", "rename", "alignment", "retype"};
  py::list out;
  for (const Change& c : changes) {
    py::dict d;
    d["change"] = kinds[c.kind];
    d["key"] = c.key;
    if (c.kind == Change::rename) d["to"] = c.to;
    if (c.kind == Change::retype) {
      d["token"] = c.token;
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

py::dict file_dict(const WrittenFile& f) {
  py::dict d;
  d["path"] = f.path;
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

// Ctrl-C during a long write: the progress callback, which the writer calls as it goes,
// asks Python for its signals and cancels the job (nothing is changed: a write is put in
// place only after its last check of the cancel flag) when one is raised; so does an
// exception from the caller's own progress callable, which is then raised as it was.
struct Interrupts {
  std::atomic<bool> cancel{false};
  std::shared_ptr<py::error_already_set> raised;  // KeyboardInterrupt, or the callable's
  py::object user;                                // the caller's progress(written, total), or None
  void attach(WriteOptions& w) {
    w.cancel = &cancel;
    w.progress = [this](uint64_t written, uint64_t total) {
      py::gil_scoped_acquire gil;
      if (raised) return;
      try {
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        if (!user.is_none()) user(written, total);
      } catch (py::error_already_set& e) {
        raised = std::make_shared<py::error_already_set>(std::move(e));
        cancel = true;
      }
    };
  }
  // Runs the job without the GIL; what the callback caught is raised after it.
  template <typename F>
  auto run(F f) {
    try {
      py::gil_scoped_release nogil;
      auto r = f();
      if (!raised) return r;
    } catch (...) {
      if (!raised) throw;
    }
    raised->restore();
    throw py::error_already_set();
  }
};

// Python's keys and values into the patch, as the command's options build it.
void add_to_patch(Patch& p, const py::object& set, const py::object& remove, const py::object& rename,
                  const py::object& chat_template, const py::object& special_tokens) {
  if (!set.is_none()) {
    if (!PyDict_Check(set.ptr())) throw_usage("set: expected a dict of key -> value");
    for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(set)) {
      const std::string key = py::str(k).cast<std::string>();
      p.add_set(key, to_text(v, "set[" + key + "]"));
    }
  }
  if (!remove.is_none()) {
    if (PyUnicode_Check(remove.ptr())) p.add_remove(remove.cast<std::string>());
    else
      for (const py::handle k : remove) p.add_remove(py::str(k).cast<std::string>());
  }
  if (!rename.is_none()) {
    if (!PyDict_Check(rename.ptr())) throw_usage("rename: expected a dict of old key -> new key");
    for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(rename)) p.add_rename(py::str(k).cast<std::string>(), py::str(v).cast<std::string>());
  }
  if (!chat_template.is_none()) {
    if (!PyUnicode_Check(chat_template.ptr())) throw_usage("chat_template: expected the template's text (a str)");
    p.add_set("tokenizer.chat_template", to_text(chat_template, "chat_template"));
  }
  if (!special_tokens.is_none()) {
    if (!PyDict_Check(special_tokens.ptr())) throw_usage("special_tokens: expected a dict of name -> text (str) or id (int)");
    for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(special_tokens)) {
      const std::string name = py::str(k).cast<std::string>();
      const bool by_id = PyLong_Check(v.ptr()) && !PyBool_Check(v.ptr());
      if (!by_id && !PyUnicode_Check(v.ptr())) throw_usage("special_tokens[" + name + "]: expected the token's text (str) or its id (int)");
      p.add_special(name, by_id ? py::str(v).cast<std::string>() : v.cast<std::string>(), by_id);
    }
  }
}

py::dict edit_job(const py::handle& path, py::object set, py::object remove, py::object rename, py::object chat_template,
                  py::object special_tokens, py::object patch, py::object out, bool in_place, bool dry_run, bool force,
                  bool allow_broken, bool header_only, bool whole_file, bool verify, py::object progress) {
  EditRequest req;
  req.input = to_path(path, "path");
  if (!patch.is_none()) {
    if (PyDict_Check(patch.ptr())) req.patch = parse_patch(to_text(patch, "patch"), "patch", ".");
    else req.patch = read_patch(to_path(patch, "patch"));
  }
  add_to_patch(req.patch, set, remove, rename, chat_template, special_tokens);
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
  req.write.force = force;
  req.write.verify = verify;
  Interrupts irq;
  irq.user = progress;
  irq.attach(req.write);
  const EditReport r = irq.run([&] { return ggufkit::edit(req); });
  static const char* written[] = {"nothing", "header", "whole_file"};
  py::dict d;
  d["file"] = req.input;
  d["dry_run"] = dry_run;
  d["unchanged"] = r.unchanged;
  d["written"] = written[static_cast<int>(r.written)];
  d["changes"] = change_list(r.changes);
  d["data_offset"] = py::make_tuple(r.data_offset_before, r.data_offset_after);
  d["file_size"] = py::make_tuple(r.file_size_before, r.file_size_after);
  d["header_fits"] = r.header_fits;
  if (r.written == Written::header) {
    d["header_size"] = r.header_size;
    d["bytes_written"] = r.header_bytes;
    d["at"] = r.header_at;
  }
  d["why_whole"] = r.why_whole;
  py::list files;
  for (const WrittenFile& f : r.files) files.append(file_dict(f));
  d["files"] = files;
  d["findings"] = findings_list(r.findings_new, req.input);
  py::list notes;
  for (const auto& [file, msg] : r.notes) notes.append(py::make_tuple(file, msg));
  d["notes"] = notes;
  return d;
}

py::dict write_job(const py::object& sketch, const py::handle& out, bool force, bool check, py::object defines) {
  WriteSketchRequest req;
  if (PyDict_Check(sketch.ptr())) {
    req.sketch = "sketch";
    req.text = to_text(sketch, "sketch");
  } else {
    req.sketch = to_path(sketch, "sketch");
  }
  req.output = to_path(out, "out");
  req.force = force;
  req.check = check;
  if (!defines.is_none())
    for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(defines)) req.defines[py::str(k).cast<std::string>()] = py::str(v).cast<std::string>();
  WriteSketchReport r;
  {
    py::gil_scoped_release nogil;
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
    py::gil_scoped_release nogil;
    ModelView v = open_model(p);
    DumpOptions o;
    o.json = true;
    o.inline_data = inline_data;
    text = dump_sketch(v.s.model, o);
  }
  return py::module_::import("json").attr("loads")(py::bytes(text));
}

std::vector<FindingRecord> validate_job(const std::string& path, bool shard_only, const std::string& base) {
  Verdict v;
  {
    py::gil_scoped_release nogil;
    v = validate(path, shard_only, nullptr, base);
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
  py::gil_scoped_release nogil;
  ModelView v = open_model(path, true);
  for (const LabeledSpan& sp : v.s.layout.spans) out.push_back({span_kind_name(sp.kind), sp.path, sp.span.offset, sp.span.size});
  return out;
}

std::string render_job(const py::handle& path, const py::object& conversation, const std::string& name, bool shard_only,
                       std::optional<bool> add_generation_prompt) {
  const std::string file = to_path(path, "path");
  if (!PyDict_Check(conversation.ptr())) throw_usage("conversation: expected a dict with \"messages\"");
  const std::string json = to_text(conversation, "conversation");
  py::gil_scoped_release nogil;
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
  return render_prompt(file, key, t->str, v.s.model, conv);
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

WriteOptions plain_write(bool force) {
  WriteOptions w;
  w.force = force;
  return w;
}

py::dict replica_job(const py::handle& path, const py::handle& out, const std::string& data, bool force, bool shard_only) {
  ReplicaRequest req;
  req.input = to_path(path, "path");
  req.output = to_path(out, "out");
  if (data == "sparse") req.data = ReplicaData::sparse;
  else if (data == "zeros") req.data = ReplicaData::zeros;
  else if (data == "none") req.data = ReplicaData::none;
  else throw_usage("data: expected 'sparse', 'zeros' or 'none', got '" + data + "'");
  req.shard_only = shard_only;
  req.write = plain_write(force);
  ReplicaReport r;
  {
    py::gil_scoped_release nogil;
    r = replica(req);
  }
  py::list files;
  for (const ReplicaFile& f : r.files) {
    py::dict d = file_dict(f.file);
    d["source"] = f.source;
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
  req.write = plain_write(force);
  ExtractReport r;
  {
    py::gil_scoped_release nogil;
    r = extract_vocab(req);
  }
  py::dict d = file_dict(r.file);
  d["keys_kept"] = r.keys_kept;
  d["keys_dropped"] = r.keys_dropped;
  d["tensors_dropped"] = r.tensors_dropped;
  d["dropped"] = r.dropped;
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
    py::gil_scoped_release nogil;
    r = corrupt(req);
  }
  py::list out;
  for (const CorruptEntry& e : r.files) {
    py::dict d;
    d["file"] = e.file;
    d["span_kind"] = e.span_kind;
    d["field"] = e.field;
    d["offset"] = e.offset;
    d["mutation"] = e.mutation;
    d["gguf"] = e.gguf_accepts ? "accepts" : "refuses";  // the manifest's words
    d["llama"] = e.llama_loads ? "loads" : "refuses";
    d["error_offset"] = e.error_offset ? py::object(py::int_(*e.error_offset)) : py::object(py::none());
    d["error"] = e.error;
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

PYBIND11_MODULE(ggufkit, m) {
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
      .def_readonly("name", &TensorRecord::name)
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
      .def_readonly("field", &SpanRecord::field)
      .def_property_readonly("end", [](const SpanRecord& s) { return s.offset + s.size; })
      .def("__repr__", [](const SpanRecord& s) { return fields_repr("Span", s, {"kind", "offset", "size", "field"}); });

  py::class_<FindingRecord>(m, "Finding", "What validate finds: code (as validate prints it), severity (error, warning, info), "
                                          "offset (or None), field (the key or tensor), item, message, fix (a command, or ''), ids, file.")
      .def_readonly("file", &FindingRecord::file)
      .def_readonly("code", &FindingRecord::code)
      .def_readonly("severity", &FindingRecord::severity)
      .def_readonly("offset", &FindingRecord::offset)
      .def_readonly("field", &FindingRecord::field)
      .def_readonly("item", &FindingRecord::item)
      .def_readonly("message", &FindingRecord::message)
      .def_readonly("fix", &FindingRecord::fix)
      .def_readonly("ids", &FindingRecord::ids)
      .def("__repr__", [](const FindingRecord& f) { return fields_repr("Finding", f, {"code", "severity", "offset", "field", "message"}); });

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
      .def("offset", [](const KeyMap& k, const std::string& key) { return k.offset_of(key, false); }, py::arg("key"),
           "Where the pair starts in the file (its key's length), or None once the model was changed.")
      .def("value_offset", [](const KeyMap& k, const std::string& key) { return k.offset_of(key, true); }, py::arg("key"),
           "Where the pair's value starts in the file.")
      .def("__repr__", [](const KeyMap& k) { return "<ggufkit.KeyMap of " + std::to_string(k.size()) + " keys>"; });
  py::module_::import("collections.abc").attr("Mapping").attr("register")(keymap);

  py::class_<File>(m, "File", "An open GGUF file (ggufkit.open): its header read and checked, its tensor data left on disk.")
      .def_property_readonly("path", [](const File& f) { return f.state()->path; })
      .def_property_readonly("version", [](const File& f) { return f.m().version; })
      .def_property_readonly("byte_order", [](const File& f) { return f.m().order == ByteOrder::big ? "big" : "little"; })
      .def_property_readonly("alignment", [](const File& f) { return f.s().layout.alignment; })
      .def_property_readonly("data_offset", [](const File& f) { return f.s().layout.data_offset; })
      .def_property_readonly("file_size", [](const File& f) { return f.s().model_size; },
                             "The file's size (a set: every shard's added up; a header exemplar: the model's).")
      .def_property_readonly("files", [](const File& f) { return f.state()->view.files; }, "The files of its shard set (1 for a lone file).")
      .def_property_readonly("header_only", [](const File& f) { return f.s().header_only; }, "A header exemplar: no tensor bytes.")
      .def_property_readonly("metadata", [](const File& f) { return KeyMap(f.state(), false); },
                             "key -> value, in file order: int, float, bool, str (bytes when not UTF-8), list for arrays.")
      .def_property_readonly("types", [](const File& f) { return KeyMap(f.state(), true); },
                             "key -> type name: 'u32', 'string', 'array[string]', ...")
      .def_property_readonly("tensors", &File::tensors, "Every tensor's record, in file order (ggufkit.Tensor).")
      .def(
          "tensor",
          [](const File& f, const std::string& name) { return f.record(f.tensor_index(name)); }, py::arg("name"),
          "One tensor's record by name; ggufkit.Error (usage) when there is none.")
      .def(
          "tensor_bytes",
          [](const File& f, const std::string& name) {
            MappedBytes b;
            {
              py::gil_scoped_release nogil;
              b = f.tensor_bytes(name);
            }
            return py::memoryview(py::cast(std::move(b)));
          },
          py::arg("name"),
          "The tensor's bytes as stored: a read-only memoryview of the file mapped, no copy. (A file cut short "
          "by another program while a view lives faults on access, as any map does: copy what you keep.)")
      .def(
          "tensor_values",
          [](const File& f, const std::string& name) -> py::object {
            std::vector<float> v;
            {
              py::gil_scoped_release nogil;
              v = f.tensor_values(name);
            }
            try {
              py::module_ np = py::module_::import("numpy");
              py::object a = np.attr("empty")(v.size(), np.attr("float32"));
              py::buffer_info info = py::buffer(a).request(true);
              std::memcpy(info.ptr, v.data(), v.size() * sizeof(float));
              return a;
            } catch (const py::error_already_set& e) {
              if (!e.matches(PyExc_ImportError)) throw;
            }
            return py::cast(v);
          },
          py::arg("name"), "The tensor's values decoded (f32, f16, bf16, q8_0, q4_K, ...): a numpy float32 array, or a list of floats without numpy.")
      .def(
          "validate",
          [](const File& f, const py::object& base) {
            return validate_job(f.state()->path, false, base.is_none() ? "" : to_path(base, "base"));
          },
          py::arg("base") = py::none(), "What `ggufkit validate` finds (ggufkit.Finding list); base: the model an adapter is for.")
      .def("map", [](const File& f) { return map_job(f.state()->path); }, "Every span of the file in order (ggufkit.Span list); a shard's own.")
      .def(
          "tokenize",
          [](const File& f, const py::object& text, bool add_special, bool parse_special) {
            auto& st = *f.state();
            const std::string t = text_arg(text);
            py::gil_scoped_release nogil;
            if (!st.vocab) st.vocab = vocab_of(st.path, st.view.s.model);
            return tokenize_with(st.path, *st.vocab, t, add_special, parse_special);
          },
          py::arg("text"), py::arg("add_special") = true, py::arg("parse_special") = true,
          "Token ids exactly as llama.cpp's llama_tokenize gives them (the vocabulary loaded once per File).")
      .def("close", &File::close)
      .def_property_readonly("closed", &File::closed)
      .def("__enter__", [](File& f) -> File& { return f; }, py::return_value_policy::reference)
      .def("__exit__", [](File& f, py::args) { f.close(); })
      .def("__repr__", [](const File& f) {
        if (f.closed()) return std::string("<ggufkit.File closed>");
        return "<ggufkit.File " + f.state()->path + ": v" + std::to_string(f.m().version) + ", " + std::to_string(f.m().metadata.size()) +
               " keys, " + std::to_string(f.m().tensors.size()) + " tensors>";
      });

  m.def("open", &open_job, py::arg("path"), py::arg("shard_only") = false,
        "Open a GGUF file: its header read and checked as `ggufkit show` reads it. A file named as a shard "
        "(NAME-00001-of-00003.gguf) opens its whole set, unless shard_only.");

  m.def("edit", &edit_job, py::arg("path"), py::kw_only(), py::arg("set") = py::none(), py::arg("remove") = py::none(),
        py::arg("rename") = py::none(), py::arg("chat_template") = py::none(), py::arg("special_tokens") = py::none(),
        py::arg("patch") = py::none(), py::arg("out") = py::none(), py::arg("in_place") = false, py::arg("dry_run") = false,
        py::arg("force") = false, py::arg("allow_broken") = false, py::arg("header_only") = false, py::arg("whole_file") = false,
        py::arg("verify") = true, py::arg("progress") = py::none(),
        "`ggufkit edit`: set (key -> value, typed as --set types it: an existing key keeps its type, a new one the "
        "registry's), remove (keys), rename (old -> new), chat_template (text), special_tokens (name -> text or id), "
        "patch (a patch file or its dict); then out=PATH or in_place=True (or dry_run=True). A result llama.cpp would "
        "refuse raises ggufkit.Error (code: the rule) and writes nothing. Returns the report: written ('nothing', "
        "'header', 'whole_file'), changes, files, findings, notes.");

  m.def("write", &write_job, py::arg("sketch"), py::arg("out"), py::kw_only(), py::arg("force") = false, py::arg("check") = false,
        py::arg("defines") = py::none(),
        "`ggufkit write`: the file a sketch describes (a dict in the JSON sketch format, or a sketch file's path). "
        "Broken sketches are written as asked unless check=True. Returns the file written and validate's findings.");

  m.def("dump", &dump_job, py::arg("path"), py::kw_only(), py::arg("inline_data") = false,
        "`ggufkit dump --json`: the sketch dict that write() turns back into the same bytes (tensor data by "
        "reference to the file, or inline as hex).");

  m.def(
      "validate",
      [](const py::handle& path, bool shard_only, const py::object& base) {
        return validate_job(to_path(path, "path"), shard_only, base.is_none() ? "" : to_path(base, "base"));
      },
      py::arg("path"), py::kw_only(), py::arg("shard_only") = false, py::arg("base") = py::none(),
      "`ggufkit validate`: every finding (ggufkit.Finding), a set's over every shard.");

  m.def("render", &render_job, py::arg("path"), py::arg("conversation"), py::kw_only(), py::arg("name") = "default",
        py::arg("shard_only") = false, py::arg("add_generation_prompt") = py::none(),
        "The prompt the file's chat template gives the conversation ({'messages': [...], ...}), rendered as "
        "Hugging Face's apply_chat_template renders it, with the file's bos and eos tokens.");

  m.def(
      "tokenize",
      [](const py::handle& path, const py::object& text, bool add_special, bool parse_special) {
        const std::string file = to_path(path, "path"), t = text_arg(text);
        py::gil_scoped_release nogil;
        ModelView v = open_model(file);
        return tokenize_with(file, *vocab_of(file, v.s.model), t, add_special, parse_special);
      },
      py::arg("path"), py::arg("text"), py::kw_only(), py::arg("add_special") = true, py::arg("parse_special") = true,
      "Token ids of text exactly as llama.cpp's llama_tokenize gives them on the file's vocabulary.");

  m.def("replica", &replica_job, py::arg("path"), py::arg("out"), py::kw_only(), py::arg("data") = "sparse", py::arg("force") = false,
        py::arg("shard_only") = false,
        "`ggufkit replica`: the model with every tensor byte zero (data='sparse': holes; 'zeros'; 'none': the header alone).");
  m.def("extract_vocab", &extract_job, py::arg("path"), py::arg("out"), py::kw_only(), py::arg("force") = false,
        "`ggufkit extract --vocab-only`: the vocabulary-only file llama.cpp loads with vocab_only.");
  m.def("corrupt", &corrupt_job, py::arg("path"), py::arg("dir"), py::kw_only(), py::arg("seed") = 1, py::arg("count") = py::none(),
        py::arg("force") = false,
        "`ggufkit corrupt`: broken variants of the file into dir, each with what ggml, llama.cpp and ggufkit make of it.");

  m.attr("__version__") = GGUFKIT_VERSION;
}
