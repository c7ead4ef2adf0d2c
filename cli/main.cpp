// ggufkit: parse options, call the library, print. Nothing here knows the format.
#include <signal.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <filesystem>
#include <future>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ggufkit/byteorder.h"
#include "ggufkit/background.h"
#include "ggufkit/check.h"
#include "ggufkit/error.h"
#include "ggufkit/inspect.h"
#include "ggufkit/jinja.h"
#include "ggufkit/journal.h"
#include "ggufkit/lock.h"
#include "ggufkit/output.h"
#include "ggufkit/registry.h"
#include "ggufkit/patch.h"
#include "ggufkit/path.h"
#include "ggufkit/rewrite.h"
#include "ggufkit/scan.h"
#include "ggufkit/shards.h"
#include "ggufkit/split.h"
#include "ggufkit/sketch.h"
#include "ggufkit/writer.h"
#include "ggufkit/text.h"
#include "common.h"

using namespace ggufkit;
using namespace ggufkit::cli;

namespace {

const char* kUsage =
    "usage: ggufkit COMMAND [OPTIONS] FILE\n"
    "\n"
    "Read, check and rewrite GGUF files (the model format of llama.cpp).\n"
    "\n"
    "reading (each with --json):\n"
    "  show FILE              the summary: counts, alignment, architecture, hyperparameters,\n"
    "                         vocabulary, quant mix and bits per weight\n"
    "  meta FILE              every metadata entry: index, key, type, value (--full)\n"
    "  get FILE KEY           one value, for scripts: a string raw, an array one item per line\n"
    "  template FILE          a chat template byte for byte (--name NAME, --list)\n"
    "  tensors FILE           every tensor: name, dims, type, offset, bytes\n"
    "  stack FILE             the repeated blocks: tensor names, shapes, types, bytes\n"
    "  layer FILE N           block N tensor by tensor, and which blocks match it\n"
    "  account FILE           the header in pieces and the tensor bytes against the file size\n"
    "  tensor FILE NAME       a tensor's values: count, min, max, mean, NaN and inf (--head N)\n"
    "  diff A B               metadata, tensor records and tensor bytes that differ\n"
    "  hash FILE              a checksum per tensor and of all tensor data (--algo sha256)\n"
    "  validate FILE          everything wrong with the file, with codes and offsets (--strict)\n"
    "  map FILE               every field of the file with its offset, size and name\n"
    "\n"
    "writing:\n"
    "  rewrite FILE -o OUT    read FILE and write it again with ggufkit's writer\n"
    "  edit FILE -o OUT       change metadata (--patch, --set, --chat-template-file, ...)\n"
    "  realign FILE -a N -o OUT  re-lay the data at a new alignment\n"
    "  convert FILE --byte-order big|little -o OUT  the same model in the other byte order\n"
    "  split MODEL -o PREFIX  write a shard set, as llama.cpp's gguf-split (--max-tensors N | --max-size SIZE)\n"
    "  merge SHARD -o OUT     write a shard set as one file\n"
    "  write SKETCH -o OUT    write the GGUF file a YAML sketch describes (-D NAME=VALUE fills [[NAME]])\n"
    "  dump FILE              print a sketch that 'write' turns back into the same bytes\n"
    "  example -o OUT         write the 408-byte walkthrough file (a demo and a fixture)\n"
    "  recover FILE           finish an interrupted in-place edit (its journal beside FILE); --discard\n"
    "\n"
    "FILE may be '-' for standard input where a command only reads the header.\n"
    "Run 'ggufkit COMMAND --help' for a command's options.\n"
    "\n"
    "exit status:\n"
    "  0  success\n"
    "  1  an input is refused: a model, patch, sketch, template, conversation or\n"
    "     tokenizer_config.json that is malformed or over a cap; a key, block, tensor or\n"
    "     template the command names that the file lacks; an edit the model cannot take\n"
    "     (--set, --special-token and the other edit values are patch entries, refused as\n"
    "     a patch file's are); also diff --exit-code: they differ; validate: errors found\n"
    "  2  usage: an unknown command or option, an option or argument missing or not of\n"
    "     its form (-a notanumber), a file the command line names that is not there or\n"
    "     is not a regular file\n"
    "  3  I/O: a read or write failed (permissions, a full disk, a signal), or memory ran\n"
    "     out (inputs that would need absurd memory are refused by their caps: 1)\n"
    "'ggufkit --version' prints the version.\n";

// The span map: text with a closing total, or the documented JSON.
void print_map(const Layout& L, uint64_t file_size, bool json) {
  if (json) {
    std::cout << "{\"file_size\": " << file_size << ", \"alignment\": " << L.alignment
              << ", \"data_offset\": " << L.data_offset << ", \"spans\": [";
    for (size_t i = 0; i < L.spans.size(); ++i) {
      const auto& sp = L.spans[i];
      std::cout << (i ? ",\n  " : "\n  ") << "{\"offset\": " << sp.span.offset << ", \"size\": " << sp.span.size
                << ", \"kind\": \"" << span_kind_name(sp.kind) << "\", \"name\": " << json_string(sp.path) << "}";
    }
    std::cout << "\n]}\n";
    return;
  }
  std::printf("%12s %12s  %-14s %s\n", "offset", "size", "kind", "name");
  for (const auto& sp : L.spans)
    std::printf("%12llu %12llu  %-14s %s\n", static_cast<unsigned long long>(sp.span.offset),
                static_cast<unsigned long long>(sp.span.size), span_kind_name(sp.kind), sp.path.c_str());
  std::printf("total %llu bytes in %zu spans; file size %llu", static_cast<unsigned long long>(L.file_size),
              L.spans.size(), static_cast<unsigned long long>(file_size));
  if (file_size > L.file_size)
    std::printf(" (%llu bytes after the last span)", static_cast<unsigned long long>(file_size - L.file_size));
  if (file_size < L.file_size)
    std::printf(" (cut %llu bytes short)", static_cast<unsigned long long>(L.file_size - file_size));
  std::printf("\n");
}

int cmd_map(const std::vector<std::string>& args) {
  auto a = read_args(args,
                     "usage: ggufkit map FILE [--json]\n\n"
                     "Prints every field of the file in order: offset, size, kind and name. Kinds:\n"
                     "magic version tensor_count kv_count kv_key kv_type kv_value tensor_info\n"
                     "padding tensor_data tensor_padding gap trailing (gap: bytes between a\n"
                     "tensor's padding and the next tensor; trailing: bytes after the end). The\n"
                     "spans cover every byte of the file; the text form ends with their total.\n\n"
                     "Given a shard of a set, the map of every shard in turn (--shard-only: the file\n"
                     "named alone); --json then gives {\"files\": N, \"shards\": [{\"file\", \"map\"}]}.",
                     "print {\"file_size\", \"alignment\", \"data_offset\", \"spans\": [...]}");
  if (!a) return 0;
  std::optional<ShardSet> set = set_of(a->file, a->shard_only);
  if (!set) {
    Scanned s = load(a->file);
    print_map(s.layout, s.source_size, a->json);
    return 0;
  }
  const size_t n = set->shards.size();
  if (a->json) std::cout << "{\"files\": " << n << ", \"shards\": [\n";
  else std::printf("shard set: %zu files\n", n);
  for (size_t k = 0; k < n; ++k) {
    const Shard& sh = set->shards[k];
    if (a->json) std::cout << (k ? ",\n" : "") << "{\"file\": " << json_string(sh.path) << ", \"map\": ";
    else std::printf("\n== %s (shard %zu of %zu)\n", sh.path.c_str(), k + 1, n);
    print_map(sh.file.layout, sh.file.source_size, a->json);
    if (a->json) std::cout << "}";
  }
  if (a->json) std::cout << "\n]}\n";
  return 0;
}

std::atomic<bool> g_cancel{false};
extern "C" void on_signal(int) { g_cancel = true; }

// The options of every command that writes a model. From here on, signals that would
// kill a write half-way instead stop it cleanly.
RewriteOptions write_options(bool verify, bool replace) {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  RewriteOptions opt;
  opt.verify = verify;
  opt.replace = replace;
  opt.cancel = &g_cancel;
  return opt;
}

std::string gb(uint64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", static_cast<double>(n) / 1e9);
  return buf;
}

std::string change_text(const Change& c) {
  switch (c.kind) {
    case Change::set: return "set     " + c.key + ": " + brief_value(*c.before) + " -> " + brief_value(*c.after);
    case Change::add:
      return "add     " + c.key + " (" + value_type_name(c.after->type) + "): " + brief_value(*c.after);
    case Change::remove: return "remove  " + c.key + " (was " + brief_value(*c.before) + ")";
    case Change::rename: return "rename  " + c.key + " -> " + c.to;
    case Change::alignment:
      return "align   " + brief_value(*c.before) + " -> " +
             (c.after ? brief_value(*c.after) : "default (32: general.alignment removed)");
  }
  return "";
}

std::string change_json(const Change& c) {
  static const char* kinds[] = {"set", "add", "remove", "rename", "alignment"};
  std::string s = std::string("{\"change\": \"") + kinds[c.kind] + "\", \"key\": " + json_string(c.key);
  if (c.kind == Change::rename) s += ", \"to\": " + json_string(c.to);
  if (c.before) s += ", \"before\": " + json_string(brief_value(*c.before, 200));
  if (c.after) s += ", \"after\": " + json_string(brief_value(*c.after, 200));
  return s + "}";
}

struct RewriteJob {
  std::string in, out;
  bool in_place = false, dry_run = false, verify = true, json = false, force = false, allow_broken = false;
  bool always_write = false;            // rewrite: writing the same model is the point
  bool template_check = true;           // edit: every template set must parse (--no-template-check)
  bool header_only = false;             // edit --in-place: write the header alone, or refuse
  bool whole_file = false;              // edit --in-place: rewrite the whole file even when the header fits
  std::optional<ByteOrder> byte_order;  // convert
  Patch patch;
  std::optional<jinja::Value> conversation;  // edit --dry-run --render: the prompts before and after
};

// The prompt the model's default template gives for the conversation, or what stops it,
// in brackets (a preview shows it; it is no reason to refuse).
std::string prompt_of(const std::string& file, const Model& m, const jinja::Value& conversation) {
  const Value* t = m.find("tokenizer.chat_template");
  if (!t || t->type != ValueType::string) return "[no tokenizer.chat_template]\n";
  try {
    return render_prompt(file, "tokenizer.chat_template", t->str, m, conversation);
  } catch (const Error& e) {
    return "[" + e.message + "]\n";
  }
}

// edit --dry-run --render: the prompt under the old template and tokens and under the new,
// then a unified diff of them.
void print_prompts(const std::string& before, const std::string& after) {
  auto shown = [](const std::string& s) { return s.empty() || s.back() != '\n' ? s + "\n" : s; };
  std::printf("== the prompt before the edit ==\n%s== the prompt after the edit ==\n%s", shown(before).c_str(), shown(after).c_str());
  const std::string diff = unified_diff(before, after, "prompt before", "prompt after");
  std::printf("== diff ==\n%s", diff.empty() ? "the prompt is the same, byte for byte\n" : diff.c_str());
}

const char* order_name(ByteOrder o) { return o == ByteOrder::big ? "big-endian" : "little-endian"; }

// What llama.cpp would refuse in the model about to be written and did not in the source
// (validate's rules, check_model): refused before anything is written, unless
// --allow-broken. A source's own faults do not stop an edit, which may be their fix.
//
// Before that, every chat template the edit sets must parse as Jinja, as llama.cpp and
// Hugging Face parse it: a syntax error is refused with its line and column, unless
// --no-template-check.
// What an edit checks a model against: the rules' errors (check_model) and the chat
// templates' warnings.
std::vector<Finding> gate_findings(const Model& m, const Layout& layout = Layout{}) {
  std::vector<Finding> out = check_model(m, layout, true);
  for (Finding& f : template_findings(m)) out.push_back(std::move(f));
  return out;
}

void check_result(const RewriteJob& job, const std::vector<Finding>& was, const Model& model,
                  const std::vector<Change>& changes) {
  std::string bad;
  for (const Change& c : changes) {
    if (!c.after || c.after->type != ValueType::string || !is_template_key(c.key)) continue;
    try {
      jinja::parse(c.after->str);
    } catch (const jinja::SyntaxError& e) {
      if (!job.template_check) note(job.in, "written anyway (--no-template-check): " + c.key + ": " + e.what());
      else bad += "\n  [template_syntax] " + c.key + ": " + e.what();
    }
  }
  if (!bad.empty())
    throw Error(Error::Kind::format, job.in, std::nullopt, "",
                "refusing to write a chat template that does not parse as Jinja:" + bad +
                    "\nnothing was written; give --no-template-check to write it anyway");
  std::vector<std::pair<std::string, KeyCheck>> touched;  // a changed registry key is held to its check's rules
  for (const Change& c : changes)
    if (const KeySpec* spec = Registry::builtin().find(c.to.empty() ? c.key : c.to, architecture(model)))
      touched.push_back({c.to.empty() ? c.key : c.to, spec->check});
  for (const Finding& f : new_findings(was, gate_findings(model), touched)) {  // no spans: the rules, not their offsets
    const std::string code(code_name(f.code));
    if (f.severity != Severity::error) {  // a template warning the edit brings in: said, not refused
      if (f.code != Code::template_syntax) note(job.in, "warning [" + code + "] " + f.message);
      continue;
    }
    if (job.allow_broken) note(job.in, "written anyway (--allow-broken): [" + code + "] " + f.message);
    else bad += "\n  [" + code + "] " + f.message;
  }
  if (!bad.empty())
    throw Error(Error::Kind::format, job.in, std::nullopt, "",
                "refusing to write a model that llama.cpp would refuse:" + bad +
                    "\nnothing was written; give --allow-broken to write it anyway (a broken fixture on purpose)");
}

// In place, an edit whose header fits before the data start writes the header alone (set
// in the result); otherwise the whole file is rewritten, and `why` says why.
// --header-only refuses instead. `model` (planned as `after`) was read from `path`.
std::optional<HeaderEdit> header_path(const RewriteJob& job, const std::string& path, const Model& model, const Layout& after,
                                      const Layout& source, uint64_t source_size, std::string& why) {
  std::optional<HeaderEdit> header;
  if (job.in_place && !job.always_write && !job.whole_file) header = header_in_place(model, after, source, source_size, why);
  if (struct stat st {}; header && stat_path(path, st) == 0 && (st.st_mode & 0222) == 0) {
    header.reset();  // never written into: replaced by rename, as before, keeping its mode
    why = "the file is read-only: it is replaced, not written into";
  }
  if (job.whole_file) why = "--whole-file";
  if (job.header_only && !header)
    throw Error(Error::Kind::usage, path, std::nullopt, "--header-only",
                "the edit does not fit in the header: " + why + "; nothing was written (without --header-only the whole file is rewritten)");
  return header;
}

const char* kHeaderPath = "the header alone, in place (it fits before the data start; no tensor byte moves)";

// What the header path says it wrote.
std::string header_written(const std::string& path, const HeaderEdit& h) {
  if (h.bytes.empty()) return path + ": no byte of the header differs; nothing was written\n";
  return path + ": wrote " + kHeaderPath + ": " + std::to_string(h.bytes.size()) + " of its " + std::to_string(h.header_size) +
         " bytes differ, at " + std::to_string(h.offset) + "\n";
}

std::vector<std::string> paths_of(const ShardSet& set) {
  std::vector<std::string> out;
  for (const Shard& s : set.shards) out.push_back(s.path);
  return out;
}

// An edit, realign or rewrite of a shard set: the patch applies to the model (its keys are
// in shard 1), checked as one model. A metadata change rewrites shard 1 alone (the other
// shards are read as far as their headers and neither rewritten nor touched); a new
// alignment or a rewrite writes every shard. --in-place replaces the files, -o PREFIX
// writes a whole new set; all or nothing either way.
int run_set_rewrite(const RewriteJob& job, ShardSet& set, std::vector<std::unique_ptr<PathLock>>& locks) {
  const size_t n = set.shards.size();
  for (const auto& st : job.patch.set)
    if (is_split_key(st.key)) throw_usage("set " + st.key + ": the split.* keys describe the set; ggufkit split and merge write them");
  for (const auto& r : job.patch.remove)
    if (is_split_key(r.key)) throw_usage("remove " + r.key + ": the split.* keys describe the set; ggufkit merge drops them");
  for (const auto& r : job.patch.rename)
    if (is_split_key(r.key) || is_split_key(r.to)) throw_usage("rename " + r.key + ": the split.* keys describe the set");
  if (job.byte_order) throw_usage("convert works on one file: merge the set, convert it, split it again");
  Model whole = set.model();
  const std::vector<Finding> was = gate_findings(whole);
  const uint32_t alignment_before = whole.alignment();
  const std::string prompt_before = job.conversation ? prompt_of(job.in, whole, *job.conversation) : "";
  std::vector<Change> changes = apply_patch(whole, job.patch);
  const std::string prompt_after = job.conversation ? prompt_of(job.in, whole, *job.conversation) : "";
  check_result(job, was, whole, changes);
  const uint32_t alignment = whole.alignment();
  const bool every = alignment != alignment_before || job.always_write;
  if (changes.empty() && !every) {
    std::printf("%s: no changes; nothing written\n", job.in.c_str());
    return 0;
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
  // Shard 1 takes the header path when its header fits, as a single file does.
  const std::string first = follow_links(set.shards[0].path);
  std::string why = "every shard is rewritten (the alignment changes)";
  std::optional<HeaderEdit> header;
  Layout first_after;
  if (!every) {
    first_after = plan(shards[0]);
    header = header_path(job, first, shards[0], first_after, set.shards[0].file.layout, set.shards[0].file.source_size, why);
  }
  else if (job.header_only) throw Error(Error::Kind::usage, job.in, std::nullopt, "--header-only", why + "; nothing was written");
  const std::string path_text = !job.in_place ? "" : header ? kHeaderPath : "the whole of shard 1 (" + why + ")";
  if (job.dry_run) {
    std::printf("%s: dry run, nothing written (shard set: %zu files; %s)\n", job.in.c_str(), n,
                every ? "every shard would be written" : "shard 1 alone would be written");
    for (const Change& c : changes) std::printf("  %s\n", change_text(c).c_str());
    if (!path_text.empty() && !every) std::printf("would write %s\n", path_text.c_str());
    if (job.conversation) print_prompts(prompt_before, prompt_after);
    return 0;
  }
  if (header) {
    std::string said;  // said before writing: the model's strings are views of the header about to change
    for (const Change& c : changes) said += "  " + change_text(c) + "\n";
    said += header_written(set.shards[0].path, *header);
    said += "shard set: " + std::to_string(n) + " files; shard 1's header written in place, the other " + std::to_string(n - 1) +
            " untouched\n";
    write_options(job.verify, job.force);  // signals stop cleanly
    write_header_in_place(first, first_after, *header);
    std::cout << said;
    return 0;
  }
  RewriteOptions opt = write_options(job.verify, job.force || job.in_place);
  opt.in_place = job.in_place;
  locks.clear();
  std::vector<Output> outputs;
  std::vector<std::string> sources;
  for (size_t k = 0; k < n; ++k) {
    if (!job.in_place) sources.push_back(set.shards[k].path);  // -o: never over a source
    if (k < written || !job.in_place)
      outputs.push_back({&shards[k], job.in_place ? follow_links(set.shards[k].path)
                                                  : shard_path(job.out, static_cast<uint32_t>(k + 1), static_cast<uint32_t>(n))});
  }
  std::vector<RewriteResult> rs = safe_write_all(outputs, sources, opt);
  for (const Change& c : changes) std::printf("  %s\n", change_text(c).c_str());
  for (const RewriteResult& r : rs)
    std::printf("%s: %llu bytes%s\n", r.path.c_str(), static_cast<unsigned long long>(r.layout.file_size),
                job.verify ? (", " + std::to_string(r.tensors_verified) + " tensors verified").c_str() : "");
  if (job.in_place && written < n) {
    std::printf("wrote %s\n", path_text.c_str());
    std::printf("shard set: %zu files; shard 1 rewritten, the other %zu untouched\n", n, n - 1);
  }
  return 0;
}

// The one pipeline behind rewrite, edit and realign: scan, apply, check, plan, safe rewrite.
int run_rewrite(const RewriteJob& job) {
  if (!job.dry_run && job.in_place == !job.out.empty()) throw_usage("give exactly one of -o OUT and --in-place");
  // An edit in place holds the lock of every file it may write from before it reads them
  // until it has written the header: a second edit waits, then reads what this one wrote.
  // (A whole-file rewrite lets go while it copies; it locks the files again to rename.)
  std::vector<std::unique_ptr<PathLock>> locks;
  std::optional<ShardSet> set;
  if (parse_shard_name(job.in)) {
    set = open_shard_set(job.in);
    if (job.in_place && !job.dry_run) {
      locks = lock_all(paths_of(*set));
      set = open_shard_set(job.in);  // read again, under the locks
    }
    if (set->shards.size() > 1) return run_set_rewrite(job, *set, locks);
  } else if (job.in_place && !job.dry_run) {
    locks = lock_all({job.in});
  }
  Scanned s = set ? std::move(set->shards[0].file) : scan_file(job.in);  // a set of one is read once
  Model& model = s.model;  // patched in place: a large vocabulary is not copied
  // The source's own findings (what the edit is not blamed for) are found while the key
  // registry the patch needs is read: both only read. (The future waits in its destructor
  // should the registry throw.)
  auto was_found = in_background([&] { return gate_findings(model, s.layout); });
  const Registry& registry = Registry::builtin();
  const std::vector<Finding> was = was_found.get();
  const std::string prompt_before = job.conversation ? prompt_of(job.in, model, *job.conversation) : "";
  std::vector<Change> changes = apply_patch(model, job.patch, registry);
  const std::string prompt_after = job.conversation ? prompt_of(job.in, model, *job.conversation) : "";
  const Layout& before = s.layout;  // the patch changes the model only
  std::string order_change;
  if (job.byte_order && *job.byte_order != model.order) {
    for (size_t i = 0; i < model.tensors.size(); ++i) {  // refused by name before anything is written
      const GgmlType* gt = ggml_type(model.tensors[i].type);
      if (!gt || !can_swap(*gt))
        throw Error(Error::Kind::format, job.in, std::nullopt, "tensor[" + std::to_string(i) + "] " + model.tensors[i].name,
                    std::string("cannot change the byte order of ") + (gt ? gt->name : "an unknown type") +
                        " data; the types that can be converted are " + swappable_types());
    }
    order_change = std::string("order   ") + order_name(model.order) + " -> " + order_name(*job.byte_order);
    model.data_order = model.order;
    model.order = *job.byte_order;
  }
  if (changes.empty() && order_change.empty() && !job.always_write) {
    if (job.json) std::cout << "{\"file\": " << json_string(job.in) << ", \"changes\": [], \"written\": false}\n";
    else std::printf("%s: no changes%s; nothing written\n", job.in.c_str(),
                     job.byte_order ? (std::string(" (already ") + order_name(model.order) + ")").c_str() : "");
    return 0;
  }
  check_result(job, was, model, changes);
  // What the source had beyond its fields goes only where the data is re-laid: say so.
  Layout after = plan(model);
  uint64_t dropped = 0;
  if (!keeps_tail(model, after))
    each_span(before, model.tensors, [&](const LabeledSpan& sp) {  // a patch changes no tensor
      if (sp.kind == SpanKind::gap || sp.kind == SpanKind::trailing) dropped += sp.span.size;
    });
  std::string dropped_note = dropped ? "note: the data is re-laid; the source's " + std::to_string(dropped) +
                                           " bytes of gaps and bytes after the end are not carried over\n"
                                     : "";
  std::string why;
  std::optional<HeaderEdit> header;
  if (order_change.empty()) header = header_path(job, job.in, model, after, before, s.source_size, why);
  else why = "the byte order changes";
  const std::string path_text = !job.in_place ? ""
                                : header      ? kHeaderPath
                                              : "the whole file (" + why + ")";
  if (job.dry_run) {
    if (job.json) {
      std::cout << "{\"dry_run\": true, \"changes\": [";
      for (size_t i = 0; i < changes.size(); ++i) std::cout << (i ? ", " : "") << change_json(changes[i]);
      std::cout << "], \"data_offset\": {\"before\": " << before.data_offset << ", \"after\": " << after.data_offset
                << "}, \"file_size\": {\"before\": " << s.source_size << ", \"after\": " << after.file_size << "}";
      if (job.conversation)
        std::cout << ", \"prompt\": {\"before\": " << json_string(prompt_before) << ", \"after\": " << json_string(prompt_after)
                  << ", \"diff\": " << json_string(unified_diff(prompt_before, prompt_after, "prompt before", "prompt after")) << "}";
      std::cout << "}\n";
      return 0;
    }
    std::printf("%s: dry run, nothing written\n", job.in.c_str());
    for (const Change& c : changes) std::printf("  %s\n", change_text(c).c_str());
    if (!order_change.empty()) std::printf("  %s\n", order_change.c_str());
    std::printf("%s", dropped_note.c_str());
    if (changes.empty()) std::printf("  no changes: the output would be a byte-for-byte rewrite\n");
    if (!path_text.empty()) std::printf("would write %s\n", path_text.c_str());
    std::printf("data start  %llu -> %llu\nfile size   %llu -> %llu\n", static_cast<unsigned long long>(before.data_offset),
                static_cast<unsigned long long>(after.data_offset), static_cast<unsigned long long>(s.source_size),
                static_cast<unsigned long long>(after.file_size));
    if (job.conversation) print_prompts(prompt_before, prompt_after);
    return 0;
  }
  if (header) {
    // Said before writing: the model's strings are views of the header about to change.
    std::string said;
    if (job.json) {
      said = "{\"file\": " + json_string(job.in) + ", \"changes\": [";
      for (size_t i = 0; i < changes.size(); ++i) said += (i ? ", " : "") + change_json(changes[i]);
      said += "], \"written\": \"header\", \"header_bytes\": " + std::to_string(header->header_size) +
              ", \"bytes_written\": " + std::to_string(header->bytes.size()) + ", \"at\": " + std::to_string(header->offset) + "}\n";
    } else {
      for (const Change& c : changes) said += "  " + change_text(c) + "\n";
      said += header_written(job.in, *header);
    }
    write_options(job.verify, job.force);  // signals stop cleanly
    write_header_in_place(job.in, after, *header);
    std::cout << said;
    return 0;
  }
  RewriteOptions opt = write_options(job.verify, job.force);
  opt.in_place = job.in_place;
  int shown = -1;
  bool bar = ::isatty(2) && s.source_size > (64u << 20);
  if (bar)
    opt.progress = [&](uint64_t w, uint64_t total) {
      int pct = total ? static_cast<int>(100 * w / total) : 100;
      if (pct == shown) return;
      shown = pct;
      std::fprintf(stderr, "\rggufkit: writing %s of %s (%d%%)", gb(w).c_str(), gb(total).c_str(), pct);
      if (pct == 100) std::fprintf(stderr, "\n");
    };
  // Both layouts are told above and safe_rewrite plans again: for a million tensors each
  // holds 8 MB of offsets, which the re-read of the output needs room for.
  after = Layout{};
  s.layout = Layout{};
  locks.clear();
  RewriteResult r = safe_rewrite(model, job.in, job.out, opt);
  if (bar && shown != 100) std::fprintf(stderr, "\n");
  if (job.json) {
    std::cout << "{\"file\": " << json_string(r.path) << ", \"changes\": [";
    for (size_t i = 0; i < changes.size(); ++i) std::cout << (i ? ", " : "") << change_json(changes[i]);
    std::cout << "], \"file_size\": " << r.layout.file_size << ", \"data_offset\": " << r.layout.data_offset
              << ", \"tensors_verified\": " << r.tensors_verified << ", \"bytes_verified\": " << r.bytes_verified << "}\n";
    return 0;
  }
  for (const Change& c : changes) std::printf("  %s\n", change_text(c).c_str());
  if (!order_change.empty()) std::printf("  %s\n", order_change.c_str());
  std::printf("%s", dropped_note.c_str());
  std::printf("%s: %llu bytes, %zu tensors, %zu keys, data start %llu", r.path.c_str(),
              static_cast<unsigned long long>(r.layout.file_size), model.tensors.size(), model.metadata.size(),
              static_cast<unsigned long long>(r.layout.data_offset));
  if (job.verify) std::printf("; %llu tensors verified", static_cast<unsigned long long>(r.tensors_verified));
  std::printf("\n");
  if (!path_text.empty()) std::printf("wrote %s\n", path_text.c_str());
  return 0;
}

void add_output_options(po::options_description& desc) {
  desc.add_options()("output,o", po::value<std::string>(), "write the result here (never over FILE itself)")(
      "in-place", po::bool_switch(), "replace FILE, by renaming the finished file over it")(
      "dry-run", po::bool_switch(), "print what would change and write nothing")(
      "no-verify", po::bool_switch(), "skip re-reading the written tensor data (the header is still checked)")(
      "force", po::bool_switch(), "replace OUT if it exists (without it, an existing OUT is refused)")(
      "allow-broken", po::bool_switch(),
      "write the result even if llama.cpp would refuse it (validate's rules: an alignment below 32, a vocabulary "
      "that disagrees with token ids or token_embd, a missing architecture, ...); for broken fixtures")(
      "json", po::bool_switch(), "print the result as JSON");
}

RewriteJob job_of(const po::variables_map& vm) {
  RewriteJob job;
  job.in = vm["file"].as<std::string>();
  if (vm.count("output")) job.out = vm["output"].as<std::string>();
  job.in_place = vm["in-place"].as<bool>();
  job.dry_run = vm["dry-run"].as<bool>();
  job.verify = !vm["no-verify"].as<bool>();
  job.json = vm["json"].as<bool>();
  job.force = vm["force"].as<bool>();
  job.allow_broken = vm["allow-broken"].as<bool>();
  return job;
}

const char* kSafety =
    "The result is first checked with validate's rules: what llama.cpp would refuse\n"
    "(and the source did not already have) stops the command before anything is\n"
    "written, unless --allow-broken.\n"
    "The result is written as a temporary file in the destination's folder, flushed,\n"
    "re-read and checked (the header against the plan; every tensor's bytes by\n"
    "checksum unless --no-verify), then renamed into place. Any failure or signal\n"
    "leaves FILE and any existing OUT exactly as they were.";

int cmd_rewrite(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "the GGUF file to read");
  add_output_options(desc);
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  std::string("usage: ggufkit rewrite FILE (-o OUT | --in-place)\n\n"
                              "Reads FILE, plans a fresh layout and writes it with ggufkit's writer, streaming\n"
                              "the tensor data. A file ggufkit reads without complaint comes out byte for byte\n"
                              "the same.\n\n") + kSafety);
  if (!vm) return 0;
  RewriteJob job = job_of(*vm);
  job.always_write = true;
  return run_rewrite(job);
}

