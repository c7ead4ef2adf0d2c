// Shard sets by llama.cpp's gguf-split convention: split writes what llama-gguf-split
// writes, byte for byte (corpus/splits holds its output); merge gives back the file that
// was split; a set is opened from any shard and checked as a whole; a split is written
// all or nothing.
#include <gtest/gtest.h>
#include <map>
#include <yaml-cpp/yaml.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "ggufkit/error.h"
#include "ggufkit/scan.h"
#include "ggufkit/shards.h"
#include "ggufkit/sketch.h"
#include "ggufkit/split.h"
#include "ggufkit/writer.h"
#include "edit_rule_cases.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

const std::string kSplits = corpus("splits");

std::string fresh_dir(const std::string& name) {
  std::string d = temp_path(name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// corpus/splits' by-count set copied into dir as m-0000K-of-00003.gguf, each copy given
// `mode`: an in-place edit writes a writable file's header into it, and replaces a
// read-only one by rename, so a test sets the mode it means (the corpus is read-only in CI
// and writable in a clone; a copy would take either).
void copy_set(const std::string& dir, mode_t mode) {
  for (int k = 1; k <= 3; ++k) {
    const std::string to = dir + "/" + shard_path("m", k, 3);
    fs::copy_file(kSplits + "/" + shard_path("by-count", k, 3), to);
    fs::permissions(to, static_cast<fs::perms>(mode));
  }
}

}  // namespace

TEST(Split, WritesWhatLlamaCppsSplitterWritesByteForByte) {
  struct Way {
    std::string name, args;
    int files;
  };
  for (const Way& w : {Way{"by-count", "--max-tensors 8", 3}, Way{"metadata-first", "--max-tensors 8 --metadata-only-first", 4},
                       Way{"by-size", "--max-size 3M", 2}}) {
    SCOPED_TRACE(w.name);
    std::string dir = fresh_dir("split-" + w.name);
    CliRun r = run_cli("split " + kSplits + "/tiny-llama.gguf -o " + dir + "/" + w.name + " " + w.args);
    ASSERT_EQ(r.code, 0) << r.err;
    std::vector<std::string> want;
    for (int k = 1; k <= w.files; ++k) {
      std::string name = shard_path(w.name, k, w.files);
      want.push_back(name);
      EXPECT_TRUE(read_file_bytes(dir + "/" + name) == read_file_bytes(kSplits + "/" + name)) << name;
    }
    EXPECT_EQ(files_in(dir), want);
  }
}

TEST(Split, TheShardsFollowTheConventionKeyByKey) {
  std::string dir = fresh_dir("split-convention");
  ASSERT_EQ(run_cli("split " + tiny_llama() + " -o " + dir + "/m --max-tensors 8").code, 0);
  Scanned whole = scan_file(tiny_llama());
  for (uint32_t k = 1; k <= 3; ++k) {
    SCOPED_TRACE(k);
    Scanned s = scan_file(dir + "/" + shard_path("m", k, 3));
    const auto& md = s.model.metadata;
    size_t first_split = k == 1 ? whole.model.metadata.size() : 0;
    ASSERT_EQ(md.size(), first_split + 3);
    for (size_t i = 0; i < first_split; ++i) EXPECT_EQ(md[i], whole.model.metadata[i]);  // the model's keys, in order
    EXPECT_EQ(md[first_split].key, "split.no");
    EXPECT_EQ(md[first_split].value, Value::scalar(ValueType::u16, k - 1));  // 0-based
    EXPECT_EQ(md[first_split + 1].key, "split.tensors.count");
    EXPECT_EQ(md[first_split + 1].value, Value::scalar(ValueType::i32, 21));
    EXPECT_EQ(md[first_split + 2].key, "split.count");
    EXPECT_EQ(md[first_split + 2].value, Value::scalar(ValueType::u16, 3));
    EXPECT_EQ(s.model.tensors.size(), k < 3 ? 8u : 5u);  // a new shard every 8 tensors
    EXPECT_EQ(s.model.tensors[0].name, whole.model.tensors[(k - 1) * 8].name);
  }
  // By size: a shard's tensor bytes, each padded to 32, stay within the limit, and the
  // next tensor would have passed it.
  ASSERT_EQ(run_cli("split " + tiny_llama() + " -o " + dir + "/s --max-size 3MiB").code, 0);
  ShardSet set = open_shard_set(dir + "/s-00001-of-00002.gguf");
  size_t at = 0;
  for (const Shard& sh : set.shards) {
    uint64_t bytes = 0;
    for (const Tensor& t : sh.file.model.tensors) bytes += (t.nbytes() + 31) / 32 * 32;
    EXPECT_LE(bytes, 3u << 20);
    at += sh.file.model.tensors.size();
    if (at < whole.model.tensors.size()) {
      EXPECT_GT(bytes + (whole.model.tensors[at].nbytes() + 31) / 32 * 32, 3u << 20);
    }
  }
}

TEST(Merge, GivesBackTheFileThatWasSplitForEveryModelAndEveryWay) {
  std::string dir = fresh_dir("merge");
  std::vector<std::string> models = {tiny_llama()};
  std::string every = dir + "/every-type.gguf";
  write_sketch(read_sketch(std::string(GGUFKIT_SOURCE) + "/examples/every-type.yaml"), every);
  models.push_back(every);
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    std::string p = dir + "/random-" + std::to_string(seed) + ".gguf";
    write_file(random_model(seed), p);
    models.push_back(p);
  }
  int splits = 0;
  for (const std::string& m : models) {
    SCOPED_TRACE(m);
    const auto original = read_file_bytes(m);
    for (const char* way : {"--max-tensors 1", "--max-tensors 3 --metadata-only-first", "--max-size 2000"}) {
      SCOPED_TRACE(way);
      std::string sd = fresh_dir("merge-set");
      CliRun s = run_cli("split " + m + " -o " + sd + "/x " + way);
      if (s.code != 0) {  // only a tensor larger than the size limit may stop a split
        EXPECT_NE(s.err.find("a shard would hold no tensor"), std::string::npos) << s.err;
        EXPECT_TRUE(files_in(sd).empty());
        continue;
      }
      ++splits;
      std::vector<std::string> shards = files_in(sd);
      CliRun g = run_cli("merge " + sd + "/" + shards.back() + " -o " + sd + "/merged.gguf");
      ASSERT_EQ(g.code, 0) << g.err;
      EXPECT_TRUE(read_file_bytes(sd + "/merged.gguf") == original);
    }
  }
  EXPECT_GT(splits, 130);  // most of the 156 splits go through
  // llama.cpp's own merge keeps the split keys with split.count 0; ours drops them.
  CliRun l = run_cli("merge " + kSplits + "/merged-by-llama.gguf -o " + dir + "/from-llama.gguf");
  ASSERT_EQ(l.code, 0) << l.err;
  EXPECT_TRUE(read_file_bytes(dir + "/from-llama.gguf") == read_file_bytes(kSplits + "/tiny-llama.gguf"));
}

