// What a file that is not GGUF is, told from its first bytes: one test per kind, then heads
// that are cut, lie about lengths or are shorter than a magic.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ggufkit/sniff.h"

using namespace ggufkit;

namespace {

std::vector<uint8_t> bytes(std::string_view text) { return {text.begin(), text.end()}; }

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(v >> 8 * i));
}
void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> 8 * i));
}
void put_u16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(uint8_t(v));
  out.push_back(uint8_t(v >> 8));
}

// The head as a reader passes it: the whole file when it is short, with its size.
NotGguf sniff(const std::vector<uint8_t>& head, std::string_view name = "model.gguf",
              std::optional<uint64_t> size = std::nullopt) {
  return sniff_not_gguf(head, size ? size : std::optional<uint64_t>(head.size()), name);
}

std::vector<uint8_t> safetensors_file(const std::string& header) {
  std::vector<uint8_t> out;
  put_u64(out, header.size());
  out.insert(out.end(), header.begin(), header.end());
  return out;
}

// A zip local file header for a stored entry of `data`, as PyTorch's writer makes them.
void zip_entry(std::vector<uint8_t>& out, std::string_view name, std::string_view data) {
  put_u32(out, 0x04034b50);
  put_u16(out, 20);  // version needed
  put_u16(out, 0);   // flags: sizes here
  put_u16(out, 0);   // stored
  put_u32(out, 0);   // time, date
  put_u32(out, 0);   // crc (not checked)
  put_u32(out, data.size());
  put_u32(out, data.size());
  put_u16(out, name.size());
  put_u16(out, 0);
  out.insert(out.end(), name.begin(), name.end());
  out.insert(out.end(), data.begin(), data.end());
}

const std::string kOid = "4d7a2164bb1a0a4bd9a8b4c4cbe5b5c0ae6e0b8c7e1b8e4b1a6b2c1b3d2e6f70";

}  // namespace

TEST(NotGguf, AnEmptyFileIsEmpty) {
  NotGguf r = sniff({});
  EXPECT_EQ(r.kind, "empty");
  EXPECT_EQ(r.what, "an empty file (0 bytes)");
  EXPECT_EQ(r.remedy, "download the file again");
  // No size given: an empty head is the whole file.
  EXPECT_EQ(sniff_not_gguf({}, std::nullopt, "x.gguf").kind, "empty");
}

TEST(NotGguf, APartCutByBytesIsToldByItsNameAndGivesTheCatLine) {
  NotGguf r = sniff(bytes("\x13\x99 middle of some tensor"), "models/llama-7b.Q4_K_M.gguf.part2of3");
  EXPECT_EQ(r.kind, "split_part");
  EXPECT_EQ(r.what, "part 2 of 3 of a file cut into pieces by bytes (not a gguf-split shard)");
  EXPECT_EQ(r.remedy,
            "join the parts with cat: cat models/llama-7b.Q4_K_M.gguf.part1of3 models/llama-7b.Q4_K_M.gguf.part2of3 "
            "models/llama-7b.Q4_K_M.gguf.part3of3 > models/llama-7b.Q4_K_M.gguf");

  // The name wins over the bytes: a part that looks like an LFS pointer is still a part.
  NotGguf lfs = sniff(bytes("version https://git-lfs.github.com/spec/v1\n"), "m-00001-of-00002.GGUF.PART3OF4");
  EXPECT_EQ(lfs.kind, "split_part");
  EXPECT_NE(lfs.what.find("part 3 of 4"), std::string::npos) << lfs.what;
  EXPECT_NE(lfs.remedy.find("cat m-00001-of-00002.GGUF.PART1OF4 "), std::string::npos) << lfs.remedy;
  EXPECT_NE(lfs.remedy.find("> m-00001-of-00002.GGUF"), std::string::npos) << lfs.remedy;

  // Many parts: bash's brace range keeps them in order (a glob would not), zero padding kept.
  NotGguf many = sniff(bytes("xyz"), "big.gguf.part03of12");
  EXPECT_EQ(many.kind, "split_part");
  EXPECT_EQ(many.what, "part 3 of 12 of a file cut into pieces by bytes (not a gguf-split shard)");
  EXPECT_EQ(many.remedy, "join the parts with cat: cat big.gguf.part{01..12}of12 > big.gguf");

  // A name the shell would split is quoted.
  NotGguf spaced = sniff(bytes("xyz"), "my model.gguf.part1of2");
  EXPECT_EQ(spaced.remedy,
            "join the parts with cat: cat 'my model.gguf'.part1of2 'my model.gguf'.part2of2 > 'my model.gguf'");

  // split(1)'s suffixes and -split-X.
  NotGguf ab = sniff(bytes("xyz"), "dir/m.gguf.ab");
  EXPECT_EQ(ab.kind, "split_part");
  EXPECT_EQ(ab.what, "part 2 (suffix .ab) of a file cut into pieces by bytes (not a gguf-split shard)");
  EXPECT_EQ(ab.remedy, "join the parts with cat, whose glob takes them in order: cat dir/m.gguf.a[a-z] > dir/m.gguf");
  NotGguf c = sniff(bytes("xyz"), "m.gguf-split-c");
  EXPECT_EQ(c.kind, "split_part");
  EXPECT_NE(c.what.find("part 3 (suffix -split-c)"), std::string::npos) << c.what;
  EXPECT_NE(c.remedy.find("cat m.gguf-split-[a-z] > m.gguf"), std::string::npos) << c.remedy;

  // Not parts: K beyond N, not after .gguf, a compressor's suffix.
  EXPECT_NE(sniff(bytes("xyz"), "m.gguf.part4of3").kind, "split_part");
  EXPECT_NE(sniff(bytes("xyz"), "m.bin.part1of2").kind, "split_part");
  EXPECT_NE(sniff(bytes("xyz"), "m.gguf.gz").kind, "split_part");
  EXPECT_NE(sniff(bytes("xyz"), "m.gguf").kind, "split_part");
}

