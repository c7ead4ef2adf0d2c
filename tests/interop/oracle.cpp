#include "oracle.h"

#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "ggufkit/vocab.h"
#include "../helpers.h"

namespace fs = std::filesystem;

namespace oracle {

const std::string& program() {
  static const std::string p = GGUFKIT_LLAMA_TOKENIZE;
  return p;
}
const std::string& libdir() {
  static const std::string p = GGUFKIT_LLAMA_LIBDIR;
  return p;
}

bool available(std::string& why) {
  if (!fs::exists(program())) return why = "no " + program() + " (build the llama_tokenize target)", false;
  if (!fs::exists(libdir() + "/libllama.v0.4.0.so"))
    return why = "no libllama in " + libdir() + ": node-llama-cpp is not installed (make interop-deps)", false;
  return true;
}

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs the oracle with stdin from `in`; its stdout and the status (empty when it exited 0).
std::pair<std::string, std::string> run(const std::string& file, const std::string& mode, const std::string& in) {
  static int n = 0;
  std::string base = testing_helpers::temp_path("oracle-" + std::to_string(++n));
  std::ofstream(base + ".in", std::ios::binary) << in;
  std::string cmd = "'" + program() + "' '" + libdir() + "' '" + file + "' " + mode + " <" + base + ".in >" + base + ".out 2>" +
                    base + ".err";
  int st = std::system(cmd.c_str());
  std::string out = slurp(base + ".out"), status;
  if (st != 0)
    status = (WIFEXITED(st) ? "exit " + std::to_string(WEXITSTATUS(st)) : "signal " + std::to_string(WTERMSIG(st))) + ": " +
             slurp(base + ".err");
  std::error_code ec;
  for (const char* ext : {".in", ".out", ".err"}) fs::remove(base + ext, ec);  // long runs: keep the temp dir small
  return {out, status};
}

}  // namespace

Run tokenize(const std::string& vocab_file, const std::vector<Request>& requests) {
  std::string in;
  for (const Request& r : requests) in += std::string(r.add_special ? "1 " : "0 ") + (r.parse_special ? "1 " : "0 ") + hex(r.text) + "\n";
  auto [out, status] = run(vocab_file, "lines", in);
  Run result;
  result.status = status;
  std::istringstream lines(out);
  std::string line;
  while (result.answers.size() < requests.size() && std::getline(lines, line)) {
    if (result.answers.empty() && line == "refused") {
      result.refused = true;
      break;
    }
    Answer a;
    if (line.starts_with("error") || line == "crash") {
      a.error = line;
    } else {
      std::istringstream ids(line);
      for (int32_t id; ids >> id;) a.ids.push_back(id);
    }
    result.answers.push_back(std::move(a));
  }
  while (!result.refused && result.answers.size() < requests.size()) result.answers.push_back({{}, "no answer"});
  return result;
}

namespace {
std::string line_of(const std::string& vocab_file, const std::string& mode) {
  std::string out = run(vocab_file, mode, "").first;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}
}  // namespace

std::string loaded(const std::string& vocab_file) { return line_of(vocab_file, "loaded"); }
std::string attrs(const std::string& vocab_file) { return line_of(vocab_file, "attrs"); }

std::vector<std::string> special_literals(const ggufkit::Model& m) {
  std::vector<std::string> r = {"<s>", "</s>", "<unk>", "<|endoftext|>", "<|end|>", "<|im_start|>", "[CLS]", "[SEP]", "<|eot_id|>"};
  ggufkit::tokenizer::VocabSpec spec = ggufkit::vocab_spec(m);
  const auto* tokens = spec.find("tokenizer.ggml.tokens");
  const auto* types = spec.find("tokenizer.ggml.token_type");
  if (!tokens || !types) return r;
  size_t i = 0;
  for (std::string_view text : tokens->strings) {
    if (i >= types->numbers.size()) break;
    int32_t t = static_cast<int32_t>(types->numbers[i++]);
    if ((t == 3 || t == 4) && !text.empty()) r.emplace_back(text);
  }
  return r;
}

