// Handcrafted malformed files, grouped by the stage they break, like llama.cpp's
// tests/test-gguf.cpp. Each names the byte offset and the field the reader must report;
// the program must exit 1 with that message, under a memory limit and a time limit.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>

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
  EXPECT_TRUE(r.err.empty()) << r.err;
  // This case's own finding: the reader's offset, field and message; a file cut short is
  // reported where its missing data should be, with the bytes that are missing; an offset
  // that jumps past the end at its field, as the reader tells both.
  struct Want {
    std::string code;
    uint64_t offset;
    std::string message;
  };
  const std::map<std::string, Want> cut = {
      {"OffsetPastTheEnd", {"truncated", 160, "tensor[1] b: its data runs to byte 1236, past the end of the file at 256"}},
      {"CutInsideTheTensorData", {"truncated", 224, "tensor[1] b: its data runs to byte 244, past the end of the file at 235"}},
      {"CutBeforeTheData", {"truncated", 192, "tensor[0] a: its data runs to byte 204, past the end of the file at 180"}},
  };
  auto it = cut.find(c.name);
  Want want = it != cut.end() ? it->second : Want{"read", c.offset, c.field + ": "};
  YAML::Node j = YAML::Load(r.out);
  int found = 0;
  for (size_t i = 0; i < j["findings"].size(); ++i) {
    YAML::Node f = j["findings"][i];
    if (f["offset"].IsNull() || f["offset"].as<uint64_t>() != want.offset) continue;
    std::string msg = f["message"].as<std::string>();
    found += f["code"].as<std::string>() == want.code && f["severity"].as<std::string>() == "error" &&
             msg.rfind(want.message, 0) == 0 && (it != cut.end() || msg.find(c.message) != std::string::npos);
  }
  EXPECT_EQ(found, 1) << r.out;
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
