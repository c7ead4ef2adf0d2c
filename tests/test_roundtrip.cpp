// Round trips: what the writer plans is what the reader finds, span for span, for
// seeded random models in both byte orders; and real sizes (a Qwen-sized vocabulary).
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/iostreams/device/file_descriptor.hpp>
#include <boost/iostreams/stream.hpp>
#include <random>
#include <thread>

#include "ggufkit/error.h"
#include "ggufkit/scan.h"
#include "ggufkit/writer.h"
#include "helpers.h"
#include "walkthrough.h"

using namespace ggufkit;
using namespace testing_helpers;

namespace {

void expect_same_model(const Model& a, const Model& b) {
  EXPECT_EQ(a.version, b.version);
  EXPECT_EQ(a.order, b.order);
  EXPECT_EQ(a.metadata, b.metadata);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(a.tensors[i].dims, b.tensors[i].dims);
    EXPECT_EQ(a.tensors[i].type, b.tensors[i].type);
  }
}

std::vector<uint8_t> tensor_bytes(const Tensor& t) {
  std::vector<uint8_t> out(t.nbytes());
  t.source->read_at(t.source_offset, out.data(), out.size());
  return out;
}

}  // namespace

TEST(RoundTrip, SeededRandomModelsReadBackAsWrittenInBothDirections) {
  int big = 0, with_tensors = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Model m = random_model(seed);
    big += m.order == ByteOrder::big;
    with_tensors += !m.tensors.empty();
    Layout planned = plan(m);
    check_layout(planned);
    auto bytes = to_bytes(m);
    ASSERT_EQ(bytes.size(), planned.file_size);
    Scanned s = scan(from_bytes("random", bytes));
    EXPECT_EQ(s.layout, planned);  // written then read: the same spans
    expect_same_model(m, s.model);
    Model other = m;  // pad_end is seen only where it changes the file's size
    other.pad_end = !m.pad_end;
    if (plan(other).file_size != planned.file_size) {
      EXPECT_EQ(s.model.pad_end, m.pad_end);
    }
    for (size_t i = 0; i < m.tensors.size(); ++i) EXPECT_EQ(tensor_bytes(s.model.tensors[i]), tensor_bytes(m.tensors[i]));
    EXPECT_EQ(to_bytes(s.model), bytes);  // read then written: the same bytes
  }
  EXPECT_GT(big, 50);
  EXPECT_GT(with_tensors, 150);
}

TEST(RoundTrip, BigEndianFilesAreReadByTheVersionWord) {
  Bytes b;
  b.raw("GGUF");
  for (uint8_t x : {0, 0, 0, 3}) b.u8(x);           // version 3, big-endian
  for (int i = 0; i < 7; ++i) b.u8(0);
  b.u8(0);                                          // 0 tensors
  for (int i = 0; i < 7; ++i) b.u8(0);
  b.u8(1);                                          // 1 kv
  for (int i = 0; i < 7; ++i) b.u8(0);
  b.u8(1).raw("k");                                 // key "k"
  for (uint8_t x : {0, 0, 0, 4}) b.u8(x);           // u32
  for (uint8_t x : {0x12, 0x34, 0x56, 0x78}) b.u8(x);
  Scanned s = scan(from_bytes("be", b.b));
  EXPECT_EQ(s.model.order, ByteOrder::big);
  EXPECT_EQ(s.model.version, 3u);
  EXPECT_EQ(s.model.find("k")->bits, 0x12345678u);
  EXPECT_EQ(to_bytes(s.model), b.b);
}

