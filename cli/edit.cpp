// The editing commands: rewrite, edit, realign, convert and recover. Each fills an
// EditRequest, calls ggufkit::edit and prints its report.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "ggufkit/check.h"
#include "ggufkit/edit.h"
#include "ggufkit/journal.h"
#include "ggufkit/path.h"
#include "ggufkit/text.h"
#include "commands.h"
#include "common.h"
#include "json.h"

namespace ggufkit::cli {

namespace {


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
    case Change::retype:
      return "retype  " + brief_value(Value::of_string(c.token)) + " (id " + std::to_string(c.id) +
             "): " + token_type_name(c.before->as_i64()) + " -> " + token_type_name(c.after->as_i64());
  }
  return "";
}

std::string dims_of(const std::vector<uint64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}
std::string type_of(uint32_t t) { return ggml_type_name(t); }

std::string tensor_change_text(const TensorChange& c) {
  const std::string from = c.from.empty() ? "" : " (from " + c.from + ")";
  switch (c.kind) {
    case TensorChange::removed: return "remove  tensor " + c.name + " " + dims_of(c.dims_before) + " " + type_of(c.type_before);
    case TensorChange::renamed: return "rename  tensor " + c.name + " -> " + c.to;
    case TensorChange::sliced: return "slice   tensor " + c.name + " " + dims_of(c.dims_before) + " -> " + dims_of(c.dims_after);
    case TensorChange::added: return "add     tensor " + c.name + " " + dims_of(c.dims_after) + " " + type_of(c.type_after) + from;
    case TensorChange::replaced:
      return "replace tensor " + c.name + " " + dims_of(c.dims_before) + " " + type_of(c.type_before) + " -> " +
             dims_of(c.dims_after) + " " + type_of(c.type_after) + from;
  }
  return "";
}

void tensor_change_json(JsonOut& j, const TensorChange& c) {
  static const char* kinds[] = {"removed", "renamed", "sliced", "added", "replaced"};
  auto dims = [&](const std::vector<uint64_t>& d) {
    j.array([&] {
      for (uint64_t x : d) j.num(x);
    });
  };
  j.object([&] {
    j.key("change").str(kinds[c.kind]).key("tensor").str(c.name);
    if (c.kind == TensorChange::renamed) j.key("to").str(c.to);
    if (c.kind != TensorChange::added) j.key("dims_before"), dims(c.dims_before), j.key("type_before").str(type_of(c.type_before));
    if (c.kind != TensorChange::removed) j.key("dims_after"), dims(c.dims_after), j.key("type_after").str(type_of(c.type_after));
    if (!c.from.empty()) j.key("from").str(c.from);
  });
}

// What an edit changed, a line each: the tensors, then the keys. A line names keys and
// tensors as the file has them: nothing in it may act on a terminal or break the line.
void print_changes(const EditReport& r) {
  for (const TensorChange& c : r.tensor_changes) std::printf("  %s\n", terminal_name(tensor_change_text(c)).c_str());
  for (const Change& c : r.changes) std::printf("  %s\n", terminal_name(change_text(c)).c_str());
}

void change_json(JsonOut& j, const Change& c) {
  static const char* kinds[] = {"set", "add", "remove", "rename", "alignment", "retype"};
  j.object([&] {
    j.key("change").str(kinds[c.kind]).key("key").str(c.key);
    if (c.kind == Change::rename) j.key("to").str(c.to);
    if (c.kind == Change::retype) {  // the token, and its types by name
      j.key("token").str(c.token).key("id").num(c.id);
      j.key("before").str(token_type_name(c.before->as_i64())).key("after").str(token_type_name(c.after->as_i64()));
      return;
    }
    if (c.before) j.key("before").str(brief_value(*c.before, 200));
    if (c.after) j.key("after").str(brief_value(*c.after, 200));
  });
}

