#include "ggufkit/scan.h"

#include <fcntl.h>
#include <unistd.h>

#include "ggufkit/lock.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "ggufkit/error.h"
#include "ggufkit/sniff.h"
#include "ggufkit/path.h"
#include "ggufkit/shards.h"

namespace ggufkit {

namespace {

// Names a field for an error message: the cursor's context plus what is being read,
// e.g. "kv[4] counts.tokens (string length #2)". Built only when an error is thrown.
struct Where {
  const char* what;
  int64_t index = -1;
};

// Whether any tensor has bytes: a model of empty tensors ends at its data start anyway.
bool holds_data(const Model& m, const Layout& L) {
  for (size_t i = 0; i < m.tensors.size(); ++i)
    if (m.tensors[i].nbytes() > 0 || L.tensor_offsets[i] > 0) return true;
  return false;
}

// A header exemplar's tensors read from here: the file as far as it goes (its header),
// and past its end an error that says what the file is and how to get the bytes.
class HeaderOnlySource final : public ByteSource {
 public:
  HeaderOnlySource(std::shared_ptr<const ByteSource> file, uint64_t data_offset)
      : file_(std::move(file)), data_offset_(data_offset) {}
  const std::string& name() const override { return file_->name(); }
  uint64_t size() const override { return UINT64_MAX; }  // the model's bytes are "there", to be refused
  void read_at(uint64_t offset, void* dst, size_t n) const override {
    if (n == 0) return;
    if (offset + n <= data_offset_) return file_->read_at(offset, dst, n);
    throw Error(Error::Kind::usage, file_->name(), std::max(offset, data_offset_), "tensor data",
                "the file is a header exemplar: it ends at its data start (byte " + std::to_string(data_offset_) +
                    "), so it holds no tensor bytes (a download cut exactly there looks the same); "
                    "`ggufkit replica FILE -o OUT` makes the full-size file, every tensor zero");
  }
  std::shared_ptr<const void> read_lock() const override { return file_->read_lock(); }

 private:
  std::shared_ptr<const ByteSource> file_;
  uint64_t data_offset_;
};

std::shared_ptr<const ByteSource> header_only_source(std::shared_ptr<const ByteSource> file, uint64_t data_offset) {
  return std::make_shared<HeaderOnlySource>(std::move(file), data_offset);
}

// Thrown by a Cursor over a prefix of a file that needs bytes past it: scan() maps a longer
// prefix and reads again.
struct NeedMore {};

// A forward-only reader over memory or a stream. It knows its position, so every error
// it raises carries the byte offset, and it knows (when it can) how many bytes are left,
// so lengths and counts are checked before anything is allocated.
class Cursor {
 public:
  // Set when the bytes read are the source's own memory (a map): lists may then point into it.
  std::shared_ptr<const void> owner;
  const uint8_t* here() const { return p_; }
  uint64_t in_window() const { return static_cast<uint64_t>(end_ - p_); }  // bytes in memory from here

  // The first `window` bytes of a source of `size` bytes, in memory.
  Cursor(std::string file, const uint8_t* data, uint64_t window, uint64_t size)
      : file_(std::move(file)), win_(data), p_(data), end_(data + window), size_(size) {}
  Cursor(std::string file, std::istream& in) : file_(std::move(file)), in_(&in), buf_(1 << 16) {
    win_ = p_ = end_ = buf_.data();
  }

  // Up to n of the first bytes, as far as they are in memory (a stream's: those read).
  std::span<const uint8_t> first(size_t n) const {
    if (base_ != 0) return {};
    return {win_, std::min<size_t>(n, static_cast<size_t>(end_ - win_))};
  }

  // A stream's length when it ends before n bytes (its first read takes up to 64 KiB, or
  // all there is), else nothing: a file's size is known without this.
  std::optional<uint64_t> stream_shorter_than(size_t n) {
    if (!in_ || base_ != 0) return std::nullopt;
    if (p_ == end_ && p_ == win_) refill();
    const auto got = static_cast<uint64_t>(end_ - win_);
    return got < n ? std::optional<uint64_t>(got) : std::nullopt;
  }

  std::string context;  // "head", "kv[3] general.name", "tensor[0] token_embd.weight"
  bool swap = false;    // big-endian file

  uint64_t pos() const { return base_ + static_cast<uint64_t>(p_ - win_); }
  std::optional<uint64_t> remaining() const {
    if (!size_) return std::nullopt;
    return *size_ - pos();
  }
  const std::optional<uint64_t>& size() const { return size_; }
  const std::string& file() const { return file_; }

  std::string field(Where w) const {
    std::string f = context;
    if (w.what) {
      f += std::string(f.empty() ? "(" : " (") + w.what;
      if (w.index >= 0) f += " #" + std::to_string(w.index);
      f += ")";
    }
    return f;
  }

