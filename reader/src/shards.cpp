#include "ggufkit/shards.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

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

Model ShardSet::model() const {
  Model m = shards.at(0).file.model;
  m.metadata.erase_if([](const KV& kv) { return is_split_key(kv.key); });
  if (shards.size() == 1) return m;
  m.tail.reset();  // the bytes beyond the fields belong to each shard's own layout
  for (size_t k = 1; k < shards.size(); ++k)
    for (const Tensor& t : shards[k].file.model.tensors) m.tensors.push_back(t);
  m.tensors.pack();
  m.pad_end = shards.back().file.model.pad_end;
  return m;
}

namespace {
// A shard's header, read as scan_file reads it, and then its file closed: a set of more
// shards than a process may have files open (1,200 under `ulimit -n 64`) is read one
// shard at a time. What reads a shard's tensors later opens it again for as long as it
// reads (FileSource::release). set_journals: the journals beside the set's other shards
// are looked for too (once a set, with the shard named).
Scanned read_shard(const std::string& path, bool set_journals, const Context& ctx) {
  auto src = std::make_shared<FileSource>(path, ctx);
  std::optional<Scanned> s;
  {
    const auto hold = src->read_lock();  // the journal looked for and the header read at one moment
    refuse_journal(path, ctx, set_journals);
    s = scan(src);
  }
  src->release();
  return std::move(*s);
}
}  // namespace

ShardSet check_shard_set(const std::string& path, std::vector<SetFault>& faults, const Context& ctx) {
  ShardSet set;
  auto fault = [&](const std::string& file, const std::string& field, SetFaultCode code, const std::string& message) {
    faults.push_back({file, field, code, message});
  };
  std::optional<ShardName> name = parse_shard_name(path);
  Scanned first = name ? read_shard(path, true, ctx) : scan_file(path, {}, ctx);  // a lone file keeps its one descriptor
  if (!name) {
    bool split_keys = false;
    for (const KV& kv : first.model.metadata) split_keys |= is_split_key(kv.key);
    const Value* c = first.model.find(kSplitCount);
    if (c && c->is_integer() && c->as_u64() > 1)
      fault(path, kSplitCount, SetFaultCode::not_a_shard_name,
            "says the model is in " + std::to_string(c->as_u64()) +
                " files, but the name is not PREFIX-00001-of-0000N.gguf, so the others cannot be found");
    else if (split_keys)
      fault(path, kSplitCount, SetFaultCode::split_keys_in_single_file,
            "a single file with split.* keys (llama.cpp's merge leaves them): llama.cpp may take it for a shard "
            "(\"invalid split file\"); ggufkit merge or edit --remove drops them");
    set.shards.push_back({path, std::move(first)});
    return set;
  }
  if (name->count > kLlamaMaxShards)
    fault(path, "", SetFaultCode::too_many_shards, std::to_string(name->count) + " shards are more than the " +
                                           std::to_string(kLlamaMaxShards) + " llama.cpp opens by default");
  std::vector<uint32_t> numbers;  // the file number of each shard that is there
  for (uint32_t k = 1; k <= name->count; ++k) {
    std::string p = shard_path(name->prefix, k, name->count);
    struct stat st {};
    if (k != name->no && stat_path(p, st) != 0) {
      fault(p, "", SetFaultCode::missing_shard,
            "is missing: shard " + std::to_string(k) + " of the " + std::to_string(name->count) + " of the set " + path + " belongs to");
      continue;
    }
    set.shards.push_back({p, k == name->no ? std::move(first) : read_shard(p, false, ctx)});
    numbers.push_back(k);
  }
  std::map<std::string, std::string> owner;  // tensor name -> the shard that has it
  uint64_t tensors = 0;
  for (const Shard& s : set.shards) tensors += s.file.model.tensors.size();
  auto order_name = [](ByteOrder o) { return o == ByteOrder::big ? "big-endian" : "little-endian"; };
  for (size_t i = 0; i < set.shards.size(); ++i) {
    const Shard& s = set.shards[i];
    const uint32_t k = numbers[i];
    // Read in shard 1's byte order, its numbers would be garbage: llama.cpp, which reads every
    // file in its host's, refuses a file of the other order at its version.
    if (const ByteOrder first = set.shards[0].file.model.order; s.file.model.order != first)
      fault(s.path, "version", SetFaultCode::shard_byte_order,
            std::string("is ") + order_name(s.file.model.order) + ", and shard " + std::to_string(numbers[0]) + " (" +
                std::filesystem::path(set.shards[0].path).filename().string() + ") " + order_name(first) +
                ": a set is in one byte order, and llama.cpp refuses one of two (to turn the shard over, copy it to a name "
                "that is no shard's, 'ggufkit convert COPY --byte-order " + (first == ByteOrder::big ? "big" : "little") +
                " -o NEW', and put NEW in its place)");
    auto split_value = [&](const char* key, ValueType type, SetFaultCode code) -> std::optional<uint64_t> {
      const Value* v = s.file.model.find(key);
      if (!v) fault(s.path, key, code, std::string("there is no ") + key + " key; every shard of a set carries it");
      else if (v->type != type)
        fault(s.path, key, code, std::string("is ") + value_type_name(v->type) + ", expected " + value_type_name(type));
      else return v->type == ValueType::i32 ? static_cast<uint64_t>(v->as_i64()) : v->as_u64();
      return std::nullopt;
    };
    if (auto no = split_value(kSplitNo, ValueType::u16, SetFaultCode::split_no); no && *no != k - 1)
      fault(s.path, kSplitNo, SetFaultCode::split_no, "split.no is " + std::to_string(*no) + ", expected " + std::to_string(k - 1) + " from its name");
    if (auto count = split_value(kSplitCount, ValueType::u16, SetFaultCode::split_count); count && *count != name->count)
      fault(s.path, kSplitCount, SetFaultCode::split_count, "split.count is " + std::to_string(*count) + ", expected " +
                                                    std::to_string(name->count) + " from its name");
    if (auto total = split_value(kSplitTensors, ValueType::i32, SetFaultCode::split_tensors_count);
        total && numbers.size() == name->count && *total != tensors)
      fault(s.path, kSplitTensors, SetFaultCode::split_tensors_count,
            "split.tensors.count is " + std::to_string(static_cast<int64_t>(*total)) + ", but the " +
                std::to_string(name->count) + " files hold " + std::to_string(tensors) + " tensors");
    for (size_t j = 0; k > 1 && j < s.file.model.metadata.size(); ++j) {
      const std::string& key = s.file.model.metadata[j].key;
      if (!is_split_key(key) && key != kAlignmentKey)
        fault(s.path, "kv[" + std::to_string(j) + "] " + key, SetFaultCode::model_key_in_shard,
              "a model key in shard " + std::to_string(k) + "; only shard 1 carries the model's keys");
    }
    for (size_t j = 0; j < s.file.model.tensors.size(); ++j) {
      auto [it, fresh] = owner.emplace(s.file.model.tensors[j].name, s.path);
      if (!fresh)
        fault(s.path, "tensor[" + std::to_string(j) + "] " + it->first, SetFaultCode::tensor_in_two_shards,
              "is also in " + it->second + "; a tensor lives in one shard");
    }
  }
  return set;
}

