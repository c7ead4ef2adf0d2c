// Tests of the tokenizer against llama.cpp's own llama_tokenize and llama_vocab_* (differential).
#include <gtest/gtest.h>
