// Skeleton: the ugm algorithm lands with the tokenizer issue.
#include "impl.h"

namespace ggufkit::tokenizer {

std::unique_ptr<Algorithm> make_ugm(const Vocab::Impl&) { throw Error("tokenizer.ggml.model", "the ugm tokenizer is not built yet"); }
std::unique_ptr<Algorithm> make_rwkv(const Vocab::Impl&) { throw Error("tokenizer.ggml.model", "the rwkv tokenizer is not built yet"); }

}  // namespace ggufkit::tokenizer
