#pragma once
// What a GGUF file is: a model, or one of the files that travel beside models and are
// read by other code of llama.cpp (a vocabulary by the vocab-only load, a LoRA adapter by
// llama_adapter_lora_init, an importance matrix by llama-quantize, a projector by mtmd's
// clip loader). The rule book judges each by its own rules (check.h); show names it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ggufkit/model.h"

namespace ggufkit {

enum class Role : uint8_t { model, vocab, adapter, imatrix, mmproj, mtp };
std::string_view role_name(Role r);

// general.type "adapter" or "imatrix", or general.architecture "clip" (general.type
// "mmproj"), say so; without them (or with general.type "model"), tensors that are all of an adapter's names
// (NAME.lora_a, NAME.lora_b) or of an imatrix's (NAME.in_sum2, NAME.counts) say the same,
// so a mislabelled adapter is told it is mislabelled, not that it lacks a block count. A
// file of no tensors with a tokenizer is a vocabulary. A file whose only blocks are
// multi-token-prediction layers (blk.N.nextn.*, no trunk before them) is an MTP drafter
// (mtp), as the mtp-*.gguf files shipped beside a model are. Anything else is a model.
Role role_of(const Model& m);

// A model's multi-token-prediction ("nextn") layers: the last {arch}.nextn_predict_layers
// of its block_count blocks, each a trunk block plus blk.N.nextn.* tensors. A file may hold
// them with its trunk (embedded), hold the trunk alone (absent: llama.cpp's deepseek2 and
// glm4moe loaders allow it), or hold them alone (a drafter).
struct MtpFacts {
  enum class State : uint8_t { none, embedded, absent, drafter };
  State state = State::none;
  uint64_t claimed = 0;          // {arch}.nextn_predict_layers
  std::vector<uint64_t> layers;  // blocks holding blk.N.nextn.* tensors, ascending
  uint64_t trunk_blocks = 0;     // blocks below the first MTP layer that hold tensors
  uint64_t blocks = 0;           // one past the highest block that holds a tensor
};
MtpFacts mtp_facts(const Model& m);
std::string_view mtp_state_name(MtpFacts::State s);

// What show says of a file's role.
struct RoleFacts {
  Role role = Role::model;
  // adapter
  std::string adapter_type;          // adapter.type ("lora")
  std::optional<double> alpha;       // adapter.lora.alpha, when an f32
  std::optional<uint64_t> rank;      // lora_b's ne0 (llama.cpp's rank), when all pairs agree
  uint64_t lora_pairs = 0;           // base tensors with both a lora_a and a lora_b
  std::string base_architecture;     // general.architecture
  uint64_t alora_tokens = 0;         // adapter.alora.invocation_tokens' items
  // imatrix
  std::optional<uint64_t> chunk_count, chunk_size;  // imatrix.chunk_count, chunk_size
  std::vector<std::string> datasets;                // imatrix.datasets
  uint64_t covered = 0;                             // tensors with an in_sum2 and a counts
  // mmproj
  std::string projector_type;  // clip.projector_type, else the modalities' own
  bool vision = false, audio = false;
  // vocab
  std::string tokenizer;  // tokenizer.ggml.model
  uint64_t tokens = 0;
  // model, mtp
  MtpFacts mtp;
};
RoleFacts role_facts(const Model& m);

}  // namespace ggufkit
