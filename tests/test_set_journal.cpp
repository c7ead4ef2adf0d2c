// A shard set rewritten in place (the fourth audit's findings 1, 4, 5 and 12): a set's
// journal names only its own set's files in its own folder, a shard replaced while the
// set is rewritten is never lost, a journal is never written through a link, and a
// moved folder or any shard of the set is enough to recover.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <filesystem>

#include "helpers.h"

using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

std::string shard(const std::string& dir, int k, int n = 3) {
  return dir + "/m-0000" + std::to_string(k) + "-of-0000" + std::to_string(n) + ".gguf";
}

// The tiny llama split into 3 shards in a folder of its own, and what --alignment 64 makes of them in `want`.
std::string split_set(const std::string& name) {
  const std::string dir = temp_path(name);
  fs::create_directories(dir);
  EXPECT_EQ(run_cli("split " + tiny_llama() + " -o " + dir + "/m --max-tensors 8").code, 0);
  const std::string want = temp_path(name + "-want");
  fs::create_directories(want);
  EXPECT_EQ(run_cli("edit " + shard(dir, 1) + " --alignment 64 -o " + want + "/m").code, 0);
  return dir;
}

void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// A set's journal in ggufkit's format, checksum right: each entry a target as spelled,
// the hidden name of its "new file" and two numbers (the device and inode of that file).
std::vector<uint8_t> set_journal(const std::vector<std::pair<std::string, std::string>>& entries, const std::string& dir) {
  std::vector<uint8_t> j;
  const std::string magic = "GGUFKIT-SETJRNL1";
  j.insert(j.end(), magic.begin(), magic.end());
  put_u64(j, entries.size());
  for (const auto& [target, hidden] : entries) {
    struct stat st {};
    EXPECT_EQ(::stat((dir + "/" + hidden).c_str(), &st), 0) << hidden;
    put_u64(j, target.size());
    j.insert(j.end(), target.begin(), target.end());
    put_u64(j, hidden.size());
    j.insert(j.end(), hidden.begin(), hidden.end());
    put_u64(j, static_cast<uint64_t>(st.st_dev));
    put_u64(j, static_cast<uint64_t>(st.st_ino));
  }
  put_u64(j, XXH64(j.data(), j.size(), 0));
  return j;
}

void own(const std::string& path, uid_t uid, mode_t mode) {
  ASSERT_EQ(::chown(path.c_str(), uid, uid), 0) << path;
  ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
}

}  // namespace