  [[noreturn]] void fail(uint64_t at, Where w, const std::string& msg) const {
    throw Error(Error::Kind::format, file_, at, field(w), msg);
  }

  void read(void* dst, size_t n, Where w) {
    auto* out = static_cast<uint8_t*>(dst);
    uint64_t start = pos();
    while (n > 0) {
      if (p_ == end_ && !refill()) {
        std::string where = size_ ? "the file ends at byte " + std::to_string(*size_)
                                  : "the stream ends at byte " + std::to_string(pos());
        fail(start, w, "needs " + std::to_string(pos() - start + n) + " bytes, but " + where);
      }
      size_t k = std::min(static_cast<size_t>(end_ - p_), n);
      std::memcpy(out, p_, k);
      p_ += k;
      out += k;
      n -= k;
    }
  }

  template <typename T>
  T num(Where w) {
    T v;
    if (static_cast<size_t>(end_ - p_) >= sizeof v) {  // the common case: a fixed-size copy, inlined
      std::memcpy(&v, p_, sizeof v);
      p_ += sizeof v;
    } else {
      read(&v, sizeof v, w);
    }
    if (swap) v = byteswap(v);
    return v;
  }

  // A u64 length and that many bytes, refused past the cap or past the bytes left.
  // An array's string item straight from the window into the list: no string of its own.
  // Steps over a string in the window whose length was checked.
  void skip_string(Where w, uint64_t cap) { skip(string_length(w, cap)); }
  // Steps over n strings in the window, each length checked as string_length checks it,
  // in one tight loop: a vocabulary is hundreds of thousands of them. A length that fails
  // goes to string_length, which says why.
  void skip_strings(uint64_t n, uint64_t cap) {
    for (uint64_t i = 0; i < n; ++i) {
      if (static_cast<size_t>(end_ - p_) >= sizeof(uint64_t)) {
        uint64_t len;
        std::memcpy(&len, p_, sizeof len);
        if (swap) len = byteswap(len);
        if (len <= cap && len <= static_cast<uint64_t>(end_ - p_) - sizeof len) {
          p_ += sizeof len + len;
          continue;
        }
      }
      skip_string({"item length", static_cast<int64_t>(i)}, cap);
    }
  }
  // Steps over n bytes the caller has checked are in the source.
  void skip(uint64_t n) {
    if (n > static_cast<uint64_t>(end_ - p_)) more();
    p_ += n;
  }

  void append_string(Where w, uint64_t cap, StringList& out) {
    uint64_t len = string_length(w, cap);
    if (static_cast<uint64_t>(end_ - p_) >= len) {
      out.push_back(std::string_view(reinterpret_cast<const char*>(p_), static_cast<size_t>(len)));
      p_ += len;
    } else {
      out.push_back(string_body(w, len));
    }
  }

  // A string's length, checked against the cap and the bytes left.
  uint64_t string_length(Where w, uint64_t cap) {
    uint64_t at = pos();
    uint64_t len = num<uint64_t>(w);
    if (len > cap)
      fail(at, w, "a string of " + std::to_string(len) + " bytes is longer than the " + human(cap) + " cap" +
                      left_text());
    if (auto left = remaining(); left && len > *left)  // the message is made only when it is needed
      fail(at, w, "a string of " + std::to_string(len) + " bytes is longer than the " + std::to_string(*left) +
                      " bytes left in the file");
    return len;
  }

  std::string string(Where w, uint64_t cap) { return string_body(w, string_length(w, cap)); }

  std::string string_body(Where w, uint64_t len) {
    std::string s;
    if (static_cast<uint64_t>(end_ - p_) >= len) {  // all in the window: one copy
      s.assign(reinterpret_cast<const char*>(p_), static_cast<size_t>(len));
      p_ += len;
    } else if (size_) {
      s.resize(len);
      read(s.data(), len, w);
    } else {  // unknown size: grow only as bytes arrive
      while (s.size() < len) {
        size_t chunk = static_cast<size_t>(std::min<uint64_t>(len - s.size(), 1 << 20));
        size_t old = s.size();
        s.resize(old + chunk);
        read(s.data() + old, chunk, w);
      }
    }
    return s;
  }

  // Refuses `what`, needing `n` bytes, when fewer remain (only when the size is known).
  static std::string human(uint64_t n) {
    if (n >= (1ull << 20) && n % (1ull << 20) == 0) return std::to_string(n >> 20) + " MiB";
    return std::to_string(n) + " bytes";
  }

 private:
  std::string left_text() const {
    auto left = remaining();
    return left ? " and than the " + std::to_string(*left) + " bytes left in the file" : "";
  }

  template <typename T>
  static T byteswap(T v) {
    if constexpr (sizeof(T) == 1) return v;
    else if constexpr (sizeof(T) == 2) return static_cast<T>(__builtin_bswap16(static_cast<uint16_t>(v)));
    else if constexpr (sizeof(T) == 4) return static_cast<T>(__builtin_bswap32(static_cast<uint32_t>(v)));
    else return static_cast<T>(__builtin_bswap64(static_cast<uint64_t>(v)));
  }

