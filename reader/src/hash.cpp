#include "ggufkit/hash.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "ggufkit/error.h"
#include "ggufkit/scan.h"
#include "ggufkit/shards.h"
#include "ggufkit/source.h"

namespace ggufkit {

namespace {

constexpr HashAlgo kAlgos[] = {HashAlgo::xxh64, HashAlgo::sha1, HashAlgo::sha256, HashAlgo::uuid};
// uuid.uuid5(uuid.NAMESPACE_URL, 'en.wikipedia.org/wiki/Llama.cpp'): llama-gguf-hash's namespace.
constexpr uint8_t kLlamaCppNamespace[16] = {0xef, 0x00, 0x12, 0x06, 0xda, 0xdc, 0x5f, 0x6d,
                                            0xa1, 0x5f, 0x33, 0x59, 0xe5, 0x77, 0xd4, 0xe5};
constexpr size_t kBlock = 4u << 20;  // one read: large enough that a read costs little beside hashing it

[[noreturn]] void openssl_failed(const char* what) { throw std::runtime_error(std::string("OpenSSL: ") + what + " failed"); }

// One streaming digest of any of the algorithms.
class Digest {
 public:
  explicit Digest(HashAlgo a) : algo_(a) {
    if (a == HashAlgo::xxh64) {
      xxh_ = XXH64_createState();
      if (!xxh_) throw std::bad_alloc();
      XXH64_reset(xxh_, 0);
      return;
    }
    md_ = EVP_MD_CTX_new();
    if (!md_) throw std::bad_alloc();
    if (EVP_DigestInit_ex(md_, a == HashAlgo::sha256 ? EVP_sha256() : EVP_sha1(), nullptr) != 1) openssl_failed("EVP_DigestInit_ex");
    if (a == HashAlgo::uuid) update(kLlamaCppNamespace, sizeof kLlamaCppNamespace);  // UUIDv5: SHA-1 of namespace, name
  }
  ~Digest() {
    if (xxh_) XXH64_freeState(xxh_);
    if (md_) EVP_MD_CTX_free(md_);
  }
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;

  void update(const uint8_t* p, size_t n) {
    if (xxh_) XXH64_update(xxh_, p, n);
    else if (n && EVP_DigestUpdate(md_, p, n) != 1) openssl_failed("EVP_DigestUpdate");
  }
  std::string hex() {
    char b[2 * EVP_MAX_MD_SIZE + 8];
    if (xxh_) {
      std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(XXH64_digest(xxh_)));
      return b;
    }
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_DigestFinal_ex(md_, d, &n) != 1) openssl_failed("EVP_DigestFinal_ex");
    if (algo_ == HashAlgo::uuid) {  // RFC 9562 5.5: the first 16 bytes, version 5, variant 0b10
      d[6] = static_cast<unsigned char>((d[6] & 0x0f) | 0x50);
      d[8] = static_cast<unsigned char>((d[8] & 0x3f) | 0x80);
      std::snprintf(b, sizeof b, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", d[0], d[1], d[2],
                    d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12], d[13], d[14], d[15]);
      return b;
    }
    for (unsigned int i = 0; i < n; ++i) std::snprintf(b + 2 * i, 3, "%02x", d[i]);
    return std::string(b, 2 * n);
  }

 private:
  HashAlgo algo_;
  XXH64_state_t* xxh_ = nullptr;
  EVP_MD_CTX* md_ = nullptr;
};

// A byte range of a source.
struct Piece {
  std::shared_ptr<const ByteSource> src;
  uint64_t offset = 0, n = 0;
};

Piece piece_of(const Tensor& t) {
  if (!t.source) throw Error(Error::Kind::format, "", std::nullopt, "tensor " + t.name, "the tensor has no data source");
  return {t.source, t.source_offset, t.nbytes()};
}

// One stream of bytes (pieces read in order) and the digests taken of it.
struct Job {
  std::vector<Piece> pieces;
  std::vector<std::pair<HashAlgo, std::string*>> outs;
  uint64_t bytes() const {
    uint64_t n = 0;
    for (const Piece& p : pieces) n += p.n;
    return n;
  }
};

