// Edit a model in place through the library's front door: a file, or a shard set given by
// any of its shards (the keys live in shard 1). A metadata change that fits in the header
// is written there alone, under a journal; the other shards are not touched.
//
//   build/examples/edit_set MODEL-00003-of-00003.gguf KEY VALUE
//   (VALUE is read as YAML, as `ggufkit edit --set-yaml KEY=VALUE` reads it)
#include <cstdio>
#include <string>

#include "ggufkit/edit.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: edit_set MODEL.gguf KEY VALUE\n");
    return 2;
  }
  try {
    ggufkit::EditRequest req;
    req.input = argv[1];
    req.patch.add_set(argv[2], argv[3]);
    req.in_place = true;
    ggufkit::EditReport r = ggufkit::edit(req);
    const char* how = r.written == ggufkit::Written::header       ? "header"
                      : r.written == ggufkit::Written::whole_file ? "whole_file"
                                                                  : "nothing";
    std::printf("written: %s; %zu change(s); set of %zu file(s)\n", how, r.changes.size(), r.set_files);
    for (const ggufkit::WrittenFile& f : r.files) std::printf("  %s\n", f.path.c_str());
    return 0;
  } catch (const ggufkit::EditRefused& e) {
    std::printf("refused:");
    for (const ggufkit::Finding& f : e.findings) std::printf(" %s", std::string(ggufkit::code_name(f.code)).c_str());
    std::printf("\n");
    return e.exit_code();
  } catch (const ggufkit::Error& e) {
    std::fprintf(stderr, "edit_set: %s\n", e.what());
    return e.exit_code();
  }
}
