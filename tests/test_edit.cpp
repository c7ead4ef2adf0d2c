// Edits: each patch operation changes exactly what it names, tensor bytes come through
// unchanged, offsets are recomputed, and refusals and faults leave the source as it was.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "ggufkit/error.h"
#include "ggufkit/patch.h"
#include "ggufkit/rewrite.h"
#include "ggufkit/scan.h"
#include "ggufkit/sketch.h"
#include "helpers.h"

using namespace ggufkit;
using namespace testing_helpers;
namespace fs = std::filesystem;

namespace {


std::vector<uint8_t> tensor_bytes(const Tensor& t) {
  std::vector<uint8_t> b(t.nbytes());
  t.source->read_at(t.source_offset, b.data(), b.size());
  return b;
}

// Applies a patch given as YAML, rewrites to `out`, and reads the result back strictly.
Scanned edit_to(const std::string& in, const std::string& patch_yaml, const std::string& out) {
  Scanned s = scan_file(in);
  Model m = s.model;
  apply_patch(m, parse_patch(patch_yaml, "p.yaml", temp_dir()));
  RewriteResult r = safe_rewrite(m, in, out);
  EXPECT_EQ(r.tensors_verified, m.tensors.size());
  Scanned back = scan_file(out);
  EXPECT_EQ(back.layout, r.layout);
  check_layout(back.layout);
  return back;
}

Error patch_error(const std::string& in, const std::string& patch_yaml) {
  Scanned s = scan_file(in);
  try {
    apply_patch(s.model, parse_patch(patch_yaml, "p.yaml", temp_dir()));
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << patch_yaml;
  return Error(Error::Kind::format, "", std::nullopt, "", "");
}

void expect_same_tensor_bytes(const Model& a, const Model& b) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_TRUE(tensor_bytes(a.tensors[i]) == tensor_bytes(b.tensors[i])) << a.tensors[i].name;
  }
}

}  // namespace

TEST(EditOps, EachOperationChangesExactlyWhatItNamesOnEveryCorpusFile) {
  for (const char* f : {"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-phi-3.gguf",
                        "vocab/ggml-vocab-bert-bge.gguf", "vocab/ggml-vocab-falcon.gguf",
                        "vocab/ggml-vocab-baichuan.gguf", "history/ggml-vocab-falcon.v2.gguf"}) {
    SCOPED_TRACE(f);
    std::string in = corpus(f), out = temp_path("corpus-edit.gguf");
    Model before = scan_file(in).model;
    size_t vocab = before.find("tokenizer.ggml.tokens")->size();
    // set an existing key: same place, same type, new value
    Scanned a = edit_to(in, "set: {general.architecture: renamed-arch}", out);
    Model want = before;
    want.find("general.architecture")->str = "renamed-arch";
    EXPECT_EQ(a.model.metadata, want.metadata);
    // add a registered key (typed by the registry), and one the patch types
    Scanned b = edit_to(in, "set: {tokenizer.ggml.eos_token_id: " + std::to_string(vocab - 1) +
                                ", my.key: {type: f32, value: 0.5}}", out);
    want = before;
    if (Value* eos = want.find("tokenizer.ggml.eos_token_id")) *eos = Value::of_u32(static_cast<uint32_t>(vocab - 1));
    else want.metadata.push_back({"tokenizer.ggml.eos_token_id", Value::of_u32(static_cast<uint32_t>(vocab - 1))});
    want.metadata.push_back({"my.key", Value::of_f32(0.5f)});
    EXPECT_EQ(b.model.metadata, want.metadata);
    // remove and rename
    Scanned c = edit_to(in, "remove: [tokenizer.ggml.model]\nrename: {general.architecture: general.arch2}", out);
    want = before;
    for (size_t i = 0; i < want.metadata.size(); ++i)
      if (want.metadata.key(i) == "general.architecture") want.metadata.edit(i).key = "general.arch2";
    want.metadata.erase(std::find_if(want.metadata.begin(), want.metadata.end(),
                                     [](const KV& kv) { return kv.key == "tokenizer.ggml.model"; }));
    EXPECT_EQ(c.model.metadata, want.metadata);
    // and an empty patch is a byte-for-byte rewrite
    edit_to(in, "{}", out);
    EXPECT_EQ(read_file_bytes(out), read_file_bytes(in));
  }
}

TEST(EditOps, AChatTemplateGrownAndShrunkMovesTheDataAndKeepsEveryTensorByte) {
  Scanned orig = scan_file(tiny_llama());
  std::string big(orig.model.find("tokenizer.chat_template")->str);
  while (big.size() < orig.model.find("tokenizer.chat_template")->str.size() + 10240) big += "{# padding #}";
  write_file_bytes(temp_path("big.jinja"), std::vector<uint8_t>(big.begin(), big.end()));
  for (const std::string& patch : {std::string("set: {tokenizer.chat_template: {file: big.jinja}}"),
                                   std::string("set: {tokenizer.chat_template: \"{{ x }}\"}")}) {
    SCOPED_TRACE(patch);
    std::string out = temp_path("template-edit.gguf");
    Scanned e = edit_to(tiny_llama(), patch, out);
    const std::string& t = e.model.find("tokenizer.chat_template")->str;
    EXPECT_EQ(t, patch.find("big") != std::string::npos ? big : "{{ x }}");
    int64_t grew = static_cast<int64_t>(t.size()) - static_cast<int64_t>(orig.model.find("tokenizer.chat_template")->str.size());
    EXPECT_EQ(static_cast<int64_t>(e.layout.header_size) - static_cast<int64_t>(orig.layout.header_size), grew);
    EXPECT_EQ(e.layout.data_offset % 32, 0u);
    EXPECT_EQ(e.layout.data_offset, (e.layout.header_size + 31) / 32 * 32);
    EXPECT_EQ(e.layout.tensor_offsets, orig.layout.tensor_offsets);  // relative offsets do not move
    expect_same_tensor_bytes(orig.model, e.model);
    Model want = orig.model;
    want.find("tokenizer.chat_template")->str = t;
    EXPECT_EQ(e.model.metadata, want.metadata);
  }
}

