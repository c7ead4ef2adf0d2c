// Holes stay holes: every rewrite of a sparse file (a replica, a hand-made stand-in of a
// big model) leaves the source's holes unwritten, as `cp --sparse=auto` does, and the
// output reads exactly as the source does.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <filesystem>
#include <tuple>

#include "ggufkit/edit.h"
#include "ggufkit/encode.h"
#include "ggufkit/scan.h"
#include "ggufkit/writer.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;

namespace {

constexpr uint64_t kKiB = 1024, kMiB = 1024 * kKiB;
constexpr uint64_t kBig = 32 * kMiB;  // each hole tensor of the stand-in
// What an output may take on disk beyond its source: its header and the partial blocks at
// the edges of the data extents (a re-laid file's data no longer starts on a block).
constexpr uint64_t kSlack = 64 * kKiB;

uint64_t disk_use(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

void punch(const std::string& path, uint64_t offset, uint64_t n) {
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << path;
  EXPECT_EQ(::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset), static_cast<off_t>(n)), 0);
  ::close(fd);
}

using Extents = std::vector<std::tuple<uint64_t, uint64_t, bool>>;  // [from, to), hole
Extents extents_of(const ByteSource& s, uint64_t from, uint64_t to) {
  Extents out;
  while (from < to) {
    ByteSource::Extent e = s.extent(from, to);
    if (!out.empty() && std::get<2>(out.back()) == e.hole) std::get<1>(out.back()) = e.end;
    else out.emplace_back(from, e.end, e.hole);
    from = e.end;
  }
  return out;
}

uint64_t hash_range(const ByteSource& s, uint64_t offset, uint64_t n) {
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0);
  std::vector<uint8_t> buf(kMiB);
  for (uint64_t done = 0; done < n;) {
    size_t k = static_cast<size_t>(std::min<uint64_t>(n - done, buf.size()));
    s.read_at(offset + done, buf.data(), k);
    XXH64_update(st, buf.data(), k);
    done += k;
  }
  uint64_t h = XXH64_digest(st);
  XXH64_freeState(st);
  return h;
}

// Each tensor's name and the xxHash64 of its bytes as the reader gives them.
std::vector<std::pair<std::string, uint64_t>> tensor_hashes(const std::string& path) {
  Scanned s = scan_file(path);
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const Tensor& t : s.model.tensors) out.emplace_back(t.name, hash_range(*t.source, t.source_offset, t.nbytes()));
  return out;
}

uint64_t zeros_hash(uint64_t n) {
  std::vector<uint8_t> z(n);
  return XXH64(z.data(), z.size(), 0);
}

Tensor f32(const std::string& name, uint64_t bytes, std::shared_ptr<const ByteSource> src) {
  Tensor t;
  t.name = name;
  t.dims = {bytes / 4};
  t.source = std::move(src);
  return t;
}

// The sparse stand-in, at alignment 4096 so every tensor starts on a block: "head" 64 KiB
// of data, "big.0" 32 MiB of zeros punched out, "mid" 4 KiB of data, "big.1" a hole as well,
// "tail" 64 KiB of data. Written with the zeros as data, then punched, so the source is
// sparse whatever the writer does with holes.
struct Sparse {
  std::string path;
  uint64_t disk = 0, data_offset = 0;
  Scanned scanned;
};
Sparse make_sparse(const std::string& name) {
  Model m;
  m.metadata.push_back({"general.alignment", Value::of_u32(4096)});
  m.metadata.push_back({"general.name", Value::of_string("holes")});
  m.tensors.push_back(f32("head", 64 * kKiB, random_bytes_source("head", 64 * kKiB, 1)));
  m.tensors.push_back(f32("big.0", kBig, constant_source("big.0", kBig, 0)));
  m.tensors.push_back(f32("mid", 4 * kKiB, random_bytes_source("mid", 4 * kKiB, 2)));
  m.tensors.push_back(f32("big.1", kBig, constant_source("big.1", kBig, 0)));
  m.tensors.push_back(f32("tail", 64 * kKiB, random_bytes_source("tail", 64 * kKiB, 3)));
  Sparse s;
  s.path = temp_path(name);
  Layout L = write_file(m, s.path);
  s.data_offset = L.data_offset;
  punch(s.path, L.data_offset + L.tensor_offsets[1], kBig);
  punch(s.path, L.data_offset + L.tensor_offsets[3], kBig);
  s.disk = disk_use(s.path);
  s.scanned = scan_file(s.path);
  return s;
}

