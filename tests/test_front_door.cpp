// The library's front door, ggufkit::edit, split and merge: what a program that links the
// library gets is what the command does (the same rule book, sets, the header in place).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "ggufkit/edit.h"
#include "ggufkit/jinja_render.h"
#include "ggufkit/scan.h"
#include "helpers.h"

using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

std::string copy_of(const std::string& from, const std::string& name) {
  const std::string to = temp_path(name);
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  fs::permissions(to, fs::perms::owner_read | fs::perms::owner_write);
  return to;
}

uint64_t u32_of(const std::string& path, const char* key) {
  ggufkit::Scanned s = ggufkit::scan_file(path);
  const ggufkit::Value* v = s.model.find(key);
  return v ? v->bits : ~0ull;
}

}  // namespace

TEST(FrontDoor, AnEndTokenPastTheVocabularyIsRefusedByCodeAndNothingIsWritten) {
  const std::string f = copy_of(tiny_llama(), "door-eos.gguf");
  const auto before = read_file_bytes(f);
  ggufkit::EditRequest req;
  req.input = f;
  req.patch.add_set("tokenizer.ggml.eos_token_id", "99999");
  req.in_place = true;
  try {
    ggufkit::edit(req);
    FAIL() << "an eos of 99999 in a 32000-token vocabulary was written";
  } catch (const ggufkit::EditRefused& e) {
    EXPECT_EQ(e.reason, ggufkit::EditRefused::Reason::rules);
    ASSERT_EQ(e.findings.size(), 1u);
    EXPECT_EQ(e.findings[0].code, ggufkit::Code::token_id);
    EXPECT_EQ(e.exit_code(), 1);
    EXPECT_NE(std::string(e.what()).find("[token_id] tokenizer.ggml.eos_token_id = 99999 is not below the vocabulary size 32000"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find("--allow-broken"), std::string::npos) << "the library names no flag";
  }
  EXPECT_EQ(read_file_bytes(f), before);
}

TEST(FrontDoor, AnEndTokenInTheVocabularyIsWrittenInTheHeaderAlone) {
  const std::string f = copy_of(tiny_llama(), "door-eos1.gguf");
  const auto before = read_file_bytes(f);
  ggufkit::EditRequest req;
  req.input = f;
  req.patch.add_set("tokenizer.ggml.eos_token_id", "1");
  req.in_place = true;
  ggufkit::EditReport r = ggufkit::edit(req);
  EXPECT_EQ(r.written, ggufkit::Written::header);
  ASSERT_EQ(r.changes.size(), 1u);
  EXPECT_EQ(r.changes[0].key, "tokenizer.ggml.eos_token_id");
  EXPECT_TRUE(r.header_fits);
  EXPECT_EQ(r.set_files, 1u);
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].path, f);
  EXPECT_EQ(u32_of(f, "tokenizer.ggml.eos_token_id"), 1u);
  const auto after = read_file_bytes(f);
  ASSERT_EQ(after.size(), before.size());
  // The bytes that differ are the range the report names, in the header.
  size_t first = 0, last = 0, n = 0;
  for (size_t i = 0; i < after.size(); ++i)
    if (after[i] != before[i]) last = i, first = n++ ? first : i;
  EXPECT_GE(first, r.header_at);
  EXPECT_LT(last, r.header_at + r.header_bytes);
  EXPECT_LT(last, r.data_offset_after);
}

TEST(FrontDoor, ANameGivenThroughTheLastShardIsWrittenIntoShardOneAlone) {
  std::vector<std::string> paths;
  for (int k = 1; k <= 3; ++k)
    paths.push_back(copy_of(corpus("splits/by-count-0000" + std::to_string(k) + "-of-00003.gguf"),
                            "door-set-0000" + std::to_string(k) + "-of-00003.gguf"));
  const auto two = read_file_bytes(paths[1]), three = read_file_bytes(paths[2]);
  const uint64_t size1 = fs::file_size(paths[0]);
  ggufkit::EditRequest req;
  req.input = paths[2];
  req.patch.add_set("general.name", "Door");
  req.in_place = true;
  ggufkit::EditReport r = ggufkit::edit(req);
  EXPECT_EQ(r.written, ggufkit::Written::header);
  EXPECT_EQ(r.set_files, 3u);
  EXPECT_FALSE(r.every_shard);
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].path, paths[0]);
  ggufkit::Scanned s = ggufkit::scan_file(paths[0]);
  EXPECT_EQ(s.model.find("general.name")->str, "Door");
  EXPECT_EQ(fs::file_size(paths[0]), size1);
  EXPECT_EQ(read_file_bytes(paths[1]), two);
  EXPECT_EQ(read_file_bytes(paths[2]), three);
}

