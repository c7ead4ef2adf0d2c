#include "hash.h"

// Inlined: the tables hash a short text per token and per merge, 300,000 calls a load.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <random>

namespace ggufkit::tokenizer {
namespace {
uint64_t seed() {  // made on first use: a table built during static initialisation sees the same
  static const uint64_t s = [] {
    std::random_device rd;
    return static_cast<uint64_t>(rd()) << 32 | rd();
  }();
  return s;
}
}  // namespace

uint64_t text_hash(std::string_view text) { return XXH3_64bits_withSeed(text.data(), text.size(), seed()); }

uint64_t text_hash(std::string_view left, std::string_view right) {
  return XXH3_64bits_withSeed(right.data(), right.size(), text_hash(left) ^ left.size());
}

}  // namespace ggufkit::tokenizer
