// Header-only edits in place: written through a journal, so a crash at any instant leaves
// the old file or the edited one, byte for byte, and recover (or the refusal of every
// other command until then) never lets a half-written header be read.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>

#include "ggufkit/scan.h"
#include "helpers.h"

using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

ino_t inode_of(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return st.st_ino;
}

// A fresh copy of the tiny llama in a folder of its own, and what the edit makes of it
// (written as a new file, the whole way). The default edit changes the eos id alone: one
// byte of the header.
struct Case {
  std::string dir, model;
  std::vector<uint8_t> before, after;
};
Case fresh(const std::string& name, const std::string& edit = "--eos-token-id 1") {
  Case c;
  c.dir = temp_path(name);
  fs::create_directories(c.dir);
  c.model = c.dir + "/model.gguf";
  fs::copy_file(tiny_llama(), c.model);
  c.before = read_file_bytes(c.model);
  std::string whole = temp_path(name + "-whole.gguf");
  EXPECT_EQ(run_cli("edit " + c.model + " " + edit + " -o " + whole).code, 0);
  c.after = read_file_bytes(whole);
  fs::remove(whole);
  return c;
}

}  // namespace

TEST(HeaderInPlace, AnEditThatFitsWritesTheHeaderAloneAndGivesTheSameBytesAsAWholeRewrite) {
  Case c = fresh("hip-fits");
  ino_t ino = inode_of(c.model);
  CliRun dry = run_cli("edit " + c.model + " --eos-token-id 1 --in-place --dry-run");
  EXPECT_NE(dry.out.find("would write the header alone, in place"), std::string::npos) << dry.out;
  CliRun r = run_cli("edit " + c.model + " --eos-token-id 1 --in-place");
  ASSERT_EQ(r.code, 0) << r.err;
  // Only the byte that differs is written: the eos id's low byte.
  EXPECT_NE(r.out.find("wrote the header alone, in place (it fits before the data start; no tensor byte moves): 1 of its "
                       "725376 bytes differ, at "),
            std::string::npos) << r.out;
  size_t diff = 0, at = 0;
  for (size_t i = 0; i < c.before.size(); ++i)
    if (c.before[i] != c.after[i]) ++diff, at = i;
  EXPECT_EQ(diff, 1u);
  EXPECT_NE(r.out.find("differ, at " + std::to_string(at) + "\n"), std::string::npos) << r.out;
  EXPECT_EQ(inode_of(c.model), ino);  // the same file, not a new one renamed over it
  EXPECT_TRUE(read_file_bytes(c.model) == c.after);
  EXPECT_EQ(files_in(c.dir), (std::vector<std::string>{"model.gguf"}));  // no journal left
  // A name of another length within the padding also fits; one that does not is said.
  CliRun name = run_cli("edit " + c.model + " --set general.name=tiny --in-place");
  EXPECT_NE(name.out.find("wrote the header alone"), std::string::npos) << name.out;
  EXPECT_EQ(inode_of(c.model), ino);
  const std::string big(200, 'x');
  CliRun only = run_cli("edit " + c.model + " --set general.name=" + big + " --in-place --header-only");
  EXPECT_EQ(only.code, 2);
  EXPECT_NE(only.err.find("--header-only: the edit does not fit in the header: the header grows past the data start by"),
            std::string::npos) << only.err;
  EXPECT_EQ(inode_of(c.model), ino);
  CliRun whole = run_cli("edit " + c.model + " --set general.name=" + big + " --in-place");
  ASSERT_EQ(whole.code, 0) << whole.err;
  EXPECT_NE(whole.out.find("wrote the whole file (the header grows past the data start by"), std::string::npos) << whole.out;
  // A read-only model is never written into: --header-only refuses, and an edit replaces
  // it whole (by rename, keeping its mode).
  const auto now = read_file_bytes(c.model);
  fs::permissions(c.model, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  CliRun ro = run_cli("edit " + c.model + " --eos-token-id 2 --in-place --header-only");
  EXPECT_EQ(ro.code, 2);
  EXPECT_NE(ro.err.find("the file is read-only: it is replaced, not written into"), std::string::npos) << ro.err;
  EXPECT_TRUE(read_file_bytes(c.model) == now);
  CliRun whole_ro = run_cli("edit " + c.model + " --eos-token-id 2 --in-place");
  ASSERT_EQ(whole_ro.code, 0) << whole_ro.err;
  EXPECT_NE(whole_ro.out.find("wrote the whole file (the file is read-only"), std::string::npos) << whole_ro.out;
  EXPECT_EQ(fs::status(c.model).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
}

TEST(HeaderInPlace, AKillAtEveryStepLeavesTheOldFileOrTheEditedOneAfterRecover) {
  // Where the kill lands, and which file recover gives back. A shorter name moves every byte
  // after it (into the padding), so the range written is most of the header and a kill in
  // the middle leaves it torn.
  const std::string edit = "--eos-token-id 1 --set general.name=tiny";
  const std::vector<std::pair<std::string, bool>> points = {
      {"journal-written", false}, {"header-half", false}, {"header-written", true}, {"header-verified", true}};
  for (const auto& [point, edited] : points) {
    SCOPED_TRACE(point);
    Case c = fresh("hip-kill-" + point, edit);
    CliRun r = run_cli("edit " + c.model + " " + edit + " --in-place", "GGUFKIT_FAULT=" + point + ":kill ", GGUFKIT_FAULTY_BIN);
    EXPECT_EQ(r.code, 128 + 9);
    EXPECT_NE(r.err.find("fault point " + point + " reached"), std::string::npos) << r.err;
    EXPECT_EQ(files_in(c.dir), (std::vector<std::string>{"model.gguf", "model.gguf.ggufkit-journal"}));
    const auto now = read_file_bytes(c.model);
    if (point == "header-half") {  // torn: neither file
      EXPECT_FALSE(now == c.before);
      EXPECT_FALSE(now == c.after);
    }
    // Until recover, every command refuses the file.
    CliRun show = run_cli("show " + c.model);
    EXPECT_EQ(show.code, 1);
    EXPECT_NE(show.err.find("an in-place edit of this file was interrupted and left its journal"), std::string::npos) << show.err;
    CliRun rec = run_cli("recover " + c.model);
    ASSERT_EQ(rec.code, 0) << rec.err;
    EXPECT_NE(rec.out.find(edited ? "the new header was all written; it is kept" : "the old header is back"), std::string::npos)
        << rec.out;
    EXPECT_TRUE(read_file_bytes(c.model) == (edited ? c.after : c.before));
    EXPECT_EQ(files_in(c.dir), (std::vector<std::string>{"model.gguf"}));
    EXPECT_EQ(run_cli("show " + c.model).code, 0);
    EXPECT_NE(run_cli("recover " + c.model).out.find("no journal; nothing to recover"), std::string::npos);
  }
}

TEST(HeaderInPlace, AFullDiskWhileWritingTheJournalLeavesTheModelUntouched) {
  Case c = fresh("hip-full");
  CliRun r = run_cli("edit " + c.model + " --eos-token-id 1 --in-place", "GGUFKIT_FAULT=write:fail:28 ", GGUFKIT_FAULTY_BIN);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was changed"), std::string::npos) << r.err;
  EXPECT_TRUE(read_file_bytes(c.model) == c.before);
  EXPECT_EQ(files_in(c.dir), (std::vector<std::string>{"model.gguf"}));
}

TEST(HeaderInPlace, AJournalThatDoesNotMatchTheFileIsReportedAndNotApplied) {
  // A journal left by a kill, then made wrong three ways.
  auto journaled = [](const std::string& name) {
    Case c = fresh(name);
    run_cli("edit " + c.model + " --eos-token-id 1 --in-place", "GGUFKIT_FAULT=header-half:kill ", GGUFKIT_FAULTY_BIN);
    // The journal holds the range alone: 104 bytes of head, the old byte, the new one, and
    // 8 bytes of checksum.
    EXPECT_EQ(fs::file_size(c.model + ".ggufkit-journal"), 104u + 1 + 1 + 8);
    return c;
  };
  struct Wrong {
    std::string name, message;
    std::function<void(Case&)> spoil;
  };
  const std::vector<Wrong> wrongs = {
      {"other-file", "it is the journal of another file (device, inode or size differ)",
       [](Case& c) {  // the same bytes under a new inode
         fs::copy_file(c.model, c.model + ".copy");
         fs::rename(c.model + ".copy", c.model);
       }},
      {"cut-short", "it is cut short",
       [](Case& c) { fs::resize_file(c.model + ".ggufkit-journal", fs::file_size(c.model + ".ggufkit-journal") - 5); }},
      {"other-header", "the file's header is neither the old one nor the new one, even outside the 1 bytes at",
       [](Case& c) {  // the same file, changed since outside the range the edit wrote
         auto m = read_file_bytes(c.model);
         m[40] ^= 0xff;
         write_file_bytes(c.model, m);
       }},
      {"bad-checksum", "its checksum does not match its bytes",
       [](Case& c) {
         auto j = read_file_bytes(c.model + ".ggufkit-journal");
         j[j.size() / 2] ^= 0xff;
         write_file_bytes(c.model + ".ggufkit-journal", j);
       }},
  };
  for (const Wrong& w : wrongs) {
    SCOPED_TRACE(w.name);
    Case c = journaled("hip-wrong-" + w.name);
    w.spoil(c);
    const auto model = read_file_bytes(c.model), journal = read_file_bytes(c.model + ".ggufkit-journal");
    CliRun r = run_cli("recover " + c.model);
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find(w.message), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("neither it nor " + c.model + " was changed"), std::string::npos) << r.err;
    EXPECT_TRUE(read_file_bytes(c.model) == model);
    EXPECT_TRUE(read_file_bytes(c.model + ".ggufkit-journal") == journal);
  }
}

TEST(HeaderInPlace, AShardSetsFirstShardTakesTheHeaderPathAndTheOtherShardsAreNotTouched) {
  const std::string dir = temp_path("hip-set");
  fs::create_directories(dir);
  ASSERT_EQ(run_cli("split " + tiny_llama() + " -o " + dir + "/m --max-tensors 8").code, 0);
  const std::string first = dir + "/m-00001-of-00003.gguf";
  // What the same edit gives written as a new set.
  fs::create_directories(dir + "-new");
  ASSERT_EQ(run_cli("edit " + first + " --eos-token-id 1 -o " + dir + "-new/m").code, 0);
  std::vector<std::vector<uint8_t>> before;
  std::vector<ino_t> inodes;
  for (int k = 1; k <= 3; ++k) {
    std::string p = dir + "/m-0000" + std::to_string(k) + "-of-00003.gguf";
    before.push_back(read_file_bytes(p));
    inodes.push_back(inode_of(p));
  }
  CliRun dry = run_cli("edit " + first + " --eos-token-id 1 --in-place --dry-run");
  EXPECT_NE(dry.out.find("would write the header alone, in place"), std::string::npos) << dry.out;
  CliRun r = run_cli("edit " + dir + "/m-00002-of-00003.gguf --eos-token-id 1 --in-place");  // any shard names the set
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("m-00001-of-00003.gguf: wrote the header alone, in place (it fits before the data start; no tensor "
                       "byte moves): 1 of its"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("shard set: 3 files; shard 1's header written in place, the other 2 untouched"), std::string::npos) << r.out;
  EXPECT_TRUE(read_file_bytes(first) == read_file_bytes(dir + "-new/m-00001-of-00003.gguf"));
  EXPECT_FALSE(read_file_bytes(first) == before[0]);
  for (int k = 1; k <= 3; ++k) {
    std::string p = dir + "/m-0000" + std::to_string(k) + "-of-00003.gguf";
    EXPECT_EQ(inode_of(p), inodes[k - 1]) << p;
    if (k > 1) {
      EXPECT_TRUE(read_file_bytes(p) == before[k - 1]) << p;
    }
  }
  EXPECT_EQ(files_in(dir).size(), 3u);  // no journal left
  // A kill in the middle leaves a journal beside shard 1: the set is refused until recover.
  CliRun k = run_cli("edit " + first + " --eos-token-id 2 --in-place", "GGUFKIT_FAULT=header-half:kill ", GGUFKIT_FAULTY_BIN);
  EXPECT_EQ(k.code, 128 + 9);
  EXPECT_NE(run_cli("show " + dir + "/m-00003-of-00003.gguf").err.find("was interrupted and left its journal"), std::string::npos);
  ASSERT_EQ(run_cli("recover " + first).code, 0);
  EXPECT_TRUE(read_file_bytes(first) == read_file_bytes(dir + "-new/m-00001-of-00003.gguf"));
  // A header that no longer fits rewrites shard 1 whole, and says why.
  CliRun grow = run_cli("edit " + first + " --set general.name=" + std::string(300, 'x') + " --in-place");
  ASSERT_EQ(grow.code, 0) << grow.err;
  EXPECT_NE(grow.out.find("wrote the whole of shard 1 (the header grows past the data start by"), std::string::npos) << grow.out;
  EXPECT_NE(inode_of(first), inodes[0]);
}

namespace {

// A file that holds no tensor data, in a folder of its own: shard 1 of a set split with its
// keys alone in it (--metadata-only-first), padded to its data start; or a vocabulary alone
// (extract --vocab-only), which ends right after its header. And the file as the same edit
// writes it anew. Its header may grow or shrink in place.
struct AllHeader {
  std::string dir, first;
  std::vector<std::string> shards;
  std::vector<uint8_t> before, after;
};
std::vector<uint8_t> edited(const AllHeader& c, const std::string& edit);
AllHeader all_header(const std::string& name, const std::string& edit, bool vocab = false) {
  AllHeader c;
  c.dir = temp_path(name);
  fs::create_directories(c.dir);
  if (vocab) {
    c.first = c.dir + "/vocab.gguf";
    EXPECT_EQ(run_cli("extract " + tiny_llama() + " --vocab-only -o " + c.first).code, 0);
    fs::permissions(c.first, fs::perms::owner_write, fs::perm_options::add);
    c.shards = {"vocab.gguf"};
  } else {
    EXPECT_EQ(run_cli("split " + tiny_llama() + " -o " + c.dir + "/m --max-tensors 8 --metadata-only-first").code, 0);
    c.shards = files_in(c.dir);
    c.first = c.dir + "/" + c.shards.at(0);  // m-00001-of-0000N.gguf
  }
  c.before = read_file_bytes(c.first);
  c.after = edited(c, edit);
  return c;
}

// `c`'s file as `edit` makes it of the file as it is now, written anew (not in place).
std::vector<uint8_t> edited(const AllHeader& c, const std::string& edit) {
  const std::string out = c.dir + "-new";
  fs::remove_all(out);
  fs::create_directories(out);
  const bool vocab = c.shards.size() == 1;
  EXPECT_EQ(run_cli("edit " + c.first + " " + edit + " -o " + out + (vocab ? "/vocab.gguf" : "/m")).code, 0);
  std::vector<uint8_t> bytes = read_file_bytes(out + "/" + c.shards[0]);
  fs::remove_all(out);
  return bytes;
}

}  // namespace

TEST(HeaderInPlace, AShardThatIsAllHeaderGrowsAndShrinksInPlaceToTheBytesOfAWholeRewrite) {
  const std::string longer = "--set general.name=" + std::string(300, 'x'), back = "--set general.name=tiny";
  AllHeader c = all_header("hip-all-header", longer);
  ASSERT_GT(c.after.size(), c.before.size());  // the name grows the header past its padding
  const ino_t ino = inode_of(c.first);
  CliRun grow = run_cli("edit " + c.first + " " + longer + " --in-place --header-only");
  ASSERT_EQ(grow.code, 0) << grow.err;
  EXPECT_NE(grow.out.find(c.shards[0] + ": wrote the header alone, in place (the file holds no tensor data, so it ends with "
                          "its header: " + std::to_string(c.before.size()) + " bytes before, " + std::to_string(c.after.size()) +
                          " now): "),
            std::string::npos) << grow.out;
  EXPECT_NE(grow.out.find(" of its " + std::to_string(c.after.size()) + " bytes differ, at "), std::string::npos) << grow.out;
  EXPECT_EQ(inode_of(c.first), ino);  // written into, not replaced
  EXPECT_TRUE(read_file_bytes(c.first) == c.after);
  EXPECT_EQ(files_in(c.dir), c.shards);  // no journal left
  // And back: the shorter header cuts the file to its end, and the bytes are the first ones
  // again but for the name ("tiny" where the split's copy had the model's).
  CliRun shrink = run_cli("edit " + c.first + " " + back + " --in-place --header-only --json");
  ASSERT_EQ(shrink.code, 0) << shrink.err;
  EXPECT_EQ(inode_of(c.first), ino);
  const std::string tiny = c.dir + "-tiny";
  fs::create_directories(tiny);
  ASSERT_EQ(run_cli("edit " + c.dir + "/" + c.shards[1] + " " + back + " -o " + tiny + "/m").code, 0);
  const auto expected = read_file_bytes(tiny + "/" + c.shards[0]);
  EXPECT_LT(expected.size(), c.after.size());
  EXPECT_TRUE(read_file_bytes(c.first) == expected);
  EXPECT_NE(shrink.out.find("\"header_bytes\": " + std::to_string(expected.size())), std::string::npos) << shrink.out;
  EXPECT_EQ(run_cli("validate " + c.first).code, run_cli("validate " + tiny + "/" + c.shards[0]).code);
}

TEST(HeaderInPlace, AKillAtEveryStepOfAHeaderThatGrowsOrShrinksLeavesTheOldFileOrTheEditedOneAfterRecover) {
  // Where the kill lands, and which file recover gives back: grown (a long name, or a key
  // added) and shrunk (the long name's file edited back to a short one, the key removed). A
  // kill before the cut to the new size leaves the new header whole, and the old one's tail
  // after it when it shrinks. A key added or removed changes the key count, at byte 16: the
  // journal's range starts there (recover once refused any range before byte 24).
  for (const bool key_count : {false, true})
  for (const bool vocab : {false, true})
  for (const bool grows : {true, false}) {
  const std::string longer = key_count ? "--set general.description=" + std::string(300, 'y') : "--set general.name=" + std::string(300, 'y');
  const std::string shorter = key_count ? "--remove general.description" : "--set general.name=t";
  const std::vector<std::pair<std::string, bool>> points = {{"journal-written", false}, {"header-half", false},
                                                            {"header-resize", true},    {"header-written", true},
                                                            {"header-verified", true}};
    for (const auto& [point, edited_kept] : points) {
      bool edited = edited_kept;
      SCOPED_TRACE(std::string(key_count ? "a key, " : "the name, ") + (vocab ? "vocabulary, " : "shard 1, ") + (grows ? "grows, " : "shrinks, ") + point);
      AllHeader c = all_header("hip-all-kill-" + std::string(key_count ? "key-" : "") + (vocab ? "vocab-" : "") + (grows ? "grow-" : "shrink-") + point, longer, vocab);
      std::vector<uint8_t> before = c.after, after;
      if (grows) {
        before = c.before, after = c.after;
      } else {  // the long name in place first, then the short one from it
        ASSERT_EQ(run_cli("edit " + c.first + " " + longer + " --in-place").code, 0);
        ASSERT_TRUE(read_file_bytes(c.first) == c.after);
        after = ::edited(c, shorter);
        ASSERT_LT(after.size(), before.size());
      }
      const std::string edit = grows ? longer : shorter;
      CliRun r = run_cli("edit " + c.first + " " + edit + " --in-place", "GGUFKIT_FAULT=" + point + ":kill ", GGUFKIT_FAULTY_BIN);
      EXPECT_EQ(r.code, 128 + 9);
      EXPECT_NE(r.err.find("fault point " + point + " reached"), std::string::npos) << r.err;
      ASSERT_TRUE(fs::exists(c.first + ".ggufkit-journal"));
      {  // the range starts at the key count, or past it
        const auto j = read_file_bytes(c.first + ".ggufkit-journal");
        uint64_t at = 0;
        std::memcpy(&at, j.data() + 80, 8);
        if (key_count) EXPECT_EQ(at, 16u);
        else EXPECT_GT(at, 24u);
      }
      const auto now = read_file_bytes(c.first);
      if (point == "header-half") {  // torn: neither file
        EXPECT_FALSE(now == before);
        EXPECT_FALSE(now == after);
        // ... but where the first half holds every byte that changes (a key removed from the
        // end: past the key count, the shorter header is the longer one's start), the new
        // header is whole, and recover keeps it
        if (now.size() >= after.size() && std::equal(after.begin(), after.end(), now.begin())) edited = true;
      }
      if (point == "header-resize") {  // the new bytes written, the size not yet cut
        EXPECT_EQ(now.size(), grows ? after.size() : before.size());
        EXPECT_TRUE(std::equal(after.begin(), after.end(), now.begin()));
      }
      EXPECT_EQ(run_cli("show " + c.first).code, 1);  // refused until recover
      if (point == "header-resize" && !grows) {  // the new header reads, the old one's tail after it: not to be discarded
        CliRun d = run_cli("recover --discard " + c.first);
        EXPECT_EQ(d.code, 1);
        const uint64_t end = ggufkit::scan(ggufkit::from_bytes("after", after)).layout.header_size;
        EXPECT_NE(d.err.find("holds no tensors, yet " + std::to_string(before.size() - end) +
                             " bytes lie past the end of its header (byte " + std::to_string(end) + ")"),
                  std::string::npos) << d.err;
        EXPECT_TRUE(read_file_bytes(c.first) == now);
      }
      CliRun rec = run_cli("recover " + c.first);
      ASSERT_EQ(rec.code, 0) << rec.err;
      EXPECT_NE(rec.out.find(edited ? "the new header was all written; it is kept" : "the old header is back"), std::string::npos)
          << rec.out;
      EXPECT_TRUE(read_file_bytes(c.first) == (edited ? after : before));
      EXPECT_FALSE(fs::exists(c.first + ".ggufkit-journal"));
      EXPECT_EQ(run_cli("show " + c.first).code, 0);
    }
  }
}

TEST(HeaderInPlace, AJournalOfTheFirstFormatLeftByAnOlderGgufkitIsStillRecovered) {
  // A kill in the middle of a one-byte edit, its journal rewritten in the first format
  // (GGUFKIT-JOURNAL1: one size, one header length, one range length), as a ggufkit from
  // before journals held two sizes left it: recover puts the old byte back.
  Case c = fresh("hip-journal1");
  run_cli("edit " + c.model + " --eos-token-id 1 --in-place", "GGUFKIT_FAULT=header-half:kill ", GGUFKIT_FAULTY_BIN);
  const std::string journal = c.model + ".ggufkit-journal";
  const std::vector<uint8_t> j2 = read_file_bytes(journal);
  ASSERT_EQ(j2.size(), 104u + 1 + 1 + 8);
  ASSERT_EQ(std::string(j2.begin(), j2.begin() + 16), "GGUFKIT-JOURNAL2");
  auto u64 = [&](size_t at) {
    uint64_t v;
    std::memcpy(&v, j2.data() + at, 8);
    return v;
  };
  // dev, ino, size before and after, header length before and after, two checksums, offset,
  // old and new lengths: the first format kept one of each pair.
  EXPECT_EQ(u64(32), u64(40));
  EXPECT_EQ(u64(48), u64(56));
  EXPECT_EQ(u64(88), 1u);
  EXPECT_EQ(u64(96), 1u);
  std::vector<uint8_t> j1;
  const std::string magic = "GGUFKIT-JOURNAL1";
  j1.insert(j1.end(), magic.begin(), magic.end());
  for (size_t at : {16, 24, 32, 48, 64, 72, 80, 88}) j1.insert(j1.end(), j2.begin() + static_cast<long>(at), j2.begin() + static_cast<long>(at + 8));
  j1.insert(j1.end(), j2.begin() + 104, j2.begin() + 106);  // the old byte, the new one
  const uint64_t sum = XXH64(j1.data(), j1.size(), 0);
  for (int i = 0; i < 8; ++i) j1.push_back(static_cast<uint8_t>(sum >> (8 * i)));
  write_file_bytes(journal, j1);
  CliRun rec = run_cli("recover " + c.model);
  ASSERT_EQ(rec.code, 0) << rec.err;
  EXPECT_NE(rec.out.find("the old header is back"), std::string::npos) << rec.out;
  EXPECT_TRUE(read_file_bytes(c.model) == c.before);
  EXPECT_EQ(files_in(c.dir), (std::vector<std::string>{"model.gguf"}));
}

namespace {

// A GGUFKIT-JOURNAL2 of a same-size header edit of `file` (its device, inode and size, its
// header's `n` bytes), crafted as another user could: the bytes at `at` would be `old` once
// rolled back. The new header's checksum is left 0, so that recover rolls back.
std::vector<uint8_t> crafted_journal(const std::string& file, uint64_t n, uint64_t at, const std::vector<uint8_t>& old) {
  struct stat st {};
  EXPECT_EQ(::stat(file.c_str(), &st), 0);
  std::vector<uint8_t> header = read_file_bytes(file);
  header.resize(n);
  std::vector<uint8_t> rolled = header, now(header.begin() + static_cast<long>(at), header.begin() + static_cast<long>(at + old.size()));
  std::copy(old.begin(), old.end(), rolled.begin() + static_cast<long>(at));
  Bytes j;
  j.raw("GGUFKIT-JOURNAL2");
  for (uint64_t v : {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size),
                     static_cast<uint64_t>(st.st_size), n, n, static_cast<uint64_t>(XXH64(rolled.data(), n, 0)), uint64_t{0}, at,
                     static_cast<uint64_t>(old.size()), static_cast<uint64_t>(old.size())})
    j.u64(v);
  j.b.insert(j.b.end(), old.begin(), old.end());
  j.b.insert(j.b.end(), now.begin(), now.end());
  j.u64(XXH64(j.b.data(), j.b.size(), 0));
  return j.b;
}

}  // namespace

