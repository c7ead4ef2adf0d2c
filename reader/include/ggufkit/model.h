#pragma once

#include <algorithm>
#include <cstdint>
#include <cstddef>
#include <deque>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ggufkit/format.h"
#include "ggufkit/source.h"

namespace ggufkit {

namespace detail {
// A list of `count` items viewing the `bytes` bytes at `data`, which `keep` holds: the
// view() of StringList and ValueList, which lay out a region alike.
template <typename List>
List region_view(std::shared_ptr<const void> keep, const uint8_t* data, size_t bytes, size_t count, bool big) {
  List l;
  l.keep_ = std::move(keep);
  l.data_ = data;
  l.bytes_ = bytes;
  l.count_ = count;
  l.big_ = big;
  return l;
}

// An iterator over a list whose items are made on each read (Metadata, TensorList): it
// keeps the last one made, valid until the next step.
template <typename List, typename Item>
class made_iterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = Item;
  using difference_type = std::ptrdiff_t;
  using pointer = const Item*;
  using reference = const Item&;
  made_iterator() = default;
  made_iterator(const List* l, size_t i) : l_(l), i_(i) {}
  const Item& operator*() const { return cur_ = (*l_)[i_]; }
  const Item* operator->() const { return &**this; }
  made_iterator& operator++() {
    ++i_;
    return *this;
  }
  made_iterator operator++(int) {
    made_iterator t = *this;
    ++i_;
    return t;
  }
  bool operator==(const made_iterator& o) const { return i_ == o.i_; }
  difference_type operator-(const made_iterator& o) const { return static_cast<difference_type>(i_) - static_cast<difference_type>(o.i_); }
  size_t index() const { return i_; }

 private:
  const List* l_ = nullptr;
  size_t i_ = 0;
  mutable Item cur_;
};

// Indices 0..n-1 ordered by name(i), equal names by index: 8 bytes an item, where a hash
// of a million names would take tens of bytes each.
template <typename Name>
std::vector<uint64_t> sorted_by(size_t n, Name name) {
  std::vector<uint64_t> order(n);
  for (uint64_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint64_t a, uint64_t b) {
    int c = name(a).compare(name(b));
    return c < 0 || (c == 0 && a < b);
  });
  return order;
}
}  // namespace detail

// The strings of an array as they lie in a file: `count` items, each a u64 length then
// its bytes. A list read from a mapped file is a view of that region (the source is kept
// alive), so a vocabulary of 150,000 tokens costs no allocation and no copy; a list built
// in memory keeps the same layout in a buffer of its own (little-endian lengths). Items
// read as views; item i by number needs an index, built on the first such access.
class StringList {
 public:
  StringList() = default;
  StringList(const std::vector<std::string>& items);  // NOLINT: lists convert
  // A region whose every length the caller has checked against the bytes.
  static StringList view(std::shared_ptr<const void> keep, const uint8_t* data, size_t bytes, size_t count, bool big) {
    return detail::region_view<StringList>(std::move(keep), data, bytes, count, big);
  }
  StringList(const StringList& o) { *this = o; }
  StringList(StringList&& o) noexcept { *this = std::move(o); }
  StringList& operator=(const StringList& o);
  StringList& operator=(StringList&& o) noexcept;

  void reserve(size_t) {}
  void push_back(std::string_view s);
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  std::string_view operator[](size_t i) const;
  std::string_view at(size_t i) const;  // throws std::out_of_range

  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = std::string_view;
    iterator() = default;
    iterator(const uint8_t* p, bool big) : p_(p), big_(big) {}
    std::string_view operator*() const { return {reinterpret_cast<const char*>(p_ + 8), static_cast<size_t>(length())}; }
    iterator& operator++() {
      p_ += 8 + length();
      return *this;
    }
    iterator operator++(int) {
      iterator t = *this;
      ++*this;
      return t;
    }
    bool operator==(const iterator& o) const { return p_ == o.p_; }

