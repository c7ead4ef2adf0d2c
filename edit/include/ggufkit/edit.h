#pragma once
// The library's front door for every job that writes a model: one plain request struct
// and one function per job (as LLVM's executeObjcopy(Config)); `ggufkit edit`, rewrite,
// realign, convert, split, merge and write only fill the request and print the report.
//
//   ggufkit::EditRequest req;
//   req.input = "model.gguf";                 // a file, or any shard of a set
//   req.patch.add_set("tokenizer.ggml.eos_token_id", "2");
//   req.in_place = true;                      // or req.output = "fixed.gguf"
//   ggufkit::EditReport r = ggufkit::edit(req);
//   // r.written: nothing, header or whole_file; r.changes; r.files; r.findings_after
//
// A model llama.cpp would refuse (and the source was not already) is refused by the rule
// book before anything is written: edit() throws an EditRefused naming each finding's
// code, unless allow_broken. Every write goes through the safe output path: the header
// in place under a journal, or whole files renamed into place once flushed and verified.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ggufkit/byteorder.h"
#include "ggufkit/chat.h"
#include "ggufkit/check.h"
#include "ggufkit/context.h"
#include "ggufkit/error.h"
#include "ggufkit/inspect.h"
#include "ggufkit/jinja_render.h"
#include "ggufkit/patch.h"
#include "ggufkit/sketch.h"

namespace ggufkit {

// What every writing job shares. The call's notes, cancel flag, progress and lock timeout
// are its request's Context (context.h): an edit without a note sink keeps its notes in
// its report.
struct WriteOptions {
  bool verify = true;  // re-read every written tensor's bytes (the header is always checked)
  bool force = false;  // an existing output may be replaced
  std::function<void()> on_write_start;  // called once, just before the first byte is written
};

struct EditRequest {
  std::string input;                    // a file, or any shard of a set (the whole set is edited)
  std::string output;                   // the new file (a set: the new set's PREFIX) ...
  bool in_place = false;                // ... or replace the input (exactly one of the two)
  bool dry_run = false;                 // plan and check, write nothing
  bool allow_broken = false;            // write what the rule book refuses, with a note
  bool template_check = true;           // every chat template set must parse as Jinja
  bool header_only = false;             // in place: the header alone, or refuse
  bool whole_file = false;              // in place: the whole file even when the header would do
  // In place, an input that is a symbolic link: replace the link itself with the edited file,
  // leaving the file it names as it is. Without it the file the link names is edited (a note
  // names it), and one in a content-addressed store (content_store(): a Hugging Face or
  // Ollama cache's blob, shared by every link to it) is refused.
  bool break_link = false;
  bool always_write = false;            // write even without a change (ggufkit rewrite)
  std::optional<ByteOrder> byte_order;  // the model in this byte order (ggufkit convert)
  Patch patch;                          // the metadata changes (realign: only its alignment), then its tensors:
  // The output as a new set of this many tensors, or bytes, a shard (at most one); without
  // either a set stays in as many shards as it was, each tensor in its shard.
  uint64_t max_tensors = 0, max_bytes = 0;
  std::optional<jinja::Value> conversation;  // the prompt before and after, in the report
  bool prompt_tokens = false;                // and its tokens on llama.cpp's chat path (chat.h)
  WriteOptions write;
  Context context;  // the call's notes (without a sink: kept in the report), cancel, progress, locks
  // Each finding the result has and the input had not, as the gate finds it (before
  // anything is written): a warning, or an error written anyway (allow_broken; a chat
  // template that does not parse, without template_check: code template_syntax, severity
  // error, the message "KEY: what jinja2 says").
  std::function<void(const Finding&)> on_finding;
};

enum class Written { nothing, header, whole_file };

// One file a job wrote.
struct WrittenFile {
  std::string path;
  uint64_t file_size = 0, data_offset = 0;
  size_t tensors = 0, keys = 0;
  uint64_t tensors_verified = 0, bytes_verified = 0;
};

struct EditReport {
  Written written = Written::nothing;
  bool unchanged = false;             // nothing to change: nothing was (or would be) written
  std::vector<Change> changes;        // what the patch did, in order (the keys tensor surgery fixed last)
  std::vector<TensorChange> tensor_changes;  // each tensor removed, renamed, sliced, added or replaced
  std::optional<ByteOrder> order_before, order_after;  // a byte-order change
  size_t set_files = 1;               // the files of the set the input belongs to
  bool every_shard = false;           // a set whose every shard is (or would be) rewritten
  // The plan: the input's data start and size and the output's.
  uint64_t data_offset_before = 0, data_offset_after = 0, file_size_before = 0, file_size_after = 0;
  uint64_t dropped_bytes = 0;         // the source's gaps and trailing bytes a re-laid file leaves out
  // In place: the header alone (its size, the bytes that differ, where they start), or
  // why the whole file is (or would be) rewritten.
  bool header_fits = false;
  bool header_resized = false;  // a file that holds no tensor data: its header, and so the file, grows or shrinks
  uint64_t header_size = 0, header_bytes = 0, header_at = 0;
  std::string why_whole;
  std::vector<WrittenFile> files;     // what was written, in order
  std::vector<Finding> findings_before;  // the rule book on the input
  std::vector<Finding> findings_new;     // on the result, not on the input: as on_finding is told
  std::optional<std::string> prompt_before, prompt_after;  // with a conversation
  // With prompt_tokens: the prompts' tokens, as llama.cpp's chat path feeds them (none where
  // the template fails or the model has no vocabulary llama.cpp loads).
  std::optional<std::vector<ChatToken>> tokens_before, tokens_after;
  std::vector<std::pair<std::string, std::string>> notes;  // when the request gave no sink
};

// Why an edit was refused before anything was written. `findings` are the rule book's,
// each with its code (token_id, template_syntax, ...); the message names them.
struct EditRefused : Error {
  // rules: the rule book's errors; template_syntax: a chat template that does not parse;
  // header_only: the edit does not fit in the header (or a set's every shard is rewritten);
  // content_store: in place, through a link to a content-addressed store's blob.
  enum class Reason { rules, template_syntax, header_only, header_only_every_shard, content_store };
  EditRefused(Reason reason, std::string file, std::string field, std::string message, std::vector<Finding> findings);
  Reason reason;
  std::vector<Finding> findings;
};

// What an edit will do, decided before anything is written (plan_edit): the set the input
// belongs to (a lone file is a set of one) locked by its shard names and read once, the
// patch applied, the rule book asked, and for each file what it gets: nothing, its header
// in place, or a whole new file. The report is filled but for what the writes fill. A dry
// run is a plan never committed; commit() makes the writes through the safe output path
// and finishes the report, the same way for a file and a set.
struct EditPlan {
  enum class Gets { nothing, header, whole_file };
  struct File {
    std::string path;    // the file of the set, as named
    std::string target;  // where it is written: the output, or in place the file (or the link replaced)
    Gets gets = Gets::nothing;
  };
  EditRequest request;
  std::vector<File> files;  // every file of the set, in order
  EditReport report;

