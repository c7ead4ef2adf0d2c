#include "ggufkit/writer.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "ggufkit/byteorder.h"
#include "ggufkit/error.h"
#include "ggufkit/output.h"

namespace ggufkit {

namespace {

// Runs the encoder over the whole file. With `record`, it writes down every span as it
// goes (plan); with `check`, it asserts each span starts where recorded (emit). The same
// code path does both, so sizes are never computed twice.
class Walker {
 public:
  Walker(const Model& m, Sink& sink, Layout* record, const Layout* check, FieldMarks* marks = nullptr)
      : m_(m), sink_(sink), record_(record), check_(check), marks_(marks),
        L_(record ? *record : *check) {}

  void run() {
    begin(SpanKind::magic, "");
    mark("head", "magic");
    sink_.write("GGUF", 4);
    end();
    begin(SpanKind::version, "");
    mark("head", "version");
    u32(m_.version);
    end();
    begin(SpanKind::tensor_count, "");
    mark("head", "tensor count");
    u64(m_.tensors.size());
    end();
    begin(SpanKind::kv_count, "");
    mark("head", "kv count");
    u64(m_.metadata.size());
    end();
    const bool each = m_.metadata.size() <= kMaxPairSpans;  // else one span for all (layout.h)
    if (!each) begin(SpanKind::metadata, "");
    for (size_t i = 0; i < m_.metadata.size(); ++i) {
      const KV& kv = m_.metadata[i];
      std::string index = "kv[" + std::to_string(i) + "]", path = index + " " + kv.key;
      if (each) begin(SpanKind::kv_key, path);
      mark(index, "key length");
      str(kv.key);
      if (each) end(), begin(SpanKind::kv_type, path);
      mark(path, "type");
      u32(static_cast<uint32_t>(kv.value.type));
      if (each) end(), begin(SpanKind::kv_value, path);
      mark(path, kv.value.type == ValueType::string ? "string length"
                 : kv.value.type == ValueType::array ? "array type"
                                                     : "value");
      if (kv.value.type == ValueType::array) {
        u32(static_cast<uint32_t>(kv.value.elem));
        mark(path, "array count");
        items(kv.value, path);
      } else {
        value(kv.value, path);
      }
      if (each) end();
    }
    if (!each) end();
    const bool each_tensor = m_.tensors.size() <= kMaxTensorSpans;  // else one span each for infos and data
    if (!each_tensor) begin(SpanKind::infos, "");
    quiet_ = !each_tensor;
    for (size_t i = 0; i < m_.tensors.size(); ++i) {
      const Tensor t = m_.tensors[i];
      std::string path = path_of(i);
      begin(SpanKind::tensor_info, path);
      mark("tensor[" + std::to_string(i) + "]", "name length");
      str(t.name);
      mark(path, "n_dims");
      u32(static_cast<uint32_t>(t.dims.size()));
      mark(path, "dims");
      for (uint64_t d : t.dims) u64(d);
      mark(path, "type");
      u32(t.type);
      mark(path, "offset");
      u64(L_.tensor_offsets.at(i));
      end();
    }
    quiet_ = false;
    if (!each_tensor) end();
    uint64_t header_size = sink_.pos();
    uint64_t data_offset = aligned(header_size);
    if (record_) {
      record_->header_size = header_size;
      record_->data_offset = data_offset;
    }
    // The source's bytes after its header come back while the data lies as it did; with a
    // header of another size, the data section (not the header's padding) still does.
    const SourceTail* tail = keeps_tail(m_, L_) ? &*m_.tail : nullptr;
    if (tail && m_.tensors.empty() && header_size != tail->header_size) tail = nullptr;
    auto from_tail = [&](uint64_t at) { return at - data_offset + tail->data_offset; };  // in the data section
    bool same_head = tail && header_size == tail->header_size;
    uint64_t upto = header_size;  // where the bytes written so far end
    std::string path;
    if (!m_.tensors.empty()) {
      fill(upto, data_offset, SpanKind::padding, SpanKind::padding, "", same_head ? header_size : kZeros);
      upto = data_offset;
    }
    if (!each_tensor && !m_.tensors.empty()) begin(SpanKind::data, "");
    quiet_ = !each_tensor;
    for (size_t i = 0; i < m_.tensors.size(); ++i) {
      const Tensor t = m_.tensors[i];
      uint64_t start = data_offset + L_.tensor_offsets[i];
      fill(upto, start, SpanKind::tensor_padding, SpanKind::gap, path, tail ? from_tail(upto) : kZeros);  // before tensor[0] too
      path = path_of(i);
      if (sink_.pos() != start) drift(path, start);  // as ggml's writer asserts
      uint64_t n = t.nbytes();
      begin(SpanKind::tensor_data, path);
      if (check_ && !t.source)
        throw Error(Error::Kind::format, "", std::nullopt, path, "the tensor has no data to write");
      if (!check_) sink_.copy(MemorySource("", {}), 0, n);  // counting: no bytes are touched
      else if (!t.pieces.empty()) copy_pieces(t, path, n);
      else if (m_.data_order && *m_.data_order != m_.order)
        sink_.copy(SwappedSource(*t.source, swappable(t, path), t.source_offset), t.source_offset, n);
      else sink_.copy(*t.source, t.source_offset, n);
      end();
      upto = sink_.pos();
    }
    quiet_ = false;
    if (!each_tensor && !m_.tensors.empty()) end();
    uint64_t last = !tail                ? (m_.pad_end ? aligned(upto) : upto)
                    : m_.tensors.empty() ? tail->size
                                         : data_offset + (tail->size - tail->data_offset);
    uint64_t tail_at = !tail ? kZeros : m_.tensors.empty() ? upto : from_tail(upto);
    fill(upto, last, m_.tensors.empty() ? SpanKind::padding : SpanKind::tensor_padding, SpanKind::trailing, path, tail_at);
    if (record_) record_->file_size = sink_.pos();
    if (check_ && sink_.pos() != check_->file_size) drift("end of file", check_->file_size);
  }

