#include "ggufkit/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>

#include "ggufkit/error.h"
#include "ggufkit/fault.h"
#include "ggufkit/path.h"
#include "ggufkit/writer.h"

namespace ggufkit {

namespace {

constexpr char kMagic[16] = {'G', 'G', 'U', 'F', 'K', 'I', 'T', '-', 'J', 'O', 'U', 'R', 'N', 'A', 'L', '1'};
constexpr size_t kFixed = 16 + 6 * 8;  // magic, dev, ino, size, length, two checksums

// Keeps the bytes written before `limit` and nothing after: the header and its padding.
// Tensor data is never read (copies are not passed on).
class HeaderSink final : public Sink {
 public:
  explicit HeaderSink(uint64_t limit) : limit_(limit) {}
  std::vector<uint8_t> bytes;

 protected:
  void put(const void* data, size_t n) override {
    if (pos() >= limit_) return;
    const auto* p = static_cast<const uint8_t*>(data);
    bytes.insert(bytes.end(), p, p + std::min<uint64_t>(n, limit_ - pos()));
  }
  void transfer(const ByteSource&, uint64_t, uint64_t) override {}

 private:
  uint64_t limit_;
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

// The folder of `path`, flushed so a name made or removed in it is durable.
void flush_folder(const std::string& path) {
  PathAt at(path);
  ::fsync(at.dir());
}

// unlink() and rename() within one folder, for paths of any length.
int unlink_path(const std::string& path) {
  PathAt at(path);
  return ::unlinkat(at.dir(), at.name(), 0);
}

}  // namespace

std::optional<std::vector<uint8_t>> header_in_place(const Model& model, const Scanned& source, std::string& why) {
  if (model.order != source.model.order) {
    why = "the byte order changes";
    return std::nullopt;
  }
  Layout L = plan(model);
  const Layout& S = source.layout;
  if (L.data_offset != S.data_offset) {
    uint64_t header = L.header_size;
    why = header > S.data_offset
              ? "the header grows past the data start by " + std::to_string(header - S.data_offset) + " bytes"
              : "the header, padded to " + std::to_string(L.alignment) + ", ends " + std::to_string(S.data_offset - L.data_offset) +
                    " bytes before the data start";
    return std::nullopt;
  }
  if (L.alignment != S.alignment || L.tensor_offsets != S.tensor_offsets || L.file_size != source.source_size) {
    why = "the tensor data would move";
    return std::nullopt;
  }
  HeaderSink sink(L.data_offset);
  emit(model, L, sink);
  return std::move(sink.bytes);
}

void write_header_in_place(const std::string& path, const Layout& planned, const std::vector<uint8_t>& header) {
  Fd f{open_path(path, O_RDWR | O_CLOEXEC)};
  if (f.fd < 0) throw_io(path, "cannot open for writing in place");
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw_io(path, "cannot stat");
  if (!S_ISREG(st.st_mode)) throw Error(Error::Kind::usage, path, std::nullopt, "", "is not a regular file; it is not edited in place");
  const size_t n = header.size();
  if (static_cast<uint64_t>(st.st_size) < n) throw Error(Error::Kind::format, path, std::nullopt, "", "is shorter than its header");
  std::vector<uint8_t> old(n);
  pread_all(f.fd, path, old.data(), n, 0);

  // (a) The journal: written whole under a temporary name, flushed, then named. Its parts
  // are written from where they are (a header is megabytes), its checksum taken as it goes.
  const std::string journal = journal_path(path), tmp = journal + ".tmp";
  std::string head(kMagic, sizeof kMagic);
  for (uint64_t v : {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size),
                     static_cast<uint64_t>(n), static_cast<uint64_t>(XXH64(old.data(), n, 0)),
                     static_cast<uint64_t>(XXH64(header.data(), n, 0))})
    put_u64(head, v);
  XXH64_state_t* sum = XXH64_createState();
  XXH64_reset(sum, 0);
  XXH64_update(sum, head.data(), head.size());
  XXH64_update(sum, old.data(), n);
  XXH64_update(sum, header.data(), n);
  std::string tail;
  put_u64(tail, XXH64_digest(sum));
  XXH64_freeState(sum);
  {
    Fd jf{open_path(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)};
    if (jf.fd < 0) throw_io(tmp, "cannot create the journal; nothing was changed");
    try {
      write_at(jf.fd, tmp, reinterpret_cast<const uint8_t*>(head.data()), head.size(), 0);
      write_at(jf.fd, tmp, old.data(), n, head.size());
      write_at(jf.fd, tmp, header.data(), n, head.size() + n);
      write_at(jf.fd, tmp, reinterpret_cast<const uint8_t*>(tail.data()), tail.size(), head.size() + 2 * n);
      flush(jf.fd, tmp);
      PathAt at(journal);
      if (::renameat(at.dir(), (std::string(at.name()) + ".tmp").c_str(), at.dir(), at.name()) != 0)
        throw_io(journal, "cannot name the journal");
    } catch (const Error& e) {
      unlink_path(tmp);
      throw Error(e.kind, e.file, e.offset, e.field, e.message + "; nothing was changed");
    }
  }
  flush_folder(journal);
  fault_point("journal-written");

