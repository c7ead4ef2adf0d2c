// ggufkit corrupt: the tiny llama's corpus of broken variants, each file read back to
// prove what its manifest entry says.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <set>

#include "ggufkit/check.h"
#include "ggufkit/corrupt.h"
#include "ggufkit/error.h"
#include "ggufkit/scan.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

const CorruptReport& tiny_corpus() {
  static CorruptReport r = [] {
    CorruptRequest q;
    q.source = tiny_llama();
    q.dir = temp_path("corrupt-tiny");
    return corrupt(q);
  }();
  return r;
}
const std::string kTinyDir = "corrupt-tiny";

}  // namespace

TEST(Corrupt, TheTinyLlamasCorpusBreaksEverySpanKindOfItsMapWithTheMutationsOfTheTable) {
  const CorruptReport& r = tiny_corpus();
  ASSERT_GE(r.files.size(), 150u);
  std::set<std::string> kinds, broken;
  for (const LabeledSpan& s : scan_file(tiny_llama()).layout.spans) kinds.insert(span_kind_name(s.kind));
  std::map<std::string, size_t> by_mutation;
  for (const CorruptEntry& e : r.files) broken.insert(e.span_kind), by_mutation[e.mutation]++;
  EXPECT_EQ(broken, kinds);
  EXPECT_EQ(kinds.size(), 10u);  // no tensor_padding, gap or trailing: every tensor's size is a multiple of 32
  // Each mutation's quota, once for each kind of span of the file it changes; fewer cuts
  // where a kind has fewer places (one magic, version and padding span; 3 bytes inside the
  // 4-byte ones), since no variant is made twice.
  const std::map<std::string, size_t> expected = {
      {"cut_boundary", 15}, {"cut_inside", 37}, {"bad_magic", 1}, {"version_0", 1}, {"version_1", 1},
      {"version_future", 1}, {"version_other_endian", 1}, {"count_past_file", 4}, {"count_negative", 2},
      {"count_minus_one", 2}, {"key_length_past_file", 4}, {"empty_key", 2}, {"duplicate_key", 4},
      {"unknown_value_type", 6}, {"alignment_wrong_type", 2}, {"string_length_past_file", 4},
      {"array_count_past_file", 4}, {"unknown_element_type", 3}, {"nested_array", 3}, {"alignment_0", 1},
      {"alignment_3", 1}, {"block_count_disagrees", 2}, {"hparam_zero", 3}, {"token_id_past_vocab", 4},
      {"bool_not_0_1", 1}, {"name_length_past_file", 3}, {"n_dims_0", 3}, {"n_dims_5", 3},
      {"unknown_ggml_type", 4}, {"removed_ggml_type", 2}, {"misaligned_offset", 4}, {"overlapping_offset", 3},
      {"offset_gap", 3}, {"duplicate_name", 3}, {"dim_past_file", 1}, {"row_not_whole_blocks", 2},
      {"nonzero_padding", 4}, {"nan_f32", 3}, {"inf_f32", 3}, {"nan_f16", 3}, {"inf_f16", 3}, {"bytes_after_end", 3}};
  EXPECT_EQ(by_mutation, expected);
  std::vector<std::string> names = corrupt_mutations();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), expected.size());
}

