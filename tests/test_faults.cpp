// The safe write path stopped at each of its named fault points (ggufkit/fault.h), through
// ggufkit_faulty, the test build of the program: kill -9, SIGINT, a byte corrupted after
// the flush or between reading and writing, failing system calls, and a real full disk.
// No test waits for time to pass: each fault fires at a named point, and each test checks
// that the point was reached and what is on disk after it.
#include <gtest/gtest.h>

#include <filesystem>

#include "ggufkit/scan.h"
#include "ggufkit/sketch.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

constexpr int kKilled = 128 + 9;  // what a shell reports for a child killed by SIGKILL

CliRun faulty(const std::string& args, const std::string& fault) {
  return run_cli(args, "GGUFKIT_FAULT='" + fault + "' ", GGUFKIT_FAULTY_BIN);
}

bool reached(const CliRun& r, const std::string& point) {
  return r.err.find("ggufkit: fault point " + point + " reached") != std::string::npos;
}

// What an unfaulted edit writes: what a finished edit must leave, exactly.
const std::string& expected_path() {
  static std::string out = [] {
    std::string p = temp_path("expected-edit.gguf");
    CliRun r = run_cli("edit " + tiny_llama() + " --set general.name=edited -o " + p);
    if (r.code != 0) throw std::runtime_error(r.err);
    return p;
  }();
  return out;
}
const std::vector<uint8_t>& expected_edit() {
  static std::vector<uint8_t> bytes = read_file_bytes(expected_path());
  return bytes;
}

std::vector<std::string> temporaries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& f : files_in(dir))
    if (f.rfind(".ggufkit-", 0) == 0) out.push_back(f);
  return out;
}

// The three ways an edit puts its result somewhere.
enum class Dest { fresh, replace, in_place };
const char* dest_name(Dest d) { return d == Dest::fresh ? "new -o" : d == Dest::replace ? "existing -o" : "--in-place"; }

struct Scene {
  std::string dir, src, dest, target_args;
  std::vector<uint8_t> src_before, dest_before;
};

Scene setup(const std::string& name, Dest d) {
  Scene s;
  std::tie(s.dir, s.src) = fault_dir(name, tiny_llama());
  s.src_before = read_file_bytes(s.src);
  s.dest = d == Dest::in_place ? s.src : s.dir + "/out.gguf";
  s.target_args = d == Dest::in_place ? " --in-place --whole-file" : d == Dest::replace ? " --force -o " + s.dest : " -o " + s.dest;
  if (d == Dest::replace) write_file_bytes(s.dest, {1, 2, 3});
  if (d != Dest::fresh) s.dest_before = read_file_bytes(s.dest);
  return s;
}

// The destination and the source as they were, and no file left in the folder.
void expect_nothing_changed(const Scene& s, Dest d) {
  EXPECT_TRUE(read_file_bytes(s.src) == s.src_before);
  if (d == Dest::fresh) EXPECT_FALSE(fs::exists(s.dest));
  else EXPECT_TRUE(read_file_bytes(s.dest) == s.dest_before);
  EXPECT_EQ(files_in(s.dir), d == Dest::replace ? (std::vector<std::string>{"model.gguf", "out.gguf"})
                                                : (std::vector<std::string>{"model.gguf"}));
}

const Dest kDests[] = {Dest::fresh, Dest::replace, Dest::in_place};

}  // namespace

