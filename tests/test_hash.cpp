// Verifying a download: `hash --file` is sha256sum's line of the whole file; `hash
// --manifest` writes llama.cpp's llama-gguf-hash manifest and `hash --check` verifies one,
// shard by shard, naming the tensor that differs. The digests stated here were computed
// apart from ggufkit (Python's hashlib over the corpus files' bytes, the FIPS 180-2 test
// vectors), and where the machine has sha256sum the file lines are compared with it too.
#include <gtest/gtest.h>
#include <xxhash.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "ggufkit/hash.h"
#include "ggufkit/scan.h"
#include "ggufkit/shards.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

const std::string kSplits = corpus("splits");
const std::string kTiny = kSplits + "/tiny-llama.gguf";

// corpus/splits/tiny-llama.gguf: its 21 tensors in file order and the SHA-256 of each
// one's bytes (hashlib.sha256(data[start:start + nbytes])).
struct Stated {
  const char* name;
  const char* sha256;
};
const Stated kTinyTensors[] = {
    {"token_embd.weight", "1044fbeed19d850629d3cf1c41a9d3d6f104a3b07f20e546589682a9e0abbf69"},
    {"output_norm.weight", "2f20cd03c9cd392a406c56232b0ff93a15f6d6d7da79086bfa14f55d4a4031b0"},
    {"output.weight", "8937f788bb6e270c2c0ea6c6b6536bbb935b781172703db6a0ea4b2887c29fe7"},
    {"blk.0.attn_norm.weight", "2f20cd03c9cd392a406c56232b0ff93a15f6d6d7da79086bfa14f55d4a4031b0"},
    {"blk.0.attn_q.weight", "4369288f43bc0dc98eae499a74c54cd6c1fe708b995e0138901fe465fc66fb99"},
    {"blk.0.attn_k.weight", "f2f0bb57aa9e0ef9d5b2cde9aa91b4adebcd7ad5d383e5c61c102167958a93e3"},
    {"blk.0.attn_v.weight", "3170bb431c2656939ec08cf06fb44bdd18bbab12223e97720943f20e73a5525e"},
    {"blk.0.attn_output.weight", "9fc02e6fb5e437ccb7f715d43c62f7c398e7d844057ec0db35ad14106c770cfe"},
    {"blk.0.ffn_norm.weight", "2f20cd03c9cd392a406c56232b0ff93a15f6d6d7da79086bfa14f55d4a4031b0"},
    {"blk.0.ffn_gate.weight", "22c9588287c7863e5c41bd976bfcf009ef257aedde8932a0b617406d81338e4b"},
    {"blk.0.ffn_up.weight", "7f5e179a2306d28ca3dadf9904a0a5e8f841578d42a7c46cc43055867fb07eeb"},
    {"blk.0.ffn_down.weight", "8400b248c749d128f8b07ad928ec1f943110450419f63e6d8b58cc7075e7158d"},
    {"blk.1.attn_norm.weight", "2f20cd03c9cd392a406c56232b0ff93a15f6d6d7da79086bfa14f55d4a4031b0"},
    {"blk.1.attn_q.weight", "387f8db45297ec88b0673321ea312174d802cf39eb695d0848a76a1e1bba25cb"},
    {"blk.1.attn_k.weight", "c4cd650729299dcb8b1df477f39fd6d2ef409669682aa811d22952ae5a8f2b5a"},
    {"blk.1.attn_v.weight", "cea127e50429a18f57543df2d0ea1e0124c8961f96d20cb3702e4bfc1aa85290"},
    {"blk.1.attn_output.weight", "6d7eb0851bfce58460b4037996719aa53bde24d9e074d782b044222086c370c1"},
    {"blk.1.ffn_norm.weight", "2f20cd03c9cd392a406c56232b0ff93a15f6d6d7da79086bfa14f55d4a4031b0"},
    {"blk.1.ffn_gate.weight", "bab748d84a53c97b97c7b0f7ce2e68d7c52aa7a80090fc7f49b936dc1c4983c0"},
    {"blk.1.ffn_up.weight", "94a6d94c5880e19e7486b6037d782ac423b99d927073687074b643c9a43a5fff"},
    {"blk.1.ffn_down.weight", "8a57815b3e56ccb92b688c867d3a5e80fb730116a32afcc3fba218c5301bc7f4"},
};
// Over all 21 tensors' bytes one after the other (llama-gguf-hash's line for the file), and
// its UUIDv5: SHA-1 of llama.cpp's namespace ef001206-dadc-5f6d-a15f-3359e577d4e5 and the
// bytes, version 5 and variant 0b10 set in the first 16 bytes.
const char* kTinyDataSha256 = "1e77f508602303dd65dc4a466e12f3a4eddb5490238df44f2fbd883009790acf";
const char* kTinyDataSha1 = "23c38c77c59ac950b3f7de5cf70a23ef7717750b";
const char* kTinyUuid = "28c4ca84-7967-514f-b9ed-81fa5c15a334";
// The whole files (hashlib.sha256(open(f, 'rb').read())).
const char* kTinyFileSha256 = "c351f950aa1ab05e1a8977bb3c23339b96a09e73b47b03594d8410d6c0921710";
const char* kByCountFileSha256[] = {"02fbea4c340a1615f37305ebad3e0ba440f613092e01b68ff904f99b32452bfe",
                                    "24240c072867568641444c82a4fc201b2675f9192c89dcd1a8bfbf5ef40de3c7",
                                    "5b49d23d08d93940b5f6272d5af563ea7bf40bb13a4ec5f67cb265176b964660"};

