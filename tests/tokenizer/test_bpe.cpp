// Tests of BPE and the pre-tokenizers.
#include <gtest/gtest.h>
