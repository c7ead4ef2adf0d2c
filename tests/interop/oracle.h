#pragma once
// llama.cpp's own tokenizer as the oracle of the differential tests: bench/llama_tokenize
// (libllama from node-llama-cpp's package, vocabulary-only load) asked many texts in one
// process; seeded random texts that reach every path of the tokenizers; and the report of
// where ggufkit and llama.cpp part, in bytes one can replay.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ggufkit/model.h"

namespace oracle {

// The program and the folder of libllama it opens (compile definitions of the interop target).
const std::string& program();
const std::string& libdir();
// Whether the oracle can run at all; `why` says what is missing.
bool available(std::string& why);

struct Request {
  bool add_special = false, parse_special = false;
  std::string text;
};
// One answer per request: the ids, or `error`: "crash" where llama.cpp aborts on the text (an
// uncaught exception: "invalid codepoint" in the BPE and WPM paths), "error -N" from
// llama_tokenize, or "no answer" when the oracle died before it.
struct Answer {
  std::vector<int32_t> ids;
  std::string error;
};
struct Run {
  bool refused = false;        // llama.cpp refused to load the vocabulary ("refused")
  std::string status;          // the oracle's exit status and stderr when it failed
  std::vector<Answer> answers; // as many as the requests, missing ones with error "no answer"
};
// All requests to one oracle process, through files (no pipe can fill and deadlock).
Run tokenize(const std::string& vocab_file, const std::vector<Request>& requests);
// The oracle's `loaded` line (llama_vocab_* answers as JSON), or "refused".
std::string loaded(const std::string& vocab_file);
// The oracle's `attrs` line: llama_vocab_mask, llama_vocab_get_add_sep and every token's
// attribute but normal ones, as JSON.
std::string attrs(const std::string& vocab_file);

// The text of every control and user-defined token of the model (tokenizer.ggml.token_type
// 3 and 4, from the keys, not from our loader), plus a few common literals whatever the
// vocabulary: the special-token literals the random texts hold.
std::vector<std::string> special_literals(const ggufkit::Model& m);

// Text number `index` of the stream `seed`: made from its own generator seeded with both,
// so one text replays alone. Runs of spaces, tabs, newlines and \r; digits of every length;
// contractions in both cases; accented Latin (precomposed and combining); Cyrillic, Greek,
// Arabic, Hebrew, Devanagari, Thai, CJK, kana, Hangul; emoji with ZWJ, skin tones and flags;
// Unicode spaces; control characters; invalid UTF-8; the special literals next to spaces and
// text; code and numbers. Text 0 is empty; one in twenty is long (`long_pieces` / 2 to
// `long_pieces` pieces: 900 make a few KB); one in fifty holds a 4-byte sequence above
// U+10FFFF (where llama.cpp's BPE and WPM abort).
std::string random_text(uint64_t seed, size_t index, const std::vector<std::string>& specials, uint32_t long_pieces = 900);

// The bytes as a C string literal would write them: printable ASCII as is, the rest escaped.
std::string escaped(std::string_view bytes);
std::string hex(std::string_view bytes);
std::string ids_text(const std::vector<int32_t>& ids);

}  // namespace oracle