TEST(EditOps, AnEosChangeIsOneValueAndNothingElse) {
  std::string out = temp_path("eos-edit.gguf");
  CliRun r = run_cli("edit " + tiny_llama() + " --eos-token-id 0 -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("set     tokenizer.ggml.eos_token_id: 2 -> 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("21 tensors verified"), std::string::npos) << r.out;
  auto a = read_file_bytes(tiny_llama()), b = read_file_bytes(out);
  ASSERT_EQ(a.size(), b.size());
  Scanned s = scan_file(out);
  const LabeledSpan* eos = nullptr;
  for (const auto& sp : s.layout.spans)
    if (sp.kind == SpanKind::kv_value && sp.path.find("eos_token_id") != std::string::npos) eos = &sp;
  ASSERT_TRUE(eos);
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) {
      ++differ;
      EXPECT_TRUE(i >= eos->span.offset && i < eos->span.end()) << i;
    }
  EXPECT_EQ(differ, 1u);  // 2 -> 0: one byte of a little-endian u32
}

TEST(EditOps, RealignsKeepEveryTensorByteAndADeclaredAlignmentComesBackByteForByte) {
  auto original = read_file_bytes(tiny_llama());
  Scanned orig = scan_file(tiny_llama());
  std::string prev = tiny_llama();
  for (uint32_t a : {16u, 64u, 4096u, 32u}) {
    SCOPED_TRACE(a);
    std::string out = temp_path("realign-" + std::to_string(a) + ".gguf");
    // 16 is below what llama.cpp loads: a broken fixture on purpose.
    CliRun r = run_cli("realign " + prev + " --alignment " + std::to_string(a) + " --allow-broken -o " + out);
    ASSERT_EQ(r.code, 0) << r.err;
    Scanned s = scan_file(out);
    EXPECT_EQ(s.layout.alignment, a);
    EXPECT_EQ(s.model.find("general.alignment")->bits, a);
    EXPECT_EQ(s.layout.data_offset % a, 0u);
    for (size_t i = 0; i < s.model.tensors.size(); ++i) {
      EXPECT_EQ(s.layout.tensor_offsets[i] % a, 0u);
      EXPECT_EQ(s.model.tensors[i].source_offset % a, 0u);
    }
    expect_same_tensor_bytes(orig.model, s.model);
    prev = out;
  }
  // tiny-llama declares no alignment; back at 32 the only difference is the key realign added.
  Scanned back = scan_file(prev);
  Model want = orig.model;
  want.metadata.push_back({"general.alignment", Value::of_u32(32)});
  EXPECT_EQ(back.model.metadata, want.metadata);
  // A file that declares its alignment comes back byte for byte.
  std::string declared = temp_path("declared-32.gguf");
  ASSERT_EQ(run_cli("realign " + tiny_llama() + " -a 32 -o " + declared).code, 0);
  auto declared_bytes = read_file_bytes(declared);
  prev = declared;
  for (uint32_t a : {16u, 64u, 4096u, 32u}) {
    std::string out = temp_path("declared-" + std::to_string(a) + ".gguf");
    ASSERT_EQ(run_cli("realign " + prev + " -a " + std::to_string(a) + " --allow-broken --force -o " + out).code, 0);
    prev = out;
  }
  EXPECT_TRUE(read_file_bytes(prev) == declared_bytes);
  EXPECT_EQ(read_file_bytes(tiny_llama()), original);
}

TEST(EditRefusals, EachIsRefusedWithItsReasonAndTheLine) {
  // (Token ids and vocabulary lengths are validate's rules, checked on the whole result
  // before writing: test_edit_rules.cpp.)
  Error e = patch_error(tiny_llama(), "alignment: 48\n");
  EXPECT_EQ(e.message, "alignment 48 is not a power of two");
  EXPECT_EQ(e.file, "p.yaml:1:12");
  e = patch_error(tiny_llama(), "set: {llama.block_count: {type: string, value: two}}\n");
  EXPECT_EQ(e.message, "would change the type from u32 to string; remove the key and set it again to do that");
  e = patch_error(tiny_llama(), "set: {llama.block_count: 1.5}\n");
  EXPECT_EQ(e.message, "expected an integer, found '1.5'");
  e = patch_error(tiny_llama(), "set: {llama.block_count: 4294967296}\n");
  EXPECT_EQ(e.message, "value 4294967296 is out of range for u32 (0 to 4294967295)");
  e = patch_error(tiny_llama(), "rename: {general.name: general.architecture}\n");
  EXPECT_EQ(e.message, "cannot rename onto general.architecture, which is already there");
  e = patch_error(tiny_llama(), "set: {general.name: x}\nremvoe: [a]\n");
  EXPECT_EQ(e.file, "p.yaml:2:1");
  EXPECT_EQ(e.message, "unknown field 'remvoe'; expected one of: set, remove, rename, alignment, special_tokens, token_types, tensors");
  e = patch_error(tiny_llama(), "remove: [general.license.link]\n");
  EXPECT_EQ(e.message, "there is no key general.license.link to remove");
  e = patch_error(tiny_llama(), "set: {general.alignment: 64}\n");
  EXPECT_NE(e.message.find("set the alignment with alignment: N"), std::string::npos);
  e = patch_error(tiny_llama(), "set: {my.unknown.key: {a: 1}}\n");  // a new key whose value tells no type
  EXPECT_EQ(e.message, "my.unknown.key is a new key whose type its value does not tell; give its type: --set-typed "
                       "my.unknown.key=f32:VALUE on the command line, {type: f32, value: ...} in a patch");
  e = patch_error(tiny_llama(), "set: {llama.contxt_length: 512}\n");  // a misspelt existing key
  EXPECT_EQ(e.message, "llama.contxt_length is not in the file nor in the key registry (did you mean llama.context_length?); "
                       "to add it, give its type: --set-typed llama.contxt_length=f32:VALUE on the command line, "
                       "{type: f32, value: ...} in a patch");
  e = patch_error(tiny_llama(), "set: {llama.context_length: {type: u64, value: 4096}}\n");
  EXPECT_EQ(e.message, "would change the type from u32 to u64; remove the key and set it again to do that");
  e = patch_error(tiny_llama(), "remove: [llama.context_length]\nset: {llama.context_length: {type: u64, value: 1}}\n");
  EXPECT_EQ(e.message, "the key registry has llama.context_length as u32, not u64");
  e = patch_error(tiny_llama(), "set: {tokenizer.chat_template: {hex: \"ff fe\"}}\n");
  EXPECT_EQ(e.message, "the chat template is not valid UTF-8");
  e = patch_error(tiny_llama(), "set: {tokenizer.chat_template.tool_use: {hex: \"c3\"}}\n");
  EXPECT_EQ(e.message, "the chat template is not valid UTF-8");

  // Output = input, through the program: refused, exit 2, the file untouched.
  auto before = read_file_bytes(tiny_llama());
  CliRun r = run_cli("edit " + tiny_llama() + " --eos-token-id 0 -o " + tiny_llama());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("is the same file; use --in-place"), std::string::npos) << r.err;
  CliRun bad = run_cli("edit " + tiny_llama() + " --eos-token-id 99999 -o " + temp_path("never.gguf"));
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("[token_id] tokenizer.ggml.eos_token_id = 99999 is not below the vocabulary size 32000"),
            std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(temp_path("never.gguf")));
  EXPECT_EQ(read_file_bytes(tiny_llama()), before);
}

