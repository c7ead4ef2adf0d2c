#include "ggufkit/source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ggufkit/error.h"

namespace ggufkit {

FileSource::FileSource(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw_io(path_, "cannot open for reading");
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    ::close(fd_);
    throw_io(path_, "cannot stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    errno = 0;
    throw_io(path_, "not a regular file");
  }
  size_ = static_cast<uint64_t>(st.st_size);
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  if (size_ > 0) {
    void* m = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (m != MAP_FAILED) map_ = static_cast<const uint8_t*>(m);  // else read_at serves
  }
}

FileSource::~FileSource() {
  if (map_) ::munmap(const_cast<uint8_t*>(map_), size_);
  if (fd_ >= 0) ::close(fd_);
}

void FileSource::read_at(uint64_t offset, void* dst, size_t n) const {
  if (offset > size_ || n > size_ - offset) {
    errno = 0;
    throw_io(path_, "read of " + std::to_string(n) + " bytes at " + std::to_string(offset) +
                        " is past the end of the file (" + std::to_string(size_) + " bytes)");
  }
  auto* out = static_cast<uint8_t*>(dst);
  while (n > 0) {
    ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      if (got == 0) errno = 0;
      throw_io(path_, "read failed at byte " + std::to_string(offset));
    }
    out += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<size_t>(got);
  }
}

void MemorySource::read_at(uint64_t offset, void* dst, size_t n) const {
  if (offset > bytes_.size() || n > bytes_.size() - offset) {
    errno = 0;
    throw_io(name_, "read of " + std::to_string(n) + " bytes at " + std::to_string(offset) +
                        " is past the end (" + std::to_string(bytes_.size()) + " bytes)");
  }
  if (n) std::memcpy(dst, bytes_.data() + offset, n);
}

std::shared_ptr<const ByteSource> open_file(const std::string& path) {
  return std::make_shared<FileSource>(path);
}

std::shared_ptr<const ByteSource> from_bytes(std::string name, std::vector<uint8_t> bytes) {
  return std::make_shared<MemorySource>(std::move(name), std::move(bytes));
}

}  // namespace ggufkit
