// Calls made at once on several threads of one process (a Python program's): each call's
// notes are its own, and threads exclude each other on a file as processes do.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "ggufkit/background.h"
#include "ggufkit/edit.h"
#include "ggufkit/error.h"
#include "ggufkit/fault.h"
#include "ggufkit/lock.h"
#include "ggufkit/scan.h"
#include "helpers.h"

using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

std::string fresh_copy(const std::string& name) {
  const std::string dir = temp_path(name);
  fs::create_directories(dir);
  const std::string model = dir + "/model.gguf";
  fs::copy_file(tiny_llama(), model, fs::copy_options::overwrite_existing);
  fs::permissions(model, fs::perms(0644));
  return model;
}

// "<0x41>" for 0x41: a byte token of the tiny llama, already of type byte.
std::string byte_token(int b) {
  char t[8];
  std::snprintf(t, sizeof t, "<0x%02X>", b);
  return t;
}

// kThreads threads each make kRounds edits of their own file. Each call retypes its own byte
// token to the type it has (nothing to change: one note naming that token); `write`: it also
// sets general.round to the round's number in place, so every round commits. With one handler
// for the process, swapped by every call, notes went to other calls' reports (or finished
// ones: a crash).
void expect_own_notes(int kThreads, int kRounds, bool write = false) {
  std::vector<std::string> files;
  for (int t = 0; t < kThreads; ++t) files.push_back(fresh_copy("notes-" + std::to_string(kThreads) + "-" + std::to_string(t)));
  std::vector<int> own(kThreads, 0), other(kThreads, 0), counts_off(kThreads, 0), written(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      const std::string mine = byte_token(0x41 + t);
      for (int r = 0; r < kRounds; ++r) {
        ggufkit::EditRequest req;
        req.input = files[t];
        req.dry_run = !write;
        req.in_place = write;
        req.patch.add_token_type(mine, "byte");
        if (write) req.patch.add_set_typed("general.round", "u32", std::to_string(r));
        const ggufkit::EditReport rep = ggufkit::edit(req);
        counts_off[t] += rep.notes.size() != 1;
        if (write) written[t] += rep.written == ggufkit::Written::header;
        for (const auto& [file, msg] : rep.notes) {
          if (msg.find("\"" + mine + "\"") != std::string::npos && msg.find("is already byte") != std::string::npos) ++own[t];
          else ++other[t];
        }
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(own[t], kRounds) << "thread " << t;
    EXPECT_EQ(other[t], 0) << "thread " << t;
    EXPECT_EQ(counts_off[t], 0) << "thread " << t;
    if (!write) continue;
    // the first round adds the key (a whole-file write), the other rounds rewrite its value in place
    EXPECT_EQ(written[t], kRounds - 1) << "thread " << t;
    const ggufkit::Scanned after = ggufkit::scan_file(files[t]);  // held: find() points into it
    const ggufkit::Value* round = after.model.find("general.round");
    ASSERT_NE(round, nullptr) << "thread " << t;
    EXPECT_EQ(round->as_i64(), kRounds - 1) << "thread " << t;
  }
}

}  // namespace

TEST(Threads, DryRunEditsOfTheirOwnFilesOnEightThreadsEachReportTheirOwnNoteOnly) { expect_own_notes(8, 25); }

TEST(Threads, TwoThreadsEditingTwoFilesInPlaceTwoHundredRoundsEachReportTheirOwnNoteOnly) { expect_own_notes(2, 200, true); }