std::string fresh_dir(const std::string& name) {
  std::string d = temp_path(name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A copy of a corpus file, writable (the corpus is read-only; a copy keeps its mode).
std::string writable_copy(const std::string& from, const std::string& to) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  fs::permissions(to, fs::perms::owner_read | fs::perms::owner_write);
  return to;
}

void write_text(const std::string& path, const std::string& text) { write_file_bytes(path, {text.begin(), text.end()}); }

// sha256sum's digest of a file, where the machine has the program; "" where not.
std::string sha256sum_of(const std::string& path) {
  if (std::system("command -v sha256sum >/dev/null 2>&1") != 0) return "";
  FILE* p = ::popen(("sha256sum '" + path + "'").c_str(), "r");
  if (!p) return "";
  char buf[65] = {};
  size_t n = std::fread(buf, 1, 64, p);
  ::pclose(p);
  return n == 64 ? std::string(buf, 64) : "";
}

// llama-gguf-hash's line: printf("%-8s  %s  %s\n", type, hash, name), the type padded to
// 8 columns then two spaces: "xxh64" + 5 spaces, "sha1" + 6, "sha256" + 4, "uuid" + 6.
std::string llama_line(const std::string& type, const std::string& hex, const std::string& name) {
  return type + std::string(8 - type.size(), ' ') + "  " + hex + "  " + name + "\n";
}

std::string hex16(uint64_t h) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}

