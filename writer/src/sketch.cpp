#include "ggufkit/sketch.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <cerrno>
#include <functional>
#include <filesystem>
#include <set>

#include "ggufkit/encode.h"
#include "ggufkit/error.h"
#include "ggufkit/scan.h"
#include "ggufkit/yaml_values.h"

namespace ggufkit {

namespace {

namespace fs = std::filesystem;



// Fills [[NAME]] placeholders (NAME an identifier) from the defines; an unfilled one is
// an error naming its line and column.
std::string fill_defines(const std::string& text, const std::string& name, const Defines& defines) {
  std::string out;
  size_t i = 0;
  while (true) {
    size_t open = text.find("[[", i);
    if (open == std::string::npos) break;
    size_t close = text.find("]]", open + 2);
    std::string id = close == std::string::npos ? "" : text.substr(open + 2, close - open - 2);
    bool ident = !id.empty() && (std::isalpha(static_cast<unsigned char>(id[0])) || id[0] == '_') &&
                 std::all_of(id.begin(), id.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!ident) {  // a nested flow list, not a placeholder (yet: "[[[X]]]" holds one)
      out.append(text, i, open + 1 - i);
      i = open + 1;
      continue;
    }
    auto it = defines.find(id);
    if (it == defines.end()) {
      int line = static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(open), '\n'));
      size_t bol = text.rfind('\n', open);
      int col = static_cast<int>(open - (bol == std::string::npos ? 0 : bol + 1));
      throw Error(Error::Kind::format, yaml_where(name, line, col), std::nullopt, "[[" + id + "]]",
                  "this placeholder has no value; pass -D " + id + "=VALUE");
    }
    out.append(text, i, open - i);
    out += it->second;
    i = close + 2;
  }
  out.append(text, i, std::string::npos);
  return out;
}

class Parser : public YamlReader {
 public:
  using YamlReader::YamlReader;

  Sketch run(const YamlNode& root) {
    Sketch s;
    if (!root.IsMap()) fail(root, "sketch", "expected a mapping with metadata: and tensors:");
    fields(root, "sketch", {"version", "byte_order", "pad_end", "metadata", "tensors", "raw"});
    Model& m = s.model;
    if (root["version"]) {
      m.version = static_cast<uint32_t>(unsigned_of(root["version"], "version", 3));
      if (m.version != 2 && m.version != 3)
        fail(root["version"], "version", "version must be 2 or 3 (use raw: {version: N} for others)");
    }
    if (root["byte_order"]) {
      std::string bo = scalar(root["byte_order"], "byte_order");
      if (bo != "little" && bo != "big") fail(root["byte_order"], "byte_order", "expected little or big, found '" + bo + "'");
      m.order = bo == "big" ? ByteOrder::big : ByteOrder::little;
    }
    if (root["pad_end"]) m.pad_end = boolean(root["pad_end"], "pad_end");
    if (const YamlNode& md = root["metadata"]; md) {
      if (!md.IsSequence()) fail(md, "metadata", "expected a list of entries");
      for (size_t i = 0; i < md.size(); ++i) entry(md[i], "metadata[" + std::to_string(i) + "]", s);
    }
    if (const YamlNode& ts = root["tensors"]; ts) {
      if (!ts.IsSequence()) fail(ts, "tensors", "expected a list of tensors");
      for (size_t i = 0; i < ts.size(); ++i) tensor(ts[i], "tensors[" + std::to_string(i) + "]", s);
    }
    if (const YamlNode& raw = root["raw"]; raw) file_raw(raw, s);
    return s;
  }