TEST(FrontDoor, ADryRunReportsThePlanAndWritesNothing) {
  const std::string f = copy_of(tiny_llama(), "door-dry.gguf");
  const auto before = read_file_bytes(f);
  ggufkit::EditRequest req;
  req.input = f;
  req.patch.set_alignment("64");
  req.dry_run = true;
  req.in_place = true;
  ggufkit::EditReport r = ggufkit::edit(req);
  EXPECT_EQ(r.written, ggufkit::Written::nothing);
  EXPECT_FALSE(r.unchanged);
  EXPECT_FALSE(r.header_fits);  // the header grows past the data start
  EXPECT_EQ(r.why_whole, "the header grows past the data start by 27 bytes");
  EXPECT_EQ(r.data_offset_before, 725376u);
  EXPECT_EQ(r.data_offset_after, 725440u);
  EXPECT_EQ(r.file_size_before, 5180032u);
  EXPECT_EQ(r.file_size_after, 5180096u);
  EXPECT_EQ(read_file_bytes(f), before);
}

TEST(FrontDoor, HeaderOnlyRefusesWhatDoesNotFitAsAUsageError) {
  const std::string f = copy_of(tiny_llama(), "door-header-only.gguf");
  ggufkit::EditRequest req;
  req.input = f;
  req.patch.set_alignment("64");
  req.in_place = true;
  req.header_only = true;
  try {
    ggufkit::edit(req);
    FAIL() << "written";
  } catch (const ggufkit::EditRefused& e) {
    EXPECT_EQ(e.reason, ggufkit::EditRefused::Reason::header_only);
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_EQ(e.message, "the edit does not fit in the header: the header grows past the data start by 27 bytes; nothing was written");
  }
}

TEST(FrontDoor, WarningsTheEditBringsInAreToldAndKeptNotPrinted) {
  const std::string f = copy_of(tiny_llama(), "door-warn.gguf");
  ggufkit::EditRequest req;
  req.input = f;
  req.patch.add_set("tokenizer.chat_template", "\"{{ bos_token }}{{ bos_token }}<|im_start|>\"");
  req.output = temp_path("door-warn-out.gguf");
  std::vector<std::string> told;
  req.on_finding = [&](const ggufkit::Finding& x) { told.emplace_back(ggufkit::code_name(x.code)); };
  testing::internal::CaptureStderr();
  ggufkit::EditReport r = ggufkit::edit(req);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "") << "the library prints nothing";
  EXPECT_EQ(told, (std::vector<std::string>{"template_literal_split", "double_bos"}));
  ASSERT_EQ(r.findings_new.size(), 2u);
  EXPECT_EQ(r.findings_new[0].severity, ggufkit::Severity::warning);
  EXPECT_EQ(r.written, ggufkit::Written::whole_file);
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].file_size, 5179936u);
  EXPECT_EQ(r.files[0].tensors_verified, 21u);
  EXPECT_EQ(fs::file_size(req.output), 5179936u);
}

TEST(FrontDoor, SplitAndMergeGiveBackTheFileByteForByte) {
  ggufkit::SplitRequest s;
  s.input = tiny_llama();
  s.prefix = temp_path("door-split");
  s.max_tensors = 8;
  std::vector<ggufkit::WrittenFile> shards = ggufkit::split(s);
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_EQ(shards[0].tensors + shards[1].tensors + shards[2].tensors, 21u);
  EXPECT_EQ(shards[2].path, s.prefix + "-00003-of-00003.gguf");
  ggufkit::MergeRequest m{shards[1].path, temp_path("door-merged.gguf"), {}, {}};
  std::vector<ggufkit::WrittenFile> one = ggufkit::merge(m);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].tensors, 21u);
  EXPECT_EQ(read_file_bytes(m.output), read_file_bytes(tiny_llama()));
}

namespace {

// Three copies of the corpus's 3-shard set, named door-NAME-0000K-of-00003.gguf.
std::vector<std::string> set_copy(const std::string& name) {
  std::vector<std::string> paths;
  for (int k = 1; k <= 3; ++k)
    paths.push_back(copy_of(corpus("splits/by-count-0000" + std::to_string(k) + "-of-00003.gguf"),
                            "door-" + name + "-0000" + std::to_string(k) + "-of-00003.gguf"));
  return paths;
}

// The keys of a JSON object's top level, in order, and their values as JSON.
std::vector<std::pair<std::string, ggufkit::jinja::Value>> top_level(const std::string& json) {
  ggufkit::jinja::Value v = ggufkit::jinja::from_json(json);
  std::vector<std::pair<std::string, ggufkit::jinja::Value>> out;
  if (v.dict)
    for (const auto& [k, val] : v.dict->items) out.push_back({k.s.str(), val});
  return out;
}

}  // namespace

