#include "ggufkit/numeric.h"

#include <cmath>
#include <cstring>

#include "ggufkit/error.h"

namespace ggufkit {

namespace {
uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
}  // namespace

uint16_t f32_to_f16(float f) {
  uint32_t x = bits_of(f);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t exp = (x >> 23) & 0xff, man = x & 0x7fffff;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  uint32_t half, rem, mid;
  if (e <= 0) {  // a half subnormal (or zero): the mantissa with its hidden bit, shifted
    if (e < -10) return static_cast<uint16_t>(sign);
    man |= 0x800000;
    int shift = 14 - e;
    half = man >> shift;
    rem = man & ((1u << shift) - 1);
    mid = 1u << (shift - 1);
  } else {
    half = (static_cast<uint32_t>(e) << 10) | (man >> 13);
    rem = man & 0x1fff;
    mid = 0x1000;
  }
  if (rem > mid || (rem == mid && (half & 1))) ++half;  // a carry into the exponent is right
  return static_cast<uint16_t>(sign | half);
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0) {
    float f = std::ldexp(static_cast<float>(man), -24);
    return sign ? -f : f;
  }
  if (exp == 31) return float_of(sign | 0x7f800000 | (man << 13));
  return float_of(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t f32_to_bf16(float f) {
  uint32_t u = bits_of(f);
  if ((u & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((u >> 16) | 64);  // NaN stays quiet NaN
  return static_cast<uint16_t>((u + (0x7fff + ((u >> 16) & 1))) >> 16);
}

float bf16_to_f32(uint16_t h) { return float_of(static_cast<uint32_t>(h) << 16); }

std::optional<std::vector<float>> decode(const GgmlType& type, const uint8_t* p, uint64_t n, std::string* why) {
  std::vector<float> out;
  out.reserve(n);
  const std::string name = type.name;
  if (name == "f32") {
    for (uint64_t i = 0; i < n; ++i) out.push_back(float_of(p[4 * i] | p[4 * i + 1] << 8 | p[4 * i + 2] << 16 |
                                                            static_cast<uint32_t>(p[4 * i + 3]) << 24));
  } else if (name == "f16") {
    for (uint64_t i = 0; i < n; ++i) out.push_back(f16_to_f32(le16(p + 2 * i)));
  } else if (name == "bf16") {
    for (uint64_t i = 0; i < n; ++i) out.push_back(bf16_to_f32(le16(p + 2 * i)));
  } else if (name == "q8_0") {  // f16 scale, 32 signed bytes
    for (uint64_t b = 0; b < n / 32; ++b, p += 34) {
      float d = f16_to_f32(le16(p));
      for (int j = 0; j < 32; ++j) out.push_back(d * static_cast<int8_t>(p[2 + j]));
    }
  } else if (name == "q4_0") {  // f16 scale, 16 bytes: element j low nibble, j + 16 high nibble
    for (uint64_t b = 0; b < n / 32; ++b, p += 18) {
      float d = f16_to_f32(le16(p));
      size_t base = out.size();
      out.resize(base + 32);
      for (int j = 0; j < 16; ++j) {
        out[base + j] = d * ((p[2 + j] & 0x0f) - 8);
        out[base + j + 16] = d * ((p[2 + j] >> 4) - 8);
      }
    }
  } else {
    if (why) *why = "decoding " + name + " is not supported";
    return std::nullopt;
  }
  return out;
}

std::vector<float> tensor_values(const Tensor& t) {
  const GgmlType* gt = ggml_type(t.type);
  std::string why = "unknown type";
  if (!t.source) throw Error(Error::Kind::format, "", std::nullopt, "tensor " + t.name, "the tensor has no data source");
  std::vector<uint8_t> bytes(t.nbytes());
  t.source->read_at(t.source_offset, bytes.data(), bytes.size());
  if (gt)
    if (auto v = decode(*gt, bytes.data(), t.elements(), &why)) return *v;
  throw Error(Error::Kind::format, t.source->name(), t.source_offset, "tensor " + t.name, why);
}

}  // namespace ggufkit
