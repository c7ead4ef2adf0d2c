#include "ggufkit/shards.h"

#include <sys/stat.h>

#include <cstdio>
#include <map>

#include "ggufkit/error.h"
#include "ggufkit/path.h"

namespace ggufkit {

bool is_split_key(const std::string& key) { return key == kSplitNo || key == kSplitCount || key == kSplitTensors; }

std::string shard_path(const std::string& prefix, uint32_t no, uint32_t count) {
  char tail[40];
  std::snprintf(tail, sizeof tail, "-%05u-of-%05u.gguf", no, count);
  return prefix + tail;
}

std::optional<ShardName> parse_shard_name(const std::string& path) {
  // ...-NNNNN-of-MMMMM.gguf: 20 bytes after the prefix
  if (path.size() < 21 || path.compare(path.size() - 5, 5, ".gguf") != 0) return std::nullopt;
  std::string tail = path.substr(path.size() - 20);
  unsigned no = 0, count = 0;
  int end = 0;
  if (std::sscanf(tail.c_str(), "-%5u-of-%5u.gguf%n", &no, &count, &end) != 2 || end != 20) return std::nullopt;
  if (shard_path("", no, count) != tail || no < 1 || no > count) return std::nullopt;
  return ShardName{path.substr(0, path.size() - 20), no, count};
}

namespace {

[[noreturn]] void fault(const std::string& file, const std::string& field, const std::string& message) {
  throw Error(Error::Kind::format, file, std::nullopt, field, message);
}

// The split.* key `key` of a shard as the integer it must be, of type `type`.
uint64_t split_value(const Shard& s, const char* key, ValueType type) {
  const Value* v = s.file.model.find(key);
  if (!v) fault(s.path, key, std::string("there is no ") + key + " key; every shard of a set carries it");
  if (v->type != type)
    fault(s.path, key, std::string("is ") + value_type_name(v->type) + ", expected " + value_type_name(type));
  return v->as_u64();
}

}  // namespace

Model ShardSet::model() const {
  Model m = shards.at(0).file.model;
  std::erase_if(m.metadata, [](const KV& kv) { return is_split_key(kv.key); });
  if (shards.size() == 1) return m;
  m.tail.reset();  // the bytes beyond the fields belong to each shard's own layout
  for (size_t k = 1; k < shards.size(); ++k)
    for (const Tensor& t : shards[k].file.model.tensors) m.tensors.push_back(t);
  for (Tensor& t : m.tensors) t.offset.reset();
  m.pad_end = shards.back().file.model.pad_end;
  return m;
}

ShardSet open_shard_set(const std::string& path) {
  ShardSet set;
  Scanned first = scan_file(path);
  std::optional<ShardName> name = parse_shard_name(path);
  if (!name) {
    const Value* c = first.model.find(kSplitCount);
    if (c && c->is_integer() && c->as_u64() > 1)
      fault(path, kSplitCount, "says the model is in " + std::to_string(c->as_u64()) +
                                   " files, but the name is not PREFIX-00001-of-0000N.gguf, so the others cannot be found");
    set.shards.push_back({path, std::move(first)});
    return set;
  }
  for (uint32_t k = 1; k <= name->count; ++k) {
    std::string p = shard_path(name->prefix, k, name->count);
    if (k != name->no) {
      struct stat st {};
      if (stat_path(p, st) != 0)
        fault(p, "", "is missing: shard " + std::to_string(k) + " of the " + std::to_string(name->count) + " of the set " +
                         path + " belongs to");
    }
    set.shards.push_back({p, k == name->no ? std::move(first) : scan_file(p)});
  }
  std::map<std::string, std::string> owner;  // tensor name -> the shard that has it
  uint64_t tensors = 0;
  for (const Shard& s : set.shards) tensors += s.file.model.tensors.size();
  for (uint32_t k = 1; k <= name->count; ++k) {
    const Shard& s = set.shards[k - 1];
    uint64_t no = split_value(s, kSplitNo, ValueType::u16);
    if (no != k - 1)
      fault(s.path, kSplitNo, "split.no is " + std::to_string(no) + ", expected " + std::to_string(k - 1) + " from its name");
    uint64_t count = split_value(s, kSplitCount, ValueType::u16);
    if (count != name->count)
      fault(s.path, kSplitCount, "split.count is " + std::to_string(count) + ", expected " + std::to_string(name->count) +
                                     " from its name");
    const Value* total = s.file.model.find(kSplitTensors);
    if (!total || total->type != ValueType::i32)
      fault(s.path, kSplitTensors, "there is no split.tensors.count (i32); every shard of a set carries it");
    if (total->as_i64() < 0 || static_cast<uint64_t>(total->as_i64()) != tensors)
      fault(s.path, kSplitTensors, "split.tensors.count is " + std::to_string(total->as_i64()) + ", but the " +
                                       std::to_string(name->count) + " files hold " + std::to_string(tensors) + " tensors");
    for (size_t i = 0; k > 1 && i < s.file.model.metadata.size(); ++i) {
      const std::string& key = s.file.model.metadata[i].key;
      if (!is_split_key(key) && key != kAlignmentKey)
        fault(s.path, "kv[" + std::to_string(i) + "] " + key,
              "a model key in shard " + std::to_string(k) + "; only shard 1 carries the model's keys");
    }
    for (size_t i = 0; i < s.file.model.tensors.size(); ++i) {
      auto [it, fresh] = owner.emplace(s.file.model.tensors[i].name, s.path);
      if (!fresh)
        fault(s.path, "tensor[" + std::to_string(i) + "] " + it->first, "is also in " + it->second + "; a tensor lives in one shard");
    }
  }
  return set;
}

}  // namespace ggufkit