// Each tensor's bytes, read where the reader says they are.
std::vector<std::vector<uint8_t>> tensor_bytes(const std::string& path) {
  Scanned s = scan_file(path);
  std::vector<uint8_t> all = read_file_bytes(path);
  std::vector<std::vector<uint8_t>> out;
  for (size_t i = 0; i < s.model.tensors.size(); ++i) {
    const Tensor t = s.model.tensors[i];
    out.emplace_back(all.begin() + static_cast<long>(t.source_offset), all.begin() + static_cast<long>(t.source_offset + t.nbytes()));
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST(HashNames, TheHashTypesAreLlamaGgufHashsWordsAndTheDigestsTheStandardOnes) {
  for (HashAlgo a : {HashAlgo::xxh64, HashAlgo::sha1, HashAlgo::sha256, HashAlgo::uuid})
    EXPECT_EQ(hash_algo_named(hash_algo_name(a)), a);
  EXPECT_EQ(hash_algo_name(HashAlgo::sha256), "sha256");
  EXPECT_EQ(hash_algo_named("md5"), std::nullopt);
  const auto* abc = reinterpret_cast<const uint8_t*>("abc");
  EXPECT_EQ(digest_hex(HashAlgo::sha256, abc, 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(digest_hex(HashAlgo::sha1, abc, 3), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(digest_hex(HashAlgo::xxh64, abc, 3), hex16(XXH64("abc", 3, 0)));
  EXPECT_EQ(digest_hex(HashAlgo::xxh64, nullptr, 0), "ef46db3751d8e999");
}

TEST(HashFile, TheFileLineIsSha256sumsLineForKnownBytes) {
  // FIPS 180-2's vectors ("abc", one million 'a'), no bytes at all, and 9 MiB + 77 bytes of
  // byte i = (i * 131 + (i >> 16)) & 0xff: more than the blocks read without reading ahead.
  // None of them is a GGUF file: --file does not parse what it hashes.
  struct Case {
    std::string name;
    std::vector<uint8_t> bytes;
    const char* sha256;
  };
  std::vector<uint8_t> pattern(9u * 1024 * 1024 + 77);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>((i * 131 + (i >> 16)) & 0xff);
  std::vector<Case> cases = {
      {"abc.gguf", {'a', 'b', 'c'}, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"empty.gguf", {}, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"million-a.gguf", std::vector<uint8_t>(1000000, 'a'), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
      {"pattern.gguf", pattern, "29ca33e63c112bac8aa83b04d26d59bd91af375cfe8c1b4b5d41207f10dd0fc2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = temp_path(c.name);
    write_file_bytes(path, c.bytes);
    CliRun r = run_cli("hash --file " + path);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, std::string(c.sha256) + "  " + path + "\n");
    EXPECT_EQ(r.err, "");
    if (std::string s = sha256sum_of(path); !s.empty()) {
      EXPECT_EQ(s, c.sha256);
    }
  }
}

TEST(HashFile, TheTinyLlamasLineIsSha256sumsAndTheStatedDigestAndSha256sumChecksIt) {
  CliRun r = run_cli("hash " + kTiny + " --file");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, std::string(kTinyFileSha256) + "  " + kTiny + "\n");
  if (std::string s = sha256sum_of(kTiny); !s.empty()) {
    EXPECT_EQ(s, kTinyFileSha256);
    // The output is a checksum file sha256sum -c reads.
    const std::string sums = temp_path("tiny.sha256");
    write_text(sums, r.out);
    EXPECT_EQ(std::system(("sha256sum -c --status '" + sums + "'").c_str()), 0);
  }
  CliRun j = run_cli("hash " + kTiny + " --file --json");
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(j.out, "{\"files\": [\n  {\"file\": \"" + kTiny + "\", \"bytes\": 5180032, \"sha256\": \"" + kTinyFileSha256 + "\"}\n]}\n");
}

TEST(HashFile, AShardStandsForItsSetAndShardOnlyForItself) {
  std::string expected;
  for (int k = 1; k <= 3; ++k) expected += std::string(kByCountFileSha256[k - 1]) + "  " + kSplits + "/" + shard_path("by-count", k, 3) + "\n";
  for (int k = 1; k <= 3; ++k) {
    CliRun r = run_cli("hash --file " + kSplits + "/" + shard_path("by-count", k, 3));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, expected) << k;
  }
  CliRun one = run_cli("hash --file " + kSplits + "/by-count-00002-of-00003.gguf --shard-only");
  EXPECT_EQ(one.out, std::string(kByCountFileSha256[1]) + "  " + kSplits + "/by-count-00002-of-00003.gguf\n");
  // A missing shard is named (the set is not parsed, its files are only opened).
  const std::string dir = fresh_dir("two-of-three");
  for (int k : {1, 3}) fs::copy_file(kSplits + "/" + shard_path("by-count", k, 3), dir + "/" + shard_path("m", k, 3));
  CliRun gone = run_cli("hash --file " + dir + "/m-00001-of-00003.gguf");
  EXPECT_EQ(gone.code, 3);  // an I/O error: the file named is there
  EXPECT_EQ(gone.out, "");
  EXPECT_EQ(gone.err, "ggufkit: error: " + dir + "/m-00002-of-00003.gguf: cannot open for reading: No such file or directory\n");
}

TEST(HashFile, WithTensorsTheTensorLinesComeFirstThenTheFileLine) {
  CliRun r = run_cli("hash " + kTiny + " --file --tensors --algo sha256");
  ASSERT_EQ(r.code, 0) << r.err;
  std::string expected;
  for (const Stated& t : kTinyTensors) expected += std::string(t.sha256) + "  " + t.name + "\n";
  expected += std::string(kTinyDataSha256) + "  (all 21 tensors, sha256)\n";
  expected += std::string(kTinyFileSha256) + "  " + kTiny + "\n";
  EXPECT_EQ(r.out, expected);
  // The tensor lines alone are what hash prints without --file.
  CliRun plain = run_cli("hash " + kTiny + " --algo sha256");
  EXPECT_EQ(plain.out + kTinyFileSha256 + "  " + kTiny + "\n", r.out);
  CliRun bad = run_cli("hash " + kTiny + " --file --algo xxh64");
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err, "ggufkit: error: --file is always SHA-256: --algo is for the tensor checksums (--tensors)\n");
}

TEST(HashManifest, TheManifestIsLlamaGgufHashsLinesEachTensorThenTheFile) {
  CliRun r = run_cli("hash " + kTiny + " --manifest");
  ASSERT_EQ(r.code, 0) << r.err;
  // llama-gguf-hash --all: per tensor xxh64, sha1, sha256; then the file's three.
  std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 21u * 3 + 3);
  std::vector<std::vector<uint8_t>> bytes = tensor_bytes(kTiny);
  std::vector<uint8_t> all;
  for (size_t i = 0; i < 21; ++i) {
    SCOPED_TRACE(kTinyTensors[i].name);
    const std::string name = kTiny + ":" + kTinyTensors[i].name;
    EXPECT_EQ(lines[3 * i] + "\n", llama_line("xxh64", hex16(XXH64(bytes[i].data(), bytes[i].size(), 0)), name));
    EXPECT_EQ(lines[3 * i + 1].substr(0, 10), "sha1      ");
    EXPECT_EQ(lines[3 * i + 2] + "\n", llama_line("sha256", kTinyTensors[i].sha256, name));
    all.insert(all.end(), bytes[i].begin(), bytes[i].end());
  }
  EXPECT_EQ(lines[0].substr(0, 10), "xxh64     ");
  EXPECT_EQ(lines[63] + "\n", llama_line("xxh64", hex16(XXH64(all.data(), all.size(), 0)), kTiny));
  EXPECT_EQ(lines[64] + "\n", llama_line("sha1", kTinyDataSha1, kTiny));
  EXPECT_EQ(lines[65] + "\n", llama_line("sha256", kTinyDataSha256, kTiny));
  // One hash type, and the uuid, which names the file alone.
  CliRun u = run_cli("hash " + kTiny + " --manifest --algo sha256,uuid");
  std::string expected;
  for (const Stated& t : kTinyTensors) expected += llama_line("sha256", t.sha256, kTiny + ":" + t.name);
  expected += llama_line("sha256", kTinyDataSha256, kTiny) + llama_line("uuid", kTinyUuid, kTiny);
  EXPECT_EQ(u.out, expected);
  CliRun plain_uuid = run_cli("hash " + kTiny + " --algo uuid");
  EXPECT_EQ(plain_uuid.code, 2);
  EXPECT_EQ(plain_uuid.err, "ggufkit: error: a uuid names a whole file: --algo uuid is for --manifest and --check\n");
}

TEST(HashCheck, AManifestWrittenThenCheckedPassesAndOneChangedByteFailsNamingItsTensor) {
  const std::string dir = fresh_dir("check-tiny");
  const std::string model = writable_copy(kTiny, dir + "/tiny-llama.gguf"), manifest = dir + "/tiny.manifest";
  CliRun w = run_cli("hash " + model + " --manifest");
  ASSERT_EQ(w.code, 0) << w.err;
  write_text(manifest, w.out);
  CliRun ok = run_cli("hash " + model + " --check " + manifest);
  ASSERT_EQ(ok.code, 0) << ok.err;
  // The strongest type the manifest has (sha256) is checked, as llama-gguf-hash does.
  std::string expected = "manifest  " + manifest + "  sha256  sha1  xxh64\n";
  for (const Stated& t : kTinyTensors) expected += llama_line("sha256", t.sha256, model + ":" + t.name + "  -  Ok");
  expected += llama_line("sha256", kTinyDataSha256, model + "  -  Ok");
  expected += "\nVerification results for " + manifest + " - Success\n";
  EXPECT_EQ(ok.out, expected);
  EXPECT_EQ(ok.err, "");

  // One byte of blk.0.attn_q.weight (tensor 4), in the middle of its data.
  Scanned s = scan_file(model);
  const Tensor q = s.model.tensors[4];
  ASSERT_EQ(q.name, "blk.0.attn_q.weight");
  std::vector<uint8_t> b = read_file_bytes(model);
  b[q.source_offset + 4000] ^= 0x01;
  write_file_bytes(model, b);
  const std::string poked = digest_hex(HashAlgo::sha256, b.data() + q.source_offset, q.nbytes());
  std::vector<uint8_t> all;
  for (size_t i = 0; i < s.model.tensors.size(); ++i) {
    const Tensor t = s.model.tensors[i];
    all.insert(all.end(), b.begin() + static_cast<long>(t.source_offset), b.begin() + static_cast<long>(t.source_offset + t.nbytes()));
  }
  const std::string poked_all = digest_hex(HashAlgo::sha256, all.data(), all.size());
  CliRun bad = run_cli("hash " + model + " --check " + manifest);
  EXPECT_EQ(bad.code, 1);
  std::vector<std::string> out = lines_of(bad.out);
  ASSERT_EQ(out.size(), 1u + 21 + 1 + 2);
  EXPECT_EQ(out[5] + "\n", llama_line("sha256", poked, model + ":blk.0.attn_q.weight  -  Mismatch"));
  EXPECT_EQ(out[4] + "\n", llama_line("sha256", kTinyTensors[3].sha256, model + ":blk.0.attn_norm.weight  -  Ok"));
  EXPECT_EQ(out[22] + "\n", llama_line("sha256", poked_all, model + "  -  Mismatch"));
  EXPECT_EQ(out[24], "Verification results for " + manifest + " - Failure");
  // llama-gguf-hash writes the sha256 lines of tensor 4 at manifest line 3 * 4 + 3 = 15,
  // of the file at 66.
  EXPECT_EQ(bad.err, "ggufkit: error: " + model + ": tensor blk.0.attn_q.weight: sha256 is " + poked + ", line 15 of " + manifest +
                         " says " + kTinyTensors[4].sha256 + "\n" + "ggufkit: error: " + model +
                         ": the sha256 of all its tensor data is " + poked_all + ", line 66 of " + manifest + " says " +
                         kTinyDataSha256 + "\n");
  // By the fast hash too: the same tensor.
  CliRun x = run_cli("hash " + model + " --check " + manifest + " --algo xxh64");
  EXPECT_EQ(x.code, 1);
  EXPECT_NE(x.out.find(":blk.0.attn_q.weight  -  Mismatch\n"), std::string::npos);
  EXPECT_EQ(std::count(x.out.begin(), x.out.end(), '\n'), 1 + 22 + 2);
  EXPECT_EQ(x.out.find("Mismatch"), x.out.rfind(":blk.0.attn_q.weight  -  Mismatch") + 25);
  EXPECT_EQ(lines_of(x.err).size(), 2u);
  EXPECT_EQ(x.err.rfind("ggufkit: error: " + model + ": tensor blk.0.attn_q.weight: xxh64 is ", 0), 0u);
}

TEST(HashCheck, AManifestWrittenByHandInLlamaGgufHashsFormatChecksEachTypeItHas) {
  // What llama-gguf-hash --sha256 --sha1 --uuid prints for tiny-llama.gguf, written here line
  // by line from its format (printf "%-8s  %s  %s\n": the type left-aligned in 8 columns,
  // two spaces, the lower-case hex, two spaces, FILE:TENSOR; then FILE for the file's
  // tensor data), with the hashes Python's hashlib gives, the file under a folder.
  std::string m;
  for (const Stated& t : kTinyTensors) m += "sha256    " + std::string(t.sha256) + "  models/tiny-llama.gguf:" + t.name + "\n";
  m += "sha1      " + std::string(kTinyDataSha1) + "  models/tiny-llama.gguf\n";
  m += "sha256    " + std::string(kTinyDataSha256) + "  models/tiny-llama.gguf\n";
  m += "uuid      " + std::string(kTinyUuid) + "  models/tiny-llama.gguf\n";
  const std::string manifest = temp_path("by-hand.manifest");
  write_text(manifest, m);
  // By default the strongest (sha256); --algo sha1,sha256,uuid checks each type there.
  CliRun r = run_cli("hash " + kTiny + " --check " + manifest + " --algo sha1,sha256,uuid");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::string expected = "manifest  " + manifest + "  sha256  sha1  uuid\n";
  for (const Stated& t : kTinyTensors) expected += llama_line("sha256", t.sha256, kTiny + ":" + t.name + "  -  Ok");
  expected += llama_line("sha1", kTinyDataSha1, kTiny + "  -  Ok");
  expected += llama_line("sha256", kTinyDataSha256, kTiny + "  -  Ok");
  expected += llama_line("uuid", kTinyUuid, kTiny + "  -  Ok");
  expected += "\nVerification results for " + manifest + " - Success\n";
  EXPECT_EQ(r.out, expected);
  CliRun strongest = run_cli("hash " + kTiny + " --check " + manifest);
  EXPECT_EQ(strongest.code, 0);
  EXPECT_EQ(lines_of(strongest.out).size(), 1u + 22 + 2);
  // A type the manifest has no line of for the file fails, saying so.
  CliRun x = run_cli("hash " + kTiny + " --check " + manifest + " --algo xxh64");
  EXPECT_EQ(x.code, 1);
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0);
  for (const auto& t : tensor_bytes(kTiny)) XXH64_update(st, t.data(), t.size());
  const std::string data_xxh = hex16(XXH64_digest(st));
  XXH64_freeState(st);
  EXPECT_EQ(x.out, "manifest  " + manifest + "  sha256  sha1  uuid\n" + llama_line("xxh64", data_xxh, kTiny + "  -  Not Found") +
                       "\nVerification results for " + manifest + " - Failure\n");
  EXPECT_EQ(x.err, "ggufkit: error: " + kTiny + ": " + manifest + " has no xxh64 line for this file\n");
  // CRLF line ends and upper-case hex digits read the same.
  std::string crlf;
  for (const std::string& l : lines_of(m)) {
    std::string hex = l.substr(10, l.find(' ', 10) - 10);
    for (char& c : hex) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    crlf += l.substr(0, 10) + hex + l.substr(10 + hex.size()) + "\r\n";
  }
  write_text(manifest, crlf);
  CliRun upper = run_cli("hash " + kTiny + " --check " + manifest + " --algo sha1,sha256,uuid");
  EXPECT_EQ(upper.code, 0) << upper.err;
  EXPECT_EQ(upper.out, expected);
}

TEST(HashCheck, ATensorTheManifestLacksAndALineNamingATensorTheFileLacksFailNamingThem) {
  const std::string manifest = temp_path("gaps.manifest");
  std::string m;
  for (const Stated& t : kTinyTensors)
    if (std::string(t.name) != "output.weight") m += llama_line("sha256", t.sha256, "tiny-llama.gguf:" + std::string(t.name));
  m += llama_line("sha256", std::string(64, 'a'), "tiny-llama.gguf:blk.2.attn_q.weight");  // line 21
  write_text(manifest, m);
  CliRun r = run_cli("hash " + kTiny + " --check " + manifest);
  EXPECT_EQ(r.code, 1);
  std::vector<std::string> out = lines_of(r.out);
  ASSERT_EQ(out.size(), 1u + 21 + 1 + 2);
  EXPECT_EQ(out[3] + "\n", llama_line("sha256", kTinyTensors[2].sha256, kTiny + ":output.weight  -  Not Found"));
  EXPECT_EQ(out[22] + "\n", llama_line("sha256", std::string(64, 'a'), kTiny + ":blk.2.attn_q.weight  -  Not In File"));
  EXPECT_EQ(r.err, "ggufkit: error: " + kTiny + ": tensor output.weight has no sha256 line in " + manifest + "\n" +
                       "ggufkit: error: " + kTiny + ": line 21 of " + manifest + " names tensor blk.2.attn_q.weight, which the file does not have\n");
}

TEST(HashCheck, AFileTheManifestHasNoLineForFailsAndOtherFilesLinesAreSkippedWithANote) {
  const std::string dir = fresh_dir("renamed");
  const std::string model = writable_copy(kTiny, dir + "/renamed.gguf"), manifest = dir + "/m.manifest";
  write_text(manifest, run_cli("hash " + kTiny + " --manifest --algo sha256").out);
  CliRun r = run_cli("hash " + model + " --check " + manifest);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "manifest  " + manifest + "  sha256\n" + llama_line("sha256", kTinyDataSha256, model + "  -  Not Found") +
                       "\nVerification results for " + manifest + " - Failure\n");
  EXPECT_EQ(r.err, "ggufkit: note: " + manifest + ": 22 lines name files not checked here (the first: " + kTiny + "): skipped\n" +
                       "ggufkit: error: " + model + ": " + manifest + " has no sha256 line for this file (its lines name " + kTiny + ")\n");
}

