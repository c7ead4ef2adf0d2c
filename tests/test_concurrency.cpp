// Nothing is lost when others touch the file: another user's links and journals, a second
// edit at the same instant, a file renamed over the model or written by another program
// mid-edit, readers while the header changes, and a set's renames cut short.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "ggufkit/scan.h"
#include "ggufkit/source.h"
#include "helpers.h"

using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

// A folder of its own with a copy of the tiny llama, writable (whatever the corpus's modes).
std::string fresh_model(const std::string& name) {
  std::string dir = temp_path(name);
  fs::create_directories(dir);
  std::string model = dir + "/model.gguf";
  fs::copy_file(tiny_llama(), model, fs::copy_options::overwrite_existing);
  fs::permissions(model, fs::perms(0644));
  return model;
}

std::string get(const std::string& model, const std::string& key) {
  CliRun r = run_cli("get " + model + " " + key);
  return r.code == 0 ? r.out : "error " + std::to_string(r.code) + ": " + r.err;
}

uint64_t data_start(const std::string& model) { return ggufkit::scan_file(model).layout.data_offset; }

void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// A journal in ggufkit's format, with every checksum right, that says the bytes of
// [at, at + old.size()) were `old` before an edit (a header of n bytes): what someone who
// can read the model and write its folder can make.
std::vector<uint8_t> crafted_journal(const std::string& model, uint64_t n, uint64_t at, const std::string& old) {
  std::vector<uint8_t> file = read_file_bytes(model);
  struct stat st {};
  ::stat(model.c_str(), &st);
  std::vector<uint8_t> was(file.begin(), file.begin() + static_cast<long>(n));
  std::memcpy(was.data() + at, old.data(), old.size());
  std::vector<uint8_t> j;
  const std::string magic = "GGUFKIT-JOURNAL1";
  j.insert(j.end(), magic.begin(), magic.end());
  for (uint64_t v : {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size), n,
                     static_cast<uint64_t>(XXH64(was.data(), n, 0)), uint64_t{12345}, at, static_cast<uint64_t>(old.size())})
    put_u64(j, v);
  j.insert(j.end(), old.begin(), old.end());
  j.insert(j.end(), file.begin() + static_cast<long>(at), file.begin() + static_cast<long>(at + old.size()));  // "new"
  put_u64(j, XXH64(j.data(), j.size(), 0));
  return j;
}

// Where the bytes of `text` first stand in the file.
uint64_t offset_of(const std::string& path, const std::string& text) {
  std::vector<uint8_t> f = read_file_bytes(path);
  auto it = std::search(f.begin(), f.end(), text.begin(), text.end());
  return static_cast<uint64_t>(it - f.begin());
}

// A user other than root for the tests that plant files as someone else (made with useradd).
uid_t other_user() {
  const char* name = "ggufkit-audit";
  if (passwd* p = ::getpwnam(name)) return p->pw_uid;
  std::string cmd = std::string("useradd -M -r -s /usr/sbin/nologin ") + name + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return 0;
  passwd* p = ::getpwnam(name);
  return p ? p->pw_uid : 0;
}

}  // namespace

TEST(Planted, ALinkAnotherUserPutWhereTheJournalsTemporaryOnceWasIsNeverFollowed) {
  const std::string model = fresh_model("planted-tmp"), victim = temp_path("planted-tmp-victim");
  write_file_bytes(victim, {'k', 'e', 'e', 'p'});
  fs::create_symlink(victim, model + ".ggufkit-journal.tmp");
  CliRun r = run_cli("edit " + model + " --set general.name=x --in-place");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(get(model, "general.name"), "x\n");
  EXPECT_TRUE(read_file_bytes(victim) == (std::vector<uint8_t>{'k', 'e', 'e', 'p'}));
  EXPECT_TRUE(fs::is_symlink(model + ".ggufkit-journal.tmp"));
  EXPECT_FALSE(fs::exists(fs::symlink_status(model + ".ggufkit-journal")));
}

TEST(Planted, ALinkPlantedAsTheJournalIsNeitherFollowedNorApplied) {
  const std::string model = fresh_model("planted-link"), victim = temp_path("planted-link-victim");
  write_file_bytes(victim, crafted_journal(model, 64, 40, "PWNED"));
  fs::create_symlink(victim, model + ".ggufkit-journal");
  const auto before = read_file_bytes(model), planted = read_file_bytes(victim);
  CliRun edit = run_cli("edit " + model + " --set general.name=x --in-place");
  EXPECT_EQ(edit.code, 1);
  EXPECT_NE(edit.err.find("left its journal"), std::string::npos) << edit.err;
  CliRun r = run_cli("recover " + model);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("cannot open the journal (a link in its place is never followed)"), std::string::npos) << r.err;
  EXPECT_TRUE(read_file_bytes(model) == before);
  EXPECT_TRUE(read_file_bytes(victim) == planted);
}

