#pragma once
// The edits llama.cpp refuses or crashes on, which ggufkit refuses unless --allow-broken:
// test_edit_rules.cpp proves the refusal, the interop tests that llama.cpp refuses the
// forced result too. FILE is the model, PATCH a patch file holding `patch`.
#include <string>
#include <vector>

namespace testing_helpers {

struct EditRuleCase {
  const char* name;
  std::string args;  // after FILE
  std::string patch;  // a patch file's text, when the case needs one
  const char* code;   // the rule
  std::string says;   // and a part of its message
};

inline std::vector<EditRuleCase> edit_rule_cases() {
  return {
      // A 12-byte string puts the tiny llama's header end at 1 mod 32, so that at 16 and 8
      // its data really starts off llama.cpp's 32 (the rules test checks that it does).
      {"alignment16", "edit FILE --alignment 16 --set-typed my.pad=string:padpadpadpad", "", "alignment_too_small",
       "general.alignment = 16: llama.cpp needs at least 32"},
      {"alignment1", "realign FILE -a 1", "", "alignment_too_small", "general.alignment = 1:"},
      {"alignment8", "edit FILE --alignment 8 --set-typed my.pad=string:padpadpadpad", "", "alignment_too_small",
       "general.alignment = 8:"},
      {"alignment2MiB", "realign FILE -a 2097152", "", "alignment_too_large", "general.alignment = 2097152 is over"},
      {"vocab2", "edit FILE -p PATCH",
       "set:\n  tokenizer.ggml.tokens: [a, b]\n  tokenizer.ggml.scores: [0.0, 0.0]\n  tokenizer.ggml.token_type: [1, 1]\n",
       "token_id", "tokenizer.ggml.eos_token_id = 2 is not below the vocabulary size 2"},
      {"vocab3", "edit FILE -p PATCH",
       "set:\n  tokenizer.ggml.tokens: [a, b, c]\n  tokenizer.ggml.scores: [0.0, 0.0, 0.0]\n  tokenizer.ggml.token_type: [1, 1, 1]\n",
       "vocab_rows", "token_embd.weight has 32000 rows but the vocabulary has 3 tokens"},
      {"vocab_lengths", "edit FILE -p PATCH", "set:\n  tokenizer.ggml.scores: [0.0, 0.0, 0.0]\n", "vocab_length",
       "tokenizer.ggml.scores has 3 items, tokenizer.ggml.tokens has 32000"},
      {"vocab_empty", "edit FILE -p PATCH",
       "set:\n  tokenizer.ggml.tokens: []\n  tokenizer.ggml.scores: []\n  tokenizer.ggml.token_type: []\n", "empty_vocab",
       "tokenizer.ggml.tokens is empty"},
      {"vocab_removed", "edit FILE --remove tokenizer.ggml.tokens --remove tokenizer.ggml.scores --remove tokenizer.ggml.token_type",
       "", "missing_vocab", "no tokenizer.ggml.tokens"},
      {"arch_removed", "edit FILE --remove general.architecture", "", "missing_architecture", "no general.architecture"},
      {"arch_empty", "edit FILE --set general.architecture=", "", "missing_architecture", "no general.architecture"},
      {"head_count0", "edit FILE --set llama.attention.head_count=0", "", "zero_hparam", "llama.attention.head_count is 0"},
      {"embedding0", "edit FILE --set llama.embedding_length=0", "", "zero_hparam", "llama.embedding_length is 0"},
      {"experts_used_dense", "edit FILE --set-typed llama.expert_used_count=u32:2", "", "hparam_condition",
       "llama.expert_used_count is 2 but the model has no experts (no expert_count); llama.cpp aborts"},
      {"rope_half_head", "edit FILE --set llama.rope.dimension_count=8", "", "hparam_condition",
       "llama.rope.dimension_count is 8; llama.cpp's llama loader needs the head size, 16 (embedding_length 64 / head_count 4)"},
      {"nextn3", "edit FILE --set-typed llama.nextn_predict_layers=u32:3", "", "hparam_condition",
       "llama.nextn_predict_layers is 3, more than the 2 layers; llama.cpp aborts"},
      {"block_count5", "edit FILE --set llama.block_count=5", "", "block_count",
       "llama.block_count = 5 but the tensors are of 2 blocks (blk.0 to blk.1)"},
  };
}

// The arguments with FILE and PATCH put in.
std::string fill(std::string args, const std::string& file, const std::string& patch);

}  // namespace testing_helpers