// edit --dry-run --render: the prompt under the old template and tokens and under the new,
// then a unified diff of them.
// With --tokens, the tokens of each and their diff, a token a line.
void print_prompts(const EditReport& r) {
  const std::string &before = *r.prompt_before, &after = *r.prompt_after;
  auto shown = [](const std::string& s) { return s.empty() || s.back() != '\n' ? s + "\n" : s; };
  std::printf("== the prompt before the edit ==\n%s== the prompt after the edit ==\n%s", shown(before).c_str(), shown(after).c_str());
  const std::string diff = unified_diff(before, after, "prompt before", "prompt after");
  std::printf("== diff ==\n%s", diff.empty() ? "the prompt is the same, byte for byte\n" : diff.c_str());
  if (!r.tokens_before && !r.tokens_after) return;
  auto lines = [](const std::optional<std::vector<ChatToken>>& t) { return t ? token_lines(*t) : std::string("[no tokens: the template fails]\n"); };
  const std::string a = lines(r.tokens_before), b = lines(r.tokens_after);
  std::printf("== the tokens before the edit (llama.cpp's chat path) ==\n%s== the tokens after the edit ==\n%s", a.c_str(), b.c_str());
  const std::string tdiff = unified_diff(a, b, "tokens before", "tokens after");
  std::printf("== token diff ==\n%s", tdiff.empty() ? "the tokens are the same\n" : tdiff.c_str());
}

// The same in JSON: "prompt": {"before", "after", "diff", "tokens": {"before": [ids], "after": [ids], "diff"}}.
void prompts_json(JsonOut& j, const EditReport& r) {
  j.key("prompt").object([&] {
    j.key("before").str(*r.prompt_before).key("after").str(*r.prompt_after);
    j.key("diff").str(unified_diff(*r.prompt_before, *r.prompt_after, "prompt before", "prompt after"));
    if (!r.tokens_before && !r.tokens_after) return;
    j.key("tokens").object([&] {
      auto ids = [&](const std::optional<std::vector<ChatToken>>& t) {
        if (!t) return void(j.null());
        j.array([&] {
          for (const ChatToken& c : *t) j.num(c.id);
        });
      };
      j.key("before");
      ids(r.tokens_before);
      j.key("after");
      ids(r.tokens_after);
      auto lines = [](const std::optional<std::vector<ChatToken>>& t) { return t ? token_lines(*t) : std::string(); };
      j.key("diff").str(unified_diff(lines(r.tokens_before), lines(r.tokens_after), "tokens before", "tokens after"));
    });
  });
}

const char* order_name(ByteOrder o) { return o == ByteOrder::big ? "big-endian" : "little-endian"; }


// The header path, as the report says it goes: within the room before the data start, or
// in a file that holds no tensor data, to the header's new end.
std::string header_path_text(const EditReport& r) {
  if (!r.header_resized) return "the header alone, in place (it fits before the data start; no tensor byte moves)";
  return "the header alone, in place (the file holds no tensor data, so it ends with its header: " + std::to_string(r.file_size_before) +
         " bytes before, " + std::to_string(r.file_size_after) + " now)";
}

// What the header path says it wrote.
std::string header_written(const std::string& path, const EditReport& r) {
  if (r.header_bytes == 0 && !r.header_resized) return path + ": no byte of the header differs; nothing was written\n";
  return path + ": wrote " + header_path_text(r) + ": " + std::to_string(r.header_bytes) + " of its " + std::to_string(r.header_size) +
         " bytes differ, at " + std::to_string(r.header_at) + "\n";
}

void changes_json(JsonOut& j, const EditReport& r) {
  j.key("changes").array([&] {
    for (const Change& c : r.changes) change_json(j, c);
  });
  if (!r.tensor_changes.empty())
    j.key("tensor_changes").array([&] {
      for (const TensorChange& c : r.tensor_changes) tensor_change_json(j, c);
    });
}

// Where an edit in place goes, as the report says: the header alone, or the whole file and why.
std::string path_text(const EditRequest& req, const EditReport& r, const char* whole) {
  if (!req.in_place) return "";
  if (r.header_fits) return header_path_text(r);
  return std::string(whole) + " (" + (req.whole_file ? "--whole-file" : r.why_whole) + ")";
}

// An edit that changes nothing writes no output either: said, so that a script that sets
// what the file already has does not take an OUT left from before for this run's.
std::string not_made(const EditRequest& req) {
  return req.output.empty() || req.dry_run ? "" : " (nor " + req.output + ": the file already is as asked)";
}