TEST(HashCheck, MalformedManifestLinesAreErrorsNamingTheManifestAndTheLine) {
  const std::string sha = kTinyTensors[0].sha256;
  struct Case {
    std::string text, error;
  };
  const std::string x = "tiny-llama.gguf:token_embd.weight";
  std::vector<Case> cases = {
      {"", "has no hash lines (TYPE HASH NAME, TYPE one of xxh64, sha1, sha256, uuid)"},
      {"\n   \n", "has no hash lines (TYPE HASH NAME, TYPE one of xxh64, sha1, sha256, uuid)"},
      {llama_line("sha256", sha, x) + "\nmd5       0123456789abcdef0123456789abcdef  " + x + "\n",
       "line 3: 'md5' is not a hash type; a manifest line is TYPE HASH NAME, TYPE one of xxh64, sha1, sha256, uuid"},
      {"xxh64     12345  " + x + "\n", "line 1: '12345' is not an xxh64 hash (16 hex digits)"},
      {"sha256    " + sha.substr(0, 63) + "g  " + x + "\n", "line 1: '" + sha.substr(0, 63) + "g' is not an sha256 hash (64 hex digits)"},
      {"uuid      28c4ca84796751 tiny-llama.gguf\n", "line 1: '28c4ca84796751' is not a uuid (8-4-4-4-12 hex digits)"},
      {llama_line("sha256", sha, x) + "sha256    " + sha + "\n", "line 2: a manifest line is TYPE HASH NAME; this one has no name"},
      {"sha1\n", "line 1: a manifest line is TYPE HASH NAME; this one has no hash"},
      {llama_line("uuid", kTinyUuid, x), "line 1: a uuid names a whole file, not a tensor (" + x + ")"},
      {llama_line("sha256", sha, x) + llama_line("sha256", sha, x) + llama_line("sha256", std::string(64, '0'), x),
       "line 3: a second sha256 line for " + x + ", with another hash than line 1"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].text);
    const std::string manifest = temp_path("bad-" + std::to_string(i) + ".manifest");
    write_text(manifest, cases[i].text);
    CliRun r = run_cli("hash " + kTiny + " --check " + manifest);
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "ggufkit: error: " + manifest + ": " + cases[i].error + "\n");
  }
  // In JSON the line is the error's field.
  const std::string manifest = temp_path("bad-json.manifest");
  write_text(manifest, "xxh64  nothex!!nothex!!  a.gguf\n");
  YAML::Node j = YAML::Load(run_cli("hash " + kTiny + " --check " + manifest + " --json").out);
  EXPECT_EQ(j["error"]["file"].as<std::string>(), manifest);
  EXPECT_EQ(j["error"]["field"].as<std::string>(), "line 1");
  EXPECT_EQ(j["error"]["message"].as<std::string>(), "'nothex!!nothex!!' is not an xxh64 hash (16 hex digits)");
  // A manifest that is not there is the caller's mistake (usage).
  CliRun gone = run_cli("hash " + kTiny + " --check " + temp_path("no.manifest"));
  EXPECT_EQ(gone.code, 2);
  EXPECT_EQ(gone.err, "ggufkit: error: " + temp_path("no.manifest") + ": cannot open for reading: No such file or directory\n");
}

