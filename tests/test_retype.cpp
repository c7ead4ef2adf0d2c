// Retyping a token (token_types: / --token-type): one element of tokenizer.ggml.token_type
// changes, found by the token's text, and nothing else; an edit in place writes the
// header alone, since the array keeps its size.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "ggufkit/edit.h"
#include "ggufkit/error.h"
#include "ggufkit/patch.h"
#include "ggufkit/scan.h"
#include "ggufkit/sketch.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {

const char* kTypes = "tokenizer.ggml.token_type";

std::string phi3() { return corpus("vocab/ggml-vocab-phi-3.gguf"); }

// A writable copy of `from` (the corpus is read-only; an in-place edit writes into a
// writable file and replaces a read-only one).
std::string writable_copy(const std::string& from, const std::string& name) {
  const std::string to = temp_path(name);
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  fs::permissions(to, fs::perms::owner_write, fs::perm_options::add);
  return to;
}

std::vector<int64_t> types_of(const std::string& path) {
  const Scanned s = scan_file(path);
  const Value* v = s.model.find(kTypes);
  EXPECT_TRUE(v && v->elem == ValueType::i32);
  std::vector<int64_t> out;
  if (v)
    for (size_t i = 0; i < v->nums.size(); ++i) out.push_back(static_cast<int32_t>(static_cast<uint32_t>(v->nums[i])));
  return out;
}

EditReport edit_with(const std::string& in, const std::string& out, Patch patch, bool in_place = false, bool allow_broken = false) {
  EditRequest req;
  req.input = in;
  req.output = out;
  req.in_place = in_place;
  req.allow_broken = allow_broken;
  req.patch = std::move(patch);
  return edit(req);
}

// The message of the error applying (or, when parse throws, parsing) the patch gives.
Error retype_error(Model m, const std::function<Patch()>& make) {
  try {
    apply_patch(m, make());
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "accepted";
  return Error(Error::Kind::format, "", std::nullopt, "", "");
}

Patch yaml_patch(const std::string& yaml) { return parse_patch(yaml, "p.yaml", temp_dir()); }

bool has(const Error& e, const std::string& text) { return std::string(e.what()).find(text) != std::string::npos; }

}  // namespace