// The file system of the temporary folder keeps holes (tmpfs and ext4 do): else there is
// nothing to keep, and the disk-use assertions are skipped.
bool holes_here(const Sparse& s) { return s.disk < kBig; }

void expect_same_data(const Sparse& src, const std::string& out) {
  auto want = tensor_hashes(src.path), got = tensor_hashes(out);
  EXPECT_EQ(got, want);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[1].second, zeros_hash(kBig));  // the holes read as zeros
  EXPECT_EQ(got[3].second, zeros_hash(kBig));
}

uint64_t tensor_bytes(const Sparse& s) {
  uint64_t n = 0;
  for (const Tensor& t : s.scanned.model.tensors) n += t.nbytes();
  return n;
}

void expect_verified(const WrittenFile& f, const Sparse& src) {
  EXPECT_EQ(f.tensors_verified, 5u);
  // Every tensor byte is verified, the holes' too (found still holes, or read as zeros).
  EXPECT_GE(f.bytes_verified, tensor_bytes(src));
  EXPECT_LE(f.bytes_verified, f.file_size - f.data_offset);
}

EditReport edit_to(const Sparse& src, const std::string& out, const std::function<void(EditRequest&)>& how) {
  EditRequest req;
  req.input = src.path;
  req.output = out;
  req.write.force = true;
  how(req);
  return edit(req);
}

}  // namespace

TEST(Holes, AFileSourceReportsItsPunchedHolesAndItsDataExtentByExtent) {
  Sparse s = make_sparse("holes-extents.gguf");
  if (!holes_here(s)) GTEST_SKIP() << "the temporary folder's file system keeps no holes";
  const Layout& L = s.scanned.layout;
  uint64_t d = L.data_offset;
  auto src = open_file(s.path);
  Extents want = {{0, d + L.tensor_offsets[1], false},
                  {d + L.tensor_offsets[1], d + L.tensor_offsets[2], true},
                  {d + L.tensor_offsets[2], d + L.tensor_offsets[3], false},
                  {d + L.tensor_offsets[3], d + L.tensor_offsets[4], true},
                  {d + L.tensor_offsets[4], src->size(), false}};
  EXPECT_EQ(extents_of(*src, 0, src->size()), want);
  // Asked from inside a hole, with a limit inside it: the hole up to the limit.
  ByteSource::Extent e = src->extent(d + L.tensor_offsets[1] + 100, d + L.tensor_offsets[1] + 5000);
  EXPECT_EQ(e.end, d + L.tensor_offsets[1] + 5000);
  EXPECT_TRUE(e.hole);
  EXPECT_LT(s.disk, 200 * kKiB);
}

TEST(Holes, AWholeFileEditOfASparseFileIsAsSparseAndReadsTheSame) {
  Sparse s = make_sparse("holes-edit.gguf");
  const std::string out = temp_path("holes-edit-out.gguf");
  // A name longer than the header's padding: the header grows a block, the data moves.
  EditReport r = edit_to(s, out, [](EditRequest& q) { q.patch.add_set("general.name", std::string(5000, 'n')); });
  EXPECT_EQ(r.written, Written::whole_file);
  EXPECT_EQ(r.data_offset_after, s.data_offset + 4096);
  ASSERT_EQ(r.files.size(), 1u);
  expect_verified(r.files[0], s);
  expect_same_data(s, out);
  if (!holes_here(s)) GTEST_SKIP() << "the temporary folder's file system keeps no holes";
  EXPECT_LE(disk_use(out), s.disk + kSlack) << "source " << s.disk;
}

