/* llama.cpp's own tokenizer, as a small C program: libllama from node-llama-cpp's prebuilt
 * package, opened with dlopen, the model loaded vocabulary-only. The baseline of the
 * tokenizer bench and the oracle of the differential tests.
 *
 *   llama_tokenize LIBDIR VOCAB.gguf bench TEXTFILE [ADD PARSE]  ids of the whole file, one line
 *   llama_tokenize LIBDIR VOCAB.gguf lines                  requests on stdin, one a line:
 *                                                           "ADD PARSE HEX" -> the ids, one line
 *   llama_tokenize LIBDIR VOCAB.gguf loaded                 llama_vocab_* answers, as JSON
 *   llama_tokenize LIBDIR VOCAB.gguf attrs                  mask, add_sep and every token attribute
 *                                                           but normal (llama_vocab_get_attr), as JSON
 *
 * ADD and PARSE are 0 or 1 (add_special, parse_special); HEX is the text's bytes in hex.
 * Where llama.cpp aborts on a text (an uncaught C++ exception: "invalid codepoint" for a
 * 4-byte sequence above U+10FFFF in the BPE and WPM paths), `lines` answers "crash" and goes
 * on with the next request: the abort's SIGABRT jumps back to the loop (nothing is unwound,
 * so the vocabulary is as it was; the exception object is leaked).
 * A refused load prints "refused" and exits 1. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* llama_model_params is passed by value; vocab_only is the bool after the first 72 bytes
 * (8 + 8 + 4 * 6 with padding + 4 pointers) in this release. The buffer is larger than the
 * struct, so the ABI passes it whole on the stack as it would the struct. */
typedef struct { _Alignas(16) unsigned char bytes[512]; } params_t;
enum { VOCAB_ONLY_AT = 72 };

static void* sym(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (!p) { fprintf(stderr, "llama_tokenize: missing %s\n", name); exit(2); }
  return p;
}
static void quiet(int level, const char* text, void* user) { (void)level, (void)text, (void)user; }
static sigjmp_buf on_abort;
static void aborted(int sig) { (void)sig, siglongjmp(on_abort, 1); }