   private:
    uint64_t length() const;
    const uint8_t* p_ = nullptr;
    bool big_ = false;
  };
  iterator begin() const { return {data_, big_}; }
  iterator end() const { return {data_ + bytes_, big_}; }

  bool operator==(const StringList& o) const;
  bool operator==(const std::vector<std::string>& v) const;

  // The list exactly as it lies in a file: each length (big-endian when `big`) then the
  // bytes. A writer of the same byte order writes it in one piece.
  std::string_view region() const { return {reinterpret_cast<const char*>(data_), bytes_}; }
  bool big() const { return big_; }
  // What holds a view's bytes (a header read); null for a list of its own, whose bytes last
  // only as long as it does.
  const std::shared_ptr<const void>& keep() const { return keep_; }

 private:
  template <typename List>
  friend List detail::region_view(std::shared_ptr<const void>, const uint8_t*, size_t, size_t, bool);
  void own();  // copies a view into a buffer of its own, lengths little-endian
  std::shared_ptr<const void> keep_;  // a view: what holds its bytes
  std::string owned_;                 // otherwise: the region itself
  const uint8_t* data_ = nullptr;
  size_t bytes_ = 0, count_ = 0;
  bool big_ = false;
  mutable std::vector<size_t> index_;  // where each item starts, once asked for by number
};

// The numbers of an array as they lie in a file: `count` items of `width` bytes (each
// big-endian when `big`). Like StringList, a list read from a mapped file is a view of
// that region, and one built in memory keeps little-endian bytes of its own; so a
// vocabulary's 150,000 scores cost neither a copy nor 8 bytes each. Items read as bits,
// zero-extended.
class NumberList {
 public:
  NumberList() = default;
  explicit NumberList(unsigned width) : width_(width) {}
  // `count` items whose bytes the caller has checked are all there.
  static NumberList view(std::shared_ptr<const void> keep, const uint8_t* data, size_t count, unsigned width, bool big);

  void reserve(size_t n) { owned_.reserve(n * width_); }
  void push_back(uint64_t bits);
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  unsigned width() const { return width_; }
  uint64_t operator[](size_t i) const;
  uint64_t at(size_t i) const;  // throws std::out_of_range

  bool operator==(const NumberList& o) const;  // bitwise, item by item
  bool operator==(const std::vector<uint64_t>& v) const;

  // The items exactly as they lie in a file; a writer of the same byte order writes them
  // in one piece.
  std::string_view region() const { return {reinterpret_cast<const char*>(data()), count_ * width_}; }
  bool big() const { return big_; }

 private:
  const uint8_t* data() const { return keep_ ? view_ : reinterpret_cast<const uint8_t*>(owned_.data()); }
  std::shared_ptr<const void> keep_;  // a view: what holds its bytes
  const uint8_t* view_ = nullptr;
  std::string owned_;                 // otherwise: the items, little-endian
  size_t count_ = 0;
  unsigned width_ = 0;
  bool big_ = false;
};

struct Value;

// The arrays of an array of arrays as they lie in a file: `count` items, each a u32
// element type, a u64 count and its items. Like the lists above, one read from a map is a
// view of that region, so a header of millions of nested arrays costs no Value each; one
// built in memory keeps the same layout, little-endian, in a buffer its copies share (and
// copy before a change). Items are made as Values when read, walking from the start: go
// through them in order.
class ValueList {
 public:
  ValueList() = default;
  // A region the reader has checked item by item.
  static ValueList view(std::shared_ptr<const void> keep, const uint8_t* data, size_t bytes, size_t count, bool big) {
    return detail::region_view<ValueList>(std::move(keep), data, bytes, count, big);
  }

  void reserve(size_t) {}
  void push_back(const Value& v);  // v must be an array (a std::logic_error otherwise)
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  Value at(size_t i) const;  // throws std::out_of_range
  Value operator[](size_t i) const;  // at(i)

  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Value;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Value;
    iterator() = default;
    iterator(const ValueList* l, const uint8_t* p) : l_(l), p_(p) {}
    Value operator*() const;
    iterator& operator++();
    bool operator==(const iterator& o) const { return p_ == o.p_; }