 private:
  void entry(const YamlNode& e, const std::string& at, Sketch& s) {
    if (e.IsMap() && e["include"]) return include(e, at, s);
    fields(e, at, {"key", "type", "items", "value", "file", "raw"});
    if (!e["key"]) fail(e, at, "an entry needs key:");
    std::string key = string_of(e["key"], at);
    std::string entry_name = at + " " + key;
    if (!e["type"]) fail(e, entry_name, "an entry needs type: (u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool string array)");
    ValueType t = value_type(e["type"], entry_name);
    if (e["items"] && t != ValueType::array) fail(e["items"], entry_name, "items: is only for type array");
    KV kv{key, {}};
    if (e["file"]) {
      if (t != ValueType::string) fail(e["file"], entry_name, "file: gives a string; the type here is " + std::string(value_type_name(t)));
      if (e["value"]) fail(e["file"], entry_name, "give value: or file:, not both");
      kv.value = Value::of_string(read_text_file(e["file"], entry_name));
    } else {
      kv.value = value(t, e["value"], e, entry_name, 0);
    }
    size_t i = s.model.metadata.size();
    if (const YamlNode& raw = e["raw"]; raw) {
      std::string index = "kv[" + std::to_string(i) + "]", path = index + " " + key;
      fields(raw, entry_name + " raw", {"key_length", "type", "string_length", "array_type", "array_count", "value"});
      auto add = [&](const char* f, const std::string& field, uint32_t w) {
        if (raw[f]) s.overrides.push_back({field, unsigned_of(raw[f], entry_name + " raw " + f, w), w});
      };
      add("key_length", index + " (key length)", 8);
      add("type", path + " (type)", 4);
      if (raw["string_length"] && t != ValueType::string) fail(raw["string_length"], entry_name, "string_length: needs a string value");
      if ((raw["array_type"] || raw["array_count"]) && t != ValueType::array)
        fail(raw, entry_name, "array_type: and array_count: need an array value");
      if (raw["value"] && value_type_width(t) == 0) fail(raw["value"], entry_name, "value: needs a fixed-width value");
      add("string_length", path + " (string length)", 8);
      add("array_type", path + " (array type)", 4);
      add("array_count", path + " (array count)", 8);
      add("value", path + " (value)", value_type_width(t));
    }
    s.model.metadata.push_back(std::move(kv));
  }

  // - include: other.gguf   (prefix: tokenizer.)  copies another file's entries in order.
  void include(const YamlNode& e, const std::string& at, Sketch& s) {
    fields(e, at, {"include", "prefix"});
    std::string rel = scalar(e["include"], at);
    fs::path p = resolve(rel);
    std::string prefix = e["prefix"] ? scalar(e["prefix"], at) : "";
    Scanned other = [&] {
      try {
        return scan_file(p.string());
      } catch (const Error& err) {
        fail(e["include"], at, std::string("cannot include: ") + err.what());
      }
    }();
    for (auto& kv : other.model.metadata)
      if (kv.key.compare(0, prefix.size(), prefix) == 0) s.model.metadata.push_back(std::move(kv));
  }

