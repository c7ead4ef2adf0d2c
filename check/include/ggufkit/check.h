#pragma once
// The rule book: what llama.cpp requires of a model, asked by validate and by every edit
// alike. One table of rules (rules()), one Finding type, and the small predicates the
// patch applier shares with the rules so no rule is written twice.

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ggufkit/inspect.h"
#include "ggufkit/model.h"
#include "ggufkit/role.h"
#include "ggufkit/shards.h"
#include "ggufkit/source.h"

namespace ggufkit {

class VocabCache;  // vocab.h

// Every kind of finding, in the order of the rule table (as llama.cpp's test-gguf.cpp
// enumerates its failure kinds).
enum class Code : uint8_t {
  read, truncated, header_only, trailing_bytes, nonzero_padding, offset_gap, alignment,
  alignment_too_small, alignment_too_large, missing_architecture, missing_quantization_version,
  missing_hparam, zero_hparam, hparam_condition, invalid_utf8, template_nul, bool_value, nested_array, token_id,
  vocab_length, block_count, missing_vocab, empty_vocab, vocab_refused, unknown_pre_tokenizer, vocab_rows,
  tensor_name, duplicate_tensor_name,
  // what llama.cpp's loader takes (schemas/tensors.yaml)
  tensor_missing, tensor_shape, tensor_unexpected, tensors_unchecked,
  // what a tensor edit (surgery.h) could not fix
  surgery_key,
  // tensor types mainline llama.cpp cannot load (read as opaque bytes, or ik_llama.cpp's)
  tensor_type_unknown, tensor_type_ik,
  // multi-token-prediction layers against the key that counts them; a drafter against its model
  mtp_layers, mtp_base,
  template_syntax, template_no_default, special_not_control,
  template_literal_split, double_bos, double_bos_unstripped, turn_end_not_eog,
  // what makes generation stop where it must not, or a token print as something else
  eog_byte_token, eog_at_start, retype_to_control,
  // a file's role's (role.h): an adapter's, an imatrix's, a projector's
  role_key_type, not_an_adapter, adapter_architecture, adapter_not_lora, adapter_alpha, lora_suffix, lora_pair,
  lora_base_tensor, lora_shape, imatrix_entries, imatrix_metadata, imatrix_pair, imatrix_type, imatrix_shape,
  mmproj_encoder, mmproj_projector,
  // the key registry's types and values, the type mix, the names (key_rules.h)
  key_type, key_type_unusual, key_range, key_value_unusual, file_type_mismatch, name_is_hash, name_is_path,
  file_name_mismatch,
  // a shard set's (check_shard_set's SetFault codes)
  not_a_shard_name, split_keys_in_single_file, too_many_shards, missing_shard, split_no,
  split_count, split_tensors_count, model_key_in_shard, tensor_in_two_shards, shard_byte_order,
};
enum class Severity : uint8_t { error, warning, info };

// One row of the rule table.
struct Rule {
  Code code;
  std::string_view name;  // as validate prints it
  Severity severity;      // what a finding of it is
  std::string_view what;  // one line
  // Most files have it (an alignment that happens to be wider): validate prints it only
  // with --verbose. (header_only, tensors_unchecked: info, but news about this file.)
  bool routine = false;
};
std::span<const Rule> rules();  // one row per Code, in Code's order
const Rule& rule_of(Code c);
std::string_view code_name(Code c);
std::optional<Code> code_named(std::string_view name);
std::string_view severity_name(Severity s);
// A code or severity equals its printed name ("token_id"), for tests and scripts.
inline bool operator==(Code c, std::string_view name) { return code_name(c) == name; }
inline bool operator==(Severity s, std::string_view name) { return severity_name(s) == name; }
std::ostream& operator<<(std::ostream& os, Code c);
std::ostream& operator<<(std::ostream& os, Severity s);

// What a finding is about: a key, a tensor, or the file; `item` tells apart findings of one
// rule about one key (the literal a template_literal_split names, the turn end of
// turn_end_not_eog, "name" for a key's own bytes).
struct Place {
  enum class Of : uint8_t { file, key, tensor } of = Of::file;
  std::string name;  // the key, or the tensor's name
  std::string item;
  static Place key(std::string k, std::string item = "") { return {Of::key, std::move(k), std::move(item)}; }
  static Place tensor(std::string t) { return {Of::tensor, std::move(t), ""}; }
  friend bool operator==(const Place&, const Place&) = default;
};

struct Finding {
  Code code = Code::read;
  Severity severity = Severity::error;
  std::optional<uint64_t> offset;
  std::string message;
  Place place;
  std::vector<int32_t> ids;  // the token ids it is about (a template's, at the token level)
  std::string fix;           // what to do about it, where there is one thing to do
};
// A finding with its rule's severity.
Finding finding(Code c, std::optional<uint64_t> offset, std::string message, Place place = {});
// A shard set's fault as validate reports it (its code from the table; no offset).
Finding set_finding(const SetFault& f);

// With model_rules false, only what is wrong with the file's bytes (a shard of a set, whose
// model is checked as a whole with check_model).
// `base`: the file is an adapter of that model (validate's --base).
std::vector<Finding> validate_file(const std::string& path, bool model_rules = true, const Model* base = nullptr,
                                   const Context& ctx = {});
// The same of any bytes (a file not yet written: write_sketch's --check judges it so).
std::vector<Finding> validate_source(const std::shared_ptr<const ByteSource>& source, bool model_rules = true,
                                     const Model* base = nullptr);
// The verdict `ggufkit validate` prints: for a file, its findings; for a shard of a set
// (unless shard_only), every shard's, the model's rules over the set as one model (told
// against shard 1, with no offset) and the set's own faults. Each finding names its file.
// "-" reads a header from `in` (standard input): its model's rules, its bytes unread.
struct Verdict {
  std::vector<std::string> files;  // the files judged (one, or every shard)
  std::vector<std::pair<std::string, Finding>> findings;
  size_t errors = 0, warnings = 0;
  bool per_file = false;           // a set, or a file with set faults: findings say their file
};
// `base` (a file or a shard of a set) says the file is a LoRA adapter of that model: it is
// judged as an adapter whatever it says it is, its pairs against the base's tensors.
// For a set, ctx.progress is told after each shard: the bytes of the shards judged so far,
// of the bytes of every shard.
Verdict validate(const std::string& path, bool shard_only = false, std::istream* in = nullptr, const std::string& base = "",
                 const Context& ctx = {});

// The same rules over a model about to be written (its planned layout): what llama.cpp
// would refuse in its metadata and shapes. Edits are checked with it before they write.
// errors_only: every error, and warnings only where they cost nothing to find.
// `vocabs`: the call's vocabularies (an edit checks its source and its result, and
// previews them), loaded once each; none: this check's own.
std::vector<Finding> check_model(const Model& model, const Layout& layout, bool errors_only = false, VocabCache* vocabs = nullptr);
// What the chat templates say that the rest of the model contradicts (part of validate; an
// edit shows the ones it brings in): template_syntax (jinja2 would refuse it),
// template_no_default (named templates, no tokenizer.chat_template), and at the token level,
// with the standard conversations (chat.h) rendered as transformers renders them and
// tokenized as llama.cpp's chat path tokenizes them: special_not_control (a token the
// template writes, <|...|>, <...>, [INST], typed so that llama.cpp takes it as text),
// template_literal_split (a special-looking literal of a rendered prompt that tokenizes into
// several tokens), double_bos (the chat path's ids start with two BOS; double_bos_unstripped
// when only a runtime that does not strip the template's BOS gets two), turn_end_not_eog
// (an assistant turn ends in a token llama.cpp does not stop generating at). Each names the
// token ids, where they show in which prompt, and the fix.
std::vector<Finding> template_findings(const Model& model, VocabCache* vocabs = nullptr);

// The rules of a file's role beyond those every file is held to (role.h): an adapter's as
// llama_adapter_lora_init checks it (general.type, the architecture (the base's when
// `base` is given), adapter.type lora, alpha, the tensors' suffixes, each pair whole, and
// with a base each base tensor there and of the pair's shape), an importance matrix's as
// llama-quantize loads it, a projector's keys as mtmd's clip loader reads them. Nothing
// for a model or a vocabulary (the model rules are theirs). Offsets are the tensors'
// info records where the model was read from a file; key findings have none here.
std::vector<Finding> role_findings(const Model& m, Role role, const Model* base = nullptr);

// The check a registry key (schemas/keys.yaml) names, and the rules that enforce it.
enum class KeyCheck : uint8_t { none, token_id, vocab, alignment, template_ };
std::optional<KeyCheck> key_check_named(std::string_view name);  // "token_id", ..., "template"
std::string_view key_check_name(KeyCheck k);
// The error rules a key of that check is held to whenever an edit touches it:
//   token_id  -> token_id (the id below the vocabulary size)
//   vocab     -> vocab_length, empty_vocab, missing_vocab, vocab_rows
//   alignment -> alignment_too_small, alignment_too_large
//   template_ -> template_nul (UTF-8 and the size cap are the patch's own, as it reads them)
// and every registry key, whatever its check, to key_type and key_range (the type and the
// values llama.cpp reads it with).
bool enforces(KeyCheck k, Code c);

// The findings of `now` an edit brings in: those whose (code, place) is not in `was` (not
// compared by message: a count in it may change with the edit), and those about a key the
// edit touched whose registry check enforces their rule, even when the source had them (a
// token id set to another one outside the vocabulary is not the source's fault).
std::vector<Finding> new_findings(const std::vector<Finding>& was, const std::vector<Finding>& now,
                                  const std::vector<std::pair<std::string, KeyCheck>>& touched = {});

// retype_to_control, of a token retyped from `before` to `after` (tokenizer.ggml.token_type's
// numbers): a byte, unused or normal token made control, which llama.cpp then prints as
// nothing, or as its name where it printed its byte; nullopt for any other retype. An edit
// is refused for it as for an error of the model's (it is the change, not the file, that
// tells it: a control token does not say what it was).
std::optional<Finding> retype_finding(std::string_view text, uint64_t id, int64_t before, int64_t after);

// The rules the patch applier checks too, as it reads a value (one implementation each).
namespace rule {
// Where a chat template has a NUL byte (llama.cpp cuts it there), or nullopt.
std::optional<size_t> template_nul(std::string_view text);
// A bool byte is 0 or 1; readers differ on the rest.
inline bool bool_byte_ok(uint64_t bits) { return bits <= 1; }
// A string value (a key, a template, a value) is valid UTF-8.
bool utf8_ok(std::string_view text);
// A token id names a token of a vocabulary of `vocab` tokens.
inline bool token_id_ok(uint64_t id, uint64_t vocab) { return id < vocab; }
}  // namespace rule

}  // namespace ggufkit