// A shard set's report.
void print_set(const EditRequest& req, const EditReport& r) {
  const size_t n = r.set_files;
  if (r.unchanged) {
    std::printf("%s: no changes; nothing written%s\n", terminal_name(req.input).c_str(), not_made(req).c_str());
    return;
  }
  const std::string where = path_text(req, r, "the whole of shard 1");
  if (req.dry_run) {
    std::printf("%s: dry run, nothing written (shard set: %zu files; %s)\n", terminal_name(req.input).c_str(), n,
                r.every_shard ? "every shard would be written" : "shard 1 alone would be written");
    print_changes(r);
    if (!where.empty() && !r.every_shard) std::printf("would write %s\n", terminal_name(where).c_str());
    if (r.prompt_before) print_prompts(r);
    return;
  }
  print_changes(r);
  if (r.written == Written::header) {
    std::printf("%s", terminal_text(header_written(r.files.at(0).path, r)).c_str());
    std::printf("shard set: %zu files; shard 1's header written in place, the other %zu untouched\n", n, n - 1);
    return;
  }
  for (const WrittenFile& f : r.files)
    std::printf("%s: %llu bytes%s\n", terminal_name(f.path).c_str(), static_cast<unsigned long long>(f.file_size),
                req.write.verify ? (", " + std::to_string(f.tensors_verified) + " tensors verified").c_str() : "");
  if (req.in_place && r.files.size() < n) {
    std::printf("wrote %s\n", terminal_name(where).c_str());
    std::printf("shard set: %zu files; shard 1 rewritten, the other %zu untouched\n", n, n - 1);
  }
}

// An edit's report as JSON, one shape for a file and a shard set: what the situation says
// (no change, a dry run's plan, the header written, whole files written), the set's file
// count, and each file written.
void print_json(const EditRequest& req, const EditReport& r) {
  JsonOut j(std::cout);
  j.object([&] {
    if (r.unchanged) {
      j.key("file").str(req.input).key("changes").array([] {}).key("written").boolean(false);
    } else if (req.dry_run) {
      j.key("dry_run").boolean(true);
      changes_json(j, r);
      j.key("data_offset").object([&] { j.key("before").num(r.data_offset_before).key("after").num(r.data_offset_after); });
      j.key("file_size").object([&] { j.key("before").num(r.file_size_before).key("after").num(r.file_size_after); });
      if (r.prompt_before) prompts_json(j, r);
    } else if (r.written == Written::header) {
      j.key("file").str(r.files.at(0).path);
      changes_json(j, r);
      j.key("written").str("header").key("header_bytes").num(r.header_size).key("bytes_written").num(r.header_bytes);
      j.key("at").num(r.header_at);
    } else {
      const WrittenFile& f = r.files.at(0);
      j.key("file").str(f.path);
      changes_json(j, r);
      j.key("file_size").num(f.file_size).key("data_offset").num(f.data_offset);
      j.key("tensors_verified").num(f.tensors_verified).key("bytes_verified").num(f.bytes_verified);
    }
    j.key("set_files").num(r.set_files);
    j.key("files").array([&] {
      for (const WrittenFile& f : r.files)
        j.object([&] {
          j.key("path").str(f.path).key("file_size").num(f.file_size).key("data_offset").num(f.data_offset);
          j.key("tensors").num(f.tensors).key("keys").num(f.keys);
          j.key("tensors_verified").num(f.tensors_verified).key("bytes_verified").num(f.bytes_verified);
        });
    });
  });
}

// One file's report.
void print_file(const EditRequest& req, const EditReport& r) {
  const std::string order_change = r.order_after ? std::string("order   ") + order_name(*r.order_before) + " -> " + order_name(*r.order_after) : "";
  if (r.unchanged) {
    std::printf("%s: no changes%s; nothing written%s\n", terminal_name(req.input).c_str(),
                req.byte_order ? (std::string(" (already ") + order_name(*req.byte_order) + ")").c_str() : "", not_made(req).c_str());
    return;
  }
  const std::string dropped_note = r.dropped_bytes ? "note: the data is re-laid; the source's " + std::to_string(r.dropped_bytes) +
                                                         " bytes of gaps and bytes after the end are not carried over\n"
                                                   : "";
  const std::string where = path_text(req, r, "the whole file");
  if (req.dry_run) {
    std::printf("%s: dry run, nothing written\n", terminal_name(req.input).c_str());
    print_changes(r);
    if (!order_change.empty()) std::printf("  %s\n", order_change.c_str());
    std::printf("%s", dropped_note.c_str());
    if (r.changes.empty() && r.tensor_changes.empty()) std::printf("  no changes: the output would be a byte-for-byte rewrite\n");
    if (!where.empty()) std::printf("would write %s\n", terminal_name(where).c_str());
    std::printf("data start  %llu -> %llu\nfile size   %llu -> %llu\n", static_cast<unsigned long long>(r.data_offset_before),
                static_cast<unsigned long long>(r.data_offset_after), static_cast<unsigned long long>(r.file_size_before),
                static_cast<unsigned long long>(r.file_size_after));
    if (r.prompt_before) print_prompts(r);
    return;
  }
  if (r.written == Written::header) {
    print_changes(r);
    std::printf("%s", terminal_text(header_written(req.input, r)).c_str());
    return;
  }
  const WrittenFile& f = r.files.at(0);
  print_changes(r);
  if (!order_change.empty()) std::printf("  %s\n", order_change.c_str());
  std::printf("%s", dropped_note.c_str());
  std::printf("%s: %llu bytes, %zu tensors, %zu keys, data start %llu", terminal_name(f.path).c_str(),
              static_cast<unsigned long long>(f.file_size), f.tensors, f.keys, static_cast<unsigned long long>(f.data_offset));
  if (req.write.verify) std::printf("; %llu tensors verified", static_cast<unsigned long long>(f.tensors_verified));
  std::printf("\n");
  if (!where.empty()) std::printf("wrote %s\n", terminal_name(where).c_str());
}

