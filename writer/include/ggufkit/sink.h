#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ggufkit/source.h"

namespace ggufkit {

// Where the writer's bytes go. pos() is the number of bytes written so far; emit()
// checks it against the plan at the start of every span.
class Sink {
 public:
  virtual ~Sink() = default;
  void write(const void* data, size_t n) {
    put(data, n);
    pos_ += n;
  }
  // n bytes of src from offset, streamed in pieces; never loaded whole.
  void copy(const ByteSource& src, uint64_t offset, uint64_t n) {
    transfer(src, offset, n);
    pos_ += n;
  }
  void zeros(uint64_t n);
  uint64_t pos() const { return pos_; }
  // Hands on whatever the sink still holds; emit() calls it after the last byte.
  virtual void finish() {}

 protected:
  virtual void put(const void* data, size_t n) = 0;
  virtual void transfer(const ByteSource& src, uint64_t offset, uint64_t n);  // chunked read + put
  virtual bool counts_only() const { return false; }  // zeros are counted, not walked

 private:
  uint64_t pos_ = 0;
};

// Counts and keeps nothing: the encoder run into it gives every size (plan()).
class CountingSink final : public Sink {
 protected:
  void put(const void*, size_t) override {}
  void transfer(const ByteSource&, uint64_t, uint64_t) override {}
  bool counts_only() const override { return true; }  // a gap of 2^60 bytes is counted, not walked
};

class VectorSink final : public Sink {
 public:
  std::vector<uint8_t> bytes;

 protected:
  void put(const void* data, size_t n) override;
};

// Writes to an open file descriptor. The header's many small fields are gathered into
// large writes (a 6 MB vocabulary is 760,000 fields); tensor data from a file is copied in
// the kernel (copy_file_range) where it can be, else read and written in pieces. After
// each piece of copied data it passes the `copied` fault point and calls copied(); between
// pieces it reports progress and stops, with an io Error, when `cancel` is set. A source's
// holes (ByteSource::extent) are left unwritten, as `cp --sparse=auto` does, so `fd` must be
// an empty file (a fresh temporary file). Every write says where it goes (pwrite): the
// descriptor's position is nobody's, and the verifier may lseek it for holes.
class FdSink : public Sink {
 public:
  FdSink(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(uint64_t written)> progress;
  void finish() override { drain(); }

 protected:
  void put(const void* data, size_t n) override;
  void transfer(const ByteSource& src, uint64_t offset, uint64_t n) override;
  // A piece of copied data now lies at [at, at + n) of the output: from src at `offset`
  // when the kernel copied it, or from `bytes` (src is then null) when it went through memory.
  virtual void copied(const ByteSource* src, uint64_t offset, const uint8_t* bytes, uint64_t at, uint64_t n) {
    (void)src, (void)offset, (void)bytes, (void)at, (void)n;
  }
  // A hole of src at `offset` was left unwritten at [at, at + n) of the output (src is null
  // when it may not outlive the call). It passed the `copied` fault point too.
  virtual void hole(const ByteSource* src, uint64_t offset, uint64_t at, uint64_t n) {
    (void)src, (void)offset, (void)at, (void)n;
  }

  int fd_;
  std::string name_;

 private:
  void drain();
  void copy_data(const ByteSource& src, uint64_t offset, uint64_t at, uint64_t n);
  void leave_hole(const ByteSource& src, uint64_t offset, uint64_t at, uint64_t n);
  void write_all(const uint8_t* p, size_t n, uint64_t at);
  void tick(uint64_t written);  // progress, and the cancel check
  std::vector<uint8_t> buf_;    // header bytes not yet written
};

}  // namespace ggufkit
