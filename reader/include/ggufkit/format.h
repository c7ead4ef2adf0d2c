// The GGUF format, written out (all integers in the file's byte order, little-endian
// unless the version word reads byte-swapped):
//
//   head     "GGUF"  u32 version  u64 tensor_count  u64 kv_count          24 bytes
//   kv       string key, u32 value type, value        (kv_count times, in file order)
//            string = u64 length + bytes (no terminator)
//            array  = u32 element type + u64 count + elements (may nest)
//   info     string name, u32 n_dims (<= 4), u64 dims[n_dims] (innermost first),
//            u32 ggml type, u64 offset (from the start of the data section)
//   padding  zeros up to general.alignment (u32, a power of two, default 32),
//            counted from the start of the file
//   data     each tensor's bytes, each padded to the alignment; a tensor's size
//            comes from its shape and type alone: ne0 / block * type_size * rows
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ggufkit {

enum class ValueType : uint8_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};
inline constexpr uint32_t kValueTypeCount = 13;

// Short names used everywhere a type is printed or parsed: u8 i8 ... f64 bool string array.
const char* value_type_name(ValueType t);
std::optional<ValueType> value_type_from_name(std::string_view name);
// Bytes of a fixed-width value; 0 for string and array.
uint32_t value_type_width(ValueType t);
bool is_signed(ValueType t);
bool is_float(ValueType t);

// One row of ggml's tensor type table (ggml.h enum ggml_type), or of ik_llama.cpp's, which
// adds its own types at ids mainline does not use.
struct GgmlType {
  uint32_t id;
  const char* name;     // ggml_type_name spelling: f32, q4_K, iq2_xxs, mxfp4, iq2_ks, ...
  uint32_t block;       // elements per block
  uint32_t size;        // bytes per block
  bool removed;         // the id once existed and is no longer loadable
  uint32_t row_meta = 0;  // ik_llama.cpp: bytes each row holds before its blocks (row scales)
  bool ik = false;        // ik_llama.cpp's own: mainline llama.cpp cannot load it
};
inline constexpr uint32_t kGgmlTypeCount = 43;  // GGML_TYPE_COUNT, after MXFP4 = 39, NVFP4, Q1_0, Q2_0

// nullptr for an id no table has (the reader keeps such a tensor as opaque bytes); removed
// ids return their row with removed = true; ik_llama.cpp's ids their row with ik = true.
const GgmlType* ggml_type(uint32_t id);
const GgmlType* ggml_type_by_name(std::string_view name);  // case-insensitive
// The name every report prints: "q4_K", or "type 1000" for an id no table has.
std::string ggml_type_name(uint32_t id);
// Every row of ik_llama.cpp's table, in id order.
std::span<const GgmlType> ik_llama_types();

inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxDims = 4;
inline constexpr uint64_t kMaxTensorName = 63;  // names must be shorter than 64 bytes
inline constexpr const char* kAlignmentKey = "general.alignment";
// tokenizer.chat_template and the named ones, tokenizer.chat_template.NAME.
inline bool is_template_key(std::string_view key) {
  return key == "tokenizer.chat_template" || key.starts_with("tokenizer.chat_template.");
}

inline bool is_power_of_two(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }
std::optional<uint64_t> checked_add(uint64_t a, uint64_t b);
std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b);
// The one rounding-up in the code base. nullopt when the result does not fit.
std::optional<uint64_t> align_up(uint64_t x, uint64_t alignment);
// Where the next tensor's data starts when it follows, packed as llama.cpp lays tensors
// out, one of `nbytes` at data offset `offset`: the end padded to the alignment; nullopt
// past 2^64. The one running sum: plan lays tensors by it, the scanner keeps an offset
// that is not it, validate refuses one llama.cpp would not find, split counts by it.
std::optional<uint64_t> packed_next(uint64_t offset, uint64_t nbytes, uint64_t alignment);

// Elements of a tensor of this shape, or nullopt with the reason in *why (a dim or the count
// past int64, as ggml keeps them): the check any shape gets, of a type known or not.
std::optional<uint64_t> element_count(std::span<const uint64_t> dims, std::string* why = nullptr);
// Bytes of a tensor of this type and shape, or nullopt with the reason in *why
// (ne0 not a multiple of the block, an element count or size that overflows).
std::optional<uint64_t> tensor_nbytes(const GgmlType& type, std::span<const uint64_t> dims,
                                      std::string* why = nullptr);

// Whether the bytes are UTF-8: no overlong form, surrogate or code point past U+10FFFF.
bool is_valid_utf8(std::string_view s);

}  // namespace ggufkit
