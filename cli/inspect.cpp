// The reading commands: each computes with the library and prints text or JSON.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <boost/iostreams/device/file_descriptor.hpp>
#include <boost/iostreams/stream.hpp>

#include "commands.h"
#include "common.h"
#include "json.h"

#include "ggufkit/check.h"
#include "ggufkit/dialect.h"
#include "ggufkit/shards.h"
#include "ggufkit/error.h"
#include "ggufkit/hash.h"
#include "ggufkit/inspect.h"
#include "ggufkit/output.h"
#include "ggufkit/tensors.h"
#include "ggufkit/text.h"
#include "ggufkit/vocab.h"
#include "ggufkit/writer.h"

namespace ggufkit::cli {

namespace {

std::string pct(uint64_t part, uint64_t whole) {
  char b[16];
  std::snprintf(b, sizeof b, "%.1f%%", whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  return b;
}

std::string fixed(double x, int digits) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", digits, x);
  return b;
}


std::string types_text(const std::map<std::string, uint64_t>& types) {
  std::string s;
  for (const auto& [t, n] : types) s += (s.empty() ? "" : " ") + t + " x" + std::to_string(n);
  return s;
}

// A bar of `n` against `most` over `width` columns, in eighths of a block: the smallest
// count that is not zero still shows.
std::string bar(uint64_t n, uint64_t most, size_t width) {
  static const char* const parts[] = {"", "\u258F", "\u258E", "\u258D", "\u258C", "\u258B", "\u258A", "\u2589"};
  if (n == 0 || most == 0) return "";
  n = std::min(n, most);
  const uint64_t eighths = std::max<uint64_t>(1, static_cast<uint64_t>(static_cast<double>(n) / static_cast<double>(most) * static_cast<double>(width * 8) + 0.5));
  std::string out;
  for (uint64_t i = 0; i < eighths / 8; ++i) out += "\u2588";
  return out + parts[eighths % 8];
}

// A bar after a space, or nothing: no line ends in a space.
std::string spaced(const std::string& bar) { return bar.empty() ? bar : " " + bar; }

// A column of text padded to width.
std::string col(const std::string& s, size_t w) { return s.size() >= w ? s + " " : s + std::string(w - s.size(), ' '); }

// A tensor's name, dims and type: as text columns, or as the first fields of its JSON object.
std::string tensor_columns(const Tensor& t) {
  return col(terminal_name(t.name), 40) + " " + col(shape_text(t.dims), 22) + " " + col(ggml_type_name(t.type), 8) + " ";
}
void tensor_json(JsonOut& j, const Tensor& t) {
  j.key("name").str(t.name).key("dims").array([&] {
    for (uint64_t d : t.dims) j.num(d);
  });
  j.key("type").str(ggml_type_name(t.type));
}

// FILE plus a second positional argument (layer N, tensor NAME).
struct TwoArgs {
  std::string file, second;
  bool json = false;
  po::variables_map vm;
};
std::optional<TwoArgs> two_args(const std::vector<std::string>& args, const char* second, const char* second_help,
                                const std::string& help, po::options_description& extra) {
  po::options_description desc("options");
  desc.add_options()("file", po::value<std::string>()->required(), "the GGUF file")(
      second, po::value<std::string>()->required(), second_help)("json", po::bool_switch(), "print JSON");
  desc.add(extra);
  po::positional_options_description pos;
  pos.add("file", 1).add(second, 1);
  auto vm = parse(args, desc, pos, help);
  if (!vm) return std::nullopt;
  return TwoArgs{(*vm)["file"].as<std::string>(), (*vm)[second].as<std::string>(), (*vm)["json"].as<bool>(), *vm};
}

}  // namespace

// show --json's "loaded": the vocabulary as llama.cpp loads it (its llama_vocab_* answers).
static void loaded_json(JsonOut& j, const tokenizer::Vocab& v) {
  const tokenizer::Loaded& L = v.loaded();
  j.object([&] {
    for (auto [name, id] : {std::pair{"bos", L.bos}, {"eos", L.eos}, {"eot", L.eot}, {"sep", L.sep}, {"nl", L.nl}, {"pad", L.pad},
                            {"fim_pre", L.fim_pre}, {"fim_suf", L.fim_suf}, {"fim_mid", L.fim_mid}, {"fim_pad", L.fim_pad},
                            {"fim_rep", L.fim_rep}, {"fim_sep", L.fim_sep}})
      j.key(name).num(id);
    j.key("add_bos").boolean(L.add_bos).key("add_eos").boolean(L.add_eos);
    j.key("eog").array([&] {
      for (int32_t id : L.eog) j.num(id);
    });
    j.key("control").array([&] {
      for (int32_t id : L.control) j.num(id);
    });
    j.key("found_by_text").object([&] {
      for (const auto& [name, id] : L.found_by_text) j.key(name).num(id);
    });
    j.key("type").str(tokenizer::kind_name(v.kind())).key("pre").str(v.pre_type());
  });
}

namespace {
// What show says of a file's role, in a line: the facts a user checks before handing the
// file to the tool that reads it.
std::string role_text(const RoleFacts& r) {
  std::string s(role_name(r.role));
  auto num = [](uint64_t n) { return std::to_string(n); };
  switch (r.role) {
    case Role::adapter:
      s += " (" + (r.adapter_type.empty() ? std::string("no adapter.type") : r.adapter_type) + ", alpha " +
           (r.alpha ? brief_value(Value::of_f32(static_cast<float>(*r.alpha))) : std::string("not set")) + ", rank " +
           (r.rank ? num(*r.rank) : r.lora_pairs ? std::string("mixed") : std::string("none")) + ", " + num(r.lora_pairs) + " lora_a/lora_b pairs, for " +
           (r.base_architecture.empty() ? std::string("no architecture") : r.base_architecture) +
           (r.alora_tokens ? ", " + num(r.alora_tokens) + " aLoRA invocation tokens" : "") + ")";
      break;
    case Role::imatrix: {
      std::string sets;
      for (const std::string& d : r.datasets) sets += (sets.empty() ? "" : ", ") + d;
      s += " (" + (r.chunk_count ? num(*r.chunk_count) : std::string("?")) + " chunks of " +
           (r.chunk_size ? num(*r.chunk_size) : std::string("?")) + " tokens, " + num(r.covered) + " tensors covered" +
           (sets.empty() ? "" : ", datasets " + sets) + ")";
      break;
    }
    case Role::mmproj:
      s += " (projector " + (r.projector_type.empty() ? std::string("not set") : r.projector_type) +
           (r.vision ? ", vision" : "") + (r.audio ? ", audio" : "") + ")";
      break;
    case Role::vocab: s += " (no tensors; a " + num(r.tokens) + "-token " + r.tokenizer + " vocabulary)"; break;
    case Role::mtp: s += " (a multi-token-prediction drafter: its MTP layers alone, for the model it was made with)"; break;
    case Role::model: break;
  }
  return s;
}

// show's MTP line: whether the file holds multi-token-prediction layers, and which.
std::string mtp_text(const MtpFacts& f) {
  std::string layers;
  for (uint64_t l : f.layers) layers += (layers.empty() ? "blk." : ", blk.") + std::to_string(l);
  const std::string n = std::to_string(f.layers.size()) + (f.layers.size() == 1 ? " layer: " : " layers: ") + layers;
  switch (f.state) {
    case MtpFacts::State::embedded: return "embedded (" + n + ")";
    case MtpFacts::State::drafter: return "a drafter only (" + n + "; no trunk blocks)";
    case MtpFacts::State::absent:
      return "absent (nextn_predict_layers " + std::to_string(f.claimed) + ", but no blk.N.nextn.* tensor is in the file)";
    case MtpFacts::State::none: break;
  }
  return "";
}

void role_json(JsonOut& j, const RoleFacts& r) {
  auto opt = [&](const std::optional<uint64_t>& v) {
    if (v) j.num(*v);
    else j.null();
  };
  switch (r.role) {
    case Role::adapter:
      j.key("adapter").object([&] {
        j.key("type").str(r.adapter_type).key("alpha");
        if (r.alpha) j.value(Value::of_f32(static_cast<float>(*r.alpha)));
        else j.null();
        j.key("rank");
        opt(r.rank);
        j.key("lora_pairs").num(r.lora_pairs).key("architecture").str(r.base_architecture);
        j.key("alora_invocation_tokens").num(r.alora_tokens);
      });
      break;
    case Role::imatrix:
      j.key("imatrix").object([&] {
        j.key("chunk_count");
        opt(r.chunk_count);
        j.key("chunk_size");
        opt(r.chunk_size);
        j.key("datasets").array([&] {
          for (const std::string& d : r.datasets) j.str(d);
        });
        j.key("tensors_covered").num(r.covered);
      });
      break;
    case Role::mmproj:
      j.key("mmproj").object([&] {
        j.key("projector_type").str(r.projector_type).key("vision").boolean(r.vision).key("audio").boolean(r.audio);
      });
      break;
    case Role::vocab:
    case Role::model:
    case Role::mtp: break;
  }
}
}  // namespace

int cmd_show(const std::vector<std::string>& args) {
  auto a = read_args(args,
                     "usage: ggufkit show FILE [--json]\n\n"
                     "Reads the header (never the tensor data) and prints what a user asks before\n"
                     "loading a model: version, counts, alignment, data start; architecture, name and\n"
                     "file type; the hyperparameters under the architecture's prefix; the vocabulary,\n"
                     "tokenizer, special token ids and chat template; the quant mix and bits per weight.",
                     "print JSON instead of text");
  if (!a) return 0;
  Loaded l = load_model(a->file, a->shard_only);
  const Scanned& s = l.s;
  const Model& m = s.model;
  auto mix = quant_mix(m);
  uint64_t bytes = 0, weights = 0;
  for (const auto& r : mix) bytes += r.bytes, weights += r.weights;
  const Value* ft = m.find("general.file_type");
  std::string ftype = ft && ft->is_integer() ? file_type_name(ft->as_u64()) : "";
  const Value* tmpl = m.find("tokenizer.chat_template");
  double bpw = weights ? 8.0 * static_cast<double>(bytes) / static_cast<double>(weights) : 0;
  const char* order = m.order == ByteOrder::little ? "little" : "big";
  // What llama.cpp makes of the vocabulary at load; why it refuses it, when it does.
  std::optional<tokenizer::Vocab> vocab;
  std::string vocab_error;
  try {
    vocab = load_vocab(m, a->file);
  } catch (const Error& e) {
    vocab_error = e.message;
  }
  const RoleFacts role = role_facts(m);
  const std::optional<LoaderSummary> loader = role.role == Role::model ? loader_summary(m) : std::nullopt;
  if (a->json) {
    JsonOut j(std::cout);
    auto flag = [&](const char* key) {
      const Value* v = m.find(key);
      if (v && v->type == ValueType::boolean) j.boolean(v->bits != 0);
      else j.null();
    };
    j.object([&] {
      j.key("file").str(a->file).key("files").num(l.files).key("role").str(role_name(role.role));
      role_json(j, role);
      j.key("version").num(m.version).key("byte_order").str(order);
      j.key("tensor_count").num(m.tensors.size()).key("kv_count").num(m.metadata.size());
      j.key("alignment").num(s.layout.alignment).key("data_offset").num(s.layout.data_offset);
      j.key("file_size").num(s.model_size).key("header_only").boolean(s.header_only);
      j.key("architecture").str(architecture(m));
      j.key("name").str(string_value(m, "general.name")).key("file_type");
      if (ft && ft->is_integer()) j.num(ft->as_u64());
      else j.null();
      j.key("file_type_name").str(ftype).key("hyperparameters").object([&] {
        for (const auto& h : hyperparameters(m))
          if (h.value) j.key(h.key).value(*h.value);
      });
      j.key("head_size").num(head_size(m)).key("vocabulary_size").num(vocabulary_size(m));
      j.key("loader");
      if (loader)
        j.object([&] {
          j.key("expected_tensors").num(loader->expected).key("tied_output").boolean(loader->tied_output).key("left_out").array([&] {
            for (const std::string& t : loader->left_out) j.str(t);
          });
        });
      else j.null();
      j.key("mtp");
      if (role.mtp.state != MtpFacts::State::none)
        j.object([&] {
          j.key("state").str(mtp_state_name(role.mtp.state)).key("nextn_predict_layers").num(role.mtp.claimed).key("layers").array([&] {
            for (uint64_t l : role.mtp.layers) j.num(l);
          });
        });
      else j.null();
      j.key("tokenizer").str(string_value(m, "tokenizer.ggml.model")).key("special_tokens").object([&] {
        for (const SpecialToken& t : special_tokens(m))
          j.key(t.name).object([&] {
            j.key("id").num(t.id).key("text");
            if (t.text) j.str(*t.text);
            else j.null();
            j.key("type");
            if (t.type) j.str(token_type_name(*t.type));
            else j.null();
          });
      });
      j.key("add_bos_token");
      flag("tokenizer.ggml.add_bos_token");
      j.key("add_eos_token");
      flag("tokenizer.ggml.add_eos_token");
      j.key("loaded");
      if (vocab) loaded_json(j, *vocab);
      else j.null();
      if (!vocab_error.empty()) j.key("vocabulary_error").str(vocab_error);
      j.key("chat_template").boolean(tmpl != nullptr).key("tensor_bytes").num(bytes).key("weights").num(weights);
      j.key("bits_per_weight").raw(fixed(bpw, 4)).key("types").array([&] {
        for (const auto& r : mix)
          j.object([&] {
            j.key("type").str(r.type).key("tensors").num(r.tensors).key("weights").num(r.weights).key("bytes").num(r.bytes);
            j.key("share").raw(fixed(bytes ? static_cast<double>(r.bytes) / static_cast<double>(bytes) : 0, 4));
          });
      });
    });
    return 0;
  }
  std::printf("file          %s\n", terminal_name(a->file).c_str());
  std::printf("role          %s\n", role_text(role).c_str());
  if (l.files > 1) std::printf("shard set     %zu files (the model they hold together; --shard-only for this file)\n", l.files);
  std::printf("version       %u (%s-endian)\n", m.version, order);
  std::printf("tensors       %zu\n", m.tensors.size());
  std::printf("metadata      %zu keys\n", m.metadata.size());
  std::printf("alignment     %u\n", s.layout.alignment);
  std::printf("data start    %llu\n", static_cast<unsigned long long>(s.layout.data_offset));
  std::printf("file size     %llu%s\n", static_cast<unsigned long long>(s.model_size),
              s.header_only ? (" (header only: the file holds its first " + std::to_string(s.source_size) +
                               " bytes, a header exemplar)").c_str()
                            : "");
  std::printf("architecture  %s\n", terminal_text(architecture(m)).c_str());
  std::printf("name          %s\n", terminal_text(string_value(m, "general.name")).c_str());
  if (ft) std::printf("file type     %s%s\n", brief_value(*ft).c_str(), ftype.empty() ? "" : (" (" + ftype + ")").c_str());
  bool any = false;
  for (const auto& h : hyperparameters(m))
    if (h.value) {
      if (!any) std::printf("\nhyperparameters (%s.*)\n", terminal_name(architecture(m)).c_str());
      any = true;
      std::printf("  %-14s %s\n", h.label.c_str(), brief_value(*h.value).c_str());
    }
  if (any && head_size(m)) std::printf("  %-14s %llu\n", "head size", static_cast<unsigned long long>(head_size(m)));
  if (loader) {
    // What llama.cpp's loader takes of it, and the optional tensors it does without.
    std::printf("\nloader        takes %zu tensors (the file has %zu)%s\n", loader->expected, m.tensors.size(),
                loader->tied_output ? "; no output.weight: token_embd.weight is the output too" : "");
    std::string line = "left out     ";
    for (size_t i = 0; i < loader->left_out.size(); ++i) {
      const std::string item = " " + loader->left_out[i] + (i + 1 < loader->left_out.size() ? "," : "");
      if (line.size() + item.size() > 100) std::printf("%s\n", line.c_str()), line = "             ";
      line += item;
    }
    if (!loader->left_out.empty()) std::printf("%s\n", line.c_str());
  }
  if (role.mtp.state != MtpFacts::State::none) std::printf("%sMTP           %s\n", loader ? "" : "\n", mtp_text(role.mtp).c_str());
  if (m.find("tokenizer.ggml.tokens") || m.find("tokenizer.ggml.model")) {
    std::printf("\nvocabulary    %llu tokens (%s)\n", static_cast<unsigned long long>(vocabulary_size(m)),
                terminal_name(string_value(m, "tokenizer.ggml.model")).c_str());
    auto tokens = special_tokens(m);
    if (!tokens.empty()) std::printf("special tokens\n");
    for (const SpecialToken& t : tokens)
      std::printf("  %-10s %8llu  %-24s %s\n", t.name.c_str(), static_cast<unsigned long long>(t.id),
                  t.text ? json_string(std::string(*t.text)).c_str() : "(not in the vocabulary)",
                  t.type ? token_type_name(*t.type).c_str() : "");
    std::string flags;
    for (const char* which : {"bos", "eos"})
      if (const Value* v = m.find(std::string("tokenizer.ggml.add_") + which + "_token"); v && v->type == ValueType::boolean)
        flags += (flags.empty() ? "" : ", ") + std::string(which) + (v->bits ? " yes" : " no");
    if (!flags.empty()) std::printf("adds tokens   %s\n", flags.c_str());
    if (vocab) {
      const tokenizer::Loaded& L = vocab->loaded();
      for (const auto& [name, id] : L.found_by_text)
        std::printf("  %-10s %8d  %-24s found by its text, as llama.cpp finds it (no %s key)\n", name.c_str(), id,
                    json_string(vocab->text(id)).c_str(), special_token_key(name).c_str());
      std::string eog;
      for (int32_t id : L.eog) eog += (eog.empty() ? "" : ", ") + std::to_string(id);
      std::printf("tokenizer     %s%s; adds %s; generation stops at %s\n", std::string(tokenizer::kind_name(vocab->kind())).c_str(),
                  vocab->kind() == tokenizer::Kind::bpe ? (", pre-tokenizer " + std::string(vocab->pre_type())).c_str() : "",
                  L.add_bos && L.add_eos ? "BOS and EOS" : L.add_bos ? "BOS" : L.add_eos ? "EOS" : "nothing",
                  eog.empty() ? "no token" : eog.c_str());
    } else if (!vocab_error.empty()) {
      std::printf("tokenizer     refused: %s\n", terminal_name(vocab_error).c_str());
    }
    std::printf("chat template %s\n", tmpl ? ("yes, " + std::to_string(tmpl->str.size()) + " bytes").c_str() : "no");
  }
  if (!mix.empty()) {
    std::printf("\n%-10s %8s %14s %16s %7s\n", "type", "tensors", "weights", "bytes", "share");
    for (const auto& r : mix)
      std::printf("%-10s %8llu %14llu %16llu %7s%s\n", r.type.c_str(), static_cast<unsigned long long>(r.tensors),
                  static_cast<unsigned long long>(r.weights), static_cast<unsigned long long>(r.bytes),
                  pct(r.bytes, bytes).c_str(), spaced(bar(r.bytes, bytes, 30)).c_str());
    std::printf("%-10s %8zu %14llu %16llu\n", "total", m.tensors.size(), static_cast<unsigned long long>(weights),
                static_cast<unsigned long long>(bytes));
    std::printf("bits per weight %s\n", fixed(bpw, 3).c_str());
  }
  return 0;
}

int cmd_meta(const std::vector<std::string>& args) {
  po::options_description desc("options");
  shard_only_option(desc.add_options()("file", po::value<std::string>()->required(), "the GGUF file ('-' for stdin)")(
      "json", po::bool_switch(), "print {\"version\", \"metadata\": [{\"key\", \"type\", \"items\", \"value\"}]}, always in full")(
      "full", po::bool_switch(), "print long strings and arrays in full"));
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit meta FILE [--full] [--json]\n\n"
                  "Every metadata entry in file order: index, key, type and value. Long strings\n"
                  "and arrays are shortened with their sizes unless --full.");
  if (!vm) return 0;
  Scanned s = load_model((*vm)["file"].as<std::string>(), shard_only(*vm)).s;
  const Model& m = s.model;
  if ((*vm)["json"].as<bool>()) {
    JsonOut j(std::cout);
    j.object([&] {
      j.key("version").num(m.version).key("metadata").array(
          [&] {
            for (size_t i = 0; i < m.metadata.size(); ++i) {
              const KV& kv = m.metadata[i];
              j.object([&] {
                j.key("key").str(kv.key).key("type").str(value_type_name(kv.value.type));
                if (kv.value.type == ValueType::array) j.key("items").str(value_type_name(kv.value.elem));
                j.key("value").value(kv.value);
              });
            }
          },
          JsonOut::lines);
    });
    return 0;
  }
  bool full = (*vm)["full"].as<bool>();
  for (size_t i = 0; i < m.metadata.size(); ++i) {
    const KV& kv = m.metadata[i];
    std::string type = kv.value.type == ValueType::array ? std::string("array[") + value_type_name(kv.value.elem) + "]"
                                                         : value_type_name(kv.value.type);
    std::printf("%4zu  %s %s ", i, col(terminal_name(kv.key), 40).c_str(), col(type, 14).c_str());
    if (full && kv.value.type == ValueType::array) value_json(std::cout, kv.value);
    else std::cout << (full ? brief_value(kv.value, SIZE_MAX) : brief_value(kv.value));
    std::cout << '\n';
  }
  return 0;
}