TEST(NotGguf, AGitLfsPointerGivesItsOidAndSize) {
  NotGguf r = sniff(bytes("version https://git-lfs.github.com/spec/v1\noid sha256:" + kOid +
                          "\nsize 4368439584\n"));
  EXPECT_EQ(r.kind, "git_lfs_pointer");
  EXPECT_EQ(r.what, "a Git LFS pointer (oid sha256:" + kOid + ", size 4368439584 bytes), not the file it stands for");
  EXPECT_NE(r.remedy.find("git lfs pull"), std::string::npos) << r.remedy;
  EXPECT_NE(r.remedy.find("/resolve/"), std::string::npos) << r.remedy;

  // CRLF line ends, as a pointer checked out on Windows has them.
  NotGguf crlf = sniff(bytes("version https://git-lfs.github.com/spec/v1\r\noid sha256:" + kOid +
                             "\r\nsize 12\r\n"));
  EXPECT_EQ(crlf.kind, "git_lfs_pointer");
  EXPECT_NE(crlf.what.find("oid sha256:" + kOid + ", size 12 bytes)"), std::string::npos) << crlf.what;
}

TEST(NotGguf, ATruncatedGitLfsPointerSaysWhatIsMissing) {
  NotGguf r = sniff(bytes("version https://git-lfs.github.com/spec/v1\noid sha256:4d7a21"));
  EXPECT_EQ(r.kind, "git_lfs_pointer");
  EXPECT_EQ(r.what, "a Git LFS pointer (oid sha256:4d7a21 (cut short), no size line), not the file it stands for");
  NotGguf bare = sniff(bytes("version https://git-lfs.github.com/spec/v1"));
  EXPECT_EQ(bare.kind, "git_lfs_pointer");
  EXPECT_EQ(bare.what, "a Git LFS pointer (no oid line, no size line), not the file it stands for");
  NotGguf bad = sniff(bytes("version https://git-lfs.github.com/spec/v1\noid sha256:" + kOid + "\nsize 12x\n"));
  EXPECT_NE(bad.what.find("size \"12x\" (not a number)"), std::string::npos) << bad.what;
}