// What the command line adds to a refusal: the option that lets it through.
[[noreturn]] void refused(const EditRefused& e) {
  switch (e.reason) {
    case EditRefused::Reason::rules:
      throw Error(e.kind, e.file, e.offset, e.field, e.message + "; give --allow-broken to write it anyway (a broken fixture on purpose)");
    case EditRefused::Reason::template_syntax:
      throw Error(e.kind, e.file, e.offset, e.field, e.message + "; give --no-template-check to write it anyway");
    case EditRefused::Reason::header_only:
      throw Error(e.kind, e.file, e.offset, "--header-only", e.message + " (without --header-only the whole file is rewritten)");
    case EditRefused::Reason::header_only_every_shard: throw Error(e.kind, e.file, e.offset, "--header-only", e.message);
    case EditRefused::Reason::content_store:
      if (struct stat st {}; stat_path(e.file, st, false) == 0 && !S_ISLNK(st.st_mode))  // the blob named itself
        throw Error(e.kind, e.file, e.offset, e.field, e.message + "; write the edited model to a new file with -o OUT");
      throw Error(e.kind, e.file, e.offset, e.field,
                  e.message + "; write the edited model to a new file with -o OUT, or give --in-place --break-link to put the "
                              "edited file in place of the link, leaving the blob as it is");
  }
  throw Error(e);
}

// rewrite, edit, realign and convert: the request to the front door, the report printed.
int run_edit(EditRequest& req, bool json) {
  if (!req.dry_run && req.in_place == !req.output.empty()) throw_usage("give exactly one of -o OUT and --in-place");
  req.on_finding = [&req](const Finding& f) {
    const std::string code(code_name(f.code));
    if (f.code == Code::template_syntax && f.severity == Severity::error)
      print_note(req.input, "written anyway (--no-template-check): " + f.message);
    else if (f.severity != Severity::error)
      print_note(req.input, std::string(severity_name(f.severity)) + " [" + code + "] " + f.message +
                                (f.fix.empty() ? "" : " (fix: " + fix_text(f, req.output.empty() ? req.input : req.output) + ")"));
    else print_note(req.input, "written anyway (--allow-broken): [" + code + "] " + f.message);
  };
  terminal_progress(req.context);
  EditReport r;
  try {
    r = edit(req);
  } catch (const EditRefused& e) {
    refused(e);
  }
  if (json) print_json(req, r);
  else if (r.set_files > 1) print_set(req, r);
  else print_file(req, r);
  return 0;
}

void add_output_options(po::options_description& desc) {
  desc.add_options()("output,o", po::value<std::string>(), "write the result here (never over FILE itself)")(
      "in-place", po::bool_switch(), "replace FILE, by renaming the finished file over it")(
      "break-link", po::bool_switch(),
      "with --in-place, when FILE is a symbolic link: put the edited file in place of the link, leaving the file it "
      "names as it is (without it that file is edited, and one in a Hugging Face or Ollama cache's blobs/ is refused)")(
      "dry-run", po::bool_switch(), "print what would change and write nothing")(
      "no-verify", po::bool_switch(), "skip re-reading the written tensor data (the header is still checked)")(
      "force", po::bool_switch(), "replace OUT if it exists (without it, an existing OUT is refused)")(
      "allow-broken", po::bool_switch(),
      "write the result even if llama.cpp would refuse it (validate's rules: an alignment below 32, a vocabulary "
      "that disagrees with token ids or token_embd, a missing architecture, ...); for broken fixtures")(
      "json", po::bool_switch(), "print the result as JSON");
  quiet_option(desc.add_options());
}

