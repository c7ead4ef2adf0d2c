// Skeleton: the bpe algorithm lands with the tokenizer issue.
#include "impl.h"

namespace ggufkit::tokenizer {

std::unique_ptr<Algorithm> make_bpe(const Vocab::Impl&) { throw Error("tokenizer.ggml.model", "the bpe tokenizer is not built yet"); }


void apply_pre_tokenizer(Vocab::Impl& v) {
  if (v.tokenizer_pre == "falcon") v.pre_type = PreType::falcon, v.pre_type_name = "falcon";
  else v.pre_type = PreType::gpt2, v.pre_type_name = "gpt2";
}

const std::vector<std::string>& known_pre_names() {
  static const std::vector<std::string> names = {"default", "gpt-2", "falcon"};
  return names;
}

}  // namespace ggufkit::tokenizer