int cmd_get(const std::vector<std::string>& args) {
  po::options_description extra;
  shard_only_option(extra.add_options());
  auto a = two_args(args, "key", "the metadata key",
                    "usage: ggufkit get FILE KEY [--json]\n\n"
                    "Prints one metadata value, for scripts: a string as it is stored (then a newline),\n"
                    "a number or bool as text, an array one item per line. --json prints\n"
                    "{\"key\", \"type\", \"items\", \"value\"}, typed. A key the file lacks exits 1.",
                    extra);
  if (!a) return 0;
  Scanned s = load_model(a->file, shard_only(a->vm)).s;
  const Value* v = s.model.find(a->second);
  if (!v) {
    std::string near = nearest_key(s.model, a->second);
    throw Error(Error::Kind::format, a->file, std::nullopt, a->second,
                "no such key" + (near.empty() ? std::string() : " (did you mean " + near + "?)"));
  }
  if (a->json) {
    JsonOut j(std::cout);
    j.object([&] {
      j.key("key").str(a->second).key("type").str(value_type_name(v->type));
      if (v->type == ValueType::array) j.key("items").str(value_type_name(v->elem));
      j.key("value").value(*v);
    });
    return 0;
  }
  auto print = [](const Value& x) {
    if (x.type == ValueType::string) std::fwrite(x.str.data(), 1, x.str.size(), stdout);
    else if (x.type == ValueType::array) value_json(std::cout, x);
    else std::cout << number_text(x);
    std::cout << '\n';
  };
  if (v->type != ValueType::array) print(*v);
  else if (v->elem == ValueType::string)
    for (std::string_view item : v->strs) {
      std::fwrite(item.data(), 1, item.size(), stdout);
      std::fputc('\n', stdout);
    }
  else
    v->each([&](const Value& x) {
      print(x);
      return true;
    });
  return 0;
}