TEST(Corrupt, EveryFileFailsInTheReaderWhereItsEntrySaysAndValidateGivesItsLlamaVerdict) {
  const CorruptReport& r = tiny_corpus();
  const std::string dir = temp_path(kTinyDir);
  size_t fails = 0, refused = 0;
  for (const CorruptEntry& e : r.files) {
    SCOPED_TRACE(e.file + " " + e.mutation + " " + e.field);
    const std::string path = dir + "/" + e.file;
    ASSERT_TRUE(fs::exists(path));
    EXPECT_LE(fs::file_size(path), 8u << 20);
    std::optional<uint64_t> at;
    bool reads = true;
    try {
      scan_file(path);
    } catch (const Error& err) {
      reads = false;
      at = err.offset;
      EXPECT_NE(e.error.find(err.message), std::string::npos) << e.error;
    }
    EXPECT_EQ(reads, e.error.empty()) << e.error;
    EXPECT_EQ(at, e.error_offset);
    Verdict v = validate(path, true);
    EXPECT_EQ(v.errors == 0, e.llama_loads);
    EXPECT_EQ(e.gguf_accepts, ggml_accepts(path));
    fails += !reads;
    refused += !e.llama_loads;
  }
  // Most variants break the reader; the rest are what readers let through, which llama.cpp
  // trips on later or loads (non-zero padding, NaN in the weights, bytes after the end).
  EXPECT_GT(fails, r.files.size() / 2);
  EXPECT_GT(refused, fails);
  for (const CorruptEntry& e : r.files) {
    SCOPED_TRACE(e.file + " " + e.mutation);
    if (e.mutation == "nan_f32" || e.mutation == "inf_f16" || e.mutation == "nonzero_padding" || e.mutation == "bytes_after_end") {
      EXPECT_TRUE(e.error.empty()) << e.error;
      EXPECT_TRUE(e.llama_loads);
      EXPECT_TRUE(e.gguf_accepts);
    }
    if (e.mutation == "offset_gap") {  // the format allows it; ggml and llama.cpp do not
      EXPECT_TRUE(e.error.empty()) << e.error;
      EXPECT_FALSE(e.gguf_accepts);
      EXPECT_FALSE(e.llama_loads);
    }
    if (e.mutation == "dim_past_file") {  // ggml with no_alloc does not look at the data
      EXPECT_FALSE(e.error.empty());
      EXPECT_TRUE(e.gguf_accepts);
    }
    if (e.mutation == "version_0" || e.mutation == "bad_magic" || e.mutation == "n_dims_5") {
      EXPECT_FALSE(e.gguf_accepts);
      EXPECT_FALSE(e.llama_loads);
      EXPECT_TRUE(e.error_offset.has_value());
    }
  }
}

// The manifest's error offset is where validate says the file fails to read (its read or
// truncated finding), on every file: a cut in the padding or the data is told at the data's
// first byte by both, not at the tensor record's offset field by one of them.
TEST(Corrupt, TheManifestsErrorOffsetIsWhereValidateSaysTheFileFailsOnEveryFileOfTheCorpus) {
  for (uint64_t seed : {1, 5}) {
    CorruptRequest q;
    q.source = tiny_llama();
    q.dir = temp_path("corrupt-validate-" + std::to_string(seed));
    q.seed = seed;
    q.force = true;
    const CorruptReport r = seed == 1 ? tiny_corpus() : corrupt(q);
    const std::string dir = seed == 1 ? temp_path(kTinyDir) : q.dir;
    size_t cuts = 0;
    for (const CorruptEntry& e : r.files) {
      SCOPED_TRACE(std::to_string(seed) + " " + e.file + " " + e.mutation + " " + e.field);
      std::optional<uint64_t> said;
      for (const auto& [file, f] : validate(dir + "/" + e.file, true).findings)
        if (!said && (f.code == Code::read || f.code == Code::truncated)) said = f.offset;
      EXPECT_EQ(e.error_offset, said);
      cuts += e.mutation.rfind("cut_", 0) == 0 && (e.span_kind == "padding" || e.span_kind == "tensor_data" || e.span_kind == "data");
    }
    EXPECT_GT(cuts, 2u);
  }
  // Seed 5's cut at the start of the padding: its first tensor's data would start at 725376.
  CorruptRequest q;
  q.source = tiny_llama();
  q.dir = temp_path("corrupt-validate-5");
  q.seed = 5;
  q.force = true;
  const CorruptReport r = corrupt(q);
  auto e = std::find_if(r.files.begin(), r.files.end(), [](const CorruptEntry& x) { return x.mutation == "cut_boundary" && x.span_kind == "padding"; });
  ASSERT_NE(e, r.files.end());
  EXPECT_EQ(e->offset, 725370u);  // the header's end
  EXPECT_EQ(e->error_offset, std::optional<uint64_t>(725376));
}

TEST(Corrupt, TheSameSeedGivesTheSameBytesAndManifestAndAnotherSeedOtherFiles) {
  auto make = [](const std::string& name, int seed) {
    std::string dir = temp_path(name);
    CliRun c = run_cli("corrupt " + tiny_llama() + " -o " + dir + " --count 60 --seed " + std::to_string(seed));
    EXPECT_EQ(c.code, 0) << c.err;
    return dir;
  };
  std::string a = make("seed-7a", 7), b = make("seed-7b", 7), c = make("seed-8", 8);
  std::vector<std::string> files = files_in(a);
  ASSERT_EQ(files.size(), 61u);  // 60 variants and the manifest
  EXPECT_EQ(files_in(b), files);
  size_t differ = 0;
  for (const std::string& f : files) {
    EXPECT_EQ(read_file_bytes(a + "/" + f), read_file_bytes(b + "/" + f)) << f;
    differ += read_file_bytes(a + "/" + f) != read_file_bytes(c + "/" + f);
  }
  EXPECT_GT(differ, 30u);  // another seed: other offsets and values, mostly
}

