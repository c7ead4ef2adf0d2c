#include "ggufkit/split.h"

#include "ggufkit/error.h"
#include "ggufkit/shards.h"

namespace ggufkit {

std::vector<Model> split_model(const Model& model, const SplitOptions& o) {
  const bool given = o.shards > 0;
  if (!given && !o.max_tensors && !o.max_bytes) throw_usage("give `max_tensors` N (at least 1) or `max_bytes` SIZE");
  if (given && o.shard_of.size() != model.tensors.size()) throw_usage("`shard_of` names a shard for each tensor");
  for (const KV& kv : model.metadata)
    if (is_split_key(kv.key)) throw_usage("the model has a " + kv.key + " key already: merge the set first");
  const uint64_t n = model.tensors.size();
  if (n > 0x7fffffff) throw_usage("split.tensors.count is an i32: " + std::to_string(n) + " tensors are too many");
  const uint32_t alignment = model.alignment();

  std::vector<Model> shards;
  auto open_shard = [&] {
    Model s;
    s.version = model.version;
    s.order = model.order;
    s.data_order = model.data_order;
    if (shards.empty()) s.metadata = model.metadata;
    shards.push_back(std::move(s));
  };
  auto close_check = [&](size_t i) {
    if (!shards.empty() && shards.back().tensors.empty())
      throw_usage("tensor[" + std::to_string(i) + "] " + model.tensors[i].name + " alone (" +
                  std::to_string(model.tensors[i].nbytes()) + " bytes, padded to 32) is more than `max_bytes` " +
                  std::to_string(o.max_bytes) + " bytes: a shard would hold no tensor");
  };
  open_shard();
  if (o.metadata_only_first) open_shard();
  uint64_t bytes = 0;  // the current shard's tensor bytes, each padded to 32 as llama.cpp counts
  for (size_t i = 0; i < n; ++i) {
    uint64_t padded = packed_next(0, model.tensors[i].nbytes(), 32).value_or(~0ull);
    if (given) {
      if (o.shard_of[i] >= o.shards || o.shard_of[i] + 1 < shards.size()) throw_usage("`shard_of` goes back or past `shards`");
      while (shards.size() <= o.shard_of[i]) open_shard();
    }
    bool next = given ? false : o.max_bytes ? bytes + padded > o.max_bytes : (i > 0 && i % o.max_tensors == 0);
    if (next) {
      close_check(i);
      open_shard();
      bytes = 0;
    }
    bytes += padded;
    Tensor t = model.tensors[i];
    t.offset.reset();
    shards.back().tensors.push_back(std::move(t));
  }
  while (given && shards.size() < o.shards) open_shard();
  shards.back().pad_end = model.pad_end;  // the set ends as the model did (llama.cpp pads)
  if (shards.size() > 0xffff) throw_usage(std::to_string(shards.size()) + " shards are more than split.count (a u16) can count");
  const auto count = static_cast<uint64_t>(shards.size());
  for (uint64_t k = 0; k < count; ++k) {
    auto& md = shards[k].metadata;
    md.push_back({kSplitNo, Value::scalar(ValueType::u16, k)});
    md.push_back({kSplitTensors, Value::scalar(ValueType::i32, n)});
    md.push_back({kSplitCount, Value::scalar(ValueType::u16, count)});
    if (k > 0 && alignment != 32) md.push_back({kAlignmentKey, Value::of_u32(alignment)});
  }
  return shards;
}

}  // namespace ggufkit
