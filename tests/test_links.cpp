// Edits of files that have more than one name: a symbolic link into a content-addressed
// store (a Hugging Face cache's blobs/<sha256>, linked from each snapshot; Ollama's
// blobs/sha256-<hex>) is never rewritten in place, since its name is its content's digest
// and every other link shares it; any other link is followed and the note names the file
// edited; hard links are told which bytes their other names see; and -o over a link
// replaces the link, not the file it names.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "ggufkit/edit.h"
#include "ggufkit/hash.h"
#include "ggufkit/scan.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

std::string sha256_of(const std::string& path) {
  const std::vector<uint8_t> b = read_file_bytes(path);
  return sha256_hex(b.data(), b.size());
}

std::string name_of(const std::string& model) { return scan_file(model).model.find("general.name")->str; }

struct stat lstat_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

// A Hugging Face cache as `huggingface-cli download` leaves it: the model once, as
// blobs/<its sha256>, and two snapshots linking it by a relative link.
struct HubCache {
  std::string repo, blob, digest, snap1, snap2;
  std::vector<uint8_t> bytes;
  explicit HubCache(const std::string& name) {
    repo = temp_path(name) + "/models--tiny--llama";
    fs::remove_all(repo);
    fs::create_directories(repo + "/blobs");
    bytes = read_file_bytes(tiny_llama());
    digest = sha256_hex(bytes.data(), bytes.size());
    blob = repo + "/blobs/" + digest;
    write_file_bytes(blob, bytes);
    ::chmod(blob.c_str(), 0644);
    for (const char* rev : {"1111aaaa", "2222bbbb"}) {
      fs::create_directories(repo + "/snapshots/" + rev);
      fs::create_symlink("../../blobs/" + digest, repo + "/snapshots/" + rev + "/model.gguf");
    }
    snap1 = repo + "/snapshots/1111aaaa/model.gguf";
    snap2 = repo + "/snapshots/2222bbbb/model.gguf";
  }
  // The blob as it was, still named by its content, linked from both snapshots; nothing else.
  void expect_whole(bool snap1_linked = true) const {
    EXPECT_EQ(read_file_bytes(blob), bytes);
    EXPECT_EQ(sha256_of(blob), digest);
    EXPECT_EQ(files_in(repo + "/blobs"), std::vector<std::string>{digest});
    EXPECT_EQ(fs::read_symlink(snap2).string(), "../../blobs/" + digest);
    EXPECT_EQ(files_in(repo + "/snapshots/2222bbbb"), std::vector<std::string>{"model.gguf"});
    EXPECT_EQ(files_in(repo + "/snapshots/1111aaaa"), std::vector<std::string>{"model.gguf"});
    if (snap1_linked) {
      EXPECT_EQ(fs::read_symlink(snap1).string(), "../../blobs/" + digest);
    }
  }
};

}  // namespace

TEST(SharedCaches, AnInPlaceEditOfAHubSnapshotIsRefusedAndTheBlobKeepsItsDigest) {
  HubCache hub("hub-refused");
  const std::string target = hub.repo + "/snapshots/1111aaaa/../../blobs/" + hub.digest;
  for (const char* how : {"--in-place", "--in-place --whole-file", "--in-place --header-only", "--in-place --dry-run"}) {
    SCOPED_TRACE(how);
    CliRun r = run_cli("edit " + hub.snap1 + " --set general.name=x " + how);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "ggufkit: error: " + hub.snap1 + ": is a symbolic link to " + target +
                         ", a blob of a Hugging Face cache (its name is its content's SHA-256): an edit in place would "
                         "change it under every other link to it, and its name would no longer be its content's digest; "
                         "nothing was written; write the edited model to a new file with -o OUT, or give --in-place "
                         "--break-link to put the edited file in place of the link, leaving the blob as it is\n");
    hub.expect_whole();
  }
  // realign and rewrite in place are edits too.
  for (const char* how : {"realign --alignment 64", "rewrite"}) {
    SCOPED_TRACE(how);
    EXPECT_EQ(run_cli(std::string(how) + " " + hub.snap2 + " --in-place").code, 2);
    hub.expect_whole();
  }
  // The library says what is wrong and names no option; the refusal has its own reason.
  EditRequest req;
  req.input = hub.snap1;
  req.in_place = true;
  req.patch.add_set("general.name", "x");
  try {
    edit(req);
    FAIL() << "not refused";
  } catch (const EditRefused& e) {
    EXPECT_EQ(e.reason, EditRefused::Reason::content_store);
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_EQ(e.message.find(" --"), std::string::npos) << e.message;  // (the repo folder has "--" in its name)
    EXPECT_EQ(e.message.find(" -o "), std::string::npos) << e.message;
  }
  hub.expect_whole();
}

