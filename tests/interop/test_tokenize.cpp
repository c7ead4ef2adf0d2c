// The differential test of the tokenizer against llama.cpp's own llama_tokenize and
// llama_vocab_* answers: the libllama of node-llama-cpp 3.21.1's prebuilt linux-x64 package,
// whose llama.cpp is "release v0.4.0" (node-llama-cpp/llama/llama.cpp.info.json and
// binariesGithubRelease.json; its source bundle is one squashed commit, 80fb11ac, so there is
// no upstream commit to name), opened by bench/llama_tokenize with a vocabulary-only load.
//
// Seeded random texts (tests/interop/oracle.cpp: every path of the tokenizers, invalid UTF-8
// and special-token literals among them) go to llama.cpp in one process per vocabulary; ggufkit
// must give the same ids for every text, in all four modes (add_special x parse_special), on
// each corpus vocabulary, on its big-endian copy, and on the gpt-2 vocabulary relabelled with
// every pre-tokenizer name. Where llama.cpp aborts on a text (an exception through its C API:
// a 4-byte UTF-8 sequence above U+10FFFF on the BPE and WPM paths), ggufkit must throw.
// A failure names the seed and text number (the text replays alone),
// shows the text as escaped bytes, the request that replays it, both id lists and where they part.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "ggufkit/scan.h"
#include "ggufkit/vocab.h"
#include "../helpers.h"
#include "oracle.h"

using namespace testing_helpers;
namespace fs = std::filesystem;
namespace tk = ggufkit::tokenizer;