TEST(Planted, AJournalPlantedByAnotherUserIsNotTrustedBlocksNoReadAndDiscardRemovesItOnlyFromACleanModel) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to make the other user";
  const uid_t evil = other_user();
  ASSERT_NE(evil, 0u) << "useradd failed";
  const std::string model = fresh_model("planted-user"), journal = model + ".ggufkit-journal";
  // Its "old bytes" put PWNED over the model's name, every checksum right.
  const std::string name = get(model, "general.name");
  ASSERT_GE(name.size(), 6u);
  const uint64_t at = offset_of(model, name.substr(0, name.size() - 1)), n = data_start(model);
  write_file_bytes(journal, crafted_journal(model, n, at, "PWNED"));
  ASSERT_EQ(::chown(journal.c_str(), evil, evil), 0);
  const auto before = read_file_bytes(model), planted = read_file_bytes(journal);
  CliRun r = run_cli("recover " + model);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("is owned by user " + std::to_string(evil) + ", neither root nor the owner of " + model +
                       " (user 0) nor you: it is not trusted and not applied"),
            std::string::npos) << r.err;
  EXPECT_TRUE(read_file_bytes(model) == before);
  EXPECT_TRUE(read_file_bytes(journal) == planted);
  // Nor does it block reads of the model (it did: every read said "run 'ggufkit recover'",
  // which refuses it), nor an edit's.
  EXPECT_EQ(get(model, "general.name"), name);
  CliRun dry = run_cli("edit " + model + " --set general.name=x --dry-run");
  EXPECT_EQ(dry.code, 0) << dry.err;
  // The way out: the model reads clean without it, so --discard removes it, changing nothing else.
  CliRun d = run_cli("recover --discard " + model);
  EXPECT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(d.out, model + ": reads clean; its journal was removed without being applied\n");
  EXPECT_FALSE(fs::exists(journal));
  EXPECT_TRUE(read_file_bytes(model) == before);
  EXPECT_EQ(get(model, "general.name"), name);
}

TEST(Planted, AJournalWhoseRangeRunsIntoTheTensorDataIsRefusedAndTheFileKept) {
  // Trusted by its owner (root, or you), but its "header" runs to the end of the file: the
  // old bytes would land in the tensor data. The header must end where the journal says.
  const std::string model = fresh_model("planted-range"), journal = model + ".ggufkit-journal";
  const uint64_t size = fs::file_size(model), start = data_start(model);
  write_file_bytes(journal, crafted_journal(model, size, start + 16, "PWNED"));
  const auto before = read_file_bytes(model);
  CliRun r = run_cli("recover " + model);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("its range (5 bytes at " + std::to_string(start + 16) + ") runs past the end of the file's header (byte " +
                       std::to_string(start) + "): it would be written outside it"),
            std::string::npos) << r.err;
  EXPECT_TRUE(read_file_bytes(model) == before);
  EXPECT_TRUE(fs::exists(journal));
}

TEST(Planted, AJournalThatWouldCutAModelWithTensorsToAnotherLengthIsRefusedAndTheFileKept) {
  // A second journal's head (a header that changes its length, which only a file that is
  // all header may): every checksum right, its "new header" the model's first bytes, so
  // that rolling it forward would cut the model to 4 KiB. The model holds tensors: refused.
  const std::string model = fresh_model("planted-resize"), journal = model + ".ggufkit-journal";
  const std::vector<uint8_t> file = read_file_bytes(model);
  struct stat st {};
  ::stat(model.c_str(), &st);
  const uint64_t size = file.size(), n_new = 4096, at = n_new;
  std::vector<uint8_t> j;
  const std::string magic = "GGUFKIT-JOURNAL2";
  j.insert(j.end(), magic.begin(), magic.end());
  for (uint64_t v : {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), size, n_new, size, n_new,
                     static_cast<uint64_t>(XXH64(file.data(), size, 0)), static_cast<uint64_t>(XXH64(file.data(), n_new, 0)), at,
                     size - at, uint64_t{0}})
    put_u64(j, v);
  j.insert(j.end(), file.begin() + static_cast<long>(at), file.end());  // the old bytes: the model's own
  put_u64(j, XXH64(j.data(), j.size(), 0));
  write_file_bytes(journal, j);
  CliRun r = run_cli("recover " + model);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("it would change the length of a file that holds tensors"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("neither it nor " + model + " was changed"), std::string::npos) << r.err;
  EXPECT_TRUE(read_file_bytes(model) == file);
  EXPECT_TRUE(fs::exists(journal));
}

