// dump_sketch: a model as a sketch that write turns back into the same bytes.
#include <cmath>
#include <filesystem>
#include <functional>
#include <utility>

#include "ggufkit/error.h"
#include "ggufkit/text.h"
#include "ggufkit/sketch.h"
#include "ggufkit/writer.h"

namespace ggufkit {

namespace {

// A small document tree, printed as block YAML or as JSON. Strings are always
// double-quoted with escapes both languages read the same way.
struct Doc {
  enum Kind { atom, map, seq } kind = atom;
  std::string text;  // atom: printed as is (a number, a quoted string, a name)
  std::vector<std::string> keys;  // map: the keys of items, in order
  std::vector<Doc> items;         // map: the values; seq: the items
  bool flow = false;  // print on one line
  bool word = false;  // atom: a bare word in YAML (u32, little), quoted in JSON

  static Doc of(std::string t) { return Doc{atom, std::move(t), {}, {}, false, false}; }
  static Doc str(std::string_view s) { return of(json_string(s)); }
  static Doc name(std::string t) { return Doc{atom, std::move(t), {}, {}, false, true}; }
  Doc& add(std::string k, Doc v) {
    keys.push_back(std::move(k));
    items.push_back(std::move(v));
    return *this;
  }
};

Doc new_map(bool flow = false) { return Doc{Doc::map, {}, {}, {}, flow, false}; }
Doc new_seq(bool flow = false) { return Doc{Doc::seq, {}, {}, {}, flow, false}; }

void flow_text(const Doc& d, std::string& out) {
  if (d.kind == Doc::atom) {
    out += d.text;
  } else if (d.kind == Doc::seq) {
    out += '[';
    for (size_t i = 0; i < d.items.size(); ++i) {
      if (i) out += ", ";
      flow_text(d.items[i], out);
    }
    out += ']';
  } else {
    out += '{';
    for (size_t i = 0; i < d.keys.size(); ++i) {
      if (i) out += ", ";
      out += d.keys[i] + ": ";
      flow_text(d.items[i], out);
    }
    out += '}';
  }
}

bool one_line(const Doc& d) {
  return d.kind == Doc::atom || d.flow || d.items.empty();
}

void yaml_map(const Doc& d, size_t indent, bool first_inline, std::string& out);

void yaml_seq(const Doc& d, size_t indent, std::string& out) {
  for (const Doc& item : d.items) {
    out.append(indent, ' ');
    out += "- ";
    if (item.kind == Doc::map && !one_line(item)) {
      yaml_map(item, indent + 2, true, out);
    } else {
      flow_text(item, out);
      out += '\n';
    }
  }
}

void yaml_map(const Doc& d, size_t indent, bool first_inline, std::string& out) {
  for (size_t i = 0; i < d.keys.size(); ++i) {
    if (!(i == 0 && first_inline)) out.append(indent, ' ');
    const std::string& k = d.keys[i];
    const Doc& v = d.items[i];
    out += k + ":";
    if (one_line(v)) {
      out += ' ';
      flow_text(v, out);
      out += '\n';
    } else {
      out += '\n';
      if (v.kind == Doc::map) yaml_map(v, indent + 2, false, out);
      else yaml_seq(v, indent + 2, out);
    }
  }
}

void json_text(const Doc& d, size_t indent, std::string& out) {
  if (one_line(d) && d.kind != Doc::map) {
    if (d.kind == Doc::seq) {  // JSON has no bare words: quote keys in flow maps inside
      out += '[';
      for (size_t i = 0; i < d.items.size(); ++i) {
        if (i) out += ", ";
        json_text(d.items[i], indent, out);
      }
      out += ']';
    } else {
      out += d.word ? json_string(d.text) : d.text;
    }
    return;
  }
  bool is_map = d.kind == Doc::map;
  size_t n = d.items.size();
  bool inline_it = d.flow || n == 0;
  out += is_map ? '{' : '[';
  for (size_t i = 0; i < n; ++i) {
    out += i ? "," : "";
    if (inline_it) {
      out += i ? " " : "";
    } else {
      out += '\n';
      out.append(indent + 2, ' ');
    }
    if (is_map) out += json_string(d.keys[i]) + ": ";
    json_text(d.items[i], indent + 2, out);
  }
  if (!inline_it && n) {
    out += '\n';
    out.append(indent, ' ');
  }
  out += is_map ? '}' : ']';
}

// The shortest text that parses back to the same bits; canonical NaN as "nan";
// any other NaN (a payload, a sign) as its exact bits.
Doc float_doc(const Value& v) {
  bool f32 = v.type == ValueType::f32;
  double d = v.as_f64();
  if (std::isnan(d)) {
    uint64_t canonical = f32 ? 0x7fc00000u : 0x7ff8000000000000ull;
    if (v.bits == canonical) return Doc::str("nan");
    return new_map(true).add("bits", Doc::of(std::to_string(v.bits)));
  }
  return std::isinf(d) ? Doc::str(number_text(v)) : Doc::of(number_text(v));  // JSON has no bare inf
}

Doc string_doc(const std::string& s) {
  if (is_valid_utf8(s)) return Doc::str(s);
  return new_map(true).add("hex", Doc::str(hex_text(s)));
}

Doc value_doc(const Value& v) {
  switch (v.type) {
    case ValueType::string: return string_doc(v.str);
    case ValueType::boolean: return Doc::of(number_text(v));
    case ValueType::f32: case ValueType::f64: return float_doc(v);
    case ValueType::array: {
      Doc seq = new_seq(v.size() == 0);
      v.each([&](const Value& item) {
        if (v.elem == ValueType::array) {
          Doc m = new_map();
          m.add("items", Doc::name(value_type_name(item.elem)));
          m.add("value", value_doc(item));
          seq.items.push_back(std::move(m));
        } else {
          seq.items.push_back(value_doc(item));
        }
        return true;
      });
      return seq;
    }
    default: return Doc::of(number_text(v));
  }
}

// Where a sketch in `sketch_dir` finds `file`: relative to that folder, which is how write
// resolves from:, so the pair can move together; absolute without a folder (standard output).
std::string file_from(const std::string& file, const std::optional<std::string>& sketch_dir) {
  namespace fs = std::filesystem;
  if (!sketch_dir) return fs::absolute(file).string();
  fs::path a = file, b = sketch_dir->empty() ? "." : *sketch_dir;
  if (a.is_absolute() != b.is_absolute()) {
    a = fs::absolute(a);
    b = fs::absolute(b);
  }
  fs::path r = a.lexically_normal().lexically_relative(b.lexically_normal());
  return r.empty() ? fs::absolute(file).string() : r.string();
}

Doc tensor_doc(const Tensor& t, bool inline_data, const std::optional<std::string>& sketch_dir) {
  Doc d = new_map();
  d.add("name", string_doc(t.name));
  const GgmlType* gt = ggml_type(t.type);
  d.add("type", gt ? Doc::name(gt->name) : Doc::of(std::to_string(t.type)));
  Doc dims = new_seq(true);
  for (uint64_t x : t.dims) dims.items.push_back(Doc::of(std::to_string(x)));
  d.add("dims", std::move(dims));
  if (t.offset) d.add("offset", Doc::of(std::to_string(*t.offset)));
  if (!t.source) throw Error(Error::Kind::usage, "", std::nullopt, "tensor " + t.name, "its data cannot be read back (a stream?)");
  uint64_t n = t.nbytes();
  if (t.opaque_bytes && !inline_data) d.add("size", Doc::of(std::to_string(n)));  // no shape sizes it
  if (inline_data) {
    // Read a piece at a time, the first before the size is judged: an exemplar (or a size
    // no file holds) is refused by its read, never by an allocation.
    constexpr uint64_t kPiece = 1 << 20, kMost = uint64_t{256} << 20;
    std::vector<uint8_t> piece(static_cast<size_t>(std::min(n, kPiece)));
    std::string hex;
    for (uint64_t at = 0; at < n; at += piece.size()) {
      const size_t k = static_cast<size_t>(std::min<uint64_t>(piece.size(), n - at));
      t.source->read_at(t.source_offset + at, piece.data(), k);
      if (at == 0 && n > kMost)
        throw Error(Error::Kind::usage, t.source->name(), std::nullopt, "tensor " + t.name,
                    std::to_string(n) + " bytes are too many to write inline (at most " + std::to_string(kMost) +
                        "): dump without inline data refers to the file's bytes");
      hex += hex_text(std::string_view(reinterpret_cast<const char*>(piece.data()), k));
    }
    d.add("bytes", Doc::str(std::move(hex)));
  } else {
    Doc from = new_map(true);
    from.add("file", Doc::str(file_from(t.source->name(), sketch_dir)));
    from.add("offset", Doc::of(std::to_string(t.source_offset)));
    d.add("from", std::move(from));
  }
  return d;
}

// The bytes of the source that no field describes and a writer would not make by itself:
// raw overrides that give them back (truncate_at for bytes after the end, patches for
// non-zero padding, gap and trailing bytes).
Doc tail_doc(const Model& m) {
  Doc raw = new_map();
  Layout L = plan(m);
  if (!keeps_tail(m, L)) return raw;
  Model bare = m;
  bare.tail.reset();
  if (uint64_t plain = plan(bare).file_size; plain != L.file_size) raw.add("truncate_at", Doc::of(std::to_string(L.file_size)));
  Doc patches = new_seq();
  each_span(L, m.tensors, [&](const LabeledSpan& sp) {
    if (sp.kind != SpanKind::padding && sp.kind != SpanKind::tensor_padding && sp.kind != SpanKind::gap &&
        sp.kind != SpanKind::trailing)
      return;
    std::vector<uint8_t> b(static_cast<size_t>(sp.span.size));
    m.tail->source->read_at(sp.span.offset, b.data(), b.size());  // the same offsets: the header is the source's
    for (size_t i = 0; i < b.size();) {
      if (b[i] == 0) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < b.size() && b[j] != 0) ++j;
      Doc p = new_map(true);
      p.add("at", Doc::of(std::to_string(sp.span.offset + i)));
      p.add("hex", Doc::str(hex_text(std::string_view(reinterpret_cast<const char*>(b.data() + i), j - i))));
      patches.items.push_back(std::move(p));
      i = j;
    }
  });
  if (!patches.items.empty()) raw.add("patches", std::move(patches));
  return raw;
}

// What follows prints the document as yaml_map and json_text would print it whole, a piece
// at a time: a pair, a tensor, an item of a large array. The document is never held, so a
// header of a million keys or of millions of nested arrays is printed in little memory.

// The block sequence of the non-empty array v at `indent`, item by item.
void yaml_array(const Value& v, size_t indent, const DumpPut& put) {
  std::string out;
  v.each([&](const Value& item) {
    out.assign(indent, ' ');
    out += "- ";
    if (v.elem == ValueType::array) {  // {items: T, value: ...} as a block map
      out += std::string("items: ") + value_type_name(item.elem) + "\n";
      out.append(indent + 2, ' ');
      out += item.size() == 0 ? "value: []\n" : "value:\n";
      put(out);
      if (item.size() > 0) yaml_array(item, indent + 4, put);
    } else {
      flow_text(value_doc(item), out);
      out += '\n';
      put(out);
    }
    return true;
  });
}

// The JSON array of the non-empty array v, whose line is indented by `indent`.
void json_array(const Value& v, size_t indent, const DumpPut& put) {
  std::string out = "[";
  bool first = true;
  v.each([&](const Value& item) {
    out += std::exchange(first, false) ? "\n" : ",\n";
    out.append(indent + 2, ' ');
    if (v.elem == ValueType::array) {
      out += "{\n";
      out.append(indent + 4, ' ');
      out += "\"items\": " + json_string(value_type_name(item.elem)) + ",\n";
      out.append(indent + 4, ' ');
      out += "\"value\": ";
      if (item.size() == 0) {
        out += "[]";
      } else {
        put(out);
        out.clear();
        json_array(item, indent + 4, put);
      }
      out += '\n';
      out.append(indent + 2, ' ');
      out += '}';
    } else {
      json_text(value_doc(item), indent + 2, out);
    }
    put(out);
    out.clear();
    return true;
  });
  out += '\n';
  out.append(indent, ' ');
  out += ']';
  put(out);
}

// One pair as an item of the metadata sequence; a non-empty array's items one by one.
void pair_text(const KV& kv, bool json, bool first, const DumpPut& put) {
  Doc e = new_map();
  e.add("key", string_doc(kv.key));
  e.add("type", Doc::name(value_type_name(kv.value.type)));
  const bool array = kv.value.type == ValueType::array;
  if (array) e.add("items", Doc::name(value_type_name(kv.value.elem)));
  const bool streamed = array && kv.value.size() > 0;
  if (!streamed) e.add("value", value_doc(kv.value));
  std::string out;
  if (json) {
    out = first ? "\n    " : ",\n    ";
    json_text(e, 4, out);
    if (streamed) {
      out.resize(out.size() - 6);  // reopened: "\n    }"
      out += ",\n      \"value\": ";
      put(out);
      json_array(kv.value, 6, put);
      put("\n    }");
      return;
    }
  } else {
    Doc one = new_seq();
    one.items.push_back(std::move(e));
    yaml_seq(one, 2, out);
    if (streamed) out += "    value:\n";
  }
  put(out);
  if (streamed && !json) yaml_array(kv.value, 6, put);
}

}  // namespace