// Every kind of field, big-endian, encoded by hand here and not by the writer: a string,
// u16, u64, f64, bool, an array's count and items (u32 and string), and a tensor record.
TEST(RoundTrip, EveryBigEndianFieldKindReadsFromHandEncodedBytes) {
  Bytes b;
  b.big = true;
  b.head(3, 1, 6);
  b.str("general.architecture").u32(8).str("be");                         // string
  b.str("k.u16").u32(2).u16(0xA1B2);                                       // u16
  b.str("k.u64").u32(10).u64(0x0102030405060708ull);                       // u64
  b.str("k.f64").u32(12).u64(0xBFF8000000000000ull);                       // f64 -1.5
  b.str("k.bool").u32(7).u8(1);                                            // bool
  b.str("k.arr").u32(9).u32(4).u64(3).u32(1).u32(2).u32(0xA0B0C0D0);       // array of u32
  uint64_t info = b.size();
  b.str("t").u32(2).u64(4).u64(2).u32(0).u64(0);                           // tensor: dims [4, 2], f32, offset 0
  b.pad_to(32);
  uint64_t data = b.size();
  for (uint32_t bits : {0x3F800000u, 0x40000000u, 0x40400000u, 0x40800000u, 0x40A00000u, 0x40C00000u, 0x40E00000u,
                        0x41000000u})
    b.u32(bits);                                                           // 1.0 ... 8.0
  Scanned s = scan(from_bytes("be", b.b));
  const Model& m = s.model;
  EXPECT_EQ(m.order, ByteOrder::big);
  EXPECT_EQ(m.find("general.architecture")->str, "be");
  EXPECT_EQ(m.find("k.u16")->bits, 0xA1B2u);
  EXPECT_EQ(m.find("k.u64")->bits, 0x0102030405060708ull);
  EXPECT_EQ(m.find("k.f64")->as_f64(), -1.5);
  EXPECT_EQ(m.find("k.bool")->bits, 1u);
  const Value* arr = m.find("k.arr");
  ASSERT_TRUE(arr);
  EXPECT_EQ(arr->elem, ValueType::u32);
  EXPECT_EQ(arr->nums, (std::vector<uint64_t>{1, 2, 0xA0B0C0D0}));
  ASSERT_EQ(m.tensors.size(), 1u);
  EXPECT_EQ(m.tensors[0].name, "t");
  EXPECT_EQ(m.tensors[0].dims, (std::vector<uint64_t>{4, 2}));
  EXPECT_EQ(m.tensors[0].type, 0u);
  EXPECT_EQ(s.layout.data_offset, data);
  EXPECT_EQ(s.layout.header_size, info + 8 + 1 + 4 + 16 + 4 + 8);
  EXPECT_EQ(m.tensors[0].source_offset, data);
  // The writer gives back the hand-made bytes exactly, and a string array too.
  EXPECT_EQ(to_bytes(m), b.b);
  Bytes s2;
  s2.big = true;
  s2.head(3, 0, 1).str("k.strs").u32(9).u32(8).u64(2).str("ab").str("");
  Scanned strs = scan(from_bytes("be-strings", s2.b));
  EXPECT_EQ(strs.model.find("k.strs")->strs, (std::vector<std::string>{"ab", ""}));
  EXPECT_EQ(to_bytes(strs.model), s2.b);
}

// A numeric array read from memory is a view of the file's own bytes (no copy, no 8 bytes
// per item), reads the same in either byte order, and becomes a list of its own when grown.
TEST(RoundTrip, NumericArraysAreViewsOfTheFileInItsByteOrder) {
  Bytes be, le;
  be.big = true;
  for (Bytes* b : {&be, &le}) b->head(3, 0, 1).str("k.u16").u32(9).u32(2).u64(3).u16(1).u16(0xA1B2).u16(0xFFFF);
  auto be_source = from_bytes("be", be.b);
  Scanned sb = scan(be_source), sl = scan(from_bytes("le", le.b));
  const NumberList& nb = sb.model.find("k.u16")->nums;
  const NumberList& nl = sl.model.find("k.u16")->nums;
  EXPECT_TRUE(nb.big());
  EXPECT_FALSE(nl.big());
  EXPECT_EQ(nb.width(), 2u);
  EXPECT_EQ(nb.region().size(), 6u);
  // The items are where the file has them: the last 6 bytes of the header.
  EXPECT_EQ(reinterpret_cast<const uint8_t*>(nb.region().data()), be_source->data() + be.b.size() - 6);
  EXPECT_EQ(nb, (std::vector<uint64_t>{1, 0xA1B2, 0xFFFF}));
  EXPECT_EQ(nb, nl);  // same numbers, other byte order
  EXPECT_EQ(sb.model.find("k.u16")->at(1).bits, 0xA1B2u);
  NumberList grown = nb;
  grown.push_back(7);
  EXPECT_FALSE(grown.big());
  EXPECT_EQ(grown, (std::vector<uint64_t>{1, 0xA1B2, 0xFFFF, 7}));
  EXPECT_EQ(nb.size(), 3u);  // the view it came from is as it was
  EXPECT_THROW(nb.at(3), std::out_of_range);
  // Written in the other byte order, every item is turned over.
  Model flipped = sb.model;
  flipped.order = ByteOrder::little;
  EXPECT_EQ(to_bytes(flipped), le.b);
}

