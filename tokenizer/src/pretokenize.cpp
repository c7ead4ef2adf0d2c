// llama.cpp's unicode_regex_split, on PCRE2 and ICU.
//
// llama.cpp splits over code points (an invalid UTF-8 byte is one U+FFFD). Eight expressions
// it recognises by their exact text and splits by hand-written code (the GPT-2, Llama 3,
// Qwen2, Qwen3.5, Kimi-K2, digit-group and newline splitters below); their edge cases are
// theirs, not the expression's, so they are ported as they are. Every other expression runs
// on std::regex (ECMAScript, "C" locale): one with a Unicode category (\p{L} ...) on a
// "collapsed" text where each code point past ASCII is one stand-in unit for its category
// (and the category in the expression becomes that unit plus its ASCII members), the others
// on the code points themselves with non-ASCII whitespace as U+000B. Both run here on PCRE2's
// 32-bit library in non-UTF mode: its \s \d \w are ASCII-only as std::regex's are in the
// "C" locale, and its backtracking takes the first alternative that matches, as ECMAScript's.
#define PCRE2_CODE_UNIT_WIDTH 32
#include "pretokenize.h"

#include <pcre2.h>

#include <array>
#include <cstring>

#include "impl.h"

namespace ggufkit::tokenizer {

namespace {

using Offsets = std::vector<size_t>;  // piece lengths, in code points

// The stand-in units of the collapsed text and what each category also holds in ASCII.
constexpr uint32_t collapsed_other = 0xD0, collapsed_space = 0x0B;
struct Category {
  const char* name;
  uint32_t unit;
  const char* ascii;  // as members of a character class
};
constexpr std::array<Category, 10> categories = {{
    {"\\p{N}", 0xD1, "0-9"},
    {"\\p{L}", 0xD2, "A-Za-z"},
    {"\\p{P}", 0xD3, "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}"},
    {"\\p{M}", 0xD4, ""},
    {"\\p{S}", 0xD5, "\\$\\+<->^`\\|\\~"},
    // llama.cpp takes every letter subcategory for all letters
    {"\\p{Lu}", 0xD2, "A-Za-z"},
    {"\\p{Ll}", 0xD2, "A-Za-z"},
    {"\\p{Lt}", 0xD2, "A-Za-z"},
    {"\\p{Lm}", 0xD2, "A-Za-z"},
    {"\\p{Lo}", 0xD2, "A-Za-z"},
}};

uint32_t collapse(uint32_t cpt, uint16_t flags) {
  if (cpt < 128) return cpt;
  if (flags & cpt_whitespace) return collapsed_space;
  switch (flags & cpt_categories) {
    case cpt_number: return 0xD1;
    case cpt_letter: return 0xD2;
    case cpt_punctuation: return 0xD3;
    case cpt_mark: return 0xD4;
    case cpt_symbol: return 0xD5;
    default: return collapsed_other;
  }
}

bool uses_category(const std::string& expr) {
  for (const Category& c : categories)
    if (expr.find(c.name) != std::string::npos) return true;
  return false;
}

// The expression over the collapsed text: each category becomes a class of its stand-in and
// its ASCII members (inside a class, just those members), tracking brackets as llama.cpp does.
std::string collapse_expr(const std::string& e) {
  std::string out;
  bool inside = false;
  for (size_t i = 0; i < e.size(); ++i) {
    if (e[i] == '[' && (i == 0 || e[i - 1] != '\\')) {
      out += '[', inside = true;
      continue;
    }
    if (inside && e[i] == ']' && e[i - 1] != '\\') {
      out += ']', inside = false;
      continue;
    }
    if (e[i] == '\\' && i + 3 < e.size() && e[i + 1] == 'p' && e[i + 2] == '{') {
      size_t close = e.find('}', i + 3);
      if (close != std::string::npos && close <= i + 10) {
        std::string name = e.substr(i, close - i + 1);
        const Category* cat = nullptr;
        for (const Category& c : categories)
          if (name == c.name) cat = &c;
        if (cat) {
          if (!inside) out += '[';
          out += static_cast<char>(cat->unit);
          out += cat->ascii;
          if (!inside) out += ']';
          i = close;
          continue;
        }
      }
    }
    out += e[i];
  }
  return out;
}

// One fragment of the text as the hand-written splitters see it: outside it there is no code
// point (`none`) and no flag.
struct Fragment {
  static constexpr uint32_t none = 0xFFFFFFFF;
  const std::vector<uint32_t>& cpts;
  const std::vector<uint16_t>& flags;
  size_t ini, end, prev;
  Offsets& out;