   private:
    const ValueList* l_ = nullptr;
    const uint8_t* p_ = nullptr;
  };
  iterator begin() const { return {this, data_}; }
  iterator end() const { return {this, data_ + bytes_}; }

  bool operator==(const ValueList& o) const;  // item by item, bitwise

  std::string_view region() const { return {reinterpret_cast<const char*>(data_), bytes_}; }
  bool big() const { return big_; }

 private:
  template <typename List>
  friend List detail::region_view(std::shared_ptr<const void>, const uint8_t*, size_t, size_t, bool);
  std::shared_ptr<const void> keep() const { return keep_ ? keep_ : buf_; }
  std::shared_ptr<const void> keep_;  // a view: what holds its bytes
  std::shared_ptr<std::string> buf_;  // otherwise: the region itself
  const uint8_t* data_ = nullptr;
  size_t bytes_ = 0, count_ = 0;
  bool big_ = false;
};

// A metadata value exactly as it stands on disk: fixed-width values keep their bits
// (float bit patterns, the bool byte), strings their bytes, arrays their element type.
// An array keeps its elements compactly, by element type: a 150,000-token vocabulary is
// a vector of strings, its scores a vector of bits, not 150,000 Values.
struct Value {
  ValueType type = ValueType::u8;
  ValueType elem = ValueType::u8;  // type array: the element type
  uint64_t bits = 0;               // fixed-width values: the value's bits, zero-extended
  std::string str;                 // type string
  NumberList nums;                 // array of fixed-width elements
  StringList strs;                 // array of strings
  ValueList items;                 // array of arrays

  static Value scalar(ValueType t, uint64_t bits);
  static Value of_u32(uint32_t v) { return scalar(ValueType::u32, v); }
  static Value of_u64(uint64_t v) { return scalar(ValueType::u64, v); }
  static Value of_i64(int64_t v);
  static Value of_f32(float v);
  static Value of_f64(double v);
  static Value of_bool(bool v) { return scalar(ValueType::boolean, v ? 1 : 0); }
  static Value of_string(std::string s);
  // An array from element Values, each of type `elem` (a format Error otherwise).
  static Value array(ValueType elem, std::vector<Value> items);
  static Value strings(std::vector<std::string> items);

  size_t size() const;             // an array's element count
  Value at(size_t i) const;        // an array's element i, as a Value
  // f(item) for each element of an array, in order, as at() gives it; stops when f
  // returns false. Arrays of arrays are walked once, not once per item.
  template <typename F>
  void each(F f) const {
    if (type != ValueType::array) return;
    if (elem == ValueType::array) {
      for (const Value item : items)
        if (!f(item)) return;
      return;
    }
    for (size_t i = 0, n = size(); i < n; ++i)
      if (!f(at(i))) return;
  }

  bool is_integer() const;          // u8 ... i64 (not bool)
  uint64_t as_u64() const;          // integers and bool; signed ones sign-extended
  int64_t as_i64() const;           // integers, sign-extended where signed
  double as_f64() const;            // any number
  bool operator==(const Value& o) const = default;  // bitwise: NaN equals the same NaN
};

struct KV {
  std::string key;
  Value value;
  bool operator==(const KV&) const = default;
};

// A model's key-value pairs, in file order. A pair read from a mapped file stays there:
// it costs 8 bytes here (where it starts) and is made into a KV each time it is read, so
// a header of a million keys costs 8 MB, not a million KVs. A pair set in memory, or
// found by key (find, edit), is kept as a KV, whose address holds until it is erased.
// Not for use from two threads at once while find or edit may run.
class Metadata {
 public:
  Metadata() = default;
  Metadata(std::initializer_list<KV> kvs);

  size_t size() const { return at_.size(); }
  bool empty() const { return at_.empty(); }
  const KV operator[](size_t i) const;     // made on each call: a copy
  const KV back() const { return (*this)[size() - 1]; }
  std::string_view key(size_t i) const;    // without making the value
  // Pair i as a KV kept here; with edit, one that may be changed in place.
  const KV& ref(size_t i) const;
  KV& edit(size_t i) {
    as_read_ = false;
    return const_cast<KV&>(ref(i));
  }
  // Where pair i starts in the file it was read from, while every pair is as read (and so
  // lies at the same offset in any file written of them: the pairs follow the 24-byte head).
  std::optional<uint64_t> offset(size_t i) const;
  std::optional<uint64_t> value_offset(size_t i) const;  // the same for its value

