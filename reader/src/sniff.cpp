#include "ggufkit/sniff.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <string>
#include <utility>

namespace ggufkit {

namespace {

constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;  // the safetensors crate's own limit
constexpr size_t kZerosAtLeast = 4096;  // fewer zeros than this (in a longer file) prove nothing

// Little-endian reads; the caller has checked the bounds.
uint32_t u16le(const uint8_t* p) { return p[0] | p[1] << 8; }
uint32_t u32le(const uint8_t* p) { return u16le(p) | uint32_t(u16le(p + 2)) << 16; }
uint64_t u64le(const uint8_t* p) { return u32le(p) | uint64_t(u32le(p + 4)) << 32; }

char lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

bool starts_nocase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (lower(s[i]) != lower(prefix[i])) return false;
  return true;
}

bool ends_nocase(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && starts_nocase(s.substr(s.size() - suffix.size()), suffix);
}

size_t find_nocase(std::string_view s, std::string_view what, size_t from = 0) {
  for (size_t i = from; i + what.size() <= s.size(); ++i)
    if (starts_nocase(s.substr(i), what)) return i;
  return std::string_view::npos;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (lower(c) >= 'a' && lower(c) <= 'f'); }

std::string_view skip_space(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  return s;
}

void put_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xc0 | cp >> 6);
    out += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += char(0xe0 | cp >> 12);
    out += char(0x80 | (cp >> 6 & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  } else {
    out += char(0xf0 | cp >> 18);
    out += char(0x80 | (cp >> 12 & 0x3f));
    out += char(0x80 | (cp >> 6 & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  }
}

// One UTF-8 character at the front of `s`: its code point and length, or length 0 when the
// bytes are no valid UTF-8 (cut, overlong, a surrogate).
std::pair<uint32_t, size_t> utf8_at(std::string_view s) {
  auto b = [&](size_t i) { return uint8_t(s[i]); };
  uint8_t c = b(0);
  if (c < 0x80) return {c, 1};
  size_t len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? (c < 0xf0 ? 3 : 0) : c >= 0xc2 ? 2 : 0;
  if (len == 0 || s.size() < len) return {0, 0};
  uint32_t cp = c & (0x7f >> len);
  for (size_t i = 1; i < len; ++i) {
    if ((b(i) & 0xc0) != 0x80) return {0, 0};
    cp = cp << 6 | (b(i) & 0x3f);
  }
  static constexpr uint32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kLeast[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return {0, 0};
  return {cp, len};
}

// Text from the file as a message may show it: runs of white space made one space, control
// characters (C0, C1, the bidirectional overrides) and bytes that are no UTF-8 made '?', so
// that a file cannot write to the user's terminal; at most `max` bytes, then "...".
std::string shown(std::string_view text, size_t max) {
  std::string out;
  bool space = false;
  while (!text.empty()) {
    auto [cp, len] = utf8_at(text);
    std::string_view piece = len ? text.substr(0, len) : "?";
    text.remove_prefix(len ? len : 1);
    if (len == 1 && is_space(char(cp))) {
      space = !out.empty();
      continue;
    }
    if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) || (cp >= 0x202a && cp <= 0x202e) ||
        (cp >= 0x2066 && cp <= 0x2069))
      piece = "?";
    if (out.size() + space + piece.size() > max) return out + "...";
    if (space) out += ' ';
    space = false;
    out += piece;
  }
  return out;
}

std::string quoted(std::string_view text, size_t max) { return "\"" + shown(text, max) + "\""; }

// Up to 8 bytes as a program shows them: 'GG.F' (47 47 00 46).
std::string bytes_shown(std::span<const uint8_t> bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text, hex;
  for (uint8_t c : bytes.first(std::min<size_t>(bytes.size(), 8))) {
    text += c >= 0x20 && c < 0x7f ? char(c) : '.';
    if (!hex.empty()) hex += ' ';
    hex += kHex[c >> 4];
    hex += kHex[c & 15];
  }
  return "'" + text + "' (" + hex + ")";
}

// A word for a POSIX shell: as it is when it needs no quoting, else in single quotes.
std::string shell_word(std::string_view word) {
  bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) ||
           std::string_view("._/+-:@%,=").find(c) != std::string_view::npos;
  });
  if (plain) return std::string(word);
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The strings that are keys of the top-level object of a JSON text, in order, read from as
// much of the text as there is: a count and the first `max` of them (raw, escapes kept).
// `whole` says whether the object ended within the text. A scan of depth and strings only:
// it allocates nothing by the text, so a header that claims 100 MB costs what the head holds.
struct TopKeys {
  std::array<std::string_view, 3> first;
  size_t shown = 0, count = 0;
  bool whole = false;
};

