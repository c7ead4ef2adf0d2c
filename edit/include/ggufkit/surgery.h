#pragma once
// Tensor surgery: edits that move whole tensors, or whole slabs of a tensor's outermost
// dimension, so that they are exact at every quantization type and re-quantize nothing.
// A patch's `tensors:` (schemas/patch.md), `ggufkit edit --remove-tensor ...`, `ggufkit
// extract` and Python's edit(..., keep_layers=) all fill a TensorOps; the edit applies it
// after the patch's keys, in this order:
//
//   1. keep (extract): every tensor no glob matches is dropped
//   2. remove: the tensors a glob matches
//   3. rename: OLD=NEW, a name, a glob's wildcards carried across, or a regex with $1
//   4. layers: blk.N.* of the layers not kept dropped, the kept ones renumbered densely,
//      and the keys that describe layers fixed
//   5. experts: the stacked expert tensors (and the router's) sliced, expert_count fixed
//   6. graft: tensors of another file (or set) replacing same-named ones or added
//
// Names in each step are the names the step before left (a graft names the renumbered layers).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ggufkit/check.h"
#include "ggufkit/context.h"
#include "ggufkit/model.h"

namespace ggufkit {

struct Change;

struct TensorOps {
  std::vector<std::string> keep;    // globs: only the tensors one matches stay (extract)
  std::vector<std::string> remove;  // globs (* and ? as in the shell's, [...] too)
  std::vector<std::pair<std::string, std::string>> rename;  // OLD, NEW
  // "0-3,10": the layers (experts) kept, or removed; at most one of each pair.
  std::optional<std::string> keep_layers, remove_layers, keep_experts, remove_experts;
  struct Graft {
    std::string from;  // a file, or any shard of a set
    std::string glob;  // empty: every tensor of it
  };
  std::vector<Graft> graft;
  std::string from = "command line";  // where they were given, for errors

  bool empty() const {
    return keep.empty() && remove.empty() && rename.empty() && !keep_layers && !remove_layers && !keep_experts &&
           !remove_experts && graft.empty();
  }
};

// One tensor the surgery changed. dims and type are before and after (the same for a rename).
struct TensorChange {
  enum Kind { removed, renamed, sliced, added, replaced };
  Kind kind = removed;
  std::string name, to;  // to: a rename's new name
  std::vector<uint64_t> dims_before, dims_after;
  uint32_t type_before = 0, type_after = 0;
  std::string from;  // a graft's file
};

struct SurgeryResult {
  std::vector<TensorChange> tensors;
  std::vector<Change> keys;        // the keys fixed, before and after
  std::vector<Finding> unfixed;    // code surgery_key (error): a key it could not fix, or one that no longer fits
  bool moved = false;              // a tensor removed, sliced or added: the data is laid anew
};

// Applies `ops` to the model (a whole model: a set's as one). Throws a usage Error for what
// cannot be done at all (a glob that matches nothing, a layer past block_count, two tensors
// renamed to one name, a donor in another byte order); what can be written but would load
// wrongly or not at all comes back as findings, for the edit's gate.
SurgeryResult apply_tensor_ops(Model& model, const TensorOps& ops, const Context& ctx = {});

// "0-3,10" as sorted distinct numbers, each below `count` (a usage Error naming `what` otherwise).
std::vector<uint32_t> parse_ranges(const std::string& text, uint64_t count, const std::string& what);

}  // namespace ggufkit