TEST(FrontDoor, ASetsReportGivesShardOnesDataStartAndSizesBeforeAndAfterAsAFilesDoes) {
  // One pipeline fills the report: a set's plan names shard 1's data start and size, before
  // and after, as a lone file's does (they were 0 for a set), and what was written matches.
  const std::vector<std::string> set = set_copy("report");
  ggufkit::Scanned one = ggufkit::scan_file(set[0]);
  ggufkit::EditRequest req;
  req.input = set[1];
  req.patch.add_set("general.name", "A longer name than the set's own, to move the data start");
  req.output = temp_path("door-report-out");
  req.write.force = true;
  ggufkit::EditReport r = ggufkit::edit(req);
  EXPECT_EQ(r.set_files, 3u);
  EXPECT_EQ(r.data_offset_before, one.layout.data_offset);
  EXPECT_EQ(r.file_size_before, one.source_size);
  EXPECT_EQ(r.data_offset_before, 724704u);
  ASSERT_EQ(r.files.size(), 3u);
  ggufkit::Scanned written = ggufkit::scan_file(r.files[0].path);
  EXPECT_EQ(r.files[0].path, req.output + "-00001-of-00003.gguf");
  EXPECT_EQ(r.data_offset_after, written.layout.data_offset);
  EXPECT_EQ(r.file_size_after, written.source_size);
  EXPECT_EQ(r.files[0].data_offset, r.data_offset_after);
  EXPECT_EQ(r.files[0].file_size, r.file_size_after);
  EXPECT_GT(r.data_offset_after, r.data_offset_before);
  EXPECT_EQ(r.file_size_after - r.file_size_before, r.data_offset_after - r.data_offset_before);
}

TEST(FrontDoor, EditJsonOfASetHasTheSameKeysAsOfAFileWithItsSizesAndOffsetsFilled) {
  const std::vector<std::string> set = set_copy("json");
  const std::string lone = copy_of(tiny_llama(), "door-json.gguf");
  const std::string a = temp_path("door-json-out.gguf"), b = temp_path("door-json-set");
  // A dry run, whole new files, the header in place (a name as long as the old one): for the
  // file, then for the set.
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"--dry-run", "--dry-run"}, {"-o " + a + " --force", "-o " + b + " --force"}, {"--in-place", "--in-place"}};
  for (const auto& [file_args, set_args] : runs) {
    const std::string args = set_args;
    SCOPED_TRACE(args);
    CliRun f = run_cli("edit " + lone + " --set general.name=ggufkit_tiny_llamX --json " + file_args);
    CliRun s = run_cli("edit " + set[2] + " --set general.name=ggufkit_tiny_llamX --json " + set_args);
    ASSERT_EQ(f.code, 0) << f.err;
    ASSERT_EQ(s.code, 0) << s.err;
    auto fk = top_level(f.out), sk = top_level(s.out);
    ASSERT_EQ(fk.size(), sk.size()) << f.out << "\n" << s.out;
    for (size_t i = 0; i < fk.size(); ++i) EXPECT_EQ(fk[i].first, sk[i].first) << f.out << "\n" << s.out;
    for (const auto& [k, v] : sk)
      if (k == "file_size" || k == "data_offset") {
        if (v.dict)  // a dry run's before and after
          for (const auto& [when, n] : v.dict->items) EXPECT_GT(n.i, 0) << k << " " << when.s.str() << ": " << s.out;
        else EXPECT_GT(v.i, 0) << k << ": " << s.out;
      } else if (k == "set_files") {
        EXPECT_EQ(v.i, 3) << s.out;
      } else if (k == "files") {
        // A dry run writes nothing, a new set every shard, the header in place shard 1 alone.
        const size_t written = args == "--dry-run" ? 0 : args == "--in-place" ? 1 : 3;
        ASSERT_EQ(v.list->size(), written) << s.out;
        for (size_t n = 0; n < written; ++n) {
          const auto* path = (*v.list)[n].dict->find("path");
          ASSERT_NE(path, nullptr);
          const ggufkit::Scanned w = ggufkit::scan_file(path->s.str());
          EXPECT_EQ((*v.list)[n].dict->find("data_offset")->i, static_cast<int64_t>(w.layout.data_offset)) << path->s.str();
          EXPECT_EQ((*v.list)[n].dict->find("file_size")->i, static_cast<int64_t>(w.source_size)) << path->s.str();
        }
      }
  }
}

TEST(FrontDoor, AMessageNamesTheRequestsFieldAndEachFrontEndWordsItsRemedy) {
  // The library names `force` (the request's field), never --force: a Python user has no
  // flags. The command line says --force, as it always has.
  const std::string out = temp_path("door-exists.gguf");
  write_file_bytes(out, {'m', 'i', 'n', 'e'});
  ggufkit::EditRequest req;
  req.input = tiny_llama();
  req.output = out;
  req.patch.add_set("general.name", "x");
  try {
    ggufkit::edit(req);
    FAIL() << "an existing output was replaced without force";
  } catch (const ggufkit::Error& e) {
    EXPECT_EQ(e.message, "exists; give `force` to replace it; nothing was changed (" + tiny_llama() + " is as it was)");
    EXPECT_EQ(std::string(e.what()).find("--"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ggufkit::reworded("exists; give `force` to replace it; `x y` and `max_bytes`",
                              [](std::string_view name) { return "<" + std::string(name) + ">"; }),
            "exists; give <force> to replace it; `x y` and <max_bytes>");
  CliRun r = run_cli("edit " + tiny_llama() + " --set general.name=x -o " + out);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "ggufkit: error: " + out + ": exists; give --force to replace it; nothing was changed (" + tiny_llama() +
                       " is as it was)\n");
  EXPECT_EQ(read_file_bytes(out), (std::vector<uint8_t>{'m', 'i', 'n', 'e'}));
}