int cmd_tensors(const std::vector<std::string>& args) {
  auto a = read_args(args,
                     "usage: ggufkit tensors FILE [--json]\n\n"
                     "Every tensor in file order: name, dims (innermost first), type, offset from the\n"
                     "data start, and bytes.",
                     "print {\"data_offset\", \"tensors\": [{\"name\", \"dims\", \"type\", \"offset\", \"bytes\"}]}");
  if (!a) return 0;
  Loaded l = load_model(a->file, a->shard_only);
  const Scanned& s = l.s;
  const Model& m = s.model;
  if (a->json) {
    JsonOut j(std::cout);
    j.object([&] {
      j.key("data_offset").num(s.layout.data_offset).key("files").num(l.files).key("tensors").array(
          [&] {
            for (size_t i = 0; i < m.tensors.size(); ++i) {
              const Tensor& t = m.tensors[i];
              j.object([&] {
                tensor_json(j, t);
                j.key("offset").num(s.layout.tensor_offsets[i]).key("bytes").num(t.nbytes());
                if (l.files > 1) j.key("shard").num(l.shard[i]);
              });
            }
          },
          JsonOut::lines);
    });
    return 0;
  }
  std::printf("%s %s %s %14s %14s\n", col("name", 40).c_str(), col("dims", 22).c_str(), col("type", 8).c_str(), "offset", "bytes");
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const Tensor& t = m.tensors[i];
    std::printf("%s%14llu %14llu", tensor_columns(t).c_str(), static_cast<unsigned long long>(s.layout.tensor_offsets[i]),
                static_cast<unsigned long long>(t.nbytes()));
    if (l.files > 1) std::printf("  shard %u", l.shard[i]);
    std::printf("\n");
  }
  if (l.files > 1)
    std::printf("%zu tensors in a shard set of %zu files; offsets count from the data start of each tensor's shard\n",
                m.tensors.size(), l.files);
  else
    std::printf("%zu tensors; offsets count from the data start at %llu\n", m.tensors.size(),
                static_cast<unsigned long long>(s.layout.data_offset));
  return 0;
}