TopKeys top_keys(std::string_view json, std::string_view skip) {
  TopKeys keys;
  uint64_t depth = 0;
  bool in_string = false, escaped = false, is_key = false, expect_key = false, object = false;
  size_t start = 0;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
        std::string_view key = json.substr(start, i - start);
        if (is_key && key != skip) {
          if (keys.shown < keys.first.size()) keys.first[keys.shown++] = key;
          ++keys.count;
        }
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      is_key = depth == 1 && object && expect_key;
      expect_key = false;
      start = i + 1;
    } else if (c == '{' || c == '[') {
      if (++depth == 1) object = c == '{';
      expect_key = depth == 1;
    } else if (c == '}' || c == ']') {
      if (depth == 0 || --depth == 0) {
        keys.whole = true;
        break;
      }
    } else if (c == ',') {
      expect_key = depth == 1;
    }
  }
  return keys;
}

std::string keys_list(const TopKeys& keys) {
  std::string out;
  for (size_t i = 0; i < keys.shown; ++i) out += (i ? ", " : "") + shown(keys.first[i], 64);
  return out;
}

// The value of the first "key": "string" in a JSON text for one of `names`, in their order
// of preference, decoded (escapes read, \uXXXX made UTF-8) and bounded.
std::optional<std::string> json_string(std::string_view json, std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    std::string pattern = "\"" + std::string(name) + "\"";
    for (size_t at = json.find(pattern); at != std::string_view::npos; at = json.find(pattern, at + 1)) {
      std::string_view rest = skip_space(json.substr(at + pattern.size()));
      if (rest.empty() || rest.front() != ':') continue;
      rest = skip_space(rest.substr(1));
      if (rest.empty() || rest.front() != '"') continue;
      std::string value;
      for (size_t i = 1; i < rest.size() && value.size() < 1024 && rest[i] != '"'; ++i) {
        if (rest[i] != '\\' || i + 1 >= rest.size()) {
          value += rest[i];
          continue;
        }
        char e = rest[++i];
        if (e == 'u' && i + 4 < rest.size() && std::all_of(rest.data() + i + 1, rest.data() + i + 5, is_hex)) {
          uint32_t cp = std::stoul(std::string(rest.substr(i + 1, 4)), nullptr, 16);
          put_utf8(value, cp >= 0xd800 && cp <= 0xdfff ? '?' : cp);  // a lone half of a pair
          i += 4;
        } else {
          value += e == 'n' || e == 't' || e == 'r' || e == 'b' || e == 'f' ? ' ' : e;
        }
      }
      return shown(value, 120);
    }
  }
  return std::nullopt;
}

// HTML's few entities a title uses; others stay as written.
std::string unentity(std::string_view text) {
  static constexpr std::pair<std::string_view, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&#39;", '\''}, {"&#x27;", '\''}};
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    bool done = false;
    for (auto [entity, c] : kEntities)
      if (starts_nocase(text.substr(i), entity)) {
        out += c;
        i += entity.size() - 1;
        done = true;
        break;
      }
    if (!done) out += text[i];
  }
  return out;
}

// The text of the first <tag>...</tag> in the head, if both ends are there.
std::optional<std::string_view> element(std::string_view text, std::string_view tag) {
  size_t open = find_nocase(text, "<" + std::string(tag));
  if (open == std::string_view::npos) return std::nullopt;
  size_t after = open + 1 + tag.size();
  if (after < text.size() && text[after] != '>' && !is_space(text[after])) return std::nullopt;  // <titles>
  size_t begin = text.find('>', after);
  if (begin == std::string_view::npos) return std::nullopt;
  size_t end = find_nocase(text, "</" + std::string(tag), begin);
  if (end == std::string_view::npos) return std::nullopt;
  return text.substr(begin + 1, end - begin - 1);
}