TEST(Recover, AJournalIsAppliedToTheFileItNamesOrToNothingWhateverIsSwappedBetweenItsSteps) {
  // Mallory (user 1000) plants beside her own mal.gguf a journal whose "old" bytes are of her
  // choosing (an end-of-text id of 7), then swaps mal.gguf for a link to alice.gguf (user
  // 1001) while root's recover runs: at each of its steps in turn (a fault point runs the
  // swap). A journal naming alice's file by device and inode is applied to nothing; one
  // naming mal.gguf's is applied to that file (the inode now at mal.real) or, swapped before
  // recover opened it, to nothing. alice.gguf never changes. (The check of the owner and the
  // open for writing each followed the path: a swap between them wrote alice's file.)
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to give the files other owners";
  for (const bool foreign : {true, false})
    for (const std::string step : {"", "recover-locked", "recover-journal", "recover-trusted", "recover-checked"}) {
      if (foreign && step == "recover-checked") continue;  // refused before it: the inode is not the file's
      const std::string name = std::string(foreign ? "alices-" : "own-") + (step.empty() ? std::string("none") : step);
      SCOPED_TRACE(name);
      const std::string dir = temp_path("recover-swap-" + name);
      fs::create_directories(dir);
      const std::string alice = dir + "/alice.gguf", mal = dir + "/mal.gguf", journal = mal + ".ggufkit-journal";
      fs::copy_file(tiny_llama(), alice);
      fs::copy_file(tiny_llama(), mal);
      const auto before = read_file_bytes(alice);
      const ggufkit::Scanned s = ggufkit::scan(ggufkit::open_file(alice));
      const std::string key = "tokenizer.ggml.eos_token_id";
      const auto it = std::search(before.begin(), before.end(), key.begin(), key.end());
      ASSERT_NE(it, before.end());
      const uint64_t at = static_cast<uint64_t>(it - before.begin()) + key.size() + 4;  // the u32 after the type
      write_file_bytes(journal, crafted_journal(foreign ? alice : mal, s.layout.data_offset, at, {7, 0, 0, 0}));
      ASSERT_EQ(::chown(alice.c_str(), 1001, 1001), 0);
      ASSERT_EQ(::chown(mal.c_str(), 1000, 1000), 0);
      ASSERT_EQ(::chown(journal.c_str(), 1000, 1000), 0);
      const std::string swap = "mv " + mal + " " + dir + "/mal.real && ln -s alice.gguf " + mal;
      CliRun r = run_cli("recover " + mal, step.empty() ? "" : "GGUFKIT_FAULT='" + step + ":run:" + swap + "' ", GGUFKIT_FAULTY_BIN);
      if (!step.empty()) {
        EXPECT_NE(r.err.find("fault point " + step + " reached"), std::string::npos) << r.err;
      }
      const bool swapped = fs::exists(dir + "/mal.real");
      EXPECT_EQ(swapped, !step.empty());
      const auto mals = read_file_bytes(swapped ? dir + "/mal.real" : mal);
      EXPECT_TRUE(read_file_bytes(alice) == before);
      if (foreign || step == "recover-journal") {
        // nothing: the file a link when it is opened, or another file's journal
        EXPECT_EQ(r.code, 1) << r.out << r.err;
        EXPECT_NE(r.err.find(step == "recover-journal" ? mal + " is a link now, not the file the journal was left beside"
                                                       : "it is the journal of another file (device, inode or size differ)"),
                  std::string::npos) << r.err;
        EXPECT_TRUE(mals == before);
        EXPECT_TRUE(fs::exists(journal));
      } else {  // applied to the inode it names, wherever its name went
        EXPECT_EQ(r.code, 0) << r.out << r.err;
        EXPECT_NE(r.out.find("the old header is back"), std::string::npos) << r.out;
        std::vector<uint8_t> rolled = before;
        std::copy_n(std::vector<uint8_t>{7, 0, 0, 0}.begin(), 4, rolled.begin() + static_cast<long>(at));
        EXPECT_TRUE(mals == rolled);
        EXPECT_FALSE(fs::exists(journal));
      }
    }
}

