#include "ggufkit/format.h"

#include <array>
#include <cctype>
#include <limits>
#include <string>

namespace ggufkit {

namespace {

struct ValueTypeRow { const char* name; uint32_t width; };
constexpr std::array<ValueTypeRow, kValueTypeCount> kValueTypes{{
    {"u8", 1}, {"i8", 1}, {"u16", 2}, {"i16", 2}, {"u32", 4}, {"i32", 4}, {"f32", 4},
    {"bool", 1}, {"string", 0}, {"array", 0}, {"u64", 8}, {"i64", 8}, {"f64", 8},
}};

// Block sizes and bytes per block as in ggml's type traits and gguf-py's GGML_QUANT_SIZES.
constexpr std::array<GgmlType, kGgmlTypeCount> kGgmlTypes{{
    {0, "f32", 1, 4, false},        {1, "f16", 1, 2, false},
    {2, "q4_0", 32, 18, false},     {3, "q4_1", 32, 20, false},
    {4, "q4_2", 0, 0, true},        {5, "q4_3", 0, 0, true},
    {6, "q5_0", 32, 22, false},     {7, "q5_1", 32, 24, false},
    {8, "q8_0", 32, 34, false},     {9, "q8_1", 32, 36, false},
    {10, "q2_K", 256, 84, false},   {11, "q3_K", 256, 110, false},
    {12, "q4_K", 256, 144, false},  {13, "q5_K", 256, 176, false},
    {14, "q6_K", 256, 210, false},  {15, "q8_K", 256, 292, false},
    {16, "iq2_xxs", 256, 66, false}, {17, "iq2_xs", 256, 74, false},
    {18, "iq3_xxs", 256, 98, false}, {19, "iq1_s", 256, 50, false},
    {20, "iq4_nl", 32, 18, false},  {21, "iq3_s", 256, 110, false},
    {22, "iq2_s", 256, 82, false},  {23, "iq4_xs", 256, 136, false},
    {24, "i8", 1, 1, false},        {25, "i16", 1, 2, false},
    {26, "i32", 1, 4, false},       {27, "i64", 1, 8, false},
    {28, "f64", 1, 8, false},       {29, "iq1_m", 256, 56, false},
    {30, "bf16", 1, 2, false},      {31, "q4_0_4_4", 0, 0, true},
    {32, "q4_0_4_8", 0, 0, true},   {33, "q4_0_8_8", 0, 0, true},
    {34, "tq1_0", 256, 54, false},  {35, "tq2_0", 256, 66, false},
    {36, "iq4_nl_4_4", 0, 0, true}, {37, "iq4_nl_4_8", 0, 0, true},
    {38, "iq4_nl_8_8", 0, 0, true}, {39, "mxfp4", 32, 17, false},
    {40, "nvfp4", 64, 36, false},   {41, "q1_0", 128, 18, false},
    {42, "q2_0", 64, 18, false},
}};

// ik_llama.cpp's own types (its ggml.h enum, ggml.c type traits and ggml-common.h blocks):
// id, name, elements and bytes per block, bytes of row scales before each row. Only ids
// mainline does not use: at 31-33, 36 and 41 mainline's meaning wins (ik's q4_0_4x4 rows
// and q1_0_g128 are byte-identical there; its i2_s at 36 reads as opaque). The _r4/_r8/_r16
// types interleave 4, 8 or 16 rows at the same bytes per row as their base type. Left out:
// q8_K32 (148) and q8_KR8 (149), activation types of its matrix products that no file
// stores, whose sizes the sources do not make plain; a tensor of them reads as opaque.
constexpr std::array<GgmlType, 53> kIkTypes{{
    {97, "q8_0_x4", 32, 34, false, 0, true},
    {98, "q8_1_x4", 32, 36, false, 0, true},
    {99, "q8_2_x4", 32, 36, false, 0, true},
    {133, "q6_0", 32, 26, false, 0, true},
    {134, "iq1_bn", 64, 13, false, 2, true},
    {135, "iq2_bn", 64, 16, false, 4, true},
    {136, "q8_K64", 64, 68, false, 0, true},
    {137, "iq2_k", 256, 76, false, 0, true},
    {138, "iq3_k", 256, 110, false, 0, true},
    {139, "iq4_k", 256, 144, false, 0, true},
    {140, "iq5_k", 256, 176, false, 0, true},
    {141, "iq6_k", 256, 212, false, 0, true},
    {144, "iq4_ks", 256, 136, false, 4, true},
    {145, "iq2_ks", 256, 70, false, 2, true},
    {146, "iq4_kss", 256, 128, false, 4, true},
    {147, "q8_K16", 64, 64, false, 20, true},
    {150, "q8_K128", 128, 140, false, 0, true},
    {151, "q8_KV", 32, 32, false, 8, true},
    {152, "iq5_ks", 256, 168, false, 4, true},
    {153, "iq2_kt", 256, 68, false, 4, true},
    {154, "iq3_kt", 256, 100, false, 4, true},
    {155, "iq4_kt", 256, 128, false, 4, true},
    {156, "iq3_ks", 256, 102, false, 2, true},
    {157, "iq2_kl", 256, 86, false, 2, true},
    {158, "iq1_kt", 256, 56, false, 4, true},
    {202, "q4_0_r8", 32, 18, false, 0, true},
    {206, "q5_0_r4", 32, 22, false, 0, true},
    {208, "q8_0_r8", 32, 34, false, 0, true},
    {210, "q2_k_r4", 256, 84, false, 0, true},
    {211, "q3_k_r4", 256, 110, false, 0, true},
    {212, "q4_k_r4", 256, 144, false, 0, true},
    {213, "q5_k_r4", 256, 176, false, 0, true},
    {214, "q6_k_r4", 256, 210, false, 0, true},
    {216, "iq2_xxs_r4", 256, 66, false, 0, true},
    {217, "iq2_xs_r4", 256, 74, false, 0, true},
    {218, "iq3_xxs_r4", 256, 98, false, 0, true},
    {219, "iq1_s_r4", 32, 6, false, 2, true},
    {220, "iq4_nl_r4", 32, 18, false, 0, true},
    {221, "iq3_s_r4", 256, 110, false, 0, true},
    {222, "iq2_s_r4", 256, 82, false, 0, true},
    {223, "iq4_xs_r8", 256, 136, false, 0, true},
    {229, "iq1_m_r4", 32, 7, false, 2, true},
    {230, "bf16_r16", 1, 2, false, 0, true},
    {233, "q6_0_r4", 32, 26, false, 0, true},
    {335, "iq2_bn_r4", 64, 16, false, 4, true},
    {337, "iq2_k_r4", 256, 76, false, 0, true},
    {338, "iq3_k_r4", 256, 110, false, 0, true},
    {339, "iq4_k_r4", 256, 144, false, 0, true},
    {340, "iq5_k_r4", 256, 176, false, 0, true},
    {344, "iq4_ks_r4", 256, 136, false, 4, true},
    {352, "iq5_ks_r4", 256, 168, false, 4, true},
    {398, "q8_KV_r8", 32, 32, false, 4, true},
    {399, "q8_k_r8", 256, 258, false, 0, true},
}};

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

}  // namespace

const char* value_type_name(ValueType t) {
  auto i = static_cast<uint32_t>(t);
  return i < kValueTypeCount ? kValueTypes[i].name : "unknown";
}

std::optional<ValueType> value_type_from_name(std::string_view name) {
  for (uint32_t i = 0; i < kValueTypeCount; ++i)
    if (name == kValueTypes[i].name) return static_cast<ValueType>(i);
  return std::nullopt;
}

uint32_t value_type_width(ValueType t) {
  auto i = static_cast<uint32_t>(t);
  return i < kValueTypeCount ? kValueTypes[i].width : 0;
}

bool is_signed(ValueType t) {
  return t == ValueType::i8 || t == ValueType::i16 || t == ValueType::i32 || t == ValueType::i64;
}

bool is_float(ValueType t) { return t == ValueType::f32 || t == ValueType::f64; }

const GgmlType* ggml_type(uint32_t id) {
  if (id < kGgmlTypeCount) return &kGgmlTypes[id];
  for (const auto& t : kIkTypes)
    if (t.id == id) return &t;
  return nullptr;
}

const GgmlType* ggml_type_by_name(std::string_view name) {
  for (const auto& t : kGgmlTypes)
    if (iequal(name, t.name)) return &t;
  for (const auto& t : kIkTypes)
    if (iequal(name, t.name)) return &t;
  return nullptr;
}

std::string ggml_type_name(uint32_t id) {
  const GgmlType* t = ggml_type(id);
  return t ? std::string(t->name) : "type " + std::to_string(id);
}

std::span<const GgmlType> ik_llama_types() { return kIkTypes; }

std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<uint64_t> align_up(uint64_t x, uint64_t alignment) {
  if (alignment == 0) return std::nullopt;
  uint64_t rem = x % alignment;
  if (rem == 0) return x;
  return checked_add(x, alignment - rem);
}

std::optional<uint64_t> element_count(std::span<const uint64_t> dims, std::string* why) {
  auto fail = [&](std::string msg) -> std::optional<uint64_t> {
    if (why) *why = std::move(msg);
    return std::nullopt;
  };
  // ggml keeps element counts in int64_t, so the count must stay below INT64_MAX.
  uint64_t elements = 1;
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return fail("dim " + std::to_string(i) + " = " + std::to_string(dims[i]) + " does not fit in int64");
  for (uint64_t d : dims) {
    auto e = checked_mul(elements, d);
    if (!e || *e >= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return fail("the element count overflows 63 bits");
    elements = *e;
  }
  return elements;
}

std::optional<uint64_t> tensor_nbytes(const GgmlType& type, std::span<const uint64_t> dims,
                                      std::string* why) {
  auto fail = [&](std::string msg) -> std::optional<uint64_t> {
    if (why) *why = std::move(msg);
    return std::nullopt;
  };
  if (type.removed || type.block == 0)
    return fail(std::string("type ") + type.name + " was removed from ggml and has no size");
  uint64_t ne0 = dims.empty() ? 1 : dims[0];
  if (ne0 % type.block != 0)
    return fail("ne0 = " + std::to_string(ne0) + " is not a multiple of the " + type.name +
                " block of " + std::to_string(type.block));
  auto count = element_count(dims, why);
  if (!count) return std::nullopt;
  const uint64_t elements = *count;
  // ik_llama.cpp's row-scaled types hold row_meta bytes before each row's blocks.
  auto row = checked_mul(ne0 / type.block, type.size);
  if (row) row = checked_add(*row, type.row_meta);
  auto bytes = ne0 == 0 ? std::optional<uint64_t>(0) : row ? checked_mul(elements / ne0, *row) : std::nullopt;
  if (!bytes || *bytes >= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return fail("the size in bytes overflows 63 bits");
  return bytes;
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  while (i < s.size()) {
    unsigned char c = b(i);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1f) : n == 3 ? (c & 0x0f) : (c & 0x07);
    for (size_t k = 1; k < n; ++k) {
      if ((b(i + k) & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (b(i + k) & 0x3f);
    }
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n;
  }
  return true;
}

std::optional<uint64_t> packed_next(uint64_t offset, uint64_t nbytes, uint64_t alignment) {
  auto end = checked_add(offset, nbytes);
  return end ? align_up(*end, alignment) : std::nullopt;
}

}  // namespace ggufkit
