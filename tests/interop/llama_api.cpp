#include "llama_api.h"

#include <cstdio>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#ifndef GGUFKIT_INTEROP_DIR  // tests/CMakeLists.txt defines it; a lone compile gets the Makefile's default
#define GGUFKIT_INTEROP_DIR "/root/.cache/ggufkit-interop"
#endif

namespace llama_api {

namespace {

const std::string kBins = std::string(GGUFKIT_INTEROP_DIR) + "/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64";

// llama_model_params and llama_context_params are passed by value. Both are larger than
// 16 bytes, so the x86-64 ABI returns them through a caller's buffer and passes them on
// the stack: a buffer larger than either (80 and about 200 bytes in this build) carries
// them whole without this file repeating their layout. Only n_ctx, the context's first
// field (a uint32), is set here.
struct Params {
  alignas(16) unsigned char bytes[1024];
};
struct Batch {  // llama_batch, whose fields are the API itself
  int32_t n_tokens;
  int32_t* token;
  float* embd;
  int32_t* pos;
  int32_t* n_seq_id;
  int32_t** seq_id;
  int8_t* logits;
};

struct Api {
  void* lib = nullptr;
  std::string why;
  void (*backend_init)() = nullptr;
  void (*log_set)(void (*)(int, const char*, void*), void*) = nullptr;
  Params (*model_default_params)() = nullptr;
  void* (*model_load)(const char*, Params) = nullptr;
  void (*model_free)(void*) = nullptr;
  int32_t (*meta_val_str)(const void*, const char*, char*, size_t) = nullptr;
  const void* (*model_vocab)(const void*) = nullptr;
  int32_t (*vocab_eos)(const void*) = nullptr;
  int32_t (*vocab_n_tokens)(const void*) = nullptr;
  int32_t (*tokenize)(const void*, const char*, int32_t, int32_t*, int32_t, bool, bool) = nullptr;
  Params (*context_default_params)() = nullptr;
  void* (*init_from_model)(void*, Params) = nullptr;
  void (*free_context)(void*) = nullptr;
  Batch (*batch_get_one)(int32_t*, int32_t) = nullptr;
  int32_t (*decode)(void*, Batch) = nullptr;
  float* (*logits_ith)(void*, int32_t) = nullptr;
  void* (*adapter_init)(void*, const char*) = nullptr;
};

std::string g_log;  // llama.cpp's messages for the load under way
void on_log(int, const char* text, void*) { g_log += text; }

const Api& api() {
  static Api a = [] {
    Api x;
    void* ggml = ::dlopen((kBins + "/libggml.v0.4.0.so").c_str(), RTLD_NOW | RTLD_GLOBAL);
    x.lib = ggml ? ::dlopen((kBins + "/libllama.v0.4.0.so").c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (!x.lib) {
      x.why = std::string("cannot dlopen libllama from ") + kBins + ": " + ::dlerror();
      return x;
    }
    auto load_all = reinterpret_cast<void (*)(const char*)>(::dlsym(ggml, "ggml_backend_load_all_from_path"));
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(x.lib, name));
      if (!fn) x.why += std::string(" missing ") + name;
    };
    sym(x.backend_init, "llama_backend_init");
    sym(x.log_set, "llama_log_set");
    sym(x.model_default_params, "llama_model_default_params");
    sym(x.model_load, "llama_model_load_from_file");
    sym(x.model_free, "llama_model_free");
    sym(x.meta_val_str, "llama_model_meta_val_str");
    sym(x.model_vocab, "llama_model_get_vocab");
    sym(x.vocab_eos, "llama_vocab_eos");
    sym(x.vocab_n_tokens, "llama_vocab_n_tokens");
    sym(x.tokenize, "llama_tokenize");
    sym(x.context_default_params, "llama_context_default_params");
    sym(x.init_from_model, "llama_init_from_model");
    sym(x.free_context, "llama_free");
    sym(x.batch_get_one, "llama_batch_get_one");
    sym(x.decode, "llama_decode");
    sym(x.logits_ith, "llama_get_logits_ith");
    sym(x.adapter_init, "llama_adapter_lora_init");
    if (!load_all) x.why += " missing ggml_backend_load_all_from_path";
    if (!x.why.empty()) {
      x.lib = nullptr;
      return x;
    }
    x.log_set(on_log, nullptr);
    load_all(kBins.c_str());  // the CPU backend variant that fits this processor
    x.backend_init();
    return x;
  }();
  return a;
}

std::mutex g_mutex;

struct Model {
  void* m = nullptr;
  explicit Model(const std::string& path) {
    g_log.clear();
    m = api().model_load(path.c_str(), api().model_default_params());
  }
  ~Model() {
    if (m) api().model_free(m);
  }
};

}  // namespace