  // Past the end of a prefix of the source: a longer one is needed.
  void more() const {
    if (!in_ && size_ && static_cast<uint64_t>(end_ - win_) < *size_) throw NeedMore{};
    throw std::logic_error("a read past the bytes checked");
  }

  bool refill() {
    if (!in_) {
      if (size_ && static_cast<uint64_t>(end_ - win_) < *size_) throw NeedMore{};
      return false;
    }
    base_ += static_cast<uint64_t>(end_ - buf_.data());
    in_->read(reinterpret_cast<char*>(buf_.data()), static_cast<std::streamsize>(buf_.size()));
    auto got = static_cast<size_t>(in_->gcount());
    p_ = buf_.data();
    end_ = buf_.data() + got;
    return got > 0;
  }

  std::string file_;
  std::istream* in_ = nullptr;
  std::vector<uint8_t> buf_;
  const uint8_t* win_ = nullptr;  // the window's first byte (the memory, or buf_)
  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
  uint64_t base_ = 0;  // file offset of the window's first byte
  std::optional<uint64_t> size_;
};

// Fewest bytes one element of this type can take, for checking counts before reading.
uint64_t min_size(ValueType t) {
  if (t == ValueType::string) return 8;
  if (t == ValueType::array) return 12;
  return value_type_width(t);
}

class Scanner {
 public:
  Scanner(Cursor& c, const ScanOptions& o) : c_(c), opt_(o) {}