TEST(SharedCaches, ABlobNamedItselfIsNotEditedInPlaceEvenWithBreakLink) {
  // Not through a snapshot's link but by its own name: the same file every link names, and
  // its name its digest. (It was edited in place: only links were looked at.)
  HubCache hub("hub-blob-itself");
  for (const char* how : {"--in-place", "--in-place --break-link"}) {
    SCOPED_TRACE(how);
    CliRun r = run_cli("edit " + hub.blob + " --set general.name=x " + how);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "ggufkit: error: " + hub.blob +
                         ": is a blob of a Hugging Face cache (its name is its content's SHA-256): an edit in place would change "
                         "it under every link to it, and its name would no longer be its content's digest; nothing was written; "
                         "write the edited model to a new file with -o OUT\n");
    hub.expect_whole();
  }
  // Written elsewhere, it is read as any file.
  CliRun o = run_cli("edit " + hub.blob + " --set general.name=x -o " + hub.repo + "/edited.gguf");
  EXPECT_EQ(o.code, 0) << o.err;
  hub.expect_whole();
}

TEST(SharedCaches, BreakLinkGivesTheSnapshotAnEditedFileAndLeavesTheBlobAndTheOtherSnapshot) {
  HubCache hub("hub-break");
  CliRun r = run_cli("edit " + hub.snap1 + " --set general.name=x --in-place --break-link", "umask 022; ");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote the whole file (the link is replaced by the edited file; the file it names is left as it is)\n"),
            std::string::npos) << r.out;
  EXPECT_EQ(r.err, "ggufkit: note: " + hub.snap1 + ": is a symbolic link (to ../../blobs/" + hub.digest +
                       "): it is replaced by the new file, and the file it names is left as it was\n");
  const struct stat st = lstat_of(hub.snap1);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(st.st_uid, ::geteuid());
  EXPECT_EQ(st.st_nlink, 1u);
  EXPECT_EQ(name_of(hub.snap1), "x");
  EXPECT_EQ(name_of(hub.snap2), name_of(tiny_llama()));
  hub.expect_whole(false);
  EXPECT_EQ(files_in(hub.repo + "/snapshots/1111aaaa"), std::vector<std::string>{"model.gguf"});  // no journal, no temporary
  // The edited file is now the snapshot's own: a second edit in place goes into it, refused no more.
  CliRun again = run_cli("edit " + hub.snap1 + " --set general.name=y --in-place");
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.err, "");
  EXPECT_EQ(name_of(hub.snap1), "y");
  hub.expect_whole(false);
  // A dry run says what it would write; break_link is for edits in place.
  CliRun dry = run_cli("edit " + hub.snap2 + " --set general.name=x --in-place --break-link --dry-run");
  ASSERT_EQ(dry.code, 0) << dry.err;
  EXPECT_NE(dry.out.find("would write the whole file (the link is replaced by the edited file; the file it names is left as it is)\n"),
            std::string::npos) << dry.out;
  EXPECT_EQ(run_cli("edit " + hub.snap2 + " --set general.name=x -o " + temp_path("break-out.gguf") + " --break-link").code, 2);
  EXPECT_TRUE(fs::is_symlink(hub.snap2));
  hub.expect_whole(false);
}