TEST(ShardSet, OpensFromAnyShardAndIsTheModel) {
  for (int k = 1; k <= 3; ++k) {
    ShardSet set = open_shard_set(kSplits + "/" + shard_path("by-count", k, 3));
    ASSERT_EQ(set.shards.size(), 3u);
    EXPECT_TRUE(set.is_set());
    Model m = set.model();
    EXPECT_EQ(m.tensors.size(), 21u);
    EXPECT_EQ(to_bytes(m), read_file_bytes(kSplits + "/tiny-llama.gguf"));
  }
  ShardSet one = open_shard_set(tiny_llama());  // a lone file is the set of one
  EXPECT_EQ(one.shards.size(), 1u);
  EXPECT_FALSE(one.is_set());
}

TEST(ShardSet, EachFaultNamesTheShardFileAndTheField) {
  std::string dir = fresh_dir("set-faults");
  Model whole = scan_file(tiny_llama()).model;
  struct Fault {
    const char* name;
    std::function<void(std::vector<Model>&)> change;
    std::string file, field, says, code;  // code: validate's finding
  };
  auto set_key = [](Model& m, const char* key, Value v) { *m.find(key) = v; };
  std::vector<Fault> faults = {
      {"missing", nullptr, "m-00002-of-00003.gguf", "", "is missing: shard 2 of the 3", "missing_shard"},
      {"split_no", [&](std::vector<Model>& s) { set_key(s[1], "split.no", Value::scalar(ValueType::u16, 2)); },
       "m-00002-of-00003.gguf", "split.no", "split.no is 2, expected 1 from its name", "split_no"},
      {"split_count", [&](std::vector<Model>& s) { set_key(s[2], "split.count", Value::scalar(ValueType::u16, 4)); },
       "m-00003-of-00003.gguf", "split.count", "split.count is 4, expected 3 from its name", "split_count"},
      {"tensors_count", [&](std::vector<Model>& s) { set_key(s[0], "split.tensors.count", Value::scalar(ValueType::i32, 20)); },
       "m-00001-of-00003.gguf", "split.tensors.count", "split.tensors.count is 20, but the 3 files hold 21 tensors",
       "split_tensors_count"},
      {"model_key", [&](std::vector<Model>& s) { s[1].metadata.push_back({"general.name", Value::of_string("x")}); },
       "m-00002-of-00003.gguf", "kv[3] general.name", "a model key in shard 2; only shard 1 carries the model's keys",
       "model_key_in_shard"},
      {"twice", [&](std::vector<Model>& s) { s[2].tensors.edit(0).name = s[0].tensors[0].name; },
       "m-00003-of-00003.gguf", "tensor[0] token_embd.weight", "is also in", "tensor_in_two_shards"},
      {"wrong_type", [&](std::vector<Model>& s) { set_key(s[1], "split.no", Value::scalar(ValueType::u32, 1)); },
       "m-00002-of-00003.gguf", "split.no", "is u32, expected u16", "split_no"},
      {"byte_order", [&](std::vector<Model>& s) { s[1].order = ByteOrder::big; },
       "m-00002-of-00003.gguf", "version", "is big-endian, and shard 1 (m-00001-of-00003.gguf) little-endian: a set is in one byte order, and llama.cpp refuses one of two",
       "shard_byte_order"},
  };
  for (const Fault& f : faults) {
    SCOPED_TRACE(f.name);
    std::string d = fresh_dir(std::string("set-fault-") + f.name);
    std::vector<Model> shards = split_model(whole, {8, 0, false, {}, 0});
    if (f.change) f.change(shards);
    for (size_t k = 0; k < shards.size(); ++k)
      if (f.change || k != 1) write_file(shards[k], d + "/" + shard_path("m", static_cast<uint32_t>(k + 1), 3));
    try {
      open_shard_set(d + "/m-00001-of-00003.gguf");
      ADD_FAILURE() << "opened";
    } catch (const Error& e) {
      EXPECT_EQ(e.file, d + "/" + f.file);
      EXPECT_EQ(e.field, f.field);
      EXPECT_NE(e.message.find(f.says), std::string::npos) << e.what();
    }
    // validate, given another shard, reports the same fault by its code, file and field.
    CliRun v = run_cli("validate " + d + "/m-00003-of-00003.gguf --json");
    EXPECT_EQ(v.code, 1) << v.out;
    bool found = false;
    for (const auto& x : YAML::Load(v.out)["findings"])
      if (x["file"].as<std::string>() == d + "/" + f.file && x["code"].as<std::string>() == f.code) {
        found = true;
        EXPECT_EQ(x["severity"].as<std::string>(), "error");
        EXPECT_NE(x["message"].as<std::string>().find((f.field.empty() ? "" : f.field + ": ") + f.says), std::string::npos) << v.out;
      }
    EXPECT_TRUE(found) << v.out;
  }
  // The sets llama.cpp wrote validate clean from any shard; a lone file with split keys
  // (llama.cpp's merge) is a warning; more than 64 shards is a note.
  for (const char* shard : {"by-count-00003-of-00003.gguf", "metadata-first-00001-of-00004.gguf", "by-size-00002-of-00002.gguf"}) {
    CliRun v = run_cli("validate " + kSplits + "/" + shard);
    EXPECT_EQ(v.code, 0) << v.out;
    EXPECT_NE(v.out.find("shard set: "), std::string::npos);
  }
  CliRun m = run_cli("validate " + kSplits + "/merged-by-llama.gguf --strict");
  EXPECT_EQ(m.code, 1);
  EXPECT_NE(m.out.find("warning split_keys_in_single_file"), std::string::npos) << m.out;
  std::string many = fresh_dir("set-many");
  write_file(split_model(whole, {1, 0, false, {}, 0})[0], many + "/" + shard_path("m", 1, 65));  // names 65 shards
  CliRun t = run_cli("validate " + many + "/" + shard_path("m", 1, 65) + " --json");
  bool too_many = false;
  for (const auto& x : YAML::Load(t.out)["findings"])
    too_many |= x["code"].as<std::string>() == "too_many_shards" && x["severity"].as<std::string>() == "info";
  EXPECT_TRUE(too_many) << t.out;
}