// phi-3's <|user|> is id 32010, a control token, and the only token of that text; its
// element of token_type lies at byte 725185 (the array's value starts at 597133: a u32
// element type and a u64 count, then 4 bytes a token).
TEST(Retype, PhiUserToNormalAndBackInPlaceChangesOneElementAndTheHeaderAlone) {
  const Scanned orig = scan_file(phi3());
  const Value* tokens = orig.model.find("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens);
  ASSERT_EQ(tokens->strs.size(), 32064u);
  size_t users = 0;
  for (std::string_view t : tokens->strs) users += t == "<|user|>";
  EXPECT_EQ(users, 1u);
  EXPECT_EQ(tokens->strs[32010], "<|user|>");
  const std::vector<int64_t> before = types_of(phi3());
  ASSERT_EQ(before.size(), 32064u);
  ASSERT_EQ(before[32010], 3);
  size_t kv = 0;
  while (orig.model.metadata.key(kv) != kTypes) ++kv;
  ASSERT_EQ(orig.model.metadata.value_offset(kv).value_or(0), 597133u);
  const uint64_t elem_at = 597133 + 4 + 8 + 4 * 32010;
  ASSERT_EQ(elem_at, 725185u);

  // By a patch document and by the shortcut: the same change, the same bytes.
  const std::string by_doc = temp_path("phi3-user-normal-doc.gguf"), by_call = temp_path("phi3-user-normal-call.gguf");
  EditReport r = edit_with(phi3(), by_doc, yaml_patch("token_types:\n  \"<|user|>\": normal\n"));
  ASSERT_EQ(r.changes.size(), 1u);
  const Change& c = r.changes[0];
  EXPECT_EQ(c.kind, Change::retype);
  EXPECT_EQ(c.key, kTypes);
  EXPECT_EQ(c.token, "<|user|>");
  EXPECT_EQ(c.id, 32010u);
  EXPECT_EQ(c.before->as_i64(), 3);
  EXPECT_EQ(c.after->as_i64(), 1);
  Patch p;
  p.add_token_type("<|user|>", "normal");
  edit_with(phi3(), by_call, p);
  const std::vector<uint8_t> normal = read_file_bytes(by_doc);
  EXPECT_EQ(read_file_bytes(by_call), normal);
  std::vector<int64_t> want = before;
  want[32010] = 1;
  EXPECT_EQ(types_of(by_doc), want);  // element 32010 is 1, every other as it was
  const std::vector<uint8_t> original = read_file_bytes(phi3());
  ASSERT_EQ(normal.size(), original.size());
  for (size_t i = 0; i < normal.size(); ++i)
    if (normal[i] != original[i]) {
      EXPECT_TRUE(i >= elem_at && i < elem_at + 4) << "byte " << i << " differs";
    }

  // Back to control, in place: the header alone, the file's size kept, only that
  // element's bytes written; the result is the original file.
  const std::string file = writable_copy(by_doc, "phi3-user-in-place.gguf");
  Patch back;
  back.add_token_type("<|user|>", "control");
  // (normal to control is refused without allow_broken, even back to what it was: issue 41)
  EXPECT_THROW(edit_with(file, "", back, true), ggufkit::EditRefused);
  EditReport in = edit_with(file, "", back, true, true);
  EXPECT_EQ(in.written, Written::header);
  EXPECT_EQ(in.header_bytes, 1u);  // 1 -> 3 is the element's low byte
  EXPECT_EQ(in.header_at, elem_at);
  EXPECT_EQ(fs::file_size(file), 726019u);
  const std::vector<uint8_t> after = read_file_bytes(file);
  ASSERT_EQ(after.size(), normal.size());
  size_t differ = 0;
  for (size_t i = 0; i < after.size(); ++i)
    if (after[i] != normal[i]) {
      ++differ;
      EXPECT_TRUE(i >= elem_at && i < elem_at + 4) << "byte " << i << " differs";
    }
  EXPECT_EQ(differ, 1u);
  EXPECT_EQ(types_of(file)[32010], 3);
  EXPECT_EQ(after, original);
}

// A retype to the type the token has changes nothing: the edit has nothing to write.
TEST(Retype, ToTheTypeItHasIsNoChange) {
  const std::string out = temp_path("phi3-user-same.gguf");
  Patch p;
  p.add_token_type("<|user|>", "control");
  EditReport r = edit_with(phi3(), out, p);
  EXPECT_TRUE(r.unchanged);
  EXPECT_TRUE(r.changes.empty());
  EXPECT_EQ(r.written, Written::nothing);
  EXPECT_FALSE(fs::exists(out));
}

TEST(Retype, ErrorsNameThePatchTheTextAndTheKey) {
  const Model phi = scan_file(phi3()).model;
  // An unknown type name, in a patch (its line and column) and on the command line.
  Error e = retype_error(phi, [] { return yaml_patch("token_types:\n  \"<|user|>\": nrml\n"); });
  EXPECT_EQ(e.file, "p.yaml:2:15");
  EXPECT_EQ(e.field, "token type \"<|user|>\"");
  EXPECT_TRUE(has(e, "'nrml' is not a token type; the types are normal, unknown, control, user_defined, unused, byte")) << e.what();
  e = retype_error(phi, [] {
    Patch p;
    p.add_token_type("<|user|>", "undefined");  // 0 is no type to set
    return p;
  });
  EXPECT_EQ(e.file, "command line");
  EXPECT_TRUE(has(e, "'undefined' is not a token type; the types are normal,")) << e.what();

  // A text no token has, with the tokens that differ only by case or surrounding spaces.
  e = retype_error(phi, [] { return yaml_patch("token_types:\n  \"<|User|>\": normal\n"); });
  EXPECT_EQ(e.file, "p.yaml:2:3");
  EXPECT_EQ(std::string(e.message), "no token in tokenizer.ggml.tokens is exactly \"<|User|>\"; did you mean \"<|user|>\" (32010)?");
  e = retype_error(phi, [] {
    Patch p;
    p.add_token_type("user ", "control");
    return p;
  });
  EXPECT_EQ(e.file, "command line");
  EXPECT_EQ(std::string(e.message),
            "no token in tokenizer.ggml.tokens is exactly \"user \"; did you mean \"\u2581user\" (1404), \"user\" (1792), "
            "\"User\" (2659) (and 2 more)?");
  e = retype_error(phi, [] { return yaml_patch("token_types:\n  \"<|nothing-like-it|>\": normal\n"); });
  EXPECT_EQ(std::string(e.message), "no token in tokenizer.ggml.tokens is exactly \"<|nothing-like-it|>\"");

  // The same text twice: in one patch, and in a patch and on the command line.
  e = retype_error(phi, [] { return yaml_patch("token_types:\n  \"<|user|>\": normal\n  \"<|user|>\": control\n"); });
  EXPECT_EQ(e.file, "p.yaml:3:3");
  EXPECT_TRUE(has(e, "'<|user|>' is given twice")) << e.what();
  e = retype_error(phi, [] {
    Patch p = yaml_patch("token_types:\n  \"<|user|>\": normal\n");
    p.add_token_type("<|user|>", "control");
    return p;
  });
  EXPECT_TRUE(has(e, "\"<|user|>\" is retyped twice: at p.yaml:2:3 and on the command line")) << e.what();

  // No token_type array (removed first, by the same patch): not created.
  e = retype_error(phi, [] { return yaml_patch("remove: [tokenizer.ggml.token_type]\ntoken_types: {\"<|user|>\": control}\n"); });
  EXPECT_EQ(e.file, "p.yaml:2:15");
  EXPECT_EQ(std::string(e.message),
            "the file has no tokenizer.ggml.token_type array to set the type in (it is not created: that would change the "
            "header's size)");

  // A token_type of another element type, or of another length than the tokens.
  Model small;
  small.metadata.push_back({"tokenizer.ggml.tokens", Value::strings({"a", "b"})});
  Model wrong_type = small, short_list = small, no_vocab;
  wrong_type.metadata.push_back({kTypes, Value::array(ValueType::u32, {Value::of_u32(1), Value::of_u32(1)})});
  short_list.metadata.push_back({kTypes, Value::array(ValueType::i32, {Value::scalar(ValueType::i32, 1)})});
  auto retype_b = [] {
    Patch p;
    p.add_token_type("b", "control");
    return p;
  };
  EXPECT_EQ(std::string(retype_error(wrong_type, retype_b).message), "tokenizer.ggml.token_type is array of u32, not an array of i32");
  EXPECT_EQ(std::string(retype_error(short_list, retype_b).message),
            "tokenizer.ggml.token_type has 1 items and tokenizer.ggml.tokens 2; they must be one per token");
  EXPECT_EQ(std::string(retype_error(no_vocab, retype_b).message),
            "the file has no vocabulary (tokenizer.ggml.tokens) to find the token in");
}

// Of two tokens with one text, the last is retyped: llama.cpp's token_to_id keeps the
// last id of a text, so that is the token its lookup finds.
TEST(Retype, OfTokensSharingATextTheLastIsRetyped) {
  const std::string dir = temp_path("retype-dup");
  fs::create_directories(dir);
  const std::string sketch = dir + "/dup.yaml", file = dir + "/dup.gguf";
  write_sketch(parse_sketch("metadata:\n"
                            "  - {key: general.architecture, type: string, value: llama}\n"
                            "  - {key: tokenizer.ggml.model, type: string, value: llama}\n"
                            "  - {key: tokenizer.ggml.tokens, type: array, items: string, value: [a, dup, b, dup, c]}\n"
                            "  - {key: tokenizer.ggml.scores, type: array, items: f32, value: [0, 0, 0, 0, 0]}\n"
                            "  - {key: tokenizer.ggml.token_type, type: array, items: i32, value: [1, 1, 1, 1, 1]}\n",
                            sketch, dir),
               file);
  Patch p = yaml_patch("token_types: {dup: user_defined}\n");  // (normal to control is refused: issue 41)
  const std::string out = dir + "/out.gguf";
  EditReport r = edit_with(file, out, p);
  ASSERT_EQ(r.changes.size(), 1u);
  EXPECT_EQ(r.changes[0].id, 3u);
  EXPECT_EQ(types_of(out), (std::vector<int64_t>{1, 1, 1, 4, 1}));
  // In place, too: the header alone.
  EditReport in = edit_with(file, "", p, true);
  EXPECT_EQ(in.written, Written::header);
  EXPECT_EQ(types_of(file), (std::vector<int64_t>{1, 1, 1, 4, 1}));
  EXPECT_EQ(read_file_bytes(file), read_file_bytes(out));
}

// --token-type on the command line: TEXT split at the last '=', the change printed, the
// header written in place; the help names it with an example.
TEST(Retype, CommandLineTokenTypePrintsTheRetype) {
  const std::string file = writable_copy(phi3(), "phi3-cli.gguf");
  CliRun r = run_cli("edit " + file + " --token-type '<|user|>=normal' --in-place");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "  retype  \"<|user|>\" (id 32010): control -> normal\n" + file +
                       ": wrote the header alone, in place (it fits before the data start; no tensor byte moves): 1 of its "
                       "726019 bytes differ, at 725185\n");
  EXPECT_EQ(types_of(file)[32010], 1);
  // "=" is a token (29922): '==user_defined' retypes it.
  CliRun eq = run_cli("edit " + file + " --token-type '==user_defined' --dry-run --json");
  ASSERT_EQ(eq.code, 0) << eq.err;
  EXPECT_NE(eq.out.find("{\"change\": \"retype\", \"key\": \"tokenizer.ggml.token_type\", \"token\": \"=\", \"id\": 29922, "
                        "\"before\": \"normal\", \"after\": \"user_defined\"}"),
            std::string::npos)
      << eq.out;
  CliRun same = run_cli("edit " + file + " --token-type '<|user|>=normal' --in-place");
  ASSERT_EQ(same.code, 0) << same.err;
  EXPECT_EQ(same.out, file + ": no changes; nothing written\n");
  CliRun bad = run_cli("edit " + file + " --token-type '<|user|>=contrl' --dry-run");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("command line: token type \"<|user|>\": 'contrl' is not a token type; the types are normal, unknown, "
                         "control, user_defined, unused, byte"),
            std::string::npos)
      << bad.err;
  CliRun no_eq = run_cli("edit " + file + " --token-type control --dry-run");
  EXPECT_EQ(no_eq.code, 2);
  EXPECT_NE(no_eq.err.find("--token-type expects TEXT=TYPE, found 'control'"), std::string::npos) << no_eq.err;
  CliRun help = run_cli("edit --help");
  EXPECT_NE(help.out.find("ggufkit edit phi3.gguf --token-type '<|user|>=user_defined' --in-place"), std::string::npos) << help.out;
}
