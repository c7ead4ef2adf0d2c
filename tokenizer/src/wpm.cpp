// Skeleton: the wpm algorithm lands with the tokenizer issue.
#include "impl.h"

namespace ggufkit::tokenizer {

std::unique_ptr<Algorithm> make_wpm(const Vocab::Impl&) { throw Error("tokenizer.ggml.model", "the wpm tokenizer is not built yet"); }


}  // namespace ggufkit::tokenizer
