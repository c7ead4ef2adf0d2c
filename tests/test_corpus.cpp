// Files written by llama.cpp's own tools (../shared/corpus): read, and rewritten byte
// for byte.
#include <gtest/gtest.h>

#include "ggufkit/error.h"
#include "ggufkit/scan.h"
#include "ggufkit/writer.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;

namespace {
struct CorpusFile {
  const char* path;
  uint32_t version;
  size_t kvs;
  const char* arch;
  size_t tokens;
  bool chat_template;
};
const CorpusFile kFiles[] = {
    {"vocab/ggml-vocab-llama-spm.gguf", 3, 22, "llama", 32000, false},
    {"vocab/ggml-vocab-gpt-2.gguf", 3, 16, "gpt2", 50257, false},
    {"vocab/ggml-vocab-phi-3.gguf", 3, 26, "phi3", 32064, true},
    {"vocab/ggml-vocab-bert-bge.gguf", 3, 20, "bert", 30522, false},
    {"vocab/ggml-vocab-falcon.gguf", 3, 18, "falcon", 65024, false},
    {"vocab/ggml-vocab-baichuan.gguf", 3, 18, "baichuan", 64000, false},
    {"history/ggml-vocab-falcon.v2.gguf", 2, 0, "falcon", 0, false},
};
}  // namespace

TEST(Corpus, EveryFileReadsWithItsKnownCounts) {
  for (const auto& f : kFiles) {
    SCOPED_TRACE(f.path);
    Scanned s = scan_file(corpus(f.path));
    EXPECT_EQ(s.model.version, f.version);
    if (f.kvs) {
      EXPECT_EQ(s.model.metadata.size(), f.kvs);
    }
    EXPECT_EQ(s.model.tensors.size(), 0u);
    ASSERT_TRUE(s.model.find("general.architecture"));
    EXPECT_EQ(s.model.find("general.architecture")->str, f.arch);
    const Value* tokens = s.model.find("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens);
    EXPECT_EQ(tokens->elem, ValueType::string);
    if (f.tokens) {
      EXPECT_EQ(tokens->size(), f.tokens);
    }
    EXPECT_EQ(s.model.find("tokenizer.chat_template") != nullptr, f.chat_template);
    // No tensors and no padding: the file ends where the header ends.
    EXPECT_FALSE(s.model.pad_end);
    EXPECT_EQ(s.layout.file_size, s.source_size);
    EXPECT_EQ(s.layout.header_size, s.source_size);
    EXPECT_EQ(s.layout.data_offset, (s.source_size + 31) / 32 * 32);
    check_layout(s.layout);
  }
}

TEST(Corpus, TheWriterReproducesEveryFileByteForByte) {
  for (const auto& f : kFiles) {
    SCOPED_TRACE(f.path);
    auto original = read_file_bytes(corpus(f.path));
    Scanned s = scan_file(corpus(f.path));
    EXPECT_EQ(plan(s.model), s.layout);
    auto written = to_bytes(s.model);
    ASSERT_EQ(written.size(), original.size());
    EXPECT_TRUE(written == original);
  }
}

TEST(Corpus, RewriteOnTheCommandLineGivesAnIdenticalFile) {
  for (const auto& f : kFiles) {
    SCOPED_TRACE(f.path);
    std::string out = temp_path("corpus-rewrite.gguf");
    CliRun r = run_cli("rewrite " + corpus(f.path) + " --force -o " + out);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(std::system(("cmp -s " + corpus(f.path) + " " + out).c_str()), 0);
  }
}

TEST(Corpus, TheV1FileIsRefusedAsV1) {
  try {
    scan_file(corpus("history/ggml-vocab-llama.v1.gguf"));
    FAIL() << "v1 was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind, Error::Kind::format);
    EXPECT_EQ(e.offset, 4u);
    EXPECT_EQ(e.field, "head (version)");
    EXPECT_NE(e.message.find("GGUF v1"), std::string::npos) << e.message;
  }
  CliRun r = run_cli("show " + corpus("history/ggml-vocab-llama.v1.gguf"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("ggml-vocab-llama.v1.gguf: at byte 4, head (version): this is GGUF v1"), std::string::npos)
      << r.err;
}
