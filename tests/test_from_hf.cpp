// --from-hf beyond the tokenizer: README.md's front matter and generation_config.json
// become the general.* keys llama.cpp's converter writes for the same folder, with its
// types and values. The expected values are worked out by hand from gguf-py's rules
// (gguf/metadata.py and gguf/gguf_writer.py); each says which function gives it.
#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "ggufkit/edit.h"
#include "ggufkit/rewrite.h"
#include "ggufkit/scan.h"
#include "ggufkit/text.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

// A Hugging Face folder of the given files (name -> text), made afresh.
std::string folder(const std::string& name, const std::map<std::string, std::string>& files) {
  const std::string dir = temp_path(name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& [file, text] : files) std::ofstream(dir + "/" + file, std::ios::binary) << text;
  return dir;
}

// A value as "TYPE:VALUE": strings as they are, numbers in full, f32 as its bits in hex,
// arrays of strings as [a|b|c].
std::string typed(const Value& v) {
  const std::string type = value_type_name(v.type);
  switch (v.type) {
    case ValueType::string: return "string:" + v.str;
    case ValueType::f32: {
      char hex[16];
      std::snprintf(hex, sizeof hex, "0x%08x", static_cast<unsigned>(v.bits));
      return "f32:" + std::string(hex);
    }
    case ValueType::u32: case ValueType::i32: return type + ":" + std::to_string(v.as_i64());
    case ValueType::array: {
      std::string out = std::string("array[") + value_type_name(v.elem) + "]:[";
      bool first = true;
      for (std::string_view s : v.strs) out += (first ? "" : "|") + std::string(s), first = false;
      return out + "]";
    }
    default: return type + ":?";
  }
}

// Every key of the file under `prefix`, typed.
std::map<std::string, std::string> keys_under(const std::string& file, const std::string& prefix) {
  std::map<std::string, std::string> out;
  for (const KV& kv : scan_file(file).model.metadata)
    if (kv.key.rfind(prefix, 0) == 0) out[kv.key] = typed(kv.value);
  return out;
}

std::string f32_hex(float x) {  // what Python's struct.pack('<f', x) gives, as typed() shows it
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%08x", static_cast<unsigned>(std::bit_cast<uint32_t>(x)));
  return "f32:" + std::string(hex);
}

const char* kCard = R"(---
license: apache-2.0
license_name: my-license
license_link: https://example.com/LICENSE
language:
- en
- fr
- no
tags:
- llama
- chat
pipeline_tag: text-generation
base_model:
- some-org/Some-Model-7B-Instruct-v0.2
- another/Other
- Qwen/Qwen2.5-7B-Instruct
- https://huggingface.co/org/Foo-mini-v2-128k
- https://example.com/models/private
- {name: Hand Written, organization: Someone, version: "3"}
datasets:
- HuggingFaceH4/ultrachat_200k
- local-data
model_name: Tiny Test
model_creator: someone
description: A model for tests.
---

# Tiny Test

A body the converter never reads.
)";

const char* kGenerationConfig = R"({
  "bos_token_id": 1,
  "do_sample": true,
  "eos_token_id": [2, 32000],
  "temperature": 0.6,
  "top_k": 20,
  "top_p": 0.95,
  "min_p": 0,
  "repetition_penalty": 1.05,
  "mirostat_tau": null,
  "transformers_version": "4.45.0"
})";