ShardSet open_shard_set(const std::string& path, const Context& ctx) {
  std::vector<SetFault> faults;
  ShardSet set = check_shard_set(path, faults, ctx);
  for (const SetFault& f : faults)
    if (f.code != SetFaultCode::too_many_shards && f.code != SetFaultCode::split_keys_in_single_file)  // a note, a warning: the set opens
      throw Error(Error::Kind::format, f.file, std::nullopt, f.field, f.message);
  return set;
}

std::optional<ShardSet> set_of(const std::string& path, bool shard_only, const Context& ctx) {
  if (path == "-" || shard_only || !parse_shard_name(path)) return std::nullopt;
  return open_shard_set(path, ctx);
}

ModelView open_model(const std::string& path, bool shard_only, std::istream* in, const Context& ctx) {
  std::optional<ShardSet> found = set_of(path, shard_only, ctx);
  if (!found) {
    if (path != "-") return {scan_file(path, {}, ctx), 1, {}};
    if (!in) throw_usage("'-' names standard input, and no stream was given");
    return {scan_stream(*in, "<stdin>"), 1, {}};
  }
  ShardSet& set = *found;
  Model whole = set.model();  // before shard 1 is moved from
  ModelView out{std::move(set.shards[0].file), set.shards.size(), {}};
  out.s.model = std::move(whole);
  auto& offsets = out.s.layout.tensor_offsets;
  out.shard.assign(offsets.size(), 1);
  for (size_t k = 1; k < set.shards.size(); ++k) {
    const Scanned& f = set.shards[k].file;
    offsets.insert(offsets.end(), f.layout.tensor_offsets.begin(), f.layout.tensor_offsets.end());
    out.shard.insert(out.shard.end(), f.layout.tensor_offsets.size(), static_cast<uint32_t>(k + 1));
    out.s.source_size += f.source_size;
    out.s.model_size += f.model_size;
    out.s.header_only |= f.header_only;
  }
  return out;
}

}  // namespace ggufkit