TEST(SharedCaches, AnOllamaBlobIsRefusedToo) {
  const std::string dir = temp_path("ollama");
  fs::remove_all(dir);
  fs::create_directories(dir + "/models/blobs");
  const std::vector<uint8_t> bytes = read_file_bytes(tiny_llama());
  const std::string digest = sha256_hex(bytes.data(), bytes.size());
  const std::string blob = dir + "/models/blobs/sha256-" + digest, link = dir + "/tiny.gguf";
  write_file_bytes(blob, bytes);
  fs::create_symlink(blob, link);
  CliRun r = run_cli("edit " + link + " --set general.name=x --in-place");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "ggufkit: error: " + link + ": is a symbolic link to " + blob +
                       ", an Ollama blob (its name is its content's SHA-256): an edit in place would change it under every "
                       "other link to it, and its name would no longer be its content's digest; nothing was written; write "
                       "the edited model to a new file with -o OUT, or give --in-place --break-link to put the edited file in "
                       "place of the link, leaving the blob as it is\n");
  EXPECT_EQ(read_file_bytes(blob), bytes);
  EXPECT_EQ(sha256_of(blob), digest);
  EXPECT_EQ(files_in(dir + "/models/blobs"), std::vector<std::string>{"sha256-" + digest});
  EXPECT_TRUE(fs::is_symlink(link));
  // -o leaves the blob alone and needs no more than that.
  CliRun out = run_cli("edit " + link + " --set general.name=x -o " + dir + "/edited.gguf");
  ASSERT_EQ(out.code, 0) << out.err;
  EXPECT_EQ(name_of(dir + "/edited.gguf"), "x");
  EXPECT_EQ(sha256_of(blob), digest);
}

TEST(SharedCaches, ALinkOutsideAStoreIsEditedAndTheNoteNamesTheFileEdited) {
  const std::string dir = temp_path("plain-link");
  fs::remove_all(dir);
  fs::create_directories(dir + "/blobs");
  // Not a store: a blobs/ folder whose names are no digest, and a digest's name in another folder.
  const std::string hex(64, 'a');
  for (const std::string& file : {dir + "/model.gguf", dir + "/blobs/model.gguf", dir + "/" + hex}) {
    SCOPED_TRACE(file);
    fs::copy_file(tiny_llama(), file, fs::copy_options::overwrite_existing);
    const std::string link = dir + "/link.gguf";
    fs::remove(link);
    fs::create_symlink(file, link);
    CliRun r = run_cli("edit " + link + " --set general.name=edited --in-place");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err, "ggufkit: note: " + link + ": is a symbolic link: the edit in place is made to the file it names, " + file + "\n");
    EXPECT_TRUE(fs::is_symlink(link));
    EXPECT_EQ(name_of(file), "edited");
  }
}

TEST(SharedCaches, HardLinksAreToldWhetherTheirOtherNamesSeeTheEdit) {
  const std::string dir = temp_path("hard-links");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string a = dir + "/a.gguf", b = dir + "/b.gguf";
  fs::copy_file(tiny_llama(), a);
  fs::create_hard_link(a, b);
  // The header in place: written into the one file both names share.
  CliRun header = run_cli("edit " + a + " --set general.name=x --in-place");
  ASSERT_EQ(header.code, 0) << header.err;
  EXPECT_NE(header.out.find("wrote the header alone, in place"), std::string::npos) << header.out;
  EXPECT_EQ(header.err, "ggufkit: note: " + a +
                            ": has 2 names (hard links); the header is written into the file itself, so the other name sees the "
                            "new bytes too\n");
  EXPECT_EQ(name_of(b), "x");
  EXPECT_EQ(lstat_of(a).st_ino, lstat_of(b).st_ino);
  // The whole file: a new file under this name; the other name keeps the old one.
  CliRun whole = run_cli("edit " + a + " --set general.name=y --in-place --whole-file");
  ASSERT_EQ(whole.code, 0) << whole.err;
  EXPECT_EQ(whole.err, "ggufkit: note: " + a +
                           ": has 2 names (hard links); the whole file is replaced under this name by a new one, so the other "
                           "name keeps the old bytes\n");
  EXPECT_EQ(name_of(a), "y");
  EXPECT_EQ(name_of(b), "x");
  EXPECT_EQ(lstat_of(a).st_nlink, 1u);
  EXPECT_EQ(lstat_of(b).st_nlink, 1u);
  // Three names: the count is said.
  fs::create_hard_link(b, dir + "/c.gguf");
  fs::create_hard_link(b, dir + "/d.gguf");
  CliRun three = run_cli("edit " + b + " --set general.name=z --in-place --dry-run");
  ASSERT_EQ(three.code, 0) << three.err;
  EXPECT_EQ(three.err, "ggufkit: note: " + b +
                           ": has 3 names (hard links); the header is written into the file itself, so the other names see the "
                           "new bytes too\n");
}