int cmd_edit(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "the GGUF file to edit")(
      "patch,p", po::value<std::string>(), "a patch file (YAML: set, remove, rename, alignment)")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "KEY=VALUE: set a key (keeps an existing key's type); VALUE is read as YAML, as in a patch: "
      "'general.name=\"My Model\"' stores My Model, [1, 2] is a list")(
      "set-typed", po::value<std::vector<std::string>>()->composing(),
      "KEY=TYPE:VALUE: add a key of the given type (u8 ... f64, bool, string, array[u32], ...)")(
      "remove", po::value<std::vector<std::string>>()->composing(), "KEY: remove a key")(
      "rename", po::value<std::vector<std::string>>()->composing(), "OLD=NEW: rename a key")(
      "chat-template-file", po::value<std::string>(),
      "set tokenizer.chat_template from a file ('-' for standard input; pipes and /dev/fd/N are read whole)")(
      "eos-token-id", po::value<std::string>(), "set tokenizer.ggml.eos_token_id")(
      "special-token", po::value<std::vector<std::string>>()->composing(),
      "NAME=TEXT: set a special token by its text, matched exactly against the vocabulary (NAME: bos, eos, eot, "
      "eom, unknown, seperator, padding, cls, mask, fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep; also "
      "sep, pad, unk), e.g. eos='<|im_end|>'")(
      "special-token-id", po::value<std::vector<std::string>>()->composing(), "NAME=ID: set a special token by its id")(
      "from-hf", po::value<std::string>(),
      "DIR or DIR/tokenizer_config.json: take the chat template(s), bos/eos/pad/unk tokens and add_bos/add_eos "
      "flags a Hugging Face model folder gives (chat_template.jinja beside the config wins)")(
      "alignment", po::value<std::string>(), "re-lay the data at this alignment (a power of two, or 'default')")(
      "header-only", po::bool_switch(),
      "with --in-place: write the header alone (when the edited header fits before the data start), or refuse; "
      "without it such an edit still takes that path, and one that does not fit rewrites the whole file")(
      "whole-file", po::bool_switch(),
      "with --in-place: rewrite the whole file even when the header alone would do (a new inode: hard links "
      "keep the old bytes)")(
      "no-template-check", po::bool_switch(),
      "write a chat template even if it does not parse as Jinja (a syntax error is otherwise refused, with its "
      "line and column)")(
      "render", po::value<std::string>(),
      "with --dry-run: print the prompt the conversation in this JSON file gets under the old template and tokens "
      "and under the new, and a unified diff (see 'ggufkit template --help')")(
      "add-generation-prompt", po::bool_switch(), "with --render: end the prompts with the assistant's turn opening");
  add_output_options(desc);
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  std::string("usage: ggufkit edit FILE [--patch PATCH.yaml] [--set KEY=VALUE]... (-o OUT | --in-place)\n\n"
                              "Changes metadata without re-converting the model: an existing key keeps its\n"
                              "position and type, a new key is appended with the type the key registry gives\n"
                              "(schemas/keys.yaml) or the patch names. Token ids must stay below the vocabulary\n"
                              "size. Every offset is recomputed and every tensor's bytes carried over unchanged.\n"
                              "The patch format is in schemas/patch.md:\n\n"
                              "  set: {general.name: Fixed, tokenizer.chat_template: {file: t.jinja}}\n"
                              "  remove: [general.license.link]\n"
                              "  rename: {old.key: new.key}\n"
                              "  alignment: 64\n\n") + kSafety);
  if (!vm) return 0;
  RewriteJob job = job_of(*vm);
  job.template_check = !(*vm)["no-template-check"].as<bool>();
  job.header_only = (*vm)["header-only"].as<bool>();
  job.whole_file = (*vm)["whole-file"].as<bool>();
  if ((job.header_only || job.whole_file) && !job.in_place)
    throw_usage(std::string(job.header_only ? "--header-only" : "--whole-file") + " is for edits in place: give --in-place");
  if (job.header_only && job.whole_file) throw_usage("give one of --header-only and --whole-file");
  if (vm->count("render")) {
    if (!job.dry_run) throw_usage("--render shows the prompts of a dry run: add --dry-run");
    job.conversation = read_conversation((*vm)["render"].as<std::string>());
    if ((*vm)["add-generation-prompt"].as<bool>())
      job.conversation->dict->set(jinja::Value::string("add_generation_prompt"), jinja::Value::boolean(true));
  }
  if (vm->count("patch")) job.patch = read_patch((*vm)["patch"].as<std::string>());
  auto pair = [](const std::string& s, const char* opt) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) throw_usage(std::string(opt) + " expects KEY=VALUE, found '" + s + "'");
    return std::make_pair(s.substr(0, eq), s.substr(eq + 1));
  };
  if (vm->count("set"))
    for (const auto& s : (*vm)["set"].as<std::vector<std::string>>()) {
      auto [k, v] = pair(s, "--set");
      job.patch.add_set(k, v);
    }
  if (vm->count("from-hf")) job.patch.add_from_hf((*vm)["from-hf"].as<std::string>());
  for (const char* opt : {"special-token", "special-token-id"})
    if (vm->count(opt))
      for (const auto& s : (*vm)[opt].as<std::vector<std::string>>()) {
        auto [name, value] = pair(s, (std::string("--") + opt).c_str());
        job.patch.add_special(name, value, std::string(opt) == "special-token-id");
      }
  if (vm->count("set-typed"))
    for (const auto& s : (*vm)["set-typed"].as<std::vector<std::string>>()) {
      auto [k, tv] = pair(s, "--set-typed");
      auto colon = tv.find(':');
      if (colon == std::string::npos || colon == 0) throw_usage("--set-typed expects KEY=TYPE:VALUE, found '" + s + "'");
      job.patch.add_set_typed(k, tv.substr(0, colon), tv.substr(colon + 1));
    }
  if (vm->count("remove"))
    for (const auto& k : (*vm)["remove"].as<std::vector<std::string>>()) job.patch.add_remove(k);
  if (vm->count("rename"))
    for (const auto& s : (*vm)["rename"].as<std::vector<std::string>>()) {
      auto [k, v] = pair(s, "--rename");
      job.patch.add_rename(k, v);
    }
  if (vm->count("chat-template-file")) {
    std::string path = (*vm)["chat-template-file"].as<std::string>();
    if (struct stat st {}; path != "-" && stat_path(path, st) != 0 && (errno == ENOENT || errno == ENOTDIR))
      throw_usage(path + ": cannot open for reading: " + std::strerror(errno));  // read later, inside the patch
    job.patch.add_set_file("tokenizer.chat_template", path == "-" ? "/dev/stdin" : path);  // read whole, under the cap
  }
  if (vm->count("eos-token-id")) job.patch.add_set("tokenizer.ggml.eos_token_id", (*vm)["eos-token-id"].as<std::string>());
  if (vm->count("alignment")) job.patch.set_alignment((*vm)["alignment"].as<std::string>());
  job.patch.allow_broken = job.allow_broken;
  return run_rewrite(job);
}

