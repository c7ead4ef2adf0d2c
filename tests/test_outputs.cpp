// Where a command may write: an existing file only with --force, never a device, a pipe
// or a folder, never the input under another name; each refusal exits 2 before anything
// is written and leaves the folder as it was.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <filesystem>

#include "ggufkit/scan.h"
#include "helpers.h"

using namespace testing_helpers;
using ggufkit::scan_file;
namespace fs = std::filesystem;

namespace {

struct Writer {
  const char* name;
  std::string args;  // before -o
};

std::vector<Writer> writers() {
  std::string sketch = std::string(GGUFKIT_SOURCE) + "/examples/sketch-408.yaml";
  return {{"rewrite", "rewrite " + tiny_llama()},
          {"edit", "edit " + tiny_llama() + " --set general.name=x"},
          {"realign", "realign " + tiny_llama() + " -a 64"},
          {"convert", "convert " + tiny_llama() + " --byte-order big"},
          {"write", "write " + sketch},
          {"dump", "dump " + tiny_llama()},
          {"example", "example"}};
}

}  // namespace

TEST(Outputs, AnExistingFileIsReplacedOnlyWithForce) {
  for (const Writer& w : writers()) {
    SCOPED_TRACE(w.name);
    std::string dir = temp_path(std::string("force-") + w.name);
    fs::create_directories(dir);
    std::string out = dir + "/out";
    write_file_bytes(out, {7, 7, 7});
    CliRun r = run_cli(w.args + " -o " + out);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(out + ": exists; give --force to replace it"), std::string::npos) << r.err;
    EXPECT_EQ(read_file_bytes(out), (std::vector<uint8_t>{7, 7, 7}));
    EXPECT_EQ(files_in(dir), (std::vector<std::string>{"out"}));
    CliRun f = run_cli(w.args + " --force -o " + out);
    EXPECT_EQ(f.code, 0) << f.err;
    EXPECT_GT(fs::file_size(out), 3u);
    EXPECT_EQ(files_in(dir), (std::vector<std::string>{"out"}));
  }
}

TEST(Outputs, DevicesPipesAndFoldersAreNeverReplaced) {
  std::string dir = temp_path("special");
  fs::create_directories(dir + "/sub");
  std::string fifo = dir + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  struct Target {
    std::string path, message;
  };
  for (const Target& t : {Target{"/dev/null", "exists and is not a regular file"}, Target{fifo, "exists and is not a regular file"},
                          Target{dir + "/sub", "is a folder; give a file name"},
                          Target{dir + "/no-such-folder/out.gguf", "there is no folder " + dir + "/no-such-folder"}}) {
    for (const Writer& w : writers()) {
      SCOPED_TRACE(std::string(w.name) + " -o " + t.path);
      CliRun r = run_cli(w.args + " --force -o " + t.path);  // not even with --force
      EXPECT_EQ(r.code, 2) << r.err;
      EXPECT_NE(r.err.find(t.path + ": " + t.message), std::string::npos) << r.err;
    }
  }
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"pipe", "sub"}));
  EXPECT_TRUE(files_in(dir + "/sub").empty());
}

TEST(Outputs, ANameOfTheFileSystemsFull255BytesWorksAndOneMoreIsRefusedFirst) {
  std::string dir = temp_path("long-names");
  fs::create_directories(dir);
  std::string longest = dir + "/" + std::string(250, 'n') + ".gguf";  // 255 bytes
  CliRun ok = run_cli("edit " + tiny_llama() + " --set general.name=x -o " + longest);
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(fs::exists(longest));
  std::string too_long = dir + "/" + std::string(251, 'n') + ".gguf";
  CliRun bad = run_cli("edit " + tiny_llama() + " --set general.name=x -o " + too_long);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("the name is 256 bytes, longer than the 255 a file name may have"), std::string::npos) << bad.err;
  EXPECT_EQ(files_in(dir).size(), 1u);
}

TEST(Outputs, DumpAndWriteRefuseToWriteOverTheirOwnInput) {
  std::string dir = temp_path("self");
  fs::create_directories(dir);
  std::string model = dir + "/v.gguf", link = dir + "/same.gguf";
  fs::copy_file(tiny_llama(), model);
  fs::create_hard_link(model, link);
  auto before = read_file_bytes(model);
  for (const std::string& out : {model, link}) {
    CliRun r = run_cli("dump " + model + " --force -o " + out);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("refusing to write over the input " + model + ": " + out + " is the same file"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(read_file_bytes(model) == before);
  std::string sketch = dir + "/s.yaml";
  write_file_bytes(sketch, {'{', '}', '\n'});
  CliRun w = run_cli("write " + sketch + " --force -o " + sketch);
  EXPECT_EQ(w.code, 2);
  EXPECT_EQ(read_file_bytes(sketch), (std::vector<uint8_t>{'{', '}', '\n'}));
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"s.yaml", "same.gguf", "v.gguf"}));
}