 private:
  // A sliced tensor's ranges, each copied (in the kernel where it can be) and verified as one piece.
  void copy_pieces(const Tensor& t, const std::string& path, uint64_t n) {
    uint64_t sum = 0;
    for (const auto& [at, k] : t.pieces) sum += k;
    if (sum != n)
      throw Error(Error::Kind::format, "", std::nullopt, path,
                  "its pieces hold " + std::to_string(sum) + " bytes, not the " + std::to_string(n) + " its shape takes");
    if (m_.data_order && *m_.data_order != m_.order)
      throw Error(Error::Kind::format, "", std::nullopt, path, "a sliced tensor is not converted to another byte order");
    for (const auto& [at, k] : t.pieces) sink_.copy(*t.source, at, k);
  }

  static const GgmlType& swappable(const Tensor& t, const std::string& path) {
    const GgmlType* gt = ggml_type(t.type);
    if (!gt || !can_swap(*gt))
      throw Error(Error::Kind::format, "", std::nullopt, path,
                    "cannot change the byte order of " + ggml_type_name(t.type) + " data" + (gt ? "" : ": ggufkit does not know the type's layout"));
    return *gt;
  }

  std::string path_of(size_t i) const { return "tensor[" + std::to_string(i) + "] " + std::string(m_.tensors.name(i)); }

  uint64_t aligned(uint64_t x) const {
    auto a = align_up(x, L_.alignment);
    if (!a) throw Error(Error::Kind::format, "", std::nullopt, "layout", "the file would be larger than 2^64 bytes");
    return *a;
  }

  void mark(const std::string& path, const char* field) {
    if (marks_) (*marks_)[path + " (" + field + ")"] = sink_.pos();
  }

  [[noreturn]] void drift(const std::string& where, uint64_t planned) const {
    throw std::logic_error("writer drift at " + where + ": planned byte " + std::to_string(planned) +
                           ", the sink is at " + std::to_string(sink_.pos()));
  }

