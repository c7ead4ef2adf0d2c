#pragma once

// tests/CMakeLists.txt defines where the tree, the corpus and the program are; a lone compile
// of a test file (clang-tidy, clangd, a sanitizer or fuzz configuration without them) gets
// the layout of a checkout built in build/, so that it parses.
#ifndef GGUFKIT_SOURCE
#define GGUFKIT_SOURCE "."
#endif
#ifndef GGUFKIT_CORPUS
#define GGUFKIT_CORPUS "../shared/corpus"
#endif
#ifndef GGUFKIT_BIN
#define GGUFKIT_BIN "build/ggufkit"
#endif
#ifndef GGUFKIT_FAULTY_BIN
#define GGUFKIT_FAULTY_BIN "build/tests/ggufkit_faulty"
#endif
#ifndef GGUFKIT_EXAMPLES_BIN
#define GGUFKIT_EXAMPLES_BIN "build"
#endif
#ifndef GGUFKIT_INTEROP_DIR  // where make interop-deps installs the npm packages by default
#define GGUFKIT_INTEROP_DIR "/root/.cache/ggufkit-interop"
#endif