  // (b) The new header over the old, in two writes (a crash between them is tested), flushed.
  try {
    write_at(f.fd, path, header.data(), n / 2, 0);
    fault_point("header-half");
    write_at(f.fd, path, header.data() + n / 2, n - n / 2, n / 2);
    flush(f.fd, path);
    fault_point("header-written");
    // (c) Read back: the bytes written, which the strict reader finds laid out as planned.
    // (Not against the model: its strings are views of this file's old header.)
    bool same = true;
    std::vector<uint8_t> now(std::min<size_t>(n, 1 << 20));
    for (size_t at = 0; at < n && same; at += now.size()) {
      size_t k = std::min(now.size(), n - at);
      pread_all(f.fd, path, now.data(), k, at);
      same = std::memcmp(now.data(), header.data() + at, k) == 0;
    }
    Scanned back = scan(open_file(path));
    if (!same || back.layout.data_offset != planned.data_offset || back.layout.tensor_offsets != planned.tensor_offsets ||
        back.source_size != planned.file_size) {
      errno = 0;
      throw_io(path, "verification failed: the header written in place does not read back as planned");
    }
    fault_point("header-verified");
  } catch (const Error& e) {  // put the old header back; the journal stays if even that fails
    try {
      write_at(f.fd, path, old.data(), n, 0);
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
  const uint64_t n = get_u64(j, 40);
  if (n > j.size() || j.size() != kFixed + 2 * n + 8) throw refuse("it is cut short (" + std::to_string(j.size()) + " bytes)");
  if (XXH64(j.data(), j.size() - 8, 0) != get_u64(j, j.size() - 8)) throw refuse("its checksum does not match its bytes");
  const auto* old = reinterpret_cast<const uint8_t*>(j.data() + kFixed);
  const auto* fresh = old + n;
  if (XXH64(old, n, 0) != get_u64(j, 48) || XXH64(fresh, n, 0) != get_u64(j, 56)) throw refuse("a header's checksum does not match");
  if (get_u64(j, 16) != static_cast<uint64_t>(st.st_dev) || get_u64(j, 24) != static_cast<uint64_t>(st.st_ino) ||
      get_u64(j, 32) != static_cast<uint64_t>(st.st_size))
    throw refuse("it is the journal of another file (device, inode or size differ)");
  std::vector<uint8_t> now(n);
  pread_all(f.fd, path, now.data(), n, 0);
  Recovery done = Recovery::kept_new;
  if (std::memcmp(now.data(), fresh, n) != 0) {  // not all of the new header is there: the old goes back
    write_at(f.fd, path, old, n, 0);
    done = Recovery::rolled_back;
  }
  flush(f.fd, path);
  if (unlink_path(journal) != 0) throw_io(journal, "cannot remove the journal (the file itself is recovered)");
  flush_folder(journal);
  return done;
}

}  // namespace ggufkit
