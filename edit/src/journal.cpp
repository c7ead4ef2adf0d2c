#include "ggufkit/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <future>

#include "ggufkit/background.h"
#include "ggufkit/error.h"
#include "ggufkit/fault.h"
#include "ggufkit/path.h"
#include "ggufkit/writer.h"

namespace ggufkit {

namespace {

constexpr char kMagic[16] = {'G', 'G', 'U', 'F', 'K', 'I', 'T', '-', 'J', 'O', 'U', 'R', 'N', 'A', 'L', '1'};
constexpr size_t kFixed = 16 + 8 * 8;  // magic; dev, ino, size, header length, two checksums, offset, length

// Compares the header as it is emitted with the source's and keeps the one range where they
// differ: from the first differing byte to the last, the old bytes filling any equal run
// between two differences. Tensor data is never read (copies are not passed on).
class DiffSink final : public Sink {
 public:
  // The old header is mapped once (the reader's own map, still held, when it covers it).
  DiffSink(const ByteSource& old, uint64_t limit)
      : old_(old), limit_(std::min(limit, old.size())), head_(old.prefix(limit_)) {}
  uint64_t first = 0;
  std::vector<uint8_t> bytes;

 protected:
  void put(const void* data, size_t n) override {
    const auto* p = static_cast<const uint8_t*>(data);
    for (uint64_t at = pos(); at < limit_ && n > 0;) {
      size_t k = static_cast<size_t>(std::min<uint64_t>({n, limit_ - at, 1 << 20}));
      const uint8_t* o = head_.get() + at;
      if (o != p && std::memcmp(o, p, k) != 0) {
        size_t lo = 0, hi = k;
        while (o[lo] == p[lo]) ++lo;
        while (o[hi - 1] == p[hi - 1]) --hi;
        if (bytes.empty()) first = at + lo;
        else if (uint64_t end = first + bytes.size(); end < at + lo) {  // the equal run between, as it was
          bytes.resize(bytes.size() + (at + lo - end));
          old_.read_at(end, bytes.data() + (end - first), at + lo - end);
        }
        bytes.insert(bytes.end(), p + lo, p + hi);
      }
      at += k;
      p += k;
      n -= k;
    }
  }
  void transfer(const ByteSource&, uint64_t, uint64_t) override {}

