#include "ggufkit/layout.h"

#include <algorithm>

#include "ggufkit/error.h"
#include "ggufkit/format.h"
#include "ggufkit/model.h"

namespace ggufkit {

const char* span_kind_name(SpanKind k) {
  switch (k) {
    case SpanKind::magic: return "magic";
    case SpanKind::version: return "version";
    case SpanKind::tensor_count: return "tensor_count";
    case SpanKind::kv_count: return "kv_count";
    case SpanKind::kv_key: return "kv_key";
    case SpanKind::kv_type: return "kv_type";
    case SpanKind::kv_value: return "kv_value";
    case SpanKind::metadata: return "metadata";
    case SpanKind::tensor_info: return "tensor_info";
    case SpanKind::padding: return "padding";
    case SpanKind::tensor_data: return "tensor_data";
    case SpanKind::tensor_padding: return "tensor_padding";
    case SpanKind::gap: return "gap";
    case SpanKind::infos: return "infos";
    case SpanKind::data: return "data";
    case SpanKind::trailing: return "trailing";
  }
  return "?";
}

const LabeledSpan* Layout::find(SpanKind kind, const std::string& path) const {
  for (const auto& s : spans)
    if (s.kind == kind && s.path == path) return &s;
  return nullptr;
}

void add_filler(Layout& L, uint64_t from, uint64_t to, SpanKind pad, SpanKind rest, const std::string& path) {
  if (to <= from) return;  // zero-length spans are not listed
  uint64_t padded = std::min(to, align_up(from, L.alignment).value_or(to));
  if (padded > from) L.spans.push_back({pad, {from, padded - from}, path});
  if (to > padded) L.spans.push_back({rest, {padded, to - padded}, path});
}

void data_spans(const Layout& L, const TensorList& tensors, const std::function<uint64_t(size_t)>& nbytes, const SpanFn& f) {
  Layout pieces;
  pieces.alignment = L.alignment;
  uint64_t end = L.data_offset;  // a gap may come before the first tensor too
  std::string path;
  for (size_t i = 0; i < L.tensor_offsets.size(); ++i) {
    const uint64_t start = L.data_offset + L.tensor_offsets[i];
    pieces.spans.clear();
    add_filler(pieces, end, start, SpanKind::tensor_padding, SpanKind::gap, path);
    path = "tensor[" + std::to_string(i) + "] " + std::string(tensors.name(i));
    pieces.spans.push_back({SpanKind::tensor_data, {start, nbytes(i)}, path});
    for (const LabeledSpan& s : pieces.spans) f(s);
    end = start + pieces.spans.back().span.size;
  }
}

void each_span(const Layout& L, const TensorList& tensors, const SpanFn& f) {
  for (const LabeledSpan& s : L.spans) {
    if (s.kind == SpanKind::data) data_spans(L, tensors, [&](size_t i) { return tensors[i].nbytes(); }, f);
    else f(s);
  }
}

void check_layout(const Layout& l, const std::string& file) {
  auto fail = [&](uint64_t at, const std::string& field, const std::string& msg) {
    throw Error(Error::Kind::format, file, at, field, msg);
  };
  if (!is_power_of_two(l.alignment)) fail(0, "layout", "alignment " + std::to_string(l.alignment) + " is not a power of two");
  uint64_t at = 0;
  for (const auto& s : l.spans) {
    std::string field = std::string(span_kind_name(s.kind)) + (s.path.empty() ? "" : " " + s.path);
    if (s.span.offset != at)
      fail(s.span.offset, field, "starts at " + std::to_string(s.span.offset) +
                                     ", but the span before ends at " + std::to_string(at));
    bool pad = s.kind == SpanKind::padding || s.kind == SpanKind::tensor_padding;
    if (pad && s.span.size >= l.alignment)
      fail(s.span.offset, field, std::to_string(s.span.size) + " bytes of padding is not shorter than the alignment " +
                                     std::to_string(l.alignment));
    if (s.kind == SpanKind::tensor_data && s.span.offset % l.alignment != 0)
      fail(s.span.offset, field, "tensor data is not aligned to " + std::to_string(l.alignment));
    at = s.span.end();
  }
  if (at != l.file_size)
    fail(at, "layout", "the spans end at " + std::to_string(at) + ", the file size is " + std::to_string(l.file_size));
  if (l.data_offset % l.alignment != 0)
    fail(l.data_offset, "data start", std::to_string(l.data_offset) + " is not a multiple of " + std::to_string(l.alignment));
  for (size_t i = 0; i < l.tensor_offsets.size(); ++i)
    if (l.tensor_offsets[i] % l.alignment != 0)
      fail(l.data_offset + l.tensor_offsets[i], "tensor[" + std::to_string(i) + "]",
           "offset " + std::to_string(l.tensor_offsets[i]) + " is not aligned");
}

}  // namespace ggufkit
