#pragma once
// The loader's tensor table (schemas/tensors.yaml) asked directly: what llama.cpp's
// load_tensors creates for a model, and the keys of the smallest model of an architecture
// (`ggufkit example --arch`). validate's rules over it are tensor_missing, tensor_shape,
// tensor_unexpected and tensors_unchecked (check.h).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ggufkit/model.h"

namespace ggufkit {

// One tensor the loader creates, with the shape it checks.
struct LoaderTensor {
  std::string name;
  std::vector<uint64_t> dims;  // innermost first; empty when a hyperparameter it needs is unknown
  bool optional = false;       // taken when there, not missed when not
  bool shaped = false;         // dims known
  bool instead = false;        // made only where another tensor is not (q, k, v where qkv is not fused)
  bool in_example = false;     // optional, but the graph needs it: the example writes it
};

// The layers an example is made of, at most (a table walk over a model without tensors).
inline constexpr uint32_t kMaxExampleLayers = 1024;

// The tensors llama.cpp's loader creates for `m` (its architecture, hyperparameters and,
// where one tensor stands for others, the tensors it has), in the loader's order; nullopt
// when the table has no entry for the architecture.
std::optional<std::vector<LoaderTensor>> loader_tensors(const Model& m);
// What the loader takes from `m`, in brief (show): the number of tensors it takes (its count
// check), and the optional tensors the file leaves out, each kind once (blk.N.attn_q.bias for
// every layer); nullopt when the table has no entry for the architecture.
struct LoaderSummary {
  size_t expected = 0;
  std::vector<std::string> left_out;
  bool tied_output = false;  // no output.weight: token_embd.weight stands in for it
};
std::optional<LoaderSummary> loader_summary(const Model& m);
// The keys llama.cpp's loader refuses a model of `arch` without (read with no default), in the
// table's order; nullopt for an architecture the table does not cover.
std::optional<std::vector<std::string>> required_keys(const std::string& arch);
// The architectures the table covers, sorted.
std::vector<std::string> tensor_table_architectures();

// A key of the smallest model of an architecture: its name, sketch type and value as YAML
// (an array's as a YAML list, its items' type in `items`).
struct ExampleKey {
  std::string key, type, value, items;
};
// Empty for an architecture the table does not cover.
std::vector<ExampleKey> example_keys(const std::string& arch);

}  // namespace ggufkit