TEST(FaultPoints, KillDashNineAtEachPointLeavesTheOldFileOrTheWholeNewOne) {
  for (const char* point : {"written", "flushed", "verified", "linked", "before-rename", "renamed"}) {
    for (Dest d : kDests) {
      SCOPED_TRACE(std::string(point) + ", " + dest_name(d));
      Scene s = setup(std::string("kill-") + point + "-" + std::to_string(static_cast<int>(d)), d);
      CliRun r = faulty("edit " + s.src + " --set general.name=edited" + s.target_args, std::string(point) + ":kill");
      std::string p = point;
      if (d == Dest::fresh && (p == "linked" || p == "before-rename")) {
        // A new destination is linked straight to its name: there is no such window to die in.
        EXPECT_EQ(r.code, 0) << r.err;
        EXPECT_FALSE(reached(r, point));
        EXPECT_TRUE(read_file_bytes(s.dest) == expected_edit());
        EXPECT_EQ(files_in(s.dir), (std::vector<std::string>{"model.gguf", "out.gguf"}));
        continue;
      }
      ASSERT_EQ(r.code, kKilled) << r.err;
      EXPECT_TRUE(reached(r, point)) << r.err;
      if (p == "renamed") {
        EXPECT_TRUE(read_file_bytes(s.dest) == expected_edit());  // whole, byte for byte
        if (d != Dest::in_place) {
          EXPECT_TRUE(read_file_bytes(s.src) == s.src_before);
        }
        EXPECT_TRUE(temporaries(s.dir).empty());
        continue;
      }
      EXPECT_TRUE(read_file_bytes(s.src) == s.src_before);
      if (d == Dest::fresh) EXPECT_FALSE(fs::exists(s.dest));
      else EXPECT_TRUE(read_file_bytes(s.dest) == s.dest_before);
      // Between naming and renaming, the finished file stays under its hidden name
      // (the documented window); before that it had no name at all.
      bool named = p == "linked" || p == "before-rename";
      auto left = temporaries(s.dir);
      ASSERT_EQ(left.size(), named ? 1u : 0u);
      if (named) {
        EXPECT_TRUE(read_file_bytes(s.dir + "/" + left[0]) == expected_edit());
        // The next write in that folder removes what the dead process left.
        CliRun next = run_cli("edit " + s.src + " --set general.name=next -o " + s.dir + "/next.gguf");
        ASSERT_EQ(next.code, 0) << next.err;
        EXPECT_TRUE(temporaries(s.dir).empty());
        fs::remove(s.dir + "/next.gguf");
      }
      expect_nothing_changed(s, d);
    }
  }
}

TEST(FaultPoints, SigintBeforeTheFileIsVerifiedChangesNothingAndAfterItFinishes) {
  for (const char* point : {"copied", "written", "flushed", "verified", "linked", "renamed"}) {
    for (Dest d : kDests) {
      std::string p = point;
      if (d == Dest::fresh && p == "linked") continue;  // not on that path (see above)
      SCOPED_TRACE(p + ", " + dest_name(d));
      Scene s = setup("int-" + p + "-" + std::to_string(static_cast<int>(d)), d);
      CliRun r = faulty("edit " + s.src + " --set general.name=edited" + s.target_args, p + ":int");
      EXPECT_TRUE(reached(r, point)) << r.err;
      if (p == "linked" || p == "renamed") {
        // Past verification the file is complete: the rename goes ahead, and says so.
        EXPECT_EQ(r.code, 0) << r.err;
        EXPECT_TRUE(read_file_bytes(s.dest) == expected_edit());
        EXPECT_TRUE(temporaries(s.dir).empty());
        continue;
      }
      EXPECT_EQ(r.code, 3);
      EXPECT_NE(r.err.find("interrupted by a signal; nothing was changed (" + s.src + " is as it was)"),
                std::string::npos) << r.err;
      expect_nothing_changed(s, d);
    }
  }
}

