// Tests of the vocabulary as llama.cpp loads it (specials by text, EOG, attributes), SPM, the special-token partition.
#include <gtest/gtest.h>