// A piece's file, held open while the piece is read (a file released after its header is
// then opened once a piece, not once a block) and read ahead as one stream (a cold file).
std::shared_ptr<const int> opened(const Piece& p) {
  auto file = p.n ? p.src->file() : nullptr;
  if (file) ::posix_fadvise(*file, static_cast<off_t>(p.offset), static_cast<off_t>(p.n), POSIX_FADV_SEQUENTIAL);
  return file;
}

// Feeds fn the pieces' bytes in order, in blocks. A stream of more than a few blocks is
// read ahead on a second thread (three buffers) while fn hashes the block before.
template <typename Fn>
void read_in_order(const std::vector<Piece>& pieces, uint64_t total, Fn&& fn, const std::atomic<bool>& stop) {
  if (total <= 2 * kBlock) {
    std::vector<uint8_t> buf(static_cast<size_t>(std::min<uint64_t>(total, kBlock)));
    for (const Piece& p : pieces) {
      const auto open = opened(p);
      for (uint64_t off = 0; off < p.n && !stop;) {
        size_t k = static_cast<size_t>(std::min<uint64_t>(p.n - off, kBlock));
        p.src->read_at(p.offset + off, buf.data(), k);
        fn(buf.data(), k);
        off += k;
      }
    }
    return;
  }
  constexpr size_t kSlots = 3;
  struct Slot {
    std::vector<uint8_t> buf;
    size_t n = 0;
  };
  Slot slots[kSlots];
  std::mutex m;
  std::condition_variable cv;
  size_t produced = 0, consumed = 0;
  bool finished = false, quit = false;
  std::exception_ptr err;
  std::thread reader([&] {
    try {
      for (const Piece& p : pieces) {
        const auto open = opened(p);
        for (uint64_t off = 0; off < p.n;) {
          Slot* s;
          {
            std::unique_lock<std::mutex> l(m);
            cv.wait(l, [&] { return quit || produced - consumed < kSlots; });
            if (quit) return;
            s = &slots[produced % kSlots];
          }
          if (s->buf.empty()) s->buf.resize(kBlock);
          s->n = static_cast<size_t>(std::min<uint64_t>(p.n - off, kBlock));
          p.src->read_at(p.offset + off, s->buf.data(), s->n);
          off += s->n;
          {
            std::lock_guard<std::mutex> l(m);
            ++produced;
          }
          cv.notify_all();
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> l(m);
      err = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> l(m);
      finished = true;
    }
    cv.notify_all();
  });
  struct Joined {  // the reader is stopped and joined however this function is left
    std::mutex& m;
    std::condition_variable& cv;
    bool& quit;
    std::thread& t;
    ~Joined() {
      {
        std::lock_guard<std::mutex> l(m);
        quit = true;
      }
      cv.notify_all();
      t.join();
    }
  };
  {
    Joined joined{m, cv, quit, reader};
    while (!stop) {
      Slot* s;
      {
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [&] { return consumed < produced || finished; });
        if (consumed == produced) break;
        s = &slots[consumed % kSlots];
      }
      fn(s->buf.data(), s->n);
      {
        std::lock_guard<std::mutex> l(m);
        ++consumed;
      }
      cv.notify_all();
    }
  }
  if (err) std::rethrow_exception(err);
}

void run_job(const Job& j, std::atomic<uint64_t>& done, const std::atomic<bool>& stop) {
  std::vector<std::unique_ptr<Digest>> ds;
  for (const auto& o : j.outs) ds.push_back(std::make_unique<Digest>(o.first));
  read_in_order(j.pieces, j.bytes(), [&](const uint8_t* p, size_t n) {
    for (auto& d : ds) d->update(p, n);
    done += n;
  }, stop);
  if (stop) return;
  for (size_t i = 0; i < ds.size(); ++i) *j.outs[i].second = ds[i]->hex();
}

// Runs the jobs on hardware_concurrency() threads, the longest first, each job's answers
// in the strings it names (so the order of the answers is the caller's, never the
// threads'). The first job (in the caller's order) that failed throws its error. Progress
// is told in `shown` bytes (the model's, or the files'), however many streams read them.
// `cancel` (a caller's Ctrl-C, seen where progress is told) stops every thread: an Error.
void run_jobs(const std::vector<Job>& jobs, const std::function<void(uint64_t, uint64_t)>& progress, uint64_t shown = 0,
              const std::atomic<bool>* cancel = nullptr) {
  uint64_t total = 0;
  std::vector<size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::vector<uint64_t> bytes(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) total += bytes[i] = jobs[i].bytes();
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bytes[a] > bytes[b]; });
  const size_t n = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), jobs.size());
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> done{0};
  std::atomic<bool> stop{false};
  std::vector<std::exception_ptr> errs(jobs.size());
  std::mutex m;
  std::condition_variable cv;
  size_t running = n;
  auto work = [&] {
    for (size_t i; !stop && (i = next++) < order.size();) {
      try {
        run_job(jobs[order[i]], done, stop);
      } catch (...) {
        errs[order[i]] = std::current_exception();
        stop = true;
      }
    }
    std::lock_guard<std::mutex> l(m);
    if (--running == 0) cv.notify_all();
  };
  if (n == 1 && !progress) {  // one job (hash_tensor, diff's tensor by tensor): no thread to start
    work();
    for (const std::exception_ptr& e : errs)
      if (e) std::rethrow_exception(e);
    return;
  }
  std::vector<std::thread> threads;
  for (size_t k = 0; k < n; ++k) threads.emplace_back(work);
  {
    std::unique_lock<std::mutex> l(m);
    while (running > 0) {
      cv.wait_for(l, std::chrono::milliseconds(100), [&] { return running == 0; });
      if (progress && running > 0) {
        l.unlock();
        const double share = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
        progress(static_cast<uint64_t>(share * static_cast<double>(shown)), shown);
        l.lock();
      }
      if (cancel && *cancel) stop = true;
    }
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errs)
    if (e) std::rethrow_exception(e);
  if (cancel && *cancel) throw Error(Error::Kind::io, "", std::nullopt, "", "stopped: the hashing was cancelled");
  if (progress) progress(shown, shown);
}

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The strongest first, as llama-gguf-hash prefers them.
constexpr HashAlgo kStrongest[] = {HashAlgo::sha256, HashAlgo::sha1, HashAlgo::xxh64, HashAlgo::uuid};

