#include "ggufkit/journal.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <future>
#include <optional>

#include "ggufkit/background.h"
#include "ggufkit/error.h"
#include "ggufkit/fault.h"
#include "ggufkit/lock.h"
#include "ggufkit/output.h"
#include "ggufkit/scan.h"
#include "ggufkit/path.h"
#include "ggufkit/shards.h"
#include "ggufkit/writer.h"

namespace ggufkit {

namespace {

// A journal's head: magic; the model's device, inode, size before and after, its header's
// length before and after, the checksums of the header before and after, where the range
// starts, and its length before and after. (GGUFKIT-JOURNAL1, still read by recover: one
// size, one header length, one range length.)
constexpr char kMagic[16] = {'G', 'G', 'U', 'F', 'K', 'I', 'T', '-', 'J', 'O', 'U', 'R', 'N', 'A', 'L', '2'};
constexpr char kMagic1[16] = {'G', 'G', 'U', 'F', 'K', 'I', 'T', '-', 'J', 'O', 'U', 'R', 'N', 'A', 'L', '1'};
constexpr size_t kFixed = 16 + 11 * 8, kFixed1 = 16 + 8 * 8;

// Compares the header as it is emitted with the source's and keeps the one range where they
// differ: from the first differing byte to the last, the old bytes filling any equal run
// between two differences. Tensor data is never read (copies are not passed on). A header
// of another length (a file that is all header) differs to its end: the bytes past the old
// one are all new, and a shorter one's range runs to its end.
class DiffSink final : public Sink {
 public:
  // The old header is mapped once (the reader's own map, still held, when it covers it).
  // `limit`: its length; `length`: the new one's.
  DiffSink(const ByteSource& old, uint64_t limit, uint64_t length)
      : old_(old), limit_(std::min(limit, old.size())), length_(length), head_(old.prefix(limit_)) {}
  uint64_t first = 0;
  std::vector<uint8_t> bytes;

 protected:
  void put(const void* data, size_t n) override {
    const auto* p = static_cast<const uint8_t*>(data);
    const uint64_t common = std::min(limit_, length_);
    for (uint64_t at = pos(); at < length_ && n > 0;) {
      if (at >= common) {  // past the old header's end: new
        const size_t k = static_cast<size_t>(std::min<uint64_t>(n, length_ - at));
        take(at, p, k);
        at += k, p += k, n -= k;
        continue;
      }
      size_t k = static_cast<size_t>(std::min<uint64_t>({n, common - at, 1 << 20}));
      const uint8_t* o = head_.get() + at;
      if (o != p && std::memcmp(o, p, k) != 0) {
        size_t lo = 0, hi = k;
        while (o[lo] == p[lo]) ++lo;
        while (o[hi - 1] == p[hi - 1]) --hi;
        take(at + lo, p + lo, hi - lo);
      }
      at += k;
      p += k;
      n -= k;
    }
  }
  void transfer(const ByteSource&, uint64_t, uint64_t) override {}
  void finish() override {  // a shorter header: its range runs to its end
    if (length_ >= limit_) return;
    if (bytes.empty()) first = length_;
    else fill(length_);
  }

 private:
  void take(uint64_t at, const uint8_t* p, size_t k) {
    if (bytes.empty()) first = at;
    else fill(at);
    bytes.insert(bytes.end(), p, p + k);
  }
  void fill(uint64_t to) {  // the equal run up to `to`, as it was
    const uint64_t end = first + bytes.size();
    if (end >= to) return;
    bytes.resize(bytes.size() + (to - end));
    old_.read_at(end, bytes.data() + (end - first), to - end);
  }
  const ByteSource& old_;
  uint64_t limit_, length_;
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

// An errno a fault point injects, set as the failing call would: true when there is one.
bool failed(int injected) {
  if (injected) errno = injected;
  return injected != 0;
}

// XXH64 of the first n bytes of `file` with [at, at + cut) read as `range` (`len` bytes):
// the new header's checksum from the old one and the new bytes.
uint64_t sum_with(const uint8_t* file, uint64_t n, uint64_t at, uint64_t cut, const uint8_t* range, size_t len) {
  XXH64_state_t* sum = XXH64_createState();
  XXH64_reset(sum, 0);
  XXH64_update(sum, file, at);
  XXH64_update(sum, range, len);
  XXH64_update(sum, file + at + cut, n - at - cut);
  uint64_t h = XXH64_digest(sum);
  XXH64_freeState(sum);
  return h;
}

}  // namespace

std::optional<HeaderEdit> header_in_place(const Model& model, const Layout& L, const Layout& S, uint64_t source_size,
                                          std::string& why) {
  // A file with no tensor data, nothing past its header and padding, is all header: it is
  // rewritten in place from the first byte that differs, to its new end.
  const bool all_header = S.tensor_offsets.empty() && L.tensor_offsets.empty() && source_size <= S.data_offset &&
                          L.alignment == S.alignment && model.tail && model.tail->source &&
                          model.tail->source->size() == source_size && model.tail->data_offset == S.data_offset;
  if (all_header && (L.data_offset != S.data_offset || L.file_size != source_size)) {
    const uint64_t n = std::min(L.data_offset, L.file_size);
    DiffSink sink(*model.tail->source, source_size, n);
    emit(model, L, sink);
    if (sink.pos() < n) {  // (emit writes the header and its padding: never short)
      why = "the header written is shorter than its layout";
      return std::nullopt;
    }
    return HeaderEdit{source_size, n, sink.first, std::move(sink.bytes), model.tail->source};
  }
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
  DiffSink sink(*model.tail->source, n, n);
  emit(model, L, sink);
  return HeaderEdit{n, n, sink.first, std::move(sink.bytes), model.tail->source};
}


namespace {

constexpr char kSetMagic[16] = {'G', 'G', 'U', 'F', 'K', 'I', 'T', '-', 'S', 'E', 'T', 'J', 'R', 'N', 'L', '1'};
constexpr uint64_t kMaxSetJournal = 1 << 20;  // a few paths: far more than any set's

// XXH64 over pieces.
class Sum {
 public:
  Sum() : s_(XXH64_createState()) { XXH64_reset(s_, 0); }
  ~Sum() { XXH64_freeState(s_); }
  Sum(const Sum&) = delete;
  Sum& operator=(const Sum&) = delete;
  void add(const void* p, size_t n) { XXH64_update(s_, p, n); }
  uint64_t get() const { return XXH64_digest(s_); }