// The verifier reads the output back while it is being written and flushed (a second
// thread), so a byte is corrupted at `copied`: in the output, after its piece was written
// and before the verifier is handed the piece.
TEST(Verifier, AByteCorruptedInTheOutputIsCaughtNamingTheTensorAndTheByte) {
  Scanned want = scan_file(expected_path());
  const Tensor& t3 = want.model.tensors[3];
  uint64_t at = want.layout.data_offset + want.layout.tensor_offsets[3] + 5;
  for (Dest d : kDests) {
    SCOPED_TRACE(dest_name(d));
    Scene s = setup("verify-" + std::to_string(static_cast<int>(d)), d);
    CliRun r = faulty("edit " + s.src + " --set general.name=edited" + s.target_args, "copied:flip:" + std::to_string(at));
    EXPECT_TRUE(reached(r, "copied"));
    EXPECT_EQ(r.code, 3);
    EXPECT_NE(r.err.find("at byte " + std::to_string(at) + ", tensor[3] " + t3.name +
                         " (data): verification failed: byte 5 of the tensor's data (byte " + std::to_string(at) +
                         " of the file) is not what was read from the source; nothing was changed (" + s.src +
                         " is as it was)"),
              std::string::npos) << r.err;
    expect_nothing_changed(s, d);
  }
  // --no-verify means exactly this: the same corruption goes through, and only that byte differs.
  Scene s = setup("verify-off", Dest::fresh);
  CliRun r = faulty("edit " + s.src + " --set general.name=edited --no-verify -o " + s.dest, "copied:flip:" + std::to_string(at));
  ASSERT_EQ(r.code, 0) << r.err;
  auto got = read_file_bytes(s.dest);
  const auto& good = expected_edit();
  ASSERT_EQ(got.size(), good.size());
  std::vector<size_t> differ;
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != good[i]) differ.push_back(i);
  EXPECT_EQ(differ, (std::vector<size_t>{at}));
  EXPECT_EQ(got[at], static_cast<uint8_t>(good[at] ^ 0xFF));
}

TEST(Verifier, AByteChangedInAPieceThatWentThroughMemoryIsCaughtByItsChecksum) {
  // A byte order conversion turns the data over in memory: such a piece is checked against
  // the checksum taken of it there, and a mismatch names the piece and its tensor.
  Scanned want = scan_file(expected_path());
  Scene s = setup("verify-memory", Dest::fresh);
  std::string big = s.dir + "/big.gguf";
  ASSERT_EQ(run_cli("convert " + s.src + " --byte-order big -o " + big).code, 0);
  Scanned b = scan_file(big);
  uint64_t at = b.layout.data_offset + b.layout.tensor_offsets[0] + 5;
  CliRun r = faulty("convert " + big + " --byte-order little -o " + s.dest, "copied:flip:" + std::to_string(at));
  EXPECT_TRUE(reached(r, "copied"));
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find(", tensor[0] " + want.model.tensors[0].name + " (data): verification failed: the " +
                       std::to_string(want.model.tensors[0].nbytes()) + " bytes from byte " +
                       std::to_string(b.layout.data_offset) + " of the file are not what was read from the source"),
            std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(s.dest));
  // Without the fault the same conversion goes through and gives back the original bytes.
  ASSERT_EQ(run_cli("convert " + big + " --byte-order little -o " + s.dest).code, 0);
  EXPECT_TRUE(read_file_bytes(s.dest) == read_file_bytes(s.src));
}

TEST(FaultPoints, WithoutOTmpfileTheNamedFallbackWritesTheSameBytesAndCleansUp) {
  for (Dest d : kDests) {
    SCOPED_TRACE(dest_name(d));
    Scene s = setup("fallback-" + std::to_string(static_cast<int>(d)), d);
    CliRun r = faulty("edit " + s.src + " --set general.name=edited" + s.target_args, "tmpfile:fail:95");
    EXPECT_TRUE(reached(r, "tmpfile"));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(read_file_bytes(s.dest) == expected_edit());
    EXPECT_TRUE(temporaries(s.dir).empty());
    // Killed while the fallback file exists: it stays (it has a name from the start) until
    // the next write in the folder finds its process gone.
    Scene k = setup("fallback-kill-" + std::to_string(static_cast<int>(d)), d);
    r = faulty("edit " + k.src + " --set general.name=edited" + k.target_args, "tmpfile:fail:95,written:kill");
    ASSERT_EQ(r.code, kKilled) << r.err;
    EXPECT_EQ(temporaries(k.dir).size(), 1u);
    ASSERT_EQ(run_cli("edit " + k.src + " --set general.name=x -o " + k.dir + "/next.gguf").code, 0);
    fs::remove(k.dir + "/next.gguf");
    expect_nothing_changed(k, d);
    // A failure (a full disk, SIGINT) while the fallback file exists removes it at once.
    for (const char* fault : {"tmpfile:fail:95,write:fail:28", "tmpfile:fail:95,written:int"}) {
      SCOPED_TRACE(fault);
      Scene f = setup("fallback-fail-" + std::to_string(static_cast<int>(d)), d);
      r = faulty("edit " + f.src + " --set general.name=edited" + f.target_args, fault);
      EXPECT_EQ(r.code, 3) << r.err;
      expect_nothing_changed(f, d);
      fs::remove_all(f.dir);
    }
  }
}