// realign and convert: FILE, one required option, and the output options.
std::optional<po::variables_map> parse_rewrite(const std::vector<std::string>& args, const char* option,
                                               const char* option_help, const std::string& help) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "the GGUF file")(
      option, po::value<std::string>()->required(), option_help);
  add_output_options(desc);
  po::positional_options_description pos;
  pos.add("file", 1);
  return parse(args, desc, pos, help + kSafety);
}

int cmd_realign(const std::vector<std::string>& args) {
  auto vm = parse_rewrite(args, "alignment,a", "the new alignment: a power of two, or 'default' (32, no key)",
                          "usage: ggufkit realign FILE --alignment N (-o OUT | --in-place)\n\n"
                          "Sets general.alignment to N and re-lays the file: the data section and every\n"
                          "tensor start on a multiple of N; every offset is recomputed and every tensor's\n"
                          "bytes are carried over unchanged. '-a default' removes the key, which means 32\n"
                          "to every reader. Realigning back gives the original bytes: to the original N,\n"
                          "or with -a default for a file that declared none.\n\n");
  if (!vm) return 0;
  RewriteJob job = job_of(*vm);
  job.patch.set_alignment((*vm)["alignment"].as<std::string>());
  return run_rewrite(job);
}

int cmd_convert(const std::vector<std::string>& args) {
  auto vm = parse_rewrite(args, "byte-order", "big or little",
                          "usage: ggufkit convert FILE --byte-order big|little (-o OUT | --in-place)\n\n"
                          "Writes the model in the other byte order: the header's numbers, and in the\n"
                          "tensor data every multi-byte field of every block as ggml lays blocks out\n"
                          "(element values of f32/f16/bf16/f64/integers, the f16 scales of quantized\n"
                          "blocks, the u16 grids of iq2/iq1_s); byte arrays stay as they are. llama.cpp\n"
                          "reads only files in its host's order (little-endian on x86 and ARM). A tensor\n"
                          "type whose block layout is not known is refused by name before anything is\n"
                          "written. Values read back the same (ggufkit tensor); checksums of the stored\n"
                          "bytes (ggufkit hash) change.\n\n");
  if (!vm) return 0;
  RewriteJob job = job_of(*vm);
  std::string bo = (*vm)["byte-order"].as<std::string>();
  if (bo != "big" && bo != "little") throw_usage("--byte-order must be big or little, found '" + bo + "'");
  job.byte_order = bo == "big" ? ByteOrder::big : ByteOrder::little;
  return run_rewrite(job);
}