  uint32_t cpt(size_t p) const { return p >= ini && p < end ? cpts[p] : none; }
  uint16_t fl(size_t p) const { return p >= ini && p < end ? flags[p] : 0; }
  size_t add(size_t to) {  // the piece from the last cut to `to`; its length
    size_t n = to - prev;
    if (n > 0) out.push_back(n);
    prev = to;
    return n;
  }
  static bool crlf(uint32_t c) { return c == '\r' || c == '\n'; }

  // 's 't 'm 'd 're 've 'll after the apostrophe at `pos`, case-folded or not: its length, or 0.
  size_t contraction(size_t pos, bool fold) const {
    if (cpt(pos) != '\'' || pos + 1 >= end) return 0;
    auto at = [&](size_t p) { return fold ? cpt_tolower(cpt(p)) : cpt(p); };
    uint32_t a = at(pos + 1);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (pos + 2 >= end) return 0;
    uint32_t b = at(pos + 2);
    return (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') ? 3 : 0;
  }

  // The whitespace tail shared by all of them: \s*[\r\n]+ (when `crlf_runs`), \s+(?!\S), \s+.
  // False when there is no whitespace at `pos`.
  bool whitespace(size_t& pos, bool crlf_runs) {
    size_t n = 0, last_crlf = 0;
    while (fl(pos + n) & cpt_whitespace) {
      if (crlf(cpt(pos + n))) last_crlf = pos + n + 1;
      ++n;
    }
    if (crlf_runs && last_crlf > 0) {
      pos = last_crlf;
    } else if (n > 1 && cpt(pos + n) != none) {
      pos += n - 1;
    } else if (n > 0) {
      pos += n;
    } else {
      return false;
    }
    add(pos);
    return true;
  }

  // \p{N}{1,3}: runs of digits cut every three.
  void digits3(size_t& pos) {
    size_t from = pos;
    while (fl(pos) & cpt_number) {
      if (++pos - from >= 3) add(pos), from = pos;
    }
    add(pos);
  }
};

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
void split_gpt2(Fragment& f) {
  const uint16_t word = cpt_whitespace | cpt_letter | cpt_number;
  for (size_t pos = f.ini; pos < f.end;) {
    uint32_t c = f.cpt(pos);
    uint16_t fl = f.fl(pos);
    if (size_t n = f.contraction(pos, false)) {
      pos += f.add(pos + n);
      continue;
    }
    uint16_t fl2 = c == ' ' ? f.fl(pos + 1) : fl;
    if (fl2 & (cpt_letter | cpt_number)) {
      uint16_t kind = fl2 & cpt_letter ? cpt_letter : cpt_number;
      pos += c == ' ';
      while (fl2 & kind) fl2 = f.fl(++pos);
      f.add(pos);
      continue;
    }
    if (!(fl2 & word) && fl2) {
      pos += c == ' ';
      while (!(fl2 & word) && fl2) fl2 = f.fl(++pos);
      f.add(pos);
      continue;
    }
    if (f.whitespace(pos, false)) continue;
    f.add(++pos);
  }
}

// Llama 3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// Qwen2: the same with \p{N} for \p{N}{1,3}; Qwen3.5: Qwen2 with marks as letters.
void split_llama3(Fragment& f, bool three_digits, bool marks) {
  const uint16_t letter = marks ? cpt_letter | cpt_mark : cpt_letter;
  const uint16_t word = cpt_whitespace | cpt_number | letter;
  for (size_t pos = f.ini; pos < f.end;) {
    uint32_t c = f.cpt(pos);
    uint16_t fl = f.fl(pos);
    if (size_t n = f.contraction(pos, true)) {
      pos += f.add(pos + n);
      continue;
    }
    if (!(Fragment::crlf(c) || (fl & cpt_number)) && ((fl & letter) || (f.fl(pos + 1) & letter))) {
      ++pos;
      while (f.fl(pos) & letter) ++pos;
      f.add(pos);
      continue;
    }
    if (fl & cpt_number) {
      if (three_digits) {
        f.digits3(pos);
      } else {
        f.add(++pos);
      }
      continue;
    }
    // llama.cpp asks the first code point's flags here, not the one after the space
    uint16_t fl2 = c == ' ' ? f.fl(pos + 1) : fl;
    if (!(fl2 & word) && fl) {
      pos += c == ' ';
      while (!(fl2 & word) && fl2) fl2 = f.fl(++pos);
      while (Fragment::crlf(f.cpt(pos))) ++pos;
      f.add(pos);
      continue;
    }
    if (f.whitespace(pos, true)) continue;
    f.add(++pos);
  }
}

// Kimi-K2: [\p{Han}]+ | letter words without Han, with an optional contraction | \p{N}{1,3} |
// ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
void split_kimi_k2(Fragment& f) {
  const uint16_t word = cpt_whitespace | cpt_letter | cpt_number;
  auto letter_not_han = [&](size_t p) { return (f.fl(p) & cpt_letter) && !cpt_is_han(f.cpt(p)); };
  for (size_t pos = f.ini; pos < f.end;) {
    uint32_t c = f.cpt(pos);
    uint16_t fl = f.fl(pos);
    if (cpt_is_han(c)) {
      while (cpt_is_han(f.cpt(pos))) ++pos;
      f.add(pos);
      continue;
    }
    bool leading_ok = !(Fragment::crlf(c) || (fl & (cpt_letter | cpt_number)));
    if (letter_not_han(pos) || (leading_ok && letter_not_han(pos + 1))) {
      bool leading = false, letters = false;
      if (leading_ok) leading = true, ++pos;
      while (letter_not_han(pos)) letters = true, ++pos;
      if (letters || (!leading && letter_not_han(pos))) {
        if (!letters) ++pos;
        while (letter_not_han(pos)) ++pos;
        pos += f.contraction(pos, true);
        f.add(pos);
        continue;
      }
      if (leading) --pos;
    }
    if (fl & cpt_number) {
      f.digits3(pos);
      continue;
    }
    uint16_t fl2 = c == ' ' ? f.fl(pos + 1) : fl;
    if (!(fl2 & word) && fl2) {
      pos += c == ' ';
      while (!(fl2 & word) && fl2) fl2 = f.fl(++pos);
      while (Fragment::crlf(f.cpt(pos))) ++pos;
      f.add(pos);
      continue;
    }
    if (f.whitespace(pos, true)) continue;
    f.add(++pos);
  }
}

// AFMoE's \p{AFMoE_digits} (and tiny_aya's \d{1,3}(?=(?:\d{3})*\b)): a run of digits in
// groups of three from the right. As in llama.cpp, the first group also takes whatever
// came before it since the last cut.
void split_digit_groups(Fragment& f) {
  for (size_t pos = f.ini; pos < f.end;) {
    if (!(f.fl(pos) & cpt_number)) {
      ++pos;
      continue;
    }
    size_t from = pos;
    while (pos < f.end && (f.fl(pos) & cpt_number)) ++pos;
    size_t n = pos - from, at = from;
    if (n % 3) f.add(at + n % 3), at += n % 3;
    while (at < pos) f.add(at + 3), at += 3;
  }
  if (f.prev < f.end) f.add(f.end);
}

// [^\n]+|[\n]+
void split_newlines(Fragment& f) {
  for (size_t pos = f.ini; pos < f.end;) {
    bool nl = f.cpts[pos] == '\n';
    while (pos < f.end && (f.cpts[pos] == '\n') == nl) ++pos;
    f.add(pos);
  }
}

// The collapsed text's code units as the expressions' classes see them (each is below 0x100:
// ASCII or a stand-in): \s is ASCII's (with U+000B, the stand-in for other whitespace).
bool unit_space(uint32_t u) { return (u >= '\t' && u <= '\r') || u == ' '; }
bool unit_letter(uint32_t u) { return (u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || u == 0xD2; }
bool unit_number(uint32_t u) { return (u >= '0' && u <= '9') || u == 0xD1; }

// Tekken's, GPT-4o's and granite-embed-multi's expression, which llama.cpp runs on std::regex:
//   P?U*L+K?|P?U+L*K?|\p{N}{1,digits}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
// P = [^\r\n\p{L}\p{N}], K the contractions (tekken has none), U a letter (or mark) that is
// not a-z, L one that is not A-Z (written ((?=[\p{L}])([^a-z])) and so on). A backtracking
// matcher keeps a frame for each letter of a run and gives up past its limits; this is the
// match it would find, alternative by alternative, in one pass: U*L+ backtracks U* to the
// last position of the run where an L stands, and none of the later parts can fail.
struct CaseWords {
  bool marks;         // [\p{L}\p{M}] in the lookaheads
  bool contractions;  // K? after each letter alternative
  size_t digits;      // \p{N}{1,digits}
  // EXAONE-MoE's instead: K|P?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|...
  // (the word is greedy with nothing after it that can fail: letters with their marks, and
  // single spaces each followed by a letter)
  bool spaced_words = false;
};

void split_case_words(const std::vector<uint32_t>& units, size_t ini, size_t end, const CaseWords& w, Offsets& out) {
  constexpr size_t fail = SIZE_MAX;
  constexpr uint32_t none = 0xFFFFFFFF;  // past the fragment: no class holds it
  auto at = [&](size_t p) { return p < end ? units[p] : none; };
  auto letter = [&](uint32_t u) { return unit_letter(u) || (w.marks && u == 0xD4); };
  auto upper = [&](uint32_t u) { return letter(u) && !(u >= 'a' && u <= 'z'); };
  auto lower = [&](uint32_t u) { return letter(u) && !(u >= 'A' && u <= 'Z'); };
  auto prefix = [&](uint32_t u) { return u != none && u != '\r' && u != '\n' && !unit_letter(u) && !unit_number(u); };
  auto other = [&](uint32_t u) { return u != none && !unit_space(u) && !unit_letter(u) && !unit_number(u); };
  auto contraction = [&](size_t p) -> size_t {  // (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])
    if (!w.contractions || at(p) != '\'') return 0;
    auto fold = [&](size_t q) { uint32_t u = at(q); return u >= 'A' && u <= 'Z' ? u + 32 : u; };
    uint32_t a = fold(p + 1), b = fold(p + 2);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    return (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') ? 3 : 0;
  };
  // \s*[\r\n]+ (or \s*[\r\n]) to the run's last CR or LF, else \s+(?!\S), else \s+
  auto whitespace = [&](size_t pos) {
    size_t n = 0, last_crlf = fail;
    for (; unit_space(at(pos + n)); ++n)
      if (at(pos + n) == '\r' || at(pos + n) == '\n') last_crlf = pos + n;
    return last_crlf != fail ? last_crlf + 1 : n > 1 && pos + n < end ? pos + n - 1 : pos + n;
  };
  auto upper_lower = [&](size_t s) {  // U*L+K? from s: its end, or fail
    size_t last = fail, p = s;
    for (; upper(at(p)); ++p)
      if (lower(at(p))) last = p;
    if (lower(at(p))) last = p;
    if (last == fail) return fail;
    for (p = last; lower(at(p));) ++p;
    return p + contraction(p);
  };
  auto upper_then_lower = [&](size_t s) {  // U+L*K? from s
    if (!upper(at(s))) return fail;
    size_t p = s;
    while (upper(at(p))) ++p;
    while (lower(at(p))) ++p;
    return p + contraction(p);
  };
  auto spaced_word = [&](size_t s) {  // (?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+ from s
    if (!unit_letter(at(s))) return fail;
    size_t p = s;
    for (;;) {
      if (unit_letter(at(p))) {
        ++p;
      } else if (at(p) == ' ' && unit_letter(at(p + 1))) {
        p += 2;
      } else {
        return p;
      }
      while (at(p) == 0xD4) ++p;
    }
  };
  for (size_t pos = ini; pos < end && w.spaced_words;) {
    size_t to = w.contractions && contraction(pos) ? pos + contraction(pos) : fail;
    if (to == fail && prefix(at(pos))) to = spaced_word(pos + 1);
    if (to == fail) to = spaced_word(pos);
    if (to == fail && unit_number(at(pos))) to = pos + 1;
    if (to == fail) {
      size_t s = at(pos) == ' ' && other(at(pos + 1)) ? pos + 1 : pos;
      if (other(at(s))) {
        for (to = s; other(at(to));) ++to;
        to += at(to) == '\r' || at(to) == '\n' || at(to) == '/';
      }
    }
    if (to == fail) to = whitespace(pos);
    out.push_back(to - pos);
    pos = to;
  }
  for (size_t pos = ini; pos < end && !w.spaced_words;) {
    const bool p_first = prefix(at(pos));
    size_t to = p_first ? upper_lower(pos + 1) : fail;
    if (to == fail) to = upper_lower(pos);
    if (to == fail && p_first) to = upper_then_lower(pos + 1);
    if (to == fail) to = upper_then_lower(pos);
    if (to == fail && unit_number(at(pos))) {
      to = pos + 1;
      while (to - pos < w.digits && unit_number(at(to))) ++to;
    }
    if (to == fail) {
      size_t s = at(pos) == ' ' && other(at(pos + 1)) ? pos + 1 : pos;
      if (other(at(s))) {
        for (to = s; other(at(to));) ++to;
        while (at(to) == '\r' || at(to) == '\n' || at(to) == '/') ++to;
      }
    }
    if (to == fail) to = whitespace(pos);
    // every code unit is a letter, a number, whitespace or other: some alternative matched
    out.push_back(to - pos);
    pos = to;
  }
}

// Superbpe's (?=(\d{3})+(?!\d)) (\d ASCII's): an empty match, so a cut, before each digit
// that leaves a multiple of three digits to the end of its run.
void split_digit_triples(Fragment& f) {
  auto digit = [&](size_t p) { uint32_t c = f.cpt(p); return c >= '0' && c <= '9'; };
  for (size_t pos = f.ini; pos < f.end;) {
    if (!digit(pos)) {
      ++pos;
      continue;
    }
    size_t from = pos;
    while (digit(pos)) ++pos;
    for (size_t cut = from + (pos - from) % 3; cut < pos; cut += 3) f.add(cut);
  }
  f.add(f.end);
}

// What a match needs that outlives one split: the JIT stack (the default 32 KiB is small for
// long pieces), per thread as PCRE2 wants.
struct MatchEnv {
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, nullptr);
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  MatchEnv() {
    if (context && stack) pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~MatchEnv() {
    pcre2_match_data_free(data);
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
  }
  MatchEnv(const MatchEnv&) = delete;
  MatchEnv& operator=(const MatchEnv&) = delete;
};

MatchEnv& match_env() {
  thread_local MatchEnv env;
  if (!env.context || !env.data) throw Error("tokenizer.ggml.pre", "out of memory for the pre-tokenizer");
  return env;
}

}  // namespace

struct PreTokenizer::Step {
  enum Kind { gpt2, llama3, qwen2, qwen35, kimi_k2, digit_groups, newlines, tekken, gpt4o, granite_emb, exaone_moe, digit_triples, regex } kind = regex;
  bool collapsed = false;
  pcre2_code* code = nullptr;
  ~Step() { pcre2_code_free(code); }

  // std::regex_iterator over one fragment: the matches and the gaps between them are pieces
  // (empty ones dropped: they hold no code point and cut nothing).
  void match(const std::vector<uint32_t>& units, size_t ini, size_t len, Offsets& out) const {
    MatchEnv& env = match_env();
    PCRE2_SPTR subject = reinterpret_cast<PCRE2_SPTR>(units.data() + ini);
    size_t at = 0, prev = 0;
    uint32_t options = 0;
    for (;;) {
      int rc = pcre2_match(code, subject, len, at, options, env.data, env.context);
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT) rc = pcre2_match(code, subject, len, at, options | PCRE2_NO_JIT, env.data, env.context);
      if (rc == PCRE2_ERROR_NOMATCH) {
        // After an empty match: no longer one here, so search again one code point on.
        if (options == 0 || at >= len) break;
        options = 0, ++at;
        continue;
      }
      if (rc < 0) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(rc, msg, 256);
        std::string text;
        for (PCRE2_UCHAR* p = msg; *p; ++p) text += static_cast<char>(*p);
        throw Error("tokenizer.ggml.pre", "pre-tokenizer regex failed: " + text);
      }
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(env.data);
      size_t from = ov[0], to = ov[1];
      if (from > prev) out.push_back(from - prev);
      if (to > from) out.push_back(to - from);
      prev = to, at = to;
      if (from == to) {
        if (to >= len) break;
        options = PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED;  // a non-empty match here, or move on
      } else {
        options = 0;
      }
    }
    if (prev < len) out.push_back(len - prev);
  }
};

PreTokenizer::PreTokenizer(const std::vector<std::string>& exprs, bool byte_encode) : byte_encode_(byte_encode) {
  using K = Step::Kind;
  static const std::string contractions = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
  static const std::string tail = "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  static const std::string tekken =
      "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|"
      "\\p{N}" + tail;
  static const std::string gpt4o = "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+" + contractions +
      "?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*" + contractions + "?|\\p{N}{1,3}" + tail;
  static const std::string granite_emb =
      "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+" + contractions +
      "?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*" + contractions + "?|\\p{N}{1,3}" + tail;
  static const std::string exaone_moe = contractions +
      "|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+";
  static const std::vector<std::pair<std::string, K>> custom = {
      {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)", K::gpt2},
      {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", K::llama3},
      {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", K::llama3},
      {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", K::qwen2},
      {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", K::qwen35},
      {"\\p{Han}+", K::kimi_k2},
      {"\\p{AFMoE_digits}", K::digit_groups},
      {"[^\\n]+|[\\n]+", K::newlines},
      {"\\d{1,3}(?=(?:\\d{3})*\\b)", K::digit_groups},
      // not llama.cpp's hand-written ones: expressions its std::regex runs, matched here in one pass
      {tekken, K::tekken},
      {gpt4o, K::gpt4o},
      {granite_emb, K::granite_emb},
      {exaone_moe, K::exaone_moe},
      {"(?=(\\d{3})+(?!\\d))", K::digit_triples},
  };
  for (const std::string& e : exprs) {
    auto step = std::make_unique<Step>();
    for (const auto& [text, kind] : custom)
      if (e == text) step->kind = kind;
    if (step->kind == K::regex) {
      std::vector<uint32_t> units;
      if (uses_category(e)) {
        step->collapsed = collapse_ = true;
        for (unsigned char ch : e) {
          if (ch >= 128) throw Error("tokenizer.ggml.pre", "Regex includes both unicode categories and non-ASCII characters - not supported");
        }
        for (unsigned char ch : collapse_expr(e)) units.push_back(ch);
      } else {
        units = cpts_from_utf8(e);
      }
      int err = 0;
      PCRE2_SIZE where = 0;
      // DOLLAR_ENDONLY: ECMAScript's $ is the end only, never before a final newline.
      step->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(units.data()), units.size(), PCRE2_DOLLAR_ENDONLY, &err, &where, nullptr);
      if (!step->code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, 256);
        std::string why;
        for (PCRE2_UCHAR* p = msg; *p; ++p) why += static_cast<char>(*p);
        throw Error("tokenizer.ggml.pre", "Failed to process regex: '" + e + "': " + why + " at " + std::to_string(where));
      }
      pcre2_jit_compile(step->code, PCRE2_JIT_COMPLETE);  // the interpreter stands in if JIT fails
    }
    steps_.push_back(std::move(step));
  }
}

PreTokenizer::~PreTokenizer() = default;

PreTokenizer::Words PreTokenizer::split(std::string_view text) const {
  if (text.empty()) return {};
  bool verbatim = true;
  const std::vector<uint32_t> cpts = cpts_from_utf8(text, &verbatim);
  const std::vector<uint16_t> flags = cpts_flags(cpts);
  std::vector<uint32_t> collapsed, wide;
  auto units_of = [&](bool collapse_them) -> const std::vector<uint32_t>& {  // made once, when first asked
    std::vector<uint32_t>& units = collapse_them ? collapsed : wide;
    if (units.empty()) {
      units.resize(cpts.size());
      for (size_t i = 0; i < cpts.size(); ++i) {
        if (collapse_them) {
          units[i] = collapse(cpts[i], flags[i]);
        } else {
          // std::wregex's \s is ASCII-only: llama.cpp shows it other whitespace as U+000B
          units[i] = cpts[i] > 0x7f && (flags[i] & cpt_whitespace) ? collapsed_space : cpts[i];
        }
      }
    }
    return units;
  };
  Offsets offsets = {cpts.size()};
  for (const auto& step : steps_) {
    Offsets next;
    next.reserve(offsets.size());
    size_t start = 0;
    for (size_t len : offsets) {
      Fragment f{cpts, flags, start, start + len, start, next};
      switch (step->kind) {
        case Step::gpt2: split_gpt2(f); break;
        case Step::llama3: split_llama3(f, true, false); break;
        case Step::qwen2: split_llama3(f, false, false); break;
        case Step::qwen35: split_llama3(f, false, true); break;
        case Step::kimi_k2: split_kimi_k2(f); break;
        case Step::digit_groups: split_digit_groups(f); break;
        case Step::newlines: split_newlines(f); break;
        case Step::tekken: split_case_words(units_of(true), start, start + len, {false, false, 1}, next); break;
        case Step::gpt4o: split_case_words(units_of(true), start, start + len, {false, true, 3}, next); break;
        case Step::granite_emb: split_case_words(units_of(true), start, start + len, {true, true, 3}, next); break;
        case Step::exaone_moe: split_case_words(units_of(true), start, start + len, {false, true, 1, true}, next); break;
        case Step::digit_triples: split_digit_triples(f); break;
        case Step::regex: step->match(units_of(step->collapsed), start, len, next); break;
      }
      start += len;
    }
    offsets = std::move(next);
  }

  // Every code point is encoded first, so one past U+10FFFF anywhere fails the text, as in llama.cpp.
  for (uint32_t c : cpts)
    if (c > 0x10ffff) throw Error("", "invalid codepoint");
  // A word's UTF-8 is its bytes in the text when each code point was decoded from the bytes
  // it encodes to (nearly always); otherwise from the code points encoded again (an invalid
  // byte became U+FFFD, an overlong form is shortened).
  std::string reencoded;
  if (!verbatim) {
    for (uint32_t c : cpts) append_utf8(reencoded, c);
    text = reencoded;
  }

  // GPT-2's byte-to-unicode map, each byte's UTF-8 (one or two bytes: all are below U+0800).
  struct Mapped {
    char b[2];
    uint8_t n;
  };
  static const std::array<Mapped, 256> byte_map = [] {
    std::array<Mapped, 256> m{};
    for (unsigned b = 0; b < 256; ++b) {
      const std::string u = byte_to_utf8(static_cast<uint8_t>(b));
      m[b].n = static_cast<uint8_t>(u.size());
      for (size_t k = 0; k < u.size() && k < 2; ++k) m[b].b[k] = u[k];
    }
    return m;
  }();
  Words words;
  words.ends.reserve(offsets.size());
  words.bytes.resize(byte_encode_ ? 2 * text.size() : text.size());
  char* out = words.bytes.data();
  size_t at = 0, cpt = 0;
  for (size_t len : offsets) {
    size_t n = 0;
    for (size_t i = cpt; i < cpt + len; ++i) n += cpt_utf8_len(cpts[i]);
    if (!byte_encode_) {
      std::memcpy(out, text.data() + at, n);
      out += n;
    } else {
      for (size_t k = at; k < at + n; ++k) {
        const Mapped& m = byte_map[static_cast<uint8_t>(text[k])];
        out[0] = m.b[0], out[1] = m.b[1];
        out += m.n;
      }
    }
    words.ends.push_back(static_cast<size_t>(out - words.bytes.data()));
    at += n, cpt += len;
  }
  words.bytes.resize(static_cast<size_t>(out - words.bytes.data()));
  return words;
}

}  // namespace ggufkit::tokenizer