bool available(std::string& why) {
  why = api().why;
  return api().lib != nullptr;
}

std::optional<Run> run(const std::string& path, std::string& why) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!available(why)) return std::nullopt;
  const Api& a = api();
  Model model(path);
  if (!model.m) {
    why = g_log;
    return std::nullopt;
  }
  const void* vocab = a.model_vocab(model.m);
  Run r;
  r.eos = a.vocab_eos(vocab);
  r.n_vocab = a.vocab_n_tokens(vocab);
  Params cp = a.context_default_params();
  uint32_t n_ctx = 128;
  std::memcpy(cp.bytes, &n_ctx, sizeof n_ctx);
  void* ctx = a.init_from_model(model.m, cp);
  if (!ctx) {
    why = "llama_init_from_model failed: " + g_log;
    return std::nullopt;
  }
  std::string prompt = "Once upon a time";
  std::vector<int32_t> toks(64);
  int32_t n = a.tokenize(vocab, prompt.data(), static_cast<int32_t>(prompt.size()), toks.data(), 64, false, false);  // no BOS, as node-llama-cpp's tokenize
  toks.resize(static_cast<size_t>(std::max(n, 0)));
  bool ok = n > 0 && a.decode(ctx, a.batch_get_one(toks.data(), n)) == 0;
  for (int i = 0; ok && i < 8; ++i) {
    const float* lg = a.logits_ith(ctx, -1);
    if (!lg) break;
    if (i == 0) r.first_logits.assign(lg, lg + r.n_vocab);
    int32_t best = static_cast<int32_t>(std::max_element(lg, lg + r.n_vocab) - lg);
    r.tokens.push_back(best);
    ok = a.decode(ctx, a.batch_get_one(&r.tokens.back(), 1)) == 0;
  }
  a.free_context(ctx);
  if (r.tokens.size() != 8) {
    why = "decoding failed: " + g_log;
    return std::nullopt;
  }
  return r;
}

bool loads(const std::string& path, std::string& why) {
  std::string log;  // the log is sent back and dropped: one fork-and-wait for both
  return loads(path, why, log);
}

bool loads(const std::string& path, std::string& why, std::string& log) {
  std::lock_guard<std::mutex> lock(g_mutex);
  log.clear();
  if (!available(why)) return false;
  int fds[2];
  if (::pipe(fds) != 0) {
    why = "pipe failed";
    return false;
  }
  std::fflush(nullptr);  // a child that aborts must not write the parent's buffered output again
  pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    g_log.clear();
    void* m = api().model_load(path.c_str(), api().model_default_params());
    for (size_t at = 0; at < g_log.size();) {  // llama.cpp aborts on some files: what it logged so far is lost then
      const ssize_t n = ::write(fds[1], g_log.data() + at, g_log.size() - at);
      if (n <= 0) break;
      at += static_cast<size_t>(n);
    }
    ::_exit(m ? 0 : 1);
  }
  ::close(fds[1]);
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) log.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child) {
    why = "fork failed";
    return false;
  }
  why = WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status)) : "signal " + std::to_string(WTERMSIG(status));
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool adapter_loads(const std::string& model, const std::string& adapter, std::string& why) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!available(why)) return false;
  int fds[2];
  if (::pipe(fds) != 0) {
    why = "pipe failed";
    return false;
  }
  std::fflush(nullptr);  // a child that aborts must not write the parent's buffered output again
  pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    g_log.clear();
    void* m = api().model_load(model.c_str(), api().model_default_params());
    const bool ok = m && api().adapter_init(m, adapter.c_str()) != nullptr;
    if (!m) g_log = "the base model did not load: " + g_log;
    for (size_t at = 0; at < g_log.size();) {
      const ssize_t n = ::write(fds[1], g_log.data() + at, g_log.size() - at);
      if (n <= 0) break;
      at += static_cast<size_t>(n);
    }
    ::_exit(ok ? 0 : 1);  // no destructors, as in loads()
  }
  ::close(fds[1]);
  why.clear();
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) why.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child) {
    why = "fork failed";
    return false;
  }
  if (!WIFEXITED(status)) why += " (signal " + std::to_string(WTERMSIG(status)) + ")";
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::optional<std::string> meta(const std::string& path, const std::string& key) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::string why;
  if (!available(why)) return std::nullopt;
  Model model(path);
  if (!model.m) return std::nullopt;
  int32_t n = api().meta_val_str(model.m, key.c_str(), nullptr, 0);
  if (n < 0) return std::nullopt;
  std::vector<char> buf(static_cast<size_t>(n) + 1);
  api().meta_val_str(model.m, key.c_str(), buf.data(), buf.size());
  return std::string(buf.data(), static_cast<size_t>(n));
}

}  // namespace llama_api