// SIZE as llama.cpp's splitter takes it (N followed by M = 10^6 or G = 10^9 bytes), also
// MiB and GiB, or a plain number of bytes.
uint64_t parse_size(const std::string& text) {
  size_t end = 0;
  while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
  std::string unit = text.substr(end);
  uint64_t scale = unit.empty() ? 1 : unit == "M" ? 1000000ull : unit == "G" ? 1000000000ull
                 : unit == "MiB" ? 1ull << 20 : unit == "GiB" ? 1ull << 30 : 0;
  if (end == 0 || end > 12 || scale == 0)
    throw_usage("--max-size expects a number of bytes, or N followed by M, G (10^6, 10^9, as llama.cpp), MiB or GiB; found '" +
                text + "'");
  return std::stoull(text.substr(0, end)) * scale;
}

void print_written(const std::vector<RewriteResult>& rs, const std::vector<Model>& models, bool json) {
  if (json) {
    std::cout << "{\"files\": [";
    for (size_t i = 0; i < rs.size(); ++i)
      std::cout << (i ? ", " : "") << "{\"file\": " << json_string(rs[i].path) << ", \"tensors\": " << models[i].tensors.size()
                << ", \"file_size\": " << rs[i].layout.file_size << ", \"tensors_verified\": " << rs[i].tensors_verified << "}";
    std::cout << "]}\n";
    return;
  }
  for (size_t i = 0; i < rs.size(); ++i)
    std::printf("%s: %zu tensors, %llu bytes\n", rs[i].path.c_str(), models[i].tensors.size(),
                static_cast<unsigned long long>(rs[i].layout.file_size));
}

