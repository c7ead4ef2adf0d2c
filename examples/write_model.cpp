// Build a model in code, write it, and read it back: the shortest tour of the library.
//
//   build/examples/write_model out.gguf
#include <cstdio>
#include <string>

#include "ggufkit/encode.h"
#include "ggufkit/error.h"
#include "ggufkit/numeric.h"
#include "ggufkit/scan.h"
#include "ggufkit/writer.h"

int main(int argc, char** argv) {
  std::string path = argc > 1 ? argv[1] : "write_model.gguf";
  try {
    ggufkit::Model model;
    model.metadata.push_back({"general.architecture", ggufkit::Value::of_string("example")});
    model.metadata.push_back({"general.alignment", ggufkit::Value::of_u32(64)});
    model.metadata.push_back({"example.labels", ggufkit::Value::strings({"left", "right"})});
    // A 4 x 2 tensor (4 columns, 2 rows: dims are innermost first) and a q8_0 one.
    model.tensors.push_back(ggufkit::make_tensor("weights", "f32", {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}));
    std::vector<double> ramp(32);
    for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = 0.25 * static_cast<double>(i);
    model.tensors.push_back(ggufkit::make_tensor("ramp", "q8_0", {32}, ramp));

    ggufkit::Layout layout = ggufkit::write_file(model, path);  // planned, written, renamed into place
    std::printf("wrote %s: %llu bytes, data at %llu\n", path.c_str(),
                static_cast<unsigned long long>(layout.file_size), static_cast<unsigned long long>(layout.data_offset));

    ggufkit::Scanned back = ggufkit::scan_file(path);
    std::printf("read back: %zu keys, %zu tensors, alignment %u\n", back.model.metadata.size(),
                back.model.tensors.size(), back.layout.alignment);
    for (const ggufkit::Tensor& t : back.model.tensors) {
      std::vector<float> v = ggufkit::tensor_values(t);
      std::printf("%s at byte %llu:", t.name.c_str(), static_cast<unsigned long long>(t.source_offset));
      for (size_t i = 0; i < v.size() && i < 8; ++i) std::printf(" %g", v[i]);
      std::printf("\n");
    }
    return 0;
  } catch (const ggufkit::Error& e) {
    std::fprintf(stderr, "write_model: %s\n", e.what());
    return e.exit_code();
  }
}
