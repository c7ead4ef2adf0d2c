// Memory in proportion to the header: arrays of arrays are views of the file, and every
// command's address space stays under 3x the header plus 32 MiB (ulimit -v), whatever
// shape the header has.
#include <gtest/gtest.h>

#include <string>

#include "ggufkit/model.h"
#include "ggufkit/scan.h"
#include "ggufkit/source.h"
#include "ggufkit/writer.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;

namespace {

// A u8 array holding `items`, a u16 array holding `items` and a string array, as Values.
Value u8s(std::vector<uint64_t> items) {
  std::vector<Value> v;
  for (uint64_t x : items) v.push_back(Value::scalar(ValueType::u8, x));
  return Value::array(ValueType::u8, v);
}

TEST(ValueList, AListBuiltInMemoryHoldsItsArraysAsAFileLaysThemOut) {
  ValueList l;
  l.push_back(u8s({1, 2}));
  l.push_back(Value::strings({"ab"}));
  ASSERT_EQ(l.size(), 2u);
  Bytes want;
  want.u32(0).u64(2).u8(1).u8(2);          // u8 [1, 2]
  want.u32(8).u64(1).str("ab");            // string ["ab"]
  std::string_view r = l.region();
  EXPECT_EQ(std::vector<uint8_t>(r.begin(), r.end()), want.b);
  EXPECT_EQ(l[0], u8s({1, 2}));
  EXPECT_EQ(l[1].strs, (std::vector<std::string>{"ab"}));
  EXPECT_THROW(l.at(2), std::out_of_range);
}

TEST(ValueList, ACopyIsUnchangedByAPushOntoTheOriginalAndAnItemOutlivesItsList) {
  ValueList a;
  a.push_back(u8s({7}));
  ValueList b = a;
  a.push_back(u8s({8}));
  EXPECT_EQ(a.size(), 2u);
  EXPECT_EQ(b.size(), 1u);
  EXPECT_EQ(b.region().size(), 13u);
  Value item;
  {
    ValueList c;
    c.push_back(u8s({5, 6, 7}));
    item = c[0];
  }
  EXPECT_EQ(item.nums, (std::vector<uint64_t>{5, 6, 7}));  // the bytes are shared, not freed with the list
}

// One key holding an array of arrays, in either byte order: [[], [1, 2, 3] as u16].
std::vector<uint8_t> nested_file(bool big) {
  Bytes b;
  b.big = big;
  b.head(3, 0, 1).str("nested").u32(9).u32(9).u64(2);
  b.u32(0).u64(0);
  b.u32(2).u64(3).u16(1).u16(2).u16(3);
  return b.b;
}

TEST(ValueList, ListsReadFromEitherByteOrderAreEqualAndWriteBackByteForByte) {
  std::string little = temp_path("nested-le.gguf"), big = temp_path("nested-be.gguf");
  write_file_bytes(little, nested_file(false));
  write_file_bytes(big, nested_file(true));
  Scanned a = scan_file(little), b = scan_file(big);
  const Value& x = *a.model.find("nested");
  ASSERT_EQ(x.items.size(), 2u);
  EXPECT_EQ(x.items.region().size(), 12u + 12u + 6u);  // a view of the file's 30 bytes
  EXPECT_EQ(x.items[1].nums, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(a.model.metadata, b.model.metadata);  // the same values, whatever the byte order
  // Each writes back its own bytes; the big-endian one, written little-endian, gives the other.
  EXPECT_EQ(to_bytes(b.model), read_file_bytes(big));
  Model turned = b.model;
  turned.order = ByteOrder::little;
  EXPECT_EQ(to_bytes(turned), read_file_bytes(little));
}

// ulimit -v for a header of `header` bytes: 3x the header plus 32 MiB, in KiB.
std::string limit_for(uint64_t header) { return "ulimit -v " + std::to_string((3 * header + (32ull << 20)) / 1024) + "; "; }

struct Bounded {
  const char* name;
  std::string args;  // FILE and OUT stand for the model and an output path
  int code;
  std::string out;   // what its standard output must hold
};

// Every command on `path` under the limit: the exit code, and what it printed or wrote.
void run_bounded(const std::string& path, const std::vector<Bounded>& cases) {
#ifdef GGUFKIT_SANITIZED
  GTEST_SKIP() << "the sanitizers reserve terabytes of address space; ulimit -v cannot apply";
#endif
  uint64_t header = read_file_bytes(path).size();
  for (const Bounded& c : cases) {
    std::string out = temp_path(std::string("bounded-") + c.name + ".gguf");
    std::string args = c.args;
    for (auto [from, to] : {std::pair<std::string, std::string>{"FILE", path}, {"OUT", out}})
      for (size_t at; (at = args.find(from)) != std::string::npos;) args.replace(at, from.size(), to);
    CliRun r = run_cli(args, limit_for(header) + "timeout 120 ");
    EXPECT_EQ(r.code, c.code) << c.name << ": " << r.err;
    EXPECT_NE(r.out.find(c.out), std::string::npos) << c.name << ": " << r.out.substr(0, 300);
  }
}

TEST(Memory, FourMillionNestedEmptyArraysStayWithinThreeTimesTheHeader) {
  // 48 MB of header: one key whose array holds 4,000,000 empty arrays, then [1, 2, 3].
  const uint64_t n = 4'000'000;
  Bytes b;
  b.head(3, 0, 1).str("nested").u32(9).u32(9).u64(n + 1);
  b.b.reserve(b.size() + 12 * n + 20);
  for (uint64_t i = 0; i < n; ++i) b.u32(0).u64(0);
  b.u32(2).u64(3).u16(1).u16(2).u16(3);
  std::string path = temp_path("nested-4m.gguf");
  write_file_bytes(path, b.b);
  b.b.clear();
  b.b.shrink_to_fit();
  run_bounded(path, {
      {"show", "show FILE", 0, "metadata      1 keys"},
      {"validate", "validate FILE", 1, "nested: an array of arrays"},
      {"get", "get --json FILE nested", 0, "[], [1, 2, 3]]}"},
      {"rewrite", "rewrite FILE -o OUT", 0, ""},
      {"edit", "edit FILE --set general.name=n -o OUT", 0, "general.name"},
  });
  if (HasFatalFailure() || IsSkipped()) return;
  EXPECT_EQ(read_file_bytes(temp_path("bounded-rewrite.gguf")), read_file_bytes(path));
  Scanned edited = scan_file(temp_path("bounded-edit.gguf"));
  EXPECT_EQ(edited.model.find("general.name")->str, "n");
  EXPECT_EQ(edited.model.find("nested")->items, scan_file(path).model.find("nested")->items);
}

}  // namespace