// -o names the file to write: a link there is replaced by a new file of the caller's, as mv,
// install and sed -i replace it, not written through as cp writes: writing through would
// change what every other name of the file it names holds (a cache's blob) and, in a shared
// folder, replace another user's file with one still owned by them.
TEST(SharedCaches, AForcedOutputOverALinkReplacesTheLinkAndLeavesTheFileItNames) {
  const std::string dir = temp_path("force-link");
  fs::remove_all(dir);
  fs::create_directories(dir + "/elsewhere");
  const std::string model = dir + "/model.gguf", target = dir + "/elsewhere/theirs.gguf", out = dir + "/out.gguf";
  fs::copy_file(tiny_llama(), model);
  ::chmod(model.c_str(), 0644);
  write_file_bytes(target, {1, 2, 3});
  ::chmod(target.c_str(), 0600);
  const bool root = ::geteuid() == 0;
  if (root) {
    ASSERT_EQ(::chown(target.c_str(), 65534, 65534), 0);
  }
  const bool xattrs = ::setxattr(target.c_str(), "user.ggufkit.test", "theirs", 6, 0) == 0;
  fs::create_symlink("elsewhere/theirs.gguf", out);
  CliRun refused = run_cli("edit " + model + " --set general.name=x -o " + out);
  EXPECT_EQ(refused.code, 2);
  EXPECT_TRUE(fs::is_symlink(out));
  CliRun r = run_cli("edit " + model + " --set general.name=x -o " + out + " --force", "umask 022; ");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "ggufkit: note: " + out +
                       ": is a symbolic link (to elsewhere/theirs.gguf): it is replaced by the new file, and the file it names "
                       "is left as it was\n");
  const struct stat st = lstat_of(out);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0644u);  // the input's mode less the umask, as any new output
  EXPECT_EQ(st.st_uid, ::geteuid());
  EXPECT_EQ(st.st_gid, ::getegid());
  char buf[16];
  EXPECT_LT(::getxattr(out.c_str(), "user.ggufkit.test", buf, sizeof buf), 0);
  EXPECT_EQ(name_of(out), "x");
  // The file the link named is as it was: its bytes, owner, mode and attributes.
  const struct stat was = lstat_of(target);
  EXPECT_EQ(read_file_bytes(target), (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(was.st_mode & 07777, 0600u);
  if (root) {
    EXPECT_EQ(was.st_uid, 65534u);
  }
  if (xattrs) {
    EXPECT_EQ(::getxattr(target.c_str(), "user.ggufkit.test", buf, sizeof buf), 6);
  }
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"elsewhere", "model.gguf", "out.gguf"}));
  EXPECT_EQ(files_in(dir + "/elsewhere"), std::vector<std::string>{"theirs.gguf"});
}