void dump_sketch(const Model& m, const DumpOptions& o, const DumpPut& put) {
  std::vector<std::pair<std::string, Doc>> head;
  head.emplace_back("version", Doc::of(std::to_string(m.version)));
  head.emplace_back("byte_order", Doc::name(m.order == ByteOrder::big ? "big" : "little"));
  head.emplace_back("pad_end", Doc::of(m.pad_end ? "true" : "false"));
  Doc raw = tail_doc(m);
  bool first = true;
  std::string out;
  // One member of the root map, as yaml_map or json_text prints it.
  auto member = [&](const std::string& key, Doc v) {
    out.clear();
    if (o.json) {
      out += std::exchange(first, false) ? "\n  " : ",\n  ";
      out += json_string(key) + ": ";
      json_text(v, 2, out);
    } else {
      Doc one = new_map();
      one.add(key, std::move(v));
      yaml_map(one, 0, false, out);
    }
    put(out);
  };
  // A sequence member, item by item.
  auto sequence = [&](const std::string& key, size_t n, const std::function<void(size_t, bool)>& item) {
    if (n == 0) return member(key, new_seq(true));
    put(o.json ? std::string(std::exchange(first, false) ? "\n  " : ",\n  ") + json_string(key) + ": [" : key + ":\n");
    for (size_t i = 0; i < n; ++i) item(i, i == 0);
    if (o.json) put("\n  ]");
  };
  put(o.json ? "{" : "# a ggufkit sketch: 'ggufkit write' turns it back into the same bytes\n");
  for (auto& [k, v] : head) member(k, std::move(v));
  sequence("metadata", m.metadata.size(), [&](size_t i, bool at_first) { pair_text(m.metadata[i], o.json, at_first, put); });
  sequence("tensors", m.tensors.size(), [&](size_t i, bool at_first) {
    Doc t = tensor_doc(m.tensors[i], o.inline_data, o.sketch_dir);
    out = o.json ? (at_first ? "\n    " : ",\n    ") : "";
    if (o.json) {
      json_text(t, 4, out);
    } else {
      Doc one = new_seq();
      one.items.push_back(std::move(t));
      yaml_seq(one, 2, out);
    }
    put(out);
  });
  if (!raw.keys.empty()) member("raw", std::move(raw));
  if (o.json) put("\n}\n");
}

std::string dump_sketch(const Model& m, const DumpOptions& o) {
  std::string text;
  dump_sketch(m, o, [&](std::string_view piece) { text += piece; });
  return text;
}

}  // namespace ggufkit