TEST(RoundTrip, AQwenSizedVocabularyOf150000TokensAndMergesReads) {
  Model m;
  m.metadata.push_back({"general.architecture", Value::of_string("qwen2")});
  std::vector<Value> tokens, merges, scores, types;
  for (int i = 0; i < 150000; ++i) {
    tokens.push_back(Value::of_string("tok" + std::to_string(i)));
    merges.push_back(Value::of_string("m" + std::to_string(i) + " x" + std::to_string(i % 977)));
    scores.push_back(Value::of_f32(-static_cast<float>(i)));
    types.push_back(Value::scalar(ValueType::i32, 1));
  }
  m.metadata.push_back({"tokenizer.ggml.model", Value::of_string("gpt2")});
  m.metadata.push_back({"tokenizer.ggml.tokens", Value::array(ValueType::string, std::move(tokens))});
  m.metadata.push_back({"tokenizer.ggml.scores", Value::array(ValueType::f32, std::move(scores))});
  m.metadata.push_back({"tokenizer.ggml.token_type", Value::array(ValueType::i32, std::move(types))});
  m.metadata.push_back({"tokenizer.ggml.merges", Value::array(ValueType::string, std::move(merges))});
  m.metadata.push_back({"tokenizer.ggml.eos_token_id", Value::of_u32(149999)});
  auto bytes = to_bytes(m);
  Scanned s = scan(from_bytes("qwen-vocab", bytes));
  EXPECT_EQ(s.model.metadata.size(), 7u);
  const Value* t = s.model.find("tokenizer.ggml.tokens");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->size(), 150000u);
  EXPECT_EQ(t->strs[149999], "tok149999");
  EXPECT_EQ(s.model.find("tokenizer.ggml.merges")->size(), 150000u);
  EXPECT_EQ(s.model.find("tokenizer.ggml.merges")->strs[1000], "m1000 x23");
  EXPECT_EQ(s.model.find("tokenizer.ggml.scores")->at(7).as_f64(), -7.0);
  EXPECT_EQ(s.model.find("tokenizer.ggml.token_type")->size(), 150000u);
  EXPECT_EQ(s.model.find("tokenizer.ggml.eos_token_id")->as_u64(), 149999u);
  EXPECT_EQ(s.layout.file_size, bytes.size());
  EXPECT_GT(bytes.size(), 150000u * (8 + 4 + 8 + 4 + 4 + 4));
}

TEST(RoundTrip, AHeaderReadsFromAPipeThroughBoostIostreams) {
  std::string path = temp_path("pipe.gguf");
  write_file(walkthrough_model(), path);
  auto bytes = read_file_bytes(path);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread writer([&] {
    size_t done = 0;
    while (done < bytes.size()) {  // in small pieces, so the reader must refill
      ssize_t w = ::write(fds[1], bytes.data() + done, std::min<size_t>(7, bytes.size() - done));
      if (w <= 0) break;
      done += static_cast<size_t>(w);
    }
    ::close(fds[1]);
  });
  namespace io = boost::iostreams;
  io::stream<io::file_descriptor_source> in(io::file_descriptor_source(fds[0], io::close_handle));
  Scanned piped = scan_stream(in, "<pipe>");
  writer.join();
  Scanned filed = scan_file(path);
  expect_same_model(piped.model, filed.model);
  EXPECT_EQ(piped.layout.header_size, 327u);
  EXPECT_EQ(piped.layout.data_offset, 384u);
  EXPECT_EQ(piped.model.tensors[0].source, nullptr);  // a pipe cannot be read back
}

TEST(RoundTrip, AStreamCutShortNamesWhereItEnded) {
  auto bytes = to_bytes(walkthrough_model());
  bytes.resize(100);
  std::string s(bytes.begin(), bytes.end());
  std::istringstream in(s);
  try {
    scan_stream(in, "<cut>");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.offset, 94u);  // kv[1] starts at 70: key 70-90, type 90-94, length 94-102
    EXPECT_EQ(e.field, "kv[1] general.name (string length)");
    EXPECT_EQ(e.message, "needs 8 bytes, but the stream ends at byte 100");
  }
}

TEST(Layouts, OneCheckEnforcesTheLayoutRules) {
  Layout L = plan(walkthrough_model());
  check_layout(L);
  Layout gap = L;
  gap.spans[5].span.offset += 1;
  try {
    check_layout(gap);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.offset, gap.spans[5].span.offset);
    EXPECT_NE(e.message.find("but the span before ends at"), std::string::npos);
  }
  Layout long_pad = L;
  long_pad.spans[long_pad.spans.size() - 2].span.size = 64;
  EXPECT_THROW(check_layout(long_pad), Error);
  Layout short_file = L;
  short_file.file_size = 407;
  EXPECT_THROW(check_layout(short_file), Error);
}

TEST(Layouts, EmitCatchesAModelThatDriftedFromItsPlan) {
  Model m = walkthrough_model();
  Layout L = plan(m);
  m.metadata.edit(1).value = Value::of_string("a longer name than before");
  VectorSink sink;
  EXPECT_THROW(emit(m, L, sink), std::logic_error);
}
