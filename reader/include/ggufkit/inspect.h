#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ggufkit/hash.h"
#include "ggufkit/model.h"
#include "ggufkit/scan.h"

namespace ggufkit {

// llama.cpp's file types (llama.h's LLAMA_FTYPE_*), the one table: the id general.file_type
// holds, the name a file name gives it (as llama-quantize spells it), the tensor type its
// weights are quantized to by default (llama-quant.cpp's default_type; the rest of a mix is
// per tensor), and whether every weight is of it but the embeddings and the output. A
// removed one (4) is named for the old files that hold it; llama.cpp no longer knows it.
struct FileType {
  uint32_t id;
  std::string_view name;
  uint32_t main;  // ggml type id
  bool pure;
  bool removed = false;
};
const FileType* file_type(uint64_t id);
std::span<const FileType> file_types();
// general.file_type's label as llama.h names it ("MOSTLY_Q4_K_M"), or "" if unknown.
std::string file_type_name(uint64_t file_type);

// general.architecture, or "" when absent or not a string.
std::string architecture(const Model& m);

// Tensors, weights and bytes of one ggml type.
struct TypeMix {
  std::string type;
  uint64_t tensors = 0, weights = 0, bytes = 0;
};
// By bytes, largest first.
std::vector<TypeMix> quant_mix(const Model& m);

// The hyperparameters llama.cpp reads under the architecture's prefix, in a fixed order:
// label and the key's value where present.
struct Hyperparameter {
  std::string label, key;
  const Value* value = nullptr;
};
std::vector<Hyperparameter> hyperparameters(const Model& m);
// The attention head size: {arch}.attention.key_length, or embedding / heads; 0 if unknown.
uint64_t head_size(const Model& m);

// A special token id in the file (tokenizer.ggml.NAME_token_id), named as llama.cpp names
// it (bos, eos, eot, ...), with the token's text and type when the id is in the vocabulary.
struct SpecialToken {
  std::string name, key;
  uint64_t id = 0;
  std::optional<std::string_view> text;  // a view of the model's vocabulary
  std::optional<int64_t> type;           // tokenizer.ggml.token_type: 1 normal ... 6 byte
};
// llama.cpp's special tokens first, in its order, then any other *_token_id key.
std::vector<SpecialToken> special_tokens(const Model& m);
// The key of a special token by llama.cpp's name (eos, seperator, fim_pre, ...) or a
// common alias (sep, pad, unk); empty when there is none.
std::string special_token_key(std::string_view name);
// The names special_token_key knows, for help and errors.
const std::vector<std::string>& special_token_names();
// llama.cpp's name of a token type: normal, unknown, control, user_defined, unused, byte.
std::string token_type_name(int64_t type);
// Edits from a to b (a swap of neighbours is one), for "did you mean".
size_t edit_distance(std::string_view a, std::string_view b);
// The names nearest `word`, in their order: one that `word` begins counts as one edit
// (--dry for --dry-run, blk.0.attn_q for blk.0.attn_q.weight); those at the fewest edits,
// if that is at most `max_edits` (8 at most); else none.
std::vector<std::string> nearest_names(std::string_view word, const std::vector<std::string>& names, size_t max_edits);
// "did you mean 'a' or 'b'?" (four at most, then how many more); "" for none.
std::string did_you_mean(const std::vector<std::string>& names);
// The model's key nearest to `key` (within a quarter of its length, at least 2 edits);
// empty when none is that close. Keys `skip` says yes to are not offered.
std::string nearest_key(const Model& m, std::string_view key,
                        const std::function<bool(const std::string&)>& skip = nullptr);
uint64_t vocabulary_size(const Model& m);  // items of tokenizer.ggml.tokens, or 0

// The repeated block stack: tensors named blk.N.REST grouped by REST.
struct StackRow {
  std::string name;                   // "blk.#.attn_q.weight"
  uint64_t count = 0, bytes = 0;
  std::vector<std::string> shapes;    // distinct, "4096x4096"
  std::map<std::string, uint64_t> types;
};
struct Stack {
  std::vector<StackRow> rows;
  uint64_t blocks = 0;  // distinct block numbers
  uint64_t front = 0, inside = 0, behind = 0;  // tensor bytes before, in and after the blocks
  std::optional<std::pair<uint64_t, uint64_t>> smallest, largest;  // (block, bytes)
  std::vector<std::pair<uint64_t, uint64_t>> per_block;             // (block, bytes), by block number
};
Stack stack_of(const Model& m);
// The block number of a tensor named blk.N.REST, and REST.
std::optional<std::pair<uint64_t, std::string>> block_of(const std::string& name);
std::string shape_text(const std::vector<uint64_t>& dims);  // "4096x4096"

// The header in its pieces and the tensor data against the file size.
struct Account {
  uint64_t head = 0, metadata = 0, infos = 0, padding = 0;  // header pieces
  uint64_t tensor_bytes = 0, tensor_padding = 0;
  uint64_t file_size = 0;
  int64_t left_over = 0;   // file size - everything above (gaps, bytes after the end, or missing)
  uint64_t contiguous = 0; // tensors starting exactly where the one before ended, padded
  bool header_only = false; // a header exemplar: the figures are the model's, not the file's
};
Account account_of(const Scanned& s);

// Streaming statistics of a tensor's decoded values.
struct TensorStats {
  uint64_t count = 0, nan = 0, inf = 0;
  double min = 0, max = 0, mean = 0, stddev = 0;  // over the finite values (population deviation)
  std::vector<float> head;
};
// How far a pass over a tensor's bytes is: (bytes done, bytes in all).
using TensorProgress = std::function<void(uint64_t done, uint64_t total)>;
// Decodes the tensor as stored in `order` (the file's byte order). Throws a format Error
// for a type it cannot decode.
TensorStats tensor_stats(const Tensor& t, size_t head = 8, ByteOrder order = ByteOrder::little, const TensorProgress& progress = {});

// The distribution of a tensor's finite values: `bins` (at most 2^20) equal bins from the stats' min to
// max (the last one closed; one bin when they are all alike), and the values further than `sigmas` standard deviations from
// the mean, the furthest first, at most `outliers` of them, each at its element index
// (row index / ne0, column index % ne0). A second pass over the data, after tensor_stats.
struct TensorOutlier {
  uint64_t index;
  float value;
};
struct TensorHistogram {
  double lo = 0, hi = 0, sigmas = 0;
  std::vector<uint64_t> bins;
  std::vector<TensorOutlier> outliers;  // the furthest, furthest first
  uint64_t beyond = 0;                  // how many values lie beyond `sigmas` in all
};
TensorHistogram tensor_histogram(const Tensor& t, const TensorStats& st, size_t bins = 20, ByteOrder order = ByteOrder::little,
                                 size_t outliers = 10, double sigmas = 6, const TensorProgress& progress = {});

// Checksums (hash_tensor, hash_model, the hash job and its manifests): ggufkit/hash.h.

// One way two files differ. `a` and `b` hold the typed values where there are values
// (metadata, version, alignment, offsets); `a_text` and `b_text` say the rest in words.
enum class DiffKind {
  version, byte_order, alignment, key_order, renamed, removed, added, changed,
  tensor_order, tensor_removed, tensor_added, tensor_changed, tensor_bytes, tensor_offset,
  padding, trailing,
};
inline constexpr DiffKind kLastDiffKind = DiffKind::trailing;
// The name diff prints (its `change` in JSON), and back.
std::string_view diff_kind_name(DiffKind k);
std::optional<DiffKind> diff_kind_named(std::string_view name);
struct Difference {
  DiffKind kind;
  std::string key;
  std::optional<Value> a, b;
  std::string a_text, b_text;
};
// Everything by which two files differ but for what follows from it: a longer value moves
// the offsets after it, and that is not listed again. Tensor bytes are compared by xxHash64.
// Without `layouts`, only the models are compared, not where their bytes lie (tensor
// offsets, padding, bytes after the end): a shard set's offsets start again in each file.
std::vector<Difference> diff_files(const Scanned& a, const Scanned& b, bool layouts = true);

// What validate finds (Finding, validate_file, check_model) is the rule book's: check/,
// ggufkit/check.h.

// The alignments llama.cpp loads (its TENSOR_ALIGNMENT) up to the most ggufkit writes
// without --allow-broken.
inline constexpr uint32_t kMinAlignment = 32;
inline constexpr uint32_t kMaxAlignment = 1u << 20;

}  // namespace ggufkit
