#include "ggufkit/rewrite.h"

#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <deque>
#include <memory>
#include <exception>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "ggufkit/background.h"
#include "ggufkit/error.h"
#include "ggufkit/fault.h"
#include "ggufkit/journal.h"
#include "ggufkit/lock.h"
#include "ggufkit/output.h"
#include "ggufkit/path.h"
#include "ggufkit/scan.h"
#include "ggufkit/source.h"
#include "ggufkit/writer.h"

namespace ggufkit {

namespace {

constexpr size_t kPiece = 1 << 20;
constexpr size_t kMaxLag = 64;  // pieces of up to 8 MiB: the verifier stays within the page cache

// Where the output differs from what was copied into it.
struct Mismatch {
  uint64_t at, n;  // n == 1: the very byte; else a piece known only by its checksum
};

// Writes like FdSink and checks, in a second thread, every piece of copied data in the
// output against where it came from, while the writer goes on writing and flushing: the
// written bytes are read back while they are still in the page cache. A piece the kernel
// copied is compared byte for byte with its source; one that went through memory (a byte
// order conversion) with the xxHash64 taken of it there. A hole left in the output (a
// source's hole) must read as zeros there and, from a file, in the source: each is asked for
// its extents and only their data is read (the edges of a hole off the output's blocks), so
// gigabytes of hole cost a few lseeks. (Reading the output through a map instead of pread
// was measured: 1.3x slower, for the page faults.)
class VerifyingSink final : public FdSink {
 public:
  VerifyingSink(int fd, std::string name, const std::atomic<bool>* stop)
      : FdSink(fd, std::move(name)), stop_(stop) {
    try {
      worker_ = std::thread([this] { work(); });
    } catch (const std::system_error&) {  // no thread to be had (ulimit -v): each piece is checked as it is written
      inline_ = true;
    }
  }
  ~VerifyingSink() override {
    {
      std::lock_guard<std::mutex> g(m_);
      closed_ = abandoned_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
  }
  // Once every piece is written: waits for the worker, rethrows what it hit, and returns
  // the mismatch it found, if any.
  std::optional<Mismatch> wait(uint64_t& verified) {
    std::unique_lock<std::mutex> g(m_);
    closed_ = true;
    cv_.notify_all();
    cv_.wait(g, [&] { return finished_ || inline_; });
    if (error_) std::rethrow_exception(error_);
    verified = verified_;
    return mismatch_;
  }

 protected:
  void copied(const ByteSource* src, uint64_t offset, const uint8_t* bytes, uint64_t at, uint64_t n) override {
    queue({src, offset, bytes ? XXH64(bytes, n, 0) : 0, at, n, false});
  }
  void hole(const ByteSource* src, uint64_t offset, uint64_t at, uint64_t n) override {
    queue({src, offset, 0, at, n, true});
  }

 private:
  struct Piece {
    const ByteSource* src;  // null: compare with `hash` (a hole: the output alone is checked)
    uint64_t offset, hash, at, n;
    bool hole;
  };

  void queue(const Piece& p) {
    if (inline_) {
      if (mismatch_) return;
      mismatch_ = check(p, a_, b_);
      if (!mismatch_) verified_ += p.n;
      return;
    }
    std::unique_lock<std::mutex> g(m_);
    cv_.wait(g, [&] { return queue_.size() < kMaxLag || finished_; });
    queue_.push_back(p);
    cv_.notify_all();
  }

  void work() {
    std::vector<uint8_t> a, b;  // sized by the pieces: a file with no tensor data needs none
    for (;;) {
      std::unique_lock<std::mutex> g(m_);
      cv_.wait(g, [&] { return !queue_.empty() || closed_; });
      if (queue_.empty() || abandoned_ || mismatch_ || error_) break;
      Piece p = queue_.front();
      queue_.pop_front();
      cv_.notify_all();
      g.unlock();
      std::optional<Mismatch> bad;
      try {
        bad = check(p, a, b);
      } catch (...) {
        g.lock();
        error_ = std::current_exception();
        break;
      }
      g.lock();
      if (bad) mismatch_ = bad;
      else verified_ += p.n;
    }
    std::lock_guard<std::mutex> g(m_);
    finished_ = true;
    cv_.notify_all();
  }

  // Where [from, from + n) of a source, whose extents and bytes `extent` and `read` give,
  // holds a byte that is not zero: its holes are taken as said, its data read.
  template <typename ExtentOf, typename Read>
  std::optional<uint64_t> nonzero(uint64_t from, uint64_t n, ExtentOf extent, Read read, std::vector<uint8_t>& buf) {
    for (uint64_t at = from; at < from + n;) {
      if (stop_ && stop_->load()) break;
      ByteSource::Extent e = extent(at, from + n);
      uint64_t end = e.end > at && e.end <= from + n ? e.end : from + n;
      for (; !e.hole && at < end;) {
        size_t k = static_cast<size_t>(std::min<uint64_t>(end - at, kPiece));
        read(at, buf.data(), k);
        auto z = std::find_if(buf.data(), buf.data() + k, [](uint8_t c) { return c != 0; });
        if (z != buf.data() + k) return at + static_cast<uint64_t>(z - buf.data());
        at += k;
      }
      at = end;
    }
    return std::nullopt;
  }

  std::optional<Mismatch> check_hole(const Piece& p, std::vector<uint8_t>& b) {
    auto out = nonzero(
        p.at, p.n, [&](uint64_t o, uint64_t l) { return file_extent(fd_, o, l); },
        [&](uint64_t o, uint8_t* d, size_t k) { pread_all(fd_, name_, d, k, o, "cannot re-read the written file"); }, b);
    if (out) return Mismatch{*out, 1};
    if (!p.src) return std::nullopt;
    auto in = nonzero(
        p.offset, p.n, [&](uint64_t o, uint64_t l) { return p.src->extent(o, l); },
        [&](uint64_t o, uint8_t* d, size_t k) { p.src->read_at(o, d, k); }, b);
    if (in) return Mismatch{p.at + (*in - p.offset), 1};  // the source is no longer zeros there
    return std::nullopt;
  }

  std::optional<Mismatch> check(const Piece& p, std::vector<uint8_t>& a, std::vector<uint8_t>& b) {
    // As long as the longest piece so far, up to kPiece: a shard of a tensor of 4 bytes is
    // not worth 2 MiB of zeroed pages (a split into 1,200 shards spent seconds on them).
    if (const size_t want = static_cast<size_t>(std::min<uint64_t>(p.n, kPiece)); b.size() < want) a.resize(want), b.resize(want);
    if (p.hole) return check_hole(p, b);
    XXH64_state_t* st = p.src ? nullptr : XXH64_createState();
    if (st) XXH64_reset(st, 0);
    std::optional<Mismatch> bad;
    for (uint64_t done = 0; done < p.n && !bad;) {
      if (stop_ && stop_->load()) break;  // the writer reports the signal
      size_t k = static_cast<size_t>(std::min<uint64_t>(p.n - done, kPiece));
      pread_all(fd_, name_, b.data(), k, p.at + done, "cannot re-read the written file");
      if (st) {
        XXH64_update(st, b.data(), k);
      } else {
        p.src->read_at(p.offset + done, a.data(), k);
        if (std::memcmp(a.data(), b.data(), k) != 0) {
          size_t i = static_cast<size_t>(std::mismatch(a.data(), a.data() + k, b.data()).first - a.data());
          bad = Mismatch{p.at + done + i, 1};
        }
      }
      done += k;
    }
    if (st) {
      if (!bad && XXH64_digest(st) != p.hash) bad = Mismatch{p.at, p.n};
      XXH64_freeState(st);
    }
    return bad;
  }

  const std::atomic<bool>* stop_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Piece> queue_;
  bool closed_ = false, abandoned_ = false, finished_ = false;
  std::optional<Mismatch> mismatch_;
  std::exception_ptr error_;
  uint64_t verified_ = 0;
  bool inline_ = false;
  std::vector<uint8_t> a_, b_;  // the pieces compared, when checked inline
  std::thread worker_;  // started once everything above is ready
};

// The Error for a mismatch, naming the tensor (or the kept bytes) it lies in.
Error mismatch_error(const Mismatch& m, const Model& model, const Layout& L, const std::string& file) {
  std::string field = "data section", where;
  uint64_t from = L.data_offset;
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    uint64_t start = L.data_offset + L.tensor_offsets[i];
    if (m.at >= start && m.at - start < model.tensors[i].nbytes()) {
      field = "tensor[" + std::to_string(i) + "] " + model.tensors[i].name + " (data)";
      from = start;
      where = " of the tensor's data";
    }
  }
  std::string what = m.n == 1 ? "byte " + std::to_string(m.at - from) + where + " (byte " + std::to_string(m.at) + " of the file) is"
                              : "the " + std::to_string(m.n) + " bytes from byte " + std::to_string(m.at) + " of the file are";
  errno = 0;
  return Error(Error::Kind::io, file, m.at, field, "verification failed: " + what + " not what was read from the source");
}

void cancelled(const RewriteOptions& opt, const std::string& target) {
  if (opt.ctx.cancelled()) {
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

namespace {

// Writes `model` into a PendingFile for `target`, flushed and verified: everything of a
// safe rewrite but putting it in place. `note` ends every error.
std::unique_ptr<PendingFile> write_verified(const Model& model, const std::string& target, mode_t mode, bool replace,
                                            const RewriteOptions& opt, RewriteResult& result, const std::string& note) {
  result.path = target;
  try {
    result.layout = plan(model);
    auto out = std::make_unique<PendingFile>(target, mode, replace, opt.ctx);
    uint64_t total = result.layout.file_size;
    auto progress = [&](uint64_t w) {
      if (opt.ctx.progress) opt.ctx.progress(w, total);
    };
    std::optional<VerifyingSink> checked;
    std::optional<FdSink> plain;
    FdSink& sink = opt.verify ? static_cast<FdSink&>(checked.emplace(out->fd(), target, opt.ctx.cancel))
                              : plain.emplace(out->fd(), target);
    sink.cancel = opt.ctx.cancel;
    sink.progress = progress;
    emit(model, result.layout, sink);

    fault_point("written", {out->fd()});
    // The header, re-read by the strict reader, must be what was planned. It is read while
    // the file is flushed, as the verifier goes on checking the data.
    auto header = in_background([&] {
      ScanOptions exact;
      exact.header_size = result.layout.header_size;  // mapped once, to its end
      Scanned back = scan(open_file(out->proc_path(), opt.ctx), exact);
      return back.layout == result.layout && back.model.metadata == model.metadata && same_tensors(back.model, model) &&
             back.source_size == result.layout.file_size;
    });
    out->flush();
    if (!header.get()) {
      errno = 0;
      throw_io(target, "verification failed: the written header does not read back as planned");
    }
    if (checked) {
      std::optional<Mismatch> bad = checked->wait(result.bytes_verified);
      cancelled(opt, target);
      if (bad) throw mismatch_error(*bad, model, result.layout, target);
      result.tensors_verified = model.tensors.size();
    }
    fault_point("verified");
    cancelled(opt, target);
    return out;
  } catch (const Error& e) {
    throw e.with_note(note, target);
  }
}

}  // namespace

namespace {

// The file a model was read from, when it was read from one.
const FileSource* read_from(const Model& m) {
  std::shared_ptr<const ByteSource> src = m.tail ? m.tail->source : m.tensors.empty() ? nullptr : m.tensors[0].source;
  return dynamic_cast<const FileSource*>(src.get());
}

// The files the renames replace, locked until they are done (no in-place edit, no other
// rewrite of them meanwhile), each checked, when it is the file the model was read from
// (always with in_place), to be still that file as it was read: a file renamed over it, or
// bytes another program wrote into it since, would be lost without a word.
std::vector<std::unique_ptr<PathLock>> lock_replaced(const std::vector<std::pair<const Model*, std::string>>& outs, bool in_place,
                                                     const Context& ctx) {
  std::vector<std::string> existing;
  for (const auto& [m, path] : outs)
    if (struct stat st {}; stat_path(path, st) == 0) existing.push_back(path);
  auto locks = lock_all(existing, ctx);
  for (const auto& [m, path] : outs) {
    const FileSource* src = read_from(*m);
    struct stat st {};
    if (stat_path(path, st) != 0) continue;
    const bool same_inode = src && src->device() == static_cast<uint64_t>(st.st_dev) && src->inode() == static_cast<uint64_t>(st.st_ino);
    if ((in_place && src && !same_inode) || (same_inode && !src->same_file(st)))
      throw Error(Error::Kind::io, path, std::nullopt, "",
                  "changed since it was read (another file was put in its place, or another program wrote into it)");
    refuse_journal(path, ctx);  // an edit of it that died before writing a byte: recover it first
  }
  return locks;
}

}  // namespace

RewriteResult safe_rewrite(const Model& model, const std::string& source, const std::string& dest,
                           const RewriteOptions& opt) {
  struct stat src_st {};
  bool have_source = !source.empty() && stat_path(source, src_st) == 0;
  std::string target = dest;
  if (opt.in_place) {
    if (!have_source) throw_io(source, "cannot find the file to rewrite in place");
    target = opt.break_link ? source : follow_links(source);  // a symlink's target is replaced, not the link
  } else if (have_source) {
    refuse_same_file(source, dest, "; use `in_place` to replace it safely");
  }
  mode_t mode = have_source ? (src_st.st_mode & 0777) : 0666;  // for a new file, less the umask
  const std::string note = "; nothing was changed" + (have_source ? " (" + source + " is as it was)" : std::string());
  RewriteResult result;
  auto out = write_verified(model, target, mode, opt.in_place || opt.replace, opt, result, note);
  try {
    auto locks = lock_replaced({{&model, target}}, opt.in_place, opt.ctx);
    out->commit();
  } catch (const Error& e) {
    throw e.with_note(note, target);
  }
  return result;
}

std::vector<RewriteResult> safe_write_all(const std::vector<Output>& outputs, const std::vector<std::string>& sources,
                                          const RewriteOptions& opt) {
  struct stat src_st {};
  mode_t mode = !sources.empty() && stat_path(sources[0], src_st) == 0 ? (src_st.st_mode & 0777) : 0666;
  for (const Output& o : outputs)
    for (const std::string& s : sources) refuse_same_file(s, o.path, "");
  const std::string note = "; nothing was written" + (sources.empty() ? std::string() : " (the sources are as they were)");
  std::vector<RewriteResult> results(outputs.size());
  std::vector<std::unique_ptr<PendingFile>> pending;
  for (size_t i = 0; i < outputs.size(); ++i)
    pending.push_back(write_verified(*outputs[i].model, outputs[i].path, mode, opt.replace, opt, results[i], note));
  std::vector<std::pair<const Model*, std::string>> replaced;
  for (const Output& o : outputs) replaced.push_back({o.model, o.path});
  std::vector<std::unique_ptr<PathLock>> locks;
  std::vector<FileLock> new_locks;
  std::vector<SetRename> renames;
  try {
    locks = lock_replaced(replaced, opt.in_place, opt.ctx);
    // Every file is complete and verified. Several go in place together (put_set_in_place),
    // each replacing the file as it was read: its inode, taken now that it is checked.
    if (pending.size() > 1) {
      for (size_t i = 0; i < pending.size(); ++i) {
        struct stat st {};
        const std::string& target = pending[i]->target();
        const FileSource* src = opt.in_place ? read_from(*outputs[i].model) : nullptr;
        const bool there = stat_path(target, st, false) == 0, link = there && S_ISLNK(st.st_mode);
        // In place, the file read; but a link given as the file to replace (the caller did not
        // follow it: the edited file goes in place of the link) is replaced itself, once it is
        // checked to still name the file read.
        if (src && link) {
          struct stat named {};
          if (stat_path(target, named) != 0 || static_cast<uint64_t>(named.st_ino) != src->inode() ||
              static_cast<uint64_t>(named.st_dev) != src->device())
            throw Error(Error::Kind::io, target, std::nullopt, "",
                        "changed since it was read (the link names another file now)");
        }
        renames.push_back({target, "", 0,
                           src && !link ? src->inode() : there ? static_cast<uint64_t>(st.st_ino) : 0});
      }
      for (size_t i = 0; i < pending.size(); ++i) {
        auto& p = pending[i];
        struct stat st {};
        if (::fstat(p->fd(), &st) != 0) throw_io(p->target(), "cannot stat the new file");
        // Locked like the files they replace, until the journals are gone: a reader of a
        // shard already renamed waits for the set, rather than take the journal for a crash's.
        new_locks.emplace_back(p->fd(), p->target(), FileLock::Mode::exclusive, opt.ctx);
        renames[i].hidden = p->hidden_name();
        renames[i].inode = static_cast<uint64_t>(st.st_ino);
      }
    }
  } catch (const Error& e) {
    throw e.with_note(note);
  }
  if (!renames.empty()) {
    for (auto& p : pending) p->keep_on_failure(true);  // put_set_in_place removes what it leaves
    put_set_in_place(renames, opt.replace);
    return results;
  }
  try {
    pending[0]->commit();
  } catch (const Error& e) {
    throw e.with_note(note);
  }
  return results;
}

}  // namespace ggufkit
