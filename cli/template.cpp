// The template command: a chat template as stored, the list of them, or the prompt it gives.
#include <cstdio>
#include <cstring>
#include <iostream>

#include "ggufkit/chat.h"
#include "ggufkit/error.h"
#include "ggufkit/prompt.h"
#include "ggufkit/text.h"
#include "ggufkit/vocab.h"
#include "commands.h"
#include "common.h"
#include "json.h"

namespace ggufkit::cli {

namespace {

// template --render --tokens: the prompt's tokens on llama.cpp's chat path.
int print_tokens(const std::string& file, const Model& m, const std::string& prompt, bool ids, bool json) {
  std::optional<tokenizer::Vocab> v = load_vocab(m, file);
  if (!v) throw Error(Error::Kind::format, file, std::nullopt, "tokenizer.ggml.model", "the file has no vocabulary to tokenize with");
  std::vector<ChatToken> tokens;
  try {
    tokens = chat_tokens(*v, prompt);
  } catch (const tokenizer::Error& e) {
    throw Error(Error::Kind::format, file, std::nullopt, e.key, e.what());
  }
  if (ids) {
    std::string line;
    for (const ChatToken& t : tokens) line += (line.empty() ? "" : " ") + std::to_string(t.id);
    std::printf("%s\n", line.c_str());
  } else if (json) {
    JsonOut j(std::cout);
    j.object([&] {
      j.key("prompt").str(prompt).key("text").str(std::string(chat_text(*v, prompt)));
      j.key("tokens").array([&] {
        for (const ChatToken& t : tokens)
          j.object([&] {
            j.key("id").num(t.id).key("piece");
            piece_json(j, t.piece);
            j.key("special").str(std::string(t.special));
            if (t.cut) j.key("cut").boolean(true);
          });
      }, JsonOut::lines);
    });
  } else {
    const std::string lines = token_lines(tokens);
    std::fwrite(lines.data(), 1, lines.size(), stdout);
  }
  return 0;
}

}  // namespace

int cmd_template(const std::vector<std::string>& args) {
  po::options_description desc("options");
  shard_only_option(desc.add_options()("file", po::value<std::string>()->required(), "the GGUF file, or any shard of a set")(
      "name", po::value<std::string>()->default_value("default"), "which template: tokenizer.chat_template.NAME")(
      "list", po::bool_switch(), "name the templates the file has, with their sizes")(
      "render", po::value<std::string>(), "print the prompt the template gives for the conversation in this JSON file (- for standard input)")(
      "add-generation-prompt", po::bool_switch(), "with --render: end the prompt with the assistant's turn opening")(
      "tokens", po::bool_switch(), "with --render: the ids llama.cpp's chat path feeds the model instead, one token a line")(
      "ids", po::bool_switch(), "with --tokens: the ids alone, on one line, separated by single spaces")(
      "json", po::bool_switch(),
      "with --list: {\"templates\": [{\"name\", \"key\", \"bytes\"}]}; with --render: {\"prompt\": \"...\"}, and with "
      "--tokens {\"prompt\", \"text\", \"tokens\": [{\"id\", \"piece\", \"special\"}]}"));
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit template FILE [--name NAME] [--list]\n"
                  "       ggufkit template FILE --render CONV.json [--add-generation-prompt] [--name NAME] [--json]\n"
                  "       ggufkit template FILE --render CONV.json --tokens [--ids | --json]\n\n"
                  "Prints a chat template exactly as the file stores it, byte for byte, with no\n"
                  "newline added: tokenizer.chat_template, or tokenizer.chat_template.NAME with\n"
                  "--name NAME. --list names the templates the file has.\n\n"
                  "--render prints the prompt the model gets instead, rendered as Hugging Face's\n"
                  "apply_chat_template renders it (jinja2 in a sandbox, trim_blocks, lstrip_blocks).\n"
                  "CONV.json holds \"messages\" and optionally \"tools\", \"documents\",\n"
                  "\"add_generation_prompt\" and any other variables the template reads;\n"
                  "bos_token and eos_token are the file's. For example:\n"
                  "  {\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"},\n"
                  "                {\"role\": \"user\", \"content\": \"Hello!\"}]}\n"
                  "A template that raises (raise_exception) or fails exits 1 with its line.\n\n"
                  "--tokens prints the ids llama.cpp's chat path (llama-server, llama-cli) feeds the\n"
                  "model for that prompt: a leading BOS text dropped when the vocabulary adds BOS, a\n"
                  "trailing EOS text when it adds EOS (as common/chat.cpp does), then tokenized with\n"
                  "special tokens added and parsed. One token a line, llama.cpp's special ones marked:\n"
                  "       1 -> \"<s>\"  (control)\n"
                  "   32010 -> \"<|user|>\"  (control)\n"
                  "The text is the prompt as transformers renders it; the tokens are llama.cpp's.");
  if (!vm) return 0;
  const std::string file = (*vm)["file"].as<std::string>();
  const bool tokens = (*vm)["tokens"].as<bool>(), ids = (*vm)["ids"].as<bool>();
  if (tokens && !vm->count("render")) throw_usage("--tokens gives the tokens of the prompt --render makes: add --render CONV.json");
  if (ids && !tokens) throw_usage("--ids prints the tokens' ids: add --tokens");
  if (ids && (*vm)["json"].as<bool>()) throw_usage("give one of --ids and --json");
  if ((*vm)["list"].as<bool>() && vm->count("render")) throw_usage("give one of --list and --render");
  Scanned s = load_model(file, shard_only(*vm)).s;
  std::vector<const KV*> found;
  for (size_t i = 0; i < s.model.metadata.size(); ++i)
    if (is_template_key(s.model.metadata.key(i)))
      if (const KV& kv = s.model.metadata.ref(i); kv.value.type == ValueType::string) found.push_back(&kv);
  auto name_of = [](const std::string& key) {
    return key == "tokenizer.chat_template" ? std::string("default") : key.substr(std::strlen("tokenizer.chat_template."));
  };
  if ((*vm)["list"].as<bool>()) {
    if ((*vm)["json"].as<bool>()) {
      JsonOut j(std::cout);
      j.object([&] {
        j.key("templates").array([&] {
          for (const KV* kv : found)
            j.object([&] { j.key("name").str(name_of(kv->key)).key("key").str(kv->key).key("bytes").num(kv->value.str.size()); });
        });
      });
    } else {
      for (const KV* kv : found) std::printf("%-16s %-40s %zu bytes\n", terminal_name(name_of(kv->key)).c_str(), terminal_name(kv->key).c_str(),
                                            kv->value.str.size());
      if (found.empty()) std::printf("no chat templates\n");
    }
    return 0;
  }
  const std::string name = (*vm)["name"].as<std::string>();
  for (const KV* kv : found)
    if (name_of(kv->key) == name) {
      if (!vm->count("render")) {
        std::fwrite(kv->value.str.data(), 1, kv->value.str.size(), stdout);
        return 0;
      }
      jinja::Value conv = read_conversation((*vm)["render"].as<std::string>());
      if ((*vm)["add-generation-prompt"].as<bool>()) conv.dict->set(jinja::Value::string("add_generation_prompt"), jinja::Value::boolean(true));
      const std::string prompt = render_prompt(file, kv->key, kv->value.str, s.model, conv, cli_context());
      if (tokens) return print_tokens(file, s.model, prompt, ids, (*vm)["json"].as<bool>());
      if ((*vm)["json"].as<bool>()) {
        JsonOut j(std::cout);
        j.object([&] { j.key("prompt").str(prompt); });
      } else {
        std::fwrite(prompt.data(), 1, prompt.size(), stdout);
      }
      return 0;
    }
  std::string have;
  for (const KV* kv : found) have += (have.empty() ? "" : ", ") + name_of(kv->key);
  throw Error(Error::Kind::format, file, std::nullopt, name == "default" ? "tokenizer.chat_template" : "tokenizer.chat_template." + name,
              "the file has no such template" + (have.empty() ? std::string(" (it has none)") : " (it has: " + have + ")"));
}

}  // namespace ggufkit::cli