// The files of a set (or the one file) a command read: none of them is ever an output.

int cmd_split(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "the model (a file, or any shard of a set)")(
      "output,o", po::value<std::string>()->required(), "PREFIX: the shards are PREFIX-00001-of-0000N.gguf, ...")(
      "max-tensors", po::value<std::string>(), "start a new shard every N tensors")(
      "max-size", po::value<std::string>(), "start a new shard before its tensor bytes pass SIZE (M, G, MiB, GiB)")(
      "metadata-only-first", po::bool_switch(), "shard 1 holds the keys only, no tensor (a template fix then costs its size)")(
      "no-verify", po::bool_switch(), "skip re-reading the written tensor data (headers are still checked)")(
      "force", po::bool_switch(), "replace shard files that exist")("json", po::bool_switch(), "print the result as JSON");
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit split MODEL -o PREFIX (--max-tensors N | --max-size SIZE) [--metadata-only-first]\n\n"
                  "Writes the model as a shard set, by llama.cpp's gguf-split convention: files\n"
                  "PREFIX-00001-of-0000N.gguf ..., shard 1 with every key of the model and the others\n"
                  "with split.no, split.tensors.count and split.count only. A new shard starts every\n"
                  "N tensors, or before the next tensor (padded to 32) would take a shard's tensor\n"
                  "bytes past SIZE (M = 10^6 and G = 10^9 bytes, as llama.cpp; also MiB, GiB). At\n"
                  "alignment 32 the files are byte for byte what llama-gguf-split writes; a model at\n"
                  "another alignment keeps it in every shard. Every shard is written and verified\n"
                  "before any is put in place: a failure leaves none of them.");
  if (!vm) return 0;
  SplitOptions o;
  if (vm->count("max-tensors") == vm->count("max-size")) throw_usage("give one of --max-tensors N and --max-size SIZE");
  if (vm->count("max-tensors")) {
    std::string t = (*vm)["max-tensors"].as<std::string>();
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos || std::stoull(t) == 0)
      throw_usage("--max-tensors expects a number of tensors, at least 1; found '" + t + "'");
    o.max_tensors = std::stoull(t);
  } else {
    o.max_bytes = parse_size((*vm)["max-size"].as<std::string>());
    if (o.max_bytes == 0) throw_usage("--max-size must be more than 0 bytes");
  }
  o.metadata_only_first = (*vm)["metadata-only-first"].as<bool>();
  ShardSet set = open_shard_set((*vm)["file"].as<std::string>());
  Model model = set.model();
  std::vector<Model> shards = split_model(model, o);
  std::string prefix = (*vm)["output"].as<std::string>();
  std::vector<Output> outputs;
  for (size_t k = 0; k < shards.size(); ++k)
    outputs.push_back({&shards[k], shard_path(prefix, static_cast<uint32_t>(k + 1), static_cast<uint32_t>(shards.size()))});
  RewriteOptions opt = write_options(!(*vm)["no-verify"].as<bool>(), (*vm)["force"].as<bool>());
  print_written(safe_write_all(outputs, paths_of(set), opt), shards, (*vm)["json"].as<bool>());
  return 0;
}