// validate given shard 1 of a set whose shard 2 is not GGUF judged shard 1 alone, as if
// it were a lone file, and passed it: the set was never read.
TEST(ShardSet, ValidateOfASetWithAShardThatDoesNotReadNamesThatShard) {
  std::string dir = fresh_dir("set-unreadable");
  copy_set(dir, 0644);
  const std::string second = dir + "/m-00002-of-00003.gguf";
  std::vector<uint8_t> bytes = read_file_bytes(second);
  std::copy_n("XXXX", 4, bytes.begin());
  write_file_bytes(second, bytes);
  CliRun v = run_cli("validate " + dir + "/m-00001-of-00003.gguf");
  EXPECT_EQ(v.code, 1);
  EXPECT_EQ(v.out, "");
  EXPECT_EQ(v.err.rfind("ggufkit: error: " + second + ": at byte 0, head (magic): not a GGUF file: found 'XXXX....'", 0), 0u) << v.err;
  // Given the broken shard, it is that file's read finding, as for a lone file.
  CliRun own = run_cli("validate " + second + " --json");
  EXPECT_EQ(own.code, 1);
  YAML::Node j = YAML::Load(own.out);
  ASSERT_EQ(j["findings"].size(), 1u) << own.out;
  EXPECT_EQ(j["findings"][0]["code"].as<std::string>(), "read");
  EXPECT_EQ(j["findings"][0]["offset"].as<int>(), 0);
}

TEST(Split, RefusalsChangeNothing) {
  std::string dir = fresh_dir("split-refusals");
  write_file_bytes(dir + "/m-00002-of-00003.gguf", {1, 2, 3});  // one of the outputs exists
  struct Refusal {
    std::string args, says;
  };
  for (const Refusal& r : {Refusal{"--max-tensors 0", "--max-tensors expects a number of tensors, at least 1; found '0'"},
                           Refusal{"--max-tensors x", "found 'x'"},
                           Refusal{"--max-size 2M", "tensor[0] token_embd.weight alone (2176000 bytes, padded to 32) is more than --max-size 2000000 bytes"},
                           Refusal{"--max-size 5T", "--max-size expects a number of bytes"},
                           Refusal{"", "give one of --max-tensors N and --max-size SIZE"},
                           Refusal{"--max-tensors 8 --max-size 3M", "give one of --max-tensors N and --max-size SIZE"},
                           Refusal{"--max-tensors 8", "exists; give --force to replace it"}}) {
    SCOPED_TRACE(r.args);
    CliRun c = run_cli("split " + tiny_llama() + " -o " + dir + "/m " + r.args);
    EXPECT_EQ(c.code, 2) << c.err;
    EXPECT_NE(c.err.find(r.says), std::string::npos) << c.err;
    EXPECT_EQ(files_in(dir), (std::vector<std::string>{"m-00002-of-00003.gguf"}));
    EXPECT_EQ(read_file_bytes(dir + "/m-00002-of-00003.gguf"), (std::vector<uint8_t>{1, 2, 3}));
  }
  EXPECT_EQ(run_cli("split " + tiny_llama() + " -o " + dir + "/m --max-tensors 8 --force").code, 0);
  EXPECT_EQ(files_in(dir).size(), 3u);
}

