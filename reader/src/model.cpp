#include "ggufkit/model.h"

#include <stdexcept>
#include <algorithm>

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
  if (elem != ValueType::string && elem != ValueType::array) v.nums = NumberList(value_type_width(elem));
  for (Value& item : items) {
    if (item.type != elem)
      throw Error(Error::Kind::format, "", std::nullopt, "array",
                  std::string("an item of type ") + value_type_name(item.type) + " in an array of " + value_type_name(elem));
    if (elem == ValueType::string) v.strs.push_back(item.str);
    else if (elem == ValueType::array) v.items.push_back(item);
    else v.nums.push_back(item.bits);
  }
  return v;
}

namespace {

// A number of `width` bytes at p, big-endian when `big`.
uint64_t load(const uint8_t* p, unsigned width, bool big) {
  uint64_t b = 0;
  std::memcpy(&b, p, width);  // little-endian hosts only, as the rest
  return big ? __builtin_bswap64(b) >> (64 - 8 * width) : b;
}

const uint8_t* skip_array(const uint8_t* p, bool big);

// The string at p: its u64 length, then its bytes (a key, a tensor's name).
std::string_view string_at(const uint8_t* p, bool big) {
  return {reinterpret_cast<const char*>(p + 8), static_cast<size_t>(load(p, 8, big))};
}

// How many bytes `count` items of type `elem` at p take; the reader checked them.
size_t body_bytes(const uint8_t* p, ValueType elem, uint64_t count, bool big) {
  const uint8_t* q = p;
  if (elem == ValueType::string) {
    for (uint64_t i = 0; i < count; ++i) q += 8 + load(q, 8, big);
  } else if (elem == ValueType::array) {
    for (uint64_t i = 0; i < count; ++i) q = skip_array(q, big);
  } else {
    return static_cast<size_t>(count * value_type_width(elem));
  }
  return static_cast<size_t>(q - p);
}

// Past the array at p: its element type, count and items.
const uint8_t* skip_array(const uint8_t* p, bool big) {
  return p + 12 + body_bytes(p + 12, static_cast<ValueType>(load(p, 4, big)), load(p + 4, 8, big), big);
}

// The array at p as a Value whose lists view the bytes `keep` holds; `known`, its items'
// bytes when they are known.
Value array_at(const uint8_t* p, bool big, const std::shared_ptr<const void>& keep, std::optional<uint64_t> known = {}) {
  Value v;
  v.type = ValueType::array;
  v.elem = static_cast<ValueType>(load(p, 4, big));
  uint64_t n = load(p + 4, 8, big);
  p += 12;
  size_t bytes = known ? static_cast<size_t>(*known) : body_bytes(p, v.elem, n, big);
  if (v.elem == ValueType::string) v.strs = StringList::view(keep, p, bytes, static_cast<size_t>(n), big);
  else if (v.elem == ValueType::array) v.items = ValueList::view(keep, p, bytes, static_cast<size_t>(n), big);
  else v.nums = NumberList::view(keep, p, static_cast<size_t>(n), value_type_width(v.elem), big);
  return v;
}

void put(std::string& out, uint64_t bits, unsigned width) {
  out.append(reinterpret_cast<const char*>(&bits), width);  // little-endian hosts only, as the rest
}

// Appends the array v as a little-endian file lays it out.
void append_array(std::string& out, const Value& v) {
  put(out, static_cast<uint32_t>(v.elem), 4);
  put(out, v.size(), 8);
  if (v.elem == ValueType::string && v.strs.big()) {
    for (std::string_view s : v.strs) put(out, s.size(), 8), out.append(s);
  } else if (v.elem == ValueType::string) {
    out.append(v.strs.region());
  } else if (v.elem == ValueType::array && v.items.big()) {
    for (const Value item : v.items) append_array(out, item);
  } else if (v.elem == ValueType::array) {
    out.append(v.items.region());
  } else if (v.nums.big()) {
    for (size_t i = 0; i < v.nums.size(); ++i) put(out, v.nums[i], v.nums.width());
  } else {
    out.append(v.nums.region());
  }
}

// The value of type t at p, its lists viewing the bytes `keep` holds.
Value value_at(const uint8_t* p, ValueType t, bool big, const std::shared_ptr<const void>& keep, std::optional<uint64_t> known) {
  if (t == ValueType::string) return Value::of_string(std::string(string_at(p, big)));
  if (t == ValueType::array) return array_at(p, big, keep, known);
  return Value::scalar(t, load(p, value_type_width(t), big));
}

}  // namespace

Metadata::Metadata(std::initializer_list<KV> kvs) {
  for (const KV& kv : kvs) push_back(kv);
}

std::string_view Metadata::key(size_t i) const {
  if (at_[i] & kOwned) return owned_[at_[i] & ~kOwned].key;
  return string_at(base_ + at_[i], big_);
}