int cmd_merge(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "any shard of the set")(
      "output,o", po::value<std::string>()->required(), "the single file to write")(
      "no-verify", po::bool_switch(), "skip re-reading the written tensor data (the header is still checked)")(
      "force", po::bool_switch(), "replace OUT if it exists")("json", po::bool_switch(), "print the result as JSON");
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit merge SHARD -o OUT\n\n"
                  "Writes a shard set as one file: shard 1's keys without split.no, split.count and\n"
                  "split.tensors.count, and every shard's tensors in order, so that merging what\n"
                  "'ggufkit split' wrote gives back the file byte for byte. (llama.cpp's merge keeps\n"
                  "the three keys, with split.count 0.) The set is checked first: every shard there,\n"
                  "numbered and counted as its name says.");
  if (!vm) return 0;
  ShardSet set = open_shard_set((*vm)["file"].as<std::string>());
  std::vector<Model> merged{set.model()};
  RewriteOptions opt = write_options(!(*vm)["no-verify"].as<bool>(), (*vm)["force"].as<bool>());
  print_written(safe_write_all({{&merged[0], (*vm)["output"].as<std::string>()}}, paths_of(set), opt), merged,
                (*vm)["json"].as<bool>());
  return 0;
}

int cmd_write(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("sketch", po::value<std::string>()->required(), "the sketch (YAML or JSON)")(
      "output,o", po::value<std::string>()->required(), "the GGUF file to write")(
      "define,D", po::value<std::vector<std::string>>()->composing(), "NAME=VALUE: fill [[NAME]] in the sketch")(
      "force", po::bool_switch(), "replace OUT if it exists")(
      "map", po::bool_switch(), "print the span map of what was written")(
      "json", po::bool_switch(), "with --map: print it as JSON");
  po::positional_options_description pos;
  pos.add("sketch", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit write SKETCH.yaml -o OUT.gguf [-D NAME=VALUE]... [--map [--json]]\n\n"
                  "Writes the GGUF file a sketch describes: metadata entries in order with their\n"
                  "types, tensors with their data (values, fill, bytes or from), and raw overrides\n"
                  "that break the file on purpose. The format is in schemas/sketch.md; examples are\n"
                  "in examples/. Prints nothing on success unless --map is given.");
  if (!vm) return 0;
  Defines defines;
  if (vm->count("define"))
    for (const auto& d : (*vm)["define"].as<std::vector<std::string>>()) {
      auto eq = d.find('=');
      if (eq == std::string::npos || eq == 0) throw_usage("-D expects NAME=VALUE, found '" + d + "'");
      defines[d.substr(0, eq)] = d.substr(eq + 1);
    }
  std::string out = (*vm)["output"].as<std::string>();
  refuse_same_file((*vm)["sketch"].as<std::string>(), out, "");
  Sketch sketch = read_sketch((*vm)["sketch"].as<std::string>(), defines);
  Layout L = write_sketch(sketch, out, (*vm)["force"].as<bool>());
  if ((*vm)["map"].as<bool>()) print_map(L, sketch.truncate_at.value_or(L.file_size), (*vm)["json"].as<bool>());
  return 0;
}

