// The fixture factory: replicas (sparse, zeros, the header alone), header exemplars read by
// every reading command as the model, and vocabulary-only extracts.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "ggufkit/check.h"
#include "ggufkit/fixture.h"
#include "ggufkit/scan.h"
#include "ggufkit/writer.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

uint64_t disk_bytes(const std::string& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

ReplicaReport make(const std::string& in, const std::string& out, ReplicaData d) {
  ReplicaRequest r;
  r.input = in;
  r.output = out;
  r.data = d;
  return replica(r);
}

bool all_zero(const std::vector<uint8_t>& b, size_t from) {
  for (size_t i = from; i < b.size(); ++i)
    if (b[i] != 0) return false;
  return true;
}

}  // namespace

TEST(Replica, SparseHasTheSourcesSizeAndHeaderEveryTensorByteZeroAndTakesTheHeadersRoomOnDisk) {
  const std::string src = tiny_llama(), out = temp_path("rep-sparse.gguf");
  Scanned s = scan_file(src);
  ReplicaReport r = make(src, out, ReplicaData::sparse);
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_FALSE(r.from_exemplar);
  auto a = read_file_bytes(src), b = read_file_bytes(out);
  ASSERT_EQ(b.size(), a.size());
  EXPECT_EQ(r.files[0].file.file_size, a.size());
  EXPECT_EQ(r.files[0].header_bytes, s.layout.data_offset);
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + static_cast<long>(s.layout.data_offset), b.begin()));
  EXPECT_TRUE(all_zero(b, s.layout.data_offset));
  EXPECT_FALSE(all_zero(a, s.layout.data_offset));  // so the comparison above could fail
  // The header (725,376 bytes here) and at most a few blocks more; the source takes 5 MB.
  EXPECT_LE(disk_bytes(out), s.layout.data_offset + 16 * 4096);
  EXPECT_EQ(r.files[0].disk_bytes, disk_bytes(out));
  EXPECT_GE(disk_bytes(src), a.size() - 4096);
  // It reads as the model: the same tensors at the same offsets, and the rule book's verdict.
  Scanned back = scan_file(out);
  EXPECT_FALSE(back.header_only);
  EXPECT_EQ(back.layout, s.layout);
}

TEST(Replica, ZerosWritesTheSameBytesAsSparseWithTheZerosOnDisk) {
  const std::string src = tiny_llama(), sp = temp_path("rep-z-sparse.gguf"), z = temp_path("rep-zeros.gguf");
  make(src, sp, ReplicaData::sparse);
  ReplicaReport r = make(src, z, ReplicaData::zeros);
  EXPECT_EQ(read_file_bytes(sp), read_file_bytes(z));
  EXPECT_GE(disk_bytes(z), r.files[0].file.file_size - 4096);
}

TEST(Replica, NoneIsTheHeaderAloneWhichReadsAsTheModelMarkedHeaderOnly) {
  const std::string src = tiny_llama(), ex = temp_path("rep-none.gguf");
  Scanned s = scan_file(src);
  ReplicaReport r = make(src, ex, ReplicaData::none);
  auto a = read_file_bytes(src), b = read_file_bytes(ex);
  ASSERT_EQ(b.size(), s.layout.data_offset);
  EXPECT_TRUE(std::equal(b.begin(), b.end(), a.begin()));
  EXPECT_EQ(r.files[0].file.file_size, s.layout.data_offset);
  Scanned e = scan_file(ex);
  EXPECT_TRUE(e.header_only);
  EXPECT_EQ(e.source_size, s.layout.data_offset);
  EXPECT_EQ(e.model_size, a.size());  // the model's size, from the header alone
  EXPECT_EQ(e.layout, s.layout);      // every span, to the model's end
  EXPECT_EQ(e.model.metadata, s.model.metadata);
  ASSERT_EQ(e.model.tensors.size(), 21u);
  // A tensor's bytes are refused, naming the file, the data start and what to run.
  std::vector<uint8_t> buf(16);
  const Tensor t = e.model.tensors[0];
  try {
    t.source->read_at(t.source_offset, buf.data(), buf.size());
    FAIL() << "read an exemplar's tensor";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind, Error::Kind::usage);
    EXPECT_EQ(err.file, ex);
    EXPECT_EQ(err.offset, s.layout.data_offset);
    EXPECT_NE(err.message.find("header exemplar"), std::string::npos);
    EXPECT_NE(err.message.find("ggufkit replica"), std::string::npos);
  }
}

