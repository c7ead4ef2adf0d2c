// The front door: open (a file or a set), patch, ask the rule book, choose between the
// header in place and the whole-file rewrite, lock, write, report.
#include "ggufkit/edit.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "ggufkit/background.h"
#include "ggufkit/check.h"
#include "ggufkit/format.h"
#include "ggufkit/jinja.h"
#include "ggufkit/journal.h"
#include "ggufkit/lock.h"
#include "ggufkit/output.h"
#include "ggufkit/path.h"
#include "ggufkit/prompt.h"
#include "ggufkit/registry.h"
#include "ggufkit/rewrite.h"
#include "ggufkit/shards.h"
#include "ggufkit/sketch.h"
#include "ggufkit/vocab.h"
#include "ggufkit/split.h"
#include "ggufkit/writer.h"

namespace ggufkit {

EditRefused::EditRefused(Reason r, std::string file, std::string field, std::string message, std::vector<Finding> found)
    : Error(r == Reason::header_only || r == Reason::header_only_every_shard || r == Reason::content_store ? Kind::usage
                                                                                                          : Kind::format,
            std::move(file),
            std::nullopt, std::move(field), std::move(message)),
      reason(r),
      findings(std::move(found)) {}

namespace {

// The request's notes go to its sink, or into the report, while it runs: the calling
// thread's handler (and its background threads'), one note at a time.
class Notes {
 public:
  Notes(const WriteOptions& w, EditReport* report) {
    if (!w.notes && !report) return;  // the caller's own handler, if any
    NoteHandler h = [this, sink = w.notes, report](const std::string& f, const std::string& m) {
      std::lock_guard<std::mutex> g(m_);
      if (sink) sink(f, m);
      else report->notes.emplace_back(f, m);
    };
    scope_.emplace(std::move(h));
  }
  Notes(const Notes&) = delete;
  Notes& operator=(const Notes&) = delete;

