# Two entry points for a fresh Debian 12 machine (as root): `make demo` and `make test`.
# Both install what is missing, configure, build, and run.

BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_TARGETS ?= reader roundtrip sketch patch template render tokenize vocab
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 60
BENCH_RUNS ?= 5
CORPUS ?= ../shared/corpus
# -Werror in CI (CI=true), plain warnings by hand.
WERROR := $(if $(filter true,$(CI)),ON,OFF)
DEBS := cmake g++ make libboost-program-options-dev libboost-iostreams-dev libyaml-cpp-dev libgtest-dev libxxhash-dev libssl-dev libpcre2-dev libicu-dev python3-jinja2 \
        pybind11-dev python3-dev python3-pytest python3-numpy python3-yaml \
        python3-setuptools python3-wheel python3-build python3-venv locales
FUZZ_DEBS := clang libclang-rt-14-dev
# The tests' browser (map --html's page, headless) and the shells whose completion they run.
TEST_DEBS := chromium zsh fish
# The interop tests' npm packages, pinned, installed outside the source tree.
NPM_DIR ?= $(HOME)/.cache/ggufkit-interop
NPM_PKGS := node-llama-cpp@3.21.1 @node-llama-cpp/linux-x64@3.21.1 @huggingface/gguf@0.4.6
NPM_STAMP := $(NPM_DIR)/.installed-nlc3.21.1-hf0.4.6

.PHONY: deps interop-deps configure build program python wheel demo test test-full test-release test-release-full test-asan test-asan-full asan fuzz bench bench-header bench-tokenize bench-hash bench-surgery bench-python clean

deps:
	@missing=""; for p in $(DEBS) $(EXTRA_DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# Node.js from Debian if the machine has none, then the pinned packages (about 90 MB, no
# compiling: node-llama-cpp carries a prebuilt llama.cpp). A failure here does not stop
# the build: the interop tests then fail and say what is missing.
interop-deps:
	@command -v node >/dev/null || { echo "installing nodejs npm"; apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; } || echo "interop: could not install Node.js"
	@if [ ! -f $(NPM_STAMP) ]; then \
	  mkdir -p $(NPM_DIR) && cd $(NPM_DIR) && \
	  (npm i -E --omit=optional --ignore-scripts --no-audit --no-fund $(NPM_PKGS) && touch $(NPM_STAMP)) \
	  || echo "interop: npm install failed; the interop tests will fail"; \
	fi

configure: deps
	cmake -S . -B $(BUILD) -DGGUFKIT_WERROR=$(WERROR) -DGGUFKIT_INTEROP_DIR=$(NPM_DIR) >/dev/null

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The demo needs the program alone, not the test suite.
program: configure
	cmake --build $(BUILD) -j $(JOBS) --target ggufkit

# The Python module alone: build/python/ggufkit*.so and its stubs (PYTHONPATH=build/python).
python: configure
	cmake --build $(BUILD) -j $(JOBS) --target ggufkit_python

# dist/ggufkit-VERSION-*.whl from the module and program the build tree already holds (no
# second compile; setup.py's GGUFKIT_PREBUILT): for another machine with the same Debian
# libraries, `pip install dist/ggufkit-*.whl`.
# Made by the Python the tree's module was built for (Debian's, unless configured otherwise).
wheel: python
	py=$$(sed -n 's/^GGUFKIT_PYTHON_INTERPRETER:INTERNAL=//p' $(BUILD)/CMakeCache.txt); \
	GGUFKIT_PREBUILT=$(abspath $(BUILD)) $${py:-python3} -m build --no-isolation --wheel --outdir dist .

demo: program
	@echo "== ggufkit example: the walkthrough's 408-byte file =="
	$(BUILD)/ggufkit example -o $(BUILD)/demo.gguf
	@echo "== ggufkit map =="
	$(BUILD)/ggufkit map $(BUILD)/demo.gguf
	@echo "== ggufkit show =="
	$(BUILD)/ggufkit show $(BUILD)/demo.gguf

# Every test, in the release build (g++) and again under AddressSanitizer and UBSan (clang,
# so both compilers build everything; there the fuzz targets are built and run briefly too).
# Tests labelled `full` (the package built from a clean copy of the source) run in
# make test-full only, and so do those labelled `slow` in the sanitizer tree; the long
# differentials run a quarter of their cases in make test, chosen by the commit
# (GGUFKIT_SAMPLE, tests/helpers.h). make test-full runs every test, whole, in both trees.
test: test-release test-asan
test-full: test-release-full test-asan-full

test-release: build interop-deps
	@$(MAKE) --no-print-directory deps EXTRA_DEBS="$(TEST_DEBS)"
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE full

test-release-full: build interop-deps
	@$(MAKE) --no-print-directory deps EXTRA_DEBS="$(TEST_DEBS)"
	cd $(BUILD) && GGUFKIT_SAMPLE=all ctest --output-on-failure -j $(JOBS)

# clang's sanitizers, the code instrumented for libFuzzer as well: the fuzz targets link in
# this tree, and make test runs each for a few seconds from its seeds (label fuzz).
asan:
	@$(MAKE) --no-print-directory deps EXTRA_DEBS="$(FUZZ_DEBS) $(TEST_DEBS)"
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DGGUFKIT_SANITIZE=ON \
	  -DGGUFKIT_WERROR=$(WERROR) -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DCMAKE_C_FLAGS_DEBUG="-O1 -g" \
	  -DGGUFKIT_BENCH=OFF >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)