  // Quiet, inside an infos or data span: the spans of single tensors are neither listed nor checked.
  void begin(SpanKind k, const std::string& path) {
    if (quiet_) return;
    start_ = sink_.pos();
    if (check_) {
      if (next_ >= check_->spans.size()) drift(path + " (not in the plan)", sink_.pos());
      const LabeledSpan& s = check_->spans[next_];
      if (s.kind != k || s.span.offset != start_) drift(std::string(span_kind_name(k)) + " " + path, s.span.offset);
    }
    kind_ = k;
    path_ = path;
  }

  void end() {
    if (quiet_) return;
    Span s{start_, sink_.pos() - start_};
    if (record_) record_->spans.push_back({kind_, s, path_});
    if (check_ && check_->spans[next_].span != s) drift(path_ + " (end)", check_->spans[next_].span.end());
    ++next_;
  }

  static constexpr uint64_t kZeros = UINT64_MAX;

  // The bytes from `from` to `to` that belong to no field, split into spans as the reader
  // splits them (add_filler): zeros, or the source tail's bytes from `src_at` on.
  void fill(uint64_t from, uint64_t to, SpanKind pad, SpanKind rest, const std::string& path, uint64_t src_at) {
    Layout pieces;
    pieces.alignment = L_.alignment;
    add_filler(pieces, from, to, pad, rest, path);
    for (const LabeledSpan& piece : pieces.spans) {
      begin(piece.kind, piece.path);
      if (src_at == kZeros || !check_) {
        sink_.zeros(piece.span.size);
      } else {
        copy_plain(*m_.tail->source, src_at + (piece.span.offset - from), piece.span.size);
      }
      end();
    }
  }

  // Source bytes that are not tensor data, through write() so no sink takes them for a tensor.
  void copy_plain(const ByteSource& src, uint64_t at, uint64_t n) {
    std::vector<uint8_t> buf(static_cast<size_t>(std::min<uint64_t>(n, 1 << 20)));
    while (n > 0) {
      size_t k = static_cast<size_t>(std::min<uint64_t>(n, buf.size()));
      src.read_at(at, buf.data(), k);
      sink_.write(buf.data(), k);
      at += k;
      n -= k;
    }
  }

  // v at dst in the file's byte order; its width.
  template <typename T>
  size_t store(T v, uint8_t* dst) const {
    if (m_.order == ByteOrder::big) {
      if constexpr (sizeof(T) == 2) v = __builtin_bswap16(v);
      if constexpr (sizeof(T) == 4) v = __builtin_bswap32(v);
      if constexpr (sizeof(T) == 8) v = __builtin_bswap64(v);
    }
    std::memcpy(dst, &v, sizeof v);
    return sizeof v;
  }
  template <typename T>
  void put(T v) {
    uint8_t b[sizeof v];
    sink_.write(b, store(v, b));
  }
  void u32(uint32_t v) { put(v); }
  void u64(uint64_t v) { put(v); }
  void str(std::string_view s) {
    u64(s.size());
    sink_.write(s.data(), s.size());
  }

  // An array's count and items (after its element type).
  void items(const Value& v, const std::string& path) {
    u64(v.size());
    if (v.elem == ValueType::string && v.strs.big() == (m_.order == ByteOrder::big)) {
      sink_.write(v.strs.region().data(), v.strs.region().size());  // already in the file's layout
    } else if (v.elem == ValueType::string) {
      for (std::string_view s : v.strs) str(s);
    } else if (v.elem == ValueType::array && v.items.big() == (m_.order == ByteOrder::big)) {
      sink_.write(v.items.region().data(), v.items.region().size());  // already in the file's layout
    } else if (v.elem == ValueType::array) {
      for (const Value item : v.items) value(item, path);
    } else {
      numbers(v.elem, v.nums, path);
    }
  }

  // The bits of a fixed-width value of type t at dst; its width.
  size_t encode(ValueType t, uint64_t bits, uint8_t* dst, const std::string& path) const {
    switch (value_type_width(t)) {
      case 1: return store(static_cast<uint8_t>(bits), dst);
      case 2: return store(static_cast<uint16_t>(bits), dst);
      case 4: return store(static_cast<uint32_t>(bits), dst);
      case 8: return store(static_cast<uint64_t>(bits), dst);
    }
    throw Error(Error::Kind::format, "", std::nullopt, path,
                "value type " + std::to_string(static_cast<uint32_t>(t)) + " is not a GGUF type");
  }

