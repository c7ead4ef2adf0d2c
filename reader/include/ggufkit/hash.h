#pragma once
// Checksums of a model's tensor data and of its files, and llama.cpp's llama-gguf-hash
// manifests: written, read and checked. SHA-1 and SHA-256 are OpenSSL's (libcrypto),
// xxHash64 is libxxhash's.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ggufkit/context.h"
#include "ggufkit/model.h"

namespace ggufkit {

// uuid: llama-gguf-hash's UUIDv5 of a file's tensor data (SHA-1 under its namespace); it
// names a whole file, never a tensor.
enum class HashAlgo { xxh64, sha1, sha256, uuid };
// The names llama-gguf-hash writes in a manifest's first column: xxh64, sha1, sha256, uuid.
std::string_view hash_algo_name(HashAlgo a);
std::optional<HashAlgo> hash_algo_named(std::string_view name);

// A digest of bytes in memory, as lower-case hex (a uuid as 8-4-4-4-12).
std::string digest_hex(HashAlgo algo, const uint8_t* data, size_t n);
std::string sha256_hex(const uint8_t* data, size_t n);  // digest_hex(sha256, ...)

// Checksums of tensor data (never of the header, so a metadata edit keeps them).
std::string hash_tensor(const Tensor& t, HashAlgo algo);
// Every tensor's checksum and one of all tensor bytes in file order; `progress` is told
// the bytes hashed so far and in all (on the calling thread). Tensors are hashed on
// several threads; the order of the answers is the model's.
struct Hashes {
  std::string all;
  std::vector<std::string> tensors;
};
Hashes hash_model(const Model& m, HashAlgo algo, const std::function<void(uint64_t, uint64_t)>& progress = {});

// --- The hash job: what `ggufkit hash` does, in one call -----------------------------

using Digests = std::map<HashAlgo, std::string>;

struct HashRequest {
  std::string path;         // a file, or any shard of a set (the set is hashed)
  bool shard_only = false;  // the file named alone, not its set
  // Tensor checksums in each algorithm: of every tensor, and over the tensor data of each
  // file (per_file, llama-gguf-hash's line for the file) or of the whole model.
  std::vector<HashAlgo> algos;
  bool per_file = false;
  // The SHA-256 of each whole file, as sha256sum gives it. With no algos and no check,
  // nothing is parsed: a download too damaged to read is hashed all the same.
  bool file_sha256 = false;
  // A manifest in llama-gguf-hash's format to verify the files against. `algos` then
  // chooses the hash types checked; empty: of each file, the strongest its lines have
  // (sha256, then sha1, xxh64, uuid), as llama-gguf-hash chooses.
  std::optional<std::string> check;
  // Told, on the calling thread, how many bytes are hashed and of how many: the files'
  // (file_sha256) or the tensor data's, however many digests read each byte.
  std::function<void(uint64_t done, uint64_t total)> progress;
  Context context;  // the call's locks, and its cancel flag (checked where progress is told)
};

// The algorithms `algo` names, as the command's --algo and Python's algo= give them: one
// name for the tensor checksums, or, for a manifest and its check (`list`), names with
// commas or "all" (xxh64, sha1, sha256). A usage Error naming `algo` otherwise.
std::vector<HashAlgo> hash_algos(std::string_view algo, bool list);

// The request the command's options (and Python's keywords) make: the tensor checksums
// (the default; with `file` only when `tensors` too), the files' SHA-256 (`file`), a manifest
// (`per_file`) or its check (`check`), each algo "" taking its default. What says nothing
// (a manifest and its check, the file's SHA-256 with either, an algo for the file's alone)
// is a usage Error naming those fields.
HashRequest hash_request(std::string path, std::string_view algo, bool file, bool tensors, bool manifest,
                         std::optional<std::string> check, bool shard_only);

struct HashedFile {
  std::string path;   // a shard's path is made from the name given (shard_path)
  uint64_t size = 0;
  std::string sha256;  // the whole file's, when asked for
  Digests data;        // over this file's tensor data in its order (per_file)
  size_t first_tensor = 0, tensors = 0;  // its tensors in HashReport::tensors
};

struct HashedTensor {
  std::string name;
  size_t file = 0;  // in HashReport::files
  Digests hex;
};

// What a check found, line by line of its output.
enum class CheckStatus {
  ok,
  mismatch,     // the manifest's hash differs from the file's
  missing,      // a tensor (or a file) of the model that the manifest has no line for
  not_in_file,  // a manifest line naming a tensor the file does not have
};
std::string_view check_status_name(CheckStatus s);  // ok, mismatch, missing, not_in_file

struct CheckedLine {
  HashAlgo algo = HashAlgo::sha256;
  size_t file = 0;                    // in HashReport::files
  std::optional<std::string> tensor;  // none: the line of the file's tensor data
  std::string name;                   // as llama-gguf-hash names it: FILE:TENSOR, or FILE
  std::string actual, expected;       // "" where there is none
  size_t line = 0;                    // the manifest's line number, 0 where there is none
  CheckStatus status = CheckStatus::ok;
};

struct ManifestCheck {
  std::string manifest;
  std::vector<HashAlgo> present;  // the hash types the manifest has, strongest first
  std::vector<CheckedLine> lines;
  size_t other_lines = 0;       // lines naming files that were not checked (skipped)
  std::string other_file;       // the first of those files
  bool ok() const;
};
struct HashReport {
  std::vector<HashedFile> files;
  std::vector<HashedTensor> tensors;  // the model's order: a set's shard 1, then 2, ...
  Digests all;                        // over the whole model's tensor data (not per_file)
  std::optional<ManifestCheck> check;
};

// One sentence on a failed line of r.check, naming the file, the tensor and the manifest's
// line: "m.gguf: tensor blk.0.attn_q.weight: sha256 is 3f.., line 15 of m.manifest says 9a..".
std::string check_failure_text(const CheckedLine& l, const HashReport& r);

// Opens the file (or set), reads it once in large blocks and hashes what the request asks,
// on std::thread::hardware_concurrency() threads. Throws an Error naming the file for a
// file that cannot be read, and one naming the manifest and its line for a malformed line.
HashReport hash_files(const HashRequest& r);

// --- llama-gguf-hash's manifest ------------------------------------------------------
// One line a hash: its type left-aligned in 8 columns, two spaces, the hex, two spaces,
// the name (printf "%-8s  %s  %s\n"): "xxh64     f66e9cd66a4396a0  test.gguf:tensor_0".
// The name is FILE:TENSOR for a tensor and FILE for all of the file's tensor data, FILE as
// the program was given it.
struct ManifestLine {
  HashAlgo algo = HashAlgo::xxh64;
  std::string hex, name;
  size_t line = 0;  // where it was read, from 1
};
std::string manifest_line_text(const ManifestLine& l);  // with its newline
// The lines llama-gguf-hash prints for each file of a per_file report, the files one after
// the other: each tensor's in the request's algos (xxh64, sha1, sha256 order), then the
// file's own (the uuid last).
std::vector<ManifestLine> manifest_of(const HashReport& r);
// Reads a manifest's text; `name` is the manifest's file name for errors. Blank lines are
// skipped; any other line is TYPE HASH NAME, or a format Error names the line. A name may
// hold spaces (the rest of the line, trailing blanks dropped).
std::vector<ManifestLine> parse_manifest(std::string_view text, const std::string& name);

}  // namespace ggufkit