test-asan: asan
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -LE "interop|install|slow"

test-asan-full: asan
	cd $(ASAN_BUILD) && GGUFKIT_SAMPLE=all ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -LE "interop|install"

# libFuzzer targets (clang), each run for FUZZ_SECONDS from seeds made from the examples,
# the corpus (read from $(CORPUS) in place) and tests/fuzz/seeds (tests/fuzz/run.sh); what
# they find stays in $(FUZZ_BUILD)/fuzz-corpus for the next run.
fuzz:
	@$(MAKE) --no-print-directory deps EXTRA_DEBS="$(FUZZ_DEBS)"
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DGGUFKIT_FUZZ=ON \
	  -DGGUFKIT_WERROR=$(WERROR) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	tests/fuzz/run.sh $(FUZZ_BUILD) $(CORPUS) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# Benchmarks against the targets of the interop issue; figures go to bench/RESULTS.md.
bench: build interop-deps
	@$(MAKE) --no-print-directory deps EXTRA_DEBS="libbenchmark-dev python3-yaml"
	cmake -S . -B $(BUILD) >/dev/null && cmake --build $(BUILD) -j $(JOBS) --target bench_parse bench_render
	bench/run.sh $(BUILD) $(NPM_DIR) $(BENCH_RUNS)
	bench/tokenize.sh $(BUILD) $(NPM_DIR) $(BENCH_RUNS)
	bench/hash.sh $(BUILD)
	bench/surgery.sh $(BUILD)
	bench/python.sh $(BUILD) $(NPM_DIR) $(BENCH_RUNS)

# The header jobs (show, validate, edits in place) against ggml's header read ("Header jobs").
bench-header: program interop-deps
	cmake --build $(BUILD) -j $(JOBS) --target ggml_header
	bench/header_jobs.sh $(BUILD) $(NPM_DIR)

# The tokenizer against llama.cpp's alone (the "Tokenizer" section of bench/RESULTS.md).
bench-tokenize: build interop-deps
	bench/tokenize.sh $(BUILD) $(NPM_DIR) $(BENCH_RUNS)

# hash --file against sha256sum on the 4.7 GB fixture, warm (the "Hashing" section).
bench-hash: program
	bench/hash.sh $(BUILD)

# Keeping half the layers of the fixture against cp + sync (XFS_DIR=a reflink XFS folder: there too).
bench-surgery: program
	bench/surgery.sh $(BUILD)

# ggufkit.open from Python against llama.cpp's gguf-py (which needs numpy and PyYAML).
bench-python: python interop-deps
	@$(MAKE) --no-print-directory deps EXTRA_DEBS="python3-yaml"
	bench/python.sh $(BUILD) $(NPM_DIR) $(BENCH_RUNS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