typedef int32_t (*vocab_fn)(const void*);
static int hexval(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

int main(int argc, char** argv) {
  if (argc < 4) { fprintf(stderr, "usage: llama_tokenize LIBDIR VOCAB.gguf bench FILE [ADD PARSE] | lines | loaded | attrs\n"); return 2; }
  char path[4096];
  setenv("GGML_NO_BACKTRACE", "1", 1);  /* ggml's terminate handler would attach gdb on every abort */
  snprintf(path, sizeof path, "%s/libggml.v0.4.0.so", argv[1]);
  void* ggml = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  snprintf(path, sizeof path, "%s/libllama.v0.4.0.so", argv[1]);
  void* lib = ggml ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!lib) { fprintf(stderr, "llama_tokenize: %s\n", dlerror()); return 2; }
  ((void (*)(void (*)(int, const char*, void*), void*))sym(lib, "llama_log_set"))(quiet, NULL);
  ((void (*)(const char*))sym(ggml, "ggml_backend_load_all_from_path"))(argv[1]);
  ((void (*)(void))sym(lib, "llama_backend_init"))();
  params_t mp = ((params_t (*)(void))sym(lib, "llama_model_default_params"))();
  mp.bytes[VOCAB_ONLY_AT] = 1;
  void* model = ((void* (*)(const char*, params_t))sym(lib, "llama_model_load_from_file"))(argv[2], mp);
  if (!model) { puts("refused"); return 1; }
  const void* vocab = ((const void* (*)(const void*))sym(lib, "llama_model_get_vocab"))(model);
  int32_t (*tokenize)(const void*, const char*, int32_t, int32_t*, int32_t, bool, bool) =
      (int32_t (*)(const void*, const char*, int32_t, int32_t*, int32_t, bool, bool))sym(lib, "llama_tokenize");
  const char* mode = argv[3];
  if (strcmp(mode, "loaded") == 0) {
    static const char* names[] = {"bos", "eos", "eot", "sep", "nl", "pad", "fim_pre", "fim_suf", "fim_mid", "fim_pad", "fim_rep", "fim_sep"};
    printf("{\"n_tokens\": %d, \"type\": %d", ((vocab_fn)sym(lib, "llama_vocab_n_tokens"))(vocab),
           ((vocab_fn)sym(lib, "llama_vocab_type"))(vocab));
    for (size_t i = 0; i < sizeof names / sizeof *names; ++i) {
      char fn[64];
      snprintf(fn, sizeof fn, "llama_vocab_%s", names[i]);
      printf(", \"%s\": %d", names[i], ((vocab_fn)sym(lib, fn))(vocab));
    }
    printf(", \"add_bos\": %s", ((bool (*)(const void*))sym(lib, "llama_vocab_get_add_bos"))(vocab) ? "true" : "false");
    printf(", \"add_eos\": %s", ((bool (*)(const void*))sym(lib, "llama_vocab_get_add_eos"))(vocab) ? "true" : "false");
    bool (*is_eog)(const void*, int32_t) = (bool (*)(const void*, int32_t))sym(lib, "llama_vocab_is_eog");
    bool (*is_control)(const void*, int32_t) = (bool (*)(const void*, int32_t))sym(lib, "llama_vocab_is_control");
    int32_t n = ((vocab_fn)sym(lib, "llama_vocab_n_tokens"))(vocab);
    const char* sep = "";
    printf(", \"eog\": [");
    for (int32_t t = 0; t < n; ++t) if (is_eog(vocab, t)) printf("%s%d", sep, t), sep = ", ";
    printf("], \"control\": [");
    sep = "";
    for (int32_t t = 0; t < n; ++t) if (is_control(vocab, t)) printf("%s%d", sep, t), sep = ", ";
    printf("]}\n");
    return 0;
  }
  if (strcmp(mode, "attrs") == 0) {  /* apart from loaded, whose fields others compare one to one */
    int32_t (*get_attr)(const void*, int32_t) = (int32_t (*)(const void*, int32_t))sym(lib, "llama_vocab_get_attr");
    int32_t n = ((vocab_fn)sym(lib, "llama_vocab_n_tokens"))(vocab);
    printf("{\"mask\": %d", ((vocab_fn)sym(lib, "llama_vocab_mask"))(vocab));
    printf(", \"add_sep\": %s, \"attr\": [", ((bool (*)(const void*))sym(lib, "llama_vocab_get_add_sep"))(vocab) ? "true" : "false");
    const char* sep = "";
    for (int32_t t = 0; t < n; ++t)
      if (get_attr(vocab, t) != 4 /* LLAMA_TOKEN_ATTR_NORMAL */) printf("%s[%d, %d]", sep, t, get_attr(vocab, t)), sep = ", ";
    printf("]}\n");
    return 0;
  }
  if (strcmp(mode, "bench") == 0 && argc >= 5) {
    FILE* f = fopen(argv[4], "rb");
    if (!f) { perror(argv[4]); return 2; }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char* text = malloc((size_t)size + 1);
    if (fread(text, 1, (size_t)size, f) != (size_t)size) { perror(argv[4]); return 2; }
    fclose(f);
    bool add = argc < 6 || argv[5][0] == '1', parse = argc < 7 || argv[6][0] == '1';
    int32_t cap = (int32_t)size + 16;
    int32_t* ids = malloc(sizeof(int32_t) * (size_t)cap);
    int32_t n = tokenize(vocab, text, (int32_t)size, ids, cap, add, parse);
    for (int32_t i = 0; i < n; ++i) printf(i ? " %d" : "%d", ids[i]);
    printf("\n");
    return n < 0;
  }
  if (strcmp(mode, "lines") == 0) {
    size_t cap = 1 << 16;
    char* line = malloc(cap);
    char* text = malloc(cap);
    int32_t* ids = malloc(sizeof(int32_t) * cap);
    ssize_t got;
    size_t lcap = cap;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = aborted;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGABRT, &sa, NULL);
    while ((got = getline(&line, &lcap, stdin)) > 0) {
      if (lcap > cap) {
        cap = lcap;
        text = realloc(text, cap);
        ids = realloc(ids, sizeof(int32_t) * cap);
      }
      bool add = line[0] == '1', parse = line[2] == '1';
      size_t len = 0;
      for (const char* p = line + 4; p[0] && p[1] && p[0] != '\n'; p += 2) text[len++] = (char)(hexval(p[0]) * 16 + hexval(p[1]));
      if (sigsetjmp(on_abort, 1)) {  /* back from an abort inside llama_tokenize */
        puts("crash");
        fflush(stdout);
        continue;
      }
      int32_t n = tokenize(vocab, text, (int32_t)len, ids, (int32_t)cap, add, parse);
      for (int32_t i = 0; i < n; ++i) printf(i ? " %d" : "%d", ids[i]);
      printf(n < 0 ? "error %d\n" : "\n", n);
      fflush(stdout);
    }
    return 0;
  }
  fprintf(stderr, "llama_tokenize: unknown mode %s\n", mode);
  return 2;
}