TEST(Outputs, VersionPrintsTheProjectVersion) {
  CliRun r = run_cli("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "ggufkit 0.1.0\n");
}

// Inputs: a named pipe hung every command in open() before any check. A model from a pipe
// is refused at once (it is mapped and read at offsets); a small input (a template, a
// patch, a sketch) from a pipe is read whole, under its cap, so `-` and /dev/fd/N work.
TEST(Inputs, AModelFromANamedPipeIsRefusedAtOnceAndASmallInputFromAPipeIsReadWhole) {
  std::string dir = temp_path("fifo-in");
  fs::create_directories(dir);
  std::string fifo = dir + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& args : {"show " + fifo, "edit " + fifo + " --set general.name=x --dry-run", "hash " + fifo}) {
    SCOPED_TRACE(args);
    CliRun r = run_cli(args, "timeout 20 ");  // a hang would be exit 124
    EXPECT_NE(r.code, 124);
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.err.find(fifo + ": is a named pipe, not a regular file"), std::string::npos) << r.err;
  }
  auto template_of = [](const std::string& file) { return scan_file(file).model.find("tokenizer.chat_template")->str; };
  const std::string out = dir + "/out.gguf";
  // Standard input as '-', as /dev/stdin, and a named pipe a writer fills.
  const std::vector<std::pair<std::string, std::string>> ways = {
      {"printf '{{ a }}' | ", "-"}, {"printf '{{ b }}' | ", "/dev/stdin"}, {"(printf '{{ c }}' > " + fifo + " &) ; ", fifo}};
  const char* want[] = {"{{ a }}", "{{ b }}", "{{ c }}"};
  for (size_t i = 0; i < ways.size(); ++i) {
    SCOPED_TRACE(ways[i].second);
    fs::remove(out);
    CliRun r = run_cli("edit " + tiny_llama() + " --chat-template-file " + ways[i].second + " -o " + out, ways[i].first + "timeout 20 ");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(template_of(out), want[i]);
  }
  // A patch from a pipe; a template over the cap from a pipe is refused, nothing written.
  fs::remove(out);
  ASSERT_EQ(run_cli("edit " + tiny_llama() + " -p /dev/stdin -o " + out, "printf 'set: {general.name: piped}' | ").code, 0);
  EXPECT_EQ(scan_file(out).model.find("general.name")->str, "piped");
  fs::remove(out);
  CliRun big = run_cli("edit " + tiny_llama() + " --chat-template-file - -o " + out, "head -c 70000000 /dev/zero | ");
  EXPECT_EQ(big.code, 1);
  EXPECT_NE(big.err.find("/dev/stdin: is over the cap of 67108864 bytes"), std::string::npos) << big.err;
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"pipe"}));
}