  void tensor(const YamlNode& n, const std::string& at, Sketch& s) {
    fields(n, at, {"name", "type", "dims", "offset", "values", "fill", "bytes", "from", "raw", "size"});
    if (!n["name"]) fail(n, at, "a tensor needs name:");
    Tensor t;
    t.name = string_of(n["name"], at);
    std::string entry = at + " " + t.name;
    if (!n["type"]) fail(n, entry, "a tensor needs type: (f32, f16, q8_0, q4_K, ...)");
    std::string tname = scalar(n["type"], entry);
    const GgmlType* gt = ggml_type_by_name(tname);
    // A type id (1000) as well as a name: one no table sizes, or a removed one, makes an
    // opaque tensor, whose bytes: or size: give its size (as a reader measures it).
    if (!gt && !tname.empty() && std::all_of(tname.begin(), tname.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      t.type = static_cast<uint32_t>(unsigned_of(n["type"], entry, 4));
      gt = ggml_type(t.type);
    } else if (!gt) {
      fail(n["type"], entry, "'" + tname + "' is not a ggml type (f32, f16, bf16, q8_0, q4_0, q4_K, ..., or an id: 1000)");
    } else {
      t.type = gt->id;
    }
    const bool opaque = !gt || gt->removed;
    if (!n["dims"] || !n["dims"].IsSequence()) fail(n, entry, "a tensor needs dims: [ne0, ne1, ...], innermost first");
    if (n["dims"].size() > kMaxDims) fail(n["dims"], entry, std::to_string(n["dims"].size()) + " dims; ggml allows 4 (raw: {n_dims: N} writes a broken count)");
    for (const auto& d : n["dims"]) t.dims.push_back(unsigned_of(d, entry, 8));
    if (n["offset"]) t.offset = unsigned_of(n["offset"], entry, 8);  // a gap before it; plan checks it
    std::string why;
    std::optional<uint64_t> nbytes;
    if (opaque) {
      if (!element_count(t.dims, &why)) fail(n["dims"], entry, why);
      const YamlNode& f = n["fill"];
      if (n["values"] || (f && !(f.IsScalar() && f.Scalar() == "zeros") && !(f.IsMap() && f["random_bytes"])))
        fail(n, entry, ggml_type_name(t.type) + " has no layout here to encode values: give bytes:, fill: zeros or random_bytes:, or from:");
      if (n["size"]) nbytes = unsigned_of(n["size"], entry, 8);
      else if (n["bytes"]) nbytes = hex_of(n["bytes"], entry).size();
      else fail(n, entry, ggml_type_name(t.type) + " cannot be sized from its shape: give size: (bytes)");
      t.opaque_bytes = nbytes;
    } else {
      if (n["size"]) fail(n["size"], entry, "size: is for a type ggufkit cannot size; a " + std::string(gt->name) + " tensor's size comes from its shape");
      nbytes = tensor_nbytes(*gt, t.dims, &why);
      if (!nbytes) fail(n["dims"], entry, why);
    }
    uint64_t elements = t.elements();
    bool big = s.model.order == ByteOrder::big;

    int given = !!n["values"] + !!n["fill"] + !!n["bytes"] + !!n["from"];
    if (given != 1) fail(n, entry, "give the data as one of values:, fill:, bytes: or from:");
    if (const YamlNode& v = n["values"]; v) {
      need_encodable(v, entry, *gt, big);
      if (!v.IsSequence() || v.size() != elements)
        fail(v, entry, "values: needs a list of " + std::to_string(elements) + " numbers, found " +
                           (v.IsSequence() ? std::to_string(v.size()) : std::string("no list")));
      t.source = values_source(v, entry, *gt, elements, *nbytes, big);
    } else if (const YamlNode& f = n["fill"]; f) {
      t.source = fill(f, entry, gt ? *gt : *ggml_type(0), elements, *nbytes, big);  // opaque: zeros or random bytes only
    } else if (const YamlNode& b = n["bytes"]; b) {
      auto bytes = hex_of(b, entry);
      if (bytes.size() != *nbytes)
        fail(b, entry, "bytes: " + std::to_string(bytes.size()) + " bytes given; a " + ggml_type_name(t.type) + " tensor of this shape has " + std::to_string(*nbytes));
      t.source = from_bytes(t.name, std::move(bytes));
    } else {
      const YamlNode& fr = n["from"];
      fields(fr, entry, {"file", "offset"});
      if (!fr["file"]) fail(fr, entry, "from: needs file: (and offset:)");
      std::string rel = scalar(fr["file"], entry);
      fs::path p = resolve(rel);
      auto& src = sources_[p.string()];
      if (!src) {
        try {
          src = open_file(p.string());
        } catch (const Error& err) {
          fail(fr["file"], entry, err.what());
        }
      }
      uint64_t off = fr["offset"] ? unsigned_of(fr["offset"], entry, 8) : 0;
      if (off > src->size() || *nbytes > src->size() - off)
        fail(fr, entry, "from: " + std::to_string(*nbytes) + " bytes at offset " + std::to_string(off) + " are past the end of " +
                            p.string() + " (" + std::to_string(src->size()) + " bytes)");
      t.source = src;
      t.source_offset = off;
    }
    size_t i = s.model.tensors.size();
    if (const YamlNode& raw = n["raw"]; raw) {
      std::string index = "tensor[" + std::to_string(i) + "]", path = index + " " + t.name;
      fields(raw, entry + " raw", {"name_length", "n_dims", "type", "offset"});
      auto add = [&](const char* f, const std::string& field, uint32_t w) {
        if (raw[f]) s.overrides.push_back({field, unsigned_of(raw[f], entry + " raw " + f, w), w});
      };
      add("name_length", index + " (name length)", 8);
      add("n_dims", path + " (n_dims)", 4);
      add("type", path + " (type)", 4);
      add("offset", path + " (offset)", 8);
    }
    s.model.tensors.push_back(std::move(t));
  }

  // The bytes of a values: list. Integer types are read as exact integers, checked
  // against their range; the others as numbers, encoded (or quantized) as ggml does.
  std::shared_ptr<const ByteSource> values_source(const YamlNode& v, const std::string& entry, const GgmlType& gt,
                                                  uint64_t elements, uint64_t nbytes, bool big) {
    std::vector<uint8_t> bytes(nbytes);
    if (gt.block == 1 && gt.name[0] == 'i') {  // i8 i16 i32 i64
      for (uint64_t i = 0; i < elements; ++i) {
        auto x = static_cast<uint64_t>(signed_of(v[i], entry, gt.size));
        for (uint32_t b = 0; b < gt.size; ++b) bytes[i * gt.size + (big ? gt.size - 1 - b : b)] = static_cast<uint8_t>(x >> (8 * b));
      }
    } else {
      std::vector<double> values;
      values.reserve(elements);
      for (const auto& x : v) values.push_back(number(x, entry));
      encode(gt, values.data(), elements, bytes.data(), big);
    }
    return from_bytes(entry, std::move(bytes));
  }

  void need_encodable(const YamlNode& n, const std::string& entry, const GgmlType& gt, bool big) {
    if (!can_encode(gt))
      fail(n, entry, std::string("values for ") + gt.name + " cannot be encoded here (f32 f16 bf16 f64 i8-i64 q8_0 q4_0 can); use bytes:, from: or fill: {random_bytes: ...}");
    if (big && gt.block > 1) fail(n, entry, std::string("quantized values in a big-endian file are not supported; use bytes:"));
  }

  std::shared_ptr<const ByteSource> fill(const YamlNode& f, const std::string& entry, const GgmlType& gt,
                                         uint64_t elements, uint64_t nbytes, bool big) {
    if (f.IsScalar() && f.Scalar() == "zeros") return constant_source(entry, nbytes, 0);  // 0.0 in every type
    if (f.IsScalar() && f.Scalar() == "ones") {
      need_encodable(f, entry, gt, big);
      return encoded_source(entry, gt, elements, [](uint64_t) { return 1.0; }, big);
    }
    fields(f, entry + " fill", {"ramp", "normal", "uniform", "random_bytes"});
    if (f.size() != 1) fail(f, entry, "fill: zeros, ones, or one of ramp:, normal:, uniform:, random_bytes:");
    auto num = [&](const YamlNode& m, const char* k, double dflt) { return m[k] ? number(m[k], entry) : dflt; };
    auto seed = [&](const YamlNode& m) { return m["seed"] ? unsigned_of(m["seed"], entry, 8) : 0; };
    if (const YamlNode& r = f["random_bytes"]; r) {
      fields(r, entry + " fill random_bytes", {"seed"});
      return random_bytes_source(entry, nbytes, seed(r));
    }
    need_encodable(f, entry, gt, big);
    if (const YamlNode& r = f["ramp"]; r) {
      fields(r, entry + " fill ramp", {"start", "step"});
      double start = num(r, "start", 0), step = num(r, "step", 1);
      return encoded_source(entry, gt, elements, [start, step](uint64_t i) { return start + step * static_cast<double>(i); }, big);
    }
    if (const YamlNode& r = f["uniform"]; r) {
      fields(r, entry + " fill uniform", {"seed", "min", "max"});
      double lo = num(r, "min", -1), hi = num(r, "max", 1);
      uint64_t sd = seed(r);
      return encoded_source(entry, gt, elements, [=](uint64_t i) { return lo + (hi - lo) * unit(sd, i); }, big);
    }
    const YamlNode& r = f["normal"];
    fields(r, entry + " fill normal", {"seed", "mean", "std"});
    double mean = num(r, "mean", 0), sd_dev = num(r, "std", 1);
    uint64_t sd = seed(r);
    return encoded_source(entry, gt, elements, [=](uint64_t i) {
      // Box-Muller from two seeded uniforms of the element's index.
      double u1 = 1.0 - unit(sd, 2 * i), u2 = unit(sd, 2 * i + 1);
      return mean + sd_dev * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }, big);
  }

  // A uniform number in [0, 1) from a seed and an index.
  static double unit(uint64_t seed, uint64_t i) { return static_cast<double>(mix64(seed ^ mix64(i)) >> 11) * 0x1.0p-53; }

  void file_raw(const YamlNode& raw, Sketch& s) {
    fields(raw, "raw", {"magic", "version", "tensor_count", "kv_count", "padding_byte", "truncate_at", "patches"});
    if (raw["magic"]) {
      std::string m = string_of(raw["magic"], "raw magic");
      if (m.size() != 4) fail(raw["magic"], "raw magic", "the magic is 4 bytes, found " + std::to_string(m.size()));
      s.magic = m;
    }
    if (raw["version"]) s.overrides.push_back({"head (version)", unsigned_of(raw["version"], "raw version", 4), 4});
    if (raw["tensor_count"]) s.overrides.push_back({"head (tensor count)", unsigned_of(raw["tensor_count"], "raw tensor_count", 8), 8});
    if (raw["kv_count"]) s.overrides.push_back({"head (kv count)", unsigned_of(raw["kv_count"], "raw kv_count", 8), 8});
    if (raw["padding_byte"]) s.padding_byte = static_cast<uint8_t>(unsigned_of(raw["padding_byte"], "raw padding_byte", 1));
    if (raw["truncate_at"]) s.truncate_at = unsigned_of(raw["truncate_at"], "raw truncate_at", 8);
    if (const YamlNode& ps = raw["patches"]; ps) {
      if (!ps.IsSequence()) fail(ps, "raw patches", "expected a list of {at: N, hex: \"..\"}");
      for (const auto& p : ps) {
        fields(p, "raw patches", {"at", "hex"});
        if (!p["at"] || !p["hex"]) fail(p, "raw patches", "a patch needs at: and hex:");
        auto bytes = hex_of(p["hex"], "raw patches");
        s.patches.push_back({unsigned_of(p["at"], "raw patches", 8), std::move(bytes)});
      }
    }
  }

  std::map<std::string, std::shared_ptr<const ByteSource>> sources_;  // one open file per path
};

void put(std::vector<uint8_t>& out, uint64_t v, uint32_t width, bool big) {
  for (uint32_t i = 0; i < width; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * (big ? width - 1 - i : i))));
}

}  // namespace