  Scanned run(std::shared_ptr<const ByteSource> source) {
    Scanned out;
    Model& m = out.model;
    Layout& L = out.layout;
    head(m, L);
    uint64_t n_tensors = n_tensors_, n_kv = n_kv_;

    // Pairs read from a map stay there (Metadata keeps where each starts); from a stream
    // they are copied.
    if (c_.owner) m.metadata.view(c_.owner, c_.here() - c_.pos(), c_.swap);
    // A count is checked against the file, which may hold gigabytes of tensor data: room is
    // made only for the pairs the bytes in memory can hold (13 bytes at least each).
    m.metadata.reserve(static_cast<size_t>(std::min<uint64_t>(n_kv, c_.owner ? c_.in_window() / 13 : 1 << 16)));
    std::vector<uint64_t> starts;  // of copied pairs, for the duplicate check
    const bool each = n_kv <= kMaxPairSpans;
    const uint64_t pairs_start = c_.pos();
    for (uint64_t i = 0; i < n_kv; ++i) {
      uint64_t start = c_.pos();
      c_.context = "kv[" + std::to_string(i) + "]";
      KV kv;
      kv.key = c_.string({"key length"}, opt_.max_string);
      if (kv.key.empty()) c_.fail(start, {"key"}, "the key is empty");
      std::string path = c_.context + " " + kv.key;
      if (each) span(L, SpanKind::kv_key, start, path);
      c_.context = path;
      uint64_t tstart = c_.pos();
      ValueType type = value_type(tstart, {"type"});
      if (each) span(L, SpanKind::kv_type, tstart, path);
      uint64_t vstart = c_.pos();
      kv.value = value(type, 0, -1);
      if (each) span(L, SpanKind::kv_value, vstart, path);
      if (kv.key == kAlignmentKey) alignment_at_ = {tstart, vstart, path};
      if (c_.owner) {
        std::optional<uint64_t> items;  // a large array's: not walked again each time it is read
        if (type == ValueType::array && kv.value.size() >= 4096) items = c_.pos() - vstart - 12;
        m.metadata.push_view(start, items);
      } else {
        m.metadata.push_back(std::move(kv));
        starts.push_back(start);
      }
    }
    if (!each) span(L, SpanKind::metadata, pairs_start, "");
    unique_keys(m.metadata, starts);
    L.alignment = alignment(m);

    // Tensors read from a map stay there too (TensorList); room is made for what the bytes
    // in memory can hold (24 bytes at least each).
    if (c_.owner) m.tensors.view(c_.owner, c_.here() - c_.pos(), c_.swap);
    const size_t room = static_cast<size_t>(std::min<uint64_t>(n_tensors, c_.owner ? c_.in_window() / 24 : 1 << 16));
    m.tensors.reserve(room);
    L.tensor_offsets.reserve(room);
    starts_.reserve(c_.owner ? 0 : room);  // a viewed record's start is kept by the list
    const bool each_tensor = n_tensors <= kMaxTensorSpans;
    const uint64_t infos_start = c_.pos();
    for (uint64_t i = 0; i < n_tensors; ++i) {
      uint64_t start = c_.pos();
      c_.context = "tensor[" + std::to_string(i) + "]";
      Tensor t;
      t.name = c_.string({"name length"}, opt_.max_string);
      if (t.name.size() > kMaxTensorName)
        c_.fail(start, {"name"}, "a name of " + std::to_string(t.name.size()) +
                                     " bytes; ggml tensor names must be shorter than 64 bytes");
      c_.context += " " + t.name;
      uint64_t at = c_.pos();
      uint32_t n_dims = c_.num<uint32_t>({"n_dims"});
      if (n_dims > kMaxDims)
        c_.fail(at, {"n_dims"}, "n_dims " + std::to_string(n_dims) + " is more than the " +
                                    std::to_string(kMaxDims) + " ggml allows");
      uint64_t dims_at = c_.pos();
      for (uint32_t d = 0; d < n_dims; ++d) t.dims.push_back(c_.num<uint64_t>({"dim", d}));
      at = c_.pos();
      t.type = c_.num<uint32_t>({"type"});
      // A type no table here can size (a newer ggml's, another fork's, a removed one) is
      // read as opaque bytes measured from the offsets (below): the header stays in reach,
      // and validate says llama.cpp refuses it. Its shape is still held to ggml's bounds.
      const GgmlType* gt = ggml_type(t.type);
      const bool opaque = !gt || gt->removed;
      std::string why;
      auto nbytes = opaque ? element_count(t.dims, &why) : tensor_nbytes(*gt, t.dims, &why);
      if (!nbytes) c_.fail(dims_at, {"dims"}, why);
      if (opaque) opaque_.push_back(i);
      L.tensor_offsets.push_back(c_.num<uint64_t>({"offset"}));
      if (each_tensor) span(L, SpanKind::tensor_info, start, c_.context);
      if (c_.owner) {
        m.tensors.push_view(start);
      } else {
        m.tensors.push_back(std::move(t));
        starts_.push_back(start);
      }
    }
    if (!each_tensor) span(L, SpanKind::infos, infos_start, "");
    unique_names(m.tensors);

    L.header_size = c_.pos();
    auto data_offset = align_up(L.header_size, L.alignment);
    if (!data_offset) c_.fail(L.header_size, {"padding"}, "the data start overflows 64 bits");
    L.data_offset = *data_offset;
    const auto& size = c_.size();
    measure_opaque(m, L, size, out);
    c_.context.clear();

    // A file that ends exactly at its data start, with tensor bytes to hold, is a header
    // exemplar (`replica --data none`): read as the model it describes, its tensors'
    // bytes refused when asked for (header_only_source). A download cut exactly there reads
    // the same; nothing in the bytes tells the two apart, and neither holds any tensor.
    out.header_only = size && *size == L.data_offset && holds_data(m, L);
    const std::shared_ptr<const ByteSource> file = source;  // the tail's: the bytes the file has
    if (out.header_only) source = header_only_source(source, L.data_offset);
    // Tensor data must sit in file order, aligned, without overlap, inside the file.
    if (source) m.tensors.place(source, L.data_offset);
    uint64_t prev_end = 0;
    for (size_t i = 0; i < m.tensors.size(); ++i) {
      uint64_t off = L.tensor_offsets[i];
      const uint64_t nbytes = m.tensors[i].nbytes();  // checked as the record was read
      auto offset_at = [&] { return field_at(m.tensors, i, 0); };  // for an error
      c_.context = "tensor[" + std::to_string(i) + "] " + std::string(m.tensors.name(i));
      if (off % L.alignment != 0)
        c_.fail(offset_at(), {"offset"}, "offset " + std::to_string(off) + " is not a multiple of the alignment " +
                                             std::to_string(L.alignment));
      if (i > 0 && off < L.tensor_offsets[i - 1])
        c_.fail(offset_at(), {"offset"}, "offset " + std::to_string(off) + " comes before tensor[" +
                                             std::to_string(i - 1) + "]'s offset " +
                                             std::to_string(L.tensor_offsets[i - 1]) + "; data must be in file order");
      if (off < prev_end)
        c_.fail(offset_at(), {"offset"}, "offset " + std::to_string(off) + " overlaps tensor[" +
                                             std::to_string(i - 1) + "] " + std::string(m.tensors.name(i - 1)) +
                                             ", which ends at offset " + std::to_string(prev_end));
      auto end = checked_add(off, nbytes);
      auto abs_end = end ? checked_add(L.data_offset, *end) : std::nullopt;
      const uint64_t packed =
          i == 0 ? 0 : packed_next(L.tensor_offsets[i - 1], m.tensors[i - 1].nbytes(), L.alignment).value_or(0);
      // Data past the end: where a file cut short (in the padding or the data) misses its
      // bytes, the tensor's data, when its offset is the one packing gives (the file is
      // short); at the offset field when the offset jumps ahead (the field is wrong).
      // validate's truncated finding is told where this says.
      const bool cut = abs_end && off == packed;
      if (!abs_end || (size && opt_.data_in_file && !out.header_only && *abs_end > *size))
        c_.fail(cut ? L.data_offset + off : offset_at(), {cut ? "data" : "offset"},
                "the tensor's " + std::to_string(nbytes) + " bytes at data offset " + std::to_string(off) +
                    " (file offset " + (abs_end ? std::to_string(L.data_offset + off) : "past 2^64") +
                    ") run past the end of the file at " + (size ? std::to_string(*size) : "?"));
      if (off != packed) m.tensors.keep_offset(i, off);  // a gap before it: kept by a rewrite
      prev_end = *end;
    }
    c_.context.clear();
    // An exemplar's layout is the model's (padded to the end, as llama.cpp writes). Its tail
    // is the file itself, which ends at the data start: a header edit in place compares
    // against it; no rewrite copies it, since no tensor reads from it (keeps_tail).
    tail(m, L, out.header_only ? std::nullopt : size);
    if (file && size) m.tail = SourceTail{file, L.header_size, L.data_offset, *size, L.alignment};
    out.source_size = size.value_or(L.file_size);
    out.model_size = out.header_only ? L.file_size : out.source_size;
    return out;
  }