const KV Metadata::operator[](size_t i) const {
  if (at_[i] & kOwned) return owned_[at_[i] & ~kOwned];
  KV kv;
  kv.key = key(i);
  const uint8_t* p = base_ + type_at(at_[i], kv.key);
  auto known = items_at_.find(at_[i]);
  kv.value = value_at(p + 4, static_cast<ValueType>(load(p, 4, big_)), big_, keep_,
                      known == items_at_.end() ? std::nullopt : std::optional<uint64_t>(known->second));
  return kv;
}

const KV& Metadata::ref(size_t i) const {
  if (!(at_[i] & kOwned)) {
    owned_.push_back((*this)[i]);
    read_at_[owned_.size() - 1] = at_[i];
    at_[i] = kOwned | (owned_.size() - 1);
  }
  return owned_[at_[i] & ~kOwned];
}

std::optional<uint64_t> Metadata::value_offset(size_t i) const {
  auto at = offset(i);
  if (!at) return std::nullopt;
  return type_at(*at, key(i)) + 4;
}

std::optional<uint64_t> Metadata::offset(size_t i) const {
  if (!as_read_ || !base_) return std::nullopt;
  if (!(at_[i] & kOwned)) return at_[i];
  auto it = read_at_.find(at_[i] & ~kOwned);  // found by key since
  return it == read_at_.end() ? std::nullopt : std::optional<uint64_t>(it->second);
}

void Metadata::push_back(KV kv) {
  as_read_ = false;
  owned_.push_back(std::move(kv));
  at_.push_back(kOwned | (owned_.size() - 1));
}

void Metadata::set(size_t i, KV kv) { edit(i) = std::move(kv); }

void Metadata::erase(size_t i) {
  as_read_ = false;
  at_.erase(at_.begin() + static_cast<std::ptrdiff_t>(i));  // an owned KV stays till clear()
}

void Metadata::clear() {
  at_.clear();
  owned_.clear();
  read_at_.clear();
  items_at_.clear();
}

bool Metadata::operator==(const Metadata& o) const {
  if (size() != o.size()) return false;
  for (size_t i = 0; i < size(); ++i)
    if (key(i) != o.key(i) || !((*this)[i] == o[i])) return false;
  return true;
}

std::vector<uint64_t> Metadata::sorted_by_key() const {
  return detail::sorted_by(size(), [&](uint64_t i) { return key(i); });
}

std::optional<size_t> Metadata::index_of(std::string_view k, const std::vector<uint64_t>& sorted) const {
  auto it = std::lower_bound(sorted.begin(), sorted.end(), k, [&](uint64_t i, std::string_view x) { return key(i) < x; });
  if (it == sorted.end() || key(*it) != k) return std::nullopt;
  return *it;
}

void Metadata::view(std::shared_ptr<const void> keep, const uint8_t* base, bool big) {
  keep_ = std::move(keep);
  base_ = base;
  big_ = big;
}

std::string_view TensorList::name(size_t i) const {
  if (at_[i] & kOwned) return owned_[at_[i] & ~kOwned].name;
  return string_at(base_ + (at_[i] & ~kGap), big_);
}

const Tensor TensorList::operator[](size_t i) const {
  if (at_[i] & kOwned) return owned_[at_[i] & ~kOwned];
  Tensor t;
  t.name = name(i);
  const uint8_t* p = base_ + (at_[i] & ~kGap) + 8 + t.name.size();  // the record: name, n_dims, dims, type, offset
  uint64_t n_dims = load(p, 4, big_);
  p += 4;
  for (uint64_t d = 0; d < n_dims; ++d, p += 8) t.dims.push_back(load(p, 8, big_));
  t.type = static_cast<uint32_t>(load(p, 4, big_));
  t.source = source_;
  const uint64_t offset = load(p + 4, 8, big_);
  t.source_offset = data_offset_ + offset;
  if (at_[i] & kGap) t.offset = offset;
  if (!opaque_.empty()) {
    auto o = std::lower_bound(opaque_.begin(), opaque_.end(), std::pair<size_t, uint64_t>{i, 0});
    if (o != opaque_.end() && o->first == i) t.opaque_bytes = o->second;
  }
  return t;
}

void TensorList::set_opaque(size_t i, uint64_t bytes) {
  if (at_[i] & kOwned) owned_[at_[i] & ~kOwned].opaque_bytes = bytes;
  else {
    auto o = std::lower_bound(opaque_.begin(), opaque_.end(), std::pair<size_t, uint64_t>{i, 0});
    if (o != opaque_.end() && o->first == i) o->second = bytes;
    else opaque_.insert(o, {i, bytes});
  }
}

void TensorList::keep_offset(size_t i, uint64_t offset) {
  if (at_[i] & kOwned) owned_[at_[i] & ~kOwned].offset = offset;
  else at_[i] |= kGap;
}