TEST(Split, AFailureOrAKillBeforeEveryShardIsVerifiedLeavesNoShard) {
  // The fault points are passed once per shard; the first one is enough to show that
  // nothing is named before every shard is complete.
  for (const char* fault : {"write:fail:28", "written:kill", "verified:kill", "verified:int", "fsync:fail:5"}) {
    SCOPED_TRACE(fault);
    std::string dir = fresh_dir("split-fault");
    fs::copy_file(tiny_llama(), dir + "/model.gguf");
    const auto before = read_file_bytes(dir + "/model.gguf");
    CliRun r = run_cli("split " + dir + "/model.gguf -o " + dir + "/m --max-tensors 8",
                       std::string("GGUFKIT_FAULT=") + fault + " ", GGUFKIT_FAULTY_BIN);
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.err.find("fault point"), std::string::npos) << r.err;
    EXPECT_EQ(files_in(dir), (std::vector<std::string>{"model.gguf"}));
    EXPECT_TRUE(read_file_bytes(dir + "/model.gguf") == before);
  }
}

TEST(ShardSet, ShowAndTensorsGivenAnyShardReportTheWholeModel) {
  CliRun one = run_cli("show " + kSplits + "/tiny-llama.gguf --json");
  for (int k = 1; k <= 3; ++k) {
    SCOPED_TRACE(k);
    std::string shard = kSplits + "/" + shard_path("by-count", k, 3);
    CliRun s = run_cli("show " + shard + " --json");
    ASSERT_EQ(s.code, 0) << s.err;
    YAML::Node j = YAML::Load(s.out), single = YAML::Load(one.out);  // JSON is YAML
    EXPECT_EQ(j["files"].as<int>(), 3);
    EXPECT_EQ(j["tensor_count"].as<int>(), 21);
    EXPECT_EQ(j["kv_count"].as<int>(), 25) << s.out.substr(0, 300);
    // The model's own figures are the single file's (the split keys are not the model's).
    for (const char* field : {"bits_per_weight", "tensor_bytes", "vocabulary_size"})
      EXPECT_EQ(j[field].as<std::string>(), single[field].as<std::string>()) << field;
    CliRun t = run_cli("tensors " + shard + " --json");
    std::map<std::string, YAML::Node> tensors;
    for (const YAML::Node& x : YAML::Load(t.out)["tensors"]) tensors[x["name"].as<std::string>()] = x;
    auto expect_tensor = [&](const char* name, std::vector<uint64_t> dims, uint64_t offset, uint64_t bytes, int shard_no) {
      ASSERT_EQ(tensors.count(name), 1u) << name;
      const YAML::Node& x = tensors[name];
      EXPECT_EQ(x["dims"].as<std::vector<uint64_t>>(), dims) << name;
      EXPECT_EQ(x["type"].as<std::string>(), "q8_0") << name;
      EXPECT_EQ(x["offset"].as<uint64_t>(), offset) << name;
      EXPECT_EQ(x["bytes"].as<uint64_t>(), bytes) << name;
      EXPECT_EQ(x["shard"].as<int>(), shard_no) << name;
    };
    expect_tensor("token_embd.weight", {64, 32000}, 0, 2176000, 1);
    expect_tensor("blk.1.ffn_down.weight", {128, 64}, 25856, 8704, 3);
    YAML::Node only = YAML::Load(run_cli("show " + shard + " --shard-only --json").out);
    EXPECT_EQ(only["files"].as<int>(), 1);
    EXPECT_EQ(only["tensor_count"].as<int>(), k < 3 ? 8 : 5);
  }
}

TEST(SetEdits, AMetadataEditInPlaceRewritesShardOneAloneAndTheSetIsTheEditedModel) {
  std::string dir = fresh_dir("set-edit");
  copy_set(dir, 0444);  // replaced by rename: the header path is for writable files
  const auto second = read_file_bytes(dir + "/m-00002-of-00003.gguf"), third = read_file_bytes(dir + "/m-00003-of-00003.gguf");
  // Given any shard; the other shards are neither rewritten nor touched (same bytes, same inode).
  struct stat st2 {};
  ASSERT_EQ(::stat((dir + "/m-00002-of-00003.gguf").c_str(), &st2), 0);
  CliRun e = run_cli("edit " + dir + "/m-00003-of-00003.gguf --set general.name=set --eos-token-id 1 --in-place");
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("shard set: 3 files; shard 1 rewritten, the other 2 untouched"), std::string::npos) << e.out;
  struct stat after {};
  ASSERT_EQ(::stat((dir + "/m-00002-of-00003.gguf").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, st2.st_ino);
  EXPECT_TRUE(read_file_bytes(dir + "/m-00002-of-00003.gguf") == second);
  EXPECT_TRUE(read_file_bytes(dir + "/m-00003-of-00003.gguf") == third);
  // The set is the single file edited the same way.
  std::string single = dir + "/single.gguf";
  ASSERT_EQ(run_cli("edit " + kSplits + "/tiny-llama.gguf --set general.name=set --eos-token-id 1 -o " + single).code, 0);
  ASSERT_EQ(run_cli("merge " + dir + "/m-00001-of-00003.gguf -o " + dir + "/merged.gguf").code, 0);
  EXPECT_TRUE(read_file_bytes(dir + "/merged.gguf") == read_file_bytes(single));
  // The split keys are the set's: a patch may not touch them.
  for (const char* bad : {"--set split.no=1", "--remove split.count", "--rename split.tensors.count=x"}) {
    CliRun r = run_cli("edit " + dir + "/m-00001-of-00003.gguf " + bad + " --in-place");
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find("the split.* keys describe the set"), std::string::npos) << r.err;
  }
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"m-00001-of-00003.gguf", "m-00002-of-00003.gguf", "m-00003-of-00003.gguf",
                                                     "merged.gguf", "single.gguf"}));
}