 private:
  // The earliest item whose name repeats one before it, and that first one: sorted, not
  // hashed (detail::sorted_by).
  template <typename Name>
  static std::optional<std::pair<uint64_t, uint64_t>> first_repeat(const std::vector<uint64_t>& order, Name name) {
    std::optional<std::pair<uint64_t, uint64_t>> dup;  // (repeat, first)
    for (size_t k = 1, first = 0; k < order.size(); ++k) {
      if (name(order[k]) != name(order[first])) first = k;
      else if (!dup || order[k] < dup->first) dup = std::pair(order[k], order[first]);
    }
    return dup;
  }

  // Refuses a key seen before, at the first pair that repeats one, saying where it was first.
  void unique_keys(const Metadata& md, const std::vector<uint64_t>& starts) {
    auto dup = first_repeat(md.sorted_by_key(), [&](uint64_t i) { return md.key(i); });
    if (!dup) return;
    uint64_t i = dup->first;
    c_.context = "kv[" + std::to_string(i) + "]";
    c_.fail(md.offset(i).value_or(starts.empty() ? 0 : starts[i]), {"key"},
            "duplicate key '" + std::string(md.key(i)) + "', first at kv[" + std::to_string(dup->second) + "]");
  }

  // Where a field of tensor i's info record lies: `before` bytes ahead of its offset field
  // (the record: u64 name length, name, u32 n_dims, dims, u32 type, u64 offset).
  uint64_t field_at(const TensorList& ts, size_t i, uint64_t before) const {
    const Tensor t = ts[i];
    return ts.record(i).value_or(starts_.empty() ? 0 : starts_[i]) + 16 + t.name.size() + 8 * t.dims.size() - before;
  }

  // The same for tensor names, at the repeating record's start.
  void unique_names(const TensorList& ts) {
    auto dup = first_repeat(ts.sorted_by_name(), [&](uint64_t i) { return ts.name(i); });
    if (!dup) return;
    uint64_t i = dup->first;
    const Tensor t = ts[i];
    c_.context = "tensor[" + std::to_string(i) + "]";
    c_.fail(field_at(ts, i, 16 + 8 * t.dims.size() + t.name.size()), {"name"},
            "duplicate tensor name '" + t.name + "', first at tensor[" + std::to_string(dup->second) + "]");
  }

  // An opaque tensor's bytes run to the next tensor's data, or for the last to the end of
  // the data; an offset out of order is the placement check's to refuse (0 bytes here).
  void measure_opaque(Model& m, const Layout& L, const std::optional<uint64_t>& size, Scanned& out) {
    if (opaque_.empty()) return;
    const auto& offs = L.tensor_offsets;
    // Where each tensor's bytes end at the latest: the offset of the next tensor that holds
    // any (a tensor of no bytes at the same offset ends nothing: measured to it, the opaque
    // tensor would be zero bytes and its data a gap no rewrite keeps). One backward pass.
    std::vector<std::optional<uint64_t>> next(offs.size());
    std::optional<uint64_t> holder;  // the offset of the nearest holding tensor after i
    for (size_t i = offs.size(); i-- > 0;) {
      next[i] = holder;
      if (std::binary_search(opaque_.begin(), opaque_.end(), i) || m.tensors[i].nbytes() > 0) holder = offs[i];
    }
    for (uint64_t i : opaque_) {
      c_.context = "tensor[" + std::to_string(i) + "] " + std::string(m.tensors.name(i));
      uint64_t end = 0;
      if (next[i]) end = *next[i];
      else if (size) end = *size > L.data_offset ? *size - L.data_offset : 0, out.opaque_to_end = i;
      else
        c_.fail(field_at(m.tensors, i, 4), {"type"},
                ggml_type_name(m.tensors[i].type) + " is a type this reader cannot size, and the last tensor's bytes run "
                "to the end of the data, which a stream does not give: read the file itself");
      const uint64_t n = end > offs[i] ? end - offs[i] : 0;
      if (n > static_cast<uint64_t>(INT64_MAX))  // ggml's sizes are int64
        c_.fail(field_at(m.tensors, i, 4), {"type"},
                ggml_type_name(m.tensors[i].type) + " measures " + std::to_string(n) +
                    " bytes to the next tensor, more than ggml's largest tensor (2^63 - 1 bytes)");
      m.tensors.set_opaque(i, n);
    }
    c_.context.clear();
  }