 private:
  const ByteSource& old_;
  uint64_t limit_;
  std::shared_ptr<const uint8_t> head_;
};

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void put_u64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
uint64_t get_u64(const std::string& in, size_t at) {
  uint64_t v;
  std::memcpy(&v, in.data() + at, 8);
  return v;
}

void write_at(int fd, const std::string& name, const uint8_t* p, size_t n, uint64_t at) {
  while (n > 0) {
    int injected = fault_point("write");
    ssize_t w = injected ? (errno = injected, -1) : ::pwrite(fd, p, n, static_cast<off_t>(at));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw_io(name, "write failed at byte " + std::to_string(at));
    p += w;
    at += static_cast<uint64_t>(w);
    n -= static_cast<size_t>(w);
  }
}

void flush(int fd, const std::string& name) {
  int injected = fault_point("fsync");
  if (injected || ::fsync(fd) != 0) {
    if (injected) errno = injected;
    throw_io(name, "flush (fsync) failed");
  }
}

// The folder of `path`, flushed so a name made or removed in it is durable. (PathAt's
// descriptor cannot be used: it is AT_FDCWD or O_PATH, which fsync refuses.)
bool flush_folder(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  Fd d{open_path(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  return d.fd >= 0 && ::fsync(d.fd) == 0;
}

// unlink() and rename() within one folder, for paths of any length.
int unlink_path(const std::string& path) {
  PathAt at(path);
  return ::unlinkat(at.dir(), at.name(), 0);
}


// XXH64 of the first n bytes of `file` with [at, at + len) read as `range`: the new
// header's checksum from the old one and the new bytes (or the other way round).
uint64_t sum_with(const uint8_t* file, uint64_t n, uint64_t at, const uint8_t* range, size_t len) {
  XXH64_state_t* sum = XXH64_createState();
  XXH64_reset(sum, 0);
  XXH64_update(sum, file, at);
  XXH64_update(sum, range, len);
  XXH64_update(sum, file + at + len, n - at - len);
  uint64_t h = XXH64_digest(sum);
  XXH64_freeState(sum);
  return h;
}

// The file open as `fd` (stat `st`), mapped: the map it was read from when that is this
// file still (its pages, already read, are the page cache's: a write through `fd` shows in
// them), else a new one. Throws an io Error if the map is shorter than n.
std::shared_ptr<const ByteSource> mapped(const std::string& path, const struct stat& st, std::shared_ptr<const ByteSource> read,
                                         uint64_t n) {
  const auto* f = dynamic_cast<const FileSource*>(read.get());
  if (!f || f->device() != static_cast<uint64_t>(st.st_dev) || f->inode() != static_cast<uint64_t>(st.st_ino) ||
      f->size() != static_cast<uint64_t>(st.st_size))
    read = open_file(path);
  if (read->size() < n) throw_io(path, "cannot map its header");
  return read;
}

}  // namespace

std::optional<HeaderEdit> header_in_place(const Model& model, const Layout& L, const Layout& S, uint64_t source_size,
                                          std::string& why) {
  if (L.data_offset != S.data_offset) {
    uint64_t header = L.header_size;
    why = header > S.data_offset
              ? "the header grows past the data start by " + std::to_string(header - S.data_offset) + " bytes"
              : "the header, padded to " + std::to_string(L.alignment) + ", ends " + std::to_string(S.data_offset - L.data_offset) +
                    " bytes before the data start";
    return std::nullopt;
  }
  if (L.alignment != S.alignment || L.tensor_offsets != S.tensor_offsets || L.file_size != source_size || !model.tail ||
      !model.tail->source || model.tail->data_offset != S.data_offset) {
    why = "the tensor data would move";
    return std::nullopt;
  }
  // The header and its padding; a file with no tensors may end right after the header.
  const uint64_t n = std::min(L.data_offset, L.file_size);
  DiffSink sink(*model.tail->source, n);
  emit(model, L, sink);
  return HeaderEdit{n, sink.first, std::move(sink.bytes), model.tail->source};
}

void write_header_in_place(const std::string& path, const Layout& planned, const HeaderEdit& edit) {
  const size_t len = edit.bytes.size();
  if (len == 0) return;  // not a byte differs
  Fd f{open_path(path, O_RDWR | O_CLOEXEC)};
  if (f.fd < 0) throw_io(path, "cannot open for writing in place");
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw_io(path, "cannot stat");
  if (!S_ISREG(st.st_mode)) throw Error(Error::Kind::usage, path, std::nullopt, "", "is not a regular file; it is not edited in place");
  const uint64_t n = edit.header_size, at = edit.offset;
  if (static_cast<uint64_t>(st.st_size) < n || at > n || len > n - at)
    throw Error(Error::Kind::format, path, std::nullopt, "", "is shorter than its header");
  std::vector<uint8_t> old(len);
  pread_all(f.fd, path, old.data(), len, at);

  // (a) The journal: written whole under a temporary name, flushed, then named.
  const std::string journal = journal_path(path), tmp = journal + ".tmp";
  std::string head(kMagic, sizeof kMagic);
  const auto map = mapped(path, st, edit.file, n);
  const auto header = map->prefix(n);
  for (uint64_t v : {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size), n,
                     static_cast<uint64_t>(XXH64(header.get(), n, 0)), sum_with(header.get(), n, at, edit.bytes.data(), len),
                     at, static_cast<uint64_t>(len)})
    put_u64(head, v);
  XXH64_state_t* sum = XXH64_createState();
  XXH64_reset(sum, 0);
  XXH64_update(sum, head.data(), head.size());
  XXH64_update(sum, old.data(), len);
  XXH64_update(sum, edit.bytes.data(), len);
  std::string tail;
  put_u64(tail, XXH64_digest(sum));
  XXH64_freeState(sum);
  {
    Fd jf{open_path(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)};
    if (jf.fd < 0) throw_io(tmp, "cannot create the journal; nothing was changed");
    try {
      write_at(jf.fd, tmp, reinterpret_cast<const uint8_t*>(head.data()), head.size(), 0);
      write_at(jf.fd, tmp, old.data(), len, head.size());
      write_at(jf.fd, tmp, edit.bytes.data(), len, head.size() + len);
      write_at(jf.fd, tmp, reinterpret_cast<const uint8_t*>(tail.data()), tail.size(), head.size() + 2 * len);
      flush(jf.fd, tmp);
      PathAt pa(journal);
      if (::renameat(pa.dir(), (std::string(pa.name()) + ".tmp").c_str(), pa.dir(), pa.name()) != 0)
        throw_io(journal, "cannot name the journal");
      if (!flush_folder(journal)) {  // a journal whose name may not survive a crash protects nothing
        int saved = errno;
        unlink_path(journal);
        errno = saved;
        throw_io(journal, "cannot flush the journal's folder");
      }
    } catch (const Error& e) {
      unlink_path(tmp);
      throw Error(e.kind, e.file, e.offset, e.field, e.message + "; nothing was changed");
    }
  }
  fault_point("journal-written");

  // (b) The new bytes over the old, in two writes (a crash between them is tested), flushed.
  try {
    write_at(f.fd, path, edit.bytes.data(), len / 2, at);
    fault_point("header-half");
    write_at(f.fd, path, edit.bytes.data() + len / 2, len - len / 2, at + len / 2);
    // (c) The strict re-read of the header (the page cache has the new bytes) runs while the
    // file is flushed: it is checked against the plan once both are done.
    auto back = in_background([&map] { return scan(map); });
    try {
      flush(f.fd, path);
    } catch (...) {
      back.wait();
      throw;
    }
    fault_point("header-written");
    // (c) Read back: the bytes written, which the strict reader finds laid out as planned.
    // (Not against the model: its strings are views of this file's old header.)
    bool same = true;
    std::vector<uint8_t> now(std::min<size_t>(len, 1 << 20));
    for (size_t i = 0; i < len && same; i += now.size()) {
      size_t k = std::min(now.size(), len - i);
      pread_all(f.fd, path, now.data(), k, at + i);
      same = std::memcmp(now.data(), edit.bytes.data() + i, k) == 0;
    }
    const Scanned read = back.get();  // a format Error if it does not read
    if (!same || read.layout.data_offset != planned.data_offset || read.layout.tensor_offsets != planned.tensor_offsets ||
        read.source_size != planned.file_size) {
      errno = 0;
      throw_io(path, "verification failed: the header written in place does not read back as planned");
    }
    fault_point("header-verified");
  } catch (const Error& e) {  // put the old bytes back; the journal stays if even that fails
    try {
      write_at(f.fd, path, old.data(), len, at);
      flush(f.fd, path);
    } catch (const Error&) {
      throw Error(e.kind, e.file, e.offset, e.field,
                  e.message + "; the old header could not be put back: run 'ggufkit recover " + path + "'");
    }
    unlink_path(journal);
    flush_folder(journal);
    throw Error(e.kind, e.file, e.offset, e.field, e.message + "; the old header was put back");
  }
  // (d) Done: the journal goes.
  if (unlink_path(journal) != 0) throw_io(journal, "cannot remove the journal (the edit itself is complete)");
  flush_folder(journal);
}

Recovery recover(const std::string& path) {
  const std::string journal = journal_path(path);
  struct stat js {};
  if (stat_path(journal, js) != 0) return Recovery::none;
  auto refuse = [&](const std::string& why) {
    return Error(Error::Kind::format, journal, std::nullopt, "journal", why + "; neither it nor " + path + " was changed");
  };
  Fd f{open_path(path, O_RDWR | O_CLOEXEC)};
  if (f.fd < 0) throw_io(path, "cannot open for writing");
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw_io(path, "cannot stat");
  if (!S_ISREG(js.st_mode) || static_cast<uint64_t>(js.st_size) > 2 * static_cast<uint64_t>(st.st_size) + kFixed + 8)
    throw refuse("it is not a journal of this file (its size cannot be)");
  std::string j = read_small_file(journal, static_cast<uint64_t>(js.st_size));
  if (j.size() < kFixed + 8 || std::memcmp(j.data(), kMagic, sizeof kMagic) != 0) throw refuse("it is not a ggufkit journal, or it is cut short");
  const uint64_t n = get_u64(j, 40), at = get_u64(j, 64), len = get_u64(j, 72);
  if (len > j.size() || j.size() != kFixed + 2 * len + 8) throw refuse("it is cut short (" + std::to_string(j.size()) + " bytes)");
  if (XXH64(j.data(), j.size() - 8, 0) != get_u64(j, j.size() - 8)) throw refuse("its checksum does not match its bytes");
  if (get_u64(j, 16) != static_cast<uint64_t>(st.st_dev) || get_u64(j, 24) != static_cast<uint64_t>(st.st_ino) ||
      get_u64(j, 32) != static_cast<uint64_t>(st.st_size) || n > get_u64(j, 32) || at > n || len > n - at)
    throw refuse("it is the journal of another file (device, inode or size differ)");
  const auto* old = reinterpret_cast<const uint8_t*>(j.data() + kFixed);  // the new bytes follow; the checksums decide
  Recovery done;
  const auto header = mapped(path, st, nullptr, n)->prefix(n);
  if (XXH64(header.get(), n, 0) == get_u64(j, 56)) {
    done = Recovery::kept_new;  // the new header is all there
  } else if (sum_with(header.get(), n, at, old, len) == get_u64(j, 48)) {
    write_at(f.fd, path, old, len, at);  // the old header but for the range: the old bytes go back
    done = Recovery::rolled_back;
  } else {
    throw refuse("the file's header is neither the old one nor the new one, even outside the " + std::to_string(len) +
                 " bytes at " + std::to_string(at) + " the edit wrote");
  }
  flush(f.fd, path);
  if (unlink_path(journal) != 0) throw_io(journal, "cannot remove the journal (the file itself is recovered)");
  flush_folder(journal);
  return done;
}

}  // namespace ggufkit