TEST(FaultPoints, AFailingWriteOrFsyncSaysWhyAndChangesNothing) {
  for (const char* fault : {"write:fail:28", "fsync:fail:28", "write:fail:5"}) {
    for (const char* verify : {"", " --no-verify"}) {
      for (Dest d : kDests) {
        SCOPED_TRACE(std::string(fault) + verify + ", " + dest_name(d));
        Scene s = setup("fail-" + std::to_string(static_cast<int>(d)), d);
        CliRun r = faulty("edit " + s.src + " --set general.name=edited" + verify + s.target_args, fault);
        EXPECT_EQ(r.code, 3);
        std::string why = std::string(fault).back() == '8' ? "No space left on device" : "Input/output error";
        EXPECT_NE(r.err.find(why + "; nothing was changed (" + s.src + " is as it was)"), std::string::npos) << r.err;
        expect_nothing_changed(s, d);
        fs::remove_all(s.dir);
      }
    }
  }
}

TEST(FaultPoints, ARealFullDiskOnASmallTmpfsChangesNothing) {
  if (std::system("unshare -m true 2>/dev/null") != 0) GTEST_SKIP() << "no mount namespaces here (the injected ENOSPC test covers the path)";
  // A 1.2 MB model inside a 2 MB tmpfs: an in-place edit needs a second copy, which does not fit.
  std::string dir = temp_path("tmpfs");
  fs::create_directories(dir + "/mnt");
  std::string small = dir + "/small.gguf";
  write_sketch(parse_sketch("metadata: [{key: general.architecture, type: string, value: small}]\n"
                            "tensors: [{name: w, type: f32, dims: [300000], fill: {random_bytes: {seed: 4}}}]\n",
                            "small", dir),
               small);
  std::string m = dir + "/mnt";
  std::string script = "mount -t tmpfs -o size=2m tmpfs " + m + " && cp " + small + " " + m + "/model.gguf && " +
                       "{ LC_ALL=C " GGUFKIT_BIN " edit " + m + "/model.gguf --set general.name=x --in-place --whole-file 2>" + dir +
                       "/a.err; echo $? >" + dir + "/a.rc; cmp -s " + small + " " + m + "/model.gguf; echo $? >" + dir +
                       "/a.cmp; ls -A " + m + " >" + dir + "/a.ls; " +
                       "LC_ALL=C " GGUFKIT_BIN " edit " + tiny_llama() + " --set general.name=x -o " + m + "/out.gguf 2>" +
                       dir + "/b.err; echo $? >" + dir + "/b.rc; ls -A " + m + " >" + dir + "/b.ls; }";
  ASSERT_EQ(std::system(("unshare -m sh -c '" + script + "'").c_str()), 0);
  auto text = [&](const std::string& f) {
    auto b = read_file_bytes(dir + "/" + f);
    return std::string(b.begin(), b.end());
  };
  EXPECT_EQ(text("a.rc"), "3\n");
  EXPECT_NE(text("a.err").find("No space left on device; nothing was changed"), std::string::npos) << text("a.err");
  EXPECT_EQ(text("a.cmp"), "0\n");  // the model on the full disk is as it was
  EXPECT_EQ(text("a.ls"), "model.gguf\n");
  EXPECT_EQ(text("b.rc"), "3\n");
  EXPECT_NE(text("b.err").find("No space left on device; nothing was changed"), std::string::npos) << text("b.err");
  EXPECT_EQ(text("b.ls"), "model.gguf\n");
}