namespace {

std::string shard_in(const std::string& dir, int k) { return dir + "/m-0000" + std::to_string(k) + "-of-00003.gguf"; }

// A shard set kept as links: the tiny llama split into 3 shards, stored in `store` as blobs
// (b1..b3), and `snap` holding m-0000K-of-00003.gguf -> ../store/bK; `want` what
// --alignment 64 makes of the set.
struct LinkedSet {
  std::string root, store, snap, want;
  std::vector<std::vector<uint8_t>> blobs;
  explicit LinkedSet(const std::string& name) {
    root = temp_path(name);
    fs::remove_all(root);
    store = root + "/store", snap = root + "/snap", want = root + "/want";
    for (const std::string& d : {store, snap, want}) fs::create_directories(d);
    EXPECT_EQ(run_cli("split " + tiny_llama() + " -o " + store + "/m --max-tensors 8").code, 0);
    EXPECT_EQ(run_cli("edit " + shard_in(store, 1) + " --alignment 64 -o " + want + "/m").code, 0);
    for (int k = 1; k <= 3; ++k) {
      const std::string blob = store + "/b" + std::to_string(k);
      fs::rename(shard_in(store, k), blob);
      blobs.push_back(read_file_bytes(blob));
      fs::create_symlink("../store/b" + std::to_string(k), shard_in(snap, k));
    }
  }
  // The blobs as they were, and nothing else in the store.
  void expect_blobs_kept() const {
    EXPECT_EQ(files_in(store), (std::vector<std::string>{"b1", "b2", "b3"}));
    for (int k = 1; k <= 3; ++k) EXPECT_EQ(read_file_bytes(store + "/b" + std::to_string(k)), blobs[k - 1]) << k;
  }
  // Every shard in `dir` a regular file of one name, the new one byte for byte; nothing else there.
  // An --in-place --break-link edit of shard 1 killed at the fault point `at`.
  void kill_break_link_edit(const std::string& at) const {
    CliRun k = run_cli("edit " + shard_in(snap, 1) + " --alignment 64 --in-place --break-link",
                       "GGUFKIT_FAULT=" + at + ":kill ", GGUFKIT_FAULTY_BIN);
    ASSERT_EQ(k.code, 128 + 9) << k.err;
  }
  // Until recovered, no shard's name reads: the set is part old, part new. (Its journals lie
  // beside the links; the reader looked beside the blobs only and read the mix.)
  void expect_reads_refused() const {
    for (int k = 1; k <= 3; ++k) {
      CliRun r = run_cli("show " + shard_in(snap, k));
      EXPECT_EQ(r.code, 1) << k << ": " << r.out;
      EXPECT_NE(r.err.find("was interrupted and left its journal"), std::string::npos) << k << ": " << r.err;
    }
  }
  // recover, given shard k's link, finishes the set forward and leaves the blobs.
  void expect_recovered_from(int k) const {
    CliRun r = run_cli("recover " + shard_in(snap, k));
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, shard_in(snap, k) + ": the set's renames were cut short; every new shard is now in place\n");
    expect_new_files(snap);
    expect_blobs_kept();
  }
  void expect_new_files(const std::string& dir) const {
    EXPECT_EQ(files_in(dir), (std::vector<std::string>{"m-00001-of-00003.gguf", "m-00002-of-00003.gguf", "m-00003-of-00003.gguf"}));
    for (int k = 1; k <= 3; ++k) {
      const struct stat st = lstat_of(shard_in(dir, k));
      EXPECT_TRUE(S_ISREG(st.st_mode)) << k;
      EXPECT_EQ(st.st_nlink, 1u) << k;
      EXPECT_EQ(read_file_bytes(shard_in(dir, k)), read_file_bytes(shard_in(want, k))) << k;
    }
  }
};

}  // namespace

TEST(SharedCaches, BreakLinkReplacesEveryLinkOfAShardSetAndLeavesTheBlobsTheyNamed) {
  LinkedSet set("linked-set-break");
  CliRun r = run_cli("edit " + shard_in(set.snap, 1) + " --alignment 64 --in-place --break-link");
  ASSERT_EQ(r.code, 0) << r.err;
  set.expect_new_files(set.snap);
  set.expect_blobs_kept();
}