void add_surgery_options(po::options_description& desc) {
  desc.add_options()("remove-tensor", po::value<std::vector<std::string>>()->composing(),
                     "GLOB: remove the tensors it matches (repeatable; * and ? as in the shell's globs, which match dots too)")(
      "rename-tensor", po::value<std::vector<std::string>>()->composing(),
      "OLD=NEW: rename a tensor; with wildcards each of OLD's * and ? is carried to NEW's in order "
      "('blk.*.ffn_gate_inp.*=blk.*.router.*'); with $1 in NEW, OLD is a regular expression (PCRE2) over the whole name")(
      "keep-layers", po::value<std::string>(),
      "RANGES (0-3,10): keep these layers' blk.N.* tensors, renumbered densely in order, and fix block_count, the "
      "per-layer arrays, leading_dense_block_count and nextn_predict_layers")(
      "remove-layers", po::value<std::string>(), "RANGES: remove these layers, renumbering the rest as --keep-layers does")(
      "keep-experts", po::value<std::string>(),
      "RANGES: keep these experts: every stacked expert tensor (blk.N.ffn_*_exps.*) and the router (ffn_gate_inp, "
      "exp_probs_b) sliced along the expert dimension, expert_count fixed")(
      "remove-experts", po::value<std::string>(), "RANGES: remove these experts, slicing as --keep-experts does")(
      "graft", po::value<std::vector<std::string>>()->composing(),
      "FROM.gguf[:GLOB]: take the tensors GLOB matches (all without it) from FROM (a file or any shard of a set), "
      "replacing same-named ones (whose shape must be the same) and adding the others")(
      "max-tensors", po::value<std::string>(), "write the output as a new set of at most N tensors a shard (-o PREFIX)")(
      "max-size", po::value<std::string>(), "write the output as a new set of at most SIZE tensor bytes a shard (M, G, MiB, GiB)");
}

void surgery_of(const po::variables_map& vm, EditRequest& job) {
  TensorOps& t = job.patch.tensors;
  if (vm.count("remove-tensor"))
    for (const auto& g : vm["remove-tensor"].as<std::vector<std::string>>()) t.remove.push_back(g);
  if (vm.count("rename-tensor"))
    for (const auto& r : vm["rename-tensor"].as<std::vector<std::string>>()) {
      auto eq = r.find('=');
      if (eq == std::string::npos || eq == 0) throw_usage("--rename-tensor expects OLD=NEW, found '" + r + "'");
      t.rename.push_back({r.substr(0, eq), r.substr(eq + 1)});
    }
  for (auto [opt, field] : {std::pair<const char*, std::optional<std::string>*>{"keep-layers", &t.keep_layers},
                            {"remove-layers", &t.remove_layers}, {"keep-experts", &t.keep_experts}, {"remove-experts", &t.remove_experts}})
    if (vm.count(opt)) {
      if (*field) throw_usage(std::string("--") + opt + " is given in the patch too: give it once");
      *field = vm[opt].as<std::string>();
    }
  if (vm.count("graft"))
    for (const auto& g : vm["graft"].as<std::vector<std::string>>()) {
      // FROM[:GLOB]: the last colon, when what follows it is not a file (a path may hold one)
      auto colon = g.rfind(':');
      struct stat st {};
      if (colon != std::string::npos && colon > 0 && stat_path(g, st) != 0) {
        if (colon + 1 == g.size())  // an unset $GLOB must not graft every tensor
          throw_usage("--graft " + g + ": nothing after the colon; give FROM alone to take every tensor of it");
        t.graft.push_back({g.substr(0, colon), g.substr(colon + 1)});
      } else {
        t.graft.push_back({g, ""});
      }
    }
  if (vm.count("max-tensors")) {
    const std::string n = vm["max-tensors"].as<std::string>();
    if (n.empty() || n.size() > 12 || n.find_first_not_of("0123456789") != std::string::npos || std::stoull(n) == 0)
      throw_usage("--max-tensors expects a number of tensors, at least 1; found '" + n + "'");
    job.max_tensors = std::stoull(n);
  }
  if (vm.count("max-size")) {
    job.max_bytes = parse_size(vm["max-size"].as<std::string>());
    if (job.max_bytes == 0) throw_usage("--max-size must be more than 0 bytes");
  }
}

