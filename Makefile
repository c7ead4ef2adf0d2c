# Two entry points for a fresh Debian 12 machine (as root): `make demo` and `make test`.
# Both install what is missing, configure, build, and run.

BUILD ?= build
JOBS ?= $(shell nproc)
# -Werror in CI (CI=true), plain warnings by hand.
WERROR := $(if $(filter true,$(CI)),ON,OFF)
DEBS := cmake g++ make libboost-program-options-dev libboost-iostreams-dev libyaml-cpp-dev libgtest-dev libxxhash-dev

.PHONY: deps build demo test clean

deps:
	@missing=""; for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

build: deps
	cmake -S . -B $(BUILD) -DGGUFKIT_WERROR=$(WERROR) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	@echo "== ggufkit example: the walkthrough's 408-byte file =="
	$(BUILD)/ggufkit example -o $(BUILD)/demo.gguf
	@echo "== ggufkit map =="
	$(BUILD)/ggufkit map $(BUILD)/demo.gguf
	@echo "== ggufkit show =="
	$(BUILD)/ggufkit show $(BUILD)/demo.gguf

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD)