int cmd_stack(const std::vector<std::string>& args) {
  auto a = read_args(args,
                     "usage: ggufkit stack FILE [--json]\n\n"
                     "The repeated block stack: tensors named blk.N.* with the block number taken out,\n"
                     "counted, with their shapes, the types in use and their bytes; then the tensor\n"
                     "bytes in front of, inside and behind the stack, the smallest and largest block,\n"
                     "and each block's bytes as a bar against the largest.",
                     "print JSON");
  if (!a) return 0;
  Scanned s = load_model(a->file, a->shard_only).s;
  Stack st = stack_of(s.model);
  if (a->json) {
    JsonOut j(std::cout);
    auto block = [&](const char* name, const std::optional<std::pair<uint64_t, uint64_t>>& b) {
      if (b) j.key(name).object([&] { j.key("block").num(b->first).key("bytes").num(b->second); });
    };
    j.object([&] {
      j.key("blocks").num(st.blocks).key("rows").array(
          [&] {
            for (const auto& r : st.rows)
              j.object([&] {
                j.key("name").str(r.name).key("count").num(r.count).key("shapes").array([&] {
                  for (const auto& sh : r.shapes) j.str(sh);
                });
                j.key("types").object([&] {
                  for (const auto& [t, n] : r.types) j.key(t).num(n);
                });
                j.key("bytes").num(r.bytes);
              });
          },
          JsonOut::lines);
      j.key("front").num(st.front).key("inside").num(st.inside).key("behind").num(st.behind);
      block("smallest", st.smallest);
      block("largest", st.largest);
      j.key("per_block").array([&] {
        for (const auto& pb : st.per_block) j.object([&] { j.key("block").num(pb.first).key("bytes").num(pb.second); });
      });
    });
    return 0;
  }
  std::printf("%s %6s  %s %s %14s\n", col("tensor", 32).c_str(), "count", col("shapes", 22).c_str(), col("types", 24).c_str(), "bytes");
  for (const auto& r : st.rows) {
    std::string shapes;
    for (const auto& sh : r.shapes) shapes += (shapes.empty() ? "" : " ") + sh;
    std::printf("%s %6llu  %s %s %14llu\n", col(terminal_name(r.name), 32).c_str(), static_cast<unsigned long long>(r.count),
                col(shapes, 22).c_str(), col(types_text(r.types), 24).c_str(), static_cast<unsigned long long>(r.bytes));
  }
  std::printf("\n%llu blocks; tensor bytes in front %llu, inside %llu, behind %llu\n", static_cast<unsigned long long>(st.blocks),
              static_cast<unsigned long long>(st.front), static_cast<unsigned long long>(st.inside),
              static_cast<unsigned long long>(st.behind));
  if (st.smallest)
    std::printf("smallest block %llu (%llu bytes), largest block %llu (%llu bytes)\n",
                static_cast<unsigned long long>(st.smallest->first), static_cast<unsigned long long>(st.smallest->second),
                static_cast<unsigned long long>(st.largest->first), static_cast<unsigned long long>(st.largest->second));
  if (!st.per_block.empty()) {
    std::printf("\nbytes per block\n");
    for (const auto& [blk, bytes] : st.per_block)
      std::printf("  %6llu %14llu%s\n", static_cast<unsigned long long>(blk), static_cast<unsigned long long>(bytes),
                  spaced(bar(bytes, st.largest->second, 40)).c_str());
  }
  return 0;
}

int cmd_layer(const std::vector<std::string>& args) {
  po::options_description none;
  shard_only_option(none.add_options());
  auto a = two_args(args, "block", "the block number N (tensors named blk.N.*)",
                    "usage: ggufkit layer FILE N [--json]\n\n"
                    "Block N tensor by tensor (name, dims, type, bytes), and how many other blocks\n"
                    "have the same tensor names, shapes and types.",
                    none);
  if (!a) return 0;
  uint64_t n = 0;
  try {
    n = std::stoull(a->second);
  } catch (...) {
    throw_usage("N must be a block number, found '" + a->second + "'");
  }
  Scanned s = load_model(a->file, shard_only(a->vm)).s;
  // A block's signature: its tensors' names (block number taken out), shapes and types.
  std::map<uint64_t, std::vector<std::string>> sig;
  std::vector<Tensor> mine;
  for (const Tensor& t : s.model.tensors)
    if (auto b = block_of(t.name)) {
      sig[b->first].push_back(b->second + " " + shape_text(t.dims) + " " + ggml_type_name(t.type));
      if (b->first == n) mine.push_back(t);
    }
  if (mine.empty()) {
    throw Error(Error::Kind::format, a->file, std::nullopt, "layer", "there is no block " + std::to_string(n) + " (the file has " +
                                                                        std::to_string(sig.size()) + " blocks)");
  }
  std::vector<uint64_t> same;
  for (const auto& [b, v] : sig)
    if (b != n && v == sig[n]) same.push_back(b);
  uint64_t total = 0;
  for (const Tensor& t : mine) total += t.nbytes();
  if (a->json) {
    JsonOut j(std::cout);
    j.object([&] {
      j.key("block").num(n).key("bytes").num(total).key("tensors").array([&] {
        for (const Tensor& t : mine)
          j.object([&] {
            tensor_json(j, t);
            j.key("bytes").num(t.nbytes());
          });
      });
      j.key("same_as").array([&] {
        for (uint64_t b : same) j.num(b);
      });
    });
    return 0;
  }
  for (const Tensor& t : mine)
    std::printf("%s%14llu\n", tensor_columns(t).c_str(), static_cast<unsigned long long>(t.nbytes()));
  std::printf("block %llu: %zu tensors, %llu bytes; %zu other blocks have the same names, shapes and types\n",
              static_cast<unsigned long long>(n), mine.size(), static_cast<unsigned long long>(total), same.size());
  return 0;
}

int cmd_account(const std::vector<std::string>& args) {
  auto a = read_args(args,
                     "usage: ggufkit account FILE [--json]\n\n"
                     "Where the bytes go: the header in its pieces (head, metadata, info records,\n"
                     "padding), tensors by type, and header + tensors against the file size with what\n"
                     "is left over; and how many tensors start right where the one before ended.\n\n"
                     "Given a shard of a set, the whole set: every figure added up over its files,\n"
                     "and each file's header, tensor bytes and size (--shard-only: the file alone).",
                     "print JSON");
  if (!a) return 0;
  // Every file the model is in, each accounted for, and the figures added up.
  std::optional<ShardSet> set = set_of(a->file, a->shard_only, cli_context());
  std::vector<std::pair<std::string, Account>> files;
  Model model;
  if (set) {
    for (const Shard& sh : set->shards) files.emplace_back(sh.path, account_of(sh.file));
    model = set->model();
  } else {
    Scanned s = load(a->file);
    files.emplace_back(a->file, account_of(s));
    model = std::move(s.model);
  }
  Account ac;
  for (const auto& [path, f] : files) {
    for (auto field : {&Account::head, &Account::metadata, &Account::infos, &Account::padding, &Account::tensor_bytes,
                       &Account::tensor_padding, &Account::file_size, &Account::contiguous})
      ac.*field += f.*field;
    ac.left_over += f.left_over;
    ac.header_only |= f.header_only;
  }
  auto header_of = [](const Account& x) { return x.head + x.metadata + x.infos + x.padding; };
  auto mix = quant_mix(model);
  uint64_t header = header_of(ac);
  if (a->json) {
    JsonOut j(std::cout);
    j.object([&] {
      j.key("head").num(ac.head).key("metadata").num(ac.metadata).key("infos").num(ac.infos).key("padding").num(ac.padding);
      j.key("header").num(header).key("tensor_bytes").num(ac.tensor_bytes).key("tensor_padding").num(ac.tensor_padding);
      j.key("file_size").num(ac.file_size).key("left_over").num(ac.left_over).key("tensors").num(model.tensors.size());
      j.key("contiguous").num(ac.contiguous).key("header_only").boolean(ac.header_only).key("types").array([&] {
        for (const auto& r : mix)
          j.object([&] {
            j.key("type").str(r.type).key("tensors").num(r.tensors).key("weights").num(r.weights).key("bytes").num(r.bytes);
          });
      });
      j.key("files").num(files.size());
      if (set)
        j.key("shards").array([&] {
          for (const auto& pf : files)  // init-captures: clang 14 cannot capture a structured binding
            j.object([&, &path = pf.first, &f = pf.second] {
              j.key("file").str(path).key("header").num(header_of(f)).key("tensor_bytes").num(f.tensor_bytes);
              j.key("file_size").num(f.file_size);
            });
        });
    });
    return 0;
  }
  if (set) std::printf("shard set: %zu files (the figures below add them up)\n", files.size());
  auto line = [](const char* label, uint64_t n) { std::printf("  %-18s %16llu\n", label, static_cast<unsigned long long>(n)); };
  std::printf("header\n");
  line("head", ac.head);
  line("metadata", ac.metadata);
  line("info records", ac.infos);
  line("padding", ac.padding);
  line("header total", header);
  std::printf("tensors\n");
  for (const auto& r : mix)  // a bar of each type's share of the tensor bytes
    std::printf("  %-10s %5llu tensors %14llu weights %16llu%s\n", r.type.c_str(), static_cast<unsigned long long>(r.tensors),
                static_cast<unsigned long long>(r.weights), static_cast<unsigned long long>(r.bytes),
                spaced(bar(r.bytes, ac.tensor_bytes, 30)).c_str());
  line("tensor bytes", ac.tensor_bytes);
  line("tensor padding", ac.tensor_padding);
  std::printf("file\n");
  line("header + tensors", header + ac.tensor_bytes + ac.tensor_padding);
  line("file size", ac.file_size);
  if (ac.header_only) std::printf("  (header only: a header exemplar; the file size is the model's, from its header)\n");
  std::printf("  %-18s %16lld%s\n", "left over", static_cast<long long>(ac.left_over),
              ac.left_over < 0 ? "  (the file is cut short)" : ac.left_over > 0 ? "  (bytes after the last tensor)" : "");
  std::printf("%llu of %zu tensors start right where the one before ended (padded)\n",
              static_cast<unsigned long long>(ac.contiguous), model.tensors.size());
  if (set) {
    std::printf("shards\n  %16s %16s %16s  %s\n", "header", "tensor bytes", "file size", "file");
    for (const auto& [path, f] : files)
      std::printf("  %16llu %16llu %16llu  %s\n", static_cast<unsigned long long>(header_of(f)),
                  static_cast<unsigned long long>(f.tensor_bytes), static_cast<unsigned long long>(f.file_size), terminal_name(path).c_str());
  }
  return 0;
}

