#include "ggufkit/rewrite.h"

#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ggufkit/error.h"
#include "ggufkit/fault.h"
#include "ggufkit/output.h"
#include "ggufkit/scan.h"
#include "ggufkit/writer.h"

namespace ggufkit {

namespace {

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
        fault_point("copied", {-1, buf.data(), k});
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

// The first byte of the written file, from `at`, that differs from the tensor's source:
// a checksum mismatch is reported with the byte a person can look at.
uint64_t first_difference(int fd, uint64_t at, const Tensor& t, const std::string& name) {
  std::vector<uint8_t> a(kPiece), b(kPiece);
  for (uint64_t done = 0, n = t.nbytes(); done < n;) {
    size_t k = static_cast<size_t>(std::min<uint64_t>(n - done, kPiece));
    t.source->read_at(t.source_offset + done, a.data(), k);
    if (::pread(fd, b.data(), k, static_cast<off_t>(at + done)) != static_cast<ssize_t>(k))
      throw_io(name, "cannot re-read the written file at byte " + std::to_string(at + done));
    for (size_t i = 0; i < k; ++i)
      if (a[i] != b[i]) return at + done + i;
    done += k;
  }
  return at;  // the source changed under us: the range as a whole
}

void cancelled(const RewriteOptions& opt, const std::string& target) {
  if (opt.cancel && opt.cancel->load()) {
    errno = 0;
    throw_io(target, "interrupted by a signal");
  }
}

bool same_tensors(const Model& a, const Model& b) {
  if (a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i)
    if (a.tensors[i].name != b.tensors[i].name || a.tensors[i].dims != b.tensors[i].dims ||
        a.tensors[i].type != b.tensors[i].type)
      return false;
  return true;
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
  } else if (have_source) {
    refuse_same_file(source, dest, "; use --in-place to replace it safely");
  }
  mode_t mode = have_source ? (src_st.st_mode & 07777) : 0644;
  const std::string note = "; nothing was changed" + (have_source ? " (" + source + " is as it was)" : std::string());

  RewriteResult result;
  result.path = target;
  try {
    result.layout = plan(model);
    PendingFile out(target, mode, opt.in_place || opt.replace);
    uint64_t total = result.layout.file_size;
    auto progress = [&](uint64_t w) {
      if (opt.progress) opt.progress(w, total);
    };
    std::vector<Hashed> hashes;
    if (opt.verify) {
      HashingSink sink(out.fd(), target);
      sink.cancel = opt.cancel;
      sink.progress = progress;
      emit(model, result.layout, sink);
      hashes = std::move(sink.hashes);
    } else {
      FdSink sink(out.fd(), target);
      sink.cancel = opt.cancel;
      sink.progress = progress;
      emit(model, result.layout, sink);
    }

    fault_point("written", {out.fd(), nullptr, 0});
    out.flush();

    // The header, re-read by the strict reader, must be what was planned.
    Scanned back = scan(open_file(out.proc_path()));
    if (back.layout != result.layout || back.model.metadata != model.metadata || !same_tensors(back.model, model) ||
        back.source_size != result.layout.file_size) {
      errno = 0;
      throw_io(target, "verification failed: the written header does not read back as planned");
    }
    for (size_t i = 0; i < hashes.size(); ++i) {
      const Hashed& h = hashes[i];
      cancelled(opt, target);
      if (hash_range(out.fd(), h.offset, h.size, target) != h.hash) {
        const Tensor& t = model.tensors[i];  // emit copies tensor data in model order
        uint64_t at = first_difference(out.fd(), h.offset, t, target);
        errno = 0;
        throw Error(Error::Kind::io, target, at, "tensor[" + std::to_string(i) + "] " + t.name + " (data)",
                    "verification failed: byte " + std::to_string(at - h.offset) + " of the tensor's data (byte " +
                        std::to_string(at) + " of the file) is not what was read from the source");
      }
      result.tensors_verified++;
      result.bytes_verified += h.size;
    }
    fault_point("verified");
    cancelled(opt, target);
    out.commit();
  } catch (const Error& e) {
    throw Error(e.kind, e.file.empty() ? target : e.file, e.offset, e.field, e.message + note);
  }
  return result;
}

}  // namespace ggufkit
