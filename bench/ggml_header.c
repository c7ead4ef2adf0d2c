/* ggml's own header read as a whole process: gguf_init_from_file with no_alloc from the
 * libggml-base.so that node-llama-cpp ships, opened with dlopen, then gguf_free. The
 * baseline of the header-job bench (bench/header_jobs.sh): every ggufkit job that only
 * reads or edits a header is timed against this, the same file from the page cache.
 *
 *   ggml_header LIBGGML_BASE.so FILE.gguf     prints the key and tensor counts; exit 1 if refused */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct gguf_init_params { bool no_alloc; void** ctx; };
typedef void* (*init_fn)(const char*, struct gguf_init_params);
typedef int64_t (*count_fn)(const void*);
typedef void (*free_fn)(void*);

int main(int argc, char** argv) {
  if (argc != 3) { fprintf(stderr, "usage: ggml_header LIBGGML_BASE.so FILE.gguf\n"); return 2; }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) { fprintf(stderr, "ggml_header: %s\n", dlerror()); return 2; }
  init_fn init = (init_fn)dlsym(lib, "gguf_init_from_file");
  count_fn n_kv = (count_fn)dlsym(lib, "gguf_get_n_kv"), n_tensors = (count_fn)dlsym(lib, "gguf_get_n_tensors");
  free_fn done = (free_fn)dlsym(lib, "gguf_free");
  if (!init || !n_kv || !n_tensors || !done) { fprintf(stderr, "ggml_header: missing a gguf_* symbol\n"); return 2; }
  struct gguf_init_params p = {true, NULL};
  void* ctx = init(argv[2], p);
  if (!ctx) { fprintf(stderr, "ggml_header: %s refused\n", argv[2]); return 1; }
  printf("%lld keys, %lld tensors\n", (long long)n_kv(ctx), (long long)n_tensors(ctx));
  done(ctx);
  return 0;
}