Sketch parse_sketch(const std::string& text, const std::string& name, const std::string& base_dir, const Defines& defines) {
  std::string filled = fill_defines(text, name, defines);
  return Parser(name, base_dir).run(load_yaml(filled, name));
}

Sketch read_sketch(const std::string& path, const Defines& defines) {
  std::string base = fs::path(path).parent_path().string();
  return parse_sketch(read_document(path), path, base.empty() ? "." : base, defines);
}

Edits sketch_edits(const Sketch& s, const Layout& layout, const FieldMarks& marks) {
  Edits e;
  bool big = s.model.order == ByteOrder::big;
  if (s.padding_byte)
    for (const auto& sp : layout.spans)
      if (sp.kind == SpanKind::padding || sp.kind == SpanKind::tensor_padding)
        e.patches.push_back({sp.span.offset, std::vector<uint8_t>(sp.span.size, *s.padding_byte)});
  if (s.magic) e.patches.push_back({marks.at("head (magic)"), std::vector<uint8_t>(s.magic->begin(), s.magic->end())});
  for (const Override& o : s.overrides) {
    auto it = marks.find(o.field);
    if (it == marks.end()) throw std::logic_error("no field " + o.field + " in the plan");
    BytePatch p{it->second, {}};
    put(p.bytes, o.value, o.width, big);
    e.patches.push_back(std::move(p));
  }
  e.patches.insert(e.patches.end(), s.patches.begin(), s.patches.end());
  // The file is cut or extended first, so a patch may land in bytes truncate_at added.
  uint64_t size = s.truncate_at.value_or(layout.file_size);
  for (const auto& p : e.patches)
    if (p.at > size || p.bytes.size() > size - p.at)
      throw Error(Error::Kind::format, "", p.at, "raw", "a patch of " + std::to_string(p.bytes.size()) +
                                                           " bytes runs past the end of the " + std::to_string(size) + "-byte file");
  e.truncate_at = s.truncate_at;
  return e;
}