size_t hex_digits(HashAlgo a) {
  switch (a) {
    case HashAlgo::xxh64: return 16;
    case HashAlgo::sha1: return 40;
    case HashAlgo::sha256: return 64;
    case HashAlgo::uuid: return 36;
  }
  return 0;
}

// Lower-case hex of the algorithm's length (a uuid with its dashes), or nullopt.
std::optional<std::string> normal_hex(HashAlgo a, std::string_view s) {
  if (s.size() != hex_digits(a)) return std::nullopt;
  std::string out(s);
  for (size_t i = 0; i < out.size(); ++i) {
    char& c = out[i];
    if (a == HashAlgo::uuid && (i == 8 || i == 13 || i == 18 || i == 23)) {
      if (c != '-') return std::nullopt;
      continue;
    }
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
  }
  return out;
}

std::string algo_list() {
  std::string s;
  for (HashAlgo a : kAlgos) s += (s.empty() ? "" : ", ") + std::string(hash_algo_name(a));
  return s;
}

// The files of a request, parsed (their tensors) or not.
struct Opened {
  std::vector<std::string> paths;
  ShardSet set;  // empty when not parsed
};

Opened open_files(const HashRequest& r, bool parse) {
  if (r.path == "-") throw_usage("hash reads the file's bytes: FILE must be a file, not '-' (standard input)");
  Opened o;
  std::optional<ShardName> shard = r.shard_only ? std::nullopt : parse_shard_name(r.path);
  if (parse) {
    if (shard) o.set = open_shard_set(r.path, r.context);
    else o.set.shards.push_back({r.path, scan_file(r.path, {}, r.context)});
    for (const Shard& s : o.set.shards) o.paths.push_back(s.path);
  } else if (shard) {
    for (uint32_t k = 1; k <= shard->count; ++k) o.paths.push_back(shard_path(shard->prefix, k, shard->count));
  } else {
    o.paths.push_back(r.path);
  }
  return o;
}