TEST(SetEdits, ARealignWritesEveryShardAndAnEditToAPrefixWritesANewSet) {
  std::string dir = fresh_dir("set-realign");
  copy_set(dir, 0644);
  CliRun r = run_cli("realign " + dir + "/m-00001-of-00003.gguf -a 64 --in-place");
  ASSERT_EQ(r.code, 0) << r.err;
  for (int k = 1; k <= 3; ++k) {
    Scanned s = scan_file(dir + "/" + shard_path("m", k, 3));
    EXPECT_EQ(s.layout.alignment, 64u);  // every shard keeps the model's alignment
    EXPECT_EQ(s.model.find("general.alignment")->bits, 64u);
  }
  std::string single = dir + "/single.gguf";
  ASSERT_EQ(run_cli("realign " + kSplits + "/tiny-llama.gguf -a 64 -o " + single).code, 0);
  ASSERT_EQ(run_cli("merge " + dir + "/m-00002-of-00003.gguf -o " + dir + "/merged.gguf").code, 0);
  EXPECT_TRUE(read_file_bytes(dir + "/merged.gguf") == read_file_bytes(single));
  // -o PREFIX: a whole new set beside the old one, which stays as it was.
  auto before = read_file_bytes(dir + "/m-00001-of-00003.gguf");
  CliRun e = run_cli("edit " + dir + "/m-00001-of-00003.gguf --set general.name=new -o " + dir + "/n");
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_TRUE(read_file_bytes(dir + "/m-00001-of-00003.gguf") == before);
  ShardSet n = open_shard_set(dir + "/n-00002-of-00003.gguf");
  EXPECT_EQ(n.model().find("general.name")->str, "new");
  EXPECT_TRUE(read_file_bytes(dir + "/n-00003-of-00003.gguf") == read_file_bytes(dir + "/m-00003-of-00003.gguf"));
}

TEST(ShardSet, MetaHashTensorStackAndLayerOfAnyShardAreTheSingleFiles) {
  for (const char* cmd : {"meta FILE --json", "hash FILE --json", "hash FILE --algo sha256", "tensor FILE blk.1.ffn_down.weight --json",
                          "stack FILE --json", "layer FILE 1 --json"}) {
    SCOPED_TRACE(cmd);
    CliRun one = run_cli(fill(cmd, kSplits + "/tiny-llama.gguf", ""));
    ASSERT_EQ(one.code, 0) << one.err;
    for (int k = 1; k <= 3; ++k) {
      CliRun s = run_cli(fill(cmd, kSplits + "/" + shard_path("by-count", k, 3), ""));
      EXPECT_EQ(s.code, 0) << s.err;
      EXPECT_EQ(s.out, one.out) << k;
    }
  }
  // --shard-only: the file alone (shard 3 holds 5 tensors and the 3 split keys).
  CliRun h = run_cli("hash " + kSplits + "/by-count-00003-of-00003.gguf --shard-only --json");
  EXPECT_EQ(std::count(h.out.begin(), h.out.end(), '\n'), 1 + 5 + 1);
}

TEST(SetEdits, AFailureOrAKillBeforeTheRenamesLeavesEveryShardAsItWas) {
  for (const char* cmd : {"edit FILE --set general.name=x --in-place", "realign FILE -a 64 --in-place",
                          "edit FILE --set general.name=x -o PREFIX"}) {
    for (const char* fault : {"write:fail:28", "written:kill", "flushed:kill", "verified:kill", "verified:int", "fsync:fail:5"}) {
      SCOPED_TRACE(std::string(cmd) + " at " + fault);
      std::string dir = fresh_dir("set-fault");
      std::vector<std::vector<uint8_t>> before;
      copy_set(dir, 0444);  // the renames are the point: a writable shard 1 would take the header path
      for (int k = 1; k <= 3; ++k) before.push_back(read_file_bytes(dir + "/" + shard_path("m", k, 3)));
      const auto listing = files_in(dir);
      std::string args = fill(cmd, dir + "/m-00002-of-00003.gguf", "");
      if (size_t p = args.find("PREFIX"); p != std::string::npos) args.replace(p, 6, dir + "/n");
      CliRun r = run_cli(args, std::string("GGUFKIT_FAULT=") + fault + " ", GGUFKIT_FAULTY_BIN);
      EXPECT_NE(r.code, 0);
      EXPECT_NE(r.err.find("fault point"), std::string::npos) << r.err;
      EXPECT_EQ(files_in(dir), listing);
      for (int k = 1; k <= 3; ++k) EXPECT_TRUE(read_file_bytes(dir + "/" + shard_path("m", k, 3)) == before[k - 1]) << k;
    }
  }
}