TEST(NotGguf, ALegacyGgmlFileNamesItsMagicAndVersion) {
  std::vector<uint8_t> ggjt = bytes("tjgg");  // 0x67676a74 little-endian
  put_u32(ggjt, 3);
  put_u32(ggjt, 32000);
  NotGguf r = sniff(ggjt);
  EXPECT_EQ(r.kind, "legacy_ggml");
  EXPECT_EQ(r.what, "a GGJT file (magic 'ggjt', version 3), the format llama.cpp read before GGUF (August 2023)");
  EXPECT_EQ(r.remedy,
            "convert it with llama.cpp's convert_llama_ggml_to_gguf.py (or download a GGUF build of the model)");

  std::vector<uint8_t> ggmf = bytes("fmgg");
  put_u32(ggmf, 1);
  EXPECT_EQ(sniff(ggmf).what, "a GGMF file (magic 'ggmf', version 1), the format llama.cpp read before GGUF (August 2023)");

  std::vector<uint8_t> odd = bytes("tjgg");
  put_u32(odd, 9);
  EXPECT_NE(sniff(odd).what.find("version 9, not one llama.cpp wrote"), std::string::npos);

  NotGguf ggml = sniff(bytes("lmgg\x00\x7d\x00\x00"));
  EXPECT_EQ(ggml.kind, "legacy_ggml");
  EXPECT_NE(ggml.what.find("unversioned GGML file (magic 'ggml')"), std::string::npos) << ggml.what;
  EXPECT_NE(ggml.what.find("whisper.cpp"), std::string::npos) << ggml.what;
  EXPECT_NE(ggml.remedy.find("convert_llama_ggml_to_gguf.py"), std::string::npos) << ggml.remedy;

  NotGguf ggla = sniff(bytes("algg\x01\x00\x00\x00"));
  EXPECT_EQ(ggla.kind, "legacy_ggml");
  EXPECT_NE(ggla.what.find("LoRA adapter"), std::string::npos) << ggla.what;
  EXPECT_NE(ggla.remedy.find("convert_lora_to_gguf.py"), std::string::npos) << ggla.remedy;
}

TEST(NotGguf, ASafetensorsFileGivesItsHeaderLengthAndFirstTensors) {
  std::string header =
      R"({"__metadata__":{"format":"pt","note":"{\"x\":1}"},)"
      R"("model.embed_tokens.weight":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]},)"
      R"("model.norm.weight":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]},)"
      R"("lm_head.weight":{"dtype":"BF16","shape":[2,2],"data_offsets":[12,20]},)"
      R"("a\"b":{"dtype":"BF16","shape":[1],"data_offsets":[20,22]}}    )";
  std::vector<uint8_t> file = safetensors_file(header);
  file.resize(file.size() + 22);
  NotGguf r = sniff(file, "model.safetensors");
  EXPECT_EQ(r.kind, "safetensors");
  EXPECT_EQ(r.what, "a safetensors file (header of " + std::to_string(header.size()) +
                        " bytes; 4 tensors, first: model.embed_tokens.weight, model.norm.weight, lm_head.weight)");
  EXPECT_EQ(r.remedy, "convert it with llama.cpp's convert_hf_to_gguf.py");
}

TEST(NotGguf, ASafetensorsHeaderLongerThanTheHeadIsReadAsFarAsTheHeadGoes) {
  // A header that says 50 MB: the head holds its start; the file is said to be 1 MB.
  std::vector<uint8_t> head;
  put_u64(head, 50'000'000);
  std::string start = R"({"a.weight":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b.weight":{"dtype":"F32")";
  head.insert(head.end(), start.begin(), start.end());
  head.resize(kSniffBytes, ' ');
  NotGguf r = sniff_not_gguf(head, 1'000'000, "x.safetensors");
  EXPECT_EQ(r.kind, "safetensors");
  EXPECT_EQ(r.what,
            "a safetensors file (header of 50000000 bytes, more than the file's 1000000: cut short; "
            "first tensors: a.weight, b.weight)");
}

TEST(NotGguf, AnEnormousSafetensorsLengthInGarbageIsNotBelieved) {
  // 2^63 - 1 bytes of header, then '{': no safetensors (nothing is allocated by it either).
  std::vector<uint8_t> head;
  put_u64(head, 0x7fffffffffffffffull);
  for (uint8_t c : bytes("{garbage"))
    head.push_back(c);
  NotGguf r = sniff(head);
  EXPECT_EQ(r.kind, "unknown");
  EXPECT_EQ(r.what, "found '........' (ff ff ff ff ff ff ff 7f), expected 'GGUF' (47 47 55 46), "
                    "in a file of 16 bytes");

  // Just past the limit of 100 MB: not safetensors either; at it: safetensors, read from 1 byte.
  std::vector<uint8_t> over;
  put_u64(over, 100'000'001);
  over.push_back('{');
  EXPECT_EQ(sniff(over).kind, "unknown");
  std::vector<uint8_t> at;
  put_u64(at, 100'000'000);
  at.push_back('{');
  NotGguf limit = sniff(at);
  EXPECT_EQ(limit.kind, "safetensors");
  EXPECT_EQ(limit.what, "a safetensors file (header of 100000000 bytes, more than the file's 9: cut short)");
}

