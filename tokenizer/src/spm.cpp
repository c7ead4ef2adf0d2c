// Skeleton: the spm algorithm lands with the tokenizer issue.
#include "impl.h"

namespace ggufkit::tokenizer {

std::unique_ptr<Algorithm> make_spm(const Vocab::Impl&) { throw Error("tokenizer.ggml.model", "the spm tokenizer is not built yet"); }


}  // namespace ggufkit::tokenizer