  void span(Layout& L, SpanKind k, uint64_t start, const std::string& path) {
    L.spans.push_back({k, {start, c_.pos() - start}, path});
  }

  // Not a GGUF file: what it is instead, from its first bytes (a download gone wrong, another
  // format), with what to do.
  [[noreturn]] void not_gguf(std::optional<uint64_t> size) {
    NotGguf n = sniff_not_gguf(c_.first(kSniffBytes), size, c_.file());
    Error e(Error::Kind::format, c_.file(), 0, c_.field({"magic"}), "not a GGUF file: " + n.what + (n.remedy.empty() ? "" : "; " + n.remedy));
    e.not_gguf = std::move(n);
    throw e;
  }

  void head(Model& m, Layout& L) {
    c_.context = "head";
    const std::optional<uint64_t> short_by = c_.size() ? c_.size() : c_.stream_shorter_than(kGgufHeadBytes);
    if (short_by && *short_by < kGgufHeadBytes) not_gguf(short_by);
    char magic[4];
    c_.read(magic, 4, {"magic"});
    if (std::memcmp(magic, "GGUF", 4) != 0) not_gguf(c_.size());
    span(L, SpanKind::magic, 0, "");
    uint32_t v = c_.num<uint32_t>({"version"});
    if (v != 0 && (v & 0xFFFF) == 0) {  // a small version read in the other byte order
      v = __builtin_bswap32(v);
      c_.swap = true;
      m.order = ByteOrder::big;
    }
    if (v == 0) c_.fail(4, {"version"}, "version 0 is not a GGUF version; expected 2 or 3");
    if (v == 1)
      c_.fail(4, {"version"}, "this is GGUF v1 (32-bit counts and lengths), which llama.cpp no longer "
                              "reads; expected version 2 or 3");
    if (v > 3) c_.fail(4, {"version"}, "version " + std::to_string(v) + " is newer than this reader knows (2 or 3)");
    m.version = v;
    span(L, SpanKind::version, 4, "");
    n_tensors_ = count(L, SpanKind::tensor_count, "tensor count", 24, "tensor info records");
    n_kv_ = count(L, SpanKind::kv_count, "kv count", 13, "key-value pairs");
  }

  uint64_t count(Layout& L, SpanKind k, const char* what, uint64_t each, const char* unit) {
    uint64_t at = c_.pos();
    uint64_t n = c_.num<uint64_t>({what});
    auto left = c_.remaining();
    if (left && n > *left / each)
      c_.fail(at, {what}, std::to_string(n) + " " + unit + " need at least " + std::to_string(each) +
                              " bytes each, but only " + std::to_string(*left) + " bytes are left in the file");
    span(L, k, at, "");
    return n;
  }

  ValueType value_type(uint64_t at, Where w) {
    uint32_t t = c_.num<uint32_t>(w);
    if (t >= kValueTypeCount)
      c_.fail(at, w, "unknown value type " + std::to_string(t) + "; the 13 types are 0 to 12");
    return static_cast<ValueType>(t);
  }

