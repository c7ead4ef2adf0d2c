#include "ggufkit/writer.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

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
    for (size_t i = 0; i < m_.metadata.size(); ++i) {
      const KV& kv = m_.metadata[i];
      std::string index = "kv[" + std::to_string(i) + "]", path = index + " " + kv.key;
      begin(SpanKind::kv_key, path);
      mark(index, "key length");
      str(kv.key);
      end();
      begin(SpanKind::kv_type, path);
      mark(path, "type");
      u32(static_cast<uint32_t>(kv.value.type));
      end();
      begin(SpanKind::kv_value, path);
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
      end();
    }
    for (size_t i = 0; i < m_.tensors.size(); ++i) {
      const Tensor& t = m_.tensors[i];
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
    uint64_t header_size = sink_.pos();
    uint64_t data_offset = aligned(header_size);
    if (record_) {
      record_->header_size = header_size;
      record_->data_offset = data_offset;
    }
    if (!m_.tensors.empty() || m_.pad_end) pad(SpanKind::padding, data_offset, "");
    for (size_t i = 0; i < m_.tensors.size(); ++i) {
      const Tensor& t = m_.tensors[i];
      std::string path = path_of(i);
      if (sink_.pos() - data_offset != L_.tensor_offsets[i])  // as ggml's writer asserts
        drift(path, data_offset + L_.tensor_offsets[i]);
      uint64_t n = t.nbytes();
      begin(SpanKind::tensor_data, path);
      if (check_ && !t.source)
        throw Error(Error::Kind::format, "", std::nullopt, path, "the tensor has no data to write");
      if (check_) sink_.copy(*t.source, t.source_offset, n);
      else sink_.copy(MemorySource("", {}), 0, n);  // counting: no bytes are touched
      end();
      uint64_t next = i + 1 < m_.tensors.size() ? data_offset + L_.tensor_offsets[i + 1]
                      : m_.pad_end              ? aligned(sink_.pos())
                                                : sink_.pos();
      pad(SpanKind::tensor_padding, next, path);
    }
    if (record_) record_->file_size = sink_.pos();
    if (check_ && sink_.pos() != check_->file_size) drift("end of file", check_->file_size);
  }

 private:
  std::string path_of(size_t i) const { return "tensor[" + std::to_string(i) + "] " + m_.tensors[i].name; }

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

  void begin(SpanKind k, const std::string& path) {
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
    Span s{start_, sink_.pos() - start_};
    if (record_) record_->spans.push_back({kind_, s, path_});
    if (check_ && check_->spans[next_].span != s) drift(path_ + " (end)", check_->spans[next_].span.end());
    ++next_;
  }

  void pad(SpanKind k, uint64_t to, const std::string& path) {
    if (to <= sink_.pos()) return;  // zero-length padding is not a span
    begin(k, path);
    sink_.zeros(to - sink_.pos());
    end();
  }

  template <typename T>
  void put(T v) {
    if (m_.order == ByteOrder::big) {
      if constexpr (sizeof(T) == 2) v = __builtin_bswap16(v);
      if constexpr (sizeof(T) == 4) v = __builtin_bswap32(v);
      if constexpr (sizeof(T) == 8) v = __builtin_bswap64(v);
    }
    sink_.write(&v, sizeof v);
  }
  void u32(uint32_t v) { put(v); }
  void u64(uint64_t v) { put(v); }
  void str(const std::string& s) {
    u64(s.size());
    sink_.write(s.data(), s.size());
  }

  // An array's count and items (after its element type).
  void items(const Value& v, const std::string& path) {
    u64(v.size());
    if (v.elem == ValueType::string) {
      for (const std::string& s : v.strs) str(s);
    } else if (v.elem == ValueType::array) {
      for (const Value& item : v.items) {
        if (item.type != ValueType::array)
          throw Error(Error::Kind::format, "", std::nullopt, path, std::string("an item of type ") +
                                                                      value_type_name(item.type) + " in an array of arrays");
        value(item, path);
      }
    } else {
      for (uint64_t bits : v.nums) fixed(v.elem, bits, path);
    }
  }

  void fixed(ValueType t, uint64_t bits, const std::string& path) {
    switch (value_type_width(t)) {
      case 1: put(static_cast<uint8_t>(bits)); return;
      case 2: put(static_cast<uint16_t>(bits)); return;
      case 4: put(static_cast<uint32_t>(bits)); return;
      case 8: put(static_cast<uint64_t>(bits)); return;
    }
    throw Error(Error::Kind::format, "", std::nullopt, path,
                "value type " + std::to_string(static_cast<uint32_t>(t)) + " is not a GGUF type");
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
  for (const Tensor& t : model.tensors) {
    L.tensor_offsets.push_back(running);
    auto next = checked_add(running, t.nbytes());
    if (next) next = align_up(*next, L.alignment);
    if (!next) throw Error(Error::Kind::format, "", std::nullopt, "tensor " + t.name, "the data section would pass 2^64 bytes");
    running = *next;
  }
  CountingSink counter;
  Walker(model, counter, &L, nullptr, marks).run();
  return L;
}
}  // namespace

Layout plan(const Model& model) { return plan_with(model, nullptr); }
Layout plan(const Model& model, FieldMarks& marks) { return plan_with(model, &marks); }

void emit(const Model& model, const Layout& layout, Sink& sink) {
  Walker(model, sink, nullptr, &layout).run();
}

std::vector<uint8_t> to_bytes(const Model& model) {
  VectorSink sink;
  emit(model, plan(model), sink);
  return std::move(sink.bytes);
}

Layout write_file(const Model& model, const std::string& path) {
  Layout layout = plan(model);
  write_file(model, layout, path, {});
  return layout;
}

void write_file(const Model& model, const Layout& layout, const std::string& path,
                const std::function<void(int fd)>& finish) {
  PendingFile out(path, 0644);
  FdSink sink(out.fd(), path);
  emit(model, layout, sink);
  if (finish) finish(out.fd());
  out.commit();
}

Model walkthrough_model() {
  Model m;
  m.metadata = {
      {"general.architecture", Value::of_string("counts")},
      {"general.name", Value::of_string("Counts walkthrough file")},
      {"general.alignment", Value::of_u32(64)},
      {"counts.block_count", Value::of_u32(1)},
      {"counts.tokens", Value::strings({"alpha", "bravo", "delta"})},
  };
  std::vector<uint8_t> data;
  for (float f : {0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f}) {
    uint8_t b[4];
    std::memcpy(b, &f, 4);  // little-endian host, as the file
    data.insert(data.end(), b, b + 4);
  }
  Tensor t;
  t.name = "blk.0.counts.weight";
  t.dims = {3, 2};
  t.type = 0;  // f32
  t.source = from_bytes("walkthrough tensor", std::move(data));
  m.tensors.push_back(std::move(t));
  m.pad_end = false;
  return m;
}

}  // namespace ggufkit
