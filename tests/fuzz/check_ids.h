// The fuzz targets' one check on what a tokenizer returns: every id is a token of the
// vocabulary, or -1 (rwkv's null token, as llama.cpp gives for a byte it has no token for).
#pragma once

#include <cstdint>
#include <cstdio>
#include <vector>

#include "ggufkit/tokenizer.h"

inline void check_ids(const std::vector<int32_t>& ids, const ggufkit::tokenizer::Vocab& v) {
  for (int32_t id : ids)
    if (id < -1 || (id >= 0 && static_cast<size_t>(id) >= v.size())) {
      std::fprintf(stderr, "id %d outside [-1, %zu)\n", id, v.size());
      __builtin_trap();
    }
}