NotGguf made(std::string kind, std::string what, std::string remedy) {
  return {std::move(kind), std::move(what), std::move(remedy)};
}

// A file cut by bytes into parts: NAME.gguf.partKofN (any case), split(1)'s NAME.gguf.aa,
// .ab, ... and NAME.gguf-split-a, -b, ... Only part 1 starts as the file does, so the name
// is what tells the others.
std::optional<NotGguf> split_part(std::string_view name) {
  static constexpr std::string_view kNotShard = "a file cut into pieces by bytes (not a gguf-split shard)";
  if (size_t at = name.size(); at > 0) {
    // .partKofN at the end, digits as written (a zero-padded K keeps its width).
    size_t n_begin = at;
    while (n_begin > 0 && is_digit(name[n_begin - 1])) --n_begin;
    size_t of = n_begin >= 2 ? n_begin - 2 : 0;
    size_t k_end = of;
    size_t k_begin = k_end;
    while (k_begin > 0 && is_digit(name[k_begin - 1])) --k_begin;
    std::string_view n_text = name.substr(n_begin), k_text = name.substr(k_begin, k_end - k_begin);
    if (!n_text.empty() && n_text.size() <= 6 && !k_text.empty() && k_text.size() <= 6 &&
        starts_nocase(name.substr(of), "of") && k_begin >= 5 && starts_nocase(name.substr(k_begin - 5), ".part") &&
        ends_nocase(name.substr(0, k_begin - 5), ".gguf")) {
      uint32_t k = std::stoul(std::string(k_text)), n = std::stoul(std::string(n_text));
      std::string base(name.substr(0, k_begin - 5));
      std::string_view part_word = name.substr(k_begin - 4, 4);  // "part" as the name spells it
      std::string_view of_word = name.substr(of, 2);
      if (k >= 1 && n >= 1 && k <= n) {
        size_t width = k_text.size() > 1 && k_text[0] == '0' ? k_text.size() : 0;
        auto number = [&](uint32_t i) {
          std::string digits = std::to_string(i);
          return std::string(digits.size() < width ? width - digits.size() : 0, '0') + digits;
        };
        std::string suffix = std::string(of_word) + std::string(n_text);
        std::string parts;
        if (n <= 8) {
          for (uint32_t i = 1; i <= n; ++i)
            parts += shell_word(base) + "." + std::string(part_word) + number(i) + suffix + " ";
        } else {  // bash's {1..N} counts in order, where a glob would put part10 before part2
          parts = shell_word(base) + "." + std::string(part_word) + "{" + number(1) + ".." + number(n) + "}" +
                  suffix + " ";
        }
        return made("split_part",
                    "part " + std::to_string(k) + " of " + std::to_string(n) + " of " + std::string(kNotShard),
                    "join the parts with cat: cat " + parts + "> " + shell_word(base));
      }
    }
  }
  // split(1)'s suffixes aa, ab, ... (only a?: a suffix like .gz is a compressor's) and
  // TheBloke's -split-a, -split-b, ...
  struct Style { std::string_view sep; size_t letters; std::string_view glob; };
  for (Style style : {Style{".", 2, "a[a-z]"}, Style{"-split-", 1, "[a-z]"}}) {
    size_t len = style.sep.size() + style.letters;
    if (name.size() <= len) continue;
    std::string_view base = name.substr(0, name.size() - len), tail = name.substr(name.size() - len);
    std::string_view letters = tail.substr(style.sep.size());
    if (!ends_nocase(base, ".gguf") || !tail.starts_with(style.sep) ||
        !std::all_of(letters.begin(), letters.end(), [](char c) { return c >= 'a' && c <= 'z'; }) ||
        (style.letters == 2 && letters[0] != 'a'))
      continue;
    uint32_t k = letters.back() - 'a' + 1;
    return made("split_part",
                "part " + std::to_string(k) + " (suffix " + std::string(tail) + ") of " + std::string(kNotShard),
                "join the parts with cat, whose glob takes them in order: cat " + shell_word(base) +
                    std::string(style.sep) + std::string(style.glob) + " > " + shell_word(base));
  }
  return std::nullopt;
}

