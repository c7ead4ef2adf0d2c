#include "ggufkit/source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ggufkit/error.h"
#include "ggufkit/lock.h"
#include "ggufkit/path.h"

namespace ggufkit {

namespace {
int64_t ns(const struct timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; }

// Opens without blocking (a named pipe with no writer would hang a plain open) and says
// what kind of file it is before anything is read.
// allow_stream: devices, pipes and sockets too (a small document read whole, under a cap).
int open_checked(const std::string& path, struct stat& st, bool allow_stream) {
  int fd = open_path(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw_io(path, "cannot open for reading");
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw_io(path, "cannot stat");
  }
  const char* kind = S_ISDIR(st.st_mode)                          ? "a folder"
                     : S_ISBLK(st.st_mode)                        ? "a block device"
                     : allow_stream                               ? nullptr
                     : S_ISFIFO(st.st_mode)                       ? "a named pipe"
                     : S_ISSOCK(st.st_mode)                       ? "a socket"
                     : S_ISCHR(st.st_mode)                        ? "a device"
                                                                  : nullptr;
  if (kind) {
    ::close(fd);
    Error e(Error::Kind::usage, path, std::nullopt, "", std::string("is ") + kind + ", not a regular file");
    if (S_ISDIR(st.st_mode)) e.sys_errno = EISDIR;
    throw e;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

// An open file descriptor, closed when the last pointer to it goes.
std::shared_ptr<const int> owned_fd(int fd) {
  int* p = nullptr;
  try {
    p = new int(fd);
  } catch (...) {
    ::close(fd);
    throw;
  }
  return std::shared_ptr<const int>(p, [](const int* q) {  // (the deleter runs if this throws)
    ::close(*q);
    delete q;
  });
}
}  // namespace

std::string read_small_file(const std::string& path, uint64_t cap) {
  // A pipe is opened blocking, to wait for its writer as cat does: opened without blocking
  // first, it would read an end before the writer came, and lose what a writer quick to
  // come and go had written once it was closed again.
  struct stat st {};
  int fd = -1;
  if (stat_path(path, st) == 0 && S_ISFIFO(st.st_mode)) {
    fd = open_path(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw_io(path, "cannot open for reading");
  } else {
    fd = open_checked(path, st, true);
  }
  std::string text;
  char buf[1 << 16];
  for (;;) {  // to the end of the file, whatever st_size says (/proc files say 0)
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      throw_io(path, "read failed");
    }
    if (n == 0) break;
    if (text.size() + static_cast<size_t>(n) > cap) {
      ::close(fd);
      throw Error(Error::Kind::format, path, std::nullopt, "", "is over the cap of " + std::to_string(cap) + " bytes");
    }
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

FileSource::FileSource(std::string path, Context ctx) : path_(std::move(path)), ctx_(std::move(ctx)) {
  struct stat st {};
  fd_ = owned_fd(open_checked(path_, st, false));
  size_ = static_cast<uint64_t>(st.st_size);
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  mtime_ns_ = ns(st.st_mtim);
  ctime_ns_ = ns(st.st_ctim);
}

bool FileSource::same_file(const struct stat& st) const {
  return static_cast<uint64_t>(st.st_dev) == dev_ && static_cast<uint64_t>(st.st_ino) == ino_ &&
         static_cast<uint64_t>(st.st_size) == size_ && ns(st.st_mtim) == mtime_ns_ && ns(st.st_ctim) == ctime_ns_;
}

FileSource::~FileSource() = default;

void FileSource::release() {
  std::lock_guard<std::mutex> g(fd_m_);
  lent_ = fd_;  // a use under way goes on with it
  fd_.reset();
}

std::shared_ptr<const int> FileSource::file() const {
  std::lock_guard<std::mutex> g(fd_m_);
  if (fd_) return fd_;
  if (auto f = lent_.lock()) return f;
  struct stat st {};
  auto f = owned_fd(open_checked(path_, st, false));
  if (!same_file(st)) changed();
  lent_ = f;
  return f;
}

std::shared_ptr<const uint8_t> ByteSource::prefix(uint64_t n, uint64_t* held) const {
  if (held) *held = n;
  auto buf = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(n));
  read_at(0, buf->data(), buf->size());
  return {buf, buf->data()};
}

std::shared_ptr<const uint8_t> FileSource::prefix(uint64_t n, uint64_t* held) const {
  if (n > size_) read_at(0, nullptr, static_cast<size_t>(n));  // says it is past the end
  if (held) *held = n;
  if (n == 0) return std::make_shared<const uint8_t>(0);
  std::lock_guard<std::mutex> g(m_);
  if (auto p = mapped_.lock(); p && mapped_n_ >= n) {
    if (held) *held = mapped_n_;
    return p;
  }
  // A copy of the header, not a map of the file: what another process writes into the
  // file afterwards (an edit in place, a copy over it, a truncation) never shows in a model
  // already read, so no length the scanner checked changes under a later decode, and a file
  // cut short cannot fault the reader (SIGBUS). Read under a shared lock, so that a ggufkit
  // edit in place is never seen half-written. Anonymous memory, so that trim() can give
  // back what lies past the header, and a longer prefix of the one being read (a header
  // past the first window) grows it and reads only the rest.
  // A map of 2 MiB or more is a whole number of huge pages long, which the kernel places on
  // a huge page's boundary: a 5.4 MB header read into an unaligned map touched 1,300 small
  // pages (11 ms here), into a rounded one three huge pages (1.7 ms).
  constexpr uint64_t huge = 2 << 20;
  const size_t span = static_cast<size_t>(n >= huge ? (n + huge - 1) / huge * huge : n);
  uint64_t from = 0;
  void* m = MAP_FAILED;
  if (growing_ && growing_.use_count() == 1 && mapped_n_ < n) {
    m = ::mremap(const_cast<uint8_t*>(growing_.get()), *mapped_len_, span, MREMAP_MAYMOVE);
    if (m != MAP_FAILED) {
      from = mapped_n_;
      *mapped_len_ = 0;  // the old region moved: its deleter unmaps nothing
    }
  }
  growing_.reset();
  if (m == MAP_FAILED) m = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  // Huge pages where the kernel has them: a first touch of each 4 KiB page costs about 10 us
  // on a virtual machine, as much as the 5 MB header's whole parse; a 2 MiB page costs one.
  ::madvise(m, span, MADV_HUGEPAGE);
  auto len = std::make_shared<size_t>(span);
  std::shared_ptr<const uint8_t> p{static_cast<const uint8_t*>(m), [len](const uint8_t* q) {
                                     if (*len) ::munmap(const_cast<uint8_t*>(q), *len);
                                   }};
  {
    const auto f = file();
    FileLock lock(*f, path_, FileLock::Mode::shared, ctx_);
    try {
      pread_all(*f, path_, static_cast<uint8_t*>(m) + from, static_cast<size_t>(n - from), from);
    } catch (const Error&) {
      struct stat st {};
      if (::fstat(*f, &st) == 0 && !same_file(st)) changed();
      throw;
    }
  }
  mapped_ = p;
  growing_ = p;
  mapped_n_ = n;
  mapped_len_ = std::move(len);
  return p;
}

std::shared_ptr<const void> FileSource::read_lock() const {
  struct Held {
    std::shared_ptr<const int> file;  // open until the lock on it is let go (members go last first)
    FileLock lock;
  };
  auto f = file();
  FileLock lock(*f, path_, FileLock::Mode::shared, ctx_);
  return std::make_shared<Held>(Held{std::move(f), std::move(lock)});
}

void FileSource::changed() const {
  throw Error(Error::Kind::io, path_, std::nullopt, "",
              "the file changed while it was being read (another program wrote, cut or replaced it); read it again");
}

void FileSource::trim(const uint8_t* held, uint64_t n) const {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t keep = (std::max<uint64_t>(n, 1) + page - 1) / page * page;
  std::lock_guard<std::mutex> g(m_);
  growing_.reset();  // read to its end
  auto p = mapped_.lock();
  if (!p || p.get() != held || keep >= *mapped_len_) return;
  // Shrinking never moves a map; the pages beyond are unmapped.
  if (::mremap(const_cast<uint8_t*>(held), *mapped_len_, static_cast<size_t>(keep), 0) == MAP_FAILED) return;
  *mapped_len_ = static_cast<size_t>(keep);
  mapped_n_ = std::min(mapped_n_, keep);
}

void FileSource::read_at(uint64_t offset, void* dst, size_t n) const {
  if (offset > size_ || n > size_ - offset) {
    errno = 0;
    throw_io(path_, "read of " + std::to_string(n) + " bytes at " + std::to_string(offset) +
                        " is past the end of the file (" + std::to_string(size_) + " bytes)");
  }
  pread_all(*file(), path_, dst, n, offset);
}

ByteSource::Extent file_extent(int fd, uint64_t offset, uint64_t limit) {
  const ByteSource::Extent data{limit, false};
  off_t d = ::lseek(fd, static_cast<off_t>(offset), SEEK_DATA);
  if (d < 0) {
    if (errno != ENXIO) return data;  // no support here
    // ENXIO: no data from offset on, which is also what lies past the end: a hole only up
    // to the end as it is now.
    off_t end = ::lseek(fd, 0, SEEK_END);
    if (end < 0 || static_cast<uint64_t>(end) <= offset) return data;
    return {std::min(limit, static_cast<uint64_t>(end)), true};
  }
  if (static_cast<uint64_t>(d) > offset) return {std::min(limit, static_cast<uint64_t>(d)), true};
  off_t h = ::lseek(fd, static_cast<off_t>(offset), SEEK_HOLE);
  if (h < 0 || static_cast<uint64_t>(h) <= offset) return data;
  return {std::min(limit, static_cast<uint64_t>(h)), false};
}

void pread_all(int fd, const std::string& name, void* dst, size_t n, uint64_t offset, const char* what) {
  auto* out = static_cast<uint8_t*>(dst);
  while (n > 0) {
    ssize_t got = ::pread(fd, out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      if (got == 0) errno = 0;
      throw_io(name, std::string(what) + " at byte " + std::to_string(offset));
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

std::shared_ptr<const ByteSource> open_file(const std::string& path, const Context& ctx) {
  return std::make_shared<FileSource>(path, ctx);
}

std::shared_ptr<const ByteSource> from_bytes(std::string name, std::vector<uint8_t> bytes) {
  return std::make_shared<MemorySource>(std::move(name), std::move(bytes));
}

}  // namespace ggufkit