TEST(EditInPlace, ReplacesTheFileByRenameKeepingItsModeAndFollowingALink) {
  std::string dir = temp_path("inplace");
  fs::create_directories(dir);
  std::string f = dir + "/model.gguf", link = dir + "/link.gguf";
  fs::copy_file(tiny_llama(), f, fs::copy_options::overwrite_existing);
  ::chmod(f.c_str(), 0640);
  fs::remove(link);
  fs::create_symlink("model.gguf", link);
  struct stat before {};
  ::stat(f.c_str(), &before);
  CliRun r = run_cli("edit " + link + " --set general.name=inplace --in-place --whole-file");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(link));  // the link still points at the file, which was replaced
  struct stat after {};
  ::stat(f.c_str(), &after);
  EXPECT_NE(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_mode & 07777, 0640u);
  EXPECT_EQ(scan_file(f).model.find("general.name")->str, "inplace");
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"link.gguf", "model.gguf"}));
  CliRun dry = run_cli("edit " + f + " --set general.name=again --dry-run");
  ASSERT_EQ(dry.code, 0) << dry.err;
  EXPECT_NE(dry.out.find("set     general.name: \"inplace\" -> \"again\""), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("dry run, nothing written"), std::string::npos);
  EXPECT_EQ(scan_file(f).model.find("general.name")->str, "inplace");
}

namespace {
// A source that fails part-way, as a disk read error would.
class FailingSource final : public ByteSource {
 public:
  FailingSource(std::shared_ptr<const ByteSource> inner, uint64_t fail_at) : inner_(std::move(inner)), fail_at_(fail_at) {}
  const std::string& name() const override { return inner_->name(); }
  uint64_t size() const override { return inner_->size(); }
  void read_at(uint64_t offset, void* dst, size_t n) const override {
    if (offset + n > fail_at_) {
      errno = EIO;
      throw_io(name(), "read failed at byte " + std::to_string(offset));
    }
    inner_->read_at(offset, dst, n);
  }

 private:
  std::shared_ptr<const ByteSource> inner_;
  uint64_t fail_at_;
};
}  // namespace

TEST(EditFaults, AReadErrorPartWayLeavesNothingBehind) {
  auto [dir, src] = fault_dir("fault-read", tiny_llama());
  std::string out = dir + "/out.gguf";
  write_file_bytes(out, {1, 2, 3});  // an existing destination must survive too
  auto before = read_file_bytes(src);
  Scanned s = scan_file(src);
  auto failing = std::make_shared<FailingSource>(s.model.tensors[0].source, s.source_size / 2);
  for (bool verify : {true, false}) {
    Model m = s.model;
    for (size_t i = 0; i < m.tensors.size(); ++i) m.tensors.edit(i).source = failing;
    try {
      RewriteOptions o;
      o.verify = verify;
      safe_rewrite(m, src, out, o);
      FAIL() << "the rewrite succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind, Error::Kind::io);
      EXPECT_NE(e.message.find("Input/output error; nothing was changed (" + src + " is as it was)"), std::string::npos)
          << e.what();
    }
    EXPECT_EQ(read_file_bytes(src), before);
    EXPECT_EQ(read_file_bytes(out), (std::vector<uint8_t>{1, 2, 3}));
    EXPECT_EQ(files_in(dir), (std::vector<std::string>{"model.gguf", "out.gguf"}));
  }
}

TEST(EditFaults, AFullFileSystemLeavesNothingBehind) {
  auto [dir, src] = fault_dir("fault-full", tiny_llama());
  auto before = read_file_bytes(src);
  // ulimit -f in 512-byte blocks (dash): 1 MB may be written, the model is 5 MB.
  for (const char* flags : {"", " --no-verify", " --in-place --whole-file"}) {
    SCOPED_TRACE(flags);
    std::string target = std::string(flags) == " --in-place --whole-file" ? "" : " -o " + dir + "/out.gguf";
    CliRun r = run_cli("edit " + src + " --eos-token-id 0" + flags + target, "ulimit -f 2048; ");
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find("File too large; nothing was changed (" + src + " is as it was)"), std::string::npos) << r.err;
    EXPECT_EQ(read_file_bytes(src), before);
    EXPECT_EQ(files_in(dir), (std::vector<std::string>{"model.gguf"}));
  }
}