namespace {

void print_histogram(const TensorHistogram& h, const TensorStats& st, uint64_t first_row, uint64_t ne0) {
  auto num = [](double x) { return number_text(Value::of_f32(static_cast<float>(x))); };
  uint64_t most = 0, finite = 0;
  for (uint64_t c : h.bins) most = std::max(most, c), finite += c;
  std::printf("histogram of %llu finite values in %zu bin%s from %s to %s\n", static_cast<unsigned long long>(finite), h.bins.size(),
              h.bins.size() == 1 ? "" : "s", num(h.lo).c_str(), num(h.hi).c_str());
  const double width = (h.hi - h.lo) / static_cast<double>(h.bins.size());
  std::vector<std::string> from(h.bins.size());
  size_t w = 0;
  // Each bar is labelled with where its bin starts, to 4 significant digits, or as many
  // more as tell the bins apart (a narrow range: 1000 to 1000.07).
  for (int digits = 4; digits <= 17; ++digits) {
    for (size_t i = 0; i < h.bins.size(); ++i) {
      char label[40];
      std::snprintf(label, sizeof label, "%.*g", digits, h.lo + width * static_cast<double>(i));
      from[i] = label;
    }
    if (std::adjacent_find(from.begin(), from.end()) == from.end()) break;
  }
  for (const std::string& label : from) w = std::max(w, label.size());
  for (size_t i = 0; i < h.bins.size(); ++i)
    std::printf("  %*s %12llu%s\n", static_cast<int>(w), from[i].c_str(), static_cast<unsigned long long>(h.bins[i]),
                spaced(bar(h.bins[i], most, 40)).c_str());
  if (h.beyond == 0) {
    std::printf("no outliers: every value is within %s standard deviations of the mean\n", num(h.sigmas).c_str());
    return;
  }
  std::printf("%llu outlier%s beyond %s standard deviations (%s) of the mean %s%s\n", static_cast<unsigned long long>(h.beyond),
              h.beyond == 1 ? "" : "s", num(h.sigmas).c_str(), num(h.sigmas * st.stddev).c_str(), num(st.mean).c_str(),
              h.outliers.size() < h.beyond ? (", the " + std::to_string(h.outliers.size()) + " furthest:").c_str() : ":");
  for (const TensorOutlier& o : h.outliers)
    std::printf("  element %llu (row %llu, column %llu): %s\n", static_cast<unsigned long long>(o.index),
                static_cast<unsigned long long>(first_row + o.index / ne0), static_cast<unsigned long long>(o.index % ne0),
                number_text(Value::of_f32(o.value)).c_str());
}

}  // namespace

int cmd_tensor(const std::vector<std::string>& args) {
  po::options_description extra;
  shard_only_option(extra.add_options()("head", po::value<size_t>()->default_value(8), "how many leading values to print")(
      "all", po::bool_switch(), "print every value (of the rows chosen)")(
      "rows", po::value<std::string>(), "A:B: only rows A to B-1 (a row is ne0 values; A: and :B work too)")(
      "histogram", po::bool_switch(), "also the distribution of the values as bars, and the outliers named")(
      "bins", po::value<long long>()->default_value(20), "with --histogram: how many bars (1 to 1000)"));
  auto a = two_args(args, "name", "the tensor's name",
                    "usage: ggufkit tensor FILE NAME [--head N | --all] [--rows A:B] [--histogram [--bins N]] [--json]\n\n"
                    "Decodes a tensor's values (f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_K q3_K q4_K\n"
                    "q5_K q6_K) in the file's byte order as it reads them, and prints the count, min,\n"
                    "max, mean and standard deviation of the finite values, how many are NaN or\n"
                    "infinite, and the first N values (or all of them).\n\n"
                    "--histogram: the finite values in N equal bins from min to max, a bar each, and\n"
                    "the values further than 6 standard deviations from the mean (the 10 furthest,\n"
                    "by element index, row and column). On a terminal, a tensor over 64 MiB shows\n"
                    "how far the decoding is.",
                    extra);
  if (!a) return 0;
  Scanned s = load_model(a->file, shard_only(a->vm)).s;
  std::optional<Tensor> t;
  for (size_t i = 0; i < s.model.tensors.size(); ++i)
    if (s.model.tensors.name(i) == a->second) t = s.model.tensors[i];
  if (!t) {
    std::vector<std::string> names;
    for (size_t i = 0; i < s.model.tensors.size(); ++i) names.emplace_back(s.model.tensors.name(i));
    const std::string hint = did_you_mean(nearest_names(a->second, names, std::max<size_t>(2, a->second.size() / 4)));
    throw Error(Error::Kind::format, a->file, std::nullopt, "tensor",
                "there is no tensor named '" + a->second + "'" + (hint.empty() ? "" : "; " + hint));
  }
  Tensor part = *t;  // the rows asked for: whole rows are whole blocks, contiguous on disk
  uint64_t first_row = 0;
  if (a->vm.count("rows")) {
    std::string r = a->vm["rows"].as<std::string>();
    if (!t->dims.empty() && t->dims[0] == 0) throw_usage("--rows " + r + ": " + t->name + " has 0 columns, so no rows to take");
    uint64_t rows = t->dims.empty() ? 1 : t->elements() / t->dims[0];
    size_t colon = r.find(':');
    auto bound = [&](const std::string& text, uint64_t dflt) -> uint64_t {
      if (text.empty()) return dflt;
      if (text.find_first_not_of("0123456789") != std::string::npos || text.size() > 18)
        throw_usage("--rows expects A:B with whole numbers, found '" + r + "'");
      return std::stoull(text);
    };
    if (colon == std::string::npos) throw_usage("--rows expects A:B, found '" + r + "'");
    const std::string end = r.substr(colon + 1);
    uint64_t from = bound(r.substr(0, colon), 0), to = std::min(bound(end, rows), rows);
    if (!end.empty() && from >= bound(end, rows)) throw_usage("--rows " + r + " is an empty range");
    if (from >= to)  // well formed, past the tensor: what the file lacks, as a tensor or key it lacks
      throw Error(Error::Kind::format, a->file, std::nullopt, "tensor " + a->second,
                  "--rows " + r + " holds no row of the " + std::to_string(rows) + " the tensor has");
    uint64_t row_bytes = t->dims.empty() ? t->nbytes() : t->nbytes() / rows;
    part.dims = {t->dims.empty() ? 1 : t->dims[0], to - from};
    part.source_offset = t->source_offset + from * row_bytes;
    first_row = from;
  }
  const bool histogram = a->vm["histogram"].as<bool>();
  const long long bins = a->vm["bins"].as<long long>();
  if (!a->vm["bins"].defaulted() && !histogram) throw_usage("--bins is for --histogram: give --histogram too");
  if (bins < 1 || bins > 1000) throw_usage("--bins must be 1 to 1000, found " + std::to_string(bins));
  size_t first = a->vm["all"].as<bool>() ? SIZE_MAX : a->vm["head"].as<size_t>();
  const TensorProgress progress = progress_line("decoding");
  TensorStats st = tensor_stats(part, first, s.model.order, progress);
  std::optional<TensorHistogram> h;
  if (histogram) h = tensor_histogram(part, st, static_cast<size_t>(bins), s.model.order, 10, 6, progress);
  auto num = [](double x) { return number_text(Value::of_f64(x)); };
  const uint64_t ne0 = part.dims.empty() || part.dims[0] == 0 ? 1 : part.dims[0];
  if (a->json) {
    JsonOut j(std::cout);
    j.object([&] {
      j.key("name").str(t->name).key("type").str(ggml_type_name(t->type)).key("count").num(st.count);
      j.key("min").raw(num(st.min)).key("max").raw(num(st.max)).key("mean").raw(num(st.mean));
      j.key("std").raw(num(st.stddev)).key("nan").num(st.nan).key("inf").num(st.inf).key("head").array([&] {
        for (float x : st.head) j.value(Value::of_f32(x));
      });
      if (h)
        j.key("histogram").object([&] {
          j.key("lo").raw(num(h->lo)).key("hi").raw(num(h->hi)).key("bins").array([&] {
            for (uint64_t c : h->bins) j.num(c);
          });
          j.key("sigmas").raw(num(h->sigmas)).key("beyond").num(h->beyond).key("outliers").array([&] {
            for (const TensorOutlier& o : h->outliers)
              j.object([&] {
                j.key("index").num(o.index).key("row").num(first_row + o.index / ne0).key("column").num(o.index % ne0);
                j.key("value").value(Value::of_f32(o.value));
              });
          });
        });
    });
    return 0;
  }
  std::printf("%s  %s %s%s\n", terminal_name(t->name).c_str(), ggml_type_name(t->type).c_str(), shape_text(t->dims).c_str(),
              a->vm.count("rows") ? (", rows " + a->vm["rows"].as<std::string>()).c_str() : "");
  std::printf("count %llu  min %s  max %s  mean %s  std %s  nan %llu  inf %llu\n",
              static_cast<unsigned long long>(st.count), num(st.min).c_str(), num(st.max).c_str(), num(st.mean).c_str(),
              num(st.stddev).c_str(), static_cast<unsigned long long>(st.nan), static_cast<unsigned long long>(st.inf));
  std::string head;
  for (float x : st.head) head += (head.empty() ? "" : " ") + number_text(Value::of_f32(x));
  std::printf("%s  %s\n", a->vm["all"].as<bool>() ? "values" : "head", head.c_str());
  if (h) print_histogram(*h, st, first_row, ne0);
  return 0;
}