// Which file of `files` (by base name) a manifest name is about, and the tensor it names
// (none: the file's tensor data). llama-gguf-hash names a tensor FILE:TENSOR, FILE as it
// was given: any folder before the base name is allowed.
struct Named {
  size_t file;
  std::optional<std::string> tensor;
};
std::optional<Named> resolve(const std::string& name, const std::vector<std::string>& bases) {
  for (size_t k = 0; k < bases.size(); ++k) {
    const std::string& b = bases[k];
    if (name.size() >= b.size() && name.compare(name.size() - b.size(), b.size(), b) == 0 &&
        (name.size() == b.size() || name[name.size() - b.size() - 1] == '/'))
      return Named{k, std::nullopt};
  }
  for (size_t k = 0; k < bases.size(); ++k) {
    const std::string key = bases[k] + ":";
    for (size_t at = name.find(key); at != std::string::npos; at = name.find(key, at + 1))
      if (at == 0 || name[at - 1] == '/') return Named{k, name.substr(at + key.size())};
  }
  return std::nullopt;
}

// A manifest's lines about one file in one hash type.
struct Want {
  std::map<std::string, const ManifestLine*> tensors;
  const ManifestLine* data = nullptr;  // the file's tensor data
  std::vector<std::pair<const ManifestLine*, std::string>> unknown;  // naming tensors the file does not have
  // A manifest that lists a file's tensors lists them all; one without (llama-gguf-hash
  // --no-layer) checks the file by its tensor data alone.
  bool lists_tensors() const { return !tensors.empty() || !unknown.empty(); }
};
using Wants = std::map<HashAlgo, Want>;

// Each manifest line given its file and tensor (lines of other files counted in c),
// duplicates refused unless they agree.
constexpr size_t kNameQuoted = 4096;  // a name in a message: any path whole, a 200 MB one by its ends

std::vector<Wants> sort_lines(const std::vector<ManifestLine>& manifest, const HashReport& rep, ManifestCheck& c) {
  std::vector<Wants> want(rep.files.size());
  std::vector<std::string> bases;
  for (const HashedFile& f : rep.files) bases.push_back(base_name(f.path));
  std::vector<std::unordered_map<std::string, size_t>> index(rep.files.size());
  for (size_t i = 0; i < rep.tensors.size(); ++i) index[rep.tensors[i].file].emplace(rep.tensors[i].name, i);
  std::set<HashAlgo> present;
  auto fail = [&](const ManifestLine& l, const std::string& message) {
    throw Error(Error::Kind::format, c.manifest, std::nullopt, "line " + std::to_string(l.line), message);
  };
  for (const ManifestLine& l : manifest) {
    present.insert(l.algo);
    std::optional<Named> n = resolve(l.name, bases);
    if (!n) {
      if (c.other_lines++ == 0) {
        size_t slash = l.name.rfind('/');
        c.other_file = clipped(std::string_view(l.name).substr(0, l.name.find(':', slash == std::string::npos ? 0 : slash)), kNameQuoted);
      }
      continue;
    }
    Want& w = want[n->file][l.algo];
    const ManifestLine** slot = &w.data;
    if (n->tensor) {
      if (l.algo == HashAlgo::uuid) fail(l, "a uuid names a whole file, not a tensor (" + clipped(l.name, kNameQuoted) + ")");
      if (!index[n->file].count(*n->tensor)) {
        w.unknown.emplace_back(&l, *n->tensor);
        continue;
      }
      slot = &w.tensors[*n->tensor];
    }
    if (*slot && (*slot)->hex != l.hex)
      fail(l, "a second " + std::string(hash_algo_name(l.algo)) + " line for " + clipped(l.name, kNameQuoted) + ", with another hash than line " +
                  std::to_string((*slot)->line));
    if (!*slot) *slot = &l;
  }
  for (HashAlgo a : kStrongest)
    if (present.count(a)) c.present.push_back(a);
  return want;
}