TEST(Holes, ARewriteAndARealignKeepTheHolesAtAnyAlignment) {
  Sparse s = make_sparse("holes-realign.gguf");
  const std::string same = temp_path("holes-rewrite-out.gguf"), moved = temp_path("holes-realign-out.gguf");
  EditReport r = edit_to(s, same, [](EditRequest& q) { q.always_write = true; });
  ASSERT_EQ(r.files.size(), 1u);
  expect_verified(r.files[0], s);
  EXPECT_EQ(read_file_bytes(same), read_file_bytes(s.path));  // a rewrite is the same bytes
  // Alignment 32: the data section starts where the header ends, off any block boundary.
  EditReport a = edit_to(s, moved, [](EditRequest& q) { q.patch.set_alignment("32"); });
  ASSERT_EQ(a.files.size(), 1u);
  EXPECT_NE(a.data_offset_after % 4096, 0u);
  expect_verified(a.files[0], s);
  expect_same_data(s, moved);
  if (!holes_here(s)) GTEST_SKIP() << "the temporary folder's file system keeps no holes";
  EXPECT_LE(disk_use(same), s.disk + kSlack) << "source " << s.disk;
  EXPECT_LE(disk_use(moved), s.disk + kSlack) << "source " << s.disk;
}

TEST(Holes, AConversionSwapsTheDataAndLeavesTheHolesBothWays) {
  Sparse s = make_sparse("holes-convert.gguf");
  const std::string big = temp_path("holes-big.gguf"), back = temp_path("holes-back.gguf");
  EditReport r = edit_to(s, big, [](EditRequest& q) { q.byte_order = ByteOrder::big; });
  ASSERT_EQ(r.files.size(), 1u);
  expect_verified(r.files[0], s);
  auto swapped = tensor_hashes(big);
  ASSERT_EQ(swapped.size(), 5u);
  EXPECT_NE(swapped[0], tensor_hashes(s.path)[0]);  // the data was turned over...
  EXPECT_EQ(swapped[1].second, zeros_hash(kBig));   // ... and the holes are zeros still
  EditReport b = edit_to(s, back, [&](EditRequest& q) {
    q.input = big;
    q.byte_order = ByteOrder::little;
  });
  ASSERT_EQ(b.files.size(), 1u);
  expect_verified(b.files[0], s);
  EXPECT_EQ(read_file_bytes(back), read_file_bytes(s.path));
  if (!holes_here(s)) GTEST_SKIP() << "the temporary folder's file system keeps no holes";
  EXPECT_LE(disk_use(big), s.disk + kSlack) << "source " << s.disk;
  EXPECT_LE(disk_use(back), s.disk + kSlack) << "source " << s.disk;
}

TEST(Holes, ASplitAndItsMergeKeepTheHoles) {
  Sparse s = make_sparse("holes-split.gguf");
  SplitRequest sr;
  sr.input = s.path;
  sr.prefix = temp_path("holes-shard");
  sr.max_tensors = 2;
  std::vector<WrittenFile> shards = split(sr);
  ASSERT_EQ(shards.size(), 3u);
  uint64_t disk = 0, verified = 0;
  for (const WrittenFile& f : shards) {
    disk += disk_use(f.path);
    verified += f.tensors_verified;
  }
  EXPECT_EQ(verified, 5u);
  MergeRequest mr;
  mr.input = shards[1].path;
  mr.output = temp_path("holes-merged.gguf");
  std::vector<WrittenFile> merged = merge(mr);
  ASSERT_EQ(merged.size(), 1u);
  expect_verified(merged[0], s);
  expect_same_data(s, mr.output);
  if (!holes_here(s)) GTEST_SKIP() << "the temporary folder's file system keeps no holes";
  EXPECT_LE(disk, s.disk + 3 * kSlack) << "source " << s.disk;
  EXPECT_LE(disk_use(mr.output), s.disk + kSlack) << "source " << s.disk;
}

