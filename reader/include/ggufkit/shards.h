#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "ggufkit/scan.h"

namespace ggufkit {

// llama.cpp's gguf-split convention: PREFIX-00001-of-00005.gguf ... and in every shard
// split.no (u16, 0-based), split.count (u16) and split.tensors.count (i32, the whole set's).
inline constexpr const char* kSplitNo = "split.no";
inline constexpr const char* kSplitCount = "split.count";
inline constexpr const char* kSplitTensors = "split.tensors.count";
bool is_split_key(const std::string& key);

// "PREFIX-%05d-of-%05d.gguf" for shard `no` (1-based) of `count`.
std::string shard_path(const std::string& prefix, uint32_t no, uint32_t count);

// What a file name says: the prefix, the shard number (1-based) and the count.
struct ShardName {
  std::string prefix;
  uint32_t no = 0, count = 0;
};
std::optional<ShardName> parse_shard_name(const std::string& path);

struct Shard {
  std::string path;
  Scanned file;
};

// A model in one or several files. A file that is not named as a shard is the set of one.
struct ShardSet {
  std::vector<Shard> shards;
  bool is_set() const { return shards.size() > 1 || (!shards.empty() && shards[0].file.model.find(kSplitCount)); }
  // The model as one file would hold it: shard 1's keys without the split.* keys, and
  // every shard's tensors in order (each reading from its own shard).
  Model model() const;
};

// What is wrong with a set: each is one of validate's rules (check/ maps each to its Code;
// the reader sits below the rule book).
enum class SetFaultCode {
  not_a_shard_name, split_keys_in_single_file, too_many_shards, missing_shard, split_no, split_count,
  split_tensors_count, model_key_in_shard, tensor_in_two_shards, shard_byte_order,
};
// One fault of a set: the shard file, the field, the fault and the message.
struct SetFault {
  std::string file, field;
  SetFaultCode code;
  std::string message;
};

// Opens the set a file belongs to (any of its shards), every shard read strictly, and
// checks it as a whole: every file there, split.no matching each name, one split.count,
// split.tensors.count the tensors found, no tensor in two shards, no model keys after
// shard 1. Throws a format Error naming the shard file and the field at the first fault.
ShardSet open_shard_set(const std::string& path, const Context& ctx = {});
// The same checks, every fault listed (validate): the shards that could be read, and the faults.
ShardSet check_shard_set(const std::string& path, std::vector<SetFault>& faults, const Context& ctx = {});

// What a reading job reads: the model `path` holds, or, when `path` is named as a shard
// (and not shard_only), the whole set's model (ShardSet::model) with shard 1's layout,
// each tensor's offset in its own shard's data section, and the files' sizes added up.
// "-" reads a header from `in`.
struct ModelView {
  Scanned s;
  size_t files = 1;
  std::vector<uint32_t> shard;  // each tensor's shard, from 1 (a set only)
};
ModelView open_model(const std::string& path, bool shard_only = false, std::istream* in = nullptr, const Context& ctx = {});
// The set `path` is a shard of, when it is named as one (and not shard_only).
std::optional<ShardSet> set_of(const std::string& path, bool shard_only = false, const Context& ctx = {});

// More shards than llama.cpp opens by default (its file handles).
inline constexpr uint32_t kLlamaMaxShards = 64;

}  // namespace ggufkit
