#include "ggufkit/inspect.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <set>

#include "ggufkit/error.h"
#include "ggufkit/numeric.h"

namespace ggufkit {

namespace {

constexpr uint64_t kPiece = 1 << 20;

// Reads a tensor's bytes in pieces of whole blocks, never whole.
template <typename Fn>
void for_each_piece(const Tensor& t, Fn fn, const TensorProgress& progress = {}) {
  if (!t.source) throw Error(Error::Kind::format, "", std::nullopt, "tensor " + t.name, "the tensor has no data source");
  const GgmlType* gt = ggml_type(t.type);
  uint64_t n = t.nbytes(), step = gt && gt->size ? std::max<uint64_t>(gt->size, kPiece / gt->size * gt->size) : kPiece;
  std::vector<uint8_t> buf(static_cast<size_t>(std::min(n, step)));
  for (uint64_t done = 0; done < n;) {
    size_t k = static_cast<size_t>(std::min(n - done, step));
    t.source->read_at(t.source_offset + done, buf.data(), k);
    fn(buf.data(), k);
    done += k;
    if (progress) progress(done, n);
  }
}

}  // namespace

namespace {
// 4 (Q4_1 with the embeddings and output in F16) left llama.h, but old files hold it.
constexpr FileType kFileTypes[] = {
    {0, "F32", 0, true},        {1, "F16", 1, true},        {2, "Q4_0", 2, true},       {3, "Q4_1", 3, true},
    {4, "Q4_1_SOME_F16", 3, false, true},
    {7, "Q8_0", 8, true},       {8, "Q5_0", 6, true},       {9, "Q5_1", 7, true},       {10, "Q2_K", 10, false},
    {11, "Q3_K_S", 11, false},  {12, "Q3_K_M", 11, false},  {13, "Q3_K_L", 11, false},  {14, "Q4_K_S", 12, false},
    {15, "Q4_K_M", 12, false},  {16, "Q5_K_S", 13, false},  {17, "Q5_K_M", 13, false},  {18, "Q6_K", 14, false},
    {19, "IQ2_XXS", 16, false}, {20, "IQ2_XS", 17, false},  {21, "Q2_K_S", 10, false},  {22, "IQ3_XS", 21, false},
    {23, "IQ3_XXS", 18, false}, {24, "IQ1_S", 19, false},   {25, "IQ4_NL", 20, false},  {26, "IQ3_S", 21, false},
    {27, "IQ3_M", 21, false},   {28, "IQ2_S", 17, false},   {29, "IQ2_M", 22, false},   {30, "IQ4_XS", 23, false},
    {31, "IQ1_M", 29, false},   {32, "BF16", 30, true},     {36, "TQ1_0", 34, false},   {37, "TQ2_0", 35, false},
    {38, "MXFP4_MOE", 39, false}, {39, "NVFP4", 40, false}, {40, "Q1_0", 41, false},    {41, "Q2_0", 42, false},
};
}  // namespace

std::span<const FileType> file_types() { return kFileTypes; }

const FileType* file_type(uint64_t id) {
  for (const FileType& f : kFileTypes)
    if (f.id == id) return &f;
  return nullptr;
}

std::string file_type_name(uint64_t t) {
  const FileType* f = file_type(t);
  if (!f) return "";
  return t == 0 ? "ALL_F32" : "MOSTLY_" + std::string(f->name);
}

std::string architecture(const Model& m) {
  const Value* v = m.find("general.architecture");
  return v && v->type == ValueType::string ? v->str : "";
}

std::vector<TypeMix> quant_mix(const Model& m) {
  std::map<uint32_t, TypeMix> by;
  for (const Tensor& t : m.tensors) {
    TypeMix& row = by[t.type];
    row.type = ggml_type_name(t.type);
    row.tensors++;
    row.weights += t.elements();
    row.bytes += t.nbytes();
  }
  std::vector<TypeMix> out;
  for (auto& [id, row] : by) out.push_back(row);
  std::stable_sort(out.begin(), out.end(), [](const TypeMix& a, const TypeMix& b) { return a.bytes > b.bytes; });
  return out;
}

std::vector<Hyperparameter> hyperparameters(const Model& m) {
  static const std::pair<const char*, const char*> keys[] = {
      {"block count", "block_count"},          {"context length", "context_length"},
      {"embedding", "embedding_length"},       {"feed-forward", "feed_forward_length"},
      {"heads", "attention.head_count"},       {"KV heads", "attention.head_count_kv"},
      {"rope base", "rope.freq_base"},
      {"rms epsilon", "attention.layer_norm_rms_epsilon"}, {"norm epsilon", "attention.layer_norm_epsilon"},
      {"experts", "expert_count"},             {"experts used", "expert_used_count"}};
  std::string arch = architecture(m);
  std::vector<Hyperparameter> out;
  for (auto [label, key] : keys) {
    std::string full = arch + "." + key;
    out.push_back({label, full, arch.empty() ? nullptr : m.find(full)});
  }
  return out;
}

uint64_t head_size(const Model& m) {
  std::string arch = architecture(m);
  auto get = [&](const char* k) {
    const Value* v = m.find(arch + "." + k);
    return v && v->is_integer() ? v->as_u64() : 0;
  };
  if (uint64_t k = get("attention.key_length")) return k;
  uint64_t embd = get("embedding_length"), heads = get("attention.head_count");
  return heads ? embd / heads : 0;
}

uint64_t vocabulary_size(const Model& m) {
  const Value* t = m.find("tokenizer.ggml.tokens");
  return t ? t->size() : 0;
}

namespace {
const std::string kTokenPrefix = "tokenizer.ggml.", kTokenSuffix = "_token_id";
}  // namespace

const std::vector<std::string>& special_token_names() {
  static const std::vector<std::string> names = {"bos",     "eos",     "eot",     "eom",     "unknown",
                                                 "seperator", "padding", "cls",   "mask",    "fim_pre",
                                                 "fim_suf", "fim_mid", "fim_pad", "fim_rep", "fim_sep"};
  return names;
}

std::string special_token_key(std::string_view name) {
  if (name == "sep" || name == "separator") name = "seperator";  // llama.cpp's spelling
  if (name == "pad") name = "padding";
  if (name == "unk") name = "unknown";
  const auto& names = special_token_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) return "";
  return kTokenPrefix + std::string(name) + kTokenSuffix;
}

