// ggufkit map --html: the page drawn by a real browser (Debian's chromium, headless), which
// must have every span of `map --json` in its DOM and state the same file size; its
// screenshot is kept under the build folder for a person to look at.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <regex>

#include "helpers.h"

using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

// The browser, or a failure saying how to get it (make test installs it).
std::string chromium() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(p)) return p;
  ADD_FAILURE() << "no chromium: make test installs Debian's (apt-get install chromium)";
  return "";
}

// What the browser makes of a page: --dump-dom prints the DOM after the page's script ran.
CliRun browse(const std::string& browser, const std::string& page, const std::string& args) {
  const std::string profile = temp_path("chromium-profile");
  return run_cli("--headless --no-sandbox --disable-gpu --user-data-dir=" + profile + " " + args + " file://" + page,
                 "HOME=" + profile + " timeout 180 ", browser);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(MapHtml, ChromiumDrawsEverySpanOfTheMapAndStatesTheFileSize) {
  const std::string browser = chromium();
  ASSERT_FALSE(browser.empty());
  const std::string page = fs::absolute(temp_path("tiny-llama-map.html")).string();
  CliRun w = run_cli("map " + tiny_llama() + " --html " + page);
  ASSERT_EQ(w.code, 0) << w.err;
  CliRun j = run_cli("map " + tiny_llama() + " --json");
  ASSERT_EQ(j.code, 0) << j.err;
  const YAML::Node map = YAML::Load(j.out);
  const size_t spans = map["spans"].size();
  const uint64_t file_size = map["file_size"].as<uint64_t>();
  EXPECT_EQ(spans, 122u);
  EXPECT_EQ(file_size, 5180032u);
  EXPECT_EQ(w.out, "wrote " + page + ": 122 spans of 1 file\n");

  CliRun dom = browse(browser, page, "--dump-dom");
  ASSERT_EQ(dom.code, 0) << dom.err;
  // The count the page's script took of the spans the browser drew, and the size it states.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom.out, m, std::regex("id=\"drawn\">([0-9]+) spans of ([0-9]+) bytes<"))) << dom.out.substr(0, 2000);
  EXPECT_EQ(std::stoull(m[1]), spans);
  EXPECT_EQ(std::stoull(m[2]), file_size);
  ASSERT_TRUE(std::regex_search(dom.out, m, std::regex("file size <b class=\"file-size\">([0-9]+)</b>")));
  EXPECT_EQ(std::stoull(m[1]), file_size);
  // The whole-file drawing holds one group per span, in the map's order; the header's
  // drawing after it, the spans before the data start again.
  const size_t a = dom.out.find("<svg id=\"file\""), b = dom.out.find("</svg>", a);
  ASSERT_NE(b, std::string::npos);
  const std::string drawing = dom.out.substr(a, b - a);
  EXPECT_EQ(count(drawing, "<g class=\"span"), spans);
  size_t at = 0;
  for (const YAML::Node& s : map["spans"]) {
    const std::string open = "data-kind=\"" + s["kind"].as<std::string>() + "\" data-offset=\"" + s["offset"].as<std::string>() +
                             "\" data-size=\"" + s["size"].as<std::string>() + "\"";
    at = drawing.find(open, at);
    ASSERT_NE(at, std::string::npos) << open;
  }
  size_t in_header = 0;
  for (const YAML::Node& s : map["spans"]) in_header += s["offset"].as<uint64_t>() < map["data_offset"].as<uint64_t>();
  EXPECT_EQ(in_header, 101u);  // all but the 21 tensors' data
  EXPECT_EQ(count(dom.out, "<g class=\"span"), spans + in_header);
  EXPECT_EQ(dom.out.find("http"), std::string::npos) << "the page fetches nothing";

  // The screenshot, kept beside the program for a person to look at.
  const std::string png = (fs::path(GGUFKIT_BIN).parent_path() / "map-tiny-llama.png").string();
  fs::remove(png);
  CliRun shot = browse(browser, page, "--window-size=1280,1400 --screenshot=" + png);
  ASSERT_EQ(shot.code, 0) << shot.err;
  const std::vector<uint8_t> bytes = read_file_bytes(png);
  ASSERT_GT(bytes.size(), 24u);
  EXPECT_EQ(std::string(bytes.begin() + 1, bytes.begin() + 4), "PNG");
  const auto be32 = [&](size_t i) { return uint32_t{bytes[i]} << 24 | uint32_t{bytes[i + 1]} << 16 | uint32_t{bytes[i + 2]} << 8 | bytes[i + 3]; };
  EXPECT_EQ(be32(16), 1280u);  // IHDR: width and height
  EXPECT_EQ(be32(20), 1400u);
  std::printf("screenshot: %s (%zu bytes)\n", png.c_str(), bytes.size());
}

TEST(MapHtml, APageIsNotWrittenOverAnExistingFileUnlessForcedNorOverItsSource) {
  const std::string page = temp_path("held.html");
  write_file_bytes(page, {'k'});
  CliRun no = run_cli("map " + tiny_llama() + " --html " + page);
  EXPECT_EQ(no.code, 2);
  EXPECT_EQ(no.err, "ggufkit: error: " + page + ": exists; give --force to replace it\n");
  EXPECT_EQ(read_file_bytes(page), std::vector<uint8_t>{'k'});
  CliRun yes = run_cli("map " + tiny_llama() + " --html " + page + " --force");
  EXPECT_EQ(yes.code, 0) << yes.err;
  EXPECT_EQ(slurp(page).rfind("<!DOCTYPE html>", 0), 0u);
  CliRun self = run_cli("map " + tiny_llama() + " --html " + tiny_llama() + " --force");
  EXPECT_NE(self.code, 0);
  EXPECT_EQ(read_file_bytes(tiny_llama()).size(), 5180032u);
  CliRun both = run_cli("map " + tiny_llama() + " --html " + page + " --json");
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.out.find("\"message\": \"--html writes a page and --json prints the map: ask for one\""), std::string::npos) << both.out;
}