Tensor& TensorList::edit(size_t i) {
  if (!(at_[i] & kOwned)) {
    owned_.push_back((*this)[i]);
    at_[i] = kOwned | (owned_.size() - 1);
  }
  return owned_[at_[i] & ~kOwned];
}

void TensorList::push_back(Tensor t) {
  owned_.push_back(std::move(t));
  at_.push_back(kOwned | (owned_.size() - 1));
}

void TensorList::clear() {
  at_.clear();
  owned_.clear();
  opaque_.clear();
}

void TensorList::pack() {
  for (uint64_t& at : at_)
    if (!(at & kOwned)) at &= ~kGap;
  for (Tensor& t : owned_) t.offset.reset();
}

void TensorList::view(std::shared_ptr<const void> keep, const uint8_t* base, bool big) {
  keep_ = std::move(keep);
  base_ = base;
  big_ = big;
}

void TensorList::place(std::shared_ptr<const ByteSource> source, uint64_t data_offset) {
  source_ = std::move(source);
  data_offset_ = data_offset;
}

void ValueList::push_back(const Value& v) {
  if (v.type != ValueType::array) throw std::logic_error("an item that is not an array in an array of arrays");
  if (!buf_ || buf_.use_count() > 1) {  // a view, or bytes shared with a copy or an item: ours first
    auto mine = std::make_shared<std::string>();
    if (buf_) *mine = *buf_;
    else for (const Value item : *this) append_array(*mine, item);
    buf_ = std::move(mine);
    keep_.reset();
    big_ = false;
  }
  append_array(*buf_, v);
  data_ = reinterpret_cast<const uint8_t*>(buf_->data());
  bytes_ = buf_->size();
  ++count_;
}

Value ValueList::at(size_t i) const {
  if (i >= count_) throw std::out_of_range("item " + std::to_string(i) + " of " + std::to_string(count_));
  auto it = begin();
  for (; i > 0; --i) ++it;
  return *it;
}

Value ValueList::operator[](size_t i) const { return at(i); }

Value ValueList::iterator::operator*() const { return array_at(p_, l_->big_, l_->keep()); }

ValueList::iterator& ValueList::iterator::operator++() {
  p_ = skip_array(p_, l_->big_);
  return *this;
}

bool ValueList::operator==(const ValueList& o) const {
  if (count_ != o.count_) return false;
  if (big_ == o.big_) return bytes_ == o.bytes_ && (bytes_ == 0 || std::memcmp(data_, o.data_, bytes_) == 0);
  return std::equal(begin(), end(), o.begin(), o.end());
}

uint64_t StringList::iterator::length() const {
  uint64_t n;
  std::memcpy(&n, p_, 8);
  return big_ ? __builtin_bswap64(n) : n;
}

StringList::StringList(const std::vector<std::string>& items) {
  for (const auto& s : items) push_back(s);
}

StringList& StringList::operator=(const StringList& o) {
  if (this == &o) return *this;
  keep_ = o.keep_;
  owned_ = o.owned_;
  data_ = keep_ ? o.data_ : reinterpret_cast<const uint8_t*>(owned_.data());
  bytes_ = o.bytes_;
  count_ = o.count_;
  big_ = o.big_;
  index_.clear();
  return *this;
}

StringList& StringList::operator=(StringList&& o) noexcept {
  keep_ = std::move(o.keep_);
  owned_ = std::move(o.owned_);
  data_ = keep_ ? o.data_ : reinterpret_cast<const uint8_t*>(owned_.data());
  bytes_ = o.bytes_;
  count_ = o.count_;
  big_ = o.big_;
  index_ = std::move(o.index_);
  o.keep_.reset();
  o.owned_.clear();
  o.data_ = reinterpret_cast<const uint8_t*>(o.owned_.data());
  o.bytes_ = o.count_ = 0;
  o.index_.clear();
  return *this;
}

void StringList::own() {
  if (!keep_) return;
  std::string region;
  region.reserve(bytes_);
  for (std::string_view s : *this) {
    uint64_t n = s.size();
    region.append(reinterpret_cast<const char*>(&n), 8);  // little-endian hosts only, as the rest
    region.append(s);
  }
  owned_ = std::move(region);
  keep_.reset();
  big_ = false;
  data_ = reinterpret_cast<const uint8_t*>(owned_.data());
  index_.clear();
}

void StringList::push_back(std::string_view s) {
  own();
  uint64_t n = s.size();
  owned_.append(reinterpret_cast<const char*>(&n), 8);
  owned_.append(s);
  data_ = reinterpret_cast<const uint8_t*>(owned_.data());
  bytes_ = owned_.size();
  ++count_;
  index_.clear();
}