TEST(HashCheck, AShardSetIsCheckedShardByShardAndAChangedByteNamesItsShardAndTensor) {
  const std::string dir = fresh_dir("check-set");
  for (int k = 1; k <= 3; ++k) writable_copy(kSplits + "/" + shard_path("by-count", k, 3), dir + "/" + shard_path("by-count", k, 3));
  const std::string manifest = dir + "/set.manifest";
  write_text(manifest, run_cli("hash " + dir + "/by-count-00003-of-00003.gguf --manifest --algo sha256").out);
  // The set's manifest is each shard's, as llama-gguf-hash prints it given that shard alone:
  // its tensors' lines, then its own line over its tensor data.
  std::string each;
  for (int k = 1; k <= 3; ++k) {
    const std::string shard = dir + "/" + shard_path("by-count", k, 3);
    CliRun one = run_cli("hash " + shard + " --manifest --algo sha256 --shard-only");
    ASSERT_EQ(one.code, 0) << one.err;
    std::vector<std::vector<uint8_t>> bytes = tensor_bytes(shard);
    std::vector<std::string> lines = lines_of(one.out);
    ASSERT_EQ(lines.size(), bytes.size() + 1);
    std::vector<uint8_t> all;
    for (const auto& t : bytes) all.insert(all.end(), t.begin(), t.end());
    EXPECT_EQ(lines.back() + "\n", llama_line("sha256", digest_hex(HashAlgo::sha256, all.data(), all.size()), shard));
    each += one.out;
  }
  EXPECT_EQ(slurp(manifest), each);
  // The 21 tensors' sha256 lines are the single file's, shard by shard (8, 8 and 5 tensors).
  std::vector<std::string> lines = lines_of(each);
  ASSERT_EQ(lines.size(), 21u + 3);
  EXPECT_EQ(lines[0] + "\n", llama_line("sha256", kTinyTensors[0].sha256, dir + "/by-count-00001-of-00003.gguf:token_embd.weight"));
  EXPECT_EQ(lines[9] + "\n", llama_line("sha256", kTinyTensors[8].sha256, dir + "/by-count-00002-of-00003.gguf:blk.0.ffn_norm.weight"));
  EXPECT_EQ(lines[22] + "\n", llama_line("sha256", kTinyTensors[20].sha256, dir + "/by-count-00003-of-00003.gguf:blk.1.ffn_down.weight"));

  // Any shard checks the set: every shard's lines, in order.
  for (int k = 1; k <= 3; ++k) {
    CliRun r = run_cli("hash " + dir + "/" + shard_path("by-count", k, 3) + " --check " + manifest);
    EXPECT_EQ(r.code, 0) << r.err;
    std::string expected = "manifest  " + manifest + "  sha256\n";
    for (const std::string& l : lines) expected += l + "  -  Ok\n";
    EXPECT_EQ(r.out, expected + "\nVerification results for " + manifest + " - Success\n");
  }
  // --shard-only: that shard's lines alone, the others' skipped with a note.
  CliRun third = run_cli("hash " + dir + "/by-count-00003-of-00003.gguf --shard-only --check " + manifest);
  EXPECT_EQ(third.code, 0);
  EXPECT_EQ(lines_of(third.out).size(), 1u + 6 + 2);
  EXPECT_EQ(third.err, "ggufkit: note: " + manifest + ": 18 lines name files not checked here (the first: " + dir +
                           "/by-count-00001-of-00003.gguf): skipped\n");

  // One byte of shard 2's blk.0.ffn_up.weight (its tensor 2).
  const std::string two = dir + "/by-count-00002-of-00003.gguf";
  Scanned s = scan_file(two);
  const Tensor up = s.model.tensors[2];
  ASSERT_EQ(up.name, "blk.0.ffn_up.weight");
  std::vector<uint8_t> b = read_file_bytes(two);
  b[up.source_offset] ^= 0x80;
  write_file_bytes(two, b);
  CliRun bad = run_cli("hash " + dir + "/by-count-00001-of-00003.gguf --check " + manifest);
  EXPECT_EQ(bad.code, 1);
  std::vector<std::string> out = lines_of(bad.out);
  ASSERT_EQ(out.size(), 1u + 24 + 2);
  for (size_t i = 0; i < 24; ++i) {
    const bool failed = i == 11 || i == 17;  // shard 2's tensor 2 (line 12) and shard 2's own line (line 18)
    EXPECT_EQ(out[1 + i].substr(out[1 + i].size() - (failed ? 8 : 2)), failed ? "Mismatch" : "Ok") << i;
  }
  EXPECT_EQ(out[12].substr(out[12].find("  " + two)), "  " + two + ":blk.0.ffn_up.weight  -  Mismatch");
  EXPECT_EQ(out[18].substr(out[18].find("  " + two)), "  " + two + "  -  Mismatch");
  std::vector<std::string> err = lines_of(bad.err);
  ASSERT_EQ(err.size(), 2u);
  EXPECT_EQ(err[0].rfind("ggufkit: error: " + two + ": tensor blk.0.ffn_up.weight: sha256 is ", 0), 0u);
  EXPECT_NE(err[0].find(", line 12 of " + manifest + " says " + kTinyTensors[10].sha256), std::string::npos);
  EXPECT_EQ(err[1].rfind("ggufkit: error: " + two + ": the sha256 of all its tensor data is ", 0), 0u);
}