TEST(Examples, PatchTemplateFixesATemplateAndAnEosIdThroughTheLibrary) {
  std::string tmpl = temp_path("example.jinja"), out = temp_path("patched.gguf");
  write_file_bytes(tmpl, {'{', '{', ' ', 'x', ' ', '}', '}'});
  std::string cmd = std::string(GGUFKIT_EXAMPLES_BIN) + "/patch_template " + tiny_llama() + " " + tmpl + " 0 " + out +
                    " > " + out + ".txt";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  auto printed = read_file_bytes(out + ".txt");
  std::string p(printed.begin(), printed.end());
  EXPECT_NE(p.find("changed tokenizer.chat_template\nchanged tokenizer.ggml.eos_token_id\n"), std::string::npos) << p;
  EXPECT_NE(p.find("21 tensors verified"), std::string::npos) << p;
  Scanned s = scan_file(out);
  EXPECT_EQ(s.model.find("tokenizer.chat_template")->str, "{{ x }}");
  EXPECT_EQ(s.model.find("tokenizer.ggml.eos_token_id")->bits, 0u);
}

TEST(EditRefusals, HostilePatchesAreRefusedWithTheirPosition) {
  Error e = patch_error(tiny_llama(), "set:\n  general.name: a\n  general.name: b\n");
  EXPECT_EQ(e.file, "p.yaml:3:3");
  EXPECT_EQ(e.message, "'general.name' is given twice");
  e = patch_error(tiny_llama(), "set: &s {general.name: a}\nrename: *s\n");
  EXPECT_EQ(e.file, "p.yaml:1:6");
  EXPECT_EQ(e.message, "anchors (&name) are not allowed");
  e = patch_error(tiny_llama(), "set: {general.name: " + std::string(80, '[') + "x" + std::string(80, ']') + "}\n");
  EXPECT_EQ(e.message, "nested deeper than 64");
  e = patch_error(tiny_llama(), "- just\n- a list\n");
  EXPECT_EQ(e.message, "expected a mapping with set:, remove:, rename: or alignment:");
}

namespace {
// The model with `special` applied as --special-token (or --special-token-id) would.
Model with_special(const std::string& file, const std::string& name, const std::string& value, bool by_id) {
  Model m = scan_file(file).model;
  Patch p;
  p.add_special(name, value, by_id);
  apply_patch(m, p);
  return m;
}
}  // namespace

