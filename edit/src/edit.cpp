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
#include "ggufkit/surgery.h"
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

RewriteOptions rewrite_options(const WriteOptions& w, const Context& ctx, bool replace) {
  RewriteOptions opt;
  opt.verify = w.verify;
  opt.replace = replace;
  opt.ctx = ctx;
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
// templates' warnings. `vocabs`: the edit's, so that each vocabulary is loaded once.
std::vector<Finding> gate_findings(const Model& m, VocabCache& vocabs, const Layout& layout = Layout{}) {
  std::vector<Finding> out = check_model(m, layout, true, &vocabs);
  for (Finding& f : template_findings(m, &vocabs)) out.push_back(std::move(f));
  return out;
}

// Every chat template the edit sets must parse as Jinja, as llama.cpp and Hugging Face
// parse it (unless !template_check); then what llama.cpp would refuse in the result and did
// not in the source is refused (unless allow_broken). A source's own faults do not stop an
// edit, which may be their fix. What is let through, and the new warnings, are told.
// `at`: where the values of the keys the patch names lie in the source file (patch_offsets),
// so that a refusal names the byte of the value it refuses.
void gate(const EditRequest& req, const std::vector<Finding>& was, const Model& model, const std::vector<Change>& changes,
          VocabCache& vocabs, EditReport& report, const std::map<std::string, uint64_t>& at, std::vector<Finding> surgery) {
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
  std::vector<Finding> found = new_findings(was, gate_findings(model, vocabs), touched);  // no spans: the rules, not their offsets
  for (Finding& f : surgery) found.push_back(std::move(f));  // what tensor surgery could not fix
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
InPlace in_place_target(const EditRequest& req, const Context& ctx, const std::string& path) {
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
  ctx.note(path, "is a symbolic link: the edit in place is made to the file it names, " + target);
  return {target, false};
}

// A file with other names (hard links) is told which bytes they see after an edit in place.
void note_hard_links(const Context& ctx, const std::string& path, bool header) {
  struct stat st {};
  if (stat_path(path, st) != 0 || st.st_nlink < 2) return;
  const bool one = st.st_nlink == 2;
  ctx.note(path, "has " + std::to_string(st.st_nlink) + " names (hard links); " +
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
    report.header_size = header->new_header_size;  // the header written (a file that is all header: its new size)
    report.header_resized = header->new_header_size != header->header_size;
    report.header_bytes = header->bytes.size();
    report.header_at = header->offset;
  }
  return header;
}

// The request's conversation rendered under the model's template, and with prompt_tokens
// its tokens on llama.cpp's chat path (the vocabulary the rule book loads, so no second load).
void preview(const EditRequest& req, const Context& ctx, VocabCache& vocabs, const Model& m, std::optional<std::string>& prompt,
             std::optional<std::vector<ChatToken>>& tokens) {
  if (!req.conversation) return;
  bool rendered = false;
  prompt = preview_prompt(req.input, m, *req.conversation, &rendered, ctx);
  if (!req.prompt_tokens || !rendered) return;
  try {
    if (std::shared_ptr<const tokenizer::Vocab> v = vocabs.rules_vocab(m)) tokens = chat_tokens(*v, *prompt);
  } catch (const Error&) {  // a vocabulary llama.cpp refuses: the findings say so
  } catch (const tokenizer::Error&) {  // a vocabulary type with no tokenizer: no tokens to show
  }
}


// The file an edit in place may write into, locked before anything is read: a lone file,
// or a set's shard 1, which holds the model's keys (one missing is the set's reader's to
// report). Only shard 1's header is written in place; a rewrite of every shard lets go of
// the lock before it copies, and locks every shard again to rename, each checked to be the
// file read. So an edit of a set of 1,200 shards holds one of them open, not 1,200.
std::vector<std::string> names_to_lock(const std::string& input, const std::optional<ShardName>& name) {
  if (!name) return {input};
  std::string first = shard_path(name->prefix, 1, name->count);
  if (struct stat st {}; name->no == 1 || stat_path(first, st) == 0) return {first};
  return {};
}

// Each shard as it will be: shard 1 with the model's keys (patched) then its split keys,
// the others as they were; with a new alignment, every shard declares it (but at 32).
std::vector<Model> shards_of(ShardSet& set, Model&& whole, uint32_t alignment, bool realigned) {
  std::vector<Model> out;
  for (size_t k = 0; k < set.shards.size(); ++k) {
    Model m = std::move(set.shards[k].file.model);  // moved, not copied: a vocabulary is megabytes
    std::vector<KV> split_keys;
    for (const KV& kv : m.metadata)
      if (is_split_key(kv.key) || (k > 0 && kv.key == kAlignmentKey)) split_keys.push_back(kv);
    m.metadata = k == 0 ? std::move(whole.metadata) : Metadata{};
    for (const KV& kv : split_keys)
      if (kv.key != kAlignmentKey) m.metadata.push_back(kv);
    if (k > 0 && alignment != 32) m.metadata.push_back({kAlignmentKey, Value::of_u32(alignment)});
    if (realigned) {
      m.tail.reset();
      m.tensors.pack();
    }
    out.push_back(std::move(m));
  }
  return out;
}

// How an edit that moves tensors splits its result: by the request's limits, or as the
// input set was, each tensor in the shard its bytes come from (a grafted one beside the
// tensor before it). Its split.* keys are then made anew.
SplitOptions laid_out(const ShardSet& set, const Model& whole, const EditRequest& req) {
  SplitOptions o;
  if (req.max_tensors || req.max_bytes) {
    o.max_tensors = req.max_tensors;
    o.max_bytes = req.max_bytes;
    return o;
  }
  std::map<const ByteSource*, uint32_t> shard_of_source;
  for (uint32_t k = 0; k < set.shards.size(); ++k)
    for (const Tensor& t : set.shards[k].file.model.tensors) {
      shard_of_source.emplace(t.source.get(), k);
      break;  // one source a file
    }
  uint32_t at = 0;
  if (!set.shards.empty() && set.shards[0].file.model.tensors.empty()) at = std::min<uint32_t>(1, set.shards.size() - 1);
  for (const Tensor& t : whole.tensors) {
    if (auto it = shard_of_source.find(t.source.get()); it != shard_of_source.end()) at = std::max(at, it->second);
    o.shard_of.push_back(at);
  }
  o.shards = static_cast<uint32_t>(set.shards.size());
  return o;
}

}  // namespace

struct EditPlan::State {
  Context ctx;  // the request's; without a sink its notes are kept here, for the report
  std::mutex notes_mutex;
  std::vector<std::pair<std::string, std::string>> notes;
  VocabCache vocabs;                             // the vocabularies of the source and the result, loaded once each
  std::vector<std::unique_ptr<PathLock>> locks;  // in place: held from before the read until the header is written
  ShardSet set;                                  // as read
  std::vector<Model> models;                     // each file as it will be
  Layout first_after;                            // the first file's plan
  std::optional<HeaderEdit> header;              // the first file's header, when it is written alone
  bool link_replaced = false;                    // in place, a link given is replaced by the edited file
};

EditPlan::EditPlan() = default;
EditPlan::~EditPlan() = default;
EditPlan::EditPlan(EditPlan&&) noexcept = default;
EditPlan& EditPlan::operator=(EditPlan&&) noexcept = default;

// Read, patch, check and choose, for a lone file and a set alike. A metadata change
// rewrites shard 1 alone (the other shards are read as far as their headers and neither
// rewritten nor touched); a new alignment or a rewrite writes every shard. In place
// replaces the files, an output (a set: its PREFIX) writes a whole new model.
EditPlan plan_edit(const EditRequest& req) {
  if (!req.dry_run && req.in_place == !req.output.empty()) throw_usage("an edit writes to an output or in place: give exactly one");
  if ((req.header_only || req.whole_file) && !req.in_place) throw_usage("header_only and whole_file are for edits in place");
  if (req.header_only && req.whole_file) throw_usage("header_only and whole_file exclude each other");
  if (req.break_link && !req.in_place) throw_usage("break_link is for edits in place");
  EditPlan plan;
  plan.request = req;
  plan.state = std::make_unique<EditPlan::State>();
  EditPlan::State& st = *plan.state;
  EditReport& report = plan.report;
  st.ctx = req.context;
  if (!st.ctx.notes)
    st.ctx.notes = [s = &st](const std::string& f, const std::string& m) {
      std::lock_guard<std::mutex> g(s->notes_mutex);
      s->notes.emplace_back(f, m);
    };
  const Context& ctx = st.ctx;
  // An edit in place locks the file it may write into before it reads it and holds the lock
  // until it has written the header: a second edit waits, then reads what this one wrote.
  // (A whole-file rewrite lets go while it copies; it locks the files again to rename.)
  const std::optional<ShardName> name = parse_shard_name(req.input);
  if (req.in_place && !req.dry_run) st.locks = lock_all(names_to_lock(req.input, name), ctx);
  if (name) st.set = open_shard_set(req.input, ctx);
  else st.set.shards.push_back({req.input, scan_file(req.input, {}, ctx)});
  ShardSet& set = st.set;
  const size_t n = set.shards.size();
  report.set_files = n;
  if (n > 1) {
    for (const auto& s : req.patch.set)
      if (is_split_key(s.key)) throw_usage("set " + s.key + ": the split.* keys describe the set; ggufkit split and merge write them");
    for (const auto& r : req.patch.remove)
      if (is_split_key(r.key)) throw_usage("remove " + r.key + ": the split.* keys describe the set; ggufkit merge drops them");
    for (const auto& r : req.patch.rename)
      if (is_split_key(r.key) || is_split_key(r.to)) throw_usage("rename " + r.key + ": the split.* keys describe the set");
    if (req.byte_order) throw_usage("convert works on one file: merge the set, convert it, split it again");
  }
  Scanned& first = set.shards[0].file;
  report.data_offset_before = first.layout.data_offset;
  report.file_size_before = first.source_size;
  // A lone file's model is patched where it lies: a large vocabulary is not copied.
  Model whole = n > 1 ? set.model() : std::move(first.model);
  const uint32_t alignment_before = whole.alignment();
  st.vocabs.for_prompts = has_chat_template(whole);  // gate_findings tokenizes its prompts
  // The source's own findings (what the edit is not blamed for) are found while the key
  // registry the patch needs is read: both only read. (The future waits in its destructor
  // should the registry throw.) A set's are the whole model's, with no one file's spans.
  auto was_found = in_background([&] { return gate_findings(whole, st.vocabs, n > 1 ? Layout{} : first.layout); });
  const Registry& registry = Registry::builtin();
  report.findings_before = was_found.get();
  const std::map<std::string, uint64_t> offsets = name ? std::map<std::string, uint64_t>{} : patch_offsets(whole, req.patch);
  preview(req, ctx, st.vocabs, whole, report.prompt_before, report.tokens_before);
  report.changes = apply_patch(whole, req.patch, registry, ctx);
  if (!req.patch.tensors.empty() && req.byte_order) throw_usage("convert and tensor surgery are one at a time: edit, then convert");
  SurgeryResult surgery = apply_tensor_ops(whole, req.patch.tensors, ctx);
  for (Change& c : surgery.keys) report.changes.push_back(std::move(c));
  report.tensor_changes = std::move(surgery.tensors);
  // Tensors that move, or a new split, lay every file out anew.
  const bool resplit = req.max_tensors || req.max_bytes;
  const bool relaid = !report.tensor_changes.empty() || resplit;
  if (resplit && req.in_place) throw_usage("`max_tensors` and `max_bytes` split the output anew: give an `output` PREFIX, not `in_place`");
  if (req.max_tensors && req.max_bytes) throw_usage("give one of `max_tensors` and `max_bytes`");
  preview(req, ctx, st.vocabs, whole, report.prompt_after, report.tokens_after);
  if (req.byte_order && *req.byte_order != whole.order) {
    for (size_t i = 0; i < whole.tensors.size(); ++i) {  // refused by name before anything is written
      const GgmlType* gt = ggml_type(whole.tensors[i].type);
      if (!gt || !can_swap(*gt))
        throw Error(Error::Kind::format, req.input, std::nullopt, "tensor[" + std::to_string(i) + "] " + whole.tensors[i].name,
                      "cannot change the byte order of " + ggml_type_name(whole.tensors[i].type) + " data" +
                        (gt ? "" : ", a type ggufkit does not know the layout of") + "; the types that can be converted are " + swappable_types());
    }
    report.order_before = whole.order;
    report.order_after = *req.byte_order;
    whole.data_order = whole.order;
    whole.order = *req.byte_order;
  }
  const uint32_t alignment = whole.alignment();
  if (alignment != alignment_before)
    for (size_t i = 0; i < whole.tensors.size(); ++i)  // refused by name before anything is written
      if (const Tensor t = whole.tensors[i]; t.opaque_bytes)
        throw Error(Error::Kind::format, req.input, std::nullopt, "tensor[" + std::to_string(i) + "] " + t.name,
                    "cannot realign: " + ggml_type_name(t.type) + " is a type ggufkit cannot size, so its " + std::to_string(*t.opaque_bytes) +
                        " bytes were measured to the next tensor's data, padding included, and where the tensor ends is not known; "
                        "realign it with a tool that knows the type (ik_llama.cpp's, or a newer ggufkit)");
  report.every_shard = n > 1 && (alignment != alignment_before || req.always_write || relaid);
  for (const Shard& s : set.shards) plan.files.push_back({s.path, s.path, EditPlan::Gets::nothing});
  if (report.changes.empty() && report.tensor_changes.empty() && !report.order_after && !req.always_write && !resplit) {
    report.unchanged = true;
    report.data_offset_after = report.data_offset_before;  // nothing is planned: the file stays as it is
    report.file_size_after = report.file_size_before;
    return plan;
  }
  std::vector<InPlace> places;  // in place: where each file written goes
  for (size_t k = 0; req.in_place && k < (report.every_shard ? n : 1); ++k) places.push_back(in_place_target(req, ctx, set.shards[k].path));
  gate(req, report.findings_before, whole, report.changes, st.vocabs, report, offsets, std::move(surgery.unfixed));
  // A key set to the value it has is written as asked (and judged by the gate above, which
  // refuses a broken value set again), but it is no change to list: a dry run lists only
  // real ones, and an edit of nothing else says it is a byte-for-byte rewrite.
  std::erase_if(report.changes, [](const Change& c) { return c.kind == Change::set && c.before && c.after && *c.before == *c.after; });
  if (n == 1 && !resplit) st.models.push_back(std::move(whole));
  else if (relaid) {
    st.models = split_model(whole, laid_out(set, whole, req));
    for (size_t k = 0; k < std::min(n, st.models.size()); ++k)  // each names the shard it replaces (rewrite.h's checks)
      if (const auto& t = set.shards[k].file.model.tail) st.models[k].tail = SourceTail{t->source, 0, 0, 0, alignment, true};
  }
  else st.models = shards_of(set, std::move(whole), alignment, alignment != alignment_before);
  if (st.models.size() != n) {  // a new split: the files written are the new set's
    if (req.in_place) throw_usage("in place, a set keeps its shards");
    plan.files.clear();
    for (size_t k = 0; k < st.models.size(); ++k)
      plan.files.push_back({k < n ? set.shards[k].path : "", "", EditPlan::Gets::whole_file});
  }
  // What the source had beyond its fields goes only where the data is re-laid.
  st.first_after = ggufkit::plan(st.models[0]);
  report.data_offset_after = st.first_after.data_offset;
  report.file_size_after = st.first_after.file_size;
  if (!relaid && !keeps_tail(st.models[0], st.first_after))
    each_span(first.layout, st.models[0].tensors, [&](const LabeledSpan& sp) {  // a patch changes no tensor
      if (sp.kind == SpanKind::gap || sp.kind == SpanKind::trailing) report.dropped_bytes += sp.span.size;
    });
  // The first file takes the header path when its header fits; every file is rewritten
  // when the data moves (a new alignment or byte order) or a rewrite is asked.
  const bool link_replaced = st.link_replaced = !places.empty() && places[0].link_replaced;
  if (report.order_after) report.why_whole = link_replaced ? "the byte order changes, and the link is replaced by the edited file" : "the byte order changes";
  else if (relaid) report.why_whole = "tensors change: the data is laid out anew";
  else if (report.every_shard) report.why_whole = "every shard is rewritten (the alignment changes)";
  if (req.header_only && (report.every_shard || relaid))
    throw EditRefused(report.every_shard ? EditRefused::Reason::header_only_every_shard : EditRefused::Reason::header_only,
                      req.input, "", report.why_whole + "; nothing was written", {});
  if (!report.order_after && !report.every_shard && !relaid)
    st.header = header_path(req, req.in_place ? places[0].file : set.shards[0].path, st.models[0], st.first_after, first.layout,
                            first.model_size, report, link_replaced);
  const size_t out = plan.files.size();
  for (size_t k = 0; k < out; ++k) {
    EditPlan::File& f = plan.files[k];
    if (k > 0 && req.in_place && !report.every_shard) continue;  // the other shards stay as they are
    f.gets = k == 0 && st.header ? EditPlan::Gets::header : EditPlan::Gets::whole_file;
    f.target = req.in_place ? places[k].file
               : out == 1 && !resplit ? req.output
                                      : shard_path(req.output, static_cast<uint32_t>(k + 1), static_cast<uint32_t>(out));
    // A donor is read while the output is written: no output may be any file of it (every
    // shard, when it is named as one of a set).
    for (const TensorOps::Graft& g : req.patch.tensors.graft) {
      std::vector<std::string> donor{g.from};
      if (const std::optional<ShardName> name = parse_shard_name(g.from))
        for (uint32_t k = 1; k <= name->count; ++k) donor.push_back(shard_path(name->prefix, k, name->count));
      for (const std::string& d : donor)
        if (struct stat a {}, b {}; !req.in_place && stat_path(d, a) == 0 && stat_path(f.target, b) == 0 && a.st_dev == b.st_dev &&
                                    a.st_ino == b.st_ino)
          throw_usage(f.target + " is " + (d == g.from ? "" : "a shard of ") + "the `graft` donor " + g.from +
                      ": write the result to another file");
    }
  }
  for (size_t k = 0; k < places.size(); ++k)
    if (!places[k].link_replaced) note_hard_links(ctx, places[k].file, k == 0 && st.header);
  return plan;
}

// The writes the plan chose, then the report finished from the plan and what was written.
EditReport commit(EditPlan&& plan) {
  EditPlan::State& st = *plan.state;
  const EditRequest& req = plan.request;
  EditReport& report = plan.report;
  const size_t n = plan.files.size();
  if (!req.dry_run && !report.unchanged && plan.files[0].gets == EditPlan::Gets::header) {
    starting(req.write);
    write_header_in_place(plan.files[0].path, st.first_after, *st.header, st.ctx);
    report.written = Written::header;
    const Model& m = st.models[0];
    const uint64_t size = st.set.shards[0].file.source_size - st.header->header_size + st.header->new_header_size;  // all header: resized
    report.files.push_back({plan.files[0].path, size, st.first_after.data_offset, m.tensors.size(),
                            m.metadata.size(), 0, 0});
  } else if (!req.dry_run && !report.unchanged) {
    RewriteOptions opt = rewrite_options(req.write, st.ctx, req.write.force || req.in_place);
    opt.in_place = req.in_place;
    opt.break_link = st.link_replaced;
    // The layouts are in the report and the writer plans again: for a million tensors each
    // holds 8 MB of offsets, which the re-read of the output needs room for.
    st.first_after = Layout{};
    for (Shard& s : st.set.shards) s.file.layout = Layout{};
    st.locks.clear();
    std::vector<Output> outputs;
    std::vector<std::string> sources;
    if (!req.in_place) sources = paths_of(st.set);  // a new set: never over a source
    for (size_t k = 0; k < plan.files.size(); ++k)
      if (plan.files[k].gets == EditPlan::Gets::whole_file) outputs.push_back({&st.models[k], plan.files[k].target});
    starting(req.write);
    std::vector<RewriteResult> rs = n == 1 && plan.files.size() == 1
                                        ? std::vector<RewriteResult>{safe_rewrite(st.models[0], req.input,
                                                                                  req.in_place ? req.output : plan.files[0].target, opt)}
                                        : safe_write_all(outputs, sources, opt);
    report.written = Written::whole_file;
    for (size_t k = 0; k < rs.size(); ++k) report.files.push_back(written_file(rs[k], *outputs[k].model));
  }
  st.locks.clear();
  std::lock_guard<std::mutex> g(st.notes_mutex);
  report.notes = std::move(st.notes);
  return std::move(report);
}

EditReport edit(const EditRequest& req) { return commit(plan_edit(req)); }

std::vector<WrittenFile> split(const SplitRequest& req) {
  if ((req.max_tensors == 0) == (req.max_bytes == 0)) throw_usage("a split needs exactly one of max_tensors and max_bytes");
  SplitOptions o;
  o.max_tensors = req.max_tensors;
  o.max_bytes = req.max_bytes;
  o.metadata_only_first = req.metadata_only_first;
  ShardSet set = open_shard_set(req.input, req.context);
  Model model = set.model();
  std::vector<Model> shards = split_model(model, o);
  std::vector<Output> outputs;
  for (size_t k = 0; k < shards.size(); ++k)
    outputs.push_back({&shards[k], shard_path(req.prefix, static_cast<uint32_t>(k + 1), static_cast<uint32_t>(shards.size()))});
  starting(req.write);
  std::vector<RewriteResult> rs = safe_write_all(outputs, paths_of(set), rewrite_options(req.write, req.context, req.write.force));
  std::vector<WrittenFile> out;
  for (size_t k = 0; k < rs.size(); ++k) out.push_back(written_file(rs[k], shards[k]));
  return out;
}

std::vector<WrittenFile> merge(const MergeRequest& req) {
  ShardSet set = open_shard_set(req.input, req.context);
  Model merged = set.model();
  starting(req.write);
  std::vector<RewriteResult> rs =
      safe_write_all({{&merged, req.output}}, paths_of(set), rewrite_options(req.write, req.context, req.write.force));
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
  report.layout = write_sketch(sketch, req.output, req.force, req.context);
  report.file = {req.output, sketch.truncate_at.value_or(report.layout.file_size), report.layout.data_offset,
                 sketch.model.tensors.size(), sketch.model.metadata.size(), 0, 0};
  return report;
}

}  // namespace ggufkit