TEST(Planted, AJournalWhoseOldHeaderDoesNotReadIsUndoneAndTheFileKept) {
  // Its range lies in the header, but its "old bytes" make the name's length absurd: once
  // written the file must read clean, so they are taken out again.
  const std::string model = fresh_model("planted-unread"), journal = model + ".ggufkit-journal";
  const std::string name = get(model, "general.name");
  const uint64_t at = offset_of(model, name.substr(0, name.size() - 1)) - 8, start = data_start(model);
  write_file_bytes(journal, crafted_journal(model, start, at + 4, std::string(4, '\xff')));
  const auto before = read_file_bytes(model);
  CliRun r = run_cli("recover " + model);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("the old header it holds does not read ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("); the file is as it was"), std::string::npos) << r.err;
  EXPECT_TRUE(read_file_bytes(model) == before);
  EXPECT_TRUE(fs::exists(journal));
}

TEST(Planted, AJunkJournalOfTwoGiBIsRefusedWithoutReadingItIntoMemory) {
#ifdef GGUFKIT_SANITIZED
  GTEST_SKIP() << "ulimit -v under ASan";
#endif
  const std::string model = fresh_model("planted-junk"), journal = model + ".ggufkit-journal";
  // Its head is right (this file, a range of a GiB), its bytes zeros: a sparse file.
  std::vector<uint8_t> head = crafted_journal(model, 64, 40, "x");
  const uint64_t len = (1ull << 30) - 44;
  std::memcpy(head.data() + 72, &len, 8);
  head.resize(80);
  write_file_bytes(journal, head);
  fs::resize_file(journal, 80 + 2 * len + 8);
  EXPECT_EQ(fs::file_size(journal), 2ull << 30);
  CliRun r = run_cli("recover " + model, "ulimit -v 65536;");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("its size (2147483648 bytes) is more than a journal of " + model + " can be"), std::string::npos)
      << r.err;
}

TEST(Locks, AnEditWaitsForALockAnotherProcessHoldsThenRefusesNamingIt) {
  const std::string model = fresh_model("lock-held");
  const auto before = read_file_bytes(model);
  int fd = ::open(model.c_str(), O_RDONLY);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);  // as another edit holds it
  const std::string who = "is locked by process " + std::to_string(::getpid()) + " (ggufkit_tests)";
  CliRun edit = run_cli("edit " + model + " --eos-token-id 0 --in-place", "GGUFKIT_LOCK_TIMEOUT=0.2 ");
  EXPECT_EQ(edit.code, 3);
  EXPECT_NE(edit.err.find(who + " reading or writing it; waited 200 ms (GGUFKIT_LOCK_TIMEOUT), nothing was done"),
            std::string::npos) << edit.err;
  CliRun show = run_cli("show " + model, "GGUFKIT_LOCK_TIMEOUT=0.2 ");  // a reader waits for a writer too
  EXPECT_EQ(show.code, 3);
  EXPECT_NE(show.err.find(who + " writing it; waited 200 ms"), std::string::npos) << show.err;
  CliRun whole = run_cli("edit " + model + " --set general.name=" + std::string(400, 'n') + " --in-place",
                         "GGUFKIT_LOCK_TIMEOUT=0.2 ");
  EXPECT_EQ(whole.code, 3);
  EXPECT_TRUE(read_file_bytes(model) == before);
  // A shared lock (a reader) lets readers through and keeps writers out.
  ASSERT_EQ(::flock(fd, LOCK_SH), 0);
  EXPECT_EQ(run_cli("show " + model, "GGUFKIT_LOCK_TIMEOUT=0.2 ").code, 0);
  EXPECT_EQ(run_cli("edit " + model + " --eos-token-id 0 --in-place", "GGUFKIT_LOCK_TIMEOUT=0.2 ").code, 3);
  ::close(fd);
  EXPECT_EQ(run_cli("edit " + model + " --eos-token-id 0 --in-place").code, 0);
  EXPECT_EQ(get(model, "tokenizer.ggml.eos_token_id"), "0\n");
}