TEST(NotGguf, APyTorchZipCheckpointNamesItsDataPkl) {
  std::vector<uint8_t> file;
  zip_entry(file, "pytorch_model/data.pkl", "\x80\x02}q\x00.");
  zip_entry(file, "pytorch_model/data/0", std::string(64, '\0'));
  NotGguf r = sniff(file, "pytorch_model.bin");
  EXPECT_EQ(r.kind, "pytorch_zip");
  EXPECT_EQ(r.what, "a PyTorch checkpoint (a zip archive holding \"pytorch_model/data.pkl\")");
  EXPECT_EQ(r.remedy, "convert it with llama.cpp's convert_hf_to_gguf.py");

  // The mark in a later entry is found by walking the local headers.
  std::vector<uint8_t> later;
  zip_entry(later, "archive/.format_version", "1");
  zip_entry(later, "archive/data.pkl", "\x80\x02.");
  NotGguf second = sniff(later);
  EXPECT_EQ(second.kind, "pytorch_zip");
  EXPECT_NE(second.what.find("archive/.format_version"), std::string::npos) << second.what;  // archive/ marks it
}

TEST(NotGguf, AZipArchiveThatIsNoCheckpointSaysWhatItHolds) {
  std::vector<uint8_t> plain;
  zip_entry(plain, "README.txt", "hello");
  zip_entry(plain, "weights/model-q4.gguf", "GGUF");
  NotGguf r = sniff(plain, "download.zip");
  EXPECT_EQ(r.kind, "zip");
  EXPECT_EQ(r.what, "a zip archive holding a GGUF file, \"weights/model-q4.gguf\"");
  EXPECT_EQ(r.remedy, "unzip it and open the .gguf file inside");

  std::vector<uint8_t> other;
  zip_entry(other, "notes.txt", "hello");
  NotGguf o = sniff(other);
  EXPECT_EQ(o.kind, "zip");
  EXPECT_EQ(o.what, "a zip archive (first entry \"notes.txt\")");

  // A zip whose entry claims more bytes than the head holds: the walk stops at the head.
  std::vector<uint8_t> cut;
  zip_entry(cut, "a.txt", "");
  cut[18] = cut[19] = cut[20] = cut[21] = 0x7f;  // 2 GB compressed
  cut[22] = cut[23] = cut[24] = cut[25] = 0x7f;
  EXPECT_EQ(sniff(cut).what, "a zip archive (first entry \"a.txt\")");

  NotGguf header_only = sniff(bytes("PK\x03\x04\x14\x00"));
  EXPECT_EQ(header_only.kind, "zip");
  EXPECT_EQ(header_only.what, "a zip archive, cut short in its first entry's header");
}

TEST(NotGguf, APickleIsALegacyPyTorchFile) {
  std::vector<uint8_t> legacy = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9,
                                 0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e};
  NotGguf r = sniff(legacy, "pytorch_model.bin");
  EXPECT_EQ(r.kind, "pytorch_pickle");
  EXPECT_EQ(r.what, "a PyTorch checkpoint in torch.save's format before PyTorch 1.6 (a pickle)");
  EXPECT_EQ(r.remedy, "convert it with llama.cpp's convert_hf_to_gguf.py");

  NotGguf p4 = sniff({0x80, 0x04, 0x95, 0x00});
  EXPECT_EQ(p4.kind, "pytorch_pickle");
  EXPECT_EQ(p4.what, "a Python pickle (protocol 4), perhaps a legacy PyTorch .bin");
  EXPECT_EQ(sniff({0x80, 0x07}).kind, "unknown");  // no such protocol
}

