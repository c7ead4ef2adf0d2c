#include "ggufkit/encode.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ggufkit/error.h"
#include "ggufkit/numeric.h"

namespace ggufkit {

namespace {

void put_le(uint8_t* out, uint64_t v, int width, bool big) {
  for (int i = 0; i < width; ++i) out[big ? width - 1 - i : i] = static_cast<uint8_t>(v >> (8 * i));
}

// A double as a float without undefined behaviour: past the float range is infinity.
float to_float(double d) {
  if (d > std::numeric_limits<float>::max()) return std::numeric_limits<float>::infinity();
  if (d < -std::numeric_limits<float>::max()) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(d);
}

// A double as an integer of `width` bytes: truncated toward 0, saturated at the type's
// range, NaN as 0 (a fill can run past any range; a conversion must never be undefined).
uint64_t to_int(double d, int width) {
  const double lim = std::ldexp(1.0, 8 * width - 1);  // 2^(bits-1), exact in a double
  if (std::isnan(d)) return 0;
  int64_t v = d >= lim ? static_cast<int64_t>((static_cast<uint64_t>(1) << (8 * width - 1)) - 1)
              : d < -lim ? -static_cast<int64_t>(static_cast<uint64_t>(1) << (8 * width - 2)) * 2
                         : static_cast<int64_t>(d);
  return static_cast<uint64_t>(v);
}

void check_range(const ByteSource& s, uint64_t offset, size_t n) {
  if (offset > s.size() || n > s.size() - offset) {
    errno = 0;
    throw_io(s.name(), "read of " + std::to_string(n) + " bytes at " + std::to_string(offset) + " is past its " +
                           std::to_string(s.size()) + " bytes");
  }
}

}  // namespace

bool can_encode(const GgmlType& t) {
  static const char* kinds[] = {"f32", "f16", "bf16", "f64", "i8", "i16", "i32", "i64", "q8_0", "q4_0"};
  for (const char* k : kinds)
    if (std::strcmp(t.name, k) == 0) return true;
  return false;
}

void quantize_q8_0(const float* x, uint8_t* out) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d ? 1.0f / d : 0.0f;
  put_le(out, f32_to_f16(d), 2, false);
  for (int j = 0; j < 32; ++j) {
    // Within +-127 whenever x * id is finite. It is not for infinite input, or when 1 / d
    // overflows (subnormal input): ggml then converts inf or NaN to int8, undefined in C,
    // which gives 0 on the machines llama.cpp runs on; so does this, without the UB.
    float q = std::roundf(x[j] * id);
    out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::isfinite(q) ? std::clamp(q, -127.0f, 127.0f) : 0.0f));
  }
}