EditRequest request_of(const po::variables_map& vm) {
  EditRequest job;
  job.input = vm["file"].as<std::string>();
  if (vm.count("output")) job.output = vm["output"].as<std::string>();
  job.in_place = vm["in-place"].as<bool>();
  job.break_link = vm["break-link"].as<bool>();
  if (job.break_link && !job.in_place) throw_usage("--break-link is for edits in place: give --in-place");
  job.dry_run = vm["dry-run"].as<bool>();
  job.write = write_options(!vm["no-verify"].as<bool>(), vm["force"].as<bool>());
  job.context = cli_context();
  job.allow_broken = vm["allow-broken"].as<bool>();
  apply_quiet(vm);
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

}  // namespace

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
  EditRequest job = request_of(*vm);
  job.always_write = true;
  return run_edit(job, (*vm)["json"].as<bool>());
}

int cmd_edit(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "the GGUF file to edit")(
      "patch,p", po::value<std::string>(), "a patch file (YAML: set, remove, rename, special_tokens, token_types, alignment)")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "KEY=VALUE: set a key (an existing key keeps its type); a string key's VALUE is the text as it is "
      "('general.name=Llama: the tiny one'), any other key's is read as YAML (2, true, [1, 2])")(
      "set-yaml", po::value<std::vector<std::string>>()->composing(),
      "KEY=VALUE: set a key to VALUE read as YAML, as in a patch: '\"quoted text\"', [1, 2], {type: f32, value: 1}")(
      "set-typed", po::value<std::vector<std::string>>()->composing(),
      "KEY=TYPE:VALUE: add a key of the given type (u8 ... f64, bool, string, array[u32], ...)")(
      "remove", po::value<std::vector<std::string>>()->composing(), "KEY: remove a key")(
      "rename", po::value<std::vector<std::string>>()->composing(), "OLD=NEW: rename a key")(
      "chat-template", po::value<std::string>(), "TEXT: set tokenizer.chat_template to TEXT, as it is")(
      "chat-template-file", po::value<std::string>(),
      "set tokenizer.chat_template from a file ('-' for standard input; pipes and /dev/fd/N are read whole)")(
      "eos-token-id", po::value<std::string>(), "set tokenizer.ggml.eos_token_id")(
      "special-token", po::value<std::vector<std::string>>()->composing(),
      "NAME=TEXT: set a special token by its text, matched exactly against the vocabulary (NAME: bos, eos, eot, "
      "eom, unknown, seperator, padding, cls, mask, fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep; also "
      "sep, pad, unk), e.g. eos='<|im_end|>'")(
      "special-token-id", po::value<std::vector<std::string>>()->composing(), "NAME=ID: set a special token by its id")(
      "token-type", po::value<std::vector<std::string>>()->composing(),
      "TEXT=TYPE: set the type of the token whose text is exactly TEXT in tokenizer.ggml.token_type (TYPE: normal, "
      "unknown, control, user_defined, unused, byte; TEXT is split at the last '='; of tokens sharing a text, the "
      "last, as llama.cpp finds it), e.g. '<|user|>=user_defined'; a byte, unused or normal token is not retyped "
      "control (where the model writes it, llama.cpp would print nothing)")(
      "from-hf", po::value<std::string>(),
      "DIR or DIR/tokenizer_config.json: take the chat template(s), bos/eos/pad/unk tokens and add_bos/add_eos "
      "flags a Hugging Face model folder gives (chat_template.jinja beside the config wins), and the general.* keys "
      "llama.cpp's converter takes from its README.md front matter (license, tags, languages, base models, datasets, "
      "...) and generation_config.json (general.sampling.*)")(
      "alignment", po::value<std::string>(), "re-lay the data at this alignment (a power of two, or 'default')")(
      "header-only", po::bool_switch(),
      "with --in-place: write the header alone (when the edited header fits before the data start, or the file holds no "
      "tensor data: a set's shard 1 split with --metadata-only-first, a vocabulary), or refuse; "
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
      "add-generation-prompt", po::bool_switch(), "with --render: end the prompts with the assistant's turn opening")(
      "tokens", po::bool_switch(),
      "with --render: also the prompts' tokens as llama.cpp's chat path feeds them, before and after, and their diff "
      "a token a line (see 'ggufkit template --help')");
  add_surgery_options(desc);
  add_output_options(desc);
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  std::string("usage: ggufkit edit FILE [--patch PATCH.yaml] [--set KEY=VALUE]... (-o OUT | --in-place)\n\n"
                              "Changes metadata without re-converting the model: an existing key keeps its\n"
                              "position and type, a new key is appended with the type ggufkit's key registry\n"
                              "gives or the patch names. Token ids must stay below the vocabulary size. Every\n"
                              "offset is recomputed and every tensor's bytes carried over unchanged; in place,\n"
                              "a header that still fits before the data is written alone. The patch format\n"
                              "('ggufkit help patch'):\n\n"
                              "  set: {general.name: Fixed, tokenizer.chat_template: {file: t.jinja}}\n"
                              "  remove: [general.license.link]\n"
                              "  rename: {old.key: new.key}\n"
                              "  alignment: 64\n"
                              "  token_types: {\"<|user|>\": user_defined}\n\n"
                              "Example: ggufkit edit phi3.gguf --token-type '<|user|>=user_defined' --in-place\n\n") + kSafety);
  if (!vm) return 0;
  EditRequest job = request_of(*vm);
  job.template_check = !(*vm)["no-template-check"].as<bool>();
  job.header_only = (*vm)["header-only"].as<bool>();
  job.whole_file = (*vm)["whole-file"].as<bool>();
  if ((job.header_only || job.whole_file) && !job.in_place)
    throw_usage(std::string(job.header_only ? "--header-only" : "--whole-file") + " is for edits in place: give --in-place");
  if (job.header_only && job.whole_file) throw_usage("give one of --header-only and --whole-file");
  if (vm->count("render")) {
    if (!job.dry_run) throw_usage("--render shows the prompts of a dry run: add --dry-run");
    job.conversation = read_conversation((*vm)["render"].as<std::string>());
    job.prompt_tokens = (*vm)["tokens"].as<bool>();
    if ((*vm)["add-generation-prompt"].as<bool>())
      job.conversation->dict->set(jinja::Value::string("add_generation_prompt"), jinja::Value::boolean(true));
  }
  if ((*vm)["tokens"].as<bool>() && !vm->count("render")) throw_usage("--tokens shows the tokens of the prompts --render gives: add --render CONV.json");
  if (vm->count("patch")) job.patch = read_patch((*vm)["patch"].as<std::string>());
  auto pair = [](const std::string& s, const char* opt) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) throw_usage(std::string(opt) + " expects KEY=VALUE, found '" + s + "'");
    return std::make_pair(s.substr(0, eq), s.substr(eq + 1));
  };
  if (vm->count("set"))
    for (const auto& s : (*vm)["set"].as<std::vector<std::string>>()) {
      auto [k, v] = pair(s, "--set");
      job.patch.add_set_text(k, v);
    }
  if (vm->count("set-yaml"))
    for (const auto& s : (*vm)["set-yaml"].as<std::vector<std::string>>()) {
      auto [k, v] = pair(s, "--set-yaml");
      // An error about the value says how to give it as text: in YAML's quotes (JSON's are
      // YAML's too, escapes and all), as one shell word.
      const std::string paste = v.size() <= 200 ? "--set-yaml " + shell_quoted(k + "=" + json_string(v)) + ", or " : "";
      job.patch.add_set(k, v, " (the value " + brief_value(Value::of_string(v)) + " is read as YAML; to give text, quote it: " + paste +
                                  "give it with --set, which takes a string key's value as it is)");
    }
  if (vm->count("chat-template")) job.patch.add_set_text("tokenizer.chat_template", (*vm)["chat-template"].as<std::string>());
  if (vm->count("from-hf")) job.patch.add_from_hf((*vm)["from-hf"].as<std::string>());
  for (const char* opt : {"special-token", "special-token-id"})
    if (vm->count(opt))
      for (const auto& s : (*vm)[opt].as<std::vector<std::string>>()) {
        auto [name, value] = pair(s, (std::string("--") + opt).c_str());
        job.patch.add_special(name, value, std::string(opt) == "special-token-id");
      }
  if (vm->count("token-type"))
    for (const auto& s : (*vm)["token-type"].as<std::vector<std::string>>()) {
      auto eq = s.rfind('=');  // the last '=': a token's text may hold one
      if (eq == std::string::npos || eq == 0) throw_usage("--token-type expects TEXT=TYPE, found '" + s + "'");
      job.patch.add_token_type(s.substr(0, eq), s.substr(eq + 1));
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
  surgery_of(*vm, job);
  job.patch.allow_broken = job.allow_broken;
  return run_edit(job, (*vm)["json"].as<bool>());
}