// Finding 1: mallory (65534) plants a set's journal beside her own file, naming alice's
// (65533) file as a target and her own hidden files as its "new" content; root runs the
// recover every command points to. Alice's file stays alice's, byte for byte.
TEST(SetJournal, APlantedJournalNamingAnotherUsersFileIsRefusedNamingItAndTheFileIsUntouched) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to give files other owners";
  const std::string dir = temp_path("planted-set");
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 03777);  // a shared, sticky folder
  const std::vector<uint8_t> theirs = {'m', 'a', 'l', 'l', 'o', 'r', 'y'};
  struct Case {
    std::string mine, victim, target;  // mallory's file, alice's, and the victim as the journal spells it
    std::string says;
  };
  const std::vector<Case> cases = {
      // The audit's plant: absolute paths, beside a file that is no shard.
      {dir + "/mal.gguf", dir + "/alice.gguf", dir + "/alice.gguf", "names " + dir + "/alice.gguf, which is not a name in its folder"},
      // Relative names, beside a shard of mallory's set: alice's file named as her shard 2.
      {shard(dir, 1, 2), shard(dir, 2, 2), "m-00002-of-00002.gguf",
       shard(dir, 2, 2) + " is owned by user 65533, not as " + shard(dir, 1, 2) + " (user 65534)"},
      // A name in another folder.
      {shard(dir, 1, 2), dir + "/other/alice.gguf", "other/alice.gguf", "names other/alice.gguf, which is not a name in its folder"},
  };
  fs::create_directories(dir + "/other");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.target);
    fs::copy_file(tiny_llama(), c.mine, fs::copy_options::overwrite_existing);
    fs::copy_file(tiny_llama(), c.victim, fs::copy_options::overwrite_existing);
    own(c.mine, 65534, 0644);
    own(c.victim, 65533, 0640);
    write_file_bytes(dir + "/.ggufkit-1-00000001.tmp", theirs);
    write_file_bytes(dir + "/.ggufkit-1-00000002.tmp", theirs);
    own(dir + "/.ggufkit-1-00000001.tmp", 65534, 0644);
    own(dir + "/.ggufkit-1-00000002.tmp", 65534, 0644);
    const std::string mine_name = c.mine[0] == '/' && c.target[0] == '/' ? c.mine : fs::path(c.mine).filename().string();
    const std::string j = c.mine + ".ggufkit-journal";
    write_file_bytes(j, set_journal({{mine_name, ".ggufkit-1-00000001.tmp"}, {c.target, ".ggufkit-1-00000002.tmp"}}, dir));
    own(j, 65534, 0600);
    const auto victim = read_file_bytes(c.victim), mine = read_file_bytes(c.mine);
    CliRun r = run_cli("recover " + c.mine, "cd " + dir + " && ");
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("nothing was changed"), std::string::npos) << r.err;
    EXPECT_TRUE(read_file_bytes(c.victim) == victim);
    EXPECT_TRUE(read_file_bytes(c.mine) == mine);
    struct stat st {};
    ASSERT_EQ(::stat(c.victim.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 65533u);
    EXPECT_EQ(st.st_mode & 07777, 0640u);
    EXPECT_TRUE(read_file_bytes(dir + "/.ggufkit-1-00000002.tmp") == theirs);
    fs::remove(j);
  }
}

// Finding 4: another program renames its file R2 over shard 2 after shard 1 is in place:
// the edit is refused naming shard 2, shard 1 is put back, R2 is kept, and nothing of the
// edit is left in the folder.
TEST(SetJournal, AShardReplacedWhileTheSetIsRewrittenIsKeptAndTheSetIsAsItWas) {
  const std::string dir = split_set("set-replaced");
  const std::string r2 = temp_path("set-replaced-r2");
  write_file_bytes(r2, {'R', '2'});
  const auto s1 = read_file_bytes(shard(dir, 1)), s3 = read_file_bytes(shard(dir, 3));
  const std::string mv = "cp " + r2 + " " + dir + "/r2.tmp && mv " + dir + "/r2.tmp " + shard(dir, 2);
  CliRun r = run_cli("edit " + shard(dir, 1) + " --alignment 64 --in-place", "GGUFKIT_FAULT='set-renamed:run:" + mv + "' ",
                     GGUFKIT_FAULTY_BIN);
  EXPECT_NE(r.err.find("fault point set-renamed reached"), std::string::npos) << r.err;
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find(shard(dir, 2) + ": changed since it was read"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("every file of the set is as it was"), std::string::npos) << r.err;
  EXPECT_TRUE(read_file_bytes(shard(dir, 1)) == s1);
  EXPECT_TRUE(read_file_bytes(shard(dir, 2)) == read_file_bytes(r2));
  EXPECT_TRUE(read_file_bytes(shard(dir, 3)) == s3);
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"m-00001-of-00003.gguf", "m-00002-of-00003.gguf", "m-00003-of-00003.gguf"}));
}