TEST(Replica, OfAnExemplarIsTheFullSizeSparseFileAgainByteForByte) {
  const std::string src = tiny_llama(), ex = temp_path("rep-ex.gguf"), direct = temp_path("rep-direct.gguf"),
                    again = temp_path("rep-again.gguf");
  make(src, ex, ReplicaData::none);
  make(src, direct, ReplicaData::sparse);
  ReplicaReport r = make(ex, again, ReplicaData::sparse);
  EXPECT_TRUE(r.from_exemplar);
  EXPECT_EQ(r.files[0].header_bytes, read_file_bytes(ex).size());
  EXPECT_EQ(read_file_bytes(again), read_file_bytes(direct));
}

TEST(Replica, ValidateReportsAnExemplarAsHeaderOnlyInformationAndACutPastItAsTruncated) {
  const std::string src = tiny_llama(), ex = temp_path("val-ex.gguf"), cut = temp_path("val-cut.gguf");
  Scanned s = scan_file(src);
  make(src, ex, ReplicaData::none);
  std::vector<Finding> f = validate_file(ex, true);
  size_t header_only = 0, truncated = 0, errors = 0;
  for (const Finding& x : f) {
    header_only += x.code == Code::header_only;
    truncated += x.code == Code::truncated;
    errors += x.severity == Severity::error;
    if (x.code == Code::header_only) {
      EXPECT_EQ(x.severity, Severity::info);
      EXPECT_EQ(x.offset, s.layout.data_offset);
    }
  }
  EXPECT_EQ(header_only, 1u);
  EXPECT_EQ(truncated, 0u);
  EXPECT_EQ(errors, 0u);
  // One byte of tensor data more and it is a download cut short, as before.
  auto b = read_file_bytes(src);
  b.resize(s.layout.data_offset + 1);
  write_file_bytes(cut, b);
  EXPECT_THROW(scan_file(cut), Error);
  f = validate_file(cut, true);
  truncated = 0;
  for (const Finding& x : f) {
    truncated += x.code == Code::truncated;
    EXPECT_NE(x.code, Code::header_only);
  }
  EXPECT_EQ(truncated, 2u);  // the first tensor past the end, and how many are
}

// (An in-place edit that fits the header needs no tensor byte: AnExemplarsHeaderIsEdited... below.)
TEST(Replica, CommandsThatNeedTensorBytesRefuseAnExemplarNamingReplicaAndWriteNothing) {
  const std::string ex = temp_path("cmd-ex.gguf");
  make(tiny_llama(), ex, ReplicaData::none);
  const auto before = read_file_bytes(ex);
  for (const std::string& c : {"hash " + ex, "tensor " + ex + " output.weight", "rewrite " + ex + " -o " + temp_path("cmd-rw.gguf"),
                               "split " + ex + " --max-tensors 5 -o " + temp_path("cmd-sp"),
                               "edit " + ex + " --set general.name=x -o " + temp_path("cmd-ed.gguf"),
                               "realign " + ex + " -a 64 -o " + temp_path("cmd-ra.gguf")}) {
    SCOPED_TRACE(c);
    CliRun r = run_cli(c);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find("header exemplar"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("ggufkit replica"), std::string::npos) << r.err;
  }
  for (const char* n : {"cmd-rw.gguf", "cmd-ed.gguf", "cmd-ra.gguf", "cmd-sp-00001-of-00005.gguf"}) EXPECT_FALSE(fs::exists(temp_path(n))) << n;
  EXPECT_EQ(read_file_bytes(ex), before);
}

TEST(Replica, ShowAndAccountGiveTheModelsSizeAndSayHeaderOnly) {
  const std::string ex = temp_path("show-ex.gguf");
  make(tiny_llama(), ex, ReplicaData::none);
  const uint64_t full = read_file_bytes(tiny_llama()).size(), here = read_file_bytes(ex).size();
  CliRun r = run_cli("show " + ex);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("file size     " + std::to_string(full) + " (header only: the file holds its first " +
                       std::to_string(here) + " bytes"),
            std::string::npos)
      << r.out;
  r = run_cli("account --json " + ex);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"file_size\": " + std::to_string(full)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"left_over\": 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"header_only\": true"), std::string::npos) << r.out;
  r = run_cli("show --json " + tiny_llama());
  EXPECT_NE(r.out.find("\"header_only\": false"), std::string::npos) << r.out;
}

