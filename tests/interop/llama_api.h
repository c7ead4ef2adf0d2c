#pragma once
// llama.cpp's own C API (libllama from node-llama-cpp's prebuilt build), opened with
// dlopen: what llama.cpp itself reads from a file, not what a TypeScript parser does.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llama_api {

struct Run {
  std::vector<int32_t> tokens;     // 8 tokens chosen greedily after the prompt
  std::vector<float> first_logits; // the logits over the vocabulary after the prompt
  int32_t eos = -1;                // llama_vocab_eos
  int32_t n_vocab = 0;
};

// Empty when libllama cannot be opened; the reason is in `why`.
bool available(std::string& why);
// Loads the model; nullopt when llama.cpp refuses it (its log is in `why`).
std::optional<Run> run(const std::string& model, std::string& why);
// Whether llama.cpp loads the model (no context, no decoding), in a child process: llama.cpp
// aborts on some broken files, and a crash is a refusal. `why` has the child's status.
bool loads(const std::string& model, std::string& why);
// The same, with llama.cpp's log of the load in `log` (the child's, sent back through a pipe):
// where it refuses, the message that names the tensor or key at fault.
bool loads(const std::string& model, std::string& why, std::string& log);
// Whether llama_adapter_lora_init takes `adapter` as a LoRA adapter of `model`, in a child
// process (llama.cpp aborts on some broken adapters). `why` has llama.cpp's log of the load.
bool adapter_loads(const std::string& model, const std::string& adapter, std::string& why);
// llama_model_meta_val_str: the value as llama.cpp prints it, or nullopt when it has no such key
// (or refuses the file).
std::optional<std::string> meta(const std::string& model, const std::string& key);

}  // namespace llama_api
