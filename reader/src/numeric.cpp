#include "ggufkit/numeric.h"

#include "ggufkit/byteorder.h"

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

namespace {

// One block of each quantized type to 32 or 256 floats, following ggml's
// dequantize_row_* reference code (block layouts from ggml-common.h).
void q4_1(const uint8_t* p, float* y) {
  float d = f16_to_f32(le16(p)), m = f16_to_f32(le16(p + 2));
  for (int j = 0; j < 16; ++j) {
    y[j] = d * (p[4 + j] & 0x0f) + m;
    y[j + 16] = d * (p[4 + j] >> 4) + m;
  }
}

void q5(const uint8_t* p, float* y, bool with_min) {
  float d = f16_to_f32(le16(p)), m = with_min ? f16_to_f32(le16(p + 2)) : 0.0f;
  const uint8_t* qhp = p + (with_min ? 4 : 2);
  uint32_t qh = qhp[0] | qhp[1] << 8 | qhp[2] << 16 | static_cast<uint32_t>(qhp[3]) << 24;
  const uint8_t* qs = qhp + 4;
  int offset = with_min ? 0 : 16;  // q5_0 is centred on 16, q5_1 has a minimum instead
  for (int j = 0; j < 16; ++j) {
    int x0 = (qs[j] & 0x0f) | (((qh >> j) << 4) & 0x10);
    int x1 = (qs[j] >> 4) | ((qh >> (j + 12)) & 0x10);
    y[j] = d * (x0 - offset) + m;
    y[j + 16] = d * (x1 - offset) + m;
  }
}

void q2_k(const uint8_t* p, float* y) {
  const uint8_t* scales = p;
  const uint8_t* q = p + 16;
  float d = f16_to_f32(le16(p + 80)), dmin = f16_to_f32(le16(p + 82));
  int is = 0;
  for (int n = 0; n < 256; n += 128, q += 32) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int half = 0; half < 2; ++half) {
        uint8_t sc = scales[is++];
        float dl = d * (sc & 0x0f), ml = dmin * (sc >> 4);
        for (int l = 0; l < 16; ++l) *y++ = dl * ((q[l + 16 * half] >> shift) & 3) - ml;
      }
    }
  }
}

void q3_k(const uint8_t* p, float* y) {
  const uint8_t* hm = p;
  const uint8_t* q = p + 32;
  float d_all = f16_to_f32(le16(p + 108));
  uint32_t aux[4];
  std::memcpy(aux, p + 96, 12);  // 16 six-bit scales packed in 12 bytes
  const uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f, tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
  aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
  aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
  aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
  int8_t scales[16];
  std::memcpy(scales, aux, 16);
  int is = 0;
  uint8_t m = 1;
  for (int n = 0; n < 256; n += 128, q += 32) {
    for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
      for (int half = 0; half < 2; ++half) {
        float dl = d_all * (scales[is++] - 32);
        for (int l = 0; l < 16; ++l) {
          int k = l + 16 * half;
          *y++ = dl * (((q[k] >> shift) & 3) - ((hm[k] & m) ? 0 : 4));
        }
      }
    }
  }
}

// The 6-bit scale and minimum j of a q4_K / q5_K block's 12 packed bytes.
void scale_min_k4(int j, const uint8_t* q, uint8_t* sc, uint8_t* mn) {
  if (j < 4) {
    *sc = q[j] & 63;
    *mn = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4));
    *mn = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

void q45_k(const uint8_t* p, float* y, bool five) {
  float d = f16_to_f32(le16(p)), dmin = f16_to_f32(le16(p + 2));
  const uint8_t* scales = p + 4;
  const uint8_t* qh = p + 16;
  const uint8_t* ql = p + (five ? 48 : 16);
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0, is = 0; j < 256; j += 64, ql += 32, is += 2, u1 <<= 2, u2 <<= 2) {
    uint8_t sc, mn;
    scale_min_k4(is, scales, &sc, &mn);
    float d1 = d * sc, m1 = dmin * mn;
    scale_min_k4(is + 1, scales, &sc, &mn);
    float d2 = d * sc, m2 = dmin * mn;
    for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0x0f) + (five && (qh[l] & u1) ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (five && (qh[l] & u2) ? 16 : 0)) - m2;
  }
}