TEST(Locks, ThirtyPairsOfInPlaceEditsStartedAtOnceEachEndWithBothEdits) {
  // A name 2 bytes longer and an eos id, as the audit raced them: with the lock the second
  // waits for the first and reads what it wrote.
  const std::string dir = temp_path("lock-race");
  fs::create_directories(dir);
  const std::string name = get(fresh_model("lock-race-name"), "general.name");
  const std::string longer = name.substr(0, name.size() - 1) + "xy";
  int both = 0;
  for (int i = 0; i < 30; ++i) {
    const std::string model = fresh_model("lock-race/" + std::to_string(i));
    const std::string a = std::string(GGUFKIT_BIN) + " edit " + model + " --set 'general.name=" + longer + "' --in-place";
    const std::string b = std::string(GGUFKIT_BIN) + " edit " + model + " --eos-token-id 0 --in-place";
    const std::string cmd = "(" + a + " >" + model + ".a 2>&1; echo $? >" + model + ".ra) & (" + b + " >" + model +
                            ".b 2>&1; echo $? >" + model + ".rb) & wait";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    std::ifstream ra(model + ".ra"), rb(model + ".rb");
    int ca = -1, cb = -1;
    ra >> ca;
    rb >> cb;
    const std::string got_name = get(model, "general.name"), got_eos = get(model, "tokenizer.ggml.eos_token_id");
    EXPECT_TRUE(ca != 0 || got_name == longer + "\n") << i << ": the name edit exited 0 but the file has " << got_name;
    EXPECT_TRUE(cb != 0 || got_eos == "0\n") << i << ": the eos edit exited 0 but the file has " << got_eos;
    EXPECT_EQ(ca, 0) << i;
    EXPECT_EQ(cb, 0) << i;
    EXPECT_TRUE(data_start(model) == data_start(tiny_llama()));
    both += got_name == longer + "\n" && got_eos == "0\n";
    EXPECT_FALSE(fs::exists(model + ".ggufkit-journal"));
  }
  EXPECT_EQ(both, 30);
}

TEST(Replaced, AFileRenamedOverTheModelMidEditIsNotWrittenInto) {
  const std::string model = fresh_model("replaced-mv"), other = fs::path(model).parent_path().string() + "/other.gguf";
  ASSERT_EQ(run_cli("edit " + model + " --set general.name=other -o " + other).code, 0);
  const auto theirs = read_file_bytes(other);
  CliRun r = run_cli("edit " + model + " --eos-token-id 0 --in-place",
                     "GGUFKIT_FAULT='in-place:run:mv " + other + " " + model + "' ", GGUFKIT_FAULTY_BIN);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("changed since it was read (another file was put in its place, or another program wrote into it); "
                       "nothing was changed"),
            std::string::npos) << r.err;
  EXPECT_TRUE(read_file_bytes(model) == theirs);
  EXPECT_FALSE(fs::exists(model + ".ggufkit-journal"));
}

TEST(Replaced, BytesAnotherProgramWroteSinceTheReadAreNotWrittenOver) {
  const std::string model = fresh_model("replaced-dd");
  const uint64_t at = offset_of(model, "general.name");
  // Another program (gguf_set_metadata, dd) writes one byte of the header meanwhile.
  CliRun r = run_cli("edit " + model + " --eos-token-id 0 --in-place",
                     "GGUFKIT_FAULT='in-place:run:printf Z | dd of=" + model + " bs=1 seek=" + std::to_string(at) +
                         " conv=notrunc status=none' ",
                     GGUFKIT_FAULTY_BIN);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("changed since it was read"), std::string::npos) << r.err;
  auto expect = read_file_bytes(tiny_llama());
  expect[at] = 'Z';
  EXPECT_TRUE(read_file_bytes(model) == expect);
}

namespace {
// Every pair as text, copied out of the model.
std::string every_pair(const ggufkit::Model& m) {
  std::string out;
  for (const ggufkit::KV& kv : m.metadata) {
    out += kv.key + "=" + std::to_string(static_cast<int>(kv.value.type)) + ":" + std::to_string(kv.value.bits) + ":" + kv.value.str;
    kv.value.each([&](const ggufkit::Value& v) {
      out += "|" + v.str + std::to_string(v.bits);
      return true;
    });
    out += "\n";
  }
  return out;
}
}  // namespace