namespace {

// A folder of `uid`'s holding a copy of the tiny llama as m.gguf, and (with `crashed`) the
// journal of an edit of it killed halfway: its bytes then, and the journal's.
struct Owned {
  std::string dir, model;
  std::vector<uint8_t> before, torn, journal;
};
Owned owned(const std::string& dir, uid_t uid, bool crashed) {
  Owned o{dir, dir + "/m.gguf", {}, {}, {}};
  fs::create_directories(dir);
  fs::copy_file(tiny_llama(), o.model);
  o.before = read_file_bytes(o.model);
  if (crashed) {
    CliRun k = run_cli("edit " + o.model + " --set general.name=tiny --in-place", "GGUFKIT_FAULT=header-half:kill ", GGUFKIT_FAULTY_BIN);
    EXPECT_EQ(k.code, 128 + 9);
    o.journal = read_file_bytes(o.model + ".ggufkit-journal");
  }
  o.torn = read_file_bytes(o.model);
  EXPECT_EQ(std::system(("chown -R " + std::to_string(uid) + ":" + std::to_string(uid) + " " + dir).c_str()), 0);
  return o;
}

}  // namespace

TEST(Recover, AFolderSwappedForALinkToAnotherUsersFolderMidwayIsNeverReached) {
  // The journal, the file and the journal's removal were each found by path: mallory's
  // folder swapped for a link to alice's after recover's checks made root remove alice's
  // journal (her file left torn, beyond recovery), and so did an in-place edit of
  // mallory's file. Both now work in the folder they opened first.
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to give the files other owners";
  for (const std::string step : {"recover-journal", "recover-locked", "recover-trusted", "recover-checked", "header-verified"}) {
    SCOPED_TRACE(step);
    const std::string top = temp_path("folder-swap-" + step);
    const Owned alice = owned(top + "/a", 1001, true);
    const bool edit = step == "header-verified";  // root's in-place edit of mallory's file, not a recover
    const Owned mal = owned(top + "/mal/d", 1000, !edit);
    const std::string swap = "mv " + top + "/mal/d " + top + "/mal/d0 && ln -s ../a " + top + "/mal/d";
    CliRun r = run_cli(std::string(edit ? "edit " + mal.model + " --set general.name=root --in-place" : "recover " + mal.model),
                       "GGUFKIT_FAULT='" + step + ":run:" + swap + "' ", GGUFKIT_FAULTY_BIN);
    EXPECT_NE(r.err.find("fault point " + step + " reached"), std::string::npos) << r.err;
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    // alice's torn file and her journal are as they were
    EXPECT_TRUE(read_file_bytes(alice.model) == alice.torn);
    EXPECT_TRUE(read_file_bytes(alice.model + ".ggufkit-journal") == alice.journal);
    // mallory's file, wherever its folder went, recovered (or edited), its journal gone
    EXPECT_EQ(files_in(top + "/mal/d0"), std::vector<std::string>{"m.gguf"});
    if (!edit) EXPECT_TRUE(read_file_bytes(top + "/mal/d0/m.gguf") == mal.before);
    else EXPECT_NE(run_cli("meta " + top + "/mal/d0/m.gguf").out.find("\"root\""), std::string::npos);
  }
}