// The general.* keys gguf-py writes for kCard and kGenerationConfig, beside the tiny
// llama's own general.architecture, file_type and quantization_version.
std::map<std::string, std::string> converter_keys() {
  return {
      // Metadata.load: gen_config.get(...); set_gguf_meta_model -> add_sampling_top_k (add_int32),
      // the others add_float32; "repetition_penalty" stands in for "penalty_repeat"; a null
      // ("mirostat_tau") is not written; an int (min_p 0) packs as the float 0.0.
      {"general.sampling.top_k", "i32:20"},
      {"general.sampling.top_p", f32_hex(0.95f)},
      {"general.sampling.min_p", f32_hex(0.0f)},
      {"general.sampling.temp", f32_hex(0.6f)},
      {"general.sampling.penalty_repeat", f32_hex(1.05f)},
      // apply_metadata_heuristic's use_model_card_metadata: "model_name" (there is no
      // "name"), "model_creator" for the author (no "author", "model_author"); add_string.
      {"general.name", "string:Tiny Test"},
      {"general.author", "string:someone"},
      {"general.description", "string:A model for tests."},
      // use_model_card_metadata("license", ...), ("license_name"), ("license_link").
      {"general.license", "string:apache-2.0"},
      {"general.license.name", "string:my-license"},
      {"general.license.link", "string:https://example.com/LICENSE"},
      // base_model: add_base_model_count (add_uint32), then per entry name / version /
      // organization / repo_url (add_string), from get_model_id_components and id_to_title.
      {"general.base_model.count", "u32:6"},
      // "some-org/Some-Model-7B-Instruct-v0.2": the name id_to_title("Some-Model-7B-Instruct-v0.2")
      // (words with a capital, or a version, kept); the version the trailing "v0.2" (Some
      // and Model are the basename; 7B a size, Instruct a finetune); the organization
      // id_to_title("some-org"); the repo_url https://huggingface.co/ORG/NAME, as given.
      {"general.base_model.0.name", "string:Some Model 7B Instruct v0.2"},
      {"general.base_model.0.version", "string:v0.2"},
      {"general.base_model.0.organization", "string:Some Org"},
      {"general.base_model.0.repo_url", "string:https://huggingface.co/some-org/Some-Model-7B-Instruct-v0.2"},
      // "another/Other": a basename alone, no version.
      {"general.base_model.1.name", "string:Other"},
      {"general.base_model.1.organization", "string:Another"},
      {"general.base_model.1.repo_url", "string:https://huggingface.co/another/Other"},
      // "Qwen/Qwen2.5-7B-Instruct": "Qwen2.5" is the basename (no version of its own).
      {"general.base_model.2.name", "string:Qwen2.5 7B Instruct"},
      {"general.base_model.2.organization", "string:Qwen"},
      {"general.base_model.2.repo_url", "string:https://huggingface.co/Qwen/Qwen2.5-7B-Instruct"},
      // A huggingface.co URL: repo_url the URL; name, organization and version from its
      // ORG/NAME. In a model of 4,170,048 parameters (the tiny llama's, by
      // get_total_parameter_count) "128k" is far from the size, so a finetune (a context
      // length); "mini" stays a size label, which ends the basename at "Foo"; so "v2" is
      // the version. id_to_title: "mini" -> "Mini", "v2" and "128k" kept.
      {"general.base_model.3.name", "string:Foo Mini v2 128k"},
      {"general.base_model.3.version", "string:v2"},
      {"general.base_model.3.organization", "string:Org"},
      {"general.base_model.3.repo_url", "string:https://huggingface.co/org/Foo-mini-v2-128k"},
      // Any other URL: the repo_url alone.
      {"general.base_model.4.repo_url", "string:https://example.com/models/private"},
      // A mapping: its fields as given.
      {"general.base_model.5.name", "string:Hand Written"},
      {"general.base_model.5.version", "string:3"},
      {"general.base_model.5.organization", "string:Someone"},
      // datasets: the same rules, add_dataset_*. id_to_title("ultrachat_200k") is Python's
      // str.title(): a letter after a digit is a capital.
      {"general.dataset.count", "u32:2"},
      {"general.dataset.0.name", "string:Ultrachat_200K"},
      {"general.dataset.0.organization", "string:HuggingFaceH4"},
      {"general.dataset.0.repo_url", "string:https://huggingface.co/HuggingFaceH4/ultrachat_200k"},
      // No organization: no repo_url.
      {"general.dataset.1.name", "string:Local Data"},
      // use_array_model_card_metadata: tags, then pipeline_tag appended; language as a
      // list; "- no" is the Norwegian language, not YAML 1.1's false (load_model_card's
      // repair); add_array of strings.
      {"general.tags", "array[string]:[llama|chat|text-generation]"},
      {"general.languages", "array[string]:[en|fr|no]"},
      // The tiny llama's own, untouched.
      {"general.architecture", "string:llama"},
      {"general.file_type", "u32:7"},
      {"general.quantization_version", "u32:2"},
  };
}

EditRequest from_hf(const std::string& input, const std::string& dir, const std::string& output) {
  EditRequest req;
  req.input = input;
  req.output = output;
  req.write.force = true;
  req.patch.add_from_hf(dir);
  return req;
}

}  // namespace