  using iterator = detail::made_iterator<Metadata, KV>;
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, size()}; }

  void reserve(size_t n) { at_.reserve(n); }
  void push_back(KV kv);
  void set(size_t i, KV kv);
  void erase(size_t i);
  void erase(const iterator& it) { erase(it.index()); }
  void clear();
  // The pairs `pred` holds for, in one pass (it sees every pair once, in order).
  template <typename P>
  void erase_if(P pred) {
    size_t kept = 0;
    for (size_t i = 0; i < at_.size(); ++i)
      if (!pred((*this)[i])) at_[kept++] = at_[i];
    if (kept != at_.size()) as_read_ = false, at_.resize(kept);
  }
  // The pairs at these indices (ascending, no repeats), in one pass.
  void erase_sorted(const std::vector<size_t>& indices) {
    size_t kept = 0, next = 0;
    for (size_t i = 0; i < at_.size(); ++i) {
      if (next < indices.size() && indices[next] == i) ++next;
      else at_[kept++] = at_[i];
    }
    if (kept != at_.size()) as_read_ = false, at_.resize(kept);
  }
  bool operator==(const Metadata& o) const;  // pair by pair, bitwise
  // The pairs' indices in key order (equal keys by index): 8 bytes a pair, where a hash
  // of a million keys would take tens of bytes each. index_of looks a key up in it.
  std::vector<uint64_t> sorted_by_key() const;
  std::optional<size_t> index_of(std::string_view key, const std::vector<uint64_t>& sorted) const;

  // The reader's: the pairs that follow are at these offsets of `base`, which `keep` holds
  // and whose every field was checked.
  void view(std::shared_ptr<const void> keep, const uint8_t* base, bool big);
  // `items` (the bytes of a large array's items, a vocabulary's) saves walking them each
  // time the pair is read.
  void push_view(uint64_t offset, std::optional<uint64_t> items = std::nullopt) {
    at_.push_back(offset);
    if (items) items_at_[offset] = *items;
  }

 private:
  static constexpr uint64_t kOwned = 1ull << 63;  // set: an index into owned_
  // Where the type of a pair starting at `pair` lies: after the key's u64 length and bytes.
  static uint64_t type_at(uint64_t pair, std::string_view key) { return pair + 8 + key.size(); }
  std::shared_ptr<const void> keep_;
  const uint8_t* base_ = nullptr;
  bool big_ = false;
  bool as_read_ = true;  // no pair set, added or erased since the reader's
  mutable std::vector<uint64_t> at_;
  mutable std::deque<KV> owned_;  // a deque: a KV's address holds as others are added
  mutable std::unordered_map<uint64_t, uint64_t> read_at_;  // owned_ index -> where it was read
  std::unordered_map<uint64_t, uint64_t> items_at_;          // where a pair was read -> its items' bytes
};

enum class ByteOrder { little, big };

struct Tensor {
  std::string name;
  std::vector<uint64_t> dims;  // innermost first
  uint32_t type = 0;           // ggml type id
  // Where the tensor's bytes are: a range of a source file or of a buffer. Null when the
  // model came from a stream that cannot be read back (the header of a pipe).
  std::shared_ptr<const ByteSource> source;
  uint64_t source_offset = 0;
  // Where the data starts in the data section, when not right after the tensor before it
  // (padded): a gap, which the format allows and llama.cpp refuses. Empty: packed.
  std::optional<uint64_t> offset;
  // Where the bytes lie when not in one range from source_offset: these ranges (offset, size)
  // of `source`, in order, adding up to nbytes() (stacked experts sliced by tensor surgery).
  std::vector<std::pair<uint64_t, uint64_t>> pieces;
  // A type no table here can size (an id ggml_type does not know, or a removed one): its
  // bytes as the reader measured them, the distance to the next tensor's data or, for the
  // last, to the end of the data. Set, nbytes() is it and the bytes move as they are.
  std::optional<uint64_t> opaque_bytes;

  // Bytes from the shape and type (or opaque_bytes); throws a format Error naming the tensor if that fails.
  uint64_t nbytes() const;
  uint64_t elements() const;
};

