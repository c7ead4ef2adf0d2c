#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ggufkit/format.h"
#include "ggufkit/model.h"
#include "ggufkit/source.h"

namespace ggufkit {

// Whether values can be encoded to this type: f32 f16 bf16 f64 i8 i16 i32 i64, and the
// quantized q8_0 and q4_0 (ggml's reference quantizers).
bool can_encode(const GgmlType& type);

// Encodes n values (a whole number of blocks) to the type's bytes, little-endian unless
// big_endian (not for quantized types). Integer types take the value truncated toward 0.
void encode(const GgmlType& type, const double* values, uint64_t n, uint8_t* out, bool big_endian = false);

// A tensor holding these values (one per element), encoded to the named type in memory.
// Throws a format Error for a type that cannot be encoded or a count that does not match.
Tensor make_tensor(std::string name, const std::string& type, std::vector<uint64_t> dims,
                   const std::vector<double>& values);

// One block of 32 values, as ggml's quantize_row_q8_0_ref / quantize_row_q4_0_ref.
void quantize_q8_0(const float* x, uint8_t* out);
void quantize_q4_0(const float* x, uint8_t* out);

// The 64-bit mix that makes seeded values from an index (splitmix64's finalizer).
uint64_t mix64(uint64_t x);

// Bytes made on demand by a function of (offset, destination, count), never held whole.
class GeneratedSource final : public ByteSource {
 public:
  using Fn = std::function<void(uint64_t offset, uint8_t* dst, size_t n)>;
  GeneratedSource(std::string name, uint64_t size, Fn fn) : name_(std::move(name)), size_(size), fn_(std::move(fn)) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }
  void read_at(uint64_t offset, void* dst, size_t n) const override;

 private:
  std::string name_;
  uint64_t size_;
  Fn fn_;
};

// A tensor whose element i has the value f(i), encoded block by block as it is read.
std::shared_ptr<const ByteSource> encoded_source(std::string name, const GgmlType& type, uint64_t elements,
                                                 std::function<double(uint64_t)> f, bool big_endian);
// Seeded random bytes: the same for the same seed and offset, in any order of reading.
std::shared_ptr<const ByteSource> random_bytes_source(std::string name, uint64_t size, uint64_t seed);
// The same byte, size times.
std::shared_ptr<const ByteSource> constant_source(std::string name, uint64_t size, uint8_t byte);
// size zeros that are one hole (ByteSource::extent): a replica's tensor data, which a file
// sink leaves unwritten.
std::shared_ptr<const ByteSource> hole_source(std::string name, uint64_t size);

}  // namespace ggufkit
