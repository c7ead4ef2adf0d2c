#include "ggufkit/rewrite.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "ggufkit/error.h"
#include "ggufkit/scan.h"
#include "ggufkit/writer.h"

namespace ggufkit {

namespace {

namespace fs = std::filesystem;

constexpr size_t kPiece = 1 << 20;

struct Hashed {
  uint64_t offset, size, hash;
};

// Copies tensor data through memory, hashing what it read, so the written file can be
// checked against exactly those bytes.
class HashingSink final : public FdSink {
 public:
  using FdSink::FdSink;
  std::vector<Hashed> hashes;

 protected:
  void transfer(const ByteSource& src, uint64_t offset, uint64_t n) override {
    XXH64_state_t* st = XXH64_createState();
    XXH64_reset(st, 0);
    std::vector<uint8_t> buf(std::min<uint64_t>(n, kPiece));
    uint64_t done = 0;
    try {
      while (done < n) {
        size_t k = static_cast<size_t>(std::min<uint64_t>(n - done, kPiece));
        src.read_at(offset + done, buf.data(), k);
        XXH64_update(st, buf.data(), k);
        put(buf.data(), k);
        done += k;
        if (done % (8 * kPiece) == 0 || done == n) tick(pos() + done);
      }
    } catch (...) {
      XXH64_freeState(st);
      throw;
    }
    hashes.push_back({pos(), n, XXH64_digest(st)});
    XXH64_freeState(st);
  }
};

uint64_t hash_range(int fd, uint64_t offset, uint64_t n, const std::string& name) {
  XXH64_state_t* st = XXH64_createState();
  XXH64_reset(st, 0);
  std::vector<uint8_t> buf(std::min<uint64_t>(n, kPiece));
  while (n > 0) {
    size_t k = static_cast<size_t>(std::min<uint64_t>(n, kPiece));
    ssize_t got = ::pread(fd, buf.data(), k, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      XXH64_freeState(st);
      throw_io(name, "cannot re-read the written file at byte " + std::to_string(offset));
    }
    XXH64_update(st, buf.data(), static_cast<size_t>(got));
    offset += static_cast<uint64_t>(got);
    n -= static_cast<uint64_t>(got);
  }
  uint64_t h = XXH64_digest(st);
  XXH64_freeState(st);
  return h;
}

bool same_tensors(const Model& a, const Model& b) {
  if (a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i)
    if (a.tensors[i].name != b.tensors[i].name || a.tensors[i].dims != b.tensors[i].dims ||
        a.tensors[i].type != b.tensors[i].type)
      return false;
  return true;
}

// The temporary file and its cleanup: an O_TMPFILE has no name until it is linked, so
// even kill -9 leaves nothing; a named one is removed on every failure path we control.
struct TempFile {
  int fd = -1;
  std::string named;  // set while a name exists that must be removed on failure
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!named.empty()) ::unlink(named.c_str());
  }
};

std::string unique_name(const fs::path& dir, const std::string& base) {
  std::random_device rd;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08x", rd());
  return (dir / ("." + base + ".ggufkit-" + std::to_string(::getpid()) + "-" + buf)).string();
}

}  // namespace

RewriteResult safe_rewrite(const Model& model, const std::string& source, const std::string& dest,
                           const RewriteOptions& opt) {
  struct stat src_st {};
  bool have_source = !source.empty() && ::stat(source.c_str(), &src_st) == 0;
  std::string target = dest;
  if (opt.in_place) {
    if (!have_source) throw_io(source, "cannot find the file to rewrite in place");
    char real[PATH_MAX];
    if (!::realpath(source.c_str(), real)) throw_io(source, "cannot resolve the path");
    target = real;  // a symlink's target is replaced, not the link
  } else {
    struct stat dst_st {};
    if (have_source && ::stat(dest.c_str(), &dst_st) == 0 && dst_st.st_dev == src_st.st_dev &&
        dst_st.st_ino == src_st.st_ino)
      throw_usage("refusing to write over the input " + source + ": " + dest +
                  " is the same file; use --in-place to replace it safely");
  }
  fs::path dir = fs::path(target).parent_path();
  if (dir.empty()) dir = ".";
  std::string base = fs::path(target).filename().string();
  mode_t mode = have_source ? (src_st.st_mode & 07777) : 0644;
  const std::string note = "; nothing was changed" + (have_source ? " (" + source + " is as it was)" : std::string());

  RewriteResult result;
  result.path = target;
  TempFile tmp;
  try {
    result.layout = plan(model);
    tmp.fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
    if (tmp.fd < 0) {  // no O_TMPFILE here: a hidden named file, removed on failure
      std::string name = unique_name(dir, base);
      tmp.fd = ::open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
      if (tmp.fd < 0) throw_io(target, "cannot create a temporary file in " + dir.string());
      tmp.named = name;
    }
    uint64_t total = result.layout.file_size;
    auto progress = [&](uint64_t w) {
      if (opt.progress) opt.progress(w, total);
    };
    std::vector<Hashed> hashes;
    if (opt.verify) {
      HashingSink sink(tmp.fd, target);
      sink.cancel = opt.cancel;
      sink.progress = progress;
      emit(model, result.layout, sink);
      hashes = std::move(sink.hashes);
    } else {
      FdSink sink(tmp.fd, target);
      sink.cancel = opt.cancel;
      sink.progress = progress;
      emit(model, result.layout, sink);
    }
    if (::fsync(tmp.fd) != 0) throw_io(target, "fsync failed");

    // The header, re-read by the strict reader, must be what was planned.
    Scanned back = scan(open_file("/proc/self/fd/" + std::to_string(tmp.fd)));
    if (back.layout != result.layout || back.model.metadata != model.metadata || !same_tensors(back.model, model) ||
        back.source_size != result.layout.file_size) {
      errno = 0;
      throw_io(target, "verification failed: the written header does not read back as planned");
    }
    for (const Hashed& h : hashes) {
      if (opt.cancel && opt.cancel->load()) {
        errno = 0;
        throw_io(target, "interrupted by a signal");
      }
      if (hash_range(tmp.fd, h.offset, h.size, target) != h.hash) {
        errno = 0;
        throw_io(target, "verification failed: the tensor data at byte " + std::to_string(h.offset) +
                             " does not match what was read");
      }
      result.tensors_verified++;
      result.bytes_verified += h.size;
    }
    if (::fchmod(tmp.fd, mode) != 0) throw_io(target, "cannot set the file mode");
    if (tmp.named.empty()) {
      std::string name = unique_name(dir, base);
      std::string proc = "/proc/self/fd/" + std::to_string(tmp.fd);
      if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) != 0)
        throw_io(target, "cannot give the finished file a name in " + dir.string());
      tmp.named = name;
    }
    if (opt.cancel && opt.cancel->load()) {
      errno = 0;
      throw_io(target, "interrupted by a signal");
    }
    if (::rename(tmp.named.c_str(), target.c_str()) != 0) throw_io(target, "cannot rename the finished file into place");
    tmp.named.clear();  // committed: it is the destination now
  } catch (const Error& e) {
    throw Error(e.kind, e.file.empty() ? target : e.file, e.offset, e.field, e.message + note);
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {  // the rename itself is durable once the folder is
    ::fsync(dfd);
    ::close(dfd);
  }
  return result;
}

}  // namespace ggufkit
