// Fix a model's chat template and end-of-sequence token through the library, the way
// `ggufkit edit` does: read, apply a patch built in code, rewrite safely.
//
//   build/examples/patch_template MODEL.gguf TEMPLATE.jinja EOS_ID OUT.gguf
#include <cstdio>
#include <string>

#include "ggufkit/error.h"
#include "ggufkit/patch.h"
#include "ggufkit/rewrite.h"
#include "ggufkit/scan.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: patch_template MODEL.gguf TEMPLATE.jinja EOS_ID OUT.gguf\n");
    return 2;
  }
  try {
    ggufkit::Scanned file = ggufkit::scan_file(argv[1]);  // tensors stay in the file

    ggufkit::Patch patch;  // the same as a patch file with set: {...}
    patch.add_set_file("tokenizer.chat_template", argv[2]);
    patch.add_set("tokenizer.ggml.eos_token_id", argv[3]);
    ggufkit::Model model = file.model;
    for (const ggufkit::Change& c : ggufkit::apply_patch(model, patch))
      std::printf("changed %s\n", c.key.c_str());

    ggufkit::RewriteResult r = ggufkit::safe_rewrite(model, argv[1], argv[4]);
    std::printf("wrote %s: %llu bytes, %llu tensors verified\n", r.path.c_str(),
                static_cast<unsigned long long>(r.layout.file_size),
                static_cast<unsigned long long>(r.tensors_verified));
    return 0;
  } catch (const ggufkit::Error& e) {
    std::fprintf(stderr, "patch_template: %s\n", e.what());
    return e.exit_code();
  }
}