TEST(NotGguf, AWebPageQuotesItsTitle) {
  NotGguf r = sniff(bytes("\xef\xbb\xbf\n  <!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                          "<title>llama-2-7b.Q4_K_M.gguf \xc2\xb7 TheBloke/Llama-2-7B-GGUF at main</title>"
                          "</head><body>...</body></html>"));
  EXPECT_EQ(r.kind, "web_page");
  EXPECT_EQ(r.what, "a web page (title \"llama-2-7b.Q4_K_M.gguf \xc2\xb7 TheBloke/Llama-2-7B-GGUF at main\"), not the file");
  EXPECT_EQ(r.remedy, "download with the /resolve/ URL (Hugging Face) or the raw link, not the /blob/ page");

  // A long title is clipped; entities are read; a terminal escape in it is not passed on.
  NotGguf long_title = sniff(bytes("<HTML><TITLE>\x1b[31mA &amp; B " + std::string(200, 'x') + "</TITLE>"));
  EXPECT_EQ(long_title.kind, "web_page");
  EXPECT_EQ(long_title.what, "a web page (title \"?[31mA & B " + std::string(80 - 11, 'x') + "...\"), not the file");

  EXPECT_EQ(sniff(bytes("<head><meta></head>")).what, "a web page, not the file");

  NotGguf s3 = sniff(bytes("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code>"
                           "<Message>Access Denied</Message><RequestId>X</RequestId></Error>"));
  EXPECT_EQ(s3.kind, "web_page");
  EXPECT_EQ(s3.what, "a server's XML error reply (AccessDenied: \"Access Denied\"), not the file");
  EXPECT_EQ(s3.remedy, "check the URL and your access token, then download the file again");
}

TEST(NotGguf, AJsonReplyQuotesTheServersError) {
  NotGguf r = sniff(bytes("{\"error\":\"Repository not found\"}"));
  EXPECT_EQ(r.kind, "json");
  EXPECT_EQ(r.what, "a server's JSON reply, not the file (it says \"Repository not found\")");
  EXPECT_EQ(r.remedy, "check the URL and your access token, then download the file again");

  // An error object: its message, with escapes read.
  NotGguf nested = sniff(bytes(" \n{\"error\": {\"message\": \"Bad \\\"token\\\" \\u00e9\", \"code\": 401}}"));
  EXPECT_EQ(nested.kind, "json");
  EXPECT_EQ(nested.what, "a server's JSON reply, not the file (it says \"Bad \"token\" \xc3\xa9\")");

  // No error: a config.json handed over instead of the model.
  NotGguf config = sniff(bytes("{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n"
                               "  \"rope\": {\"x\": 1}, \"vocab_size\": 32000\n}\n"));
  EXPECT_EQ(config.kind, "json");
  EXPECT_EQ(config.what, "a JSON document, not a model (first keys: architectures, model_type, rope)");
  EXPECT_NE(config.remedy.find("pass the model file itself"), std::string::npos) << config.remedy;

  // A long error is bounded.
  NotGguf huge = sniff(bytes("{\"error\":\"" + std::string(5000, 'e') + "\"}"));
  EXPECT_EQ(huge.what, "a server's JSON reply, not the file (it says \"" + std::string(120, 'e') + "...\")");
}

TEST(NotGguf, ZerosAreAnInterruptedDownload) {
  NotGguf r = sniff_not_gguf(std::vector<uint8_t>(kSniffBytes, 0), uint64_t(1) << 30, "model.gguf");
  EXPECT_EQ(r.kind, "zeros");
  EXPECT_EQ(r.what, "a file whose first 65536 bytes are all zero (of 1073741824): a preallocated or interrupted download");
  EXPECT_EQ(r.remedy, "download the file again (check its size and sha256 against the source)");

  NotGguf whole = sniff(std::vector<uint8_t>(100, 0));
  EXPECT_EQ(whole.kind, "zeros");
  EXPECT_EQ(whole.what, "a file of 100 bytes, all zero: a preallocated or interrupted download");

  // 100 zeros from a 1 MB file prove nothing; 4 KiB do.
  EXPECT_EQ(sniff_not_gguf(std::vector<uint8_t>(100, 0), 1 << 20, "m.gguf").kind, "unknown");
  EXPECT_EQ(sniff_not_gguf(std::vector<uint8_t>(4096, 0), 1 << 20, "m.gguf").kind, "zeros");
  // A non-zero byte late in the head: not all zero.
  std::vector<uint8_t> late(kSniffBytes, 0);
  late.back() = 1;
  EXPECT_EQ(sniff(late).kind, "unknown");
}