// The types a file is checked by: those asked for, or the strongest its lines have.
std::vector<HashAlgo> checked_types(const Wants& w, const std::vector<HashAlgo>& asked, const ManifestCheck& c) {
  std::vector<HashAlgo> out;
  for (HashAlgo a : kAlgos)
    if (std::find(asked.begin(), asked.end(), a) != asked.end()) out.push_back(a);
  if (!out.empty()) return out;
  for (HashAlgo a : kStrongest)
    if (w.count(a)) return {a};
  return {c.present.front()};  // none: the file fails for want of a line
}

// The check's lines of file k, as llama-gguf-hash prints them: each tensor in each type,
// then the lines naming tensors the file lacks, then the file's own line.
void check_file(size_t k, const Wants& want, const std::vector<HashAlgo>& types, HashReport& rep) {
  const HashedFile& f = rep.files[k];
  ManifestCheck& c = *rep.check;
  auto add = [&](HashAlgo a, const std::optional<std::string>& tensor, const std::string& actual, const ManifestLine* m,
                 CheckStatus none) {
    CheckedLine l;
    l.algo = a;
    l.file = k;
    l.tensor = tensor;
    l.name = tensor ? f.path + ":" + *tensor : f.path;
    l.actual = actual;
    l.status = none;
    if (m) {
      l.expected = m->hex;
      l.line = m->line;
      if (none == CheckStatus::missing) l.status = m->hex == actual ? CheckStatus::ok : CheckStatus::mismatch;
    }
    c.lines.push_back(std::move(l));
  };
  static const Want kNone;
  auto of = [&](HashAlgo a) -> const Want& {
    auto w = want.find(a);
    return w == want.end() ? kNone : w->second;
  };
  for (size_t i = f.first_tensor; i < f.first_tensor + f.tensors; ++i)
    for (HashAlgo a : types) {
      const Want& w = of(a);
      if (!w.lists_tensors()) continue;  // the file is checked by its data line alone
      auto t = w.tensors.find(rep.tensors[i].name);
      add(a, rep.tensors[i].name, rep.tensors[i].hex[a], t == w.tensors.end() ? nullptr : t->second, CheckStatus::missing);
    }
  for (HashAlgo a : types)
    for (const auto& [m, tensor] : of(a).unknown) add(a, tensor, "", m, CheckStatus::not_in_file);
  for (HashAlgo a : types)
    if (of(a).data || !of(a).lists_tensors()) add(a, std::nullopt, f.data.at(a), of(a).data, CheckStatus::missing);
}

}  // namespace

std::string_view hash_algo_name(HashAlgo a) {
  switch (a) {
    case HashAlgo::xxh64: return "xxh64";
    case HashAlgo::sha1: return "sha1";
    case HashAlgo::sha256: return "sha256";
    case HashAlgo::uuid: return "uuid";
  }
  return "?";
}

std::optional<HashAlgo> hash_algo_named(std::string_view name) {
  for (HashAlgo a : kAlgos)
    if (hash_algo_name(a) == name) return a;
  return std::nullopt;
}

std::vector<HashAlgo> hash_algos(std::string_view text, bool list) {
  if (list && text == "all") return {HashAlgo::xxh64, HashAlgo::sha1, HashAlgo::sha256};
  std::vector<HashAlgo> out;
  for (size_t at = 0; at <= text.size();) {
    const size_t comma = list ? text.find(',', at) : std::string_view::npos;
    const std::string name(text.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at));
    const std::optional<HashAlgo> a = hash_algo_named(name);
    if (!a || (!list && *a == HashAlgo::uuid))
      throw_usage(list ? "`algo` is a comma list of xxh64, sha1, sha256 and uuid, or all; found '" + name + "'"
                  : a  ? std::string("a uuid names a whole file: `algo` uuid is for `per_file` and `check`")
                       : "`algo` must be xxh64, sha1 or sha256, found '" + std::string(text) + "'");
    if (std::find(out.begin(), out.end(), *a) == out.end()) out.push_back(*a);
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  return out;
}

