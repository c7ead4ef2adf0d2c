#pragma once
// What llama.cpp's converter takes from a Hugging Face folder as metadata, beside the
// tokenizer (gguf-py's gguf/metadata.py, Metadata.load): README.md's front matter and
// generation_config.json's sampling defaults, as the keys, types and values it writes.
// Internal to edit/: Patch::add_from_hf and apply_patch use it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ggufkit/model.h"
#include "ggufkit/yaml_tree.h"

namespace ggufkit::hf {

// One key to set: its value (a quoted scalar, a list of them, or for a version
// `version_of` the id it is derived from) and where in the folder it was given.
struct Entry {
  std::string key;
  YamlNode value;
  std::string from;
  std::optional<std::string> version_of;
};

struct Taken {
  std::vector<Entry> sets;
  std::vector<std::string> groups;  // key prefixes replaced whole (general.base_model.)
};

// README.md's front matter (`text`, the file `name`): nothing when it has none.
// Malformed YAML, or a field of a type gguf-py cannot write, is a format Error at its line
// and column.
Taken model_card(const std::string& text, const std::string& name);

// generation_config.json's sampling defaults, as general.sampling.* keys.
std::vector<Entry> generation_config(const std::string& text, const std::string& name);

// The version gguf-py reads out of a model id (get_model_id_components), for a model of
// `total_params` parameters (negative: a LoRA adapter; 0: unknown).
std::optional<std::string> id_version(const std::string& id, int64_t total_params);

// The model's parameter count as gguf-py counts it (GGUFWriter.get_total_parameter_count).
int64_t parameter_count(const Model& model);

}  // namespace ggufkit::hf
