// Handcrafted malformed files, grouped by the stage they break, like llama.cpp's
// tests/test-gguf.cpp. Each names the byte offset and the field the reader must report;
// the program must exit 1 with that message, under a memory limit and a time limit.
#include <gtest/gtest.h>

#include "ggufkit/error.h"
#include "ggufkit/scan.h"
#include "helpers.h"
#include "malformed_cases.h"

using namespace ggufkit;
using namespace testing_helpers;

class Malformed : public ::testing::TestWithParam<Case> {};

TEST_P(Malformed, TheReaderNamesTheOffsetAndTheField) {
  const Case& c = GetParam();
  auto bytes = c.build();
  try {
    scan(from_bytes("bad.gguf", bytes));
    FAIL() << c.name << " was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind, Error::Kind::format);
    EXPECT_EQ(e.file, "bad.gguf");
    EXPECT_EQ(e.offset, c.offset) << e.what();
    EXPECT_EQ(e.field, c.field) << e.what();
    EXPECT_NE(e.message.find(c.message), std::string::npos) << e.what();
  }
}

TEST_P(Malformed, TheProgramExits1WithTheMessageUnderMemoryAndTimeLimits) {
  const Case& c = GetParam();
  std::string path = temp_path(std::string("malformed-") + c.name + ".gguf");
  write_file_bytes(path, c.build());
#ifdef GGUFKIT_SANITIZED
  CliRun r = run_cli("show " + path, "timeout 60 ");
#else
  CliRun r = run_cli("show " + path, "ulimit -v 262144; timeout 10 ");
#endif
  EXPECT_EQ(r.code, 1) << r.err;
  std::string expect = path + ": at byte " + std::to_string(c.offset) + ", " + c.field + ": ";
  EXPECT_EQ(r.err.rfind("ggufkit: error: " + expect, 0), 0u) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_P(Malformed, ValidateReportsItWithin64MiBOfAddressSpace) {
  const Case& c = GetParam();
  std::string path = temp_path(std::string("validate-") + c.name + ".gguf");
  write_file_bytes(path, c.build());
#ifdef GGUFKIT_SANITIZED
  CliRun r = run_cli("validate --json " + path, "timeout 60 ");
#else
  CliRun r = run_cli("validate --json " + path, "ulimit -v 65536; timeout 10 ");  // 64 MiB of address space
#endif
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("\"severity\": \"error\", \"offset\": "), std::string::npos) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

INSTANTIATE_TEST_SUITE_P(AllStages, Malformed, ::testing::ValuesIn(malformed_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(MalformedSet, CoversEveryStageWithAtLeastThirtyFiles) {
  std::map<std::string, int> per_stage;
  for (const auto& c : malformed_cases()) per_stage[c.stage]++;
  EXPECT_GE(malformed_cases().size(), 30u);
  EXPECT_GE(per_stage["header"], 5);
  EXPECT_GE(per_stage["kv"], 5);
  EXPECT_GE(per_stage["tensor info"], 5);
  EXPECT_GE(per_stage["data"], 5);
}

TEST(MalformedSet, TheBaseFileItselfIsValid) {
  Scanned s = scan(from_bytes("base", malformed_base()));
  EXPECT_EQ(s.layout.header_size, 168u);
  EXPECT_EQ(s.layout.data_offset, 192u);
  EXPECT_EQ(s.layout.tensor_offsets, (std::vector<uint64_t>{0, 32}));
  EXPECT_EQ(s.source_size, 256u);
  EXPECT_EQ(s.layout.find(SpanKind::kv_value, "kv[1] general.alignment")->span, (Span{98, 4}));
  EXPECT_EQ(s.layout.find(SpanKind::tensor_info, "tensor[1] b")->span, (Span{135, 33}));
}
