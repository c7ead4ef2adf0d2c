// The command's other jobs for Python: each fills the request the command fills and calls
// the library's same front door, with the same keywords as the command's options, and
// returns what the command prints with --json, as dicts and lists with the same keys.
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "convert.h"
#include "ggufkit/edit.h"
#include "ggufkit/hash.h"
#include "ggufkit/inspect.h"
#include "ggufkit/journal.h"
#include "ggufkit/shards.h"
#include "ggufkit/text.h"
#include "ggufkit/vocab.h"

namespace ggufkit::python {

namespace {

WriteOptions write_options(bool verify, bool force) {
  WriteOptions w;
  w.verify = verify;
  w.force = force;
  return w;
}

// An integer as Python has it: an int or what stands for one (numpy's integers, __index__),
// never a bool (True is no count) or a float.
std::optional<py::int_> integer(const py::handle& o) {
  if (PyBool_Check(o.ptr()) || !PyIndex_Check(o.ptr())) return std::nullopt;
  PyObject* n = PyNumber_Index(o.ptr());
  if (!n) throw py::error_already_set();  // its __index__ raised
  return py::reinterpret_steal<py::int_>(n);
}

// A count or size the caller gives: an integer of at least 1, or None.
std::optional<uint64_t> positive(const py::object& o, const char* what, const char* expected) {
  if (o.is_none()) return std::nullopt;
  const std::optional<py::int_> n = integer(o);
  unsigned long long v = n ? PyLong_AsUnsignedLongLong(n->ptr()) : 0;
  if (n && PyErr_Occurred()) {  // negative, or past 64 bits
    PyErr_Clear();
    v = 0;
  }
  if (v < 1) throw_usage(std::string(what) + ": expected " + expected + ", at least 1");
  return v;
}

// split and merge --json: {"files": [{"file", "tensors", "file_size", "tensors_verified"}]}.
py::dict written_files(const std::vector<WrittenFile>& rs) {
  py::list files;
  for (const WrittenFile& f : rs) {
    py::dict d;
    d["file"] = text_str(f.path);
    d["tensors"] = f.tensors;
    d["file_size"] = f.file_size;
    d["tensors_verified"] = f.tensors_verified;
    files.append(d);
  }
  py::dict d;
  d["files"] = files;
  return d;
}

py::dict split_job(const py::handle& path, const py::handle& prefix, const py::object& max_tensors, const py::object& max_size,
                   bool metadata_only_first, bool verify, bool force, py::object progress) {
  SplitRequest req;
  req.input = to_path(path, "path");
  req.prefix = to_path(prefix, "prefix");
  const std::optional<uint64_t> n = positive(max_tensors, "max_tensors", "a number of tensors");
  const std::optional<uint64_t> size = positive(max_size, "max_size", "a number of bytes");
  if (n.has_value() == size.has_value()) throw_usage("give one of max_tensors=N and max_size=BYTES");
  req.max_tensors = n.value_or(0);
  req.max_bytes = size.value_or(0);
  req.metadata_only_first = metadata_only_first;
  req.write = write_options(verify, force);
  Interrupts irq(std::move(progress));
  irq.attach(req.context);
  return written_files(irq.run([&] { return split(req); }));
}

py::dict merge_job(const py::handle& path, const py::handle& out, bool verify, bool force, py::object progress) {
  MergeRequest req{to_path(path, "path"), to_path(out, "out"), write_options(verify, force), {}};
  Interrupts irq(std::move(progress));
  irq.attach(req.context);
  return written_files(irq.run([&] { return merge(req); }));
}

// ---- realign and convert: an edit of the alignment or byte order ----------------------

py::dict sizes(uint64_t before, uint64_t after) {
  py::dict d;
  d["before"] = before;
  d["after"] = after;
  return d;
}

// The report as `ggufkit realign/convert --json` prints it: the situation (nothing to change,
// a dry run's plan, the header written in place, the file written), the set's file count
// and each file written. Values in changes are as the command shows them (brief text).
py::dict edit_report(const EditRequest& req, const EditReport& r) {
  static const char* kinds[] = {"set", "add", "remove", "rename", "alignment", "retype"};
  py::list changes;
  for (const Change& c : r.changes) {
    py::dict d;
    d["change"] = kinds[c.kind];
    d["key"] = text_str(c.key);
    if (c.kind == Change::rename) d["to"] = text_str(c.to);
    if (c.before) d["before"] = text_str(brief_value(*c.before, 200));
    if (c.after) d["after"] = text_str(brief_value(*c.after, 200));
    changes.append(d);
  }
  py::dict d;
  if (r.unchanged) {
    d["file"] = text_str(req.input);
    d["changes"] = py::list();
    d["written"] = false;
  } else if (req.dry_run) {
    d["dry_run"] = true;
    d["changes"] = changes;
    d["data_offset"] = sizes(r.data_offset_before, r.data_offset_after);
    d["file_size"] = sizes(r.file_size_before, r.file_size_after);
  } else if (r.written == Written::header) {
    d["file"] = text_str(r.files.at(0).path);
    d["changes"] = changes;
    d["written"] = "header";
    d["header_bytes"] = r.header_size;
    d["bytes_written"] = r.header_bytes;
    d["at"] = r.header_at;
  } else {
    const WrittenFile& f = r.files.at(0);
    d["file"] = text_str(f.path);
    d["changes"] = changes;
    d["file_size"] = f.file_size;
    d["data_offset"] = f.data_offset;
    d["tensors_verified"] = f.tensors_verified;
    d["bytes_verified"] = f.bytes_verified;
  }
  d["set_files"] = r.set_files;
  py::list files;
  for (const WrittenFile& f : r.files) files.append(file_dict(f));
  d["files"] = files;
  return d;
}

// The output options realign and convert share with the command's.
EditRequest edit_request(const py::handle& path, const py::object& out, bool in_place, bool dry_run, bool force, bool allow_broken,
                         bool verify, bool break_link) {
  EditRequest req;
  req.input = to_path(path, "path");
  if (!out.is_none()) req.output = to_path(out, "out");
  if (!dry_run && in_place == !out.is_none()) throw_usage("give exactly one of out=PATH and in_place=True (or dry_run=True)");
  if (break_link && !in_place) throw_usage("break_link is for edits in place: give in_place=True");
  req.in_place = in_place;
  req.dry_run = dry_run;
  req.break_link = break_link;
  req.allow_broken = allow_broken;
  req.write = write_options(verify, force);
  return req;
}

py::dict run_edit(EditRequest& req, py::object progress) {
  Interrupts irq(std::move(progress));
  irq.attach(req.context);
  const EditReport r = irq.run([&] { return edit(req); });
  return edit_report(req, r);
}

py::dict realign_job(const py::handle& path, const py::object& alignment, const py::object& out, bool in_place, bool dry_run,
                     bool force, bool allow_broken, bool verify, bool break_link, py::object progress) {
  EditRequest req = edit_request(path, out, in_place, dry_run, force, allow_broken, verify, break_link);
  // An int, or its text; 'default' (32, no key) as the command takes it.
  if (const std::optional<py::int_> n = integer(alignment)) req.patch.set_alignment(py::str(n->ptr()).cast<std::string>());
  else if (PyUnicode_Check(alignment.ptr())) req.patch.set_alignment(name_arg(alignment, "alignment"));
  else throw_usage("alignment: expected a power of two (int) or 'default'");
  return run_edit(req, std::move(progress));
}

py::dict convert_job(const py::handle& path, const std::string& byte_order, const py::object& out, bool in_place, bool dry_run,
                     bool force, bool allow_broken, bool verify, bool break_link, py::object progress) {
  if (byte_order != "big" && byte_order != "little") throw_usage("byte_order must be 'big' or 'little', found '" + byte_order + "'");
  EditRequest req = edit_request(path, out, in_place, dry_run, force, allow_broken, verify, break_link);
  req.byte_order = byte_order == "big" ? ByteOrder::big : ByteOrder::little;
  return run_edit(req, std::move(progress));
}

// ---- hash ---------------------------------------------------------------------------

// algo: a name, names with commas or 'all' (as the command's --algo), or a list of names.
std::string algo_text(const py::object& algo) {
  if (algo.is_none()) return "";
  if (PyUnicode_Check(algo.ptr())) return name_arg(algo, "algo");
  if (PyBytes_Check(algo.ptr()) || !py::isinstance<py::iterable>(algo))
    throw_usage("algo: expected a name (xxh64, sha1, sha256, uuid), names with commas, 'all', or a list of names");
  std::string text;
  for (const py::handle a : algo) text += (text.empty() ? "" : ",") + name_arg(py::reinterpret_borrow<py::object>(a), "algo");
  return text;
}

py::object hex_or_none(const std::string& s) { return s.empty() ? py::object(py::none()) : py::object(py::str(s)); }

// hash --check --json.
py::dict check_dict(const HashReport& rep) {
  const ManifestCheck& c = *rep.check;
  py::list present, lines;
  for (HashAlgo a : c.present) present.append(py::str(std::string(hash_algo_name(a))));
  for (const CheckedLine& l : c.lines) {
    py::dict d;
    d["algo"] = std::string(hash_algo_name(l.algo));
    d["name"] = text_str(l.name);
    d["file"] = text_str(rep.files[l.file].path);
    d["tensor"] = l.tensor ? py::object(text_str(*l.tensor)) : py::object(py::none());
    d["status"] = std::string(check_status_name(l.status));
    d["hash"] = hex_or_none(l.actual);
    d["expected"] = hex_or_none(l.expected);
    d["line"] = l.line ? py::object(py::int_(l.line)) : py::object(py::none());
    if (l.status != CheckStatus::ok) d["message"] = message_str(check_failure_text(l, rep));
    lines.append(d);
  }
  py::dict d;
  d["manifest"] = text_str(c.manifest);
  d["present"] = present;
  d["ok"] = c.ok();
  d["other_lines"] = c.other_lines;
  d["lines"] = lines;
  return d;
}

py::dict hash_job(const py::handle& path, const py::object& algo, bool file, bool tensors_too, bool manifest, const py::object& check,
                  bool shard_only, py::object progress) {
  HashRequest req = hash_request(to_path(path, "path"), algo_text(algo), file, tensors_too, manifest,
                                 check.is_none() ? std::nullopt : std::optional<std::string>(to_path(check, "check")), shard_only);
  const bool tensors = !file || tensors_too;
  Interrupts irq(std::move(progress));
  irq.attach(req.context);
  req.progress = req.context.progress;  // hashing tells its progress on the calling thread
  const HashReport rep = irq.run([&] { return hash_files(req); });

  if (req.check) return check_dict(rep);
  py::dict d;
  if (manifest) {
    py::list lines;
    for (const ManifestLine& l : manifest_of(rep)) {
      py::dict one;
      one["algo"] = std::string(hash_algo_name(l.algo));
      one["hash"] = l.hex;
      one["name"] = text_str(l.name);
      lines.append(one);
    }
    d["lines"] = lines;
    return d;
  }
  if (tensors) {
    const HashAlgo a = req.algos[0];
    const std::string name(hash_algo_name(a));
    py::list ts;
    for (const HashedTensor& t : rep.tensors) {
      py::dict one;
      one["name"] = text_str(t.name);
      one[py::str(name)] = t.hex.at(a);
      ts.append(one);
    }
    d["algo"] = name;
    d["all"] = rep.all.at(a);
    d["tensors"] = ts;
  }
  if (file) {
    py::list files;
    for (const HashedFile& f : rep.files) {
      py::dict one;
      one["file"] = text_str(f.path);
      one["bytes"] = f.size;
      one["sha256"] = f.sha256;
      files.append(one);
    }
    d["files"] = files;
  }
  return d;
}

// ---- diff ---------------------------------------------------------------------------

py::dict diff_job(const py::handle& a_path, const py::handle& b_path, bool shard_only, bool exit_code) {
  const std::string a = to_path(a_path, "a"), b = to_path(b_path, "b");
  ModelView x, y;
  std::vector<Difference> diffs;
  {
    InLibrary nogil;
    x = open_model(a, shard_only);
    y = open_model(b, shard_only);
    // A set stands for its model: the models are compared, not where their bytes lie.
    diffs = diff_files(x.s, y.s, x.files == 1 && y.files == 1);
  }
  py::list out;
  for (const Difference& d : diffs) {
    py::dict one;
    one["change"] = std::string(diff_kind_name(d.kind));
    if (!d.key.empty()) one["key"] = text_str(d.key);
    if (d.a) one["type"] = value_type_name(d.a->type);
    else if (d.b) one["type"] = value_type_name(d.b->type);
    if (d.a) one["a"] = to_python(*d.a);
    else if (!d.a_text.empty()) one["a"] = text_str(d.a_text);
    if (d.b) one["b"] = to_python(*d.b);
    else if (!d.b_text.empty()) one["b"] = text_str(d.b_text);
    out.append(one);
  }
  py::dict r;
  r["same"] = diffs.empty();
  r["a_files"] = x.files;
  r["b_files"] = y.files;
  r["differences"] = out;
  if (exit_code && !diffs.empty()) {
    // The command's exit 1 as an error that carries the report.
    raise_error(Error(Error::Kind::format, b, std::nullopt, "",
                      "differs from " + a + ": " + std::to_string(diffs.size()) + " difference" + (diffs.size() == 1 ? "" : "s")));
    py::error_already_set e;
    e.value().attr("code") = "differ";
    e.value().attr("differences") = out;
    throw e;
  }
  return r;
}

// ---- detokenize and recover -----------------------------------------------------------

py::dict detokenize_job(const py::handle& path, const py::object& ids_arg, bool remove_special, bool unparse_special, bool shard_only) {
  const std::string file = to_path(path, "path");
  if (PyUnicode_Check(ids_arg.ptr()) || PyBytes_Check(ids_arg.ptr()) || !py::isinstance<py::iterable>(ids_arg))
    throw_usage("ids: expected a list of token ids (int)");
  std::vector<int64_t> ids;
  for (const py::handle i : ids_arg) {  // a list, a tuple, a numpy array of ints, ...
    const std::optional<py::int_> n = integer(i);
    if (!n) throw_usage("ids: expected a list of token ids (int), found " + py::repr(i).cast<std::string>());
    int overflow = 0;
    const long long id = PyLong_AsLongLongAndOverflow(n->ptr(), &overflow);
    if (overflow) throw_usage("not a token id: " + py::str(n->ptr()).cast<std::string>());
    ids.push_back(id);
  }
  std::string text;
  {
    InLibrary nogil;
    ModelView v = open_model(file, shard_only);
    text = detokenize_ids(*vocab_of(file, v.s.model), file, ids, remove_special, unparse_special);
  }
  py::dict d;
  d["text"] = text_str(text);
  return d;
}

py::dict recover_job(const py::handle& path, bool discard) {
  static const char* const names[] = {"none", "rolled_back", "kept_new", "set_finished", "discarded"};
  const std::string file = to_path(path, "path");
  Recovery r;
  {
    InLibrary nogil;
    r = recover(file, discard, Context{});
  }
  py::dict d;
  d["file"] = text_str(file);
  d["recovery"] = names[static_cast<int>(r)];
  return d;
}

}  // namespace

void def_jobs(py::module_& m) {
  m.def("split", &split_job, py::arg("path"), py::arg("prefix"), py::kw_only(), py::arg("max_tensors") = py::none(),
        py::arg("max_size") = py::none(), py::arg("metadata_only_first") = false, py::arg("verify") = true, py::arg("force") = false,
        py::arg("progress") = py::none(),
        "`ggufkit split`: the model (a file or any shard of a set) as a shard set PREFIX-00001-of-0000N.gguf, ..., by "
        "llama.cpp's gguf-split convention: a new shard every max_tensors tensors, or before its tensor bytes pass max_size "
        "bytes (one of the two). Every shard is written and verified before any is put in place. Returns {'files': [...]}.");
  m.def("merge", &merge_job, py::arg("path"), py::arg("out"), py::kw_only(), py::arg("verify") = true, py::arg("force") = false,
        py::arg("progress") = py::none(),
        "`ggufkit merge`: a shard set (any of its shards) as one file, without the split.* keys. Returns {'files': [...]}.");
  m.def("realign", &realign_job, py::arg("path"), py::arg("alignment"), py::arg("out") = py::none(), py::kw_only(),
        py::arg("in_place") = false, py::arg("dry_run") = false, py::arg("force") = false, py::arg("allow_broken") = false,
        py::arg("verify") = true, py::arg("break_link") = false, py::arg("progress") = py::none(),
        "`ggufkit realign`: the file re-laid at alignment N (a power of two; 'default': 32 with no key), every tensor's "
        "bytes carried over unchanged. Returns the report `realign --json` prints.");
  m.def("convert", &convert_job, py::arg("path"), py::arg("byte_order"), py::arg("out") = py::none(), py::kw_only(),
        py::arg("in_place") = false, py::arg("dry_run") = false, py::arg("force") = false, py::arg("allow_broken") = false,
        py::arg("verify") = true, py::arg("break_link") = false, py::arg("progress") = py::none(),
        "`ggufkit convert`: the model in byte order 'big' or 'little', byte for byte what llama.cpp's "
        "gguf_convert_endian.py writes. Returns the report `convert --json` prints.");
  m.def("hash", &hash_job, py::arg("path"), py::kw_only(), py::arg("algo") = py::none(), py::arg("file") = false,
        py::arg("tensors") = false, py::arg("manifest") = false, py::arg("check") = py::none(), py::arg("shard_only") = false,
        py::arg("progress") = py::none(),
        "`ggufkit hash --json`: a checksum of every tensor and of all tensor data (algo 'xxh64', 'sha1' or 'sha256'); "
        "file=True: each file's SHA-256 (tensors=True: the tensor checksums too); manifest=True: llama-gguf-hash's manifest "
        "lines; check=MANIFEST: each file checked against a manifest ('ok' says whether all passed).");
  m.def("diff", &diff_job, py::arg("a"), py::arg("b"), py::kw_only(), py::arg("shard_only") = false, py::arg("exit_code") = false,
        "`ggufkit diff --json`: everything by which b differs from a. exit_code=True: differing files raise ggufkit.Error "
        "(code 'differ', exit_code 1, .differences) as the command exits 1.");
  m.def("detokenize", &detokenize_job, py::arg("path"), py::arg("ids"), py::kw_only(), py::arg("remove_special") = false,
        py::arg("unparse_special") = true, py::arg("shard_only") = false,
        "`ggufkit detokenize --json`: {'text': ...}, the text the ids stand for as llama.cpp's llama_detokenize gives it.");
  m.def("recover", &recover_job, py::arg("path"), py::kw_only(), py::arg("discard") = false,
        "`ggufkit recover --json`: finish an in-place edit a crash cut short (its journal beside the file); discard=True "
        "removes an untrusted journal when the file reads clean without it. Returns {'file', 'recovery'}.");
}

}  // namespace ggufkit::python
