#include "ggufkit/sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ggufkit/error.h"
#include "ggufkit/fault.h"
#include "ggufkit/source.h"

namespace ggufkit {

namespace {
constexpr uint64_t kChunk = 1 << 20;
}  // namespace

void Sink::zeros(uint64_t n) {
  if (counts_only()) {
    pos_ += n;
    return;
  }
  static const uint8_t zero[4096] = {};
  while (n > 0) {  // through write(): a sink's put() may place each piece by pos()
    size_t k = static_cast<size_t>(std::min<uint64_t>(n, sizeof zero));
    write(zero, k);
    n -= k;
  }
}

void Sink::transfer(const ByteSource& src, uint64_t offset, uint64_t n) {
  // A file is read with pread, not through its map: a file cut short under us then
  // gives a read error instead of SIGBUS.
  if (const uint8_t* mem = src.data()) {
    if (offset > src.size() || n > src.size() - offset) src.read_at(offset, nullptr, n);  // throws
    while (n > 0) {  // in pieces, so a map is paged in and out as it goes
      size_t k = static_cast<size_t>(std::min(n, kChunk));
      put(mem + offset, k);
      offset += k;
      n -= k;
    }
    return;
  }
  std::vector<uint8_t> buf(static_cast<size_t>(std::min(n, kChunk)));
  while (n > 0) {
    size_t k = static_cast<size_t>(std::min<uint64_t>(n, buf.size()));
    src.read_at(offset, buf.data(), k);
    put(buf.data(), k);
    offset += k;
    n -= k;
  }
}

void VectorSink::put(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  bytes.insert(bytes.end(), p, p + n);
}

void FdSink::put(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  if (buf_.size() + n > kChunk) drain();
  if (n >= kChunk) return write_all(p, n, pos());
  if (buf_.capacity() == 0) buf_.reserve(kChunk);
  buf_.insert(buf_.end(), p, p + n);
}

void FdSink::drain() {
  if (buf_.empty()) return;
  write_all(buf_.data(), buf_.size(), pos() - buf_.size());
  buf_.clear();
}

void FdSink::write_all(const uint8_t* p, size_t n, uint64_t at) {
  while (n > 0) {
    int injected = fault_point("write");
    ssize_t w = injected ? (errno = injected, -1) : ::pwrite(fd_, p, n, static_cast<off_t>(at));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw_io(name_, "write failed at byte " + std::to_string(at));
    p += w;
    at += static_cast<uint64_t>(w);
    n -= static_cast<size_t>(w);
  }
}

void FdSink::tick(uint64_t written) {
  if (cancel && cancel->load()) {
    errno = 0;
    throw_io(name_, "interrupted by a signal");
  }
  if (progress) progress(written);
}

namespace {
// A hole shorter than this is copied as zeros, as data: leaving it would save a few blocks
// at most (none where it covers no whole block of the output, whose data may start off a
// block), for an ftruncate and a more fragmented file. The holes that matter,
// a replica's or a sparse stand-in's, are megabytes to gigabytes.
constexpr uint64_t kMinHole = 64 << 10;
}  // namespace

void FdSink::transfer(const ByteSource& src, uint64_t offset, uint64_t n) {
  drain();
  const uint64_t at = pos();  // the bytes go to [at, at + n)
  for (uint64_t done = 0; done < n;) {
    ByteSource::Extent e = src.extent(offset + done, offset + n);
    bool sane = e.end > offset + done && e.end <= offset + n;
    uint64_t k = sane ? e.end - (offset + done) : n - done;
    if (sane && e.hole && k >= kMinHole) leave_hole(src, offset + done, at + done, k);
    else copy_data(src, offset + done, at + done, k);
    done += k;
  }
}

void FdSink::leave_hole(const ByteSource& src, uint64_t offset, uint64_t at, uint64_t n) {
  // The output is written in order from its start, so it ends at `at`: going on past the
  // hole leaves [at, at + n) unwritten, which reads as zeros and takes no disk. The file is
  // made that long now, not when it is finished, so that the hole can be read back at once
  // and a file that ends in one has its size.
  if (::ftruncate(fd_, static_cast<off_t>(at + n)) != 0) throw_io(name_, "write failed at byte " + std::to_string(at));
  fault_point("copied", {fd_, at, n});
  hole(dynamic_cast<const FileSource*>(&src) ? &src : nullptr, offset, at, n);
  tick(at + n);
}

void FdSink::copy_data(const ByteSource& src, uint64_t offset, uint64_t at, uint64_t n) {
  uint64_t done = 0;
  auto piece = [&](const ByteSource* from, const uint8_t* bytes, uint64_t k) {
    // Start writing the piece to the disk now, so the final flush has little left to wait
    // for; a hint only (a file system without it just flushes later).
    ::sync_file_range(fd_, static_cast<off_t>(at + done), static_cast<off_t>(k), SYNC_FILE_RANGE_WRITE);
    fault_point("copied", {fd_, at + done, k});
    copied(from, offset + done, bytes, at + done, k);
    done += k;
    tick(at + done);
  };
  if (const auto file = src.file(); file && offset <= src.size() && n <= src.size() - offset) {
    auto in = static_cast<loff_t>(offset), out = static_cast<loff_t>(at);
    while (done < n) {
      if (int injected = fault_point("write")) {
        errno = injected;
        throw_io(name_, "write failed at byte " + std::to_string(at + done));
      }
      ssize_t k = ::copy_file_range(*file, &in, fd_, &out, static_cast<size_t>(std::min(n - done, kChunk * 8)), 0);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) break;  // not supported here, or a short file: on through memory below
      piece(&src, nullptr, static_cast<uint64_t>(k));
    }
  }
  // A file is read with pread, not through its map: a file cut short under us then gives
  // a read error instead of SIGBUS.
  std::vector<uint8_t> buf(static_cast<size_t>(std::min(n - done, kChunk * 8)));
  while (done < n) {
    size_t k = static_cast<size_t>(std::min<uint64_t>(n - done, buf.size()));
    src.read_at(offset + done, buf.data(), k);
    write_all(buf.data(), k, at + done);
    piece(nullptr, buf.data(), k);
  }
}

}  // namespace ggufkit