TEST(FromHfCard, TheCardAndGenerationConfigBecomeTheKeysTheConverterWrites) {
  const std::string dir = folder("hf-card", {{"README.md", kCard}, {"generation_config.json", kGenerationConfig}});
  const std::string out = temp_path("hf-card.gguf");
  EditReport r = edit(from_hf(tiny_llama(), dir, out));
  EXPECT_EQ(r.written, Written::whole_file);
  EXPECT_EQ(keys_under(out, "general."), converter_keys());
  // general.name was the tiny llama's: replaced in place, as --from-hf replaces what it
  // brings; every other key is new.
  size_t added = 0;
  for (const Change& c : r.changes) {
    if (c.key == "general.name") {
      EXPECT_EQ(c.kind, Change::set);
      EXPECT_EQ(c.before->str, "ggufkit tiny llama");
    } else {
      EXPECT_EQ(c.kind, Change::add) << c.key;
      ++added;
    }
  }
  EXPECT_EQ(added, converter_keys().size() - 4);  // all but general.name and the three untouched
  // New keys in the order gguf-py writes them: the sampling defaults first, the tags and
  // languages last.
  const Model m = scan_file(out).model;
  std::vector<std::string> order;
  for (const KV& kv : m.metadata)
    if (kv.key.rfind("general.sampling.", 0) == 0 || kv.key.rfind("general.base_model.0.", 0) == 0 || kv.key == "general.languages")
      order.push_back(kv.key);
  EXPECT_EQ(order, (std::vector<std::string>{"general.sampling.top_k", "general.sampling.top_p", "general.sampling.min_p",
                                             "general.sampling.temp", "general.sampling.penalty_repeat",
                                             "general.base_model.0.name", "general.base_model.0.version",
                                             "general.base_model.0.organization", "general.base_model.0.repo_url",
                                             "general.languages"}));
}

