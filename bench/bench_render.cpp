// Times ggufkit's renderer on every template in a folder with every conversation in
// another: per template, the median of 21 parses and, over the conversations, the worst
// median of 21 renders (the same renders bench/render_peer.py times in Python's jinja2).
//   bench_render TEMPLATES_DIR CONVERSATIONS_DIR  ->  TSV: template, parse ms, render ms, both ms
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ggufkit/jinja.h"
#include "ggufkit/jinja_render.h"

namespace fs = std::filesystem;
namespace jinja = ggufkit::jinja;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<fs::path> files(const char* dir, const char* ext) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ext) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

template <typename F>
double median_ms(F&& f) {
  std::vector<double> t;
  for (int i = 0; i < 21; ++i) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[10];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: bench_render TEMPLATES_DIR CONVERSATIONS_DIR\n");
    return 2;
  }
  std::vector<jinja::Value> convs;
  for (const fs::path& c : files(argv[2], ".json"))
    convs.push_back(jinja::chat_context(jinja::from_json(slurp(c)), std::string("<s>"), std::string("</s>")));
  jinja::RenderOptions opt;
  opt.now = 1795000000;
  for (const fs::path& p : files(argv[1], ".jinja")) {
    const std::string text = slurp(p);
    double parse = median_ms([&] { jinja::parse(text); });
    jinja::Template t = jinja::parse(text);
    double worst = 0;
    for (const jinja::Value& c : convs)
      worst = std::max(worst, median_ms([&] {
                         try {
                           jinja::render(t, c, opt);
                         } catch (const jinja::RenderError&) {  // a template that refuses: timed to its refusal
                         }
                       }));
    std::printf("%s\t%.3f\t%.3f\t%.3f\n", p.stem().c_str(), parse, worst, parse + worst);
  }
  return 0;
}