std::optional<NotGguf> lfs_pointer(std::string_view text) {
  if (!text.starts_with("version https://git-lfs.github.com/spec/") &&
      !text.starts_with("version https://hawser.github.com/spec/"))  // the spec's first name
    return std::nullopt;
  std::string oid = "no oid line", size = "no size line";
  text = text.substr(0, 1024);  // a pointer is smaller than this by its spec
  while (!text.empty()) {
    size_t end = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.starts_with("oid sha256:")) {
      std::string_view hex = line.substr(11);
      bool all_hex = std::all_of(hex.begin(), hex.end(), is_hex);
      oid = "oid sha256:" + shown(hex, 64);
      if (!all_hex || hex.size() != 64) oid += all_hex && hex.size() < 64 ? " (cut short)" : " (not 64 hex digits)";
    } else if (line.starts_with("size ")) {
      std::string_view digits = line.substr(5);
      bool number = !digits.empty() && digits.size() <= 20 && std::all_of(digits.begin(), digits.end(), is_digit);
      size = number ? "size " + std::string(digits) + " bytes" : "size " + quoted(digits, 32) + " (not a number)";
    }
  }
  return made("git_lfs_pointer", "a Git LFS pointer (" + oid + ", " + size + "), not the file it stands for",
              "run git lfs pull in the repository (or download the file with its /resolve/ URL)");
}

std::optional<NotGguf> legacy_ggml(std::span<const uint8_t> head) {
  if (head.size() < 4) return std::nullopt;
  uint32_t magic = u32le(head.data());
  std::optional<uint32_t> version;
  if (head.size() >= 8) version = u32le(head.data() + 4);
  auto versioned = [&](std::string_view name, uint32_t last) {
    std::string text = "a " + std::string(name) + " file (magic '" + std::string(name == "GGMF" ? "ggmf" : "ggjt") + "', ";
    if (!version) return text + "cut short before its version)";
    text += "version " + std::to_string(*version);
    if (*version < 1 || *version > last) text += ", not one llama.cpp wrote";
    return text + "), the format llama.cpp read before GGUF (August 2023)";
  };
  static constexpr std::string_view kConvert =
      "convert it with llama.cpp's convert_llama_ggml_to_gguf.py (or download a GGUF build of the model)";
  switch (magic) {
    case 0x67676d6c:  // "lmgg" on disk
      return made("legacy_ggml",
                  "an unversioned GGML file (magic 'ggml'), the format llama.cpp read before GGUF and "
                  "whisper.cpp's models still use",
                  "for a llama.cpp model, " + std::string(kConvert) + "; a whisper.cpp model is for whisper.cpp");
    case 0x67676d66:  // "fmgg"
      return made("legacy_ggml", versioned("GGMF", 1), std::string(kConvert));
    case 0x67676a74:  // "tjgg"
      return made("legacy_ggml", versioned("GGJT", 3), std::string(kConvert));
    case 0x67676c61:  // "algg": a LoRA adapter of those days
      return made("legacy_ggml", "a LoRA adapter in the GGML format before GGUF (magic 'ggla')",
                  "convert the adapter from its original with llama.cpp's convert_lora_to_gguf.py");
  }
  return std::nullopt;
}

std::optional<NotGguf> safetensors(std::span<const uint8_t> head, std::optional<uint64_t> size) {
  if (head.size() < 9 || head[8] != '{') return std::nullopt;
  uint64_t n = u64le(head.data());
  if (n < 2 || n > kMaxSafetensorsHeader) return std::nullopt;
  std::string_view header(reinterpret_cast<const char*>(head.data()) + 8,
                          std::min<uint64_t>(n, head.size() - 8));
  // The tensors' names say what the model is; __metadata__ is no tensor and is left out.
  TopKeys keys = top_keys(header, "__metadata__");
  std::string facts = "header of " + std::to_string(n) + " bytes";
  if (size && *size < 8 + n) facts += ", more than the file's " + std::to_string(*size) + ": cut short";
  if (keys.whole && header.size() == n)
    facts += "; " + std::to_string(keys.count) + (keys.count == 1 ? " tensor" : " tensors") +
             (keys.shown ? ", first: " + keys_list(keys) : "");
  else if (keys.shown)
    facts += "; first tensors: " + keys_list(keys);
  return made("safetensors", "a safetensors file (" + facts + ")",
              "convert it with llama.cpp's convert_hf_to_gguf.py");
}