TEST(FromHfCard, TheCommandLineWritesTheSameKeysAndItsDryRunListsEachWithItsType) {
  const std::string dir = folder("hf-card-cli", {{"README.md", kCard}, {"generation_config.json", kGenerationConfig}});
  const std::string out = temp_path("hf-card-cli.gguf");
  fs::remove(out);
  CliRun r = run_cli("edit " + tiny_llama() + " --from-hf " + dir + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(keys_under(out, "general."), converter_keys());
  CliRun dry = run_cli("edit " + tiny_llama() + " --from-hf " + dir + " --dry-run");
  ASSERT_EQ(dry.code, 0) << dry.err;
  for (const char* line : {
           "add     general.sampling.top_k (i32): 20\n",
           "add     general.sampling.temp (f32): 0.6\n",
           "add     general.sampling.min_p (f32): 0\n",
           "set     general.name: \"ggufkit tiny llama\" -> \"Tiny Test\"\n",
           "add     general.base_model.count (u32): 6\n",
           "add     general.base_model.3.version (string): \"v2\"\n",
           "add     general.dataset.0.name (string): \"Ultrachat_200K\"\n",
           "add     general.languages (array): [\"en\", \"fr\", \"no\"] (3 string)\n",
       })
    EXPECT_NE(dry.out.find(line), std::string::npos) << line << "\n" << dry.out;
}

TEST(FromHfCard, ABaseModelsVersionIsReadAgainstTheModelsOwnParameterCount) {
  // The vocabulary-only file has no tensors: a size of 0, which gguf-py takes as unknown,
  // so "128k" is a size label, "mini" is then a word of the basename, and so is "v2":
  // Foo-mini-v2-128k has no version (get_model_id_components with total_params 0).
  const std::string dir = folder("hf-size", {{"README.md", "---\nbase_model: org/Foo-mini-v2-128k\n---\n"}});
  const std::string vocab = corpus("vocab/ggml-vocab-llama-spm.gguf"), out = temp_path("hf-size.gguf");
  edit(from_hf(vocab, dir, out));
  EXPECT_EQ(keys_under(out, "general.base_model."),
            (std::map<std::string, std::string>{{"general.base_model.count", "u32:1"},
                                                {"general.base_model.0.name", "string:Foo Mini v2 128k"},
                                                {"general.base_model.0.organization", "string:Org"},
                                                {"general.base_model.0.repo_url", "string:https://huggingface.co/org/Foo-mini-v2-128k"}}));
  // In the tiny llama (4,170,048 parameters) the same id has the version v2.
  const std::string llama_out = temp_path("hf-size-llama.gguf");
  edit(from_hf(tiny_llama(), dir, llama_out));
  EXPECT_EQ(keys_under(llama_out, "general.base_model.0.version"),
            (std::map<std::string, std::string>{{"general.base_model.0.version", "string:v2"}}));
  // The count is gguf-py's to the parameter: a label is a size while it is within 7/8 of
  // the count (floor(7 * 4170048 / 8) = 3648792) of it. 522K is (4170048 - 522000 =
  // 3648048), so "mini" is a word of the basename again and there is no version; 521K is
  // not (3649048), so it is a finetune and v2 the version.
  const std::string near = folder("hf-size-near", {{"README.md", "---\nbase_model: [org/Foo-mini-v2-522K, org/Foo-mini-v2-521K]\n---\n"}});
  const std::string near_out = temp_path("hf-size-near.gguf");
  edit(from_hf(tiny_llama(), near, near_out));
  std::map<std::string, std::string> keys = keys_under(near_out, "general.base_model.");
  EXPECT_EQ(keys.count("general.base_model.0.version"), 0u);
  EXPECT_EQ(keys["general.base_model.1.version"], "string:v2");
}

TEST(FromHfCard, ANewCardReplacesTheBaseModelsAsAWholeAndOtherKeysOneByOne) {
  // A file converted with six base models, then given a card with one: the count, and
  // base model 0 as the new card says, with no version left over; models 1 to 5 gone.
  const std::string first = folder("hf-replace-1", {{"README.md", kCard}, {"generation_config.json", kGenerationConfig}});
  const std::string converted = temp_path("hf-replace-1.gguf");
  edit(from_hf(tiny_llama(), first, converted));
  const std::string second = folder("hf-replace-2", {{"README.md", "---\nbase_model: another/Other\nlicense: mit\n---\n"}});
  const std::string out = temp_path("hf-replace-2.gguf");
  EditReport r = edit(from_hf(converted, second, out));
  EXPECT_EQ(keys_under(out, "general.base_model."),
            (std::map<std::string, std::string>{{"general.base_model.count", "u32:1"},
                                                {"general.base_model.0.name", "string:Other"},
                                                {"general.base_model.0.organization", "string:Another"},
                                                {"general.base_model.0.repo_url", "string:https://huggingface.co/another/Other"}}));
  size_t removed = 0;
  for (const Change& c : r.changes) removed += c.kind == Change::remove && c.key.rfind("general.base_model.", 0) == 0;
  EXPECT_EQ(removed, 15u);  // 0.version and the 14 keys of models 1 to 5
  // What the card does not mention stays: the datasets, the tags, the sampling defaults.
  std::map<std::string, std::string> kept = keys_under(out, "general.");
  EXPECT_EQ(kept["general.license"], "string:mit");
  EXPECT_EQ(kept["general.dataset.count"], "u32:2");
  EXPECT_EQ(kept["general.tags"], "array[string]:[llama|chat|text-generation]");
  EXPECT_EQ(kept["general.sampling.temp"], f32_hex(0.6f));
}

TEST(FromHfCard, AKeyTheFileHasKeepsItsTypeAndNewKeysTakeTheRegistrys) {
  // A file another tool wrote with top_k as a u32 (which the registry refuses to add):
  // --from-hf replaces the value and keeps the file's type.
  const std::string typed_file = temp_path("hf-typed.gguf");
  Scanned s = scan_file(tiny_llama());
  s.model.metadata.push_back({"general.sampling.top_k", Value::of_u32(40)});
  safe_rewrite(s.model, tiny_llama(), typed_file);
  const std::string dir = folder("hf-typed", {{"generation_config.json", R"({"top_k": 20})"}});
  const std::string out = temp_path("hf-typed-out.gguf");
  edit(from_hf(typed_file, dir, out));
  EXPECT_EQ(keys_under(out, "general.sampling."), (std::map<std::string, std::string>{{"general.sampling.top_k", "u32:20"}}));
  // --set of the keys the registry now knows: the types gguf-py writes them with.
  EditRequest req;
  req.input = tiny_llama();
  req.output = temp_path("hf-set.gguf");
  req.write.force = true;
  req.patch.add_set("general.base_model.count", "1");
  req.patch.add_set("general.base_model.0.name", "7");
  req.patch.add_set("general.dataset.12.repo_url", "https://example.com/d");
  req.patch.add_set("general.sampling.top_k", "40");
  req.patch.add_set("general.sampling.temp", "1");
  req.patch.add_set("general.sampling.mirostat", "2");
  req.patch.add_set("general.sampling.sequence", "edkypmxt");
  edit(req);
  EXPECT_EQ(keys_under(req.output, "general.sampling."),
            (std::map<std::string, std::string>{{"general.sampling.top_k", "i32:40"},
                                                {"general.sampling.temp", f32_hex(1.0f)},
                                                {"general.sampling.mirostat", "i32:2"},
                                                {"general.sampling.sequence", "string:edkypmxt"}}));
  EXPECT_EQ(keys_under(req.output, "general.base_model."),
            (std::map<std::string, std::string>{{"general.base_model.count", "u32:1"}, {"general.base_model.0.name", "string:7"}}));
  EXPECT_EQ(keys_under(req.output, "general.dataset."),
            (std::map<std::string, std::string>{{"general.dataset.12.repo_url", "string:https://example.com/d"}}));
}

TEST(FromHfCard, AReadmeWithoutFrontMatterOrWithAnEmptyOneTakesNothing) {
  for (const char* readme : {"# A model\n\nNo front matter here.\n", "", "---\n---\n# Empty front matter\n",
                             "\xEF\xBB\xBF---\nlicense: mit\n---\n",  // a BOM: the first line is not "---" to Python
                             " ---\nlicense: mit\n---\n"}) {
    SCOPED_TRACE(readme);
    const std::string dir = folder("hf-no-card", {{"README.md", readme}});
    EditRequest req = from_hf(tiny_llama(), dir, temp_path("hf-no-card.gguf"));
    req.dry_run = true;
    EditReport r = edit(req);
    EXPECT_TRUE(r.unchanged);
    EXPECT_TRUE(r.changes.empty());
  }
  // A front matter that is never closed runs to the end of the file, as in gguf-py.
  const std::string dir = folder("hf-open-card", {{"README.md", "---\nlicense: mit\ntags: [a]\n"}});
  const std::string out = temp_path("hf-open-card.gguf");
  edit(from_hf(tiny_llama(), dir, out));
  std::map<std::string, std::string> keys = keys_under(out, "general.");
  EXPECT_EQ(keys["general.license"], "string:mit");
  EXPECT_EQ(keys["general.tags"], "array[string]:[a]");
}

TEST(FromHfCard, MalformedFrontMatterAndWrongTypesAreRefusedAtTheirLineAndColumn) {
  struct Case {
    std::map<std::string, std::string> files;
    std::string err;  // after "ggufkit: error: DIR/"
  };
  const std::vector<Case> cases = {
      {{{"README.md", "---\nlicense: mit\ntags: [a, b\n---\n"}}, "README.md:4:1: yaml: end of sequence flow not found"},
      {{{"README.md", "---\nlicense: mit\nversion: 0.2\n---\n"}},
       "README.md:3:10: --from-hf: version: expected a string; '0.2' is a number to YAML 1.1 (as the converter reads the card): "
       "write it in quotes"},
      {{{"README.md", "---\nlanguage: [en, no]\n---\n"}},
       "README.md:2:16: --from-hf: language: expected a string; 'no' is a bool to YAML 1.1 (as the converter reads the card): "
       "write it in quotes"},
      {{{"README.md", "---\ntags: {a: b}\n---\n"}},
       "README.md:2:7: --from-hf: tags: expected a string or a list of strings, found a mapping"},
      // A tab indents as two spaces (gguf-py's repair); the column is the card's own.
      {{{"README.md", "---\nbase_model:\n\t- 5\n---\n"}},
       "README.md:3:4: --from-hf: base_model: expected a string; '5' is an integer to YAML 1.1 (as the converter reads the card): "
       "write it in quotes"},
      {{{"README.md", "---\n- a list\n---\n"}},
       "README.md:2:1: --from-hf: front matter: expected a mapping of fields (license:, tags:, base_model: ...)"},
      {{{"README.md", "---\nlicense: \x01mit\n---\n"}}, "README.md:2:10: yaml: the front matter has the control character U+0001, which YAML does not allow"},
      {{{"generation_config.json", R"({"temperature": 0.7, "top_k": 40.0})"}},
       "generation_config.json:1:31: --from-hf: top_k: expected an integer (written as an i32)"},
      {{{"generation_config.json", R"({"temperature": "0.7"})"}},
       "generation_config.json:1:17: --from-hf: temperature: expected a number (written as an f32)"},
      {{{"generation_config.json", R"({"top_k": 3000000000})"}}, "generation_config.json:1:11: --from-hf: top_k: 3000000000 does not fit an i32"},
      {{{"generation_config.json", R"({"top_p": 1e39})"}}, "generation_config.json:1:11: --from-hf: top_p: 1e39 is past the largest f32"},
      {{{"generation_config.json", "[1, 2]"}}, "generation_config.json:1:1: --from-hf: expected a JSON object"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.err);
    const std::string dir = folder("hf-bad", c.files);
    CliRun r = run_cli("edit " + tiny_llama() + " --from-hf " + dir + " --dry-run");
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(r.err, "ggufkit: error: " + dir + "/" + c.err + "\n");
  }
  // Not UTF-8 anywhere in the card: Python cannot read it, and the byte is named.
  const std::string dir = folder("hf-bad-utf8", {{"README.md", "---\nlicense: mit\n---\nbody \xff\n"}});
  CliRun r = run_cli("edit " + tiny_llama() + " --from-hf " + dir + " --dry-run");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "ggufkit: error: " + dir + "/README.md: at byte 26, --from-hf: the model card is not UTF-8 (the converter reads it as UTF-8)\n");
}