// Where every 64th item starts, made on the first read by number; a read walks at most 63
// items on from there. (An offset for every item would be 2 MB of index, written page by
// page, for a 262,144-token vocabulary read by number a few times.)
constexpr size_t kIndexStride = 64;
std::string_view StringList::operator[](size_t i) const {
  if (const size_t marks = (count_ + kIndexStride - 1) / kIndexStride; index_.size() != marks) {
    index_.clear();
    index_.reserve(marks);
    size_t k = 0;
    for (auto it = begin(); it != end(); ++it, ++k)
      if (k % kIndexStride == 0) index_.push_back(static_cast<size_t>((*it).data() - 8 - reinterpret_cast<const char*>(data_)));
  }
  iterator it(data_ + index_[i / kIndexStride], big_);
  for (size_t k = i % kIndexStride; k; --k) ++it;
  return *it;
}

std::string_view StringList::at(size_t i) const {
  if (i >= size()) throw std::out_of_range("string " + std::to_string(i) + " of " + std::to_string(size()));
  return (*this)[i];
}

bool StringList::operator==(const StringList& o) const {
  if (count_ != o.count_) return false;
  if (big_ == o.big_ && bytes_ == o.bytes_) return bytes_ == 0 || std::memcmp(data_, o.data_, bytes_) == 0;  // an empty list has no data
  return std::equal(begin(), end(), o.begin(), o.end());
}

bool StringList::operator==(const std::vector<std::string>& v) const {
  return v.size() == count_ && std::equal(begin(), end(), v.begin(), v.end());
}

NumberList NumberList::view(std::shared_ptr<const void> keep, const uint8_t* data, size_t count, unsigned width, bool big) {
  NumberList l(width);
  l.keep_ = std::move(keep);
  l.view_ = data;
  l.count_ = count;
  l.big_ = big;
  return l;
}

void NumberList::push_back(uint64_t bits) {
  if (width_ == 0 || width_ > 8) throw std::logic_error("a number list without an item width");
  if (keep_) {  // a view becomes a list of its own first
    std::string mine;
    mine.reserve((count_ + 1) * width_);
    for (size_t i = 0; i < count_; ++i) {
      uint64_t b = (*this)[i];
      mine.append(reinterpret_cast<const char*>(&b), width_);  // little-endian hosts only, as the rest
    }
    owned_ = std::move(mine);
    keep_.reset();
    view_ = nullptr;
    big_ = false;
  }
  owned_.append(reinterpret_cast<const char*>(&bits), width_);
  ++count_;
}

uint64_t NumberList::operator[](size_t i) const {
  uint64_t b = 0;
  std::memcpy(&b, data() + i * width_, width_);
  if (big_) b = __builtin_bswap64(b) >> (64 - 8 * width_);
  return b;
}

uint64_t NumberList::at(size_t i) const {
  if (i >= count_) throw std::out_of_range("item " + std::to_string(i) + " of " + std::to_string(count_));
  return (*this)[i];
}

bool NumberList::operator==(const NumberList& o) const {
  if (count_ != o.count_ || width_ != o.width_) return count_ == 0 && o.count_ == 0;
  if (big_ == o.big_) return count_ == 0 || std::memcmp(data(), o.data(), count_ * width_) == 0;
  for (size_t i = 0; i < count_; ++i)
    if ((*this)[i] != o[i]) return false;
  return true;
}

bool NumberList::operator==(const std::vector<uint64_t>& v) const {
  if (v.size() != count_) return false;
  for (size_t i = 0; i < count_; ++i)
    if ((*this)[i] != v[i]) return false;
  return true;
}

Value Value::strings(std::vector<std::string> items) {
  Value v;
  v.type = ValueType::array;
  v.elem = ValueType::string;
  v.strs = StringList(items);
  return v;
}

size_t Value::size() const {
  if (type != ValueType::array) return 0;
  return elem == ValueType::string ? strs.size() : elem == ValueType::array ? items.size() : nums.size();
}

Value Value::at(size_t i) const {
  if (elem == ValueType::string) return of_string(std::string(strs.at(i)));
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
  if (opaque_bytes) return *opaque_bytes;
  const GgmlType* t = ggml_type(type);
  std::string why = "type " + std::to_string(type) + " is not a ggml type";
  if (t) {
    if (auto n = tensor_nbytes(*t, dims, &why)) return *n;
  }
  throw Error(Error::Kind::format, "", std::nullopt, "tensor " + name, why);
}

const Value* Model::find(std::string_view key) const {
  for (size_t i = 0; i < metadata.size(); ++i)
    if (metadata.key(i) == key) return &metadata.ref(i).value;
  return nullptr;
}

Value* Model::find(std::string_view key) {
  return const_cast<Value*>(static_cast<const Model*>(this)->find(key));  // ref() keeps it as a KV of its own
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