TEST(Readers, AModelReadIsACopySoBytesWrittenOrCutLaterNeverReachIt) {
  const std::string model = fresh_model("reader-copy");
  // In a child process (_exit: the parent's temporary folder stays), so a reader that
  // faults fails this test and not the whole run.
  EXPECT_EXIT(
      {
        ggufkit::Scanned s = ggufkit::scan(ggufkit::open_file(model));
        const std::string before = every_pair(s.model);
        // Another program fills the header with 0xff (every length now absurd), then cuts the file.
        int fd = ::open(model.c_str(), O_RDWR);
        std::vector<uint8_t> junk(static_cast<size_t>(s.layout.data_offset) - 24, 0xff);
        if (::pwrite(fd, junk.data(), junk.size(), 24) != static_cast<ssize_t>(junk.size())) ::_exit(3);
        if (::ftruncate(fd, 100) != 0) ::_exit(4);
        ::close(fd);
        ::_exit(every_pair(s.model) == before && before.size() > 100000 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(Readers, DumpAndMetaDuringTwentyRoundsOfInPlaceEditsNeverCrash) {
  const std::string model = fresh_model("reader-race");
  const std::string bin = GGUFKIT_BIN;
  std::string edits, reads;
  for (int i = 0; i < 20; ++i) {
    edits += bin + " edit " + model + " --set general.name=" + std::string(i % 2 ? 3 : 9, 'a' + i % 26) + " --in-place >/dev/null 2>&1; ";
    reads += bin + " dump " + model + " >/dev/null 2>>" + model + ".err; echo $? >>" + model + ".rc; " + bin + " meta --full " +
             model + " >/dev/null 2>>" + model + ".err; echo $? >>" + model + ".rc; ";
  }
  ASSERT_EQ(std::system(("(" + edits + ") & (" + reads + ") & wait").c_str()), 0);
  std::ifstream rc(model + ".rc");
  int code = 0, n = 0, ok = 0;
  while (rc >> code) {
    ++n;
    EXPECT_LT(code, 128) << "a reader died by a signal";
    ok += code == 0;
  }
  EXPECT_EQ(n, 40);
  const auto err = read_file_bytes(model + ".err");
  EXPECT_EQ(ok, 40) << std::string(err.begin(), err.end());
  EXPECT_EQ(get(model, "general.name"), std::string(3, 'a' + 19) + "\n");
}

TEST(SetRenames, ASetKilledBetweenTwoRenamesIsRefusedUntilRecoverFinishesIt) {
  const std::string dir = temp_path("set-kill");
  fs::create_directories(dir);
  ASSERT_EQ(run_cli("split " + tiny_llama() + " -o " + dir + "/m --max-tensors 8").code, 0);
  auto shard = [&](int k) { return dir + "/m-0000" + std::to_string(k) + "-of-00003.gguf"; };
  // What the edit gives when it is not cut short.
  ASSERT_EQ(run_cli("edit " + shard(1) + " --alignment 64 -o " + dir + "/want").code, 0);
  CliRun k = run_cli("edit " + shard(2) + " --alignment 64 --in-place", "GGUFKIT_FAULT=set-renamed:kill ", GGUFKIT_FAULTY_BIN);
  EXPECT_EQ(k.code, 128 + 9);
  EXPECT_NE(k.err.find("fault point set-renamed reached"), std::string::npos) << k.err;
  // Shard 1 is new, shards 2 and 3 old: every command refuses each of them, validate too.
  EXPECT_TRUE(read_file_bytes(shard(1)) == read_file_bytes(dir + "/want-00001-of-00003.gguf"));
  EXPECT_FALSE(read_file_bytes(shard(2)) == read_file_bytes(dir + "/want-00002-of-00003.gguf"));
  for (int i = 1; i <= 3; ++i) {
    CliRun v = run_cli("validate " + shard(i));
    EXPECT_EQ(v.code, 1) << shard(i);
    EXPECT_NE(v.err.find("was interrupted and left its journal"), std::string::npos) << v.err;
  }
  CliRun again = run_cli("edit " + shard(1) + " --alignment 64 --in-place");
  EXPECT_EQ(again.code, 1);
  // Given by a relative name, from the set's folder.
  CliRun r = run_cli("recover m-00003-of-00003.gguf", "cd " + dir + " && ");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "m-00003-of-00003.gguf: the set's renames were cut short; every new shard is now in place\n");
  for (int i = 1; i <= 3; ++i)
    EXPECT_TRUE(read_file_bytes(shard(i)) == read_file_bytes(dir + "/want-0000" + std::to_string(i) + "-of-00003.gguf")) << i;
  CliRun v = run_cli("validate " + shard(1));
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  std::vector<std::string> names = files_in(dir);
  EXPECT_EQ(names.size(), 6u);  // the set and the wanted set: no journal, no new file left
}

TEST(Journal, ValidateRefusesAFileWithAJournalAndAKillLeavesNoTemporaryName) {
  const std::string model = fresh_model("journal-validate");
  CliRun k = run_cli("edit " + model + " --eos-token-id 0 --in-place", "GGUFKIT_FAULT=journal-written:kill ", GGUFKIT_FAULTY_BIN);
  EXPECT_EQ(k.code, 128 + 9);
  EXPECT_EQ(files_in(fs::path(model).parent_path().string()),
            (std::vector<std::string>{"model.gguf", "model.gguf.ggufkit-journal"}));
  CliRun v = run_cli("validate " + model);
  EXPECT_EQ(v.code, 1);
  EXPECT_NE(v.err.find("left its journal, " + model + ".ggufkit-journal; run 'ggufkit recover " + model + "' to finish it first"),
            std::string::npos) << v.err;
  EXPECT_EQ(run_cli("recover " + model).out, model + ": the edit was cut short; the old header is back\n");
  EXPECT_TRUE(read_file_bytes(model) == read_file_bytes(tiny_llama()));
  EXPECT_EQ(files_in(fs::path(model).parent_path().string()), (std::vector<std::string>{"model.gguf"}));
}

TEST(Journal, AnInPlaceEditWithNoRoomForItsJournalSaysSoAndChangesNothing) {
  const std::string model = fresh_model("journal-room");
  CliRun r = run_cli("edit " + model + " --eos-token-id 0 --in-place", "GGUFKIT_FAULT=statvfs:fail:28 ", GGUFKIT_FAULTY_BIN);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("the journal needs 114 bytes beside the model and 0 are free; nothing was changed"), std::string::npos)
      << r.err;
  EXPECT_TRUE(read_file_bytes(model) == read_file_bytes(tiny_llama()));
  EXPECT_EQ(files_in(fs::path(model).parent_path().string()), (std::vector<std::string>{"model.gguf"}));
}

TEST(SetRenames, AFileGivenANewShardsHiddenNameSinceIsNotRenamedInAndAHugeSetJournalIsRefusedByItsSize) {
  const std::string dir = temp_path("set-swap");
  fs::create_directories(dir);
  ASSERT_EQ(run_cli("split " + tiny_llama() + " -o " + dir + "/m --max-tensors 8").code, 0);
  auto shard = [&](int k) { return dir + "/m-0000" + std::to_string(k) + "-of-00003.gguf"; };
  CliRun k = run_cli("edit " + shard(1) + " --alignment 64 --in-place", "GGUFKIT_FAULT=set-renamed:kill ", GGUFKIT_FAULTY_BIN);
  ASSERT_EQ(k.code, 128 + 9);
  // Someone puts another file under a waiting shard's hidden name (same name, another inode).
  std::string hidden;
  for (const std::string& n : files_in(dir))
    if (n.rfind(".ggufkit-", 0) == 0) hidden = n;
  ASSERT_FALSE(hidden.empty());
  const auto theirs = std::vector<uint8_t>{'n', 'o', 't', ' ', 'm', 'i', 'n', 'e'};
  // Made before the old one goes, then renamed over it: a file removed first may give its
  // inode number to the next file made, which would then be the same inode to recover.
  write_file_bytes(dir + "/theirs.tmp", theirs);
  fs::rename(dir + "/theirs.tmp", dir + "/" + hidden);
  const auto s2 = read_file_bytes(shard(2)), s3 = read_file_bytes(shard(3));
  CliRun r = run_cli("recover " + shard(1));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(dir + "/" + hidden + " is not the new file the set's journal recorded; nothing was changed"),
            std::string::npos) << r.err;
  EXPECT_TRUE(read_file_bytes(shard(2)) == s2);
  EXPECT_TRUE(read_file_bytes(shard(3)) == s3);
  EXPECT_TRUE(read_file_bytes(dir + "/" + hidden) == theirs);
  // A set's journal of 2 MiB is refused by its size, before it is read.
  const std::string j = shard(2) + ".ggufkit-journal";
  std::vector<uint8_t> head = read_file_bytes(j);
  head.resize(16);
  write_file_bytes(j, head);
  fs::resize_file(j, 2u << 20);
  CliRun big = run_cli("recover " + shard(2));
  EXPECT_EQ(big.code, 1);
  EXPECT_NE(big.err.find("is 2097152 bytes, more than a set's journal can be"), std::string::npos) << big.err;
}