int cmd_diff(const std::vector<std::string>& args) {
  po::options_description extra;
  shard_only_option(extra.add_options()("exit-code", po::bool_switch(), "exit 1 when the files differ, 0 when they do not (for scripts)")(
                        "quiet,q", po::bool_switch(), "print nothing; exit 1 when the files differ (--exit-code), as git diff --quiet"),
                    "compare the files named, not the models their sets hold");
  auto a = two_args(args, "b", "the second GGUF file",
                    "usage: ggufkit diff A B [--json | --quiet] [--exit-code]\n\n"
                    "Everything by which B differs from A: version, byte order, alignment, metadata\n"
                    "added or removed (a line with the value), changed (both values; a long or\n"
                    "many-lined string such as a chat template as a unified diff of its lines) and\n"
                    "renamed (the same value under a new key), key order, tensor records, tensor\n"
                    "order, tensor bytes (by xxHash64), tensor offsets, non-zero padding and bytes\n"
                    "after the end. What follows from a difference (offsets after a longer value) is\n"
                    "not listed again. Exit status 0 whether or not they differ, unless --exit-code\n"
                    "or --quiet.\n\n"
                    "A shard of a set stands for the whole model its set holds, so a set compares\n"
                    "with the file it was split from; the models are then compared, not where their\n"
                    "bytes lie (offsets, padding). --shard-only compares the two files named.",
                    extra);
  if (!a) return 0;
  if (a->vm["quiet"].as<bool>() && a->json) throw_usage("give one of --quiet and --json");
  const bool alone = shard_only(a->vm);
  Loaded x = load_model(a->file, alone), y = load_model(a->second, alone);
  const bool sets = x.files > 1 || y.files > 1;
  std::vector<Difference> diffs = diff_files(x.s, y.s, !sets);
  if (a->vm["quiet"].as<bool>()) return diffs.empty() ? 0 : 1;
  auto text = [](const std::optional<Value>& v, const std::string& t) { return v ? brief_value(*v) : terminal_name(t); };
  if (a->json) {
    JsonOut j(std::cout);
    j.object([&] {
      j.key("same").boolean(diffs.empty()).key("a_files").num(x.files).key("b_files").num(y.files).key("differences").array(
          [&] {
            for (const Difference& d : diffs)
              j.object([&] {
                j.key("change").str(diff_kind_name(d.kind));
                if (!d.key.empty()) j.key("key").str(d.key);
                if (d.a) j.key("type").str(value_type_name(d.a->type));
                else if (d.b) j.key("type").str(value_type_name(d.b->type));
                if (d.a) j.key("a").value(*d.a);
                else if (!d.a_text.empty()) j.key("a").str(d.a_text);
                if (d.b) j.key("b").value(*d.b);
                else if (!d.b_text.empty()) j.key("b").str(d.b_text);
              });
          },
          JsonOut::lines_open);
    });
  } else {
    if (sets)
      std::printf("A is %s, B is %s: the models are compared, not their files' layouts\n",
                  x.files > 1 ? ("a shard set: " + std::to_string(x.files) + " files").c_str() : "one file",
                  y.files > 1 ? ("a shard set: " + std::to_string(y.files) + " files").c_str() : "one file");
    auto is_text = [](const std::optional<Value>& v) { return v && v->type == ValueType::string; };
    for (const Difference& d : diffs) {
      const char* kind = diff_kind_name(d.kind).data();
      const std::string key = terminal_name(d.key);
      // A key that came or went is one line with its value; a renamed key, its two names.
      if (d.kind == DiffKind::added || d.kind == DiffKind::removed) {
        std::printf("%-15s %s: %s\n", kind, key.c_str(), text(d.kind == DiffKind::added ? d.b : d.a, "").c_str());
        continue;
      }
      if (d.kind == DiffKind::renamed) {
        std::printf("%-15s %s -> %s\n", kind, terminal_name(d.a_text).c_str(), terminal_name(d.b_text).c_str());
        continue;
      }
      // A long or many-lined string (a chat template) is shown whole, as a diff of its lines.
      if (d.kind == DiffKind::changed && is_text(d.a) && is_text(d.b) &&
          (d.a->str.size() > 60 || d.b->str.size() > 60 || d.a->str.find('\n') != std::string::npos ||
           d.b->str.find('\n') != std::string::npos)) {
        // The file's text escaped first (escapes, NULs, bidi controls), line by line as it is.
        std::printf("%-15s %s: string of %zu bytes -> %zu bytes, by lines:\n", kind, key.c_str(), d.a->str.size(), d.b->str.size());
        std::cout << unified_diff(terminal_text(d.a->str), terminal_text(d.b->str), terminal_name(a->file) + ":" + key,
                                  terminal_name(a->second) + ":" + key)
                  << std::flush;
        continue;
      }
      std::string at = text(d.a, d.a_text), bt = text(d.b, d.b_text);
      std::printf("%-15s %s%s%s%s\n", kind, key.c_str(), d.key.empty() || (at.empty() && bt.empty()) ? "" : ": ",
                  at.c_str(), bt.empty() ? "" : (" -> " + bt).c_str());
    }
    if (diffs.empty()) std::printf("no differences\n");
    else std::printf("%zu differences\n", diffs.size());
  }
  return a->vm["exit-code"].as<bool>() && !diffs.empty() ? 1 : 0;
}

namespace {

// Llama-gguf-hash's words for a line's outcome.
const char* check_word(CheckStatus s) {
  switch (s) {
    case CheckStatus::ok: return "Ok";
    case CheckStatus::mismatch: return "Mismatch";
    case CheckStatus::missing: return "Not Found";
    case CheckStatus::not_in_file: return "Not In File";
  }
  return "?";
}

}  // namespace