  Value value(ValueType type, uint32_t depth, int64_t index) {
    Value v;
    v.type = type;
    switch (type) {
      case ValueType::string:
        v.str = c_.string({index < 0 ? "string length" : "item length", index}, opt_.max_string);
        return v;
      case ValueType::array: {
        uint64_t at = c_.pos();
        v.elem = value_type(at, {"array type", index});
        if (v.elem == ValueType::array && depth + 2 > opt_.max_depth)
          c_.fail(at, {"array type", index}, "arrays nested deeper than " + std::to_string(opt_.max_depth));
        uint64_t n_at = c_.pos();
        uint64_t n = c_.num<uint64_t>({"array count", index});
        uint64_t each = min_size(v.elem);
        auto left = c_.remaining();
        if (left && n > *left / each)
          c_.fail(n_at, {"array count", index},
                  "an array of " + std::to_string(n) + " " + value_type_name(v.elem) + " needs at least " +
                      (checked_mul(n, each) ? std::to_string(n * each) : std::string("2^64 or more")) +
                      " bytes, but the file has " + std::to_string(*left) + " bytes left");
        // n is bounded by the bytes left when the size is known; a stream grows as it reads.
        size_t reserve = static_cast<size_t>(std::min<uint64_t>(n, left ? n : 1 << 16));
        if (v.elem == ValueType::string && c_.owner) {  // every length checked, the bytes left where they are
          const uint8_t* start = c_.here();
          c_.skip_strings(n, opt_.max_string);
          v.strs = StringList::view(c_.owner, start, static_cast<size_t>(c_.here() - start), static_cast<size_t>(n), c_.swap);
        } else if (v.elem == ValueType::string) {
          for (uint64_t i = 0; i < n; ++i)
            c_.append_string({"item length", static_cast<int64_t>(i)}, opt_.max_string, v.strs);
        } else if (v.elem == ValueType::array && c_.owner) {  // each item checked, the bytes left where they are
          const uint8_t* start = c_.here();
          for (uint64_t i = 0; i < n; ++i) value(v.elem, depth + 1, static_cast<int64_t>(i));
          v.items = ValueList::view(c_.owner, start, static_cast<size_t>(c_.here() - start), static_cast<size_t>(n), c_.swap);
        } else if (v.elem == ValueType::array) {
          for (uint64_t i = 0; i < n; ++i) v.items.push_back(value(v.elem, depth + 1, static_cast<int64_t>(i)));
        } else if (c_.owner) {  // n * width bytes, checked above: the items stay where they are
          unsigned width = static_cast<unsigned>(value_type_width(v.elem));
          v.nums = NumberList::view(c_.owner, c_.here(), static_cast<size_t>(n), width, c_.swap);
          c_.skip(n * width);
        } else {
          v.nums = NumberList(static_cast<unsigned>(value_type_width(v.elem)));
          v.nums.reserve(reserve);
          for (uint64_t i = 0; i < n; ++i) v.nums.push_back(fixed(v.elem, {"item", static_cast<int64_t>(i)}));
        }
        return v;
      }
      default:
        v.bits = fixed(type, {index < 0 ? "value" : "item", index});
        return v;
    }
  }

  uint64_t fixed(ValueType type, Where where) {
    switch (value_type_width(type)) {
      case 1: return c_.num<uint8_t>(where);
      case 2: return c_.num<uint16_t>(where);
      case 4: return c_.num<uint32_t>(where);
      default: return c_.num<uint64_t>(where);
    }
  }

  uint32_t alignment(const Model& m) {
    if (!alignment_at_) return kDefaultAlignment;
    const Value& v = *m.find(kAlignmentKey);
    c_.context = alignment_at_->path;
    if (v.type != ValueType::u32)
      c_.fail(alignment_at_->type_at, {"type"},
              std::string("general.alignment must be a u32, found ") + value_type_name(v.type));
    if (!is_power_of_two(v.bits))
      c_.fail(alignment_at_->value_at, {"value"},
              "alignment " + std::to_string(v.bits) + " is not a power of two");
    return static_cast<uint32_t>(v.bits);
  }

  // Padding, data, gap and trailing spans up to the end of the file (of a stream: to the
  // padded end of the data), and whether the file ends padded to the alignment.
  void tail(Model& m, Layout& L, const std::optional<uint64_t>& size) {
    uint64_t end = L.header_size;
    std::string path;
    if (!m.tensors.empty()) {
      add_filler(L, L.header_size, L.data_offset, SpanKind::padding, SpanKind::padding, "");
      const size_t n = m.tensors.size();
      const uint64_t last = L.data_offset + L.tensor_offsets[n - 1], last_bytes = m.tensors[n - 1].nbytes();
      if (n <= kMaxTensorSpans)
        data_spans(L, m.tensors, [&](size_t i) { return m.tensors[i].nbytes(); }, [&](const LabeledSpan& s) { L.spans.push_back(s); });
      else  // one span for all (layout.h)
        L.spans.push_back({SpanKind::data, {L.data_offset, last + last_bytes - L.data_offset}, ""});
      path = "tensor[" + std::to_string(n - 1) + "] " + std::string(m.tensors.name(n - 1));
      end = last + last_bytes;
    }
    auto aligned_end = align_up(end, L.alignment);
    if (!aligned_end) c_.fail(end, {"padding"}, "the padded end of the data overflows 64 bits");
    m.pad_end = !size || *size >= *aligned_end;
    // The whole file; for a stream, the padded end of the data; for a file cut inside its
    // data (read only to be checked), where the data ends.
    L.file_size = !size ? *aligned_end : std::max(*size, end);
    add_filler(L, end, L.file_size, m.tensors.empty() ? SpanKind::padding : SpanKind::tensor_padding,
               SpanKind::trailing, path);
  }

  struct AlignmentAt {
    uint64_t type_at, value_at;
    std::string path;
  };