// Every corpus file that reads: its exemplar lists the same tensors and blocks as it does.
TEST(Replica, TheExemplarOfEveryCorpusFileReadsWithTheSameTensorsAndStack) {
  size_t files = 0, with_tensors = 0;
  for (const auto& e : fs::recursive_directory_iterator(corpus(""))) {
    if (e.path().extension() != ".gguf") continue;
    const std::string src = e.path().string();
    if (run_cli("show --shard-only " + src).code != 0) continue;  // the v1 file: refused alike
    SCOPED_TRACE(src);
    const std::string ex = temp_path("corpus-ex-" + std::to_string(files++) + ".gguf");
    CliRun w = run_cli("replica --data none --shard-only " + src + " -o " + ex);
    ASSERT_EQ(w.code, 0) << w.err;
    with_tensors += scan_file(src).model.tensors.size() > 0;
    for (const char* c : {"tensors --json --shard-only ", "stack --json --shard-only "}) {
      CliRun a = run_cli(c + src), b = run_cli(c + ex);
      ASSERT_EQ(a.code, 0) << a.err;
      EXPECT_EQ(b.code, 0) << b.err;
      EXPECT_EQ(b.out, a.out) << c;
    }
  }
  EXPECT_GE(files, 12u);
  EXPECT_GE(with_tensors, 4u);
}

TEST(Replica, OfAShardIsTheWholeSetEachShardsHeaderAsItWas) {
  ASSERT_EQ(run_cli("split " + tiny_llama() + " --max-tensors 8 -o " + temp_path("set")).code, 0);
  ReplicaReport r = make(temp_path("set-00002-of-00003.gguf"), temp_path("set-rep"), ReplicaData::sparse);
  ASSERT_EQ(r.files.size(), 3u);
  for (uint32_t k = 1; k <= 3; ++k) {
    const std::string a = shard_path(temp_path("set"), k, 3), b = shard_path(temp_path("set-rep"), k, 3);
    EXPECT_EQ(r.files[k - 1].file.path, b);
    Scanned s = scan_file(a);
    auto x = read_file_bytes(a), y = read_file_bytes(b);
    ASSERT_EQ(y.size(), x.size()) << k;
    EXPECT_TRUE(std::equal(x.begin(), x.begin() + static_cast<long>(s.layout.data_offset), y.begin())) << k;
    EXPECT_TRUE(all_zero(y, s.layout.data_offset)) << k;
  }
  CliRun v = run_cli("validate " + temp_path("set-rep-00001-of-00003.gguf"));
  EXPECT_EQ(v.code, 0) << v.out << v.err;
}

// Found by the audit: -o named as shard 1 of a set of as many shards gave
// r-00001-of-00003-00001-of-00003.gguf. Such a name is the set's own.
TEST(Replica, AnOutputNamedAsShard1OfTheSetNamesTheSetNotAPrefix) {
  ASSERT_EQ(run_cli("split " + tiny_llama() + " --max-tensors 8 -o " + temp_path("named")).code, 0);
  const std::string out = temp_path("named-out");
  std::filesystem::create_directories(out);
  ReplicaReport r = make(temp_path("named-00001-of-00003.gguf"), out + "/r-00001-of-00003.gguf", ReplicaData::sparse);
  ASSERT_EQ(r.files.size(), 3u);
  for (uint32_t k = 1; k <= 3; ++k) EXPECT_EQ(r.files[k - 1].file.path, shard_path(out + "/r", k, 3));
  EXPECT_EQ(files_in(out), (std::vector<std::string>{"r-00001-of-00003.gguf", "r-00002-of-00003.gguf", "r-00003-of-00003.gguf"}));
}

TEST(Replica, RefusesAnExistingOutputWithoutForceAndTheInputItself) {
  const std::string out = temp_path("rep-exists.gguf");
  write_file_bytes(out, {1, 2, 3});
  EXPECT_THROW(make(tiny_llama(), out, ReplicaData::sparse), Error);
  EXPECT_EQ(read_file_bytes(out), (std::vector<uint8_t>{1, 2, 3}));
  ReplicaRequest r;
  r.input = tiny_llama();
  r.output = out;
  r.write.force = true;
  replica(r);
  EXPECT_EQ(read_file_bytes(out).size(), read_file_bytes(tiny_llama()).size());
  r.output = tiny_llama();
  EXPECT_THROW(replica(r), Error);
}

TEST(Extract, VocabOnlyKeepsTheArchitectureItsKeysAndTheTokenizerByteForByteAndNoTensors) {
  const std::string out = temp_path("vocab.gguf");
  ExtractRequest req;
  req.input = tiny_llama();
  req.output = out;
  ExtractReport r = extract_vocab(req);
  Scanned s = scan_file(tiny_llama()), v = scan_file(out);
  EXPECT_EQ(r.tensors_dropped, 21u);
  EXPECT_EQ(r.dropped, (std::vector<std::string>{"general.file_type", "general.quantization_version"}));
  EXPECT_EQ(r.keys_kept, s.model.metadata.size() - 2);
  ASSERT_EQ(v.model.metadata.size(), r.keys_kept);
  EXPECT_TRUE(v.model.tensors.empty());
  size_t j = 0;
  for (size_t i = 0; i < s.model.metadata.size(); ++i) {
    const KV kv = s.model.metadata[i];
    if (kv.key == "general.file_type" || kv.key == "general.quantization_version") continue;
    EXPECT_EQ(v.model.metadata[j++], kv) << kv.key;
  }
  // It ends right after its header, as llama.cpp's models/ggml-vocab-*.gguf do.
  EXPECT_EQ(read_file_bytes(out).size(), v.layout.header_size);
  EXPECT_EQ(r.file.file_size, v.layout.header_size);
  // The rule book has nothing against it.
  for (const Finding& f : validate_file(out, true)) EXPECT_NE(f.severity, Severity::error) << f.message;
}