TEST(Recover, AJournalWhoseEditFinishesWhileRecoverReadsItIsNotApplied) {
  // recover read the journal, then waited for the file's lock: an edit under way held it,
  // finished and removed its journal, and recover applied the journal it had read. It now
  // looks again once the lock is had. The edit, at journal-written, says so through one
  // pipe and waits on another; recover, once it has read the journal, lets the edit go on
  // and waits (flock) for the edit's lock of the file, held until its journal is gone. No
  // step waits on time (timeout 60 only ends a hang, should recover take the lock first).
  const std::string dir = temp_path("recover-live");
  fs::create_directories(dir);
  const std::string model = dir + "/m.gguf", journal = model + ".ggufkit-journal", go = dir + "/go", held = dir + "/held";
  fs::copy_file(tiny_llama(), model);
  ASSERT_EQ(::mkfifo(go.c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo(held.c_str(), 0600), 0);
  const std::string edit = "GGUFKIT_FAULT='journal-written:run:echo > " + held + "; timeout 60 cat " + go + " > /dev/null' " + GGUFKIT_FAULTY_BIN +
                           " edit " + model + " --set general.name=live --in-place > " + dir + "/edit.out 2>&1 & timeout 60 cat " + held + " > /dev/null; ";
  CliRun r = run_cli("recover " + model, edit + "GGUFKIT_FAULT='recover-journal:run:echo > " + go + "; flock -s " + model + " true' ",
                     GGUFKIT_FAULTY_BIN);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("fault point recover-journal reached"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("no journal; nothing to recover"), std::string::npos) << r.out;
  // the edit's result stands (its journal gone, its header is final)
  EXPECT_NE(run_cli("meta " + model).out.find("\"live\""), std::string::npos);
  EXPECT_FALSE(fs::exists(journal));
}
