#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ggufkit/context.h"
#include "ggufkit/model.h"
#include "ggufkit/registry.h"
#include "ggufkit/surgery.h"
#include "ggufkit/yaml_tree.h"

namespace ggufkit {

// A patch document (schemas/patch.md):
//
//   set:    {KEY: VALUE, KEY: {type: T, value: V}, KEY: {file: PATH}}
//   remove: [KEY, ...]
//   rename: {OLD: NEW}
//   alignment: N | default      (default: no general.alignment key, so 32)
//   special_tokens: {NAME: TEXT, NAME: {id: ID}}   (eos, bos, eot, ..., as llama.cpp names them)
//   token_types: {TEXT: TYPE}   (normal, unknown, control, user_defined, unused, byte)
//   tensors: {keep: [GLOB], remove: [GLOB], rename: {OLD: NEW}, keep_layers: RANGES,
//             remove_layers: RANGES, keep_experts: RANGES, remove_experts: RANGES,
//             graft: [{from: FILE, tensors: GLOB}]}   (surgery.h)
//
// Values stay as YAML until the patch meets a file, because an existing key's type is
// known only then. Applied in this order: rename, remove, set, special_tokens,
// token_types, alignment; then the edit applies `tensors` (apply_tensor_ops).
struct Patch {
  struct Set {
    std::string key;
    YamlNode value;  // a scalar, a list, {file:}/{hex:}, or {type:, items:, value:|file:}
    std::string from = "command line";  // where it was given: the patch file's name:line:col
    // --from-hf: the value is the version gguf-py reads out of this Hugging Face id, which
    // depends on the model's parameter count ("-128k" is a context length beside 7B), so
    // it is found when the patch meets the file; no version, no key.
    std::optional<std::string> version_of = std::nullopt;
    // --set's VALUE as typed (add_set_text): the string itself when the key is a string in
    // the file or the registry, else read as YAML; which, the file decides.
    std::optional<std::string> text = std::nullopt;
    std::string advice = "";  // add_set's: ends an error about the value
  };
  // A special token set by its text (looked up in tokenizer.ggml.tokens) or by its id.
  struct Special {
    std::string name;
    YamlNode value;  // the text, or the id
    bool by_id = false;
    std::string from = "command line";
  };
  // A token's type in tokenizer.ggml.token_type set, the token found by its text.
  struct TokenType {
    std::string text;
    int32_t type = 0;  // llama_token_type: 1 normal ... 6 byte
    std::string from = "command line";
  };
  struct Named {
    std::string key, to;  // `to` only for renames
    YamlNode at;          // where it was written, for errors
  };
  std::string name = "command line";  // the patch file, for errors
  // Who calls add_* (the command line's flags, or Python's keyword arguments): the words
  // of errors about what it gave and of the advice on how to give it otherwise.
  enum class Caller { command_line, python } caller = Caller::command_line;
  std::string base_dir = ".";         // file: paths are relative to it
  std::vector<Set> set;
  std::vector<Named> remove, rename;
  std::vector<Special> special;
  std::vector<TokenType> token_types;
  // Key prefixes replaced as a whole (--from-hf's general.base_model. and general.dataset.):
  // the file's keys under one that the patch does not set are removed.
  std::vector<std::string> replaced_groups;
  TensorOps tensors;                  // tensor surgery, after the keys (surgery.h)
  std::optional<uint64_t> alignment;  // 0: the default (the key removed)
  YamlNode alignment_at;
  std::string alignment_from;         // where the alignment was given
  // Writes what would be refused as broken input (an empty key, a key with a NUL, a template
  // with a NUL, a bool byte other than 0 and 1, a string that is not UTF-8), with a note.
  bool allow_broken = false;

  bool empty() const {
    return set.empty() && remove.empty() && rename.empty() && special.empty() && token_types.empty() && replaced_groups.empty() && !alignment &&
           tensors.empty();
  }

  // The command line's shortcuts build the same patch. A key set twice (by the patch and
  // on the command line, or twice there) and a second alignment are refused, not resolved.
  // VALUE read as YAML, as in a patch; `advice` ends any error about it (how to quote it).
  void add_set(const std::string& key, const std::string& text, const std::string& advice = "");
  // --set KEY=VALUE: a string key's VALUE is the text itself, quotes, colons and all; any
  // other key's is read as YAML (a number, a bool, [1, 2]).
  void add_set_text(const std::string& key, const std::string& text);
  // --set-typed KEY=TYPE:VALUE: TYPE is a value type, or array[ELEM]; VALUE as YAML, or the
  // text itself for TYPE string.
  void add_set_typed(const std::string& key, const std::string& type, const std::string& text);
  void add_set_file(const std::string& key, const std::string& path);
  // --special-token NAME=TEXT and --special-token-id NAME=ID.
  void add_special(const std::string& name, const std::string& value, bool by_id);
  // --token-type TEXT=TYPE: TYPE by name (normal, unknown, control, user_defined, unused, byte).
  void add_token_type(const std::string& text, const std::string& type);
  // --from-hf DIR (or DIR/tokenizer_config.json): what a Hugging Face model folder says.
  // tokenizer_config.json: chat_template (a string, or a list of {name, template}: default
  // is the main template, the others tokenizer.chat_template.NAME), or chat_template.jinja
  // beside the config, which wins as it does in transformers; bos/eos/pad/unk_token (a
  // string or {content:}) as special tokens by text; add_bos_token and add_eos_token.
  // README.md's front matter and generation_config.json: the general.* keys llama.cpp's
  // converter writes from them (gguf-py's Metadata.load), with its keys, types and values:
  // name, author, license, tags, languages, base models, datasets, ...; general.sampling.*.
  void add_from_hf(const std::string& path);
  void add_remove(const std::string& key);
  void add_rename(const std::string& from, const std::string& to);
  void set_alignment(const std::string& text);
};

Patch parse_patch(const std::string& text, const std::string& name, const std::string& base_dir);
Patch read_patch(const std::string& path);

// llama_token_type's number of a name (normal 1 ... byte 6); nullopt for anything else.
std::optional<int32_t> token_type_of(const std::string& name);

// What applying a patch did, one line per key. A retype is one token's type in
// tokenizer.ggml.token_type: `token` and `id` say which, before and after are i32 types.
struct Change {
  enum Kind { set, add, remove, rename, alignment, retype };
  // (a constructor, so that the changes of keys need not spell out a token)
  Change(Kind kind, std::string key, std::string to, std::optional<Value> before, std::optional<Value> after,
         std::string token = "", uint64_t id = 0)
      : kind(kind), key(std::move(key)), to(std::move(to)), before(std::move(before)), after(std::move(after)),
        token(std::move(token)), id(id) {}
  Kind kind;
  std::string key, to;
  std::optional<Value> before, after;
  std::string token;  // retype: the token's text
  uint64_t id = 0;    // retype: the token's id
};

// Applies the patch to the model, checked against the registry and the file: an existing
// key keeps its position and type (the value must convert without loss), a new key is
// appended with the registry's type or the patch's; keys are 1 to 65,535 bytes without a
// NUL, strings UTF-8, templates without a NUL and under the size cap, bools true or false.
// (What the model as a whole must be, validate's rules check on the result: check_model.)
// Throws a format Error naming the patch, the line and the key; the model is then
// unspecified (apply to a copy to keep the original). Its notes (a new key's type as read,
// what allow_broken lets through) go to the call's context.
std::vector<Change> apply_patch(Model& model, const Patch& patch, const Registry& registry = Registry::builtin(),
                                const Context& ctx = {});

}  // namespace ggufkit
