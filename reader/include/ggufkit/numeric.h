#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ggufkit/format.h"
#include "ggufkit/model.h"

namespace ggufkit {

// IEEE half and bfloat16, rounding to nearest even as ggml does.
uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);
float bf16_to_f32(uint16_t h);

// Whether decode() knows the type: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_K ... q6_K.
bool can_decode(const GgmlType& type);

// The values of `n` elements of a tensor of this type stored at `data` in the given byte
// order (every multi-byte field of a block, byteorder.h), or nullopt with the reason in
// *why for types it cannot decode.
std::optional<std::vector<float>> decode(const GgmlType& type, const uint8_t* data, uint64_t n,
                                         std::string* why = nullptr, ByteOrder order = ByteOrder::little);

// A tensor's values, read from its source (stored in `order`) and decoded. Throws a
// format Error for a type decode() does not know.
std::vector<float> tensor_values(const Tensor& tensor, ByteOrder order = ByteOrder::little);

}  // namespace ggufkit