int cmd_hash(const std::vector<std::string>& args) {
  po::options_description desc("options");
  shard_only_option(desc.add_options()("FILE", po::value<std::string>()->required(), "the GGUF file, or any shard of a set")(
      "algo", po::value<std::string>(),
      "xxh64 (the default), sha1 or sha256; with --manifest and --check a comma list of xxh64, sha1, sha256, uuid, or all")(
      "file", po::bool_switch(), "the SHA-256 of each whole file, as sha256sum prints it (what Hugging Face lists)")(
      "tensors", po::bool_switch(), "with --file: the tensor checksums too")(
      "manifest", po::bool_switch(), "print llama.cpp's llama-gguf-hash manifest of the file (each shard of a set)")(
      "check", po::value<std::string>(), "verify the file (each shard of a set) against a llama-gguf-hash manifest")(
      "json", po::bool_switch(), "print JSON"));
  po::positional_options_description pos;
  pos.add("FILE", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit hash FILE [--algo xxh64|sha1|sha256] [--json]\n"
                  "       ggufkit hash FILE --file [--tensors]\n"
                  "       ggufkit hash FILE --manifest [--algo LIST] > FILE.manifest\n"
                  "       ggufkit hash FILE --check MANIFEST [--algo LIST]\n\n"
                  "A checksum of every tensor's bytes and one over all tensor data in file order.\n"
                  "Only tensor bytes count, so a metadata edit keeps every hash. The bytes are\n"
                  "hashed as stored: the same model in the other byte order (convert) hashes\n"
                  "differently; compare values with 'ggufkit tensor' across byte orders.\n\n"
                  "--file: the SHA-256 of the whole file, one line as sha256sum prints it (HASH  FILE):\n"
                  "the checksum Hugging Face lists for each file, so compare the two to verify a\n"
                  "download. A shard stands for its set: a line for each shard. The file is not\n"
                  "parsed, so a download too damaged to read is hashed all the same. With --tensors,\n"
                  "the tensor checksums first.\n\n"
                  "--manifest: llama.cpp's llama-gguf-hash manifest, as 'llama-gguf-hash --all' prints\n"
                  "it: 'TYPE  HASH  FILE:TENSOR' for each tensor and 'TYPE  HASH  FILE' over the file's\n"
                  "tensor data (not the file's own SHA-256); a set's shards one after the other.\n"
                  "--algo: xxh64,sha1,sha256 (all) unless a list is given; uuid adds the model's UUIDv5.\n\n"
                  "--check MANIFEST: each file (each shard of a set) against its lines, found by the\n"
                  "file's name: by the strongest hash they have (sha256, sha1, xxh64, uuid) unless\n"
                  "--algo names some. A manifest that lists a file's tensors must list every one, and\n"
                  "each line must name a tensor the file has. Prints llama-gguf-hash's lines (Ok,\n"
                  "Mismatch, Not Found, Not In File); exit 1 when any fails, each failure named on\n"
                  "standard error. Lines naming other files are skipped (a note says so).");
  if (!vm) return 0;
  const bool manifest = (*vm)["manifest"].as<bool>(), file = (*vm)["file"].as<bool>(), json = (*vm)["json"].as<bool>();
  const bool check = vm->count("check") > 0;
  const bool tensors = !file || (*vm)["tensors"].as<bool>();
  HashRequest req = hash_request((*vm)["FILE"].as<std::string>(), vm->count("algo") ? (*vm)["algo"].as<std::string>() : "", file,
                                 (*vm)["tensors"].as<bool>(), manifest,
                                 check ? std::optional<std::string>((*vm)["check"].as<std::string>()) : std::nullopt, shard_only(*vm));
  // On a terminal, a long run shows how far it is, as edit does.
  if (auto line = progress_line("hashing")) req.progress = line;
  req.context = cli_context();
  HashReport rep = hash_files(req);
  const std::string algo = req.algos.empty() ? "" : std::string(hash_algo_name(req.algos[0]));

  if (check) {
    const ManifestCheck& c = *rep.check;
    if (c.other_lines)
      print_note(c.manifest, std::to_string(c.other_lines) + " line" + (c.other_lines == 1 ? " names a file" : "s name files") +
                                 " not checked here (the first: " + c.other_file + "): skipped");
    if (json) {
      JsonOut j(std::cout);
      j.object([&] {
        j.key("manifest").str(c.manifest).key("present").array([&] {
          for (HashAlgo a : c.present) j.str(hash_algo_name(a));
        });
        j.key("ok").boolean(c.ok()).key("other_lines").num(c.other_lines).key("lines").array(
            [&] {
              for (const CheckedLine& l : c.lines)
                j.object([&] {
                  j.key("algo").str(hash_algo_name(l.algo)).key("name").str(l.name).key("file").str(rep.files[l.file].path);
                  j.key("tensor");
                  if (l.tensor) j.str(*l.tensor);
                  else j.null();
                  j.key("status").str(check_status_name(l.status)).key("hash");
                  if (l.actual.empty()) j.null();
                  else j.str(l.actual);
                  j.key("expected");
                  if (l.expected.empty()) j.null();
                  else j.str(l.expected);
                  j.key("line");
                  if (l.line) j.num(l.line);
                  else j.null();
                  if (l.status != CheckStatus::ok) j.key("message").str(check_failure_text(l, rep));
                });
            },
            JsonOut::lines);
      });
    } else {
      std::string types;
      for (HashAlgo a : c.present) types += "  " + std::string(hash_algo_name(a));
      std::printf("manifest  %s%s\n", terminal_name(c.manifest).c_str(), types.c_str());
      for (const CheckedLine& l : c.lines) {
        std::string line = manifest_line_text({l.algo, l.actual.empty() ? l.expected : l.actual, l.name, 0});
        line.pop_back();
        std::printf("%s  -  %s\n", line.c_str(), check_word(l.status));
      }
      std::printf("\nVerification results for %s - %s\n", terminal_name(c.manifest).c_str(), c.ok() ? "Success" : "Failure");
      std::fflush(stdout);
      for (const CheckedLine& l : c.lines)
        if (l.status != CheckStatus::ok) std::fprintf(stderr, "ggufkit: error: %s\n", terminal_name(check_failure_text(l, rep)).c_str());
    }
    return c.ok() ? 0 : 1;
  }

  if (manifest) {
    std::vector<ManifestLine> lines = manifest_of(rep);
    if (json) {
      JsonOut j(std::cout);
      j.object([&] {
        j.key("lines").array(
            [&] {
              for (const ManifestLine& l : lines)
                j.object([&] { j.key("algo").str(hash_algo_name(l.algo)).key("hash").str(l.hex).key("name").str(l.name); });
            },
            JsonOut::lines);
      });
    } else {
      for (const ManifestLine& l : lines) std::fputs(manifest_line_text(l).c_str(), stdout);
    }
    return 0;
  }

  auto files_json = [&](JsonOut& j) {
    j.key("files").array(
        [&] {
          for (const HashedFile& f : rep.files)
            j.object([&] { j.key("file").str(f.path).key("bytes").num(f.size).key("sha256").str(f.sha256); });
        },
        JsonOut::lines);
  };
  if (json) {
    JsonOut j(std::cout);
    j.object([&] {
      if (tensors) {
        j.key("algo").str(algo).key("all").str(rep.all.at(req.algos[0])).key("tensors").array(
            [&] {
              for (const HashedTensor& t : rep.tensors)
                j.object([&] { j.key("name").str(t.name).key(algo).str(t.hex.at(req.algos[0])); });
            },
            JsonOut::lines);
      }
      if (file) files_json(j);
    });
    return 0;
  }
  if (tensors) {
    for (const HashedTensor& t : rep.tensors) std::printf("%s  %s\n", t.hex.at(req.algos[0]).c_str(), terminal_name(t.name).c_str());
    std::printf("%s  (all %zu tensors, %s)\n", rep.all.at(req.algos[0]).c_str(), rep.tensors.size(), algo.c_str());
  }
  if (file)  // sha256sum's line: a file of them is checked by 'sha256sum -c'
    for (const HashedFile& f : rep.files) std::printf("%s  %s\n", f.sha256.c_str(), f.path.c_str());
  return 0;
}