int cmd_dump(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "the GGUF file")(
      "format", po::value<std::string>()->default_value("yaml"), "yaml or json")(
      "inline-data", po::bool_switch(), "tensor data inline as hex instead of by reference (small tensors only)")(
      "output,o", po::value<std::string>(), "write the sketch here instead of standard output")(
      "force", po::bool_switch(), "with -o: replace OUT if it exists");
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit dump FILE [--format yaml|json] [--inline-data] [-o OUT]\n\n"
                  "Prints a complete sketch of FILE that 'ggufkit write' turns back into the same\n"
                  "bytes: every entry in full, and each tensor's data by reference (from: the\n"
                  "file and the byte offset) unless --inline-data. With -o the file is named\n"
                  "relative to OUT's folder, as write reads it; on standard output, absolute.");
  if (!vm) return 0;
  std::string format = (*vm)["format"].as<std::string>();
  if (format != "yaml" && format != "json") throw_usage("--format must be yaml or json, found '" + format + "'");
  Scanned s = scan_file((*vm)["file"].as<std::string>());
  DumpOptions opt{format == "json", (*vm)["inline-data"].as<bool>(), std::nullopt};
  if (!vm->count("output")) {  // printed as it is made: a sketch may be larger than memory allows
    dump_sketch(s.model, opt, [](std::string_view piece) { std::fwrite(piece.data(), 1, piece.size(), stdout); });
    return 0;
  }
  std::string out = (*vm)["output"].as<std::string>();
  opt.sketch_dir = std::filesystem::path(out).parent_path().string();
  refuse_same_file((*vm)["file"].as<std::string>(), out, "");
  write_text_file(out, (*vm)["force"].as<bool>(),
                  [&](const std::function<void(std::string_view)>& put) { dump_sketch(s.model, opt, put); });
  return 0;
}

