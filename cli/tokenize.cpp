// tokenize and detokenize: text to ids and back, exactly as llama.cpp's llama-tokenize does
// it on the file's vocabulary (the tokenizer library; this file only parses and prints).
#include <charconv>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "ggufkit/error.h"
#include "ggufkit/source.h"
#include "ggufkit/text.h"
#include "ggufkit/vocab.h"
#include "commands.h"
#include "common.h"
#include "json.h"

namespace ggufkit::cli {

namespace {

// The file's vocabulary as llama.cpp loads it; a model without one is refused (exit 1).
tokenizer::Vocab vocab_of(const std::string& file, bool shard_only) {
  Scanned s = load_model(file, shard_only).s;
  std::optional<tokenizer::Vocab> v = load_vocab(s.model, file);
  if (!v) throw Error(Error::Kind::format, file, std::nullopt, "tokenizer.ggml.model", "the file has no vocabulary to tokenize with");
  return std::move(*v);
}

// What the tokenizer refuses while it works (a vocabulary type it has no algorithm for) is
// the model's fault: exit 1, naming the key.
template <class F>
auto refused_as_format(const std::string& file, F f) {
  try {
    return f();
  } catch (const tokenizer::Error& e) {
    throw Error(Error::Kind::format, file, std::nullopt, e.key, e.what());
  }
}

// All of a file's bytes, or standard input's for "-", as every small input is read: a
// named pipe once a writer writes, a folder refused, and no more than the cap (/dev/zero,
// an endless pipe).
constexpr uint64_t kTextCap = 64u << 20;
std::string read_all(const std::string& path) { return read_small_file(path == "-" ? "/dev/stdin" : path, kTextCap); }

}  // namespace

int cmd_tokenize(const std::vector<std::string>& args) {
  po::options_description desc("options");
  shard_only_option(desc.add_options()("file", po::value<std::string>()->required(), "the GGUF file (a vocabulary-only one will do), or any shard of a set")(
      "text", po::value<std::string>(), "the text to tokenize")(
      "text-file,f", po::value<std::string>(), "tokenize this file's bytes instead ('-' for standard input)")(
      "no-add-special", po::bool_switch(), "do not add BOS/EOS/SEP, whatever the vocabulary says")(
      "no-parse-special", po::bool_switch(), "tokenize control tokens' text as plain text (<s> as '<', 's', '>')")(
      "ids", po::bool_switch(), "print the ids alone, on one line, separated by single spaces")(
      "json", po::bool_switch(), "print {\"tokens\": [{\"id\": 1, \"text\": \"<s>\"}, ...]}; with --ids, {\"ids\": [1, ...]}"));
  po::positional_options_description pos;
  pos.add("file", 1).add("text", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit tokenize FILE TEXT [--no-add-special] [--no-parse-special] [--ids | --json]\n"
                  "       ggufkit tokenize FILE --text-file F|- [...]\n\n"
                  "Tokenizes TEXT with the file's vocabulary exactly as llama.cpp does (its\n"
                  "llama_tokenize, as llama-tokenize calls it), without llama.cpp: special tokens\n"
                  "are added as the vocabulary says (add_bos_token, add_eos_token and the defaults\n"
                  "of its type) and control tokens written in the text are taken as themselves.\n"
                  "Prints one token a line, its id and its text as generation prints it:\n"
                  "       1 -> \"<s>\"\n"
                  "   15043 -> \" Hello\"\n"
                  "Examples:\n"
                  "  ggufkit tokenize model.gguf 'Hello world' --ids\n"
                  "  ggufkit template model.gguf --render chat.json | ggufkit tokenize model.gguf -f - --no-add-special\n"
                  "A model whose vocabulary llama.cpp refuses (an unknown pre-tokenizer, no merges)\n"
                  "is refused with llama.cpp's reason (exit 1).");
  if (!vm) return 0;
  const std::string file = (*vm)["file"].as<std::string>();
  if (vm->count("text") == vm->count("text-file"))
    throw_usage("tokenize needs the text: TEXT or --text-file F (one of them, not both)");
  const std::string text = vm->count("text") ? (*vm)["text"].as<std::string>() : read_all((*vm)["text-file"].as<std::string>());
  tokenizer::Vocab vocab = vocab_of(file, shard_only(*vm));
  // Tokenizing runs at a few MB a second: a line on a terminal from 4 MiB of text
  const tokenizer::Vocab::Progress progress = progress_line("tokenizing", 4u << 20);
  std::vector<int32_t> ids = refused_as_format(file, [&] {
    return vocab.tokenize(text, !(*vm)["no-add-special"].as<bool>(), !(*vm)["no-parse-special"].as<bool>(), progress);
  });
  if ((*vm)["ids"].as<bool>() && (*vm)["json"].as<bool>()) {
    JsonOut j(std::cout);
    j.object([&] {
      j.key("ids").array([&] {
        for (int32_t id : ids) j.num(id);
      });
    });
  } else if ((*vm)["ids"].as<bool>()) {
    std::string line(ids.size() * 12 + 1, '\0');  // an id is at most 11 characters, then a space
    char* at = line.data();
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i > 0) *at++ = ' ';
      at = std::to_chars(at, at + 11, ids[i]).ptr;
    }
    *at++ = '\n';
    std::fwrite(line.data(), 1, static_cast<size_t>(at - line.data()), stdout);
  } else if ((*vm)["json"].as<bool>()) {
    JsonOut j(std::cout);
    j.object([&] {
      j.key("tokens").array([&] {
        for (int32_t id : ids)
          j.object([&] {
            bool cut = false;
            j.key("id").num(id).key("text");
            piece_json(j, vocab.shown_piece(id, cut));
            if (cut) j.key("cut").boolean(true);
          });
      }, JsonOut::lines);
    });
  } else {
    for (int32_t id : ids) {
      bool cut = false;
      const std::string piece = vocab.shown_piece(id, cut);
      std::printf("%8d -> %s\n", id, shown_quoted(piece, cut).c_str());
    }
  }
  return 0;
}