int cmd_validate(const std::vector<std::string>& args) {
  po::options_description desc("options");
  shard_only_option(desc.add_options()("file", po::value<std::string>()->required(), "the GGUF file ('-': a header from standard input), or any shard of a set")(
      "strict", po::bool_switch(), "exit 1 on warnings too")("json", po::bool_switch(), "print JSON (every finding, whatever --quiet or --verbose say)"), "a shard alone, not its set")(
      "verbose,v", po::bool_switch(), "also print the findings most files have (an alignment that happens to be wider, a BOS llama.cpp strips)")(
      "quiet,q", po::bool_switch(), "print only the findings that fail the file (errors; with --strict, warnings too); the exit code is the same")(
      "base", po::value<std::string>()->value_name("MODEL"), "FILE is a LoRA adapter of MODEL (its pairs checked against MODEL's tensors) or an MTP drafter for MODEL (the same architecture, width and vocabulary)")(
      "dialect", po::value<std::string>()->value_name("NAME")->default_value("llama.cpp"),
      "whose loader judges: llama.cpp (mainline), or ik_llama (its own tensor types are warnings, not errors)");
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit validate FILE [--base MODEL] [--dialect ik_llama] [--strict] [--quiet | --verbose] [--json]\n\n"
                  "Every reader error, and what a reader lets through that breaks later: tensor data\n"
                  "past the end of the file (a cut download), bytes after the last tensor, non-zero\n"
                  "padding, offsets llama.cpp refuses, an alignment below 32 or over 1 MiB, missing\n"
                  "architecture, hyperparameters or quantization version, a zero head count or\n"
                  "embedding length, a block count the blk.N tensors disagree with, special token\n"
                  "ids outside the vocabulary, vocabulary arrays of different lengths, an empty or\n"
                  "missing vocabulary, token_embd/output rows that are not the vocabulary size,\n"
                  "invalid UTF-8, nested arrays, tensor types llama.cpp cannot load (one ggml does\n"
                  "not know, read as opaque bytes; ik_llama.cpp's own: --dialect ik_llama makes\n"
                  "those warnings). Edits check the same rules before they write.\n"
                  "A file that is not a model is judged by its role's rules (show names the role):\n"
                  "a LoRA adapter as llama_adapter_lora_init reads it (general.type, adapter.type\n"
                  "lora, adapter.lora.alpha, NAME.lora_a/NAME.lora_b pairs; with --base MODEL also\n"
                  "the architecture and each pair's shape against MODEL's tensor), an importance\n"
                  "matrix as llama-quantize loads it (NAME.in_sum2 and NAME.counts, f32, the chunk\n"
                  "keys), a projector as mtmd reads its keys (encoders, projector type), an MTP\n"
                  "drafter (blk.N.nextn.* layers and no trunk: with --base MODEL, MODEL's\n"
                  "architecture, width and vocabulary). In any model, nextn_predict_layers against\n"
                  "the blk.N.nextn.* tensors held, both ways (mtp_layers).\n"
                  "Also standard keys of another type or value than llama.cpp reads them with\n"
                  "(ggufkit's key registry), a general.file_type the tensors contradict, a general.name\n"
                  "that is a hash or a path, a file name (NAME-8B-Q4_K_M.gguf) the metadata\n"
                  "contradicts.\n"
                  "A shard of a set (NAME-00001-of-0000N.gguf) is checked with its set: every\n"
                  "shard, then the set (missing_shard, split_no, split_count, split_tensors_count,\n"
                  "model_key_in_shard, tensor_in_two_shards, shard_byte_order, too_many_shards;\n"
                  "and split_keys_in_single_file for a lone file); --shard-only checks the file\n"
                  "named alone.\n"
                  "'-' reads a header from standard input: its model's rules, the data unread.\n"
                  "Each finding has a code, a\n"
                  "severity (error, warning, info), an offset where there is one, and a message;\n"
                  "what most files have (alignment, double_bos_unstripped) is printed with --verbose.\n"
                  "Exit 1 when there are errors (with --strict, warnings too).");
  if (!vm) return 0;
  if ((*vm)["quiet"].as<bool>() && (*vm)["verbose"].as<bool>()) throw_usage("give one of --quiet and --verbose");
  const std::string file = (*vm)["file"].as<std::string>();
  namespace io = boost::iostreams;
  io::stream<io::file_descriptor_source> in(io::file_descriptor_source(0, io::never_close_handle));
  Context ctx = cli_context();
  ctx.dialect = dialect_named((*vm)["dialect"].as<std::string>());
  if (auto line = progress_line("validating")) ctx.progress = line;  // a set's shards, as they are judged
  const Verdict v = validate(file, shard_only(*vm), &in, vm->count("base") ? (*vm)["base"].as<std::string>() : "", ctx);
  const auto& fs = v.findings;
  const auto& files = v.files;
  const size_t errors = v.errors, warnings = v.warnings;
  if ((*vm)["json"].as<bool>()) {
    JsonOut j(std::cout);
    j.object([&] {
      j.key("file").str(file).key("files").num(std::max<size_t>(files.size(), 1));
      j.key("errors").num(errors).key("warnings").num(warnings).key("findings").array(
          [&] {
            for (const auto& wf : fs)  // init-captures: clang 14 cannot capture a structured binding
              j.object([&, &where = wf.first, &f = wf.second] {
                j.key("file").str(where).key("code").str(code_name(f.code)).key("severity").str(severity_name(f.severity));
                j.key("offset");
                if (f.offset) j.num(*f.offset);
                else j.null();
                j.key("message").str(f.message);
                finding_extras_json(j, f, where);
              });
          },
          JsonOut::lines);
    });
  } else {
    const bool many = v.per_file, quiet = (*vm)["quiet"].as<bool>(), verbose = (*vm)["verbose"].as<bool>();
    const bool strict = (*vm)["strict"].as<bool>();
    for (const auto& [where, f] : fs) {
      if (rule_of(f.code).routine && !verbose) continue;
      if (quiet && !(f.severity == Severity::error || (strict && f.severity == Severity::warning))) continue;
      std::printf("%s%s %s%s: %s\n", many ? (terminal_name(where) + ": ").c_str() : "", severity_name(f.severity).data(),
                  code_name(f.code).data(), f.offset ? (" at byte " + std::to_string(*f.offset)).c_str() : "",
                  terminal_name(f.message).c_str());
      if (!f.fix.empty()) std::printf("  fix: %s\n", terminal_name(fix_text(f, where)).c_str());
    }
    if (!quiet) {
      if (files.size() > 1) std::printf("shard set: %zu files\n", files.size());
      std::printf("%s: %zu errors, %zu warnings\n", terminal_name(file).c_str(), errors, warnings);
    }
  }
  return errors || ((*vm)["strict"].as<bool>() && warnings) ? 1 : 0;
}

int cmd_map(const std::vector<std::string>& args) {
  po::options_description desc("options");
  shard_only_option(desc.add_options()("file", po::value<std::string>()->required(), "the GGUF file ('-' for stdin), or any shard of a set")(
      "json", po::bool_switch(), "print {\"file_size\", \"alignment\", \"data_offset\", \"spans\": [...]}")(
      "html", po::value<std::string>(), "PAGE: write a self-contained HTML page drawing every span to scale")(
      "force", po::bool_switch(), "with --html: replace PAGE if it exists"));
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos,
                  "usage: ggufkit map FILE [--json] [--html PAGE [--force]]\n\n"
                  "Prints every field of the file in order: offset, size, kind and name. Kinds:\n"
                  "magic version tensor_count kv_count kv_key kv_type kv_value tensor_info\n"
                  "padding tensor_data tensor_padding gap trailing (gap: bytes between a\n"
                  "tensor's padding and the next tensor; trailing: bytes after the end). The\n"
                  "spans cover every byte of the file; the text form ends with their total.\n\n"
                  "--html PAGE writes one page (no network, nothing fetched) that draws the file\n"
                  "to scale, wrapped over rows, each span coloured by kind with its name, kind,\n"
                  "size and offset on hover; then the header alone to its own scale, and the bytes\n"
                  "of each kind. Open it in any browser: xdg-open PAGE.\n\n"
                  "Given a shard of a set, the map of every shard in turn (--shard-only: the file\n"
                  "named alone); --json then gives {\"files\": N, \"shards\": [{\"file\", \"map\"}]}.");
  if (!vm) return 0;
  const ReadArgs a{(*vm)["file"].as<std::string>(), (*vm)["json"].as<bool>(), shard_only(*vm)};
  if (vm->count("html")) {
    const std::string page = (*vm)["html"].as<std::string>();
    if (a.json) throw_usage("--html writes a page and --json prints the map: ask for one");
    std::vector<MapFile> files;
    if (std::optional<ShardSet> set = set_of(a.file, a.shard_only, cli_context()))
      for (const Shard& sh : set->shards) files.push_back({sh.path, sh.file.layout, sh.file.source_size});
    else {
      Scanned s = load(a.file);
      files.push_back({a.file, s.layout, s.source_size});
    }
    for (const MapFile& f : files) refuse_same_file(f.name, page, "");
    write_text_file(page, map_html(files), (*vm)["force"].as<bool>(), cli_context());
    size_t spans = 0;
    for (const MapFile& f : files) spans += f.layout.spans.size();
    std::printf("wrote %s: %zu spans of %zu file%s\n", terminal_name(page).c_str(), spans, files.size(), files.size() == 1 ? "" : "s");
    return 0;
  }
  std::optional<ShardSet> set = set_of(a.file, a.shard_only, cli_context());
  if (!set) {
    Scanned s = load(a.file);
    print_map(s.layout, s.source_size, a.json, s.header_only);
    return 0;
  }
  const size_t n = set->shards.size();
  if (a.json) {
    // A shard a line; its map ends with a line end, as a lone file's map does.
    static constexpr JsonOut::Items one_a_line{"\n", ",\n", "\n"}, map_then_newline{"", ", ", "\n"};
    JsonOut j(std::cout);
    j.object([&] {
      j.key("files").num(n).key("shards").array(
          [&] {
            for (const Shard& sh : set->shards)
              j.object(
                  [&] {
                    j.key("file").str(sh.path).key("map");
                    map_json(j, sh.file.layout, sh.file.source_size);
                  },
                  map_then_newline);
          },
          one_a_line);
    });
    return 0;
  }
  std::printf("shard set: %zu files\n", n);
  for (size_t k = 0; k < n; ++k) {
    const Shard& sh = set->shards[k];
    std::printf("\n== %s (shard %zu of %zu)\n", terminal_name(sh.path).c_str(), k + 1, n);
    print_map(sh.file.layout, sh.file.source_size, false, sh.file.header_only);
  }
  return 0;
}


}  // namespace ggufkit::cli