HashRequest hash_request(std::string path, std::string_view algo, bool file, bool tensors, bool manifest,
                         std::optional<std::string> check, bool shard_only) {
  if (manifest && check) throw_usage("`per_file` writes a manifest and `check` reads one: give one of them");
  if (file && (manifest || check))
    throw_usage(std::string("`file` is the whole file's SHA-256, which a llama-gguf-hash manifest does not hold: ") +
                (manifest ? "`per_file`" : "`check`") + " goes without it");
  HashRequest req;
  req.path = std::move(path);
  req.shard_only = shard_only;
  if (manifest) req.algos = hash_algos(algo.empty() ? "all" : algo, true);
  else if (check) req.algos = algo.empty() ? std::vector<HashAlgo>{} : hash_algos(algo, true);
  else if (!file || tensors) req.algos = hash_algos(algo.empty() ? "xxh64" : algo, false);
  else if (!algo.empty()) throw_usage("`file` is always SHA-256: `algo` is for the tensor checksums (`tensors`)");
  req.per_file = manifest;
  req.file_sha256 = file;
  req.check = std::move(check);
  return req;
}

std::string digest_hex(HashAlgo algo, const uint8_t* data, size_t n) {
  Digest d(algo);
  d.update(data, n);
  return d.hex();
}

std::string sha256_hex(const uint8_t* data, size_t n) { return digest_hex(HashAlgo::sha256, data, n); }

std::string hash_tensor(const Tensor& t, HashAlgo algo) {
  std::string out;
  run_jobs({Job{{piece_of(t)}, {{algo, &out}}}}, {});
  return out;
}

Hashes hash_model(const Model& m, HashAlgo algo, const std::function<void(uint64_t, uint64_t)>& progress) {
  Hashes out;
  out.tensors.resize(m.tensors.size());
  std::vector<Job> jobs;
  Job all{{}, {{algo, &out.all}}};
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    Piece p = piece_of(m.tensors[i]);
    jobs.push_back(Job{{p}, {{algo, &out.tensors[i]}}});
    all.pieces.push_back(p);
  }
  const uint64_t bytes = all.bytes();
  jobs.push_back(std::move(all));
  run_jobs(jobs, progress, bytes);
  return out;
}

std::string_view check_status_name(CheckStatus s) {
  switch (s) {
    case CheckStatus::ok: return "ok";
    case CheckStatus::mismatch: return "mismatch";
    case CheckStatus::missing: return "missing";
    case CheckStatus::not_in_file: return "not_in_file";
  }
  return "?";
}

bool ManifestCheck::ok() const {
  for (const CheckedLine& l : lines)
    if (l.status != CheckStatus::ok) return false;
  return true;
}

std::string check_failure_text(const CheckedLine& l, const HashReport& r) {
  const std::string& file = r.files.at(l.file).path;
  const std::string manifest = r.check ? r.check->manifest : std::string("the manifest");
  const std::string algo(hash_algo_name(l.algo));
  const std::string what = l.tensor ? "tensor " + *l.tensor : "the " + algo + " of all its tensor data";
  const std::string at = "line " + std::to_string(l.line) + " of " + manifest;
  switch (l.status) {
    case CheckStatus::ok: return "";
    case CheckStatus::mismatch:
      return l.tensor ? file + ": tensor " + *l.tensor + ": " + algo + " is " + l.actual + ", " + at + " says " + l.expected
                      : file + ": " + what + " is " + l.actual + ", " + at + " says " + l.expected;
    case CheckStatus::missing:
      if (l.tensor) return file + ": tensor " + *l.tensor + " has no " + algo + " line in " + manifest;
      return file + ": " + manifest + " has no " + algo + " line for this file" +
             (r.check && !r.check->other_file.empty() ? " (its lines name " + r.check->other_file + ")" : "");
    case CheckStatus::not_in_file:
      return file + ": " + at + " names tensor " + l.tensor.value_or("") + ", which the file does not have";
  }
  return "";
}