namespace {

// The generator of one text. Plain modulo, not <random>'s distributions: those differ
// between standard libraries, and a seed must give the same text everywhere.
struct Gen {
  std::mt19937_64 rng;
  const std::vector<std::string>& specials;
  std::string s;

  uint32_t below(uint32_t n) { return n ? static_cast<uint32_t>(rng() % n) : 0; }
  uint32_t in(uint32_t lo, uint32_t hi) { return lo + below(hi - lo + 1); }
  bool chance(uint32_t percent) { return below(100) < percent; }
  template <size_t N>
  const char* pick(const char* const (&items)[N]) { return items[below(N)]; }

  void cp(uint32_t c) {  // one code point as UTF-8 (the caller never asks for a surrogate)
    if (c < 0x80) {
      s += static_cast<char>(c);
    } else if (c < 0x800) {
      s += static_cast<char>(0xC0 | c >> 6), s += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      s += static_cast<char>(0xE0 | c >> 12), s += static_cast<char>(0x80 | (c >> 6 & 0x3F)), s += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | c >> 18), s += static_cast<char>(0x80 | (c >> 12 & 0x3F));
      s += static_cast<char>(0x80 | (c >> 6 & 0x3F)), s += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  void ascii_word() {
    static const char* const words[] = {"the", "Hello", "world", "I", "a", "don", "THE", "is", "of", "llama", "GGUF", "tokenizer", "x", "ab"};
    if (chance(40)) return void(s += pick(words));
    uint32_t n = in(1, 10), style = below(4);
    for (uint32_t i = 0; i < n; ++i) {
      char c = static_cast<char>('a' + below(26));
      bool upper = style == 1 ? i == 0 : style == 2 ? true : style == 3 ? chance(50) : false;
      s += upper ? static_cast<char>(c - 32) : c;
    }
  }
  void whitespace() {
    static const char* const ws[] = {" ", " ", " ", "\t", "\n", "\r", "\r\n", "\n\n"};
    uint32_t n = chance(15) ? in(5, 40) : in(1, 4);
    for (uint32_t i = 0; i < n; ++i) s += pick(ws);
  }
  void piece() {
    switch (below(21)) {
      case 0: case 1: whitespace(); break;
      case 2: {  // digits of every length, sometimes a long run
        uint32_t n = chance(20) ? in(5, 24) : in(1, 4);
        for (uint32_t i = 0; i < n; ++i) s += static_cast<char>('0' + below(10));
        break;
      }
      case 3: case 4: case 5: if (chance(50)) s += ' '; ascii_word(); break;
      case 6: {  // contractions, in both cases, with ' and sometimes U+2019
        static const char* const tails[] = {"s", "t", "re", "ve", "m", "ll", "d", "S", "T", "RE", "VE", "M", "LL", "D", "Re", "vE"};
        if (chance(70)) ascii_word();
        s += chance(85) ? "'" : "\xE2\x80\x99";
        s += pick(tails);
        break;
      }
      case 7: {  // punctuation and symbols
        static const char* const p = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
        for (uint32_t i = 0, n = in(1, 4); i < n; ++i) s += p[below(32)];
        break;
      }
      case 8: {  // Latin with precomposed accents, lower and upper
        static const uint32_t acc[] = {0xE9, 0xE8, 0xEA, 0xEB, 0xE0, 0xE2, 0xE4, 0xE1, 0xE3, 0xE5, 0xE7, 0xF1, 0xF5, 0xF6, 0xF3,
                                       0xFC, 0xFA, 0xEF, 0xED, 0xFF, 0xF8, 0xE6, 0x153, 0xDF, 0xF0, 0xFE, 0x142, 0x144, 0x15B,
                                       0x17A, 0x17C, 0x10D, 0x161, 0x17E, 0x159, 0x11B, 0x16F, 0x151, 0x171, 0xC9, 0xC0, 0xDC,
                                       0xD1, 0xD8, 0xC6, 0x130, 0x131, 0x1E9E};
        if (chance(50)) s += ' ';
        for (uint32_t i = 0, n = in(1, 8); i < n; ++i)
          chance(50) ? cp(acc[below(sizeof acc / sizeof *acc)]) : cp('a' + below(26));
        break;
      }
      case 9: {  // combining marks after a base letter
        if (chance(30)) s += ' ';
        for (uint32_t i = 0, n = in(1, 4); i < n; ++i) {
          cp(chance(80) ? 'a' + below(26) : 'A' + below(26));
          for (uint32_t k = 0, m = in(1, 2); k < m; ++k) cp(0x300 + below(0x70));
        }
        break;
      }
      case 10: case 11: {  // words of other scripts
        static const uint32_t ranges[][2] = {{0x430, 0x44F}, {0x410, 0x42F}, {0x3B1, 0x3C9}, {0x391, 0x3A9}, {0x627, 0x64A},
                                             {0x64B, 0x652}, {0x5D0, 0x5EA}, {0x915, 0x939}, {0x93E, 0x94D}, {0xE01, 0xE3A},
                                             {0x4E00, 0x9FFF}, {0x3041, 0x3096}, {0x30A1, 0x30FA}, {0xAC00, 0xD7A3}, {0x1100, 0x1112}};
        uint32_t r = below(sizeof ranges / sizeof *ranges);
        if (chance(40)) s += ' ';
        for (uint32_t i = 0, n = in(1, 8); i < n; ++i) {
          // Arabic harakat and Devanagari matras follow a letter of their script
          uint32_t rr = (r == 5 || r == 8) && chance(50) ? r - 1 : r;
          cp(in(ranges[rr][0], ranges[rr][1]));
        }
        break;
      }
      case 12: {  // emoji: plain, with VS16, skin tones, ZWJ sequences, flags
        static const char* const seqs[] = {"\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7\xE2\x80\x8D\xF0\x9F\x91\xA6",
                                           "\xF0\x9F\x8F\xB3\xEF\xB8\x8F\xE2\x80\x8D\xF0\x9F\x8C\x88", "\xE2\x9D\xA4\xEF\xB8\x8F",
                                           "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD", "\xF0\x9F\xA6\x99", "\xE2\x80\x8D"};
        switch (below(5)) {
          case 0: s += pick(seqs); break;
          case 1: cp(in(0x1F600, 0x1F64F)); break;
          case 2: cp(in(0x1F300, 0x1F5FF)); cp(in(0x1F3FB, 0x1F3FF)); break;
          case 3: cp(in(0x2600, 0x26FF)); if (chance(50)) cp(0xFE0F); break;
          default: cp(in(0x1F1E6, 0x1F1FF)); cp(in(0x1F1E6, 0x1F1FF)); break;
        }
        break;
      }
      case 13: {  // Unicode spaces, zero-width ones, the BOM
        static const uint32_t sp[] = {0xA0, 0x1680, 0x2000, 0x2002, 0x2005, 0x2009, 0x200A, 0x200B, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF};
        for (uint32_t i = 0, n = in(1, 3); i < n; ++i) cp(sp[below(sizeof sp / sizeof *sp)]);
        break;
      }
      case 14: {  // control characters, C0, DEL and C1 (U+0085 among them)
        uint32_t c = below(4) == 0 ? in(0x7F, 0x9F) : in(0, 0x1F);
        cp(chance(20) ? 0x85 : c);
        break;
      }
      case 15: {  // invalid UTF-8
        static const char* const bad[] = {"\x80", "\xBF", "\xC3", "\xE4\xBD", "\xF0\x9F\x98", "\xED\xA0\x80", "\xED\xBF\xBF",
                                          "\xC0\xAF", "\xC1\xBF", "\xE0\x80\xAF", "\xF5\x80", "\xF4\x90\x80",
                                          "\xFE", "\xFF", "\xF8\x88\x80\x80\x80", "\xC3\x28"};
        s += pick(bad);
        if (chance(50)) ascii_word();
        break;
      }
      case 16: case 17: {  // special-token literals next to spaces and text, sometimes cut short
        if (specials.empty()) break;
        const std::string& lit = specials[below(static_cast<uint32_t>(specials.size()))];
        static const char* const around[] = {"", "", " ", "  ", "\n", "x", "Hello", " world"};
        s += pick(around);
        s += chance(10) && lit.size() > 1 ? lit.substr(0, in(1, static_cast<uint32_t>(lit.size() - 1))) : lit;
        s += pick(around);
        break;
      }
      case 18: {  // any code point that is not a surrogate, assigned or not
        uint32_t c = chance(70) ? in(0x80, 0xFFFF) : in(0x10000, 0x10FFFF);
        if (c >= 0xD800 && c <= 0xDFFF) c += 0x800;
        cp(c);
        break;
      }
      case 19: {  // repeats
        static const char* const rep[] = {"a", "!", " ", "\n", "0", "\xE4\xBD\xA0", "ab", ".", "\t", "-"};
        const char* r = pick(rep);
        for (uint32_t i = 0, n = in(2, 30); i < n; ++i) s += r;
        break;
      }
      default: {  // code and numbers as people write them
        static const char* const bits[] = {"int main() {\n\treturn 0;\n}", "x = y + 1", "http://example.com/a?b=c&d=1", "foo_bar.baz(1, 2)",
                                           "3.14", "1,000,000", "12:30", "-42", "1e10", "$5.99", "\xD9\xA3\xD9\xA4\xD9\xA5",
                                           "\xEF\xBC\x91\xEF\xBC\x92\xEF\xBC\x93", "    def f(self):\n        pass", "<html>",
                                           "C++", "e-mail", "A.B.C.", "#include <stdio.h>", "2024-06-01", "\xE2\x85\xA7"};
        s += pick(bits);
        break;
      }
    }
  }
};

}  // namespace

std::string random_text(uint64_t seed, size_t index, const std::vector<std::string>& specials, uint32_t long_pieces) {
  Gen g{std::mt19937_64(seed * 0x9E3779B97F4A7C15ull + index), specials, {}};
  if (index == 0) return "";
  uint32_t pieces = index % 20 == 7 ? g.in(long_pieces / 2, long_pieces) : g.chance(25) ? g.in(8, 40) : g.in(1, 8);
  // A whole 4-byte sequence above U+10FFFF (F4 90.., F5..F7) makes llama.cpp's BPE and WPM
  // abort: only in one text of fifty, so the others compare ids.
  uint32_t beyond = index % 50 == 3 ? g.below(pieces + 1) : UINT32_MAX;
  for (uint32_t i = 0; i <= pieces; ++i) {
    if (i == beyond) {
      g.s += static_cast<char>(g.chance(50) ? 0xF4 : g.in(0xF5, 0xF7));
      g.s += static_cast<char>(g.s.back() == '\xF4' ? g.in(0x90, 0xBF) : g.in(0x80, 0xBF));
      g.s += static_cast<char>(g.in(0x80, 0xBF)), g.s += static_cast<char>(g.in(0x80, 0xBF));
    }
    if (i < pieces) g.piece();
  }
  return g.s;
}

std::string escaped(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string r;
  for (unsigned char c : bytes) {
    if (c == '\\' || c == '"') r += '\\', r += static_cast<char>(c);
    else if (c == '\n') r += "\\n";
    else if (c == '\t') r += "\\t";
    else if (c == '\r') r += "\\r";
    else if (c >= 0x20 && c < 0x7F) r += static_cast<char>(c);
    else r += "\\x", r += digits[c >> 4], r += digits[c & 15];
  }
  return r;
}

std::string hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string r;
  for (unsigned char c : bytes) r += digits[c >> 4], r += digits[c & 15];
  return r;
}

std::string ids_text(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
  return s;
}

}  // namespace oracle
