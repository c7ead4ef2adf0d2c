#pragma once
// The chat template rules (chat.cpp), for the validator: a template's syntax, and at the
// token level (the vocabulary as llama.cpp loads it; none: the syntax alone). Findings
// under the key they are about, without offsets.
#include <vector>

#include "ggufkit/check.h"
#include "ggufkit/tokenizer.h"

namespace ggufkit {
std::vector<Finding> template_rules(const Model& m, const tokenizer::Vocab* vocab);
}