TEST(Corrupt, TheManifestNamesEveryFileWithItsFieldsTyped) {
  std::string dir = temp_path("manifest");
  CliRun c = run_cli("corrupt " + tiny_llama() + " -o " + dir + " --count 45 --seed 3 --json");
  ASSERT_EQ(c.code, 0) << c.err;
  const std::vector<uint8_t> written = read_file_bytes(dir + "/manifest.json");
  EXPECT_EQ(c.out, std::string(written.begin(), written.end()));
  YAML::Node j = YAML::Load(c.out);  // JSON is YAML
  EXPECT_EQ(j["source"].as<std::string>(), tiny_llama());
  EXPECT_EQ(j["seed"].as<uint64_t>(), 3u);
  ASSERT_TRUE(j["files"].IsSequence());
  ASSERT_EQ(j["files"].size(), 45u);
  std::set<std::string> names;
  for (const auto& e : j["files"]) {
    names.insert(e["file"].as<std::string>());
    EXPECT_TRUE(fs::exists(dir + "/" + e["file"].as<std::string>()));
    for (const char* k : {"span_kind", "field", "mutation", "error"}) EXPECT_TRUE(e[k].IsScalar()) << k;
    EXPECT_GE(e["offset"].as<uint64_t>(), 0u);
    EXPECT_TRUE(e["gguf"].as<std::string>() == "accepts" || e["gguf"].as<std::string>() == "refuses");
    EXPECT_TRUE(e["llama"].as<std::string>() == "loads" || e["llama"].as<std::string>() == "refuses");
    if (e["error_offset"].IsNull()) EXPECT_EQ(e["error"].as<std::string>(), "");
    else EXPECT_GE(e["error_offset"].as<uint64_t>(), 0u);
    EXPECT_TRUE(e["findings"].IsSequence());
  }
  EXPECT_EQ(names.size(), 45u);
  EXPECT_EQ(*names.begin(), "0001.gguf");
  EXPECT_EQ(*names.rbegin(), "0045.gguf");
}

TEST(Corrupt, ACountBelowTheDefaultGivesItsFirstVariantsAndAboveItDrawsMore) {
  CorruptRequest q;
  q.source = tiny_llama();
  q.dir = temp_path("count-20");
  q.count = 20;
  CorruptReport few = corrupt(q);
  ASSERT_EQ(few.files.size(), 20u);
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(few.files[i].mutation, tiny_corpus().files[i].mutation);
    EXPECT_EQ(few.files[i].offset, tiny_corpus().files[i].offset);
  }
  q.dir = temp_path("count-more");
  q.count = tiny_corpus().files.size() + 25;
  EXPECT_EQ(corrupt(q).files.size(), tiny_corpus().files.size() + 25);
}

