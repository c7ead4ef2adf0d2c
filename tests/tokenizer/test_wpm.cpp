// Tests of WordPiece, Unigram and RWKV.
#include <gtest/gtest.h>