TEST(HashCheck, JsonSaysEachLinesStatusHashesAndManifestLine) {
  const std::string dir = fresh_dir("check-json");
  const std::string model = writable_copy(kTiny, dir + "/tiny-llama.gguf"), manifest = dir + "/m.manifest";
  write_text(manifest, llama_line("sha256", kTinyDataSha256, "tiny-llama.gguf") + llama_line("uuid", kTinyUuid, "tiny-llama.gguf"));
  CliRun r = run_cli("hash " + model + " --check " + manifest + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"manifest\": \"" + manifest + "\", \"present\": [\"sha256\", \"uuid\"], \"ok\": true, \"other_lines\": 0, \"lines\": [\n"
                   "  {\"algo\": \"sha256\", \"name\": \"" + model + "\", \"file\": \"" + model + "\", \"tensor\": null, \"status\": \"ok\", \"hash\": \"" +
                   kTinyDataSha256 + "\", \"expected\": \"" + kTinyDataSha256 + "\", \"line\": 1}\n]}\n");
  std::vector<uint8_t> b = read_file_bytes(model);
  b[scan_file(model).model.tensors[0].source_offset] ^= 1;
  write_file_bytes(model, b);
  YAML::Node j = YAML::Load(run_cli("hash " + model + " --check " + manifest + " --algo uuid --json").out);
  EXPECT_FALSE(j["ok"].as<bool>());
  ASSERT_EQ(j["lines"].size(), 1u);
  EXPECT_EQ(j["lines"][0]["status"].as<std::string>(), "mismatch");
  EXPECT_EQ(j["lines"][0]["expected"].as<std::string>(), kTinyUuid);
  EXPECT_EQ(j["lines"][0]["line"].as<int>(), 2);
  EXPECT_EQ(j["lines"][0]["message"].as<std::string>(),
            model + ": the uuid of all its tensor data is " + j["lines"][0]["hash"].as<std::string>() + ", line 2 of " + manifest +
                " says " + kTinyUuid);
}