namespace {
uint64_t disk_use(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}
// Whether the temporary folder's file system keeps a file's holes: a megabyte never written.
bool holes_here() {
  const std::string probe = temp_path("hole-probe");
  int fd = ::open(probe.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  const bool ok = fd >= 0 && ::ftruncate(fd, 1 << 20) == 0 && ::write(fd, "x", 1) == 1;
  if (fd >= 0) ::close(fd);
  return ok && disk_use(probe) < (512 << 10);
}
}  // namespace

TEST(Corrupt, TheDefaultCorpusTakesAtMostTwiceTheSourcePlusItsHeadersOnDisk) {
  if (!holes_here()) GTEST_SKIP() << "the temporary folder's file system keeps no holes";
  const CorruptReport& r = tiny_corpus();
  const Scanned src = scan_file(tiny_llama());
  const uint64_t source = fs::file_size(tiny_llama()), headers = r.files.size() * src.layout.data_offset;
  uint64_t du = 0;
  for (const CorruptEntry& e : r.files) du += disk_use(temp_path(kTinyDir) + "/" + e.file);
  EXPECT_EQ(du, r.disk_bytes);
  EXPECT_EQ(r.source_bytes, source);
  EXPECT_EQ(source, 5180032u);
  EXPECT_EQ(src.layout.data_offset, 725376u);  // the header: a 32000-token vocabulary
  EXPECT_LE(du, 2 * source + headers) << "159 full copies took 597 MB";
  EXPECT_LT(du, 100u << 20);
}

TEST(Corrupt, AHeaderVariantsDataIsZerosAndADataVariantKeepsTheTensorItChanges) {
  const CorruptReport& r = tiny_corpus();
  const std::vector<uint8_t> source = read_file_bytes(tiny_llama());
  const Scanned src = scan_file(tiny_llama());
  const uint64_t data = src.layout.data_offset;
  size_t header_variants = 0, data_variants = 0;
  for (const CorruptEntry& e : r.files) {
    if (e.mutation != "hparam_zero" && e.mutation != "nan_f16") continue;
    const std::vector<uint8_t> v = read_file_bytes(temp_path(kTinyDir) + "/" + e.file);
    ASSERT_EQ(v.size(), source.size()) << e.file;
    size_t differ = 0;  // in the header: the 4 bytes of the value poked (or fewer)
    for (uint64_t i = 0; i < data; ++i) differ += v[i] != source[i];
    if (e.mutation == "hparam_zero") {
      ++header_variants;
      EXPECT_GE(differ, 1u) << e.file;
      EXPECT_LE(differ, 4u) << e.file;
      EXPECT_TRUE(std::all_of(v.begin() + static_cast<long>(data), v.end(), [](uint8_t c) { return c == 0; })) << e.file;
      continue;
    }
    ++data_variants;  // one f16 element made NaN: the rest of that tensor as in the source, every other tensor zeros
    EXPECT_EQ(differ, 0u) << e.file;
    const std::string name = e.field.substr(e.field.find(' ') + 1);
    size_t ti = 0;
    while (std::string(src.model.tensors.name(ti)) != name) ++ti;
    const uint64_t at = data + src.layout.tensor_offsets[ti], n = src.model.tensors[ti].nbytes();
    ASSERT_TRUE(e.offset >= at && e.offset + 2 <= at + n) << e.field;
    for (uint64_t i = at; i < at + n; ++i) {
      if (i < e.offset || i >= e.offset + 2) {
        ASSERT_EQ(v[i], source[i]) << e.file << " byte " << i;
      }
    }
    EXPECT_EQ(v[e.offset + 1] & 0x7e, 0x7e) << e.file;  // the NaN's exponent
    for (uint64_t i = data; i < v.size(); ++i) {
      if (i < at || i >= at + n) {
        ASSERT_EQ(v[i], 0) << e.file << " byte " << i;
      }
    }
  }
  EXPECT_EQ(header_variants, 3u);
  EXPECT_EQ(data_variants, 3u);
}

TEST(Corrupt, AShortCountSamplesAcrossMutationsAndSpanKindsAndTheManifestCountsEach) {
  const std::string dir = temp_path("count-5");
  CliRun c = run_cli("corrupt " + tiny_llama() + " -o " + dir + " --count 5 --json");
  ASSERT_EQ(c.code, 0) << c.err;
  YAML::Node m = YAML::Load(c.out);
  std::set<std::string> mutations, kinds;
  for (const YAML::Node& f : m["files"]) mutations.insert(f["mutation"].as<std::string>()), kinds.insert(f["span_kind"].as<std::string>());
  EXPECT_EQ(m["files"].size(), 5u);
  EXPECT_EQ(mutations.size(), 5u) << c.out;
  EXPECT_EQ(kinds.size(), 5u) << c.out;
  EXPECT_EQ(m["mutations"].size(), 5u);
  for (const std::string& name : mutations) EXPECT_EQ(m["mutations"][name].as<int>(), 1) << name;
  for (const std::string& kind : kinds) EXPECT_EQ(m["span_kinds"][kind].as<int>(), 1) << kind;
  // Ten files break each of the tiny llama's ten span kinds, with ten mutations.
  CorruptRequest q;
  q.source = tiny_llama();
  q.dir = temp_path("count-10");
  q.count = 10;
  mutations.clear(), kinds.clear();
  for (const CorruptEntry& e : corrupt(q).files) mutations.insert(e.mutation), kinds.insert(e.span_kind);
  EXPECT_EQ(mutations.size(), 10u);
  EXPECT_EQ(kinds.size(), 10u);
  // The full corpus counts as its files do.
  std::map<std::string, size_t> by_kind;
  for (const CorruptEntry& e : tiny_corpus().files) by_kind[e.span_kind]++;
  EXPECT_EQ(by_kind.size(), 10u);
}

TEST(Corrupt, ACorpusTheDiskHasNoRoomForIsRefusedBeforeAnythingIsWritten) {
  const std::string dir = temp_path("no-room");
  CliRun r = run_cli("corrupt " + tiny_llama() + " -o " + dir, "GGUFKIT_FAULT=statvfs:fail:28 ", GGUFKIT_FAULTY_BIN);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("the 159 variants need about "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" bytes (their headers; the tensor data they do not change is left a hole) and 0 are free; nothing was written"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir));
  // A folder named with a trailing slash is checked as well (statvfs of the folder that exists).
  CliRun slash = run_cli("corrupt " + tiny_llama() + " -o " + dir + "/", "GGUFKIT_FAULT=statvfs:fail:28 ", GGUFKIT_FAULTY_BIN);
  EXPECT_EQ(slash.code, 3);
  EXPECT_NE(slash.err.find("and 0 are free; nothing was written"), std::string::npos) << slash.err;
  EXPECT_FALSE(fs::exists(dir));
}