// A model's tensors, in file order. A tensor read from a mapped file stays there: it costs
// 8 bytes here (where its info record starts) and is made into a Tensor each time it is
// read, so a header of a million tensors costs 8 MB, not a million Tensors (each some 150
// bytes with its name and dims). A tensor added, or changed through edit, is kept as a
// Tensor, whose address holds.
class TensorList {
 public:
  size_t size() const { return at_.size(); }
  bool empty() const { return at_.empty(); }
  const Tensor operator[](size_t i) const;  // made on each call: a copy
  const Tensor back() const { return (*this)[size() - 1]; }
  std::string_view name(size_t i) const;    // without making the tensor
  Tensor& edit(size_t i);                   // tensor i, kept here to be changed in place

  using iterator = detail::made_iterator<TensorList, Tensor>;
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, size()}; }

  void reserve(size_t n) { at_.reserve(n); }
  void push_back(Tensor t);
  void clear();
  // Every tensor's data right after the one before it (padded): the offsets kept are
  // dropped, for a layout made anew.
  void pack();
  std::vector<uint64_t> sorted_by_name() const {
    return detail::sorted_by(size(), [&](uint64_t i) { return name(i); });
  }

  // The reader's: the info records that follow are at these offsets of `base`, which
  // `keep` holds and whose every field was checked; their data lies in `source` from
  // `data_offset` on (place, once the header's end is known).
  void view(std::shared_ptr<const void> keep, const uint8_t* base, bool big);
  void push_view(uint64_t record) { at_.push_back(record); }
  // Tensor i's data lies at `offset` of the data section, not right after the tensor
  // before it (a gap): a rewrite keeps it there. A viewed tensor keeps only a bit, since
  // its record holds the offset: a header of gaps everywhere costs no more.
  void keep_offset(size_t i, uint64_t offset);
  // Tensor i's type cannot be sized: its bytes are these (Tensor::opaque_bytes).
  void set_opaque(size_t i, uint64_t bytes);
  // Where tensor i's info record starts in the file read, while it is viewed there.
  std::optional<uint64_t> record(size_t i) const {
    return at_[i] & kOwned ? std::nullopt : std::optional<uint64_t>(at_[i] & ~kGap);
  }
  void place(std::shared_ptr<const ByteSource> source, uint64_t data_offset);

 private:
  static constexpr uint64_t kOwned = 1ull << 63;  // set: an index into owned_
  static constexpr uint64_t kGap = 1ull << 62;    // set on a viewed record: keep its offset
  std::shared_ptr<const void> keep_;
  const uint8_t* base_ = nullptr;
  bool big_ = false;
  std::shared_ptr<const ByteSource> source_;
  uint64_t data_offset_ = 0;
  std::vector<uint64_t> at_;
  std::deque<Tensor> owned_;  // a deque: a Tensor's address holds as others are added
  std::vector<std::pair<size_t, uint64_t>> opaque_;  // a viewed tensor's opaque_bytes, by index, sorted
};

// The bytes a source file had after its header, which no field describes: non-zero
// padding, gaps, bytes after the end. The writer copies them back while the data section
// lies as it did (same alignment, same tensor placement), so a rewrite gives back every
// byte the reader accepted. Set by the reader.
struct SourceTail {
  std::shared_ptr<const ByteSource> source;
  uint64_t header_size = 0;  // where the source's header ended
  uint64_t data_offset = 0;  // and its data section started
  uint64_t size = 0;         // the source's size
  uint32_t alignment = 32;
  // The data is laid out anew (tensor surgery): `source` still names the file the model was
  // read from, but none of its bytes beyond the fields are kept.
  bool relaid = false;
};

struct Model {
  uint32_t version = 3;
  ByteOrder order = ByteOrder::little;
  Metadata metadata;             // file order is part of the file
  TensorList tensors;           // file order; data is laid out in this order
  // Whether the file ends on an alignment boundary. llama.cpp and gguf-py pad the last
  // tensor; some writers do not, and files with no tensors end right after the header.
  bool pad_end = true;
  std::optional<SourceTail> tail;
  // The byte order the tensor sources hold their bytes in, when not `order`: the writer
  // then turns every block over as it copies (ggufkit convert).
  std::optional<ByteOrder> data_order;

  // The value of `key`, kept by the metadata as a KV (to be changed in place through the
  // second) until it is erased; nullptr when absent.
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  // general.alignment, or 32 when absent. Throws a format Error when it is not a u32
  // power of two, since no layout can be made from it.
  uint32_t alignment() const;
};

}  // namespace ggufkit