 private:
  XXH64_state_t* s_;
};

// [at, at + n) of `fd`, read a MiB at a time, handed to f(piece, size, offset): a journal or
// a header of any size costs one MiB of memory.
template <class F>
void each_piece(int fd, const std::string& name, uint64_t at, uint64_t n, F&& f) {
  std::vector<uint8_t> buf(static_cast<size_t>(std::min<uint64_t>(n, 1 << 20)));
  for (uint64_t done = 0; done < n;) {
    size_t k = static_cast<size_t>(std::min<uint64_t>(buf.size(), n - done));
    pread_all(fd, name, buf.data(), k, at + done);
    f(buf.data(), k, at + done);
    done += k;
  }
}

Error changed_since_read(const std::string& path) {
  return Error(Error::Kind::io, path, std::nullopt, "",
               "changed since it was read (another file was put in its place, or another program wrote into it); "
               "nothing was changed: run the edit again");
}

// Whom a journal may come from: root, the owner of the file it would change, or the user
// running recover. Anyone else who can write the folder could have planted it.
void trust_owner(const struct stat& js, const struct stat& model, const std::string& journal, const std::string& path) {
  if (journal_trusted(js.st_uid, model.st_uid)) return;
  throw Error(Error::Kind::format, journal, std::nullopt, "journal",
              "is owned by user " + std::to_string(js.st_uid) + ", neither root nor the owner of " + path + " (user " +
                  std::to_string(model.st_uid) + ") nor you: it is not trusted and not applied; neither it nor " + path +
                  " was changed (if " + path + " reads clean, 'ggufkit recover --discard " + path + "' removes it)");
}

// Opens the journal `name` of the folder `dir` (shown as `journal`) without following a
// link or blocking, a regular file only.
int open_journal_at(int dir, const std::string& name, const std::string& journal, struct stat& js) {
  int fd = ::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw_io(journal, "cannot open the journal (a link in its place is never followed)");
  if (::fstat(fd, &js) != 0 || !S_ISREG(js.st_mode)) {
    ::close(fd);
    throw Error(Error::Kind::format, journal, std::nullopt, "journal", "is not a regular file; it is not a journal");
  }
  return fd;
}

// Removes the journal `name` of the folder `dir` (shown as `journal`) when it is still the
// file `made` (device and inode), and flushes the folder; `done` ends an error's message.
void drop_journal(int dir, const std::string& name, const std::string& journal, const struct stat& made, const std::string& done) {
  struct stat now {};
  if (::fstatat(dir, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 && (now.st_dev != made.st_dev || now.st_ino != made.st_ino)) {
    errno = 0;
    throw_io(journal, "is not the journal it was (another file was put in its place), so it is left" + done);
  }
  if (::unlinkat(dir, name.c_str(), 0) != 0) throw_io(journal, "cannot remove the journal" + done);
  ::fsync(dir);
}

// The file reads clean with the strict reader, its header ending at `n` (0: anywhere). `fd`:
// the file as recover holds it (read through that descriptor, named `path` in `why`), or -1
// to open `path`.
bool reads_clean(const Context& ctx, const std::string& path, uint64_t n, std::string* why = nullptr, bool tensorless = false,
                 int fd = -1) {
  try {
    Scanned s = scan(open_file(fd < 0 ? path : "/proc/self/fd/" + std::to_string(fd), ctx));
    uint64_t end = std::min(s.layout.data_offset, s.source_size);
    if (n && end != n) {
      if (why) *why = "its header ends at byte " + std::to_string(end) + ", not at the journal's " + std::to_string(n);
      return false;
    }
    if (tensorless && !s.model.tensors.empty()) {  // a header that changed its length is a whole file's
      if (why) *why = "it holds " + std::to_string(s.model.tensors.size()) + " tensors";
      return false;
    }
    return true;
  } catch (const Error& e) {
    Error named = e;
    named.file = path;
    if (why) *why = named.what();
    return false;
  }
}

// A set's journal: magic, count, then each entry (the target's name and the new file's
// hidden name, both in the journal's folder, the new file's inode and the inode of the file
// it replaces as it was read, 0 for none), then XXH64 of all before. Names, not paths: a
// folder moved or mounted elsewhere is recovered where it is.
std::string set_journal_bytes(const std::vector<SetRename>& set) {
  std::string j(kSetMagic, sizeof kSetMagic);
  put_u64(j, set.size());
  for (const SetRename& e : set) {
    put_u64(j, e.target.size());
    j += e.target;
    put_u64(j, e.hidden.size());
    j += e.hidden;
    put_u64(j, e.inode);
    put_u64(j, e.old_inode);
  }
  put_u64(j, XXH64(j.data(), j.size(), 0));
  return j;
}

std::vector<SetRename> read_set_journal(int fd, const std::string& journal, uint64_t size) {
  auto refuse = [&](const std::string& why) {
    return Error(Error::Kind::format, journal, std::nullopt, "journal", why + "; nothing was changed");
  };
  if (size > kMaxSetJournal) throw refuse("is " + std::to_string(size) + " bytes, more than a set's journal can be");
  std::string j(static_cast<size_t>(size), '\0');
  pread_all(fd, journal, j.data(), j.size(), 0);
  if (j.size() < 16 + 8 + 8 || XXH64(j.data(), j.size() - 8, 0) != get_u64(j, j.size() - 8))
    throw refuse("it is cut short, or its checksum does not match its bytes");
  std::vector<SetRename> out;
  size_t at = 24, end = j.size() - 8;
  auto number = [&]() {
    if (end - at < 8) throw refuse("an entry runs past its end");
    at += 8;
    return get_u64(j, at - 8);
  };
  auto text = [&]() {
    uint64_t n = number();
    if (n > end - at) throw refuse("an entry runs past its end");
    at += static_cast<size_t>(n);
    return j.substr(at - static_cast<size_t>(n), static_cast<size_t>(n));
  };
  for (uint64_t i = 0, count = get_u64(j, 16); i < count; ++i) {
    SetRename e;
    e.target = text();
    e.hidden = text();
    e.inode = number();
    e.old_inode = number();
    out.push_back(std::move(e));
  }
  if (at != end || out.empty()) throw refuse("its entries do not fill it");
  return out;
}

constexpr char kJournalSuffix[] = ".ggufkit-journal";

// `name` in the folder `dir` ("" for the current one), as messages show it.
std::string in_folder(const std::string& dir, const std::string& name) { return dir.empty() ? name : dir + "/" + name; }
std::string folder_of(const std::string& path) { return std::filesystem::path(path).parent_path().string(); }
std::string name_of(const std::string& path) { return std::filesystem::path(path).filename().string(); }

// Why a set's journal lying beside `beside` (a name in its folder) may not list `set`,
// every reason: a set's journal names only the shards of the set `beside` is a shard of,
// and their new files under ggufkit's hidden names, all in its own folder. Empty: it may.
std::string foreign_names(const std::vector<SetRename>& set, const std::string& beside) {
  auto plain = [](const std::string& n) {
    return !n.empty() && n != "." && n != ".." && n.find('/') == std::string::npos && n.find('\0') == std::string::npos;
  };
  std::string why;
  auto add = [&](const std::string& w) { why += (why.empty() ? "" : "; ") + w; };
  const std::optional<ShardName> x = parse_shard_name(beside);
  if (!x) add("it lies beside " + beside + ", which is not named as a shard (PREFIX-00001-of-0000N.gguf)");
  std::vector<std::string> seen;
  bool listed = false;
  for (const SetRename& e : set) {
    std::optional<ShardName> t;
    if (!plain(e.target)) add("it names " + e.target + ", which is not a name in its folder");
    else if (x && (!(t = parse_shard_name(e.target)) || t->prefix != x->prefix || t->count != x->count))
      add("it names " + e.target + ", which is not a shard of the set of " + beside);
    if (!plain(e.hidden) || e.hidden.rfind(".ggufkit-", 0) != 0 || e.hidden.size() <= 9)
      add("it names " + e.hidden + " as a new file, which is not a name ggufkit gives one in its folder");
    for (const std::string* n : {&e.target, &e.hidden}) {
      if (std::find(seen.begin(), seen.end(), *n) != seen.end()) add("it names " + *n + " twice");
      seen.push_back(*n);
    }
    listed |= e.target == beside;
  }
  if (!listed) add("it does not list " + beside + ", the file it lies beside");
  return why;
}

// A set whose shards are links an edit replaces keeps its journals beside the links, not
// beside the files they name: the journal beside the link `path` or beside the name of
// another shard of its set, no link followed.
std::optional<std::string> set_journal_beside_link(const std::string& path) {
  struct stat st {};
  if (stat_path(path, st, false) != 0 || !S_ISLNK(st.st_mode)) return std::nullopt;
  if (stat_path(path + kJournalSuffix, st, false) == 0) return path + kJournalSuffix;
  if (const std::optional<ShardName> name = parse_shard_name(path))
    for (uint32_t k = 1; k <= name->count; ++k)
      if (const std::string j = shard_path(name->prefix, k, name->count) + kJournalSuffix; stat_path(j, st, false) == 0) return j;
  return std::nullopt;
}

// The folder of `path`, opened (a descriptor, -1 when it cannot be).
int open_folder(const std::string& path) {
  std::string dir = folder_of(path);
  return open_path(dir.empty() ? "." : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

// Finishes a set's renames its journal (beside `beside` in the folder `dir`) records: every
// new file not yet in place is renamed over its shard (a rename is whole or not done), an
// old file an exchange left under a hidden name is removed, then the journals. Each name is
// looked up in the journal's folder and never through a link; each file must be a regular
// file owned as `beside` (or the journal) is, the new ones the inodes recorded and the ones
// they replace the inodes read. Anything else is refused, naming it, and nothing is changed.
// `approved`: the file beside the journal as the journal's owner was checked against it
// (trust_owner); the file there now must be that one, or ownership would be judged against
// a file put there since (a hard link to another user's file).
Recovery finish_set(const std::vector<SetRename>& set, const std::string& journal, const struct stat& js,
                    const struct stat& approved, bool discard, const Context& ctx) {
  auto refuse = [&](const std::string& why) {
    return Error(Error::Kind::format, journal, std::nullopt, "journal", why + "; nothing was changed");
  };
  const std::string dir = folder_of(journal), jname = name_of(journal);
  const std::string beside = jname.substr(0, jname.size() - (sizeof kJournalSuffix - 1));
  if (std::string why = foreign_names(set, beside); !why.empty()) throw refuse("is a set's journal that may not be applied: " + why);
  Fd d{open_folder(journal)};
  if (d.fd < 0) throw_io(dir.empty() ? "." : dir, "cannot open the set's folder");
  auto look = [&](const std::string& name, struct stat& st) { return ::fstatat(d.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0; };
  struct stat st {}, xs {};
  if (!look(jname, st) || st.st_dev != js.st_dev || st.st_ino != js.st_ino) throw refuse("is not the journal in its folder any more");
  if (!look(beside, xs)) throw refuse(in_folder(dir, beside) + " is not there");
  if (xs.st_dev != approved.st_dev || xs.st_ino != approved.st_ino)
    throw refuse(in_folder(dir, beside) +
                 " is not the file whose owner the journal was checked against (another file was put in its place since)");
  std::vector<std::string> existing;
  for (const SetRename& e : set)
    if (look(e.target, st)) existing.push_back(in_folder(dir, e.target));
  auto locks = lock_all(existing, ctx);  // in one order with every other ggufkit process
  // Every file it names, as it is now: a regular file in this folder, owned as its shard is.
  std::string foreign;
  // A link is accepted only as an old file the set replaces (a link an edit replaced by the
  // edited file): it is renamed over or removed, never followed.
  auto owned = [&](const std::string& name, const struct stat& s, uint64_t old_inode) {
    std::string why;
    if (!S_ISREG(s.st_mode) && !(S_ISLNK(s.st_mode) && old_inode && static_cast<uint64_t>(s.st_ino) == old_inode))
      why = in_folder(dir, name) + " is not a regular file";
    else if (s.st_dev != js.st_dev) why = in_folder(dir, name) + " is on another file system";
    else if (s.st_uid != xs.st_uid && s.st_uid != js.st_uid)
      why = in_folder(dir, name) + " is owned by user " + std::to_string(s.st_uid) + ", not as " + in_folder(dir, beside) +
            " (user " + std::to_string(xs.st_uid) + ")" +
            (js.st_uid != xs.st_uid ? " or its journal (user " + std::to_string(js.st_uid) + ")" : "") + " is";
    foreign += (foreign.empty() || why.empty() ? "" : "; ") + why;
  };
  for (const SetRename& e : set)
    for (const std::string* name : {&e.target, &e.hidden})
      if (look(*name, st)) owned(*name, st, e.old_inode);
  if (!foreign.empty()) throw refuse("is a set's journal that may not be applied: " + foreign);
  enum class State { waiting, old_left, done };
  std::vector<State> state(set.size());
  for (size_t i = 0; i < set.size(); ++i) {
    const SetRename& e = set[i];
    struct stat hs {}, ts {};
    const bool h = look(e.hidden, hs), t = look(e.target, ts);
    const bool is_new = t && ts.st_ino == e.inode;
    if (h && hs.st_ino == e.inode) {
      if (e.old_inode ? !(t && ts.st_ino == e.old_inode) : t)
        throw refuse(in_folder(dir, e.target) + " is not the file the set's journal recorded its new file replaces");
      state[i] = State::waiting;
    } else if (h && e.old_inode && hs.st_ino == e.old_inode && is_new) {
      state[i] = State::old_left;
    } else if (h) {
      throw refuse(in_folder(dir, e.hidden) + " is not the new file the set's journal recorded");
    } else if (is_new) {
      state[i] = State::done;
    } else {
      throw refuse(in_folder(dir, e.target) + " is neither the new file nor has it one waiting under " + e.hidden);
    }
  }
  const bool renamed_any = std::find_if(state.begin(), state.end(), [](State s) { return s != State::waiting; }) != state.end();
  if (discard && renamed_any)
    throw refuse("`discard`: some of the set's files are already the new ones, and the old ones are gone; run recover without "
                 "`discard` to finish the set");
  if (discard)
    for (const SetRename& e : set)
      if (std::string why; look(e.target, st) && !S_ISLNK(st.st_mode) && !reads_clean(ctx, in_folder(dir, e.target), 0, &why))
        throw refuse("`discard`: " + in_folder(dir, e.target) + " of its set does not read clean (" + why + ")");
  for (size_t i = 0; i < set.size(); ++i) {
    const SetRename& e = set[i];
    if (state[i] == State::done) continue;
    const bool drop = discard || state[i] == State::old_left;
    if (drop ? ::unlinkat(d.fd, e.hidden.c_str(), 0) != 0 : ::renameat(d.fd, e.hidden.c_str(), d.fd, e.target.c_str()) != 0)
      throw_io(in_folder(dir, e.target), drop ? "cannot remove " + e.hidden : "cannot put the new file in place");
  }
  ::fsync(d.fd);
  for (const SetRename& e : set)
    if (::unlinkat(d.fd, (e.target + kJournalSuffix).c_str(), 0) != 0 && errno != ENOENT)
      throw_io(in_folder(dir, e.target + kJournalSuffix), "cannot remove the journal");
  ::fsync(d.fd);
  return discard ? Recovery::discarded : Recovery::set_finished;
}

// A journal, the bytes of `pieces` one after another, made as `name` in the folder `dir`
// (shown as `shown`): written whole and flushed under no name, then named, never over
// anything (a link put in its place is not followed). Where the file system has no unnamed
// files, made under its name with O_EXCL and O_NOFOLLOW. Its device and inode are returned.
struct stat write_journal_at(int dir, const std::string& shown, const std::string& name,
                             const std::vector<std::pair<const uint8_t*, size_t>>& pieces) {
  auto there = [&] {
    return Error(Error::Kind::io, shown, std::nullopt, "",
                 "is already there: another edit's journal, or something put in its place; nothing was changed");
  };
  int fd = ::openat(dir, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  const bool unnamed = fd >= 0;
  if (!unnamed) fd = ::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) throw there();
    throw_io(shown, "cannot make the journal");
  }
  Fd f{fd};
  struct stat st {};
  try {
    uint64_t at = 0;
    for (const auto& [p, n] : pieces) {
      write_at(fd, shown, p, n, at);
      at += n;
    }
    flush(fd, shown);
    if (::fstat(fd, &st) != 0) throw_io(shown, "cannot stat the journal");
    if (unnamed && ::linkat(AT_FDCWD, ("/proc/self/fd/" + std::to_string(fd)).c_str(), dir, name.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      if (errno == EEXIST) throw there();
      throw_io(shown, "cannot name the journal");
    }
  } catch (...) {
    if (!unnamed) ::unlinkat(dir, name.c_str(), 0);
    throw;
  }
  return st;
}

}  // namespace

void write_header_in_place(const std::string& path, const Layout& planned, const HeaderEdit& edit, const Context& ctx) {
  const size_t len = edit.bytes.size();
  const uint64_t n = edit.header_size, n_new = edit.new_header_size, at = edit.offset;
  const bool resized = n_new != n;  // a file that is all header, to its new end
  if (len == 0 && !resized) return;  // not a byte differs
  fault_point("in-place");
  // The journal's folder, opened once: the file (beside the journal, any link `path` is
  // already followed), the journal and its removal are all looked up in it, so a folder
  // swapped for a link meanwhile (to another user's) is never reached.
  const std::string journal = journal_path(path), jname = name_of(journal);
  const std::string target = journal.substr(0, journal.size() - (sizeof kJournalSuffix - 1));
  Fd d{open_folder(journal)};
  if (d.fd < 0) throw_io(folder_of(journal).empty() ? "." : folder_of(journal), "cannot open the model's folder");
  Fd f{::openat(d.fd, name_of(target).c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) throw_io(path, "cannot open for writing in place");
  // Held until the journal is gone (no other writer, and no reader of the header, meanwhile);
  // nothing when the edit took it before it read the file, as ggufkit's does.
  FileLock lock(f.fd, path, FileLock::Mode::exclusive, ctx);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw_io(path, "cannot stat");
  if (!S_ISREG(st.st_mode)) throw Error(Error::Kind::usage, path, std::nullopt, "", "is not a regular file; it is not edited in place");
  // The file must still be the one read, and its header the bytes read: another file renamed
  // over it, or bytes another program wrote, would get this edit's bytes.
  const auto* src = dynamic_cast<const FileSource*>(edit.file.get());
  if (!src || !src->same_file(st)) throw changed_since_read(path);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < n || at > n || (resized ? size != n || at > n_new || len != n_new - at : len > n - at))
    throw Error(Error::Kind::format, path, std::nullopt, "", "is shorter than its header");
  const uint64_t old_len = resized ? n - at : len, size_after = size - n + n_new;
  const auto header = edit.file->prefix(n);  // the header as it was read
  const std::vector<uint8_t> old(header.get() + at, header.get() + at + old_len);
  each_piece(f.fd, path, at, old_len, [&](const uint8_t* p, size_t k, uint64_t off) {  // the bytes to replace, as read
    if (std::memcmp(p, old.data() + (off - at), k) != 0) throw changed_since_read(path);
  });

  // (a) The journal: its room checked first, then written whole under no name, flushed, named.
  const uint64_t need = kFixed + old_len + static_cast<uint64_t>(len) + 8;
  {
    struct statvfs vs {};
    const bool known = ::fstatvfs(d.fd, &vs) == 0;
    const uint64_t free = fault_point("statvfs") ? 0 : static_cast<uint64_t>(vs.f_bavail) * vs.f_frsize;  // tests: a full disk
    if (known && free < need + (64 << 10))
      throw Error(Error::Kind::io, journal, std::nullopt, "",
                  "the journal needs " + std::to_string(need) + " bytes beside the model and " + std::to_string(free) +
                      " are free; nothing was changed (free some room, or edit with -o to another disk)");
  }
  std::string head(kMagic, sizeof kMagic);
  for (uint64_t v : {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), size, size_after, n, n_new,
                     static_cast<uint64_t>(XXH64(header.get(), n, 0)), sum_with(header.get(), n, at, old_len, edit.bytes.data(), len),
                     at, old_len, static_cast<uint64_t>(len)})
    put_u64(head, v);
  Sum sum;
  sum.add(head.data(), head.size());
  sum.add(old.data(), old_len);
  sum.add(edit.bytes.data(), len);
  std::string tail;
  put_u64(tail, sum.get());
  struct stat made {};
  try {
    made = write_journal_at(d.fd, journal, jname,
                            {{reinterpret_cast<const uint8_t*>(head.data()), head.size()},
                             {old.data(), old_len},
                             {edit.bytes.data(), len},
                             {reinterpret_cast<const uint8_t*>(tail.data()), tail.size()}});
    if (::fsync(d.fd) != 0) {  // flushed with its folder, or it protects nothing
      const int saved = errno;
      ::unlinkat(d.fd, jname.c_str(), 0);
      errno = saved;
      throw_io(journal, "cannot flush the journal's folder");
    }
  } catch (const Error& e) {
    if (e.message.find("nothing was changed") != std::string::npos) throw;
    throw e.with_note("; nothing was changed");
  }
  fault_point("journal-written");

  // (b) The new bytes over the old, in two writes (a crash between them is tested), flushed.
  try {
    write_at(f.fd, path, edit.bytes.data(), len / 2, at);
    fault_point("header-half");
    write_at(f.fd, path, edit.bytes.data() + len / 2, len - len / 2, at + len / 2);
    if (resized) {  // a longer header made the file longer as it was written; a shorter one is cut to its end
      fault_point("header-resize");
      if (failed(fault_point("ftruncate")) || ::ftruncate(f.fd, static_cast<off_t>(size_after)) != 0)
        throw_io(path, "cannot set the file's size to " + std::to_string(size_after) + " bytes");
    }
    // (c) The strict re-read of the header, from the file as it is now, runs while the file
    // is flushed: it is checked against the plan once both are done.
    const std::string self = "/proc/self/fd/" + std::to_string(f.fd);
    auto back = in_background([&] {
      ScanOptions exact;
      exact.header_size = n_new;
      return scan(open_file(self, ctx), exact);
    });
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
    struct stat now_st {};
    if (!same || ::fstat(f.fd, &now_st) != 0 || static_cast<uint64_t>(now_st.st_size) != size_after ||
        read.layout.data_offset != planned.data_offset || read.layout.tensor_offsets != planned.tensor_offsets ||
        read.model_size != planned.file_size) {
      errno = 0;
      throw_io(path, "verification failed: the header written in place does not read back as planned");
    }
    fault_point("header-verified");
  } catch (const Error& e) {  // put the old bytes back, at the old size; the journal stays if even that fails
    try {
      write_at(f.fd, path, old.data(), old_len, at);
      if (resized && ::ftruncate(f.fd, static_cast<off_t>(size)) != 0) throw_io(path, "cannot set the file's size back");
      flush(f.fd, path);
    } catch (const Error&) {
      throw e.with_note("; the old header could not be put back: run 'ggufkit recover " + path + "'");
    }
    try {
      drop_journal(d.fd, jname, journal, made, "");
    } catch (const Error&) {
    }
    throw e.with_note("; the old header was put back");
  }
  // (d) Done: the journal goes.
  drop_journal(d.fd, jname, journal, made, " (the edit itself is complete)");
}

Recovery recover(const std::string& path, bool discard, const Context& ctx) {
  std::string journal = journal_path(path);
  struct stat js {};
  if (stat_path(journal, js, false) != 0) {
    // (beside the link first: another shard's name would lead back here, for its set is this one)
    if (std::optional<std::string> by_name = set_journal_beside_link(path)) journal = *by_name;
    else if (std::optional<std::string> other = set_shard_with_journal(path)) return recover(*other, discard, ctx);
    else return Recovery::none;
  }
  auto refuse = [&](const std::string& why) {
    return Error(Error::Kind::format, journal, std::nullopt, "journal",
                 why + "; neither it nor " + path + " was changed" +
                     (discard ? "" : " (if " + path + " reads clean, 'ggufkit recover --discard " + path + "' removes it)"));
  };
  // Everything from here is looked up in the journal's folder, opened once: the journal, the
  // file beside it (any link `path` is already followed: journal_path) and the journal's
  // removal, never through a link. A folder or a file swapped for a link between two steps
  // (to another user's) is never reached: the file is judged and written through one
  // descriptor, its device and inode checked against the journal's and its owner against
  // the journal's on that descriptor.
  const std::string jname = name_of(journal), beside = journal.substr(0, journal.size() - (sizeof kJournalSuffix - 1));
  Fd d{open_folder(journal)};
  if (d.fd < 0) throw_io(folder_of(journal).empty() ? "." : folder_of(journal), "cannot open the journal's folder");
  if (::fstatat(d.fd, jname.c_str(), &js, AT_SYMLINK_NOFOLLOW) != 0) return Recovery::none;
  Fd j{open_journal_at(d.fd, jname, journal, js)};
  char magic[16];
  if (js.st_size < 16) throw refuse("it is not a ggufkit journal, or it is cut short");
  pread_all(j.fd, journal, magic, 16, 0);
  const bool of_set = std::memcmp(magic, kSetMagic, 16) == 0;
  if (!of_set && journal != journal_path(path))
    throw refuse("it lies beside a link: a file's own journal lies beside the file, so it is not one");
  fault_point("recover-journal");
  // Locked: an edit under way holds the lock of the file it writes until its journal is
  // gone, so only a journal still there once the lock is had is a crash's. A set's files
  // are locked by name (finish_set looks each up in the journal's folder again, by inode).
  std::optional<PathLock> lock;
  struct stat ms {};
  Fd f;
  FileLock file_lock;
  if (of_set) {
    lock.emplace(path, FileLock::Mode::exclusive, ctx);
    if (::fstatat(d.fd, name_of(beside).c_str(), &ms, AT_SYMLINK_NOFOLLOW) != 0) throw_io(beside, "cannot stat");
  } else {
    f.fd = ::openat(d.fd, name_of(beside).c_str(), (discard ? O_RDONLY : O_RDWR) | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (f.fd < 0 && errno == ELOOP) throw refuse(beside + " is a link now, not the file the journal was left beside");
    if (f.fd < 0) throw_io(beside, "cannot open");
    if (::fstat(f.fd, &ms) != 0) throw_io(beside, "cannot stat");
    if (!S_ISREG(ms.st_mode)) throw refuse(beside + " is not a regular file");
    file_lock = FileLock(f.fd, beside, FileLock::Mode::exclusive, ctx);
  }
  fault_point("recover-locked");
  if (struct stat now {}; ::fstatat(d.fd, jname.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0) {
    return Recovery::none;  // the edit that held the lock finished
  } else if (now.st_dev != js.st_dev || now.st_ino != js.st_ino) {
    throw refuse("another journal was put in its place while it was read");
  }
  if (discard && !of_set) {  // not applied, so whoever made it: the file must read clean
    std::string why;
    if (!reads_clean(ctx, path, 0, &why, false, f.fd)) throw refuse("`discard`: " + path + " does not read clean (" + why + ")");
    // A file with no tensors ends with its header: bytes past it are what an interrupted
    // edit that shrank the header left of the longer one, which recover cuts.
    // (A padded one ends at the data start, with zeros after its header.)
    const Scanned cur = scan(open_file("/proc/self/fd/" + std::to_string(f.fd), ctx));
    const uint64_t end = cur.layout.header_size, size = cur.source_size;
    bool tail = cur.model.tensors.empty() && size > end;
    if (tail && size == cur.layout.data_offset) {
      std::vector<uint8_t> pad(static_cast<size_t>(size - end));
      pread_all(f.fd, path, pad.data(), pad.size(), end);
      tail = std::any_of(pad.begin(), pad.end(), [](uint8_t b) { return b != 0; });
    }
    if (tail)
      throw refuse("`discard`: " + path + " holds no tensors, yet " + std::to_string(size - end) +
                   " bytes lie past the end of its header (byte " + std::to_string(end) +
                   "): the rest of a longer header an interrupted edit left; 'ggufkit recover " + path + "' finishes it");
    drop_journal(d.fd, jname, journal, js, "");
    return Recovery::discarded;
  }
  trust_owner(js, ms, journal, beside);
  if (of_set) {
    auto set = read_set_journal(j.fd, journal, static_cast<uint64_t>(js.st_size));
    lock = std::nullopt;  // the set's files are locked together, in one order, by finish_set
    fault_point("set-trusted");
    return finish_set(set, journal, js, ms, discard, ctx);
  }
  const bool v1 = std::memcmp(magic, kMagic1, 16) == 0;
  if (!v1 && std::memcmp(magic, kMagic, 16) != 0) throw refuse("it is not a ggufkit journal");
  fault_point("recover-trusted");
  const struct stat& st = ms;
  // Its size is checked against its own head before the rest is read; then it is read a
  // piece at a time, so a journal of any size costs a MiB.
  const size_t fixed = v1 ? kFixed1 : kFixed;
  if (static_cast<uint64_t>(js.st_size) < fixed + 8) throw refuse("it is cut short (" + std::to_string(js.st_size) + " bytes)");
  std::string h(fixed, '\0');
  pread_all(j.fd, journal, h.data(), fixed, 0);
  // (A first journal has one size, one header length and one range length.)
  const uint64_t size_before = get_u64(h, 32), size_after = v1 ? size_before : get_u64(h, 40);
  const uint64_t n = get_u64(h, v1 ? 40 : 48), n_new = v1 ? n : get_u64(h, 56);
  const uint64_t sum_old = get_u64(h, v1 ? 48 : 64), sum_new = get_u64(h, v1 ? 56 : 72);
  const uint64_t at = get_u64(h, v1 ? 64 : 80), old_len = get_u64(h, v1 ? 72 : 88), len = v1 ? old_len : get_u64(h, 96);
  const uint64_t size = static_cast<uint64_t>(js.st_size), file_size = static_cast<uint64_t>(st.st_size);
  if (old_len > size - fixed - 8 || len > size - fixed - 8 - old_len || size != fixed + old_len + len + 8)
    throw refuse("its size (" + std::to_string(size) + " bytes) is not what its head says");
  // One of its ranges lies in the file as it is (no header is larger), the other at most a
  // GiB past it: its checksum reads at most that much.
  if (std::min(old_len, len) > file_size || std::max(old_len, len) > file_size + (1ull << 30))
    throw refuse("its size (" + std::to_string(size) + " bytes) is more than a journal of " + path + " can be");
  Sum whole;
  each_piece(j.fd, journal, 0, size - 8, [&](const uint8_t* p, size_t k, uint64_t) { whole.add(p, k); });
  uint64_t recorded = 0;
  pread_all(j.fd, journal, &recorded, 8, size - 8);
  if (whole.get() != recorded) throw refuse("its checksum does not match its bytes");
  // Its head against the file. A header that changes its length is a file's whole (it holds
  // no tensor data): the file is either size, or between them where a kill cut the longer
  // one's writing short; its range leaves the magic, the version and the tensor count (the
  // first 16 bytes) as they are, and that count is 0. (The key count, bytes 16 to 24, is
  // where a header that gains or loses a key first differs.)
  const bool resized = n_new != n;
  if (get_u64(h, 16) != static_cast<uint64_t>(st.st_dev) || get_u64(h, 24) != static_cast<uint64_t>(st.st_ino) ||
      file_size < std::min(size_before, size_after) || file_size > std::max(size_before, size_after))
    throw refuse("it is the journal of another file (device, inode or size differ)");
  if (resized ? size_before != n || size_after != n_new || at < 16 || at > std::min(n, n_new) || old_len != n - at || len != n_new - at
              : size_before != size_after || n > file_size || at > n || len > n - at || old_len != len)
    throw refuse("its range (" + std::to_string(len) + " bytes at " + std::to_string(at) + ") does not lie inside the header (" +
                 std::to_string(n) + " bytes)");
  if (resized) {
    uint64_t counts[3] = {};
    pread_all(f.fd, path, counts, sizeof counts, 0);
    if (counts[1] != 0)
      throw refuse("it would change the length of a file that holds tensors (its tensor count is not 0)");
  }

  // Where the header ends, when the file reads as it is (an edit cut short in a value
  // still reads): the range must lie before it, never in the tensor data. (The header it
  // leaves must end where the journal says: checked once it is written.)
  try {
    Scanned cur = scan(open_file("/proc/self/fd/" + std::to_string(f.fd), ctx));
    const uint64_t end = std::min(cur.layout.data_offset, cur.source_size);
    if (resized ? !cur.layout.tensor_offsets.empty() : at + len > end)
      throw refuse(resized ? "it would change the length of a file that holds tensors (" + std::to_string(cur.layout.tensor_offsets.size()) +
                                 ")"
                           : "its range (" + std::to_string(len) + " bytes at " + std::to_string(at) +
                                 ") runs past the end of the file's header (byte " + std::to_string(end) +
                                 "): it would be written outside it");
  } catch (const Error& e) {
    if (e.file == journal) throw;
  }
  // The header as it is (when the file holds all of it), and as it is with the journal's old
  // bytes in the range.
  Sum now, rolled;
  if (file_size >= n_new) each_piece(f.fd, path, 0, n_new, [&](const uint8_t* p, size_t k, uint64_t) { now.add(p, k); });
  each_piece(f.fd, path, 0, at, [&](const uint8_t* p, size_t k, uint64_t) { rolled.add(p, k); });
  each_piece(j.fd, journal, fixed, old_len, [&](const uint8_t* q, size_t m, uint64_t) { rolled.add(q, m); });
  each_piece(f.fd, path, at + old_len, n - at - old_len, [&](const uint8_t* p, size_t k, uint64_t) { rolled.add(p, k); });
  const bool is_new = file_size >= n_new && now.get() == sum_new, is_old = rolled.get() == sum_old;
  // A header that changed its length: every byte from the range on is the old one's or the
  // new one's at its place (past the old end, zeros where a crash lost the write), so that
  // nothing but what the edit wrote is cut or written over.
  if (resized) {
    bool mine = true;
    std::vector<uint8_t> o(1 << 20), w(1 << 20);
    each_piece(f.fd, path, at, file_size - at, [&](const uint8_t* p, size_t k, uint64_t off) {
      const uint64_t ko = off < n ? std::min<uint64_t>(k, n - off) : 0, kw = off < n_new ? std::min<uint64_t>(k, n_new - off) : 0;
      if (ko) pread_all(j.fd, journal, o.data(), ko, fixed + (off - at));
      if (kw) pread_all(j.fd, journal, w.data(), kw, fixed + old_len + (off - at));
      for (size_t i = 0; i < k && mine; ++i)
        mine = (i < ko && p[i] == o[i]) || (i < kw && p[i] == w[i]) || (off + i >= n && p[i] == 0);
    });
    if (!mine)
      throw refuse("the file's bytes from " + std::to_string(at) + " on are neither the old header's nor the new one's");
  }
  fault_point("recover-checked");
  // What is there from the range on, put back should neither header read.
  std::vector<uint8_t> was(static_cast<size_t>(resized ? file_size - at : len));
  pread_all(f.fd, path, was.data(), was.size(), at);
  auto put_back = [&] {
    if (resized && ::ftruncate(f.fd, static_cast<off_t>(file_size)) != 0) throw_io(path, "cannot set the file's size");
    write_at(f.fd, path, was.data(), was.size(), at);
    flush(f.fd, path);
  };
  if (is_new) {
    // The new header is all there: a shorter one's file is cut to its end (what lies past it
    // is the old header's tail, which the journal holds), and it must read, ending where the
    // journal says; if it does not, the old one goes back, when it can.
    if (resized && file_size != size_after && ::ftruncate(f.fd, static_cast<off_t>(size_after)) != 0)
      throw_io(path, "cannot set the file's size");
    std::string why;
    if (reads_clean(ctx, path, n_new, &why, resized, f.fd)) {
      flush(f.fd, path);
      drop_journal(d.fd, jname, journal, js, " (the file itself is recovered)");
      return Recovery::kept_new;
    }
    if (!is_old) {
      if (resized && file_size != size_after) put_back();
      throw refuse("the header it says is complete does not read: " + why);
    }
  }
  if (!is_old)
    throw refuse("the file's header is neither the old one nor the new one, even outside the " + std::to_string(len) +
                 " bytes at " + std::to_string(at) + " the edit wrote");
  // The old header but for the range: the old bytes go back (at the old size), and what was
  // there is kept until the file reads clean with them.
  if (resized && ::ftruncate(f.fd, static_cast<off_t>(size_before)) != 0) throw_io(path, "cannot set the file's size");
  each_piece(j.fd, journal, fixed, old_len,
             [&](const uint8_t* p, size_t k, uint64_t off) { write_at(f.fd, path, p, k, at + (off - fixed)); });
  flush(f.fd, path);
  if (std::string why; !reads_clean(ctx, path, n, &why, resized, f.fd)) {
    put_back();
    throw refuse("the old header it holds does not read (" + why + "); the file is as it was");
  }
  drop_journal(d.fd, jname, journal, js, " (the file itself is recovered)");
  return Recovery::rolled_back;
}

void put_set_in_place(const std::vector<SetRename>& whole, bool replace) {
  const std::string dir = folder_of(whole.at(0).target);
  Fd d{open_folder(whole[0].target)};
  auto nothing = [&](const std::string& file, const std::string& why) {  // the new files go: nothing is in place
    for (const SetRename& n : whole) {  // each beside its own target, which may be in another folder (a link's)
      Fd in{open_folder(n.target)};
      if (in.fd >= 0) ::unlinkat(in.fd, n.hidden.c_str(), 0);
    }
    return Error(Error::Kind::usage, file, std::nullopt, "", why + "; nothing was changed");
  };
  // The journal holds names in the set's folder, which must be one: what recover accepts.
  struct stat ds {}, st {};
  if (d.fd < 0 || ::fstat(d.fd, &ds) != 0) throw_io(dir.empty() ? "." : dir, "cannot open the set's folder");
  std::vector<SetRename> set = whole;
  for (SetRename& e : set) {
    Fd f{open_folder(e.target)};
    if (f.fd < 0 || ::fstat(f.fd, &st) != 0 || st.st_dev != ds.st_dev || st.st_ino != ds.st_ino)
      throw nothing(e.target, "is not in the folder of " + whole[0].target + ": a set is rewritten in place in one folder");
    e.target = name_of(e.target);
  }
  if (std::string why = foreign_names(set, set[0].target); !why.empty())
    throw nothing(whole[0].target, "the set's renames could not be recovered from a journal (" + why + ")");
  auto named = [&](size_t i) { return in_folder(dir, set[i].target); };
  auto remove_journals = [&](size_t n) {
    for (size_t i = 0; i < n; ++i) ::unlinkat(d.fd, (set[i].target + kJournalSuffix).c_str(), 0);
    ::fsync(d.fd);
  };
  // (a) The journals, one beside each shard, in the set's folder.
  const std::string bytes = set_journal_bytes(set);
  size_t made = 0;
  try {
    for (; made < set.size(); ++made) {
      write_journal_at(d.fd, named(made) + kJournalSuffix, set[made].target + kJournalSuffix,
                       {{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}});
      fault_point("set-journal");
    }
    if (::fsync(d.fd) != 0) throw_io(dir.empty() ? "." : dir, "cannot flush the set's folder");
  } catch (const Error& e) {
    remove_journals(made);
    throw nothing(e.file, e.message.substr(0, e.message.rfind("; nothing was changed")));
  }
  // (b) Each new file exchanged with its shard: the file it displaced is then checked to be
  // the one read, with nothing between the check and the rename. A file system without the
  // exchange gets the check right before a plain rename, as a single file does.
  enum class Done { no, exchanged, moved, renamed };  // moved: to a new name; renamed: the old file is gone
  std::vector<Done> done(set.size(), Done::no);
  // What is left when the set cannot all go in. While no old file is gone, every exchange
  // and move is undone, and only once all are, the new files and the journals are removed.
  // Once a shard was renamed over (its old file gone: the file system cannot exchange), or
  // when an undo fails, nothing more is undone and nothing removed: every new file and
  // journal stays, and recover finishes the set forward. (Removing as it went would leave
  // journals naming new files already gone: a set neither finished nor put back.)
  // `displaced`: a shard whose exchange displaced a file not the one read; that file goes
  // back to its name first, whatever else is done. `rolled`: the set is as it was.
  bool rolled = false;
  auto put_back = [&](std::optional<size_t> displaced = std::nullopt) {
    std::string stuck;
    auto undo = [&](size_t j) {
      const char *h = set[j].hidden.c_str(), *t = set[j].target.c_str();
      const bool ok = done[j] == Done::exchanged ? !failed(fault_point("set-undo")) && ::renameat2(d.fd, h, d.fd, t, RENAME_EXCHANGE) == 0
                      : done[j] == Done::moved   ? ::renameat2(d.fd, t, d.fd, h, RENAME_NOREPLACE) == 0
                                                 : true;
      if (ok) done[j] = Done::no;
      else if (stuck.empty()) stuck = named(j);
    };
    if (displaced) undo(*displaced);
    std::string renamed;
    size_t count = 0;
    for (size_t j = 0; j < set.size(); ++j)
      if (done[j] == Done::renamed) renamed += (count++ ? ", " : "") + named(j);
    for (size_t j = set.size(); count == 0 && stuck.empty() && j-- > 0;) undo(j);
    ::fsync(d.fd);
    if (count == 0 && stuck.empty()) {
      for (const SetRename& e : set) ::unlinkat(d.fd, e.hidden.c_str(), 0);
      remove_journals(set.size());
      rolled = true;
      return std::string("every file of the set is as it was");
    }
    std::string left = stuck.empty() ? "" : stuck + " cannot be put back as it was";
    if (count)
      left += (left.empty() ? "" : "; ") + renamed +
              (count == 1 ? " is already the new one (this file system cannot exchange two files: the old one is gone)"
                          : " are already the new ones (this file system cannot exchange two files: the old ones are gone)");
    return left + "; every " + (count ? "other new file and every journal" : "new file and journal") +
           " of the set is kept: run 'ggufkit recover " + named(0) + "' to finish it";
  };
  auto changed = [&](size_t i) {
    std::string left = put_back(done[i] == Done::exchanged ? std::optional<size_t>(i) : std::nullopt);
    return Error(Error::Kind::io, named(i), std::nullopt, "",
                 "changed since it was read (another file was put in its place, or a link); it is kept" +
                     std::string(rolled ? ", and the edit is not made: " : ": ") + left);
  };
  for (size_t i = 0; i < set.size(); ++i) {
    const SetRename& e = set[i];
    const char *h = e.hidden.c_str(), *t = e.target.c_str();
    // The file read, or the link that named it when the link itself is replaced (never followed).
    auto is_old = [&](const char* name) {
      return ::fstatat(d.fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) &&
             st.st_dev == ds.st_dev &&
             static_cast<uint64_t>(st.st_ino) == e.old_inode;
    };
    int r = 0;
    if (e.old_inode) {
      if ((r = failed(fault_point("set-exchange")) ? -1 : ::renameat2(d.fd, h, d.fd, t, RENAME_EXCHANGE)) == 0) {
        done[i] = Done::exchanged;
        if (!is_old(h)) throw changed(i);
      } else if (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP) {
        if (!is_old(t)) throw changed(i);
        if ((r = failed(fault_point("set-rename")) ? -1 : ::renameat(d.fd, h, d.fd, t)) == 0) done[i] = Done::renamed;
      }
    } else if ((r = ::renameat2(d.fd, h, d.fd, t, RENAME_NOREPLACE)) == 0) {
      done[i] = Done::moved;
    } else if (errno == EEXIST && !replace) {
      std::string left = put_back();
      throw Error(Error::Kind::usage, named(i), std::nullopt, "", "appeared while it was being written; it is kept: " + left);
    } else if (errno == EEXIST || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP) {
      if (!replace && ::fstatat(d.fd, t, &st, AT_SYMLINK_NOFOLLOW) == 0) throw changed(i);
      if ((r = ::renameat(d.fd, h, d.fd, t)) == 0) done[i] = Done::renamed;
    }
    if (r != 0) {
      int saved = errno;
      std::string left = put_back();
      errno = saved;
      throw_io(named(i), "cannot put the new file in place: " + left);
    }
    if (i + 1 < set.size()) fault_point("set-renamed");
  }
  ::fsync(d.fd);
  // (c) Every new file is in: the old ones the exchanges left go, then the journals.
  for (size_t i = 0; i < set.size(); ++i)
    if (done[i] == Done::exchanged && ::unlinkat(d.fd, set[i].hidden.c_str(), 0) != 0)
      throw_io(in_folder(dir, set[i].hidden), "cannot remove the old file (every new file is in place): run 'ggufkit recover " +
                                                  named(i) + "'");
  ::fsync(d.fd);
  for (size_t i = 0; i < set.size(); ++i)
    if (::unlinkat(d.fd, (set[i].target + kJournalSuffix).c_str(), 0) != 0 && errno != ENOENT)
      throw_io(named(i) + kJournalSuffix, "cannot remove the set's journal (every file is in place)");
  ::fsync(d.fd);
}

}  // namespace ggufkit
