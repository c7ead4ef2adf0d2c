#include "ggufkit/model.h"

#include <cstring>

#include "ggufkit/error.h"

namespace ggufkit {

Value Value::scalar(ValueType t, uint64_t bits) {
  Value v;
  v.type = t;
  v.bits = bits;
  return v;
}

Value Value::of_i64(int64_t x) { return scalar(ValueType::i64, static_cast<uint64_t>(x)); }

Value Value::of_f32(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return scalar(ValueType::f32, b);
}

Value Value::of_f64(double x) {
  uint64_t b;
  std::memcpy(&b, &x, 8);
  return scalar(ValueType::f64, b);
}

Value Value::of_string(std::string s) {
  Value v;
  v.type = ValueType::string;
  v.str = std::move(s);
  return v;
}

Value Value::array(ValueType elem, std::vector<Value> items) {
  Value v;
  v.type = ValueType::array;
  v.elem = elem;
  for (Value& item : items) {
    if (item.type != elem)
      throw Error(Error::Kind::format, "", std::nullopt, "array",
                  std::string("an item of type ") + value_type_name(item.type) + " in an array of " + value_type_name(elem));
    if (elem == ValueType::string) v.strs.push_back(std::move(item.str));
    else if (elem == ValueType::array) v.items.push_back(std::move(item));
    else v.nums.push_back(item.bits);
  }
  return v;
}

Value Value::strings(std::vector<std::string> items) {
  Value v;
  v.type = ValueType::array;
  v.elem = ValueType::string;
  v.strs = std::move(items);
  return v;
}

size_t Value::size() const {
  if (type != ValueType::array) return 0;
  return elem == ValueType::string ? strs.size() : elem == ValueType::array ? items.size() : nums.size();
}

Value Value::at(size_t i) const {
  if (elem == ValueType::string) return of_string(strs.at(i));
  if (elem == ValueType::array) return items.at(i);
  return scalar(elem, nums.at(i));
}

bool Value::is_integer() const {
  switch (type) {
    case ValueType::u8: case ValueType::i8: case ValueType::u16: case ValueType::i16:
    case ValueType::u32: case ValueType::i32: case ValueType::u64: case ValueType::i64:
      return true;
    default:
      return false;
  }
}

int64_t Value::as_i64() const {
  switch (type) {
    case ValueType::i8: return static_cast<int8_t>(bits);
    case ValueType::i16: return static_cast<int16_t>(bits);
    case ValueType::i32: return static_cast<int32_t>(bits);
    default: return static_cast<int64_t>(bits);
  }
}

uint64_t Value::as_u64() const { return is_signed(type) ? static_cast<uint64_t>(as_i64()) : bits; }

double Value::as_f64() const {
  if (type == ValueType::f32) {
    float f;
    uint32_t b = static_cast<uint32_t>(bits);
    std::memcpy(&f, &b, 4);
    return f;
  }
  if (type == ValueType::f64) {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  return is_signed(type) ? static_cast<double>(as_i64()) : static_cast<double>(bits);
}

uint64_t Tensor::elements() const {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;  // bounded: nbytes() refuses shapes that overflow
  return n;
}

uint64_t Tensor::nbytes() const {
  const GgmlType* t = ggml_type(type);
  std::string why = "type " + std::to_string(type) + " is not a ggml type";
  if (t) {
    if (auto n = tensor_nbytes(*t, dims, &why)) return *n;
  }
  throw Error(Error::Kind::format, "", std::nullopt, "tensor " + name, why);
}

const Value* Model::find(std::string_view key) const {
  for (const auto& kv : metadata)
    if (kv.key == key) return &kv.value;
  return nullptr;
}

Value* Model::find(std::string_view key) {
  return const_cast<Value*>(static_cast<const Model*>(this)->find(key));
}

uint32_t Model::alignment() const {
  const Value* v = find(kAlignmentKey);
  if (!v) return kDefaultAlignment;
  if (v->type != ValueType::u32)
    throw Error(Error::Kind::format, "", std::nullopt, kAlignmentKey,
                std::string("must be of type u32, found ") + value_type_name(v->type));
  if (!is_power_of_two(v->bits))
    throw Error(Error::Kind::format, "", std::nullopt, kAlignmentKey,
                std::to_string(v->bits) + " is not a power of two");
  return static_cast<uint32_t>(v->bits);
}

}  // namespace ggufkit
