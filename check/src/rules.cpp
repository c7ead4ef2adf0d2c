// The rule table, and what is asked of it: names, the registry's checks, what an edit brings in.
#include <algorithm>
#include <array>
#include <ostream>

#include "ggufkit/check.h"
#include "ggufkit/error.h"
#include "ggufkit/format.h"
#include "ggufkit/text.h"

namespace ggufkit {

namespace {

using enum Severity;
constexpr std::array kRules = {
    Rule{Code::read, "read", error, "the strict reader refuses the file"},
    Rule{Code::truncated, "truncated", error, "tensor data runs past the end of the file"},
    Rule{Code::header_only, "header_only", info, "the file ends at its data start: a header exemplar, no tensor bytes"},
    Rule{Code::trailing_bytes, "trailing_bytes", warning, "bytes after the last tensor (or the header)"},
    Rule{Code::nonzero_padding, "nonzero_padding", warning, "a padding byte that is not 0"},
    Rule{Code::offset_gap, "offset_gap", error, "a tensor not right after the one before it, padded"},
    Rule{Code::alignment, "alignment", info, "no general.alignment, but the data is aligned wider than 32", true},
    Rule{Code::alignment_too_small, "alignment_too_small", error, "general.alignment below llama.cpp's 32"},
    Rule{Code::alignment_too_large, "alignment_too_large", error, "general.alignment over 1 MiB"},
    Rule{Code::missing_architecture, "missing_architecture", error, "no general.architecture string"},
    Rule{Code::missing_quantization_version, "missing_quantization_version", warning,
         "quantized tensors but no general.quantization_version"},
    Rule{Code::missing_hparam, "missing_hparam", error, "a hyperparameter llama.cpp needs for the architecture is missing"},
    Rule{Code::zero_hparam, "zero_hparam", error, "a head count, embedding length or block count of 0"},
    Rule{Code::hparam_condition, "hparam_condition", error,
         "hyperparameters llama.cpp's loader refuses or aborts on (experts used, expert groups, MTP layers, rope width)"},
    Rule{Code::invalid_utf8, "invalid_utf8", warning, "a key, string or tensor name that is not valid UTF-8"},
    Rule{Code::template_nul, "template_nul", error, "a chat template with a NUL byte (llama.cpp cuts it there)"},
    Rule{Code::bool_value, "bool_value", warning, "a bool byte other than 0 or 1"},
    Rule{Code::nested_array, "nested_array", error, "an array of arrays"},
    Rule{Code::token_id, "token_id", error, "a special token id not below the vocabulary size"},
    Rule{Code::vocab_length, "vocab_length", error, "tokens, scores and token_type of different lengths"},
    Rule{Code::block_count, "block_count", error, "block_count disagrees with the blk.N tensors"},
    Rule{Code::missing_vocab, "missing_vocab", error, "tokenizer.ggml.model but no tokenizer.ggml.tokens"},
    Rule{Code::empty_vocab, "empty_vocab", error, "tokenizer.ggml.tokens is empty"},
    Rule{Code::vocab_refused, "vocab_refused", error,
         "llama.cpp refuses the vocabulary: an unknown tokenizer model or pre-tokenizer, no merges"},
    Rule{Code::unknown_pre_tokenizer, "unknown_pre_tokenizer", error,
         "tokenizer.ggml.pre names no pre-tokenizer llama.cpp knows: it refuses the model"},
    Rule{Code::vocab_rows, "vocab_rows", error, "token_embd or output rows other than the vocabulary size"},
    Rule{Code::tensor_name, "tensor_name", error, "a tensor name with a NUL byte (ggml cuts it there)"},
    Rule{Code::duplicate_tensor_name, "duplicate_tensor_name", error, "two tensors of one name to ggml"},
    Rule{Code::tensor_missing, "tensor_missing", error, "a tensor llama.cpp's loader asks for of the architecture is not in the file"},
    Rule{Code::tensor_shape, "tensor_shape", error, "a tensor's shape is not the one the loader computes from the hyperparameters"},
    Rule{Code::tensor_unexpected, "tensor_unexpected", error, "a tensor the loader does not take: its tensor count check fails"},
    Rule{Code::tensors_unchecked, "tensors_unchecked", info, "the architecture is not in the tensor table: its tensors are not checked"},
    Rule{Code::surgery_key, "surgery_key", error,
         "a key that describes layers or experts a tensor edit could not fix, or that no longer fits what is left"},
    Rule{Code::tensor_type_unknown, "tensor_type_unknown", error,
         "a tensor of a type ggml does not know (or removed): llama.cpp refuses the file; ggufkit keeps its bytes as they are"},
    Rule{Code::tensor_type_ik, "tensor_type_ik", error,
         "a tensor of an ik_llama.cpp type: mainline llama.cpp cannot load it (a warning under dialect ik_llama)"},
    Rule{Code::mtp_layers, "mtp_layers", warning,
         "{arch}.nextn_predict_layers and the blk.N.nextn.* tensors disagree: MTP layers claimed and not held, or held and not counted"},
    Rule{Code::mtp_base, "mtp_base", error, "an MTP drafter whose architecture, width or vocabulary is not its model's (validate --base)"},
    Rule{Code::template_syntax, "template_syntax", warning, "a chat template jinja2 refuses"},
    Rule{Code::template_no_default, "template_no_default", warning, "named chat templates but no tokenizer.chat_template"},
    Rule{Code::special_not_control, "special_not_control", warning,
         "a token the template writes is typed normal: llama.cpp takes its text as text and splits it"},
    Rule{Code::template_literal_split, "template_literal_split", warning,
         "a special-looking literal of a rendered prompt tokenizes into several tokens"},
    Rule{Code::double_bos, "double_bos", warning, "the ids llama.cpp's chat path feeds the model start with two BOS"},
    Rule{Code::double_bos_unstripped, "double_bos_unstripped", info,
         "the template prints BOS, which llama.cpp strips; a runtime that does not strip it gets two", true},
    Rule{Code::turn_end_not_eog, "turn_end_not_eog", warning,
         "an assistant turn ends in a token llama.cpp does not stop generating at"},
    Rule{Code::eog_byte_token, "eog_byte_token", error,
         "an end-of-generation token (eos, eot, eom) that is a byte or unused token: generation stops at that byte"},
    Rule{Code::eog_at_start, "eog_at_start", error,
         "a token llama.cpp stops generating at opens every prompt or turn (BOS, a turn's first token)"},
    Rule{Code::retype_to_control, "retype_to_control", error,
         "a byte, unused or normal token retyped to control: llama.cpp no longer prints it as its text"},
    Rule{Code::role_key_type, "role_key_type", error, "a key llama.cpp reads for the file's role is of another type: it aborts"},
    Rule{Code::not_an_adapter, "not_an_adapter", error, "an adapter whose general.type is not 'adapter': llama.cpp refuses it"},
    Rule{Code::adapter_architecture, "adapter_architecture", error, "an adapter's general.architecture is not its base model's"},
    Rule{Code::adapter_not_lora, "adapter_not_lora", error, "adapter.type is not 'lora', the one kind llama.cpp loads"},
    Rule{Code::adapter_alpha, "adapter_alpha", warning, "no adapter.lora.alpha: llama.cpp does not scale the adapter by alpha/rank"},
    Rule{Code::lora_suffix, "lora_suffix", error, "an adapter tensor not named NAME.lora_a or NAME.lora_b (or *_norm.weight)"},
    Rule{Code::lora_pair, "lora_pair", error, "a lora_a without its lora_b, or a lora_b without its lora_a"},
    Rule{Code::lora_base_tensor, "lora_base_tensor", error, "an adapter pair for a tensor the base model does not have"},
    Rule{Code::lora_shape, "lora_shape", error, "an adapter pair whose shapes do not fit each other or the base tensor"},
    Rule{Code::imatrix_entries, "imatrix_entries", error, "an importance matrix of no tensors"},
    Rule{Code::imatrix_metadata, "imatrix_metadata", error, "an importance matrix without imatrix.datasets, chunk_count and chunk_size"},
    Rule{Code::imatrix_pair, "imatrix_pair", error, "an in_sum2 without its counts, or counts without its in_sum2"},
    Rule{Code::imatrix_type, "imatrix_type", error, "an importance matrix's sums or counts not f32"},
    Rule{Code::imatrix_shape, "imatrix_shape", error, "counts that do not divide an in_sum2 into one row a count (or are none)"},
    Rule{Code::mmproj_encoder, "mmproj_encoder", error, "a projector with no vision or audio encoder flag set"},
    Rule{Code::mmproj_projector, "mmproj_projector", error, "a projector type missing or unknown to mtmd"},
    Rule{Code::key_type, "key_type", error,
         "a key of another type (or per-layer length) than llama.cpp reads it with: it refuses the model"},
    Rule{Code::key_type_unusual, "key_type_unusual", warning,
         "a standard key of another type than its writers give it (read by some architectures, or by none)"},
    Rule{Code::key_range, "key_range", error, "a value llama.cpp refuses: outside the range or the names it takes"},
    Rule{Code::key_value_unusual, "key_value_unusual", warning, "a surprising value: a file type llama.cpp does not know, an epsilon of 0"},
    Rule{Code::file_type_mismatch, "file_type_mismatch", warning,
         "general.file_type names a type no weight is of (or, for F16, Q8_0, Q4_0, ..., not most)"},
    Rule{Code::name_is_hash, "name_is_hash", warning, "general.name is a hash (a snapshot or blob id), not the model's name"},
    Rule{Code::name_is_path, "name_is_path", warning, "general.name is a path or a file name, not the model's name"},
    Rule{Code::file_name_mismatch, "file_name_mismatch", warning,
         "the file's name (BaseName-SizeLabel-...-Encoding.gguf) contradicts its metadata"},
    Rule{Code::not_a_shard_name, "not_a_shard_name", error, "split.count over 1 in a file not named PREFIX-0000K-of-0000N.gguf"},
    Rule{Code::split_keys_in_single_file, "split_keys_in_single_file", warning, "split keys in a file of no set"},
    Rule{Code::too_many_shards, "too_many_shards", info, "more shards than llama.cpp opens by default"},
    Rule{Code::missing_shard, "missing_shard", error, "a shard of the set is not there"},
    Rule{Code::split_no, "split_no", error, "split.no missing, mistyped or not the name's"},
    Rule{Code::split_count, "split_count", error, "split.count missing, mistyped or not the name's"},
    Rule{Code::split_tensors_count, "split_tensors_count", error, "split.tensors.count missing, mistyped or not the set's"},
    Rule{Code::model_key_in_shard, "model_key_in_shard", error, "a model key in a shard after the first"},
    Rule{Code::tensor_in_two_shards, "tensor_in_two_shards", error, "a tensor name in two shards"},
    Rule{Code::shard_byte_order, "shard_byte_order", error,
         "a shard in the other byte order than shard 1: llama.cpp refuses the set"},
};

constexpr bool in_code_order() {
  for (size_t i = 0; i < kRules.size(); ++i)
    if (static_cast<size_t>(kRules[i].code) != i) return false;
  return true;
}
static_assert(in_code_order(), "the rule table has one row per Code, in its order");
static_assert(static_cast<size_t>(Code::shard_byte_order) + 1 == kRules.size(), "a Code without a row");

constexpr std::array<std::string_view, 3> kSeverities = {"error", "warning", "info"};
constexpr std::array<std::string_view, 5> kKeyChecks = {"", "token_id", "vocab", "alignment", "template"};

}  // namespace

std::span<const Rule> rules() { return kRules; }
const Rule& rule_of(Code c) { return kRules[static_cast<size_t>(c)]; }
std::string_view code_name(Code c) { return rule_of(c).name; }
std::optional<Code> code_named(std::string_view name) {
  for (const Rule& r : kRules)
    if (r.name == name) return r.code;
  return std::nullopt;
}
std::string_view severity_name(Severity s) { return kSeverities[static_cast<size_t>(s)]; }
std::ostream& operator<<(std::ostream& os, Code c) { return os << code_name(c); }
std::ostream& operator<<(std::ostream& os, Severity s) { return os << severity_name(s); }

Finding finding(Code c, std::optional<uint64_t> offset, std::string message, Place place) {
  Finding f;
  f.code = c;
  f.severity = rule_of(c).severity;
  f.offset = offset;
  f.message = std::move(message);
  f.place = std::move(place);
  return f;
}

// Each of the reader's set faults is the rule of its name (a case missing is a compile warning).
Code code_of(SetFaultCode c) {
  switch (c) {
    case SetFaultCode::not_a_shard_name: return Code::not_a_shard_name;
    case SetFaultCode::split_keys_in_single_file: return Code::split_keys_in_single_file;
    case SetFaultCode::too_many_shards: return Code::too_many_shards;
    case SetFaultCode::missing_shard: return Code::missing_shard;
    case SetFaultCode::split_no: return Code::split_no;
    case SetFaultCode::split_count: return Code::split_count;
    case SetFaultCode::split_tensors_count: return Code::split_tensors_count;
    case SetFaultCode::model_key_in_shard: return Code::model_key_in_shard;
    case SetFaultCode::tensor_in_two_shards: return Code::tensor_in_two_shards;
    case SetFaultCode::shard_byte_order: return Code::shard_byte_order;
  }
  return Code::split_no;  // not reached: every code has its case
}

Finding set_finding(const SetFault& f) {
  return finding(code_of(f.code), std::nullopt, (f.field.empty() ? "" : f.field + ": ") + f.message, {Place::Of::file, "", f.field});
}

std::optional<KeyCheck> key_check_named(std::string_view name) {
  for (size_t i = 1; i < kKeyChecks.size(); ++i)
    if (kKeyChecks[i] == name) return static_cast<KeyCheck>(i);
  return std::nullopt;
}
std::string_view key_check_name(KeyCheck k) { return kKeyChecks[static_cast<size_t>(k)]; }

bool enforces(KeyCheck k, Code c) {
  if (c == Code::key_type || c == Code::key_range) return true;  // every registry key's
  switch (k) {
    case KeyCheck::none: return false;
    case KeyCheck::token_id: return c == Code::token_id;
    case KeyCheck::vocab:
      return c == Code::vocab_length || c == Code::empty_vocab || c == Code::missing_vocab || c == Code::vocab_rows;
    case KeyCheck::alignment: return c == Code::alignment_too_small || c == Code::alignment_too_large;
    case KeyCheck::template_: return c == Code::template_nul;
  }
  return false;
}

std::vector<Finding> new_findings(const std::vector<Finding>& was, const std::vector<Finding>& now,
                                  const std::vector<std::pair<std::string, KeyCheck>>& touched) {
  std::vector<Finding> out;
  for (const Finding& f : now) {
    const bool had = std::any_of(was.begin(), was.end(), [&](const Finding& w) { return w.code == f.code && w.place == f.place; });
    const bool held = f.place.of == Place::Of::key && std::any_of(touched.begin(), touched.end(), [&](const auto& t) {
                        return t.first == f.place.name && enforces(t.second, f.code);
                      });
    if (!had || held) out.push_back(f);
  }
  return out;
}

std::optional<Finding> retype_finding(std::string_view text, uint64_t id, int64_t before, int64_t after) {
  if (after != 3 || (before != 1 && before != 5 && before != 6)) return std::nullopt;
  const std::string what = before == 6 ? "a byte token" : before == 5 ? "an unused token" : "a normal token (text)";
  const std::string harm =
      before == 6 ? "as control it is no longer the byte: detokenizing prints its name (" + json_string(text) +
                        ") where the model wrote the byte, and generation prints nothing"
      : before == 5 ? "as control llama.cpp parses its name out of any text and prints nothing for it"
                    : "as control llama.cpp prints nothing for it where the model writes it; user_defined has it "
                      "parsed as one token and still printed";
  return finding(Code::retype_to_control, std::nullopt,
                 "token " + std::to_string(id) + " " + json_string(text) + " is " + what + "; " + harm,
                 Place::key("tokenizer.ggml.token_type", std::string(text)));
}

namespace rule {
std::optional<size_t> template_nul(std::string_view text) {
  size_t z = text.find('\0');
  return z == std::string_view::npos ? std::nullopt : std::optional<size_t>(z);
}
bool utf8_ok(std::string_view text) { return is_valid_utf8(text); }
}  // namespace rule

}  // namespace ggufkit