std::string manifest_line_text(const ManifestLine& l) {
  char type[16];
  std::snprintf(type, sizeof type, "%-8s", std::string(hash_algo_name(l.algo)).c_str());
  return std::string(type) + "  " + l.hex + "  " + l.name + "\n";
}

std::vector<ManifestLine> manifest_of(const HashReport& r) {
  std::vector<ManifestLine> out;
  for (const HashedFile& f : r.files) {
    for (size_t i = f.first_tensor; i < f.first_tensor + f.tensors; ++i)
      for (const auto& [algo, hex] : r.tensors[i].hex) out.push_back({algo, hex, f.path + ":" + r.tensors[i].name, 0});
    for (const auto& [algo, hex] : f.data) out.push_back({algo, hex, f.path, 0});
  }
  return out;
}

std::vector<ManifestLine> parse_manifest(std::string_view text, const std::string& name) {
  std::vector<ManifestLine> out;
  size_t number = 0;
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; };
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++number;
    auto fail = [&](const std::string& message) {
      throw Error(Error::Kind::format, name, std::nullopt, "line " + std::to_string(number), message);
    };
    size_t a = 0;
    auto word = [&] {
      while (a < line.size() && blank(line[a])) ++a;
      size_t from = a;
      while (a < line.size() && !blank(line[a])) ++a;
      return line.substr(from, a - from);
    };
    std::string_view type = word();
    if (type.empty()) continue;  // a blank line
    std::optional<HashAlgo> algo = hash_algo_named(type);
    if (!algo)
      fail("'" + clipped(type, 128) + "' is not a hash type; a manifest line is TYPE HASH NAME, TYPE one of " + algo_list());
    std::string_view hex = word();
    while (a < line.size() && blank(line[a])) ++a;
    std::string_view rest = line.substr(a);
    while (!rest.empty() && blank(rest.back())) rest.remove_suffix(1);
    if (hex.empty() || rest.empty())
      fail("a manifest line is TYPE HASH NAME; this one has " + std::string(hex.empty() ? "no hash" : "no name"));
    std::optional<std::string> norm = normal_hex(*algo, hex);
    if (!norm)
      fail("'" + clipped(hex, 128) + "' is not " +
           (*algo == HashAlgo::uuid ? std::string("a uuid (8-4-4-4-12 hex digits)")
                                    : "an " + std::string(hash_algo_name(*algo)) + " hash (" +
                                          std::to_string(hex_digits(*algo)) + " hex digits)"));
    out.push_back({*algo, *norm, std::string(rest), number});
  }
  return out;
}