TEST(ShardSet, MapAccountAndDiffGivenAnyShardDescribeEveryFileOfTheSet) {
  auto path = [](int k) { return kSplits + "/" + shard_path("by-count", k, 3); };
  const uint64_t sizes[] = {fs::file_size(path(1)), fs::file_size(path(2)), fs::file_size(path(3))};
  // map: every shard's own map in turn, each ending with its file's total.
  CliRun m = run_cli("map " + path(2));
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_EQ(m.out.rfind("shard set: 3 files\n", 0), 0u) << m.out.substr(0, 100);
  size_t at = 0;
  for (int k = 1; k <= 3; ++k) {
    size_t head = m.out.find("== " + path(k) + " (shard " + std::to_string(k) + " of 3)\n", at);
    ASSERT_NE(head, std::string::npos) << k;
    EXPECT_NE(m.out.find("file size " + std::to_string(sizes[k - 1]) + "\n", head), std::string::npos) << k;
    at = head;
  }
  EXPECT_NE(m.out.find("total 43584 bytes in 30 spans; file size 43584\n"), std::string::npos);
  CliRun mj = run_cli("map " + path(3) + " --json");
  EXPECT_EQ(mj.out.rfind("{\"files\": 3, \"shards\": [\n{\"file\": \"" + path(1) + "\", \"map\": {\"file_size\": " +
                             std::to_string(sizes[0]) + ",", 0), 0u) << mj.out.substr(0, 200);
  CliRun alone = run_cli("map " + path(2) + " --shard-only");
  EXPECT_EQ(alone.out.find("shard set"), std::string::npos);
  EXPECT_EQ(std::count(alone.out.begin(), alone.out.end(), '\n'), 1 + 30 + 1);

  // account: the figures of the three files added up; the tensors are the single file's.
  CliRun one = run_cli("account " + kSplits + "/tiny-llama.gguf --json");
  CliRun a = run_cli("account " + path(3) + " --json");
  ASSERT_EQ(a.code, 0) << a.err;
  YAML::Node aj = YAML::Load(a.out), onej = YAML::Load(one.out);
  EXPECT_EQ(aj["file_size"].as<uint64_t>(), sizes[0] + sizes[1] + sizes[2]) << a.out;
  EXPECT_EQ(aj["left_over"].as<uint64_t>(), 0u);
  EXPECT_EQ(aj["tensors"].as<int>(), 21);
  EXPECT_EQ(aj["contiguous"].as<int>(), 21);
  EXPECT_EQ(aj["tensor_bytes"].as<uint64_t>(), 4454656u);
  EXPECT_EQ(onej["tensor_bytes"].as<uint64_t>(), 4454656u);
  EXPECT_EQ(aj["files"].as<int>(), 3);
  ASSERT_EQ(aj["shards"].size(), 3u);
  EXPECT_EQ(aj["shards"][0]["file"].as<std::string>(), path(1));
  EXPECT_EQ(aj["shards"][0]["header"].as<uint64_t>(), 724704u);
  EXPECT_EQ(aj["shards"][0]["tensor_bytes"].as<uint64_t>(), 4377088u);
  EXPECT_EQ(aj["shards"][0]["file_size"].as<uint64_t>(), sizes[0]);
  EXPECT_EQ(onej["files"].as<int>(), 1);
  EXPECT_EQ(run_cli("account " + path(1)).out.rfind("shard set: 3 files", 0), 0u);

  // diff: a set against the file it was split from is the same model; llama.cpp's merge
  // kept the split keys.
  CliRun same = run_cli("diff " + path(2) + " " + kSplits + "/tiny-llama.gguf --exit-code");
  EXPECT_EQ(same.code, 0) << same.out;
  EXPECT_NE(same.out.find("A is a shard set: 3 files, B is one file"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find("no differences"), std::string::npos);
  CliRun merged = run_cli("diff " + path(1) + " " + kSplits + "/merged-by-llama.gguf --json");
  YAML::Node mjs = YAML::Load(merged.out);
  EXPECT_EQ(mjs["a_files"].as<int>(), 3);
  EXPECT_EQ(mjs["b_files"].as<int>(), 1);
  std::vector<std::string> added;
  for (const auto& d : mjs["differences"])
    if (d["change"].as<std::string>() == "added") added.push_back(d["key"].as<std::string>());
  EXPECT_EQ(added, (std::vector<std::string>{"split.no", "split.tensors.count", "split.count"})) << merged.out;
  EXPECT_EQ(std::count(merged.out.begin(), merged.out.end(), '\n'), 1 + 3);  // the three keys, one per line
  // --shard-only: the two files named, which hold different tensors.
  CliRun files = run_cli("diff " + path(2) + " " + path(3) + " --shard-only --json");
  YAML::Node fj = YAML::Load(files.out);
  EXPECT_EQ(fj["a_files"].as<int>(), 1);
  EXPECT_EQ(fj["b_files"].as<int>(), 1);
  bool removed_block0 = false;
  for (const auto& d : fj["differences"])
    removed_block0 |= d["change"].as<std::string>() == "tensor_removed" && d["key"].as<std::string>().rfind("blk.0.", 0) == 0;
  EXPECT_TRUE(removed_block0) << files.out;
}

// A set of more shards than llama.cpp opens (64), under as few open files: each shard is
// opened, read as far as its header and closed again, so 1,200 of them are shown, hashed,
// validated and edited in place under `ulimit -n 64`, and one missing among them is named.
// The set is split from a 1,200-tensor sketch: an importance matrix of 600 entries (each an
// in_sum2 and a counts tensor of one f32), which validate passes clean.
TEST(LargeSet, TwelveHundredShardsAreShownValidatedAndEditedInPlaceUnderAnOpenFileLimitOf64) {
  const std::string dir = fresh_dir("set-large");
  std::string sketch =
      "metadata:\n"
      "  - {key: general.type, type: string, value: imatrix}\n"
      "  - {key: general.name, type: string, value: many}\n"
      "  - {key: imatrix.datasets, type: array, items: string, value: [d.txt]}\n"
      "  - {key: imatrix.chunk_count, type: u32, value: 1}\n"
      "  - {key: imatrix.chunk_size, type: u32, value: 512}\n"
      "tensors:\n";
  for (int k = 0; k < 600; ++k)
    sketch += "  - {name: blk." + std::to_string(k) + ".w.in_sum2, type: f32, dims: [1], values: [" + std::to_string(k) +
              "]}\n  - {name: blk." + std::to_string(k) + ".w.counts, type: f32, dims: [1], values: [1]}\n";
  write_file_bytes(dir + "/big.yaml", std::vector<uint8_t>(sketch.begin(), sketch.end()));
  ASSERT_EQ(run_cli("write " + dir + "/big.yaml -o " + dir + "/whole.gguf").code, 0);
  CliRun s = run_cli("split " + dir + "/whole.gguf -o " + dir + "/big --max-tensors 1");
  ASSERT_EQ(s.code, 0) << s.err;
  ASSERT_EQ(files_in(dir).size(), 2u + 1200u);
  auto shard = [&](uint32_t k) { return dir + "/" + shard_path("big", k, 1200); };
  const std::string limit = "ulimit -n 64; ";

  // show and tensors, given the last shard: the whole model, each tensor in its own shard.
  CliRun show = run_cli("show " + shard(1200) + " --json", limit);
  ASSERT_EQ(show.code, 0) << show.out << show.err;
  YAML::Node j = YAML::Load(show.out);
  EXPECT_EQ(j["files"].as<int>(), 1200);
  EXPECT_EQ(j["tensor_count"].as<int>(), 1200);
  EXPECT_EQ(j["kv_count"].as<int>(), 5);
  EXPECT_EQ(j["name"].as<std::string>(), "many");
  CliRun t = run_cli("tensors " + shard(600) + " --json", limit);
  ASSERT_EQ(t.code, 0) << t.err;
  YAML::Node tensors = YAML::Load(t.out)["tensors"];
  ASSERT_EQ(tensors.size(), 1200u);
  EXPECT_EQ(tensors[1199]["name"].as<std::string>(), "blk.599.w.counts");
  EXPECT_EQ(tensors[1199]["shard"].as<int>(), 1200);
  EXPECT_EQ(tensors[598]["name"].as<std::string>(), "blk.299.w.in_sum2");
  EXPECT_EQ(tensors[598]["shard"].as<int>(), 599);
  // hash reads the tensors' bytes, each shard opened again while it is read: the set's are
  // the file's, tensor by tensor; and each whole file.
  CliRun h = run_cli("hash " + shard(1), limit);
  ASSERT_EQ(h.code, 0) << h.err;
  EXPECT_EQ(h.out, run_cli("hash " + dir + "/whole.gguf").out);
  EXPECT_EQ(std::count(h.out.begin(), h.out.end(), '\n'), 1201);
  CliRun files = run_cli("hash " + shard(1) + " --file", limit);
  ASSERT_EQ(files.code, 0) << files.err;
  EXPECT_EQ(std::count(files.out.begin(), files.out.end(), '\n'), 1200);
  EXPECT_NE(files.out.find("  " + shard(1200) + "\n"), std::string::npos);

  // validate reads every shard; more than 64 is a note, not a warning.
  CliRun v = run_cli("validate " + shard(1) + " --json", limit);
  EXPECT_EQ(v.code, 0) << v.out.substr(0, 1000) << v.err;
  YAML::Node vj = YAML::Load(v.out);
  EXPECT_EQ(vj["files"].as<int>(), 1200);
  EXPECT_EQ(vj["errors"].as<int>(), 0);
  EXPECT_EQ(vj["warnings"].as<int>(), 0);
  int notes = 0;
  for (const auto& x : vj["findings"])
    if (x["code"].as<std::string>() == "too_many_shards") {
      ++notes;
      EXPECT_EQ(x["severity"].as<std::string>(), "info");
      EXPECT_EQ(x["file"].as<std::string>(), shard(1));
      EXPECT_EQ(x["message"].as<std::string>(), "1200 shards are more than the 64 llama.cpp opens by default");
    }
  EXPECT_EQ(notes, 1) << v.out.substr(0, 1000);

  // An edit in place writes shard 1's header; the other 1,199 shards keep their bytes.
  std::vector<std::vector<uint8_t>> before;
  for (uint32_t k = 2; k <= 1200; ++k) before.push_back(read_file_bytes(shard(k)));
  const uint64_t first_size = fs::file_size(shard(1));
  CliRun e = run_cli("edit " + shard(1) + " --set general.name=edited --in-place", limit);
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("shard set: 1200 files; shard 1's header written in place, the other 1199 untouched"), std::string::npos)
      << e.out;
  EXPECT_EQ(fs::file_size(shard(1)), first_size);
  for (uint32_t k = 2; k <= 1200; ++k) EXPECT_TRUE(read_file_bytes(shard(k)) == before[k - 2]) << k;
  CliRun again = run_cli("show " + shard(2) + " --json", limit);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(YAML::Load(again.out)["name"].as<std::string>(), "edited");
  EXPECT_EQ(YAML::Load(again.out)["tensor_count"].as<int>(), 1200);

  // A missing shard among them is named, by validate and by a reader.
  fs::remove(shard(600));
  CliRun m = run_cli("validate " + shard(1) + " --json", limit);
  EXPECT_EQ(m.code, 1) << m.err;
  int missing = 0;
  for (const auto& x : YAML::Load(m.out)["findings"])
    if (x["code"].as<std::string>() == "missing_shard") {
      ++missing;
      EXPECT_EQ(x["file"].as<std::string>(), shard(600));
      EXPECT_EQ(x["severity"].as<std::string>(), "error");
      EXPECT_EQ(x["message"].as<std::string>(), "is missing: shard 600 of the 1200 of the set " + shard(1) + " belongs to");
    }
  EXPECT_EQ(missing, 1) << m.out.substr(0, 1000);
  CliRun ms = run_cli("show " + shard(1), limit);
  EXPECT_EQ(ms.code, 1);
  EXPECT_EQ(ms.err, "ggufkit: error: " + shard(600) + ": is missing: shard 600 of the 1200 of the set " + shard(1) + " belongs to\n");
}