TEST(HashCheck, ManifestAndCheckAndFileGoOneAtATime) {
  CliRun both = run_cli("hash " + kTiny + " --manifest --check x");
  EXPECT_EQ(both.code, 2);
  EXPECT_EQ(both.err, "ggufkit: error: --manifest writes a manifest and --check reads one: give one of them\n");
  CliRun file = run_cli("hash " + kTiny + " --file --manifest");
  EXPECT_EQ(file.code, 2);
  EXPECT_EQ(file.err,
            "ggufkit: error: --file is the whole file's SHA-256, which a llama-gguf-hash manifest does not hold: --manifest goes without it\n");
  CliRun list = run_cli("hash " + kTiny + " --manifest --algo xxh64,md5");
  EXPECT_EQ(list.code, 2);
  EXPECT_EQ(list.err, "ggufkit: error: --algo is a comma list of xxh64, sha1, sha256 and uuid, or all; found 'md5'\n");
}

TEST(HashModel, ThreadsKeepTheModelsOrderAndTheAllLineIsTheTensorsInFileOrder) {
  // The library call: every tensor's sha256 in the model's order, whatever thread hashed it.
  Scanned s = scan_file(kTiny);
  Hashes h = hash_model(s.model, HashAlgo::sha256);
  ASSERT_EQ(h.tensors.size(), 21u);
  for (size_t i = 0; i < 21; ++i) EXPECT_EQ(h.tensors[i], kTinyTensors[i].sha256) << i;
  EXPECT_EQ(h.all, kTinyDataSha256);
  EXPECT_EQ(hash_tensor(s.model.tensors[4], HashAlgo::sha256), kTinyTensors[4].sha256);
}

