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

 protected:
  virtual void put(const void* data, size_t n) = 0;
  virtual void transfer(const ByteSource& src, uint64_t offset, uint64_t n);  // chunked read + put

 private:
  uint64_t pos_ = 0;
};

// Counts and keeps nothing: the encoder run into it gives every size (plan()).
class CountingSink final : public Sink {
 protected:
  void put(const void*, size_t) override {}
  void transfer(const ByteSource&, uint64_t, uint64_t) override {}
};

class VectorSink final : public Sink {
 public:
  std::vector<uint8_t> bytes;

 protected:
  void put(const void* data, size_t n) override;
};

// Writes to an open file descriptor; tensor data from a file is copied in the kernel
// (copy_file_range) where it can be. Between pieces it reports progress and stops, with
// an io Error, when `cancel` is set (a signal handler sets it).
class FdSink : public Sink {
 public:
  FdSink(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(uint64_t written)> progress;

 protected:
  void put(const void* data, size_t n) override;
  void transfer(const ByteSource& src, uint64_t offset, uint64_t n) override;
  void tick(uint64_t written);  // progress, and the cancel check

  int fd_;
  std::string name_;
};

}  // namespace ggufkit