int cmd_detokenize(const std::vector<std::string>& args) {
  po::options_description desc("options");
  shard_only_option(desc.add_options()("file", po::value<std::string>()->required(), "the GGUF file (a vocabulary-only one will do), or any shard of a set")(
      "id", po::value<std::vector<std::string>>(), "token ids; '-' reads them from standard input, separated by spaces or lines")(
      "remove-special", po::bool_switch(), "drop BOS/EOS where the vocabulary adds them")(
      "no-unparse-special", po::bool_switch(), "print nothing for control tokens (their text otherwise)")(
      "json", po::bool_switch(), "print {\"text\": \"...\"}"));
  po::positional_options_description pos;
  pos.add("file", 1).add("id", -1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit detokenize FILE ID... [--remove-special] [--no-unparse-special] [--json]\n\n"
                  "Prints the text the ids stand for, as llama.cpp's llama_detokenize gives it (the\n"
                  "bytes as they are, no newline added). The inverse of tokenize:\n"
                  "  ggufkit tokenize model.gguf 'Hello' --ids | ggufkit detokenize model.gguf -");
  if (!vm) return 0;
  const std::string file = (*vm)["file"].as<std::string>();
  // The words as views of the arguments and of standard input's text, read once under the
  // cap: a word costs its view, not a string of its own.
  const std::vector<std::string> given = vm->count("id") ? (*vm)["id"].as<std::vector<std::string>>() : std::vector<std::string>{};
  std::string input;
  std::vector<std::string_view> words;
  for (const std::string& w : given) {
    if (w != "-") {
      words.push_back(w);
      continue;
    }
    if (input.empty()) input = read_all("-");
    auto blank = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
    for (size_t i = 0; i < input.size();) {
      while (i < input.size() && blank(input[i])) ++i;
      size_t from = i;
      while (i < input.size() && !blank(input[i])) ++i;
      if (i > from) words.push_back(std::string_view(input).substr(from, i - from));
    }
  }
  tokenizer::Vocab vocab = vocab_of(file, shard_only(*vm));
  std::vector<int64_t> ids;
  ids.reserve(words.size());
  for (std::string_view w : words) {
    long long id = -1;
    const char* from = w.data() + (w.size() > 1 && w[0] == '+' ? 1 : 0);  // as stoll took it
    auto [end, ec] = std::from_chars(from, w.data() + w.size(), id);
    if (w.empty() || end != w.data() + w.size() || ec != std::errc()) throw_usage("not a token id: '" + clipped(w) + "'");
    ids.push_back(id);
  }
  const std::string text =
      detokenize_ids(vocab, file, ids, (*vm)["remove-special"].as<bool>(), !(*vm)["no-unparse-special"].as<bool>());
  if ((*vm)["json"].as<bool>()) {
    JsonOut j(std::cout);
    j.object([&] { j.key("text"); piece_json(j, text); });
  } else {
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return 0;
}

}  // namespace ggufkit::cli