// The bytes of the source no field describes (non-zero padding, bytes after the end) come
// through every variant that keeps the header's size, as a rewrite carries them: the tensor
// data goes to zeros, nothing else. (The first cut of the sparse variants dropped them, and
// a source with bytes after its end made the writer fail at the end of the file.)
TEST(Corrupt, TheSourcesPaddingAndBytesAfterTheEndComeThroughEveryVariant) {
  std::vector<uint8_t> bytes = read_file_bytes(tiny_llama());
  const uint64_t data = scan_file(tiny_llama()).layout.data_offset;
  ASSERT_EQ(data, 725376u);
  bytes[725371] = 135;  // in the 6 bytes of padding before the data
  for (int i = 1; i <= 100; ++i) bytes.push_back(static_cast<uint8_t>(i));
  const std::string src = temp_path("odd-bytes.gguf");
  write_file_bytes(src, bytes);
  CorruptRequest q;
  q.source = src;
  q.dir = temp_path("corrupt-odd");
  const CorruptReport r = corrupt(q);
  ASSERT_GE(r.files.size(), 150u);
  size_t tail_kept = 0;
  for (const CorruptEntry& e : r.files) {
    const std::vector<uint8_t> v = read_file_bytes(q.dir + "/" + e.file);
    if (v.size() != bytes.size()) continue;  // cut, extended
    size_t differ = 0;
    for (uint64_t i = 0; i < data; ++i) differ += v[i] != bytes[i];
    if (differ > 8 || e.mutation == "nonzero_padding") continue;  // a header laid out anew; the padding's own mutation
    EXPECT_TRUE(std::equal(v.end() - 100, v.end(), bytes.end() - 100)) << e.file << " " << e.mutation;
    EXPECT_EQ(v[725371], 135) << e.file << " " << e.mutation;
    tail_kept++;
  }
  EXPECT_GT(tail_kept, 80u);
}

TEST(Corrupt, AFolderThatHoldsFilesIsRefusedUnlessForcedAndThenOnlyItsOwnFilesAreReplaced) {
  std::string dir = temp_path("held");
  fs::create_directories(dir);
  write_file_bytes(dir + "/keep.txt", {'k'});
  CliRun no = run_cli("corrupt " + tiny_llama() + " -o " + dir + " --count 3");
  EXPECT_EQ(no.code, 2);
  EXPECT_NE(no.err.find("holds files"), std::string::npos) << no.err;
  EXPECT_EQ(files_in(dir), std::vector<std::string>{"keep.txt"});
  CliRun yes = run_cli("corrupt " + tiny_llama() + " -o " + dir + " --count 3 --force");
  EXPECT_EQ(yes.code, 0) << yes.err;
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"0001.gguf", "0002.gguf", "0003.gguf", "keep.txt", "manifest.json"}));
  EXPECT_NE(yes.out.find("wrote 3 files"), std::string::npos) << yes.out;
}

TEST(Corrupt, ASourceThatDoesNotReadIsRefusedWithTheReadersError) {
  std::string bad = temp_path("not-gguf.gguf");
  write_file_bytes(bad, {'G', 'G', 'U', 'X', 3, 0, 0, 0});
  CliRun c = run_cli("corrupt " + bad + " -o " + temp_path("never"));
  EXPECT_EQ(c.code, 1);
  EXPECT_NE(c.err.find("at byte 0"), std::string::npos) << c.err;
  EXPECT_FALSE(fs::exists(temp_path("never")));
}
