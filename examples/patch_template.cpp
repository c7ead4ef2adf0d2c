// Fix a model's chat template and end-of-sequence token through the library's front door,
// exactly as `ggufkit edit --chat-template-file T --eos-token-id ID -o OUT` does: the rule
// book refuses an end token past the vocabulary, and nothing is written then.
//
//   build/examples/patch_template MODEL.gguf TEMPLATE.jinja EOS_ID OUT.gguf
#include <cstdio>
#include <string>

#include "ggufkit/edit.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: patch_template MODEL.gguf TEMPLATE.jinja EOS_ID OUT.gguf\n");
    return 2;
  }
  try {
    ggufkit::EditRequest req;
    req.input = argv[1];  // a file, or any shard of a set
    req.patch.add_set_file("tokenizer.chat_template", argv[2]);
    req.patch.add_set("tokenizer.ggml.eos_token_id", argv[3]);
    req.output = argv[4];
    ggufkit::EditReport r = ggufkit::edit(req);
    for (const ggufkit::Change& c : r.changes) std::printf("changed %s\n", c.key.c_str());
    for (const ggufkit::WrittenFile& f : r.files)
      std::printf("wrote %s: %llu bytes, %llu tensors verified\n", f.path.c_str(),
                  static_cast<unsigned long long>(f.file_size), static_cast<unsigned long long>(f.tensors_verified));
    return 0;
  } catch (const ggufkit::EditRefused& e) {  // the rule book: nothing was written
    std::fprintf(stderr, "patch_template: refused:");
    for (const ggufkit::Finding& f : e.findings) std::fprintf(stderr, " [%s]", std::string(ggufkit::code_name(f.code)).c_str());
    std::fprintf(stderr, "\n%s\n", e.what());
    return e.exit_code();
  } catch (const ggufkit::Error& e) {
    std::fprintf(stderr, "patch_template: %s\n", e.what());
    return e.exit_code();
  }
}
