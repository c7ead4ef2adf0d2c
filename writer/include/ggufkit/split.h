#pragma once

#include <cstdint>
#include <vector>

#include "ggufkit/model.h"

namespace ggufkit {

struct SplitOptions {
  uint64_t max_tensors = 0;  // a new shard every this many tensors; or
  uint64_t max_bytes = 0;    // when the next tensor (its bytes padded to 32) would take a
                             // shard's tensor bytes past this
  bool metadata_only_first = false;  // shard 1 holds the keys and no tensor
  // Or a set laid out as given (an edit keeps its input's shards): tensor i goes to shard
  // shard_of[i] (never less than the tensor's before), of `shards` in all; a shard may then
  // hold no tensor.
  std::vector<uint32_t> shard_of;
  uint32_t shards = 0;
};

// The shards of a model by llama.cpp's gguf-split rules (shards.h): shard 1 holds every
// key of the model, then split.no, split.tensors.count and split.count (that order, as
// llama.cpp leaves them); the others those three only, and general.alignment when the
// model is not at 32, so that every shard keeps the model's alignment. Tensors keep their
// order and their sources. Throws a usage Error for no limit, a limit of 0, a size too
// small for one tensor (naming it), or more shards than split.count can count.
std::vector<Model> split_model(const Model& model, const SplitOptions& options);

}  // namespace ggufkit
