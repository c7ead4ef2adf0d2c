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

// recover, given shard k, finishes the set forward: every shard is `want`'s, nothing else is left.
void expect_recovered_from(const std::string& dir, int k, const std::string& want) {
  CliRun f = run_cli("recover " + shard(dir, k));
  EXPECT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(f.out, shard(dir, k) + ": the set's renames were cut short; every new shard is now in place\n");
  for (int i = 1; i <= 3; ++i) EXPECT_TRUE(read_file_bytes(shard(dir, i)) == read_file_bytes(shard(want, i))) << i;
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"m-00001-of-00003.gguf", "m-00002-of-00003.gguf", "m-00003-of-00003.gguf"}));
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

namespace {

struct Entry {
  std::string target, hidden;
  uint64_t inode, old_inode;
};

// A set's journal as put_set_in_place writes it: each target and hidden name, the new
// file's inode and the inode of the file it replaces.
std::vector<uint8_t> set_journal_of(const std::vector<Entry>& entries) {
  std::vector<uint8_t> j;
  const std::string magic = "GGUFKIT-SETJRNL1";
  j.insert(j.end(), magic.begin(), magic.end());
  put_u64(j, entries.size());
  for (const Entry& e : entries) {
    put_u64(j, e.target.size());
    j.insert(j.end(), e.target.begin(), e.target.end());
    put_u64(j, e.hidden.size());
    j.insert(j.end(), e.hidden.begin(), e.hidden.end());
    put_u64(j, e.inode);
    put_u64(j, e.old_inode);
  }
  put_u64(j, XXH64(j.data(), j.size(), 0));
  return j;
}

uint64_t inode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return static_cast<uint64_t>(st.st_ino);
}

// The names in `dir` ggufkit gives its new files and journals.
std::vector<std::string> hidden_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const std::string& n : files_in(dir))
    if (n.rfind(".ggufkit-", 0) == 0) out.push_back(n);
  return out;
}

const std::vector<std::string> kJournals = {"m-00001-of-00003.gguf.ggufkit-journal", "m-00002-of-00003.gguf.ggufkit-journal",
                                            "m-00003-of-00003.gguf.ggufkit-journal"};

std::vector<std::string> journals_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const std::string& n : files_in(dir))
    if (n.size() > 16 && n.compare(n.size() - 16, 16, ".ggufkit-journal") == 0) out.push_back(n);
  return out;
}

}  // namespace

// Mallory's journal passes the owner check against her own shard; then, before recover
// looks at the set, her shard's name becomes a hard link to alice's other file, so that
// alice's files would pass as "owned as the shard is". Recover judges ownership only
// against the file it approved: the swap is refused by name and nothing is renamed.
TEST(SetJournal, AShardSwappedAfterItsJournalWasTrustedIsRefusedAndNothingIsRenamed) {
  const bool root = ::geteuid() == 0;
  const std::string dir = temp_path("set-swapped");
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 03777);
  const std::string mine = shard(dir, 1, 2), victim = shard(dir, 2, 2), other = dir + "/alice-other.gguf";
  const std::string h1 = ".ggufkit-1-00000001.tmp", h2 = ".ggufkit-1-00000002.tmp";
  const std::vector<uint8_t> theirs = {'m', 'a', 'l', 'l', 'o', 'r', 'y'};
  fs::copy_file(tiny_llama(), mine);
  fs::copy_file(tiny_llama(), victim);
  fs::copy_file(tiny_llama(), other);
  write_file_bytes(dir + "/" + h1, theirs);
  write_file_bytes(dir + "/" + h2, theirs);
  if (root) {
    for (const std::string& f : {mine, dir + "/" + h1, dir + "/" + h2}) own(f, 65534, 0644);
    own(victim, 65533, 0640);
    own(other, 65533, 0640);
  }
  const std::string j = mine + ".ggufkit-journal";
  write_file_bytes(j, set_journal_of({{"m-00001-of-00002.gguf", h1, inode_of(dir + "/" + h1), inode_of(other)},
                                      {"m-00002-of-00002.gguf", h2, inode_of(dir + "/" + h2), inode_of(victim)}}));
  if (root) own(j, 65534, 0600);
  const auto victim_bytes = read_file_bytes(victim);
  const uint64_t victim_inode = inode_of(victim), other_inode = inode_of(other);
  CliRun r = run_cli("recover " + mine, "GGUFKIT_FAULT='set-trusted:run:ln -f " + other + " " + mine + "' ", GGUFKIT_FAULTY_BIN);
  EXPECT_NE(r.err.find("fault point set-trusted reached"), std::string::npos) << r.err;
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(mine + " is not the file whose owner the journal was checked against (another file was put in its "
                              "place since); nothing was changed"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(inode_of(victim), victim_inode);
  EXPECT_TRUE(read_file_bytes(victim) == victim_bytes);
  EXPECT_EQ(inode_of(mine), other_inode);  // as the swap left it
  EXPECT_TRUE(read_file_bytes(dir + "/" + h1) == theirs);
  EXPECT_TRUE(read_file_bytes(dir + "/" + h2) == theirs);
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{h1, h2, "alice-other.gguf", "m-00001-of-00002.gguf",
                                                     "m-00001-of-00002.gguf.ggufkit-journal", "m-00002-of-00002.gguf"}));
}