TEST(SpecialTokens, EachNameSetsTheKeyLlamaCppReadsByTextOrById) {
  const std::string phi3 = corpus("vocab/ggml-vocab-phi-3.gguf");
  const std::vector<std::pair<std::string, std::string>> names = {
      {"bos", "bos"},         {"eos", "eos"},         {"eot", "eot"},         {"eom", "eom"},
      {"unknown", "unknown"}, {"unk", "unknown"},     {"seperator", "seperator"}, {"sep", "seperator"},
      {"padding", "padding"}, {"pad", "padding"},     {"cls", "cls"},         {"mask", "mask"},
      {"fim_pre", "fim_pre"}, {"fim_suf", "fim_suf"}, {"fim_mid", "fim_mid"}, {"fim_pad", "fim_pad"},
      {"fim_rep", "fim_rep"}, {"fim_sep", "fim_sep"}};
  for (const auto& [name, spelled] : names) {
    SCOPED_TRACE(name);
    const std::string key = "tokenizer.ggml." + spelled + "_token_id";
    Model by_text = with_special(phi3, name, "<|end|>", false);
    ASSERT_TRUE(by_text.find(key));
    EXPECT_EQ(by_text.find(key)->type, ValueType::u32);
    EXPECT_EQ(by_text.find(key)->bits, 32007u);  // phi-3's <|end|>
    Model by_id = with_special(phi3, name, "32010", true);
    EXPECT_EQ(by_id.find(key)->bits, 32010u);
  }
  // On the command line, as a publisher would fix phi-3's end token, read back from the file.
  std::string out = temp_path("phi3-eos.gguf");
  CliRun r = run_cli("edit " + phi3 + " --special-token 'eos=<|end|>' -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("set     tokenizer.ggml.eos_token_id: 32000 -> 32007"), std::string::npos) << r.out;
  EXPECT_EQ(run_cli("get " + out + " tokenizer.ggml.eos_token_id").out, "32007\n");
  // And in a patch.
  std::string patch = temp_path("special.yaml");
  std::ofstream(patch) << "special_tokens:\n  eot: \"<|end|>\"\n  pad: {id: 32000}\n";
  std::string out2 = temp_path("phi3-patched.gguf");
  ASSERT_EQ(run_cli("edit " + phi3 + " --patch " + patch + " -o " + out2).code, 0);
  Model m = scan_file(out2).model;
  EXPECT_EQ(m.find("tokenizer.ggml.eot_token_id")->bits, 32007u);
  EXPECT_EQ(m.find("tokenizer.ggml.padding_token_id")->bits, 32000u);
}

TEST(SpecialTokens, AMissingAnAmbiguousOrAnOutOfRangeTokenIsRefusedWithSuggestions) {
  const std::string phi3 = corpus("vocab/ggml-vocab-phi-3.gguf");
  auto refusal = [&](const std::string& name, const std::string& value, bool by_id, const std::string& file) {
    try {
      with_special(file, name, value, by_id);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal("eos", "<|ed|>", false, phi3).find("special token eos: no token is exactly \"<|ed|>\"; nearest: \"<|end|>\" (32007)"),
            std::string::npos);
  EXPECT_NE(refusal("eos", "32064", true, phi3).find("token id 32064 is past the vocabulary of 32064 tokens (ids 0 to 32063)"),
            std::string::npos);
  EXPECT_NE(refusal("eoq", "<|end|>", false, phi3).find("'eoq' is not a special token llama.cpp reads"), std::string::npos);
  // Two tokens with one text: the id must be given.
  std::string dup = temp_path("dup-vocab.gguf");
  Model m;
  m.metadata.push_back({"general.architecture", Value::of_string("llama")});
  m.metadata.push_back({"tokenizer.ggml.model", Value::of_string("llama")});
  m.metadata.push_back({"tokenizer.ggml.tokens", Value::strings({"<unk>", "<end>", "x", "<end>"})});
  write_file_bytes(dup, to_bytes(m));
  EXPECT_NE(refusal("eos", "<end>", false, dup).find("\"<end>\" is more than one token (ids 1, 3); give the one meant by id: "
                                                     "--special-token-id eos=ID"),
            std::string::npos) << refusal("eos", "<end>", false, dup);
  EXPECT_EQ(with_special(dup, "eos", "3", true).find("tokenizer.ggml.eos_token_id")->bits, 3u);
  // A token that is not a control token is taken, with a warning.
  CliRun warn = run_cli("edit " + phi3 + " --special-token eot=hello --dry-run");
  EXPECT_EQ(warn.code, 0);
  EXPECT_NE(warn.err.find("special token eot: token 12199 \"hello\" is a normal token, not a control token"), std::string::npos)
      << warn.err;
  // Given twice, or both as a special token and by --set, is refused.
  CliRun twice = run_cli("edit " + phi3 + " --special-token 'eos=<|end|>' --set tokenizer.ggml.eos_token_id=2 --dry-run");
  EXPECT_EQ(twice.code, 1);
  EXPECT_NE(twice.err.find("tokenizer.ggml.eos_token_id is also set by set:"), std::string::npos) << twice.err;
}

namespace {
// The keys by which `after` differs from `before`: each added or changed key with its value
// as text, and "-KEY" for each removed one.
std::map<std::string, std::string> changed_keys(const Model& before, const Model& after) {
  std::map<std::string, std::string> out;
  auto text = [](const Value& v) {
    if (v.type == ValueType::string) return v.str;
    return v.type == ValueType::boolean ? std::string(v.bits ? "true" : "false") : std::to_string(v.as_u64());
  };
  for (const KV& kv : after.metadata)
    if (const Value* old = before.find(kv.key); !old || !(*old == kv.value)) out[kv.key] = text(kv.value);
  for (const KV& kv : before.metadata)
    if (!after.find(kv.key)) out["-" + kv.key] = "";
  return out;
}

std::string hf_folder(const std::string& name, const std::string& config, const std::string& jinja = "") {
  std::string dir = temp_path(name);
  fs::create_directories(dir);
  if (!config.empty()) std::ofstream(dir + "/tokenizer_config.json") << config;
  if (!jinja.empty()) std::ofstream(dir + "/chat_template.jinja", std::ios::binary) << jinja;
  return dir;
}
}  // namespace

TEST(FromHf, EachShapeOfTokenizerConfigSetsExactlyItsKeys) {
  const Model before = scan_file(tiny_llama()).model;  // llama-spm: <unk> 0, <s> 1, </s> 2
  struct Case {
    std::string name, config, jinja, arg_suffix;
    std::map<std::string, std::string> want;
  };
  const std::vector<Case> cases = {
      {"string-template",
       R"({"chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}", "bos_token": "<s>",
           "eos_token": "</s>", "add_bos_token": false, "add_eos_token": true, "model_max_length": 4096})",
       "", "",
       {{"tokenizer.chat_template", "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"},
        {"tokenizer.ggml.add_bos_token", "false"},
        {"tokenizer.ggml.add_eos_token", "true"}}},  // bos 1 and eos 2 are what the file has: unchanged
      {"named-templates",
       R"({"chat_template": [{"name": "default", "template": "{{ messages }}"}, {"name": "tool_use", "template": "{{ tools }}"}],
           "eos_token": {"__type": "AddedToken", "content": "<unk>", "lstrip": false}, "pad_token": null,
           "unk_token": {"content": "</s>"}})",
       "", "",
       {{"tokenizer.chat_template", "{{ messages }}"}, {"tokenizer.chat_template.tool_use", "{{ tools }}"},
        {"tokenizer.ggml.eos_token_id", "0"}, {"tokenizer.ggml.unknown_token_id", "2"}}},
      {"jinja-beside", R"({"eos_token": "<unk>", "chat_template": "ignored: the .jinja file wins"})",
       "{% for m in messages %}{{ m.role }}{% endfor %}", "",
       {{"tokenizer.chat_template", "{% for m in messages %}{{ m.role }}{% endfor %}"}, {"tokenizer.ggml.eos_token_id", "0"}}},
      {"jinja-alone", "", "{{ 'only' }}", "", {{"tokenizer.chat_template", "{{ 'only' }}"}}},
      {"config-path", R"({"pad_token": "</s>"})", "", "/tokenizer_config.json", {{"tokenizer.ggml.padding_token_id", "2"}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string dir = hf_folder("hf-" + c.name, c.config, c.jinja), out = dir + "/out.gguf";
    CliRun r = run_cli("edit " + tiny_llama() + " --from-hf " + dir + c.arg_suffix + " -o " + out);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(changed_keys(before, scan_file(out).model), c.want);
    CliRun dry = run_cli("edit " + tiny_llama() + " --from-hf " + dir + c.arg_suffix + " --dry-run");
    for (const auto& [key, value] : c.want) EXPECT_NE(dry.out.find(key), std::string::npos) << dry.out;
  }
  // A token the vocabulary lacks, a template that does not parse, and a folder with
  // neither file are refused, with the place in the config.
  std::string bad = hf_folder("hf-bad-token", R"({"eos_token": "<|im_end|>"})");
  CliRun r = run_cli("edit " + tiny_llama() + " --from-hf " + bad + " --dry-run");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("tokenizer_config.json:1:15: special token eos: no token is exactly \"<|im_end|>\"; nearest:"),
            std::string::npos) << r.err;
  std::string broken = hf_folder("hf-bad-template", R"({"chat_template": "{% for m in messages %}"})");
  CliRun b = run_cli("edit " + tiny_llama() + " --from-hf " + broken + " --dry-run");
  EXPECT_EQ(b.code, 1);
  EXPECT_NE(b.err.find("[template_syntax] tokenizer.chat_template: line 1"), std::string::npos) << b.err;
  std::string empty = hf_folder("hf-empty", "");
  CliRun e = run_cli("edit " + tiny_llama() + " --from-hf " + empty + " --dry-run");
  EXPECT_EQ(e.code, 2);
  EXPECT_NE(e.err.find("none of tokenizer_config.json, chat_template.jinja, README.md and generation_config.json is there"),
            std::string::npos) << e.err;
}

