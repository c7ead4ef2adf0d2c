#pragma once
// The loader's tensor table (schemas/tensors.yaml), for the validator: the tensors llama.cpp's
// load_tensors creates for the model's architecture, their shapes over the hyperparameters,
// and what it makes of the file's (tensor_missing, tensor_shape, tensor_unexpected), or, for
// an architecture the table does not cover, one tensors_unchecked note. Findings are about
// tensors, without offsets: the validator places them.
#include <optional>
#include <vector>

#include "ggufkit/check.h"

namespace ggufkit {
// A finding and the index of the file's tensor it is about (none for a missing one).
struct TensorFinding {
  Finding finding;
  std::optional<size_t> tensor;
};
// For a model (its role is the validator's business): the findings in the loader's order,
// so the first error is the tensor llama.cpp's load stops at.
std::vector<TensorFinding> tensor_rules(const Model& m);
}  // namespace ggufkit