void quantize_q4_0(const float* x, uint8_t* out) {
  float amax = 0.0f, max = 0.0f;  // the value of largest magnitude, with its sign
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8.0f;
  const float id = d ? 1.0f / d : 0.0f;
  put_le(out, f32_to_f16(d), 2, false);
  // x * id + 8.5 lies in [0.5, 16.5] when finite; inf and NaN give 0, as in q8_0 above.
  auto nibble = [](float t) {
    t = std::isfinite(t) ? std::clamp(t, 0.0f, 16.5f) : 0.0f;
    return static_cast<uint8_t>(std::min<int>(15, static_cast<int8_t>(t)));
  };
  for (int j = 0; j < 16; ++j) {
    const uint8_t lo = nibble(x[j] * id + 8.5f);
    const uint8_t hi = nibble(x[16 + j] * id + 8.5f);
    out[2 + j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

void encode(const GgmlType& type, const double* v, uint64_t n, uint8_t* out, bool big) {
  const std::string name = type.name;
  if (name == "q8_0" || name == "q4_0") {
    float block[32];
    for (uint64_t b = 0; b < n / 32; ++b) {
      for (int j = 0; j < 32; ++j) block[j] = to_float(v[b * 32 + j]);
      if (name == "q8_0") quantize_q8_0(block, out + b * 34);
      else quantize_q4_0(block, out + b * 18);
    }
    return;
  }
  const int w = static_cast<int>(type.size);
  for (uint64_t i = 0; i < n; ++i, out += w) {
    uint64_t bits;
    if (name == "f32") {
      float f = to_float(v[i]);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      bits = u;
    } else if (name == "f64") {
      std::memcpy(&bits, &v[i], 8);
    } else if (name == "f16") {
      bits = f32_to_f16(to_float(v[i]));
    } else if (name == "bf16") {
      bits = f32_to_bf16(to_float(v[i]));
    } else {  // i8 ... i64
      bits = to_int(v[i], w);
    }
    put_le(out, bits, w, big);
  }
}

Tensor make_tensor(std::string name, const std::string& type, std::vector<uint64_t> dims,
                   const std::vector<double>& values) {
  Tensor t;
  t.name = std::move(name);
  t.dims = std::move(dims);
  const GgmlType* gt = ggml_type_by_name(type);
  if (!gt || !can_encode(*gt))
    throw Error(Error::Kind::format, "", std::nullopt, "tensor " + t.name, "cannot encode values to type '" + type + "'");
  t.type = gt->id;
  uint64_t n = t.nbytes();  // checks the shape against the type
  if (values.size() != t.elements())
    throw Error(Error::Kind::format, "", std::nullopt, "tensor " + t.name,
                std::to_string(values.size()) + " values for " + std::to_string(t.elements()) + " elements");
  std::vector<uint8_t> bytes(n);
  encode(*gt, values.data(), values.size(), bytes.data());
  t.source = from_bytes(t.name, std::move(bytes));
  return t;
}

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void GeneratedSource::read_at(uint64_t offset, void* dst, size_t n) const {
  check_range(*this, offset, n);
  fn_(offset, static_cast<uint8_t*>(dst), n);
}

std::shared_ptr<const ByteSource> encoded_source(std::string name, const GgmlType& type, uint64_t elements,
                                                 std::function<double(uint64_t)> f, bool big) {
  uint64_t size = elements / type.block * type.size;
  auto fn = [&type, size, f = std::move(f), big](uint64_t offset, uint8_t* out, size_t n) {
    // Whole runs of blocks at a time: encode into a buffer, copy the part asked for.
    const uint64_t per_run = std::max<uint64_t>(1, 4096 / type.block);
    std::vector<double> values(per_run * type.block);
    std::vector<uint8_t> bytes(per_run * type.size);
    while (n > 0) {
      uint64_t block = offset / type.size;
      uint64_t blocks = std::min<uint64_t>(per_run, size / type.size - block);
      for (uint64_t i = 0; i < blocks * type.block; ++i) values[i] = f(block * type.block + i);
      encode(type, values.data(), blocks * type.block, bytes.data(), big);
      uint64_t skip = offset - block * type.size;
      size_t k = static_cast<size_t>(std::min<uint64_t>(n, blocks * type.size - skip));
      std::memcpy(out, bytes.data() + skip, k);
      out += k;
      offset += k;
      n -= k;
    }
  };
  return std::make_shared<GeneratedSource>(std::move(name), size, std::move(fn));
}

std::shared_ptr<const ByteSource> random_bytes_source(std::string name, uint64_t size, uint64_t seed) {
  auto fn = [seed](uint64_t offset, uint8_t* out, size_t n) {
    while (n > 0) {  // byte k is byte k % 8 of the word mixed from the seed and k / 8
      uint64_t word = mix64(seed ^ mix64(offset / 8));
      unsigned skip = static_cast<unsigned>(offset % 8);
      size_t k = std::min<size_t>(n, 8 - skip);
      if (k == 8) {
        std::memcpy(out, &word, 8);  // little-endian host
      } else {
        for (size_t i = 0; i < k; ++i) out[i] = static_cast<uint8_t>(word >> (8 * (skip + i)));
      }
      out += k;
      offset += k;
      n -= k;
    }
  };
  return std::make_shared<GeneratedSource>(std::move(name), size, std::move(fn));
}

std::shared_ptr<const ByteSource> constant_source(std::string name, uint64_t size, uint8_t byte) {
  return std::make_shared<GeneratedSource>(std::move(name), size,
                                           [byte](uint64_t, uint8_t* out, size_t n) { std::memset(out, byte, n); });
}

namespace {
class HoleSource final : public ByteSource {
 public:
  HoleSource(std::string name, uint64_t size) : name_(std::move(name)), size_(size) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }
  void read_at(uint64_t offset, void* dst, size_t n) const override {
    check_range(*this, offset, n);
    std::memset(dst, 0, n);
  }
  Extent extent(uint64_t, uint64_t limit) const override { return {limit, true}; }

 private:
  std::string name_;
  uint64_t size_;
};
}  // namespace

std::shared_ptr<const ByteSource> hole_source(std::string name, uint64_t size) {
  return std::make_shared<HoleSource>(std::move(name), size);
}

}  // namespace ggufkit
