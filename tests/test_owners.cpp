// Who owns what ggufkit writes: a replaced file (--in-place, or -o --force over an existing
// one) keeps its owner, group, mode and extended attributes; a new file gets the input's
// mode less the umask, as cp gives it. The owner cases need root (CI runs as root).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "helpers.h"

using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

struct stat stat_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st;
}

// The user.* attribute `name` of `path`, or "(none)".
std::string xattr_of(const std::string& path, const char* name) {
  char buf[256];
  ssize_t n = ::getxattr(path.c_str(), name, buf, sizeof buf);
  return n < 0 ? "(none)" : std::string(buf, static_cast<size_t>(n));
}

// A folder anyone may enter, with the tiny llama in it, for the cases that run as another
// user (the test's own temporary folder is private).
struct OpenFolder {
  std::string dir;
  OpenFolder() {
    char tmpl[] = "/tmp/ggufkit-owners-XXXXXX";
    dir = ::mkdtemp(tmpl);
    fs::permissions(dir, fs::perms::all);
  }
  ~OpenFolder() { fs::remove_all(dir); }
};

}  // namespace

TEST(Owners, AnInPlaceEditAsRootKeepsOwnerGroupModeAndAttributes) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to give the file another owner";
  std::string dir = temp_path("owners-in-place");
  fs::create_directories(dir);
  for (const char* how : {"--in-place --whole-file", "--force -o"}) {
    SCOPED_TRACE(how);
    std::string model = dir + "/model.gguf", target = std::string(how) == "--in-place --whole-file" ? model : dir + "/out.gguf";
    fs::copy_file(tiny_llama(), model, fs::copy_options::overwrite_existing);
    if (target != model) write_file_bytes(target, {1, 2, 3});
    ASSERT_EQ(::chown(target.c_str(), 65534, 65534), 0);
    ASSERT_EQ(::chmod(target.c_str(), 0640), 0);
    bool xattrs = ::setxattr(target.c_str(), "user.ggufkit.test", "kept", 4, 0) == 0;
    if (!xattrs) {
      ASSERT_EQ(errno, ENOTSUP) << "setxattr";
    }

    CliRun r = run_cli("edit " + model + " --set general.name=owned " + how + (target == model ? "" : " " + target));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err.find("note:"), std::string::npos) << r.err;
    struct stat st = stat_of(target);
    EXPECT_EQ(st.st_uid, 65534u);
    EXPECT_EQ(st.st_gid, 65534u);
    EXPECT_EQ(st.st_mode & 07777, 0640u);
    if (xattrs) {
      EXPECT_EQ(xattr_of(target, "user.ggufkit.test"), "kept");
    }
    EXPECT_NE(run_cli("meta " + target).out.find("owned"), std::string::npos);
    EXPECT_EQ(files_in(dir), target == model ? (std::vector<std::string>{"model.gguf"})
                                             : (std::vector<std::string>{"model.gguf", "out.gguf"}));
    fs::remove(target);
  }
}

TEST(Owners, ANewOutputGetsTheInputsModeLessTheUmask) {
  std::string dir = temp_path("owners-umask");
  fs::create_directories(dir);
  std::string model = dir + "/model.gguf";
  fs::copy_file(tiny_llama(), model);
  struct Case {
    mode_t input;
    const char* umask;
    mode_t want;
  };
  for (Case c : {Case{0666, "077", 0600}, Case{0666, "022", 0644}, Case{0640, "022", 0640}, Case{0777, "027", 0750},
                 Case{04755, "022", 0755}}) {
    SCOPED_TRACE(std::to_string(c.input) + " under umask " + c.umask);
    ASSERT_EQ(::chmod(model.c_str(), c.input), 0);
    std::string out = dir + "/out.gguf";
    CliRun r = run_cli("rewrite " + model + " -o " + out, std::string("umask ") + c.umask + "; ");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(stat_of(out).st_mode & 07777, c.want);
    EXPECT_EQ(stat_of(model).st_mode & 07777, c.input);  // the source is as it was
    fs::remove(out);
  }
  // Files made from nothing (write, example, dump) get 0666 less the umask, as open() gives.
  for (std::string args : {std::string("example"), "dump " + model, "write " + std::string(GGUFKIT_SOURCE) + "/examples/sketch-408.yaml"}) {
    SCOPED_TRACE(args);
    std::string out = dir + "/made";
    ASSERT_EQ(run_cli(args + " -o " + out, "umask 077; ").code, 0);
    EXPECT_EQ(stat_of(out).st_mode & 07777, 0600u);
    fs::remove(out);
    ASSERT_EQ(run_cli(args + " -o " + out, "umask 002; ").code, 0);
    EXPECT_EQ(stat_of(out).st_mode & 07777, 0664u);
    fs::remove(out);
  }
}

TEST(Owners, AUserWhoCannotKeepTheOwnerIsToldSo) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to act as another user";
  if (std::system("command -v setpriv >/dev/null") != 0) GTEST_SKIP() << "no setpriv here";
  // Root's world-writable file in a folder anyone may write: user 65534 may replace it, and
  // the new file is theirs, not root's; the edit goes through and says what it could not keep.
  OpenFolder f;
  std::string bin = f.dir + "/ggufkit", model = f.dir + "/model.gguf";
  fs::copy_file(GGUFKIT_BIN, bin);
  fs::copy_file(tiny_llama(), model);
  ASSERT_EQ(::chmod(model.c_str(), 0666), 0);
  CliRun r = run_cli("edit " + model + " --set general.name=theirs --in-place --whole-file",
                     "setpriv --reuid=65534 --regid=65534 --clear-groups ", bin);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("ggufkit: note: " + model + ": the owner 0:0 could not be kept (Operation not permitted); "
                       "the file is now owned by 65534:65534"),
            std::string::npos) << r.err;
  struct stat st = stat_of(model);
  EXPECT_EQ(st.st_uid, 65534u);
  EXPECT_EQ(st.st_mode & 07777, 0666u);  // the mode is kept
  EXPECT_EQ(files_in(f.dir), (std::vector<std::string>{"ggufkit", "model.gguf"}));
}