int cmd_recover(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "the model an in-place edit was interrupted on")(
      "discard", po::bool_switch(), "remove the journal without applying it, when FILE (every file of its set) reads clean");
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit recover FILE [--discard]\n\n"
                  "Finishes what an interrupted in-place edit left (its journal, FILE.ggufkit-journal),\n"
                  "holding FILE's lock meanwhile. A header edit: the new header is kept when all of it is\n"
                  "in the file, else the old bytes of the range the edit wrote are put back; the file must\n"
                  "then read clean, or it is put back as it was. A shard set's renames: every new shard not\n"
                  "yet in place is renamed over its old one. The journal is then removed. Until then every\n"
                  "command refuses FILE.\n\n"
                  "A journal is trusted only when it is a regular file owned by root, by FILE's owner or by\n"
                  "you; one that does not match FILE (another owner, inode or size, cut short, a bad\n"
                  "checksum, a range outside the header, a header that is neither the old nor the new one\n"
                  "outside the range) is reported and not applied. --discard then removes it, but only when\n"
                  "FILE reads clean without it.");
  if (!vm) return 0;
  const std::string file = (*vm)["file"].as<std::string>();
  switch (recover(file, (*vm)["discard"].as<bool>())) {
    case Recovery::none: std::printf("%s: no journal; nothing to recover\n", file.c_str()); break;
    case Recovery::rolled_back: std::printf("%s: the edit was cut short; the old header is back\n", file.c_str()); break;
    case Recovery::kept_new: std::printf("%s: the new header was all written; it is kept\n", file.c_str()); break;
    case Recovery::set_finished:
      std::printf("%s: the set's renames were cut short; every new shard is now in place\n", file.c_str());
      break;
    case Recovery::discarded: std::printf("%s: reads clean; its journal was removed without being applied\n", file.c_str()); break;
  }
  return 0;
}

int cmd_example(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("output,o", po::value<std::string>()->required(), "where to write it")(
      "force", po::bool_switch(), "replace OUT if it exists");
  po::positional_options_description pos;
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit example -o OUT\n\n"
                  "Writes the walkthrough's 408-byte file: general.architecture 'counts', a name,\n"
                  "general.alignment 64, counts.block_count 1, three tokens, and one 3 x 2 f32\n"
                  "tensor holding 0.5 ... 5.5 at byte 384, its data not padded at the end.");
  if (!vm) return 0;
  std::string out = (*vm)["output"].as<std::string>();
  Layout L = write_file(walkthrough_model(), out, (*vm)["force"].as<bool>());
  std::printf("%s: %llu bytes\n", out.c_str(), static_cast<unsigned long long>(L.file_size));
  return 0;
}

// The exit status of an error: its kind, except that an input the command line names
// (FILE, --patch P, --render=C) which is not there is a usage error like a bad value, not
// an I/O error: the caller's mistake, found on opening it for reading. (An output that a
// failed write took away again is no input: it stays an I/O error.)
int exit_code(const Error& e, const std::vector<std::string>& args) {
  if (e.kind != Error::Kind::io || e.file.empty() || e.message.rfind("cannot open for reading", 0) != 0) return e.exit_code();
  struct stat st {};
  if (stat_path(e.file, st) == 0 || (errno != ENOENT && errno != ENOTDIR)) return e.exit_code();
  for (const std::string& a : args) {
    size_t eq = a.size() > e.file.size() ? a.size() - e.file.size() - 1 : std::string::npos;
    if (a == e.file || (eq != std::string::npos && a[0] == '-' && a[eq] == '=' && a.compare(eq + 1, std::string::npos, e.file) == 0))
      return 2;
  }
  return e.exit_code();
}

}  // namespace

int main(int argc, char** argv) {
  // One malloc arena for every thread: glibc reserves 64 MiB of address space for each
  // extra one, which the few small buffers of the helper threads never need and which
  // would count against a memory limit (ulimit -v) the header's size sets.
  mallopt(M_ARENA_MAX, 1);
  // Helper threads (the verifier, the header's re-read) get 4 MiB stacks, not the 8 MiB of
  // RLIMIT_STACK (32 when unlimited): their address space counts against that limit too.
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) == 0) {
    pthread_attr_setstacksize(&attr, 4u << 20);
    pthread_setattr_default_np(&attr);
    pthread_attr_destroy(&attr);
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "--version" || args[0] == "version")) {
    std::cout << "ggufkit " << GGUFKIT_VERSION << "\n";
    return 0;
  }
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  std::string cmd = args[0];
  args.erase(args.begin());
  ::signal(SIGXFSZ, SIG_IGN);  // past a file size limit, write() fails with EFBIG and we clean up
  try {
    if (cmd == "show") return cmd_show(args);
    if (cmd == "meta") return cmd_meta(args);
    if (cmd == "tensors") return cmd_tensors(args);
    if (cmd == "stack") return cmd_stack(args);
    if (cmd == "layer") return cmd_layer(args);
    if (cmd == "account") return cmd_account(args);
    if (cmd == "tensor") return cmd_tensor(args);
    if (cmd == "diff") return cmd_diff(args);
    if (cmd == "hash") return cmd_hash(args);
    if (cmd == "validate") return cmd_validate(args);
    if (cmd == "map") return cmd_map(args);
    if (cmd == "get") return cmd_get(args);
    if (cmd == "template") return cmd_template(args);
    if (cmd == "rewrite") return cmd_rewrite(args);
    if (cmd == "edit") return cmd_edit(args);
    if (cmd == "realign") return cmd_realign(args);
    if (cmd == "convert") return cmd_convert(args);
    if (cmd == "split") return cmd_split(args);
    if (cmd == "merge") return cmd_merge(args);
    if (cmd == "write") return cmd_write(args);
    if (cmd == "dump") return cmd_dump(args);
    if (cmd == "example") return cmd_example(args);
    if (cmd == "recover") return cmd_recover(args);
    std::cerr << "ggufkit: unknown command '" << cmd << "'\n\n" << kUsage;
    return 2;
  } catch (const Error& e) {
    std::cerr << "ggufkit: error: " << e.what() << "\n";
    return exit_code(e, args);
  } catch (const po::error& e) {
    std::cerr << "ggufkit " << cmd << ": " << e.what() << " (see 'ggufkit " << cmd << " --help')\n";
    return 2;
  } catch (const std::bad_alloc&) {  // the machine's limit (sizes an input claims are capped before they are allocated)
    std::cerr << "ggufkit: error: out of memory\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "ggufkit: internal error: " << e.what() << "\n";
    return 1;
  }
}
