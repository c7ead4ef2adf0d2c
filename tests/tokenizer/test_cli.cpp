// Tests of ggufkit tokenize, detokenize and show's loaded vocabulary.
#include <gtest/gtest.h>