// A zip archive: PyTorch's torch.save (since 1.6) writes one holding ARCHIVE/data.pkl and
// ARCHIVE/data/0, 1, ...; the local headers of the entries within the head tell.
std::optional<NotGguf> zip(std::span<const uint8_t> head) {
  static constexpr uint8_t kLocal[] = {'P', 'K', 3, 4};
  auto local_at = [&](uint64_t at) {
    return at + 30 <= head.size() && std::equal(kLocal, kLocal + 4, head.begin() + at);
  };
  if (!local_at(0)) {
    if (head.size() >= 4 && std::equal(kLocal, kLocal + 4, head.begin()))
      return made("zip", "a zip archive, cut short in its first entry's header",
                  "download the file again, then unzip it");
    return std::nullopt;
  }
  std::string_view first, torch, gguf;
  uint64_t at = 0;
  for (int entry = 0; entry < 16 && local_at(at); ++entry) {
    uint32_t flags = u16le(&head[at + 6]), packed = u32le(&head[at + 18]);
    uint32_t name_len = u16le(&head[at + 26]), extra_len = u16le(&head[at + 28]);
    if (at + 30 + name_len > head.size()) break;
    std::string_view name(reinterpret_cast<const char*>(&head[at + 30]), name_len);
    if (entry == 0) first = name;
    if (torch.empty() && (name.ends_with("data.pkl") || name.find("/data/") != std::string_view::npos ||
                          name.starts_with("archive/")))
      torch = name;
    if (gguf.empty() && ends_nocase(name, ".gguf")) gguf = name;
    if ((flags & 8) || packed == 0xffffffff) break;  // sizes after the data, or in zip64 fields
    at += 30 + uint64_t(name_len) + extra_len + packed;
  }
  if (!torch.empty())
    return made("pytorch_zip", "a PyTorch checkpoint (a zip archive holding " + quoted(torch, 80) + ")",
                "convert it with llama.cpp's convert_hf_to_gguf.py");
  if (!gguf.empty())
    return made("zip", "a zip archive holding a GGUF file, " + quoted(gguf, 80),
                "unzip it and open the .gguf file inside");
  return made("zip", "a zip archive (first entry " + quoted(first, 80) + ")",
              "unzip it and open the GGUF file inside, if there is one");
}

