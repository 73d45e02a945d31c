# The commands people type; CMake does the building (see README.md).
JOBS    ?= $(shell nproc)
GEN     := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
REL     := build/release
ASAN    := build/asan
ASANI   := build/asan-inline
FUZZB   := build/fuzz
FUZZCOV := build/fuzz-cov
FUZZI   := build/fuzz-inline
FUZZ_SECONDS ?= 60
CTEST   := ctest --output-on-failure -j $(JOBS)

.PHONY: all deps release asan asan-inline fuzz-build fuzz-inline-build fuzz-cov-build run test test-release test-asan bench fuzz fuzz-inline fuzz-long fuzz-cov install format format-check clean

all: release

deps:
	@scripts/deps.sh

release: deps
	@cmake -S . -B $(REL) $(GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(REL) -j $(JOBS)

asan: deps
	@cmake -S . -B $(ASAN) $(GEN) -DCMAKE_BUILD_TYPE=Debug -DRXP_SANITIZE=ON -DRXP_BENCH=OFF >/dev/null
	@cmake --build $(ASAN) -j $(JOBS)

# The sanitizers without RXP_DEBUG, optimised: the inline pool and packet
# fast paths (which RXP_DEBUG turns into calls) run under ASan and UBSan.
asan-inline: deps
	@cmake -S . -B $(ASANI) $(GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRXP_SANITIZE=ON -DRXP_DEBUG_CHECKS=OFF -DRXP_BENCH=OFF >/dev/null
	@cmake --build $(ASANI) -j $(JOBS)

fuzz-build: deps
	@CC=clang cmake -S . -B $(FUZZB) $(GEN) -DCMAKE_BUILD_TYPE=Debug -DRXP_FUZZ=ON -DRXP_BENCH=OFF >/dev/null
	@cmake --build $(FUZZB) -j $(JOBS)

# The fuzz targets without RXP_DEBUG: the inline pool and packet fast
# paths (which RXP_DEBUG turns into tracked calls) run under the fuzzers.
fuzz-inline-build: deps
	@CC=clang cmake -S . -B $(FUZZI) $(GEN) -DCMAKE_BUILD_TYPE=Debug -DRXP_FUZZ=ON -DRXP_DEBUG_CHECKS=OFF -DRXP_BENCH=OFF >/dev/null
	@cmake --build $(FUZZI) -j $(JOBS)

fuzz-cov-build: deps
	@CC=clang cmake -S . -B $(FUZZCOV) $(GEN) -DCMAKE_BUILD_TYPE=Debug -DRXP_FUZZ=ON -DRXP_FUZZ_COV=ON -DRXP_BENCH=OFF >/dev/null
	@cmake --build $(FUZZCOV) -j $(JOBS)

# The main job (see README): the mixed workload through the whole pipeline.
run: release
	@$(REL)/rxpath run $(ARGS)

test-release: release
	@echo "== release build: all tests"
	@cd $(REL) && $(CTEST)

test-asan: asan asan-inline fuzz-build
	@echo "== ASan+UBSan build: all tests, then without RXP_DEBUG, then a short fuzz pass"
	@cd $(ASAN) && $(CTEST) -E '^(netns/|scenario/scenario_soak)'
	@cd $(ASANI) && $(CTEST) -E '^(netns/|scenario/scenario_soak)'
	@cd $(FUZZB) && RXP_FUZZ_SECONDS=$${RXP_FUZZ_SECONDS:-15} $(CTEST) -R '^fuzz/'

test: test-release test-asan

bench: release
	@$(REL)/rxpath bench $(ARGS)

fuzz: fuzz-build
	@cd $(FUZZB) && RXP_FUZZ_SECONDS=$(FUZZ_SECONDS) ctest --output-on-failure -R '^fuzz/'

fuzz-inline: fuzz-inline-build
	@cd $(FUZZI) && RXP_FUZZ_SECONDS=$(FUZZ_SECONDS) ctest --output-on-failure -R '^fuzz/'

# Every target to 10^7 executions (FUZZ_RUNS), or for FUZZ_SECONDS each when
# that is given (both: whichever comes first), FUZZ_JOBS targets at a time
# (default 1); the corpora are merged back (scripts/fuzz-long.sh).
fuzz-long: fuzz-build
	@FUZZ_RUNS=$(FUZZ_RUNS) FUZZ_JOBS=$(or $(FUZZ_JOBS),1) FUZZ_SECONDS=$(if $(filter command line environment,$(origin FUZZ_SECONDS)),$(FUZZ_SECONDS)) scripts/fuzz-long.sh $(FUZZB)

# Line coverage per source file after running every corpus once.
fuzz-cov: fuzz-cov-build
	@scripts/fuzz-cov.sh $(FUZZCOV) $(FUZZB)

# PREFIX=DIR installs there (kept in the build's cache for later installs);
# without it, the cached prefix, /usr/local at first.
install: release
	@$(if $(PREFIX),cmake -S . -B $(REL) -DCMAKE_INSTALL_PREFIX=$(abspath $(PREFIX)) >/dev/null && cmake --build $(REL) -j $(JOBS) &&) cmake --install $(REL)

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	@clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

clean:
	@rm -rf build
