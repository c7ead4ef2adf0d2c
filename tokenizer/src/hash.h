#pragma once
// The hash of the tokenizer's own tables of texts (internal): the token index's slots, the
// merge ranks, a text's repeated words. Not llama.cpp's map, whose order needs std::hash.
// XXH3 with a seed drawn once per process: a vocabulary or a text cannot be made whose keys
// all fall in one run of slots (which would cost a probe per key already there: n² for n).

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ggufkit::tokenizer {

uint64_t text_hash(std::string_view text);
uint64_t text_hash(std::string_view left, std::string_view right);  // of the pair

struct SeededHash {  // for std::unordered_map of string_views
  size_t operator()(std::string_view text) const noexcept { return text_hash(text); }
};

}  // namespace ggufkit::tokenizer