TEST(NotGguf, AGgufCutInsideItsHeadIsTruncated) {
  NotGguf r = sniff(bytes(std::string_view("GGUF\x03\x00\x00\x00\x05\x00", 10)));
  EXPECT_EQ(r.kind, "truncated_gguf");
  EXPECT_EQ(r.what, "a GGUF file cut short: 10 bytes, where the magic, version and counts alone take 24");
  EXPECT_EQ(r.remedy, "download the file again (check its size and sha256 against the source)");
  EXPECT_EQ(sniff(bytes("GG")).kind, "truncated_gguf");  // a magic cut short too
}

TEST(NotGguf, AnythingElseShowsItsFirstBytesAgainstTheMagic) {
  NotGguf r = sniff(bytes("ABCD\x01\x02\x03\x04\x05\x06 and more bytes past the 24-byte head"));
  EXPECT_EQ(r.kind, "unknown");
  EXPECT_EQ(r.what, "found 'ABCD....' (41 42 43 44 01 02 03 04), expected 'GGUF' (47 47 55 46)");
  EXPECT_EQ(r.remedy, "check that this is a GGUF model file");

  NotGguf unread = sniff_not_gguf({}, 4096, "m.gguf");
  EXPECT_EQ(unread.kind, "unknown");
  EXPECT_EQ(unread.what, "a file of which nothing could be read (4096 bytes by its size)");
}

TEST(NotGguf, HeadsShorterThanEightBytesAreReadWithinThem) {
  NotGguf three = sniff(bytes("abc"));
  EXPECT_EQ(three.kind, "unknown");
  EXPECT_EQ(three.what, "found 'abc' (61 62 63), expected 'GGUF' (47 47 55 46), in a file of 3 bytes");
  EXPECT_EQ(sniff({0x00}).what, "a file of 1 byte, all zero: a preallocated or interrupted download");
  EXPECT_EQ(sniff({0x47, 0x47, 0x55, 0x45}).what,
            "found 'GGUE' (47 47 55 45), expected 'GGUF' (47 47 55 46), in a file of 4 bytes");

  NotGguf ggjt = sniff(bytes("tjgg\x03"));
  EXPECT_EQ(ggjt.kind, "legacy_ggml");
  EXPECT_EQ(ggjt.what, "a GGJT file (magic 'ggjt', cut short before its version)");
  EXPECT_EQ(sniff(bytes("PK\x03\x04")).kind, "zip");
  EXPECT_EQ(sniff({0x80, 0x03}).kind, "pytorch_pickle");
  EXPECT_EQ(sniff(bytes("{")).what, "a JSON document, not a model");
  EXPECT_EQ(sniff(bytes("<html")).what, "a web page, not the file");
}

// Every prefix of every sample gives an answer with a remedy, reading only the prefix (the
// sanitizers catch a read past it).
TEST(NotGguf, EveryPrefixOfEverySampleIsAnswered) {
  std::vector<std::vector<uint8_t>> samples = {
      bytes("version https://git-lfs.github.com/spec/v1\noid sha256:" + kOid + "\nsize 99\n"),
      bytes("<!doctype html><title>t</title>"),
      bytes("<?xml version=\"1.0\"?><Error><Code>C</Code><Message>M</Message></Error>"),
      bytes("{\"error\":\"x\\u00e9\\"),
      safetensors_file(R"({"a":{"dtype":"F32"},"b":1})"),
      {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19},
      bytes(std::string_view("tjgg\x03\x00\x00\x00", 8)),
      bytes(std::string_view("GGUF\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 20)),
      bytes("\xff\xfe\xc3"),
  };
  std::vector<uint8_t> z;
  zip_entry(z, "archive/data.pkl", "\x80\x02.");
  samples.push_back(z);
  for (const auto& sample : samples)
    for (size_t n = 1; n <= sample.size(); ++n) {
      std::vector<uint8_t> prefix(sample.begin(), sample.begin() + n);
      NotGguf r = sniff(prefix);
      EXPECT_FALSE(r.kind.empty());
      EXPECT_FALSE(r.what.empty());
      EXPECT_FALSE(r.remedy.empty()) << r.kind;
    }
}