std::string token_type_name(int64_t type) {
  static const char* const names[] = {"undefined", "normal", "unknown", "control", "user_defined", "unused", "byte"};
  return type >= 0 && type < 7 ? names[type] : "type " + std::to_string(type);
}

std::vector<SpecialToken> special_tokens(const Model& m) {
  std::vector<SpecialToken> known, other;
  const Value* tokens = m.find("tokenizer.ggml.tokens");
  const Value* types = m.find("tokenizer.ggml.token_type");
  const auto& names = special_token_names();
  for (const KV& kv : m.metadata) {
    const std::string& k = kv.key;
    if (k.size() <= kTokenPrefix.size() + kTokenSuffix.size() || k.compare(0, kTokenPrefix.size(), kTokenPrefix) != 0 ||
        k.compare(k.size() - kTokenSuffix.size(), kTokenSuffix.size(), kTokenSuffix) != 0 || !kv.value.is_integer())
      continue;
    SpecialToken t{k.substr(kTokenPrefix.size(), k.size() - kTokenPrefix.size() - kTokenSuffix.size()), k, kv.value.as_u64(), {}, {}};
    if (tokens && tokens->type == ValueType::array && tokens->elem == ValueType::string && t.id < tokens->strs.size())
      t.text = tokens->strs[t.id];
    if (types && types->type == ValueType::array && types->elem != ValueType::string && types->elem != ValueType::array &&
        t.id < types->nums.size())
      t.type = Value::scalar(types->elem, types->nums[t.id]).as_i64();
    (std::find(names.begin(), names.end(), t.name) != names.end() ? known : other).push_back(std::move(t));
  }
  std::stable_sort(known.begin(), known.end(), [&](const SpecialToken& a, const SpecialToken& b) {
    return std::find(names.begin(), names.end(), a.name) < std::find(names.begin(), names.end(), b.name);
  });
  known.insert(known.end(), other.begin(), other.end());
  return known;
}