// -o over a set whose names are links, with --force: the links are replaced, the files
// they name are left as they were.
TEST(SharedCaches, AForcedOutputOverASetOfLinksReplacesTheLinksAndLeavesTheFilesTheyName) {
  LinkedSet set("linked-set-force");
  const std::string src = set.root + "/src";
  fs::create_directories(src);
  for (int k = 1; k <= 3; ++k) fs::copy_file(set.store + "/b" + std::to_string(k), shard_in(src, k));
  CliRun r = run_cli("edit " + shard_in(src, 1) + " --alignment 64 -o " + set.snap + "/m --force");
  ASSERT_EQ(r.code, 0) << r.err;
  set.expect_new_files(set.snap);
  set.expect_blobs_kept();
}

// A --break-link edit of a set killed once shard 1 is in: recover replaces the other
// links and removes shard 1's old link, never writing through one.
TEST(SharedCaches, ABreakLinkSetCutShortIsFinishedByRecoverAndTheBlobsAreKept) {
  LinkedSet set("linked-set-recover");
  ASSERT_NO_FATAL_FAILURE(set.kill_break_link_edit("set-renamed"));
  EXPECT_TRUE(fs::is_symlink(shard_in(set.snap, 2)));
  set.expect_reads_refused();
  set.expect_recovered_from(1);
}

// Killed once every journal is written and before any shard went in: the journals lie beside
// the links, not beside the blobs they name; recover of any shard's link finds them there.
TEST(SharedCaches, ABreakLinkSetKilledBeforeAnyShardWentInIsRecoveredFromALinksName) {
  LinkedSet set("linked-set-early");
  ASSERT_NO_FATAL_FAILURE(set.kill_break_link_edit("set-exchange"));
  for (int i = 1; i <= 3; ++i) {
    EXPECT_TRUE(fs::is_symlink(shard_in(set.snap, i))) << i;
    EXPECT_TRUE(fs::exists(shard_in(set.snap, i) + ".ggufkit-journal")) << i;
  }
  set.expect_reads_refused();
  set.expect_recovered_from(2);
}

// -o /dev/stdout and its like: a link leading into /proc, /sys or /dev/fd (followed by the
// links' texts, relative ones too: /etc/mtab is ../proc/self/mounts), or to a device or a
// folder, is refused (exit 2, nothing written, with or without --force, which is not
// suggested), never replaced by a file: as root, replacing /dev/stdout itself would break
// it for every process.
TEST(Links, ALinkToWhatIsNotARegularFileIsRefusedNotReplaced) {
  const std::string dir = fs::weakly_canonical(temp_path("links-nonregular")).string();
  fs::create_directories(dir);
  fs::create_symlink("/dev/fd/1", dir + "/to-fd");
  struct Case {
    std::string name, to, says;
  };
  const std::string relative_mounts = fs::path("/proc/self/mounts").lexically_relative(dir).string();
  for (const Case& c : {Case{"stdout", "/proc/self/fd/1", "which leads to /proc/self/fd/1, not to a file"},
                        Case{"fd", "/dev/fd/1", "which leads to /dev/fd/1, not to a file"},
                        Case{"mtab", relative_mounts, "which leads to /proc/self/mounts, not to a file"},
                        Case{"chain", "to-fd", "which leads to /dev/fd/1, not to a file"},
                        Case{"power", "/sys/power/state", "which leads to /sys/power/state, not to a file"},
                        Case{"null", "/dev/null", "which is not a regular file (a device, a pipe or a folder)"},
                        Case{"folder", dir, "which is not a regular file (a device, a pipe or a folder)"}}) {
    SCOPED_TRACE(c.to);
    const std::string link = dir + "/" + c.name;
    fs::create_symlink(c.to, link);
    // run_cli takes standard output into a file: /proc/self/fd/1 resolves to a regular file
    // then, and only the links' texts tell it is no place to write a model
    for (const char* force : {"", " --force"}) {
      CliRun r = run_cli("example -o " + link + force);
      EXPECT_EQ(r.code, 2);
      EXPECT_EQ(r.err, "ggufkit: error: " + link + ": is a symbolic link to " + c.to + ", " + c.says +
                           ": ggufkit writes only files; give a file name\n");
    }
    EXPECT_TRUE(fs::is_symlink(link));
    EXPECT_EQ(fs::read_symlink(link).string(), c.to);
  }
}