  struct State;  // the models, their sources and locks, the header's bytes
  std::unique_ptr<State> state;
  EditPlan();
  ~EditPlan();
  EditPlan(EditPlan&&) noexcept;
  EditPlan& operator=(EditPlan&&) noexcept;
};
EditPlan plan_edit(const EditRequest& request);
EditReport commit(EditPlan&& plan);

// ggufkit edit, rewrite, realign and convert: commit(plan_edit(request)).
EditReport edit(const EditRequest& request);

// ggufkit split: the model (a file or any shard of a set) as a shard set PREFIX-0000K-of-0000N.gguf.
struct SplitRequest {
  std::string input, prefix;
  uint64_t max_tensors = 0, max_bytes = 0;  // exactly one
  bool metadata_only_first = false;         // shard 1: the keys alone
  WriteOptions write;
  Context context;
};
std::vector<WrittenFile> split(const SplitRequest& request);

// ggufkit merge: a shard set (any of its shards) as one file.
struct MergeRequest {
  std::string input, output;
  WriteOptions write;
  Context context;
};
std::vector<WrittenFile> merge(const MergeRequest& request);

// ggufkit write: the file a sketch (schemas/sketch.md) describes, and validate's findings
// of it. A sketch may be broken on purpose: it is written whatever they are, unless check.
// Here, not in writer/, because it writes and checks: check/ sits above writer/.
struct WriteSketchRequest {
  std::string sketch;   // the sketch file, YAML or JSON (with `text`: the name errors give it)
  // The sketch itself instead of a file (the Python module's dict); its from: and file:
  // paths are relative to base_dir.
  std::optional<std::string> text;
  std::string base_dir = ".";
  Defines defines;      // fill its [[NAME]] placeholders
  std::string output;
  bool force = false;   // an existing output may be replaced
  Context context;      // the call's notes (a link or another user's file replaced)
  // Refuse (EditRefused, Reason::rules, carrying every finding) when a finding is an
  // error; nothing is then written. Warnings never refuse.
  bool check = false;
};

struct WriteSketchReport {
  WrittenFile file;               // its size as written (a raw truncate_at's), data start, counts
  Layout layout;                  // the plan (a cut or patched file's spans as planned)
  std::vector<Finding> findings;  // validate's of the written bytes: offsets in that file
};
WriteSketchReport write_sketch(const WriteSketchRequest& request);

}  // namespace ggufkit