  void fixed(ValueType t, uint64_t bits, const std::string& path) {
    uint8_t b[8];
    sink_.write(b, encode(t, bits, b, path));
  }

  // An array's numbers, gathered into few writes (a vocabulary's scores are 150,000).
  void numbers(ValueType t, const NumberList& nums, const std::string& path) {
    if (nums.width() == value_type_width(t) && nums.big() == (m_.order == ByteOrder::big)) {
      sink_.write(nums.region().data(), nums.region().size());  // already in the file's layout
      return;
    }
    uint8_t buf[4096];
    size_t used = 0;
    for (size_t i = 0; i < nums.size(); ++i) {
      if (used > sizeof buf - 8) sink_.write(buf, std::exchange(used, 0));
      used += encode(t, nums[i], buf + used, path);
    }
    sink_.write(buf, used);
  }

  void value(const Value& v, const std::string& path) {
    switch (v.type) {
      case ValueType::string: str(v.str); return;
      case ValueType::array:
        u32(static_cast<uint32_t>(v.elem));
        items(v, path);
        return;
      default:
        fixed(v.type, v.bits, path);
    }
  }

  const Model& m_;
  Sink& sink_;
  Layout* record_;
  const Layout* check_;
  FieldMarks* marks_;
  const Layout& L_;
  size_t next_ = 0;
  bool quiet_ = false;
  uint64_t start_ = 0;
  SpanKind kind_ = SpanKind::magic;
  std::string path_;
};

}  // namespace

namespace {
Layout plan_with(const Model& model, FieldMarks* marks) {
  Layout L;
  L.alignment = model.alignment();
  uint64_t running = 0;
  L.tensor_offsets.reserve(model.tensors.size());
  for (const Tensor& t : model.tensors) {
    uint64_t start = t.offset.value_or(running);
    if (t.offset && (start < running || start % L.alignment != 0))
      throw Error(Error::Kind::format, "", std::nullopt, "tensor " + t.name,
                  "data offset " + std::to_string(start) + " is " +
                      (start < running ? "before the end of the tensor before it, " + std::to_string(running)
                                       : "not a multiple of the alignment " + std::to_string(L.alignment)));
    L.tensor_offsets.push_back(start);
    auto next = packed_next(start, t.nbytes(), L.alignment);
    if (!next) throw Error(Error::Kind::format, "", std::nullopt, "tensor " + t.name, "the data section would pass 2^64 bytes");
    running = *next;
  }
  CountingSink counter;
  Walker(model, counter, &L, nullptr, marks).run();
  return L;
}
}  // namespace

bool keeps_tail(const Model& m, const Layout& L) {
  if (!m.tail || m.tail->relaid || m.tail->alignment != L.alignment || L.tensor_offsets.size() != m.tensors.size()) return false;
  for (size_t i = 0; i < m.tensors.size(); ++i)
    if (m.tensors[i].source != m.tail->source || m.tensors[i].source_offset != m.tail->data_offset + L.tensor_offsets[i])
      return false;
  return true;
}

Layout plan(const Model& model) { return plan_with(model, nullptr); }
Layout plan(const Model& model, FieldMarks& marks) { return plan_with(model, &marks); }

void emit(const Model& model, const Layout& layout, Sink& sink) {
  Walker(model, sink, nullptr, &layout).run();
  sink.finish();
}

std::vector<uint8_t> to_bytes(const Model& model) {
  VectorSink sink;
  emit(model, plan(model), sink);
  return std::move(sink.bytes);
}

Layout write_file(const Model& model, const std::string& path, bool replace) {
  Layout layout = plan(model);
  write_file(model, layout, path, {}, replace);
  return layout;
}

void write_file(const Model& model, const Layout& layout, const std::string& path,
                const std::function<void(int fd)>& finish, bool replace, const Context& ctx) {
  PendingFile out(path, 0666, replace, ctx);
  FdSink sink(out.fd(), path);
  emit(model, layout, sink);
  if (finish) finish(out.fd());
  out.commit();
}


}  // namespace ggufkit