TEST(FromHf, AFileThatLeadsOutOfTheFolderIsRefusedNamingIt) {
  const std::string outside = temp_path("hf-outside-secret");
  std::ofstream(outside) << "{{ 'secret' }}";
  const std::string real_outside = fs::canonical(outside).string();
  for (const char* name : {"chat_template.jinja", "tokenizer_config.json"}) {
    SCOPED_TRACE(name);
    std::string dir = temp_path(std::string("hf-escape-") + name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::create_symlink(outside, dir + "/" + name);
    const std::string out = dir + "/out.gguf";
    CliRun r = run_cli("edit " + tiny_llama() + " --from-hf " + dir + " -o " + out);
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(r.err, "ggufkit: error: " + dir + "/" + name + ": --from-hf: leads to " + real_outside + ", outside " +
                         fs::canonical(dir).string() + "; only regular files inside the folder are read\n");
    EXPECT_FALSE(fs::exists(out));
  }
  // A link that leads nowhere is refused as well, not taken for a file that is not there.
  std::string dir = temp_path("hf-dangling");
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::create_symlink(temp_path("hf-no-such-file"), dir + "/chat_template.jinja");
  CliRun r = run_cli("edit " + tiny_llama() + " --from-hf " + dir + " --dry-run");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "ggufkit: error: " + dir +
                       "/chat_template.jinja: --from-hf: is a link that leads nowhere; only regular files inside the folder are read\n");
}

TEST(FromHf, ANamedPipeInTheFolderIsRefusedAtOnce) {
  for (const char* name : {"chat_template.jinja", "tokenizer_config.json"}) {
    SCOPED_TRACE(name);
    std::string dir = temp_path(std::string("hf-fifo-") + name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    ASSERT_EQ(::mkfifo((dir + "/" + name).c_str(), 0600), 0);
    // No writer ever comes: a blocking open or read would wait for ever (timeout says 124).
    CliRun r = run_cli("edit " + tiny_llama() + " --from-hf " + dir + " --dry-run", "timeout 60 ");
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(r.err, "ggufkit: error: " + dir + "/" + name +
                         ": --from-hf: is a named pipe; only regular files inside the folder are read\n");
  }
  // Named on the command line, it is a usage error, as any pipe where a file belongs.
  const std::string config = temp_path("hf-fifo-tokenizer_config.json/tokenizer_config.json");
  CliRun r = run_cli("edit " + tiny_llama() + " --from-hf " + config + " --dry-run", "timeout 60 ");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "ggufkit: error: " + config + ": --from-hf: is a named pipe; only regular files inside the folder are read\n");
}

TEST(FromHf, ALinkToAFileInsideTheFolderOrIntoTheHubCachesBlobsIsRead) {
  const Model before = scan_file(tiny_llama()).model;
  std::string dir = temp_path("hf-inner-link");
  fs::remove_all(dir);
  fs::create_directories(dir + "/templates");
  std::ofstream(dir + "/templates/chat.jinja", std::ios::binary) << "{{ 'inside' }}\n";
  fs::create_symlink("templates/chat.jinja", dir + "/chat_template.jinja");
  std::string out = temp_path("hf-inner-link.gguf");
  fs::remove(out);
  CliRun r = run_cli("edit " + tiny_llama() + " --from-hf " + dir + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(changed_keys(before, scan_file(out).model),
            (std::map<std::string, std::string>{{"tokenizer.chat_template", "{{ 'inside' }}\n"}}));
  // huggingface_hub's cache: models--ORG--NAME/snapshots/REV/FILE links to ../../blobs/HASH.
  std::string hub = temp_path("hf-hub/models--org--tiny");
  fs::remove_all(temp_path("hf-hub"));
  fs::create_directories(hub + "/blobs");
  fs::create_directories(hub + "/snapshots/0123abc");
  std::ofstream(hub + "/blobs/9f86d08", std::ios::binary) << "{{ 'from the cache' }}";
  std::ofstream(hub + "/blobs/60303ae") << R"({"eos_token": "<unk>"})";
  fs::create_symlink("../../blobs/9f86d08", hub + "/snapshots/0123abc/chat_template.jinja");
  fs::create_symlink("../../blobs/60303ae", hub + "/snapshots/0123abc/tokenizer_config.json");
  fs::remove(out);
  r = run_cli("edit " + tiny_llama() + " --from-hf " + hub + "/snapshots/0123abc -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(changed_keys(before, scan_file(out).model),
            (std::map<std::string, std::string>{{"tokenizer.chat_template", "{{ 'from the cache' }}"},
                                                {"tokenizer.ggml.eos_token_id", "0"}}));
  // ... but a snapshot's link to elsewhere in the cache is still refused.
  fs::remove(hub + "/snapshots/0123abc/chat_template.jinja");
  std::ofstream(hub + "/refs-main") << "x";
  fs::create_symlink("../../refs-main", hub + "/snapshots/0123abc/chat_template.jinja");
  r = run_cli("edit " + tiny_llama() + " --from-hf " + hub + "/snapshots/0123abc --dry-run");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("chat_template.jinja: --from-hf: leads to " + fs::canonical(hub).string() + "/refs-main, outside"),
            std::string::npos) << r.err;
}