 private:
  std::mutex m_;
  std::optional<NoteScope> scope_;
};

RewriteOptions rewrite_options(const WriteOptions& w, bool replace) {
  RewriteOptions opt;
  opt.verify = w.verify;
  opt.replace = replace;
  opt.cancel = w.cancel;
  opt.progress = w.progress;
  return opt;
}

void starting(const WriteOptions& w) {
  if (w.on_write_start) w.on_write_start();
}

WrittenFile written_file(const RewriteResult& r, const Model& m) {
  return {r.path, r.layout.file_size, r.layout.data_offset, m.tensors.size(), m.metadata.size(), r.tensors_verified,
          r.bytes_verified};
}

std::vector<std::string> paths_of(const ShardSet& set) {
  std::vector<std::string> out;
  for (const Shard& s : set.shards) out.push_back(s.path);
  return out;
}

// What an edit checks a model against: the rules' errors (check_model) and the chat
// templates' warnings.
std::vector<Finding> gate_findings(const Model& m, const Layout& layout = Layout{}) {
  std::vector<Finding> out = check_model(m, layout, true);
  for (Finding& f : template_findings(m)) out.push_back(std::move(f));
  return out;
}

// Every chat template the edit sets must parse as Jinja, as llama.cpp and Hugging Face
// parse it (unless !template_check); then what llama.cpp would refuse in the result and did
// not in the source is refused (unless allow_broken). A source's own faults do not stop an
// edit, which may be their fix. What is let through, and the new warnings, are told.
// `at`: where the values of the keys the patch names lie in the source file (patch_offsets),
// so that a refusal names the byte of the value it refuses.
void gate(const EditRequest& req, const std::vector<Finding>& was, const Model& model, const std::vector<Change>& changes,
          EditReport& report, const std::map<std::string, uint64_t>& at = {}) {
  auto tell = [&](Finding f) {
    if (req.on_finding) req.on_finding(f);
    report.findings_new.push_back(std::move(f));
  };
  std::string bad;
  std::vector<Finding> refused;
  for (const Change& c : changes) {
    if (!c.after || c.after->type != ValueType::string || !is_template_key(c.key)) continue;
    try {
      jinja::parse(c.after->str);
    } catch (const jinja::SyntaxError& e) {
      Finding f = finding(Code::template_syntax, std::nullopt, c.key + ": " + e.what());
      f.severity = Severity::error;  // refused, or written anyway: never just a warning here
      f.place = Place::key(c.key);
      if (!req.template_check) tell(f);
      else bad += "\n  [template_syntax] " + f.message, refused.push_back(std::move(f));
    }
  }
  if (!bad.empty())
    throw EditRefused(EditRefused::Reason::template_syntax, req.input, "",
                      "refusing to write a chat template that does not parse as Jinja:" + bad + "\nnothing was written",
                      std::move(refused));
  std::vector<std::pair<std::string, KeyCheck>> touched;  // a changed registry key is held to its check's rules
  for (const Change& c : changes)
    if (const KeySpec* spec = Registry::builtin().find(c.to.empty() ? c.key : c.to, architecture(model)))
      touched.push_back({c.to.empty() ? c.key : c.to, spec->check});
  std::vector<Finding> found = new_findings(was, gate_findings(model), touched);  // no spans: the rules, not their offsets
  for (const Change& c : changes)  // a retype the rule book refuses is told by the change
    if (c.kind == Change::retype && c.before && c.after)
      if (std::optional<Finding> f = retype_finding(c.token, c.id, c.before->as_i64(), c.after->as_i64())) found.push_back(std::move(*f));
  for (Finding& f : found) {
    if (f.severity != Severity::error) {  // a template warning the edit brings in: told, not refused
      if (f.code != Code::template_syntax) tell(std::move(f));
      continue;
    }
    if (req.allow_broken) tell(std::move(f));
    else bad += "\n  [" + std::string(code_name(f.code)) + "] " + f.message, refused.push_back(std::move(f));
  }
  if (!bad.empty()) {
    // The error's field and offset are its first finding's: the key (or tensor) and, for a
    // key the patch named, where its value lies in the source.
    // (Set after the message is made, which lists every finding already.)
    const Place first = refused.front().place;
    EditRefused e(EditRefused::Reason::rules, req.input, "",
                  "refusing to write a model that llama.cpp would refuse or misuse:" + bad + "\nnothing was written", std::move(refused));
    e.field = first.name;
    if (auto it = at.find(first.name); first.of == Place::Of::key && it != at.end()) e.offset = it->second;
    throw e;
  }
}

// Where the values of the keys a patch names (set, renamed, removed, special tokens, token
// types) lie in the model as read, before the patch changes it.
std::map<std::string, uint64_t> patch_offsets(const Model& m, const Patch& p) {
  std::vector<std::string> keys;
  for (const auto& s : p.set) keys.push_back(s.key);
  for (const auto& r : p.rename) keys.push_back(r.key), keys.push_back(r.to);
  for (const auto& sp : p.special) keys.push_back(special_token_key(sp.name));
  if (!p.token_types.empty()) keys.push_back("tokenizer.ggml.token_type");
  std::map<std::string, uint64_t> out;
  if (keys.empty()) return out;
  const std::vector<uint64_t> sorted = m.metadata.sorted_by_key();
  for (const std::string& k : keys)
    if (auto i = m.metadata.index_of(k, sorted))
      if (auto o = m.metadata.value_offset(*i)) out[k] = *o;
  return out;
}

// Where an edit in place writes the model `path` names: a symbolic link is followed (a note
// names the file edited), or with break_link replaced itself by the edited file (PendingFile
// says so). A link into a content-addressed store is refused without break_link: the blob is
// every other link's file too, and its name must stay its content's digest.
struct InPlace {
  std::string file;  // the file edited, or the link replaced
  bool link_replaced = false;
};
InPlace in_place_target(const EditRequest& req, const std::string& path) {
  struct stat st {};
  if (!req.in_place || stat_path(path, st, false) != 0) return {path, false};
  if (!S_ISLNK(st.st_mode)) {
    // The blob named itself: the same file every link names.
    if (std::optional<std::string> store = content_store(path))
      throw EditRefused(EditRefused::Reason::content_store, path, "",
                        "is " + *store + ": an edit in place would change it under every link to it, and its name would no "
                                         "longer be its content's digest; nothing was written",
                        {});
    return {path, false};
  }
  if (req.break_link) return {path, true};
  const std::string target = follow_links(path);
  if (std::optional<std::string> store = content_store(target))
    throw EditRefused(EditRefused::Reason::content_store, path, "",
                      "is a symbolic link to " + target + ", " + *store +
                          ": an edit in place would change it under every other link to it, and its name would no longer be "
                          "its content's digest; nothing was written",
                      {});
  note(path, "is a symbolic link: the edit in place is made to the file it names, " + target);
  return {target, false};
}

// A file with other names (hard links) is told which bytes they see after an edit in place.
void note_hard_links(const std::string& path, bool header) {
  struct stat st {};
  if (stat_path(path, st) != 0 || st.st_nlink < 2) return;
  const bool one = st.st_nlink == 2;
  note(path, "has " + std::to_string(st.st_nlink) + " names (hard links); " +
                 (header ? std::string("the header is written into the file itself, so the other ") +
                               (one ? "name sees" : "names see") + " the new bytes too"
                         : std::string("the whole file is replaced under this name by a new one, so the other ") +
                               (one ? "name keeps" : "names keep") + " the old bytes"));
}

// In place, an edit whose header fits before the data start writes the header alone;
// otherwise the whole file is rewritten, and report.why_whole says why. header_only
// refuses instead. `model` (planned as `after`) was read from `path`. A link replaced by the
// edited file (InPlace) is never written into.
std::optional<HeaderEdit> header_path(const EditRequest& req, const std::string& path, const Model& model, const Layout& after,
                                      const Layout& source, uint64_t source_size, EditReport& report, bool link_replaced = false) {
  std::optional<HeaderEdit> header;
  std::string& why = report.why_whole;
  if (link_replaced) why = "the link is replaced by the edited file; the file it names is left as it is";
  else if (req.in_place && !req.always_write && !req.whole_file) header = header_in_place(model, after, source, source_size, why);
  if (struct stat st {}; header && stat_path(path, st) == 0 && (st.st_mode & 0222) == 0) {
    header.reset();  // never written into: replaced by rename, as before, keeping its mode
    why = "the file is read-only: it is replaced, not written into";
  }
  if (req.whole_file) why = "the whole file was asked for";
  if (req.header_only && !header)
    throw EditRefused(EditRefused::Reason::header_only, path, "",
                      "the edit does not fit in the header: " + why + "; nothing was written", {});
  if (header) {
    report.header_fits = true;
    report.header_size = header->header_size;
    report.header_bytes = header->bytes.size();
    report.header_at = header->offset;
  }
  return header;
}

// The request's conversation rendered under the model's template, and with prompt_tokens
// its tokens on llama.cpp's chat path (the vocabulary the rule book loads, so no second load).
void preview(const EditRequest& req, const Model& m, std::optional<std::string>& prompt, std::optional<std::vector<ChatToken>>& tokens) {
  if (!req.conversation) return;
  bool rendered = false;
  prompt = preview_prompt(req.input, m, *req.conversation, &rendered);
  if (!req.prompt_tokens || !rendered) return;
  try {
    if (std::shared_ptr<const tokenizer::Vocab> v = rules_vocab(m)) tokens = chat_tokens(*v, *prompt);
  } catch (const Error&) {  // a vocabulary llama.cpp refuses: the findings say so
  } catch (const tokenizer::Error&) {  // a vocabulary type with no tokenizer: no tokens to show
  }
}


// An edit, realign or rewrite of a shard set: the patch applies to the model (its keys are
// in shard 1), checked as one model. A metadata change rewrites shard 1 alone (the other
// shards are read as far as their headers and neither rewritten nor touched); a new
// alignment or a rewrite writes every shard. In place replaces the files, an output PREFIX
// writes a whole new set; all or nothing either way.
void edit_set(const EditRequest& req, ShardSet& set, std::vector<std::unique_ptr<PathLock>>& locks, EditReport& report) {
  const size_t n = set.shards.size();
  report.set_files = n;
  for (const auto& st : req.patch.set)
    if (is_split_key(st.key)) throw_usage("set " + st.key + ": the split.* keys describe the set; ggufkit split and merge write them");
  for (const auto& r : req.patch.remove)
    if (is_split_key(r.key)) throw_usage("remove " + r.key + ": the split.* keys describe the set; ggufkit merge drops them");
  for (const auto& r : req.patch.rename)
    if (is_split_key(r.key) || is_split_key(r.to)) throw_usage("rename " + r.key + ": the split.* keys describe the set");
  if (req.byte_order) throw_usage("convert works on one file: merge the set, convert it, split it again");
  Model whole = set.model();
  report.findings_before = gate_findings(whole);
  const uint32_t alignment_before = whole.alignment();
  preview(req, whole, report.prompt_before, report.tokens_before);
  report.changes = apply_patch(whole, req.patch);
  preview(req, whole, report.prompt_after, report.tokens_after);
  gate(req, report.findings_before, whole, report.changes, report);
  const uint32_t alignment = whole.alignment();
  const bool every = alignment != alignment_before || req.always_write;
  report.every_shard = every;
  if (report.changes.empty() && !every) {
    report.unchanged = true;
    return;
  }
  // Each shard as it will be: shard 1 with the model's keys (patched) then its split keys,
  // the others as they were; with a new alignment, every shard declares it (but at 32).
  std::vector<Model> shards;
  for (size_t k = 0; k < n; ++k) {
    Model m = std::move(set.shards[k].file.model);  // moved, not copied: a vocabulary is megabytes
    std::vector<KV> split_keys;
    for (const KV& kv : m.metadata)
      if (is_split_key(kv.key) || (k > 0 && kv.key == kAlignmentKey)) split_keys.push_back(kv);
    m.metadata = k == 0 ? std::move(whole.metadata) : Metadata{};
    for (const KV& kv : split_keys)
      if (kv.key != kAlignmentKey) m.metadata.push_back(kv);
    if (k > 0 && alignment != 32) m.metadata.push_back({kAlignmentKey, Value::of_u32(alignment)});
    if (every && alignment != alignment_before) {
      m.tail.reset();
      m.tensors.pack();
    }
    shards.push_back(std::move(m));
  }
  const size_t written = every ? n : 1;
  std::vector<InPlace> places;  // in place: where each shard written goes
  for (size_t k = 0; req.in_place && k < written; ++k) places.push_back(in_place_target(req, set.shards[k].path));
  // Shard 1 takes the header path when its header fits, as a single file does.
  const std::string first = req.in_place ? places[0].file : follow_links(set.shards[0].path);
  report.why_whole = "every shard is rewritten (the alignment changes)";
  std::optional<HeaderEdit> header;
  Layout first_after;
  if (!every) {
    first_after = plan(shards[0]);
    header = header_path(req, first, shards[0], first_after, set.shards[0].file.layout, set.shards[0].file.model_size, report,
                         req.in_place && places[0].link_replaced);
  } else if (req.header_only) {
    throw EditRefused(EditRefused::Reason::header_only_every_shard, req.input, "",
                      report.why_whole + "; nothing was written", {});
  }
  for (size_t k = 0; k < places.size(); ++k)
    if (!places[k].link_replaced) note_hard_links(places[k].file, k == 0 && header);
  if (req.dry_run) return;
  if (header) {
    starting(req.write);
    write_header_in_place(first, first_after, *header);
    report.written = Written::header;
    report.files.push_back({set.shards[0].path, set.shards[0].file.source_size, first_after.data_offset,
                            shards[0].tensors.size(), shards[0].metadata.size(), 0, 0});
    return;
  }
  RewriteOptions opt = rewrite_options(req.write, req.write.force || req.in_place);
  opt.in_place = req.in_place;
  locks.clear();
  std::vector<Output> outputs;
  std::vector<std::string> sources;
  for (size_t k = 0; k < n; ++k) {
    if (!req.in_place) sources.push_back(set.shards[k].path);  // a new set: never over a source
    if (k < written || !req.in_place)
      outputs.push_back({&shards[k], req.in_place ? places[k].file
                                                  : shard_path(req.output, static_cast<uint32_t>(k + 1), static_cast<uint32_t>(n))});
  }
  starting(req.write);
  std::vector<RewriteResult> rs = safe_write_all(outputs, sources, opt);
  report.written = Written::whole_file;
  for (size_t k = 0; k < rs.size(); ++k) report.files.push_back(written_file(rs[k], *outputs[k].model));
}

// One file: scan, apply, check, plan, then the header in place or the safe rewrite.
void edit_file(const EditRequest& req, std::optional<ShardSet>& set, std::vector<std::unique_ptr<PathLock>>& locks,
               EditReport& report) {
  Scanned s = set ? std::move(set->shards[0].file) : scan_file(req.input);  // a set of one is read once
  Model& model = s.model;  // patched in place: a large vocabulary is not copied
  // The source's own findings (what the edit is not blamed for) are found while the key
  // registry the patch needs is read: both only read. (The future waits in its destructor
  // should the registry throw.)
  auto was_found = in_background([&] { return gate_findings(model, s.layout); });
  const Registry& registry = Registry::builtin();
  report.findings_before = was_found.get();
  const std::map<std::string, uint64_t> offsets = set ? std::map<std::string, uint64_t>{} : patch_offsets(model, req.patch);
  preview(req, model, report.prompt_before, report.tokens_before);
  report.changes = apply_patch(model, req.patch, registry);
  preview(req, model, report.prompt_after, report.tokens_after);
  const Layout& before = s.layout;  // the patch changes the model only
  report.data_offset_before = before.data_offset;
  report.file_size_before = s.source_size;
  if (req.byte_order && *req.byte_order != model.order) {
    for (size_t i = 0; i < model.tensors.size(); ++i) {  // refused by name before anything is written
      const GgmlType* gt = ggml_type(model.tensors[i].type);
      if (!gt || !can_swap(*gt))
        throw Error(Error::Kind::format, req.input, std::nullopt, "tensor[" + std::to_string(i) + "] " + model.tensors[i].name,
                    std::string("cannot change the byte order of ") + (gt ? gt->name : "an unknown type") +
                        " data; the types that can be converted are " + swappable_types());
    }
    report.order_before = model.order;
    report.order_after = *req.byte_order;
    model.data_order = model.order;
    model.order = *req.byte_order;
  }
  if (report.changes.empty() && !report.order_after && !req.always_write) {
    report.unchanged = true;
    report.data_offset_after = report.data_offset_before;  // nothing is planned: the file stays as it is
    report.file_size_after = report.file_size_before;
    return;
  }
  const InPlace place = in_place_target(req, req.input);
  gate(req, report.findings_before, model, report.changes, report, offsets);
  // What the source had beyond its fields goes only where the data is re-laid.
  Layout after = plan(model);
  report.data_offset_after = after.data_offset;
  report.file_size_after = after.file_size;
  if (!keeps_tail(model, after))
    each_span(before, model.tensors, [&](const LabeledSpan& sp) {  // a patch changes no tensor
      if (sp.kind == SpanKind::gap || sp.kind == SpanKind::trailing) report.dropped_bytes += sp.span.size;
    });
  std::optional<HeaderEdit> header;
  if (!report.order_after) header = header_path(req, req.input, model, after, before, s.model_size, report, place.link_replaced);
  else report.why_whole = place.link_replaced ? "the byte order changes, and the link is replaced by the edited file" : "the byte order changes";
  if (req.in_place && !place.link_replaced) note_hard_links(place.file, header.has_value());
  if (req.dry_run) return;
  if (header) {
    starting(req.write);
    write_header_in_place(req.input, after, *header);
    report.written = Written::header;
    report.files.push_back({req.input, s.source_size, after.data_offset, model.tensors.size(), model.metadata.size(), 0, 0});
    return;
  }
  RewriteOptions opt = rewrite_options(req.write, req.write.force);
  opt.in_place = req.in_place;
  opt.break_link = place.link_replaced;
  // Both layouts are in the report and safe_rewrite plans again: for a million tensors
  // each holds 8 MB of offsets, which the re-read of the output needs room for.
  after = Layout{};
  s.layout = Layout{};
  locks.clear();
  starting(req.write);
  RewriteResult r = safe_rewrite(model, req.input, req.output, opt);
  report.written = Written::whole_file;
  report.files.push_back(written_file(r, model));
}

}  // namespace

EditReport edit(const EditRequest& req) {
  if (!req.dry_run && req.in_place == !req.output.empty()) throw_usage("an edit writes to an output or in place: give exactly one");
  if ((req.header_only || req.whole_file) && !req.in_place) throw_usage("header_only and whole_file are for edits in place");
  if (req.header_only && req.whole_file) throw_usage("header_only and whole_file exclude each other");
  if (req.break_link && !req.in_place) throw_usage("break_link is for edits in place");
  EditReport report;
  Notes notes(req.write, &report);
  // An edit in place holds the lock of every file it may write from before it reads them
  // until it has written the header: a second edit waits, then reads what this one wrote.
  // (A whole-file rewrite lets go while it copies; it locks the files again to rename.)
  std::vector<std::unique_ptr<PathLock>> locks;
  std::optional<ShardSet> set;
  if (parse_shard_name(req.input)) {
    set = open_shard_set(req.input);
    if (req.in_place && !req.dry_run) {
      locks = lock_all(paths_of(*set));
      set = open_shard_set(req.input);  // read again, under the locks
    }
    if (set->shards.size() > 1) {
      edit_set(req, *set, locks, report);
      return report;
    }
  } else if (req.in_place && !req.dry_run) {
    locks = lock_all({req.input});
  }
  edit_file(req, set, locks, report);
  return report;
}

std::vector<WrittenFile> split(const SplitRequest& req) {
  if ((req.max_tensors == 0) == (req.max_bytes == 0)) throw_usage("a split needs exactly one of max_tensors and max_bytes");
  Notes notes(req.write, nullptr);
  SplitOptions o;
  o.max_tensors = req.max_tensors;
  o.max_bytes = req.max_bytes;
  o.metadata_only_first = req.metadata_only_first;
  ShardSet set = open_shard_set(req.input);
  Model model = set.model();
  std::vector<Model> shards = split_model(model, o);
  std::vector<Output> outputs;
  for (size_t k = 0; k < shards.size(); ++k)
    outputs.push_back({&shards[k], shard_path(req.prefix, static_cast<uint32_t>(k + 1), static_cast<uint32_t>(shards.size()))});
  starting(req.write);
  std::vector<RewriteResult> rs = safe_write_all(outputs, paths_of(set), rewrite_options(req.write, req.write.force));
  std::vector<WrittenFile> out;
  for (size_t k = 0; k < rs.size(); ++k) out.push_back(written_file(rs[k], shards[k]));
  return out;
}

std::vector<WrittenFile> merge(const MergeRequest& req) {
  Notes notes(req.write, nullptr);
  ShardSet set = open_shard_set(req.input);
  Model merged = set.model();
  starting(req.write);
  std::vector<RewriteResult> rs =
      safe_write_all({{&merged, req.output}}, paths_of(set), rewrite_options(req.write, req.write.force));
  return {written_file(rs.at(0), merged)};
}

// The file is judged before it is written, from the bytes it would have (sketch_source):
// the same findings, at the same offsets, as validate of the written file, and with
// check nothing is written when one is an error.
WriteSketchReport write_sketch(const WriteSketchRequest& req) {
  const Sketch sketch = req.text ? parse_sketch(*req.text, req.sketch, req.base_dir, req.defines) : read_sketch(req.sketch, req.defines);
  WriteSketchReport report;
  report.findings = validate_source(sketch_source(sketch));
  if (req.check) {
    std::string bad;
    for (const Finding& f : report.findings)
      if (f.severity == Severity::error)
        bad += "\n  [" + std::string(code_name(f.code)) + "]" + (f.offset ? " at byte " + std::to_string(*f.offset) : "") +
               ": " + f.message;
    if (!bad.empty())
      throw EditRefused(EditRefused::Reason::rules, req.sketch, "",
                        "refusing to write " + req.output + ", which validate finds errors in:" + bad + "\nnothing was written",
                        report.findings);
  }
  report.layout = write_sketch(sketch, req.output, req.force);
  report.file = {req.output, sketch.truncate_at.value_or(report.layout.file_size), report.layout.data_offset,
                 sketch.model.tensors.size(), sketch.model.metadata.size(), 0, 0};
  return report;
}

}  // namespace ggufkit