TEST(Extract, TheKeysAVocabularyOnlyFileKeeps) {
  EXPECT_TRUE(vocab_only_key("general.architecture", "llama"));
  EXPECT_TRUE(vocab_only_key("general.name", "llama"));
  EXPECT_TRUE(vocab_only_key("llama.block_count", "llama"));
  EXPECT_TRUE(vocab_only_key("tokenizer.chat_template", "llama"));
  EXPECT_FALSE(vocab_only_key("llamax.block_count", "llama"));
  EXPECT_FALSE(vocab_only_key("general.file_type", "llama"));
  EXPECT_FALSE(vocab_only_key("split.count", "llama"));
  EXPECT_FALSE(vocab_only_key("qwen2.block_count", "llama"));
}

TEST(Extract, RefusesAFileWithoutAVocabularyNamingTheKey) {
  CliRun r = run_cli("example -o " + temp_path("ex408.gguf"));
  ASSERT_EQ(r.code, 0);
  r = run_cli("extract --vocab-only " + temp_path("ex408.gguf") + " -o " + temp_path("ex408-vocab.gguf"));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("tokenizer.ggml.model"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(temp_path("ex408-vocab.gguf")));
  r = run_cli("extract " + tiny_llama() + " -o " + temp_path("no-kind.gguf"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("say what to extract: --tensors GLOB (repeatable), or --vocab-only"), std::string::npos) << r.err;
}

TEST(Replica, AnEditThatRewritesTheWholeReplicaGivesAReplica) {
  const std::string rep = temp_path("rep-edit.gguf"), out = temp_path("rep-edited.gguf");
  make(tiny_llama(), rep, ReplicaData::sparse);
  CliRun r = run_cli("realign " + rep + " -a 4096 -o " + out);  // every tensor moves: the whole file is written
  ASSERT_EQ(r.code, 0) << r.err;
  Scanned s = scan_file(out);
  EXPECT_EQ(s.layout.alignment, 4096u);
  auto b = read_file_bytes(out);
  EXPECT_GT(b.size(), read_file_bytes(rep).size());  // padded wider: so larger, but no more on disk
  EXPECT_TRUE(all_zero(b, s.layout.data_offset));
  // The header, and the small tensors and paddings the writer fills with zeros rather than
  // leave holes under 64 KiB (sink.cpp): 151 KiB here, of the 4.4 MB of tensor data.
  EXPECT_LE(disk_bytes(out), s.layout.data_offset + 256 * 1024);
  EXPECT_LT(disk_bytes(out), b.size() / 4);
}

TEST(Replica, AnExemplarsHeaderIsEditedInPlaceWhenTheEditFitsAndStaysAnExemplar) {
  const std::string ex = temp_path("inplace-ex.gguf");
  make(tiny_llama(), ex, ReplicaData::none);
  const auto before = read_file_bytes(ex);
  CliRun r = run_cli("edit " + ex + " --eos-token-id 0 --in-place");
  ASSERT_EQ(r.code, 0) << r.err;
  auto after = read_file_bytes(ex);
  ASSERT_EQ(after.size(), before.size());  // still the header alone
  size_t differ = 0;
  for (size_t i = 0; i < after.size(); ++i) differ += after[i] != before[i];
  EXPECT_EQ(differ, 1u);  // eos 2 -> 0: one byte of a u32
  Scanned s = scan_file(ex);
  EXPECT_TRUE(s.header_only);
  EXPECT_EQ(s.model.find("tokenizer.ggml.eos_token_id")->as_u64(), 0u);
  EXPECT_EQ(s.model_size, read_file_bytes(tiny_llama()).size());
  // One that does not fit needs the tensor bytes: refused, the file as it was.
  r = run_cli("edit " + ex + " --set general.name=a-much-longer-name-than-the-header-has-room-for --in-place");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("ggufkit replica"), std::string::npos) << r.err;
  EXPECT_EQ(read_file_bytes(ex), after);
}