TEST(Inputs, AFileThatReportsSizeZeroIsReadToItsEnd) {
  std::string out = temp_path("proc-template.gguf");
  CliRun r = run_cli("edit " + tiny_llama() + " --chat-template-file /proc/self/status -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  CliRun m = run_cli("meta --json " + out);
  ASSERT_EQ(m.code, 0);
  EXPECT_NE(m.out.find("Name:"), std::string::npos);  // /proc/self/status starts with "Name:\t..."
  EXPECT_EQ(m.out.find("\"tokenizer.chat_template\", \"type\": \"string\", \"value\": \"\""), std::string::npos);
  // A device with no end stops at the cap instead of reading forever.
  CliRun z = run_cli("edit " + tiny_llama() + " --chat-template-file /dev/zero --dry-run", "timeout 60 ");
  EXPECT_NE(z.code, 0);
  EXPECT_NE(z.code, 124);
  EXPECT_NE(z.err.find("/dev/zero: is over the cap of"), std::string::npos) << z.err;
}

namespace {

// The bytes of `name` in the folder `dir`, read by descriptor (the path is too long to open).
std::vector<uint8_t> read_at(int dir, const std::string& name) {
  int fd = ::openat(dir, name.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + name);
  std::vector<uint8_t> out;
  uint8_t buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.insert(out.end(), buf, buf + n);
  ::close(fd);
  return out;
}

std::vector<std::string> names_at(int dir) {
  DIR* d = ::fdopendir(::dup(dir));
  std::vector<std::string> out;
  while (dirent* e = ::readdir(d))
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.push_back(e->d_name);
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(Paths, APathLongerThanPathMaxWorksForEveryCommand) {
  // 20 folders of 250 bytes: a path of over 5,000 bytes, which the kernel refuses in one call
  // (PATH_MAX is 4096). Made, read and removed here by descriptor.
  std::string root = temp_path("long");
  fs::create_directories(root);
  struct Cleanup {
    std::string root;
    ~Cleanup() { (void)std::system(("rm -rf " + root).c_str()); }  // rm walks any depth
  } cleanup{root};
  std::string deep = root;
  int dir = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  for (int i = 0; i < 20; ++i) {
    std::string name(250, static_cast<char>('a' + i));
    ASSERT_EQ(::mkdirat(dir, name.c_str(), 0755), 0);
    int next = ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ::close(dir);
    dir = next;
    deep += "/" + name;
  }
  ASSERT_GT(deep.size(), 5000u);
  const std::vector<uint8_t> original = read_file_bytes(tiny_llama());
  int fd = ::openat(dir, "model.gguf", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  ASSERT_EQ(::write(fd, original.data(), original.size()), static_cast<ssize_t>(original.size()));
  ::close(fd);
  ASSERT_EQ(::symlinkat("model.gguf", dir, "link.gguf"), 0);
  std::string model = deep + "/model.gguf";

  CliRun show = run_cli("show " + model);
  ASSERT_EQ(show.code, 0) << show.err.substr(0, 300);
  EXPECT_NE(show.out.find("tensors       21\n"), std::string::npos) << show.out.substr(0, 400);

  // In place through the symbolic link: the file it names is replaced, the link stays a link.
  CliRun edit = run_cli("edit " + deep + "/link.gguf --set general.name=deep --in-place");
  ASSERT_EQ(edit.code, 0) << edit.err.substr(0, 300);
  struct stat st {};
  ASSERT_EQ(::fstatat(dir, "link.gguf", &st, AT_SYMLINK_NOFOLLOW), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  std::vector<uint8_t> edited = read_at(dir, "model.gguf");
  EXPECT_NE(edited, original);
  EXPECT_NE(run_cli("meta " + model).out.find("general.name                             string         \"deep\""),
            std::string::npos);

  // dump names the data relative to the sketch, and write reads it back to the same bytes.
  ASSERT_EQ(run_cli("dump " + model + " -o " + deep + "/model.yaml").code, 0);
  std::vector<uint8_t> yaml = read_at(dir, "model.yaml");
  std::string text(yaml.begin(), yaml.end());
  EXPECT_NE(text.find("from: {file: \"model.gguf\", offset: "), std::string::npos);
  EXPECT_EQ(text.find(root), std::string::npos);  // no absolute path
  CliRun write = run_cli("write " + deep + "/model.yaml -o " + deep + "/again.gguf");
  ASSERT_EQ(write.code, 0) << write.err.substr(0, 300);
  EXPECT_EQ(read_at(dir, "again.gguf"), edited);
  EXPECT_EQ(names_at(dir), (std::vector<std::string>{"again.gguf", "link.gguf", "model.gguf", "model.yaml"}));
  ::close(dir);
}

TEST(Paths, DumpNamesTheDataRelativeToTheSketchSoThePairCanMove) {
  std::string dir = temp_path("dump-relative");
  fs::create_directories(dir + "/models");
  fs::create_directories(dir + "/sketches");
  fs::copy_file(tiny_llama(), dir + "/models/m.gguf");
  ASSERT_EQ(run_cli("dump " + dir + "/models/m.gguf -o " + dir + "/sketches/m.yaml").code, 0);
  std::vector<uint8_t> bytes = read_file_bytes(dir + "/sketches/m.yaml");
  std::string text(bytes.begin(), bytes.end());
  EXPECT_NE(text.find("from: {file: \"../models/m.gguf\", offset: "), std::string::npos);
  // Both folders moved together: write still finds the data.
  fs::rename(dir, dir + "-moved");
  CliRun r = run_cli("write " + dir + "-moved/sketches/m.yaml -o " + dir + "-moved/m2.gguf");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(read_file_bytes(dir + "-moved/m2.gguf") == read_file_bytes(tiny_llama()));
  // On standard output there is no sketch folder: the path is absolute.
  EXPECT_NE(run_cli("dump " + dir + "-moved/models/m.gguf").out.find("from: {file: \"" + dir + "-moved/models/m.gguf\""),
            std::string::npos);
}