// Finding 5: shard 3 becomes a link into another folder just before the journals are
// written: no journal is written there (nor left anywhere), and the link is not replaced.
TEST(SetJournal, AShardThatBecomesALinkGetsNoJournalBesideItsTargetAndIsNotReplaced) {
  const std::string dir = split_set("set-link");
  const std::string away = temp_path("set-link-away");
  fs::create_directories(away);
  const auto s1 = read_file_bytes(shard(dir, 1)), s3 = read_file_bytes(shard(dir, 3));
  const std::string link = "mv " + shard(dir, 3) + " " + away + "/ && ln -s " + away + "/m-00003-of-00003.gguf " + shard(dir, 3);
  CliRun r = run_cli("edit " + shard(dir, 1) + " --alignment 64 --in-place", "GGUFKIT_FAULT='linked:run:" + link + "' ",
                     GGUFKIT_FAULTY_BIN);
  EXPECT_NE(r.err.find("fault point linked reached"), std::string::npos) << r.err;
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find(shard(dir, 3) + ": changed since it was read"), std::string::npos) << r.err;
  EXPECT_EQ(files_in(away), (std::vector<std::string>{"m-00003-of-00003.gguf"}));
  EXPECT_TRUE(read_file_bytes(away + "/m-00003-of-00003.gguf") == s3);
  EXPECT_TRUE(fs::is_symlink(shard(dir, 3)));
  EXPECT_TRUE(read_file_bytes(shard(dir, 1)) == s1);
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"m-00001-of-00003.gguf", "m-00002-of-00003.gguf", "m-00003-of-00003.gguf"}));
}

// Finding 12: a set killed between two renames, its folder then moved, is recovered from
// the new place; and a set killed when only shard 1's journal is named is recovered by
// naming shard 2, which every command then reads.
TEST(SetJournal, AMovedFolderIsRecoveredAndAnyShardOfTheSetFindsItsJournal) {
  const std::string dir = split_set("set-moved");
  const std::string want = temp_path("set-moved-want");
  CliRun k = run_cli("edit " + shard(dir, 1) + " --alignment 64 --in-place", "GGUFKIT_FAULT=set-renamed:kill ", GGUFKIT_FAULTY_BIN);
  ASSERT_EQ(k.code, 128 + 9) << k.err;
  const std::string moved = temp_path("set-moved-away");
  fs::rename(dir, moved);
  CliRun r = run_cli("recover " + shard(moved, 3));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, shard(moved, 3) + ": the set's renames were cut short; every new shard is now in place\n");
  for (int i = 1; i <= 3; ++i) EXPECT_TRUE(read_file_bytes(shard(moved, i)) == read_file_bytes(shard(want, i))) << i;
  EXPECT_EQ(files_in(moved), (std::vector<std::string>{"m-00001-of-00003.gguf", "m-00002-of-00003.gguf", "m-00003-of-00003.gguf"}));

  // Killed once shard 1's journal is named, before shard 2's is.
  const std::string two = split_set("set-second");
  const std::string want2 = temp_path("set-second-want");
  CliRun k2 = run_cli("edit " + shard(two, 1) + " --alignment 64 --in-place", "GGUFKIT_FAULT=renamed:kill,set-journal:kill ",
                      GGUFKIT_FAULTY_BIN);
  ASSERT_EQ(k2.code, 128 + 9) << k2.err;
  EXPECT_TRUE(fs::exists(shard(two, 1) + ".ggufkit-journal"));
  EXPECT_FALSE(fs::exists(shard(two, 2) + ".ggufkit-journal"));
  CliRun v = run_cli("validate " + shard(two, 2));
  EXPECT_EQ(v.code, 1) << v.out << v.err;
  EXPECT_NE((v.out + v.err).find("run 'ggufkit recover " + shard(two, 1) + "'"), std::string::npos) << v.out << v.err;
  CliRun r2 = run_cli("recover " + shard(two, 2));
  EXPECT_EQ(r2.code, 0) << r2.err;
  EXPECT_EQ(r2.out, shard(two, 2) + ": the set's renames were cut short; every new shard is now in place\n");
  for (int i = 1; i <= 3; ++i) EXPECT_TRUE(read_file_bytes(shard(two, i)) == read_file_bytes(shard(want2, i))) << i;
  EXPECT_EQ(files_in(two), (std::vector<std::string>{"m-00001-of-00003.gguf", "m-00002-of-00003.gguf", "m-00003-of-00003.gguf"}));
  EXPECT_EQ(run_cli("validate " + shard(two, 2)).code, 0);
}