std::optional<NotGguf> pickle(std::span<const uint8_t> head) {
  if (head.size() < 2 || head[0] != 0x80 || head[1] < 2 || head[1] > 5) return std::nullopt;
  // torch.save before 1.6 pickled its magic number 0x1950a86a20f9469cfc6c first (a LONG1).
  static constexpr uint8_t kTorch[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
  std::string remedy = "convert it with llama.cpp's convert_hf_to_gguf.py";
  if (head.size() >= sizeof kTorch && std::equal(kTorch, kTorch + sizeof kTorch, head.begin()))
    return made("pytorch_pickle", "a PyTorch checkpoint in torch.save's format before PyTorch 1.6 (a pickle)", remedy);
  return made("pytorch_pickle",
              "a Python pickle (protocol " + std::to_string(head[1]) + "), perhaps a legacy PyTorch .bin", remedy);
}

constexpr std::string_view kServerReply = "check the URL and your access token, then download the file again";

std::optional<NotGguf> web_page(std::string_view text) {
  if (!starts_nocase(text, "<!doctype html") && !starts_nocase(text, "<html") && !starts_nocase(text, "<?xml") &&
      !starts_nocase(text, "<head") && !starts_nocase(text, "<body"))
    return std::nullopt;
  if (starts_nocase(text, "<?xml")) {
    // A storage service's error (S3, GCS): <Error><Code>..</Code><Message>..</Message>.
    if (element(text, "Error")) {
      std::string facts;
      if (auto code = element(text, "Code")) facts = shown(*code, 40);
      if (auto message = element(text, "Message")) facts += (facts.empty() ? "" : ": ") + quoted(unentity(*message), 80);
      return made("web_page", "a server's XML error reply" + (facts.empty() ? "" : " (" + facts + ")") + ", not the file",
                  std::string(kServerReply));
    }
    return made("web_page", "an XML document, not the file",
                "download with the /resolve/ URL (Hugging Face) or the raw link, not the /blob/ page");
  }
  std::string what = "a web page";
  if (auto title = element(text, "title")) {
    std::string t = shown(unentity(*title), 80);
    if (!t.empty()) what += " (title \"" + t + "\")";
  }
  return made("web_page", what + ", not the file",
              "download with the /resolve/ URL (Hugging Face) or the raw link, not the /blob/ page");
}

std::optional<NotGguf> json(std::string_view text) {
  if (text.empty() || (text.front() != '{' && text.front() != '[')) return std::nullopt;
  if (auto said = json_string(text, {"error", "message", "detail"}))
    return made("json", "a server's JSON reply, not the file (it says \"" + *said + "\")", std::string(kServerReply));
  TopKeys keys = top_keys(text, "");
  return made("json",
              "a JSON document, not a model" + (keys.shown ? " (first keys: " + keys_list(keys) + ")" : std::string()),
              "pass the model file itself; if this came from a download, " + std::string(kServerReply));
}

std::optional<NotGguf> zeros(std::span<const uint8_t> head, std::optional<uint64_t> whole) {
  bool all_of_file = whole && head.size() >= *whole;
  if (head.empty() || (head.size() < kZerosAtLeast && !all_of_file) ||
      !std::all_of(head.begin(), head.end(), [](uint8_t c) { return c == 0; }))
    return std::nullopt;
  std::string n = std::to_string(head.size());
  return made("zeros",
              all_of_file ? "a file of " + n + (head.size() == 1 ? " byte" : " bytes") + ", all zero: a preallocated or interrupted download"
                          : "a file whose first " + n + " bytes are all zero" +
                                (whole ? " (of " + std::to_string(*whole) + ")" : "") +
                                ": a preallocated or interrupted download",
              "download the file again (check its size and sha256 against the source)");
}

}  // namespace

NotGguf sniff_not_gguf(std::span<const uint8_t> head, std::optional<uint64_t> size, std::string_view name) {
  // A head shorter than kSniffBytes is the whole file, by the contract.
  std::optional<uint64_t> whole = size;
  if (!whole && head.size() < kSniffBytes) whole = head.size();
  std::string_view text(reinterpret_cast<const char*>(head.data()), head.size());

  if (whole == 0u)
    return made("empty", "an empty file (0 bytes)", "download the file again");
  if (auto part = split_part(name)) return *part;
  if (!head.empty() && std::string_view("GGUF").starts_with(text.substr(0, 4)) && whole && *whole < kGgufHeadBytes)
    return made("truncated_gguf",
                "a GGUF file cut short: " + std::to_string(*whole) + " bytes, where the magic, version and counts "
                "alone take " + std::to_string(kGgufHeadBytes),
                "download the file again (check its size and sha256 against the source)");
  if (auto found = lfs_pointer(text)) return *found;
  if (auto found = legacy_ggml(head)) return *found;
  if (auto found = safetensors(head, size)) return *found;
  if (auto found = zip(head)) return *found;
  if (auto found = pickle(head)) return *found;

  // Text formats, after a UTF-8 byte order mark and white space.
  std::string_view body = text.starts_with("\xef\xbb\xbf") ? text.substr(3) : text;
  body = skip_space(body);
  if (auto found = web_page(body)) return *found;
  if (auto found = json(body)) return *found;
  if (auto found = zeros(head, whole)) return *found;

  if (head.empty())
    return made("unknown", "a file of which nothing could be read (" + std::to_string(*size) + " bytes by its size)",
                "check that the file can be read, and that it is a GGUF model file");
  std::string what = "found " + bytes_shown(head) + ", expected 'GGUF' (47 47 55 46)";
  if (whole && *whole < kGgufHeadBytes)
    what += ", in a file of " + std::to_string(*whole) + (*whole == 1 ? " byte" : " bytes");
  return made("unknown", what, "check that this is a GGUF model file");
}

}  // namespace ggufkit