TEST(HashLlamaGgufHash, TheManifestAndTheCheckAreWhatLlamaGgufHashPrintsByteForByte) {
  // tests/hash holds llama-gguf-hash's own output for the corpus files (its README says how
  // it was made), run in a folder of copies as here.
  const std::string rec = std::string(GGUFKIT_SOURCE) + "/tests/hash/";
  const std::string dir = fresh_dir("llama-gguf-hash");
  writable_copy(kTiny, dir + "/tiny-llama.gguf");
  for (int k = 1; k <= 3; ++k) writable_copy(kSplits + "/" + shard_path("by-count", k, 3), dir + "/" + shard_path("by-count", k, 3));
  for (const char* m : {"tiny-llama.manifest", "by-count.manifest"}) fs::copy_file(rec + m, dir + "/" + m);
  const std::string in = "cd '" + dir + "' && ";

  CliRun m = run_cli("hash tiny-llama.gguf --manifest --algo xxh64,sha1,sha256,uuid", in);
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_EQ(m.out, slurp(rec + "tiny-llama.manifest"));
  CliRun set = run_cli("hash by-count-00002-of-00003.gguf --manifest", in);
  EXPECT_EQ(set.out, slurp(rec + "by-count.manifest"));

  CliRun c = run_cli("hash tiny-llama.gguf --check tiny-llama.manifest", in);
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.out, slurp(rec + "tiny-llama.check.txt"));
  // llama-gguf-hash checks one file a run: each shard alone gives its runs' output.
  std::string shards;
  for (int k = 1; k <= 3; ++k) {
    CliRun s = run_cli("hash " + shard_path("by-count", k, 3) + " --shard-only --check by-count.manifest", in);
    EXPECT_EQ(s.code, 0) << s.err;
    shards += s.out;
  }
  EXPECT_EQ(shards, slurp(rec + "by-count.check.txt"));

  std::vector<uint8_t> b = read_file_bytes(dir + "/tiny-llama.gguf");
  b[5081888] ^= 0x01;  // byte 4000 of blk.0.attn_q.weight
  write_file_bytes(dir + "/tiny-llama.gguf", b);
  CliRun bad = run_cli("hash tiny-llama.gguf --check tiny-llama.manifest", in);
  EXPECT_EQ(bad.code, 1);  // llama-gguf-hash's exit status too
  EXPECT_EQ(bad.out, slurp(rec + "tiny-llama.poked.check.txt"));
}