  Cursor& c_;
  const ScanOptions& opt_;
  uint64_t n_tensors_ = 0, n_kv_ = 0;
  std::vector<uint64_t> starts_;  // of the tensor records copied from a stream
  std::vector<uint64_t> opaque_;  // tensors of a type no table sizes (measure_opaque)
  std::optional<AlignmentAt> alignment_at_;
};

}  // namespace

Scanned scan(std::shared_ptr<const ByteSource> source, const ScanOptions& options) {
  const uint64_t size = source->size();
  if (const uint8_t* data = source->data()) {  // in memory already
    Cursor c(source->name(), data, size, size);
    c.owner = source;
    return Scanner(c, options).run(source);
  }
  // A file: its header is mapped, never its tensor data, so that memory (and address space)
  // goes with the header. A prefix of 4 MiB (or the longer one already mapped), doubled and
  // read again from the start while the header runs past it: a header past 4 MiB read
  // about twice over, and mapped up to twice its size until it has been read (trim). A file
  // of up to 8 MiB is read whole at once: most such files are all header (a split set's
  // shard 1, a vocabulary, a header exemplar), which the doubling would parse twice.
  const uint64_t first = options.header_size ? options.header_size : size <= (8u << 20) ? size : 4u << 20;
  const auto hold = source->read_lock();  // every prefix of one moment
  for (uint64_t window = std::min<uint64_t>(size, first);; window = std::min(size, window * 2)) {
    std::shared_ptr<const uint8_t> head = source->prefix(window, &window);
    Cursor c(source->name(), head.get(), window, size);
    c.owner = head;
    try {
      Scanned s = Scanner(c, options).run(source);
      source->trim(head.get(), s.layout.header_size);
      return s;
    } catch (const NeedMore&) {
      if (window == size) throw std::logic_error("a header past the end of the whole file");
    }
  }
}

std::string journal_path(const std::string& path) {
  std::string file = path;
  try {
    file = follow_links(path);  // beside the file itself, whatever link names it
  } catch (const Error&) {
  }
  return file + ".ggufkit-journal";
}

namespace {
// The journal of `path`: beside the file it names (an edit in place writes through a link),
// or, for a link, beside the link itself (a set's edit that replaces its links keeps them there).
std::optional<std::string> journal_of(const std::string& path) {
  struct stat st {};
  if (std::string j = journal_path(path); stat_path(j, st, false) == 0) return j;
  if (stat_path(path, st, false) == 0 && S_ISLNK(st.st_mode))
    if (std::string j = path + ".ggufkit-journal"; stat_path(j, st, false) == 0) return j;
  return std::nullopt;
}
}  // namespace

std::optional<std::string> set_shard_with_journal(const std::string& path) {
  // The shard names as given (a set of links into a store) and as the files they name.
  std::vector<std::string> names{path};
  try {
    if (std::string file = follow_links(path); file != path) names.push_back(file);
  } catch (const Error&) {
  }
  for (const std::string& file : names) {
    const std::optional<ShardName> name = parse_shard_name(file);
    if (!name) continue;
    for (uint32_t k = 1; k <= name->count; ++k) {
      const std::string other = shard_path(name->prefix, k, name->count);
      if (k != name->no && journal_of(other)) return other;
    }
  }
  return std::nullopt;
}

bool journal_trusted(uid_t journal_uid, uid_t file_uid) {
  return journal_uid == 0 || journal_uid == file_uid || journal_uid == ::geteuid();
}

void refuse_journal(const std::string& given, const Context& ctx, bool set_too) {
  struct stat st {};
  std::string path = given;
  std::optional<std::string> found = journal_of(path);
  if (!found && !set_too) return;
  if (!found) {
    std::optional<std::string> other = set_shard_with_journal(given);
    if (!other) return;
    path = *other;
    found = journal_of(path);
  }
  const std::string j = found.value_or("");
  if (j.empty() || stat_path(j, st, false) != 0) return;
  // A journal another user planted beside someone's model blocks no one's reads.
  if (struct stat fs {}; stat_path(path, fs) == 0 && !journal_trusted(st.st_uid, fs.st_uid)) return;
  // An edit under way has a journal too: it is a crash's only when it is still there once
  // the writer's lock can be had (SQLite's hot journal).
  bool hot = true;
  if (int fd = open_path(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); fd >= 0) {
    try {
      FileLock lock(fd, path, FileLock::Mode::shared, ctx);
      hot = stat_path(j, st, false) == 0;
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
  }
  if (hot)
    throw Error(Error::Kind::format, given, std::nullopt, "",
                (path == given ? "an in-place edit of this file" : "an in-place rewrite of its set") +
                    std::string(" was interrupted and left its journal, ") + j + "; run 'ggufkit recover " + path +
                    "' to finish it first");
}

Scanned scan_file(const std::string& path, const ScanOptions& options, const Context& ctx) {
  auto src = open_file(path, ctx);
  const auto hold = src->read_lock();  // the journal looked for and the header read at one moment
  refuse_journal(path, ctx);
  return scan(src, options);
}

Scanned scan_stream(std::istream& in, const std::string& name, const ScanOptions& options) {
  Cursor c(name, in);
  return Scanner(c, options).run(nullptr);
}

}  // namespace ggufkit