TEST(Threads, EveryCallOnAFileSystemWithoutLocksIsToldSoNotOnlyTheProcesssFirst) {
  // flock fails with ENOLCK (NFS without a lock daemon): each call goes on without locks and
  // its report says so. A flag for the process told the first call only; a Python session's
  // second edit heard nothing.
  ggufkit::set_fault_hook([](const char* point, const ggufkit::FaultSite&) { return std::strcmp(point, "flock") == 0 ? ENOLCK : 0; });
  const std::string model = fresh_copy("no-locks");
  std::vector<size_t> told;
  for (int call = 0; call < 3; ++call) {
    ggufkit::EditRequest req;
    req.input = model;
    req.dry_run = true;
    req.patch.add_token_type(byte_token(0x41), "byte");
    const ggufkit::EditReport rep = ggufkit::edit(req);
    size_t n = 0;
    for (const auto& [file, msg] : rep.notes)
      n += file == model && msg == "its file system has no locks (No locks available): ggufkit goes on without them; keep other "
                                   "programs from writing it meanwhile";
    told.push_back(n);
  }
  ggufkit::set_fault_hook(nullptr);
  EXPECT_GE(told[0], 1u);
  EXPECT_EQ(told[1], told[0]);
  EXPECT_EQ(told[2], told[0]);
}

TEST(Threads, AThreadStartedForACallTellsItsNotesToThatCallAndReadsWhatTheCallLocked) {
  const std::string model = fresh_copy("background-call");
  std::vector<std::string> heard;
  ggufkit::Context call;  // the call: its notes and its locks, handed to what works for it
  call.notes = [&](const std::string& f, const std::string& m) { heard.push_back(f + ": " + m); };
  ggufkit::PathLock held(model, ggufkit::FileLock::Mode::exclusive, call);  // as an edit in place holds it
  auto back = ggufkit::in_background([&] {
    call.note("x.gguf", "from the call's thread");
    // Its own open file: locked again it would wait for the call's lock (and time out).
    return ggufkit::scan_file(model, {}, call).model.tensors.size();
  });
  EXPECT_EQ(back.get(), 21u);
  EXPECT_EQ(heard, std::vector<std::string>{"x.gguf: from the call's thread"});
  // A thread of another call (a Context of its own) is kept out, as another process is, and
  // told who holds it.
  std::string err;
  std::thread other([&] {
    ggufkit::Context another;
    another.lock_timeout = std::chrono::milliseconds(0);
    try {
      ggufkit::PathLock mine(model, ggufkit::FileLock::Mode::shared, another);
    } catch (const ggufkit::Error& e) {
      err = e.what();
    }
  });
  other.join();
  EXPECT_EQ(err, model + ": is locked by another thread of this process writing it; waited 0 ms (GGUFKIT_LOCK_TIMEOUT), nothing was done");
}

TEST(Threads, NineThreadsEditingOneFileInPlaceEachSetADistinctKeyAndNoneIsLost) {
  // Each sets a key of its own. An edit that finds the file changed since it read it (a
  // whole-file rewrite lets go of the lock while it copies) says so and is made again; at
  // the end every edit is in the file. Threads that did not exclude each other lost one
  // that returned without an error.
  constexpr int kThreads = 9, kRounds = 3;
  for (int round = 0; round < kRounds; ++round) {
    const std::string model = fresh_copy("one-file-" + std::to_string(round));
    std::vector<int> tries(kThreads, 0);
    std::vector<std::string> errors(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        for (; tries[t] <= kThreads; ++tries[t]) {
          ggufkit::EditRequest req;
          req.input = model;
          req.in_place = true;
          // typed: an untyped key close to another's new one would be refused as its misspelling
          req.patch.add_set_typed("general.thread" + std::to_string(t), "u32", std::to_string(100 + t));
          try {
            ggufkit::edit(req);
            return;
          } catch (const ggufkit::Error& e) {
            errors[t] = e.what();
            if (errors[t].find("changed since it was read") == std::string::npos) return;
          }
        }
      });
    for (std::thread& th : threads) th.join();
    const ggufkit::Scanned s = ggufkit::scan_file(model);
    for (int t = 0; t < kThreads; ++t) {
      const ggufkit::Value* v = s.model.find("general.thread" + std::to_string(t));
      ASSERT_NE(v, nullptr) << "round " << round << ": thread " << t << "'s key is lost; its last error: " << errors[t];
      EXPECT_EQ(v->as_u64(), 100u + t);
      EXPECT_LE(tries[t], kThreads - 1) << errors[t];  // each try that failed let another edit through
    }
    EXPECT_EQ(s.model.metadata.size(), ggufkit::scan_file(tiny_llama()).model.metadata.size() + kThreads);
  }
}
