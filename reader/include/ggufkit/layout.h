#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ggufkit {

class TensorList;

struct Span {
  uint64_t offset = 0, size = 0;
  uint64_t end() const { return offset + size; }
  bool operator==(const Span&) const = default;
};

enum class SpanKind {
  magic, version, tensor_count, kv_count, kv_key, kv_type, kv_value,
  tensor_info, padding, tensor_data, tensor_padding,
  gap,       // bytes between a tensor's padding and the next tensor (the format allows them)
  trailing,  // bytes after the last tensor's padding, or after the header's
  metadata,  // all the key-value pairs, in a header of more than kMaxPairSpans of them
  infos,     // all the tensor info records, in a header of more than kMaxTensorSpans tensors
  data,      // all their data, padding and gaps, from the data start to the last tensor's end
};

// Each key-value pair is listed as three spans (key, type, value) in a header of up to
// this many pairs; beyond, one metadata span covers them all, so that a layout's memory
// stays in proportion to the header (a span is some 90 bytes, a pair may be 14). Where a
// pair lies in a file read is still known: Metadata::offset.
constexpr uint64_t kMaxPairSpans = 16384;
// The same for tensors, each one info span and one data span with its padding: beyond
// this many, one infos span and one data span cover them all. The tensors' offsets are
// still listed (Layout::tensor_offsets).
constexpr uint64_t kMaxTensorSpans = 16384;
const char* span_kind_name(SpanKind k);

struct LabeledSpan {
  SpanKind kind;
  Span span;
  std::string path;  // "kv[7] tokenizer.chat_template", "tensor[0] token_embd.weight"
  bool operator==(const LabeledSpan&) const = default;
};

// Where every byte of a file goes. The writer's plan() makes one; the reader makes one of
// what it found. Zero-length padding is not listed.
struct Layout {
  uint32_t alignment = 32;
  uint64_t header_size = 0;   // where the tensor info records end
  uint64_t data_offset = 0;   // header_size rounded up to the alignment
  uint64_t file_size = 0;     // where the last span ends
  std::vector<uint64_t> tensor_offsets;  // relative to data_offset, as in the info records
  std::vector<LabeledSpan> spans;
  bool operator==(const Layout&) const = default;

  // The span of the given kind and path, or nullptr.
  const LabeledSpan* find(SpanKind kind, const std::string& path) const;
};

// The spans of the bytes from `from` to `to` that belong to no field: `pad` up to the next
// multiple of the alignment (or `to`), then `rest` for whatever lies beyond. The reader
// and the writer both describe such bytes with this one rule.
void add_filler(Layout& layout, uint64_t from, uint64_t to, SpanKind pad, SpanKind rest, const std::string& path);

using SpanFn = std::function<void(const LabeledSpan&)>;
// The data section's spans from the tensors' offsets and sizes: each tensor's data, and
// the padding and gap after it up to the next tensor (those after the last are not
// listed here). `nbytes(i)` is tensor i's size.
void data_spans(const Layout& layout, const TensorList& tensors, const std::function<uint64_t(size_t)>& nbytes, const SpanFn& f);
// Every span in file order, with a data span (of a header of many tensors) taken apart as
// data_spans lists it: one at a time, never all kept.
void each_span(const Layout& layout, const TensorList& tensors, const SpanFn& f);

// The layout rules in one place: spans in order with no holes, from 0 to file_size; every
// padding shorter than the alignment (gap and trailing spans may be any length); the data
// start and each tensor aligned. Throws a
// format Error at the first span that breaks a rule.
void check_layout(const Layout& layout, const std::string& file = "");

}  // namespace ggufkit