namespace {
Error yaml_error(const std::string& text) {
  try {
    load_yaml(text, "t.json");
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << text;
  return Error(Error::Kind::format, "", std::nullopt, "", "");
}
}  // namespace

TEST(JsonInputs, ASurrogatePairIsTheOneCharacterPythonsJsonDumpWrote) {
  // json.dump({"a": "😀", "b": "x😀y"}) with ensure_ascii, Python's default.
  YamlNode n = load_yaml(R"({"a": "\ud83d\ude00", "b": "x\uD83D\uDE00y", "c": "\\ud83d\\ude00", "d": "\u00e9"})", "t.json");
  ASSERT_TRUE(n.IsMap());
  EXPECT_EQ(n["a"].text, "\xF0\x9F\x98\x80");
  EXPECT_TRUE(n["a"].quoted);
  EXPECT_EQ(n["b"].text, "x\xF0\x9F\x98\x80y");
  EXPECT_EQ(n["c"].text, R"(\ud83d\ude00)");  // an escaped backslash, then plain text
  EXPECT_EQ(n["d"].text, "\xC3\xA9");
  // In flow YAML too, where a quote inside a plain word opens nothing.
  EXPECT_EQ(load_yaml(R"({a: it's, b: "\ud83d\ude00", c: 'x\ud83d\ude00'})", "t.yaml")["b"].text, "\xF0\x9F\x98\x80");
  EXPECT_EQ(load_yaml(R"({a: it's, b: "\ud83d\ude00", c: 'x\ud83d\ude00'})", "t.yaml")["c"].text, R"(x\ud83d\ude00)");
  // Positions after a pair on its line are the original text's.
  EXPECT_EQ(n["b"].column, 27);
  Error e = yaml_error(R"({"a": "\ud83d\ude00", "a": 1})");
  EXPECT_EQ(e.file, "t.json:1:23");
  EXPECT_EQ(e.message, "'a' is given twice");
  // Half a pair alone is no character: refused, saying so.
  e = yaml_error(R"({"a": "\ud83d"})");
  EXPECT_EQ(e.message, "\\ud83d is half of a UTF-16 surrogate pair, without its other half; a character past U+FFFF is "
                       "written as a pair, as \\ud83d\\ude00 for U+1F600");
  e = yaml_error(R"({"a": "\ude00\ud83d"})");
  EXPECT_NE(e.message.find("\\ude00 is half of a UTF-16 surrogate pair"), std::string::npos) << e.message;
}

TEST(JsonInputs, APairIsReadInTokenizerConfigPatchesAndSketches) {
  const std::string smile = "\xF0\x9F\x98\x80";
  const Model before = scan_file(tiny_llama()).model;
  std::string dir = hf_folder("hf-surrogates", R"({"chat_template": "{{ '\ud83d\ude00' }}{{ messages }}"})");
  std::string out = dir + "/out.gguf";
  fs::remove(out);
  CliRun r = run_cli("edit " + tiny_llama() + " --from-hf " + dir + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(changed_keys(before, scan_file(out).model),
            (std::map<std::string, std::string>{{"tokenizer.chat_template", "{{ '" + smile + "' }}{{ messages }}"}}));
  const std::string patch = temp_path("surrogate-patch.json");
  std::ofstream(patch) << R"({"set": {"general.name": "smile \ud83d\ude00"}})";
  fs::remove(out);
  r = run_cli("edit " + tiny_llama() + " -p " + patch + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(scan_file(out).model.find("general.name")->str, "smile " + smile);
  // A JSON sketch, as dump writes it, changed by a script that writes Python's escapes.
  const std::string example = temp_path("surrogate-example.gguf"), sketch = temp_path("surrogate-sketch.json");
  fs::remove(example);
  ASSERT_EQ(run_cli("example -o " + example).code, 0);
  CliRun d = run_cli("dump " + example + " --format json");
  ASSERT_EQ(d.code, 0) << d.err;
  const std::string name = "\"Counts walkthrough file\"";
  ASSERT_NE(d.out.find(name), std::string::npos) << d.out;
  std::ofstream(sketch) << d.out.replace(d.out.find(name), name.size(), R"("Counts \ud83d\ude00")");
  fs::remove(out);
  r = run_cli("write " + sketch + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(scan_file(out).model.find("general.name")->str, "Counts " + smile);
}

TEST(JsonInputs, ATokenThatIsNotAStringAndAKeyGivenTwiceAreRefusedWithTheirPlace) {
  struct Case {
    std::string config, err;
  };
  for (const Case& c : {
           Case{R"({"eos_token": 5})", "tokenizer_config.json:1:15: --from-hf: eos_token: expected a string or {\"content\": ...}"},
           Case{R"({"bos_token": {"content": true}})", "tokenizer_config.json:1:15: --from-hf: bos_token: expected a string or {\"content\": ...}"},
           Case{R"({"chat_template": 7})", "tokenizer_config.json:1:19: --from-hf: chat_template: expected a string or a list of {name, template}"},
           Case{R"({"add_bos_token": "false"})", "tokenizer_config.json:1:19: --from-hf: add_bos_token: expected true or false"},
           Case{R"({"eos_token": "</s>", "eos_token": "<unk>"})", "tokenizer_config.json:1:23: json: 'eos_token' is given twice"},
       }) {
    SCOPED_TRACE(c.config);
    std::string dir = hf_folder("hf-refused", c.config);
    CliRun r = run_cli("edit " + tiny_llama() + " --from-hf " + dir + " --dry-run");
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(r.err, "ggufkit: error: " + dir + "/" + c.err + "\n");
  }
}

TEST(EditOps, AChatTemplateFileIsReadFromTheCurrentFolderNotThePatchs) {
  std::string dir = temp_path("template-beside");
  fs::remove_all(dir);
  fs::create_directories(dir + "/sub");
  std::ofstream(dir + "/sub/p.yaml") << "set: {general.name: x}\n";
  std::ofstream(dir + "/t.jinja", std::ios::binary) << "{{ 'here' }}";
  std::ofstream(dir + "/sub/t.jinja", std::ios::binary) << "{{ 'beside the patch' }}";
  CliRun r = run_cli("edit " + tiny_llama() + " -p sub/p.yaml --chat-template-file t.jinja -o out.gguf", "cd " + dir + " && ");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(scan_file(dir + "/out.gguf").model.find("tokenizer.chat_template")->str, "{{ 'here' }}");
}

TEST(EditOps, ANewKeyWithoutATypeIsTypedAsItsValueReads) {
  const std::string out = temp_path("inferred.gguf");
  CliRun r = run_cli("edit " + tiny_llama() +
                     " --set my.count=5 --set my.flag=true --set my.ratio=0.5 --set my.name=hello --set 'my.list=[1, 2]'"
                     " --set 'my.words=[a, b]' --set 'my.quoted=\"5\"' --set my.big=5000000000 --set 'my.mix=[1, 2.5]' -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("set my.count: a new key, stored as i32 as its value reads"), std::string::npos) << r.err;
  Model m = scan_file(out).model;
  const std::vector<std::tuple<std::string, ValueType, ValueType>> want = {
      {"my.count", ValueType::i32, ValueType::u8},    {"my.flag", ValueType::boolean, ValueType::u8},
      {"my.ratio", ValueType::f32, ValueType::u8},    {"my.name", ValueType::string, ValueType::u8},
      {"my.list", ValueType::array, ValueType::i32},  {"my.words", ValueType::array, ValueType::string},
      {"my.quoted", ValueType::string, ValueType::u8}, {"my.big", ValueType::i64, ValueType::u8},
      {"my.mix", ValueType::array, ValueType::f32}};
  for (const auto& [key, type, elem] : want) {
    SCOPED_TRACE(key);
    const Value* v = m.find(key);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->type, type);
    if (type == ValueType::array) {
      EXPECT_EQ(v->elem, elem);
    }
  }
  EXPECT_EQ(m.find("my.count")->as_i64(), 5);
  EXPECT_EQ(m.find("my.quoted")->str, "5");
  EXPECT_EQ(m.find("my.big")->as_i64(), 5000000000);
  EXPECT_EQ(m.find("my.ratio")->as_f64(), 0.5);
  // A registered key takes the registry's type; a key close to one in the file is a typo.
  fs::remove(out);
  ASSERT_EQ(run_cli("edit " + tiny_llama() + " --set tokenizer.ggml.eot_token_id=2 -o " + out).code, 0);
  EXPECT_EQ(scan_file(out).model.find("tokenizer.ggml.eot_token_id")->type, ValueType::u32);
  CliRun typo = run_cli("edit " + tiny_llama() + " --set general.nam=x --dry-run");
  EXPECT_EQ(typo.code, 1);
  EXPECT_NE(typo.err.find("general.nam is not in the file nor in the key registry (did you mean general.name?)"),
            std::string::npos) << typo.err;
}

TEST(EditOps, ManyRemovalsAreMadeInOnePassAndAKeyNamedAgainRemovesItsNextPair) {
  // 3,000 keys, every third removed by one patch (it made a pass and a new index for each),
  // and a key the file repeats named twice: both its pairs go, a third time is refused.
  Model m;
  m.metadata.push_back({"general.architecture", Value::of_string("llama")});
  for (int i = 0; i < 3000; ++i) m.metadata.push_back({"k." + std::to_string(i), Value::scalar(ValueType::u32, static_cast<uint64_t>(i))});
  m.metadata.push_back({"dup", Value::scalar(ValueType::u8, 1)});
  m.metadata.push_back({"k.after", Value::scalar(ValueType::u8, 2)});
  m.metadata.push_back({"dup", Value::scalar(ValueType::u8, 3)});
  Patch p;
  for (int i = 2999; i >= 0; i -= 3) p.add_remove("k." + std::to_string(i));  // in no order of the file's
  p.add_remove("dup");
  p.add_remove("dup");
  Model edited = m;
  const std::vector<Change> changes = apply_patch(edited, p);
  ASSERT_EQ(changes.size(), 1002u);
  EXPECT_EQ(changes[0].key, "k.2999");
  EXPECT_EQ(changes[1000].key, "dup");
  EXPECT_EQ(changes[1000].before->as_i64(), 1);  // the first pair, then the next
  EXPECT_EQ(changes[1001].before->as_i64(), 3);
  ASSERT_EQ(edited.metadata.size(), 1 + 2000 + 1u);
  size_t at = 1;
  for (int i = 0; i < 3000; ++i) {
    if (i % 3 == 2) continue;
    EXPECT_EQ(edited.metadata.key(at), "k." + std::to_string(i));
    EXPECT_EQ(edited.metadata[at].value.as_i64(), i);
    ++at;
  }
  EXPECT_EQ(edited.metadata.key(at), "k.after");
  p.add_remove("dup");
  try {
    Model again = m;
    apply_patch(again, p);
    ADD_FAILURE() << "a third dup removed";
  } catch (const Error& e) {
    EXPECT_EQ(e.field, "remove dup");
    EXPECT_EQ(e.message, "there is no key dup to remove");
  }
}