TEST(Holes, DataBlocksBetweenHolesAreCopiedExactlyAndTheHolesAroundThemStay) {
  // One 8 MiB tensor of random bytes, punched at block granularity: data 64 KiB, a hole of
  // 256 KiB, one data block, a hole to 2 MiB, two data blocks, a hole to the end.
  const uint64_t n = 8 * kMiB;
  Model m;
  m.metadata.push_back({"general.alignment", Value::of_u32(4096)});
  m.tensors.push_back(f32("pattern", n, random_bytes_source("pattern", n, 7)));
  const std::string path = temp_path("holes-pattern.gguf"), out = temp_path("holes-pattern-out.gguf");
  Layout L = write_file(m, path);
  const uint64_t d = L.data_offset;
  punch(path, d + 64 * kKiB, 256 * kKiB);
  punch(path, d + 324 * kKiB, 2 * kMiB - 324 * kKiB);
  punch(path, d + 2 * kMiB + 8 * kKiB, n - 2 * kMiB - 8 * kKiB);
  auto src = open_file(path);
  Extents want = {{0, d + 64 * kKiB, false},
                  {d + 64 * kKiB, d + 320 * kKiB, true},
                  {d + 320 * kKiB, d + 324 * kKiB, false},
                  {d + 324 * kKiB, d + 2 * kMiB, true},
                  {d + 2 * kMiB, d + 2 * kMiB + 8 * kKiB, false},
                  {d + 2 * kMiB + 8 * kKiB, d + n, true}};
  if (disk_use(path) > 1 * kMiB) GTEST_SKIP() << "the temporary folder's file system keeps no holes";
  ASSERT_EQ(extents_of(*src, 0, src->size()), want);
  EditRequest req;
  req.input = path;
  req.output = out;
  req.patch.add_set("general.name", "pattern");  // the header grows within its padding
  EditReport r = edit(req);
  ASSERT_EQ(r.data_offset_after, d);
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].tensors_verified, 1u);
  EXPECT_EQ(r.files[0].bytes_verified, n);
  want[0] = {d, d + 64 * kKiB, false};  // the data section alone
  EXPECT_EQ(extents_of(*open_file(out), d, d + n), want);
  auto a = read_file_bytes(path), b = read_file_bytes(out);
  ASSERT_EQ(b.size(), a.size());
  EXPECT_TRUE(std::equal(a.begin() + static_cast<std::ptrdiff_t>(d), a.end(), b.begin() + static_cast<std::ptrdiff_t>(d)));
  EXPECT_EQ(b[d + 320 * kKiB + 5], a[d + 320 * kKiB + 5]);
  EXPECT_EQ(b[d + 2 * kMiB + 8 * kKiB - 1], a[d + 2 * kMiB + 8 * kKiB - 1]);
}

TEST(Holes, AReplicasHoleTensorsAreWrittenAsHolesAndAMemorySinkWritesZeros) {
  Model m;
  m.metadata.push_back({"general.alignment", Value::of_u32(4096)});
  m.tensors.push_back(f32("w", kBig, hole_source("w", kBig)));
  m.tensors.push_back(f32("x", 4 * kKiB, random_bytes_source("x", 4 * kKiB, 9)));
  std::vector<uint8_t> bytes = to_bytes(m);
  Layout L = plan(m);
  ASSERT_EQ(bytes.size(), L.file_size);
  EXPECT_EQ(XXH64(bytes.data() + L.data_offset, kBig, 0), zeros_hash(kBig));
  const std::string path = temp_path("holes-replica.gguf");
  write_file(m, path);
  EXPECT_EQ(read_file_bytes(path), bytes);
  Sparse probe = make_sparse("holes-probe.gguf");
  if (!holes_here(probe)) GTEST_SKIP() << "the temporary folder's file system keeps no holes";
  EXPECT_LE(disk_use(path), 4096 + 4 * kKiB + kSlack);
}

TEST(Holes, AByteWrittenIntoAHoleOfTheOutputIsCaughtByTheVerifier) {
  // The verifier reads a hole of the output only where it is data: a byte flipped in its
  // middle (after the hole was left, before it is checked) is found, named by tensor and byte.
  Sparse s = make_sparse("holes-flip.gguf");
  const std::string out = temp_path("holes-flip-out.gguf");
  const uint64_t at = s.data_offset + s.scanned.layout.tensor_offsets[3] + 12345;  // in big.1
  CliRun r = run_cli("edit " + s.path + " --set general.name=flipped -o " + out, "GGUFKIT_FAULT='copied:flip:" + std::to_string(at) + "' ",
                     GGUFKIT_FAULTY_BIN);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("at byte " + std::to_string(at) + ", tensor[3] big.1 (data): verification failed: byte 12345 of the "
                       "tensor's data (byte " + std::to_string(at) + " of the file) is not what was read from the source"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}
