#include "malformed_cases.h"

#include "helpers.h"

namespace testing_helpers {

namespace {

// A valid little file to break: two KVs and two f32 tensors of 3 and 5 values.
//   0 head | 24 kv[0] general.architecture: key 24-52, type 52-56, value 56-69
//   69 kv[1] general.alignment: key 69-94, type 94-98, value 98-102
//   102 tensor[0] a: name 102-111, n_dims 111-115, dims 115-123, type 123-127, offset 127-135
//   135 tensor[1] b: name 135-144, n_dims 144-148, dims 148-156, type 156-160, offset 160-168
//   168 padding to 192 | data a 192-204, pad to 224 | data b 224-244, pad to 256
struct Base {
  uint32_t version = 3;
  uint64_t n_tensors = 2, n_kv = 2;
  uint32_t arch_type = 8;
  uint32_t align_type = 4, align = 32;
  std::string name_b = "b";
  uint32_t n_dims_a = 1, type_a = 0;
  uint64_t ne0_a = 3, off_a = 0, off_b = 32;
  std::vector<uint8_t> bytes() const {
    Bytes b;
    b.head(version, n_tensors, n_kv);
    b.str("general.architecture").u32(arch_type).str("llama");
    b.str("general.alignment").u32(align_type).u32(align);
    b.str("a").u32(n_dims_a);
    for (uint32_t i = 0; i < std::min(n_dims_a, 5u); ++i) b.u64(i == 0 ? ne0_a : 1);
    b.u32(type_a).u64(off_a);
    b.str(name_b).u32(1).u64(5).u32(0).u64(off_b);
    b.pad_to(32).zeros(12).pad_to(32).zeros(20).pad_to(32);
    return b.b;
  }
};

std::vector<uint8_t> cut(std::vector<uint8_t> b, size_t n) {
  b.resize(n);
  return b;
}

std::vector<uint8_t> with_u64(uint64_t at, uint64_t v) {
  auto b = Base().bytes();
  poke_u64(b, at, v);
  return b;
}

// One KV whose value is built by `value` (after the type word), then nothing else.
std::vector<uint8_t> one_kv(const std::string& key, uint32_t type, const std::function<void(Bytes&)>& value) {
  Bytes b;
  b.head(3, 0, 1).str(key).u32(type);
  value(b);
  return b.b;
}

}  // namespace

const std::vector<Case>& malformed_cases() {
  static const std::vector<Case> all = {
      // --- header ---
      {"EmptyFile", "header", [] { return std::vector<uint8_t>{}; }, 0, "head (magic)", "not a GGUF file: an empty file (0 bytes)"},
      {"ShortFile", "header", [] { return cut(Base().bytes(), 10); }, 0, "head (magic)", "not a GGUF file: a GGUF file cut short: 10 bytes, where the magic, version and counts alone take 24"},
      {"BadMagic", "header", [] { auto b = Base().bytes(); b[3] = 'L'; b[2] = 'M'; return b; }, 0, "head (magic)", "not a GGUF file: found 'GGML"},
      {"Version0", "header", [] { Base x; x.version = 0; return x.bytes(); }, 4, "head (version)", "version 0 is not a GGUF version"},
      {"Version1", "header", [] { Base x; x.version = 1; return x.bytes(); }, 4, "head (version)", "this is GGUF v1"},
      {"Version4", "header", [] { Base x; x.version = 4; return x.bytes(); }, 4, "head (version)", "version 4 is newer than this reader knows"},
      {"TensorCount2e62", "header", [] { Base x; x.n_tensors = 1ull << 62; return x.bytes(); }, 8, "head (tensor count)", "4611686018427387904 tensor info records need at least 24 bytes each, but only 240 bytes are left"},
      {"KvCount2e62", "header", [] { Base x; x.n_kv = 1ull << 62; return x.bytes(); }, 16, "head (kv count)", "4611686018427387904 key-value pairs need at least 13 bytes each"},
      {"CutInsideHead", "header", [] { return cut(Base().bytes(), 23); }, 0, "head (magic)", "not a GGUF file: a GGUF file cut short: 23 bytes"},
      // --- key/value ---
      {"KeyLength2e63", "kv", [] { return with_u64(24, 1ull << 63); }, 24, "kv[0] (key length)", "a string of 9223372036854775808 bytes is longer than the 64 MiB cap and than the 224 bytes left in the file"},
      {"KeyLengthPastTheEnd", "kv", [] { return with_u64(24, 1000); }, 24, "kv[0] (key length)", "a string of 1000 bytes is longer than the 224 bytes left in the file"},
      {"EmptyKey", "kv", [] { return one_kv("", 4, [](Bytes& b) { b.u32(1); }); }, 24, "kv[0] (key)", "the key is empty"},
      {"UnknownValueType", "kv", [] { Base x; x.arch_type = 13; return x.bytes(); }, 52, "kv[0] general.architecture (type)", "unknown value type 13"},
      {"StringLengthPastTheEnd", "kv", [] { return with_u64(56, 5000); }, 56, "kv[0] general.architecture (string length)", "a string of 5000 bytes is longer than the 192 bytes left"},
      {"StringLength2e63", "kv", [] { return with_u64(56, 1ull << 63); }, 56, "kv[0] general.architecture (string length)", "longer than the 64 MiB cap"},
      {"ArrayCount2e62", "kv", [] { return one_kv("x", 9, [](Bytes& b) { b.u32(4).u64(1ull << 62).u32(1); }); }, 41, "kv[0] x (array count)", "an array of 4611686018427387904 u32 needs at least 2^64 or more bytes, but the file has 4 bytes left"},
      {"ArrayOfStringsPastTheEnd", "kv", [] { return one_kv("x", 9, [](Bytes& b) { b.u32(8).u64(100).str("only one"); }); }, 41, "kv[0] x (array count)", "an array of 100 string needs at least 800 bytes, but the file has 16 bytes left"},
      {"UnknownArrayType", "kv", [] { return one_kv("x", 9, [](Bytes& b) { b.u32(99).u64(1).u32(0); }); }, 37, "kv[0] x (array type)", "unknown value type 99"},
      {"NestedArrayDepthBomb", "kv", [] { return one_kv("x", 9, [](Bytes& b) { for (int i = 0; i < 64; ++i) b.u32(9).u64(1); b.u32(4).u64(1).u32(7); }); }, 37 + 7 * 12, "kv[0] x (array type #0)", "arrays nested deeper than 8"},
      {"DuplicateKey", "kv", [] { Bytes b; b.head(3, 0, 2).str("k").u32(4).u32(1).str("k").u32(4).u32(2); return b.b; }, 41, "kv[1] (key)", "duplicate key 'k', first at kv[0]"},
      {"Alignment0", "kv", [] { Base x; x.align = 0; return x.bytes(); }, 98, "kv[1] general.alignment (value)", "alignment 0 is not a power of two"},
      {"Alignment48", "kv", [] { Base x; x.align = 48; return x.bytes(); }, 98, "kv[1] general.alignment (value)", "alignment 48 is not a power of two"},
      {"AlignmentOfTheWrongType", "kv", [] { Base x; x.align_type = 5; return x.bytes(); }, 94, "kv[1] general.alignment (type)", "general.alignment must be a u32, found i32"},
      {"CutInsideAKey", "kv", [] { return cut(Base().bytes(), 80); }, 69, "kv[1] (key length)", "a string of 17 bytes is longer than the 3 bytes left"},
      {"CutInsideAValue", "kv", [] { return cut(Base().bytes(), 100); }, 98, "kv[1] general.alignment (value)", "needs 4 bytes, but the file ends at byte 100"},
      {"ArrayItemPastTheEnd", "kv", [] { return one_kv("x", 9, [](Bytes& b) { b.u32(8).u64(3).str("a").str("b").u64(99).raw("cc"); }); }, 67, "kv[0] x (item length #2)", "a string of 99 bytes is longer than the 2 bytes left"},
      // --- tensor info ---
      {"TensorName64Bytes", "tensor info", [] { Base x; x.name_b = std::string(64, 'n'); return x.bytes(); }, 135, "tensor[1] (name)", "a name of 64 bytes; ggml tensor names must be shorter than 64 bytes"},
      {"TensorNameLength2e63", "tensor info", [] { return with_u64(102, 1ull << 63); }, 102, "tensor[0] (name length)", "longer than the 64 MiB cap"},
      {"DuplicateTensorName", "tensor info", [] { Base x; x.name_b = "a"; return x.bytes(); }, 135, "tensor[1] (name)", "duplicate tensor name 'a', first at tensor[0]"},
      {"NDims5", "tensor info", [] { Base x; x.n_dims_a = 5; return x.bytes(); }, 111, "tensor[0] a (n_dims)", "n_dims 5 is more than the 4 ggml allows"},
      {"OverflowingDims", "tensor info", [] { Base x; x.n_dims_a = 2; auto b = x.bytes(); poke_u64(b, 115, 1ull << 32); poke_u64(b, 123, 1ull << 32); return b; }, 115, "tensor[0] a (dims)", "the element count overflows 63 bits"},
      {"NegativeDim", "tensor info", [] { return with_u64(115, 1ull << 63); }, 115, "tensor[0] a (dims)", "dim 0 = 9223372036854775808 does not fit in int64"},
      {"PartBlock", "tensor info", [] { Base x; x.type_a = 2; x.ne0_a = 33; return x.bytes(); }, 115, "tensor[0] a (dims)", "ne0 = 33 is not a multiple of the q4_0 block of 32"},
      {"CutInsideTheTensorInfos", "tensor info", [] { return cut(Base().bytes(), 150); }, 148, "tensor[1] b (dim #0)", "needs 8 bytes, but the file ends at byte 150"},
      // --- data ---
      {"MisalignedOffset", "data", [] { Base x; x.off_b = 16; return x.bytes(); }, 160, "tensor[1] b (offset)", "offset 16 is not a multiple of the alignment 32"},
      {"OverlappingOffsets", "data", [] { Base x; x.off_b = 0; return x.bytes(); }, 160, "tensor[1] b (offset)", "offset 0 overlaps tensor[0] a, which ends at offset 12"},
      {"OutOfOrderOffsets", "data", [] { Base x; x.off_a = 32; x.off_b = 0; return x.bytes(); }, 160, "tensor[1] b (offset)", "offset 0 comes before tensor[0]'s offset 32"},
      {"OffsetPastTheEnd", "data", [] { Base x; x.off_b = 1024; return x.bytes(); }, 160, "tensor[1] b (offset)", "the tensor's 20 bytes at data offset 1024 (file offset 1216) run past the end of the file at 256"},
      {"OffsetNearTwoTo64", "data", [] { Base x; x.off_b = ~31ull; return x.bytes(); }, 160, "tensor[1] b (offset)", "(file offset past 2^64) run past the end"},
      {"CutInsideTheTensorData", "data", [] { return cut(Base().bytes(), 235); }, 224, "tensor[1] b (data)", "run past the end of the file at 235"},
      {"CutBeforeTheData", "data", [] { return cut(Base().bytes(), 180); }, 192, "tensor[0] a (data)", "run past the end of the file at 180"},
  };
  return all;
}


std::vector<uint8_t> malformed_base() { return Base().bytes(); }

}  // namespace testing_helpers