// Shard 3's exchange fails, and so does the undo of shard 1's: shards 2 and 3 were already
// put back but their new files are kept, with every journal, so recover finishes the set
// forward and every shard is the new one.
TEST(SetJournal, AnExchangeThatCannotBeUndoneKeepsEveryNewFileAndJournalAndRecoverFinishesTheSet) {
  const std::string dir = split_set("set-stuck");
  const std::string want = temp_path("set-stuck-want");
  const auto s2 = read_file_bytes(shard(dir, 2)), s3 = read_file_bytes(shard(dir, 3));
  CliRun r = run_cli("edit " + shard(dir, 1) + " --alignment 64 --in-place",
                     "GGUFKIT_FAULT='set-exchange:fail:5@3,set-undo:fail:5@2' ", GGUFKIT_FAULTY_BIN);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find(shard(dir, 3) + ": cannot put the new file in place: " + shard(dir, 1) +
                       " cannot be put back as it was; every new file and journal of the set is kept: run 'ggufkit recover " +
                       shard(dir, 1) + "' to finish it"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(read_file_bytes(shard(dir, 1)) == read_file_bytes(shard(want, 1)));
  EXPECT_TRUE(read_file_bytes(shard(dir, 2)) == s2);
  EXPECT_TRUE(read_file_bytes(shard(dir, 3)) == s3);
  EXPECT_EQ(journals_in(dir), kJournals);
  EXPECT_EQ(hidden_in(dir).size(), 3u);  // shard 1's old file, shards 2 and 3's new ones
  expect_recovered_from(dir, 1, want);
}

// Without RENAME_EXCHANGE (every exchange fails with EINVAL) shard 1 goes in by a plain
// rename, its old file gone; then shard 2's rename fails. Nothing is undone: every journal
// and new file is kept, the message says which shard is new, and recover finishes the set.
TEST(SetJournal, WithoutExchangeAFailureAfterAShardWentInKeepsEveryJournalAndRecoverFinishesTheSet) {
  const std::string dir = split_set("set-noexchange");
  const std::string want = temp_path("set-noexchange-want");
  const auto s2 = read_file_bytes(shard(dir, 2)), s3 = read_file_bytes(shard(dir, 3));
  CliRun r = run_cli("edit " + shard(dir, 1) + " --alignment 64 --in-place",
                     "GGUFKIT_FAULT='set-exchange:fail:22@*,set-rename:fail:5@2' ", GGUFKIT_FAULTY_BIN);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find(shard(dir, 2) + ": cannot put the new file in place: " + shard(dir, 1) +
                       " is already the new one (this file system cannot exchange two files: the old one is gone); every "
                       "other new file and every journal of the set is kept: run 'ggufkit recover " +
                       shard(dir, 1) + "' to finish it"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(read_file_bytes(shard(dir, 1)) == read_file_bytes(shard(want, 1)));
  EXPECT_TRUE(read_file_bytes(shard(dir, 2)) == s2);
  EXPECT_TRUE(read_file_bytes(shard(dir, 3)) == s3);
  EXPECT_EQ(journals_in(dir), kJournals);
  EXPECT_EQ(hidden_in(dir).size(), 2u);  // shards 2 and 3's new files
  expect_recovered_from(dir, 2, want);
}

// Without RENAME_EXCHANGE, another program puts its file R2 over shard 2 once shard 1 is in:
// R2 is kept, shard 2's new file waits with every journal, and recover refuses naming
// shard 2 rather than replace R2; nothing of the set is lost.
TEST(SetJournal, WithoutExchangeAShardReplacedAfterAnotherWentInIsKeptAndRecoverRefusesNamingIt) {
  const std::string dir = split_set("set-noexchange-replaced");
  const std::string want = temp_path("set-noexchange-replaced-want");
  const std::string r2 = temp_path("set-noexchange-r2");
  write_file_bytes(r2, {'R', '2'});
  const auto s3 = read_file_bytes(shard(dir, 3));
  const std::string mv = "cp " + r2 + " " + dir + "/r2.tmp && mv " + dir + "/r2.tmp " + shard(dir, 2);
  CliRun r = run_cli("edit " + shard(dir, 1) + " --alignment 64 --in-place",
                     "GGUFKIT_FAULT='set-exchange:fail:22@*,set-renamed:run:" + mv + "' ", GGUFKIT_FAULTY_BIN);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find(shard(dir, 2) + ": changed since it was read (another file was put in its place, or a link); it is "
                                       "kept: " + shard(dir, 1) + " is already the new one"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(read_file_bytes(shard(dir, 1)) == read_file_bytes(shard(want, 1)));
  EXPECT_TRUE(read_file_bytes(shard(dir, 2)) == read_file_bytes(r2));
  EXPECT_TRUE(read_file_bytes(shard(dir, 3)) == s3);
  EXPECT_EQ(journals_in(dir), kJournals);
  EXPECT_EQ(hidden_in(dir).size(), 2u);
  CliRun f = run_cli("recover " + shard(dir, 1));
  EXPECT_EQ(f.code, 1) << f.err;
  EXPECT_NE(f.err.find(shard(dir, 2) + " is not the file the set's journal recorded its new file replaces; nothing was changed"),
            std::string::npos)
      << f.err;
  EXPECT_TRUE(read_file_bytes(shard(dir, 2)) == read_file_bytes(r2));
  EXPECT_EQ(journals_in(dir), kJournals);
  EXPECT_EQ(hidden_in(dir).size(), 2u);
}