std::vector<uint8_t> sketch_bytes(const Sketch& s) {
  FieldMarks marks;
  Layout L = plan(s.model, marks);
  VectorSink sink;
  emit(s.model, L, sink);
  Edits e = sketch_edits(s, L, marks);
  if (e.truncate_at) sink.bytes.resize(*e.truncate_at);
  for (const auto& p : e.patches) std::copy(p.bytes.begin(), p.bytes.end(), sink.bytes.begin() + static_cast<long>(p.at));
  return std::move(sink.bytes);
}

namespace {

// Keeps what emit() writes as pieces: header bytes in memory, copied data as a reference
// to where it is read from (never read here).
class PieceSink final : public Sink {
 public:
  struct Piece {
    uint64_t at = 0;
    std::vector<uint8_t> bytes;           // or, when from is set,
    const ByteSource* from = nullptr;     // n bytes of it from `offset`
    uint64_t offset = 0, n = 0;
    uint64_t end() const { return at + (from ? n : bytes.size()); }
  };
  std::vector<Piece> pieces;  // in order, each ending where the next starts

 protected:
  void put(const void* data, size_t n) override {
    if (pieces.empty() || pieces.back().from) pieces.push_back({pos(), {}, nullptr, 0, 0});
    const auto* p = static_cast<const uint8_t*>(data);
    pieces.back().bytes.insert(pieces.back().bytes.end(), p, p + n);
  }
  void transfer(const ByteSource& src, uint64_t offset, uint64_t n) override {
    if (n) pieces.push_back({pos(), {}, &src, offset, n});
  }
};

class SketchSource final : public ByteSource {
 public:
  explicit SketchSource(const Sketch& s) : name_("the sketch's file") {
    for (const Tensor& t : s.model.tensors) keep_.push_back(t.source);  // what the pieces point into
    if (s.model.tail) keep_.push_back(s.model.tail->source);
    FieldMarks marks;
    Layout L = plan(s.model, marks);
    emit(s.model, L, sink_);
    Edits e = sketch_edits(s, L, marks);
    size_ = e.truncate_at.value_or(L.file_size);
    patches_ = std::move(e.patches);
  }
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }
  void read_at(uint64_t offset, void* dst, size_t n) const override {
    if (offset > size_ || n > size_ - offset) {
      errno = 0;
      throw_io(name_, "read of " + std::to_string(n) + " bytes at " + std::to_string(offset) + " is past the end (" +
                          std::to_string(size_) + " bytes)");
    }
    auto* out = static_cast<uint8_t*>(dst);
    std::memset(out, 0, n);  // past the emitted end: the zeros truncate_at adds
    const uint64_t end = offset + n;
    auto copy = [&](uint64_t at, uint64_t len, const std::function<void(uint64_t from, uint8_t* to, uint64_t k)>& get) {
      uint64_t lo = std::max(at, offset), hi = std::min(at + len, end);
      if (lo < hi) get(lo - at, out + (lo - offset), hi - lo);
    };
    for (const auto& p : sink_.pieces) {
      if (p.at >= end) break;
      if (p.end() <= offset) continue;
      if (p.from) copy(p.at, p.n, [&](uint64_t from, uint8_t* to, uint64_t k) { p.from->read_at(p.offset + from, to, k); });
      else copy(p.at, p.bytes.size(), [&](uint64_t from, uint8_t* to, uint64_t k) { std::memcpy(to, p.bytes.data() + from, k); });
    }
    for (const auto& p : patches_)  // after the cut, as write_sketch writes them
      copy(p.at, p.bytes.size(), [&](uint64_t from, uint8_t* to, uint64_t k) { std::memcpy(to, p.bytes.data() + from, k); });
  }

 private:
  std::string name_;
  std::vector<std::shared_ptr<const ByteSource>> keep_;
  PieceSink sink_;
  uint64_t size_ = 0;
  std::vector<BytePatch> patches_;
};

}  // namespace

std::shared_ptr<const ByteSource> sketch_source(const Sketch& s) { return std::make_shared<SketchSource>(s); }

Layout write_sketch(const Sketch& s, const std::string& path, bool replace, const Context& ctx) {
  FieldMarks marks;
  Layout L = plan(s.model, marks);
  Edits e = sketch_edits(s, L, marks);
  write_file(s.model, L, path, [&](int fd) {
    if (e.truncate_at && ::ftruncate(fd, static_cast<off_t>(*e.truncate_at)) != 0) throw_io(path, "cannot truncate");
    for (const auto& p : e.patches)
      if (::pwrite(fd, p.bytes.data(), p.bytes.size(), static_cast<off_t>(p.at)) != static_cast<ssize_t>(p.bytes.size()))
        throw_io(path, "cannot write a raw override at byte " + std::to_string(p.at));
  }, replace, ctx);
  return L;
}

}  // namespace ggufkit
