#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ggufkit/context.h"

namespace ggufkit {

// Random access to bytes: where a model's tensor data lives. A file is opened read-only;
// nothing is read until asked for.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual const std::string& name() const = 0;
  virtual uint64_t size() const = 0;
  // Copies [offset, offset + n) into dst; throws an io Error if the range is not there.
  virtual void read_at(uint64_t offset, void* dst, size_t n) const = 0;
  // The bytes in memory when the source has them there (a buffer), else nullptr.
  virtual const uint8_t* data() const { return nullptr; }
  // The first n bytes in memory, held while the pointer lives: a copy of them as they
  // were when read (a model's tensor data is never read this way, so its address space is
  // its header's). `held`, when given, is set to how many bytes the pointer
  // holds: a longer prefix already mapped is shared.
  virtual std::shared_ptr<const uint8_t> prefix(uint64_t n, uint64_t* held = nullptr) const;
  // The prefix at `held` is read no further than n bytes from now on: a file's map gives
  // the address space beyond back (a header mapped in doubling prefixes took up to twice
  // its size).
  virtual void trim(const uint8_t* held, uint64_t n) const { (void)held, (void)n; }
  // The file behind the source, open while the pointer lives (lets a sink copy in the
  // kernel), or null.
  virtual std::shared_ptr<const int> file() const { return nullptr; }
  // Held while a header is read in several prefixes: a file's shared lock, so that no
  // ggufkit edit writes between two of them. Null for a source that needs none.
  virtual std::shared_ptr<const void> read_lock() const { return nullptr; }
  // How the bytes from `offset` are stored, up to `limit` (> offset): [offset, end) is a
  // hole (reads as zeros and takes no disk: a sparse file's, a replica's) or data. A writer
  // that copies a hole leaves one, as `cp --sparse=auto` does. Default: all data.
  struct Extent {
    uint64_t end = 0;
    bool hole = false;
  };
  virtual Extent extent(uint64_t offset, uint64_t limit) const { (void)offset; return {limit, false}; }
};

// ByteSource::extent of an open file, from lseek's SEEK_DATA and SEEK_HOLE: a hole only where
// the file system says so (whole blocks that read as zeros), data where it cannot say
// (no support: EINVAL) and past the file's end now (so that a read of a file cut short fails).
ByteSource::Extent file_extent(int fd, uint64_t offset, uint64_t limit);

class FileSource final : public ByteSource {
 public:
  // Its locks are the call's (ctx): notes go to its sink while the source lives.
  explicit FileSource(std::string path, Context ctx = {});
  ~FileSource() override;
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  const std::string& name() const override { return path_; }
  uint64_t size() const override { return size_; }
  void read_at(uint64_t offset, void* dst, size_t n) const override;
  std::shared_ptr<const uint8_t> prefix(uint64_t n, uint64_t* held = nullptr) const override;
  void trim(const uint8_t* held, uint64_t n) const override;
  std::shared_ptr<const int> file() const override;
  std::shared_ptr<const void> read_lock() const override;
  Extent extent(uint64_t offset, uint64_t limit) const override { return file_extent(*file(), offset, limit); }
  // Closes the source's own descriptor once its header is read (a use under way keeps it
  // to its end): a set of 1,200 shards is read holding none of them open. Each later use
  // (file(), a read) opens the file again by its name for as long as it lasts, and throws
  // changed() when the name no longer leads to the file read.
  void release();
  uint64_t device() const { return dev_; }
  uint64_t inode() const { return ino_; }
  // Whether `st` (of a file open now) is this file as it was opened: the same device and
  // inode, size, and times of the last change (a write into it, by anyone, changes them).
  bool same_file(const struct stat& st) const;
  // Throws the io Error that says the file changed while it was read.
  [[noreturn]] void changed() const;

 private:
  std::string path_;
  Context ctx_;
  // The descriptor is closed when its last holder lets go: a source released while a copy
  // is under way (on another thread) cannot close it under that copy.
  mutable std::mutex fd_m_;
  std::shared_ptr<const int> fd_;          // the source's own, until release()
  mutable std::weak_ptr<const int> lent_;  // after release(): the file as open for the uses under way
  uint64_t size_ = 0, dev_ = 0, ino_ = 0;
  int64_t mtime_ns_ = 0, ctime_ns_ = 0;
  // The longest prefix mapped while it is held: a header read again (the strict re-read,
  // the journal's checksums) is not mapped a second time.
  mutable std::mutex m_;
  mutable std::weak_ptr<const uint8_t> mapped_;
  mutable uint64_t mapped_n_ = 0;
  mutable std::shared_ptr<size_t> mapped_len_;  // what the map's deleter unmaps; trim shortens it
  mutable std::shared_ptr<const uint8_t> growing_;  // the last prefix, until trim(): a longer one grows it
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string name, std::vector<uint8_t> bytes)
      : name_(std::move(name)), bytes_(std::move(bytes)) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return bytes_.size(); }
  void read_at(uint64_t offset, void* dst, size_t n) const override;
  const uint8_t* data() const override { return bytes_.data(); }

 private:
  std::string name_;
  std::vector<uint8_t> bytes_;
};

// A model file: a regular file only. A named pipe, socket, folder or device is refused at
// once (the file is opened without blocking and checked before it is read). Its shared
// locks while it reads are the call's (ctx).
std::shared_ptr<const ByteSource> open_file(const std::string& path, const Context& ctx = {});

// n bytes of `fd` from `offset`, whatever pread returns at a time; an io Error naming `name`
// and the byte (`what`: "read failed") when it fails or the file ends first.
void pread_all(int fd, const std::string& name, void* dst, size_t n, uint64_t offset, const char* what = "read failed");

// A small text input (a patch, a sketch, a template): read to its end under `cap`, so a
// file that reports size 0 (/proc) is read whole, and so are a pipe (`-`, /dev/fd/N, a
// named pipe), a socket and a device, past the cap refused. Folders and block devices are
// refused.
std::string read_small_file(const std::string& path, uint64_t cap);
std::shared_ptr<const ByteSource> from_bytes(std::string name, std::vector<uint8_t> bytes);

}  // namespace ggufkit