void q6_k(const uint8_t* p, float* y) {
  const uint8_t* ql = p;
  const uint8_t* qh = p + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(p + 192);
  float d = f16_to_f32(le16(p + 208));
  for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      int is = l / 16;
      int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
      int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
      int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * sc[is] * q1;
      y[l + 32] = d * sc[is + 2] * q2;
      y[l + 64] = d * sc[is + 4] * q3;
      y[l + 96] = d * sc[is + 6] * q4;
    }
  }
}

using BlockFn = void (*)(const uint8_t*, float*);

BlockFn block_decoder(const std::string& name) {
  if (name == "f32") return [](const uint8_t* p, float* y) { std::memcpy(y, p, 4); };
  if (name == "f16") return [](const uint8_t* p, float* y) { *y = f16_to_f32(le16(p)); };
  if (name == "bf16") return [](const uint8_t* p, float* y) { *y = bf16_to_f32(le16(p)); };
  if (name == "q8_0")
    return [](const uint8_t* p, float* y) {
      float d = f16_to_f32(le16(p));
      for (int j = 0; j < 32; ++j) y[j] = d * static_cast<int8_t>(p[2 + j]);
    };
  if (name == "q4_0")
    return [](const uint8_t* p, float* y) {
      float d = f16_to_f32(le16(p));
      for (int j = 0; j < 16; ++j) {
        y[j] = d * ((p[2 + j] & 0x0f) - 8);
        y[j + 16] = d * ((p[2 + j] >> 4) - 8);
      }
    };
  if (name == "q4_1") return q4_1;
  if (name == "q5_0") return [](const uint8_t* p, float* y) { q5(p, y, false); };
  if (name == "q5_1") return [](const uint8_t* p, float* y) { q5(p, y, true); };
  if (name == "q2_K") return q2_k;
  if (name == "q3_K") return q3_k;
  if (name == "q4_K") return [](const uint8_t* p, float* y) { q45_k(p, y, false); };
  if (name == "q5_K") return [](const uint8_t* p, float* y) { q45_k(p, y, true); };
  if (name == "q6_K") return q6_k;
  return nullptr;
}

}  // namespace

bool can_decode(const GgmlType& type) { return block_decoder(type.name) != nullptr; }

std::optional<std::vector<float>> decode(const GgmlType& type, const uint8_t* p, uint64_t n, std::string* why,
                                         ByteOrder order) {
  BlockFn fn = block_decoder(type.name);
  if (!fn) {
    if (why) *why = std::string("decoding ") + type.name + " is not supported";
    return std::nullopt;
  }
  std::vector<uint8_t> swapped;
  if (order == ByteOrder::big) {  // the decoders read little-endian fields
    swapped.assign(p, p + n / type.block * type.size);
    swap_blocks(type, swapped.data(), n / type.block);
    p = swapped.data();
  }
  std::vector<float> out(n / type.block * type.block);
  for (uint64_t b = 0; b < n / type.block; ++b) fn(p + b * type.size, out.data() + b * type.block);
  return out;
}

std::vector<float> tensor_values(const Tensor& t, ByteOrder order) {
  const GgmlType* gt = ggml_type(t.type);
  std::string why;
  if (!gt || !can_decode(*gt))  // refused before a byte is read
    throw Error(Error::Kind::format, t.source ? t.source->name() : "", std::nullopt, "tensor " + t.name,
                "decoding " + ggml_type_name(t.type) + " is not supported" + (gt ? "" : ": ggufkit does not know the type's layout"));
  if (!t.source) throw Error(Error::Kind::format, "", std::nullopt, "tensor " + t.name, "the tensor has no data source");
  std::vector<uint8_t> bytes(t.nbytes());
  t.source->read_at(t.source_offset, bytes.data(), bytes.size());
  if (auto v = decode(*gt, bytes.data(), t.elements(), &why, order)) return *v;
  throw Error(Error::Kind::format, t.source->name(), t.source_offset, "tensor " + t.name, why);
}

}  // namespace ggufkit