namespace {

constexpr size_t kTexts = 300;  // per vocabulary and mode
constexpr size_t kShown = 10;   // differences printed in full
struct Mode {
  bool add, parse;
};
constexpr Mode kModes[] = {{false, false}, {true, false}, {false, true}, {true, true}};

const std::vector<std::string> kCorpusVocabs = {"llama-spm", "phi-3", "gpt-2", "falcon", "bert-bge", "baichuan"};
std::string vocab_file(const std::string& name) { return corpus("vocab/ggml-vocab-" + name + ".gguf"); }

// The seed of a stream, from its name: fixed, and different for each vocabulary.
uint64_t seed_of(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

void need_oracle() {
  std::string why;
  if (!oracle::available(why)) FAIL() << "the oracle cannot run: " << why;
}

std::string with_text(const tk::Vocab& v, const std::vector<int32_t>& ids, size_t from) {
  std::string s;
  for (size_t i = from; i < ids.size() && i < from + 8; ++i) {
    int32_t id = ids[i];
    s += " " + std::to_string(id);
    if (id >= 0 && static_cast<size_t>(id) < v.size()) s += ":\"" + oracle::escaped(v.text(id)) + "\"";
  }
  return s;
}

struct Outcome {
  size_t compared = 0, differing = 0;
  size_t crashes = 0;  // texts where llama.cpp aborts and ggufkit throws, as it should
  std::string shown;  // the first kShown differences, in full
};

// ggufkit's vocabulary `ours` (loaded from `our_file`) against llama.cpp's answers for the same
// texts (on `oracle_file`): texts[i] in mode m is request i * 4 + m.
Outcome compare(const std::string& our_file, const std::string& oracle_file, uint64_t seed,
                const std::vector<std::string>& texts, const oracle::Run& run) {
  Outcome o;
  std::optional<tk::Vocab> ours;
  std::string refusal;
  try {
    ggufkit::Scanned s = ggufkit::scan_file(our_file);
    ours = ggufkit::load_vocab(s.model, our_file);
    if (!ours) refusal = "no tokenizer.ggml.model";
  } catch (const std::exception& e) {
    refusal = e.what();
  }
  if (run.refused) {
    o.shown = "llama.cpp refuses " + oracle_file + (ours ? " but ggufkit loads it" : "");
    o.differing = ours ? 1 : 0;
    return o;
  }
  if (!run.status.empty()) o.shown += "the oracle failed on " + oracle_file + ": " + run.status + "\n";
  if (!ours) {
    o.compared = run.answers.size();
    o.differing = o.compared;
    o.shown += "ggufkit refuses " + our_file + ", which llama.cpp loads: " + refusal;
    return o;
  }
  for (size_t i = 0; i < texts.size(); ++i)
    for (size_t m = 0; m < 4; ++m) {
      const oracle::Answer& want = run.answers.at(i * 4 + m);
      std::vector<int32_t> got;
      std::string threw;
      try {
        got = ours->tokenize(texts[i], kModes[m].add, kModes[m].parse);
      } catch (const std::exception& e) {
        threw = e.what();
      }
      ++o.compared;
      if (want.error.empty() && threw.empty() && got == want.ids) continue;
      // Where llama.cpp aborts (its C++ throws through the C API), ggufkit throws: no ids to invent.
      if (want.error == "crash" && !threw.empty() && ++o.crashes) continue;
      if (++o.differing > kShown) continue;
      size_t part = 0;
      while (part < got.size() && part < want.ids.size() && got[part] == want.ids[part]) ++part;
      std::ostringstream d;
      d << "seed " << seed << " text #" << i << " add_special=" << kModes[m].add << " parse_special=" << kModes[m].parse << ", "
        << texts[i].size() << " bytes: \"" << oracle::escaped(texts[i]) << "\"\n"
        << "  replay: echo '" << kModes[m].add << " " << kModes[m].parse << " " << oracle::hex(texts[i]) << "' | llama_tokenize "
        << oracle::libdir() << " " << oracle_file << " lines\n"
        << "  llama.cpp (" << want.ids.size() << "): " << (want.error.empty() ? oracle::ids_text(want.ids)
            : want.error == "crash" ? "aborts (uncaught exception): ggufkit must throw" : want.error) << "\n"
        << "  ggufkit   (" << got.size() << "): " << (threw.empty() ? oracle::ids_text(got) : "threw: " + threw) << "\n";
      if (threw.empty() && want.error.empty())
        d << "  they part at index " << part << ": llama.cpp" << with_text(*ours, want.ids, part) << " | ggufkit"
          << with_text(*ours, got, part) << "\n";
      o.shown += d.str();
    }
  return o;
}

std::vector<std::string> texts_for(const std::string& file, uint64_t seed, uint32_t long_pieces) {
  ggufkit::Scanned s = ggufkit::scan_file(file);
  std::vector<std::string> specials = oracle::special_literals(s.model);
  std::vector<std::string> texts;
  for (size_t i = 0; i < kTexts; ++i) texts.push_back(oracle::random_text(seed, i, specials, long_pieces));
  return texts;
}

oracle::Run ask(const std::string& file, const std::vector<std::string>& texts) {
  std::vector<oracle::Request> reqs;
  for (const std::string& t : texts)
    for (const Mode& m : kModes) reqs.push_back({m.add, m.parse, t});
  return oracle::tokenize(file, reqs);
}

// The whole comparison of one vocabulary: ours on `our_file`, llama.cpp on `oracle_file`.
void expect_same_ids(const std::string& stream, const std::string& our_file, const std::string& oracle_file,
                     uint32_t long_pieces = 900) {
  need_oracle();
  uint64_t seed = seed_of(stream);
  std::vector<std::string> texts = texts_for(oracle_file, seed, long_pieces);
  oracle::Run run = ask(oracle_file, texts);
  ASSERT_FALSE(run.refused) << "llama.cpp refuses " << oracle_file;
  Outcome o = compare(our_file, oracle_file, seed, texts, run);
  std::printf("[ compared ] %s: %zu requests (%zu texts x 4 modes, seed %llu), %zu differ, %zu where llama.cpp aborts\n",
              stream.c_str(), o.compared, texts.size(), static_cast<unsigned long long>(seed), o.differing, o.crashes);
  EXPECT_EQ(o.compared, kTexts * 4) << o.shown;
  EXPECT_EQ(o.differing, 0u) << o.differing << " of " << o.compared << " requests differ (" << kTexts << " texts x 4 modes, seed "
                             << seed << "); the first " << std::min(o.differing, kShown) << ":\n" << o.shown;
}

std::string param_name(const std::string& s) {
  std::string r;
  for (char c : s) r += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return r;
}

std::string big_endian_copy(const std::string& name) {
  std::string out = temp_path("be-" + name + ".gguf");
  CliRun r = run_cli("convert '" + vocab_file(name) + "' --byte-order big --force -o '" + out + "'");
  EXPECT_EQ(r.code, 0) << r.err;
  return out;
}

// ---------------------------------------------------------------------------------------

class LlamaTokenize : public testing::TestWithParam<std::string> {};

TEST_P(LlamaTokenize, GivesLlamaCppsIdsForRandomTextsInEveryMode) {
  expect_same_ids(GetParam(), vocab_file(GetParam()), vocab_file(GetParam()));
}

// llama.cpp cannot read a big-endian file here (it takes the byte-swapped version for an
// unknown one and refuses the file): ours on the big-endian copy must give llama.cpp's ids
// for the little-endian original.
TEST_P(LlamaTokenize, BigEndianCopyGivesTheIdsOfTheLittleEndianFile) {
  need_oracle();
  std::string be = big_endian_copy(GetParam());
  EXPECT_EQ(oracle::loaded(be), "refused") << "llama.cpp now reads big-endian files: compare it on them too";
  expect_same_ids(GetParam(), be, vocab_file(GetParam()));
}

// Vocab::loaded() field by field against llama.cpp's llama_vocab_* answers (the oracle's
// `loaded` and `attrs`), and every token's attribute; on the big-endian copy too.
TEST_P(LlamaTokenize, LoadedIsWhatLlamaCppAnswers) {
  need_oracle();
  std::string file = vocab_file(GetParam());
  std::string line = oracle::loaded(file);
  ASSERT_NE(line, "refused");
  YAML::Node want = YAML::Load(line);
  YAML::Node want_attrs = YAML::Load(oracle::attrs(file));
  for (const std::string& ours_file : {file, big_endian_copy(GetParam())}) {
    SCOPED_TRACE(ours_file);
    ggufkit::Scanned s = ggufkit::scan_file(ours_file);
    std::optional<tk::Vocab> v;
    try {
      v = ggufkit::load_vocab(s.model, ours_file);
    } catch (const std::exception& e) {
      FAIL() << "ggufkit refuses what llama.cpp loads: " << e.what();
    }
    ASSERT_TRUE(v.has_value());
    const tk::Loaded& l = v->loaded();
    EXPECT_EQ(static_cast<int>(v->size()), want["n_tokens"].as<int>());
    EXPECT_EQ(static_cast<int>(v->kind()), want["type"].as<int>()) << "ours: " << tk::kind_name(v->kind());
    const std::pair<const char*, int32_t> ids[] = {{"bos", l.bos},         {"eos", l.eos},         {"eot", l.eot},
                                                   {"sep", l.sep},         {"nl", l.nl},           {"pad", l.pad},
                                                   {"fim_pre", l.fim_pre}, {"fim_suf", l.fim_suf}, {"fim_mid", l.fim_mid},
                                                   {"fim_pad", l.fim_pad}, {"fim_rep", l.fim_rep}, {"fim_sep", l.fim_sep}};
    for (auto [name, id] : ids) EXPECT_EQ(id, want[name].as<int32_t>()) << name;
    EXPECT_EQ(l.mask, want_attrs["mask"].as<int32_t>()) << "mask";
    EXPECT_EQ(l.add_bos, want["add_bos"].as<bool>()) << "add_bos";
    EXPECT_EQ(l.add_eos, want["add_eos"].as<bool>()) << "add_eos";
    EXPECT_EQ(l.add_sep, want_attrs["add_sep"].as<bool>()) << "add_sep";
    EXPECT_EQ(l.eog, want["eog"].as<std::vector<int32_t>>()) << "eog";
    EXPECT_EQ(l.control, want["control"].as<std::vector<int32_t>>()) << "control";
    std::vector<uint32_t> attr(v->size(), tk::attr_normal);
    for (const YAML::Node& p : want_attrs["attr"])
      if (p[0].as<size_t>() < attr.size()) attr[p[0].as<size_t>()] = p[1].as<uint32_t>();
    size_t bad = 0;
    for (size_t id = 0; id < attr.size(); ++id)
      if (v->attr(static_cast<int32_t>(id)) != attr[id] && ++bad <= kShown)
        ADD_FAILURE() << "token " << id << " \"" << oracle::escaped(v->text(static_cast<int32_t>(id))) << "\": attr "
                      << v->attr(static_cast<int32_t>(id)) << ", llama.cpp " << attr[id];
    EXPECT_EQ(bad, 0u) << "tokens whose attribute differs";
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, LlamaTokenize, testing::ValuesIn(kCorpusVocabs),
                         [](const testing::TestParamInfo<std::string>& p) { return param_name(p.param); });

// ---------------------------------------------------------------------------------------

// The gpt-2 vocabulary relabelled with a pre-tokenizer name: every regex llama.cpp has,
// though the corpus holds two. --allow-broken: a name llama.cpp refuses is written too (the
// rule book refuses it, vocab_refused), for llama.cpp to be asked.
std::string relabelled(const std::string& pre) {
  std::string out = temp_path("pre-" + param_name(pre) + ".gguf");
  CliRun r = run_cli("edit '" + vocab_file("gpt-2") + "' --set 'tokenizer.ggml.pre=" + pre + "' --allow-broken --force -o '" + out + "'");
  EXPECT_EQ(r.code, 0) << r.err;
  return out;
}

class LlamaTokenizePre : public testing::TestWithParam<std::string> {};

// make test runs a quarter of the names, by the commit (sample()); make test-full all.
TEST_P(LlamaTokenizePre, Gpt2RelabelledGivesLlamaCppsIdsForRandomTextsInEveryMode) {
  const std::vector<std::string> names = tk::known_pre_names();
  const size_t index = static_cast<size_t>(std::find(names.begin(), names.end(), GetParam()) - names.begin());
  if (!sample().takes(index)) GTEST_SKIP() << GetParam() << ": not in this run's sample, " << sample().said();
  if (!sample().all) std::printf("[ sampled  ] %s\n", sample().said().c_str());
  std::string file = relabelled(GetParam());
  // Long texts of ~1 KB, not a few: llama.cpp runs the regexes it has no hand-written split
  // for through std::regex, slow enough to weigh on the suite's time over 87 names.
  expect_same_ids("gpt-2 as " + GetParam(), file, file, 200);
}

INSTANTIATE_TEST_SUITE_P(KnownNames, LlamaTokenizePre, testing::ValuesIn(tk::known_pre_names()),
                         [](const testing::TestParamInfo<std::string>& p) {
                           return param_name(p.param) + "_" + std::to_string(p.index);  // "a.x-4.0" and such stay unique
                         });

// Every tokenizer.ggml.pre value this llama.cpp accepts for a gpt2 model (llama_vocab::impl::load
// in src/llama-vocab.cpp of release v0.4.0), so that the test above runs on each.
const std::set<std::string> kLlamaCppPreNames = {
    "default", "minicpm5", "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
    "jina-v5-nano", "deepseek-llm", "deepseek-coder", "deepseek-v3", "youtu", "falcon", "mpt", "starcoder", "gpt-2", "phi-2",
    "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "jais-2", "gemma4",
    "granite-embed-multi-311m", "sarvam-moe", "jina-v1-en", "jina-v2-code", "roberta-bpe", "whitespace", "refact", "command-r",
    "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "qwen35", "stablelm2", "olmo", "dbrx", "smaug-bpe", "poro-chat", "glm4",
    "chatglm-bpe", "viking", "jais", "tekken", "smollm", "codeshell", "bloom", "gpt3-finnish", "exaone", "exaone4", "exaone-moe",
    "chameleon", "minerva-7b", "megrez", "gpt-4o", "llama4", "kanana2", "talkie", "granite-embed-multi-97m", "tiny_aya",
    "cohere2moe", "superbpe", "trillion", "granite-docling", "bailingmoe", "bailingmoe2", "llada-moe", "seed-coder", "hunyuan",
    "hunyuan-dense", "joyai-llm", "kimi-k2", "grok-2", "afmoe", "laguna", "minimax-m2", "solar-open", "mellum2"};

TEST(LlamaTokenizePreNames, KnownPreNamesAreEveryNameThisLlamaCppAccepts) {
  std::set<std::string> ours(tk::known_pre_names().begin(), tk::known_pre_names().end());
  std::vector<std::string> missing, extra;
  std::set_difference(kLlamaCppPreNames.begin(), kLlamaCppPreNames.end(), ours.begin(), ours.end(), std::back_inserter(missing));
  std::set_difference(ours.begin(), ours.end(), kLlamaCppPreNames.begin(), kLlamaCppPreNames.end(), std::back_inserter(extra));
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& n : v) s += " " + n;
    return s;
  };
  EXPECT_TRUE(missing.empty()) << missing.size() << " names llama.cpp accepts are not in known_pre_names():" << join(missing);
  EXPECT_TRUE(extra.empty()) << "names in known_pre_names() that llama.cpp does not accept:" << join(extra);
}

TEST(LlamaTokenizePreNames, ANameLlamaCppRefusesIsRefusedByGgufkitToo) {
  need_oracle();
  for (const std::string pre : {"no-such-pre", "GPT-2", "Llama3", ""}) {
    std::string file = relabelled(pre);
    bool llama_refuses = oracle::loaded(file) == "refused";
    bool ours_refuses = false;
    try {
      ggufkit::Scanned s = ggufkit::scan_file(file);
      ours_refuses = !ggufkit::load_vocab(s.model, file);
    } catch (const std::exception&) {
      ours_refuses = true;
    }
    EXPECT_EQ(ours_refuses, llama_refuses) << "tokenizer.ggml.pre = \"" << pre << "\": llama.cpp " << (llama_refuses ? "refuses" : "loads");
    if (!pre.empty()) {
      EXPECT_TRUE(llama_refuses) << "llama.cpp now accepts \"" << pre << "\"";
    } else {
      EXPECT_FALSE(llama_refuses) << "llama.cpp takes an empty name for \"default\"";
    }
  }
}

// ---------------------------------------------------------------------------------------

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(LlamaCppOracle, IsNodeLlamaCpp3211WithLlamaCppReleaseV040) {
  std::string pkg = std::string(GGUFKIT_INTEROP_DIR) + "/node_modules/node-llama-cpp";
  YAML::Node info = YAML::Load(slurp(pkg + "/llama/llama.cpp.info.json"));
  YAML::Node version = YAML::Load(slurp(pkg + "/package.json"));
  EXPECT_EQ(version["version"].as<std::string>(""), "3.21.1") << "the package moved: update this file's opening comment";
  EXPECT_EQ(info["tag"].as<std::string>(""), "v0.4.0");
  EXPECT_EQ(info["llamaCppGithubRepo"].as<std::string>(""), "ggml-org/llama.cpp");
}

// The same seed gives the same texts everywhere (std::mt19937_64 is fully specified), and 300
// texts reach every kind of input the generator is for.
TEST(LlamaCppOracle, RandomTextsAreFixedBySeedAndReachEveryPath) {
  std::vector<std::string> specials = {"<|endoftext|>", "[CLS]"};
  EXPECT_EQ(oracle::random_text(1, 0, specials), "");
  EXPECT_EQ(oracle::random_text(1, 5, specials), oracle::random_text(1, 5, specials));
  EXPECT_NE(oracle::random_text(1, 5, specials), oracle::random_text(2, 5, specials));
  std::string all;
  size_t longest = 0;
  for (size_t i = 0; i < kTexts; ++i) {
    std::string t = oracle::random_text(7, i, specials);
    longest = std::max(longest, t.size());
    all += t;
  }
  EXPECT_GE(longest, 2000u);
  const std::pair<const char*, std::string> wanted[] = {
      {"tab", "\t"}, {"\\r", "\r"}, {"a run of spaces", "     "}, {"NUL", std::string(1, '\0')}, {"U+0085", "\xC2\x85"},
      {"DEL", "\x7F"}, {"U+00A0", "\xC2\xA0"}, {"U+3000", "\xE3\x80\x80"}, {"U+2009", "\xE2\x80\x89"},
      {"'re", "'re"}, {"'VE", "'VE"}, {"ZWJ", "\xE2\x80\x8D"}, {"a skin tone", "\xF0\x9F\x8F"}, {"invalid 0xFF", "\xFF"},
      {"a surrogate's bytes", "\xED\xA0\x80"}, {"<|endoftext|>", "<|endoftext|>"}, {"[CLS]", "[CLS]"}, {"ten digits", "0123456789"}};
  for (auto& [what, bytes] : wanted) {
    if (std::string(what) == "ten digits") {
      size_t run = 0, best = 0;
      for (char c : all) best = std::max(best, run = std::isdigit(static_cast<unsigned char>(c)) ? run + 1 : 0);
      EXPECT_GE(best, 10u) << what;
    } else {
      EXPECT_NE(all.find(bytes), std::string::npos) << "no " << what << " in 300 texts";
    }
  }
}

// The oracle against llama.cpp's own test vectors (../shared/corpus/tokenizer, add_special =
// parse_special = false): the harness reads its answers right, and this llama.cpp still
// tokenizes as the vectors say. Where it does not, the vectors win for ggufkit's tokenizer
// (tests/tokenizer/test_vectors.cpp) and the case is listed here.
TEST(LlamaCppOracle, GivesTheCorpusVectorsIds) {
  need_oracle();
  const std::set<std::pair<std::string, size_t>> known;  // (vocabulary, case number) where this llama.cpp differs
  std::set<std::pair<std::string, size_t>> seen;
  std::string shown;
  size_t cases = 0;
  for (const char* name : {"llama-spm", "phi-3", "gpt-2", "falcon", "bert-bge"}) {
    std::string dir = corpus("tokenizer/ggml-vocab-") + name + ".gguf";
    std::string inp = slurp(dir + ".inp"), out = slurp(dir + ".out");
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<oracle::Request> reqs;
    for (size_t at = 0, end; (end = inp.find(sep, at)) != std::string::npos; at = end + sep.size()) reqs.push_back({false, false, inp.substr(at, end - at)});
    oracle::Run run = oracle::tokenize(vocab_file(name), reqs);
    ASSERT_FALSE(run.refused) << name;
    EXPECT_EQ(run.status, "") << name;
    std::istringstream lines(out);
    for (size_t i = 0; i < reqs.size(); ++i) {
      std::string line;
      std::getline(lines, line);
      std::istringstream s(line);
      std::vector<int32_t> ids;
      for (int32_t id; s >> id;) ids.push_back(id);
      ++cases;
      if (run.answers[i].ids == ids && run.answers[i].error.empty()) continue;
      seen.insert({name, i});
      shown += std::string(name) + " case " + std::to_string(i) + " \"" + oracle::escaped(reqs[i].text) + "\"\n  vectors:   " +
               oracle::ids_text(ids) + "\n  llama.cpp: " + (run.answers[i].error.empty() ? oracle::ids_text(run.answers[i].ids) : run.answers[i].error) + "\n";
    }
  }
  EXPECT_EQ(cases, 230u);
  EXPECT_EQ(seen, known) << shown;
}

}  // namespace
