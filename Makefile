# The two commands a newcomer needs: `make demo` and `make test`. Everything else is a helper.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
PREFIX     ?= /usr/local
# The image is tagged with the release (CMakeLists.txt's project version), as deploy/drover.yaml
# names it: never :latest (tests/cli/test_deploy.sh checks the two agree).
VERSION    := $(shell awk '$$1 ~ /^project/ && $$2 == "VERSION" {print $$3; exit}' CMakeLists.txt)
IMAGE      ?= drover:$(VERSION)
ifdef CI
CMAKE_FLAGS += -DDROVER_WERROR=ON
endif

.PHONY: all deps build build-drover build-asan demo test test-unit test-asan fuzz bench format \
        check-format install image clean

all: build

deps:
	@sh scripts/deps.sh

# Configures BUILD only when it has no CMake cache yet or CMAKE_FLAGS asks for something: on a
# warm build `cmake --build` reruns the configure step itself only when a CMakeLists.txt changed
# (rerunning it every time cost a warm `make demo` seconds).
configure = if [ ! -f $(BUILD)/CMakeCache.txt ] || [ -n "$(strip $(CMAKE_FLAGS))" ]; then \
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS); fi

build: deps
	@$(configure) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DDROVER_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)

# Only the drover binary (no tests, no benchmarks), quietly: the build log is shown only when
# the build fails, so the first thing a newcomer sees is the comparison table.
build-drover: deps
	@mkdir -p $(BUILD)
	@{ $(configure) && \
	   cmake --build $(BUILD) -j $(JOBS) --target drover; } \
	   >$(BUILD)/build-drover.log 2>&1 || { cat $(BUILD)/build-drover.log; \
	   echo "build failed (log: $(BUILD)/build-drover.log)" >&2; exit 1; }

# Runs the default simulation: every baseline policy on the built-in scenario.
demo: build-drover
	./$(BUILD)/drover sim --policy all --out out/demo

# The whole suite: the normal build, then the same tests under ASan+UBSan. The second half runs
# even when the first fails (a sanitizer finding is worth having beside a failed test); make
# test fails at the end, naming the halves that failed.
test:
	@failed=""; \
	 $(MAKE) --no-print-directory test-unit || failed="$$failed normal"; \
	 $(MAKE) --no-print-directory test-asan || failed="$$failed ASan+UBSan"; \
	 [ -z "$$failed" ] || { echo "make test: failed:$$failed (both halves ran)" >&2; exit 1; }

test-unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: build-asan
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) -LE slow

# libFuzzer on every parser (tests/fuzz/README.md): FUZZ_SECONDS each, crashes kept under
# tests/fuzz/crashes/ (replayed by `make test`). Needs clang: scripts/deps.sh fuzz installs it.
fuzz:
	@sh scripts/deps.sh fuzz
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DDROVER_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_targets
	sh tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

bench: build
	sh bench/run.sh $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

check-format:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

# Installs drover, its data, the examples and the man page under PREFIX (CMake's install rules,
# src/cli/CMakeLists.txt). The binary finds the data there from any working directory.
install: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target drover drover_man >$(BUILD)/build-drover.log 2>&1 \
	   || { cat $(BUILD)/build-drover.log; exit 1; }
	@cmake --install $(BUILD)

# The container image (deploy/Dockerfile), when a container engine answers.
image:
	@if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then \
	   docker build -f deploy/Dockerfile -t $(IMAGE) . ; \
	 elif command -v podman >/dev/null 2>&1 && podman info >/dev/null 2>&1; then \
	   podman build -f deploy/Dockerfile -t $(IMAGE) . ; \
	 else \
	   echo "make image: no container engine is running (neither 'docker info' nor" \
	        "'podman info' answers); start one and run make image again" >&2; exit 1; \
	 fi

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) out