int cmd_extract_tensors(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "the GGUF file (or any shard of a set) to take tensors from")(
      "tensors,t", po::value<std::vector<std::string>>()->composing(),
      "GLOB: the tensors to keep (repeatable; * and ? as in the shell's globs, which match dots too)");
  add_output_options(desc);
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  std::string("usage: ggufkit extract FILE --tensors GLOB... -o OUT\n\n"
                              "Writes a file with FILE's metadata and only the tensors a glob matches, their\n"
                              "bytes copied unchanged: a multi-token-prediction drafter ('blk.61.*'), a\n"
                              "projector's tensors, one layer for a test. The result is judged by the rule\n"
                              "book like any edit's: one llama.cpp would not load (a model missing tensors it\n"
                              "needs) is refused by name unless --allow-broken.\n\n"
                              "Example: ggufkit extract model.gguf -t 'token_embd.*' -t 'blk.0.*' -o part.gguf --allow-broken\n\n"
                              "ggufkit extract FILE --vocab-only -o OUT writes the vocabulary-only file instead\n"
                              "(see ggufkit extract --vocab-only --help).\n\n") +
                      kSafety);
  if (!vm) return 0;
  if (!vm->count("tensors")) throw_usage("extract: say what to extract: --tensors GLOB (repeatable), or --vocab-only");
  EditRequest job = request_of(*vm);
  if (job.in_place) throw_usage("extract writes a new file: give -o OUT (it never replaces FILE)");
  job.patch.tensors.keep = (*vm)["tensors"].as<std::vector<std::string>>();
  job.patch.allow_broken = job.allow_broken;
  return run_edit(job, (*vm)["json"].as<bool>());
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
  EditRequest job = request_of(*vm);
  job.patch.set_alignment((*vm)["alignment"].as<std::string>());
  return run_edit(job, (*vm)["json"].as<bool>());
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
  EditRequest job = request_of(*vm);
  std::string bo = (*vm)["byte-order"].as<std::string>();
  if (bo != "big" && bo != "little") throw_usage("--byte-order must be big or little, found '" + bo + "'");
  job.byte_order = bo == "big" ? ByteOrder::big : ByteOrder::little;
  return run_edit(job, (*vm)["json"].as<bool>());
}