std::string nearest_key(const Model& m, std::string_view key, const std::function<bool(const std::string&)>& skip) {
  std::string best;
  size_t best_d = std::max<size_t>(2, key.size() / 4) + 1;
  for (const KV& kv : m.metadata)
    if (size_t d = edit_distance(key, kv.key); d < best_d && !(skip && skip(kv.key))) {
      best_d = d;
      best = kv.key;
    }
  return best;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment: a swap of two neighbours is one edit ("shwo" is one from
  // "show"). Three rows, not the whole table: token texts can be long.
  std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      row[j] = std::min({prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) row[j] = std::min(row[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, row);
  }
  return prev[b.size()];
}

std::vector<std::string> nearest_names(std::string_view word, const std::vector<std::string>& names, size_t max_edits) {
  max_edits = std::min<size_t>(max_edits, 8);  // (a long word's quarter is no typo)
  std::vector<std::string> out;
  size_t best = max_edits + 1;
  for (const std::string& n : names) {
    if (n == word) continue;
    const bool begins = word.size() >= 2 && n.rfind(word, 0) == 0;
    // (a length apart by more than the limit is that many edits at least: not compared, so
    // a miss among 200,000 tensor names costs what the few near in length cost)
    if (!begins && (n.size() > word.size() + max_edits || word.size() > n.size() + max_edits)) continue;
    const size_t d = begins ? 1 : edit_distance(word, n);
    if (d > max_edits) continue;
    if (d < best) best = d, out.clear();
    if (d == best && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

std::string did_you_mean(const std::vector<std::string>& names) {
  if (names.empty()) return "";
  std::string out = "did you mean ";
  const size_t shown = std::min<size_t>(names.size(), 4);
  for (size_t i = 0; i < shown; ++i)
    out += (i == 0 ? "" : i + 1 == shown && shown == names.size() ? " or " : ", ") + ("'" + names[i] + "'");
  if (shown < names.size()) out += " or " + std::to_string(names.size() - shown) + " more";
  return out + "?";
}

std::optional<std::pair<uint64_t, std::string>> block_of(const std::string& name) {
  if (name.compare(0, 4, "blk.") != 0) return std::nullopt;
  size_t dot = name.find('.', 4);
  if (dot == std::string::npos || dot == 4) return std::nullopt;
  uint64_t n = 0;
  for (size_t i = 4; i < dot; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i])) || n > 1'000'000'000) return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  return std::make_pair(n, name.substr(dot + 1));
}

std::string shape_text(const std::vector<uint64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s.empty() ? "scalar" : s;
}

Stack stack_of(const Model& m) {
  Stack st;
  std::map<std::string, size_t> row_of;
  std::map<uint64_t, uint64_t> block_bytes;
  bool seen_block = false;
  for (const Tensor& t : m.tensors) {
    uint64_t bytes = t.nbytes();
    auto b = block_of(t.name);
    if (!b) {
      (seen_block ? st.behind : st.front) += bytes;
      continue;
    }
    if (seen_block && st.behind) {  // a non-block tensor between blocks belongs to the stack
      st.inside += st.behind;
      st.behind = 0;
    }
    seen_block = true;
    st.inside += bytes;
    block_bytes[b->first] += bytes;
    std::string name = "blk.#." + b->second;
    auto [it, fresh] = row_of.emplace(name, st.rows.size());
    if (fresh) st.rows.push_back({name, 0, 0, {}, {}});
    StackRow& row = st.rows[it->second];
    row.count++;
    row.bytes += bytes;
    row.types[ggml_type_name(t.type)]++;
    std::string shape = shape_text(t.dims);
    if (std::find(row.shapes.begin(), row.shapes.end(), shape) == row.shapes.end()) row.shapes.push_back(shape);
  }
  st.blocks = block_bytes.size();
  st.per_block.assign(block_bytes.begin(), block_bytes.end());
  for (auto [blk, bytes] : block_bytes) {
    if (!st.smallest || bytes < st.smallest->second) st.smallest = std::make_pair(blk, bytes);
    if (!st.largest || bytes > st.largest->second) st.largest = std::make_pair(blk, bytes);
  }
  return st;
}

Account account_of(const Scanned& s) {
  Account a;
  const Layout& L = s.layout;
  each_span(L, s.model.tensors, [&](const LabeledSpan& sp) {
    switch (sp.kind) {
      case SpanKind::magic: case SpanKind::version: case SpanKind::tensor_count: case SpanKind::kv_count:
        a.head += sp.span.size;
        break;
      case SpanKind::kv_key: case SpanKind::kv_type: case SpanKind::kv_value: case SpanKind::metadata:
        a.metadata += sp.span.size;
        break;
      case SpanKind::tensor_info: case SpanKind::infos: a.infos += sp.span.size; break;
      case SpanKind::padding: a.padding += sp.span.size; break;
      case SpanKind::tensor_data: a.tensor_bytes += sp.span.size; break;
      case SpanKind::tensor_padding: a.tensor_padding += sp.span.size; break;
      case SpanKind::gap: case SpanKind::trailing: case SpanKind::data: break;  // left over: counted below; data taken apart
    }
  });
  a.file_size = s.model_size;  // an exemplar's: the model's, as its header gives it
  a.header_only = s.header_only;
  uint64_t total = a.head + a.metadata + a.infos + a.padding + a.tensor_bytes + a.tensor_padding;
  a.left_over = static_cast<int64_t>(a.file_size) - static_cast<int64_t>(total);
  uint64_t expected = 0;  // where a tensor starts if it follows the one before, padded
  for (size_t i = 0; i < s.model.tensors.size(); ++i) {
    a.contiguous += L.tensor_offsets[i] == expected;
    expected = align_up(L.tensor_offsets[i] + s.model.tensors[i].nbytes(), L.alignment).value_or(0);
  }
  return a;
}

namespace {
// The bytes of every span of these kinds, in file order: what no field describes.
std::string filler_bytes(const Scanned& s, std::initializer_list<SpanKind> kinds, bool nonzero_only) {
  std::string out;
  if (!s.model.tail) return out;
  each_span(s.layout, s.model.tensors, [&](const LabeledSpan& sp) {
    if (std::find(kinds.begin(), kinds.end(), sp.kind) == kinds.end()) return;
    if (sp.span.end() > s.source_size) return;  // a header exemplar's: the model's, not in the file
    std::string b(static_cast<size_t>(sp.span.size), '\0');
    s.model.tail->source->read_at(sp.span.offset, b.data(), b.size());
    if (nonzero_only) b.erase(std::remove(b.begin(), b.end(), '\0'), b.end());
    out += b;
  });
  return out;
}
}  // namespace

namespace {
// In DiffKind's order.
constexpr const char* kDiffKindNames[] = {
    "version",      "byte_order",     "alignment",    "key_order",      "renamed",      "removed",
    "added",        "changed",        "tensor_order", "tensor_removed", "tensor_added", "tensor_changed",
    "tensor_bytes", "tensor_offset",  "padding",      "trailing",
};
static_assert(std::size(kDiffKindNames) == static_cast<size_t>(kLastDiffKind) + 1, "a name for every DiffKind");
}  // namespace

std::string_view diff_kind_name(DiffKind k) { return kDiffKindNames[static_cast<size_t>(k)]; }

std::optional<DiffKind> diff_kind_named(std::string_view name) {
  for (size_t i = 0; i < std::size(kDiffKindNames); ++i)
    if (name == kDiffKindNames[i]) return static_cast<DiffKind>(i);
  return std::nullopt;
}

std::vector<Difference> diff_files(const Scanned& x, const Scanned& y, bool layouts) {
  std::vector<Difference> out;
  auto add = [&](DiffKind kind, std::string key, std::optional<Value> a, std::optional<Value> b, std::string at = "",
                 std::string bt = "") {
    out.push_back({kind, std::move(key), std::move(a), std::move(b), std::move(at), std::move(bt)});
  };
  const Model &ma = x.model, &mb = y.model;
  if (ma.version != mb.version) add(DiffKind::version, "", Value::of_u32(ma.version), Value::of_u32(mb.version));
  if (ma.order != mb.order)
    add(DiffKind::byte_order, "", std::nullopt, std::nullopt, ma.order == ByteOrder::big ? "big" : "little",
        mb.order == ByteOrder::big ? "big" : "little");
  if (x.layout.alignment != y.layout.alignment)
    add(DiffKind::alignment, "", Value::of_u32(x.layout.alignment), Value::of_u32(y.layout.alignment));
  // Keys: a key gone from A whose value turns up under a key new in B was renamed. Keys
  // are looked up in sorted indices: a header may hold millions.
  const Metadata &da = ma.metadata, &db = mb.metadata;
  const std::vector<uint64_t> sa = da.sorted_by_key(), sb = db.sorted_by_key();
  std::vector<const KV*> gone, fresh;
  std::vector<size_t> oa, ob;  // the keys both have, in A's order and in B's
  for (size_t i = 0; i < da.size(); ++i)
    if (!db.index_of(da.key(i), sb)) gone.push_back(&da.ref(i));
    else oa.push_back(i);
  for (size_t i = 0; i < db.size(); ++i)
    if (!da.index_of(db.key(i), sa)) fresh.push_back(&db.ref(i));
    else ob.push_back(i);
  for (const KV*& g : gone)
    for (const KV*& f : fresh)
      if (g && f && g->value == f->value) {
        add(DiffKind::renamed, g->key, std::nullopt, std::nullopt, g->key, f->key);
        g = f = nullptr;
      }
  for (const KV* g : gone)
    if (g) add(DiffKind::removed, g->key, g->value, std::nullopt);
  for (size_t i : oa)
    if (KV a = da[i], b = db[*db.index_of(a.key, sb)]; !(a.value == b.value)) add(DiffKind::changed, a.key, a.value, b.value);
  for (const KV* f : fresh)
    if (f) add(DiffKind::added, f->key, std::nullopt, f->value);
  for (size_t i = 0; i < oa.size(); ++i)
    if (da.key(oa[i]) != db.key(ob[i])) {
      add(DiffKind::key_order, std::string(da.key(oa[i])), std::nullopt, std::nullopt, "position " + std::to_string(i) + " of the shared keys",
          std::string(db.key(ob[i])) + " stands there");
      break;
    }
  // Tensors.
  std::map<std::string, size_t> ib;
  for (size_t i = 0; i < mb.tensors.size(); ++i) ib[mb.tensors[i].name] = i;
  std::vector<std::string> ta, tb;
  auto record = [](const Tensor& t) { return shape_text(t.dims) + " " + ggml_type_name(t.type); };
  for (size_t i = 0; i < ma.tensors.size(); ++i) {
    const Tensor& t = ma.tensors[i];
    auto it = ib.find(t.name);
    if (it == ib.end()) {
      add(DiffKind::tensor_removed, t.name, std::nullopt, std::nullopt, record(t));
      continue;
    }
    ta.push_back(t.name);
    const Tensor& u = mb.tensors[it->second];
    if (record(t) != record(u)) add(DiffKind::tensor_changed, t.name, std::nullopt, std::nullopt, record(t), record(u));
    else if (hash_tensor(t, HashAlgo::xxh64) != hash_tensor(u, HashAlgo::xxh64)) add(DiffKind::tensor_bytes, t.name, std::nullopt, std::nullopt);
    if (layouts && x.layout.tensor_offsets[i] != y.layout.tensor_offsets[it->second] && x.layout.alignment == y.layout.alignment)
      add(DiffKind::tensor_offset, t.name, Value::of_u64(x.layout.tensor_offsets[i]), Value::of_u64(y.layout.tensor_offsets[it->second]));
  }
  for (const Tensor& t : mb.tensors) {
    bool in_a = false;
    for (const Tensor& u : ma.tensors) in_a = in_a || u.name == t.name;
    if (in_a) tb.push_back(t.name);
    else add(DiffKind::tensor_added, t.name, std::nullopt, std::nullopt, "", record(t));
  }
  if (ta != tb) add(DiffKind::tensor_order, "", std::nullopt, std::nullopt, "", "");
  if (!layouts) return out;
  // Bytes no field describes: non-zero padding, bytes after the end.
  std::string pa = filler_bytes(x, {SpanKind::padding, SpanKind::tensor_padding, SpanKind::gap}, true);
  std::string pb = filler_bytes(y, {SpanKind::padding, SpanKind::tensor_padding, SpanKind::gap}, true);
  if (pa != pb)
    add(DiffKind::padding, "", std::nullopt, std::nullopt, std::to_string(pa.size()) + " non-zero bytes",
        std::to_string(pb.size()) + " non-zero bytes");
  std::string ra = filler_bytes(x, {SpanKind::trailing}, false), rb = filler_bytes(y, {SpanKind::trailing}, false);
  if (ra != rb)
    add(DiffKind::trailing, "", std::nullopt, std::nullopt, std::to_string(ra.size()) + " bytes after the end",
        std::to_string(rb.size()) + " bytes after the end");
  return out;
}

namespace {

const GgmlType& decodable(const Tensor& t) {
  const GgmlType* gt = ggml_type(t.type);
  if (!gt || !can_decode(*gt))
    throw Error(Error::Kind::format, "", std::nullopt, "tensor " + t.name,
                "decoding " + ggml_type_name(t.type) + " is not supported" + (gt ? "" : ": ggufkit does not know the type's layout"));
  return *gt;
}

}  // namespace

TensorStats tensor_stats(const Tensor& t, size_t head, ByteOrder order, const TensorProgress& progress) {
  const GgmlType* gt = &decodable(t);
  TensorStats st;
  double sum = 0, mean = 0, m2 = 0;  // Welford's running mean and sum of squared deviations
  uint64_t finite = 0;
  st.min = std::numeric_limits<double>::infinity();
  st.max = -st.min;
  for_each_piece(t, [&](const uint8_t* p, size_t n) {
    std::vector<float> v = *decode(*gt, p, n / gt->size * gt->block, nullptr, order);
    for (float x : v) {
      if (st.head.size() < head) st.head.push_back(x);
      if (std::isnan(x)) {
        st.nan++;
      } else if (std::isinf(x)) {
        st.inf++;
      } else {
        st.min = std::min<double>(st.min, x);
        st.max = std::max<double>(st.max, x);
        sum += x;
        finite++;
        double delta = x - mean;
        mean += delta / static_cast<double>(finite);
        m2 += delta * (x - mean);
      }
    }
    st.count += v.size();
  }, progress);
  if (finite == 0) st.min = st.max = 0;
  st.mean = finite ? sum / static_cast<double>(finite) : 0;
  st.stddev = finite ? std::sqrt(m2 / static_cast<double>(finite)) : 0;
  return st;
}

TensorHistogram tensor_histogram(const Tensor& t, const TensorStats& st, size_t bins, ByteOrder order, size_t outliers, double sigmas,
                                 const TensorProgress& progress) {
  const GgmlType& gt = decodable(t);
  TensorHistogram h;
  h.lo = st.min, h.hi = st.max, h.sigmas = sigmas;
  h.bins.assign(h.hi > h.lo ? std::clamp<size_t>(bins, 1, 1u << 20) : 1, 0);  // values all alike: one bin
  const double width = (h.hi - h.lo) / static_cast<double>(h.bins.size());
  const double limit = sigmas * st.stddev;
  // The furthest so far in a heap whose top is the nearest of them, to be pushed out first.
  // Of two as far, the later one counts as nearer, so the earlier is kept.
  auto nearer = [&](const TensorOutlier& a, const TensorOutlier& b) {
    const double da = std::fabs(a.value - st.mean), db = std::fabs(b.value - st.mean);
    return da != db ? da > db : a.index < b.index;
  };
  uint64_t index = 0;
  for_each_piece(t, [&](const uint8_t* p, size_t n) {
    std::vector<float> v = *decode(gt, p, n / gt.size * gt.block, nullptr, order);
    for (float x : v) {
      const uint64_t at = index++;
      if (!std::isfinite(x)) continue;
      // Clamped as a double: stats that are not this tensor's must not make the cast undefined.
      const double r = width > 0 ? (x - h.lo) / width : 0;
      h.bins[r <= 0 ? 0 : r >= static_cast<double>(h.bins.size() - 1) ? h.bins.size() - 1 : static_cast<size_t>(r)]++;
      if (st.stddev > 0 && std::fabs(x - st.mean) > limit) {
        h.beyond++;
        if (outliers == 0) continue;
        TensorOutlier o{at, x};
        if (h.outliers.size() < outliers) {
          h.outliers.push_back(o);
          std::push_heap(h.outliers.begin(), h.outliers.end(), nearer);
        } else if (nearer(o, h.outliers.front())) {
          std::pop_heap(h.outliers.begin(), h.outliers.end(), nearer);
          h.outliers.back() = o;
          std::push_heap(h.outliers.begin(), h.outliers.end(), nearer);
        }
      }
    }
  }, progress);
  std::sort(h.outliers.begin(), h.outliers.end(), nearer);  // furthest first; of two as far, the earlier first
  return h;
}

}  // namespace ggufkit