HashReport hash_files(const HashRequest& r) {
  HashReport rep;
  std::vector<ManifestLine> manifest;
  if (r.check) {
    manifest = parse_manifest(read_small_file(*r.check, 64u << 20), *r.check);  // a line per tensor and type: a MiB for the largest models
    if (manifest.empty())
      throw Error(Error::Kind::format, *r.check, std::nullopt, "", "has no hash lines (TYPE HASH NAME, TYPE one of " + algo_list() + ")");
  }
  for (HashAlgo a : r.algos)
    if (a == HashAlgo::uuid && !r.per_file && !r.check) throw_usage("a uuid names a whole file: it is for `per_file` and `check`");
  const bool parse = !r.algos.empty() || r.check;
  Opened o = open_files(r, parse);
  std::vector<Job> jobs;
  for (size_t k = 0; k < o.paths.size(); ++k) {
    HashedFile f;
    f.path = o.paths[k];
    if (parse) {
      f.first_tensor = rep.tensors.size();
      f.tensors = o.set.shards[k].file.model.tensors.size();
      f.size = o.set.shards[k].file.source_size;
      for (size_t i = 0; i < f.tensors; ++i)
        rep.tensors.push_back({std::string(o.set.shards[k].file.model.tensors.name(i)), k, {}});
    }
    rep.files.push_back(std::move(f));
  }
  // What is hashed: in each file, the tensors in `tensor_algos[k]` and the tensor data in
  // `data_algos[k]`.
  std::vector<std::set<HashAlgo>> tensor_algos(rep.files.size()), data_algos(rep.files.size());
  if (!r.check) {
    for (size_t k = 0; k < rep.files.size(); ++k)
      for (HashAlgo a : r.algos) {
        if (a != HashAlgo::uuid) tensor_algos[k].insert(a);
        if (r.per_file) data_algos[k].insert(a);
      }
  }
  // The check: the lines sorted by file, and the types each file is checked by.
  std::vector<Wants> want;
  std::vector<std::vector<HashAlgo>> types(rep.files.size());
  if (r.check) {
    rep.check = ManifestCheck{};
    rep.check->manifest = *r.check;
    want = sort_lines(manifest, rep, *rep.check);
    for (size_t k = 0; k < rep.files.size(); ++k) {
      types[k] = checked_types(want[k], r.algos, *rep.check);
      for (HashAlgo a : types[k]) {
        auto w = want[k].find(a);
        const bool tensors = w != want[k].end() && w->second.lists_tensors();
        if (tensors) tensor_algos[k].insert(a);
        if (!tensors || w->second.data) data_algos[k].insert(a);  // the file's line, or its absence, is checked
      }
    }
  }
  // The jobs: each tensor once in all its algorithms, each file's tensor data, the whole
  // model's, and each whole file.
  for (size_t k = 0; k < rep.files.size(); ++k) {
    HashedFile& f = rep.files[k];
    Job data;
    for (size_t i = f.first_tensor; i < f.first_tensor + f.tensors; ++i) {
      Piece p = piece_of(o.set.shards[k].file.model.tensors[i - f.first_tensor]);
      Job one{{p}, {}};
      for (HashAlgo a : tensor_algos[k]) one.outs.push_back({a, &rep.tensors[i].hex[a]});
      if (!one.outs.empty()) jobs.push_back(std::move(one));
      data.pieces.push_back(p);
    }
    for (HashAlgo a : data_algos[k]) data.outs.push_back({a, &f.data[a]});
    if (!data.outs.empty()) jobs.push_back(std::move(data));
  }
  if (!r.per_file && !r.check && !r.algos.empty()) {
    Job all;
    for (size_t k = 0; k < rep.files.size(); ++k)
      for (size_t i = 0; i < rep.files[k].tensors; ++i) all.pieces.push_back(piece_of(o.set.shards[k].file.model.tensors[i]));
    for (HashAlgo a : r.algos) all.outs.push_back({a, &rep.all[a]});
    jobs.push_back(std::move(all));
  }
  std::vector<std::shared_ptr<const ByteSource>> whole;  // each file, read from its first byte to its last
  if (r.file_sha256)
    for (HashedFile& f : rep.files) {
      auto file = std::make_shared<FileSource>(f.path, r.context);
      file->release();  // open only while it is read: a set of 1,200 files is not held open at once
      f.size = file->size();
      whole.push_back(std::move(file));
      jobs.push_back(Job{{{whole.back(), 0, f.size}}, {{HashAlgo::sha256, &f.sha256}}});
    }
  uint64_t shown = 0;  // the files' bytes when they are read whole, else the tensors'
  if (r.file_sha256)
    for (const HashedFile& f : rep.files) shown += f.size;
  else
    for (size_t k = 0; k < rep.files.size(); ++k)
      for (size_t i = 0; i < rep.files[k].tensors; ++i) shown += o.set.shards[k].file.model.tensors[i].nbytes();
  run_jobs(jobs, r.progress, shown, r.context.cancel);
  if (r.check)
    for (size_t k = 0; k < rep.files.size(); ++k) check_file(k, want[k], types[k], rep);
  return rep;
}

}  // namespace ggufkit