int cmd_recover(const std::vector<std::string>& args) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "the model an in-place edit was interrupted on")(
      "discard", po::bool_switch(), "remove the journal without applying it, when FILE (every file of its set) reads clean")(
      "json", po::bool_switch(), "print {\"file\": FILE, \"recovery\": \"none\" | \"rolled_back\" | \"kept_new\" | \"set_finished\" | \"discarded\"}");
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
  const Recovery r = recover(file, (*vm)["discard"].as<bool>(), cli_context());
  if ((*vm)["json"].as<bool>()) {
    static const char* const kNames[] = {"none", "rolled_back", "kept_new", "set_finished", "discarded"};
    JsonOut j(std::cout);
    j.object([&] { j.key("file").str(file).key("recovery").str(kNames[static_cast<int>(r)]); });
    return 0;
  }
  const std::string shown = terminal_name(file);
  switch (r) {
    case Recovery::none: std::printf("%s: no journal; nothing to recover\n", shown.c_str()); break;
    case Recovery::rolled_back: std::printf("%s: the edit was cut short; the old header is back\n", shown.c_str()); break;
    case Recovery::kept_new: std::printf("%s: the new header was all written; it is kept\n", shown.c_str()); break;
    case Recovery::set_finished:
      std::printf("%s: the set's renames were cut short; every new shard is now in place\n", shown.c_str());
      break;
    case Recovery::discarded: std::printf("%s: reads clean; its journal was removed without being applied\n", shown.c_str()); break;
  }
  return 0;
}


}  // namespace ggufkit::cli