// A set with one shard turned to the other byte order was read in shard 1's: validate passed
// it, tensor decoded garbage, and merge and --graft wrote byte-swapped weights into a
// little-endian file that llama.cpp loads. Every command that reads the set refuses it now,
// naming that shard (llama.cpp refuses it too: a file of the other order fails at its version).
TEST(ShardSet, AShardInTheOtherByteOrderIsRefusedByEveryCommandThatReadsTheSet) {
  const std::string dir = fresh_dir("set-byte-order");
  copy_set(dir, 0644);
  const std::string first = dir + "/m-00001-of-00003.gguf", second = dir + "/m-00002-of-00003.gguf";
  {
    Model m = scan_file(second).model;
    m.order = ByteOrder::big;
    write_file(m, dir + "/big.tmp");
  }
  fs::rename(dir + "/big.tmp", second);
  ASSERT_EQ(scan_file(second).model.order, ByteOrder::big);
  const std::string says = second + ": version: is big-endian, and shard 1 (m-00001-of-00003.gguf) little-endian: a set is in one byte order";
  CliRun v = run_cli("validate " + first + " --json");
  EXPECT_EQ(v.code, 1) << v.out;
  size_t found = 0;
  for (const auto& x : YAML::Load(v.out)["findings"])
    if (x["code"].as<std::string>() == "shard_byte_order") {
      ++found;
      EXPECT_EQ(x["file"].as<std::string>(), second);
      EXPECT_EQ(x["severity"].as<std::string>(), "error");
    }
  EXPECT_EQ(found, 1u) << v.out;
  const std::string out = dir + "-out";
  fs::create_directories(out);
  const std::string tensor_in_2 = scan_file(second).model.tensors[0].name;
  for (const std::string& cmd : {"show " + first, "tensors " + dir + "/m-00003-of-00003.gguf", "tensor " + first + " " + tensor_in_2,
                                 "merge " + first + " -o " + out + "/merged.gguf",
                                 "edit " + tiny_llama() + " --graft " + first + ":" + tensor_in_2 + " -o " + out + "/grafted.gguf",
                                 "split " + first + " --max-tensors 4 -o " + out + "/again", "hash " + first}) {
    SCOPED_TRACE(cmd);
    CliRun r = run_cli(cmd);
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
  EXPECT_EQ(files_in(out), std::vector<std::string>{});  // nothing written
}

// Found by the audit: an in-place rewrite of a set whose shard 2 is a link into another
// folder is refused (a set is rewritten in one folder), but the finished new shard 2 was left
// there as .ggufkit-*.tmp: the cleanup looked only in shard 1's folder.
TEST(ShardSet, ARefusedInPlaceRewriteLeavesNoNewFileInAnyShardsFolder) {
  const std::string dir = fresh_dir("set-away-link"), away = fresh_dir("set-away-store");
  copy_set(dir, 0644);
  const std::string second = dir + "/m-00002-of-00003.gguf";
  fs::rename(second, away + "/shard2.gguf");
  fs::create_symlink(away + "/shard2.gguf", second);
  const auto before = read_file_bytes(away + "/shard2.gguf");
  CliRun r = run_cli("realign " + dir + "/m-00001-of-00003.gguf -a 64 --in-place");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("a set is rewritten in place in one folder"), std::string::npos) << r.err;
  EXPECT_EQ(files_in(away), std::vector<std::string>{"shard2.gguf"});
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"m-00001-of-00003.gguf", "m-00002-of-00003.gguf", "m-00003-of-00003.gguf"}));
  EXPECT_TRUE(read_file_bytes(away + "/shard2.gguf") == before);
}
