#pragma once
// Tensor data in either byte order: the multi-byte fields of each ggml block, as
// ggml-common.h lays the blocks out (scales as f16, q8_K's f32 scale and i16 sums, the
// u16 grids of iq2/iq1_s), so a block can be turned to the other byte order field by
// field while byte arrays stay as they are.
#include <cstdint>
#include <string>

#include "ggufkit/format.h"
#include "ggufkit/source.h"

namespace ggufkit {

// Whether the block layout of the type is known, so its data can change byte order.
bool can_swap(const GgmlType& type);
// Turns `n_blocks` whole blocks at `data` to the other byte order, in place. The type
// must be one can_swap() knows.
void swap_blocks(const GgmlType& type, uint8_t* data, uint64_t n_blocks);
// The types can_swap() knows, for messages: "f32, f16, ...".
std::string swappable_types();

// A tensor's bytes in the other byte order: reads from `inner` and turns each whole block
// (counted from `base`, where the tensor starts) over. Any range may be read.
class SwappedSource final : public ByteSource {
 public:
  SwappedSource(const ByteSource& inner, const GgmlType& type, uint64_t base) : inner_(inner), type_(type), base_(base) {}
  const std::string& name() const override { return inner_.name(); }
  uint64_t size() const override { return inner_.size(); }
  void read_at(uint64_t offset, void* dst, size_t n) const override;
  // The inner source's holes, in whole blocks: a block of zeros turned over is zeros, one
  // only partly in a hole is data.
  Extent extent(uint64_t offset, uint64_t limit) const override;

 private:
  const ByteSource& inner_;
  const GgmlType& type_;
  uint64_t base_;
};

}  // namespace ggufkit
